"""Reductions of expressions written over filtered values, against polars.

``(x.filter(p) * 2 - x.mean()).sum()``, ``(x.filter(p) + y.filter(p)).max()``,
``x.filter(p).is_nan().any()``, ``x.filter(p).filter(x.filter(p) > 0).sum()``,
``x.filter(p).nan_max()``, ``x.drop_nulls().mode().min()``, ``x.filter(p).entropy()``,
``x.filter(p).cum_sum().max()``: the expression is over the kept rows only, as polars
evaluates it. Of the whole column, per group in ``group_by(...).agg`` and per window
of ``over``; floats with NaN and nulls, integers, strings, null keys, sliced and
chunked columns, empty frames. A strict cast or a function of the kept values does
not fail on the rows the filter drops (polars never computes them); combining kept
values with values of every row, or of another filter, is refused by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import ShapeError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from tests.ordered.ordered_data import cut_table


def _table(n: int, seed: int, *, groups: int, offset: int, chunks: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    total = n + offset
    x = rng.choice([-1.5, 0.0, -0.0, 2.0, 3.25, np.nan], total)
    table = pa.table({
        "g": pa.array(rng.integers(0, groups, total), mask=rng.random(total) < 0.1),
        "x": pa.array(x, mask=rng.random(total) < 0.2),
        "i": pa.array(rng.integers(-4, 5, total), mask=rng.random(total) < 0.2),
        "s": pa.array([f"s{v}" for v in rng.integers(0, 4, total)], mask=rng.random(total) < 0.2),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


#: reductions of expressions over the values one filter keeps (orders polars leaves
#: open, as `mode().first()`, are not drawn)
FORMS = {
    "arithmetic": lambda m, x, p: (x.filter(p) * 2 + 1).sum(),
    "two columns": lambda m, x, p: (x.filter(p) - m.col("i").filter(p)).max(),
    "minus a reduction": lambda m, x, p: (x.filter(p) - x.mean()).abs().sum(),
    "is_nan": lambda m, x, p: x.filter(p).is_nan().any(),
    "nan_max": lambda m, x, p: x.filter(p).nan_max(),
    "nan_min": lambda m, x, p: x.filter(p).nan_min(),
    "filter of kept values": lambda m, x, p: x.filter(p).filter(x.filter(p) > 0).count(),
    "drop_nulls twice": lambda m, x, p: x.drop_nulls().drop_nulls().len(),
    "mode": lambda m, x, p: x.filter(p).mode().min(),
    "mode of drop_nulls": lambda m, x, p: x.drop_nulls().mode().len(),
    "unique": lambda m, x, p: x.filter(p).unique().len(),
    "entropy": lambda m, x, p: x.filter(p).abs().entropy(),
    "cum_sum": lambda m, x, p: (x.filter(p) * 2).cum_sum().max(),
    "when": lambda m, x, p: m.when(x.filter(p) > 0).then(x.filter(p)).otherwise(0).sum(),
    "fill_null": lambda m, x, p: x.filter(p).fill_null(x.filter(p).max()).sum(),
    "head": lambda m, x, p: (x.head(3) + m.col("i").head(3)).sum(),
    "tail": lambda m, x, p: (x.tail(2) * m.col("i").tail(2)).min(),
    "strings": lambda m, x, p: m.col("s").filter(p).str.len_chars().sum(),
    "string max": lambda m, x, p: (m.col("s").filter(p) + "!").max(),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.sampled_from([0, 1, 3, 8, 40]), seed=st.integers(0, 2**31 - 1),
       groups=st.sampled_from([1, 3, 12]), offset=st.sampled_from([0, 3]),
       chunks=st.sampled_from([1, 2]), forms=st.lists(st.sampled_from(sorted(FORMS)),
                                                     min_size=1, max_size=3, unique=True),
       column=st.sampled_from(["x", "i"]),
       context=st.sampled_from(["select", "agg", "over"]))  # fmt: skip
def test_equal_polars(n: int, seed: int, groups: int, offset: int, chunks: int,
                      forms: list[str], column: str, context: str) -> None:  # fmt: skip
    table = _table(n, seed, groups=groups, offset=offset, chunks=chunks)

    def steps(m: Any, q: Any) -> Any:
        x, p = m.col(column), m.col("i") > 0
        outputs = [FORMS[f](m, x, p).alias(f) for f in forms]
        if context == "agg":
            return q.group_by("g", maintain_order=True).agg(outputs)
        if context == "over":
            return q.select(m.col("g"), *[o.over("g") for o in outputs])
        return q.select(outputs)

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"), ulps=4)


def test_a_filtered_expression_in_a_reduction() -> None:
    df = pl.DataFrame({"g": [1, 1, 2, 2], "x": [1.0, float("nan"), 2.0, None],
                       "b": [1, 2, 3, 4]})  # fmt: skip
    x, p = cb.col("x"), cb.col("b") > 1
    got = df.gpu.select(
        twice=(x.filter(p) * 2).sum(), nan=x.filter(p).is_nan().any(),
        top=x.filter(p).nan_max(), finite=x.filter(p).filter(x.filter(p) < 5).sum(),
    ).compute()  # fmt: skip
    assert got.rows() == [(pytest.approx(float("nan"), nan_ok=True), True,
                           pytest.approx(float("nan"), nan_ok=True), 2.0)]  # fmt: skip
    grouped = df.gpu.group_by("g", maintain_order=True).agg(
        s=(x.filter(p) - x.mean()).sum(), m=x.drop_nulls().mode().max(),
        h=(x.head(1) + cb.col("b").head(1)).sum(),  # the same rows, counted per group
    ).compute()  # fmt: skip
    assert grouped.rows()[1] == (2, 0.0, 2.0, 5.0)
    # the most frequent of the kept values: 2 among the rows b > 0, 1 among all of them
    modes = pl.DataFrame({"x": [1, 1, 1, 1, 2, 2], "b": [0, 0, 0, 1, 1, 1]})
    got = modes.gpu.select(cb.col("x").filter(cb.col("b") > 0).mode().first()).compute()
    assert got.item() == 2


def test_a_strict_cast_of_kept_values_does_not_see_the_dropped_rows() -> None:
    # polars casts the kept values only: 1000 (dropped) never fails to fit Int8
    df = pl.DataFrame({"g": [1, 1, 2, 2], "a": [1000, 1, 2, None]})

    def outputs(m: Any) -> list[Any]:
        kept = m.col("a").filter(m.col("a") < 100)
        return [kept.cast(pl.Int8).sum().alias("s"), kept.cast(pl.String).max().alias("t")]

    assert_frame_equal(df.gpu.select(outputs(cb)).compute(), df.select(outputs(pl)))
    assert_frame_equal(df.gpu.group_by("g", maintain_order=True).agg(outputs(cb)).compute(),
                       df.group_by("g", maintain_order=True).agg(outputs(pl)))  # fmt: skip
    with pytest.raises(cb.ColbridgeError, match="strict cast to int8 failed"):
        df.gpu.select(cb.col("a").filter(cb.col("a") > 1).cast(pl.Int8).sum()).compute()


@pytest.mark.parametrize(("build", "match"), [
    (lambda x, b: (x.filter(b > 1) + b).sum(),
     r"combines `col\(\"x\"\)\.filter\(\(col\(\"b\"\) > lit\(1\)\)\)`, the rows a filter "
     r"keeps, with `col\(\"b\"\)`, values on every row .*filter both"),
    (lambda x, b: (x.filter(b > 0) * x.filter(b > 1)).sum(),
     r"combines values filtered by different predicates .*give them one predicate"),
    (lambda x, b: (x.head(2) - b.head(3)).max(),
     r"`\(col\(\"x\"\)\.head\(2\) - col\(\"b\"\)\.head\(3\)\)` combines values filtered by "
     r"different predicates"),
])  # fmt: skip
def test_kept_values_with_other_rows_are_refused(build: Any, match: str) -> None:
    df = pl.DataFrame({"g": [1, 1, 2], "x": [1.0, 2.0, 3.0], "b": [1, 2, 3]})
    expr = build(cb.col("x"), cb.col("b"))
    with pytest.raises(ShapeError, match=match):
        df.gpu.select(expr).compute()
    with pytest.raises(ShapeError, match=match):
        df.gpu.group_by("g").agg(expr).compute()
    with pytest.raises(pl.exceptions.ShapeError):  # polars, on the same frame
        df.select(build(pl.col("x"), pl.col("b")))


def test_a_reduction_filtered_by_an_ordered_predicate_inside_first() -> None:
    # `first` is taken from the groups, its argument computed whole by a segment of its
    # own: the `max` inside it, filtered by a scan, was also planned as a pass of the
    # outer segment, which has no column for the scan (its kernel generator failed)
    df = pl.DataFrame({"g": [1, 1, 2, 2, 2, 1], "a": [1.0, 1.0, 2.0, None, 3.0, None],
                       "b": [1, 2, 3, 4, 5, 6]})  # fmt: skip

    def outputs(m: Any) -> list[Any]:
        a, p = m.col("a"), m.col("b").cum_sum() > 3
        return [(a - a.filter(p).max()).first().alias("f"),
                a.filter(a == a.filter(p).max()).last().alias("l")]  # fmt: skip

    assert_frame_equal(df.gpu.select(outputs(cb)).compute(), df.select(outputs(pl)))
    assert_frame_equal(df.gpu.group_by("g", maintain_order=True).agg(outputs(cb)).compute(),
                       df.group_by("g", maintain_order=True).agg(outputs(pl)))  # fmt: skip


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    frame = pl.DataFrame({"g": [1, 2, 1, 3, 3, 3] * 400,
                          "x": [None, 2.0, -3.0, float("nan"), 5.0, 6.0] * 400,
                          "i": [1, 0, 3, None, -2, 7] * 400})  # fmt: skip

    def outputs(m: Any) -> list[Any]:
        x, p = m.col("x"), m.col("i") > 0
        return [(x.filter(p) * 2 - x.mean()).sum().alias("a"), x.filter(p).nan_max().alias("b"),
                x.drop_nulls().mode().max().alias("c"),
                x.filter(p).filter(x.filter(p) > 0).len().alias("d")]  # fmt: skip

    q = cb.lazy(frame).group_by("g", maintain_order=True).agg(outputs(cb))
    want = frame.group_by("g", maintain_order=True).agg(outputs(pl))
    assert_frame_equal(compute_on_tier(q, tier), want)
    assert_frame_equal(compute_on_tier(cb.lazy(frame).select(outputs(cb)), tier),
                       frame.select(outputs(pl)))  # fmt: skip
