"""``dt.offset_by`` against polars: calendar months, weeks, days and fixed lengths.

Generated dates and datetimes (ms, us, ns; naive and UTC) around month ends, leap
days, the epoch and far from it, with nulls; generated duration strings of every
unit, signed, several units together. Polars' rules: months first (the day clamped
to the month's length), then weeks and days, then the fixed part truncated toward
zero to the column's unit (a Date moves by whole days, floored). In a time zone the
calendar parts move the local time around daylight saving changes, as RFC 5545 says.
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

_UNITS = ("y", "q", "mo", "w", "d", "h", "m", "s", "ms", "us", "ns")

_DURATION = st.builds(
    lambda sign, parts: sign + "".join(f"{n}{u}" for n, u in parts),
    st.sampled_from(["", "-", "+"]),
    st.lists(st.tuples(st.integers(0, 40), st.sampled_from(_UNITS)), min_size=1, max_size=4),
)

_DAY = st.dates(min_value=dt.date(1700, 1, 1), max_value=dt.date(2250, 12, 31)) | st.sampled_from(
    [dt.date(2024, 1, 31), dt.date(2024, 2, 29), dt.date(2023, 3, 31), dt.date(1969, 12, 31),
     dt.date(1970, 1, 1), dt.date(2000, 12, 31)])  # fmt: skip


def _table(days: list[dt.date | None], micros: list[int]) -> pa.Table:
    times = [None if d is None else dt.datetime.combine(d, dt.time()) + dt.timedelta(
        microseconds=us) for d, us in zip(days, micros, strict=True)]  # fmt: skip
    return pa.table({
        "d": pa.array(days, pa.date32()),
        "t": pa.array(times, pa.timestamp("us")),
        "ms": pa.array(times, pa.timestamp("us")).cast(pa.timestamp("ms"), safe=False),
        "ns": pa.array(times, pa.timestamp("ns")),
        "u": pa.array(times, pa.timestamp("us", "UTC")),
    })  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(
    days=st.lists(st.one_of(_DAY, st.none()), max_size=8),
    data=st.data(),
    by=_DURATION,
)
def test_offset_by_as_polars(days: list[dt.date | None], data: st.DataObject, by: str) -> None:
    micros = data.draw(st.lists(st.integers(0, 86_400 * 10**6 - 1), min_size=len(days),
                                max_size=len(days)))  # fmt: skip
    table = _table(days, micros)

    def steps(m: Any, q: Any) -> Any:
        return q.select(*(m.col(c).dt.offset_by(by) for c in ("d", "t", "ms", "ns", "u")))

    assert_same_as_polars(table, steps)


def test_offsets_in_expressions_and_the_string_language() -> None:
    import polars as pl

    df = pl.DataFrame({"t": [dt.datetime(2024, 1, 31, 12), None, dt.datetime(2023, 12, 31)],
                       "d": [dt.date(2024, 2, 29), dt.date(2024, 3, 31), None]})  # fmt: skip
    got = df.gpu.select(
        gap=cb.col("t").dt.offset_by("1mo") - cb.col("t"),
        later=cb.col("d").dt.offset_by("-1y").dt.month(),
        same=cb.col("t").dt.offset_by("1mo").dt.offset_by("-1mo") == cb.col("t"),
    ).compute()  # fmt: skip
    want = df.select(
        gap=pl.col("t").dt.offset_by("1mo") - pl.col("t"),
        later=pl.col("d").dt.offset_by("-1y").dt.month(),
        same=pl.col("t").dt.offset_by("1mo").dt.offset_by("-1mo") == pl.col("t"),
    )  # fmt: skip
    assert got.equals(want)
    parsed = cb.lazy(df).eval("n = t.dt.offset_by('2w3d')").compute()
    assert parsed.equals(df.with_columns(n=pl.col("t").dt.offset_by("2w3d")))


def test_on_the_cuda_path_through_the_host_shim() -> None:
    import polars as pl

    from colbridge.testing.cuda_host import compute_on_host

    table = _table([dt.date(2024, 1, 31), None, dt.date(1969, 12, 31), dt.date(2020, 2, 29)],
                   [0, 5, 86_399_999_999, 123])  # fmt: skip
    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    handle = df.gpu.select(cb.col("t").dt.offset_by("-1y1mo1d1h"), cb.col("d").dt.offset_by("13mo"))
    want = df.select(pl.col("t").dt.offset_by("-1y1mo1d1h"), pl.col("d").dt.offset_by("13mo"))
    assert compute_on_host(handle).equals(want)


_ZONES = ("Europe/Amsterdam", "America/New_York", "Australia/Lord_Howe", "America/Sao_Paulo",
          "Asia/Kolkata", "Europe/London", "America/St_Johns")  # fmt: skip
#: local times around the changes of 2018 and 2023 (gaps and repeated hours among them)
_NEAR_CHANGES = st.builds(
    dt.datetime, st.sampled_from([2018, 2023]), st.sampled_from([3, 4, 9, 10, 11]),
    st.integers(1, 30), st.sampled_from([0, 1, 2, 3, 23]), st.sampled_from([0, 15, 30, 45]),
)  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(
    times=st.lists(st.one_of(_NEAR_CHANGES, st.none()), max_size=8),
    zone=st.sampled_from(_ZONES),
    unit=st.sampled_from(["ms", "us", "ns"]),
    by=st.sampled_from(["1d", "-1d", "1w", "-2w", "1mo", "-1mo", "1y", "1d2h", "2w3d",
                        "1mo1d", "-1mo2d", "3d30m", "1q", "25h"]),
)  # fmt: skip
def test_zoned_offsets_move_the_wall_clock_as_polars(
    times: list[dt.datetime | None], zone: str, unit: str, by: str
) -> None:
    """Calendar parts on the local time, placed back as RFC 5545 (polars): a repeated hour
    takes the original's daylight saving, a gap is stepped over; fixed parts on the instant."""
    column = pa.array(times, pa.timestamp(unit, "UTC")).cast(pa.timestamp(unit, zone))
    assert_same_as_polars(pa.table({"t": column}),
                          lambda m, q: q.select(m.col("t").dt.offset_by(by)))  # fmt: skip


def test_zoned_offsets_on_the_edges_of_a_change() -> None:
    import polars as pl

    from colbridge.testing.cuda_host import compute_on_host

    # the day before a gap or a repeated hour, moved onto it; Lord Howe's change is 30 min
    cases = [("Europe/Amsterdam", dt.datetime(2023, 3, 25, 2, 30), "1d"),
             ("America/New_York", dt.datetime(2023, 11, 4, 1, 30), "1d"),
             ("Europe/Amsterdam", dt.datetime(2023, 11, 29, 2, 30), "-1mo"),
             ("Australia/Lord_Howe", dt.datetime(2023, 9, 30, 2, 15), "1d"),
             ("Australia/Lord_Howe", dt.datetime(2023, 4, 1, 1, 45), "1d")]  # fmt: skip
    for zone, local, by in cases:
        df = pl.DataFrame({"t": [local, None]}).with_columns(
            pl.col("t").dt.replace_time_zone(zone))  # fmt: skip
        want = df.select(pl.col("t").dt.offset_by(by))
        assert df.gpu.select(cb.col("t").dt.offset_by(by)).compute().equals(want), (zone, by)
        assert compute_on_host(df.gpu.select(cb.col("t").dt.offset_by(by))).equals(want)
    # Samoa skipped 2011-12-30 whole: no hour of it exists, and polars raises
    apia = pl.DataFrame({"t": [dt.datetime(2011, 12, 29, 12)]}).with_columns(
        pl.col("t").dt.replace_time_zone("Pacific/Apia"))  # fmt: skip
    with pytest.raises(pl.exceptions.ComputeError):
        apia.select(pl.col("t").dt.offset_by("1d"))
    with pytest.raises(cb.ColbridgeError, match=r"offset_by\('1d'\)`: a local time in time "
                                                r"zone 'Pacific/Apia'"):  # fmt: skip
        apia.gpu.select(cb.col("t").dt.offset_by("1d")).compute()


@pytest.mark.parametrize("by", ["1x", "1d-1h", "d", "1D", "1i"])
def test_bad_durations_are_refused_by_name(by: str) -> None:
    import polars as pl

    df = pl.DataFrame({"t": [dt.datetime(2024, 1, 1)]})
    with pytest.raises(cb.ColbridgeError, match="offset_by"):
        df.gpu.select(cb.col("t").dt.offset_by(by)).compute()
