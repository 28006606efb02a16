"""Jobs layer: running one colbridge plan on a Dask DataFrame, partition by partition.

`apply` takes the steps of a `LazyFrame` (built once, on any sample frame) and
runs them on every partition with ``map_partitions``. Whole-column reductions
(``mean``, ``std``, ...) are first resolved as Dask reductions: each partition
computes its partial rows with the engine's fused reduction kernels, a tree
reduction folds them with the engine's own folding, and the values go into the
plan as typed literals, so the result equals a single-process run. Windows
(``over``) and ``group_by`` are resolved from per-partition group tables merged
by key (`colbridge.io.grouped`).

Multi-GPU: with dask-cuda (``LocalCUDACluster``, one worker per GPU) the same
call runs each partition with ``device="cuda"``; see ``docs/jobs.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from colbridge.errors import JobSpecError
from colbridge.expr.nodes import Agg, Literal
from colbridge.io.grouped import Lookup, attach, looked_up, resolve_group_by, resolve_windows
from colbridge.io.steps import steps_of
from colbridge.plan.logical import Step
from colbridge.plan.streaming import refuse_ordered, resolve_aggregates
from colbridge.runtime.execute import Partials, prepare
from colbridge.runtime.pieces import compute_piece, piece_partials

__all__ = ["apply", "resolve"]


def _with_lookups(pdf: pd.DataFrame, lookups: Sequence[Lookup]) -> pd.DataFrame:
    """The partition with the looked-up per-group columns of windows (`colbridge.io.grouped`)."""
    if not lookups:
        return pdf
    table = pa.Table.from_pandas(pdf, preserve_index=False)
    added = looked_up(table, lookups)
    return pdf.assign(**{
        name: pd.Series(pd.arrays.ArrowExtensionArray(column), index=pdf.index)
        for name, column in added.items()
    })  # fmt: skip


def _run_partition(
    pdf: pd.DataFrame, steps: tuple[Step, ...], device: str, lookups: Sequence[Lookup] = ()
) -> pd.DataFrame:
    piece = _with_lookups(pdf, lookups)
    return compute_piece(prepare(steps, piece.columns), piece, device)  # type: ignore[no-any-return]


def _chunk(pdf: pd.DataFrame, prefix: tuple[Step, ...], aggs: list[Agg], device: str,
           lookups: Sequence[Lookup] = ()) -> pd.DataFrame:  # fmt: skip
    partials = piece_partials(prefix, aggs, _with_lookups(pdf, lookups), device)
    return pd.DataFrame({"state": pd.Series([partials], dtype=object)})


def _combine(frame: pd.DataFrame) -> pd.DataFrame:
    states: list[Partials] = list(frame["state"])
    total = states[0]
    for state in states[1:]:
        total = total.fold(state)
    return pd.DataFrame({"state": pd.Series([total], dtype=object)})


def _tables(pdf: pd.DataFrame, steps: tuple[Step, ...], device: str,
            lookups: Sequence[Lookup]) -> pa.Table:  # fmt: skip
    table = attach(pa.Table.from_pandas(pdf, preserve_index=False), lookups)
    return compute_piece(prepare(steps, table.column_names), table, device)


def _resolve(
    lazyframe_or_steps: Any, ddf: Any, device: str
) -> tuple[tuple[Step, ...], list[Lookup], pa.Table | None]:
    """The plan with windows looked up and reductions resolved; a grouped result, if any."""
    from dask.base import compute
    from dask.delayed import delayed

    steps = steps_of(lazyframe_or_steps)
    refuse_ordered(steps, "a Dask plan (partitions are computed one at a time)")
    state_meta = pd.DataFrame({"state": pd.Series([], dtype=object)})

    def run_tables(prefix: tuple[Step, ...], found: Sequence[Lookup]) -> list[pa.Table]:
        # one small table per partition (a row per group in it), in partition order
        parts = [delayed(_tables)(part, prefix, device, list(found))
                 for part in ddf.to_delayed()]  # fmt: skip
        return list(compute(*parts))  # type: ignore[no-untyped-call]

    steps, lookups, _ = resolve_windows(steps, list(ddf.columns), run_tables)
    upto = next((j for j, s in enumerate(steps) if s.kind == "group_by"), len(steps))

    def reduce(prefix: tuple[Step, ...], aggs: list[Agg]) -> dict[Agg, Literal]:
        reduced = ddf.reduction(
            chunk=_chunk,
            aggregate=_combine,
            combine=_combine,
            meta=state_meta,
            chunk_kwargs={"prefix": prefix, "aggs": aggs, "device": device,
                          "lookups": lookups},
        ).compute()  # fmt: skip
        total: Partials = reduced["state"].iloc[0]
        return total.values()

    resolved, _ = resolve_aggregates(steps[:upto], reduce)
    if upto == len(steps):
        return resolved, lookups, None
    table, rest, _ = resolve_group_by((*resolved, *steps[upto:]), run_tables, lookups)
    return rest, lookups, table


def resolve(lazyframe_or_steps: Any, ddf: Any, *, device: str = "cpu") -> tuple[Step, ...]:
    """Return the plan's steps with every reduction replaced by its value over all of ``ddf``.

    Each reduction level is one Dask tree reduction over the partitions: every
    partition gives its folded partial rows (`colbridge.runtime.Partials`), partials
    fold pairwise up the tree, and the top one is finished as a single compute would.
    Plans with windows or ``group_by`` need more than steps: use `apply`.
    """
    resolved, lookups, table = _resolve(lazyframe_or_steps, ddf, device)
    if lookups or table is not None:
        msg = (
            "this plan has windows (`over`) or a `group_by`, whose per-group statistics "
            "are columns, not literals; run it with `colbridge.dask.apply`"
        )
        raise JobSpecError(msg)
    return resolved


def apply(lazyframe_or_steps: Any, ddf: Any, *, device: str = "cpu") -> Any:
    """Run a colbridge plan on every partition of a ``dask.dataframe.DataFrame``.

    Parameters
    ----------
    lazyframe_or_steps : LazyFrame or sequence of steps
        The plan, e.g. ``cb.lazy(sample).with_columns(z=(cb.col("a") - cb.col("a").mean()))``;
        only its steps are used, not its frame.
    ddf : dask.dataframe.DataFrame
        The data; partitions are pandas frames.
    device : {"cpu", "cuda", "auto"}
        Where each partition's kernels run (on the worker).

    Returns
    -------
    dask.dataframe.DataFrame
        Lazy; reductions in the plan were already computed over all partitions.
    """
    steps, lookups, groups = _resolve(lazyframe_or_steps, ddf, device)
    if groups is not None:
        # a row per group: merged from the partitions' group tables, small, in memory
        import dask.dataframe as dd

        result = compute_piece(prepare(steps, groups.column_names), groups, device)
        frame = result.to_pandas(types_mapper=pd.ArrowDtype)
        return dd.from_pandas(frame, npartitions=1)  # type: ignore[no-untyped-call]
    meta = _run_partition(ddf._meta, steps, "cpu", lookups)
    return ddf.map_partitions(_run_partition, steps, device, lookups, meta=meta)
