"""Jobs layer: grouped statistics over data that arrives in pieces (windows and ``group_by``).

A window (``x.mean().over("g")``) needs the statistic of each *whole* group;
a stream only ever holds a batch. `resolve_windows` turns such a plan into one
that streams:

1. find the first step holding a window and take its innermost grouped
   reductions (those holding no other), one key set at a time;
2. run the steps before it plus a ``group_by(keys).agg(...)`` of *mergeable
   partials* on every batch or partition (the engine's own grouped kernels):
   count, sum, min, max, first, last, and mean with the variance for std/var;
3. merge the per-piece group tables by key (Chan's formula for mean and M2) into
   one table of per-group values: memory bounded by the number of groups;
4. replace each reduction by a column, `attach`-ed to every piece by looking
   its rows' keys up in that table (the keys of the table and of the piece
   factorized together), and repeat, level by level.

`resolve_group_by` computes a ``group_by`` step the same way: its result is the
merged table itself (a row per group), on which the rest of the plan runs.
``n_unique``, ``median`` and ``quantile`` per group are not mergeable from partials
and are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.backends.groups import (
    GroupIds,
    any_all,
    bitwise,
    factorize,
    integer_values,
    take,
)
from colbridge.expr.nodes import (
    BITWISE_AGGS,
    MOMENT_FUNCS,
    Agg,
    Cast,
    Column,
    Filtered,
    GroupAgg,
    KeySet,
    Node,
    Over,
    children,
    deep_walk,
    method_name,
    push_window,
    reconstruct,
    transform,
)
from colbridge.io.steps import JobSpecError
from colbridge.plan.logical import Step
from colbridge.plan.streaming import has_aggregates, resolve_aggregates
from colbridge.plan.typecheck import is_one_value
from colbridge.types import DType

__all__ = [
    "UNMERGEABLE_PER_GROUP",
    "Lookup",
    "RunTables",
    "attach",
    "has_group_by",
    "has_windows",
    "looked_up",
    "merge_tables",
    "resolve_group_by",
    "resolve_windows",
    "unmergeable_reason",
    "window_passes",
]

#: reductions per group that no merge of pieces' group tables can make
UNMERGEABLE_PER_GROUP = frozenset({"n_unique", "median", "quantile", "skew", "kurtosis",
                                   "arg_min", "arg_max", "str_join"})  # fmt: skip


def unmergeable_reason(func: str) -> str:
    """Why ``func`` (of `UNMERGEABLE_PER_GROUP`) per group is not merged from pieces."""
    if func in MOMENT_FUNCS:
        return "it is made in two passes over a group's values: the mean, then the deviations"
    return "it needs all of a group's values at once"

#: Evaluates the given steps on every piece (after attaching the lookups so far);
#: yields each piece's (small) result table, in the order of the pieces.
RunTables = Callable[[tuple[Step, ...], Sequence["Lookup"]], Iterable[pa.Table]]
#: Values of whole-column reductions after a prefix of steps, the pieces carrying the
#: window columns looked up so far (`colbridge.plan.streaming.Reduce`, with the lookups).
ReduceWith = Callable[[tuple[Step, ...], list[Agg], Sequence["Lookup"]], dict[Agg, Node]]


@dataclass
class Lookup:
    """Per-group values of window reductions, and the keys a piece's rows find them by.

    ``keys`` are expressions over the input columns; ``table`` holds the key
    columns ``k0, k1, ...`` then one column per name in ``names``.
    """

    keys: tuple[Node, ...]
    names: list[str]
    table: pa.Table


def _pushed(node: Node) -> Node:
    """``node`` with every window pushed onto its reductions (`GroupAgg` nodes)."""

    def fn(n: Node) -> Node:
        if isinstance(n, Over):
            return push_window(n.arg, n.key_set)
        return n

    return transform(node, fn)


def _windows(node: Node) -> list[GroupAgg]:
    return [n for n in deep_walk(node) if isinstance(n, GroupAgg)]


def has_windows(steps: Iterable[Step]) -> bool:
    """Tell whether a step (other than a ``group_by``'s own aggregations) uses a window."""
    return any(
        s.kind != "group_by" and any(isinstance(n, (Over, GroupAgg)) for n in deep_walk(e))
        for s in steps for _, e in s.items
    )  # fmt: skip


def has_group_by(steps: Iterable[Step]) -> bool:
    """Tell whether the plan groups its rows (``group_by(...).agg(...)``)."""
    return any(s.kind == "group_by" for s in steps)


# -- the plan ----------------------------------------------------------------------------------


def _substitute(node: Node, env: Mapping[str, Node]) -> Node:
    def fn(n: Node) -> Node:
        if isinstance(n, Column) and n.name in env:
            return env[n.name]
        return n

    return transform(node, fn)


def _raw_env(prefix: Sequence[Step], names: Sequence[str]) -> dict[str, Node]:
    """Every column after ``prefix`` as an expression of the input columns."""
    env: dict[str, Node] = {n: Column(n) for n in names}
    for step in prefix:
        if step.kind == "with_columns":
            for name, e in step.items:
                env[name] = _substitute(_pushed(e), env)
        elif step.kind == "select":
            env = {name: _substitute(_pushed(e), env) for name, e in step.items}
        elif step.kind == "group_by":
            msg = (
                "a window (`over`) after `group_by` in a streaming job is not supported; "
                "run the job without the window and compute it on the (small) result"
            )
            raise JobSpecError(msg)
    return env


def _output_names(steps: Sequence[Step], names: Sequence[str]) -> list[str]:
    order = list(names)
    for step in steps:
        if step.kind == "with_columns":
            order += [n for n, _ in step.items if n not in order]
        elif step.kind == "select":
            order = [n for n, _ in step.items]
        elif step.kind == "group_by":
            order = [n for n, _ in step.keys] + [n for n, _ in step.items]
    return order


def _innermost(node: Node) -> list[GroupAgg]:
    out: list[GroupAgg] = []
    for n in _windows(node):
        inner = any(isinstance(m, (GroupAgg, Over)) for m in deep_walk(n.arg))
        inner = inner or any(isinstance(m, (GroupAgg, Over)) for k in n.keys.exprs
                             for m in deep_walk(k))  # fmt: skip
        if not inner and n not in out:
            out.append(n)
    return out


def _needs_all_rows(node: Node) -> bool:
    """Whether ``node`` holds a reduction or a window (a value made from many rows)."""
    return any(isinstance(n, (Agg, GroupAgg, Over)) for n in deep_walk(node))


def lifted_keys(steps: Sequence[Step]) -> tuple[Step, ...]:
    """The steps with each key made of many rows computed first, as a column of its own.

    A window's or a ``group_by``'s key holding a reduction or a window
    (``v.sum().over(x > x.mean())``, ``group_by(hi=x > x.mean())``) would be evaluated
    piece by piece, each piece with its own rows' mean: it becomes a column
    ``__key<j>__`` of a ``with_columns`` step just before, whose reductions and windows
    are then resolved over all the data as any other's, and the key reads that column.
    """
    out: list[Step] = []
    count = 0
    for step in steps:
        made: list[tuple[str, Node]] = []

        def lift(key: Node, made: list[tuple[str, Node]] = made) -> Node:
            nonlocal count
            if not _needs_all_rows(key):
                return key
            name = f"__key{count}__"
            count += 1
            made.append((name, key))
            return Column(name)

        def fn(n: Node) -> Node:
            if not isinstance(n, Over):
                return n
            keys = tuple(lift(k) for k in n.keys)
            if all(new is old for new, old in zip(keys, n.keys, strict=True)):
                return n
            return Over(n.arg, keys, n.order_by, n.descending, n.nulls_last)

        if step.kind == "group_by":
            lifted = Step(step.kind, step.items, tuple((n, lift(k)) for n, k in step.keys))
        else:
            memo: dict[Node, Node] = {}
            lifted = Step(step.kind, tuple((n, transform(e, fn, memo)) for n, e in step.items),
                          step.keys)  # fmt: skip
        if made:
            out.append(Step("with_columns", tuple(made)))
        out.append(lifted)
    return tuple(out)


def resolve_windows(
    steps: Sequence[Step], names: Sequence[str], run: RunTables, reduce: ReduceWith
) -> tuple[tuple[Step, ...], list[Lookup], int]:
    """Replace every window reduction by a looked-up column; the steps, lookups and passes.

    Each key set of each level takes one statistics pass through ``run``. Whole-column
    reductions in the steps before a window are resolved first, through ``reduce``: a
    statistics pass computes those steps piece by piece, where each piece would take
    its own rows' mean for the whole column's. The returned steps expect every piece
    to carry the lookups' columns (`attach`).
    """
    final = _output_names(steps, names)
    resolved = list(lifted_keys(steps))
    lifted = len(resolved) > len(steps)
    lookups: list[Lookup] = []
    passes = 0
    while True:
        k = next((j for j, s in enumerate(resolved)
                  if s.kind != "group_by" and has_windows([s])), None)  # fmt: skip
        if k is None:
            break
        if has_aggregates(resolved[:k]):
            done, _ = resolve_aggregates(resolved[:k],
                                         lambda prefix, aggs: reduce(prefix, aggs, lookups))
            resolved[:k] = done
        env = _raw_env(resolved[:k], names)
        step = resolved[k]
        items = [(name, _pushed(e)) for name, e in step.items]
        inner: list[GroupAgg] = []
        for _, e in items:
            inner += [a for a in _innermost(e) if a not in inner]
        values: dict[Node, Node] = {}
        for keys in dict.fromkeys(a.keys for a in inner):
            aggs = [a for a in inner if a.keys == keys]
            table = _statistics(tuple(resolved[:k]), keys, aggs, run, lookups)
            passes += 1
            base = sum(len(lookup.names) for lookup in lookups)
            window_names = [f"__window{base + j}__" for j in range(len(aggs))]
            table = table.rename_columns(
                [f"k{i}" for i in range(len(keys.exprs))] + window_names)
            raw = tuple(_substitute(e, env) for e in keys.exprs)
            lookups.append(Lookup(raw, window_names, table))
            values.update({a: Column(n) for a, n in zip(aggs, window_names, strict=True)})
        resolved[k] = Step(step.kind, _replaced(items, values), step.keys)
        carried = [n for lookup in lookups for n in lookup.names]
        for j in range(k):  # the looked-up columns ride through earlier selects
            if resolved[j].kind == "select":
                kept = {n for n, _ in resolved[j].items}
                extra = tuple((n, Column(n)) for n in carried if n not in kept)
                resolved[j] = Step("select", resolved[j].items + extra)
    if (lookups or lifted) and not any(s.kind in ("select", "group_by")
                                       for s in resolved[len(resolved) - 1:]):  # fmt: skip
        resolved.append(Step("select", tuple((n, Column(n)) for n in final)))
    return tuple(resolved), lookups, passes


def window_passes(steps: Sequence[Step]) -> tuple[int, tuple[Step, ...]]:
    """How many group statistics passes `resolve_windows` and a ``group_by`` take (none run).

    Also the steps with the windows replaced (by stand-in columns) and cut before
    the ``group_by``: what remains for whole-column reductions.
    """
    resolved = list(lifted_keys(steps))
    passes = 0
    while True:
        k = next((j for j, s in enumerate(resolved)
                  if s.kind != "group_by" and has_windows([s])), None)  # fmt: skip
        if k is None:
            upto = next((j for j, s in enumerate(resolved) if s.kind == "group_by"),
                        len(resolved))  # fmt: skip
            return passes + has_group_by(steps), tuple(resolved[:upto])
        items = [(name, _pushed(e)) for name, e in resolved[k].items]
        inner: list[GroupAgg] = []
        for _, e in items:
            inner += [a for a in _innermost(e) if a not in inner]
        passes += len(dict.fromkeys(a.keys for a in inner))
        values: dict[Node, Node] = {a: Column(f"__window{j}__") for j, a in enumerate(inner)}
        resolved[k] = Step(resolved[k].kind, _replaced(items, values), resolved[k].keys)


def _replaced(items: Sequence[tuple[str, Node]], values: Mapping[Node, Node]
              ) -> tuple[tuple[str, Node], ...]:  # fmt: skip
    memo: dict[Node, Node] = {}
    return tuple((name, transform(e, lambda n: values.get(n, n), memo)) for name, e in items)


def _wide(arg: Node) -> Node:
    """``arg`` cast to float64 (inside a filter, if it is one)."""
    if isinstance(arg, Filtered):
        return Filtered(Cast(arg.arg, DType.FLOAT64, strict=False), arg.predicate)
    return Cast(arg, DType.FLOAT64, strict=False)


def _statistics(
    prefix: tuple[Step, ...],
    keys: KeySet,
    aggs: Sequence[GroupAgg],
    run: RunTables,
    lookups: Sequence[Lookup],
) -> pa.Table:
    """One pass: per-group values of ``aggs`` after ``prefix``, merged over the pieces."""
    items: list[tuple[str, Node]] = []
    for j, agg in enumerate(aggs):
        if agg.func in UNMERGEABLE_PER_GROUP:
            msg = (
                f"`{agg!r}`: `{method_name(agg)}` per group cannot be merged from the pieces of a "
                f"streaming job ({unmergeable_reason(agg.func)}); compute it in memory "
                "(`LazyFrame.compute`)"
            )
            raise JobSpecError(msg)
        items.append((f"r{j}", Agg(agg.func, agg.arg, agg.ddof, agg.options)))
        if agg.func in ("mean", "std", "var"):
            items += [(f"n{j}", Agg("count", agg.arg)), (f"m{j}", Agg("mean", _wide(agg.arg)))]
        if agg.func in ("std", "var"):
            items.append((f"v{j}", Agg("var", _wide(agg.arg), 0)))
    named = tuple((f"k{i}", e) for i, e in enumerate(keys.exprs))
    merged: pa.Table | None = None
    for table in run((*prefix, Step("group_by", tuple(items), named)), lookups):
        # merged as the pieces come: memory bounded by the number of groups
        merged = table if merged is None else merge_tables([merged, table], len(named), aggs)
    assert merged is not None
    return merged.select([f"k{i}" for i in range(len(named))] + [f"r{j}" for j in
                                                                 range(len(aggs))])  # fmt: skip


def merge_tables(tables: Sequence[pa.Table], nkeys: int, aggs: Sequence[GroupAgg]) -> pa.Table:
    """Merge per-piece group tables (keys ``k*``, partials ``r*``/``n*``/``m*``/``v*``).

    The result has the same columns (so it merges again with the next piece), a
    row per group in order of first appearance over the pieces.
    """
    pieces = [t for t in tables if t.num_rows] or list(tables[:1])
    keys = [f"k{i}" for i in range(nkeys)]
    if len(pieces) == 1:
        return pieces[0]
    whole = pa.concat_tables(pieces, promote_options="permissive").combine_chunks()
    groups = factorize([whole.column(k).chunk(0) for k in keys], whole.num_rows)
    out = {k: take(whole.column(k).chunk(0), groups.first_rows) for k in keys}
    for j, agg in enumerate(aggs):
        out.update(_merged(agg, j, whole, groups))
    return pa.table(out)


def _numbers(array: pa.Array, fill: Any) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
    filled = array.fill_null(fill) if array.null_count else array
    return np.asarray(filled.to_numpy(zero_copy_only=False)), valid


def _merged(agg: GroupAgg, j: int, whole: pa.Table, groups: GroupIds) -> dict[str, pa.Array]:
    """The merged partial columns of reduction ``j`` (``r{j}``, and ``n/m/v{j}`` for moments)."""
    ids, count = groups.ids, groups.count
    assert ids is not None
    exact = whole.column(f"r{j}").chunk(0)
    func, t = agg.func, exact.type
    name = f"r{j}"
    if func in ("first", "last") or is_one_value(agg.arg):
        # a reduction of one value (`lit(1).count()`) is that value in each piece holding
        # the group, not their sum
        rows = groups.last_rows() if func == "last" else groups.first_rows
        return {c: take(whole.column(c).chunk(0), rows)
                for c in (name, f"n{j}", f"m{j}", f"v{j}") if c in whole.column_names}
    if func in ("count", "null_count", "len"):
        values, _ = _numbers(exact, 0)
        return {name: pa.array(_sum_by(values.astype(np.int64), ids, count)).cast(t)}
    if func == "sum":
        values, _ = _numbers(exact, 0)
        if pa.types.is_floating(t):
            total = np.bincount(ids, weights=values.astype(np.float64), minlength=count)
            return {name: pa.array(total).cast(t)}
        wide = np.uint64 if pa.types.is_unsigned_integer(t) else np.int64
        summed = _sum_by(values.astype(wide), ids, count)
        return {name: pa.array(summed.astype(t.to_pandas_dtype()), type=t)}
    if func in ("min", "max"):
        return {name: _extreme(func, exact, ids, count)}
    if func == "product":  # the pieces' products multiplied, in order (integers wrap)
        values, _ = _numbers(exact, 1)
        product = np.ones(count, dtype=values.dtype)
        np.multiply.at(product, ids, values)
        return {name: pa.array(product, type=t)}
    if func in BITWISE_AGGS:  # the pieces' values combined (their nulls left out)
        return {name: bitwise(func, groups, exact, None)}
    if func in ("any", "all"):
        # the pieces' answers, folded by the same (Kleene, without ignore_nulls) logic
        return {name: any_all(func, groups, exact, None, ignore_nulls=agg.options[0])}
    # mean, std, var from (count, mean, variance) with Chan's formula
    n, _ = _numbers(whole.column(f"n{j}").chunk(0), 0)
    m, _ = _numbers(whole.column(f"m{j}").chunk(0), 0.0)
    v, _ = _numbers(whole.column(f"v{j}").chunk(0), 0.0) if f"v{j}" in whole.column_names \
        else (np.zeros(len(n)), None)  # fmt: skip
    n = n.astype(np.float64)
    total = np.bincount(ids, weights=n, minlength=count)
    with np.errstate(all="ignore"):
        mean = np.bincount(ids, weights=n * m, minlength=count) / total
        dev = m - mean[ids]
        m2 = np.bincount(ids, weights=v * n + n * dev * dev, minlength=count)
        empty = total == 0
        out = {
            f"n{j}": pa.array(total).cast(whole.schema.field(f"n{j}").type),
            f"m{j}": pa.array(mean, mask=empty),
        }
        if func == "mean":
            if pa.types.is_temporal(t):  # a duration's or datetime's mean: its integers, truncated
                scale = _mean_scale(exact, m)
                whole_units = np.trunc(np.where(empty, 0.0, mean * scale)).astype(np.int64)
                out[name] = _temporal(whole_units, empty, t)
            else:
                out[name] = pa.array(mean, mask=empty).cast(t)
            return out
        dof = total - agg.ddof
        var = np.where(np.isnan(m2), np.nan, np.maximum(m2 / dof, 0.0))
        value = np.sqrt(var) if func == "std" else var
        out[name] = pa.array(value, mask=dof <= 0).cast(t)
        out[f"v{j}"] = pa.array(m2 / total, mask=empty)
    return out


def _sum_by(values: np.ndarray[Any, Any], ids: np.ndarray[Any, Any], count: int
            ) -> np.ndarray[Any, Any]:  # fmt: skip
    total = np.zeros(count, dtype=values.dtype)
    np.add.at(total, ids, values)  # integers wrap, as the engine's sums do
    return total


def _mean_scale(means: pa.Array, m: np.ndarray[Any, Any]) -> float:
    """The factor from the pieces' float means ``m`` to the unit of their results.

    1 for durations and datetimes (both in the column's unit); a date's mean is a
    Datetime[us] while its float mean counts days: the factor is the microseconds of
    a day, which is the factor that reproduces the pieces' own results.
    """
    physical, valid = _numbers(integer_values(means), 0)
    if not valid.any():
        return 1.0
    day = 86_400_000_000.0
    r, f = physical[valid].astype(np.float64), m[valid]
    return day if np.abs(r - f * day).max() < np.abs(r - f).max() else 1.0


def _temporal(values: np.ndarray[Any, Any], missing: np.ndarray[Any, Any],
              t: pa.DataType) -> pa.Array:  # fmt: skip
    """Integers as the temporal type ``t`` (its 32- or 64-bit physical values)."""
    width = np.int32 if t.bit_width == 32 else np.int64
    return pa.array(values.astype(width), mask=missing).view(t)


def _extreme_text(func: str, exact: pa.Array, ids: np.ndarray[Any, Any], count: int
                  ) -> pa.Array:  # fmt: skip
    """Min or max of the pieces' strings per group (text order), in their type."""
    t = exact.type
    text = exact.cast(pa.large_string()) if pa.types.is_dictionary(t) else exact
    best = pa.table({"g": pa.array(ids), "v": text}).group_by("g").aggregate([("v", func)])
    where = np.full(count, -1, dtype=np.int64)  # the row of `best` holding each group
    where[np.asarray(best.column("g").to_numpy())] = np.arange(best.num_rows)
    picked = best.column(f"v_{func}").take(pa.array(where, mask=where < 0))
    return picked.combine_chunks().cast(t)


def _extreme(func: str, exact: pa.Array, ids: np.ndarray[Any, Any], count: int) -> pa.Array:
    """Min or max of the pieces' values per group: nulls skipped, NaN only if all are NaN."""
    t = exact.type
    if pa.types.is_dictionary(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
        return _extreme_text(func, exact, ids, count)
    if pa.types.is_temporal(t):  # by their integers
        return _extreme(func, integer_values(exact), ids, count).view(t)
    if pa.types.is_boolean(t):
        values, valid = _numbers(pa.compute.cast(exact, pa.int8()), 0)
    else:
        values, valid = _numbers(exact, 0)
    present = np.bincount(ids[valid], minlength=count) > 0
    if pa.types.is_floating(t):
        nan = np.isnan(values)
        number = valid & ~nan
        start = np.inf if func == "min" else -np.inf
        best = np.full(count, start)
        (np.minimum if func == "min" else np.maximum).at(best, ids[number], values[number])
        some = np.bincount(ids[number], minlength=count) > 0
        best = np.where(some, best, np.nan)
        return pa.array(best, mask=~present).cast(t)
    info = np.iinfo(values.dtype)
    best = np.full(count, info.max if func == "min" else info.min, dtype=values.dtype)
    (np.minimum if func == "min" else np.maximum).at(best, ids[valid], values[valid])
    out = pa.array(best, mask=~present)
    return out.cast(t) if not pa.types.is_boolean(t) else out.cast(pa.bool_())


# -- pieces ------------------------------------------------------------------------------------


def _key_arrays(piece: pa.Table, keys: Sequence[Node]) -> list[pa.Array]:
    from colbridge.lazy import LazyFrame

    out: list[pa.Array] = []
    computed = {f"k{i}": k for i, k in enumerate(keys) if not isinstance(k, Column)}
    values = LazyFrame(piece).select(**computed).compute("cpu") if computed else None
    for i, k in enumerate(keys):
        if isinstance(k, Column):
            column = piece.column(k.name)
        else:
            assert values is not None
            column = values.column(f"k{i}")
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        out.append(column)
    return out


def attach(piece: pa.Table, lookups: Sequence[Lookup]) -> pa.Table:
    """``piece`` with the looked-up columns of every lookup (null where a key has no group)."""
    for name, column in looked_up(piece, lookups).items():
        piece = piece.append_column(name, column)
    return piece


def looked_up(piece: pa.Table, lookups: Sequence[Lookup]) -> dict[str, pa.Array]:
    """The columns `attach` adds to ``piece``, by name (a later lookup may read earlier ones)."""
    out: dict[str, pa.Array] = {}
    for lookup in lookups:
        table = lookup.table.combine_chunks()
        ngroups = table.num_rows
        joint = []
        for i, array in enumerate(_key_arrays(piece, lookup.keys)):
            known = table.column(f"k{i}").chunk(0) if table.num_rows else pa.array(
                [], type=array.type)  # fmt: skip
            if array.type != known.type:
                array = array.cast(known.type)
            joint.append(pa.concat_arrays([known, array]))
        # the table's keys are distinct: factorized first, they are ids 0 .. groups-1
        ids = factorize(joint, ngroups + piece.num_rows).ids
        assert ids is not None
        rows = ids[ngroups:].astype(np.int64)
        rows = np.where(rows < ngroups, rows, -1)
        for name in lookup.names:
            column = table.column(name).chunk(0) if ngroups else pa.nulls(
                0, type=table.schema.field(name).type)  # fmt: skip
            out[name] = take(column, rows)
            piece = piece.append_column(name, out[name])
    return out


# -- group_by in a job -------------------------------------------------------------------------


def resolve_group_by(
    steps: Sequence[Step], run: RunTables, lookups: Sequence[Lookup]
) -> tuple[pa.Table, tuple[Step, ...], int]:
    """The first ``group_by`` step computed over all pieces: its groups table and what follows.

    Returns the table of groups (before the aggregations' elementwise work) and
    the steps to run on it in memory.
    """
    k = next(j for j, s in enumerate(steps) if s.kind == "group_by")
    step = steps[k]
    keys = KeySet(tuple(e for _, e in step.keys))
    reductions: list[GroupAgg] = []
    over_groups: list[tuple[str, Node]] = []

    def outer(n: Node, expr: Node) -> Node:
        if isinstance(n, Agg):
            if any(isinstance(m, (Agg, GroupAgg, Over)) for m in deep_walk(n.arg)):
                msg = (
                    f"`{expr!r}`: reductions nested in a `group_by` aggregation cannot be "
                    "merged from the pieces of a streaming job; compute it in memory"
                )
                raise JobSpecError(msg)
            agg = GroupAgg(n.func, n.arg, keys, n.ddof, n.options)
            if agg not in reductions:
                reductions.append(agg)
            return Column(f"r{reductions.index(agg)}")
        kids = children(n)
        return reconstruct(n, tuple(outer(c, expr) for c in kids)) if kids else n

    for name, expr in step.items:
        over_groups.append((name, outer(expr, expr)))
    table = _statistics(tuple(steps[:k]), keys, reductions, run, lookups)
    table = table.rename_columns([n for n, _ in step.keys] + table.column_names[len(step.keys):])
    select = Step("select", tuple((n, Column(n)) for n, _ in step.keys) + tuple(over_groups))
    return table, (select, *steps[k + 1:]), 1
