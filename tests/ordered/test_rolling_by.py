"""Time-based windows (``rolling_*_by``) against polars, computed at test time.

Generated frames of 0 to 60 rows: ``by`` of every type polars takes (Int32, Int64,
UInt32, UInt64, Date, Datetime in ms, us with a zone whose clocks change, ns in
UTC), sorted or shuffled, with ties, gaps and nulls; values with nulls, NaN, ±inf
and ±0; every ``closed``, fixed and calendar windows, ``min_samples`` from 0, with and
without ``over``; the three frame kinds. Min, max, integer sums and quantiles are
compared exactly; float sums, means, variances and deviations within a relative
1e-9 (Float32: 1e-5) or 1e-9 of the window's scale, as polars' own sort of tied
``by`` values may add a window's values in another order. Errors are compared to
polars raising; streams and Dask refuse the operations by name.
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
from colbridge.errors import ColbridgeError, InvalidOperationError, JobSpecError, SchemaError
from colbridge.expr.nodes import QUANTILE_METHODS
from colbridge.testing.asserts import EXACT, Tolerance, assert_same_as_polars

#: ``by`` kinds: how a generated integer step becomes a ``by`` value, and its windows
_BY_KINDS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "i32": (pa.int32(), ("1i", "2i", "3i", "7i")),
    "i64": (pa.int64(), ("1i", "2i", "5i", "1i0s")),
    "u32": (pa.uint32(), ("1i", "3i", "4i")),
    "u64": (pa.uint64(), ("2i", "6i")),
    "date": (pa.date32(), ("1d", "2d", "1w", "1mo", "36h", "1ns", "1d12h", "1q")),
    "ms": (pa.timestamp("ms"), ("1h", "90m", "1d", "2d", "1mo", "1y", "1d12h", "3s")),
    "paris": (pa.timestamp("us", "Europe/Paris"), ("1h", "1d", "2d", "1w", "1mo", "5h30m")),
    "utc": (pa.timestamp("ns", "UTC"), ("1h", "1d", "1mo", "25h")),
}
#: steps between generated ``by`` values of the temporal kinds, in their units
_STEPS = {"ms": (3_600_000, 86_400_000 * 9), "paris": (3_600_000_000, 86_400_000_000 * 5),
          "utc": (3_600_000_000_000, 86_400_000_000_000 * 4)}  # fmt: skip
#: around 2024-03-31 and 2024-10-27 (Europe/Paris changes its clocks), in seconds
_STARTS = (1_711_843_200, 1_729_987_200)

_FLOAT = Tolerance(rtol=1e-9, atol=1e-9)
_FLOAT32 = Tolerance(rtol=1e-5, atol=1e-4)


def _by_array(kind: str, steps: np.ndarray, nulls: np.ndarray | None, start: int) -> pa.Array:
    arrow, _ = _BY_KINDS[kind]
    if kind in ("i32", "i64", "u32", "u64"):
        base = 3 if kind.startswith("u") else -5
        return pa.array(steps + base, mask=nulls).cast(arrow)
    if kind == "date":
        return pa.array((steps + 19_800).astype(np.int32), mask=nulls).cast(pa.int32()) \
            .cast(pa.date32())  # fmt: skip
    unit = arrow.unit
    scale = {"ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
    step = _STEPS[kind][start % 2]
    values = _STARTS[start // 2 % 2] * scale + steps * step
    return pa.array(values, mask=nulls, type=pa.int64()).cast(arrow)


def _table(n: int, seed: int, kind: str, *, shuffled: bool, by_nulls: bool,
           nulls: float, groups: int) -> pa.Table:  # fmt: skip
    rng = np.random.default_rng(seed)
    gaps = rng.choice([0, 0, 1, 1, 2, 5], n)  # ties (0) and gaps
    steps = np.cumsum(gaps).astype(np.int64)
    if shuffled:
        steps = rng.permutation(steps)
    by_mask = (rng.random(n) < 0.15) if by_nulls else None
    pool = np.array([0.0, -0.0, 1.5, -2.0, np.nan, np.inf, -np.inf, 3.25, 7.0, -0.5, 10.0])

    def mask() -> np.ndarray | None:
        return rng.random(n) < nulls if nulls else None

    return pa.table({
        "t": _by_array(kind, steps, by_mask, int(rng.integers(0, 4))),
        "g": pa.array(rng.integers(0, groups, n)),
        "f": pa.array(rng.choice(pool, n), mask=mask()),
        "n": pa.array(np.round(rng.normal(size=n) * 10, 2), mask=mask()),
        "f32": pa.array((rng.normal(size=n) * 100).astype(np.float32), mask=mask()),
        "i": pa.array(rng.integers(-300, 300, n).astype(np.int16), mask=mask()),
        "w": pa.array(rng.integers(-(2**40), 2**40, n), mask=mask()),
        "u": pa.array(rng.integers(0, 2**20, n).astype(np.uint32), mask=mask()),
        "b": pa.array(rng.random(n) < 0.5, mask=mask()),
    })  # fmt: skip


_FUNCS = ("sum", "mean", "min", "max", "var", "std", "median")


def _tolerances() -> dict[str, Tolerance]:
    out: dict[str, Tolerance] = {}
    for func in _FUNCS:
        for column in ("f", "n", "f32", "i", "w", "u", "b"):
            exact = func in ("min", "max", "median") or (func == "sum" and column in "iwub")
            tol = EXACT if exact else _FLOAT32 if column == "f32" else _FLOAT
            out[f"{func}_{column}"] = tol
            out[f"o_{func}_{column}"] = tol
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    func=st.sampled_from(_FUNCS),
    n=st.integers(0, 60),
    seed=st.integers(0, 2**31 - 1),
    kind=st.sampled_from(tuple(_BY_KINDS)),
    shuffled=st.booleans(),
    by_nulls=st.booleans(),
    nulls=st.sampled_from([0.0, 0.3, 0.9]),
    groups=st.sampled_from([1, 3]),
    closed=st.sampled_from(["right", "left", "both", "none"]),
    choice=st.integers(0, 7),
    min_samples=st.sampled_from([0, 1, 2, 3]),
    ddof=st.sampled_from([0, 1, 2]),
)
def test_windows_equal_polars(func: str, n: int, seed: int, kind: str, shuffled: bool,
                              by_nulls: bool, nulls: float, groups: int, closed: str,
                              choice: int, min_samples: int, ddof: int) -> None:  # fmt: skip
    table = _table(n, seed, kind, shuffled=shuffled, by_nulls=by_nulls, nulls=nulls,
                   groups=groups)  # fmt: skip
    windows = _BY_KINDS[kind][1]
    window = windows[choice % len(windows)]

    def steps(m: Any, q: Any) -> Any:
        out = {}
        for column in ("f", "n", "f32", "i", "w", "u", "b"):
            kw: dict[str, Any] = {"min_samples": min_samples, "closed": closed}
            if func in ("var", "std"):
                kw["ddof"] = ddof
            e = getattr(m.col(column), f"rolling_{func}_by")("t", window, **kw)
            out[f"{func}_{column}"] = e
            out[f"o_{func}_{column}"] = e.over("g")
        return q.select(**out)

    assert_same_as_polars(table, steps, kinds=("polars",), tolerance=_tolerances())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(0, 60),
    seed=st.integers(0, 2**31 - 1),
    kind=st.sampled_from(["i64", "date", "paris"]),
    closed=st.sampled_from(["right", "left", "both", "none"]),
    quantile=st.one_of(st.sampled_from([0.0, 0.5, 1.0, 0.25]), st.floats(0.0, 1.0)),
    method=st.sampled_from(QUANTILE_METHODS),
    min_samples=st.sampled_from([0, 1, 2]),
)
def test_quantiles_equal_polars(n: int, seed: int, kind: str, closed: str, quantile: float,
                                method: str, min_samples: int) -> None:  # fmt: skip
    table = _table(n, seed, kind, shuffled=True, by_nulls=True, nulls=0.3, groups=3)
    window = _BY_KINDS[kind][1][1]

    def steps(m: Any, q: Any) -> Any:
        out = {}
        for column in ("f", "n", "f32", "i", "b"):
            e = m.col(column).rolling_quantile_by("t", window, quantile=quantile,
                                                  interpolation=method,
                                                  min_samples=min_samples, closed=closed)
            out[f"q_{column}"] = e
            out[f"o_{column}"] = e.over("g")
        return q.select(**out)

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


@pytest.mark.parametrize("kind", ["i32", "date", "paris", "ms"])
def test_every_frame_kind(kind: str) -> None:
    table = _table(60, 11, kind, shuffled=True, by_nulls=False, nulls=0.2, groups=3)
    window = _BY_KINDS[kind][1][1]
    assert_same_as_polars(table, lambda m, q: q.select(
        s=m.col("i").rolling_sum_by("t", window),
        mn=m.col("n").rolling_min_by("t", window, closed="both").over("g"),
        mx=m.col("w").rolling_max_by("t", window),
        md=m.col("n").rolling_median_by("t", window, min_samples=2)))  # fmt: skip


def test_calendar_months_clamp_to_the_month_s_length() -> None:
    # 31 March less a month is 29 February (2024 is a leap year), 31 May less one 30 April
    days = [dt.date(2024, 1, 31), dt.date(2024, 2, 29), dt.date(2024, 3, 1),
            dt.date(2024, 3, 31), dt.date(2024, 4, 30), dt.date(2024, 5, 31)]
    table = pa.table({"t": pa.array(days), "x": pa.array([1, 2, 4, 8, 16, 32])})
    for closed in ("right", "left", "both", "none"):
        assert_same_as_polars(table, lambda m, q, c=closed: q.select(
            a=m.col("x").rolling_sum_by("t", "1mo", closed=c),
            b=m.col("x").rolling_max_by("t", "1y1mo", closed=c),
            c=m.col("x").rolling_mean_by("t", "1q", closed=c)))  # fmt: skip


def test_zoned_days_are_local_days_across_clock_changes() -> None:
    # hourly through Paris's spring and autumn changes: "1d" is a local day (23 or 25 h)
    start = dt.datetime(2024, 3, 30, 12, tzinfo=dt.timezone.utc)
    hours = [start + dt.timedelta(hours=h) for h in range(0, 48, 1)]
    autumn = dt.datetime(2024, 10, 26, 12, tzinfo=dt.timezone.utc)
    hours += [autumn + dt.timedelta(hours=h) for h in range(0, 48, 1)]
    t = pa.array(hours, pa.timestamp("us", "UTC")).cast(pa.timestamp("us", "Europe/Paris"))
    n = len(hours)
    table = pa.table({"t": t, "x": pa.array(np.arange(n, dtype=np.int64)),
                      "g": pa.array(np.arange(n) % 3)})  # fmt: skip
    # with keys, each group's rows (and their window starts) are taken side by side first
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("x").rolling_sum_by("t", "1d"),
        b=m.col("x").rolling_min_by("t", "1d2h", closed="left"),
        c=m.col("x").rolling_sum_by("t", "1mo"),
        d=m.col("x").rolling_sum_by("t", "1w"),
        e=m.col("x").rolling_sum_by("t", "1d").over("g"),
        f=m.col("x").rolling_max_by("t", "1mo", closed="both").over("g")))  # fmt: skip


def test_inside_expressions_and_of_expressions() -> None:
    table = _table(60, 5, "ms", shuffled=True, by_nulls=True, nulls=0.2, groups=3)

    def steps(m: Any, q: Any) -> Any:
        n, i, t = m.col("n"), m.col("i"), m.col("t")
        return q.with_columns(
            dev=n - n.rolling_mean_by("t", "1d"),
            of_sum=(n * 2 + i).rolling_max_by(t, "2d", closed="both"),
            by_expr=i.rolling_sum_by(t.dt.truncate("1h"), "1d"),
            shifted=n.shift(1).rolling_min_by("t", "1d").over("g"),
            then_cum=i.rolling_sum_by("t", "1d").cum_sum(),
            total=i.rolling_sum_by("t", "1d").sum(),
        )

    assert_same_as_polars(table, steps, tolerance={"dev": _FLOAT})


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 1, 2, 2, 1, 2], "t": [3, 1, 2, 2, None, 5],
                      "x": [5.0, 1.0, 2.0, None, 4.0, 3.0]})  # fmt: skip
    got = cb.lazy(table).eval(
        'm = rolling_mean_by(x, t, "2i")\n'
        's = x.rolling_sum_by(t, "2i", closed="both").over(g)\n'
        'q = rolling_quantile_by(x, "t", "3i", quantile=0.9, interpolation="linear")\n'
        'v = x.rolling_std_by(t, "3i", ddof=0, min_samples=2)\n'
        'md = rolling_median_by(x, t, "3i")'
    ).compute()
    x = pl.col("x")
    want = pl.from_arrow(table).with_columns(
        m=x.rolling_mean_by("t", "2i"),
        s=x.rolling_sum_by("t", "2i", closed="both").over("g"),
        q=x.rolling_quantile_by("t", "3i", quantile=0.9, interpolation="linear"),
        v=x.rolling_std_by("t", "3i", ddof=0, min_samples=2),
        md=x.rolling_median_by("t", "3i"))  # fmt: skip
    assert_frame_equal(pl.from_arrow(got), want)


def test_explain_names_it() -> None:
    table = pa.table({"t": [1, 2], "x": [1.0, 2.0]})
    text = cb.lazy(table).select(cb.col("x").rolling_mean_by("t", "2i")).explain()
    assert "rolling_mean_by(col(\"t\"), '2i', min_samples=1, closed='right')" in text
    assert "windowed by its `by` values" in text


_BAD_TABLE = pa.table({
    "t": pa.array([1, 2, 3], pa.int64()), "d": pa.array([1, 2, 3], pa.int32()).cast(pa.date32()),
    "f": pa.array([1.0, 2.0, 3.0]), "i16": pa.array([1, 2, 3], pa.int16()),
    "s": pa.array(["a", "b", "c"]), "x": pa.array([1.0, 2.0, 3.0]),
    "dur": pa.array([1, 2, 3], pa.duration("ms")), "u": pa.array([1, 2, 2**63 + 5], pa.uint64()),
})  # fmt: skip


@pytest.mark.parametrize("build", [
    lambda m: m.col("x").rolling_sum_by("t", "2d"),  # a calendar window over integers
    lambda m: m.col("x").rolling_sum_by("d", "2i"),  # an index window over dates
    lambda m: m.col("x").rolling_sum_by("d", "1d2i"),
    lambda m: m.col("x").rolling_sum_by("f", "2i"),  # `by` types polars does not take
    lambda m: m.col("x").rolling_sum_by("i16", "2i"),
    lambda m: m.col("x").rolling_mean_by("s", "2i"),
    lambda m: m.col("x").rolling_mean_by("dur", "2d"),
    lambda m: m.col("d").rolling_sum_by("t", "2i"),  # sums of dates, durations, strings
    lambda m: m.col("dur").rolling_sum_by("t", "2i"),
    lambda m: m.col("s").rolling_min_by("t", "2i"),
    lambda m: m.col("dur").rolling_var_by("t", "2i"),
])  # fmt: skip
def test_errors_where_polars_raises(build: Any) -> None:
    with pytest.raises(Exception):  # noqa: B017, PT011 - polars' own error, of any kind
        pl.from_arrow(_BAD_TABLE).select(build(pl))
    with pytest.raises(ColbridgeError, match=r"rolling_\w+_by"):
        cb.lazy(_BAD_TABLE).select(build(cb)).compute()


@pytest.mark.parametrize(("by", "window", "pattern"), [
    ("t", "0i", "must be strictly positive"), ("d", "-2d", "must be strictly positive"),
    ("t", "", "must be strictly positive"), ("t", "2", "expected a valid unit"),
    ("d", "2x", "unit: 'x' not supported"), ("d", " 2d", "expected leading integer"),
    ("d", "2d-1h", "single minus sign"),
])  # fmt: skip
def test_window_strings_polars_refuses(by: str, window: str, pattern: str) -> None:
    with pytest.raises(pl.exceptions.InvalidOperationError, match=pattern):
        pl.from_arrow(_BAD_TABLE).select(pl.col("x").rolling_sum_by(by, window))
    with pytest.raises(InvalidOperationError, match=rf"rolling_sum_by.*{pattern}"):
        cb.col("x").rolling_sum_by(by, window)


def test_a_uint64_by_beyond_int64_is_refused() -> None:
    # polars' cast of `by` to Int64 fails there (it panics); colbridge says why
    with pytest.raises(ColbridgeError, match=r"rolling_sum_by.*beyond Int64"):
        cb.lazy(_BAD_TABLE).select(cb.col("x").rolling_sum_by("u", "2i")).compute()


def test_bad_arguments_are_refused_when_written() -> None:
    with pytest.raises(SchemaError, match="closed"):
        cb.col("x").rolling_sum_by("t", "2i", closed="middle")
    with pytest.raises(SchemaError, match="min_samples"):
        cb.col("x").rolling_sum_by("t", "2i", min_samples=-1)
    with pytest.raises(SchemaError, match="ddof"):
        cb.col("x").rolling_var_by("t", "2i", ddof=256)
    with pytest.raises(SchemaError, match="one column name or expression"):
        cb.col("x").rolling_var_by(["t", "t"], "2i")
    with pytest.raises(SchemaError, match=r"between 0\.0 and 1\.0"):
        cb.col("x").rolling_quantile_by("t", "2i", quantile=2.0)


def test_timedelta_windows() -> None:
    table = _table(40, 2, "ms", shuffled=True, by_nulls=False, nulls=0.2, groups=1)
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("i").rolling_sum_by("t", dt.timedelta(hours=30)),
        b=m.col("n").rolling_max_by("t", dt.timedelta(days=2, seconds=1))))  # fmt: skip


def test_temporal_values_min_max_and_variance() -> None:
    table = _table(50, 7, "i64", shuffled=True, by_nulls=True, nulls=0.2, groups=2)
    table = table.append_column("d", pa.array(np.arange(50, dtype=np.int32)[::-1] % 13)
                                .cast(pa.date32()))  # fmt: skip
    table = table.append_column("ts", table["w"].cast(pa.timestamp("us", "Asia/Tokyo")))
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("d").rolling_min_by("t", "3i"),
        b=m.col("ts").rolling_max_by("t", "3i", closed="both").over("g"),
        c=m.col("d").rolling_var_by("t", "4i"),
        e=m.col("ts").rolling_std_by("t", "4i")), tolerance={"c": _FLOAT, "e": _FLOAT})  # fmt: skip


@pytest.mark.parametrize("column", ["d", "ts", "du", "tm"])
def test_temporal_means_medians_and_quantiles(column: str) -> None:
    # polars: the Float64 result over the integers, truncated back to the type (a date's
    # to Datetime[us])
    rng = np.random.default_rng(6)
    n = 60

    def mask() -> np.ndarray:
        return rng.random(n) < 0.2

    table = pa.table({
        "t": rng.integers(0, 20, n), "g": rng.integers(0, 3, n),
        "d": pa.array(rng.integers(0, 20_000, n).astype(np.int32), mask=mask())
        .cast(pa.date32()),
        "ts": pa.array(rng.integers(0, 2**50, n), mask=mask())
        .cast(pa.timestamp("ns", "Asia/Tokyo")),
        "du": pa.array(rng.integers(-(2**40), 2**40, n), mask=mask()).cast(pa.duration("us")),
        "tm": pa.array(rng.integers(0, 86_400 * 10**9, n), mask=mask()).cast(pa.time64("ns")),
    })  # fmt: skip
    for closed in ("right", "both"):
        assert_same_as_polars(table, lambda m, q, c=closed: q.select(
            a=m.col(column).rolling_mean_by("t", "3i", closed=c),
            b=m.col(column).rolling_median_by("t", "4i", closed=c).over("g"),
            e=m.col(column).rolling_quantile_by("t", "5i", quantile=0.3,
                                                interpolation="linear", closed=c)))  # fmt: skip


def test_streams_and_dask_refuse_it(tmp_path: Any) -> None:
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow.parquet as pq

    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"t": [1, 2, 3], "x": [1.0, None, 3.0]}), path)
    with pytest.raises(JobSpecError, match=r"rolling_mean_by.*time-based `rolling_\*_by` "
                       r"windows.*not supported in a streamed job"):
        pl.scan_parquet(path).gpu.with_columns(
            r=cb.col("x").rolling_mean_by("t", "2i")).compute()
    pdf = pd.DataFrame({"t": [1, 2, 3, 4], "x": [1.0, 2.0, 3.0, 4.0]})
    q = cb.lazy(pdf).with_columns(r=cb.col("x").rolling_sum_by("t", "2i"))
    with pytest.raises(JobSpecError, match=r"rolling_sum_by.*time-based `rolling_\*_by`"):
        cb.dask.apply(q, dd.from_pandas(pdf, npartitions=2)).compute()


def test_a_longer_frame_in_groups() -> None:
    rng = np.random.default_rng(4)
    n = 20_000
    t = np.sort(rng.integers(0, 2_000_000, n)) * 1_000  # microseconds, ties included
    t = rng.permutation(t)
    table = pa.table({
        "t": pa.array(t, pa.int64()).cast(pa.timestamp("us")),
        "g": rng.integers(0, 50, n),
        "x": pa.array(np.round(rng.normal(size=n), 3), mask=rng.random(n) < 0.1),
        "i": rng.integers(-100, 100, n),
    })  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("x").rolling_mean_by("t", "20s").over("g"),
        b=m.col("i").rolling_sum_by("t", "10s"),
        c=m.col("x").rolling_std_by("t", "30s", closed="both"),
        d=m.col("x").rolling_quantile_by("t", "15s", quantile=0.3).over("g"),
        e=m.col("i").rolling_max_by("t", "5s", closed="left")),
        kinds=("polars",), tolerance={"a": _FLOAT, "c": _FLOAT})  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    func=st.sampled_from((*_FUNCS, "quantile")),
    n=st.integers(0, 120),
    seed=st.integers(0, 2**31 - 1),
    kind=st.sampled_from(tuple(_BY_KINDS)),
    shuffled=st.booleans(),
    by_nulls=st.booleans(),
    closed=st.sampled_from(["right", "left", "both", "none"]),
    choice=st.integers(0, 7),
    min_samples=st.sampled_from([0, 1, 3]),
)
def test_chunks_of_one_walk_equal_polars(func: str, n: int, seed: int, kind: str,
                                         shuffled: bool, by_nulls: bool, closed: str,
                                         choice: int, min_samples: int) -> None:  # fmt: skip
    # without keys the rows are cut in chunks that run in parallel; 8-row chunks put
    # many cuts among these few rows: ties across a cut, null `by` before the first,
    # windows wider than a chunk, zoned windows whose starts go back (one walk then)
    from colbridge.backends import rolling_by

    table = _table(n, seed, kind, shuffled=shuffled, by_nulls=by_nulls, nulls=0.2, groups=1)
    windows = _BY_KINDS[kind][1]
    window = windows[choice % len(windows)]

    def steps(m: Any, q: Any) -> Any:
        out = {}
        for column in ("f", "n", "f32", "i", "w", "b"):
            kw: dict[str, Any] = {"min_samples": min_samples, "closed": closed}
            if func == "quantile":
                kw["quantile"] = 0.3
            out[f"{func}_{column}"] = getattr(m.col(column), f"rolling_{func}_by")("t", window,
                                                                                    **kw)
        return q.select(**out)

    tolerance = {k: v for k, v in _tolerances().items() if k.startswith(func)}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rolling_by, "_CHUNK_ROWS", 8)
        assert_same_as_polars(table, steps, kinds=("polars",), tolerance=tolerance)


def test_a_long_time_series_runs_in_chunks() -> None:
    # sorted, with a run of ties across the first cut and null `by` first: chunks cut
    # where a run starts, and the answers are polars' (float sums within 1e-9)
    from colbridge.backends import rolling_by

    rng = np.random.default_rng(8)
    n = 3 * rolling_by._CHUNK_ROWS + 77
    t = np.sort(rng.integers(0, 40_000_000, n)) * 1_000
    t[rolling_by._CHUNK_ROWS - 5: rolling_by._CHUNK_ROWS + 5] = t[rolling_by._CHUNK_ROWS - 5]
    by = pa.array(t, pa.int64(), mask=np.arange(n) < 3).cast(pa.timestamp("us"))
    valid = np.arange(n) >= 3
    lower = np.where(valid, t - 20_000_000, 0)
    tasks = rolling_by._chunks(t, valid, lower, n)
    assert len(tasks) >= 3
    assert set(tasks[1:, 2]) <= set(np.flatnonzero(np.diff(t) > 0) + 1)  # where runs start
    table = pa.table({
        "t": by,
        "x": pa.array(np.round(rng.normal(size=n), 3), mask=rng.random(n) < 0.1),
        "i": rng.integers(-100, 100, n),
    })  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("x").rolling_mean_by("t", "20s"),
        b=m.col("i").rolling_sum_by("t", "10s", closed="left"),
        c=m.col("x").rolling_std_by("t", "30s", closed="both"),
        d=m.col("x").rolling_quantile_by("t", "15s", quantile=0.3, closed="none"),
        e=m.col("i").rolling_max_by("t", "5s", min_samples=3)),
        kinds=("polars",), tolerance={"a": _FLOAT, "c": _FLOAT})  # fmt: skip


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    from colbridge.testing.cuda_host import compute_on_host

    table = _table(60, 9, "paris", shuffled=True, by_nulls=True, nulls=0.3, groups=3)
    q = cb.lazy(table).select("g", a=cb.col("n").rolling_mean_by("t", "1d").over("g"),
                              b=cb.col("i").rolling_sum_by("t", "2d") + 1,
                              c=cb.col("f32").rolling_quantile_by("t", "1d", quantile=0.2))
    on_host = pl.from_arrow(compute_on_host(q))
    assert_frame_equal(on_host, pl.from_arrow(q.compute(device="cpu")), check_exact=True)


def test_inside_group_by_aggregations() -> None:
    table = _table(60, 12, "date", shuffled=True, by_nulls=True, nulls=0.2, groups=3)
    got = cb.lazy(table).group_by("g").agg(
        a=cb.col("n").rolling_max_by("t", "3d").max(),
        b=cb.col("i").rolling_sum_by("t", "1w", closed="both").sum(),
    ).compute()
    want = pl.from_arrow(table).group_by("g").agg(
        a=pl.col("n").rolling_max_by("t", "3d").max(),
        b=pl.col("i").rolling_sum_by("t", "1w", closed="both").sum(),
    )  # fmt: skip
    assert_frame_equal(pl.from_arrow(got).sort("g"), want.sort("g"))


def test_a_filter_before_it_inside_a_reduction_is_refused_as_polars_does() -> None:
    table = pa.table({"t": [1, 2, 3], "s": [1.0, -1.0, 2.0], "x": [1.0, 2.0, 3.0]})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        pl.from_arrow(table).select(pl.col("x").filter(pl.col("s") > 0)
                                    .rolling_max_by("t", "3i").sum())  # fmt: skip
    with pytest.raises(InvalidOperationError, match=r"rolling_max_by.*filter the frame's rows"):
        cb.lazy(table).select(cb.col("x").filter(cb.col("s") > 0)
                              .rolling_max_by("t", "3i").sum()).compute()  # fmt: skip


def test_a_window_start_the_zone_cannot_place_fails_as_in_polars() -> None:
    # Europe/Dublin (whose zone data call winter time the daylight saving one): the local
    # day before 1994-03-28 01:00 is a time its clocks skipped, which polars does not
    # move (no daylight saving part to move it by) and raises on; so does colbridge
    start = dt.datetime(1994, 3, 27, 12, tzinfo=dt.timezone.utc)
    hours = [start + dt.timedelta(hours=h) for h in range(30)]
    t = pa.array(hours, pa.timestamp("us", "UTC")).cast(pa.timestamp("us", "Europe/Dublin"))
    table = pa.table({"t": t, "x": pa.array(np.arange(30))})
    with pytest.raises(pl.exceptions.ComputeError):
        pl.from_arrow(table).select(pl.col("x").rolling_sum_by("t", "1d"))
    with pytest.raises(ColbridgeError, match=r"rolling_sum_by.*could not localize.*fixed window"):
        cb.lazy(table).select(cb.col("x").rolling_sum_by("t", "1d")).compute()
