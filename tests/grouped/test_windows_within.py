"""Windows (``over``) inside reductions, windows and ``group_by(...).agg(...)``, against polars.

polars evaluates a window inside an aggregation within each of the aggregation's
groups (by its keys and the window's own), puts the window's value on every row of
its group, and only then reduces: ``x.max().over(g).sum().over(g)`` is the group's
maximum times its rows, where ``x.max().sum().over(g)`` (no inner ``over``) is the
maximum. A reduction over no keys (``over(order_by=t)``) still gives a value on every
row. Generated frames hold nulls in keys and values, ties, one row and none.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import SchemaError
from colbridge.testing.asserts import Tolerance, assert_same_as_polars

TOL = Tolerance(rtol=1e-9, atol=1e-9)


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)

    def nulls(values: list[Any], share: float = 0.2) -> list[Any]:
        return [None if rng.random() < share else v for v in values]

    days = [dt.date(2020, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 5, n)]
    return pa.table({
        "g": pa.array(nulls(rng.integers(0, 3, n).tolist()), pa.int64()),
        "h": pa.array(rng.integers(0, 2, n).astype(bool)),
        "t": pa.array(rng.permutation(n), pa.int64()),
        "x": pa.array(nulls(np.round(rng.normal(0, 10, n), 2).tolist()), pa.float64()),
        "i": pa.array(nulls(rng.integers(-20, 20, n).tolist()), pa.int64()),
        "d": pa.array(nulls(days), pa.date32()),
    })  # fmt: skip


#: a window inside a reduction: reduced again over the group_by's groups or another window
INNER: dict[str, Any] = {
    "sum_over_max": lambda m: m.col("x").sum().over("g").max(),
    "first_over_max": lambda m: m.col("x").first().over("g").max(),
    "centred_sum": lambda m: (m.col("x") - m.col("x").mean().over("g")).sum(),
    "len_over_max": lambda m: m.len().over("g").max(),
    "ordered_first_max": lambda m: m.col("i").first().over(order_by="t").max(),
    "date_first_max": lambda m: m.col("d").first().over("g").max(),
    "max_over_sum": lambda m: m.col("i").max().over("g").sum(),
    "max_over_count": lambda m: m.col("x").max().over("g").count(),
    "max_over_std": lambda m: m.col("i").max().over("g").std(),
    "max_sum": lambda m: m.col("i").max().sum(),  # no inner window: one value per group
    "cum_sum_of_window": lambda m: m.col("i").max().over("g").cum_sum().max(),
    # a reduction between: one value per group, which `product` sees once (not per row)
    "product_of_sum": lambda m: m.col("i").max().over("g").sum().product(),
    "sum_of_count": lambda m: m.col("x").max().over("g").count().sum(),
}

#: windows of windows, as columns
NESTED: dict[str, Any] = {
    "sum_of_max": lambda m: m.col("i").max().over("g").sum().over("g"),
    "sum_of_sum": lambda m: m.col("i").sum().over("g").sum().over("g"),
    "len_of_max": lambda m: m.col("i").max().over("g").len().over("g"),
    "finer": lambda m: m.col("i").max().over("g").sum().over("g", "h"),
    "coarser": lambda m: m.col("i").max().over("g", "h").sum().over("g"),
    "plus": lambda m: (m.col("i").max().over("g") + 1).sum().over("g"),
    "count": lambda m: m.col("x").max().over("g").count().over("g"),
    "std": lambda m: m.col("x").min().over("g").std().over("h"),
    "product": lambda m: m.col("i").max().over("g").product().over("g"),
    "no_inner": lambda m: m.col("i").max().sum().over("g"),
    "cum_sum_of_max": lambda m: m.col("i").max().over("g").cum_sum().over("g"),
    "shift_of_max": lambda m: m.col("x").max().over("g").shift(1).over("h"),
    "rolling_of_min": lambda m: m.col("i").min().over("g").rolling_sum(2).over("g"),
    "product_of_sum": lambda m: m.col("i").max().over("h").sum().product().over("g"),
    "sum_of_count": lambda m: m.col("x").max().over("h").count().sum().over("g"),
}

#: reductions over no keys, in the order of `t`: a value on every row
ORDERED: dict[str, Any] = {
    "first": lambda m: m.col("x").first().over(order_by="t"),
    "last_desc": lambda m: m.col("i").last().over(order_by="t", descending=True),
    "n_unique": lambda m: m.col("i").n_unique().over(order_by="t"),
    "sum": lambda m: m.col("i").sum().over(order_by="t"),
    "mean": lambda m: m.col("x").mean().over(order_by="t"),
    "both": lambda m: (m.col("x").first() + m.col("x").max()).over(order_by="t"),
    "centred": lambda m: (m.col("x") - m.col("x").sum()).over(order_by="t"),
}


@settings(max_examples=10, deadline=None)
@given(n=st.sampled_from([0, 1, 2, 9, 40]), seed=st.integers(0, 2**32 - 1),
       names=st.lists(st.sampled_from(sorted(INNER)), min_size=1, max_size=4, unique=True))
def test_windows_inside_group_by_aggregations(n: int, seed: int, names: list[str]) -> None:
    def steps(m: Any, q: Any) -> Any:
        return q.group_by("h", maintain_order=True).agg(
            **{name: INNER[name](m) for name in names})  # fmt: skip

    assert_same_as_polars(_table(n, seed), steps, kinds=("polars", "pandas"), tolerance=TOL)


@settings(max_examples=10, deadline=None)
@given(n=st.sampled_from([0, 1, 2, 9, 40]), seed=st.integers(0, 2**32 - 1),
       names=st.lists(st.sampled_from(sorted(NESTED)), min_size=1, max_size=4, unique=True))
def test_windows_of_windows(n: int, seed: int, names: list[str]) -> None:
    def steps(m: Any, q: Any) -> Any:
        return q.with_columns(**{name: NESTED[name](m) for name in names})

    assert_same_as_polars(_table(n, seed), steps, kinds=("polars", "pyarrow"), tolerance=TOL)


@settings(max_examples=8, deadline=None)
@given(n=st.sampled_from([0, 1, 2, 9, 40]), seed=st.integers(0, 2**32 - 1),
       names=st.lists(st.sampled_from(sorted(ORDERED)), min_size=1, max_size=3, unique=True),
       select=st.booleans())
def test_reductions_over_an_order_alone(n: int, seed: int, names: list[str],
                                        select: bool) -> None:  # fmt: skip
    def steps(m: Any, q: Any) -> Any:
        exprs = {name: ORDERED[name](m) for name in names}
        return q.select(**exprs) if select else q.with_columns(**exprs)

    assert_same_as_polars(_table(n, seed), steps, kinds=("polars", "pandas"), tolerance=TOL)


@pytest.mark.parametrize("seed", [3, 11])
def test_a_reduction_of_a_reduction_of_a_window_sees_one_value_per_group(seed: int) -> None:
    # the inner reduction (`.sum()` of a window's rows) is one value per group: a product
    # (or a sum) of it reads it once, not once per row of the group
    table = _table(40, seed)
    names = ("product_of_sum", "sum_of_count")
    assert_same_as_polars(table, lambda m, q: q.group_by("h", maintain_order=True).agg(
        **{name: INNER[name](m) for name in names}), kinds=("polars",), tolerance=TOL)  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.with_columns(
        **{name: NESTED[name](m) for name in names}), kinds=("polars",), tolerance=TOL)  # fmt: skip


def test_a_window_as_an_aggregation_is_refused() -> None:
    # polars gives each group a list (the window's value on each of its rows)
    q = cb.lazy(_table(9, 1)).group_by("h").agg(s=cb.col("x").sum().over("g"))
    with pytest.raises(SchemaError, match="gives each group a list"):
        q.compute()


@pytest.mark.parametrize("name", ["__agg0__", "__agg1__", "__mask__", "__host0__"])
def test_columns_named_like_internal_ones(name: str) -> None:
    table = _table(12, 3).append_column(name, pa.array(np.arange(12.0)))
    assert_same_as_polars(table, lambda m, q: q.group_by(
        m.col("g").alias(name), maintain_order=True).agg(
        s=m.col("x").sum(), md=m.col("x").median()), tolerance=TOL)  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.filter(m.col("x") > 0).with_columns(
        **{name: m.col(name) > 3, "k": m.col("i").n_unique()}))  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.select(m.col("x").median().alias(name)))


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    import polars as pl
    from polars.testing import assert_frame_equal

    from colbridge.testing.cuda_host import compute_on_host

    table = _table(40, 7)
    for q in (
        cb.lazy(table).with_columns(**{name: NESTED[name](cb) for name in
                                       ("sum_of_max", "finer", "count", "cum_sum_of_max")}),
        cb.lazy(table).group_by("h", maintain_order=True).agg(
            **{name: INNER[name](cb) for name in ("sum_over_max", "max_over_sum",
                                                  "ordered_first_max", "max_sum")}),
        cb.lazy(table).select(**{name: ORDERED[name](cb) for name in ("sum", "first")}),
    ):  # fmt: skip
        on_host = pl.from_arrow(compute_on_host(q))
        # float sums per group add in the order the device's atomics land (docs/grouped.md):
        # within the summation bound of any order; the rest compares exactly
        assert_frame_equal(on_host, pl.from_arrow(q.compute(device="cpu")),
                           check_exact=False, rel_tol=1e-12, abs_tol=1e-9)  # fmt: skip
