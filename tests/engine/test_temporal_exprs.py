"""Dates, datetimes, durations and times in expressions, against polars on generated data.

Every unit, naive and time-zoned datetimes (London, New York, Kolkata, Lord Howe,
UTC: half-hour and 30-minute daylight saving shifts), leap years, pre-1970 and
far-future values, DST edges, nulls, slices and chunks, in all three frame kinds.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.engine.temporal_data import UNITS, ZONES, temporal_tables

SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: the field kernels are large (a civil date twice, for ISO weeks): fewer draws per zone
FIELD_SETTINGS = settings(SETTINGS, max_examples=5)


class _Names:
    """The expression module ``m`` plus polars' dtype names (colbridge casts accept them)."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        if name[:1].isupper():
            return getattr(pl, name)
        return getattr(self._module, name)


def same_as_polars(table: pa.Table, steps: Any, **kwargs: Any) -> None:
    """`assert_same_as_polars` with dtype names available as ``m.Int64``, ``m.Date``, ..."""
    assert_same_as_polars(table, lambda m, q: steps(_Names(m), q), **kwargs)

DATETIME_FIELDS = ["year", "iso_year", "quarter", "month", "week", "weekday", "day",
                   "ordinal_day", "hour", "minute", "second", "millisecond", "microsecond",
                   "nanosecond", "is_leap_year", "days_in_month", "century", "millennium",
                   "date", "time"]  # fmt: skip
DATE_FIELDS = ["year", "iso_year", "quarter", "month", "week", "weekday", "day", "ordinal_day",
               "is_leap_year", "days_in_month", "century", "millennium"]  # fmt: skip
TIME_FIELDS = ["hour", "minute", "second", "millisecond", "microsecond", "nanosecond"]


def _fields(names: list[str]) -> Any:
    def steps(m: Any, q: Any) -> Any:
        a = m.col("a")
        return q.with_columns(**{f: getattr(a.dt, f)() for f in names})

    return steps


@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("tz", [None, *ZONES])
@FIELD_SETTINGS
@given(data=st.data())
def test_datetime_fields(unit: str, tz: str | None, data: st.DataObject) -> None:
    table = data.draw(temporal_tables([pa.timestamp(unit, tz)], names=("a",)))
    same_as_polars(table, _fields(DATETIME_FIELDS))


@SETTINGS
@given(data=st.data())
def test_date_and_time_fields(data: st.DataObject) -> None:
    table = data.draw(temporal_tables([pa.date32()], names=("a",)))
    same_as_polars(table, _fields(DATE_FIELDS))
    table = data.draw(temporal_tables([pa.time64("ns")], names=("a",)))
    same_as_polars(table, _fields(TIME_FIELDS))


@pytest.mark.parametrize("tz", [None, "Asia/Kolkata"])
@pytest.mark.parametrize("unit", UNITS)
@SETTINGS
@given(data=st.data())
def test_epoch_and_conversions(unit: str, tz: str | None, data: st.DataObject) -> None:
    table = data.draw(temporal_tables([pa.timestamp(unit, tz), pa.date32()], names=("a", "d")))

    def steps(m: Any, q: Any) -> Any:
        a, d = m.col("a"), m.col("d")
        out = {f"epoch_{u}": a.dt.epoch(u) for u in ("ns", "us", "ms", "s", "d")}
        out.update({f"d_epoch_{u}": d.dt.epoch(u) for u in ("us", "s", "d")})
        out.update(
            ts_ms=a.dt.timestamp("ms"), to_int=a.cast(m.Int64), d_int=d.cast(m.Int32),
            to_ms=a.cast(m.Datetime("ms")), to_date=a.cast(m.Date), to_time=a.cast(m.Time),
            d_to_dt=d.cast(m.Datetime(unit)), unit_ms=a.dt.cast_time_unit("ms"),
            small=a.cast(m.Int32, strict=False), f=a.cast(m.Float64),
            d_small=d.cast(m.Int8, strict=False), naive=a.dt.replace_time_zone(None),
        )  # fmt: skip
        if tz is not None:
            out["ny"] = a.dt.convert_time_zone("America/New_York").dt.hour()
        return q.with_columns(**out)

    same_as_polars(table, steps)


@pytest.mark.parametrize("units", [("us", "us"), ("ns", "us"), ("ms", "ns")], ids=str)
@SETTINGS
@given(data=st.data())
def test_arithmetic_and_comparisons(units: tuple[str, str], data: st.DataObject) -> None:
    u, v = units
    types = [pa.timestamp(u), pa.timestamp(v), pa.duration(v), pa.date32(), pa.duration(u)]
    table = data.draw(temporal_tables(types, names=("a", "b", "du", "d", "dv")))

    def steps(m: Any, q: Any) -> Any:
        a, b, du, d, dv = (m.col(c) for c in ("a", "b", "du", "d", "dv"))
        return q.with_columns(
            diff=a - b, plus=a + du, minus=a - du, rplus=du + a, dplus=d + du, dminus=d - du,
            ddiff=d - d, dtdiff=a - d, dsum=du + dv, dneg=-du,
            dabs=du.abs(), lt=a < b, eq=a == b, ge=a >= d, dlt=du < dv, deq=d == d,
            lit_gt=a > dt.datetime(2000, 1, 1), lit_date=a >= dt.date(1970, 1, 1),
            d_lit=d < dt.date(2000, 2, 29), du_lit=du > dt.timedelta(hours=-1),
            plus_lit=a + dt.timedelta(days=1, microseconds=3),
            d_plus_lit=d + dt.timedelta(hours=-1), num_cmp=a > 5,
            scaled=du * 3, scaled_f=du * 2.5, halved=du / 2, halved_f=du / 7.0,
            ratio=du / dv, tot_s=du.dt.total_seconds(), tot_h=du.dt.total_hours(),
            tot_d=du.dt.total_days(), tot_ms=du.dt.total_milliseconds(),
            tot_ns=du.dt.total_nanoseconds(), tot_f=du.dt.total_seconds(fractional=True),
        )  # fmt: skip

    same_as_polars(table, steps, rtol=1e-12)


@pytest.mark.parametrize("tz", [None, "Australia/Lord_Howe"])
@SETTINGS
@given(data=st.data())
def test_time_zoned_comparisons_and_literals(tz: str | None, data: st.DataObject) -> None:
    table = data.draw(temporal_tables([pa.timestamp("us", tz), pa.timestamp("ns", tz)],
                                      names=("a", "b")))  # fmt: skip
    when = dt.datetime(2001, 7, 1, 12, tzinfo=ZoneInfo(tz)) if tz else dt.datetime(2001, 7, 1)

    def steps(m: Any, q: Any) -> Any:
        a, b = m.col("a"), m.col("b")
        return q.with_columns(
            lt=a < b, diff=b - a, after=a > when, shifted=(a + dt.timedelta(hours=12)).dt.hour(),
            day=(b - dt.timedelta(minutes=30)).dt.date(),
        )  # fmt: skip

    same_as_polars(table, steps)


@pytest.mark.parametrize("kind", ["datetime", "date"])
@SETTINGS
@given(data=st.data())
def test_truncate_and_month_bounds(kind: str, data: st.DataObject) -> None:
    arrow = pa.timestamp("us") if kind == "datetime" else pa.date32()
    table = data.draw(temporal_tables([arrow], names=("a",)))
    every = ["1d", "3d", "1w", "2w", "1mo", "2mo", "1q", "1y"]
    if kind == "datetime":
        every += ["1h", "15m", "90m", "1h30m", "1s", "250ms"]

    def steps(m: Any, q: Any) -> Any:
        a = m.col("a")
        out = {f"t_{e}": a.dt.truncate(e) for e in every}
        return q.with_columns(**out, ms=a.dt.month_start(), me=a.dt.month_end())

    same_as_polars(table, steps)


@SETTINGS
@given(data=st.data())
def test_reductions_when_and_fill_null(data: st.DataObject) -> None:
    types = [pa.timestamp("ms"), pa.timestamp("us"), pa.duration("ns"), pa.date32()]
    table = data.draw(temporal_tables(types, names=("a", "b", "du", "d")))

    def steps(m: Any, q: Any) -> Any:
        a, b, du, d = m.col("a"), m.col("b"), m.col("du"), m.col("d")
        return q.with_columns(
            since=a - a.min(), until=b.max() - b, dmin=d.min(), dmax=d.max(), dusum=du.sum(),
            pick=m.when(a.is_null()).then(b).otherwise(a),
            dpick=m.when(d.dt.weekday() > 5).then(d).otherwise(None),
            filled=a.fill_null(dt.datetime(2000, 1, 1)), dfilled=d.fill_null(d.max()),
            first=m.coalesce(a, b),
        )  # fmt: skip

    same_as_polars(table, steps)


@SETTINGS
@given(data=st.data())
def test_filter_on_temporal_predicates(data: st.DataObject) -> None:
    table = data.draw(temporal_tables([pa.timestamp("us", "America/New_York"), pa.date32()],
                                      names=("a", "d")))  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        a, d = m.col("a"), m.col("d")
        return q.filter((a.dt.hour() >= 9) & (a.dt.weekday() < 6)).with_columns(
            h=a.dt.hour(), y=d.dt.year()
        ).filter(d > dt.date(1900, 1, 1))  # fmt: skip

    same_as_polars(table, steps)


def test_strict_casts_raise_like_polars() -> None:
    t = pa.table({"a": pa.array([0, 10**17], pa.timestamp("us")),
                  "d": pa.array([dt.date(2020, 1, 1), dt.date(1, 1, 1)])})  # fmt: skip
    for build in (lambda m: m.col("a").cast(m.Int32), lambda m: m.col("d").cast(m.Int8)):
        with pytest.raises(pl.exceptions.InvalidOperationError):
            pl.from_arrow(t).select(build(_Names(pl)))
        with pytest.raises(cb.InvalidOperationError, match="strict cast"):
            cb.lazy(t).select(build(_Names(cb))).compute()


@pytest.mark.parametrize(
    "build",
    [
        lambda m: m.col("a") + m.col("b"),
        lambda m: m.col("a") * 2,
        lambda m: m.col("a") + 5,
        lambda m: m.col("du").dt.hour(),
        lambda m: m.col("d").dt.hour(),
        lambda m: m.col("a") - m.col("z"),
        lambda m: m.col("z") > dt.datetime(2020, 1, 1),
        lambda m: m.col("a").cast(m.Duration("us")),
        lambda m: m.col("a").sum(),
    ],
    ids=["dt+dt", "dt*2", "dt+5", "dur.hour", "date.hour", "naive-zoned", "zoned>naive",
         "dt->dur", "sum"],
)
def test_refused_like_polars(build: Any) -> None:
    t = pa.table({
        "a": pa.array([1, None], pa.timestamp("us")), "b": pa.array([2, 3], pa.timestamp("us")),
        "du": pa.array([1, 2], pa.duration("us")), "d": pa.array([1, 2], pa.date32()),
        "z": pa.array([1, 2], pa.timestamp("us", "UTC")),
    })  # fmt: skip
    with pytest.raises(pl.exceptions.PolarsError):
        pl.from_arrow(t).select(build(_Names(pl)))
    with pytest.raises(cb.ColbridgeError, match=r"\S"):
        cb.lazy(t).select(x=build(_Names(cb))).compute()


def test_results_keep_their_arrow_types_in_every_frame_kind() -> None:
    import pandas as pd

    t = pa.table({"a": pa.array([1_600_000_000_000_000, None], pa.timestamp("us", "Asia/Kolkata")),
                  "d": pa.array([18_000, 1], pa.date32())})  # fmt: skip
    a = cb.col("a")

    def q(frame: Any) -> Any:
        return cb.lazy(frame).select(
            t=a + dt.timedelta(hours=1), d=a.dt.date(), du=a - a, ti=a.dt.time(),
            nd=cb.col("d") + dt.timedelta(days=1),
        )
    arrow = q(t).compute()
    assert arrow.schema.field("t").type == pa.timestamp("us", "Asia/Kolkata")
    assert arrow.schema.field("d").type == pa.date32()
    assert arrow.schema.field("du").type == pa.duration("us")
    assert arrow.schema.field("ti").type == pa.time64("ns")
    polars = q(pl.from_arrow(t)).compute()
    assert polars.schema["t"] == pl.Datetime("us", "Asia/Kolkata")
    assert polars.schema["ti"] == pl.Time
    pandas = q(t.to_pandas(types_mapper=pd.ArrowDtype)).compute()
    assert pandas["t"].dtype == pd.ArrowDtype(pa.timestamp("us", "Asia/Kolkata"))
    assert pandas["nd"].dtype == pd.ArrowDtype(pa.date32())
    want = dt.datetime(2020, 9, 13, 18, 56, 40, tzinfo=ZoneInfo("Asia/Kolkata"))
    assert arrow.column("t")[0].as_py() == want


def test_pandas_numpy_datetimes() -> None:
    import pandas as pd

    pdf = pd.DataFrame({"t": pd.to_datetime(["2021-03-14 01:30", None, "1969-07-20 20:17"])})
    out = pdf.gpu.with_columns(h=cb.col("t").dt.hour(), y=cb.col("t").dt.year()).compute()
    assert out["h"].tolist()[0] == 1
    assert out["y"].tolist()[2] == 1969
    assert pd.isna(out["h"].tolist()[1])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(days=st.lists(st.integers(-719_162, 2_932_896), min_size=1, max_size=64))
def test_calendar_fields_match_python(days: list[int]) -> None:
    """Hinnant's arithmetic against Python's calendar, over years 1 to 9999."""
    d = cb.col("d")
    out = cb.lazy(pa.table({"d": pa.array(days, pa.int32()).view(pa.date32())})).select(
        y=d.dt.year(), m=d.dt.month(), day=d.dt.day(), wd=d.dt.weekday(), od=d.dt.ordinal_day(),
        wk=d.dt.week(), iy=d.dt.iso_year(), leap=d.dt.is_leap_year(),
    ).compute().to_pydict()  # fmt: skip
    for k, n in enumerate(days):
        date = dt.date(1970, 1, 1) + dt.timedelta(days=n)
        iso = date.isocalendar()
        got = tuple(out[c][k] for c in ("y", "m", "day", "wd", "od", "wk", "iy", "leap"))
        leap = date.year % 4 == 0 and (date.year % 100 != 0 or date.year % 400 == 0)
        want = (date.year, date.month, date.day, iso.weekday, date.timetuple().tm_yday,
                iso.week, iso.year, leap)  # fmt: skip
        assert got == want, date


@pytest.mark.parametrize("tz", ZONES)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seconds=st.lists(st.integers(-2_208_988_800, 4_102_444_799), min_size=1, max_size=64))
def test_local_fields_match_zoneinfo(tz: str, seconds: list[int]) -> None:
    """Local fields from the transition table against the standard library, 1900 to 2099."""
    a = cb.col("a")
    table = pa.table({"a": pa.array(seconds, pa.int64()).cast(pa.timestamp("s")).cast(
        pa.timestamp("ms")).cast(pa.timestamp("ms", tz))})  # fmt: skip
    out = cb.lazy(table).select(h=a.dt.hour(), mi=a.dt.minute(), d=a.dt.date()).compute()
    zone = ZoneInfo(tz)
    for k, s in enumerate(seconds):
        local = dt.datetime.fromtimestamp(s, tz=zone)
        got = (out.column("h")[k].as_py(), out.column("mi")[k].as_py(), out.column("d")[k].as_py())
        assert got == (local.hour, local.minute, local.date()), (tz, s)


# a truncation into a gap where daylight saving starts (Kolkata's 1941-10-01 midnight) reads
# the offset before it; one into a change of standard offset (Lord Howe's 1981-03-01)
# raises, as polars does (docs/temporal.md)
@pytest.mark.parametrize("tz", ["Europe/London", "America/New_York", "Australia/Lord_Howe",
                                "Asia/Kolkata"])  # fmt: skip
@FIELD_SETTINGS
@given(data=st.data())
def test_zoned_truncate_and_replace_time_zone(tz: str, data: st.DataObject) -> None:
    table = data.draw(temporal_tables([pa.timestamp("us", tz), pa.timestamp("ms")],
                                      names=("a", "n")))  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        a, n = m.col("a"), m.col("n")
        return q.with_columns(
            t1h=a.dt.truncate("1h"), t15=a.dt.truncate("15m"), t1d=a.dt.truncate("1d"),
            t1w=a.dt.truncate("1w"), t1mo=a.dt.truncate("1mo"), ms=a.dt.month_start(),
            me=a.dt.month_end(), wall=a.dt.replace_time_zone(None),
            early=n.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null"),
            late=n.dt.replace_time_zone(tz, ambiguous="latest", non_existent="null"),
            moved=a.dt.replace_time_zone("Asia/Kolkata", ambiguous="earliest"),
        )  # fmt: skip

    same_as_polars(table, steps)


@pytest.mark.parametrize("unit", ["ms", "ns"])
@pytest.mark.parametrize("tz", [None, "Australia/Lord_Howe"])
@settings(SETTINGS, max_examples=4)
@given(data=st.data())
def test_diff_of_temporal_columns_is_a_duration(unit: str, tz: str | None,
                                                data: st.DataObject) -> None:  # fmt: skip
    # polars: dates give Duration[us], times Duration[ns], datetimes and durations their
    # own unit; back and ahead, past the frame, per group, fused with arithmetic; and a
    # running total of durations is a duration. The typing is what is new (the kernels of
    # temporal subtraction are checked compiled elsewhere): the draws run on the NumPy
    # tier, which compiles nothing, and `test_temporal_diff_compiled` once compiled
    types = [pa.timestamp(unit, tz), pa.date32(), pa.duration(unit), pa.time64("ns")]
    table = data.draw(temporal_tables(types, names=("t", "d", "u", "h")))
    table = table.append_column("g", pa.array([k % 3 for k in range(table.num_rows)]))
    before = os.environ["COLBRIDGE_CPU_TIER"]
    os.environ["COLBRIDGE_CPU_TIER"] = "numpy"
    try:
        same_as_polars(table, _temporal_diffs)
    finally:
        os.environ["COLBRIDGE_CPU_TIER"] = before


def _temporal_diffs(m: Any, q: Any) -> Any:
    t, d, u, h = (m.col(c) for c in ("t", "d", "u", "h"))
    return q.with_columns(dt=t.diff(), dd=d.diff(-2), du=u.diff(3), dh=h.diff(),
                          gt=t.diff().over("g"), gd=d.diff(-1).over("g"),
                          far=t.diff(100), tw=t.diff() + u,
                          cu=u.cum_sum(), gcu=u.cum_sum(reverse=True).over("g"))  # fmt: skip


def _over_physical(m: Any, q: Any) -> Any:
    # polars computes these over the integers; rolling_mean casts the mean back (a date's
    # to Datetime[us]); windows of at most 4 keep every sum of these values exact
    t, d, u, h = (m.col(c) for c in ("t", "d", "u", "h"))
    out = {}
    for name, x in (("t", t), ("d", d), ("u", u), ("h", h)):
        out |= {
            f"m{name}": x.rolling_mean(2), f"mc{name}": x.rolling_mean(3, min_samples=1,
                                                                      center=True),
            f"p{name}": x.pct_change(), f"e{name}": x.ewm_mean(alpha=0.3, ignore_nulls=True),
            f"g{name}": x.rolling_mean(4, min_samples=2).over("g"),
        }  # fmt: skip
        if name != "u":  # polars has no deviation of durations
            out |= {f"s{name}": x.rolling_std(3, min_samples=2),
                    f"v{name}": x.rolling_var(2).over("g")}  # fmt: skip
    return q.with_columns(**out)


@pytest.mark.parametrize("tz", [None, "America/New_York"])
@settings(SETTINGS, max_examples=4)
@given(data=st.data())
def test_windows_and_changes_of_temporal_columns_use_their_integers(
    tz: str | None, data: st.DataObject
) -> None:
    types = [pa.timestamp("ms", tz), pa.date32(), pa.duration("ms"), pa.time64("ns")]
    table = data.draw(temporal_tables(types, names=("t", "d", "u", "h")))
    # no rows: polars types rolling_std/var (and, lazily, ewm_mean) as the column's own
    # type there and Float64 given any row; colbridge types them Float64 (test below)
    assume(table.num_rows > 0)
    table = table.append_column("g", pa.array([k % 3 for k in range(table.num_rows)]))
    before = os.environ["COLBRIDGE_CPU_TIER"]
    os.environ["COLBRIDGE_CPU_TIER"] = "numpy"  # the typing is new; compiled once below
    try:
        same_as_polars(table, _over_physical, rtol=1e-9)
    finally:
        os.environ["COLBRIDGE_CPU_TIER"] = before


def test_windows_of_temporal_columns_compiled_and_refused() -> None:
    rng = np.random.default_rng(9)
    n = 200
    ms = rng.integers(-10**13, 10**13, n)
    table = pa.table({
        "t": pa.array(ms, pa.timestamp("ms"), mask=rng.random(n) < 0.1),
        "d": pa.array((ms // 86_400_000).astype(np.int32), pa.date32()),
        "u": pa.array(rng.integers(-10**9, 10**9, n), pa.duration("ms")),
        "h": pa.array(rng.integers(0, 86_400 * 10**9, n), pa.time64("ns"),
                      mask=rng.random(n) < 0.2),
        "g": pa.array(rng.integers(0, 4, n)),
    })  # fmt: skip
    same_as_polars(table, _over_physical, rtol=1e-9)
    # an empty frame: the types polars gives any non-empty one
    empty = _over_physical(cb, cb.lazy(table.slice(0, 0))).compute()
    want = _over_physical(pl, pl.from_arrow(table.slice(0, 1)).lazy()).collect()
    assert pl.from_arrow(empty).schema == want.schema
    with pytest.raises(cb.UnsupportedTypeError, match=r"`u` has type duration\[ms\].*no "
                       "deviation of durations"):  # fmt: skip
        cb.lazy(table).select(cb.col("u").rolling_std(3)).compute()


def test_temporal_diff_compiled() -> None:
    rng = np.random.default_rng(5)
    n = 300
    us = np.sort(rng.integers(-10**15, 10**15, n))
    table = pa.table({
        "t": pa.array(us, pa.timestamp("us", "Asia/Kolkata"), mask=rng.random(n) < 0.1),
        "d": pa.array((us // 86_400_000_000).astype(np.int32), pa.date32()),
        "u": pa.array(rng.integers(-10**12, 10**12, n), pa.duration("us"),
                      mask=rng.random(n) < 0.1),
        "h": pa.array(rng.integers(0, 86_400 * 10**9, n), pa.time64("ns")),
        "g": pa.array(rng.integers(0, 4, n)),
    })  # fmt: skip
    same_as_polars(table, _temporal_diffs)
    want = _temporal_diffs(pl, pl.from_arrow(table).lazy()).collect()
    # the CUDA kernel text, run on the host
    got = compute_on_host(_temporal_diffs(cb, cb.lazy(table)))
    assert pl.from_arrow(got).equals(want)
    # and the string language
    text = cb.lazy(table).eval("dt = diff(t); gd = d.diff(-1).over(g); cu = cum_sum(u)")
    assert pl.from_arrow(text.compute()).select("dt", "gd", "cu").equals(
        want.select("dt", "gd", "cu"))


def test_diff_of_zoned_pandas_datetimes_with_nat() -> None:
    # a zoned pandas column is read as its UTC int64 buffer in place (NaT is null), as a
    # polars or Arrow column would be; `to_numpy` would make Python objects of it
    import pandas as pd

    stamps = pd.to_datetime(["2024-03-31 01:30", None, "2024-03-31 03:15", "2024-04-01 00:00"])
    pdf = pd.DataFrame({"t": pd.Series(stamps).dt.tz_localize("Europe/Paris")})
    q = cb.lazy(pdf).with_columns(gap=cb.col("t").diff(), h=cb.col("t").dt.hour())
    out = q.compute()
    assert q.last_report.copies == []  # type: ignore[union-attr]
    want = pl.from_pandas(pdf).with_columns(gap=pl.col("t").diff(), h=pl.col("t").dt.hour())
    assert pl.from_pandas(out).cast({"h": pl.Int8}).equals(want)
    view = cb.as_tensor(pdf["t"])
    assert not view.copied
    assert view.data_address == pdf["t"].array.asi8.ctypes.data  # the same buffer
    assert view.tz == "Europe/Paris"


@pytest.mark.parametrize("fraction", ["%.f", "%.3f", "%.6f", "%.9f"])
@pytest.mark.parametrize("unit", ["ms", "us", "ns"])
def test_to_datetime_reads_chrono_fractions_as_polars(fraction: str, unit: str) -> None:
    # a dot and digits, or nothing: `%.f` any number of them, the others exactly 3, 6, 9
    texts = ["2024-03-10 02:30:00", "2024-03-10 02:30:00.5", "2024-03-10 02:30:00.123",
             "2024-03-10 02:30:00.123456789", "2024-03-10 02:30:00.", "1900-01-01 00:00:00.5",
             "2024-03-10 02:30:00.1234567891", "2024-03-10 02:30:00.123456", None, "x"]  # fmt: skip
    df = pl.DataFrame({"s": texts})

    def steps(m: Any, q: Any) -> Any:
        parsed = m.col("s").str.to_datetime(f"%Y-%m-%d %H:%M:%S{fraction}", time_unit=unit,
                                            strict=False)  # fmt: skip
        return q.select(t=parsed, i=parsed.cast(pl.Int64))

    assert steps(cb, df.gpu).compute().equals(steps(pl, df))


@pytest.mark.parametrize(("tz", "local", "every"), [
    ("America/New_York", dt.datetime(2021, 3, 14, 3, 30), "2h"),  # 02:00 does not exist
    ("Europe/London", dt.datetime(2021, 3, 28, 2, 30), "90m"),  # nor does 01:30
    ("Australia/Lord_Howe", dt.datetime(2011, 10, 2, 2, 45), "1h"),  # a half-hour gap
    ("America/Havana", dt.datetime(2021, 3, 14, 12, 0), "1d"),  # a gap at midnight
    ("Asia/Kolkata", dt.datetime(1941, 10, 1, 12, 0), "1mo"),
    ("America/New_York", dt.datetime(2021, 11, 7, 1, 30), "1h"),  # ambiguous: kept
])  # fmt: skip
def test_truncate_into_a_gap_reads_the_offset_before_it(tz: str, local: dt.datetime,
                                                         every: str) -> None:  # fmt: skip
    # polars reads a bucket start that falls in a daylight saving gap with the offset
    # before the gap (on every tier, the CUDA code path too)
    df = pl.DataFrame({"a": [local.replace(tzinfo=ZoneInfo(tz))]}).with_columns(
        pl.col("a").dt.convert_time_zone(tz))
    want = df.select(pl.col("a").dt.truncate(every))
    assert_same_as_polars(df.to_arrow(), lambda m, q: q.select(m.col("a").dt.truncate(every)))
    got = compute_on_host(cb.lazy(df.to_arrow()).select(cb.col("a").dt.truncate(every)))
    assert pl.from_arrow(got).equals(want)  # type: ignore[union-attr]


def test_an_error_names_every_expression_that_can_fail_that_way() -> None:
    # a kernel counts each kind of failure once, not which expression failed: both
    # strict casts are named (the UInt8 one could have failed too), one text once
    df = pl.DataFrame({"a": [1, 300], "b": [1, 2]})
    with pytest.raises(cb.ColbridgeError) as caught:
        df.gpu.with_columns(x=cb.col("a").cast(pl.Int8), y=cb.col("b").cast(pl.UInt8) * 1000,
                            z=cb.col("a").cast(pl.Int8) + 1).compute()  # fmt: skip
    text = str(caught.value)
    assert "strict cast to int8 failed" in text
    assert "strict cast to uint8 failed" in text
    assert text.count("strict cast to int8 failed") == 1
    tz = "Australia/Lord_Howe"
    t = pa.table({"a": pa.array([dt.datetime(2011, 10, 1, 15, 30, tzinfo=dt.UTC)],
                                pa.timestamp("us", tz)),
                  "n": pa.array([300], pa.int64())})  # fmt: skip
    with pytest.raises(cb.ColbridgeError) as caught:
        cb.lazy(t).with_columns(m=cb.col("a").dt.replace_time_zone("Asia/Kolkata"),
                                s=cb.col("n").cast(pl.Int8)).compute()  # fmt: skip
    text = str(caught.value)
    assert "strict cast to int8 failed" in text
    assert "replace_time_zone('Asia/Kolkata'" in text


def test_truncate_into_a_change_of_standard_offset_raises_as_polars() -> None:
    # Lord Howe moved from +10:00 to +10:30 at 1981-03-01 00:00 (no daylight saving on
    # either side): polars raises for the midnight that does not exist, and so does
    # colbridge, naming the zone
    tz = "Australia/Lord_Howe"
    df = pl.DataFrame({"a": [dt.datetime(1981, 3, 15, 0, 45, tzinfo=ZoneInfo(tz))]}
                      ).with_columns(pl.col("a").dt.convert_time_zone(tz))  # fmt: skip
    with pytest.raises(pl.exceptions.ComputeError):
        df.select(pl.col("a").dt.truncate("1mo"))
    with pytest.raises(cb.ColbridgeError, match=r"'Australia/Lord_Howe' does not exist"):
        df.gpu.select(cb.col("a").dt.truncate("1mo")).compute()
