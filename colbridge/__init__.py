"""colbridge: dataframe columns as zero-copy tensors, and fused lazy kernels over them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from colbridge.columns.frames import is_stream_input
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
    PlanProblem,
    PlanProblemsError,
    SchemaError,
    ShapeError,
    UnsupportedOperationError,
    UnsupportedTypeError,
    UserFunctionError,
    WritableAliasWarning,
)
from colbridge.expr.api import (
    Expr,
    all_horizontal,
    any_horizontal,
    arctan2,
    arg_sort_by,
    arg_where,
    coalesce,
    col,
    concat_str,
    corr,
    cov,
    date,
    date_diff,
    datetime,
    duration,
    format,
    from_epoch,
    int_range,
    len,
    lit,
    max_horizontal,
    mean_horizontal,
    min_horizontal,
    rolling_corr,
    rolling_cov,
    row_index,
    sum_horizontal,
    time,
    when,
)
from colbridge.expr.parser import parse_assignments, parse_expr
from colbridge.expr.selectors import all, exclude, nth
from colbridge.expr.shorthands import (
    any,
    approx_n_unique,
    count,
    cum_count,
    cum_sum,
    first,
    head,
    last,
    max,
    mean,
    median,
    min,
    n_unique,
    quantile,
    std,
    sum,
    tail,
    var,
)
from colbridge.expr.udf import UserFunction, udf
from colbridge.lazy import GroupBy, LazyFrame
from colbridge.types import DType

if TYPE_CHECKING:  # served lazily by `__getattr__` below; listed for type checkers
    from colbridge.backends.kernel_cache import CacheInfo
    from colbridge.columns import TensorView, as_tensor, to_tensor, to_torch

__version__ = "0.1.0"


def lazy(
    frame: Any, *, numpy_output: bool = False, batch_rows: int | None = None
) -> LazyFrame:
    """A lazy handle over a frame (pandas, polars, pyarrow Table) or a stream.

    Streams are polars ``LazyFrame`` queries (``pl.scan_parquet(...)``, ``scan_csv``),
    pyarrow datasets and anything with ``__arrow_c_stream__`` (a ``RecordBatchReader``,
    a DuckDB relation): the handle (`colbridge.io.stream_frame.StreamFrame`) reads
    them in batches of at most ``batch_rows`` rows, so they are never held whole.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import colbridge as cb
    >>> cb.lazy(pa.table({"a": [1, 2]})).with_columns(b=cb.col("a") + 1).compute().num_columns
    2
    """
    if is_stream_input(frame):
        from colbridge.io.stream_frame import StreamFrame

        return StreamFrame(frame, batch_rows=batch_rows)
    if batch_rows is not None:
        msg = (
            f"`batch_rows` applies to streamed inputs; a {type(frame).__name__} is computed "
            "whole (pass its `.lazy()` polars query, or a RecordBatchReader, to stream it)"
        )
        raise SchemaError(msg)
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
    from colbridge.backends.kernel_cache import kernel_cache

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
    from colbridge.backends.kernel_cache import kernel_cache

    kernel_cache.clear()


def __getattr__(name: str) -> Any:
    # Loaded on first use, so that `import colbridge` stays short: the bridge
    # functions (the columns layer) and the kernel cache (the backends layer).
    # the first use of a name keeps it here: the next is a plain attribute read
    if name in ("as_tensor", "to_tensor", "to_torch", "TensorView"):
        from colbridge import columns

        value = globals()[name] = getattr(columns, name)
        return value
    if name in ("CacheInfo", "kernel_cache"):
        from colbridge.backends import kernel_cache

        value = globals()[name] = getattr(kernel_cache, name)
        return value
    if name in ("io", "dask"):  # the jobs layer loads on first use
        import importlib

        return importlib.import_module(f"colbridge.{name}")
    msg = f"module 'colbridge' has no attribute {name!r}"
    raise AttributeError(msg)


def _accessors_from_a_checkout() -> None:
    """Make ``colbridge.accessors`` importable when colbridge runs from a plain source checkout.

    The layout keeps ``accessors/`` at the top of the source tree; installing
    maps it to ``colbridge.accessors``. A checkout put on ``sys.path`` has no
    such mapping, so the package is loaded from that folder under its
    installed name (only when the name does not resolve otherwise).
    """
    import importlib.util
    import sys
    from pathlib import Path

    if "colbridge.accessors" in sys.modules or importlib.util.find_spec("colbridge.accessors"):
        return
    folder = Path(__file__).resolve().parent.parent / "accessors"
    spec = importlib.util.spec_from_file_location(
        "colbridge.accessors", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None or not folder.is_dir():
        return  # the import below then names the missing module
    module = importlib.util.module_from_spec(spec)
    sys.modules["colbridge.accessors"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["colbridge.accessors"]
        raise
    sys.modules[__name__].__dict__["accessors"] = module  # as the import system would


_accessors_from_a_checkout()

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
    "PlanProblem",
    "PlanProblemsError",
    "SchemaError",
    "ShapeError",
    "TensorView",
    "UnsupportedOperationError",
    "UnsupportedTypeError",
    "UserFunction",
    "UserFunctionError",
    "WritableAliasWarning",
    "all",
    "all_horizontal",
    "any",
    "any_horizontal",
    "approx_n_unique",
    "arctan2",
    "arg_sort_by",
    "arg_where",
    "as_tensor",
    "cache_info",
    "clear_cache",
    "coalesce",
    "col",
    "concat_str",
    "corr",
    "count",
    "cov",
    "cum_count",
    "cum_sum",
    "date",
    "date_diff",
    "datetime",
    "duration",
    "exclude",
    "first",
    "format",
    "from_epoch",
    "head",
    "int_range",
    "last",
    "lazy",
    "len",
    "lit",
    "max",
    "max_horizontal",
    "mean",
    "mean_horizontal",
    "median",
    "min",
    "min_horizontal",
    "n_unique",
    "nth",
    "parse_assignments",
    "parse_expr",
    "quantile",
    "rolling_corr",
    "rolling_cov",
    "row_index",
    "std",
    "sum",
    "sum_horizontal",
    "tail",
    "time",
    "to_tensor",
    "to_torch",
    "udf",
    "var",
    "when",
]
