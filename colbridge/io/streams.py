"""Jobs layer: inputs that arrive as a stream of batches rather than as files.

A polars ``LazyFrame`` (``pl.scan_parquet``, ``scan_csv``, ``scan_ipc`` or any query),
anything that speaks the Arrow PyCapsule stream protocol (``__arrow_c_stream__``:
pyarrow ``RecordBatchReader``, DuckDB relations, polars and pandas frames) and
pyarrow datasets are read batch by batch, like a Parquet file in
`colbridge.io.source`, so the streaming pipeline, `colbridge.io.fuse` and the lazy
handle (`colbridge.io.stream_frame`) run over them with memory bounded by the batch size.

Some plans read their input more than once (a whole-column statistic first, then
the rows). A polars query, a DuckDB relation or a dataset is simply run again for
each pass. A one-shot stream (a ``RecordBatchReader``, or an unknown producer) can
only be read once: when a plan needs more passes, the first pass also writes each
batch to a temporary Arrow IPC file, and later passes read that file
memory-mapped. ``explain()`` says when this happens.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from colbridge.errors import JobSpecError
from colbridge.io.source import Source, check_interrupt, open_source

__all__ = [
    "ArrowStreamSource",
    "InputSource",
    "PolarsLazySource",
    "StreamSource",
    "empty_table",
    "open_input",
]

#: Bytes counted for each string, binary or list value when only the schema is known.
_VARIABLE_VALUE_BYTES = 32.0


def _schema_row_bytes(schema: pa.Schema) -> float:
    """Bytes per decoded row from the schema alone (validity bit rounded up to a byte)."""
    total = 0.0
    for field in schema:
        try:
            width = field.type.bit_width
        except ValueError:  # variable width (strings, lists, ...)
            width = 0
        total += (max(1, width // 8) + 1) if width > 0 else _VARIABLE_VALUE_BYTES
    return max(total, 1.0)


def _rebatched(
    batches: Iterator[pa.RecordBatch], batch_rows: int, columns: Sequence[str] | None
) -> Iterator[pa.Table]:
    """Tables of at most ``batch_rows`` rows from batches of any size.

    Small batches (a database's 2,048-row vectors) are gathered into one table of
    several chunks, not copied: a compute per tiny batch would cost more than its work.
    A batch with no columns keeps its row count.
    """
    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        check_interrupt()
        if columns is not None:
            batch = batch.select(list(columns))
        start = 0
        while start < batch.num_rows:
            part = batch.slice(start, batch_rows - rows)
            pending.append(part)
            rows += part.num_rows
            start += part.num_rows
            if rows == batch_rows:
                yield pa.Table.from_batches(pending, schema=batch.schema)
                pending, rows = [], 0
    if pending:
        yield pa.Table.from_batches(pending, schema=pending[0].schema)


class StreamSource:
    """An input read as batches that is not a set of files (see the module docstring).

    It answers what a file `Source` answers (schema, batches, row estimates), so the
    pipeline, ``fuse`` and the lazy handle take either.
    """

    #: files the input reads (none: an output may be written anywhere)
    files: list[str]
    #: words for ``explain()`` and progress, e.g. ``"polars LazyFrame"``
    format: str
    #: whether each pass can read the input again from its start
    rereadable: bool = True

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the batches."""
        raise NotImplementedError

    def count_rows(self) -> int | None:
        """Rows in the input when known without reading it, else None."""
        return None

    def nbytes(self) -> int:
        """Bytes of the input when known without reading it, else 0."""
        return 0

    def row_bytes(self) -> float:
        """Estimated bytes per decoded row (from the schema; 32 per string or list value)."""
        return _schema_row_bytes(self.schema)

    def plan_passes(self, passes: int) -> None:
        """Be told how many times a job will read the input (a one-shot stream spools)."""

    def describe(self) -> str:
        """One line for ``explain()``: what the input is and how it is read."""
        return f"a {self.format}, read in batches"

    def batches(
        self, batch_rows: int, columns: Sequence[str] | None = None
    ) -> Iterator[pa.Table]:
        """Yield tables of at most ``batch_rows`` rows (only ``columns`` when given)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the source holds (a spool file)."""


class PolarsLazySource(StreamSource):
    """A polars ``LazyFrame`` as a source: each pass runs the query on polars' streaming engine.

    The result is taken batch by batch (``LazyFrame.collect_batches``), so it is never
    held whole; the columns a plan reads are pushed into the query as a projection,
    which polars pushes into its scans.
    """

    def __init__(self, frame: Any) -> None:
        import polars as pl

        if not hasattr(frame, "collect_batches"):
            msg = (
                f"streaming a polars LazyFrame needs `LazyFrame.collect_batches`, which "
                f"polars {pl.__version__} lacks; upgrade polars, or `.collect()` the query "
                "and use `df.gpu`"
            )
            raise JobSpecError(msg)
        self.frame = frame
        self.files = []
        self.format = "polars LazyFrame"
        # the Arrow types of the query's result, from polars' schema: no data is read
        self._schema = pl.DataFrame(schema=frame.collect_schema()).to_arrow().schema

    @property
    def schema(self) -> pa.Schema:
        """The query's result schema as Arrow types."""
        return self._schema

    def describe(self) -> str:
        """One line for ``explain()``."""
        return "a polars LazyFrame, run on polars' streaming engine for each pass"

    def batches(
        self, batch_rows: int, columns: Sequence[str] | None = None
    ) -> Iterator[pa.Table]:
        """Run the query and yield its result in tables of at most ``batch_rows`` rows."""
        import polars as pl

        query = self.frame
        keep: list[str] | None = None
        if columns is not None:
            # a query of no columns has no rows in polars: keep one, dropped below
            keep = list(columns)
            query = query.select(keep or [pl.first()])  # type: ignore[list-item]

        def arrow_batches() -> Iterator[pa.RecordBatch]:
            for chunk in query.collect_batches(chunk_size=batch_rows, lazy=True):
                yield from chunk.to_arrow().to_batches()

        yield from _rebatched(arrow_batches(), batch_rows, keep)


def _is_rereadable(obj: Any) -> bool:
    """Producers known to start a fresh stream on every ``__arrow_c_stream__`` call."""
    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        return True
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    # a DuckDB relation runs its query again; in-memory frames are read again
    return kind.startswith(("duckdb.", "_duckdb.")) or kind in (
        "polars.dataframe.frame.DataFrame",
        "pandas.core.frame.DataFrame",
    )


class ArrowStreamSource(StreamSource):
    """Anything with ``__arrow_c_stream__`` (the Arrow PyCapsule stream protocol) as a source.

    DuckDB relations and in-memory frames are read again for each pass; other
    producers (a ``RecordBatchReader``) are one-shot, and are spooled to a temporary
    Arrow IPC file when a plan reads its input more than once.
    """

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.files = []
        self.rereadable = _is_rereadable(obj)
        name = type(obj).__qualname__
        self.format = "DuckDB relation" if "duckdb" in type(obj).__module__ else (
            f"Arrow stream ({name})")  # fmt: skip
        self._reader: pa.RecordBatchReader | None = None
        if not self.rereadable:  # open it now: its schema is known before any batch
            self._reader = pa.RecordBatchReader.from_stream(obj)
            self._schema = self._reader.schema
        else:
            with contextlib.closing(pa.RecordBatchReader.from_stream(obj)) as reader:
                self._schema = reader.schema
        self._spool_wanted = False
        self._spool_path: str | None = None
        self._reads = 0

    @property
    def schema(self) -> pa.Schema:
        """The stream's Arrow schema."""
        return self._schema

    def plan_passes(self, passes: int) -> None:
        """A one-shot stream read more than once is spooled on its first read."""
        self._spool_wanted = passes > 1 and not self.rereadable

    def describe(self) -> str:
        """One line for ``explain()``."""
        if self.rereadable:
            return f"a {self.format}, read again for each pass"
        if self._spool_wanted:
            return (f"a one-shot {self.format}: the first pass writes it to a temporary "
                    "Arrow IPC file, which later passes read memory-mapped")  # fmt: skip
        return f"a one-shot {self.format}, read once"

    def _raw(self) -> Iterator[pa.RecordBatch]:
        self._reads += 1
        if self.rereadable:
            with contextlib.closing(pa.RecordBatchReader.from_stream(self.obj)) as reader:
                yield from reader
            return
        if self._spool_path is not None:  # a later pass: the spooled copy
            # the batches keep the mapping alive after the file object is gone
            yield from pa.ipc.open_stream(pa.memory_map(self._spool_path))
            return
        if self._reads > 1 or self._reader is None:
            msg = (
                f"this {self.format} was already read; a one-shot stream can be read once. "
                "Pass a new reader, or a source that can be read again (a DuckDB relation, "
                "a polars LazyFrame, a pyarrow dataset)"
            )
            raise JobSpecError(msg)
        reader, self._reader = self._reader, None
        if not self._spool_wanted:
            yield from reader
            return
        fd, path = tempfile.mkstemp(prefix="colbridge-spool-", suffix=".arrow")
        os.close(fd)
        try:
            # the IPC stream format: batches may carry dictionaries of their own (the
            # file format refuses a dictionary replaced from one batch to the next)
            with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, self._schema) as writer:
                for batch in reader:
                    writer.write_batch(batch)
                    yield batch
        except BaseException:
            os.unlink(path)
            raise
        self._spool_path = path

    def batches(
        self, batch_rows: int, columns: Sequence[str] | None = None
    ) -> Iterator[pa.Table]:
        """Yield tables of at most ``batch_rows`` rows (only ``columns`` when given)."""
        yield from _rebatched(self._raw(), batch_rows, columns)

    def close(self) -> None:
        """Remove the spool file, if one was written."""
        if self._spool_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._spool_path)
            self._spool_path = None

    def __del__(self) -> None:
        self.close()


#: What a job reads: files, or a stream.
InputSource = Source | StreamSource


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of no rows with ``schema`` (a plan is typed against it before any data).

    Not ``schema.empty_table()``: pyarrow imports pandas for it, a third of a second,
    which a job that never touches pandas (``colbridge run`` on Parquet) should not pay.
    """
    return pa.Table.from_batches([], schema=schema)


def open_input(spec: Any, format: str | None = None) -> InputSource:
    """A job's input: files (see `open_source`), or a LazyFrame, Arrow stream or dataset."""
    if isinstance(spec, (Source, StreamSource)):  # opened already
        return spec
    if isinstance(spec, (str, os.PathLike)) or (
        isinstance(spec, (list, tuple)) and all(isinstance(s, (str, os.PathLike)) for s in spec)
    ):
        return open_source(spec, format)
    pads = sys.modules.get("pyarrow.dataset")
    if pads is not None and isinstance(spec, pads.Dataset):
        files = list(getattr(spec, "files", []) or [])
        kind = getattr(getattr(spec, "format", None), "default_extname", "") or "dataset"
        return Source(files, str(kind), spec)
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(spec, pl.LazyFrame):
        return PolarsLazySource(spec)
    if pl is not None and isinstance(spec, pl.DataFrame):
        return PolarsLazySource(spec.lazy())
    if hasattr(spec, "__arrow_c_stream__"):
        return ArrowStreamSource(spec)
    msg = (
        f"cannot read a {type(spec).__module__}.{type(spec).__name__} as a job's input; "
        "pass a path, a glob, a folder, a polars LazyFrame, a pyarrow dataset or "
        "anything with `__arrow_c_stream__` (a RecordBatchReader, a DuckDB relation)"
    )
    raise JobSpecError(msg)
