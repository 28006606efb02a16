"""Jobs layer: the lazy handle over a stream (``lf.gpu``, ``cb.lazy(reader)``).

A `StreamFrame` queues steps exactly as the in-memory `colbridge.LazyFrame` does;
running it streams the input (`colbridge.io.streams`) batch by batch through the
plan with the streaming pipeline's own machinery (`colbridge.io.pipeline.run_job`):
statistics passes first where a whole-column statistic needs them, then one
result per batch. ``compute()`` gathers the results (a polars ``DataFrame`` for a
polars ``LazyFrame``, else a pyarrow ``Table``); ``__arrow_c_stream__`` hands them
to a consumer (DuckDB, polars, pyarrow) one batch at a time, and ``sink`` writes
them to a file, so the whole result is never held.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from colbridge.columns.frames import ArrowTableAdapter, PolarsFrameAdapter
from colbridge.errors import ColbridgeError, SchemaError
from colbridge.io.pipeline import (
    Counters,
    PipelineResult,
    _Job,
    _prepare,
    describe_input,
    input_passes,
    pipeline,
    run_job,
    statistics_passes,
)
from colbridge.io.progress import JobProgress
from colbridge.io.streams import StreamSource, empty_table, open_input
from colbridge.lazy import LazyFrame
from colbridge.plan.logical import Step
from colbridge.runtime.execute import ComputeReport, prepare
from colbridge.runtime.report import PlanReport, Section, describe

__all__ = ["StreamFrame"]


class StreamFrame(LazyFrame):
    """Queued work over a stream: a polars ``LazyFrame``, an Arrow stream, a dataset.

    Build with ``lf.gpu`` or `colbridge.lazy`; steps queue as on any `LazyFrame`.
    Running reads the input in batches of at most ``batch_rows`` rows (default
    524,288): memory is bounded by the batch size, not the input's size.

    Ordered operations that read a bounded number of later rows (``shift(-1)``,
    ``rolling_*(center=True)``, backward fills with a ``limit``) run over each batch
    with rows of the batches around it; those that read every later row
    (``reverse=True``, backward fills without a limit, ranks) are refused, as in
    `colbridge.io.pipeline`: collect the input and use `colbridge.lazy` on the frame.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> lf = pl.LazyFrame({"a": [1.0, 2.0, 3.0]}).filter(pl.col("a") > 1)
    >>> q = lf.gpu.with_columns(z=cb.col("a") - cb.col("a").mean())
    >>> q.compute()["z"].to_list()
    [-0.5, 0.5]
    """

    def __init__(
        self,
        source: Any,
        steps: tuple[Step, ...] = (),
        *,
        batch_rows: int | None = None,
        opened: StreamSource | Any = None,
    ) -> None:
        super().__init__(source, steps)
        self._batch_rows = batch_rows
        # opened once and shared by the handles derived from this one: a one-shot
        # stream (a RecordBatchReader) cannot be opened twice
        self._source = opened if opened is not None else open_input(source)

    def _with_steps(self, steps: tuple[Step, ...]) -> StreamFrame:
        return StreamFrame(self._frame, steps, batch_rows=self._batch_rows, opened=self._source)

    def _input_names(self) -> list[str]:
        return list(self._source.schema.names)

    def _empty_input(self) -> pa.Table:
        return empty_table(self._source.schema)

    def _job(self, device: str, fallback: str) -> _Job:
        return _prepare(
            self._source, with_=None, filter=None, select=None, steps=self._steps,
            device=device, fallback=fallback, batch_rows=self._batch_rows,
            memory_limit=None, input_format=None,
        )  # fmt: skip

    def _tables(self, device: str, fallback: str) -> Iterator[pa.Table]:
        """The result, table by table; the last batch's compute report kept on the handle."""
        job = self._job(device, fallback)
        reports: list[ComputeReport] = []
        with JobProgress(False) as bar:
            for table in run_job(job, bar, Counters(), reports):
                self.last_report = reports[-1] if reports else None
                yield table

    # -- running --------------------------------------------------------------
    def compute(
        self,
        device: str = "auto",
        *,
        fallback: str = "cpu",
        numpy_output: bool | None = None,
    ) -> Any:
        """Stream the input through the steps and gather the result.

        Returns a polars ``DataFrame`` for a polars ``LazyFrame`` input, else a pyarrow
        ``Table`` (its chunks are the batches' results: nothing is copied to join them).
        Use ``__arrow_c_stream__`` (``pa.RecordBatchReader.from_stream(q)``,
        ``duckdb.sql("select ... from q")``) or `sink` to consume the result one batch
        at a time instead.
        """
        _ = numpy_output  # the result is Arrow-backed: polars or pyarrow
        tables = list(self._tables(device, fallback))
        table = _joined(tables)
        try:
            import polars as pl
        except ImportError:  # pragma: no cover - polars is a dependency
            return table
        if isinstance(self._frame, (pl.LazyFrame, pl.DataFrame)):
            # the input's schema alone: enum results come back as polars Enums, as in memory
            schema = self._frame.collect_schema() if isinstance(self._frame, pl.LazyFrame) \
                else self._frame.schema  # fmt: skip
            adapter = PolarsFrameAdapter(pl.DataFrame(schema=schema))
            return adapter.from_arrow(table, rechunk=False)
        return table

    def to_reader(self, device: str = "auto", *, fallback: str = "cpu") -> pa.RecordBatchReader:
        """The result as a `pyarrow.RecordBatchReader`, computed batch by batch as it is read.

        The statistics passes a plan needs and the first batch run when this is called
        (they fix the result's schema); every later batch runs when the reader reaches it.
        """
        tables = self._tables(device, fallback)
        first = next(tables)
        schema = first.schema

        def batches() -> Iterator[pa.RecordBatch]:
            for table in itertools.chain([first], tables):
                yield from _conformed(table, schema).to_batches()

        return pa.RecordBatchReader.from_batches(schema, batches())

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream protocol: the result, computed batch by batch as read."""
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def sink(self, path: str | os.PathLike[str], **options: Any) -> PipelineResult:
        """Write the result to a Parquet or Arrow IPC file, batch by batch, atomically.

        ``options`` are those of `colbridge.io.pipeline` (``device``, ``compression``,
        ``output_format``, ``progress``...).
        """
        return pipeline(self._source, path, steps=self._steps,
                        batch_rows=self._batch_rows, **options)  # fmt: skip

    # -- reporting ------------------------------------------------------------
    def report(
        self, *, source: bool = False, device: str = "auto", target: str | None = None
    ) -> PlanReport:
        """The plan as data; `explain` renders it as text (see `LazyFrame.report`).

        It says how the input is read, how many passes the plan makes over it, and,
        for a one-shot stream that must be read more than once, that it is spooled.
        """
        try:
            job = self._job(device, "cpu")
        except ColbridgeError as exc:  # listed, not raised (as `LazyFrame.report` does)
            return PlanReport.for_error(self._source.format, self._steps, exc)
        empty = empty_table(self._source.schema)
        report = describe(prepare(self._steps, empty.column_names), ArrowTableAdapter(empty),
                          device=device, target=target, source=source,
                          last=self.last_report, streamed=True)  # fmt: skip
        levels = statistics_passes(job.steps)
        stream = Section("input", describe_input(self._source, input_passes(job.steps)), [
            (0, f"batches of up to {job.batch_rows} rows"),
            (0, f"{levels} statistics pass(es) over the input, then 1 streaming pass"
                if levels else "1 streaming pass: nothing is held whole"),
        ])  # fmt: skip
        return PlanReport(f"over a {self._source.format} (streamed)",
                          [stream, *report.sections])  # fmt: skip

    def __repr__(self) -> str:
        steps = ", ".join(s.describe() for s in self._steps) or "no steps"
        return f"<colbridge.StreamFrame over a {self._source.format}: {steps}>"

    def _display_report(self) -> PlanReport:
        try:
            return self.report()
        except Exception as exc:  # a display must not raise; show why the plan fails
            return PlanReport.for_error(self._source.format, self._steps, exc)


def _conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``schema`` (a batch's result typed like the first batch's)."""
    if table.schema.equals(schema):
        return table
    try:
        return table.select(schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError) as exc:
        msg = (
            f"a batch's result has schema {table.schema} where the first batch's was "
            f"{schema}; cast the column to one type in the plan ({exc})"
        )
        raise SchemaError(msg) from exc


def _joined(tables: list[pa.Table]) -> pa.Table:
    if len(tables) == 1:
        return tables[0]
    schema = tables[0].schema
    return pa.concat_tables([_conformed(t, schema) for t in tables])
