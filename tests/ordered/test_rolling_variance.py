"""Rolling variance and deviation against polars where the algorithm could drift.

The kernels join two parts of each window (the end of one block of rows and the
start of the next), each summed around a value it holds, and never subtract a
row that leaves. These tests draw what would break that: runs of equal values
(polars gives exactly 0, and so must colbridge, not 1e-17), outliers many orders
above their neighbours that enter and leave the window, NaN and infinities,
nulls, windows longer than the frame, centred windows, ddof 0 and 1, per group
by both ways of scanning by key (`COLBRIDGE_SCAN_BY_KEY`), and frames long enough
to be cut into chunks that run in parallel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge as cb

RTOL = 1e-9  # docs/ordered.md: rolling variances match polars to a relative 1e-9 in float64
#: few distinct values, so runs of equal values are common; outliers far above the rest
VALUES = [0.1, 0.1, 0.1, 3.0, -2.5, 1e6 + 0.1, 1e12, float("nan"), float("inf")]


def _both(table: pa.Table, build: Any) -> tuple[np.ndarray, np.ndarray]:
    """``build(module)`` selected as ``y`` by polars and by colbridge, as float64 with NaN nulls."""
    want = pl.from_arrow(table).select(y=build(pl))["y"]
    got = cb.lazy(table).select(y=build(cb)).compute().column("y")
    got_valid = np.asarray(got.is_valid().to_numpy(zero_copy_only=False))
    assert np.array_equal(got_valid, want.is_not_null().to_numpy()), "validity differs"
    g = np.asarray(got.to_numpy(zero_copy_only=False), dtype=np.float64)[got_valid]
    w = want.to_numpy().astype(np.float64)[got_valid]
    return g, w


def _check(g: np.ndarray, w: np.ndarray) -> None:
    assert np.array_equal(np.isnan(g), np.isnan(w)), "NaN differs"
    zeros = np.flatnonzero((g == 0.0) != (w == 0.0))
    assert len(zeros) == 0, f"exact zeros differ at {zeros[:10]}"
    np.testing.assert_allclose(g, w, rtol=RTOL, atol=0.0)


def _check_generated(data: list[float | None], window: int, min_samples: int, center: bool,
                     ddof: int, std: bool, keyed: bool) -> None:  # fmt: skip
    """A generated column's rolling variance (deviation) against polars, with keys or not."""
    min_samples = min(min_samples, window)
    keys = [i % 3 // 2 for i in range(len(data))]  # two groups, interleaved unevenly
    table = pa.table({"x": pa.array(data, pa.float64()), "g": pa.array(keys, pa.int64())})
    func = "rolling_std" if std else "rolling_var"

    def build(m: Any) -> Any:
        expr = getattr(m.col("x"), func)(window, min_samples=min_samples, center=center,
                                         ddof=ddof)  # fmt: skip
        return expr.over("g") if keyed else expr

    _check(*_both(table, build))


@pytest.fixture(params=["carry", "sort"])
def by_key(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLBRIDGE_SCAN_BY_KEY", request.param)
    return str(request.param)


# the fixture only sets the scan method, the same for every example
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    data=st.lists(st.one_of(st.none(), st.sampled_from(VALUES)), max_size=40),
    window=st.integers(1, 9),
    min_samples=st.integers(1, 9),
    center=st.booleans(),
    ddof=st.integers(0, 1),
    std=st.booleans(),
    keyed=st.booleans(),
)
def test_rolling_var_matches_polars(by_key: str, data: list[float | None], window: int,
                                    min_samples: int, center: bool, ddof: int, std: bool,
                                    keyed: bool) -> None:  # fmt: skip
    _check_generated(data, window, min_samples, center, ddof, std, keyed)


@pytest.mark.parametrize(("window", "center"), [(2, False), (30, False), (31, True), (5000, False)])
@pytest.mark.parametrize("keyed", [False, True])
def test_rolling_var_on_a_long_frame_with_runs_and_outliers(
    by_key: str, window: int, center: bool, keyed: bool
) -> None:
    # 40,000 rows: cut into chunks without keys; runs of equal values of 1 to 400 rows
    rng = np.random.default_rng(window)
    runs = rng.integers(1, 400, 300)
    x = np.repeat(rng.normal(1e4, 50.0, len(runs)), runs)[:40_000]
    x = np.concatenate([x, np.full(40_000 - len(x), 7.0)])
    x[rng.random(len(x)) < 0.002] = 1e12
    mask = rng.random(len(x)) < 0.05
    keys = rng.integers(0, 3, len(x))
    table = pa.table({"x": pa.array(x, mask=mask), "g": pa.array(keys)})

    def build(m: Any) -> Any:
        expr = m.col("x").rolling_std(window, min_samples=2, center=center)
        return expr.over("g") if keyed else expr

    g, w = _both(table, build)
    _check(g, w)
    assert (w == 0.0).sum() > 100  # the runs made windows of equal values


#: finite values whose differences or squares overflow, beside NaN, infinities and zeros
HUGE = [1e308, -1e308, 1.7e308, 1e200, -3e154, 2e154, 1.0, -0.0, 0.0, float("nan"),
        float("inf"), float("-inf")]  # fmt: skip


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    data=st.lists(st.one_of(st.none(), st.sampled_from(HUGE)), max_size=40),
    window=st.integers(1, 9),
    min_samples=st.integers(1, 9),
    center=st.booleans(),
    ddof=st.integers(0, 1),
    std=st.booleans(),
    keyed=st.booleans(),
)
def test_rolling_var_of_overflowing_values_matches_polars(
    by_key: str, data: list[float | None], window: int, min_samples: int, center: bool,
    ddof: int, std: bool, keyed: bool,
) -> None:
    # polars' result for such a window is whatever its Welford updates make of the
    # infinities they meet (0 for [1e308, -1e308], inf or NaN elsewhere), so colbridge
    # must take the same steps: the same NaN, infinities and zeros, not a NaN for all
    _check_generated(data, window, min_samples, center, ddof, std, keyed)


@pytest.mark.parametrize("keyed", [False, True])
def test_rolling_var_of_overflowing_values_on_a_long_frame(by_key: str, keyed: bool) -> None:
    # long enough to be cut into chunks (each finding polars' blocks from the frame's
    # start), nulls shifting polars' blocks away from the kernels' own
    rng = np.random.default_rng(5)
    n = 60_000
    x = rng.normal(0.0, 1.0, n)
    pick = rng.random(n) < 0.3
    x[pick] = rng.choice(np.array(HUGE), pick.sum())
    table = pa.table({"x": pa.array(x, mask=rng.random(n) < 0.2),
                      "g": pa.array(rng.integers(0, 3, n))})  # fmt: skip
    for window, center in ((3, False), (8, True), (40, False)):

        def build(m: Any, window: int = window, center: bool = center) -> Any:
            expr = m.col("x").rolling_var(window, min_samples=1, center=center and not keyed)
            return expr.over("g") if keyed else expr

        g, w = _both(table, build)
        _check(g, w)
        assert np.isinf(w).sum() > 100  # overflows were met
