"""Columns and views: one column as a read-only tensor viewing its Arrow buffer.

:func:`as_tensor` turns a column (pyarrow, polars, pandas, NumPy, or anything
with ``__arrow_c_array__`` / ``__arrow_c_stream__``) into a :class:`TensorView`.
For a single-chunk column of a tensor-able type (see ``docs/types.md``) the
view is zero-copy: its data pointer is the Arrow values buffer's address plus
``offset * itemsize``, whatever the row count.

Nulls
-----
``nulls`` decides what happens to null slots:

* ``"keep"`` (default): the values are exposed as they are (the bytes under a
  null slot are unspecified) and ``.validity`` describes which rows are valid,
  zero-copy over the Arrow validity bitmap. ``.validity`` is None when there
  are no nulls.
* ``"raise"``: :class:`~colbridge.errors.NullValuesError` when the column
  holds any null.
* any other value: a fill value. Nulls are replaced by it in a copy, which is
  made only with ``allow_copy=True`` (else
  :class:`~colbridge.errors.CopyNotAllowedError`). A column without nulls is
  not copied.

FixedSizeList and ``arrow.fixed_shape_tensor`` columns become ``(rows, *shape)``
tensors. A null row keeps its (unspecified) child values and is reported in
``.validity``, one bit per row (whatever the child values under it say). Nulls
*inside* valid rows (in the child values, at any level) cannot be described by a
per-row validity, so with ``nulls="keep"`` or ``"raise"`` they raise
:class:`~colbridge.errors.NullValuesError`; a fill value (with ``allow_copy=True``)
fills both null rows and null elements.

A NumPy masked array is read as ``pa.array`` reads it: a masked element is a null
(its values are viewed as they are, the mask becomes ``.validity``).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.columns.ingest import (
    BYTE_SWAPPED,
    copy_reason,
    ingest_column,
    pandas_nan_is_null,
    refuse_numpy_dtype,
    validity_bitmap,
)
from colbridge.columns.views import ArrayProtocols
from colbridge.errors import CopyNotAllowedError, InvalidOperationError, NullValuesError
from colbridge.memory import HostBuffer, host_view
from colbridge.memory.host import HostLayout
from colbridge.types.table import TensorSpec, tensor_spec

__all__ = ["TensorView", "Validity", "as_tensor"]


class Validity:
    """An Arrow validity bitmap, zero-copy: bit ``offset + i`` is row ``i`` (1 = valid).

    Attributes
    ----------
    buffer : pa.Buffer
        The Arrow validity buffer (least significant bit first).
    offset : int
        Bit offset of row 0 in ``buffer``.
    length : int
        Number of rows.
    null_count : int
        Number of zero bits in the range.
    """

    def __init__(self, buffer: pa.Buffer, offset: int, length: int, null_count: int) -> None:
        self.buffer = buffer
        self.offset = offset
        self.length = length
        self.null_count = null_count

    @property
    def address(self) -> int:
        """Address of the bitmap's first byte (bit ``offset`` lives in byte ``offset // 8``)."""
        return int(self.buffer.address)

    @property
    def bitmap(self) -> np.ndarray[Any, Any]:
        """Read-only uint8 view of the bytes holding the range (zero-copy).

        Bit ``offset % 8`` of byte 0 is row 0.
        """
        first = self.offset // 8
        last = (self.offset + self.length + 7) // 8
        return host_view(
            HostBuffer.from_arrow(self.buffer),
            np.dtype(np.uint8),
            (last - first,),
            byte_offset=first,
        )

    def to_numpy(self) -> np.ndarray[Any, Any]:
        """Unpacked booleans, True where the row is valid (a copy, one byte per row)."""
        bits = np.unpackbits(self.bitmap, bitorder="little")
        start = self.offset % 8
        return bits[start : start + self.length].astype(bool)

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return (
            f"Validity(length={self.length}, null_count={self.null_count}, "
            f"bit_offset={self.offset}, address={self.address:#x})"
        )


class TensorView(ArrayProtocols):
    """A column as a read-only tensor, keeping its Arrow owner alive.

    Made by :func:`as_tensor`. Speaks ``__array_interface__``, ``__array__``,
    ``__dlpack__`` / ``__dlpack_device__`` and ``__arrow_c_array__``.

    Attributes
    ----------
    name : str or None
        Column name.
    arrow_type : pa.DataType
        The column's Arrow type.
    unit : str or None
        Time unit for date/time/timestamp/duration columns (``"D"``, ``"s"``, ...).
    tz : str or None
        Time zone of a timestamp column.
    validity : Validity or None
        Which rows are valid; None when there are no nulls.
    null_count : int
        Number of null rows.
    dictionary : pa.Array or None
        The dictionary values of a dictionary column (the tensor holds the indices).
    copied : bool
        Whether building the view copied data, or `arrow` had to (a strided or
        bool NumPy column made into an Arrow buffer); ``copy_reason`` says why.
    placement : str
        ``"host"``.
    """

    def __init__(
        self,
        array: np.ndarray[Any, Any] | HostLayout,
        arrow: pa.Array | None,
        spec: TensorSpec,
        *,
        name: str | None,
        validity: Validity | None,
        null_count: int,
        dictionary: pa.Array | None,
        copied: bool,
        copy_reason: str,
        nan_is_null: bool = False,
    ) -> None:
        super().__init__(array, copied=copied, copy_reason=copy_reason)
        self._arrow = arrow
        self._spec = spec
        self.name = name
        self._validity = validity
        self._null_count = null_count
        self.dictionary = dictionary
        # a pandas NumPy float column: NaN marks a missing value, found on first use
        # (so making the view stays as cheap as for any other column)
        self._nan_nulls_pending = nan_is_null

    def _find_nan_nulls(self) -> None:
        if not self._nan_nulls_pending:
            return
        self._nan_nulls_pending = False
        values = self._ndarray()
        if not values.flags.c_contiguous:
            # a strided column: Arrow would copy the values; find the NaN rows in place
            missing = np.isnan(values)
            count = int(np.count_nonzero(missing))
            if count:
                self._null_count = count
                self._validity = Validity(validity_bitmap(~missing), 0, len(values), count)
            return
        arrow = pa.array(values, from_pandas=True)  # NaN → null; the values are shared
        self._arrow = arrow
        count = arrow.null_count
        if count:
            self._null_count = count
            self._validity = Validity(arrow.buffers()[0], arrow.offset, len(arrow), count)

    @property
    def validity(self) -> Validity | None:
        """Which rows are valid (zero-copy over the Arrow bitmap); None when none is null."""
        self._find_nan_nulls()
        return self._validity

    @property
    def null_count(self) -> int:
        """Number of null rows."""
        self._find_nan_nulls()
        return self._null_count

    @property
    def arrow_type(self) -> pa.DataType:
        """The column's Arrow type."""
        return self._spec.arrow_type

    @property
    def unit(self) -> str | None:
        """Time unit of a temporal column, else None."""
        return self._spec.unit

    @property
    def tz(self) -> str | None:
        """Time zone of a timestamp column, else None."""
        return self._spec.tz

    def arrow(self) -> pa.Array:
        """Return the Arrow array whose values this tensor holds.

        No copy, except for a view made directly over a NumPy bool array, whose
        bytes are packed into Arrow bits here (once), and over a strided NumPy
        column, which Arrow needs contiguous (copied here, once); such a copy is
        reported: ``copied`` becomes True and ``copy_reason`` says why. A view made
        directly over a contiguous NumPy (or NumPy-backed pandas) column wraps that
        memory in an Arrow array here, on first use, without copying it; for a
        pandas float column, NaN becomes null there (pandas' missing value), and
        for a masked array, a masked element.
        """
        self._find_nan_nulls()
        if self._arrow is None:
            values = self._ndarray()
            validity = self._validity
            mask = None if validity is None else ~validity.to_numpy()
            arrow = pa.array(values, type=self._spec.arrow_type, mask=mask)
            reasons = [f"`.arrow()`: {why}" for why in copy_reason(arrow, values)]
            if reasons:
                self.copied = True
                self.copy_reason = "; ".join(r for r in (self.copy_reason, *reasons) if r)
            self._arrow = arrow
        return self._arrow

    def __arrow_c_array__(self, requested_schema: Any = None) -> tuple[Any, Any]:
        """Export back to Arrow through pyarrow's own C data interface export."""
        result: tuple[Any, Any] = self.arrow().__arrow_c_array__(requested_schema)
        return result

    def __repr__(self) -> str:
        label = f"{self.name!r}" if self.name is not None else "unnamed"
        unit = f", unit={self.unit!r}" if self.unit else ""
        copy = f"copied ({self.copy_reason})" if self.copied else "zero-copy"
        return (
            f"TensorView({label}, shape={self.shape}, dtype={self.dtype}, "
            f"arrow_type={self.arrow_type}{unit}, null_count={self.null_count}, "
            f"{copy}, placement={self.placement!r})"
        )


def _label(name: str | None) -> str:
    return f"column `{name}`" if name is not None else "the column"


def _guess_name(column: Any) -> str | None:
    name = getattr(column, "name", None)
    if name is None or callable(name):
        return None
    return str(name)


#: NumPy dtype kinds viewed directly (no Arrow round trip): ints, floats, bool.
_DIRECT_KINDS = frozenset("iufb")
_NUMPY_SPECS: dict[np.dtype[Any], TensorSpec] = {}


_POLARS_NUMERIC: frozenset[type] | None = None


def _polars_numeric(pl: Any) -> frozenset[type]:
    global _POLARS_NUMERIC
    if _POLARS_NUMERIC is None:
        names = ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64")
        _POLARS_NUMERIC = frozenset(getattr(pl, n) for n in (*names, "Float32", "Float64"))
    return _POLARS_NUMERIC


def _numpy_source(column: Any) -> np.ndarray[Any, Any] | None:
    """Return the ndarray behind a column when no Arrow round trip is needed, else None.

    That is: a NumPy array; a NumPy-backed pandas Series of ints, floats or
    bools; a one-chunk polars Series of ints or floats without nulls (which
    polars hands out as a read-only ndarray over its own buffer).
    """
    if isinstance(column, np.ndarray):
        if isinstance(column, np.ma.MaskedArray):
            # its values alone, when nothing is masked (else: `_masked_view`)
            return None if _any_masked(column) else np.ma.getdata(column)
        return column
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(column, pl.Series):
        if (
            type(column.dtype) not in _polars_numeric(pl)
            or column.n_chunks() != 1
            or column.null_count()
            or not len(column)  # an empty Series hands out a dangling address
        ):
            return None
        values: np.ndarray[Any, Any] = column.to_numpy(allow_copy=False)
        return values
    pd = sys.modules.get("pandas")
    if pd is None or not isinstance(column, pd.Series):
        return None
    dtype = column.dtype
    if not isinstance(dtype, np.dtype) or dtype.kind not in _DIRECT_KINDS:
        return None
    array: np.ndarray[Any, Any] = column.to_numpy(copy=False)
    return array


def _any_masked(array: np.ma.MaskedArray) -> bool:
    """True when a masked array masks at least one element."""
    mask = np.ma.getmask(array)
    return mask is not np.ma.nomask and bool(mask.any())


def numpy_spec(dtype: np.dtype[Any]) -> TensorSpec:
    """Return the tensor spec of a NumPy dtype (its default Arrow type), cached."""
    spec = _NUMPY_SPECS.get(dtype)
    if spec is None:
        refuse_numpy_dtype(dtype, "the array")
        spec = tensor_spec(pa.from_numpy_dtype(dtype))
        _NUMPY_SPECS[dtype] = spec
    return spec


def _direct_ok(array: np.ndarray[Any, Any]) -> bool:
    """True for a 1-D, contiguous, aligned, native-order int/float/bool ndarray."""
    dtype = array.dtype
    if dtype.kind not in _DIRECT_KINDS or array.ndim != 1 or not dtype.isnative:
        return False
    flags = array.flags
    return bool(flags.c_contiguous and flags.aligned)


def direct_array(column: Any) -> np.ndarray[Any, Any] | None:
    """Return the ndarray a column can be read from without Arrow, or None.

    See :func:`_numpy_source`; the array is also 1-D, contiguous, aligned,
    native-order and of an int, float or bool dtype.
    """
    array = _numpy_source(column)
    if array is None:
        return None
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(column, pl.Series):
        return array  # numeric, one chunk: 1-D, contiguous, native, aligned
    return array if _direct_ok(array) else None


def _viewable(array: np.ndarray[Any, Any]) -> bool:
    """True for a 1-D, aligned, native-order int/float/bool ndarray with a positive stride.

    A strided column (``np.arange(20)[::2]``, ``df[::2]``) is viewed as it is: NumPy
    and DLPack describe strides, so the tensor needs no copy.
    """
    dtype = array.dtype
    if dtype.kind not in _DIRECT_KINDS or array.ndim != 1 or not dtype.isnative:
        return False
    if not array.flags.aligned:
        return False
    return len(array) <= 1 or array.strides[0] >= dtype.itemsize


def _numpy_direct(
    array: np.ndarray[Any, Any],
    name: str | None,
    *,
    nan_is_null: bool = False,
    validity: Validity | None = None,
) -> TensorView | None:
    """View a 1-D, aligned, native-order int/float/bool ndarray as it is (strides kept).

    Zero-copy and without building an Arrow array (``.arrow()`` makes one on
    demand, without copying a contiguous column). Anything else returns None and
    goes through Arrow. ``validity``: the rows' validity (a masked array's mask).
    """
    if not _viewable(array):
        return None
    view = array.view()
    view.flags.writeable = False
    return TensorView(
        view,
        None,
        numpy_spec(array.dtype),
        name=name,
        validity=validity,
        null_count=validity.null_count if validity is not None else 0,
        dictionary=None,
        copied=False,
        copy_reason="",
        nan_is_null=nan_is_null,
    )


def as_tensor(
    column: Any,
    *,
    allow_copy: bool = False,
    nulls: Any = "keep",
    name: str | None = None,
) -> TensorView:
    """Expose one column as a read-only tensor, zero-copy where Arrow allows.

    Parameters
    ----------
    column : object
        A pyarrow Array/ChunkedArray, polars Series, pandas Series (NumPy-backed,
        nullable-masked or ``ArrowDtype``), 1-D NumPy array (a masked array's
        masked elements are nulls), or an object with ``__arrow_c_array__`` /
        ``__arrow_c_stream__``. Not a whole frame: take one of its columns, or use
        `colbridge.to_tensor` for a matrix.
    allow_copy : bool, default False
        Allow a copy where one is unavoidable: several chunks (combined once),
        bool (unpacked from bits to bytes), a fill value for nulls.
    nulls : {"keep", "raise"} or scalar, default "keep"
        ``"keep"``: values plus ``.validity``; ``"raise"``: error on any null;
        a scalar: fill nulls with it (a copy; needs ``allow_copy=True``).
    name : str, optional
        Column name for the view and for error messages; defaults to the
        column's own ``.name``.

    Returns
    -------
    TensorView
        Zero-copy (``.copied`` is False) for a single-chunk column of a
        numeric, temporal, dictionary, FixedSizeList or fixed-shape-tensor
        type: its data pointer is the Arrow values buffer's address plus
        ``offset * itemsize``; also for a strided NumPy column (viewed with its
        stride) and a pandas ``category`` or polars ``Categorical`` column (its
        codes). ``.copied`` is True exactly when the tensor's memory lies outside
        the source's own buffers. In a NumPy-backed pandas float column NaN is
        pandas' missing value: it counts as a null (``.validity``, ``nulls``).

    Raises
    ------
    UnsupportedTypeError
        The type cannot be a tensor (strings, lists, structs, decimals, ...),
        or ``column`` is a whole frame.
    CopyNotAllowedError
        A copy is needed (several chunks, bool, a byte-swapped column, a fill
        value) and ``allow_copy`` is False.
    NullValuesError
        ``nulls="raise"`` and the column holds nulls, or nulls inside the valid
        rows of a FixedSizeList column.
    InvalidOperationError
        A fill value the column's type cannot hold exactly, or, for a dictionary
        column, one that is not one of its codes.

    Examples
    --------
    >>> import pyarrow as pa
    >>> arr = pa.array([1.5, None, 3.0, 4.0]).slice(1)
    >>> t = as_tensor(arr)
    >>> t.shape, t.null_count, t.copied
    ((3,), 1, False)
    >>> t.data_address == arr.buffers()[1].address + arr.offset * 8
    True
    >>> as_tensor(arr, nulls=0.0, allow_copy=True).numpy().tolist()
    [0.0, 3.0, 4.0]
    """
    if isinstance(column, TensorView):
        return column
    if name is None:
        name = _guess_name(column)
    if isinstance(column, pa.Array):
        # The hot path: no ChunkedArray wrapping for a plain Arrow array.
        spec = tensor_spec(column.type, name)
        return _view_of(column, spec, name=name, nulls=nulls, allow_copy=allow_copy, reasons=[])
    if pandas_nan_is_null(column):
        return _pandas_float_view(column, name, nulls=nulls, allow_copy=allow_copy)
    if isinstance(column, np.ma.MaskedArray) and _any_masked(column):
        return _masked_view(column, name, nulls=nulls, allow_copy=allow_copy)
    source = _numpy_source(column)
    if source is not None:
        direct = _numpy_direct(source, name)
        if direct is not None:
            _check_nulls(nulls)
            return direct
    return _ingested_view(column, name, nulls=nulls, allow_copy=allow_copy)


def _ingested_view(column: Any, name: str | None, *, nulls: Any, allow_copy: bool) -> TensorView:
    """Any column through its Arrow form (`ingest_column`)."""
    chunked, reasons = ingest_column(column, name)
    spec = tensor_spec(chunked.type, name)
    _allowed(reasons, name, allow_copy)
    array, more = _one_chunk(chunked, spec, name, allow_copy)
    return _view_of(
        array, spec, name=name, nulls=nulls, allow_copy=allow_copy, reasons=reasons + more
    )


def _masked_view(
    array: np.ma.MaskedArray, name: str | None, *, nulls: Any, allow_copy: bool
) -> TensorView:
    """A NumPy masked array with masked elements: a masked element is a null.

    With ``nulls="keep"`` the values are viewed as they are (strides kept, as for any
    NumPy column) and the mask becomes ``.validity`` (a new bitmap); otherwise, and
    for values NumPy cannot view directly, through Arrow as ``pa.array`` reads it.
    """
    _check_nulls(nulls)
    data = np.ma.getdata(array)
    if isinstance(nulls, str) and nulls == "keep" and data.ndim == 1:
        valid = ~np.ma.getmaskarray(array)
        count = len(valid) - int(np.count_nonzero(valid))
        validity = Validity(validity_bitmap(valid), 0, len(valid), count)
        direct = _numpy_direct(data, name, validity=validity)
        if direct is not None:
            return direct
    return _ingested_view(array, name, nulls=nulls, allow_copy=allow_copy)


def _allowed(reasons: list[str], name: str | None, allow_copy: bool) -> None:
    """Refuse a copy made while reading the column unless the caller allowed one."""
    if reasons and not allow_copy:
        msg = (
            f"copy not allowed: {_label(name)} is {'; '.join(reasons)} to become a tensor; "
            "pass `allow_copy=True`, or make the data contiguous and native-order at the source"
        )
        raise CopyNotAllowedError(msg)


def _pandas_float_view(
    series: Any, name: str | None, *, nulls: Any, allow_copy: bool
) -> TensorView:
    """A NumPy-backed pandas float column, NaN read as null (pandas' own convention).

    With ``nulls="keep"`` the values are viewed as they are and the NaN rows are
    found when ``.validity`` / ``.null_count`` are first asked for; ``"raise"``
    refuses a NaN, a fill value replaces it (in a copy), as for any null.
    """
    _check_nulls(nulls)
    values = series.to_numpy(copy=False)
    if isinstance(nulls, str) and nulls == "keep":
        direct = _numpy_direct(values, name, nan_is_null=True)
        if direct is not None:
            return direct
    elif _viewable(values):
        # a column without NaN needs no copy for `nulls="raise"` or a fill value either,
        # strided (`df[::2]`) or not
        count = int(np.count_nonzero(np.isnan(values)))
        if not count:
            viewed = _numpy_direct(values, name)
            assert viewed is not None
            return viewed
        if isinstance(nulls, str):  # "raise"
            raise _null_values_error(name, numpy_spec(values.dtype).arrow_type, count, len(values))
    reasons: list[str] = []
    if not values.dtype.isnative:  # Arrow has no other-endian types: swap (a copy)
        values = values.astype(values.dtype.newbyteorder("="))
        reasons.append(BYTE_SWAPPED)
    arrow = pa.array(values, from_pandas=True)  # NaN → null; the values are shared
    reasons += copy_reason(arrow, values)
    _allowed(reasons, name, allow_copy)
    spec = tensor_spec(arrow.type, name)
    return _view_of(arrow, spec, name=name, nulls=nulls, allow_copy=allow_copy, reasons=reasons)


def _one_chunk(
    chunked: pa.ChunkedArray, spec: TensorSpec, name: str | None, allow_copy: bool
) -> tuple[pa.Array, list[str]]:
    if chunked.num_chunks == 1:
        return chunked.chunk(0), []
    chunks = [c for c in chunked.chunks if len(c)]
    if len(chunks) == 1:
        return chunks[0], []
    if not chunks:
        if chunked.num_chunks:
            return chunked.chunk(0), []
        return pa.nulls(0, chunked.type), []  # as pa.array([]), without importing pandas
    if not allow_copy:
        msg = (
            f"copy not allowed: {_label(name)} has {len(chunks)} chunks, and a tensor needs "
            "one contiguous buffer; pass `allow_copy=True` to combine them (one copy), "
            "or rechunk at the source (polars: `s.rechunk()`, pyarrow: `arr.combine_chunks()`)"
        )
        raise CopyNotAllowedError(msg)
    if spec.entry.kind == "dictionary":
        chunked = chunked.unify_dictionaries()
    return chunked.combine_chunks(), [f"combined {len(chunks)} chunks into one buffer"]


def _leaf(array: pa.Array, spec: TensorSpec) -> tuple[pa.Array, int, int]:
    """Return the values-buffer array, the physical start element and the element count."""
    kind = spec.entry.kind
    if kind == "dictionary":
        indices = array.indices
        return indices, indices.offset, len(indices)
    if kind in ("fixed_size_list", "fixed_shape_tensor"):
        node = array.storage if kind == "fixed_shape_tensor" else array
        start = node.offset
        rows = len(node)
        while pa.types.is_fixed_size_list(node.type):
            size = node.type.list_size
            child = node.values
            start = child.offset + start * size
            rows *= size
            node = child
        return node, start, rows
    return array, array.offset, len(array)


def _levels(array: pa.Array, spec: TensorSpec) -> list[pa.Array]:
    """The child levels of a FixedSizeList column, each sliced to the column's range.

    ``levels[0]`` holds ``len(array) * k0`` elements (the rows' children),
    ``levels[1]`` their children, ..., the last one the leaf values.
    """
    node = array.storage if spec.entry.kind == "fixed_shape_tensor" else array
    levels = []
    while pa.types.is_fixed_size_list(node.type):
        size = node.type.list_size
        # `.values` ignores the node's own offset: the children of row r start at
        # element (offset + r) * size of it
        node = node.values.slice(node.offset * size, len(node) * size)
        levels.append(node)
    return levels


def _slot_validity(array: pa.Array, spec: TensorSpec) -> tuple[np.ndarray[Any, Any] | None, int]:
    """Which leaf slots of a FixedSizeList column hold a value, and the nulls inside rows.

    A slot is valid when its row, every list above it and its own value are valid
    (None: every slot is). The count is of the null elements inside valid rows, at
    any level below the rows, not counting what lies under a null row or a null list
    (their child values are unspecified).
    """
    node = array.storage if spec.entry.kind == "fixed_shape_tensor" else array
    levels = _levels(array, spec)
    if not node.null_count and not any(level.null_count for level in levels):
        return None, 0
    valid = np.asarray(node.is_valid()) if node.null_count else None
    count = 0
    parent = node
    for level in levels:
        size = parent.type.list_size
        above = None if valid is None else np.repeat(valid, size)
        if level.null_count:
            own = np.asarray(level.is_valid())
            if above is None:
                count += level.null_count
                valid = own
            else:
                count += int(np.count_nonzero(above & ~own))
                valid = above & own
        else:
            valid = above
        parent = level
    return valid, count


def _inner_nulls(array: pa.Array, spec: TensorSpec) -> int:
    """Nulls inside the valid rows of a FixedSizeList column (see `_slot_validity`)."""
    return _slot_validity(array, spec)[1]


def _null_values_error(
    name: str | None, arrow_type: pa.DataType, null_count: int, n: int
) -> NullValuesError:
    msg = (
        f"{_label(name)} of type `{arrow_type}` has {null_count} null value(s) in "
        f"{n} rows; fill them first (`fill_null`), or pass `nulls='keep'` to get a "
        "validity bitmap, or a fill value with `allow_copy=True`"
    )
    return NullValuesError(msg)


def _view_of(
    array: pa.Array,
    spec: TensorSpec,
    *,
    name: str | None,
    nulls: Any,
    allow_copy: bool,
    reasons: list[str],
) -> TensorView:
    _check_nulls(nulls)
    kind = spec.entry.kind
    null_count = array.null_count
    if (
        (kind == "primitive" or kind == "temporal")
        and not reasons
        and (null_count == 0 or (isinstance(nulls, str) and nulls == "keep"))
    ):
        fast = _flat_view(array, spec, name, null_count)
        if fast is not None:
            return fast
    n = len(array)
    nested = kind in ("fixed_size_list", "fixed_shape_tensor")
    inner = _inner_nulls(array, spec) if nested else 0
    keep = isinstance(nulls, str) and nulls == "keep"
    strict = isinstance(nulls, str) and nulls == "raise"
    fill = not (keep or strict)
    if strict and null_count:
        raise _null_values_error(name, spec.arrow_type, null_count, n)
    if inner and not fill:
        msg = (
            f"{_label(name)} of type `{spec.arrow_type}` has {inner} null element(s) inside "
            "its rows, which a per-row validity cannot describe; fill them first "
            "(`pc.fill_null` on the values), or pass a fill value with `allow_copy=True`"
        )
        raise NullValuesError(msg)
    to_fill = (null_count + inner) if fill else 0
    if to_fill and not allow_copy:
        msg = (
            f"copy not allowed: filling {to_fill} null(s) of {_label(name)} with {nulls!r} "
            "needs a copy; pass `allow_copy=True`, or `nulls='keep'` for a zero-copy view "
            "with a validity bitmap"
        )
        raise CopyNotAllowedError(msg)
    if kind == "bool" and not allow_copy:
        msg = (
            f"copy not allowed: {_label(name)} is `bool`, which Arrow packs 8 values to a "
            "byte; pass `allow_copy=True` to unpack it into one byte per value (a copy), "
            "or cast it to `uint8` first"
        )
        raise CopyNotAllowedError(msg)

    dictionary = array.dictionary if kind == "dictionary" else None
    values: np.ndarray[Any, Any] | HostLayout | None = None
    if not to_fill and kind != "bool":
        values = _layout(array, spec)
    if values is None:
        values = _values(array, spec)
    copied = bool(reasons)
    if kind == "bool":
        copied = True
        reasons = [*reasons, "unpacked bool bits into bytes"]
    validity: Validity | None = None
    arrow = array
    if to_fill:
        assert isinstance(values, np.ndarray)
        if dictionary is not None:
            _check_code(nulls, dictionary, name, spec)
        values = _filled(values, array, spec, nulls, name)
        copied = True
        reasons = [*reasons, f"filled {to_fill} null(s) with {nulls!r}"]
        null_count = 0
        arrow = _arrow_from_values(values, spec, dictionary)
    elif null_count:
        bitmap = array.buffers()[0]
        validity = Validity(bitmap, array.offset, n, null_count)
    else:
        null_count = 0
    return TensorView(
        values,
        arrow,
        spec,
        name=name,
        validity=validity,
        null_count=null_count,
        dictionary=dictionary,
        copied=copied,
        copy_reason="; ".join(reasons),
    )


def _check_code(fill: Any, dictionary: pa.Array, name: str | None, spec: TensorSpec) -> None:
    """Refuse a fill value of a dictionary column's nulls that is not one of its codes."""
    size = len(dictionary)
    try:
        ok = 0 <= fill < size and float(fill).is_integer()
    except (TypeError, ValueError):
        ok = False
    if not ok:
        valid = f"codes 0 to {size - 1}" if size else "no codes at all"
        msg = (
            f"fill value {fill!r} is not a code of {_label(name)} of type "
            f"`{spec.arrow_type}`: its dictionary has {size} value(s), so {valid}; "
            "pass one of those codes, or `nulls='keep'` for the codes with a validity "
            "bitmap (or `cb.to_tensor`, whose matrix takes any fill value)"
        )
        raise InvalidOperationError(msg)


def _check_nulls(nulls: Any) -> None:
    if isinstance(nulls, str) and nulls != "keep" and nulls != "raise":
        msg = f"`nulls` must be 'keep', 'raise' or a fill value, got {nulls!r}"
        raise ValueError(msg)


def _flat_view(
    array: pa.Array, spec: TensorSpec, name: str | None, null_count: int
) -> TensorView | None:
    """A primitive or temporal column as a lazy zero-copy view (None: take the general path)."""
    buffers = array.buffers()
    data = buffers[1]
    if data is None or not data.is_cpu:
        return None
    dtype = spec.dtype
    itemsize = dtype.itemsize
    offset = array.offset
    n = len(array)
    if n and (offset + n) * itemsize > data.size:
        return None  # the general path reports it
    layout = HostLayout(data.address + offset * itemsize, (n,), dtype, data)
    validity = Validity(buffers[0], offset, n, null_count) if null_count else None
    return TensorView(
        layout,
        array,
        spec,
        name=name,
        validity=validity,
        null_count=null_count,
        dictionary=None,
        copied=False,
        copy_reason="",
    )


def _layout(array: pa.Array, spec: TensorSpec) -> HostLayout | None:
    """Describe the zero-copy values tensor without building it (None: build it eagerly)."""
    if spec.permutation is not None and list(spec.permutation) != sorted(spec.permutation):
        return None
    leaf, start, count = _leaf(array, spec)
    buffer = leaf.buffers()[1]
    if buffer is None:
        return None
    itemsize = spec.dtype.itemsize
    if count and (start + count) * itemsize > HostBuffer.from_arrow(buffer).nbytes:
        return None  # host_view reports it
    shape = (len(array), *spec.inner_shape)
    return HostLayout(buffer.address + start * itemsize, shape, spec.dtype, buffer)


def _values(array: pa.Array, spec: TensorSpec) -> np.ndarray[Any, Any]:
    """Return the values as an ndarray: a zero-copy view, except for bool (unpacked copy)."""
    n = len(array)
    leaf, start, count = _leaf(array, spec)
    buffer = leaf.buffers()[1]
    if spec.entry.kind == "bool":
        if buffer is None or count == 0:
            return np.zeros(n, dtype=bool)
        first = start // 8
        nbytes = (start + count + 7) // 8 - first
        raw = host_view(
            HostBuffer.from_arrow(buffer), np.dtype(np.uint8), (nbytes,), byte_offset=first
        )
        bits = np.unpackbits(raw, bitorder="little")
        return bits[start % 8 : start % 8 + count].view(bool)
    itemsize = spec.dtype.itemsize
    shape = (n, *spec.inner_shape)
    if buffer is None:
        return np.zeros(shape, dtype=spec.dtype)
    flat = host_view(
        HostBuffer.from_arrow(buffer), spec.dtype, (count,), byte_offset=start * itemsize
    )
    out = flat.reshape(shape)
    if spec.permutation is not None and list(spec.permutation) != sorted(spec.permutation):
        out = out.transpose((0, *(1 + p for p in spec.permutation)))
    return out


def fill_scalar(fill: Any, dtype: np.dtype[Any], where: str) -> Any:
    """``fill`` as a ``dtype`` scalar; `InvalidOperationError` naming ``where`` if it changes.

    A null's fill value must survive the cast: -1 in uint8 (255), NaN in int32 or 2.7
    in an integer type would put another value in the nulls' place, unseen.
    """
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            scalar = np.asarray(fill).astype(dtype)
        exact = bool(scalar == fill) or bool(np.isnan(scalar) and np.isnan(fill))
    except (TypeError, ValueError, OverflowError):
        exact = False
    if not exact:
        msg = (f"fill value {fill!r} cannot be stored exactly as {np.dtype(dtype)} in "
               f"{where}; pass a value of that type")  # fmt: skip
        raise InvalidOperationError(msg)
    return scalar[()]


def _filled(
    values: np.ndarray[Any, Any], array: pa.Array, spec: TensorSpec, fill: Any, name: str | None
) -> np.ndarray[Any, Any]:
    scalar = fill_scalar(fill, spec.dtype, f"{_label(name)} of type `{spec.arrow_type}`")
    out = np.array(values, copy=True, order="C")
    if spec.entry.kind in ("fixed_size_list", "fixed_shape_tensor"):
        # every leaf slot under a null row, a null list or a null value
        slots, _ = _slot_validity(array, spec)
        if slots is not None:
            mask = ~slots
            perm = spec.permutation
            if perm is None:
                out.reshape(-1)[mask] = scalar
            else:
                axes = (0, *(1 + p for p in perm))
                physical = np.array(out.transpose(np.argsort(axes)))
                physical.reshape(-1)[mask] = scalar
                out = physical.transpose(axes)
    elif array.null_count:
        row_valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        out[~row_valid] = scalar
    return out


def _arrow_from_values(
    values: np.ndarray[Any, Any], spec: TensorSpec, dictionary: pa.Array | None
) -> pa.Array:
    """Return an Arrow array over filled values (numeric values are not copied again)."""
    kind = spec.entry.kind
    if kind == "bool":
        return pa.array(values, type=pa.bool_())
    if kind == "dictionary":
        return pa.DictionaryArray.from_arrays(pa.array(values), dictionary)
    if kind in ("fixed_size_list", "fixed_shape_tensor"):
        physical = values
        perm = spec.permutation
        if perm is not None:
            physical = values.transpose(np.argsort((0, *(1 + p for p in perm))))
        flat = pa.array(np.ascontiguousarray(physical).reshape(-1))
        storage_type = spec.arrow_type.storage_type if kind == "fixed_shape_tensor" else None
        node: pa.Array = flat
        target = storage_type if storage_type is not None else spec.arrow_type
        sizes: list[int] = []
        t = target
        while pa.types.is_fixed_size_list(t):
            sizes.append(t.list_size)
            t = t.value_type
        for size in reversed(sizes):
            node = pa.FixedSizeListArray.from_arrays(node, size)
        node = node.cast(target) if node.type != target else node
        if kind == "fixed_shape_tensor":
            return pa.ExtensionArray.from_storage(spec.arrow_type, node)
        return node
    data = pa.py_buffer(np.ascontiguousarray(values))
    return pa.Array.from_buffers(spec.arrow_type, len(values), [None, data])
