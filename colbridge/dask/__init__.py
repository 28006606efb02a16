"""Jobs layer: running one colbridge plan on a Dask DataFrame, partition by partition.

`apply` takes the steps of a `LazyFrame` (built once, on any sample frame) and
runs them on every partition with ``map_partitions``. Whole-column reductions
(``mean``, ``std``, ...) are first resolved as Dask reductions: each partition
computes mergeable partials with the engine's fused kernels, a tree reduction
merges them (Chan's formula for mean and variance), and the values go into the
plan as typed literals, so the result equals a single-process run.

Multi-GPU: with dask-cuda (``LocalCUDACluster``, one worker per GPU) the same
call runs each partition with ``device="cuda"``; see ``docs/jobs.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from colbridge.io.grouped import (
    Lookup,
    attach,
    looked_up,
    resolve_group_by,
    resolve_windows,
)
from colbridge.io.reductions import (
    Partial,
    merge_partials,
    partials_from_row,
    resolve_aggregates,
)
from colbridge.io.steps import JobSpecError, steps_of
from colbridge.lazy import LazyFrame
from colbridge.plan.logical import Step

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
    return LazyFrame(_with_lookups(pdf, lookups), steps).compute(device)  # type: ignore[no-any-return]


def _chunk(
    pdf: pd.DataFrame,
    steps: tuple[Step, ...],
    n_args: int,
    device: str,
    lookups: Sequence[Lookup] = (),
) -> pd.DataFrame:
    table = attach(pa.Table.from_pandas(pdf, preserve_index=False), lookups)
    row = LazyFrame(table, steps).compute(device).to_pylist()[0]
    parts = [partials_from_row(row, i) for i in range(n_args)]
    exact = {k: v for k, v in row.items() if k.startswith("r")}
    return pd.DataFrame({"state": pd.Series([(parts, exact, 1)], dtype=object)})


def _combine(frame: pd.DataFrame) -> pd.DataFrame:
    states = list(frame["state"])
    merged: list[Partial] | None = None
    exact: dict[str, Any] = {}
    count = 0
    for parts, ex, n in states:
        merged = (
            parts
            if merged is None
            else [merge_partials(a, b) for a, b in zip(merged, parts, strict=True)]
        )
        exact = ex
        count += n
    return pd.DataFrame({"state": pd.Series([(merged or [], exact, count)], dtype=object)})


def _tables(pdf: pd.DataFrame, steps: tuple[Step, ...], device: str,
            lookups: Sequence[Lookup]) -> pa.Table:  # fmt: skip
    table = attach(pa.Table.from_pandas(pdf, preserve_index=False), lookups)
    return LazyFrame(table, steps).compute(device)


def _resolve(
    lazyframe_or_steps: Any, ddf: Any, device: str
) -> tuple[tuple[Step, ...], list[Lookup], pa.Table | None]:
    """The plan with windows looked up and reductions resolved; a grouped result, if any."""
    from dask.base import compute
    from dask.delayed import delayed

    steps = steps_of(lazyframe_or_steps)
    meta_table = pa.Table.from_pandas(ddf._meta, preserve_index=False)
    state_meta = pd.DataFrame({"state": pd.Series([], dtype=object)})

    def run_tables(prefix: tuple[Step, ...], found: Sequence[Lookup]) -> list[pa.Table]:
        # one small table per partition (a row per group in it), in partition order
        parts = [delayed(_tables)(part, prefix, device, list(found))
                 for part in ddf.to_delayed()]  # fmt: skip
        return list(compute(*parts))  # type: ignore[no-untyped-call]

    steps, lookups, _ = resolve_windows(steps, list(ddf.columns), run_tables)
    upto = next((j for j, s in enumerate(steps) if s.kind == "group_by"), len(steps))

    def run(prefix: tuple[Step, ...]) -> tuple[list[dict[str, Any]], pa.Schema]:
        select = prefix[-1]
        n_args = len({name.split("_")[0] for name, _ in select.items if name.startswith("p")})
        schema = LazyFrame(attach(meta_table, lookups), prefix).compute("cpu").schema
        reduced = ddf.reduction(
            chunk=_chunk,
            aggregate=_combine,
            combine=_combine,
            meta=state_meta,
            chunk_kwargs={"steps": prefix, "n_args": n_args, "device": device,
                          "lookups": lookups},
        ).compute()  # fmt: skip
        parts, exact, count = reduced["state"].iloc[0]
        if count == 1:  # one partition: its exact values are the whole-data values
            return [exact], schema
        row: dict[str, Any] = {}
        for i, p in enumerate(parts):
            row.update(
                {
                    f"p{i}_n": p.count, f"p{i}_nc": p.null_count, f"p{i}_s": p.sum,
                    f"p{i}_mn": p.min, f"p{i}_mx": p.max, f"p{i}_m": p.mean,
                    f"p{i}_v": None if p.m2 is None or p.count == 0 else p.m2 / p.count,
                }
            )  # fmt: skip
        # compute_aggregates merges rows; pairing the merged row with an empty
        # one keeps its typed path without changing the values.
        empty: dict[str, Any] = {}
        for i in range(len(parts)):
            empty.update({f"p{i}_n": 0, f"p{i}_nc": 0})
        return [row, empty], schema

    resolved, _ = resolve_aggregates(steps[:upto], run)
    if upto == len(steps):
        return resolved, lookups, None
    table, rest, _ = resolve_group_by((*resolved, *steps[upto:]), run_tables, lookups)
    return rest, lookups, table


def resolve(lazyframe_or_steps: Any, ddf: Any, *, device: str = "cpu") -> tuple[Step, ...]:
    """Return the plan's steps with every reduction replaced by its value over all of ``ddf``.

    Each reduction level is one Dask tree reduction over the partitions. Plans with
    windows or ``group_by`` need more than steps: use `apply`.
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

        result = LazyFrame(groups, steps).compute(device).to_pandas(types_mapper=pd.ArrowDtype)
        return dd.from_pandas(result, npartitions=1)  # type: ignore[no-untyped-call]
    meta = LazyFrame(_with_lookups(ddf._meta, lookups), steps).compute("cpu")
    return ddf.map_partitions(_run_partition, steps, device, lookups, meta=meta)
