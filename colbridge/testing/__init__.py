"""Testing: data at the limits, hypothesis strategies, converters and oracles (imports hypothesis).

`colbridge.testing.data` is the one data generator the test suite shares;
`colbridge.testing.asserts` compares results with polars (the oracle) with a
tolerance per operation; `colbridge.testing.cuda_host` runs generated CUDA
kernels on the CPU.
"""

from __future__ import annotations

from colbridge.testing.data import (
    BOOL_TYPE,
    ENGINE_TYPES,
    NUMERIC_TYPES,
    TEMPORAL_TYPES,
    TENSOR_TYPES,
    arrays,
    chunked_arrays,
    frames,
    limit_values,
    make_column,
    tables,
    to_pandas_arrow,
    to_pandas_masked,
    to_pandas_numpy,
    to_polars,
)

__all__ = [
    "BOOL_TYPE",
    "ENGINE_TYPES",
    "NUMERIC_TYPES",
    "TEMPORAL_TYPES",
    "TENSOR_TYPES",
    "arrays",
    "chunked_arrays",
    "frames",
    "limit_values",
    "make_column",
    "tables",
    "to_pandas_arrow",
    "to_pandas_masked",
    "to_pandas_numpy",
    "to_polars",
]
