"""``median`` and ``quantile`` against polars: whole columns, groups, windows, filters, types.

polars is the oracle, compared exactly: colbridge takes the same position among the
sorted values (NaN above every number, the nulls counted as polars counts them) and
joins two values with the same float64 arithmetic. Frames have nulls, NaN, ±inf,
±0, ties, wide integers, slices and chunks; every interpolation; numbers, booleans
and every temporal type; the three frame kinds; the string language; streams and
Dask refuse them with errors naming the way out; the CUDA code path (run on the
host) gives the same answers.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import JobSpecError, SchemaError, UnsupportedTypeError
from colbridge.expr.nodes import QUANTILE_METHODS
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.grouped.grouped_data import frame

NUMBERS = ("x", "f", "i", "u", "w")  # float64, float32, int32, uint8, int64 (grouped_data)


def _each(m: Any, columns: tuple[str, ...], quantile: float, method: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in columns:
        out[f"med_{c}"] = m.col(c).median()
        out[f"q_{c}"] = m.col(c).quantile(quantile, method)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 2, 3, 7, 40, 300]),
    seed=st.integers(0, 2**31 - 1),
    groups=st.sampled_from([1, 3, 50]),
    nulls=st.sampled_from([0.0, 0.2, 0.9]),
    offset=st.sampled_from([0, 3]),
    chunks=st.sampled_from([1, 3]),
    quantile=st.one_of(st.sampled_from([0.0, 0.5, 1.0, 0.25, 0.75]), st.floats(0.0, 1.0)),
    method=st.sampled_from(QUANTILE_METHODS),
)
def test_quantiles_of_numbers_equal_polars(n: int, seed: int, groups: int, nulls: float,
                                           offset: int, chunks: int, quantile: float,
                                           method: str) -> None:  # fmt: skip
    table = frame(n, seed, ("int64",), groups=groups, value_nulls=nulls, offset=offset,
                  chunks=chunks)  # fmt: skip

    def whole(m: Any, q: Any) -> Any:
        return q.select(**_each(m, NUMBERS, quantile, method), med_b=m.col("b").median())

    def grouped(m: Any, q: Any) -> Any:
        aggs = _each(m, NUMBERS, quantile, method)
        return q.group_by("g", maintain_order=True).agg(**aggs, med_b=m.col("b").median())

    def windows(m: Any, q: Any) -> Any:
        x, i = m.col("x"), m.col("i")
        return q.select(
            "g",
            mx=x.median().over("g"),
            qi=i.quantile(quantile, method).over("g"),
            dev=(x - x.quantile(quantile, method)).over("g"),
            whole=i - i.median(),
            kept=x.filter(i > 0).quantile(quantile, method),
            kept_g=i.filter(x > 0).median().over("g"),
        )

    for steps in (whole, grouped, windows):
        assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_every_frame_kind_and_both_tiers(tier: str) -> None:
    table = frame(500, 7, ("int8",), groups=6, value_nulls=0.3, chunks=2)

    def steps(m: Any, q: Any) -> Any:
        return q.group_by("g", maintain_order=True).agg(
            **_each(m, NUMBERS, 0.3, "linear"), m=m.col("x").filter(m.col("i") < 10).median()
        )

    assert_same_as_polars(table, steps)


@pytest.mark.parametrize("method", QUANTILE_METHODS)
def test_positions_at_every_quantile_of_small_groups(method: str) -> None:
    # every count from 1 to 6 with 0-2 nulls, at quantiles that land on, just below and
    # just above each position (the rounding of each method decides there)
    rows = []
    for size in range(1, 7):
        for nulls in range(3):
            rows += [(size * 10 + nulls, float(v)) for v in range(size)]
            rows += [(size * 10 + nulls, None)] * nulls
    table = pa.table({"g": [g for g, _ in rows], "x": [v for _, v in rows]})
    cuts = sorted({k / d for d in range(1, 6) for k in range(d + 1)}
                  | {0.1, 0.3, 0.49999999999999994, 0.5000000000000001, 0.7, 0.9})  # fmt: skip
    for quantile in cuts:
        assert_same_as_polars(
            table, lambda m, q, quantile=quantile: q.group_by("g", maintain_order=True).agg(
                y=m.col("x").quantile(quantile, method)), kinds=("polars",))  # fmt: skip


def test_nan_and_infinities_take_their_places() -> None:
    nan, inf = float("nan"), float("inf")
    groups = [[1.0, nan], [nan, nan], [-inf, inf], [inf, inf], [-inf, 1.0, nan],
              [0.0, -0.0], [nan], [-inf, -inf, 2.0]]  # fmt: skip
    table = pa.table({"g": [k for k, g in enumerate(groups) for _ in g],
                      "x": [v for g in groups for v in g]})  # fmt: skip
    for method in QUANTILE_METHODS:
        for quantile in (0.0, 0.3, 0.5, 0.8, 1.0):
            assert_same_as_polars(
                table, lambda m, q, qq=quantile, mm=method: q.group_by("g", maintain_order=True)
                .agg(y=m.col("x").quantile(qq, mm), z=m.col("x").median()),
                kinds=("polars",))  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 400), min_size=1, max_size=6),
    pool=st.sampled_from(["ties", "spread", "nan"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_the_per_group_select_equals_a_sort(sizes: list[int], pool: str, seed: int) -> None:
    # the quickselect against NumPy's sort, group by group: runs long enough to be
    # partitioned many times, every position asked for, with and without the next value
    from colbridge.backends._group_kernels import group_select

    rng = np.random.default_rng(seed)
    owners = rng.permutation(np.repeat(np.arange(len(sizes)), sizes)).astype(np.int32)
    n = len(owners)
    ties = pool == "ties"
    values = rng.integers(-3, 4, n).astype(np.float64) if ties else rng.standard_normal(n)
    if pool == "nan":
        values[rng.random(n) < 0.3] = np.nan
        values[rng.random(n) < 0.1] = -np.inf
    counts = np.array(sizes, dtype=np.int64)
    bounds = np.append(np.cumsum(counts) - counts, n)
    picks = np.array([rng.integers(0, c) if c else -1 for c in sizes], dtype=np.int64)
    nexts = np.array([0 <= p < c - 1 for p, c in zip(picks, sizes, strict=True)])
    lower, upper = group_select(values, owners, bounds, picks, nexts, 2)
    for g, c in enumerate(sizes):
        if not c:
            continue
        ordered = np.sort(values[owners == g])  # NaN last
        np.testing.assert_array_equal(lower[g], ordered[picks[g]])
        if nexts[g]:
            np.testing.assert_array_equal(upper[g], ordered[picks[g] + 1])


def test_the_next_value_is_found_wherever_the_select_leaves_it() -> None:
    # 20,000 groups of distinct values in random order: after the select, the least
    # value right of the pick sits anywhere in the run, its last slot included
    from colbridge.backends._group_kernels import group_select

    rng = np.random.default_rng(1)
    sizes = rng.integers(18, 60, 20_000)
    owners = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    values = np.concatenate([rng.permutation(c) for c in sizes]).astype(np.float64)
    bounds = np.append(np.cumsum(sizes) - sizes, len(values))
    picks = rng.integers(0, sizes - 1)
    lower, upper = group_select(values, owners, bounds, picks, np.ones(len(sizes), np.bool_), 2)
    np.testing.assert_array_equal(lower, picks)  # each group holds 0 .. size - 1
    np.testing.assert_array_equal(upper, picks + 1)


@pytest.mark.parametrize("method", QUANTILE_METHODS)
def test_large_groups_equal_polars(method: str) -> None:
    rng = np.random.default_rng(7)
    n = 20_000
    x = np.round(rng.standard_normal(n), 2)  # ties
    x[rng.random(n) < 0.05] = np.nan
    table = pa.table({"g": rng.integers(0, 4, n), "x": pa.array(x, mask=rng.random(n) < 0.1),
                      "i": rng.integers(-50, 50, n)})  # fmt: skip
    for quantile in (0.0, 0.37, 0.5, 0.9, 1.0):
        assert_same_as_polars(
            table, lambda m, q, qq=quantile: q.group_by("g", maintain_order=True)
            .agg(y=m.col("x").quantile(qq, method), j=m.col("i").quantile(qq, method),
                 w=m.col("x").filter(m.col("i") > 0).quantile(qq, method)),
            kinds=("polars",))  # fmt: skip


def test_wide_integers_are_ordered_before_they_become_floats() -> None:
    big = [2**63 + 1, 2**64 - 1, 3, 2**53 + 1, 2**53]
    table = pa.table({"u": pa.array(big, pa.uint64()),
                      "i": pa.array([-(2**63), 2**63 - 1, 0, 2**53 + 1, -(2**53) - 1])})

    def steps(m: Any, q: Any) -> Any:
        return q.select(**{f"{c}_{k}": m.col(c).quantile(0.4, k) for c in "ui"
                           for k in QUANTILE_METHODS}, mu=m.col("u").median())  # fmt: skip

    assert_same_as_polars(table, steps)


def _temporal_table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)

    def mask() -> np.ndarray:
        return rng.random(n) < 0.2

    micros = rng.integers(-(10**15), 10**15, n)
    return pa.table({
        "g": rng.integers(0, 4, n),
        # row 0 is a date: polars 2.1 panics on the quantile of dates that are all null
        "d": pa.array(rng.integers(-20_000, 20_000, n).astype(np.int32),
                      mask=mask() & (np.arange(n) > 0)).cast(pa.date32()),
        "t": pa.array(micros, mask=mask()).cast(pa.timestamp("us")),
        "tms": pa.array(micros // 1000, mask=mask()).cast(pa.timestamp("ms")),
        "tz": pa.array(micros, mask=mask()).cast(pa.timestamp("us", tz="America/New_York")),
        "du": pa.array(rng.integers(-(10**12), 10**12, n), mask=mask()).cast(pa.duration("ns")),
        # whole microseconds: pandas' times hold no nanoseconds
        "tm": pa.array(rng.integers(0, 86_400 * 10**6, n) * 1000, mask=mask())
        .cast(pa.time64("ns")),
    })  # fmt: skip


@pytest.mark.parametrize("n", [0, 1, 2, 5, 200])
def test_dates_times_and_durations(n: int) -> None:
    table = _temporal_table(n, n)
    # polars 2.1 panics on the quantile of a date column with no rows (colbridge gives
    # null), and on a group of dates that are all null: grouped, dates are left out
    columns = ("d", "t", "tms", "tz", "du", "tm") if n else ("t", "tms", "tz", "du", "tm")

    def whole(m: Any, q: Any) -> Any:
        return q.select(**{f"{c}_{k}": m.col(c).quantile(0.35, k) for c in columns
                           for k in QUANTILE_METHODS},
                        **{f"{c}_m": m.col(c).median() for c in columns})  # fmt: skip

    def grouped(m: Any, q: Any) -> Any:
        timed = [c for c in columns if c != "d"]
        return q.group_by("g", maintain_order=True).agg(
            **{f"{c}_m": m.col(c).median() for c in timed},
            **{f"{c}_q": m.col(c).quantile(0.9, "linear") for c in timed})  # fmt: skip

    def windows(m: Any, q: Any) -> Any:
        return q.select(dm=m.col("d" if n else "t").median().over("g"),
                        late=(m.col("t") - m.col("t").median()).over("g"),  # a duration
                        gap=(m.col("du") * 2).quantile(0.5, "midpoint"))  # fmt: skip

    for steps in (whole, grouped, windows):
        assert_same_as_polars(table, steps)


def test_all_null_and_empty_columns_give_nulls_of_the_right_type() -> None:
    table = pa.table({"g": [1, 1, 2], "x": pa.array([None, None, 1.0], pa.float64()),
                      "f": pa.array([None, None, None], pa.float32()),
                      "i": pa.array([None, None, None], pa.int8())})  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        return q.group_by("g", maintain_order=True).agg(
            x=m.col("x").median(), f=m.col("f").quantile(0.2), i=m.col("i").median())

    assert_same_as_polars(table, steps)
    assert_same_as_polars(table.slice(0, 0), steps)
    assert_same_as_polars(table, lambda m, q: q.select(m.col("f").median(), m.col("i").median()))
    assert_same_as_polars(table.slice(0, 0),
                          lambda m, q: q.select(m.col("x").median(), m.col("i").quantile(1.0)))


def test_a_literal_and_a_reduction_of_a_reduction() -> None:
    table = pa.table({"x": [3.0, 1.0, 2.0, 10.0]})
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.lit(2).median(), b=m.col("x").max().median(), c=m.col("x").median() * 2))


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 1, 2, 2, 2], "x": [5.0, 1.0, 2.0, None, 4.0]})
    got = cb.lazy(table).eval(
        'm = median(x)\nq = x.quantile(0.25, "linear")\nr = quantile(x, 0.9).over(g)'
    ).compute()
    want = pl.from_arrow(table).with_columns(
        m=pl.col("x").median(), q=pl.col("x").quantile(0.25, "linear"),
        r=pl.col("x").quantile(0.9).over("g"))  # fmt: skip
    assert pl.from_arrow(got).equals(want)


@pytest.mark.parametrize(("build", "error", "pattern"), [
    (lambda: cb.col("x").quantile(1.5), SchemaError, r"between 0\.0 and 1\.0"),
    (lambda: cb.col("x").quantile(-0.1), SchemaError, r"between 0\.0 and 1\.0"),
    (lambda: cb.col("x").quantile(float("nan")), SchemaError, r"between 0\.0 and 1\.0"),
    (lambda: cb.col("x").quantile(cb.col("x")), SchemaError, r"a literal, not an expression"),
    (lambda: cb.col("x").quantile(True), SchemaError, r"a number from 0 to 1"),
    (lambda: cb.col("x").quantile(0.5, "cubic"), SchemaError, r"'nearest', 'higher', .*"),
])  # fmt: skip
def test_bad_arguments_are_refused_when_written(build: Any, error: type, pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        build()


@pytest.mark.parametrize(("column", "expr", "pattern"), [
    ("s", lambda c: c.median(), r"column `s` has type string.*`median` of string"),
    ("c", lambda c: c.quantile(0.1), r"`quantile` of categorical"),
])  # fmt: skip
def test_types_without_an_order_of_numbers_are_refused(column: str, expr: Any,
                                                       pattern: str) -> None:  # fmt: skip
    table = pa.table({"b": [True, False], "s": ["a", "b"],
                      "c": pa.array(["a", "b"]).dictionary_encode()})  # fmt: skip
    with pytest.raises(UnsupportedTypeError, match=pattern):
        cb.lazy(table).select(y=expr(cb.col(column))).compute()
    with pytest.raises(pl.exceptions.InvalidOperationError):  # polars refuses them as well
        pl.from_arrow(table).select(y=expr(pl.col(column)))


@pytest.mark.parametrize("method", QUANTILE_METHODS)
def test_a_booleans_quantile_is_of_its_zeros_and_ones(method: str) -> None:
    # polars 2.2 takes a Boolean column's quantile as of 0 and 1 (Float64), per group
    # too (2.1 refused a whole column and gave null per group)
    df = pl.DataFrame({"g": [1, 1, 2, 3, 3, 3, 1], "b": [True, False, None, True, True, False,
                                                      False]})  # fmt: skip
    for quantile in (0.0, 0.3, 0.5, 0.9, 1.0):
        assert_same_as_polars(df.to_arrow(), lambda m, q, qq=quantile: q.group_by(
            "g", maintain_order=True).agg(m.col("b").quantile(qq, method), s=m.col("b").sum()))
        assert_same_as_polars(df.to_arrow(), lambda m, q, qq=quantile: q.select(
            w=m.col("b").quantile(qq, method), o=m.col("b").quantile(qq, method).over("g")))


def test_streams_refuse_them_naming_the_way_out(tmp_path: Any) -> None:
    import pyarrow.parquet as pq

    from colbridge.io import pipeline

    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"x": [1.0, 2.0, 3.0], "g": [1, 1, 2]}), path)
    lf = pl.scan_parquet(path)
    with pytest.raises(JobSpecError, match=r"whole-column reductions taken from all the rows .*"
                       r"not supported in a streamed job.*in memory \(`cb.lazy\(frame\)`[^,]*$"):
        lf.gpu.select(m=cb.col("x").median()).compute()
    with pytest.raises(JobSpecError, match=r"`quantile` per group cannot be merged .* in "
                       r"memory"):  # fmt: skip
        pipeline(str(path), str(tmp_path / "o.parquet"), with_="m = quantile(x, 0.2).over(g)")
    with pytest.raises(JobSpecError, match=r"`median` per group cannot be merged"):
        lf.gpu.group_by("g").agg(m=cb.col("x").median()).compute()


def test_dask_refuses_a_whole_column_median() -> None:
    import dask.dataframe as dd
    import pandas as pd

    from colbridge.errors import UnsupportedOperationError

    pdf = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "g": [1, 1, 2, 2]})
    ddf = dd.from_pandas(pdf, npartitions=2)
    q = cb.lazy(pdf).select(m=cb.col("x").median())
    with pytest.raises(UnsupportedOperationError, match=r"`col\(\"x\"\).median\(\)` is computed "
                       r"from a whole column at once .* in memory"):  # fmt: skip
        cb.dask.apply(q, ddf).compute()


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = frame(3_000, 11, ("int64",), groups=20, value_nulls=0.2)
    q = cb.lazy(table).select(
        "g", mx=cb.col("x").median().over("g"), dev=cb.col("i") - cb.col("i").quantile(0.3),
        qf=cb.col("f").quantile(0.8, "linear").over("g"),
    )  # fmt: skip
    on_host = compute_on_host(q)
    # NaN is a value (and equal to NaN) here, as in polars' comparison
    assert_frame_equal(pl.from_arrow(on_host), pl.from_arrow(q.compute(device="cpu")),
                       check_exact=True)  # fmt: skip
    want = pl.from_arrow(table).select(
        "g", mx=pl.col("x").median().over("g"), dev=pl.col("i") - pl.col("i").quantile(0.3),
        qf=pl.col("f").quantile(0.8, "linear").over("g"),
    )  # fmt: skip
    assert_frame_equal(pl.from_arrow(on_host), want, check_exact=True)


def test_pandas_nan_is_null_there() -> None:
    import pandas as pd

    pdf = pd.DataFrame({"x": [1.0, np.nan, 3.0, 10.0], "g": [1, 1, 2, 2]})
    got = cb.lazy(pdf).select(m=cb.col("x").median(), q=cb.col("x").quantile(1.0)).compute()
    # pandas' NaN is a missing value (as pandas' own median skips it)
    assert got["m"].tolist() == [3.0]
    assert got["q"].tolist() == [10.0]


def test_repr_and_explain_name_the_arguments() -> None:
    e = cb.col("x").quantile(0.25, "midpoint").over("g")
    assert repr(e) == "<Expr col(\"x\").quantile(0.25, 'midpoint').over(col(\"g\"))>"
    table = pa.table({"x": [1.0], "g": [1]})
    text = cb.lazy(table).select(m=cb.col("x").median()).explain()
    assert 'col("x").median()' in text
    assert "taken from the groups" in text


def test_dates_median_is_a_datetime_truncated_toward_zero() -> None:
    # two days apart by one: the middle is noon; before 1970, truncation toward zero
    table = pa.table({"d": pa.array([dt.date(1969, 12, 31), dt.date(1970, 1, 1)]),
                      "t": pa.array([-3, -2], pa.int64()).cast(pa.timestamp("us"))})  # fmt: skip
    got = cb.lazy(table).select(d=cb.col("d").median(), t=cb.col("t").median()).compute()
    assert got.column("d").to_pylist() == [dt.datetime(1969, 12, 31, 12)]
    assert got.column("t").type == pa.timestamp("us")
    assert got.column("t").cast(pa.int64()).to_pylist() == [-2]  # -2.5 toward zero
    assert_same_as_polars(table, lambda m, q: q.select(m.col("d").median(),
                                                       m.col("t").median()))


def test_no_quantile_is_null_in_the_quantiles_type() -> None:
    # polars 2.2: `quantile(None)` is a null of the quantile's type (2.1 raised)
    table = pa.table({"g": [1, 1, 2], "x": [1.0, 2.0, 3.0], "i": [1, 2, 3],
                      "f": pa.array([1.0, None, 2.0], pa.float32()),
                      "d": pa.array([1, 2, None], pa.int32()).cast(pa.date32())})  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.select(
        m.col("x").quantile(None), m.col("f").quantile(None), m.col("i").quantile(None, "linear"),
        m.col("d").quantile(None)))  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.group_by("g", maintain_order=True).agg(
        m.col("x").quantile(None), m.col("d").quantile(None)))  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.select(
        m.col("f").quantile(None).over("g"), m.col("i").quantile(None).over("g")))  # fmt: skip
