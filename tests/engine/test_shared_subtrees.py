"""Expressions whose trees share subtrees: planned, written and keyed by their distinct nodes.

``e = e + e`` twenty times is a tree of 2**21 - 1 nodes with 21 distinct ones; typing
builds trees like it (a time-zoned ``dt.truncate("1mo")`` uses its local time and civil
date in many places). Walking, writing (``repr``, kernel headers, cache keys) and
planning must each take the distinct nodes once: written out in full, such a tree
never finishes.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.expr.nodes import walk
from colbridge.testing.asserts import assert_same_as_polars
from tests.engine.temporal_data import temporal_column


def doubled(times: int, leaf: cb.Expr) -> cb.Expr:
    e = leaf
    for _ in range(times):
        e = e + e
    return e


def test_walk_yields_each_distinct_node_once_in_first_use_order() -> None:
    e = doubled(20, cb.col("a"))
    nodes = list(walk(e.node))
    assert len(nodes) == 21
    assert nodes[-1] == cb.col("a").node
    both = cb.col("a") * 2 + cb.col("b") * 2
    assert [repr(n) for n in walk(both.node)] == [
        '((col("a") * lit(2)) + (col("b") * lit(2)))',
        '(col("a") * lit(2))', 'col("a")', "lit(2)", '(col("b") * lit(2))', 'col("b")',
    ]  # fmt: skip


def test_a_shared_subtree_is_written_once_and_texts_tell_trees_apart() -> None:
    text = repr(doubled(20, cb.col("a")).node)
    assert len(text) < 20_000  # written out in full: about 20 MB
    assert text.count("#0=") == 1
    assert "#0)" in text
    assert repr(doubled(20, cb.col("a")).node) == text  # equal trees: equal text
    assert repr(doubled(20, cb.col("b")).node) != text
    assert repr(doubled(19, cb.col("a")).node) != text
    small = cb.col("a") + cb.col("a")  # what users write reads as written
    assert repr(small.node) == '(col("a") + col("a"))'


def test_a_doubled_expression_computes_its_value() -> None:
    table = pa.table({"a": pa.array([7.0, 1.0, None, -2.5, 3.0]).slice(1),
                      "b": pa.array([1, 2, None, -4], pa.int64())})  # fmt: skip
    # 2**41 - 1 nodes as written: typing and planning take each distinct node once. Two
    # equal trees built apart (`y`) are still compared node by node as written (a
    # dataclass `==`), so `y` stays small.
    out = cb.lazy(table).select(x=doubled(40, cb.col("a")),
                                y=doubled(12, cb.col("b")) - doubled(11, cb.col("b"))).compute()
    # doubling is exact in float64 and int64 here: the oracle is one multiplication
    assert out.column("x").to_pylist() == [None if v is None else v * 2**40
                                           for v in table.column("a").to_pylist()]
    assert out.column("y").to_pylist() == [None if v is None else v * 2**11
                                           for v in table.column("b").to_pylist()]
    # polars as the oracle where its own planner takes the tree (2**9 - 1 nodes)
    assert_same_as_polars(table, lambda m, q: q.with_columns(
        x=doubled(8, m.col("a")), y=doubled(8, m.col("b")) - m.col("b"),
    ))  # fmt: skip


def test_plans_differing_inside_a_shared_subtree_get_kernels_of_their_own() -> None:
    # the kernel cache key writes a shared subtree once: what it holds must still count
    table = pa.table({"a": [1.5, -2.0, None, 3.0]})
    a = cb.col("a")
    squared = cb.lazy(table).select(x=doubled(10, a * a)).compute()
    summed = cb.lazy(table).select(x=doubled(10, a + a)).compute()
    values = table.column("a").to_pylist()
    assert squared.column("x").to_pylist() == [None if v is None else v * v * 2**10
                                               for v in values]  # fmt: skip
    assert summed.column("x").to_pylist() == [None if v is None else (v + v) * 2**10
                                              for v in values]  # fmt: skip


def test_zoned_month_truncation_is_planned_from_its_distinct_nodes() -> None:
    column = temporal_column(np.random.default_rng(3), pa.timestamp("us", "Europe/London"),
                             40, 0.25)  # fmt: skip
    frame = pl.from_arrow(pa.table({"a": column}))
    assert isinstance(frame, pl.DataFrame)
    q = frame.gpu.with_columns(t=cb.col("a").dt.truncate("1mo"), e=cb.col("a").dt.month_end())
    # written out as a tree, the kernel's text was 109 MB (its plan in the header)
    assert len(q.explain(source=True, device="cpu")) < 2_000_000


@pytest.mark.timeout(300)  # a step that walks the tree as written never finishes
def test_every_kind_of_step_plans_a_doubled_expression() -> None:
    """Reductions, filters, groups, windows and scans of ``e = e + e`` 40 times."""
    rng = np.random.default_rng(5)
    n = 50
    a = np.round(rng.normal(size=n) * 8) / 4  # quarters: sums are exact in any order
    table = pa.table({"a": pa.array(a, mask=rng.random(n) < 0.2),
                      "g": pa.array(rng.integers(0, 4, n))})  # fmt: skip
    e, x = doubled(40, cb.col("a")), cb.col("a") * 2.0**40
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    plans = {
        "select": lambda c: cb.lazy(frame).select(s=c.sum(), m=c.max(), sd=c.std(), z=c - c.mean()),
        "filter": lambda c: cb.lazy(frame).filter(c > 0.0).with_columns(z=c * 0.5),
        "group_by": lambda c: cb.lazy(frame).group_by("g").agg(s=c.sum(), k=c.filter(c > 0.0)
                                                               .count()),
        "over": lambda c: cb.lazy(frame).with_columns(z=c - c.mean().over("g")),
        "ordered": lambda c: cb.lazy(frame).with_columns(d=c - c.shift(1), r=c.cum_sum()),
    }  # fmt: skip
    for name, plan in plans.items():
        got, want = plan(e).compute(), plan(x).compute()  # the oracle: one multiplication
        if name == "group_by":  # groups come in no particular order
            got, want = got.sort("g"), want.sort("g")
        assert got.equals(want), name
