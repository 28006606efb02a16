"""``unique``, ``mode``, ``top_k`` and ``bottom_k`` as the inputs of reductions, against polars.

Each changes the number of rows, so (as ``filter`` and ``head``) it is taken as the
input of a reduction, whole-column, per group in ``group_by(...).agg`` and per window
in ``over`` (and as an output of ``select``: ``test_select_fewer_rows.py``). polars
gives these values in no set order, so only reductions that do not depend on it are
compared. Generated floats with nulls, NaN and both
zeros (one value to ``unique``), integers, strings; ``k`` from 0 to past the rows.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import SchemaError, UnsupportedOperationError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier

FLOATS = st.one_of(st.none(), st.sampled_from([1.0, 2.0, -0.0, 0.0, float("nan"), 3.5, -1.0]))


def _table(xs: list[float | None], ints: list[int | None], keys: list[str]) -> pa.Table:
    n = min(len(xs), len(ints), len(keys))
    return pa.table({"x": pa.array(xs[:n], pa.float64()), "i": pa.array(ints[:n], pa.int64()),
                     "s": pa.array([None if v is None else f"s{v}" for v in ints[:n]],
                                   pa.string()),
                     "g": pa.array(keys[:n], pa.string())})  # fmt: skip


def _reduced(m: Any, column: str, k: int) -> list[Any]:
    x = m.col(column)
    out = [x.unique().count().alias("uc"), x.unique().len().alias("ul"),
           x.unique().n_unique().alias("un"), x.unique().max().alias("umax"),
           x.top_k(k).count().alias("tc"), x.top_k(k).min().alias("tmin"),
           x.top_k(k).null_count().alias("tn"), x.bottom_k(k).max().alias("bmax"),
           x.bottom_k(k).len().alias("bl")]  # fmt: skip
    if column != "s":
        out += [x.unique().sum().alias("us"), x.top_k(k).sum().alias("ts"),
                x.bottom_k(k).mean().alias("bm")]  # fmt: skip
    return out


#: the drawn columns of `_table`, and which one is reduced
COLUMNS = {
    "xs": st.lists(FLOATS, max_size=25),
    "ints": st.lists(st.one_of(st.none(), st.integers(-3, 3)), min_size=25, max_size=25),
    "keys": st.lists(st.sampled_from(["a", "b", "c"]), min_size=25, max_size=25),
    "column": st.sampled_from(["x", "i", "s"]),
}


def _in(context: str, frame: Any, reduced: list[Any]) -> Any:
    """``reduced`` over the whole column, per group of ``g`` (``agg``), or per window."""
    if context == "select":
        return frame.select(reduced)
    if context == "agg":
        return frame.group_by("g", maintain_order=True).agg(reduced)
    return frame.select([e.over("g") for e in reduced])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**COLUMNS, k=st.integers(0, 30), context=st.sampled_from(["select", "agg", "over"]))
def test_equal_polars(xs: list[float | None], ints: list[int | None], keys: list[str],
                      column: str, k: int, context: str) -> None:  # fmt: skip
    table = _table(xs, ints, keys)

    assert_same_as_polars(table, lambda m, f: _in(context, f, _reduced(m, column, k)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**COLUMNS, context=st.sampled_from(["select", "agg", "over", "values"]))
def test_mode_equal_polars(xs: list[float | None], ints: list[int | None], keys: list[str],
                           column: str, context: str) -> None:  # fmt: skip
    """The most frequent values (a null one of them): reduced, per group, and as values in
    the order they first appear (polars' ``maintain_order=True``). A query of its own: with
    the others it nests deep enough for the planner to raise the recursion limit."""
    table = _table(xs, ints, keys)

    def steps(m: Any, f: Any) -> Any:
        x = m.col(column)
        if context == "values":
            return f.select(x.mode(maintain_order=True))
        return _in(context, f, [x.mode().min().alias("mmin"), x.mode().max().alias("mmax"),
                                x.mode().len().alias("ml"), x.mode().null_count().alias("mn")])

    assert_same_as_polars(table, steps)


def test_refusals_name_the_method() -> None:
    frame = pl.DataFrame({"x": [3, None, 1]})
    with pytest.raises(SchemaError, match=r"`unique\(\)` inside an expression would change"):
        frame.gpu.with_columns(y=cb.col("x").unique()).compute()
    with pytest.raises(SchemaError, match=r"`top_k\(2\)` inside an expression would change"):
        frame.gpu.with_columns(y=cb.col("x").top_k(2)).compute()
    with pytest.raises(UnsupportedOperationError, match=r"whole number as `k`"):
        cb.col("x").top_k(cb.col("x"))  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match=r"`bottom_k\(k=-1\)`"):
        cb.col("x").bottom_k(-1)


def test_a_string_counted_per_group_under_a_running_predicate() -> None:
    # `count` of a string is read from the Arrow column itself: it has no kernel type,
    # which the planner looked up when a scan in the predicate became a column
    table = pa.table({"s": pa.array(["a", None, "a", "b", None], pa.string()),
                      "g": pa.array(["x", "x", "y", "x", "y"], pa.string())})  # fmt: skip
    assert_same_as_polars(table, lambda m, f: f.group_by("g", maintain_order=True).agg(
        m.col("s").filter(m.col("s").is_first_distinct()).count(),
        n=m.col("s").filter(m.col("s").is_first_distinct()).null_count(),
        u=m.col("s").unique().count()))  # fmt: skip


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier_and_the_string_language(tier: str) -> None:
    frame = pl.DataFrame({"x": [3.0, None, 1.0, 3.0, 7.0, float("nan"), -0.0, 0.0] * 400,
                          "g": [1, 1, 2, 2, 2, 3, 3, 3] * 400})  # fmt: skip

    def reduced(m: Any) -> list[Any]:
        x = m.col("x")
        return [x.unique().count().alias("u"), x.top_k(3).sum().alias("t"),
                x.bottom_k(2).max().alias("b"), x.mode().min().alias("m"),
                x.approx_n_unique().alias("a")]  # fmt: skip

    want = frame.group_by("g", maintain_order=True).agg(reduced(pl))
    got = compute_on_tier(cb.lazy(frame).group_by("g", maintain_order=True).agg(reduced(cb)),
                          tier)  # fmt: skip
    assert_frame_equal(got, want)
    written = frame.gpu.eval(
        "u = x.unique().count(); t = sum(top_k(x, 3)); b = x.bottom_k(2).max()")
    assert_frame_equal(written.select("u", "t", "b").head(1), frame.select(
        u=pl.col("x").unique().count(), t=pl.col("x").top_k(3).sum(),
        b=pl.col("x").bottom_k(2).max()))  # fmt: skip


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**COLUMNS, context=st.sampled_from(["select", "agg", "over"]))
def test_approx_n_unique_of_few_values(xs: list[float | None], ints: list[int | None],
                                       keys: list[str], column: str, context: str) -> None:
    """polars' sketch is exact for a few distinct values (it errs past a few dozen, where
    colbridge still counts exactly): here it is the oracle, and equals `n_unique`."""
    table = _table(xs, ints, keys)

    assert_same_as_polars(table, lambda m, f: _in(context, f, [
        m.col(column).approx_n_unique().alias("a"), m.col(column).n_unique().alias("n")]))
