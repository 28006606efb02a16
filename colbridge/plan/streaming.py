"""Planning: plans over data that arrives in pieces (record batches, Dask partitions).

A plan whose expressions use reductions (``mean``, ``std``, ...) cannot run one
piece at a time as it stands: ``(a - a.mean()) / a.std()`` needs the mean of the
*whole* column. `resolve_aggregates` turns it into one that can:

1. find the first step holding a reduction and take its innermost reductions
   (those whose argument holds no other reduction);
2. ask ``reduce`` for their values over the whole data, given the steps before
   that one (the caller folds per-piece partials: `colbridge.runtime.Partials`);
3. substitute the values as typed literals into the step, and repeat, level by
   level, until no reduction is left.

The result is a list of reduction-free steps that gives, piece by piece, what the
original plan gives on the whole data. Pure planning: nothing runs here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from colbridge.expr.nodes import (
    DISTINCT_FLAGS,
    FOLDED_HOST_AGGS,
    GROUPED_ONLY_FUNCS,
    HOST_SCANS,
    Agg,
    Function,
    GroupAgg,
    Literal,
    Node,
    Over,
    Scan,
    children,
    deep_walk,
    transform,
    walk,
)
from colbridge.plan.logical import Step
from colbridge.plan.typecheck import is_scalar

__all__ = [
    "Reduce",
    "has_aggregates",
    "innermost_aggregates",
    "one_row_steps",
    "ordered_operations",
    "reach",
    "reduction_passes",
    "refuse_inferred_formats",
    "refuse_ordered",
    "refuse_row_orders",
    "refuse_unmergeable",
    "resolve_aggregates",
]

#: Values of reductions (holding no reduction inside) over the whole data that the
#: given prefix of steps makes of it.
Reduce = Callable[[tuple[Step, ...], list[Agg]], dict[Agg, Node]]


def has_aggregates(steps: Iterable[Step]) -> bool:
    """Tell whether any step's expressions hold a reduction."""
    return any(isinstance(n, Agg) for s in steps for _, e in s.items for n in walk(e))


def _distinct_nodes(steps: Iterable[Step]) -> list[Node]:
    """Every node of the steps' expressions and keys, each once, in the order first met."""
    found: dict[Node, None] = {}  # (a dict keeps them in order)
    for step in steps:
        exprs = [e for _, e in step.items] + [k for _, k in step.keys]
        found.update((n, None) for e in exprs for n in deep_walk(e))
    return list(found)


def ordered_operations(steps: Iterable[Step]) -> list[Scan]:
    """The ordered operations (shift, cumulative, rolling, ewm, fills) the steps use."""
    return [n for n in _distinct_nodes(steps) if isinstance(n, Scan)]


#: string parsing that infers its format from the column's first value when none is given
_INFERRING = frozenset({"str.to_date", "str.to_datetime"})


def refuse_inferred_formats(steps: Iterable[Step], where: str) -> None:
    """Raise `JobSpecError` naming string parses without a format, which ``where`` cannot run.

    polars infers the format from the first value of the whole column that one of its
    patterns reads; each batch or partition would infer its own.
    """
    found = [n for n in _distinct_nodes(steps)
             if isinstance(n, Function) and n.name in _INFERRING and n.options[0] is None]
    if not found:
        return
    from colbridge.errors import JobSpecError

    msg = (
        f"{', '.join(f'`{n!r}`' for n in found)}: without a format, polars infers one from "
        f"the first value of the whole column, which {where} does not hold at once (each "
        "piece would infer its own); give the format, e.g. `str.to_date(\"%Y-%m-%d\")` or "
        "`str.to_datetime(\"%Y-%m-%d %H:%M:%S\")`"
    )
    raise JobSpecError(msg)


def refuse_row_orders(steps: Iterable[Step], where: str) -> None:
    """Raise `JobSpecError` naming windows ``over(..., order_by=...)``, which ``where`` cannot run.

    Putting a group's rows in another order than the frame's needs all of them at once;
    batches and partitions hold some.
    """
    found: list[Over] = []
    for step in steps:
        for n in (n for _, e in step.items for n in deep_walk(e)):
            if isinstance(n, Over) and n.order_by and n not in found:
                found.append(n)
    if not found:
        return
    from colbridge.errors import JobSpecError

    msg = (
        f"{', '.join(f'`{n!r}`' for n in found)}: `over(order_by=...)` puts every row of a "
        f"group in order at once, which {where} cannot (it holds some of the rows at a "
        "time); sort the data by the order first and drop `order_by` (the rows are then "
        "in that order), or compute it in memory over a whole frame (`cb.lazy(frame)` of "
        "a DataFrame: `lf.collect()`, `pl.read_parquet(...)`)"
    )
    raise JobSpecError(msg)


def reach(scan: Scan) -> tuple[int, int] | None:
    """Rows before and after a row that ``scan`` reads, or None when unbounded."""
    func, options = scan.func, scan.options
    if func in ("shift", "diff", "pct_change", "shift_in_range"):
        n = int(options[0])
        return (n, 0) if n >= 0 else (0, -n)
    if func.startswith("rolling_") and not func.endswith("_by"):  # `_by`: no row bound
        width = int(options[0]) - 1
        return (width, width) if options[2] else (width, 0)  # centred: either side, at most
    if func in ("forward_fill", "backward_fill") and options[0] is not None:
        limit = int(options[0])
        return (limit, 0) if func == "forward_fill" else (0, limit)
    return None


def refuse_ordered(steps: Iterable[Step], where: str, *, look_ahead_only: bool = False) -> None:
    """Raise `JobSpecError` naming the steps' ordered operations that ``where`` cannot run.

    A stream carries an ordered operation from batch to batch, and computes one that
    reads a bounded number of rows after each row with halos (`colbridge.io.halos`);
    with ``look_ahead_only`` the others that look ahead are refused. Partitions
    computed apart carry none.
    """
    found = [n for n in ordered_operations(steps)
             if (n.looks_ahead and reach(n) is None) or not look_ahead_only]  # fmt: skip
    if not found:
        return
    from colbridge.errors import JobSpecError

    listed = ", ".join(f"`{n!r}`" for n in found)
    if look_ahead_only:
        # a rank or an interpolation reads rows both ways: reversing the data does not help
        reverse = "" if any(n.func in HOST_SCANS for n in found) \
            else ", or reverse the data and use the forward form"  # fmt: skip
        if all(n.func in DISTINCT_FLAGS for n in found):  # the values seen, not rows ahead
            msg = (
                f"{listed}: the distinct flags (`is_first_distinct`, `is_duplicated`..., which "
                f"`unique` and `mode` are made of) compare each row's value with the column's "
                f"other rows: they are not supported in {where}, which does not carry the "
                "values it has seen from batch to batch; compute them in memory (`cb.lazy(frame)` "
                "over the whole table, e.g. `pl.read_parquet(...)`)"
            )
            raise JobSpecError(msg)
        msg = (
            f"{listed}: ordered operations that read every row after each row "
            f"(reverse=True, backward fills without a limit; time-based `rolling_*_by` "
            f"windows, rank, interpolate) are not "
            f"supported in {where}, which carries ordered operations from batch to batch in "
            "order and reads a bounded number of rows ahead (negative shifts, centred "
            "windows, fills with a limit); compute them in memory (`cb.lazy(frame)` over "
            "the whole table, e.g. `pl.read_parquet(...)`)"
            f"{reverse}"
        )
    else:
        msg = (
            f"{listed}: ordered operations (shift, diff, cumulative, rolling, ewm, fill_null "
            f"strategies) are not supported in {where}: each piece would start without the "
            "rows before it. Run them as a streamed job (`colbridge run`, which carries them "
            "across batches), or in memory (`cb.lazy(frame)`); with keys, partition by the "
            "key first and compute each partition with `cb.lazy`"
        )
    raise JobSpecError(msg)


def _whole_column_unmergeable(node: Node, found: list[Agg]) -> None:
    """Collect whole-column reductions of all the rows (`GROUPED_ONLY_FUNCS`) in ``node``.

    Those of windows are per group: merged by key (`colbridge.io.grouped`).
    """
    if isinstance(node, (Over, GroupAgg)):
        return  # per group: merged by key (`colbridge.io.grouped`)
    if isinstance(node, Agg) and node.func in GROUPED_ONLY_FUNCS \
            and node.func not in FOLDED_HOST_AGGS and node not in found:  # fmt: skip
        found.append(node)
    for child in children(node):
        _whole_column_unmergeable(child, found)


def one_row_steps(resolved: Sequence[Step]) -> tuple[Step, ...]:
    """The steps of an aggregation whose reductions are all literals now, for its one row.

    Filters before the first ``select`` of one row only chose the rows its reductions
    read, which their values already account for: run on a frame with no rows, such a
    filter would leave no row for the values (polars gives one row whatever a filter
    keeps). A filter after it filters that row, as in polars
    (``select(b.mean()).filter(b > 100)`` may leave none).
    """
    first = next((k for k, s in enumerate(resolved) if s.kind == "select" and s.items
                  and all(is_scalar(e) for _, e in s.items)), len(resolved))  # fmt: skip
    return tuple(s for k, s in enumerate(resolved) if s.kind != "filter" or k > first)


def refuse_unmergeable(steps: Iterable[Step], where: str) -> None:
    """Raise `JobSpecError` naming whole-column reductions that ``where`` cannot fold.

    ``first``, ``last``, ``n_unique``, ``arg_min`` and ``arg_max`` of a whole column
    come from positions or a factorization of all its rows, ``median`` and
    ``quantile`` from all its values sorted: not from
    partial rows a stream can fold batch by batch.
    """
    found: list[Agg] = []
    for step in steps:
        if step.kind == "group_by":
            continue  # per-group reductions are merged by key (`colbridge.io.grouped`)
        for _, expr in step.items:
            _whole_column_unmergeable(expr, found)
    if not found:
        return
    from colbridge.errors import JobSpecError

    listed = ", ".join(f"`{n!r}`" for n in found)
    # per group, a stream merges first/last/any/all by key (not n_unique or a quantile)
    per_group = ", or per group with `group_by(...).agg(...)`" \
        if all(n.func in ("first", "last", "any", "all") for n in found) else ""  # fmt: skip
    msg = (
        f"{listed}: whole-column reductions taken from all the rows at once (`first`, "
        f"`last`, `n_unique`, `median`, `quantile`, `any`, `all`, `arg_min`, `arg_max`) "
        f"are not supported in "
        f"{where}, which folds reductions batch by batch; compute them in memory "
        f"(`cb.lazy(frame)` over the whole table){per_group}"
    )
    raise JobSpecError(msg)


def innermost_aggregates(step: Step) -> list[Agg]:
    """The step's reductions whose argument holds no other reduction, in order of appearance."""
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


def _substitute(step: Step, values: dict[Agg, Node]) -> Step:
    memo: dict[Node, Node] = {}
    lookup: dict[Node, Node] = {agg: value for agg, value in values.items()}
    items = tuple(
        (name, transform(expr, lambda n: lookup.get(n, n), memo)) for name, expr in step.items
    )
    return Step(step.kind, items)


def resolve_aggregates(steps: Sequence[Step], reduce: Reduce) -> tuple[tuple[Step, ...], int]:
    """Replace every reduction by its whole-data value; the new steps and the passes taken.

    Reductions are resolved step by step and, inside a step, level by level (innermost
    first), each level one call of ``reduce`` (one pass over the data).
    """
    resolved = list(steps)
    passes = 0
    while True:
        k = next((j for j, s in enumerate(resolved) if has_aggregates([s])), None)
        if k is None:
            return tuple(resolved), passes
        aggs = innermost_aggregates(resolved[k])
        resolved[k] = _substitute(resolved[k], reduce(tuple(resolved[:k]), aggs))
        passes += 1


def reduction_passes(steps: Sequence[Step]) -> int:
    """How many passes `resolve_aggregates` takes (nothing is run)."""
    _, passes = resolve_aggregates(steps, lambda _, aggs: {a: Literal(0.0) for a in aggs})
    return passes
