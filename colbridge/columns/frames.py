"""Frame adapters: one small class per frame kind, giving Arrow columns in and a frame out.

Each adapter answers the same questions (names, row count, a column as Arrow)
and builds a frame of its own kind from Arrow results, so the lazy handle never
needs to know which library the user's frame came from.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.columns.ingest import column_to_arrow
from colbridge.errors import ColumnNotFoundError, UnsupportedTypeError

__all__ = ["FrameAdapter", "adapt_frame", "missing_column_error"]


def missing_column_error(name: str, available: Sequence[str]) -> ColumnNotFoundError:
    """A "column not found" error with a did-you-mean hint."""
    import difflib

    close = difflib.get_close_matches(name, list(available), n=3, cutoff=0.5)
    msg = f"column `{name}` not found; available columns: {list(available)!r}"
    if close:
        msg += f"\n\nHint: did you mean one of these: {close!r}?"
    return ColumnNotFoundError(msg)


class FrameAdapter:
    """The Arrow view of one frame, and the way back to a frame of the same kind."""

    kind: str = "pyarrow"

    def __init__(self, frame: Any) -> None:
        self.frame = frame

    @property
    def names(self) -> list[str]:
        """Column names in order."""
        raise NotImplementedError

    @property
    def num_rows(self) -> int:
        """Row count."""
        raise NotImplementedError

    def column(self, name: str) -> pa.ChunkedArray:
        """The column as Arrow, zero-copy where the source allows."""
        raise NotImplementedError

    def build(
        self,
        order: Sequence[str],
        new: Mapping[str, pa.Array | pa.ChunkedArray],
        keep: pa.Array | None = None,
        *,
        broadcast_rows: int | None = None,
    ) -> Any:
        """Make the result frame.

        ``order`` lists the output columns; each is taken from ``new`` when there,
        else from the input frame. ``keep`` is a boolean row mask applied to the
        input columns (``new`` columns are already filtered).
        """
        raise NotImplementedError

    def _check(self, name: str) -> None:
        if name not in self.names:
            raise missing_column_error(name, self.names)


class ArrowTableAdapter(FrameAdapter):
    """pyarrow Table or RecordBatch."""

    kind = "pyarrow"

    def __init__(self, frame: Any) -> None:
        if isinstance(frame, pa.RecordBatch):
            frame = pa.Table.from_batches([frame])
        super().__init__(frame)

    @property
    def names(self) -> list[str]:
        return list(self.frame.column_names)

    @property
    def num_rows(self) -> int:
        return int(self.frame.num_rows)

    def column(self, name: str) -> pa.ChunkedArray:
        self._check(name)
        return self.frame.column(name)

    def build(self, order, new, keep=None, *, broadcast_rows=None):  # type: ignore[no-untyped-def]
        table = self.frame
        if keep is not None:
            table = table.filter(keep)
        columns = [new[n] if n in new else table.column(n) for n in order]
        return pa.Table.from_arrays(columns, names=list(order))


class PolarsFrameAdapter(FrameAdapter):
    """polars DataFrame."""

    kind = "polars"

    @property
    def names(self) -> list[str]:
        return list(self.frame.columns)

    @property
    def num_rows(self) -> int:
        return int(self.frame.height)

    def column(self, name: str) -> pa.ChunkedArray:
        self._check(name)
        return column_to_arrow(self.frame.get_column(name), name)

    def build(self, order, new, keep=None, *, broadcast_rows=None):  # type: ignore[no-untyped-def]
        import polars as pl

        frame = self.frame
        if keep is not None:
            frame = frame.filter(pl.Series(keep))
        new_series = {n: pl.Series(n, a) for n, a in new.items()}
        # Untouched columns are shared with the input frame (polars columns are
        # reference counted); only new columns are added.
        columns = [new_series[n] if n in new_series else frame.get_column(n) for n in order]
        return pl.DataFrame(columns)


class PolarsSeriesAdapter(PolarsFrameAdapter):
    """polars Series, seen as a one-column frame; one output column gives a Series back."""

    kind = "polars-series"

    def __init__(self, frame: Any) -> None:
        super().__init__(frame.to_frame())

    def build(self, order, new, keep=None, *, broadcast_rows=None):  # type: ignore[no-untyped-def]
        out = super().build(order, new, keep, broadcast_rows=broadcast_rows)
        return out.to_series() if out.width == 1 else out


class PandasFrameAdapter(FrameAdapter):
    """pandas DataFrame. New columns come back as ``pd.ArrowDtype`` (or NumPy, on request)."""

    kind = "pandas"

    def __init__(self, frame: Any, *, numpy_output: bool = False) -> None:
        super().__init__(frame)
        self.numpy_output = numpy_output
        if not frame.columns.is_unique:
            dupes = sorted({str(c) for c in frame.columns[frame.columns.duplicated()]})
            msg = f"pandas frame has duplicate column names {dupes!r}; rename them first"
            raise UnsupportedTypeError(msg)

    @property
    def names(self) -> list[str]:
        return [str(c) for c in self.frame.columns]

    @property
    def num_rows(self) -> int:
        return len(self.frame)

    def column(self, name: str) -> pa.ChunkedArray:
        self._check(name)
        return column_to_arrow(self.frame[self._label(name)], name)

    def _label(self, name: str) -> Any:
        for label in self.frame.columns:
            if str(label) == name:
                return label
        raise missing_column_error(name, self.names)

    def _to_pandas_values(self, array: pa.Array | pa.ChunkedArray) -> Any:
        import pandas as pd

        if self.numpy_output and array.null_count == 0:
            if isinstance(array, pa.ChunkedArray) and array.num_chunks == 1:
                array = array.chunk(0)
            if isinstance(array, pa.Array) and not pa.types.is_boolean(array.type):
                return array.to_numpy(zero_copy_only=True)
            return np.asarray(array)
        return pd.arrays.ArrowExtensionArray(array)

    def build(self, order, new, keep=None, *, broadcast_rows=None):  # type: ignore[no-untyped-def]
        import pandas as pd

        frame = self.frame
        if keep is not None:
            frame = frame[np.asarray(keep.to_numpy(zero_copy_only=False), dtype=bool)]
        data = {}
        for n in order:
            if n in new:
                data[n] = pd.Series(self._to_pandas_values(new[n]), index=frame.index, name=n)
            else:
                data[n] = frame[self._label(n)]
        if not data:
            return pd.DataFrame(index=frame.index)
        # Under copy-on-write (pandas >= 3) the kept columns are not copied.
        return pd.concat(data, axis=1, copy=False) if _pandas_major() < 3 else pd.concat(data, axis=1)


class PandasSeriesAdapter(PandasFrameAdapter):
    """pandas Series, seen as a one-column frame; one output column gives a Series back."""

    kind = "pandas-series"

    def __init__(self, frame: Any, *, numpy_output: bool = False) -> None:
        name = frame.name if frame.name is not None else ""
        super().__init__(frame.to_frame(name=name), numpy_output=numpy_output)

    def build(self, order, new, keep=None, *, broadcast_rows=None):  # type: ignore[no-untyped-def]
        out = super().build(order, new, keep, broadcast_rows=broadcast_rows)
        return out.iloc[:, 0] if out.shape[1] == 1 else out


def _pandas_major() -> int:
    import pandas as pd

    return int(pd.__version__.split(".")[0])


def adapt_frame(frame: Any, *, numpy_output: bool = False) -> FrameAdapter:
    """Wrap a pandas/polars DataFrame or Series, or a pyarrow Table/RecordBatch."""
    if isinstance(frame, (pa.Table, pa.RecordBatch)):
        return ArrowTableAdapter(frame)
    pl = sys.modules.get("polars")
    if pl is not None:
        if isinstance(frame, pl.DataFrame):
            return PolarsFrameAdapter(frame)
        if isinstance(frame, pl.Series):
            return PolarsSeriesAdapter(frame)
        if isinstance(frame, pl.LazyFrame):
            msg = "a polars LazyFrame has no data yet; call `.collect()` first, then `.gpu`"
            raise UnsupportedTypeError(msg)
    pd = sys.modules.get("pandas")
    if pd is not None:
        if isinstance(frame, pd.DataFrame):
            return PandasFrameAdapter(frame, numpy_output=numpy_output)
        if isinstance(frame, pd.Series):
            return PandasSeriesAdapter(frame, numpy_output=numpy_output)
    msg = (
        f"cannot compute on a {type(frame).__module__}.{type(frame).__name__}; "
        "pass a pandas or polars DataFrame/Series or a pyarrow Table"
    )
    raise UnsupportedTypeError(msg)
