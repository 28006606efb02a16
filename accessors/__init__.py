"""Accessors: ``df.gpu`` / ``s.gpu`` on pandas and polars, thin glue onto `colbridge.LazyFrame`.

Registered when pandas or polars is imported (before or after colbridge);
colbridge never imports either library just to register.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from colbridge.accessors._hooks import when_imported

from colbridge.lazy import LazyFrame

__all__ = ["GpuAccessor", "register"]


class GpuAccessor:
    """``df.gpu``: queue lazy column work on this frame; nothing runs before ``compute()``."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def lazy(self, *, numpy_output: bool = False, batch_rows: int | None = None) -> LazyFrame:
        """An empty lazy handle over this frame (a polars LazyFrame streams: `colbridge.lazy`)."""
        import colbridge

        return colbridge.lazy(self._obj, numpy_output=numpy_output, batch_rows=batch_rows)

    def with_columns(self, *exprs: Any, **named: Any) -> LazyFrame:
        """Queue new or replaced columns; see `LazyFrame.with_columns`."""
        return self.lazy().with_columns(*exprs, **named)

    def select(self, *exprs: Any, **named: Any) -> LazyFrame:
        """Queue a selection; see `LazyFrame.select`."""
        return self.lazy().select(*exprs, **named)

    def with_row_index(self, name: str = "index", offset: int = 0) -> LazyFrame:
        """Queue a row number as the first column; see `LazyFrame.with_row_index`."""
        return self.lazy().with_row_index(name, offset)

    def filter(self, *predicates: Any, **constraints: Any) -> LazyFrame:
        """Queue a row filter; see `LazyFrame.filter`."""
        return self.lazy().filter(*predicates, **constraints)

    def group_by(self, *keys: Any, maintain_order: bool = True, **named_keys: Any) -> Any:
        """Queue a grouping; see `LazyFrame.group_by` (then ``.agg(...)``)."""
        return self.lazy().group_by(*keys, maintain_order=maintain_order, **named_keys)

    def rolling(self, index_column: str, *, period: Any, offset: Any = None,
                closed: str = "right", group_by: Any = None) -> Any:  # fmt: skip
        """Queue windows over a sorted index; see `LazyFrame.rolling` (then ``.agg(...)``)."""
        return self.lazy().rolling(index_column, period=period, offset=offset, closed=closed,
                                   group_by=group_by)  # fmt: skip

    def eval(self, text: str, **compute_options: Any) -> Any:
        """Parse ``"name = expression"`` assignments and compute them right away."""
        return self.lazy().eval(text).compute(**compute_options)

    def to_tensor(self, *args: Any, **kwargs: Any) -> Any:
        """Columns → one 2-D tensor; see `colbridge.to_tensor`."""
        from colbridge.columns import to_tensor

        return to_tensor(self._obj, *args, **kwargs)

    def as_tensor(self, **kwargs: Any) -> Any:
        """The Series as a zero-copy tensor view; see `colbridge.as_tensor`."""
        from colbridge.columns import as_tensor

        return as_tensor(self._obj, **kwargs)

    def __repr__(self) -> str:
        return f"<colbridge accessor on {type(self._obj).__module__}.{type(self._obj).__name__}>"


_registered: set[str] = set()


def _register_pandas(pd: ModuleType) -> None:
    if "pandas" in _registered:
        return
    _registered.add("pandas")
    pd.api.extensions.register_dataframe_accessor("gpu")(GpuAccessor)
    pd.api.extensions.register_series_accessor("gpu")(GpuAccessor)


def _register_polars(pl: ModuleType) -> None:
    if "polars" in _registered:
        return
    _registered.add("polars")
    pl.api.register_dataframe_namespace("gpu")(GpuAccessor)
    pl.api.register_series_namespace("gpu")(GpuAccessor)
    pl.api.register_lazyframe_namespace("gpu")(GpuAccessor)


def register() -> None:
    """Register ``.gpu`` on pandas and polars (now if imported, else when they are)."""
    when_imported("pandas", _register_pandas)
    when_imported("polars", _register_polars)
