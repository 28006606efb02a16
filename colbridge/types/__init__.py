"""Types: Arrow ↔ NumPy/CuPy ↔ DLPack, tensor-ability, and promotion rules."""

from __future__ import annotations

from colbridge.types.dtypes import DType, dtype_from_arrow, parse_dtype
from colbridge.types.table import (
    TYPE_TABLE,
    TensorSpec,
    TypeEntry,
    lookup_type,
    tensor_spec,
    type_table_markdown,
    unsupported_type_error,
)

__all__ = [
    "TYPE_TABLE",
    "DType",
    "TensorSpec",
    "TypeEntry",
    "dtype_from_arrow",
    "lookup_type",
    "parse_dtype",
    "tensor_spec",
    "type_table_markdown",
    "unsupported_type_error",
]
