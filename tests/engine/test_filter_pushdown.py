"""Failures on rows a filter drops: raised exactly where polars raises.

polars pushes each part of a filter below the columns computed before it when the
part reads input columns only and neither it nor those columns hold a reduction or
a window; a strict cast or a negative integer power that fails on a row the pushed
parts drop then raises nothing. Every other failure raises. colbridge fuses the
filter and the columns into one kernel and must raise, or not, the same way: each
plan here runs on polars and on every CPU tier, and the two must agree on raising
and, where neither raises, on the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.errors import InvalidOperationError

# row 1 fails: 300 does not fit an int8, and b = -2 is a negative exponent
TABLE = pa.table({"a": pa.array([1, 300, 3, 4], pa.int64()), "b": pa.array([1, -2, 3, 2]),
                  "c": pa.array([0.5, 1.5, None, 2.5])})  # fmt: skip


def _cast(m: Any) -> Any:
    return m.col("a").cast(pl.Int8 if m is pl else "int8")


def _power(m: Any) -> Any:
    return m.col("a") ** m.col("b")


def _drops_row_1(m: Any) -> Any:
    return m.col("b") != -2


Plan = Callable[[Any, Any, Callable[[Any], Any]], Any]

PLANS: dict[str, Plan] = {
    # pushed: the failing column is computed on the kept rows only
    "input predicate": lambda m, q, bad: q.with_columns(z=bad(m)).filter(_drops_row_1(m)),
    "two conjuncts": lambda m, q, bad: q.with_columns(z=bad(m)).filter(
        _drops_row_1(m) & (m.col("c").is_not_null() | (m.col("a") > 0))),
    "select then filter": lambda m, q, bad: q.select(z=bad(m), b=m.col("b")).filter(
        _drops_row_1(m)),
    "through two steps": lambda m, q, bad: q.with_columns(z=bad(m)).with_columns(
        y=m.col("a") * 2).filter(_drops_row_1(m)),
    "filter first": lambda m, q, bad: q.filter(_drops_row_1(m)).with_columns(z=bad(m)),
    "agg filter first": lambda m, q, bad: q.filter(
        m.col("b") < m.col("b").max()).with_columns(z=bad(m)),
    "part reads the column": lambda m, q, bad: q.with_columns(z=bad(m)).filter(
        m.col("z").is_not_null() & _drops_row_1(m)),
    "two filters": lambda m, q, bad: q.with_columns(z=bad(m)).filter(
        m.col("a") > 0).filter(_drops_row_1(m)),
    # not pushed: polars computes the failing column on every row
    "reduction in the predicate": lambda m, q, bad: q.with_columns(z=bad(m)).filter(
        m.col("b") != m.col("b").min()),
    "reduction-only predicate": lambda m, q, bad: q.with_columns(z=bad(m)).filter(
        m.col("b").sum() > 100),
    "reduction beside the column": lambda m, q, bad: q.with_columns(
        z=bad(m), d=m.col("a") - m.col("a").mean()).filter(_drops_row_1(m)),
    "reduction in the column": lambda m, q, bad: q.with_columns(
        z=bad(m) + m.col("a").sum()).filter(_drops_row_1(m)),
    "predicate of the column alone": lambda m, q, bad: q.with_columns(z=bad(m)).filter(
        m.col("z").is_not_null()),
    "window in the predicate": lambda m, q, bad: q.with_columns(z=bad(m)).filter(
        m.col("b") != m.col("b").min().over("c")),
    # after a filter that is not pushed, a later column sees the kept rows only
    "column after an unpushed filter": lambda m, q, bad: q.with_columns(
        y=m.col("a") * 2).filter(m.col("b") != m.col("b").min()).with_columns(z=bad(m)),
    "failing column after it": lambda m, q, bad: q.with_columns(z=bad(m)).filter(
        m.col("b") != m.col("b").min()).with_columns(w=_cast(m)),
}


def _polars(plan: Plan, bad: Callable[[Any], Any]) -> tuple[bool, Any]:
    try:
        return False, plan(pl, pl.from_arrow(TABLE).lazy(), bad).collect()
    except pl.exceptions.PolarsError:
        return True, None


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
@pytest.mark.parametrize("bad", [_cast, _power], ids=["strict cast", "negative power"])
@pytest.mark.parametrize("name", list(PLANS))
def test_failures_raise_where_polars_raises(name: str, bad: Any, tier: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    plan = PLANS[name]
    raises, want = _polars(plan, bad)
    for frame in (TABLE, pl.from_arrow(TABLE)):
        q = plan(cb, cb.lazy(frame), bad)
        if raises:
            with pytest.raises(InvalidOperationError):
                q.compute()
            continue
        got = q.compute()
        got = got if isinstance(got, pl.DataFrame) else pl.from_arrow(got)
        assert got.columns == want.columns
        for column in want.columns:
            assert got[column].to_list() == want[column].to_list(), column


def test_a_plan_of_each_kind_is_in_the_table() -> None:
    # the table above must hold plans polars runs and plans it refuses, for both failures
    outcomes = {(bad.__name__, _polars(plan, bad)[0]) for plan in PLANS.values()
                for bad in (_cast, _power)}  # fmt: skip
    assert outcomes == {("_cast", True), ("_cast", False), ("_power", True), ("_power", False)}


def test_a_large_frame_compacts_only_a_wholly_pushed_filter() -> None:
    # past the NumPy tier's rows, the compiled filter compacts in its kernel: it must
    # not skip the rows an unpushed filter drops when a column fails on them
    n = 300_000
    rng = np.random.default_rng(5)
    a = rng.integers(-100, 100, n)
    a[n // 2] = 1000
    table = pa.table({"a": a, "b": rng.integers(0, 5, n)})
    pushed = cb.lazy(table).with_columns(z=cb.col("a").cast("int8")).filter(cb.col("a") < 500)
    kept = pl.from_arrow(table).lazy().with_columns(z=pl.col("a").cast(pl.Int8)).filter(
        pl.col("a") < 500).collect()  # fmt: skip
    got = pl.from_arrow(pushed.compute())
    assert isinstance(got, pl.DataFrame)
    assert got.height == n - 1
    assert got.equals(kept)  # every kept row in its place
    unpushed = cb.lazy(table).with_columns(z=cb.col("a").cast("int8")).filter(
        cb.col("a") < cb.col("a").max())  # fmt: skip
    with pytest.raises(InvalidOperationError, match="int8"):
        unpushed.compute()
    want = pl.from_arrow(table).lazy().with_columns(z=pl.col("a").cast(pl.Int8)).filter(
        pl.col("a") < pl.col("a").max())  # fmt: skip
    with pytest.raises(pl.exceptions.InvalidOperationError):
        want.collect()


def test_a_filter_on_computed_columns_compacts_when_nothing_can_fail() -> None:
    # polars applies `w > 1` after computing w; with no output able to raise, computing
    # the outputs on the kept rows alone gives the same frame, so the pass compacts
    n = 300_000
    rng = np.random.default_rng(6)
    table = pa.table({"a": rng.normal(size=n), "b": rng.integers(-50, 50, n)})
    q = cb.lazy(table).with_columns(w=cb.col("a") * 2 + cb.col("b"), v=cb.col("b") // 3)
    q = q.filter(cb.col("w") > 1)
    got = pl.from_arrow(q.compute())
    want = pl.from_arrow(table).lazy().with_columns(
        w=pl.col("a") * 2 + pl.col("b"), v=pl.col("b") // 3).filter(pl.col("w") > 1).collect()
    assert isinstance(got, pl.DataFrame)
    assert got.equals(want)
    assert any("rows kept" in k for k in q.last_report.stats.kernels)
    # a strict cast can fail: the outputs are computed on every row, as polars does
    cast = cb.lazy(table).with_columns(w=cb.col("a") * 2, z=cb.col("b").cast("int8"))
    cast = cast.filter(cb.col("w") > 1)
    assert pl.from_arrow(cast.compute()).height == (table.column("a").to_numpy() * 2 > 1).sum()
    assert not any("rows kept" in k for k in cast.last_report.stats.kernels)
