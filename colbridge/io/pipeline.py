"""Jobs layer: the streaming ETL pipeline (Parquet/IPC in → fused kernels → Parquet/IPC out).

`pipeline` reads its input in record batches, runs one plan (prepared once) on
every batch with the runtime (`colbridge.runtime.pieces`), and writes the
results atomically. Plans with whole-column reductions first take one
statistics pass per reduction level (`colbridge.plan.streaming`): each batch's
partial rows are folded with the very functions an in-memory compute uses, so
results equal a single in-memory run while peak memory stays bounded by the
batch size.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from colbridge.backends.scans import ScanStreams
from colbridge.columns.frames import ArrowTableAdapter, enum_categories, polars_enum_metadata
from colbridge.errors import JobSpecError
from colbridge.expr.nodes import Agg, Column, Node, deep_walk
from colbridge.io.grouped import (
    Lookup,
    attach,
    has_group_by,
    resolve_group_by,
    resolve_windows,
    window_passes,
)
from colbridge.io.halos import HALO, halo_sizes, keep_halo, own_rows, own_rows_only, with_halos
from colbridge.io.progress import JobProgress
from colbridge.io.sink import AtomicWriter
from colbridge.io.source import (
    DEFAULT_BATCH_ROWS,
    Source,
    parse_memory,
    rows_for_memory,
)
from colbridge.io.steps import build_steps, is_aggregating
from colbridge.io.streams import StreamSource, empty_table, open_input
from colbridge.plan.logical import Step
from colbridge.plan.streaming import (
    one_row_steps,
    ordered_operations,
    reduction_passes,
    refuse_inferred_formats,
    refuse_ordered,
    refuse_row_orders,
    refuse_unmergeable,
    resolve_aggregates,
)
from colbridge.runtime.execute import ComputeReport, prepare
from colbridge.runtime.pieces import compute_piece, fold_reductions
from colbridge.runtime.report import describe

__all__ = [
    "Counters",
    "PipelineResult",
    "describe_input",
    "explain_pipeline",
    "input_passes",
    "pipeline",
    "run_job",
    "statistics_passes",
]

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class PipelineResult:
    """What a `pipeline` run did."""

    output: str
    rows_in: int
    rows_out: int
    batches: int
    batch_rows: int
    passes: int
    bytes_in: int
    seconds: float


@dataclass
class _Job:
    source: Source | StreamSource
    steps: tuple[Step, ...]
    batch_rows: int
    device: str
    fallback: str
    #: the batch size was derived from a memory limit, which assumes the compiled
    #: kernels' working set (the NumPy tier holds a temporary per operation)
    bounded: bool = False
    #: rows before and after each batch that it is computed with (`colbridge.io.halos`),
    #: for ordered operations that read rows after each row; None: carried instead
    halos: tuple[int, int] | None = None


def _needed_columns(
    steps: Sequence[Step], schema: pa.Schema, lookups: Sequence[Lookup] = ()
) -> list[str] | None:
    """Input columns the steps read, when a ``select`` limits the output; else None (all).

    The keys of window lookups (`colbridge.io.grouped`) are read too.
    """
    if not any(s.kind in ("select", "group_by") for s in steps):
        return None
    names: list[str] = []
    exprs = [e for step in steps for _, e in (*step.items, *step.keys)]
    exprs += [k for lookup in lookups for k in lookup.keys]
    for expr in exprs:
        for n in deep_walk(expr):
            if isinstance(n, Column) and n.name in schema.names and n.name not in names:
                names.append(n.name)
    return names


def _reduction_prefix(prefix: tuple[Step, ...], aggs: Sequence[Agg]) -> tuple[Step, ...]:
    """The part of ``prefix`` that reductions ``aggs`` depend on: a statistics pass runs only it.

    Walking back from the columns the reductions read, ``with_columns`` items no one
    needs are dropped; any other step (a filter changes the rows counted) keeps the
    whole prefix.
    """
    need = {n.name for a in aggs for n in deep_walk(a) if isinstance(n, Column)}
    kept: list[Step] = []
    for step in reversed(prefix):
        if step.kind != "with_columns":
            return prefix
        items = tuple((name, e) for name, e in step.items if name in need)
        if items:
            defined = {name for name, _ in items}
            reads = {n.name for _, e in items for n in deep_walk(e) if isinstance(n, Column)}
            need = (need - defined) | reads
            kept.append(Step(step.kind, items, step.keys))
    return tuple(reversed(kept))


def _prepare(
    input: Any,
    *,
    with_: Any,
    filter: Any,
    select: Any,
    steps: Any,
    device: str,
    fallback: str,
    batch_rows: int | None,
    memory_limit: str | int | None,
    input_format: str | None,
) -> _Job:
    if batch_rows is not None and batch_rows < 1:
        msg = f"`batch_rows` must be at least 1, got {batch_rows}"
        raise JobSpecError(msg)
    if device not in ("auto", "cpu", "cuda"):
        msg = f"unknown device {device!r}; use 'auto', 'cpu' or 'cuda'"
        raise JobSpecError(msg)
    built = build_steps(with_=with_, filter=filter, select=select)
    if steps is not None:
        from colbridge.io.steps import steps_of

        built = (*built, *steps_of(steps))
    where = "a streamed job (`colbridge run`, `colbridge.io.pipeline`, a streamed input)"
    refuse_ordered(built, where, look_ahead_only=True)
    halos = halo_sizes(built, where, stream=True) \
        if any(n.looks_ahead for n in ordered_operations(built)) else None  # fmt: skip
    refuse_row_orders(built, where)
    refuse_inferred_formats(built, where)
    refuse_unmergeable(built, where)
    source = open_input(input, input_format)
    # Type-check the whole plan against the schema before reading any data.
    empty = empty_table(source.schema)
    describe(prepare(built, empty.column_names), ArrowTableAdapter(empty), device="cpu")
    rows = batch_rows
    if memory_limit is not None:
        rows = rows_for_memory(source, parse_memory(memory_limit), batch_rows)
    return _Job(source, built, rows or DEFAULT_BATCH_ROWS, device, fallback,
                bounded=memory_limit is not None, halos=halos)  # fmt: skip


def _check_output(job: _Job, output: PathLike) -> str:
    out = os.path.abspath(os.fspath(output))
    if any(os.path.abspath(f) == out for f in job.source.files):
        msg = f"output {os.fspath(output)!r} is also an input file; write to another path"
        raise JobSpecError(msg)
    if os.path.isdir(out):
        msg = f"output {os.fspath(output)!r} is a folder; give a file name"
        raise JobSpecError(msg)
    folder = os.path.dirname(out)
    if not os.path.isdir(folder):
        msg = f"output folder {folder!r} does not exist; create it first"
        raise JobSpecError(msg)
    return out


def pipeline(
    input: Any,
    output: PathLike,
    *,
    with_: Any = None,
    filter: Any = None,
    select: Any = None,
    steps: Any = None,
    device: str = "auto",
    fallback: str = "cpu",
    batch_rows: int | None = None,
    memory_limit: str | int | None = None,
    input_format: str | None = None,
    output_format: str | None = None,
    compression: str | None = "zstd",
    progress: bool = False,
) -> PipelineResult:
    """Stream ``input`` through a plan into ``output``, batch by batch.

    Parameters
    ----------
    input : path, glob, folder, list of paths, or a stream
        Parquet or Arrow IPC data; or a polars ``LazyFrame`` (``pl.scan_csv(...)``),
        a pyarrow dataset, or anything with ``__arrow_c_stream__`` (a
        ``RecordBatchReader``, a DuckDB relation): see `colbridge.io.streams`.
    output : path
        A ``.parquet`` or ``.arrow``/``.ipc``/``.feather`` file (or ``output_format``),
        written atomically: it appears only when the run succeeds.
    with_ : str, mapping or list, optional
        Columns to add: ``"z = sqrt(a*b); w = a - 1"``, ``{"z": cb.col("a") * 2}``, ...
    filter : str or expression, optional
        Keep rows where it is true (applied after ``with_``).
    select : str, list of names/expressions, optional
        Output columns (applied last); ``"a,b,z"`` is split on commas.
    steps : LazyFrame or sequence of steps, optional
        A plan built with the lazy API (``cb.lazy(sample).with_columns(...)``); its
        steps run after ``with_`` / ``filter`` / ``select``.
    device : {"auto", "cpu", "cuda"}
        Where the kernels run.
    fallback : {"cpu", "raise"}
        What happens when the GPU fails, as in `LazyFrame.compute`.
    batch_rows : int, optional
        Rows per batch (default 524288, or what ``memory_limit`` allows).
    memory_limit : str or int, optional
        Bound on the working set, e.g. ``"512MB"``; sets the batch size from the
        row width. Input row groups larger than a batch are still decoded whole.
    input_format, output_format : {"parquet", "ipc"}, optional
        Override the format guessed from the file names.
    compression : str or None
        Parquet compression codec (default zstd).
    progress : bool
        Show a progress bar on stderr when it is a terminal.

    Returns
    -------
    PipelineResult
        Rows in and out, batches, passes over the data and time taken.

    Raises
    ------
    JobSpecError, ExpressionSyntaxError, ColumnNotFoundError, SchemaError
        Bad input path, options or expressions; raised before any data is read.
    ColbridgeError, OSError, pyarrow.ArrowException
        Failures while running; no output file is left behind.

    Examples
    --------
    >>> from colbridge.io import pipeline
    >>> pipeline("in.parquet", "out.parquet",
    ...          with_="z = (a - mean(a)) / std(a)", filter="z > 0")  # doctest: +SKIP
    """
    start = time.perf_counter()
    job = _prepare(
        input, with_=with_, filter=filter, select=select, steps=steps, device=device,
        fallback=fallback, batch_rows=batch_rows, memory_limit=memory_limit,
        input_format=input_format,
    )  # fmt: skip
    out = _check_output(job, output)
    counters = Counters()
    with JobProgress(progress) as bar, AtomicWriter(
        out, format=output_format, compression=compression, row_group_rows=job.batch_rows,
        expected_rows=job.source.count_rows(),
    ) as writer:
        # Batch i is encoded and written on a second thread while batch i+1 is read
        # and computed (pyarrow releases the GIL while it encodes); at most one write
        # is in flight, so memory stays bounded by the batch size.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="colbridge-write") as io:
            pending: Future[None] | None = None
            for result in run_job(job, bar, counters):
                if pending is not None:
                    pending.result()  # re-raises a failed write here
                result = _with_field_metadata(result, job.source.schema)
                pending = io.submit(writer.write, result)
                del result
            if pending is not None:
                pending.result()
        rows_out = writer.rows
    return PipelineResult(
        output=out,
        rows_in=counters.rows if counters.batches else (job.source.count_rows() or 0),
        rows_out=rows_out,
        batches=counters.batches,
        batch_rows=job.batch_rows,
        passes=counters.passes,
        bytes_in=counters.bytes,
        seconds=time.perf_counter() - start,
    )


def _with_field_metadata(table: pa.Table, source: pa.Schema) -> pa.Table:
    """``table`` whose columns passed through from the input keep their fields' metadata.

    polars marks an Enum by its field's metadata (an ordered dictionary without it
    reads back as a Categorical), so a computed Enum (`bin_intervals`, `cut`, a cast
    to an Enum) gets that mark too; no column is copied.
    """
    fields, changed = [], False
    for field, column in zip(table.schema, table.columns, strict=True):
        i = source.get_field_index(field.name)
        kept = source.field(i) if i >= 0 else None
        if kept is not None and kept.metadata and not field.metadata \
                and kept.type.equals(field.type):  # fmt: skip
            field = field.with_metadata(kept.metadata)
            changed = True
        elif not field.metadata and (categories := enum_categories(column)) is not None:
            field = field.with_metadata(polars_enum_metadata(categories))
            changed = True
        fields.append(field)
    if not changed:
        return table
    return pa.Table.from_arrays(table.columns, schema=pa.schema(fields, table.schema.metadata))


@dataclass
class Counters:
    """What `run_job` read in its last pass over the input, and how many passes it took."""

    rows: int = 0
    bytes: int = 0
    batches: int = 0
    passes: int = 0


def statistics_passes(steps: Sequence[Step]) -> int:
    """Statistics passes a job over ``steps`` takes before its last pass (windows, reductions)."""
    windows, rest = window_passes(steps)
    return reduction_passes(rest) + windows


def input_passes(steps: Sequence[Step]) -> int:
    """How many times a job over ``steps`` reads its input (statistics passes + the last)."""
    levels = statistics_passes(steps)
    # an aggregation whose every value comes from statistics reads nothing more
    last = 0 if is_aggregating(steps) and not has_group_by(steps) and levels else 1
    return levels + last


def run_job(
    job: _Job, bar: JobProgress, counters: Counters, reports: list[ComputeReport] | None = None
) -> Iterator[pa.Table]:
    """The result of ``job``, table by table, in input order (see the module docstring).

    Statistics passes come first (per-group statistics of windows, looked up batch
    by batch, then whole-column reductions); the last pass yields a result per batch,
    or, for a ``group_by`` or an aggregation, one table. ``reports`` receives the
    compute report of each result.
    """
    source = job.source
    if isinstance(source, StreamSource):
        source.plan_passes(input_passes(job.steps))
    total = source.count_rows()
    # the job's size picks the CPU tier (`backends.common.piece_of_job`); under a memory limit
    # it is not passed on, so the compiled kernels run, whose working set the limit sized
    tier_rows = None if job.bounded else total
    empty = empty_table(source.schema)
    lookups: list[Lookup] = []

    def pieces(prefix: tuple[Step, ...], found: Sequence[Lookup]) -> Iterator[pa.Table]:
        """Every batch with the window columns found so far, and its rows counted."""
        for batch in source.batches(job.batch_rows,
                                    _needed_columns(prefix, source.schema, found)):
            yield attach(batch, found)
            bar.advance(batch.num_rows, batch.nbytes)

    def run_tables(prefix: tuple[Step, ...], found: Sequence[Lookup]) -> Iterator[pa.Table]:
        counters.passes += 1
        bar.start(f"pass {counters.passes}: group statistics", total)
        seen = False
        streams = ScanStreams()  # ordered operations go on from batch to batch
        for piece in pieces(prefix, found):
            yield compute_piece(prepare(prefix, piece.column_names), piece, job.device,
                                job.fallback, streams, total_rows=tier_rows)  # fmt: skip
            seen = True
        if not seen:  # no rows at all: the groups of an empty frame
            piece = attach(empty, found)
            yield compute_piece(prepare(prefix, piece.column_names), piece, "cpu")

    def reduce(prefix: tuple[Step, ...], aggs: list[Agg],
               found: Sequence[Lookup]) -> dict[Agg, Node]:  # fmt: skip
        counters.passes += 1
        bar.start(f"pass {counters.passes}: statistics", total)
        if job.halos is not None:  # the rows' marks go through every `select`
            prefix = keep_halo(prefix)
        prefix = _reduction_prefix(prefix, aggs)  # read and compute only what they need
        reads = _needed_columns((*prefix, Step("select", tuple(
            (f"r{q}", a) for q, a in enumerate(aggs)))), source.schema, found)  # fmt: skip

        def batches() -> Any:
            for batch in source.batches(job.batch_rows, reads):
                yield attach(batch, found)
                bar.advance(batch.num_rows, batch.nbytes)

        empty_read = attach(empty if reads is None else empty.select(reads), found)
        if job.halos is not None:  # each batch with its halos, reductions over its own rows
            own = own_rows_only(aggs)
            values = fold_reductions(prefix, own, with_halos(batches(), *job.halos),
                                     _marked_empty(empty_read), job.device, job.fallback,
                                     tier_rows, carried=False)  # fmt: skip
            return {agg: values[of_own] for agg, of_own in zip(aggs, own, strict=True)}
        return fold_reductions(prefix, aggs, batches(), empty_read, job.device,
                               job.fallback, tier_rows)  # fmt: skip

    # windows first (per-group statistics, looked up batch by batch), then reductions
    windowed, lookups, _ = resolve_windows(job.steps, source.schema.names, run_tables,
                                           reduce)  # fmt: skip
    upto = next((j for j, s in enumerate(windowed) if s.kind == "group_by"), len(windowed))
    resolved, _ = resolve_aggregates(windowed[:upto],
                                     lambda prefix, aggs: reduce(prefix, aggs, lookups))
    needed = _needed_columns(resolved, source.schema, lookups)
    empty_in = attach(empty if needed is None else empty.select(needed), lookups)
    plan = prepare(resolved, empty_in.column_names)
    if has_group_by(windowed):
        # a row per group: statistics merged over the batches, the rest in memory
        groups, rest, _ = resolve_group_by((*resolved, *windowed[upto:]), run_tables, lookups)
        counters.passes += 1  # the steps after the grouping, on the table of groups
        yield compute_piece(prepare(rest, groups.column_names), groups, job.device,
                            job.fallback, reports=reports)  # fmt: skip
        return
    if is_aggregating(job.steps):
        # Every reduction is now a literal: the one-row result needs no data.
        counters.passes += 1
        row_plan = prepare(one_row_steps(resolved), empty_in.column_names)
        yield compute_piece(row_plan, empty_in, job.device, job.fallback, reports=reports)
        return
    counters.passes += 1
    bar.start("writing" if counters.passes > 1 else "running", total)
    if job.halos is not None:
        yield from _run_with_halos(job, resolved, source.batches(job.batch_rows, needed),
                                   empty_in, bar, counters, reports, tier_rows)  # fmt: skip
        return
    streams = ScanStreams()  # ordered operations go on from batch to batch
    for batch in source.batches(job.batch_rows, needed):
        piece = attach(batch, lookups)
        counters.rows += batch.num_rows
        counters.bytes += batch.nbytes
        counters.batches += 1
        result = compute_piece(plan, piece, job.device, job.fallback, streams, reports,
                               tier_rows)
        bar.advance(batch.num_rows, batch.nbytes)
        del piece, batch
        yield result
    if counters.batches == 0:
        yield compute_piece(plan, empty_in, "cpu", reports=reports)


def _marked_empty(empty: pa.Table) -> pa.Table:
    """A piece with no rows and the `HALO` column."""
    return empty.append_column(HALO, pa.array([], pa.int8()))


def _run_with_halos(job: _Job, steps: tuple[Step, ...], batches: Iterator[pa.Table],
                    empty: pa.Table, bar: JobProgress, counters: Counters,
                    reports: list[ComputeReport] | None,
                    tier_rows: int | None) -> Iterator[pa.Table]:  # fmt: skip
    """The last pass of a job computed with halos: each batch's own rows, in order.

    Each batch is computed on its own together with the rows around it that its
    ordered operations read (`colbridge.io.halos`); nothing is carried between
    batches. (No windows and no ``group_by`` here: `halo_sizes` refuses them.)
    """
    assert job.halos is not None
    kept = keep_halo(steps)
    plan = prepare(kept, _marked_empty(empty).column_names)

    def counted() -> Iterator[pa.Table]:
        for batch in batches:
            counters.rows += batch.num_rows
            counters.bytes += batch.nbytes
            counters.batches += 1
            bar.advance(batch.num_rows, batch.nbytes)
            yield batch

    seen = False
    for piece in with_halos(counted(), *job.halos):
        result = compute_piece(plan, piece, job.device, job.fallback, None, reports,
                               tier_rows)  # fmt: skip
        yield own_rows(result)
        seen = True
    if not seen:
        yield compute_piece(prepare(steps, empty.column_names), empty, "cpu", reports=reports)


def explain_pipeline(
    input: Any,
    *,
    with_: Any = None,
    filter: Any = None,
    select: Any = None,
    steps: Any = None,
    device: str = "auto",
    batch_rows: int | None = None,
    memory_limit: str | int | None = None,
    input_format: str | None = None,
) -> str:
    """Describe the plan `pipeline` would run on ``input``; reads only the input's metadata."""
    job = _prepare(
        input, with_=with_, filter=filter, select=select, steps=steps, device=device,
        fallback="cpu", batch_rows=batch_rows, memory_limit=memory_limit,
        input_format=input_format,
    )  # fmt: skip
    source = job.source
    levels = statistics_passes(job.steps)
    empty = empty_table(source.schema)
    report = describe(prepare(job.steps, empty.column_names), ArrowTableAdapter(empty),
                      device=device, streamed=True)  # fmt: skip
    body = report.to_text().splitlines()[1:]
    head = [
        f"colbridge pipeline over {describe_input(source, input_passes(job.steps))}, "
        f"columns {source.schema.names}",
        f"batches of up to {job.batch_rows} rows; {levels} statistics pass(es) + 1 streaming pass",
    ]
    return "\n".join(head + body)


def describe_input(source: Source | StreamSource, passes: int) -> str:
    """What a job reads, in words: files and rows, or the stream and how each pass reads it."""
    if isinstance(source, StreamSource):
        source.plan_passes(passes)
        return source.describe()
    return f"{len(source.files)} {source.format} file(s), {source.count_rows()} rows"
