"""``cb.date_diff(start, end, unit)`` against polars' ``pl.date_diff``.

The unit boundaries crossed between two dates, datetimes or times, for every unit:
calendar units on the local dates (Monday weeks), clock units on the local wall clock
of a zoned value with a daylight saving change counted as polars counts it (the hour
a clock skips or repeats once), a unit finer than the values' their difference
scaled. Generated pairs straddle the zones' offset changes from 1996 (where the zone
files and polars' zone data agree) in zones with whole-hour, half-hour and midnight
changes, every time unit and mixes of them, Dates beside Datetimes, nulls and chunked
columns; refusals and the overflow error as polars'; literals, the string language,
``group_by``, and every kernel tier (the CUDA code path on the host).
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

import colbridge as cb
from colbridge.errors import ColbridgeError
from colbridge.expr.api import DATE_DIFF_UNITS
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from colbridge.types.timezones import offset_parts

#: whole-hour changes both hemispheres, Lord Howe's half hour, St John's changes at
#: 00:01 (a boundary skipped inside the gap), Santiago's at midnight (a day whose
#: midnight does not exist), Kathmandu's 45-minute offset, and UTC
ZONES = ("America/New_York", "Australia/Lord_Howe", "America/St_Johns", "America/Santiago",
         "Europe/London", "Asia/Kathmandu", "UTC")  # fmt: skip
CLOCK_UNITS = DATE_DIFF_UNITS[5:]
_SECOND = {"ns": 10**9, "us": 10**6, "ms": 10**3}
#: 1996-01-01 to 2120-01-01 in seconds (past 2099 a zone keeps its last offset)
_SPAN = (820_454_400, 4_733_510_400)


def _pairs(n: int, seed: int, zone: str) -> tuple[np.ndarray, np.ndarray]:
    """Start and end instants in seconds: around the zone's changes, random ones, far ones."""
    rng = np.random.default_rng(seed)
    changes = [w for w in offset_parts(zone)[0][1:] if _SPAN[0] <= w < _SPAN[1]]
    start = rng.integers(*_SPAN, n)
    near = rng.random(n) < 0.7
    if changes:
        start[near] = rng.choice(changes, int(near.sum())) + rng.integers(-4 * 3600, 4 * 3600,
                                                                          int(near.sum()))
    # mostly hours apart (across one change), sometimes months or years
    gap = rng.integers(-6 * 3600, 6 * 3600, n)
    far = rng.random(n) < 0.25
    gap[far] = rng.integers(-3 * 10**8, 3 * 10**8, int(far.sum()))
    return start, start + gap


def _ticks(seconds: np.ndarray, unit: str, rng: np.random.Generator) -> np.ndarray:
    return seconds * _SECOND[unit] + rng.integers(0, _SECOND[unit], len(seconds))


def _chunked(values: pa.Array) -> pa.ChunkedArray:
    cut = len(values) // 3
    return pa.chunked_array([values[:cut], values[cut:]], values.type)


def _table(n: int, seed: int, zone: str, unit: str, other_unit: str) -> pa.Table:
    rng = np.random.default_rng(seed + 1)
    start, end = _pairs(n, seed, zone)

    def col(seconds: np.ndarray, u: str, tz: str | None) -> pa.ChunkedArray:
        mask = rng.random(n) < 0.1
        return _chunked(pa.array(_ticks(seconds, u, rng), pa.timestamp(u, tz), mask=mask))

    def days(seconds: np.ndarray) -> pa.Array:
        return pa.array(seconds // 86_400, pa.int32()).cast(pa.date32())

    nanos = rng.integers(0, 86_400 * 10**9, (2, n))
    return pa.table({
        "s": col(start, unit, zone), "e": col(end, unit, zone),
        "e2": col(end, other_unit, zone),  # another unit of the same zone
        "naive_s": col(start, unit, None), "naive_e": col(end, other_unit, None),
        "ds": _chunked(days(start)), "de": _chunked(days(end)),
        "ts": pa.array(nanos[0], pa.time64("ns")),
        "te": pa.array(nanos[1], pa.time64("ns"), mask=rng.random(n) < 0.1),
    })  # fmt: skip


def _diffs(m: Any, unit: str) -> list[Any]:
    """Every pairing of the table's columns that polars counts in ``unit``."""
    pairs = {"zoned": ("s", "e"), "zoned_units": ("e2", "s"), "naive": ("naive_s", "naive_e"),
             "dates": ("ds", "de"), "date_zoned": ("ds", "e"), "naive_date": ("naive_e", "ds")}
    if unit in CLOCK_UNITS:
        pairs["times"] = ("ts", "te")
    return [m.date_diff(*pair, unit).alias(f"{name}_{unit}") for name, pair in pairs.items()]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 7, 200]),
    seed=st.integers(0, 2**31 - 1),
    zone=st.sampled_from(ZONES),
    units=st.tuples(st.sampled_from(["ns", "us", "ms"]), st.sampled_from(["ns", "us", "ms"])),
    counted=st.lists(st.sampled_from(DATE_DIFF_UNITS), min_size=3, max_size=3, unique=True),
)
def test_date_diff_as_polars(n: int, seed: int, zone: str, units: tuple[str, str],
                             counted: list[str]) -> None:  # fmt: skip
    table = _table(n, seed, zone, *units)

    def steps(m: Any, q: Any) -> Any:
        return q.select(*(d for unit in counted for d in _diffs(m, unit)))

    # the NumPy tier: the same statements as the compiled kernels
    # (`test_every_kernel_tier`), with no compile per example
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLBRIDGE_CPU_TIER", "numpy")
        assert_same_as_polars(table, steps, kinds=("polars",))


@pytest.mark.parametrize("zone", ZONES)
def test_every_unit_at_every_change_of_a_zone(zone: str) -> None:
    """Each side of each change from 1996 to 2040, to an hour and a day either way."""
    changes = np.array([w for w in offset_parts(zone)[0][1:] if _SPAN[0] <= w < 2_208_988_800]
                       or [_SPAN[0]])  # fmt: skip
    starts = np.concatenate([changes + d for d in (-5400, -1, 0, 1, 1800)])
    ends = np.concatenate([starts + d for d in (-86_400, -3600, 3599, 3600, 7200, 90_000)])
    starts = np.tile(starts, 6)
    table = pa.table({"s": pa.array(starts * 10**6, pa.timestamp("us", zone)),
                      "e": pa.array(ends * 10**6, pa.timestamp("us", zone))})  # fmt: skip
    assert_same_as_polars(
        table, lambda m, q: q.select(**{u: m.date_diff("s", "e", u) for u in DATE_DIFF_UNITS}),
        kinds=("pyarrow",))  # fmt: skip


def test_documented_examples_and_literals() -> None:
    df = pl.DataFrame({
        "start": [dt.date(2024, 1, 31), dt.date(2024, 12, 31), dt.date(2024, 3, 10), None],
        "end": [dt.date(2024, 2, 1), dt.date(2025, 1, 1), dt.date(2024, 3, 4), dt.date(2024, 1, 1)],
        "t": [dt.datetime(2024, 1, 1, 10, 59), dt.datetime(2024, 1, 1, 10, 0), None,
              dt.datetime(1969, 12, 31, 23, 59, 59, 999_999)],
    })  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        return q.select(
            days=m.date_diff("start", "end", "day"), months=m.date_diff("start", "end", "month"),
            years=m.date_diff("start", "end", "year"),
            hours=m.date_diff("t", dt.datetime(2024, 1, 1, 11, 1), "hour"),
            since=m.date_diff(dt.date(2020, 2, 29), "end", "week"),
            to_epoch=m.date_diff("t", dt.datetime(1970, 1, 1), "millisecond"),
            none=m.date_diff("start", None, "day"),
            both=m.date_diff(dt.date(2020, 1, 1), dt.date(2025, 1, 1), "quarter"),
        )  # fmt: skip

    assert_same_as_polars(pa.table(df.to_arrow()), steps)
    got = df.gpu.select(cb.date_diff("start", "end", "day")).compute()
    assert got.columns == ["start"]
    assert got.schema["start"] == pl.Int64
    lit = df.gpu.select(cb.date_diff(dt.date(2020, 1, 1), "end", "day")).compute()
    assert lit.columns == ["literal"]


def test_the_string_language_and_groups() -> None:
    df = pl.DataFrame({"g": [1, 1, 2, 2, 2],
                       "d": [dt.date(2020, 1, 1), dt.date(2021, 5, 1), None, dt.date(1999, 12, 31),
                             dt.date(2000, 1, 1)]})  # fmt: skip
    got = cb.lazy(df).eval('m = date_diff(d, date(2024, 1, 1), "month")').compute()
    assert got.select("m").equals(df.select(m=pl.date_diff("d", dt.date(2024, 1, 1), "month")))
    grouped = df.gpu.group_by("g").agg(
        span=cb.date_diff(cb.col("d").min(), cb.col("d").max(), "day")).compute()  # fmt: skip
    want = df.group_by("g").agg(span=pl.date_diff(pl.col("d").min(), pl.col("d").max(), "day"))
    assert grouped.sort("g").equals(want.sort("g"))
    over = df.gpu.select(cb.date_diff(cb.col("d").first(), "d", "year").over("g")).compute()
    assert over.equals(df.select(pl.date_diff(pl.col("d").first(), "d", "year").over("g")))


@pytest.mark.parametrize(
    ("columns", "unit"),
    [
        (("t", "d"), "day"),  # a Time beside a Date
        (("t", "t"), "day"),  # a calendar unit of Times
        (("z", "w"), "hour"),  # two zones
        (("z", "n"), "hour"),  # zoned beside naive
        (("i", "d"), "day"),  # a number
        (("s", "d"), "day"),  # a string column
        (("n", "far"), "nanosecond"),  # the count overflows int64
        (("dfar", "nns"), "day"),  # a Date past Datetime('ns')'s range
    ],
)
def test_refusals_as_polars(columns: tuple[str, str], unit: str) -> None:
    table = pa.table({
        "t": pa.array([3_600 * 10**9], pa.time64("ns")),
        "d": pa.array([dt.date(2024, 1, 1)]),
        "z": pa.array([0], pa.timestamp("us", "America/New_York")),
        "w": pa.array([0], pa.timestamp("us", "Europe/Paris")),
        "n": pa.array([dt.datetime(1000, 1, 1)], pa.timestamp("us")),
        "far": pa.array([dt.datetime(3000, 1, 1)], pa.timestamp("us")),
        "dfar": pa.array([dt.date(2400, 1, 1)]),
        "nns": pa.array([0], pa.timestamp("ns")),
        "i": pa.array([1]), "s": pa.array(["2024-01-01"]),
    })  # fmt: skip
    with pytest.raises(Exception):  # noqa: B017, PT011 - polars' own error, any class
        pl.from_arrow(table).select(pl.date_diff(*columns, unit))
    with pytest.raises(ColbridgeError):
        pl.from_arrow(table).gpu.select(cb.date_diff(*columns, unit)).compute()


def test_an_unknown_unit_is_named() -> None:
    with pytest.raises(ColbridgeError, match=r"'days'.*'year', 'quarter'"):
        cb.date_diff("a", "b", "days")


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    table = _table(60, 7, "America/New_York", "us", "ms")
    pairs = [d for unit in DATE_DIFF_UNITS for d in _diffs(cb, unit)[:2]]
    got = compute_on_tier(cb.lazy(table).select(pairs), tier)
    want = pl.from_arrow(table).select(d for unit in DATE_DIFF_UNITS for d in _diffs(pl, unit)[:2])
    assert pl.from_arrow(got).equals(want)
