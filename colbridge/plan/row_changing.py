"""Logical plan: ``select`` outputs with fewer rows than the frame, as a filter of it.

polars' ``select`` takes outputs whose length is not the frame's: ``col("a").filter(p)``,
``head(n)``, ``tail(n)``, ``slice``, ``gather_every``, ``drop_nulls()``, ``unique()``,
``top_k(k)``, ``bottom_k(k)`` (each a `Filtered` node: the values on the rows a
predicate keeps), expressions of them, and one-value outputs broadcast beside them
(reductions, literals). When every such output keeps the rows of one predicate, the
step is the frame's rows that predicate keeps::

    select(a.filter(p) * 2, (b.filter(p) - a.mean()).cum_sum(), n=a.len())
    ==
    with_columns(t0=a, t1=b, t2=a.mean(), t3=a.len(), keep=p)
    .filter(keep)
    .select(a=t0 * 2, b=(t1 - t2).cum_sum(), n=t3)

The values a filter reads, and the reductions of the whole frame, are taken before the
filter; what is written over the kept values (arithmetic, ordered operations such as
``cum_sum`` or ``shift``, which then run over the kept rows only, as polars runs them)
after it. Every backend, stream and partition runs that as it runs any filter.

polars also takes outputs of different predicates, and outputs with all the frame's
rows beside filtered ones, when their lengths happen to agree in the data; colbridge
plans before it sees the data, so it refuses both by name (`ShapeError`), saying how to
write them as one filter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from colbridge.errors import ShapeError, UnsupportedOperationError
from colbridge.expr.nodes import (
    MODE_SHOWN,
    Agg,
    Alias,
    Binary,
    Call,
    Cast,
    Clip,
    Coalesce,
    Column,
    Constant,
    EveryRow,
    FillNan,
    Filtered,
    Function,
    GroupAgg,
    KeySet,
    Literal,
    Node,
    Over,
    Round,
    Scan,
    Unary,
    When,
    children,
    reconstruct,
    transform,
    walk,
)
from colbridge.plan.logical import Step, names_after

__all__ = ["filter_changing_rows", "filters_outermost"]

#: nodes whose value on a row is a function of their arguments' values on that row: of
#: single values only, a single value
_ROW_WISE = (Alias, Binary, Unary, Cast, When, Coalesce, FillNan, Clip, Round, Function, Call)
#: functions that are not: the frame's rows, a set of values, neighbours
_NOT_ROW_WISE = frozenset({"is_in", "int_range", "peak_values",
                           "interpolate_by_values", "interpolate_by_key"})  # fmt: skip

#: a value the length of the frame, and one value broadcast to any length
_ALL, _ONE = "all", "one"


@dataclass(frozen=True, slots=True)
class _Kept:
    """Values on the rows ``predicate`` keeps; ``same`` tells equal row sets apart."""

    predicate: Node
    same: Node
    shown: Node  # the first filtered value met, for messages


def filter_changing_rows(steps: tuple[Step, ...], names: Sequence[str]) -> tuple[Step, ...]:
    """``steps`` with each ``select`` of filtered outputs written as a filter of the frame.

    ``names``: the input frame's columns. Steps without such outputs are kept as they
    are (the same objects).

    >>> from colbridge.expr.api import col
    >>> steps = filter_changing_rows((Step("select", (("a", col("a").head(2).node),)),), ["a"])
    >>> [s.kind for s in steps]
    ['with_columns', 'filter', 'select']
    """
    out: list[Step] = []
    for index, step in enumerate(steps):
        filtered = step.kind == "select" and any(
            isinstance(n, Filtered) for _, node in step.items for n in walk(node))  # fmt: skip
        rewritten = _as_filter(step, names_after(steps[:index], names)) if filtered else None
        out.extend(rewritten if rewritten is not None else (step,))
    changed = len(out) != len(steps) or any(a is not b for a, b in zip(out, steps, strict=True))
    return tuple(out) if changed else steps


def _as_filter(step: Step, names: list[str]) -> tuple[Step, Step, Step] | None:
    """The three steps (values, filter, outputs) of a ``select`` of filtered outputs."""
    memo: dict[Node, str | _Kept] = {}
    kinds = [_rows(node, memo) for _, node in step.items]
    kept = [k for k in kinds if isinstance(k, _Kept)]
    if not kept:
        return None
    first = kept[0]
    for k in kept[1:]:
        if k.same != first.same:
            msg = (
                f"`select` outputs filtered by different predicates: `{first.shown!r}` and "
                f"`{k.shown!r}` (polars takes them only where their lengths happen to be "
                "equal); filter the frame with `.filter(...)` first, or give them one predicate"
            )
            raise ShapeError(msg)
    for (name, node), kind in zip(step.items, kinds, strict=True):
        if kind == _ALL:
            msg = (
                f"`select` output `{name}` (`{node!r}`) has the frame's rows, while "
                f"`{first.shown!r}` has the rows its filter keeps (polars raises unless "
                "the filter keeps every row); filter the frame with `.filter(...)` and select "
                "after it, or reduce it (e.g. `.first()`)"
            )
            raise ShapeError(msg)
    taken: dict[Node, Column] = {}  # what is taken before the filter, as its column
    used = set(names)

    def column_for(value: Node) -> Column:
        hit = taken.get(value)
        if hit is None:
            k = len(taken)
            while f"__kept_{k}" in used:
                k += 1
            hit = taken[value] = Column(f"__kept_{k}")
            used.add(hit.name)
        return hit

    written: dict[Node, Node] = {}

    def after(node: Node) -> Node:  # an output over the kept rows' columns
        hit = written.get(node)
        if hit is None:
            if isinstance(node, Filtered):
                hit = column_for(node.arg)
            elif memo.get(node) == _ONE and not isinstance(node, (Literal, Constant)):
                hit = column_for(node)  # a reduction of the whole frame: taken before
            else:
                hit = reconstruct(node, tuple(after(c) for c in children(node)))
            written[node] = hit
        return hit

    outputs = tuple((name, after(node)) for name, node in step.items)
    keep = column_for(first.predicate)
    values = tuple((c.name, value) for value, c in taken.items())
    return (Step("with_columns", values), Step("filter", (("", keep),)),
            Step("select", outputs))  # fmt: skip


def _rows(node: Node, memo: dict[Node, str | _Kept]) -> str | _Kept:
    """How many rows ``node`` has: the frame's, one, or those a filter keeps."""
    hit = memo.get(node)
    if hit is None:
        hit = memo[node] = _rows_of(node, memo)
    return hit


def _rows_of(node: Node, memo: dict[Node, str | _Kept]) -> str | _Kept:
    if isinstance(node, Agg):  # whatever its input (a filtered value too): one value
        return _ONE
    if isinstance(node, (Literal, Constant)):
        return _ONE
    if isinstance(node, (Column, GroupAgg, EveryRow)):
        return _ALL
    if isinstance(node, Filtered):
        inner = [_rows(node.arg, memo), _rows(node.predicate, memo)]
        if any(isinstance(k, _Kept) for k in inner):
            _refuse(node, "a filter of values already filtered")
        if inner[0] == _ONE:
            _refuse(node, "a filter of one value")
        return _Kept(node.predicate, _same_rows(node.predicate), node)
    if isinstance(node, Over):
        if any(isinstance(_rows(c, memo), _Kept) for c in children(node)):
            _refuse(node, "a window over filtered values")
        return _ALL
    if isinstance(node, Scan):  # over the kept rows, in their order, after the filter
        arg = _rows(node.arg, memo)
        if isinstance(arg, _Kept) and node.keys.inputs:
            _refuse(node, "an ordered operation per group or in another order, of filtered "
                          "values")  # fmt: skip
        return arg if isinstance(arg, _Kept) else _ALL
    kinds = [_rows(c, memo) for c in children(node)]
    kept = [k for k in kinds if isinstance(k, _Kept)]
    if not kept:  # one value only where every argument is, row by row
        row_wise = isinstance(node, _ROW_WISE) and not (
            isinstance(node, Function) and node.name in _NOT_ROW_WISE)  # fmt: skip
        return _ONE if row_wise and kinds and _ALL not in kinds else _ALL
    # of kept values (and single ones) only: computed after the filter, over the kept rows
    for k in kept[1:]:
        if k.same != kept[0].same:
            msg = (f"`{node!r}` combines values filtered by different predicates "
                   f"(`{kept[0].shown!r}`, `{k.shown!r}`); give them one predicate")  # fmt: skip
            raise ShapeError(msg)
    if _ALL in kinds:
        msg = (f"`{node!r}` combines `{kept[0].shown!r}`, the rows a filter keeps, with "
               "values on every row of the frame; filter the frame with `.filter(...)` "
               "first, or reduce them")  # fmt: skip
        raise ShapeError(msg)
    return kept[0]


def filters_outermost(arg: Node, keys: KeySet | None = None) -> Node:
    """A reduction's input with its filters taken outermost, where they can be.

    A reduction reads the values one filter keeps (``Filtered``); polars also reduces
    expressions written over filtered values, which are then over the kept rows only::

        (a.filter(p) * 2 - a.mean()).sum()  ==  (a * 2 - a.mean()).filter(p).sum()
        a.filter(p).filter(a.filter(p) > 0)  ==  a.filter(p).filter(a > 0)
        a.filter(p).cum_sum()                ==  a.cum_sum().over(p).filter(p)

    A row-wise node of filtered values of one row set (`_same_rows`) and of single
    values (literals, reductions) is computed on every row, then filtered: its values
    on the kept rows are the same. With values of every row, or of another filter, it
    is refused (`ShapeError`: polars raises unless the lengths happen to agree). Where
    it may fail on a value (a strict cast, a function) or reads more than its own row
    (a format inferred from the first value), its filtered inputs are null on the rows
    the filter drops, so that rows polars never computes cannot raise or count. An
    ordered operation over filtered values runs per group of the predicate (the kept
    rows are one group, in order); ``mode`` counts values in groups of value and
    predicate. Anything else is left as written, for typing to refuse by name.
    ``keys``: the groups the reduction is taken in (``group_by``, ``over``), whose
    reductions inside it (``x.max().over(keys)``) are single values too.

    >>> from colbridge.expr.api import col
    >>> filters_outermost(((col("a").filter(col("b") > 0)) * 2).node)
    (col("a") * lit(2)).filter((col("b") > lit(0)))
    """
    memo: dict[Node, Node] = {}

    def outer(node: Node) -> Node:
        hit = memo.get(node)
        if hit is None:
            hit = memo[node] = _outermost(node, outer, keys)
        return hit

    return outer(arg)


def _outermost(node: Node, outer: Callable[[Node], Node], keys: KeySet | None) -> Node:
    if isinstance(node, (Agg, GroupAgg, Over, Column, Literal, Constant, EveryRow)):
        return node  # a reduction's own filters are taken when it is typed
    if isinstance(node, Filtered) and node.shown == MODE_SHOWN:
        arg = outer(node.arg)
        if not isinstance(arg, Filtered):
            return node
        from colbridge.expr.api import mode_predicate  # (the expression layer builds it)

        # the most frequent of the kept values: counted in groups of value and predicate
        groups = () if keys is None else keys.exprs
        return Filtered(arg, mode_predicate(arg.arg, arg.predicate, groups), node.shown)
    if isinstance(node, Filtered):
        arg, pred = outer(node.arg), outer(node.predicate)
        if isinstance(pred, Filtered):  # a predicate over kept values: of the same rows
            if isinstance(arg, Filtered) and _same_rows(arg.predicate) == _same_rows(
                pred.predicate
            ):
                return Filtered(arg, pred.arg, node.shown)  # the rows where both hold
            return node
        return reconstruct(node, (arg, pred))
    if isinstance(node, Scan):
        arg = outer(node.arg)
        if not isinstance(arg, Filtered):
            return reconstruct(node, (arg, *children(node)[1:]))
        if node.func.endswith("_by") and node.keys.order_by:
            return node  # refused by name when typed (its `by` keeps every row)
        kept_rows = KeySet((*node.keys.exprs, arg.predicate)).ordered_like(node.keys)
        scan = Scan(node.func, arg.arg, node.options, kept_rows)
        return Filtered(scan, arg.predicate, arg.shown)
    if not isinstance(node, _ROW_WISE) or (
        isinstance(node, Function) and node.name in _NOT_ROW_WISE
    ):
        return node
    parts = tuple(outer(c) for c in children(node))
    kept = [p for p in parts if isinstance(p, Filtered)]
    if not kept:
        return reconstruct(node, parts)
    rows = _same_rows(kept[0].predicate)
    for k in kept[1:]:
        if _same_rows(k.predicate) != rows:
            msg = (f"`{node!r}` combines values filtered by different predicates "
                   f"(`{kept[0]!r}`, `{k!r}`; polars raises unless their lengths happen to "
                   "agree); give them one predicate")  # fmt: skip
            raise ShapeError(msg)
    for p in parts:
        if not (isinstance(p, Filtered) or _one_value(p, keys)):
            msg = (f"`{node!r}` combines `{kept[0]!r}`, the rows a filter keeps, with "
                   f"`{p!r}`, values on every row (polars raises unless the filter keeps "
                   "every row); filter both (`.filter(...)` on each), or reduce the "
                   "second")  # fmt: skip
            raise ShapeError(msg)
    predicate = kept[0].predicate
    may_fail = isinstance(node, (Function, Call)) or (isinstance(node, Cast) and node.strict)

    def value(p: Node) -> Node:
        if not isinstance(p, Filtered):
            return p
        return When(predicate, p.arg, Literal(None)) if may_fail else p.arg

    return Filtered(reconstruct(node, tuple(value(p) for p in parts)), predicate, kept[0].shown)


def _one_value(node: Node, keys: KeySet | None) -> bool:
    """Whether ``node`` is one value (per group of ``keys``): a literal, a reduction of them."""
    if isinstance(node, (Agg, Literal, Constant)):
        return True
    if isinstance(node, GroupAgg):  # a reduction in the groups of the one that reads it
        return keys is not None and node.keys == keys
    parts = children(node)
    return bool(parts) and isinstance(node, _ROW_WISE) and not (
        isinstance(node, Function) and node.name in _NOT_ROW_WISE
    ) and all(_one_value(p, keys) for p in parts)


def _refuse(node: Node, what: str) -> NoReturn:
    msg = (f"`{node!r}`: {what} as an output of `select` is not supported; filter the "
           "frame with `.filter(...)` first, or use it as the input of a reduction")  # fmt: skip
    raise UnsupportedOperationError(msg)


_ANY_COLUMN = Column("")


def _same_rows(predicate: Node) -> Node:
    """``predicate`` with each row's position written without the column it counts.

    ``head``, ``tail``, ``slice`` and ``gather_every`` keep rows by position, counted as
    ``x.is_null().cum_count()`` (every row, whatever ``x``; per group in ``agg`` and
    ``over``): ``a.head(3)`` and ``b.head(3)`` keep the same rows.
    """

    def fn(node: Node) -> Node:
        if isinstance(node, Scan) and node.func == "cum_count" \
                and isinstance(node.arg, Unary) and node.arg.op == "is_null":  # fmt: skip
            return reconstruct(node, (Unary("is_null", _ANY_COLUMN),))
        return node

    return transform(predicate, fn)
