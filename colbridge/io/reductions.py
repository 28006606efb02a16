"""Jobs layer: whole-column reductions over data that arrives in pieces.

A plan whose expressions use reductions (``mean``, ``std``, ...) cannot run one
batch at a time as it stands: ``(a - a.mean()) / a.std()`` needs the mean of
the *whole* column. This module turns such a plan into one that can:

1. find the first step holding a reduction and take its innermost reductions
   (those whose argument holds no other reduction);
2. run the steps before it plus a ``select`` of *mergeable partials* of each
   reduction's argument (count, null count, sum, min, max, mean and M2) on
   every batch or partition, with the engine's own fused reduction kernels;
3. merge the partials (Chan's formula for mean and M2) into the value the
   reduction has over the whole data, typed as the engine types it;
4. substitute that value as a typed literal into the step and repeat, level
   by level, until no reduction is left.

The result is a list of reduction-free steps that gives, batch by batch, what
the original plan gives on the whole data. How batches are produced is the
caller's business (a Parquet scanner, Dask partitions): it passes a ``run``
callable that evaluates steps on every piece and returns the one-row results.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.expr.nodes import Agg, Cast, Literal, Node, transform, walk
from colbridge.plan.logical import Step
from colbridge.types import DType, dtype_from_arrow

__all__ = [
    "Partial",
    "RunPartials",
    "compute_aggregates",
    "has_aggregates",
    "merge_partials",
    "partial_items",
    "partials_from_row",
    "reduction_passes",
    "resolve_aggregates",
]

#: Evaluates the given steps on every batch/partition; returns the one-row
#: results as dicts, and the Arrow schema of those rows.
RunPartials = Callable[[tuple[Step, ...]], tuple[list[dict[str, Any]], pa.Schema]]


@dataclass(frozen=True)
class Partial:
    """Mergeable statistics of one expression over one piece of the data.

    ``mean`` and ``m2`` (the sum of squared deviations from the mean) are
    float64 and merge with Chan's parallel formula; ``sum`` keeps the
    expression's own type (Python ``int`` for integers, so merging is exact).
    """

    count: int = 0
    null_count: int = 0
    sum: Any = None
    min: Any = None
    max: Any = None
    mean: float | None = None
    m2: float | None = None


def _extreme(values: Iterable[Any], pick: Callable[[Any, Any], Any]) -> Any:
    """Min or max ignoring nulls, and NaN unless every value is NaN (polars' rule)."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    numbers = [v for v in present if not (isinstance(v, float) and math.isnan(v))]
    if not numbers:
        return math.nan
    out = numbers[0]
    for v in numbers[1:]:
        out = pick(out, v)
    return out


def merge_partials(a: Partial, b: Partial) -> Partial:
    """Combine the partials of two disjoint pieces into those of their union."""
    sums = [s for s in (a.sum, b.sum) if s is not None]
    total = sum(sums[1:], sums[0]) if sums else None
    mean: float | None
    m2: float | None
    n = a.count + b.count
    if a.count == 0:
        mean, m2 = b.mean, b.m2
    elif b.count == 0:
        mean, m2 = a.mean, a.m2
    elif a.mean is None or b.mean is None or a.m2 is None or b.m2 is None:
        mean, m2 = None, None
    else:
        delta = b.mean - a.mean
        mean = a.mean + delta * (b.count / n)
        m2 = a.m2 + b.m2 + delta * delta * (a.count * b.count / n)
    return Partial(
        count=n,
        null_count=a.null_count + b.null_count,
        sum=total,
        min=_extreme((a.min, b.min), min),
        max=_extreme((a.max, b.max), max),
        mean=mean,
        m2=m2,
    )


def _needs(funcs: set[str]) -> set[str]:
    need = {"n"}
    if "sum" in funcs:
        need.add("s")
    if "min" in funcs:
        need.add("mn")
    if "max" in funcs:
        need.add("mx")
    if funcs & {"mean", "var", "std"}:
        need |= {"m", "v"}
    if "null_count" in funcs:
        need.add("nc")
    return need


def partial_items(args: Sequence[Node], funcs: Sequence[set[str]]) -> list[tuple[str, Node]]:
    """``select`` items computing the partials of each argument (``p{i}_{stat}``)."""
    items: list[tuple[str, Node]] = []
    for i, (arg, fs) in enumerate(zip(args, funcs, strict=True)):
        need = _needs(fs)
        wide = Cast(arg, DType.FLOAT64)
        stats: dict[str, Node] = {
            "n": Agg("count", arg),
            "nc": Agg("null_count", arg),
            "s": Agg("sum", arg),
            "mn": Agg("min", arg),
            "mx": Agg("max", arg),
            "m": Agg("mean", wide),
            "v": Agg("var", wide, 0),
        }
        items += [(f"p{i}_{k}", node) for k, node in stats.items() if k in need]
    return items


def _py(value: Any) -> Any:
    if isinstance(value, (np.generic,)):
        return value.item()
    if isinstance(value, float) and math.isnan(value):
        return math.nan
    return value


def partials_from_row(row: Mapping[str, Any], i: int) -> Partial:
    """Read the `Partial` of argument ``i`` from one row of `partial_items` results."""
    n = int(row[f"p{i}_n"])
    mean = _py(row.get(f"p{i}_m"))
    var = _py(row.get(f"p{i}_v"))
    return Partial(
        count=n,
        null_count=int(row.get(f"p{i}_nc") or 0),
        sum=_py(row.get(f"p{i}_s")),
        min=_py(row.get(f"p{i}_mn")),
        max=_py(row.get(f"p{i}_mx")),
        mean=None if n == 0 or mean is None else float(mean),
        m2=None if n == 0 or var is None else float(var) * n,
    )


def _final(agg: Agg, p: Partial) -> Any:
    func = agg.func
    if func == "count":
        return p.count
    if func == "null_count":
        return p.null_count
    if func == "sum":
        return 0 if p.sum is None else p.sum
    if func == "min":
        return p.min
    if func == "max":
        return p.max
    if p.count == 0 or p.mean is None:
        return None
    if func == "mean":
        return p.mean
    if p.count - agg.ddof <= 0 or p.m2 is None:
        return None
    var = max(p.m2, 0.0) / (p.count - agg.ddof) if not math.isnan(p.m2) else math.nan
    return var if func == "var" else math.sqrt(var)


def _typed(value: Any, arrow_type: pa.DataType) -> Literal:
    dtype = dtype_from_arrow(arrow_type)
    if value is None:
        return Literal(None, dtype)
    if dtype is not None and dtype.is_integer:
        # Integer sums wrap like the engine's fixed-width arithmetic.
        value = int(np.array(int(value) % (1 << 64), dtype=np.uint64).astype(dtype.numpy))
    elif dtype is DType.BOOL:
        value = bool(value)
    elif isinstance(value, int) and not isinstance(value, bool) and dtype is not None:
        value = float(value)
    return Literal(value, dtype)


def _lookup(values: Mapping[Node, Node]) -> Callable[[Node], Node]:
    return lambda n: values.get(n, n)


def has_aggregates(steps: Iterable[Step]) -> bool:
    """Tell whether any step's expressions hold a reduction."""
    return any(isinstance(n, Agg) for s in steps for _, e in s.items for n in walk(e))


def _innermost(step: Step) -> list[Agg]:
    found: list[Agg] = []
    for _, expr in step.items:
        for n in walk(expr):
            if (
                isinstance(n, Agg)
                and n not in found
                and not any(isinstance(m, Agg) for m in walk(n.arg))
            ):
                found.append(n)
    return found


def compute_aggregates(
    prefix: tuple[Step, ...], aggs: Sequence[Agg], run: RunPartials
) -> dict[Agg, Literal]:
    """Values of reductions without nested reductions, over the data ``prefix`` produces.

    One pass: ``run`` evaluates ``prefix`` plus a ``select`` of partials on every
    piece; the partials are merged and each value is typed as the engine types it.
    """
    args: list[Node] = []
    funcs: list[set[str]] = []
    for agg in aggs:
        if agg.arg not in args:
            args.append(agg.arg)
            funcs.append(set())
        funcs[args.index(agg.arg)].add(agg.func)
    items = partial_items(args, funcs)
    exact = [(f"r{q}", agg) for q, agg in enumerate(aggs)]
    rows, schema = run((*prefix, Step("select", (*items, *exact))))
    out: dict[Agg, Literal] = {}
    for q, agg in enumerate(aggs):
        arrow_type = schema.field(f"r{q}").type
        if len(rows) == 1:
            out[agg] = _typed(_py(rows[0][f"r{q}"]), arrow_type)
            continue
        i = args.index(agg.arg)
        merged = Partial()
        for row in rows:
            merged = merge_partials(merged, partials_from_row(row, i))
        out[agg] = _typed(_final(agg, merged), arrow_type)
    return out


def resolve_aggregates(steps: Sequence[Step], run: RunPartials) -> tuple[tuple[Step, ...], int]:
    """Replace every reduction by its whole-data value; returns the new steps and the passes run.

    Reductions are resolved step by step and, inside a step, level by level
    (innermost first), each level taking one pass over the data through ``run``.
    """
    resolved = list(steps)
    passes = 0
    while True:
        k = next((j for j, s in enumerate(resolved) if has_aggregates([s])), None)
        if k is None:
            return tuple(resolved), passes
        step = resolved[k]
        found = compute_aggregates(tuple(resolved[:k]), _innermost(step), run)
        values: dict[Node, Node] = dict(found.items())
        passes += 1
        memo: dict[Node, Node] = {}
        items = tuple((name, transform(expr, _lookup(values), memo)) for name, expr in step.items)
        resolved[k] = Step(step.kind, items)


def reduction_passes(steps: Sequence[Step]) -> int:
    """How many statistics passes `resolve_aggregates` will take (nothing is run)."""
    resolved = list(steps)
    passes = 0
    while True:
        k = next((j for j, s in enumerate(resolved) if has_aggregates([s])), None)
        if k is None:
            return passes
        values: dict[Node, Node] = {a: Literal(0.0) for a in _innermost(resolved[k])}
        passes += 1
        memo: dict[Node, Node] = {}
        step = resolved[k]
        items = tuple((name, transform(expr, _lookup(values), memo)) for name, expr in step.items)
        resolved[k] = Step(step.kind, items)
