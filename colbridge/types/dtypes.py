"""The element types colbridge computes with, and their NumPy and Arrow spellings."""

from __future__ import annotations

import enum
from collections.abc import Hashable
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.errors import SchemaError, UnsupportedTypeError

__all__ = ["DType", "dtype_from_arrow", "parse_dtype"]


class DType(str, enum.Enum):
    """A primitive element type, named as NumPy names it."""

    BOOL = "bool"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    UINT64 = "uint64"
    FLOAT16 = "float16"
    FLOAT32 = "float32"
    FLOAT64 = "float64"

    def __str__(self) -> str:
        return self.value

    @property
    def numpy(self) -> np.dtype[Any]:
        """The NumPy dtype (bool is one byte per value in NumPy, a bit in Arrow)."""
        return _NUMPY[self]

    @property
    def arrow(self) -> pa.DataType:
        """The Arrow type."""
        return _ARROW[self]

    @property
    def bits(self) -> int:
        """Width in bits (1 for bool, as Arrow stores it)."""
        return 1 if self is DType.BOOL else self.numpy.itemsize * 8

    @property
    def is_bool(self) -> bool:
        """True for bool."""
        return self is DType.BOOL

    @property
    def is_integer(self) -> bool:
        """True for signed and unsigned integers."""
        return self.value.startswith(("int", "uint"))

    @property
    def is_signed(self) -> bool:
        """True for signed integers."""
        return self.value.startswith("int")

    @property
    def is_unsigned(self) -> bool:
        """True for unsigned integers."""
        return self.value.startswith("uint")

    @property
    def is_float(self) -> bool:
        """True for floating point."""
        return self.value.startswith("float")

    @property
    def is_numeric(self) -> bool:
        """True for integers and floats (not bool)."""
        return self.is_integer or self.is_float


_NUMPY: dict[DType, np.dtype[Any]] = {d: np.dtype(d.value) for d in DType}
_ARROW: dict[DType, pa.DataType] = {d: pa.from_numpy_dtype(_NUMPY[d]) for d in DType}
_ARROW_TO_DTYPE: dict[pa.DataType, DType] = {t: d for d, t in _ARROW.items()}


def dtype_from_arrow(arrow_type: pa.DataType) -> DType | None:
    """The primitive `DType` of an Arrow type, or None when it is not primitive.

    Examples
    --------
    >>> import pyarrow as pa
    >>> dtype_from_arrow(pa.int32()), dtype_from_arrow(pa.string())
    (<DType.INT32: 'int32'>, None)
    """
    if isinstance(arrow_type, pa.BaseExtensionType):
        return None  # not primitive; and a user's extension type need not be hashable
    return _ARROW_TO_DTYPE.get(arrow_type)


def type_key(arrow_type: pa.DataType) -> Hashable:
    """An Arrow type as a dictionary key: itself, or what names an extension type.

    A user's extension type (a subclass of `pyarrow.ExtensionType`) need not be
    hashable; it is keyed by its name, storage type and serialized parameters.

    Examples
    --------
    >>> import pyarrow as pa
    >>> type_key(pa.int64()) == pa.int64(), type_key(pa.uuid()) == pa.uuid()
    (True, True)
    """
    if isinstance(arrow_type, pa.ExtensionType):
        parameters: bytes = arrow_type.__arrow_ext_serialize__()
        return ("extension", arrow_type.extension_name, str(arrow_type.storage_type), parameters)
    key: Hashable = arrow_type
    return key


def parse_dtype(spec: Any) -> DType:
    """Read a dtype given as a `DType`, a string, a NumPy, Arrow or polars type.

    Examples
    --------
    >>> parse_dtype("float32")
    <DType.FLOAT32: 'float32'>
    >>> import numpy as np
    >>> parse_dtype(np.int8)
    <DType.INT8: 'int8'>
    """
    if isinstance(spec, DType):
        return spec
    if isinstance(spec, str) and spec in _BY_NAME:  # the common spelling, without NumPy
        return _BY_NAME[spec]
    if isinstance(spec, pa.DataType):
        found = dtype_from_arrow(spec)
        if found is not None:
            return found
    else:
        polars_name = _polars_dtype_name(spec)
        if polars_name is not None:
            spec = polars_name
        try:
            return DType(np.dtype(spec).name)
        except (TypeError, ValueError):
            pass
    valid = ", ".join(d.value for d in DType)
    msg = f"unknown or unsupported dtype {spec!r}; use one of: {valid}"
    raise UnsupportedTypeError(msg)


#: Each dtype by its own name (`parse_dtype`'s fast path).
_BY_NAME = {d.value: d for d in DType}

_POLARS_NAMES = {
    "Boolean": "bool",
    "Int8": "int8",
    "Int16": "int16",
    "Int32": "int32",
    "Int64": "int64",
    "UInt8": "uint8",
    "UInt16": "uint16",
    "UInt32": "uint32",
    "UInt64": "uint64",
    "Float16": "float16",
    "Float32": "float32",
    "Float64": "float64",
}


#: the short names polars prints its number types by (``i32``, ``f64``); ``i8`` and ``u8``
#: are not here: NumPy reads them as 8-byte types (`polars_type_name`)
_POLARS_SHORT_NAMES = {
    **{f"{p}{b}": f"{n}{b}" for p, n in (("i", "int"), ("u", "uint")) for b in (16, 32, 64)},
    "f32": "float32", "f64": "float64",
}  # fmt: skip


def polars_type_name(name: str) -> str:
    """A number type written as polars writes it (``"Int64"``, ``"i32"``), as colbridge's name.

    ``"i8"`` and ``"u8"``, which polars prints for Int8/UInt8 but NumPy reads as int64/uint64,
    are refused as ambiguous; other names are returned as they are.
    """
    if name in ("i8", "u8"):
        signed = name == "i8"
        msg = (
            f"the type {name!r} is ambiguous: polars prints {'Int8' if signed else 'UInt8'} as "
            f"{name!r}, NumPy reads it as {'int64' if signed else 'uint64'}; write "
            f"{'int8' if signed else 'uint8'!r} or {'int64' if signed else 'uint64'!r}"
        )
        raise SchemaError(msg)
    return _POLARS_NAMES.get(name) or _POLARS_SHORT_NAMES.get(name) or name


def _polars_dtype_name(spec: Any) -> str | None:
    # Recognise polars dtypes without importing polars.
    module = getattr(spec, "__module__", "") or getattr(type(spec), "__module__", "")
    if not module.startswith("polars"):
        return None
    name = spec.__name__ if isinstance(spec, type) else type(spec).__name__
    return _POLARS_NAMES.get(name)
