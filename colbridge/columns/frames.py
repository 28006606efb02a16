"""Frame adapters: one small class per frame kind, giving Arrow columns in and a frame out.

Each adapter answers the same questions (names, row count, a column as Arrow)
and builds a frame of its own kind from Arrow results, so the lazy handle never
needs to know which library the user's frame came from.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.columns.ingest import ingest_column, polars_to_arrow
from colbridge.errors import ColumnNotFoundError, UnsupportedTypeError

__all__ = ["FrameAdapter", "adapt_frame", "is_stream_input", "missing_column_error"]


def missing_column_error(name: str, available: Sequence[str]) -> ColumnNotFoundError:
    """A "column not found" error with a did-you-mean hint (`ColumnNotFoundError.from_missing`)."""
    return ColumnNotFoundError.from_missing(name, available)


class FrameAdapter:
    """The Arrow view of one frame, and the way back to a frame of the same kind."""

    kind: str = "pyarrow"
    #: whether `frame_of_rows` reads the input's rows (else a result is its table alone)
    rebuilds_rows: bool = False

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
        """The column as Arrow, zero-copy where the source allows, as expressions read it."""
        raise NotImplementedError

    def tensor_column(self, name: str) -> pa.ChunkedArray:
        """The column as a tensor reads it (categorical columns as their codes)."""
        return self.column(name)

    def build(
        self,
        order: Sequence[str],
        new: Mapping[str, pa.Array | pa.ChunkedArray],
        *,
        one_row: bool = False,
    ) -> Any:
        """Make the result frame, of this adapter's kind.

        ``order`` lists the output columns; each is taken from ``new`` when there,
        else from the input frame (shared, not copied). ``one_row`` marks a result
        of reductions only (its row count is 1, not the input's).
        """
        raise NotImplementedError

    def filter(self, frame: Any, keep: pa.BooleanArray) -> Any:
        """Rows of a result frame (as `build` made it) where ``keep`` is true."""
        raise NotImplementedError

    def from_arrow(self, table: pa.Table) -> Any:
        """A frame of this adapter's kind from an Arrow table."""
        raise NotImplementedError

    def nan_is_null(self, name: str) -> bool:
        """True when NaN in this column means "missing" (pandas NumPy-backed floats)."""
        return False

    def frame_of_rows(
        self, table: pa.Table, rows: np.ndarray[Any, Any] | None, kept: frozenset[str]
    ) -> Any:
        """A frame of this adapter's kind from ``table``, whose rows are the input's ``rows``.

        ``rows`` are positions into the input frame (None: all of them, in order);
        ``kept`` names the table's columns that are the input's own, unchanged. A kind
        whose frames have more than their columns (pandas' index and dtypes) takes
        those from the input; the others read the table as it is.
        """
        return self.from_arrow(table)

    def copy_notes(self, name: str) -> list[str]:
        """How reading column ``name`` as Arrow copied it (for `explain()`); [] when it did not."""
        return []

    def immutable(self, name: str) -> bool:
        """True when column ``name``'s buffers cannot change while the frame lives.

        Arrow and polars columns never change; what is computed from them (the group
        ids of a key column) can be kept for the next compute of the same buffers.
        """
        return True

    @functools.cached_property
    def name_set(self) -> frozenset[str]:
        """`names` as a set: membership tests stay cheap on frames of thousands of columns."""
        return frozenset(self.names)

    def _check(self, name: str) -> None:
        if name not in self.name_set:
            raise missing_column_error(name, self.names)


class ArrowTableAdapter(FrameAdapter):
    """pyarrow Table or RecordBatch."""

    kind = "pyarrow"

    def __init__(self, frame: Any) -> None:
        if isinstance(frame, pa.RecordBatch):
            frame = pa.Table.from_batches([frame])
        super().__init__(frame)

    @functools.cached_property
    def names(self) -> list[str]:
        return list(self.frame.column_names)

    @property
    def num_rows(self) -> int:
        return int(self.frame.num_rows)

    def column(self, name: str) -> pa.ChunkedArray:
        self._check(name)
        return self.frame.column(name)

    def build(
        self,
        order: Sequence[str],
        new: Mapping[str, pa.Array | pa.ChunkedArray],
        *,
        one_row: bool = False,
    ) -> Any:
        # columns by position: a lookup by name walks the schema (quadratic on wide tables)
        position = {name: i for i, name in enumerate(self.names)}
        columns = [new[n] if n in new else self.frame.column(position[n]) for n in order]
        # an input column keeps its field: its metadata too (polars' Enum mark, say)
        schema = self.frame.schema
        fields = [pa.field(n, new[n].type) if n in new else schema.field(position[n])
                  for n in order]  # fmt: skip
        return self._marked(pa.Table.from_arrays(columns, schema=pa.schema(fields)))

    def filter(self, frame: Any, keep: pa.BooleanArray) -> Any:
        # pyarrow filters no string or binary views (polars' layout): the large one
        for k, field in enumerate(frame.schema):
            if pa.types.is_string_view(field.type) or pa.types.is_binary_view(field.type):
                large = pa.large_string() if pa.types.is_string_view(field.type) \
                    else pa.large_binary()  # fmt: skip
                frame = frame.set_column(k, field.name, frame.column(k).cast(large))
        return frame.filter(keep)

    def from_arrow(self, table: pa.Table) -> Any:
        return self._marked(table)

    def _marked(self, table: pa.Table) -> pa.Table:
        """``table`` with polars' Enum mark on each Enum column (no column copied).

        polars marks an Enum column with field metadata (`polars_enum_metadata`); an
        ordered dictionary without it reads back as a Categorical. A column with a
        dictionary is marked with its categories, unless they are those of an input
        column without the mark (polars reads that one, and what comes of it, as a
        Categorical); one of no chunks (no dictionary left) named as an input field of
        its type with the mark, with the input's mark.
        """
        fields, changed = [], False
        for field, column in zip(table.schema, table.columns, strict=True):
            categories = enum_categories(column)
            if categories is not None and tuple(categories) in self._unmarked_categories:
                categories = None
            mark = None if categories is None else polars_enum_metadata(categories)
            if mark is None and pa.types.is_dictionary(field.type) and not column.num_chunks:
                mark = self._input_enum_marks.get((field.name, field.type))
            metadata = field.metadata or {}
            if mark is not None and metadata.get(POLARS_ENUM_KEY) != mark[POLARS_ENUM_KEY]:
                field = field.with_metadata({**metadata, **mark})
                changed = True
            fields.append(field)
        if not changed:
            return table
        return pa.Table.from_arrays(table.columns, schema=pa.schema(fields, table.schema.metadata))

    @functools.cached_property
    def _unmarked_categories(self) -> frozenset[tuple[str, ...]]:
        """The categories of the input's ordered string dictionaries without polars' mark."""
        out = set()
        for field, column in zip(self.frame.schema, self.frame.columns, strict=True):
            if not (field.metadata and POLARS_ENUM_KEY in field.metadata):
                categories = enum_categories(column)
                if categories is not None:
                    out.add(tuple(categories))
        return frozenset(out)

    @functools.cached_property
    def _input_enum_marks(self) -> dict[tuple[str, pa.DataType], dict[bytes, bytes]]:
        """The Enum marks of the input's fields, by name and type."""
        return {(f.name, f.type): {POLARS_ENUM_KEY: f.metadata[POLARS_ENUM_KEY]}
                for f in self.frame.schema
                if f.metadata and POLARS_ENUM_KEY in f.metadata}  # fmt: skip


class PolarsFrameAdapter(FrameAdapter):
    """polars DataFrame."""

    kind = "polars"

    @functools.cached_property
    def names(self) -> list[str]:
        return list(self.frame.columns)

    @property
    def num_rows(self) -> int:
        return int(self.frame.height)

    def column(self, name: str) -> pa.ChunkedArray:
        self._check(name)
        return polars_to_arrow(self.frame.get_column(name), name)

    def build(
        self,
        order: Sequence[str],
        new: Mapping[str, pa.Array | pa.ChunkedArray],
        *,
        one_row: bool = False,
    ) -> Any:
        import polars as pl

        # Untouched columns are shared with the input frame (polars columns are
        # reference counted); new Arrow columns are taken over without a copy.
        names = self.names
        added = [n for n in order if n not in self.name_set]
        if list(order) == names + added and not any(n in new for n in names):
            # Only appended columns: hstack shares the frame's columns as they are.
            return self.frame.hstack([_polars_series(n, new[n]) for n in added])
        columns = [
            self._as_input_enum(_polars_series(n, new[n])) if n in new
            else self.frame.get_column(n) for n in order
        ]  # fmt: skip
        if not columns:
            return pl.DataFrame()
        # hstack checks lengths and names as the DataFrame constructor does, with less work
        return columns[0].to_frame().hstack(columns[1:])

    def filter(self, frame: Any, keep: pa.BooleanArray) -> Any:
        import polars as pl

        return frame.filter(pl.Series(keep))

    def from_arrow(self, table: pa.Table, *, rechunk: bool = True) -> Any:
        """A polars frame of ``table``; ``rechunk=False`` keeps a streamed result's batches."""
        import polars as pl

        if self._input_enums or any(enum_categories(c) is not None for c in table.columns):
            return pl.DataFrame([self._as_input_enum(_polars_series(n, table.column(n)))
                                 for n in table.column_names])  # fmt: skip
        return pl.from_arrow(table, rechunk=rechunk)

    @functools.cached_property
    def _input_enums(self) -> dict[str, Any]:
        import polars as pl

        return {n: t for n, t in self.frame.schema.items() if isinstance(t, pl.Enum)}

    def _as_input_enum(self, series: Any) -> Any:
        """A result column named as an input Enum column, in that Enum where it lost its own.

        Arrow keeps an enum's categories as a dictionary, which a column of no rows (a
        filter that keeps none) or of nulls alone no longer holds.
        """
        import polars as pl

        if series.name not in self.name_set:
            return series
        # the one input column's type, not the frame's whole schema (built column by column)
        want = self.frame.get_column(series.name).dtype
        if not isinstance(want, pl.Enum) or series.dtype == want:
            return series
        lost = len(series) == 0 or series.null_count() == len(series)
        if lost and isinstance(series.dtype, pl.Enum | pl.Categorical | pl.Null):
            return series.cast(want)
        return series


class PolarsSeriesAdapter(PolarsFrameAdapter):
    """polars Series, seen as a one-column frame; one output column gives a Series back."""

    kind = "polars-series"

    def __init__(self, frame: Any) -> None:
        super().__init__(frame.to_frame())

    def build(
        self,
        order: Sequence[str],
        new: Mapping[str, pa.Array | pa.ChunkedArray],
        *,
        one_row: bool = False,
    ) -> Any:
        return _polars_series_if_one(super().build(order, new, one_row=one_row))

    def from_arrow(self, table: pa.Table, *, rechunk: bool = True) -> Any:
        return _polars_series_if_one(super().from_arrow(table, rechunk=rechunk))


# a label lookup's "not found" (None can be a pandas column label)
_MISSING = object()


class PandasFrameAdapter(FrameAdapter):
    """pandas DataFrame. New columns come back as ``pd.ArrowDtype`` (or NumPy, on request)."""

    kind = "pandas"
    rebuilds_rows = True

    def __init__(self, frame: Any, *, numpy_output: bool = False) -> None:
        super().__init__(frame)
        self.numpy_output = numpy_output
        self._series_cache: dict[str, Any] = {}
        self._copies: dict[str, list[str]] = {}
        if not frame.columns.is_unique:
            dupes = sorted({str(c) for c in frame.columns[frame.columns.duplicated()]})
            msg = f"pandas frame has duplicate column names {dupes!r}; rename them first"
            raise UnsupportedTypeError(msg)
        if len({str(c) for c in self._column_labels}) < len(self._column_labels):
            # columns are named by their labels' text: 1 and "1" would be one column
            seen: dict[str, Any] = {}
            for label in self._column_labels:
                if str(label) in seen:
                    msg = (
                        f"pandas frame has column labels {seen[str(label)]!r} and {label!r}, "
                        f"both named `{label}` here; rename one of them first"
                    )
                    raise UnsupportedTypeError(msg)
                seen[str(label)] = label

    @functools.cached_property
    def _column_labels(self) -> list[Any]:
        # one conversion: iterating a pandas Index of Arrow strings label by label is slow
        return list(self.frame.columns.tolist())

    @functools.cached_property
    def names(self) -> list[str]:
        return [str(c) for c in self._column_labels]

    @property
    def num_rows(self) -> int:
        return len(self.frame)

    def column(self, name: str) -> pa.ChunkedArray:
        self._check(name)
        series = self._series(name)
        if series.dtype == object:
            converted = _object_values(series)
            if converted is not None:
                self._copies[name] = [f"pandas `object` values converted to Arrow "
                                      f"{converted.type} (a copy)"]
                return converted
        # a category of numbers is read as its values, as polars.from_pandas reads it
        chunked, reasons = ingest_column(series, name, category_values=True)
        if reasons:  # a strided column (`df[::2]`), say: Arrow needs it contiguous
            self._copies[name] = reasons
        return chunked

    def tensor_column(self, name: str) -> pa.ChunkedArray:
        self._check(name)
        return ingest_column(self._series(name), name)[0]

    def copy_notes(self, name: str) -> list[str]:
        return [f"column `{name}`: {reason}" for reason in self._copies.get(name, [])]

    def _series(self, name: str) -> Any:
        # pandas column access is slow (~20 µs); a compute asks for each column twice
        series = self._series_cache.get(name)
        if series is None:
            series = self._series_cache[name] = self.frame[self._label(name)]
        return series

    def immutable(self, name: str) -> bool:
        # a NumPy-backed column (or its mask, or a category's codes) can be written in
        # place (`df.loc[0, "g"] = 2`) with its buffer's address unchanged; an Arrow one
        # cannot
        pd = sys.modules["pandas"]
        return isinstance(self._series(name).dtype, pd.ArrowDtype)

    def nan_is_null(self, name: str) -> bool:
        # pandas marks a missing value in a NumPy float column with NaN (and polars'
        # from_pandas reads it as null): kernels treat NaN there as null, in place.
        dtype = self._series(name).dtype
        return isinstance(dtype, np.dtype) and dtype.kind == "f"

    @functools.cached_property
    def _labels(self) -> dict[str, Any]:
        """Each column's label by its name (labels need not be strings)."""
        return {str(label): label for label in self._column_labels}

    def _label(self, name: str) -> Any:
        label = self._labels.get(name, _MISSING)
        if label is _MISSING:
            raise missing_column_error(name, self.names)
        return label

    def _to_pandas_values(self, array: pa.Array | pa.ChunkedArray) -> Any:
        import pandas as pd

        if self.numpy_output and array.null_count == 0:
            if isinstance(array, pa.ChunkedArray) and array.num_chunks == 1:
                array = array.chunk(0)
            t = array.type
            if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_duration(t) \
                    or (pa.types.is_timestamp(t) and t.tz is None):  # fmt: skip
                if isinstance(array, pa.Array):
                    return array.to_numpy(zero_copy_only=True)  # a view of the Arrow buffer
                return np.asarray(array)
            if pa.types.is_boolean(t):
                return np.asarray(array)  # bytes from bits: a copy
            # a time zone, strings, dates, categories: as `Table.to_pandas` gives them
            # (datetime64 with its zone, objects, Categorical)
            return pa.chunked_array([array] if isinstance(array, pa.Array) else array).to_pandas(
            ).array  # fmt: skip
        return pd.arrays.ArrowExtensionArray(array)

    def build(
        self,
        order: Sequence[str],
        new: Mapping[str, pa.Array | pa.ChunkedArray],
        *,
        one_row: bool = False,
    ) -> Any:
        import pandas as pd

        index = pd.RangeIndex(1) if one_row else self.frame.index
        names = self.names
        added = [n for n in order if n not in self.name_set]
        if not one_row and list(order) == names + added and all(
            isinstance(label, str) for label in self._column_labels
        ):
            # with_columns: a shallow copy keeps every column in place (copy-on-write);
            # replaced columns are set where they stand, new ones appended.
            out = self.frame.copy(deep=False)
            for n in order:  # in output order: appended columns land where polars puts them
                if n not in new:
                    continue
                values = self._to_pandas_values(new[n])
                if n in self._labels:
                    out[n] = values  # replaced where it stands
                else:  # an array, not a Series: no index to align (a third of the cost)
                    out.insert(len(out.columns), n, values)
            return out
        data = {}
        for n in order:
            # an input column keeps its own label (an integer, a tuple), not its name's text
            key = self._label(n) if n in self.name_set else n
            if n in new:
                data[key] = pd.Series(self._to_pandas_values(new[n]), index=index, name=key)
            else:
                data[key] = self.frame[key]
        if not data:
            return pd.DataFrame(index=index)
        # Kept columns are shared with the input under copy-on-write (pandas >= 3).
        out = pd.concat(data, axis=1)
        out.columns.name = self.frame.columns.name
        return out

    def filter(self, frame: Any, keep: pa.BooleanArray) -> Any:
        mask = np.asarray(keep.to_numpy(zero_copy_only=False), dtype=bool)
        return frame[mask]

    def frame_of_rows(
        self, table: pa.Table, rows: np.ndarray[Any, Any] | None, kept: frozenset[str]
    ) -> Any:
        # the rows keep their index labels and the input's own columns their dtypes (as a
        # one-segment plan keeps them: `build`, then `filter`); new columns as `build` makes
        import pandas as pd

        index = self.frame.index if rows is None else self.frame.index[rows]
        data: dict[Any, Any] = {}
        for name in table.column_names:
            if name in kept:
                label = self._label(name)
                column = self.frame[label]
                data[label] = column if rows is None else column.iloc[rows]
            else:
                key = self._label(name) if name in self.name_set else name
                values = self._to_pandas_values(table.column(name))
                data[key] = pd.Series(values, index=index, name=key)
        if not data:
            return pd.DataFrame(index=index)
        out = pd.concat(data, axis=1)
        out.columns.name = self.frame.columns.name
        return out

    def from_arrow(self, table: pa.Table) -> Any:
        import pandas as pd

        if self.numpy_output:
            return table.to_pandas()
        return table.to_pandas(types_mapper=pd.ArrowDtype)


class PandasSeriesAdapter(PandasFrameAdapter):
    """pandas Series, seen as a one-column frame; one output column gives a Series back."""

    kind = "pandas-series"

    def __init__(self, frame: Any, *, numpy_output: bool = False) -> None:
        name = frame.name if frame.name is not None else ""
        super().__init__(frame.to_frame(name=name), numpy_output=numpy_output)

    def build(
        self,
        order: Sequence[str],
        new: Mapping[str, pa.Array | pa.ChunkedArray],
        *,
        one_row: bool = False,
    ) -> Any:
        return _pandas_series_if_one(super().build(order, new, one_row=one_row))

    def from_arrow(self, table: pa.Table) -> Any:
        return _pandas_series_if_one(super().from_arrow(table))

    def frame_of_rows(
        self, table: pa.Table, rows: np.ndarray[Any, Any] | None, kept: frozenset[str]
    ) -> Any:
        return _pandas_series_if_one(super().frame_of_rows(table, rows, kept))


def _object_values(series: Any) -> pa.ChunkedArray | None:
    """A pandas ``object`` column as Arrow values, typed as polars' ``from_pandas`` types it.

    polars converts such a column with pyarrow's inference: Python strings are
    String, integers Int64 (NaN and None missing), floats Float64, dates Date, and so
    on; missing values of several kinds (NaN, ``pd.NA``, ``NaT``) alone are Null. None
    when pyarrow cannot type it (mixed strings and numbers, say): refused by name then.
    """
    try:
        array = pa.array(series, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    if pa.types.is_null(array.type) and all(v is None for v in series):
        # no value to type it by (an empty frame, a batch of missing strings): polars'
        # `from_pandas` reads it as String, so a plan that runs on the full column also
        # runs on its empty or all-missing slices
        return pa.chunked_array([pa.nulls(len(array), pa.string())], type=pa.string())
    return pa.chunked_array([array], type=array.type)


def _pandas_series_if_one(frame: Any) -> Any:
    return frame.iloc[:, 0] if frame.shape[1] == 1 else frame


def _polars_series_if_one(frame: Any) -> Any:
    return frame.to_series() if frame.width == 1 else frame


def enum_categories(array: pa.Array | pa.ChunkedArray) -> list[str] | None:
    """An ordered string dictionary's values (an enum's categories), else None."""
    t = array.type
    if not (pa.types.is_dictionary(t) and t.ordered):
        return None
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    if not chunks:
        return None
    dictionary = chunks[0].dictionary
    vt = dictionary.type
    if not (pa.types.is_string(vt) or pa.types.is_large_string(vt) or pa.types.is_string_view(vt)):
        return None
    return [str(v) for v in dictionary.to_pylist()]


#: the field metadata by which polars marks an Enum column in Parquet and IPC files
POLARS_ENUM_KEY = b"_PL_ENUM_VALUES2"


def polars_enum_metadata(categories: list[str]) -> dict[bytes, bytes]:
    """Field metadata that makes polars read a column as ``Enum(categories)``.

    polars writes each category as its UTF-8 length, ``;`` and its bytes; without it,
    an ordered dictionary reads back as a Categorical.
    """
    encoded = (c.encode() for c in categories)
    return {POLARS_ENUM_KEY: b"".join(b"%d;%s" % (len(c), c) for c in encoded)}


def _polars_series(name: str, array: pa.Array | pa.ChunkedArray) -> Any:
    """A polars column from an Arrow one; an ordered string dictionary is an `Enum`.

    Arrow has no enum type: colbridge's enum results are ordered dictionaries whose
    dictionary is the categories, which polars would otherwise read as Categorical.
    """
    import polars as pl

    if isinstance(array, pa.ChunkedArray) and array.num_chunks > 1:
        # kept in its chunks, as polars' own results are (the Series constructor rechunks:
        # a copy of the whole column)
        series = pl.from_arrow(array, rechunk=False).alias(name)  # type: ignore[union-attr]
    else:
        series = pl.Series(name, array)
    categories = enum_categories(array)
    if categories is not None and series.dtype != pl.Enum(categories):
        series = series.cast(pl.Enum(categories))
    return series


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
            msg = (
                "a polars LazyFrame has no data yet; call `.collect()` first, or stream "
                "it through a plan with `lf.gpu` / `cb.lazy(lf)`"
            )
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


def is_stream_input(obj: Any) -> bool:
    """Whether ``obj`` is read as a stream: a polars LazyFrame, an Arrow stream, a dataset.

    In-memory frames (pandas, polars, pyarrow tables) also speak the stream protocol,
    but are computed on in place, not streamed. Checked without importing polars,
    pandas or the jobs layer, so that `colbridge.lazy` stays cheap.

    Examples
    --------
    >>> import polars as pl
    >>> from colbridge.columns.frames import is_stream_input
    >>> is_stream_input(pl.LazyFrame({"a": [1]})), is_stream_input(pl.DataFrame({"a": [1]}))
    (True, False)
    """
    if isinstance(obj, (pa.Table, pa.RecordBatch, pa.Array, pa.ChunkedArray)):
        return False
    pl = sys.modules.get("polars")
    if pl is not None:
        if isinstance(obj, pl.LazyFrame):
            return True
        if isinstance(obj, (pl.DataFrame, pl.Series)):
            return False
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(obj, (pd.DataFrame, pd.Series)):
        return False
    pads = sys.modules.get("pyarrow.dataset")
    if pads is not None and isinstance(obj, pads.Dataset):
        return True
    return hasattr(obj, "__arrow_c_stream__")
