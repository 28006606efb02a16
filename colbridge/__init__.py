"""colbridge: dataframe columns as zero-copy tensors, and fused lazy kernels over them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from colbridge.backends.kernel_cache import CacheInfo, kernel_cache
from colbridge.errors import (
    ColbridgeError,
    ColumnNotFoundError,
    ComputeError,
    CopyNotAllowedError,
    DeviceError,
    DeviceFallbackWarning,
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
from colbridge.expr.api import Expr, coalesce, col, len, lit, when
from colbridge.expr.parser import parse_assignments, parse_expr
from colbridge.lazy import GroupBy, LazyFrame
from colbridge.types import DType

if TYPE_CHECKING:  # served lazily by `__getattr__` below; listed for type checkers
    from colbridge.columns import TensorView, as_tensor, to_tensor

__version__ = "0.1.0"


def lazy(frame: Any, *, numpy_output: bool = False) -> LazyFrame:
    """A lazy handle over any supported frame (pandas, polars, pyarrow Table).

    Examples
    --------
    >>> import pyarrow as pa
    >>> import colbridge as cb
    >>> cb.lazy(pa.table({"a": [1, 2]})).with_columns(b=cb.col("a") + 1).compute().num_columns
    2
    """
    return LazyFrame(frame, numpy_output=numpy_output)


def cache_info() -> CacheInfo:
    """Counters of the compiled-kernel cache: hits, misses, compiles, size.

    Examples
    --------
    >>> import colbridge as cb
    >>> info = cb.cache_info()
    >>> info.maxsize
    256
    """
    return kernel_cache.info()


def clear_cache() -> None:
    """Forget compiled kernels in this process (their files on disk stay for reuse).

    Examples
    --------
    >>> import colbridge as cb
    >>> cb.clear_cache()
    >>> cb.cache_info().size
    0
    """
    kernel_cache.clear()


def __getattr__(name: str) -> Any:
    # The bridge functions live in the columns layer.
    if name in ("as_tensor", "to_tensor", "TensorView"):
        from colbridge import columns

        return getattr(columns, name)
    if name in ("io", "dask"):  # the jobs layer loads on first use
        import importlib

        return importlib.import_module(f"colbridge.{name}")
    msg = f"module 'colbridge' has no attribute {name!r}"
    raise AttributeError(msg)


from colbridge.accessors import register as _register_accessors  # noqa: E402

_register_accessors()

__all__ = [
    "CacheInfo",
    "ColbridgeError",
    "ColumnNotFoundError",
    "ComputeError",
    "CopyNotAllowedError",
    "DType",
    "DeviceError",
    "DeviceFallbackWarning",
    "DuplicateColumnError",
    "Expr",
    "ExpressionSyntaxError",
    "GroupBy",
    "InvalidOperationError",
    "KernelCompileError",
    "LazyFrame",
    "NullValuesError",
    "SchemaError",
    "ShapeError",
    "TensorView",
    "UnsupportedOperationError",
    "UnsupportedTypeError",
    "as_tensor",
    "cache_info",
    "clear_cache",
    "coalesce",
    "col",
    "lazy",
    "len",
    "lit",
    "parse_assignments",
    "parse_expr",
    "to_tensor",
    "when",
]
