"""Ordered expressions composed: per group with ``over``, around filters, fused, in reductions.

``x.shift(1).over("g")`` runs within each group, rows kept in frame order, as
polars: integer and string keys with null keys (a group of their own), one
group, one group per row, all-null keys. A filter step before an ordered
expression shifts among the kept rows; one after it filters shifted values.
Ordered expressions mix with arithmetic, reductions, other ordered expressions
and windows. A hypothesis property draws frames and operations at random
(derandomized by the suite's ``ci`` profile).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from colbridge.testing.asserts import Tolerance, assert_same_as_polars
from tests.ordered.ordered_data import (
    NULL_PATTERNS,
    NUMERIC_DTYPES,
    catalogue,
    frame,
    op_steps,
    pattern_frame,
)

RTOL = 1e-9  # float sums, means, variances and ewm_mean add in another order than polars


# -- over ------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["int", "string"])
@pytest.mark.parametrize("dtype", ["int16", "uint8", "float64", "float32", "bool"])
def test_every_op_over_groups(dtype: str, key: str, tier: str) -> None:
    table = frame(47, seed=len(dtype) + len(key), dtypes=(dtype,), nulls="runs", key=key,
                  groups=4, key_nulls=0.2, offset=2).rename_columns(
        ["g", "x", "p_x"] if dtype != "bool" else ["g", "x"])  # fmt: skip
    steps, tolerance = op_steps(dtype, ("x",), over="g")
    assert_same_as_polars(table, steps, tolerance=tolerance)


@pytest.mark.parametrize(
    ("n", "groups", "key_nulls"),
    [(0, 3, 0.2), (1, 3, 0.0), (1, 3, 1.0), (25, 1, 0.0), (25, 0, 0.0), (25, 0, 0.3),
     (25, 3, 1.0), (60, 2, 0.5)],
    ids=["empty", "one-row", "one-null-key", "one-group", "group-per-row",
         "group-per-row-null-keys", "all-null-keys", "two-groups"],
)  # fmt: skip
@pytest.mark.parametrize("key", ["int", "string"])
def test_over_group_shapes(n: int, groups: int, key_nulls: float, key: str, tier: str) -> None:
    table = frame(n, seed=n + groups, dtypes=("int64", "float64"), nulls="random", key=key,
                  groups=groups, key_nulls=key_nulls)  # fmt: skip
    for dtype in ("int64", "float64"):
        steps, tolerance = op_steps(dtype, (dtype,), over="g")
        assert_same_as_polars(table, steps, tolerance=tolerance)


@pytest.mark.parametrize("method", ["carry", "sort"])
def test_scans_by_key_agree_whichever_method(method: str, tier: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    # per-group state tables in one pass ("carry") or a counting sort by key ("sort")
    monkeypatch.setenv("COLBRIDGE_SCAN_BY_KEY", method)
    for key, groups in (("int", 4), ("string", 0), ("string", 1)):
        table = frame(45, seed=groups + 50, dtypes=("int16", "float64"), nulls="runs", key=key,
                      groups=groups, key_nulls=0.2, offset=1, chunks=2)  # fmt: skip
        for dtype in ("int16", "float64"):
            steps, tolerance = op_steps(dtype, (dtype,), over="g")
            assert_same_as_polars(table, steps, tolerance=tolerance, kinds=("pyarrow",))


def test_over_chunked_and_sliced_inputs(tier: str) -> None:
    # groups straddle chunk boundaries; keys and values start mid-bitmap
    table = pattern_frame("float64", 53, seed=21, offset=11, chunks=4)
    steps, tolerance = op_steps("float64", ("random", "runs"), over="g")
    assert_same_as_polars(table, steps, tolerance=tolerance)


def test_over_expression_keys_and_several_keys(tier: str) -> None:
    table = frame(40, seed=22, dtypes=("int32", "float64"), key="string", groups=3)

    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("float64"), m.col("int32")
        return q.select(
            a=x.shift(1).over("g", i > 0),
            b=x.cum_sum().over(i % 3),
            c=i.diff().over(m.col("g"), i > 0),
            d=x.rolling_mean(2, min_samples=1).over(i < 0),
        )

    assert_same_as_polars(table, steps, rtol=RTOL)


# -- filters ---------------------------------------------------------------------------------
def test_filter_before_shifts_among_kept_rows(tier: str) -> None:
    table = pattern_frame("int32", 45, seed=23, offset=1)

    def keep(m: Any, q: Any) -> Any:
        return q.filter(m.col("none") % 3 != 0)

    steps, tolerance = op_steps("int32", ("random", "runs"), prefix=keep)
    assert_same_as_polars(table, steps, tolerance=tolerance)
    grouped, tolerance = op_steps("int32", ("random",), prefix=keep, over="g")
    assert_same_as_polars(table, grouped, tolerance=tolerance)


def test_filter_after_shifts_first(tier: str) -> None:
    table = frame(45, seed=24, dtypes=("float64", "int8"), nulls="random")

    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("float64"), m.col("int8")
        q = q.with_columns(y=x.shift(1), d=i.diff(), r=x.rolling_sum(3, min_samples=1),
                           c=x.cum_max(), e=x.ewm_mean(alpha=0.4), f=i.shift(-1).over("g"))
        return q.filter(i > 0)

    assert_same_as_polars(table, steps, rtol=RTOL)


def test_filters_on_both_sides_and_between_ordered_steps(tier: str) -> None:
    table = frame(80, seed=25, dtypes=("float64", "int16"), nulls="runs", chunks=3, offset=4)

    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("float64"), m.col("int16")
        q = q.filter(i.is_not_null())
        q = q.with_columns(y=x.shift(1), c=i.cum_sum().over("g"))
        q = q.filter(m.col("y").is_not_null() | (i > 0))
        q = q.with_columns(z=m.col("y").diff(), w=m.col("c").rolling_max(2))
        return q.filter(x.is_not_nan() | x.is_null())

    assert_same_as_polars(table, steps, rtol=RTOL)


def test_filter_to_nothing_and_to_one_row(tier: str) -> None:
    table = frame(20, seed=26, dtypes=("float64",), nulls="random", key_nulls=0.0)
    filters = (
        lambda m, q: q.filter(m.col("float64") > 1e9),  # no row is kept (NaN compares false)
        lambda m, q: q.filter(m.col("g") == m.col("g").first(), m.col("float64") > 0),
        lambda m, q: q.filter(m.col("float64").is_null()),  # only null values are kept
    )
    for prefix in filters:
        for over in (None, "g"):
            steps, tolerance = op_steps("float64", ("float64",), prefix=prefix, over=over)
            assert_same_as_polars(table, steps, tolerance=tolerance)


# -- fused and nested expressions ------------------------------------------------------------
def test_fused_expressions(tier: str) -> None:
    table = frame(70, seed=27, dtypes=("float64", "int32", "uint8"), nulls="random", offset=3)

    def steps(m: Any, q: Any) -> Any:
        x, i, u = m.col("float64"), m.col("int32"), m.col("uint8")
        return q.with_columns(
            z=(x - x.shift(1)) / x.rolling_std(20, min_samples=2),
            a=x.cum_sum() / x.cum_count(),
            b=x.shift(1).rolling_mean(3),
            c=x.fill_null(strategy="forward").diff(),
            d=(x * 2 + 1).cum_max(),
            e=x.rolling_mean(5).over("g") - x.mean().over("g"),
            f=x.pct_change().fill_null(0),
            h=x.ewm_mean(alpha=0.2).over("g").shift(1),
            k=(x.shift(1) - x.mean()).over("g"),
            l=i.diff().diff(),
            n=(i - i.shift(2, fill_value=0)).cum_sum(reverse=True),
            o=u.diff().abs(),
            p=x.shift(1).fill_null(x.shift(-1)),
            r=(x > x.shift(1)).cum_sum(),
            s=x.cum_count().over("g") + i.cum_min(),
            t=x.rolling_max(3).rolling_min(3),
        )

    assert_same_as_polars(table, steps, rtol=RTOL)


def test_ordered_inside_reductions(tier: str) -> None:
    table = frame(50, seed=28, dtypes=("float64", "int32"), nulls="random", chunks=2)

    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("float64"), m.col("int32")
        return q.select(
            a=x.diff().abs().sum(),
            b=i.diff().abs().sum(),
            c=x.cum_sum().max(),
            d=x.rolling_max(3).min(),
            g=x.pct_change().mean(),
            h=x.fill_null(strategy="backward").null_count(),
            k=i.cum_count().max(),
            n=x.ewm_mean(alpha=0.5).std(),
            o=x.shift(1).count(),
            p=x.shift(1).filter(i > 0).sum(),  # shifted first, then filtered
        )

    assert_same_as_polars(table, steps, rtol=RTOL)


def test_first_and_last_of_ordered_expressions(tier: str) -> None:
    table = frame(30, seed=32, dtypes=("float64", "int32"), nulls="random")

    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("float64"), m.col("int32")
        return q.select(a=i.shift(-1).first(), b=i.diff().last(), c=x.cum_sum().last(),
                        d=x.rolling_mean(3).first(), e=x.fill_null(strategy="forward").last())

    assert_same_as_polars(table, steps, rtol=RTOL)


def test_reductions_of_ordered_over_groups(tier: str) -> None:
    table = frame(50, seed=29, dtypes=("float64", "int32"), nulls="random", key="string")

    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("float64"), m.col("int32")
        return q.with_columns(
            a=x.diff().abs().sum().over("g"),
            b=(i - i.shift(1)).max().over("g"),
            c=x.rolling_mean(2).mean().over("g"),
        )

    assert_same_as_polars(table, steps, rtol=RTOL)


def test_ordered_inside_group_by_agg(tier: str) -> None:
    # inside `agg`, ordered expressions run per group, as polars
    table = frame(50, seed=30, dtypes=("float64", "int32"), nulls="random", key="string")

    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("float64"), m.col("int32")
        return q.group_by("g", maintain_order=True).agg(
            a=x.diff().abs().sum(), b=i.shift(1).max(), c=x.cum_sum().max(),
            d=i.rolling_sum(2).min(), k=i.cum_count().max(), o=x.shift(1).count())  # fmt: skip

    assert_same_as_polars(table, steps, rtol=RTOL)


def test_ordered_after_a_filter_inside_a_reduction(tier: str) -> None:
    # `x.filter(p).shift(1)` shifts among the kept values (polars accepts it in a reduction)
    table = frame(40, seed=31, dtypes=("float64", "int32"), nulls="random")

    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("float64"), m.col("int32")
        return q.select(b=x.filter(i > 0).shift(1).sum(), c=i.filter(x > 0).diff().max())

    assert_same_as_polars(table, steps, rtol=RTOL)


# -- large frames ----------------------------------------------------------------------------
def test_large_frames_use_the_parallel_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    # long enough to be split into parallel tasks: state carried across tasks and chunks
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "compiled")
    # float sums over 10^5 rows, scanned in pieces: the absolute part covers partial sums
    # that pass near zero (their error scales with the running total, not the result)
    wide = Tolerance(rtol=1e-8, atol=1e-6)
    ops = [op for op in catalogue("float64") if not op[0].startswith("cum_prod")]
    # 200_003 rows: over twice the rows of one parallel task; groups=0: a group per row
    configs = ((7, None, ("float64", "int64")), (5000, "g", ("float64",)), (0, "g", ("int64",)))
    for groups, over, dtypes in configs:
        table = frame(200_003, seed=groups, dtypes=("float64", "int64"), nulls="runs",
                      groups=groups, key_nulls=0.1, offset=3, chunks=3)  # fmt: skip
        for dtype in dtypes:
            steps, tolerance = op_steps(dtype, (dtype,), ops, over=over)
            tolerance = {k: (wide if not v.exact else v) for k, v in tolerance.items()}
            assert_same_as_polars(table, steps, tolerance=tolerance, kinds=("pyarrow",))


def test_pct_change_through_zeros_and_nulls(tier: str) -> None:
    import pyarrow as pa

    table = pa.table({
        "g": [1, 1, 1, 1, 2, 2, 2, 2, 1, 2],
        "i": pa.array([0, 0, 3, None, 0, -2, 0, 5, 0, None], type=pa.int32()),
        "f": [0.0, -0.0, 1.5, None, float("nan"), 0.0, -1.0, float("inf"), 0.0, 2.0],
        "u": pa.array([0, 1, 0, 0, 2, None, 0, 3, 3, 0], type=pa.uint8()),
    })  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        return q.select(**{f"{c}{n}": m.col(c).pct_change(n) for c in "ifu" for n in (1, 2, -1)},
                        **{f"{c}o": m.col(c).pct_change().over("g") for c in "ifu"})  # fmt: skip

    assert_same_as_polars(table, steps, rtol=RTOL)


# -- property --------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    dtype=st.sampled_from(NUMERIC_DTYPES),
    pattern=st.sampled_from(NULL_PATTERNS),
)
def test_property_ordered_ops_match_polars(data: st.DataObject, dtype: str, pattern: str) -> None:
    n = data.draw(st.sampled_from([0, 1, 2, 3, 8, 17, 40]))
    table = frame(n, seed=data.draw(st.integers(0, 2**16)), dtypes=(dtype,), nulls=pattern,
                  key=data.draw(st.sampled_from(["int", "string"])),
                  groups=data.draw(st.sampled_from([0, 1, 3])),
                  key_nulls=data.draw(st.sampled_from([0.0, 0.3])),
                  offset=data.draw(st.sampled_from([0, 5])),
                  chunks=data.draw(st.sampled_from([1, 3])))  # fmt: skip
    names = ["g", "x", "p_x"] if dtype != "bool" else ["g", "x"]
    table = table.rename_columns(names)
    ops = data.draw(st.lists(st.sampled_from(catalogue(dtype)), min_size=1, max_size=4,
                             unique_by=lambda op: op[0]))  # fmt: skip
    over = data.draw(st.sampled_from([None, "g"]))
    filters = {
        None: None,
        "x-valid": lambda m, q: q.filter(m.col("x").is_not_null()),
        "g-valid": lambda m, q: q.filter(m.col("g").is_not_null()),
    }
    prefix = filters[data.draw(st.sampled_from(list(filters)))]
    steps, tolerance = op_steps(dtype, ("x",), ops, over=over, prefix=prefix)
    assert_same_as_polars(table, steps, tolerance=tolerance, kinds=("pyarrow",))
