"""``dt.round`` against polars: `truncate` of the value plus half the interval.

polars counts a month as 28 days there (``'1mo'`` adds 14 days before truncating,
``'1y'`` 168) and rounds ties up. Generated dates and datetimes (ms, us, ns; naive,
UTC, a fixed-offset zone and one with daylight saving) with nulls, and intervals of
each kind: fixed lengths, days, weeks, months, quarters, years.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import assert_same_as_polars

#: intervals of one kind each (colbridge's truncate refuses mixing kinds)
FIXED = ("15m", "1h", "90m", "7s", "10ms", "3h")
CALENDAR = ("1d", "3d", "1w", "2w", "1mo", "2mo", "1q", "1y")

_WHEN = st.datetimes(min_value=dt.datetime(1800, 1, 1), max_value=dt.datetime(2200, 1, 1))


def _table(times: list[dt.datetime | None]) -> pa.Table:
    us = pa.array(times, pa.timestamp("us"))
    return pa.table({
        "t": us,
        "ms": us.cast(pa.timestamp("ms"), safe=False),
        "ns": pa.array(times, pa.timestamp("ns")),
        "u": us.cast(pa.timestamp("us", "UTC")),
        "k": us.cast(pa.timestamp("us", "Asia/Kolkata")),
        "d": pa.array([None if t is None else t.date() for t in times], pa.date32()),
    })  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(times=st.lists(st.one_of(_WHEN, st.none()), max_size=10),
       every=st.sampled_from(FIXED + CALENDAR))  # fmt: skip
def test_round_as_polars(times: list[dt.datetime | None], every: str) -> None:
    table = _table(times)
    # a Date rounds to calendar intervals only (as colbridge's truncate)
    columns = ["t", "ms", "ns", "u", "k"] + (["d"] if every in CALENDAR else [])

    def steps(m: Any, q: Any) -> Any:
        return q.select(*(m.col(c).dt.round(every) for c in columns))

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_round_near_daylight_saving_changes_as_polars() -> None:
    # London's clocks: forward on 2024-03-31 at 01:00, back on 2024-10-27 at 02:00 (local)
    times = [dt.datetime(2024, 3, 31, 0, 20) + dt.timedelta(minutes=17 * k) for k in range(12)]
    times += [dt.datetime(2024, 10, 26, 23, 50) + dt.timedelta(minutes=13 * k) for k in range(16)]
    table = pa.table({"l": pa.array(times, pa.timestamp("us", "UTC")).cast(
        pa.timestamp("us", "Europe/London"))})  # fmt: skip
    for every in ("1h", "30m", "1d", "1mo"):
        assert_same_as_polars(table, lambda m, q, e=every: q.select(m.col("l").dt.round(e)))


@pytest.mark.parametrize("every", ["-1h", "1x", "1i"])
def test_bad_intervals_are_refused_by_name(every: str) -> None:
    import polars as pl

    df = pl.DataFrame({"t": [dt.datetime(2024, 1, 1, 10)]})
    with pytest.raises(cb.ColbridgeError, match="round"):
        df.gpu.select(cb.col("t").dt.round(every)).compute()


@pytest.mark.parametrize("every", ["1mo", "2mo", "1q", "1y", "1w"])
def test_every_day_of_a_leap_year_as_polars(every: str) -> None:
    # polars' month is 28 days long here: the day a date rounds up is fixed by it
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=k) for k in range(366)]
    times = [dt.datetime.combine(d, dt.time(12)) for d in days]
    table = pa.table({"d": pa.array(days, pa.date32()), "t": pa.array(times, pa.timestamp("us"))})
    assert_same_as_polars(table, lambda m, q: q.select(m.col("d").dt.round(every),
                                                       m.col("t").dt.round(every)))


def test_on_the_cuda_path_through_the_host_shim() -> None:
    import polars as pl

    from colbridge.testing.cuda_host import compute_on_host

    times = [dt.datetime(2024, 1, 17, 11, 59), None, dt.datetime(1969, 12, 31, 23, 30),
             dt.datetime(2024, 2, 15, 12)]  # fmt: skip
    df = pl.from_arrow(_table(times))
    assert isinstance(df, pl.DataFrame)
    exprs = {"a": ("t", "1mo"), "b": ("ns", "15m"), "c": ("k", "1d"), "d": ("d", "1w")}
    handle = df.gpu.select(**{n: cb.col(c).dt.round(e) for n, (c, e) in exprs.items()})
    want = df.select(**{n: pl.col(c).dt.round(e) for n, (c, e) in exprs.items()})
    assert compute_on_host(handle).equals(want)
