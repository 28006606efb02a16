"""Random expression trees (hypothesis) evaluated by colbridge and by polars, on many frames each.

Each tree compiles once; it is then checked against polars on many generated
frames (nulls, NaN, offsets, chunks, empty), so thousands of cases run with a
bounded number of kernels. ``-m slow`` raises the counts.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from colbridge.testing.asserts import assert_same_as_polars
from tests.engine_data import tables

TYPES = [pa.float64(), pa.int32(), pa.bool_(), pa.int64()]
NUMERIC_COLS = ["a", "b", "d"]

Tree = tuple[Any, ...]


def numeric(depth: int) -> st.SearchStrategy[Tree]:
    leaves = st.one_of(
        st.sampled_from([("col", c) for c in NUMERIC_COLS]),
        st.integers(-5, 5).map(lambda v: ("lit", v)),
        st.sampled_from([0.5, -1.25, 3.0]).map(lambda v: ("lit", v)),
    )
    if depth == 0:
        return leaves
    sub = numeric(depth - 1)
    return st.one_of(
        leaves,
        st.tuples(st.sampled_from(["+", "-", "*", "/", "//", "%"]), sub, sub),
        st.tuples(st.sampled_from(["abs", "sqrt", "neg", "floor", "sign", "f64", "round"]), sub),
        st.tuples(st.just("when"), boolean(depth - 1), sub, sub),
        st.tuples(st.just("fill_null"), sub, st.integers(-2, 2)),
        st.tuples(st.sampled_from(["mean", "sum", "max", "min"]), sub),
    )


def boolean(depth: int) -> st.SearchStrategy[Tree]:
    leaf = st.just(("col", "c"))
    if depth == 0:
        return leaf
    num = numeric(depth - 1)
    sub = boolean(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(st.sampled_from(["<", "==", ">="]), num, num),
        st.tuples(st.sampled_from(["&", "|"]), sub, sub),
        st.tuples(st.just("~"), sub),
        st.tuples(st.just("is_null"), num),
    )


def build(tree: Tree, m: Any) -> Any:
    kind = tree[0]
    if kind == "col":
        return m.col(tree[1])
    if kind == "lit":
        return m.lit(tree[1])
    args = [build(t, m) if isinstance(t, tuple) else t for t in tree[1:]]
    binary = {
        "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
        "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
        "<": lambda a, b: a < b, "==": lambda a, b: a == b, ">=": lambda a, b: a >= b,
        "&": lambda a, b: a & b, "|": lambda a, b: a | b,
    }  # fmt: skip
    if kind in binary:
        return binary[kind](*args)
    if kind == "when":
        return m.when(args[0]).then(args[1]).otherwise(args[2])
    if kind == "fill_null":
        return args[0].fill_null(args[1])
    if kind == "neg":
        return -args[0]
    if kind == "~":
        return ~args[0]
    if kind == "f64":
        return args[0].cast(m.Float64 if m.__name__ == "polars" else "float64")
    return getattr(args[0], kind)()


TREES = int(os.environ.get("COLBRIDGE_FUZZ_TREES", "30"))
FRAMES_PER_TREE = 25


@settings(
    max_examples=TREES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    report_multiple_bugs=False,
)
@given(tree=numeric(3), keep=boolean(2), data=st.data())
def test_random_trees_match_polars(tree: Tree, keep: Tree, data: st.DataObject) -> None:
    for _ in range(FRAMES_PER_TREE):
        table = data.draw(tables(TYPES, names=("a", "b", "c", "d")), label="frame")
        assert_same_as_polars(
            table,
            lambda m, q: q.with_columns(z=build(tree, m)).filter(build(keep, m)),
            kinds=("polars",),
            rtol=1e-9,
        )


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(tree=numeric(4), data=st.data())
def test_random_trees_match_polars_slow(tree: Tree, data: st.DataObject) -> None:
    for _ in range(250):
        table = data.draw(tables(TYPES, names=("a", "b", "c", "d"), max_rows=200))
        assert_same_as_polars(table, lambda m, q: q.with_columns(z=build(tree, m)), rtol=1e-9)
