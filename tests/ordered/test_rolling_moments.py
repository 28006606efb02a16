"""``rolling_skew`` and ``rolling_kurtosis`` against polars and an exact reference.

Each window's skewness (kurtosis) of its non-null values, as polars: NaN where the
window does not vary, null below ``min_samples`` values (3 for the unbiased skew,
4 for the unbiased kurtosis); integers give Float64, Float32 stays. polars updates
its sums as the window slides and colbridge takes each window afresh, so the floats
are compared within a tolerance, and against exact rational arithmetic.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import UnsupportedTypeError
from colbridge.testing.asserts import Tolerance, as_polars, assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.ordered.ordered_data import cut_table

# polars' sliding sums against each window taken afresh: far below this on these values
CLOSE = Tolerance(rtol=1e-9, atol=1e-12)


def _table(n: int, seed: int, *, nulls: float, groups: int, offset: int = 0,
           chunks: int = 1) -> pa.Table:  # fmt: skip
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    x = np.round(rng.normal(0, 10, total), 1)
    x[rng.random(total) < 0.2] = 3.0  # runs of equal values: windows that do not vary
    x[rng.random(total) < 0.02] = np.nan
    table = pa.table({
        "x": pa.array(x, mask=mask()),
        "f": pa.array(np.round(rng.normal(0, 4, total), 1).astype(np.float32), mask=mask()),
        "i": pa.array(rng.integers(-5, 6, total), mask=mask()),
        "g": pa.array(rng.integers(0, groups, total)),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


def _moments(m: Any, w: int, ms: int | None, center: bool) -> dict[str, Any]:
    x = m.col("x")
    return {
        "s": x.rolling_skew(w, min_samples=ms, center=center),
        "su": x.rolling_skew(w, bias=False, min_samples=ms, center=center),
        "k": x.rolling_kurtosis(w, min_samples=ms, center=center),
        "kp": x.rolling_kurtosis(w, fisher=False, bias=False, min_samples=ms, center=center),
        "fk": m.col("f").rolling_kurtosis(w, min_samples=ms, center=center),
        "is": m.col("i").rolling_skew(w, min_samples=ms, center=center),
        "gs": x.rolling_skew(w, min_samples=ms, center=center).over("g"),
        "e": (x.rolling_kurtosis(w, min_samples=ms, center=center) * 2 + 1).fill_nan(None),
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.sampled_from([0, 1, 4, 30, 200]), seed=st.integers(0, 2**31 - 1),
       nulls=st.sampled_from([0.0, 0.2, 0.6]), groups=st.sampled_from([1, 3]),
       window=st.integers(1, 8), min_samples=st.sampled_from([None, 1, 2, 4]),
       center=st.booleans(), offset=st.sampled_from([0, 3]),
       chunks=st.sampled_from([1, 2]))  # fmt: skip
def test_equal_polars(n: int, seed: int, nulls: float, groups: int, window: int,
                      min_samples: int | None, center: bool, offset: int,
                      chunks: int) -> None:  # fmt: skip
    ms = None if min_samples is None else min(min_samples, window)
    table = _table(n, seed, nulls=nulls, groups=groups, offset=offset, chunks=chunks)
    assert_same_as_polars(table, lambda m, q: q.select(**_moments(m, window, ms, center)),
                          kinds=("polars", "pyarrow"), tolerance=CLOSE)  # fmt: skip


def _exact(values: list[float], kurtosis: bool) -> float:
    xs = [Fraction(v) for v in values]
    n = len(xs)
    mean = sum(xs) / n
    d = [x - mean for x in xs]
    m2 = sum(t * t for t in d) / n
    if m2 == 0:
        return math.nan
    if kurtosis:
        return float(sum(t**4 for t in d) / n / (m2 * m2)) - 3.0
    return float(sum(t**3 for t in d) / n) / float(m2) ** 1.5


@pytest.mark.parametrize("loc", [0.0, 1e3, 1e6])
def test_windows_far_from_zero_keep_their_precision(loc: float) -> None:
    # each window's deviations from its first value: exact near it, so the moments of
    # values around 1e6 keep about 13 digits (polars' sliding sums keep about 8 there)
    x = np.random.default_rng(8).normal(loc, 1, 300)
    q = pl.DataFrame({"x": x}).gpu.select(s=cb.col("x").rolling_skew(20),
                                          k=cb.col("x").rolling_kurtosis(20))  # fmt: skip
    got = q.compute()
    for name, kurtosis in (("s", False), ("k", True)):
        want = np.array([_exact(list(x[i - 19:i + 1]), kurtosis) for i in range(19, 300)])
        np.testing.assert_allclose(got[name].to_numpy()[19:], want, rtol=1e-11)


def test_polars_example_and_edges() -> None:
    df = pl.DataFrame({"a": [1, 4, 2, 9]})
    got = df.gpu.select(s=cb.col("a").rolling_skew(3), k=cb.col("a").rolling_kurtosis(3))
    want = df.select(s=pl.col("a").rolling_skew(3), k=pl.col("a").rolling_kurtosis(3))
    assert_frame_equal(got.compute(), want, rel_tol=1e-12)
    # equal values: NaN (0.1 three times has a mean an ulp off, deviations exactly 0);
    # one value NaN, two values a skew of 0 and a kurtosis of -2; infinities NaN
    edge = pl.DataFrame({"a": [0.1, 0.1, 0.1, 1.0, math.inf, 2.0, 3.0, 4.0, 4.0]})
    exprs = lambda m: [m.col("a").rolling_skew(3, min_samples=1).alias("s"),  # noqa: E731
                       m.col("a").rolling_kurtosis(3, min_samples=1).alias("k"),
                       m.col("a").rolling_skew(3, min_samples=1, bias=False).alias("u")]
    assert_frame_equal(edge.gpu.select(exprs(cb)).compute(), edge.select(exprs(pl)),
                       rel_tol=1e-12)  # fmt: skip
    assert math.isnan(edge.gpu.select(exprs(cb)).compute()["s"][2])
    f32 = pl.DataFrame({"a": [1.5, 2.0, 7.25, -3.0]}, schema={"a": pl.Float32})
    got32 = f32.gpu.select(cb.col("a").rolling_skew(3)).compute()
    assert got32.schema["a"] == pl.Float32
    assert_frame_equal(got32, f32.select(pl.col("a").rolling_skew(3)))


def test_long_columns_and_every_tier(tier: str) -> None:
    # past two chunks of the scan pass: each chunk reads the window before it again
    table = _table(300_000, 3, nulls=0.1, groups=7)
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("x").rolling_skew(30, min_samples=1),
        b=m.col("x").rolling_kurtosis(9, center=True).over("g"),
    ), kinds=("polars",), tolerance=Tolerance(rtol=1e-8, atol=1e-10))  # fmt: skip


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = _table(2_000, 5, nulls=0.3, groups=30)
    q = cb.lazy(table).select(a=cb.col("x").rolling_skew(5).over("g"),
                              b=cb.col("f").rolling_kurtosis(4, bias=False) + 1)  # fmt: skip
    assert_frame_equal(pl.from_arrow(compute_on_host(q)), pl.from_arrow(q.compute(device="cpu")),
                       check_exact=True)  # fmt: skip


def test_refusals() -> None:
    df = pl.DataFrame({"b": [True, False, True], "d": [1, 2, 3], "s": ["a", "b", "c"]}
                      ).with_columns(pl.col("d").cast(pl.Date))  # fmt: skip
    for name in ("b", "d", "s"):
        with pytest.raises(pl.exceptions.InvalidOperationError):
            df.select(pl.col(name).rolling_skew(2))
        with pytest.raises(UnsupportedTypeError, match=r"`rolling_skew` is not supported.*"
                           r"takes numbers"):  # fmt: skip
            df.gpu.select(cb.col(name).rolling_skew(2)).compute()
    with pytest.raises(cb.ColbridgeError, match=r"min_samples.*must be <= `window_size`"):
        cb.col("x").rolling_kurtosis(3, min_samples=4)
    with pytest.raises(cb.ColbridgeError, match=r"bias"):
        cb.col("x").rolling_skew(3, bias="no")  # type: ignore[arg-type]


def test_the_string_language_streams_and_dask(tmp_path: Any) -> None:
    import dask.dataframe as dd
    import pyarrow.parquet as pq

    table = pa.table({"x": [1.0, 4.0, 2.0, 9.0, 3.0]})
    got = cb.lazy(table).eval("s = rolling_skew(x, 3)\nk = x.rolling_kurtosis(3, fisher=False)"
                              ).compute()  # fmt: skip
    want = pl.from_arrow(table).with_columns(  # type: ignore[union-attr]
        s=pl.col("x").rolling_skew(3), k=pl.col("x").rolling_kurtosis(3, fisher=False))
    assert_frame_equal(pl.from_arrow(got), want, rel_tol=1e-12)
    path = tmp_path / "a.parquet"
    pq.write_table(table, path)
    streamed = pl.scan_parquet(path).gpu.with_columns(r=cb.col("x").rolling_skew(3))
    assert_frame_equal(as_polars(streamed.compute()), pl.read_parquet(path).with_columns(
        r=pl.col("x").rolling_skew(3)), rel_tol=1e-12)  # fmt: skip
    pdf = pd.DataFrame({"x": np.round(np.random.default_rng(1).normal(size=400), 1)})
    for center in (False, True):
        q = cb.lazy(pdf).with_columns(r=cb.col("x").rolling_skew(9, center=center))
        got_dask = cb.dask.apply(q, dd.from_pandas(pdf, npartitions=4)).compute()
        np.testing.assert_allclose(got_dask["r"].to_numpy(),
                                   q.compute()["r"].to_numpy(), rtol=0)  # fmt: skip
