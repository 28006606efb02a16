"""Expressions over several columns at once, expanded as polars expands them.

``col("a", "b") * 2`` is two expressions, ``col("a") * 2`` and ``col("b") * 2``, each
named after its column; ``all()`` and ``exclude(...)`` select from the columns the
frame has at that step, and ``^...$`` names are regular expressions over them. Several
selectors in one expression expand side by side (``col("a", "b") + col("c", "d")`` is
``a + c`` and ``b + d``; one of a single column goes with each). ``expr.name.suffix``
and its kin rename each output (`NameNamespace`).

A step expands its expressions when it is queued (`expand`), so plans, kernels and
every other layer only ever see single-column expressions.
"""

from __future__ import annotations

import builtins
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from colbridge.errors import ColumnNotFoundError, SchemaError
from colbridge.expr.nodes import (
    Alias,
    Column,
    Function,
    NameOp,
    Node,
    Selector,
    output_name,
    transform,
    walk,
)

if TYPE_CHECKING:
    from colbridge.expr.api import Expr

__all__ = ["NameNamespace", "all", "exclude", "expand", "is_pattern", "nth", "selected"]


def is_pattern(name: str) -> bool:
    """Whether a column name is a regular expression (``^...$``), as in polars."""
    return name.startswith("^") and name.endswith("$")


def all(*names: str | Sequence[str], ignore_nulls: bool = True) -> Expr:
    """Every column of the frame, as it stands at that step (``pl.all()``).

    In ``group_by(...).agg(...)``, every column but the keys. With names, as polars:
    whether every value of each named Boolean column is true (``cb.col(names).all()``).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2], "b": [3.0, 4.0]})
    >>> df.gpu.select(cb.all().sum()).compute().rows()
    [(3, 7.0)]
    """
    from colbridge.expr.api import Expr, col

    if names:
        return col(*names_of(names, "all")).all(ignore_nulls=ignore_nulls)
    return Expr(Selector(every=True))


def exclude(*names: str | Sequence[str]) -> Expr:
    """Every column but these (names or ``^...$`` patterns), as ``pl.exclude``.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2], "b": [3.0, 4.0], "c": [5, 6]})
    >>> df.gpu.select(cb.exclude("b") * 10).compute().columns
    ['a', 'c']
    """
    from colbridge.expr.api import Expr

    return Expr(Selector(every=True, exclude=names_of(names, "exclude")))


def names_of(names: Sequence[Any], where: str) -> tuple[str, ...]:
    """Column names from strings and lists of strings (polars' ``*names``)."""
    flat: list[Any] = []
    for n in names:
        flat.extend(n if isinstance(n, (list, tuple)) else [n])
    for n in flat:
        if not isinstance(n, str):
            msg = (
                f"`{where}` takes column names (strings), got {type(n).__name__} {n!r}; "
                "colbridge selects columns by name or `^...$` pattern, not by type"
            )
            raise SchemaError(msg)
    return tuple(flat)


def nth(*indices: int | Sequence[int]) -> Expr:
    """The frame's columns at these places, as ``pl.nth`` (negative counts from the end).

    In ``group_by(...).agg(...)`` the places count the key columns too, as in polars.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2], "b": [3.0, 4.0], "c": [5, 6]})
    >>> df.gpu.select(cb.nth(0, -1) * 10).compute().columns
    ['a', 'c']
    """
    from colbridge.expr.api import Expr

    flat: list[Any] = []
    for k in indices:
        flat.extend(k if isinstance(k, (list, tuple)) else [k])
    if not flat or not builtins.all(isinstance(k, int) and not isinstance(k, bool)
                                    for k in flat):  # fmt: skip
        msg = f"`nth` takes one or more column positions (integers), got {flat!r}"
        raise SchemaError(msg)
    return Expr(Selector(positions=tuple(flat)))


def selected(selector: Selector, available: Sequence[str],
             frame: Sequence[str] | None = None) -> list[str]:  # fmt: skip
    """The columns ``selector`` picks from ``available``, each once.

    In the order given, or in the frame's order when a ``^...$`` pattern is among them
    (as polars orders them). Positions index ``frame`` (every column, the keys of a
    ``group_by`` too; default ``available``).
    """
    chosen: list[str] = []
    if selector.every:
        chosen = list(available)
    columns = available if frame is None else frame
    for k in selector.positions:
        if not -len(columns) <= k < len(columns):
            msg = (f"`nth({k})`: the frame has {len(columns)} column(s) at this step "
                   f"({', '.join(columns)}); give a position from {-len(columns)} to "
                   f"{len(columns) - 1}")  # fmt: skip
            raise ColumnNotFoundError(msg)
        chosen.append(columns[k])
    for name in selector.names:
        if is_pattern(name):
            pattern = _compiled(name)
            chosen += [a for a in available if pattern.search(a)]
        elif name in available:
            chosen.append(name)
        else:
            raise ColumnNotFoundError.from_missing(name, list(available))
    dropped = {n for n in selector.exclude if not is_pattern(n)}
    patterns = [_compiled(n) for n in selector.exclude if is_pattern(n)]
    kept = [c for c in chosen if c not in dropped and not any(p.search(c) for p in patterns)]
    kept = list(dict.fromkeys(kept))
    if any(is_pattern(n) for n in selector.names):  # polars: a pattern selects in frame order
        position = {name: k for k, name in enumerate(available)}
        kept.sort(key=position.__getitem__)
    return kept


def _compiled(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        msg = f"column pattern {pattern!r} is not a valid regular expression: {exc}"
        raise SchemaError(msg) from None


def _needs_names(selector: Selector) -> bool:
    return selector.every or bool(selector.positions) or any(is_pattern(n)
                                                              for n in selector.names)


def expand(
    node: Node, available: Callable[[], Sequence[str]] | None = None,
    frame: Callable[[], Sequence[str]] | None = None,
) -> list[tuple[str, Node]]:  # fmt: skip
    """``node`` as one ``(output name, expression)`` per column its selectors pick.

    ``available()`` gives the frame's columns at this step; it is called only where a
    selector needs them (``all()``, ``exclude``, a pattern, a position). ``frame()``,
    where given, gives every column that positions count (a ``group_by``'s keys too,
    which ``available()`` leaves out). The expressions come back without their `Alias`
    and `NameOp` wrappers, which only name the output.
    """
    single = _single(node)
    if single is not None:
        return [single]
    node = transform(node, _spreading(available, frame))
    selectors = list(dict.fromkeys(n for n in walk(node) if isinstance(n, Selector)))
    if not selectors:
        return [(output_name(node), _unnamed(node))]
    names: list[str] | None = None
    picked: dict[Selector, list[str]] = {}
    for sel in selectors:
        if _needs_names(sel) or any(is_pattern(n) for n in sel.exclude):
            if available is None:
                msg = (
                    f"`{node!r}` selects columns by pattern, place or with `all()`, which "
                    "needs the frame's columns; name the columns here, e.g. "
                    "`cb.col(\"a\", \"b\")`"
                )
                raise SchemaError(msg)
            if names is None:
                names = list(available())
            columns = list(frame()) if frame is not None and sel.positions else None
            picked[sel] = selected(sel, names, columns)
        else:  # names alone: nothing to look up (a missing one is reported when planned)
            dropped = set(sel.exclude)
            explicit = [n for n in sel.names if n not in dropped]
            picked[sel] = list(dict.fromkeys(explicit))
    widths = {len(p) for p in picked.values() if len(p) != 1}
    if len(widths) > 1:
        shapes = ", ".join(f"{s!r}: {len(picked[s])}" for s in selectors)
        msg = (
            f"`{node!r}` expands its column selections side by side, but they select "
            f"different numbers of columns ({shapes}); select as many columns in each"
        )
        raise SchemaError(msg)
    count = widths.pop() if widths else 1
    out = []
    for i in range(count):
        at: dict[Node, Node] = {s: Column(p[i] if len(p) > 1 else p[0]) for s, p in picked.items()}
        one = transform(node, _replacing(at))
        out.append((output_name(one), _unnamed(one)))
    return out


@functools.lru_cache(maxsize=128)
def _single(node: Node) -> tuple[str, Node] | None:
    """``node``'s one ``(output name, expression)`` when it selects no columns, else None.

    The usual case, asked again at every step a handle queues (a notebook cell rerun,
    a plan in a loop): remembered by node (nodes are immutable, their hashes kept),
    for the last 128 expressions, so what a node holds (an `is_in` list, a function)
    is not kept alive for long.
    """
    kinds = {type(n) for n in walk(node)}
    if Selector in kinds:
        return None
    if NameOp in kinds:  # the tree is rewritten only for a name operation
        return output_name(node), _unnamed(node)
    return output_name(node), node.arg if isinstance(node, Alias) else node


def _spreading(
    available: Callable[[], Sequence[str]] | None,
    frame: Callable[[], Sequence[str]] | None = None,
) -> Callable[[Node], Node]:
    """Spread selections among the arguments of a horizontal function.

    ``sum_horizontal(all())`` sums every column, as in polars: there a selection is
    many arguments, not many expressions.
    """

    def spread(n: Node) -> Node:
        # not `Coalesce`: `fill_null` is one too, and its argument is one expression
        if not isinstance(n, Function) or not n.name.endswith("_horizontal") \
                or not any(isinstance(m, Selector) for m in walk(n)):  # fmt: skip
            return n
        args = tuple(e for a in n.args for _, e in expand(a, available, frame))
        if not args:
            msg = f"`{n!r}` selects no column for its arguments"
            raise SchemaError(msg)
        return replace(n, args=args)

    return spread


def _replacing(at: dict[Node, Node]) -> Callable[[Node], Node]:
    def replace(n: Node) -> Node:
        return at.get(n, n)

    return replace


def expand_one(node: Node, available: Callable[[], Sequence[str]] | None, where: str) -> Node:
    """``node`` expanded where one expression is wanted (a filter's predicate, say)."""
    expanded = expand(node, available)
    if len(expanded) != 1:
        msg = (
            f"the expression passed to `{where}` expanded to {len(expanded)} expressions "
            f"({', '.join(repr(e) for _, e in expanded) or 'none'}); combine them into one, "
            "e.g. with `cb.all_horizontal(...)`"
        )
        raise SchemaError(msg)
    return expanded[0][1]


def expand_arguments(nodes: Sequence[Node], where: str) -> tuple[Node, ...]:
    """Arguments (or keys) given as expressions, selectors of named columns spread out.

    ``max_horizontal(col("a", "b"))`` is ``max_horizontal(col("a"), col("b"))`` and
    ``group_by(col("g", "h"))`` is ``group_by("g", "h")``, as in polars; ``over`` takes
    no selection (polars makes one window per key there, outputs named alike).
    """
    out: list[Node] = []
    for node in nodes:
        if where == "over" and any(isinstance(n, Selector) for n in walk(node)):
            # polars makes one window per selected key there, each output named alike
            msg = (
                f"`over` takes `{node!r}`, a selection of several columns; give the keys "
                "one by one, e.g. `over(\"g\", \"h\")`"
            )
            raise SchemaError(msg)
        if any(isinstance(n, Selector) and _needs_names(n) for n in walk(node)):
            if where.endswith("_horizontal"):
                out.append(node)  # spread when the step is queued (`_spreading`)
                continue
            msg = (
                f"`{where}` takes `{node!r}`, which selects columns by pattern or with "
                "`all()`: name the columns there, e.g. `cb.col(\"a\", \"b\")`"
            )
            raise SchemaError(msg)
        out.extend(e for _, e in expand(node))
    return tuple(out)


def _unnamed(node: Node) -> Node:
    """``node`` without `NameOp` wrappers and without its top `Alias` (names are kept apart)."""
    bare = transform(node, lambda n: n.arg if isinstance(n, NameOp) else n)
    return bare.arg if isinstance(bare, Alias) else bare


class NameNamespace:
    """``expr.name``: the output's name (polars' ``Expr.name``), for each expanded column.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2], "b": [3.0, 4.0]})
    >>> df.gpu.with_columns(cb.col("a", "b").cum_sum().name.suffix("_total")).compute().columns
    ['a', 'b', 'a_total', 'b_total']
    """

    def __init__(self, expr: Expr) -> None:
        self._expr = expr

    def _op(self, op: str, value: Any = None) -> Expr:
        from colbridge.expr.api import Expr

        return Expr(NameOp(self._expr.node, op, value))

    def suffix(self, suffix: str) -> Expr:
        """The output's name with ``suffix`` appended."""
        return self._op("suffix", _text(suffix, "name.suffix"))

    def prefix(self, prefix: str) -> Expr:
        """The output's name with ``prefix`` in front."""
        return self._op("prefix", _text(prefix, "name.prefix"))

    def keep(self) -> Expr:
        """The name of the column the expression reads (any alias undone)."""
        return self._op("keep")

    def map(self, function: Callable[[str], str]) -> Expr:
        """The output's name passed through ``function`` (a Python function of the name)."""
        if not callable(function):
            msg = f"`name.map` takes a function of the name, got {type(function).__name__}"
            raise SchemaError(msg)
        return self._op("map", function)

    def to_lowercase(self) -> Expr:
        """The output's name in lowercase."""
        return self._op("to_lowercase")

    def to_uppercase(self) -> Expr:
        """The output's name in uppercase."""
        return self._op("to_uppercase")

    def strip_prefix(self, prefix: str) -> Expr:
        """The output's name without ``prefix`` at its start (unchanged where absent)."""
        return self._op("strip_prefix", _text(prefix, "name.strip_prefix"))

    def strip_suffix(self, suffix: str) -> Expr:
        """The output's name without ``suffix`` at its end (unchanged where absent)."""
        return self._op("strip_suffix", _text(suffix, "name.strip_suffix"))

    def replace(self, pattern: str, value: str, *, literal: bool = False) -> Expr:
        """Every match of ``pattern`` in the output's name replaced by ``value``.

        A regex (polars' syntax, ``$1`` for a group) unless ``literal=True``.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"dep_delay": [1], "arr_delay": [2]})
        >>> df.gpu.select(cb.all().name.replace("_delay$", "_late")).compute().columns
        ['dep_late', 'arr_late']
        """
        if not isinstance(literal, bool):
            msg = f"`name.replace(literal={literal!r})`: expected True or False"
            raise SchemaError(msg)
        return self._op("replace", (_text(pattern, "name.replace"), _text(value, "name.replace"),
                                    literal))  # fmt: skip


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        msg = f"`{where}` takes a string, got {type(value).__name__} {value!r}"
        raise SchemaError(msg)
    return value
