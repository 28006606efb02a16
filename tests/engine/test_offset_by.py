"""``dt.offset_by`` against polars: calendar months, weeks, days and fixed lengths.

Generated dates and datetimes (ms, us, ns; naive and UTC) around month ends, leap
days, the epoch and far from it, with nulls; generated duration strings of every
unit, signed, several units together. Polars' rules: months first (the day clamped
to the month's length), then weeks and days, then the fixed part truncated toward
zero to the column's unit (a Date moves by whole days, floored).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import UnsupportedOperationError
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


def test_zoned_calendar_offsets_are_refused_and_fixed_lengths_kept() -> None:
    import polars as pl

    df = pl.DataFrame({"t": [dt.datetime(2024, 3, 30, 1, 30)]}).with_columns(
        pl.col("t").dt.replace_time_zone("Europe/London"))  # fmt: skip
    with pytest.raises(UnsupportedOperationError, match=r"time zone Europe/London.*'24h'"):
        df.gpu.select(cb.col("t").dt.offset_by("1d")).compute()
    got = df.gpu.select(cb.col("t").dt.offset_by("25h")).compute()
    assert got.equals(df.select(pl.col("t").dt.offset_by("25h")))


@pytest.mark.parametrize("by", ["1x", "1d-1h", "d", "1D", "1i"])
def test_bad_durations_are_refused_by_name(by: str) -> None:
    import polars as pl

    df = pl.DataFrame({"t": [dt.datetime(2024, 1, 1)]})
    with pytest.raises(cb.ColbridgeError, match="offset_by"):
        df.gpu.select(cb.col("t").dt.offset_by(by)).compute()
