"""``dt.is_business_day`` and ``dt.add_business_days`` against polars.

colbridge computes them in closed form in the kernels (`colbridge.types.business_days`:
a business index per day, found back with two table searches), where polars steps
day by day past weekends and holidays. Generated columns of dates and datetimes (every
unit, time zones with gaps and folds) with nulls, offsets and chunks; random week
masks; random holidays (on weekends, repeated, as datetimes); ``n`` as a column of
each type polars takes and as literals, beyond Int32 too; each ``roll``; every kernel
tier, a stream, Dask, the string language; each refusal polars makes.
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
from colbridge.errors import ColbridgeError
from colbridge.testing.asserts import assert_same_as_polars, assert_stream_and_dask_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from tests.ordered.ordered_data import cut_table

_EPOCH = dt.date(1970, 1, 1)
_PER_DAY = {"ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}
#: the start column's types: (Arrow type, time zone or None)
KINDS = {
    "date": pa.date32(),
    "datetime_ms": pa.timestamp("ms"),
    "datetime_us": pa.timestamp("us"),
    "datetime_ns": pa.timestamp("ns"),
    "zoned_us": pa.timestamp("us", "America/New_York"),
    "zoned_ns": pa.timestamp("ns", "Asia/Kolkata"),
}
N_TYPES = {"int32": pa.int32(), "int64": pa.int64(), "uint32": pa.uint32(),
           "uint64": pa.uint64()}  # fmt: skip


def _starts(kind: str, rng: np.random.Generator, n: int, span: int) -> pa.Array:
    """Days over ``span`` days around 2000 (and, for datetimes, a time of day)."""
    days = rng.integers(10_957 - span, 10_957 + span, n)
    arrow_type = KINDS[kind]
    if kind == "date":
        return pa.array(days.astype(np.int32)).cast(arrow_type)
    per_day = _PER_DAY[arrow_type.unit]
    ticks = days * per_day + rng.integers(0, per_day, n)
    if arrow_type.tz is not None:  # an instant: its local date may be the day before
        return pa.array(ticks).cast(pa.timestamp(arrow_type.unit)).cast(arrow_type)
    return pa.array(ticks).cast(arrow_type)


@st.composite
def _calendars(draw: st.DrawFn) -> tuple[tuple[bool, ...], list[Any]]:
    """A week mask (a day at least) and holidays: some on weekends, some twice, datetimes."""
    mask = tuple(draw(st.lists(st.booleans(), min_size=7, max_size=7)))
    if not any(mask):
        mask = (*mask[:-1], True)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    count = draw(st.sampled_from([0, 3, 60]))
    days = rng.integers(10_957 - 400, 10_957 + 400, count)
    holidays: list[Any] = [_EPOCH + dt.timedelta(days=int(d)) for d in days]
    if count:
        holidays += holidays[:2]  # repeated
        holidays.append(dt.datetime(2000, 1, 3, 15))  # a datetime: its date
    return mask, holidays


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(KINDS)), seed=st.integers(0, 2**32 - 1),
       n=st.integers(0, 40), offset=st.integers(0, 9), chunks=st.integers(1, 3),
       calendar=_calendars(), n_type=st.sampled_from(sorted(N_TYPES)),
       roll=st.sampled_from(["forward", "backward"]))  # fmt: skip
def test_equal_polars(kind: str, seed: int, n: int, offset: int, chunks: int,
                      calendar: tuple[tuple[bool, ...], list[Any]], n_type: str,
                      roll: str) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)
    rows = offset + n
    starts = _starts(kind, rng, rows, 500)
    steps_ = rng.integers(-30, 30, rows)
    if n_type.startswith("uint"):
        steps_ = np.abs(steps_)
    if n_type in ("int64", "uint64") and rows:  # past Int32: null, as polars casts it
        steps_[rng.integers(0, rows)] = 2**31 + 5
    table = pa.table({
        "d": pa.array(starts, mask=rng.random(rows) < 0.2),
        "n": pa.array(steps_, mask=rng.random(rows) < 0.1).cast(N_TYPES[n_type]),
    })  # fmt: skip
    table = cut_table(table, offset, n, chunks)
    mask, holidays = calendar

    def steps(m: Any, f: Any) -> Any:
        d = m.col("d").dt
        calendar = {"week_mask": mask, "holidays": holidays}
        return f.select(
            a=d.add_business_days(m.col("n"), roll=roll, **calendar),
            b=d.add_business_days(-3, roll=roll, **calendar),
            c=d.is_business_day(**calendar),
            k=d.add_business_days(m.col("n"), roll=roll, **calendar).dt.weekday())  # fmt: skip

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(KINDS)), seed=st.integers(0, 2**32 - 1),
       calendar=_calendars(), start_nulls=st.sampled_from([0.0, 0.5, 1.0]),
       n_nulls=st.sampled_from([0.0, 0.5]))  # fmt: skip
def test_roll_raise_fails_as_polars_does(kind: str, seed: int,
                                         calendar: tuple[tuple[bool, ...], list[Any]],
                                         start_nulls: float, n_nulls: float) -> None:  # fmt: skip
    # a start off the business days fails, unless it or its `n` is null; the rest pass
    rng = np.random.default_rng(seed)
    starts = _starts(kind, rng, 12, 20)
    table = pa.table({"d": pa.array(starts, mask=rng.random(12) < start_nulls),
                      "n": pa.array(rng.integers(-5, 5, 12), mask=rng.random(12) < n_nulls)})
    mask, holidays = calendar
    assert_same_as_polars(table, lambda m, f: f.select(m.col("d").dt.add_business_days(
        m.col("n"), week_mask=mask, holidays=holidays)), kinds=("polars",))  # fmt: skip


def test_every_weekday_mask_and_holiday_against_numpy() -> None:
    # NumPy's busday functions are the algorithm polars ported: a second oracle over
    # every one of the 127 week masks, a run of holidays and long steps
    days = np.arange(10_900, 11_100)
    holidays = [_EPOCH + dt.timedelta(days=int(d)) for d in range(10_950, 10_990, 3)]
    frame = pl.DataFrame({"d": pl.Series(days).cast(pl.Date),
                          "n": np.resize(np.array([0, 1, -1, 7, -20, 400]), len(days))})
    for bits in range(1, 128):
        mask = tuple(bool(bits >> k & 1) for k in range(7))
        np_mask = [int(m) for m in mask]
        got = frame.gpu.select(
            a=cb.col("d").dt.add_business_days(cb.col("n"), week_mask=mask,
                                               holidays=holidays, roll="forward"),
            # holidays as a polars Series of dates: its values
            b=cb.col("d").dt.is_business_day(week_mask=mask, holidays=pl.Series(holidays)),
        ).compute()  # fmt: skip
        dates = frame["d"].to_numpy()
        want_a = np.busday_offset(dates, frame["n"].to_numpy(), roll="forward",
                                  weekmask=np_mask, holidays=holidays)  # fmt: skip
        want_b = np.is_busday(dates, weekmask=np_mask, holidays=holidays)
        np.testing.assert_array_equal(got["a"].to_numpy(), want_a, err_msg=str(mask))
        np.testing.assert_array_equal(got["b"].to_numpy(), want_b, err_msg=str(mask))


def test_literals_and_empty_frames() -> None:
    frame = pl.DataFrame({"d": [dt.date(2024, 2, 29), None, dt.date(2024, 3, 2)]})
    for f in (frame, frame.clear()):
        def steps(m: Any, f: Any = f) -> Any:
            return f.select(a=m.col("d").dt.add_business_days(2**31 + 1, roll="forward"),
                            b=m.col("d").dt.add_business_days(m.lit(-1), roll="forward"),
                            c=m.col("d").dt.add_business_days(0, roll="backward"))  # fmt: skip

        assert_frame_equal(steps(cb, f.gpu).compute(), steps(pl, f))


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    frame = pl.DataFrame({"d": pl.date_range(dt.date(2020, 1, 1), dt.date(2024, 12, 31),
                                             eager=True)})  # fmt: skip
    frame = frame.with_columns(n=pl.int_range(pl.len()) % 23 - 11)
    holidays = [dt.date(2021, 12, 24), dt.date(2022, 1, 3), dt.date(2023, 7, 4)]

    def steps(m: Any) -> dict[str, Any]:
        d = m.col("d").dt
        return {"a": d.add_business_days(m.col("n"), holidays=holidays, roll="backward"),
                "b": d.is_business_day(week_mask=[True] * 6 + [False], holidays=holidays)}

    got = compute_on_tier(cb.lazy(frame).select(**steps(cb)), tier)
    assert_frame_equal(got, frame.select(**steps(pl)))


def test_a_stream_dask_and_the_string_language(tmp_path: Any) -> None:
    table = pa.table({"d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=k % 40)
                                     if k % 9 else None for k in range(200)]),
                      "n": pa.array([k % 7 - 3 for k in range(200)])})  # fmt: skip
    assert_stream_and_dask_as_polars(table, lambda m: {
        "a": m.col("d").dt.add_business_days(m.col("n"), roll="forward"),
        "b": m.col("d").dt.is_business_day(holidays=[dt.date(2024, 1, 15)])}, tmp_path)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    got = cb.lazy(frame).eval(
        'a = d.dt.add_business_days(2, roll="forward", holidays=[date("2024-01-15")]); '
        "b = d.dt.is_business_day(week_mask=[True, True, True, True, False, False, True])"
    ).compute()  # fmt: skip
    want = frame.select(
        a=pl.col("d").dt.add_business_days(2, roll="forward", holidays=[dt.date(2024, 1, 15)]),
        b=pl.col("d").dt.is_business_day(week_mask=[True] * 4 + [False] * 2 + [True]))
    assert_frame_equal(got.select("a", "b"), want)
    with pytest.raises(ColbridgeError, match="`is_business_day` arguments must be constants"):
        cb.lazy(frame).eval("b = d.dt.is_business_day(holidays=[d])")


def test_refusals_name_what_to_do() -> None:
    frame = pl.DataFrame({"d": [dt.date(2024, 1, 6)], "n": [1], "f": [1.5],
                          "s": pl.Series([1], dtype=pl.Int16)})  # fmt: skip
    cases = [
        (lambda m: m.col("d").dt.add_business_days(1), "not a business date; use `roll`"),
        (lambda m: m.col("d").dt.is_business_day(week_mask=[False] * 7),
         "at least one business day"),
        (lambda m: m.col("d").dt.is_business_day(holidays=[dt.date(2024, 1, 1), None]),
         "nulls found in holiday list values"),
        (lambda m: m.col("d").dt.add_business_days(m.col("f"), roll="forward"),
         "Int64, Int32, UInt64 or UInt32"),
        (lambda m: m.col("d").dt.add_business_days(m.col("s"), roll="forward"),
         "Int64, Int32, UInt64 or UInt32"),
        (lambda m: m.col("n").dt.is_business_day(), "needs a Date or Datetime"),
    ]
    for make, what in cases:
        with pytest.raises((pl.exceptions.PolarsError, ValueError)):
            frame.select(make(pl))
        with pytest.raises(ColbridgeError, match=what):
            frame.gpu.select(make(cb)).compute()
    for bad, what in (({"week_mask": [True] * 6}, "needs 7"),
                      ({"week_mask": [1] * 7}, "week_mask holds booleans.*got 1 of type int"),
                      ({"holidays": cb.col("d")}, "as an expression are not supported"),
                      ({"holidays": ["2024-01-01"]}, "holidays are dates"),
                      ({"roll": "nearest"}, "'raise', 'forward' or 'backward'")):
        with pytest.raises(ColbridgeError, match=what):
            cb.col("d").dt.add_business_days(1, **bad)
