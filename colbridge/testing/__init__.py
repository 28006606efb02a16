"""Testing: hypothesis strategies and converters shipped with colbridge (imports hypothesis)."""

from __future__ import annotations

from colbridge.testing.strategies import (
    BOOL_TYPE,
    NUMERIC_TYPES,
    TEMPORAL_TYPES,
    TENSOR_TYPES,
    arrays,
    chunked_arrays,
    frames,
    to_pandas_arrow,
    to_pandas_masked,
    to_pandas_numpy,
    to_polars,
)

__all__ = [
    "BOOL_TYPE",
    "NUMERIC_TYPES",
    "TEMPORAL_TYPES",
    "TENSOR_TYPES",
    "arrays",
    "chunked_arrays",
    "frames",
    "to_pandas_arrow",
    "to_pandas_masked",
    "to_pandas_numpy",
    "to_polars",
]
