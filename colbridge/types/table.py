"""Types: the one table mapping each Arrow type to NumPy/CuPy/DLPack, or to why it is not a tensor.

Every question "can this Arrow type become a tensor, and as what?" is answered
here and only here: :data:`TYPE_TABLE` lists one :class:`TypeEntry` per Arrow
type family, :func:`tensor_spec` resolves a concrete Arrow type to a
:class:`TensorSpec` (or raises :class:`~colbridge.errors.UnsupportedTypeError`
naming the column, its type and what to do instead), and
:func:`type_table_markdown` renders the table as ``docs/types.md``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from colbridge.errors import UnsupportedTypeError

__all__ = [
    "DLPACK_BOOL",
    "DLPACK_FLOAT",
    "DLPACK_INT",
    "DLPACK_UINT",
    "TYPE_TABLE",
    "TensorSpec",
    "TypeEntry",
    "lookup_type",
    "tensor_spec",
    "type_table_markdown",
    "unsupported_type_error",
]

# DLPack type codes (dlpack.h, DLDataTypeCode).
DLPACK_INT = 0
DLPACK_UINT = 1
DLPACK_FLOAT = 2
DLPACK_BOOL = 6


@dataclass(frozen=True)
class TypeEntry:
    """One row of the type table: an Arrow type family and what it becomes as a tensor.

    Attributes
    ----------
    arrow : str
        The Arrow type as written in docs (``"int8"``, ``"timestamp[unit, tz]"``).
    kind : str
        ``"primitive"``, ``"bool"``, ``"temporal"``, ``"dictionary"``,
        ``"fixed_size_list"``, ``"fixed_shape_tensor"`` or ``"unsupported"``.
    numpy : str or None
        NumPy dtype name of the tensor elements (also the CuPy dtype); for
        dictionary and list types the placeholder names where it comes from.
    dlpack : tuple of (int, int) or None
        DLPack ``(type code, bits)`` of the elements.
    zero_copy : bool
        True when the tensor views the Arrow buffer without copying.
    note : str
        How the type maps, or why it is not tensor-able.
    instead : str
        For unsupported types: what to do instead.
    matches : callable
        Predicate on a ``pa.DataType`` selecting this row.
    """

    arrow: str
    kind: str
    numpy: str | None
    dlpack: tuple[int, int] | None
    zero_copy: bool
    note: str
    matches: Callable[[pa.DataType], bool]
    instead: str = ""

    @property
    def tensorable(self) -> bool:
        """True when the type can be exposed as a tensor (perhaps only as a copy)."""
        return self.kind != "unsupported"

    @property
    def cupy(self) -> str | None:
        """CuPy dtype name (CuPy names its dtypes as NumPy does)."""
        return self.numpy


@dataclass(frozen=True)
class TensorSpec:
    """A concrete Arrow type resolved to its tensor form.

    Attributes
    ----------
    entry : TypeEntry
        The table row that matched.
    arrow_type : pa.DataType
        The concrete Arrow type.
    dtype : numpy.dtype
        Element dtype of the tensor (for lists and tensors: of the values).
    dlpack : tuple of (int, int)
        DLPack ``(code, bits)`` of ``dtype``.
    inner_shape : tuple of int
        Shape of one row: ``()`` for scalars, ``(k,)`` for ``fixed_size_list[k]``,
        the tensor shape for ``arrow.fixed_shape_tensor``.
    unit : str or None
        Time unit for temporal types (``"D"``, ``"s"``, ``"ms"``, ``"us"``, ``"ns"``).
    tz : str or None
        Time zone of a timestamp type.
    """

    entry: TypeEntry
    arrow_type: pa.DataType
    dtype: np.dtype[Any]
    dlpack: tuple[int, int]
    inner_shape: tuple[int, ...] = ()
    unit: str | None = None
    tz: str | None = None
    permutation: tuple[int, ...] | None = None


def _eq(t: pa.DataType) -> Callable[[pa.DataType], bool]:
    return lambda other: bool(other == t)


def _dlpack_of(dtype: np.dtype[Any]) -> tuple[int, int]:
    if dtype.kind == "b":
        return (DLPACK_BOOL, 8)
    code = {"i": DLPACK_INT, "u": DLPACK_UINT, "f": DLPACK_FLOAT}[dtype.kind]
    return (code, dtype.itemsize * 8)


def _primitive(name: str, arrow_type: pa.DataType) -> TypeEntry:
    dtype = np.dtype(name)
    return TypeEntry(
        arrow=name if str(arrow_type) == name else f"{name}` (`{arrow_type}`)",
        kind="primitive",
        numpy=name,
        dlpack=_dlpack_of(dtype),
        zero_copy=True,
        note="view of the values buffer",
        matches=_eq(arrow_type),
    )


def _is_fsl_numeric(t: pa.DataType) -> bool:
    if not pa.types.is_fixed_size_list(t):
        return False
    while pa.types.is_fixed_size_list(t):
        t = t.value_type
    return _is_numeric(t)


def _is_tensor_ext(t: pa.DataType) -> bool:
    return isinstance(t, pa.FixedShapeTensorType) and _is_numeric(t.value_type)


def _is_numeric(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t))


def _is_extension(t: pa.DataType) -> bool:
    return isinstance(t, pa.ExtensionType)


_NUMERIC_NAMES = (
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
)

#: The type table. The first entry whose ``matches`` accepts a type decides it.
TYPE_TABLE: tuple[TypeEntry, ...] = (
    *(_primitive(n, pa.from_numpy_dtype(np.dtype(n))) for n in _NUMERIC_NAMES),
    TypeEntry(
        arrow="bool",
        kind="bool",
        numpy="bool",
        dlpack=(DLPACK_BOOL, 8),
        zero_copy=False,
        note="Arrow packs 8 values per byte; the tensor is an unpacked copy, "
        "made only with `allow_copy=True`",
        matches=pa.types.is_boolean,
    ),
    TypeEntry(
        arrow="date32",
        kind="temporal",
        numpy="int32",
        dlpack=(DLPACK_INT, 32),
        zero_copy=True,
        note="days since the epoch; `unit='D'` in the view's metadata",
        matches=pa.types.is_date32,
    ),
    TypeEntry(
        arrow="date64",
        kind="temporal",
        numpy="int64",
        dlpack=(DLPACK_INT, 64),
        zero_copy=True,
        note="milliseconds since the epoch; `unit='ms'` in the view's metadata",
        matches=pa.types.is_date64,
    ),
    TypeEntry(
        arrow="time32[unit]",
        kind="temporal",
        numpy="int32",
        dlpack=(DLPACK_INT, 32),
        zero_copy=True,
        note="time of day as integers; unit in the view's metadata",
        matches=pa.types.is_time32,
    ),
    TypeEntry(
        arrow="time64[unit]",
        kind="temporal",
        numpy="int64",
        dlpack=(DLPACK_INT, 64),
        zero_copy=True,
        note="time of day as integers; unit in the view's metadata",
        matches=pa.types.is_time64,
    ),
    TypeEntry(
        arrow="timestamp[unit, tz]",
        kind="temporal",
        numpy="int64",
        dlpack=(DLPACK_INT, 64),
        zero_copy=True,
        note="integers since the epoch (UTC); unit and time zone in the view's metadata",
        matches=pa.types.is_timestamp,
    ),
    TypeEntry(
        arrow="duration[unit]",
        kind="temporal",
        numpy="int64",
        dlpack=(DLPACK_INT, 64),
        zero_copy=True,
        note="integers; unit in the view's metadata",
        matches=pa.types.is_duration,
    ),
    TypeEntry(
        arrow="dictionary<indices, values>",
        kind="dictionary",
        numpy="index type",
        dlpack=None,
        zero_copy=True,
        note="the indices as a tensor (int8..uint64); `.dictionary` holds the values",
        matches=pa.types.is_dictionary,
    ),
    TypeEntry(
        arrow="fixed_size_list<numeric>[k]",
        kind="fixed_size_list",
        numpy="value type",
        dlpack=None,
        zero_copy=True,
        note="2-D tensor `(rows, k)` viewing the child values buffer; "
        "nested fixed-size lists give N-D",
        matches=_is_fsl_numeric,
    ),
    TypeEntry(
        arrow="arrow.fixed_shape_tensor<numeric, shape>",
        kind="fixed_shape_tensor",
        numpy="value type",
        dlpack=None,
        zero_copy=True,
        note="N-D tensor `(rows, *shape)` viewing the storage's values buffer "
        "(a permutation gives a strided view)",
        matches=_is_tensor_ext,
    ),
    TypeEntry(
        arrow="null",
        kind="unsupported",
        numpy=None,
        dlpack=None,
        zero_copy=False,
        note="no data buffer, every value is null",
        instead="cast to a numeric type first, e.g. `arr.cast(pa.float64())`",
        matches=pa.types.is_null,
    ),
    TypeEntry(
        arrow="string, large_string, string_view",
        kind="unsupported",
        numpy=None,
        dlpack=None,
        zero_copy=False,
        note="variable-length values have no fixed element size",
        instead="encode to numbers first, e.g. `pc.dictionary_encode(arr)` "
        "and use the indices, or parse with `pc.cast`",
        matches=lambda t: bool(
            pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
        ),
    ),
    TypeEntry(
        arrow="binary, large_binary, binary_view, fixed_size_binary[k]",
        kind="unsupported",
        numpy=None,
        dlpack=None,
        zero_copy=False,
        note="opaque bytes, no numeric element type",
        instead="decode the bytes into numeric columns first (fixed-width bytes: "
        "build a `fixed_size_list<uint8>[k]` over the same buffer)",
        matches=lambda t: bool(
            pa.types.is_binary(t)
            or pa.types.is_large_binary(t)
            or pa.types.is_binary_view(t)
            or pa.types.is_fixed_size_binary(t)
        ),
    ),
    TypeEntry(
        arrow="list, large_list, list_view, large_list_view",
        kind="unsupported",
        numpy=None,
        dlpack=None,
        zero_copy=False,
        note="ragged rows have no fixed shape",
        instead="make the rows fixed-size first (polars: `s.list.to_array(k)`), "
        "or flatten with `pc.list_flatten`",
        matches=lambda t: bool(
            pa.types.is_list(t)
            or pa.types.is_large_list(t)
            or pa.types.is_list_view(t)
            or pa.types.is_large_list_view(t)
        ),
    ),
    TypeEntry(
        arrow="fixed_size_list<non-numeric>[k]",
        kind="unsupported",
        numpy=None,
        dlpack=None,
        zero_copy=False,
        note="the values are not numeric",
        instead="cast the values to a numeric type first",
        matches=pa.types.is_fixed_size_list,
    ),
    TypeEntry(
        arrow="struct<...>",
        kind="unsupported",
        numpy=None,
        dlpack=None,
        zero_copy=False,
        note="several fields of different types",
        instead="take the fields one by one (`arr.field(name)`), "
        "or use `to_tensor` on them for one matrix",
        matches=pa.types.is_struct,
    ),
    TypeEntry(
        arrow="map<key, value>",
        kind="unsupported",
        numpy=None,
        dlpack=None,
        zero_copy=False,
        note="ragged key/value pairs",
        instead="unnest the keys and values into columns first",
        matches=pa.types.is_map,
    ),
    TypeEntry(
        arrow="decimal32/64/128/256(precision, scale)",
        kind="unsupported",
        numpy=None,
        dlpack=None,
        zero_copy=False,
        note="no NumPy or DLPack decimal type",
        instead="cast to float64 (`arr.cast(pa.float64())`) or to scaled integers",
        matches=pa.types.is_decimal,
    ),
    TypeEntry(
        arrow="month_day_nano_interval",
        kind="unsupported",
        numpy=None,
        dlpack=None,
        zero_copy=False,
        note="three fields per value, no single integer form",
        instead="split into months, days and nanoseconds columns first",
        matches=pa.types.is_interval,
    ),
    TypeEntry(
        arrow="sparse/dense union, run_end_encoded",
        kind="unsupported",
        numpy=None,
        dlpack=None,
        zero_copy=False,
        note="values are not one contiguous typed buffer",
        instead="decode first (`pc.run_end_decode`) or pick one union child",
        matches=lambda t: bool(pa.types.is_union(t) or pa.types.is_run_end_encoded(t)),
    ),
    TypeEntry(
        arrow="other extension types",
        kind="unsupported",
        numpy=None,
        dlpack=None,
        zero_copy=False,
        note="colbridge does not know the extension's meaning",
        instead="use the storage array (`arr.storage`)",
        matches=_is_extension,
    ),
    TypeEntry(
        arrow="pandas `object` dtype",
        kind="unsupported",
        numpy=None,
        dlpack=None,
        zero_copy=False,
        note=("Python objects, no typed buffer (as a tensor); in `df.gpu` expressions such a "
              "column is converted as polars' `from_pandas` converts it, with pyarrow's "
              "inference (strings String, integers Int64, floats Float64, dates Date, "
              "missing values of several kinds alone Null; a copy, in the report), and "
              "refused by name where pyarrow cannot type it (strings mixed with numbers)"),
        instead="convert first, e.g. `s.astype('float64')`",
        matches=lambda t: False,
    ),
)


#: Resolved rows and specs per Arrow type (types are hashable and compare by
#: value). Bounded: cleared when full, so odd workloads cannot grow it forever.
_CACHE_LIMIT = 1024
_ENTRY_CACHE: dict[pa.DataType, TypeEntry] = {}
_SPEC_CACHE: dict[pa.DataType, TensorSpec] = {}
#: Kinds whose spec depends on nothing but what type equality compares.
#: List and tensor types compare equal across child field names, so their
#: specs (which hold the concrete type) are resolved each time.
_CACHED_SPEC_KINDS = frozenset({"primitive", "bool", "temporal", "dictionary"})


_Cached = TypeVar("_Cached")


def _recall(cache: dict[pa.DataType, _Cached], arrow_type: pa.DataType) -> _Cached | None:
    try:
        return cache.get(arrow_type)
    except TypeError:  # an unhashable extension type: never cached
        return None


def _remember(cache: dict[pa.DataType, Any], arrow_type: pa.DataType, value: Any) -> None:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    with contextlib.suppress(TypeError):  # an unhashable extension type: not cached
        cache[arrow_type] = value


def lookup_type(arrow_type: pa.DataType) -> TypeEntry:
    """Return the table row for a concrete Arrow type (cached per type).

    Examples
    --------
    >>> import pyarrow as pa
    >>> lookup_type(pa.timestamp("us")).numpy
    'int64'
    >>> lookup_type(pa.string()).tensorable
    False
    """
    cached = _recall(_ENTRY_CACHE, arrow_type)
    if cached is not None:
        return cached
    entry = _match_type(arrow_type)
    _remember(_ENTRY_CACHE, arrow_type, entry)
    return entry


def _match_type(arrow_type: pa.DataType) -> TypeEntry:
    for entry in TYPE_TABLE:
        if entry.matches(arrow_type):
            return entry
    return TypeEntry(
        arrow=str(arrow_type),
        kind="unsupported",
        numpy=None,
        dlpack=None,
        zero_copy=False,
        note="not in the type table",
        instead="cast to a numeric type first",
        matches=lambda t: False,
    )


def tensor_spec(arrow_type: pa.DataType, name: str | None = None) -> TensorSpec:
    """Resolve an Arrow type to its tensor form.

    Parameters
    ----------
    arrow_type : pa.DataType
        The column's Arrow type.
    name : str, optional
        Column name, used in error messages.

    Returns
    -------
    TensorSpec

    Raises
    ------
    UnsupportedTypeError
        When the type is not tensor-able; the message names the column, its
        type and what to do instead.

    Examples
    --------
    >>> import pyarrow as pa
    >>> spec = tensor_spec(pa.list_(pa.float32(), 3))
    >>> spec.dtype, spec.inner_shape
    (dtype('float32'), (3,))
    >>> tensor_spec(pa.duration("ns")).unit
    'ns'
    """
    cached = _recall(_SPEC_CACHE, arrow_type)
    if cached is not None:
        return cached
    entry = lookup_type(arrow_type)
    if not entry.tensorable:
        raise unsupported_type_error(arrow_type, name, entry)
    spec = _resolve_spec(entry, arrow_type)
    if entry.kind in _CACHED_SPEC_KINDS:
        _remember(_SPEC_CACHE, arrow_type, spec)
    return spec


def _resolve_spec(entry: TypeEntry, arrow_type: pa.DataType) -> TensorSpec:
    kind = entry.kind
    if kind in ("primitive", "bool"):
        dtype = np.dtype(entry.numpy)
        return TensorSpec(entry, arrow_type, dtype, _dlpack_of(dtype))
    if kind == "temporal":
        dtype = np.dtype(entry.numpy)
        unit: str
        if pa.types.is_date32(arrow_type):
            unit = "D"
        elif pa.types.is_date64(arrow_type):
            unit = "ms"
        else:
            unit = str(arrow_type.unit)
        tz = getattr(arrow_type, "tz", None)
        return TensorSpec(entry, arrow_type, dtype, _dlpack_of(dtype), unit=unit, tz=tz)
    if kind == "dictionary":
        dtype = np.dtype(arrow_type.index_type.to_pandas_dtype())
        return TensorSpec(entry, arrow_type, dtype, _dlpack_of(dtype))
    if kind == "fixed_size_list":
        shape: list[int] = [arrow_type.list_size]
        value_type = arrow_type.value_type
        while pa.types.is_fixed_size_list(value_type):
            shape.append(value_type.list_size)
            value_type = value_type.value_type
        dtype = np.dtype(value_type.to_pandas_dtype())
        return TensorSpec(entry, arrow_type, dtype, _dlpack_of(dtype), inner_shape=tuple(shape))
    # fixed_shape_tensor
    dtype = np.dtype(arrow_type.value_type.to_pandas_dtype())
    perm = arrow_type.permutation
    permutation = tuple(int(p) for p in perm) if perm else None
    return TensorSpec(
        entry,
        arrow_type,
        dtype,
        _dlpack_of(dtype),
        inner_shape=tuple(int(s) for s in arrow_type.shape),
        permutation=permutation,
    )


def unsupported_type_error(
    arrow_type: Any, name: str | None, entry: TypeEntry | None = None
) -> UnsupportedTypeError:
    """Build the error for a type that cannot become a tensor: names column, type and remedy."""
    if entry is None:
        entry = lookup_type(arrow_type)
    label = f"column `{name}`" if name is not None else "the column"
    msg = (
        f"{label} has type `{arrow_type}`, which cannot be a tensor ({entry.note}); {entry.instead}"
    )
    return UnsupportedTypeError(msg)


def type_table_markdown() -> str:
    """Render :data:`TYPE_TABLE` as the markdown page ``docs/types.md``.

    Examples
    --------
    >>> type_table_markdown().splitlines()[0]
    '# Arrow types as tensors'
    """
    lines = [
        "# Arrow types as tensors",
        "",
        "Generated from `colbridge.types.table.TYPE_TABLE` by "
        "`colbridge.types.type_table_markdown()`; do not edit by hand.",
        "",
        "CuPy names its dtypes as NumPy does, so the CuPy dtype is the NumPy one. "
        "DLPack codes: kDLInt=0, kDLUInt=1, kDLFloat=2, kDLBool=6.",
        "",
        "| Arrow type | tensor-able | NumPy / CuPy dtype | DLPack (code, bits) | zero-copy "
        "| notes | instead |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for e in TYPE_TABLE:
        tensorable = "copy only" if e.kind == "bool" else "yes" if e.tensorable else "no"
        dl = (
            f"({e.dlpack[0]}, {e.dlpack[1]})"
            if e.dlpack
            else ("of the element type" if e.tensorable else "—")
        )
        lines.append(
            f"| `{e.arrow}` | {tensorable} | {e.numpy or '—'} | {dl} | "
            f"{'yes' if e.zero_copy else 'no'} | {e.note} | {e.instead or '—'} |"
        )
    lines += ["", *_SOURCE_RULES]
    return "\n".join(lines)


#: What the sources' own conventions mean for tensors (rendered into docs/types.md).
_SOURCE_RULES = [
    "## The sources' own conventions",
    "",
    "- **NaN in a NumPy-backed pandas float column is a null**, because pandas marks a "
    "missing value that way (and `polars.from_pandas` reads it so). One rule everywhere: "
    "`df.gpu` expressions read such a NaN as null, in place; `cb.as_tensor` views the "
    "values as they are and reports the NaN rows in `.validity` / `.null_count` (found on "
    "first use, so making the view stays free), `nulls='raise'` refuses them and a fill "
    "value replaces them (in a copy, with `allow_copy=True`); `cb.to_tensor` treats them as "
    "nulls too (`nulls='keep'` puts 0 there and False in `.validity`, `nulls='raise'` "
    "raises, a fill value fills). `colbridge fuse` reads Parquet/IPC files, where pandas' "
    "`to_parquet` has already written such a NaN as a null, so `fill_null` applies to it. "
    "NaN stays a value in every other source: pyarrow, polars, NumPy arrays and pandas' "
    "nullable (`Float64`) and `ArrowDtype` columns.",
    "- **Categorical columns give their codes, zero-copy**: an Arrow `dictionary` column, "
    "a pandas `category` column (its codes; a missing value, code -1, is a null) and a "
    "polars `Categorical` (its physical codes, indices into its categories) or `Enum` are "
    "tensors of their integer codes, with the labels in `.dictionary` (`df.gpu` "
    "expressions read a pandas `category` of numbers as its values, as "
    "`polars.from_pandas` does: a copy, listed by `explain()`).",
    "- **Strided NumPy columns** (`np.arange(20)[::2]`, a column of `df[::2]`) are viewed "
    "with their stride (NumPy and DLPack describe strides): no copy. Where an Arrow buffer "
    "is needed (`.arrow()`, `df.gpu`), a strided column is copied once and the copy is "
    "reported (`explain()`, `.copied`).",
    "- `.copied` is true exactly when the tensor's memory lies outside the source's own "
    "buffers, or once `.arrow()` has had to copy (a strided or bool NumPy column made into "
    "an Arrow buffer; `.copy_reason` then says `.arrow()` and why); a copy "
    "`allow_copy=False` did not permit raises `CopyNotAllowedError`.",
    "- **NumPy masked arrays** are read as `pa.array` reads them: a masked element is a "
    "null (`.validity`, `nulls='raise'`, fill values, and `cb.to_tensor`'s validity); the "
    "values are viewed as they are, and the mask becomes a new validity bitmap.",
    "- polars `Int128` / `UInt128` columns have no Arrow type: they raise "
    "`UnsupportedTypeError` naming the column (cast them to `Int64` or `Float64` first); "
    "`df.gpu` passes them through untouched when an expression does not read them.",
    "",
]
