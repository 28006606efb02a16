"""Columns and views: many columns fused into one 2-D feature matrix in a single pass.

:func:`to_tensor` reads every requested column of a frame straight from its
Arrow buffers and writes one ``(rows, columns)`` matrix, casting on the fly,
in one pass over the rows: a numba kernel fills a block of rows for all
columns at once, so each output cache line is written once. Large inputs are
split into row blocks filled by a thread pool (the kernel releases the GIL);
small ones run on the calling thread. The output lives in memory from the
Arrow memory pool (which recycles pages) and is viewed by NumPy.

Why threads and not ``numba.prange``: the kernel takes a tuple of column
arrays of different dtypes, which numba's parallel loops cannot capture; a
plain ``nogil`` kernel per row block also leaves no OpenMP threads spinning
after the call.

Fast paths, for the common case of single-chunk columns without nulls:

* ``order="F"``: each output column is contiguous, so each input column is
  copied (and cast) into it by ``np.copyto``, which releases the GIL; large
  inputs are split into row ranges copied by the thread pool.
* ``order="C"``, tiny inputs: the same per-column copies, strided (no kernel
  to compile or dispatch).
* ``order="C"``: a small numba kernel interleaves the columns (one compiled
  kernel per column dtype, column count and output dtype; for columns of
  several dtypes, per sequence of dtypes), row by row, over ranges of rows on
  numba's threads for large inputs.

Everything else (nulls, several chunks, bool columns, float16) takes the
masked kernels (`pack_fill`, `pack_keep`): one flat loop over rows, each column
read with its Arrow validity bitmap and bit offset in place, nulls filled (and
the validity matrix written) in the same pass, row ranges split between the
calling thread and the pool (numba's parallel loops take no tuple of tuples).
A column-major matrix is filled a column at a time (`fill_column`,
`keep_column`), so that its stores are sequential.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from colbridge.columns.frames import adapt_frame, missing_column_error
from colbridge.columns.ingest import column_to_arrow, nan_as_null, pandas_nan_is_null
from colbridge.columns.tensor import _values, as_tensor, direct_array, fill_scalar, numpy_spec
from colbridge.columns.views import ArrayProtocols
from colbridge.errors import NullValuesError, ShapeError, UnsupportedTypeError
from colbridge.memory import allocate_host, read_only, writable_view
from colbridge.types.dtypes import parse_dtype
from colbridge.types.table import TensorSpec, tensor_spec

__all__ = ["FeatureMatrix", "default_matrix_dtype", "to_tensor"]

#: Rows per cache block inside the kernel: all columns of these rows are
#: written before moving on, so the output block stays in cache.
_ROW_BLOCK = 2048
#: Below this many output elements the column copies run on the calling thread.
_PARALLEL_MIN_ELEMENTS = 1 << 18
#: Below this many output elements a row-major kernel runs on one thread
#: (`_thread_chunks`; measured, six columns: 600,000 elements faster on one).
_THREADS_MIN_ELEMENTS = 1 << 20
#: Most columns the C-order fast kernel takes (one compiled kernel per count).
_FAST_C_MAX_COLUMNS = 64
#: Below this many output elements, C order is filled by strided NumPy copies
#: (no kernel to compile for tiny frames); from here on by the numba kernel,
#: about twice as fast once the output outgrows a few cache lines per column.
_FAST_C_MIN_ELEMENTS = 2048
#: Worker threads for large inputs (read once: ``os.cpu_count`` is not free).
_WORKERS = os.cpu_count() or 1
#: Arrow kinds whose values are one flat buffer (read with ``np.frombuffer``).
_FLAT_KINDS = frozenset({"primitive", "temporal"})


class FeatureMatrix(ArrayProtocols):
    """A 2-D (or, for one tensor column, N-D) tensor made of frame columns.

    Attributes
    ----------
    columns : list of str
        Column names, in matrix column order.
    validity : numpy.ndarray or None
        Boolean matrix shaped like the data, True where the value is valid;
        None when no value is null (or nulls were filled).
    copied : bool
        False only when the matrix views a FixedSizeList / fixed-shape tensor
        column without copying; ``copy_reason`` says why it copied.
    """

    def __init__(
        self,
        array: np.ndarray[Any, Any],
        columns: list[str],
        validity: np.ndarray[Any, Any] | None,
        *,
        copied: bool,
        copy_reason: str,
    ) -> None:
        super().__init__(array, copied=copied, copy_reason=copy_reason, readonly=not copied)
        self.columns = columns
        self.validity = validity

    def __repr__(self) -> str:
        copy = f"copied ({self.copy_reason})" if self.copied else "zero-copy"
        nulls = "no nulls" if self.validity is None else "with validity"
        return (
            f"FeatureMatrix(shape={self.shape}, dtype={self.dtype}, columns={self.columns!r}, "
            f"{nulls}, {copy}, placement={self.placement!r})"
        )


def default_matrix_dtype(dtypes: Sequence[np.dtype[Any]]) -> np.dtype[Any]:
    """Return the common float type of column dtypes: NumPy's result type with float32.

    So at least float32, and float64 as soon as a column is float64 or an
    integer wider than 16 bits (where float32 would lose values).

    Examples
    --------
    >>> import numpy as np
    >>> default_matrix_dtype([np.dtype("int16"), np.dtype("float16")])
    dtype('float32')
    >>> default_matrix_dtype([np.dtype("int32"), np.dtype("float32")])
    dtype('float64')
    """
    key = tuple(dtypes)
    found = _MATRIX_DTYPES.get(key)
    if found is None:
        found = np.dtype(np.result_type(np.float32, *dtypes))
        if len(_MATRIX_DTYPES) >= 256:
            _MATRIX_DTYPES.clear()
        _MATRIX_DTYPES[key] = found
    return found


_MATRIX_DTYPES: dict[tuple[np.dtype[Any], ...], np.dtype[Any]] = {}


def _kernels() -> Any:
    """The numba pack kernels, imported on first use (importing numba takes a while)."""
    from colbridge.columns import pack_kernels

    return pack_kernels


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(
                max_workers=os.cpu_count() or 1, thread_name_prefix="colbridge-matrix"
            )
        return _POOL


def _row_ranges(
    n: int, ncols: int, smallest: int = _PARALLEL_MIN_ELEMENTS
) -> list[tuple[int, int]]:
    """Split rows among the pool's workers; one range below ``smallest`` elements."""
    workers = _WORKERS
    if n * ncols < smallest or workers == 1:
        return [(0, n)]
    step = -(-n // workers)
    step = -(-step // _ROW_BLOCK) * _ROW_BLOCK
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def _flat_columns(
    chunked: list[pa.ChunkedArray], specs: list[Any], n: int
) -> list[np.ndarray[Any, Any]] | None:
    """Each column as one read-only ndarray over its Arrow buffer, or None.

    None unless every column is one chunk of a flat (primitive or temporal)
    type without nulls.
    """
    arrays = []
    for col, spec in zip(chunked, specs, strict=True):
        if spec.entry.kind not in _FLAT_KINDS or col.num_chunks != 1:
            return None
        chunk = col.chunk(0)
        if chunk.null_count:
            return None
        data = chunk.buffers()[1]
        if data is None or not data.is_cpu:
            return None
        itemsize = spec.dtype.itemsize
        arrays.append(
            np.frombuffer(data, dtype=spec.dtype, count=n, offset=chunk.offset * itemsize)
        )
    return arrays


#: Floats from 2**63 up convert to uint64 through int64 shifted down by 2**64 (exact).
_TWO_63 = 2.0**63
_TWO_64 = 2.0**64


def _unsigned_from_float(
    values: np.ndarray[Any, Any], dtype: np.dtype[Any]
) -> np.ndarray[Any, Any]:
    """Float ``values`` cast to the unsigned integer ``dtype`` by one rule on every path.

    Truncated toward zero, then wrapped modulo ``2**bits`` (-1.0 is 255 in uint8 and
    4294967295 in uint32, as NumPy's ``astype`` gives); NaN, infinities and values
    outside ``[-2**63, 2**64)`` give 0. C leaves a float outside the target's range
    undefined, so NumPy's own result depends on the machine and the array's layout,
    and a compiled kernel's on its vectorisation: the values are brought into int64's
    range here, where every cast is defined. Examples: 300.7 → 44 in uint8, 5e9 →
    705032704 in uint32, 2**63 → 9223372036854775808 in uint64.
    """
    wide = np.trunc(values.astype(np.float64, copy=False))  # float16/32 widen exactly
    inside = (wide >= -_TWO_63) & (wide < _TWO_64)  # False for NaN
    shifted = np.where(wide >= _TWO_63, wide - _TWO_64, wide)  # exact: its ulp is >= 2048
    shifted[~inside] = 0.0
    result: np.ndarray[Any, Any] = shifted.astype(np.int64).astype(dtype)
    return result


def _defined_casts(
    arrays: list[np.ndarray[Any, Any]], out_dtype: np.dtype[Any]
) -> list[np.ndarray[Any, Any]]:
    """Float columns of an unsigned matrix through `_unsigned_from_float`; others as they are."""
    if out_dtype.kind != "u":
        return arrays
    return [_unsigned_from_float(a, out_dtype) if a.dtype.kind == "f" else a for a in arrays]


def _copy_columns(
    arrays: list[np.ndarray[Any, Any]], out: np.ndarray[Any, Any], lo: int, hi: int
) -> None:
    for j, values in enumerate(arrays):
        np.copyto(out[lo:hi, j], values[lo:hi], casting="unsafe")


def _fill_fast(arrays: list[np.ndarray[Any, Any]], out: np.ndarray[Any, Any]) -> bool:
    """Fill ``out`` from flat columns without nulls; False when no fast path applies.

    Row-major output of several columns: the numba interleaving kernel, on numba's
    threads for large inputs (`_thread_chunks`). Column-major output, one column, or
    a tiny input: ``np.copyto`` per column, large inputs split into row ranges
    filled by the thread pool.
    """
    n, ncols = out.shape
    column_major = out.flags.f_contiguous and not out.flags.c_contiguous
    if out.dtype == np.float16:
        return False  # the general path rounds once, from float64
    arrays = _defined_casts(arrays, out.dtype)
    if not (column_major or ncols == 1 or n * ncols < _FAST_C_MIN_ELEMENTS):
        dtype = arrays[0].dtype
        if (
            ncols > _FAST_C_MAX_COLUMNS
            or any(a.dtype.kind not in "iuf" or a.dtype == np.float16 for a in arrays)
        ):
            return False
        kernels = _kernels()
        # one kernel per (column dtypes, output dtype): a homogeneous tuple compiles
        # once per column count, a mixed one once per sequence of dtypes
        same = all(a.dtype == dtype for a in arrays)
        cols = tuple(arrays)
        chunks = _thread_chunks(n, ncols)
        if chunks == 1:
            (kernels.interleave if same else kernels.interleave_mixed)(cols, out, 0, n)
        elif same:
            kernels.interleave_rows(cols, out, chunks)
        else:
            kernels.interleave_mixed_rows(cols, out, chunks)
        return True
    ranges = _row_ranges(n, ncols)
    if len(ranges) == 1:
        _copy_columns(arrays, out, 0, n)
    else:
        _on_pool_and_here(_copy_columns, (arrays, out), ranges)
    return True


def _thread_chunks(n: int, ncols: int) -> int:
    """Ranges of rows a row-major kernel splits ``n`` rows into: one per numba thread.

    One below `_THREADS_MIN_ELEMENTS` output elements, where waking the threads costs
    more than they save.
    """
    if n * ncols < _THREADS_MIN_ELEMENTS:
        return 1
    import numba  # loaded already with the kernels

    return max(1, int(numba.get_num_threads()))


def _on_pool_and_here(work: Any, args: tuple[Any, ...], ranges: list[tuple[int, int]]) -> None:
    """``work(*args, lo, hi)`` for every range: the first on this thread, the rest on the pool.

    The calling thread would only wait otherwise; doing a share itself saves a
    hand-off (tens of microseconds, a third of the time of a 1e5-row pack).
    """
    pool = _pool()
    futures = [pool.submit(work, *(*args, lo, hi)) for lo, hi in ranges[1:]]
    try:
        work(*args, *ranges[0])
    finally:
        for f in futures:
            f.result()


def _frame_columns(
    frame: Any, columns: Sequence[str] | None
) -> tuple[list[str], list[pa.ChunkedArray]]:
    # NaN in a NumPy-backed pandas float column is pandas' missing value: a null here,
    # as in `df.gpu` and `as_tensor` (docs/types.md)
    if isinstance(frame, dict):
        names = list(frame) if columns is None else list(columns)
        out = []
        for name in names:
            if name not in frame:
                raise missing_column_error(name, [str(k) for k in frame])
            column = column_to_arrow(frame[name], name)
            out.append(nan_as_null(column) if pandas_nan_is_null(frame[name]) else column)
        return [str(n) for n in names], out
    adapter = adapt_frame(frame)
    names = adapter.names if columns is None else [str(c) for c in columns]
    chunked = []
    for n in names:
        column = adapter.tensor_column(n)
        chunked.append(nan_as_null(column) if adapter.nan_is_null(n) else column)
    return names, chunked


def to_tensor(
    frame: Any,
    columns: str | Sequence[str] | None = None,
    *,
    dtype: Any = None,
    order: str = "C",
    nulls: Any = "keep",
) -> FeatureMatrix:
    """Fuse columns of a frame into one 2-D matrix, in a single pass.

    Parameters
    ----------
    frame : object
        pandas or polars DataFrame, pyarrow Table/RecordBatch, or a dict of
        columns (anything :func:`as_tensor` accepts).
    columns : str or sequence of str, optional
        Columns in matrix order; all columns by default. A string is one column
        name (as in polars' ``select("ab")``), never a sequence of letters.
    dtype : dtype-like, optional
        Element type of the matrix. Default: :func:`default_matrix_dtype` of
        the columns (at least float32). Values are cast as NumPy's unsafe
        ``astype`` casts (float to int truncates toward zero). A float cast to an
        unsigned type is truncated toward zero and wrapped modulo ``2**bits``
        (-1.0 is 255 in uint8, as NumPy gives), whatever the order, the nulls and
        the size; NaN, infinities and values outside ``[-2**63, 2**64)`` give 0
        there (NumPy's own result for them depends on the machine and on the
        array's layout). Temporal columns contribute their integers, dictionary
        columns their indices (the chunks' dictionaries unified first, as
        :func:`as_tensor` unifies them), bool columns 0/1.
    order : {"C", "F"}, default "C"
        Row-major or column-major output.
    nulls : {"keep", "raise"} or scalar, default "keep"
        ``"keep"``: null slots hold 0 and ``.validity`` is a boolean matrix
        (True = valid), or None when nothing is null; ``"raise"``:
        :class:`~colbridge.errors.NullValuesError` on any null; a scalar:
        null slots hold it and ``.validity`` is None. NaN is a value, not a null,
        except in a NumPy-backed pandas float column, where NaN is pandas' mark of
        a missing value and counts as a null (as in ``df.gpu`` and `as_tensor`).

    Returns
    -------
    FeatureMatrix
        A fresh, writable matrix (it aliases no input), except for a frame of
        exactly one FixedSizeList / fixed-shape tensor column of the target
        dtype, without nulls or with ``nulls="keep"``: then a zero-copy,
        read-only view of its values (``copied`` False), which is row-major;
        ``order="F"`` copies it into a column-major array.

    Raises
    ------
    ColumnNotFoundError
        A requested column does not exist.
    UnsupportedTypeError
        A column's type is not tensor-able, or a FixedSizeList column is
        mixed with other columns.
    NullValuesError
        ``nulls="raise"`` and a column holds nulls.

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.table({"a": [1, 2, None], "b": [0.5, 1.5, 2.5]})
    >>> m = to_tensor(t)
    >>> m.numpy().tolist(), m.dtype
    ([[1.0, 0.5], [2.0, 1.5], [0.0, 2.5]], dtype('float64'))
    >>> m.validity[:, 0].tolist()
    [True, True, False]
    """
    if order not in ("C", "F"):
        msg = f"`order` must be 'C' or 'F', got {order!r}"
        raise ValueError(msg)
    if isinstance(columns, str):
        columns = [columns]  # one column's name, not a sequence of one-letter names
    keep = isinstance(nulls, str) and nulls == "keep"
    strict = isinstance(nulls, str) and nulls == "raise"
    if isinstance(nulls, str) and not (keep or strict):
        msg = f"`nulls` must be 'keep', 'raise' or a fill value, got {nulls!r}"
        raise ValueError(msg)
    target = None if dtype is None else parse_dtype(dtype).numpy
    direct = _direct_columns(frame, columns)
    if direct is not None:
        fast = _direct_matrix(direct[0], direct[1], target, order)
        if fast is not None:
            return fast
    names, chunked = _frame_columns(frame, columns)
    chunked = [_unified(c) for c in chunked]
    specs = [tensor_spec(c.type, n) for n, c in zip(names, chunked, strict=True)]
    nested = [s.entry.kind in ("fixed_size_list", "fixed_shape_tensor") for s in specs]
    if any(nested):
        if len(names) != 1:
            bad = names[nested.index(True)]
            msg = (
                f"column `{bad}` of type `{specs[nested.index(True)].arrow_type}` is a "
                "FixedSizeList/tensor column and cannot be mixed with other columns; "
                f"convert it alone with `to_tensor(frame, [{bad!r}])` or `as_tensor`"
            )
            raise UnsupportedTypeError(msg)
        return _single_nested(chunked[0], names[0], specs[0].dtype, target, nulls, order)
    for name, col, spec in zip(names, chunked, specs, strict=True):
        if strict and col.null_count:
            msg = (
                f"column `{name}` of type `{spec.arrow_type}` has {col.null_count} null "
                "value(s); fill them first, or pass `nulls='keep'` or a fill value"
            )
            raise NullValuesError(msg)
    out_dtype = target if target is not None else default_matrix_dtype([s.dtype for s in specs])
    n = len(chunked[0]) if chunked else 0
    for name, col in zip(names, chunked, strict=True):
        if len(col) != n:
            msg = f"column `{name}` has {len(col)} rows, but column `{names[0]}` has {n}"
            raise ShapeError(msg)
    ncols = len(names)
    np_order: Literal["C", "F"] = "F" if order == "F" else "C"
    buffer = allocate_host(n * ncols * out_dtype.itemsize)
    out = writable_view(buffer, out_dtype, (n, ncols), order=order)
    any_nulls = any(c.null_count for c in chunked)
    valid = None
    if keep and any_nulls:  # every cell is written by the kernel
        valid = writable_view(allocate_host(n * ncols), "bool", (n, ncols), order=order)
    # a fill value of nulls must survive the cast (a column without nulls never reads it)
    fill_value = np.asarray(0).astype(out_dtype)[()] if keep or strict or not any_nulls \
        else fill_scalar(nulls, out_dtype, f"the {out_dtype} matrix")  # fmt: skip
    reasons = _reasons(specs, order, out_dtype)
    flat = _flat_columns(chunked, specs, n) if n and ncols and not any_nulls else None
    if flat is not None and _fill_fast(flat, out):
        pass
    elif n and ncols:
        if out_dtype == np.float16:
            # numba has no float16: the kernels write float64 (which holds every value a
            # float16 can round from), NumPy rounds once to float16 as its `astype` does
            # (through float32, a float64 value would be rounded twice)
            wide = np.empty((n, ncols), dtype=np.float64, order=np_order)
            _fill(chunked, specs, wide, valid, np.float64(fill_value))
            out[...] = wide
        else:
            _fill(chunked, specs, out, valid, fill_value)
    return FeatureMatrix(out, names, valid, copied=True, copy_reason="; ".join(reasons))


def _unified(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A dictionary column's chunks over one dictionary, so that equal codes mean equal values.

    Each chunk may carry a dictionary of its own; its indices point into that one.
    """
    if col.num_chunks < 2 or not pa.types.is_dictionary(col.type):
        return col
    first = col.chunk(0).dictionary
    if all(c.dictionary.equals(first) for c in col.chunks[1:]):
        return col
    return col.unify_dictionaries()


def _reasons(specs: list[TensorSpec], order: str, out_dtype: np.dtype[Any]) -> list[str]:
    has_bool = any(s.entry.kind == "bool" for s in specs)
    has_half = any(s.dtype == np.float16 for s in specs)
    return list(_reason_texts(len(specs), order, out_dtype, has_bool, has_half))


@functools.lru_cache(maxsize=256)
def _reason_texts(
    ncols: int, order: str, out_dtype: np.dtype[Any], has_bool: bool, has_half: bool
) -> tuple[str, ...]:
    reasons = [f"wrote {ncols} column(s) into a new {order}-order {out_dtype} matrix"]
    if has_bool:
        reasons.append("unpacked bool bits")
    if has_half:
        reasons.append("widened float16 columns to float32 first (numba has no float16)")
    return tuple(reasons)


def _direct_columns(
    frame: Any, columns: Sequence[str] | None
) -> tuple[list[str], list[np.ndarray[Any, Any]]] | None:
    """The columns as ndarrays read without Arrow (see ``direct_array``), or None.

    Only for polars DataFrames and dicts whose requested columns all exist and
    are NumPy arrays, NumPy-backed pandas Series or one-chunk numeric polars
    Series without nulls; anything else (and every error) takes the Arrow path.
    """
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(frame, pl.DataFrame):
        have = frame.columns
        names = list(have) if columns is None else [str(c) for c in columns]
        if columns is not None and not set(names).issubset(have):
            return None
        series = [frame.get_column(n) for n in names]
    elif isinstance(frame, dict):
        keys = list(frame) if columns is None else list(columns)
        if any(k not in frame for k in keys):
            return None
        series = [frame[k] for k in keys]
        names = [str(k) for k in keys]
    else:
        return None
    arrays = []
    for col in series:
        array = direct_array(col)
        if array is None or (pandas_nan_is_null(col) and bool(np.isnan(array).any())):
            return None  # the Arrow path reads pandas' NaN as null
        arrays.append(array)
    return names, arrays


def _direct_matrix(
    names: list[str], arrays: list[np.ndarray[Any, Any]], target: np.dtype[Any] | None, order: str
) -> FeatureMatrix | None:
    """Fill a matrix from null-free ndarrays; None when the Arrow path must decide."""
    if not arrays:
        return None
    n = len(arrays[0])
    if n == 0 or any(len(a) != n for a in arrays):
        return None  # the Arrow path handles empty frames and reports bad shapes
    specs = [numpy_spec(a.dtype) for a in arrays]
    out_dtype = target if target is not None else default_matrix_dtype([s.dtype for s in specs])
    if out_dtype == np.float16:
        return None
    buffer = allocate_host(n * len(arrays) * out_dtype.itemsize)
    out = writable_view(buffer, out_dtype, (n, len(arrays)), order=order)
    if not _fill_fast(arrays, out):
        return None
    reasons = _reasons(specs, order, out_dtype)
    return FeatureMatrix(out, names, None, copied=True, copy_reason="; ".join(reasons))


def _segments(chunked: list[pa.ChunkedArray], n: int) -> list[int]:
    bounds = {0, n}
    for col in chunked:
        pos = 0
        for chunk in col.chunks:
            pos += len(chunk)
            bounds.add(pos)
    return sorted(bounds)


def _ones(nbytes: int) -> np.ndarray[Any, Any]:
    """A read-only all-ones bitmap of at least ``nbytes`` bytes (for columns without nulls)."""
    global _ONES
    ones = _ONES
    if len(ones) < nbytes:
        ones = np.full(max(nbytes, 2 * len(ones)), 0xFF, dtype=np.uint8)
        ones.flags.writeable = False
        _ONES = ones
    return ones


_ONES = np.full(1 << 12, 0xFF, dtype=np.uint8)
_ONES.flags.writeable = False


def _readonly(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    # One numba type per dtype/layout: make every input read-only alike.
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


def _segment_pieces(
    chunked: list[pa.ChunkedArray], n: int
) -> list[tuple[int, int, list[pa.Array]]]:
    """Rows cut where any column changes chunk: ``(lo, hi, one slice per column)``."""
    bounds = _segments(chunked, n)
    starts = []  # per column: the first row of each chunk
    for col in chunked:
        s, pos = [], 0
        for chunk in col.chunks:
            s.append(pos)
            pos += len(chunk)
        starts.append(s)
    out = []
    for lo, hi in itertools.pairwise(bounds):
        if hi <= lo:
            continue
        pieces = []
        for j, col in enumerate(chunked):
            k = bisect.bisect_right(starts[j], lo) - 1
            while len(col.chunk(k)) == 0 or starts[j][k] + len(col.chunk(k)) <= lo:
                k += 1
            pieces.append(col.chunk(k).slice(lo - starts[j][k], hi - lo))
        out.append((lo, hi, pieces))
    return out


def _piece_values(piece: pa.Array, spec: Any, out_dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """The values of one column piece as a read-only 1-D array the kernels take.

    Floats for an unsigned matrix come cast already (`_unsigned_from_float`).
    """
    values = _piece_array(piece, spec)
    if out_dtype.kind == "u" and values.dtype.kind == "f":
        values = _readonly(_unsigned_from_float(values, out_dtype))
    return values


def _piece_array(piece: pa.Array, spec: Any) -> np.ndarray[Any, Any]:
    if spec.entry.kind in _FLAT_KINDS:
        data = piece.buffers()[1]
        if data is not None and data.is_cpu:
            itemsize = spec.dtype.itemsize
            values = np.frombuffer(
                data, dtype=spec.dtype, count=len(piece), offset=piece.offset * itemsize
            )
            if values.dtype == np.float16:
                values = values.astype(np.float32)  # numba has no float16 (exact widening)
            return _readonly(values)
    values = _values(piece, spec)
    if values.dtype == np.bool_:
        values = values.view(np.uint8)
    elif values.dtype == np.float16:
        # numba has no float16: widen (exactly) to float32 first.
        values = values.astype(np.float32)
    return _readonly(values)


def _fill(
    chunked: list[pa.ChunkedArray],
    specs: list[Any],
    out: np.ndarray[Any, Any],
    valid: np.ndarray[Any, Any] | None,
    fill: Any,
) -> None:
    """Fill ``out`` (and ``valid``) from any tensor-able flat columns, nulls as ``fill``.

    Rows are cut into segments where no column changes chunk; each segment is
    one kernel call (`pack_fill`, or `pack_keep` writing ``valid`` in the same
    pass; for a column-major matrix, one call per column: `_fill_columns`) over
    row ranges split between this thread and the pool. Each column
    comes with its validity bitmap and bit offset, read in place (an all-ones
    bitmap for a column without nulls in the segment).
    """
    n, ncols = out.shape
    column_major = out.flags.f_contiguous and not out.flags.c_contiguous
    if all(col.num_chunks == 1 for col in chunked):
        segments: Any = [(0, n, [col.chunk(0) for col in chunked])]
    else:
        segments = _segment_pieces(chunked, n)
    kernels = _kernels()
    for lo, hi, pieces in segments:
        items = []
        for j, (piece, spec) in enumerate(zip(pieces, specs, strict=True)):
            values = _piece_values(piece, spec, out.dtype)
            if piece.null_count:
                first = piece.offset // 8
                nbytes = (piece.offset + len(piece) + 7) // 8 - first
                bits = np.frombuffer(piece.buffers()[0], dtype=np.uint8, count=nbytes, offset=first)
                offset = piece.offset % 8
            else:
                bits, offset = _ones((hi - lo + 7) // 8), 0
            items.append((read_only(values), read_only(bits), np.int64(offset),
                          np.uint64(j)))  # fmt: skip
        # Ordered by dtype (and layout): the kernel's type then depends on the
        # column dtypes, not on their order in the matrix.
        items.sort(key=lambda item: (item[0].dtype.str, not item[0].flags.c_contiguous))
        cols = tuple(items)
        work: Any
        args: tuple[Any, ...]
        if column_major:
            work, args = _fill_columns, (cols, out, valid, fill, lo)
        elif valid is not None:
            work, args = kernels.pack_keep, (cols, out, valid, fill, lo)
        else:
            work, args = kernels.pack_fill, (cols, out, fill, lo)
        # on the pool: numba's parallel loops take no tuple of tuples (``cols``); a
        # row-major matrix of fewer than `_THREADS_MIN_ELEMENTS` on this thread alone
        # (100,000 rows of six columns, 10% nulls: 714 -> 535 us, measured)
        ranges = _row_ranges(hi - lo, ncols,
                             _PARALLEL_MIN_ELEMENTS if column_major else _THREADS_MIN_ELEMENTS)
        if len(ranges) == 1:
            work(*args, 0, hi - lo)
        else:
            _on_pool_and_here(work, args, ranges)


def _fill_columns(
    cols: tuple[Any, ...],
    out: np.ndarray[Any, Any],
    valid: np.ndarray[Any, Any] | None,
    fill: Any,
    base: int,
    lo: int,
    hi: int,
) -> None:
    """Rows ``lo:hi`` of a segment starting at matrix row ``base``, one column at a time.

    For a column-major matrix: each column's kernel stores into its contiguous matrix
    column (`fill_column`, `keep_column`), where the row kernels would store across
    all columns of a row.
    """
    kernels = _kernels()
    for values, bits, offset, j in cols:
        if valid is None:
            kernels.fill_column(values, bits, offset, out[base:, j], fill, lo, hi)
        else:
            kernels.keep_column(values, bits, offset, out[base:, j], valid[base:, j], fill,
                                lo, hi)  # fmt: skip


def _single_nested(
    col: pa.ChunkedArray,
    name: str,
    value_dtype: np.dtype[Any],
    target: np.dtype[Any] | None,
    nulls: Any,
    order: str,
) -> FeatureMatrix:
    """One FixedSizeList / tensor column: zero-copy when it already has the target dtype.

    And the order: its values are row-major; ``order="F"`` copies them column-major.
    """
    view = as_tensor(col, name=name, allow_copy=True, nulls=nulls)
    array = view.numpy()
    validity = None
    if view.validity is not None:
        row_valid = view.validity.to_numpy()
        validity = np.broadcast_to(row_valid.reshape((-1,) + (1,) * (array.ndim - 1)), array.shape)
    reasons = [view.copy_reason] if view.copied else []
    if target is not None and target != array.dtype:
        if target.kind == "u" and array.dtype.kind == "f":
            array = _unsigned_from_float(array, target)
        else:
            array = array.astype(target, order="F" if order == "F" else "K")
        reasons.append(f"cast {value_dtype} to {target}")
    if order == "F" and not array.flags.f_contiguous:
        array = np.asfortranarray(array)
        reasons.append(f"wrote the values into a new F-order {array.dtype} array")
    if reasons:
        return FeatureMatrix(
            np.array(array, copy=True) if not array.flags.writeable else array,
            [name],
            validity,
            copied=True,
            copy_reason="; ".join(reasons),
        )
    return FeatureMatrix(array, [name], validity, copied=False, copy_reason="")
