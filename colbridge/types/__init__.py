"""Types: Arrow ↔ NumPy/CuPy ↔ DLPack, tensor-ability, and promotion rules."""

from __future__ import annotations

from colbridge.types.dtypes import DType, dtype_from_arrow, parse_dtype

__all__ = ["DType", "dtype_from_arrow", "parse_dtype"]
