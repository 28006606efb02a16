"""Jobs layer: running one colbridge plan on a Dask DataFrame, partition by partition.

`apply` takes the steps of a `LazyFrame` (built once, on any sample frame) and
runs them on every partition with ``map_partitions``. Whole-column reductions
(``mean``, ``std``, ...) are first resolved as Dask reductions: each partition
computes its partial rows with the engine's fused reduction kernels, a tree
reduction folds them with the engine's own folding, and the values go into the
plan as typed literals, so the result equals a single-process run.

Multi-GPU: with dask-cuda (``LocalCUDACluster``, one worker per GPU) the same
call runs each partition with ``device="cuda"``; see ``docs/jobs.md``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from colbridge.expr.nodes import Agg, Literal
from colbridge.io.steps import steps_of
from colbridge.plan.logical import Step
from colbridge.plan.streaming import resolve_aggregates
from colbridge.runtime.execute import Partials, prepare
from colbridge.runtime.pieces import compute_piece, piece_partials

__all__ = ["apply", "resolve"]


def _run_partition(pdf: pd.DataFrame, steps: tuple[Step, ...], device: str) -> pd.DataFrame:
    return compute_piece(prepare(steps, pdf.columns), pdf, device)  # type: ignore[no-any-return]


def _chunk(pdf: pd.DataFrame, prefix: tuple[Step, ...], aggs: list[Agg],
           device: str) -> pd.DataFrame:  # fmt: skip
    partials = piece_partials(prefix, aggs, pdf, device)
    return pd.DataFrame({"state": pd.Series([partials], dtype=object)})


def _combine(frame: pd.DataFrame) -> pd.DataFrame:
    states: list[Partials] = list(frame["state"])
    total = states[0]
    for state in states[1:]:
        total = total.fold(state)
    return pd.DataFrame({"state": pd.Series([total], dtype=object)})


def resolve(lazyframe_or_steps: Any, ddf: Any, *, device: str = "cpu") -> tuple[Step, ...]:
    """Return the plan's steps with every reduction replaced by its value over all of ``ddf``.

    Each reduction level is one Dask tree reduction over the partitions: every
    partition gives its folded partial rows (`colbridge.runtime.Partials`), partials
    fold pairwise up the tree, and the top one is finished as a single compute would.
    """
    steps = steps_of(lazyframe_or_steps)
    state_meta = pd.DataFrame({"state": pd.Series([], dtype=object)})

    def reduce(prefix: tuple[Step, ...], aggs: list[Agg]) -> dict[Agg, Literal]:
        reduced = ddf.reduction(
            chunk=_chunk,
            aggregate=_combine,
            combine=_combine,
            meta=state_meta,
            chunk_kwargs={"prefix": prefix, "aggs": aggs, "device": device},
        ).compute()
        total: Partials = reduced["state"].iloc[0]
        return total.values()

    resolved, _ = resolve_aggregates(steps, reduce)
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
    steps = resolve(lazyframe_or_steps, ddf, device=device)
    meta = _run_partition(ddf._meta, steps, "cpu")
    return ddf.map_partitions(_run_partition, steps, device, meta=meta)
