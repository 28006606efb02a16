"""Temporal expressions at the edges of polars' semantics, against polars."""

from __future__ import annotations

import datetime as dt
import pickle
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb


def _same(df: pl.DataFrame, build: Any) -> None:
    got = df.gpu.select(**build(cb)).compute()
    assert_frame_equal(got, df.select(**build(pl)))


def _dates(n: int, seed: int) -> list[dt.date]:
    rng = np.random.default_rng(seed)
    days = rng.integers(-200_000, 200_000, n)  # about 1422 to 2517
    return [dt.date(1970, 1, 1) + dt.timedelta(days=int(d)) for d in days]


@pytest.mark.parametrize("every", ["1mo", "2mo", "7mo", "11mo", "1q", "5q", "1y", "1y1mo",
                                   "3y", "4y", "100y", "1000y"])  # fmt: skip
def test_truncate_by_months_counts_from_1970(every: str, tier: str) -> None:
    # polars counts months from 1970-01: "3y" of 2021-03-01 is 2021-01-01, not 2019
    dates = [dt.date(1970, 1, 1), dt.date(2021, 3, 1), dt.date(1969, 12, 31), *_dates(200, 1)]
    df = pl.DataFrame({"d": dates}).with_columns(
        t=pl.col("d").cast(pl.Datetime("us")) + pl.duration(hours=13),
    ).with_columns(z=pl.col("t").dt.replace_time_zone("Europe/Paris"))
    _same(df, lambda m: {c: m.col(c).dt.truncate(every) for c in ("d", "t", "z")})
    got = df.gpu.group_by(k=cb.col("d").dt.truncate(every), maintain_order=True).agg(cb.len())
    want = df.group_by(k=pl.col("d").dt.truncate(every), maintain_order=True).agg(pl.len())
    assert_frame_equal(got.compute(), want)


def test_a_temporal_literal_reduces_to_itself(tier: str) -> None:
    # one value, not one copy per row: `lit(1h).sum()` over 3 rows is 1h
    df = pl.DataFrame({"g": [1, 1, 2], "x": [1, 2, 3]})
    hour, day = dt.timedelta(hours=1), dt.date(2020, 5, 17)
    _same(df, lambda m: {"s": m.lit(hour).sum(), "mn": m.lit(day).min(),
                         "mx": m.lit(hour).max(), "f": m.lit(day).first()})  # fmt: skip
    got = df.gpu.with_columns(s=cb.lit(hour).sum().over("g")).compute()
    assert_frame_equal(got, df.with_columns(s=pl.lit(hour).sum().over("g")))


@pytest.mark.parametrize("dtype", [pl.Int64, pl.Int8, pl.UInt64, pl.Float64])
def test_numbers_to_times_of_day_as_polars(dtype: Any) -> None:
    inside = pl.DataFrame({"n": pl.Series([0, 5, 86_399_999_999_999 if dtype in (
        pl.Int64, pl.UInt64) else 100], dtype=dtype)})  # fmt: skip
    _same(inside, lambda m: {"t": m.col("n").cast(pl.Time)})
    outside = pl.DataFrame({"n": pl.Series([5, -1 if dtype != pl.UInt64 else 2**63], dtype=dtype)})
    if dtype in (pl.Int64, pl.UInt64):
        outside = outside.vstack(pl.DataFrame({"n": pl.Series([86_400 * 10**9], dtype=dtype)}))
    with pytest.raises(pl.exceptions.InvalidOperationError):
        outside.select(pl.col("n").cast(pl.Time))
    with pytest.raises(cb.ColbridgeError, match="strict cast to time failed"):
        outside.gpu.select(cb.col("n").cast(pl.Time)).compute()
    _same(outside, lambda m: {"t": m.col("n").cast(pl.Time, strict=False)})


@pytest.mark.parametrize("kind", ["datetime", "duration"])
def test_a_finer_time_unit_that_overflows_fails_as_polars(kind: str) -> None:
    value = dt.datetime(1, 1, 1) if kind == "datetime" else dt.timedelta(days=73_000_000 // 1000)
    df = pl.DataFrame({"a": [value]}).with_columns(pl.col("a").dt.cast_time_unit("us"))
    big = df if kind == "datetime" else df.with_columns(pl.col("a") * 1000)
    with pytest.raises(pl.exceptions.PolarsError):
        big.select(pl.col("a").dt.cast_time_unit("ns"))
    with pytest.raises(cb.ColbridgeError, match="some values do not fit"):
        big.gpu.select(cb.col("a").dt.cast_time_unit("ns")).compute()
    small = pl.DataFrame({"a": [dt.datetime(2000, 1, 2, 3)] if kind == "datetime"
                          else [dt.timedelta(hours=5)]})  # fmt: skip
    _same(small, lambda m: {"ns": m.col("a").dt.cast_time_unit("ns"),
                            "ms": m.col("a").dt.cast_time_unit("ms")})  # fmt: skip


def test_is_in_of_temporal_values(tier: str) -> None:
    # several values, and computed temporal expressions (they crashed the typing)
    df = pl.DataFrame({
        "d": [dt.date(1970, 1, 1), dt.date(1972, 9, 27), None, dt.date(2000, 1, 1)],
        "t": [dt.datetime(1970, 1, 1, 5), dt.datetime(1972, 9, 27), None,
              dt.datetime(2000, 1, 1, 23)],
        "u": [dt.timedelta(1), dt.timedelta(2), None, dt.timedelta(3)],
    })  # fmt: skip
    days = [dt.date(1970, 1, 1), dt.date(1972, 9, 27)]
    midnights = [dt.datetime(1970, 1, 1), dt.datetime(2000, 1, 1)]
    _same(df, lambda m: {
        "a": m.col("d").is_in(days),
        "b": m.col("t").dt.truncate("1d").is_in(midnights),
        "c": m.col("t").dt.date().is_in(days[:1]),
        "e": m.col("u").is_in([dt.timedelta(1), dt.timedelta(3)]),
        "f": m.col("t").is_in([dt.datetime(1970, 1, 1, 5), dt.datetime(2000, 1, 1, 23)]),
    })  # fmt: skip
    got = df.gpu.eval("y = d in (date('1970-01-01'), date('2000-01-01'))")
    assert got["y"].to_list() == [True, False, None, True]
    many = pl.DataFrame({"x": np.arange(10)})
    values = list(range(0, 180, 3))  # 60 values: a balanced tree of equalities
    _same(many, lambda m: {"y": m.col("x").is_in(values)})


_IS_IN_FRAME = {
    "d": [dt.date(2020, 1, 1), dt.date(2020, 1, 2), None],
    "t": [dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1, 12), None],
    "ms": pl.Series([dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1, 12), None],
                    dtype=pl.Datetime("ms")),
    "utc": pl.Series([dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1, 1), None],
                     dtype=pl.Datetime("us", "UTC")),
    "paris": pl.Series([dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1, 1), None],
                       dtype=pl.Datetime("ns", "Europe/Paris")),
    "u": [dt.timedelta(1), dt.timedelta(hours=1), None],
    "tm": [dt.time(1), dt.time(2, 30), None],
}  # fmt: skip
#: values of each kind `is_in` may be given (polars takes only the column's kind)
_IS_IN_VALUES: dict[str, list[Any]] = {
    "date": [dt.date(2020, 1, 1)],
    "datetime": [dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1, 12)],
    "utc": [dt.datetime(2020, 1, 1, 1, tzinfo=dt.timezone.utc)],
    "offset": [dt.datetime(2020, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))],
    "timedelta": [dt.timedelta(hours=1)],
    "time": [dt.time(2, 30)],
    "int": [1],
    "big_int": [1_577_836_800_000_000],  # the datetime column's first value, stored
    "float": [1.0],
    "str": ["2020-01-01"],
    "none": [None],
    "empty": [],
    "date_and_datetime": [dt.date(2020, 1, 1), dt.datetime(2020, 1, 1)],
    "bool": [True],
}


def _is_in_outcome(column: str, values: list[Any], lib: Any) -> Any:
    frame = pl.DataFrame(_IS_IN_FRAME)
    try:
        if lib is pl:
            return frame.select(pl.col(column).is_in(values))[column].to_list()
        return frame.gpu.select(cb.col(column).is_in(values)).compute()[column].to_list()
    except cb.ColbridgeError:  # (a SchemaError is a TypeError too: first)
        assert lib is cb
        return "refused"
    except (pl.exceptions.PolarsError, TypeError):  # polars' list of mixed kinds: TypeError
        assert lib is pl
        return "refused"


@pytest.mark.parametrize("values", list(_IS_IN_VALUES))
@pytest.mark.parametrize("column", list(_IS_IN_FRAME))
def test_is_in_of_another_temporal_kind_as_polars(column: str, values: str) -> None:
    # polars refuses values of another kind (a date in a datetime column and the other
    # way round, numbers, naive and aware datetimes mixed); datetimes of any unit, and
    # aware ones of any zone in a zoned column, are compared as instants
    given = _IS_IN_VALUES[values]
    assert _is_in_outcome(column, given, cb) == _is_in_outcome(column, given, pl)


def test_is_in_of_another_kind_names_both_and_a_remedy() -> None:
    frame = pl.DataFrame(_IS_IN_FRAME)
    with pytest.raises(cb.SchemaError, match=r"datetime\[us\] values in a list of date values"
                                             r".*the values cast"):  # fmt: skip
        frame.gpu.select(cb.col("t").is_in([dt.date(2020, 1, 1)])).compute()
    with pytest.raises(cb.SchemaError, match=r"date values in a list of datetime values"):
        frame.gpu.select(cb.col("d").is_in([dt.datetime(2020, 1, 1)])).compute()
    with pytest.raises(cb.SchemaError, match=r"date values in a list of int values"):
        frame.gpu.select(cb.col("d").is_in([1])).compute()
    with pytest.raises(cb.SchemaError, match=r"time-zone-aware datetimes in a naive column"):
        frame.gpu.select(cb.col("t").is_in(_IS_IN_VALUES["utc"])).compute()


@settings(max_examples=40, deadline=None)
@given(column=st.sampled_from(list(_IS_IN_FRAME)),
       kinds=st.lists(st.sampled_from(list(_IS_IN_VALUES)), min_size=1, max_size=3))  # fmt: skip
def test_generated_is_in_lists_as_polars(column: str, kinds: list[str]) -> None:
    given_values = [v for k in kinds for v in _IS_IN_VALUES[k]]
    assert _is_in_outcome(column, given_values, cb) == _is_in_outcome(column, given_values, pl)


def test_polars_methods_colbridge_lacks_are_named() -> None:
    # every method of polars' `dt` namespace is built: one it may gain reads the same
    with pytest.raises(cb.UnsupportedOperationError, match=r"`dt.to_julian` is not supported"):
        cb.col("t").dt.to_julian()
    with pytest.raises(cb.UnsupportedOperationError, match=r"`str.json_decode` .* `str` has: "):
        cb.col("s").str.json_decode()
    assert not hasattr(cb.col("s").str, "json_path_match")  # an AttributeError too
    assert hasattr(cb.col("t").dt, "dst_offset")


def test_expression_methods_colbridge_lacks_name_the_closest() -> None:
    with pytest.raises(cb.UnsupportedOperationError, match=r"`Expr.cum_summ` .* cum_sum"):
        cb.col("x").cum_summ()
    assert not hasattr(cb.col("x"), "value_counts")  # an AttributeError too
    assert not hasattr(cb.col("x"), "__array_interface__")  # dunders stay plain
    assert pickle.loads(pickle.dumps(cb.col("x") + 1)).node == (cb.col("x") + 1).node


def test_clip_of_temporal_values_keeps_their_type(tier: str) -> None:
    # column bounds gave the stored integers (Int32 days), literal bounds an internal error
    df = pl.DataFrame({
        "d": [dt.date(2020, 1, 1), dt.date(2020, 2, 1), None, dt.date(2020, 1, 20)],
        "lo": [dt.date(2020, 1, 10), None, dt.date(2020, 1, 1), dt.date(2020, 1, 1)],
        "t": [dt.datetime(2020, 1, 1, 5), dt.datetime(2021, 1, 1), None, dt.datetime(2019, 1, 1)],
        "u": [dt.timedelta(1), dt.timedelta(0), None, dt.timedelta(hours=5)],
        "h": [dt.time(1), dt.time(23), None, dt.time(12)],
    })  # fmt: skip
    _same(df, lambda m: {
        "a": m.col("d").clip(m.col("lo")),
        "b": m.col("d").clip(dt.date(2020, 1, 5), dt.date(2020, 1, 25)),
        "c": m.col("d").clip(upper_bound=m.col("lo")),
        "e": m.col("t").clip(dt.datetime(2020, 1, 1), dt.datetime(2020, 6, 1)),
        "f": m.col("u").clip(dt.timedelta(hours=2)),
        "g": m.col("h").clip(dt.time(2), dt.time(20)),
        "i": m.col("t").clip(m.col("lo")),
        # NumPy's scalars as bounds (they were refused as "not a number")
        "j": m.col("t").clip(np.datetime64("2020-01-01"), np.datetime64("2020-06-01T12:30")),
        "k": m.col("d").clip(np.datetime64("2020-01-05")),
        "l": m.col("u").clip(upper_bound=np.timedelta64(2, "h")),
    })  # fmt: skip
    got = df.gpu.eval("r = clip(d, lo); s = clip(d, date('2020-01-15'))")
    assert_frame_equal(got.select("r", "s"), df.select(
        r=pl.col("d").clip(pl.col("lo")), s=pl.col("d").clip(dt.date(2020, 1, 15))))  # fmt: skip


def test_numpy_datetimes_and_timedeltas_are_typed_as_polars_types_them(tier: str) -> None:
    # np.datetime64(..., "ns") became the integer of its nanoseconds (compared with
    # datetimes as a number); other units were refused
    df = pl.DataFrame({"a": [dt.datetime(2020, 1, 1), dt.datetime(2020, 6, 1), None],
                       "u": [dt.timedelta(1), None, dt.timedelta(microseconds=3)]})  # fmt: skip
    df = df.with_columns(n=pl.col("a").cast(pl.Datetime("ns")))
    stamps = [np.datetime64("2020-03-01T00:00:00.123456789", "ns"),
              np.datetime64("2020-03-01T00:00:00.123", "ms"), np.datetime64("2020-03-01", "D")]
    spans = [np.timedelta64(1500, "ns"), np.timedelta64(15, "ms"), np.timedelta64(3, "h")]

    def build(m: Any) -> dict[str, Any]:
        out = {}
        for i, v in enumerate(stamps):
            out |= {f"lt{i}": m.col("a") < v, f"ltn{i}": m.col("n") < v, f"lit{i}": m.lit(v)}
        for i, v in enumerate(spans):
            out |= {f"add{i}": m.col("a") + v, f"addn{i}": m.col("n") + v,
                    f"span{i}": m.lit(v), f"cmp{i}": m.col("u") < v}  # fmt: skip
        return out

    got = df.gpu.with_columns(**build(cb)).compute()
    assert_frame_equal(got, df.with_columns(**build(pl)))
    with pytest.raises(cb.SchemaError, match="NaT"):
        cb.lit(np.datetime64("NaT", "ns"))


def test_a_naive_literal_of_a_zoned_type_is_the_wall_time_there() -> None:
    # polars reads lit(04:00, dtype=Datetime(zone)) as 04:00 in the zone (a cast read UTC)
    df = pl.DataFrame({"x": [1, 2]})

    def build(m: Any) -> dict[str, Any]:
        return {"t": m.lit(dt.datetime(2001, 2, 3, 4), dtype=pl.Datetime("us", "Asia/Tokyo")),
                "d": m.lit(dt.date(2001, 2, 3), dtype=pl.Datetime("ms", "Europe/Paris"))}

    assert_frame_equal(df.gpu.with_columns(**build(cb)).compute(), df.with_columns(**build(pl)))


def test_a_timedelta_beyond_microseconds_is_in_milliseconds() -> None:
    # as polars types it; it overflowed int64 in the kernel's arguments (an OverflowError)
    df = pl.DataFrame({"u": [dt.timedelta(1), None]})
    far = dt.timedelta(days=200_000_000)
    _same(df, lambda m: {"a": m.lit(dt.timedelta(days=999_999_999)), "b": m.col("u") < far,
                         "c": m.col("u") + far})  # fmt: skip


def test_durations_against_a_literal_of_a_coarser_unit_as_polars(tier: str) -> None:
    # polars floors a duration column to a literal's coarser unit in a comparison (and
    # truncates it to another column's): -1 ns was read as 0 us, so `< timedelta(0)` failed
    import pyarrow as pa

    df = pl.from_arrow(pa.table({
        "du": pa.array([1, 500, -1, -1500, -1000, None], pa.duration("ns")),
        "z": pa.array([0, 0, -1, -1, -1, 0], pa.duration("us")),
    }))  # fmt: skip
    assert isinstance(df, pl.DataFrame)
    minus, zero = dt.timedelta(microseconds=-1), dt.timedelta(0)
    _same(df, lambda m: {
        "a": m.col("du") < zero, "b": m.col("du") == minus, "c": minus >= m.col("du"),
        "d": m.col("du") == m.col("z"), "e": m.col("du") < m.col("z"),
        "f": m.col("du").is_between(minus, zero),
    })  # fmt: skip
