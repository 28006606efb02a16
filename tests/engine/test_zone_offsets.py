"""``dt.base_utc_offset`` and ``dt.dst_offset`` against polars and against ``zoneinfo``.

A zoned datetime's UTC offset split as polars splits it: the daylight saving part
and the base (standard) offset, Durations in milliseconds. Compared exactly with
polars on instants from 1996 to past 2099 (where the zone files and polars' zone
data agree) in zones with whole-hour, half-hour and negative savings, every unit,
nulls, sliced and chunked columns; on every transition of every zone against the
standard library's ``zoneinfo``, whose ``dst()`` is the documented source (polars'
data differs in a few zones' histories: docs/temporal.md); refusals as polars'; the
string language and the CUDA code path.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import InvalidOperationError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from colbridge.types.timezones import offset_parts

#: zones whose offsets polars' data and the zone files agree on from 1996: whole-hour
#: savings both hemispheres, Lord Howe's half hour, Dublin's winter "negative" saving,
#: Chatham's 45-minute base, a zone without saving time, and UTC
ZONES = ("Europe/London", "America/New_York", "Australia/Lord_Howe", "Europe/Dublin",
         "Pacific/Chatham", "America/Sao_Paulo", "Asia/Kolkata", "UTC")  # fmt: skip
_SECOND = {"ns": 10**9, "us": 10**6, "ms": 10**3}
#: 1996-01-01 to 2120-01-01 in seconds (past 2099 a zone keeps its last offset)
_SPAN = (820_454_400, 4_733_510_400)


def _instants(n: int, seed: int, unit: str, nulls: float) -> pa.ChunkedArray:
    """UTC instants in ``unit``: random ones and each side of this zone list's changes."""
    rng = np.random.default_rng(seed)
    seconds = rng.integers(*_SPAN, n)
    edges = sorted({w + d for z in ZONES for w in offset_parts(z)[0][1:]
                    if _SPAN[0] <= w < _SPAN[1] for d in (-1, 0)})  # fmt: skip
    pick = rng.random(n) < 0.3
    seconds[pick] = rng.choice(edges, int(pick.sum()))
    ticks = seconds * _SECOND[unit] + rng.integers(0, _SECOND[unit], n)
    values = pa.array(ticks, pa.timestamp(unit, "UTC"), mask=rng.random(n) < nulls)
    cut = n // 3
    return pa.chunked_array([values[:cut], values[cut:]], values.type)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 9, 300]),
    seed=st.integers(0, 2**31 - 1),
    unit=st.sampled_from(["ns", "us", "ms"]),
    zone=st.sampled_from(ZONES),
    nulls=st.sampled_from([0.0, 0.2, 1.0]),
    offset=st.sampled_from([0, 3]),
)
def test_offsets_equal_polars(n: int, seed: int, unit: str, zone: str, nulls: float,
                              offset: int) -> None:  # fmt: skip
    column = _instants(n + offset, seed, unit, nulls)[offset:]
    table = pa.table({"u": column})

    def steps(m: object, q: pl.LazyFrame) -> pl.LazyFrame:
        t = m.col("u").dt.convert_time_zone(zone)  # type: ignore[attr-defined]
        return q.select(b=t.dt.base_utc_offset(), d=t.dt.dst_offset(),
                        w=t.dt.base_utc_offset() + t.dt.dst_offset())  # fmt: skip

    assert_same_as_polars(table, steps)


@pytest.mark.parametrize("zone", ["Europe/London", "America/Inuvik", "Europe/Moscow",
                                  "Asia/Tehran", "Australia/Lord_Howe", "Africa/Casablanca"])
def test_every_change_agrees_with_zoneinfo(zone: str) -> None:
    """Each side of every change of the zone, from the year 1 to past 2099."""
    instants = offset_parts(zone)[0][1:]
    seconds = sorted({max(w + d, -62_135_596_800) for w in instants for d in (-1, 0, 86_400)})
    seconds.append(4_733_510_400)
    utc = dt.timezone.utc
    local = [dt.datetime(1970, 1, 1, tzinfo=utc) + dt.timedelta(seconds=s) for s in seconds]
    wanted_dst = [w.astimezone(zoneinfo.ZoneInfo(zone)).dst() for w in local]
    wanted_all = [w.astimezone(zoneinfo.ZoneInfo(zone)).utcoffset() for w in local]
    frame = pl.DataFrame({"t": pl.Series(local, dtype=pl.Datetime("ms", "UTC"))}).with_columns(
        pl.col("t").dt.convert_time_zone(zone))
    got = frame.gpu.select(b=cb.col("t").dt.base_utc_offset(),
                           d=cb.col("t").dt.dst_offset()).compute()  # fmt: skip
    assert got["d"].to_list() == wanted_dst
    assert (got["b"] + got["d"]).to_list() == wanted_all


def test_where_polars_zone_data_differs_it_is_said() -> None:
    # America/Inuvik moved from Pacific to Mountain time in 1979, on daylight saving
    # time; the zone file's summer offset has kept the two hours it then had over
    # Pacific standard time, polars' data one hour over Mountain (docs/temporal.md)
    t = pl.Series("t", [dt.datetime(2024, 7, 1)]).dt.replace_time_zone("America/Inuvik")
    got = t.to_frame().gpu.select(cb.col("t").dt.dst_offset()).compute()["t"]
    assert got.to_list() == [dt.timedelta(hours=2)]
    assert t.dt.dst_offset().to_list() == [dt.timedelta(hours=1)]


@pytest.mark.parametrize("kind", ["naive", "date", "time", "number"])
def test_values_without_a_zone_are_refused_as_in_polars(kind: str) -> None:
    values = {"naive": pl.Series([dt.datetime(2024, 1, 1)]),
              "date": pl.Series([dt.date(2024, 1, 1)]),
              "time": pl.Series([dt.time(1, 2)]), "number": pl.Series([1])}[kind]  # fmt: skip
    frame = values.to_frame("t")
    with pytest.raises(pl.exceptions.InvalidOperationError):
        frame.select(pl.col("t").dt.dst_offset())
    with pytest.raises(InvalidOperationError, match=r"dst_offset.*needs a time-zone-aware "
                                                    r"Datetime.*replace_time_zone"):
        frame.gpu.select(cb.col("t").dt.dst_offset()).compute()


def test_the_string_language() -> None:
    t = pl.Series("t", [dt.datetime(2024, 1, 5), None, dt.datetime(2024, 7, 5, 12)])
    frame = t.dt.replace_time_zone("Europe/Paris").to_frame()
    want = frame.with_columns(b=pl.col("t").dt.base_utc_offset(), d=pl.col("t").dt.dst_offset())
    got = cb.lazy(frame).eval("b = t.dt.base_utc_offset()\nd = t.dt.dst_offset()").compute()
    assert got.equals(want)


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = pa.table({"u": _instants(500, 7, "us", 0.1)})
    t = cb.col("u").dt.convert_time_zone("Australia/Lord_Howe")
    q = cb.lazy(table).select(b=t.dt.base_utc_offset(), d=t.dt.dst_offset())
    on_host = compute_on_host(q)
    assert on_host.equals(q.compute(device="cpu"))
    p = pl.col("u").dt.convert_time_zone("Australia/Lord_Howe")
    want = pl.from_arrow(table).select(b=p.dt.base_utc_offset(), d=p.dt.dst_offset())
    assert pl.from_arrow(on_host).equals(want)
