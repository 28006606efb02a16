"""Edges where colbridge once parted from polars, each against polars on both CPU tiers.

``clip`` with its bounds the wrong way round, ``min/max/sum_horizontal`` of dates,
datetimes, durations, times, strings, categoricals and enums, ``dt.total_*(fractional=True)`` to the
last bit, and ``dt.truncate`` by an interval finer than the column's unit.
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


def _same(df: pl.DataFrame, make: Callable[[Any], Any], *, exact: bool = True) -> None:
    want = df.select(r=make(pl))
    got = df.gpu.select(r=make(cb)).compute()
    assert_frame_equal(got, want, check_exact=exact)


# -- clip ------------------------------------------------------------------------------------
CLIP_FRAME = pl.DataFrame(
    {"x": [1.0, 2.0, 3.0, None, float("nan"), 7.0, -1.0, -0.0], "i": [1, 2, 3, None, 7, 0, -4, 5]}
)


@pytest.mark.parametrize("bounds", [(5, 1), (1, 5), (2, 2), (None, 1), (5, None), (3, -3)])
@pytest.mark.parametrize("column", ["x", "i"])
def test_clip_takes_the_lower_bound_first(tier: str, column: str, bounds: tuple[Any, Any]) -> None:
    # polars: below the lower bound the lower bound, else above the upper one the upper
    lo, hi = bounds
    _same(CLIP_FRAME, lambda m: m.col(column).clip(lo, hi))
    _same(CLIP_FRAME, lambda m: m.lit(3).clip(lo, hi) + m.col(column) * 0)


# -- horizontal min / max / sum --------------------------------------------------------------
def _temporal_frame() -> pl.DataFrame:
    rng = np.random.default_rng(7)
    n = 40

    def some(values: Any) -> pl.Series:
        s = pl.Series(values)
        return s.scatter(np.flatnonzero(rng.random(n) < 0.25).tolist(), None)

    days = rng.integers(-20_000, 20_000, n)
    micros = rng.integers(-(10**15), 10**15, n)
    return pl.DataFrame(
        {
            "d1": some(days).cast(pl.Date),
            "d2": some(rng.integers(-20_000, 20_000, n)).cast(pl.Date),
            "us": some(micros).cast(pl.Datetime("us")),
            "ms": some(micros // 997).cast(pl.Datetime("ms")),
            "z1": some(micros).cast(pl.Datetime("us")).dt.replace_time_zone("Asia/Kolkata"),
            "z2": some(micros // 3).cast(pl.Datetime("us")).dt.replace_time_zone("Asia/Kolkata"),
            "du": some(micros).cast(pl.Duration("us")),
            "dm": some(micros // 1000).cast(pl.Duration("ms")),
            "t1": some(rng.integers(0, 86_400 * 10**9, n)).cast(pl.Time),
            "t2": some(rng.integers(0, 86_400 * 10**9, n)).cast(pl.Time),
            "s1": some(rng.choice(["b", "a", "ab", "", "é", "Z"], n)),
            "s2": some(rng.choice(["b", "a", "ab", "", "é", "Z"], n)),
        }
    ).with_columns(c=pl.col("s2").cast(pl.Categorical))


TEMPORAL = _temporal_frame()


@pytest.mark.parametrize(
    "names",
    [
        ["d1", "d2"], ["d1", "us"], ["ms", "us"], ["z1", "z2"], ["du", "dm"], ["t1", "t2"],
        ["d1", "d2", "us"], ["s1", "s2"], ["s1", "s2", "s1"], ["c", "c"], ["s1"],
    ],
)  # fmt: skip
@pytest.mark.parametrize("func", ["max_horizontal", "min_horizontal"])
def test_min_max_horizontal_keep_temporal_and_string_types(
    tier: str, func: str, names: list[str]
) -> None:
    _same(TEMPORAL, lambda m: getattr(m, func)(*[m.col(n) for n in names]))


def test_sum_horizontal_of_durations_is_a_duration(tier: str) -> None:
    _same(TEMPORAL, lambda m: m.sum_horizontal(m.col("du"), m.col("dm")))
    _same(TEMPORAL, lambda m: m.sum_horizontal(m.col("du"), m.col("du"), ignore_nulls=False))


@pytest.mark.parametrize("names", [["d1", "d2"], ["us", "ms"], ["t1", "t2"]])
def test_sum_horizontal_of_instants_is_refused_as_polars_refuses(names: list[str]) -> None:
    with pytest.raises(pl.exceptions.InvalidOperationError):
        TEMPORAL.select(pl.sum_horizontal(*names))
    with pytest.raises(ColbridgeError, match="only durations sum"):
        TEMPORAL.gpu.select(r=cb.sum_horizontal(*[cb.col(n) for n in names])).compute()


def test_strings_in_horizontal_functions_are_refused_where_polars_differs() -> None:
    # polars' sum of strings joins them, as `concat_str` (nulls left out, or not)
    for ignore_nulls in (True, False):
        want = TEMPORAL.select(r=pl.sum_horizontal("s1", "s2", ignore_nulls=ignore_nulls))
        got = TEMPORAL.gpu.select(r=cb.sum_horizontal(cb.col("s1"), cb.col("s2"),
                                                      ignore_nulls=ignore_nulls)).compute()
        assert_frame_equal(got, want)
    with pytest.raises(ColbridgeError, match="mixes strings with"):
        TEMPORAL.gpu.select(r=cb.max_horizontal(cb.col("s1"), cb.lit(1))).compute()


def _coded_frame(n: int, seed: int) -> pl.DataFrame:
    """Strings, Categoricals and Enums drawn from few words (ties), a fifth null."""
    rng = np.random.default_rng(seed)
    words = ["b", "a", "ab", "", "é", "Z"]
    enum = pl.Enum(["é", "b", "Z", "", "ab", "a"])  # not in text order

    def some() -> pl.Series:
        return pl.Series([None if rng.random() < 0.2 else str(rng.choice(words))
                          for _ in range(n)], dtype=pl.String)  # fmt: skip

    s1, s2, s3 = some(), some(), some()
    return pl.DataFrame({
        "s1": s1, "s2": s2, "c1": s2.cast(pl.Categorical), "c2": s3.cast(pl.Categorical),
        "e1": s1.cast(enum), "e2": s3.cast(enum),
    })  # fmt: skip


@pytest.mark.parametrize("n", [0, 1, 6, 40])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("func", ["max_horizontal", "min_horizontal"])
def test_min_max_horizontal_of_categoricals_and_enums_as_polars(n: int, seed: int,
                                                                func: str) -> None:  # fmt: skip
    df = _coded_frame(n, seed)
    f = lambda m, *args: getattr(m, func)(*args)  # noqa: E731
    # what polars answers colbridge answers alike: strings by their text, an Enum by its
    # categories' order, one Categorical (beside nulls, or twice) as it is
    for names in (["s1", "s2"], ["e1", "e2"], ["e1", "e2", "e1"], ["c1"], ["c1", "c1"]):
        _same(df, lambda m, names=names: f(m, *[m.col(c) for c in names]))
    _same(df, lambda m: f(m, m.col("c1"), m.lit(None)))
    # what polars refuses colbridge refuses: a Categorical or an Enum beside plain strings,
    # a Categorical beside an Enum
    for make in (lambda m: f(m, m.col("c1"), m.col("s1")), lambda m: f(m, m.col("e1"), m.col("s2")),
                 lambda m: f(m, m.col("c1"), m.lit("b")), lambda m: f(m, m.col("e1"), m.lit("b")),
                 lambda m: f(m, m.col("c1"), m.col("e1"))):  # fmt: skip
        with pytest.raises(pl.exceptions.PolarsError):
            df.select(r=make(pl))
        with pytest.raises(ColbridgeError):
            df.gpu.select(r=make(cb)).compute()
    # two Categoricals: polars compares their physical codes (the order in which the process
    # met each category), not their text; colbridge cannot know that order and refuses
    want = df.select(r=f(pl, pl.col("c1"), pl.col("c2")))["r"]
    c1, c2 = df["c1"], df["c2"]
    pick_c2 = (c1.is_null() | ((c2.to_physical() > c1.to_physical()) if func == "max_horizontal"
                               else (c2.to_physical() < c1.to_physical()))).fill_null(False)
    by_codes = pl.select(r=pl.when(pick_c2 & c2.is_not_null()).then(c2).otherwise(c1))["r"]
    assert want.cast(pl.String).to_list() == by_codes.cast(pl.String).to_list()
    with pytest.raises(ColbridgeError, match=r"physical codes.*cast them to strings"):
        df.gpu.select(r=f(cb, cb.col("c1"), cb.col("c2"))).compute()
    with pytest.raises(ColbridgeError, match="physical codes"):
        df.gpu.select(r=f(cb, cb.col("c1"), cb.col("c2"), cb.col("c1"))).compute()
    # cast to strings, they compare by text as polars compares strings
    _same(df, lambda m: f(m, m.col("c1").cast(m.String if m is pl else "string"),
                          m.col("c2").cast(m.String if m is pl else "string")))  # fmt: skip


# -- durations as fractional totals --------------------------------------------------------------
TOTALS = [
    "total_days", "total_hours", "total_minutes", "total_seconds", "total_milliseconds",
    "total_microseconds", "total_nanoseconds",
]  # fmt: skip


@pytest.mark.parametrize("unit", ["ns", "us", "ms"])
def test_fractional_totals_have_polars_bits(tier: str, unit: str) -> None:
    rng = np.random.default_rng(3)
    frame = pl.DataFrame({"d": pl.Series(rng.integers(-(2**62), 2**62, 2_000)).cast(
        pl.Duration(unit))})  # fmt: skip
    for op in TOTALS:
        _same(frame, lambda m, op=op: getattr(m.col("d").dt, op)(fractional=True))


# -- truncate finer than the unit --------------------------------------------------------------
@pytest.mark.parametrize("unit", ["ms", "us", "ns"])
@pytest.mark.parametrize(
    "every", ["1us", "1500us", "2500us", "1ns", "999us", "1001us", "7ns", "1h30m", "0ms"]
)
def test_truncate_by_an_interval_in_the_columns_unit(tier: str, unit: str, every: str) -> None:
    # polars converts the interval to the column's unit, toward zero; below one unit
    # the values stay as they are
    rng = np.random.default_rng(5)
    t = pl.Series(rng.integers(-(10**15), 10**15, 200)).cast(pl.Datetime(unit))
    frame = pl.DataFrame({"t": t, "u": t.dt.replace_time_zone("UTC"),
                          "z": t.dt.replace_time_zone("Asia/Kolkata")})  # fmt: skip
    for column in ("t", "u", "z"):
        if every == "0ms" and column == "z":
            with pytest.raises(pl.exceptions.ComputeError):
                frame.select(pl.col("z").dt.truncate(every))
            with pytest.raises(ColbridgeError, match="must be positive"):
                frame.gpu.select(r=cb.col("z").dt.truncate(every)).compute()
            continue
        _same(frame, lambda m, c=column: m.col(c).dt.truncate(every))


def test_a_date_by_an_interval_a_day_divides_into_is_itself() -> None:
    # midnight is a multiple of any interval a day divides into (polars: the same date);
    # other sub-daily intervals (25h, 7h) give polars' own arithmetic, refused by name
    frame = pl.DataFrame({"d": [dt.date(2020, 1, 1), dt.date(1969, 12, 31), None]})
    for every in ("3h", "90m", "1h30m", "12h", "24h", "2500us"):
        _same(frame, lambda m, e=every: m.col("d").dt.truncate(e))
        _same(frame, lambda m, e=every: m.col("d").dt.round(e))
    for every in ("25h", "7h"):
        with pytest.raises(ColbridgeError, match="a Date truncates to days"):
            frame.gpu.select(r=cb.col("d").dt.truncate(every)).compute()


# -- the mean of times -------------------------------------------------------------------------
def test_the_mean_of_times_is_a_time(tier: str) -> None:
    rng = np.random.default_rng(9)
    times = pl.Series(rng.integers(0, 86_400 * 10**9, 50)).cast(pl.Time).scatter([1, 5, 7], None)
    frame = pl.DataFrame({"t": times, "g": rng.integers(0, 3, 50)})
    for make in (
        lambda m: m.col("t").mean(),
        lambda m: m.col("t").fill_null(strategy="mean"),
        lambda m: m.col("t").mean().over("g"),
        lambda m: m.col("t").fill_null(strategy="mean").over("g"),
    ):
        _same(frame, make)
    want = frame.group_by("g", maintain_order=True).agg(r=pl.col("t").mean())
    assert_frame_equal(frame.gpu.group_by("g").agg(r=cb.col("t").mean()).compute(), want)


# -- a `when` whose condition is literals only ---------------------------------------------------
@pytest.mark.parametrize("condition", [
    lambda m: m.lit(-4).is_nan(), lambda m: m.lit(-1.25).is_finite(),
    lambda m: ~m.lit(float("nan")).is_nan(), lambda m: m.lit(None).is_null(),
    lambda m: m.lit(True) & m.lit(None, dtype=pl.Boolean if m is pl else "bool"),
    lambda m: m.lit(False) | m.lit(None, dtype=pl.Boolean if m is pl else "bool"),
    lambda m: m.lit(float("inf")).is_infinite() & m.lit(2.0).is_not_nan(),
])  # fmt: skip
def test_a_condition_of_literals_computes_only_its_branch(condition: Callable[[Any], Any]) -> None:
    # polars folds the condition and drops the branch it does not pick: an integer raised
    # to a negative power there is no error (where the branch is picked, both raise)
    frame = pl.DataFrame({"b": pl.Series([-7, 3], dtype=pl.Int32), "d": [-1, 1]})

    def build(m: Any) -> Any:
        return m.when(condition(m)).then(m.col("b") ** m.col("b")).otherwise(m.col("d"))

    try:
        want = frame.with_columns(z=build(pl))
    except pl.exceptions.PolarsError:
        with pytest.raises(ColbridgeError, match=r"negative integer power"):
            frame.gpu.with_columns(z=build(cb)).compute()
        return
    assert_frame_equal(frame.gpu.with_columns(z=build(cb)).compute(), want, check_exact=True)


def test_converting_a_datetime_without_a_zone_reads_it_as_utc() -> None:
    # polars reads the stored instant as UTC (it refused this once; colbridge did still)
    t = pl.Series("t", [dt.datetime(2020, 3, 1, 12, 30), None, dt.datetime(1969, 12, 31, 23, 59)],
                  dtype=pl.Datetime("ns"))  # fmt: skip
    frame = pl.DataFrame({"t": t})
    for zone in ("Asia/Tokyo", "UTC", "America/New_York"):
        _same(frame, lambda m, z=zone: m.col("t").dt.convert_time_zone(z))
        _same(frame, lambda m, z=zone: m.col("t").dt.convert_time_zone(z).dt.hour())
