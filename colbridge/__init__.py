"""colbridge: dataframe columns as zero-copy tensors, and fused lazy kernels over them."""

from __future__ import annotations

from colbridge.errors import (
    ColbridgeError,
    ColumnNotFoundError,
    ComputeError,
    CopyNotAllowedError,
    DeviceError,
    DuplicateColumnError,
    ExpressionSyntaxError,
    InvalidOperationError,
    KernelCompileError,
    NullValuesError,
    SchemaError,
    ShapeError,
    UnsupportedOperationError,
    UnsupportedTypeError,
)
from colbridge.types import DType

__version__ = "0.1.0"

__all__ = [
    "ColbridgeError",
    "ColumnNotFoundError",
    "ComputeError",
    "CopyNotAllowedError",
    "DType",
    "DeviceError",
    "DuplicateColumnError",
    "ExpressionSyntaxError",
    "InvalidOperationError",
    "KernelCompileError",
    "NullValuesError",
    "SchemaError",
    "ShapeError",
    "UnsupportedOperationError",
    "UnsupportedTypeError",
]
