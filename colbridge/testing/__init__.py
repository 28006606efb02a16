"""Testing: hypothesis strategies, converters, GPU stand-ins shipped with colbridge.

The strategies import hypothesis when first used, so the modules that need
only NumPy and pyarrow (``gpu_cases``, ``cupy_double``, ``cuda_host``) also
load where hypothesis is not installed, as on a bare GPU machine.
"""

from __future__ import annotations

from typing import Any

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


def __getattr__(name: str) -> Any:
    if name in __all__:
        from colbridge.testing import strategies

        return getattr(strategies, name)
    msg = f"module 'colbridge.testing' has no attribute {name!r}"
    raise AttributeError(msg)
