"""``rolling_quantile`` and ``rolling_median`` against polars, compared exactly.

Generated frames with nulls, NaN, ±inf, ±0 and ties in windows of every size (longer
than the frame too), ``min_samples`` from 1 to the window, centred and trailing,
every interpolation and quantiles at and between the edges; Float64, Float32 (which
interpolates in Float32), integers and booleans (Float64); dates, datetimes, durations
and times (the quantile of their integers truncated back, as polars); slices, chunks, empty
and one-row frames; plain and ``over`` keys with nulls; long frames cut into chunks
that read the window before them again; the three frame kinds; the string language;
refused types and arguments; streams refuse it, Dask computes it with halos; the
CUDA code path (on the host) agrees.
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
from colbridge.errors import SchemaError, UnsupportedTypeError
from colbridge.expr.nodes import QUANTILE_METHODS
from colbridge.testing.asserts import as_polars, assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.ordered.ordered_data import cut_table


def _table(n: int, seed: int, *, nulls: float, groups: int, offset: int = 0,
           chunks: int = 1) -> pa.Table:  # fmt: skip
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    pool = np.array([0.0, -0.0, 1.5, -2.0, np.nan, np.inf, -np.inf, 3.25, 7.0, -0.5])
    table = pa.table({
        "g": pa.array(rng.integers(0, groups, total), mask=rng.random(total) < 0.1),
        "f": pa.array(rng.choice(pool, total), mask=mask()),
        "n": pa.array(np.round(rng.normal(size=total) * 10, 1), mask=mask()),
        "f32": pa.array(rng.normal(size=total).astype(np.float32) * 100, mask=mask()),
        "i": pa.array(rng.integers(-5, 5, total).astype(np.int16), mask=mask()),
        "w": pa.array(rng.integers(-(2**40), 2**40, total), mask=mask()),
        "b": pa.array(rng.random(total) < 0.5, mask=mask()),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


COLUMNS = ("f", "n", "f32", "i", "w", "b")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 2, 5, 30, 200]),
    seed=st.integers(0, 2**31 - 1),
    nulls=st.sampled_from([0.0, 0.3, 0.9]),
    groups=st.sampled_from([1, 3, 40]),
    offset=st.sampled_from([0, 4]),
    chunks=st.sampled_from([1, 3]),
    window=st.sampled_from([1, 2, 3, 4, 7, 250]),
    fill=st.floats(0.0, 1.0),
    center=st.booleans(),
    quantile=st.one_of(st.sampled_from([0.0, 0.5, 1.0, 0.25]), st.floats(0.0, 1.0)),
    method=st.sampled_from(QUANTILE_METHODS),
)
def test_rolling_quantiles_equal_polars(n: int, seed: int, nulls: float, groups: int,
                                        offset: int, chunks: int, window: int, fill: float,
                                        center: bool, quantile: float,
                                        method: str) -> None:  # fmt: skip
    table = _table(n, seed, nulls=nulls, groups=groups, offset=offset, chunks=chunks)
    least = max(1, round(fill * window))

    def steps(m: Any, q: Any) -> Any:
        out = {}
        for c in COLUMNS:
            x = m.col(c)
            out[f"q_{c}"] = x.rolling_quantile(quantile, method, window, min_samples=least,
                                               center=center)  # fmt: skip
            out[f"o_{c}"] = x.rolling_quantile(quantile, method, window, min_samples=least,
                                               center=center).over("g")  # fmt: skip
        out["med"] = m.col("n").rolling_median(window, min_samples=least, center=center)
        return q.select(**out)

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


@pytest.mark.parametrize("method", QUANTILE_METHODS)
def test_every_position_of_small_windows(method: str) -> None:
    # windows of 1 to 6 values: positions that fall on a value, between two, on a half
    values = [4.0, 1.0, None, 3.0, 3.0, 9.0, -2.0, 5.0, None, 0.5, 7.0, 2.0]
    table = pa.table({"x": pa.array(values, pa.float64()),
                      "f": pa.array(values, pa.float32())})  # fmt: skip
    for quantile in (0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0):
        assert_same_as_polars(table, lambda m, q, qq=quantile: q.select(**{
            f"{c}{w}": m.col(c).rolling_quantile(qq, method, w, min_samples=1)
            for c in ("x", "f") for w in range(1, 7)}), kinds=("polars",))  # fmt: skip


def test_long_columns_cut_into_chunks_that_read_the_window_before_them() -> None:
    # past two chunks of the scan pass: each chunk starts its window in the one before
    rng = np.random.default_rng(3)
    n = 300_000
    x = np.round(rng.normal(size=n), 2)
    x[rng.random(n) < 0.01] = np.nan
    table = pa.table({"x": pa.array(x, mask=rng.random(n) < 0.1), "g": rng.integers(0, 7, n)})
    for window, center in ((5, False), (64, True)):
        assert_same_as_polars(table, lambda m, q, w=window, c=center: q.select(
            a=m.col("x").rolling_median(w, min_samples=1, center=c),
            b=m.col("x").rolling_quantile(0.9, "linear", w, center=c).over("g"),
            c=m.col("x").rolling_quantile(0.1, "nearest", w, min_samples=2, center=c)),
            kinds=("polars",))  # fmt: skip


def test_inside_expressions_and_of_expressions() -> None:
    table = _table(500, 8, nulls=0.2, groups=5)

    def steps(m: Any, q: Any) -> Any:
        n, i = m.col("n"), m.col("i")
        return q.with_columns(
            dev=n - n.rolling_median(5, min_samples=1),
            of_sum=(n * 2 + i).rolling_quantile(0.75, "higher", 4),
            shifted=n.shift(1).rolling_median(3, min_samples=2).over("g"),
            then_cum=n.rolling_quantile(0.5, "lower", 3, min_samples=1).cum_sum(),
        )

    assert_same_as_polars(table, steps)


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_every_frame_kind(tier: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    table = _table(300, 4, nulls=0.2, groups=4)
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("n").rolling_median(4, min_samples=2),
        b=m.col("f32").rolling_quantile(0.3, "midpoint", 6, center=True).over("g")))


def test_explain_says_where_it_runs() -> None:
    text = cb.lazy(pa.table({"x": [1.0, 2.0]})).select(cb.col("x").rolling_median(2)).explain()
    assert "windowed (each window's values kept sorted) on the host CPU" in text


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 1, 2, 2, 1, 2], "x": [5.0, 1.0, 2.0, None, 4.0, 3.0]})
    got = cb.lazy(table).eval(
        "m = rolling_median(x, 2, min_samples=1)\n"
        'q = rolling_quantile(x, 0.9, "linear", 3, min_samples=1).over(g)\n'
        "r = x.rolling_median(2, center=True)"
    ).compute()
    want = pl.from_arrow(table).with_columns(
        m=pl.col("x").rolling_median(2, min_samples=1),
        q=pl.col("x").rolling_quantile(0.9, "linear", 3, min_samples=1).over("g"),
        r=pl.col("x").rolling_median(2, center=True))  # fmt: skip
    assert_frame_equal(pl.from_arrow(got), want)


@pytest.mark.parametrize(("build", "pattern"), [
    (lambda: cb.col("x").rolling_quantile(1.5), r"between 0\.0 and 1\.0"),
    (lambda: cb.col("x").rolling_quantile(0.5, "cubic"), r"unknown interpolation"),
    (lambda: cb.col("x").rolling_quantile(cb.col("x")), r"a literal, not an expression"),
    (lambda: cb.col("x").rolling_median(3, weights=[1.0, 2.0, 1.0]), r"weights.* not supported"),
    (lambda: cb.col("x").rolling_median(3, min_samples=4), r"must be <= `window_size`"),
    (lambda: cb.col("x").rolling_median(-1), r"window_size"),
])  # fmt: skip
def test_bad_arguments_are_refused_when_written(build: Any, pattern: str) -> None:
    with pytest.raises(SchemaError, match=pattern):
        build()


def _temporal_table(n: int, seed: int, *, nulls: float, groups: int) -> pa.Table:
    """Dates, datetimes (ns in a time zone, us, ms), durations (ns, ms) and times.

    Datetimes of nanoseconds reach past 2**53: their Float64 quantiles lose precision
    as polars' do.
    """
    rng = np.random.default_rng(seed)

    def mask() -> np.ndarray:
        return rng.random(n) < nulls

    big = rng.integers(-(2**60), 2**60, n)
    return pa.table({
        "g": pa.array(rng.integers(0, groups, n), mask=rng.random(n) < 0.1),
        "d": pa.array(rng.integers(-30_000, 30_000, n).astype(np.int32), pa.date32(),
                      mask=mask()),
        "tz": pa.array(big, pa.timestamp("ns", "Europe/Paris"), mask=mask()),
        "us": pa.array(big // 1000, pa.timestamp("us"), mask=mask()),
        "ms": pa.array(rng.integers(-(10**12), 10**12, n), pa.timestamp("ms"), mask=mask()),
        "du": pa.array(big // 7, pa.duration("ns"), mask=mask()),
        "dm": pa.array(rng.integers(-(10**6), 10**6, n), pa.duration("ms"), mask=mask()),
        "t": pa.array(rng.integers(0, 86_400 * 10**9, n), pa.time64("ns"), mask=mask()),
    })  # fmt: skip


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 5, 60]),
    seed=st.integers(0, 2**31 - 1),
    nulls=st.sampled_from([0.0, 0.3]),
    groups=st.sampled_from([1, 4]),
    window=st.sampled_from([1, 2, 3, 6]),
    fill=st.floats(0.0, 1.0),
    center=st.booleans(),
    quantile=st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0.0, 1.0)),
    method=st.sampled_from(QUANTILE_METHODS),
)
def test_temporal_values_are_polars_quantiles_of_their_integers(
    n: int, seed: int, nulls: float, groups: int, window: int, fill: float, center: bool,
    quantile: float, method: str,
) -> None:
    # polars: the Float64 quantile of the integers, truncated back to the type (a
    # date's to Datetime[us]; a time zone kept)
    table = _temporal_table(n, seed, nulls=nulls, groups=groups)
    least = max(1, round(fill * window))

    def steps(m: Any, q: Any) -> Any:
        out = {}
        for c in ("d", "tz", "us", "ms", "du", "dm", "t"):
            x = m.col(c)
            out[f"q_{c}"] = x.rolling_quantile(quantile, method, window, min_samples=least,
                                               center=center)  # fmt: skip
            out[f"m_{c}"] = x.rolling_median(window, min_samples=least,
                                             center=center).over("g")  # fmt: skip
        return q.select(**out)

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_types_that_are_not_numbers_are_refused() -> None:
    table = pa.table({"s": ["a", "b"], "c": pa.array(["a", "b"]).dictionary_encode()})
    for column in ("s", "c"):
        with pytest.raises(UnsupportedTypeError, match=rf"column `{column}` .*not supported"):
            cb.lazy(table).select(cb.col(column).rolling_median(2)).compute()


def test_streams_and_dask_use_halos(tmp_path: Any) -> None:
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow.parquet as pq

    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"x": [1.0, None, 3.0, 7.0, -1.0, 2.0, None, 5.0]}), path)
    for center in (False, True):  # a stream: each batch of 3 rows with its halos
        got = cb.lazy(pl.scan_parquet(path), batch_rows=3).with_columns(
            r=cb.col("x").rolling_median(3, min_samples=1, center=center)).compute()
        want = pl.read_parquet(path).with_columns(
            r=pl.col("x").rolling_median(3, min_samples=1, center=center))
        assert_frame_equal(as_polars(got), want)
    rng = np.random.default_rng(1)
    pdf = pd.DataFrame({"x": np.round(rng.normal(size=400), 1)})
    for center in (False, True):
        q = cb.lazy(pdf).with_columns(r=cb.col("x").rolling_median(9, min_samples=1,
                                                                    center=center))  # fmt: skip
        got = cb.dask.apply(q, dd.from_pandas(pdf, npartitions=4)).compute()
        want = pl.from_pandas(pdf).with_columns(
            r=pl.col("x").rolling_median(9, min_samples=1, center=center))
        np.testing.assert_array_equal(got["r"].to_numpy(), want["r"].to_numpy())


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = _table(2_000, 5, nulls=0.3, groups=30)
    q = cb.lazy(table).select("g", a=cb.col("n").rolling_median(5).over("g"),
                              b=cb.col("f32").rolling_quantile(0.2, "linear", 3),
                              c=cb.col("i").rolling_quantile(0.5, "nearest", 4) + 1)  # fmt: skip
    on_host = pl.from_arrow(compute_on_host(q))
    assert_frame_equal(on_host, pl.from_arrow(q.compute(device="cpu")), check_exact=True)
    want = pl.from_arrow(table).select(
        "g", a=pl.col("n").rolling_median(5).over("g"),
        b=pl.col("f32").rolling_quantile(0.2, "linear", 3),
        c=pl.col("i").rolling_quantile(0.5, "nearest", 4) + 1)  # fmt: skip
    assert_frame_equal(on_host, want, check_exact=True)
    # temporal values: their integers' quantile truncated back by the device's kernel
    dated = _temporal_table(500, 6, nulls=0.2, groups=7)
    q = cb.lazy(dated).select(d=cb.col("d").rolling_median(4).over("g"),
                              tz=cb.col("tz").rolling_quantile(0.3, "linear", 3))  # fmt: skip
    on_host = pl.from_arrow(compute_on_host(q))
    want = pl.from_arrow(dated).select(d=pl.col("d").rolling_median(4).over("g"),
                                       tz=pl.col("tz").rolling_quantile(0.3, "linear", 3))
    assert_frame_equal(on_host, want, check_exact=True)


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, np.nan, np.inf]), min_size=1,
                    max_size=12),
    pick=st.integers(0, 11),
    new=st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, 3.0, np.nan, -np.inf]),
)
def test_one_move_of_a_leaving_and_an_entering_value_is_a_remove_then_an_insert(
    values: list[float], pick: int, new: float,
) -> None:
    # the window's buffer, bit for bit (the order of 0.0 and -0.0 and of NaN included)
    from colbridge.backends._scan_kernels import sorted_insert, sorted_remove, sorted_replace

    buf = np.empty(len(values) + 1)
    size = 0
    for v in values:
        size = sorted_insert(buf, size, v)
    old = buf[pick % size]
    want = buf.copy()
    sorted_insert(want, sorted_remove(want, size, old), new)
    got = buf.copy()
    sorted_replace(got, size, old, new)
    assert got[:size].tobytes() == want[:size].tobytes()
