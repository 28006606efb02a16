"""Jobs layer: running one colbridge plan on a Dask DataFrame, partition by partition.

`apply` takes the steps of a `LazyFrame` (built once, on any sample frame) and
runs them on every partition with ``map_partitions``. Whole-column reductions
(``mean``, ``std``, ...) are first resolved as Dask reductions: each partition
computes its partial rows with the engine's fused reduction kernels, a tree
reduction folds them with the engine's own folding, and the values go into the
plan as typed literals, so the result equals a single-process run. Windows
(``over``) and ``group_by`` are resolved from per-partition group tables merged
by key (`colbridge.io.grouped`).

Ordered operations that read a bounded number of rows around each row (``shift``,
``diff``, ``pct_change``, ``rolling_*`` windows, fills with a ``limit``) run with
partition halos, as ``map_overlap`` does: each partition is computed together with
the last rows of the partitions before it and the first rows of those after it, and
only its own rows are kept. Unbounded ones (cumulative, ``ewm_mean``, fills without a
limit) and ordered work per key are refused with an error naming the alternatives.

Multi-GPU: with dask-cuda (``LocalCUDACluster``, one worker per GPU) the same
call runs each partition with ``device="cuda"``; see ``docs/jobs.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from colbridge.errors import JobSpecError
from colbridge.expr.nodes import (
    Agg,
    Node,
    Over,
    deep_walk,
    method_name,
)
from colbridge.io.grouped import (
    UNMERGEABLE_PER_GROUP,
    Lookup,
    attach,
    looked_up,
    resolve_group_by,
    resolve_windows,
    unmergeable_reason,
)
from colbridge.io.halos import HALO, halo_sizes, keep_halo, own_rows_only
from colbridge.io.steps import is_aggregating, steps_of
from colbridge.plan.logical import Step
from colbridge.plan.planner import unknown_column
from colbridge.plan.streaming import (
    one_row_steps,
    ordered_operations,
    refuse_inferred_formats,
    refuse_row_orders,
    resolve_aggregates,
)
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


# -- partition halos for ordered operations (`colbridge.io.halos`) --------------------

_WHERE = "a Dask plan (partitions are computed apart)"


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """``pd.concat`` keeping categorical columns categorical.

    Partitions read from several files carry categories of their own; pandas joins
    categoricals of different categories as strings (objects), which the partition's
    meta does not describe. Their categories are joined first (in order of appearance).
    """
    if len(frames) > 1:
        for name in frames[0].columns:
            dtypes = [f[name].dtype for f in frames]
            if all(isinstance(d, pd.CategoricalDtype) for d in dtypes) \
                    and any(d != dtypes[0] for d in dtypes):  # fmt: skip
                values = np.concatenate([np.asarray(d.categories) for d in dtypes])
                joined = pd.CategoricalDtype(pd.unique(values), ordered=dtypes[0].ordered)
                frames = [f.assign(**{name: f[name].astype(joined)}) for f in frames]
    return pd.concat(frames)


def _tail(before: pd.DataFrame | None, part: pd.DataFrame, rows: int) -> pd.DataFrame:
    joined = part if before is None else _concat([before, part])
    return joined.iloc[max(len(joined) - rows, 0):]


def _head(part: pd.DataFrame, after: pd.DataFrame | None, rows: int) -> pd.DataFrame:
    joined = part if after is None else _concat([part, after])
    return joined.iloc[:rows]


def _with_halo(before: pd.DataFrame | None, part: pd.DataFrame,
               after: pd.DataFrame | None) -> pd.DataFrame:  # fmt: skip
    pieces = []
    for frame, mark in ((before, 0), (part, 1), (after, 2)):
        if frame is not None and len(frame):
            pieces.append(frame.assign(**{HALO: np.full(len(frame), mark, np.int8)}))
    if not pieces:  # an empty partition with no neighbours
        return part.assign(**{HALO: np.zeros(0, np.int8)})
    return _concat(pieces)


def with_halos(ddf: Any, before: int, after: int) -> Any:
    """``ddf`` with each partition's halo rows added, marked in the column ``HALO``.

    A halo is taken from as many neighbouring partitions as it needs (partitions
    shorter than the halo are passed through), by a chain of small tasks.
    """
    import dask.dataframe as dd
    from dask.dataframe.utils import clear_known_categories
    from dask.delayed import delayed

    parts = ddf.to_delayed()
    befores: list[Any] = [None] * len(parts)
    afters: list[Any] = [None] * len(parts)
    carry: Any = None
    for i, part in enumerate(parts):
        befores[i] = carry
        carry = delayed(_tail)(carry, part, before) if before else None
    carry = None
    for i in range(len(parts) - 1, -1, -1):
        afters[i] = carry
        carry = delayed(_head)(parts[i], carry, after) if after else None
    meta = ddf._meta.assign(**{HALO: np.zeros(0, np.int8)})
    halo_parts = [delayed(_with_halo)(b, p, a) for b, p, a in zip(befores, parts, afters,
                                                                  strict=True)]  # fmt: skip
    # categories differ by partition (one file's each): the meta's are left unknown
    meta = clear_known_categories(meta)  # type: ignore[no-untyped-call]
    return dd.from_delayed(halo_parts, meta=meta, divisions=ddf.divisions)


def _own_rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[np.asarray(frame[HALO] == 1)].drop(columns=[HALO])


def _run_halo_partition(pdf: pd.DataFrame, steps: tuple[Step, ...], device: str) -> pd.DataFrame:
    return _own_rows(_run_partition(pdf, steps, device))


def _resolve(
    lazyframe_or_steps: Any, ddf: Any, device: str
) -> tuple[tuple[Step, ...], list[Lookup], pa.Table | None]:
    """The plan with windows looked up and reductions resolved; a grouped result, if any."""
    from dask.base import compute
    from dask.delayed import delayed

    steps = steps_of(lazyframe_or_steps)
    halo = HALO in ddf.columns
    state_meta = pd.DataFrame({"state": pd.Series([], dtype=object)})

    def run_tables(prefix: tuple[Step, ...], found: Sequence[Lookup]) -> list[pa.Table]:
        # one small table per partition (a row per group in it), in partition order
        parts = [delayed(_tables)(part, prefix, device, list(found))
                 for part in ddf.to_delayed()]  # fmt: skip
        return list(compute(*parts))  # type: ignore[no-untyped-call]

    def reduce(prefix: tuple[Step, ...], aggs: list[Agg],
               lookups: Sequence[Lookup]) -> dict[Agg, Node]:  # fmt: skip
        # with halos, each reduction reads its partition's own rows only (its argument,
        # ordered operations included, is computed over the halos first)
        # (a reduction of one value, `lit(1).count()`, is that value's: not of its copies)
        folded = own_rows_only(aggs) if halo else aggs
        reduced = ddf.reduction(
            chunk=_chunk,
            aggregate=_combine,
            combine=_combine,
            meta=state_meta,
            chunk_kwargs={"prefix": prefix, "aggs": folded, "device": device,
                          "lookups": lookups},
        ).compute()  # fmt: skip
        total: Partials = reduced["state"].iloc[0]
        values = total.values()
        return {agg: values[f] for agg, f in zip(aggs, folded, strict=True)}

    steps, lookups, _ = resolve_windows(steps, list(ddf.columns), run_tables, reduce)
    upto = next((j for j, s in enumerate(steps) if s.kind == "group_by"), len(steps))
    resolved, _ = resolve_aggregates(steps[:upto],
                                     lambda prefix, aggs: reduce(prefix, aggs, lookups))
    if upto == len(steps):
        return resolved, lookups, None
    table, rest, _ = resolve_group_by((*resolved, *steps[upto:]), run_tables, lookups)
    return rest, lookups, table


def _refuse_unmergeable(steps: Sequence[Step]) -> None:
    """Refuse a reduction per group (``group_by``, ``over``) no merge of partitions can make.

    Said here, for Dask, before the group statistics refuse it in their own words.
    """
    for step in steps:
        for _, expr in step.items:
            nodes = deep_walk(expr) if step.kind == "group_by" else \
                (m for n in deep_walk(expr) if isinstance(n, Over) for m in deep_walk(n.arg))
            for n in nodes:
                if isinstance(n, Agg) and n.func in UNMERGEABLE_PER_GROUP:
                    msg = (
                        f"`{n!r}`: `{method_name(n)}` per group cannot be merged from the "
                        f"partitions of a Dask DataFrame ({unmergeable_reason(n.func)}). "
                        "Shuffle the frame by the key first (`ddf.shuffle(key)`, each group's "
                        "rows then in one partition) and compute each partition with `cb.lazy` "
                        "(`ddf.map_partitions`), or compute it in memory "
                        "(`cb.lazy(ddf.compute())`)"
                    )
                    raise JobSpecError(msg)


def _check_dask_frame(ddf: Any) -> None:
    """Refuse, by its type, a frame that is not a Dask DataFrame (it failed deep inside)."""
    import dask.dataframe as dd

    if not isinstance(ddf, dd.DataFrame):
        msg = (
            f"`colbridge.dask` computes a Dask DataFrame, got {type(ddf).__module__}."
            f"{type(ddf).__name__}; compute an in-memory frame with `cb.lazy(frame)`, or "
            "make it a Dask one first (`dd.from_pandas(frame, npartitions=...)`)"
        )
        raise TypeError(msg)


def resolve(lazyframe_or_steps: Any, ddf: Any, *, device: str = "cpu") -> tuple[Step, ...]:
    """Return the plan's steps with every reduction replaced by its value over all of ``ddf``.

    Each reduction level is one Dask tree reduction over the partitions: every
    partition gives its folded partial rows (`colbridge.runtime.Partials`), partials
    fold pairwise up the tree, and the top one is finished as a single compute would.
    Plans with windows or ``group_by`` need more than steps: use `apply`.
    """
    _check_dask_frame(ddf)
    _refuse_unmergeable(steps_of(lazyframe_or_steps))
    if ordered_operations(steps_of(lazyframe_or_steps)):
        msg = (
            "this plan has ordered operations, which run over partitions with halos; "
            "run it with `colbridge.dask.apply`"
        )
        raise JobSpecError(msg)
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
    _check_dask_frame(ddf)
    steps = steps_of(lazyframe_or_steps)
    refuse_row_orders(steps, _WHERE)
    refuse_inferred_formats(steps, _WHERE)
    _refuse_unmergeable(steps)
    aggregating = is_aggregating(steps)
    before, after = halo_sizes(steps, _WHERE)
    ordered = bool(ordered_operations(steps))
    if ordered:
        # a missing column is named before the halo column joins the partitions, so the
        # columns the message lists are the frame's own
        missing = unknown_column(steps, list(ddf.columns))
        if missing is not None:
            raise missing
        ddf = with_halos(ddf, before, after)
        if not aggregating:  # one row of values: no rows to tell apart
            steps = keep_halo(steps)
    steps, lookups, groups = _resolve(steps, ddf, device)
    if aggregating and groups is None:
        # every reduction is a value now: one row, computed once (not once per partition)
        import dask.dataframe as dd

        empty = ddf._meta.drop(columns=[HALO]) if ordered else ddf._meta
        row = _run_partition(empty, one_row_steps(steps), "cpu", lookups)
        return dd.from_pandas(row, npartitions=1)  # type: ignore[no-untyped-call]
    if groups is not None:
        # a row per group: merged from the partitions' group tables, small, in memory
        import dask.dataframe as dd

        result = compute_piece(prepare(steps, groups.column_names), groups, device)
        frame = result.to_pandas(types_mapper=pd.ArrowDtype)
        return dd.from_pandas(frame, npartitions=1)  # type: ignore[no-untyped-call]
    if ordered:
        meta = _run_halo_partition(ddf._meta, steps, "cpu")
        return ddf.map_partitions(_run_halo_partition, steps, device, meta=meta)
    meta = _run_partition(ddf._meta, steps, "cpu", lookups)
    return ddf.map_partitions(_run_partition, steps, device, lookups, meta=meta)
