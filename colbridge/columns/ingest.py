"""Ingest: any column-like object → an Arrow ChunkedArray, without copying where Arrow allows."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.errors import UnsupportedTypeError

__all__ = [
    "BYTE_SWAPPED",
    "column_to_arrow",
    "copy_reason",
    "ingest_column",
    "nan_as_null",
    "pandas_nan_is_null",
    "source_kind",
    "validity_bitmap",
]


def source_kind(obj: Any) -> str:
    """Name the library an object comes from: ``pyarrow``, ``polars``, ``pandas``, ``numpy``.

    Never imports pandas or polars to find out.
    """
    if isinstance(obj, (pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch)):
        return "pyarrow"
    if isinstance(obj, np.ndarray):
        return "numpy"
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(obj, (pl.Series, pl.DataFrame)):
        return "polars"
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(obj, (pd.Series, pd.DataFrame)):
        return "pandas"
    if hasattr(obj, "__arrow_c_stream__") or hasattr(obj, "__arrow_c_array__"):
        return "arrow-capsule"
    return type(obj).__module__.split(".")[0]


def column_to_arrow(obj: Any, name: str | None = None) -> pa.ChunkedArray:
    """Return the Arrow data of one column, as a ChunkedArray.

    Zero-copy for pyarrow arrays, polars Series (every chunk kept as it is;
    a Categorical as its physical codes), contiguous NumPy arrays and NumPy-backed
    or Arrow-backed pandas Series, and pandas ``category`` columns (their codes).
    A nullable-masked pandas Series (``Int64``, ``Float64``, ``boolean``) keeps its
    values buffer; only its byte mask is packed into an Arrow validity bitmap.
    `ingest_column` also says when (and why) the data had to be copied.

    Raises
    ------
    UnsupportedTypeError
        For objects that are not columns, and for pandas ``object`` columns,
        whose values are Python objects with no Arrow buffer behind them.
    """
    return ingest_column(obj, name)[0]


def ingest_column(
    obj: Any, name: str | None = None, *, category_values: bool = False
) -> tuple[pa.ChunkedArray, list[str]]:
    """`column_to_arrow`, and the reasons the data was copied (empty: it was not).

    A copy is reported exactly when the Arrow values no longer lie in the source's
    own memory: a strided or byte-swapped NumPy column, NumPy bools packed into
    bits, a pandas extension array converted by pandas. ``category_values=True``
    reads a pandas ``category`` column of numbers (or dates) as its values, as
    ``polars.from_pandas`` does (a copy; expressions compute on values), instead
    of its codes (a tensor's view).
    """
    if isinstance(obj, pa.ChunkedArray):
        return obj, []
    if isinstance(obj, pa.Array):
        return pa.chunked_array([obj], type=obj.type), []
    # the two kinds of Series first: a compute ingests each column it reads, every time
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(obj, pl.Series):
        return polars_to_arrow(obj, name), []
    label = f"column `{name}`" if name is not None else "the column"
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(obj, pd.Series):
        return _pandas_to_arrow(obj, label, category_values)
    _refuse_frame(obj)
    kind = source_kind(obj)
    if kind == "polars":
        return polars_to_arrow(obj, name), []
    if kind == "numpy":
        return _numpy_to_arrow(obj, label)
    if kind == "pandas":
        return _pandas_to_arrow(obj, label, category_values)
    if hasattr(obj, "__arrow_c_stream__"):
        return pa.chunked_array(obj), []
    if hasattr(obj, "__arrow_c_array__"):
        array = pa.array(obj)
        return pa.chunked_array([array], type=array.type), []
    msg = (
        f"{label} is a {type(obj).__module__}.{type(obj).__name__}, which is not a column; "
        "pass a pyarrow Array/ChunkedArray, a polars or pandas Series, a NumPy array, "
        "or an object with `__arrow_c_array__` / `__arrow_c_stream__`"
    )
    raise UnsupportedTypeError(msg)


def _refuse_frame(obj: Any) -> None:
    """Raise `UnsupportedTypeError` for a whole frame passed where one column is expected."""
    pl = sys.modules.get("polars")
    pd = sys.modules.get("pandas")
    if pl is not None and isinstance(obj, pl.LazyFrame):
        msg = (
            "expected one column, got a polars LazyFrame, which has no data yet; call "
            '`.collect()` first, then pass one of its columns (`df["name"]`), or use '
            "`cb.to_tensor(df, columns)` for a matrix of several columns"
        )
        raise UnsupportedTypeError(msg)
    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        kind = f"pyarrow {type(obj).__name__}"
        names = list(obj.column_names)
    elif pl is not None and isinstance(obj, pl.DataFrame):
        kind, names = "polars DataFrame", list(obj.columns)
    elif pd is not None and isinstance(obj, pd.DataFrame):
        kind, names = "pandas DataFrame", [str(c) for c in obj.columns]
    else:
        return
    example = f"`frame[{names[0]!r}]`" if names else "`frame[name]`"
    msg = (
        f"expected one column, got a {kind} (a whole frame, columns {names[:5]!r}"
        f"{'...' if len(names) > 5 else ''}); pass one of its columns, e.g. {example}, "
        "or use `cb.to_tensor(frame, columns)` for a matrix of several columns"
    )
    raise UnsupportedTypeError(msg)


def nan_as_null(chunked: pa.ChunkedArray) -> pa.ChunkedArray:
    """Float chunks with NaN turned into nulls (a new validity bitmap; the values are shared)."""
    if not pa.types.is_floating(chunked.type):
        return chunked
    chunks = [pa.array(c.to_numpy(zero_copy_only=False), from_pandas=True) for c in chunked.chunks]
    return pa.chunked_array(chunks, type=chunked.type)


def pandas_nan_is_null(obj: Any) -> bool:
    """True for a NumPy-backed pandas float Series: pandas marks its missing values with NaN."""
    pd = sys.modules.get("pandas")
    if pd is None or not isinstance(obj, pd.Series):
        return False
    dtype = obj.dtype
    return isinstance(dtype, np.dtype) and dtype.kind == "f"


def _within(address: int, size: int, start: int, nbytes: int) -> bool:
    return start <= address and address + size <= start + nbytes


def _address(array: np.ndarray) -> int:
    """The address of ``array``'s first byte.

    pyarrow reads it from a contiguous array without the dictionary NumPy's
    ``__array_interface__`` builds (a pandas compute asks it of every column it reads).
    """
    if array.flags.c_contiguous or array.flags.f_contiguous:
        with contextlib.suppress(TypeError, ValueError, BufferError):  # a dtype it cannot view
            return int(pa.py_buffer(array).address)
    return int(array.__array_interface__["data"][0])


def _ndarray_span(array: np.ndarray) -> tuple[int, int]:
    """The address and size of the whole memory block ``array`` views (its base's)."""
    base = array
    while isinstance(base.base, np.ndarray):
        base = base.base
    return _address(base), int(base.nbytes)


def _values_shared(result: pa.Array, source: np.ndarray) -> bool:
    """True when ``result``'s values buffer lies in ``source``'s memory (no copy)."""
    if len(result) == 0:
        return True
    buffers = result.buffers()
    data = buffers[1] if len(buffers) > 1 else None
    if data is None:
        return False
    start, nbytes = _ndarray_span(source)
    return _within(int(data.address), int(data.size), start, nbytes) or (
        int(data.address) == _address(source)
    )


def copy_reason(result: pa.Array, source: np.ndarray) -> list[str]:
    """Why ``result`` (made from ``source``) is a copy, as one reason; [] when it shares it."""
    if _values_shared(result, source):
        return []
    if source.dtype.kind == "b":
        why = "NumPy bools packed into Arrow bits"
    elif not source.dtype.isnative:
        why = "byte-swapped to native order"
    elif not source.flags.c_contiguous:
        why = f"a strided NumPy column (stride {source.strides[0]} bytes) made contiguous"
    else:
        why = "copied into a new Arrow buffer"
    return [f"{why} (a copy)"]


def polars_to_arrow(series: Any, name: str | None) -> pa.ChunkedArray:
    """The polars Series' own chunks, through the C stream interface (no copy).

    A Categorical's export renumbers its codes into a new buffer; its physical
    codes (indices into its categories) are read instead, with no copy.
    (`column_to_arrow` of a Series, without its checks of what the object is.)

    Examples
    --------
    >>> import polars as pl
    >>> s = pl.Series("x", [1.5, None])
    >>> polars_to_arrow(s, "x").to_pylist()
    [1.5, None]
    """
    pl = sys.modules["polars"]
    if isinstance(series.dtype, pl.Categorical):
        codes = pa.chunked_array(series.to_physical())
        labels = series.dtype.categories.to_series().to_arrow()
        ordered = getattr(series.dtype, "ordering", None) == "lexical"
        return pa.chunked_array(
            [pa.DictionaryArray.from_arrays(c, labels, ordered=ordered) for c in codes.chunks],
            type=pa.dictionary(codes.type, labels.type, ordered),
        )
    try:
        return pa.chunked_array(series)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        # polars' 128-bit integers have no Arrow type pyarrow can import
        if name is None:
            name = getattr(series, "name", None) or None
        label = f"column `{name}`" if name is not None else "the column"
        msg = (
            f"{label} has polars type {series.dtype}, which Arrow cannot represent ({exc}); "
            "colbridge takes integers up to 64 bits: cast it first, e.g. "
            "`s.cast(pl.Int64)` or `s.cast(pl.Float64)`"
        )
        raise UnsupportedTypeError(msg) from None


def refuse_numpy_dtype(dtype: np.dtype[Any], label: str) -> None:
    """Raise `UnsupportedTypeError` for a NumPy dtype no Arrow column type holds."""
    if dtype.kind in "cV" or (dtype.kind == "f" and dtype.itemsize > 8):
        msg = (
            f"{label} has NumPy dtype `{dtype}`, which has no Arrow column type "
            "(complex, extended precision or structured); convert it first, e.g. split "
            "a complex column into `.real` and `.imag`, or `x.astype('float64')`"
        )
        raise UnsupportedTypeError(msg)


def _numpy_to_arrow(array: np.ndarray, label: str) -> tuple[pa.ChunkedArray, list[str]]:
    if array.dtype == object:
        msg = (
            f"{label} has NumPy dtype `object` (Python objects, no typed buffer); "
            "convert it to a typed array first, e.g. `np.asarray(x, dtype='float64')`"
        )
        raise UnsupportedTypeError(msg)
    if array.ndim != 1:
        msg = (
            f"{label} is a {array.ndim}-D NumPy array; a column is 1-D "
            "(pass a 2-D array as a FixedSizeList: `pa.FixedSizeListArray.from_arrays`)"
        )
        raise UnsupportedTypeError(msg)
    refuse_numpy_dtype(array.dtype, label)
    if isinstance(array, np.ma.MaskedArray):
        return _masked_to_arrow(array, label)
    # pa.array copies strided input: say so rather than copy silently
    if not array.dtype.isnative:  # Arrow has no other-endian types: swap (a copy)
        swapped = array.astype(array.dtype.newbyteorder("="))
        return pa.chunked_array([pa.array(swapped)]), [BYTE_SWAPPED]
    result = pa.array(array)
    return pa.chunked_array([result]), copy_reason(result, array)


#: The copy reason of a column in the other byte order (Arrow has native order only).
BYTE_SWAPPED = "byte-swapped to native order (a copy)"


def validity_bitmap(valid: np.ndarray[Any, Any], offset: int = 0) -> pa.Buffer:
    """An Arrow validity bitmap (LSB first) of boolean ``valid``, starting at bit ``offset``."""
    if offset:
        valid = np.concatenate([np.ones(offset, dtype=bool), valid])
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def _masked_to_arrow(array: np.ma.MaskedArray, label: str) -> tuple[pa.ChunkedArray, list[str]]:
    """A NumPy masked array: its values as for any NumPy column, its mask as Arrow nulls.

    As ``pa.array(masked)`` reads it: a masked element is a null. The values are
    shared where NumPy's are (contiguous, native order); the mask is packed into a new
    validity bitmap, as a pandas nullable column's is.
    """
    data = np.ma.getdata(array)
    chunked, reasons = _numpy_to_arrow(data, label)
    mask = np.ma.getmaskarray(array)
    count = int(np.count_nonzero(mask))
    if not count:
        return chunked, reasons
    values = chunked.chunk(0)
    bitmap = validity_bitmap(~mask, values.offset)
    masked = pa.Array.from_buffers(
        values.type, len(values), [bitmap, *values.buffers()[1:]], count, values.offset
    )
    return pa.chunked_array([masked], type=masked.type), reasons


def _pandas_to_arrow(
    series: Any, label: str, category_values: bool = False
) -> tuple[pa.ChunkedArray, list[str]]:
    dtype = series.dtype
    if series.dtype == object:
        msg = (
            f"{label} has pandas dtype `object` (Python objects, no typed buffer); "
            "convert it first, e.g. `s.astype('float64')` or "
            "`s.astype(pd.ArrowDtype(pa.float64()))`"
        )
        raise UnsupportedTypeError(msg)
    if isinstance(dtype, np.dtype):
        return _pandas_numpy_to_arrow(series, label)
    values = series.array
    pd = sys.modules["pandas"]
    if isinstance(values, pd.Categorical):
        try:
            codes = _categorical_to_arrow(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            msg = (
                f"{label} is a pandas category of {values.categories.dtype} values, which "
                f"Arrow cannot hold ({exc}); convert its categories first, e.g. "
                "`s.astype(str).astype('category')`"
            )
            raise UnsupportedTypeError(msg) from None
        kind = getattr(values.categories.dtype, "kind", "O")
        if category_values and kind in "biufmM":
            decoded = codes.dictionary_decode()
            return pa.chunked_array([decoded]), [
                f"decoded a pandas category column into its {values.categories.dtype} values "
                "(a copy)"
            ]
        return pa.chunked_array([codes]), []
    arrow_array = getattr(values, "__arrow_array__", None)
    if isinstance(series.dtype, pd.SparseDtype):
        # stored values and their positions: the dense column is always new memory;
        # pandas reads NaN (and NaT) there as missing, as Arrow's null
        dense = values.to_dense()
        result = pa.array(dense, from_pandas=True)
        return pa.chunked_array([result]), [f"densified from pandas `{series.dtype}` (a copy)"]
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        # zoned datetimes: to_numpy gives Python Timestamp objects (a slow copy, and NaT
        # fails there); pyarrow reads their UTC int64 buffer in place, NaT as null, the
        # zone in the timestamp type
        result = pa.array(series)
        return pa.chunked_array([result]), copy_reason(result, values.asi8)
    if arrow_array is None:
        return _pandas_numpy_to_arrow(series, label)
    # ArrowDtype and masked extension arrays know their own Arrow form
    converted = arrow_array()
    chunked = (
        pa.chunked_array([converted], type=converted.type)
        if isinstance(converted, pa.Array)
        else converted
    )
    return chunked, _extension_copy_reason(values, chunked)


def _pandas_numpy_to_arrow(series: Any, label: str) -> tuple[pa.ChunkedArray, list[str]]:
    """A NumPy-backed pandas Series (`_pandas_to_arrow`): its own buffer where it can."""
    # NaN stays a value in the Arrow form (from_pandas=False); the lazy engine reads it
    # as null in place, `as_tensor`/`to_tensor` apply `pandas_nan_is_null` themselves
    source = series.to_numpy(copy=False)
    refuse_numpy_dtype(source.dtype, label)
    if not source.dtype.isnative:  # Arrow has no other-endian types: swap (a copy)
        swapped = source.astype(source.dtype.newbyteorder("="))
        return pa.chunked_array([pa.array(swapped)]), [BYTE_SWAPPED]
    result = pa.array(source)
    return pa.chunked_array([result]), copy_reason(result, source)


def _categorical_to_arrow(values: Any) -> pa.DictionaryArray:
    """A pandas Categorical as an Arrow dictionary array over its own codes (no copy).

    Missing values (code -1) become nulls in a new validity bitmap; the codes
    buffer itself is shared.
    """
    codes = values.codes
    indices = pa.array(codes, mask=codes < 0)
    categories = values.categories
    pd = sys.modules["pandas"]
    # zoned datetimes: their NumPy form is Python Timestamps, which Arrow would read
    # as microseconds; the index itself keeps the nanoseconds and the zone
    dictionary = pa.array(categories) if isinstance(categories.dtype, pd.DatetimeTZDtype) \
        else pa.array(categories.to_numpy())  # fmt: skip
    return pa.DictionaryArray.from_arrays(indices, dictionary, ordered=bool(values.ordered))


def _extension_copy_reason(values: Any, chunked: pa.ChunkedArray) -> list[str]:
    """Why a pandas extension array's Arrow form is a copy ([] when its values are shared)."""
    pd = sys.modules["pandas"]
    if isinstance(values, pd.arrays.ArrowExtensionArray):
        return []  # the Arrow data itself
    source = getattr(values, "_data", None)  # masked arrays: values and a byte mask
    if source is None:
        source = getattr(values, "_ndarray", None)  # datetime-like arrays
    if isinstance(source, np.ndarray) and chunked.num_chunks == 1:
        if _values_shared(chunked.chunk(0), source):
            return []
        if source.dtype.kind == "b":
            return ["pandas booleans packed into Arrow bits (a copy)"]
    if chunked.num_chunks == 0 or len(chunked) == 0:
        return []
    return [f"converted from pandas `{values.dtype}` by pandas (a copy)"]
