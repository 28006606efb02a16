"""Ordered operations at edges polars' own answers decide, on both CPU tiers.

Which of two equal extremes (``0.0`` and ``-0.0``) a rolling or running min/max
gives (``assert_frame_equal`` takes them as equal: the signs are compared here),
variances of finite values whose squares overflow, and windows longer than any
frame (2**31 rows and more, which no kernel can hold).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import ColbridgeError


def _signs(values: list[Any]) -> list[str]:
    """Each value's sign bit ('+'/'-'), 'nan' or 'null': what makes 0.0 and -0.0 differ."""
    out = []
    for v in values:
        if v is None:
            out.append("null")
        elif v != v:
            out.append("nan")
        else:
            out.append("-" if np.signbit(v) else "+")
    return out


ZEROS = [
    [0.0, -0.0], [-0.0, 0.0], [0.0, -0.0, 0.0], [-0.0, 0.0, -0.0, 1.0, -0.0],
    [0.0, float("nan"), -0.0], [None, -0.0, 0.0, None, -0.0],
]  # fmt: skip
_rng = np.random.default_rng(11)
ZEROS += [
    [None if v == 9 else float(v) for v in _rng.choice([0.0, -0.0, 1.0, -1.0, 9], 14)]
    for _ in range(12)
]

EXTREMES: dict[str, Callable[[Any], Any]] = {
    "rolling_max": lambda m: m.col("x").rolling_max(2, min_samples=1),
    "rolling_min": lambda m: m.col("x").rolling_min(3, min_samples=1),
    "rolling_min centred": lambda m: m.col("x").rolling_min(4, min_samples=1, center=True),
    "rolling_max over": lambda m: m.col("x").rolling_max(2, min_samples=1).over("g"),
    "cum_max": lambda m: m.col("x").cum_max(),
    "cum_min": lambda m: m.col("x").cum_min(),
    "cum_min reversed": lambda m: m.col("x").cum_min(reverse=True),
    "cum_max over": lambda m: m.col("x").cum_max().over("g"),
}


@pytest.mark.parametrize("name", list(EXTREMES))
def test_equal_extremes_are_polars_ones(tier: str, name: str) -> None:
    # of equal values a rolling min/max gives the latest in its window, as a running one
    # (polars 2.2; the earliest before): the sign of a zero shows which
    make = EXTREMES[name]
    for values in ZEROS:
        frame = pl.DataFrame({"x": pl.Series(values, dtype=pl.Float64),
                              "g": [i % 2 for i in range(len(values))]})  # fmt: skip
        want = frame.select(r=make(pl))["r"].to_list()
        got = frame.gpu.select(r=make(cb)).compute()["r"].to_list()
        assert _signs(got) == _signs(want), values
        assert_frame_equal(pl.DataFrame({"r": got}), pl.DataFrame({"r": want}))


@pytest.mark.parametrize(
    "values",
    [
        [1e200, -1e200, 3.0, 1e-300],
        [1e155, 2e155, -1e155],
        [1e308, 1e308, 1.0],
        [float("inf"), 1.0, 2.0],  # an infinite value: NaN, not infinity
        [1.0, float("nan"), 1e200, -1e200],
    ],
)
def test_variances_whose_squares_overflow_are_infinite(tier: str, values: list[float]) -> None:
    frame = pl.DataFrame({"x": values, "g": [0] * len(values)})
    for make in (
        lambda m: m.col("x").rolling_var(2),
        lambda m: m.col("x").rolling_std(3, min_samples=1),
        lambda m: m.col("x").rolling_var(2).over("g"),
    ):
        assert_frame_equal(frame.gpu.select(r=make(cb)).compute(), frame.select(r=make(pl)))


@pytest.mark.parametrize("window", [6, 11, 2**31, 2**40])
def test_windows_longer_than_any_frame(tier: str, window: int) -> None:
    frame = pl.DataFrame({"x": [1.0, None, 3.0, 4.0, -2.0], "g": [1, 1, 2, 1, 2]})
    # polars, the oracle, at most 2**31 rows: any window of more than 11 rows covers every
    # row of these 5 (centred too), and polars itself, given a 2**40-row window, once
    # aborted the test process from inside its `collect`
    oracle = min(window, 2**31)
    for make in (
        lambda m, window: m.col("x").rolling_sum(window, min_samples=1),
        lambda m, window: m.col("x").rolling_mean(window, min_samples=2, center=True),
        lambda m, window: m.col("x").rolling_median(window, min_samples=1),
        lambda m, window: m.col("x").rolling_max(window, min_samples=1).over("g"),
        lambda m, window: m.col("x").rolling_sum(window).over("g"),
        lambda m, window: (
            m.col("x").rolling_quantile(0.3, "linear", window, min_samples=1, center=True).over("g")
        ),
    ):
        got = frame.gpu.select(r=make(cb, window)).compute()
        assert_frame_equal(got, frame.select(r=make(pl, oracle)))


AGG_FRAME = pl.DataFrame(
    {"g": ["a", "a", "b", "b", "b", "c"], "x": [1.0, 2.0, 10.0, None, 30.0, 5.0],
     "y": [3, 1, 2, 2, 9, 0]}
)  # fmt: skip


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.col("x").shift(1, fill_value=m.col("x").mean()).sum(),
        lambda m: m.col("x").shift(1, fill_value=m.col("y").max() + 1).sum(),
        lambda m: m.col("x").shift(-1, fill_value=m.col("x").first()).max(),
        lambda m: (m.col("x").shift(2, fill_value=m.col("x").median()) * 2).mean(),
    ],
)
def test_a_shift_filled_by_a_reduction_inside_an_aggregation(
    tier: str, make: Callable[[Any], Any]
) -> None:
    # each group's own fill, as in `.over(g)` and in polars
    want = AGG_FRAME.group_by("g", maintain_order=True).agg(r=make(pl))
    assert_frame_equal(AGG_FRAME.gpu.group_by("g").agg(r=make(cb)).compute(), want)


def test_an_integer_fill_of_temporal_values_is_their_integer(tier: str) -> None:
    frame = pl.DataFrame(
        {
            "d": [dt.date(2020, 1, 1), None, dt.date(2020, 1, 3)],
            "du": [dt.timedelta(1), None, dt.timedelta(3)],
            "t": pl.Series(
                [dt.datetime(2020, 1, 1), None, dt.datetime(2021, 1, 1)]
            ).dt.cast_time_unit("ms"),
            "tm": [dt.time(1), None, dt.time(2)],
            "g": [1, 1, 2],
        }
    )
    for column, fill, n in (("d", 0, 2), ("du", 0, 1), ("t", 5, 1), ("tm", 7, -1), ("d", -3, 1)):
        for over in (False, True):

            def make(m: Any, column: str = column, fill: int = fill, n: int = n,
                     over: bool = over) -> Any:  # fmt: skip
                shifted = m.col(column).shift(n, fill_value=fill)
                return shifted.over("g") if over else shifted

            assert_frame_equal(frame.gpu.select(r=make(cb)).compute(), frame.select(r=make(pl)))


def test_fills_of_another_kind_are_refused_by_name() -> None:
    # (a string column takes a number's text, as polars: `test_ordered_params`)
    frame = pl.DataFrame({"i": [1, None], "c": pl.Series(["a", None], dtype=pl.Categorical),
                          "d": [dt.date(2020, 1, 1), None]})  # fmt: skip
    for expr, what in (
        (cb.col("i").shift(1, fill_value="x"), r'`col\("i"\).shift\(1, fill_value=...\)`: the'),
        (cb.col("d").shift(1, fill_value="x"), r"the column is date and the fill string"),
        (cb.col("c").shift(1, fill_value=0), r"`shift` is not supported for categorical with the"),
        (cb.col("d").shift(1, fill_value=1.5), r"date with the fill value 1.5"),
    ):
        with pytest.raises(ColbridgeError, match=what):
            frame.gpu.select(r=expr).compute()
