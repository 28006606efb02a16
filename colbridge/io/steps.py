"""Jobs layer: turning user input (strings, expressions, a LazyFrame) into engine steps.

A job's plan is built once, as a tuple of `colbridge.plan.logical.Step`, prepared
once (`colbridge.runtime.prepare`) and run on every batch or partition
(`colbridge.runtime.pieces`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from colbridge.errors import ExpressionSyntaxError, JobSpecError
from colbridge.expr.api import Expr, as_expr
from colbridge.expr.nodes import Column, Node
from colbridge.expr.parser import parse_assignments, parse_expr
from colbridge.expr.selectors import expand, expand_one
from colbridge.lazy import LazyFrame
from colbridge.plan.logical import Step
from colbridge.plan.typecheck import is_scalar

__all__ = ["JobSpecError", "build_steps", "is_aggregating", "steps_of"]


def _with_items(value: Any) -> list[tuple[str, Node]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [(name, expand_one(node, None, "with")) for name, node in parse_assignments(value)]
    if isinstance(value, Mapping):
        out: list[tuple[str, Node]] = []
        for name, e in value.items():
            node = parse_expr(e) if isinstance(e, str) else as_expr(e).node
            out.append((str(name), expand_one(node, None, "with")))
        return out
    if isinstance(value, Iterable):
        items: list[tuple[str, Node]] = []
        for v in value:
            items.extend(_with_items(v))
        return items
    msg = (
        f"`with_` must be a string of `name = expression` assignments, a mapping of names "
        f"to expressions, or a list of those; got {type(value).__name__}"
    )
    raise JobSpecError(msg)


def _with_steps(value: Any) -> list[Step]:
    """``with_`` as steps: statements run in order, as a list's items and a string's do.

    A mapping's expressions are one step (they see the columns as they were, as
    ``with_columns(**mapping)``); a list of strings or mappings runs item after item,
    as repeated ``--with`` flags (a spec file's ``with = [...]`` is that list).
    """
    if isinstance(value, str):
        # statements in a string run in order: later ones see earlier columns
        return [Step("with_columns", (item,)) for item in _with_items(value)]
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        return [step for v in value for step in _with_steps(v)]
    items = _with_items(value)
    return [Step("with_columns", tuple(items))] if items else []


def _filter_node(value: Any) -> Node:
    node = parse_expr(value) if isinstance(value, str) else as_expr(value).node
    return expand_one(node, None, "filter")


def _select_items(value: Any) -> list[tuple[str, Node]]:
    names: list[Any] = [value] if isinstance(value, (str, Expr)) else list(value)
    out: list[tuple[str, Node]] = []
    for v in names:
        if isinstance(v, str):
            for part in v.split(","):
                name = part.strip()
                if not name:
                    msg = f"empty column name in select {v!r}; separate names with commas"
                    raise ExpressionSyntaxError(msg)
                out.append((name, Column(name)))
        else:  # a job's columns are known only when it runs: named columns here
            out.extend(expand(as_expr(v).node))
    return out


def build_steps(
    *,
    with_: Any = None,
    filter: Any = None,
    select: Any = None,
    ops: Sequence[tuple[str, Any]] = (),
) -> tuple[Step, ...]:
    """Build steps from ``with_`` / ``filter`` / ``select`` (applied in that order), then ``ops``.

    ``ops`` is an ordered list of ``("with", ...)``, ``("filter", ...)`` and
    ``("select", ...)`` pairs, for callers (like the CLI) that keep the order the
    user gave. Strings are parsed with the safe expression parser.
    """
    ordered: list[tuple[str, Any]] = []
    if with_ is not None:
        ordered.append(("with", with_))
    if filter is not None:
        ordered.append(("filter", filter))
    if select is not None:
        ordered.append(("select", select))
    ordered.extend(ops)
    steps: list[Step] = []
    for kind, value in ordered:
        if kind == "with":
            steps.extend(_with_steps(value))
        elif kind == "filter":
            values = value if isinstance(value, (list, tuple)) else [value]
            for v in values:
                steps.append(Step("filter", (("", _filter_node(v)),)))
        elif kind == "select":
            steps.append(Step("select", tuple(_select_items(value))))
        else:
            msg = f"unknown step kind {kind!r}; use 'with', 'filter' or 'select'"
            raise JobSpecError(msg)
    return tuple(steps)


def steps_of(obj: Any) -> tuple[Step, ...]:
    """Return the steps of a `LazyFrame`, or a sequence of steps as they are."""
    if isinstance(obj, LazyFrame):
        return tuple(obj.steps)
    if isinstance(obj, Sequence) and all(isinstance(s, Step) for s in obj):
        return tuple(obj)
    msg = (
        f"expected a colbridge LazyFrame or a sequence of steps, got {type(obj).__name__}; "
        "build one with `cb.lazy(frame).with_columns(...)`"
    )
    raise JobSpecError(msg)


def is_aggregating(steps: Sequence[Step]) -> bool:
    """Tell whether a ``select`` keeps only reductions and literals: the result is one row.

    ``select(lit(1))`` is one row too, as in polars, however many rows the input has.
    """
    return any(
        s.kind == "select" and s.items and all(is_scalar(e) for _, e in s.items) for s in steps
    )
