"""Testing: data at the limits, hypothesis strategies, converters, oracles, GPU stand-ins.

`colbridge.testing.data` is the one data generator the test suite shares;
`colbridge.testing.asserts` compares results with polars (the oracle) with a
tolerance per operation; `colbridge.testing.cuda_host` runs generated CUDA
kernels on the CPU; `colbridge.testing.cupy_double` stands in for CuPy.

The data generator imports hypothesis when first used, so the modules that need
only NumPy and pyarrow (``gpu_cases``, ``cupy_double``, ``cuda_host``) also load
where hypothesis is not installed, as on a bare GPU machine.
"""

from __future__ import annotations

from typing import Any

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


def __getattr__(name: str) -> Any:
    if name in __all__:
        from colbridge.testing import data

        return getattr(data, name)
    msg = f"module 'colbridge.testing' has no attribute {name!r}"
    raise AttributeError(msg)
