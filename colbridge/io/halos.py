"""Jobs layer: ordered operations over pieces of the data, computed with halo rows.

A piece (a Dask partition, a stream's record batch) computed on its own lacks the
rows around it that a ``shift``, a ``rolling_*`` window or a fill with a ``limit``
reads. When every ordered operation of a plan reads a bounded number of rows
before and after each row, the piece is computed together with that many rows of
the pieces around it (its *halo*, as ``map_overlap`` does), and only its own rows
are kept: the column `HALO` tells them apart (0 before, 1 own, 2 after), and every
whole-column reduction reads the own rows only (`own_rows_only`).

Dask partitions always run this way. A stream carries look-behind operations from
batch to batch instead (`colbridge.backends.scans.ScanStreams`), which also works
per key and for unbounded operations; it computes with halos only the plans that
read rows after each row (negative shifts, centred windows, backward fills with a
limit) or that hold bounded windows computed from whole columns (rolling quantiles,
ranks, skews and kurtoses), which no carry holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from colbridge.errors import JobSpecError
from colbridge.expr.nodes import (
    HOST_SCANS,
    Agg,
    Binary,
    Column,
    Filtered,
    Literal,
    Over,
    Scan,
    deep_walk,
)
from colbridge.io.grouped import has_group_by, has_windows
from colbridge.plan.logical import Step
from colbridge.plan.streaming import ordered_operations, reach
from colbridge.plan.typecheck import is_one_value
from colbridge.types import DType

__all__ = [
    "HALO",
    "halo_sizes",
    "keep_halo",
    "own_rows",
    "own_rows_only",
    "with_halos",
]

#: The column that tells a piece's own rows (1) from its halos (0 before, 2 after).
HALO = "__colbridge_halo__"
_OWN = Binary("eq", Column(HALO), Literal(1, DType.INT8))


def halo_sizes(steps: Sequence[Step], where: str, *, stream: bool = False) -> tuple[int, int]:
    """Rows each piece needs from before and after it for the steps' ordered operations.

    The reaches of all ordered operations add up (a scan of a scan reads further), which
    can only over-count; an over-counted halo costs rows, never a wrong value.

    Raises `JobSpecError` for what halos cannot do: unbounded operations (cumulative,
    ``ewm_mean``, fills without a limit), operations per key (``over``), ordered
    operations after a filter, and ordered work together with windows or ``group_by``.
    ``where`` names the job in the message; ``stream``: a stream, which computes with
    halos only what it cannot carry from batch to batch (see the module docstring).
    """
    scans = ordered_operations(steps)
    if not scans:
        return 0, 0
    over = [m for step in steps for _, e in step.items for n in deep_walk(e)
            if isinstance(n, Over) for m in deep_walk(n.arg) if isinstance(m, Scan)]  # fmt: skip
    keyed = [n for n in scans if n.keys.exprs or n in over]
    unbounded = [n for n in scans if reach(n) is None]
    # a stream computes with halos only for the operations it cannot carry: say which
    ahead = [n for n in scans if n.looks_ahead]
    why = (
        f" together with {_listed(ahead)} (reading rows after each row, which a stream "
        "computes over each batch with rows of the batches around it: every ordered "
        "operation of the plan must then have a bounded reach and no key)"
    ) if stream and ahead else ""  # fmt: skip
    in_memory = "compute it in memory (`cb.lazy(frame)` over the whole table)"
    if keyed:
        because = why or ": a group's rows may lie in several partitions"
        alternative = in_memory if stream else (
            "repartition by the key first (`ddf.shuffle(key)`, rows of a group then in one "
            "partition, in order) and compute each partition with `cb.lazy`, or run the job "
            "as a stream (`colbridge run`), which carries them across batches")  # fmt: skip
        msg = (f"{_listed(keyed)}: ordered operations per key are not supported in "
               f"{where}{because}. {alternative[0].upper()}{alternative[1:]}")  # fmt: skip
        raise JobSpecError(msg)
    if unbounded:
        # a rank or an interpolation reads rows after each row: no stream carries it either
        carried = not stream and not any(n.func in HOST_SCANS for n in unbounded)
        elsewhere = "as a stream (`colbridge run`, which carries them across batches), or " \
            if carried else ""  # fmt: skip
        msg = (
            f"{_listed(unbounded)}: ordered operations that read every row before (or after) "
            f"a row (cumulative, ewm_mean/var/std, fills without a limit, rank, interpolate, "
            f"time-based `rolling_*_by` windows) are not supported in "
            f"{where}{why or '; partitions get bounded halos only'}. Run them {elsewhere}in memory "
            "(`cb.lazy(frame)` over the whole table, e.g. `pl.read_parquet(...)`)"
        )
        raise JobSpecError(msg)
    _refuse_filtered_scans(steps, where, why, stream=stream)
    if has_windows(steps) or has_group_by(steps):
        second = "compute the ordered columns in one job and the grouped work in a second" \
            if stream else ("compute the ordered columns in one `apply` and the grouped work "
                            "in a second")  # fmt: skip
        msg = (
            f"ordered operations together with windows (`over`) or `group_by` are not "
            f"supported in {where}{why}; {second}"
        )
        raise JobSpecError(msg)
    reaches = [r for r in (reach(n) for n in scans) if r is not None]
    return sum(r[0] for r in reaches), sum(r[1] for r in reaches)


def _refuse_filtered_scans(steps: Sequence[Step], where: str, why: str, *,
                           stream: bool) -> None:  # fmt: skip
    """Ordered operations over filtered rows would need halos of kept rows: refused."""
    filtered = False
    for step in steps:
        exprs = [e for _, e in step.items]
        nodes = [n for e in exprs for n in deep_walk(e)]
        scans = [n for n in nodes if isinstance(n, Scan)]
        inside = any(isinstance(m, Scan) for n in nodes if isinstance(n, Filtered)
                     for m in deep_walk(n.arg))  # fmt: skip
        under = any(isinstance(m, Filtered) for n in scans for m in deep_walk(n.arg))
        if (scans and filtered) or inside or under:
            alternative = "compute them in memory (`cb.lazy(frame)`)" if stream \
                else "run the job as a stream (`colbridge run`)"  # fmt: skip
            msg = (
                f"ordered operations over filtered rows are not supported in {where}{why}: "
                "a piece's halo would need rows the filter keeps. Filter after the ordered "
                f"operations, or {alternative}"
            )
            raise JobSpecError(msg)
        filtered = filtered or step.kind == "filter"


def _listed(scans: Sequence[Scan]) -> str:
    return ", ".join(f"`{n!r}`" for n in scans)


def keep_halo(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """The steps with the `HALO` column carried through every ``select``."""
    return tuple(
        Step(s.kind, (*s.items, (HALO, Column(HALO))), s.keys) if s.kind == "select" else s
        for s in steps
    )


def own_rows_only(aggs: Sequence[Agg]) -> list[Agg]:
    """Each reduction over the piece's own rows (its argument computed over the halos first).

    A reduction of one value (``lit(1).count()``) is that value's: not of its copies.
    """
    return [a if is_one_value(a.arg) else Agg(a.func, Filtered(a.arg, _OWN), a.ddof, a.options)
            for a in aggs]  # fmt: skip


def own_rows(table: pa.Table) -> pa.Table:
    """A piece's result without its halo rows, and without the `HALO` column."""
    own = table.filter(pc.equal(table.column(HALO), 1))
    return own.drop_columns([HALO])


def _marked(table: pa.Table, mark: int) -> pa.Table:
    return table.append_column(HALO, pa.array([mark] * table.num_rows, pa.int8()))


def _rows(tables: Sequence[pa.Table], schema: pa.Schema) -> pa.Table:
    return pa.concat_tables(tables) if tables else schema.empty_table()


def with_halos(batches: Iterable[pa.Table | pa.RecordBatch], before: int,
               after: int) -> Iterator[pa.Table]:  # fmt: skip
    """Each batch of ``batches`` with its halo rows around it, marked in the column `HALO`.

    The halos are the last ``before`` rows of the batches before it and the first
    ``after`` rows of those after it (as many batches as that takes): a batch is
    given out once ``after`` rows follow it, or the batches end. Empty batches are
    skipped; no rows at all give nothing.
    """
    tail: list[pa.Table] = []  # the last `before` rows given out as own rows
    waiting: list[pa.Table] = []  # batches read, not given out yet, in order
    schema: pa.Schema | None = None

    def ready(final: bool) -> Iterator[pa.Table]:
        nonlocal tail
        assert schema is not None
        while waiting and (final or sum(t.num_rows for t in waiting[1:]) >= after):
            own = waiting.pop(0)
            behind = _rows(tail, schema)
            ahead = _rows(waiting, schema).slice(0, after)
            behind = behind.slice(max(behind.num_rows - before, 0))
            parts = [_marked(behind, 0), _marked(own, 1), _marked(ahead, 2)]
            yield pa.concat_tables([p for p in parts if p.num_rows] or parts[1:2])
            joined = _rows([behind, own], schema)
            tail = [joined.slice(max(joined.num_rows - before, 0))]

    for batch in batches:
        if isinstance(batch, pa.RecordBatch):
            batch = pa.Table.from_batches([batch])
        if schema is None:
            schema = batch.schema
        if batch.num_rows:
            waiting.append(batch)
            yield from ready(final=False)
    if schema is not None:
        yield from ready(final=True)
