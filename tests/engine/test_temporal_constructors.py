"""``cb.date``, ``cb.datetime``, ``cb.time`` and ``dt.replace`` against polars.

Compared exactly with polars: parts as columns (nulls, values past their cast
types, floats, strings that parse and some that do not) and as numbers; every
unit, time zones with their ambiguous and missing wall times; leap seconds as
chrono counts them; invalid parts fail where polars fails (a ComputeError there,
`InvalidOperationError` here); replaced parts of dates, naive and zoned datetimes,
a null part keeping the value's own; the three frame kinds, the string language
and the CUDA code path.
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
from colbridge.errors import ColbridgeError, InvalidOperationError, SchemaError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host


def _parts(n: int, seed: int, *, invalid: float) -> pa.Table:
    """Columns of date and time parts; ``invalid`` of the rows out of range somewhere."""
    rng = np.random.default_rng(seed)

    def spoil(values: np.ndarray, bad: list[int]) -> np.ndarray:
        return np.where(rng.random(n) < invalid, rng.choice(bad, n), values)

    def mask() -> np.ndarray:
        return rng.random(n) < 0.1

    return pa.table({
        "y": pa.array(spoil(rng.choice([1, 1699, 1900, 1970, 2000, 2023, 2024, 2200], n),
                            [-262_144, 300_000, 2**40]), mask=mask()),
        "m": pa.array(spoil(rng.integers(1, 13, n), [0, 13, 300, -1]), mask=mask()),
        "d": pa.array(spoil(rng.integers(1, 29, n), [0, 31, 32]), mask=mask()),
        "h": pa.array(spoil(rng.integers(0, 24, n), [24, -1]).astype(np.int16), mask=mask()),
        "mi": pa.array(rng.integers(0, 60, n).astype(np.int8), mask=mask()),
        "s": pa.array(spoil(rng.integers(0, 60, n), [60, 59]).astype(np.uint8), mask=mask()),
        "us": pa.array(spoil(rng.integers(0, 10**6, n), [1_500_000, 3_000_000, -1]),
                       mask=mask()),
        "f": pa.array(rng.uniform(1, 12.99, n), mask=mask()),
        "ys": pa.array(rng.choice(["2024", "1999", "x"], n), mask=mask()),
    })  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 7, 120]),
    seed=st.integers(0, 2**31 - 1),
    invalid=st.sampled_from([0.0, 0.0, 0.02]),
    unit=st.sampled_from(["us", "ms"]),
    zone=st.sampled_from([None, None, "Europe/Paris", "America/New_York"]),
)
def test_constructors_equal_polars(n: int, seed: int, invalid: float, unit: str,
                                   zone: str | None) -> None:  # fmt: skip
    table = _parts(n, seed, invalid=invalid)

    def steps(m: Any, q: Any) -> Any:
        return q.select(
            t=m.datetime("y", "m", "d", "h", "mi", "s", "us", time_unit=unit, time_zone=zone,
                         ambiguous="earliest"),
            d=m.date("y", "m", "d"),
            c=m.time("h", "mi", "s", "us"),
            f=m.date(2024, "f", m.col("d") % 28 + 1),
        )

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_nanoseconds_within_their_range() -> None:
    # polars panics past Datetime('ns')'s range; colbridge fails by name there
    table = pa.table({"y": [1677, 1700, 2262, 2024], "us": [145225, 0, 854775, 999999]})
    low, high = (1677, 9, 21, 0, 12, 43), (2262, 4, 11, 23, 47, 16)

    def steps(m: Any, q: Any) -> Any:
        return q.select(a=m.datetime(m.col("y").clip(1678, 2261), 1, 2, 3, time_unit="ns"),
                        lo=m.datetime(*low, m.col("us") * 0 + 145225, time_unit="ns"),
                        hi=m.datetime(*high, m.col("us") * 0 + 854775, time_unit="ns"))

    assert_same_as_polars(table, steps)
    past = pl.DataFrame({"y": [2263]}).gpu.select(cb.datetime("y", 1, 1, time_unit="ns"))
    with pytest.raises(InvalidOperationError, match=r"outside Datetime\('ns'\)'s range"):
        past.compute()


def test_parts_cast_as_polars_casts_them() -> None:
    table = pa.table({
        "f": [2.7, 11.2, None], "s": ["2024", "x", "1999"], "big": [300, 2, 5],
        "b": [True, False, True], "leap": [1_500_000, 999_999, 1_999_999],
    })  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        return q.select(
            floats=m.date(2024, "f", 1),  # truncated
            strings=m.date("s", 1, 1),  # parsed, or null
            too_big=m.date(2024, "big", 1),  # past Int8: null
            booleans=m.date(2024, "b", 1).is_null(),
            # a leap second: nanoseconds past 1e9 only in second 59, counted forward
            leap=m.datetime(2024, 12, 31, 23, 59, 59, "leap"),
            time_leap=m.time(10, 5, 59, "leap"),
            # polars folds Python integers alone with chrono's `with_nanosecond`, which
            # takes a leap second's nanoseconds in any second
            folded=m.datetime(2024, 1, 1, 10, 5, 58, 1_500_000),
            folded_time=m.time(1, 2, 3, 1_999_999),
        )

    assert_same_as_polars(table, steps)


@pytest.mark.parametrize("build", [
    lambda m: m.date(2023, 2, 29), lambda m: m.datetime(2024, 1, 1, 24),
    lambda m: m.datetime(2024, 1, 1, 10, 5, m.col("x") * 0 + 58, 1_500_000),
    lambda m: m.time(1, 2, 3, -1),
    lambda m: m.date(m.col("x") * 0 + 300_000, 1, 1), lambda m: m.date(2024, 0, 1),
])  # fmt: skip
def test_invalid_parts_fail_as_in_polars(build: Any) -> None:
    df = pl.DataFrame({"x": [1, 2]})
    with pytest.raises(pl.exceptions.ComputeError):
        df.select(build(pl))
    with pytest.raises(InvalidOperationError, match=r"invalid date or time components .* "
                       r"check the parts, or null them where they are invalid"):  # fmt: skip
        df.gpu.select(build(cb)).compute()


def _values(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    micros = rng.integers(-(10**15), 3 * 10**15, n)
    table = pa.table({
        "t": pa.array(micros, mask=rng.random(n) < 0.1).cast(pa.timestamp("us")),
        "y": pa.array(rng.integers(1990, 2040, n), mask=rng.random(n) < 0.2),
        "m": pa.array(rng.integers(1, 13, n), mask=rng.random(n) < 0.2),
        "d": pa.array(rng.integers(1, 29, n).astype(np.int8), mask=rng.random(n) < 0.2),
        "h": pa.array(rng.integers(0, 24, n), mask=rng.random(n) < 0.2),
        "us": pa.array(rng.integers(0, 10**6, n), mask=rng.random(n) < 0.2),
    })  # fmt: skip
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame.with_columns(
        day=pl.col("t").dt.date(),
        ms=pl.col("t").dt.cast_time_unit("ms"),
        paris=pl.col("t").dt.replace_time_zone("Europe/Paris", ambiguous="earliest",
                                               non_existent="null"),
    ).to_arrow()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 9, 150]),
    seed=st.integers(0, 2**31 - 1),
    # a few shapes (each compiles its kernels once), the data drawn anew for each
    parts=st.sampled_from([
        {"year": "y", "month": "m", "day": "d"}, {"day": 1, "hour": 0, "microsecond": "us"},
        {"month": "m", "minute": "h", "second": 30}, {"year": 2001},
        {"hour": "h", "microsecond": 0}, {"day": "d", "second": "us", "month": 1},
    ]),
)
def test_replace_equals_polars(n: int, seed: int, parts: dict[str, Any]) -> None:
    table = _values(n, seed)
    fits = {"minute": 59, "second": 59}  # (the columns are in range for the other parts)

    def steps(m: Any, q: Any) -> Any:
        given = {k: (m.col(v) % (fits[k] + 1) if k in fits else m.col(v))
                 if isinstance(v, str) else v for k, v in parts.items()}  # fmt: skip
        # a date keeps a valid day: the 1st-28th; a value past the month's end fails
        if "day" in given and not isinstance(given["day"], int):
            given["day"] = m.col("d").clip(1, 28)
        return q.select(
            day=m.col("day").dt.replace(**{k: v for k, v in given.items()
                                           if k in ("year", "month", "day")}),
            t=m.col("t").dt.replace(**given),
            ms=m.col("ms").dt.replace(**given),
            paris=m.col("paris").dt.replace(**given, ambiguous="earliest"),
        )

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_replace_of_an_invalid_day_fails_and_a_time_is_refused() -> None:
    df = pl.DataFrame({"d": [dt.date(2024, 1, 31), dt.date(2024, 3, 31)],
                       "c": [dt.time(1), dt.time(2)]})  # fmt: skip
    replaced = r'`col\("d"\)\.dt\.replace\(month=lit\(2\)\)`: '
    with pytest.raises(InvalidOperationError, match=replaced + "invalid date or time components"):
        df.gpu.select(cb.col("d").dt.replace(month=2)).compute()
    with pytest.raises(SchemaError, match=r"needs a Date or a Datetime, got time"):
        df.gpu.select(cb.col("c").dt.replace(hour=3)).compute()
    with pytest.raises(ColbridgeError, match=r"strict cast to int8 failed"):
        df.gpu.select(cb.col("d").dt.replace(month=300)).compute()


@pytest.mark.parametrize("unit", ["ns", "us", "ms"])
def test_combine_equals_polars(unit: str) -> None:
    rng = np.random.default_rng(6)
    n = 400
    table = _values(n, 6).append_column(
        "c", pa.array(rng.integers(5, 20, n) * 3_600 * 10**9 + rng.integers(0, 3_600 * 10**9, n),
                      mask=rng.random(n) < 0.1).cast(pa.time64("ns")))  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        return q.select(
            t=m.col("t").dt.combine(m.col("c"), unit),
            day=m.col("day").dt.combine(m.col("c"), unit),
            ms=m.col("ms").dt.combine(dt.time(23, 59, 59, 999_999), unit),
            # a zoned value: its UTC date (polars' cast), the zone put back on the wall time
            paris=m.col("paris").dt.combine(m.col("c"), unit),
        )

    assert_same_as_polars(table, steps)


def test_combine_refusals() -> None:
    df = pl.DataFrame({"d": [dt.date(2024, 1, 1)], "n": [3], "c": [dt.time(1)]})
    with pytest.raises(SchemaError, match=r"`dt.combine\(3\)`: expected a Time expression or"):
        cb.col("d").dt.combine(3)
    with pytest.raises(SchemaError, match=r"`dt.combine\(time_unit='s'\)`"):
        cb.col("d").dt.combine(dt.time(1), "s")
    with pytest.raises(SchemaError, match=r"needs a Time, got"):
        df.gpu.select(cb.col("d").dt.combine(cb.col("n"))).compute()
    with pytest.raises(SchemaError, match=r"needs a Date or a Datetime, got time"):
        df.gpu.select(cb.col("c").dt.combine(cb.col("c"))).compute()


def test_the_string_language() -> None:
    df = pl.DataFrame({"y": [2024, 2023], "m": [2, 3], "h": [5, 6],
                       "t": [dt.datetime(2024, 1, 31, 5), dt.datetime(2023, 5, 6)]})
    got = cb.lazy(df).eval(
        "a = date(y, m, 1)\nb = datetime(y, m, 28, h, 30, time_unit='ms')\nc = time(h, 15)\n"
        "d = date('2024-01-15')\ne = t.dt.replace(day=1, hour='h')\n"
        "f = datetime(2024, 1, 1, time_zone='Europe/Paris')\n"
        "g = datetime(2024, 1, 1, 10, 5, 58, 1500000)").compute()
    want = df.with_columns(
        a=pl.date("y", "m", 1), b=pl.datetime("y", "m", 28, "h", 30, time_unit="ms"),
        c=pl.time("h", 15), d=pl.lit(dt.date(2024, 1, 15)),
        e=pl.col("t").dt.replace(day=1, hour="h"),
        f=pl.datetime(2024, 1, 1, time_zone="Europe/Paris"),
        g=pl.datetime(2024, 1, 1, 10, 5, 58, 1_500_000))  # fmt: skip
    assert got.equals(want)


def test_the_string_language_takes_expressions_where_the_api_does() -> None:
    df = pl.DataFrame({"d": [dt.date(2024, 3, 8), None, dt.date(2023, 1, 31)],
                       "t": [dt.time(14, 30), dt.time(1, 2), None], "n": [1, 2, -3],
                       "day": [5, 6, 28]})  # fmt: skip
    got = cb.lazy(df).eval(
        "a = d.dt.combine(t)\nb = d.dt.add_business_days(-n)\nc = d.dt.replace(day=day)\n"
        "e = d.dt.combine(time(10, 5), 'ms')\nf = d.dt.replace(month=n % 12 + 1, day=2)"
    ).compute()
    want = df.with_columns(
        a=pl.col("d").dt.combine(pl.col("t")), b=pl.col("d").dt.add_business_days(-pl.col("n")),
        c=pl.col("d").dt.replace(day=pl.col("day")),
        e=pl.col("d").dt.combine(dt.time(10, 5), "ms"),
        f=pl.col("d").dt.replace(month=pl.col("n") % 12 + 1, day=2))  # fmt: skip
    assert got.equals(want)
    # the other parameters stay constants, as in the Python API
    for text in ("d.dt.truncate(n)", "d.dt.combine(t, n)", "d.dt.replace(day=day, ambiguous=n)"):
        with pytest.raises(cb.ExpressionSyntaxError, match=r"arguments must be constants"):
            cb.lazy(df).eval(f"z = {text}")


def test_bad_settings_are_refused_when_written() -> None:
    with pytest.raises(SchemaError, match=r"`datetime\(time_unit='s'\)`: use 'ns', 'us' or"):
        cb.datetime(2024, 1, 1, time_unit="s")
    with pytest.raises(ColbridgeError, match=r"`dt.replace\(ambiguous=.*per-row expressions"):
        cb.col("t").dt.replace(day=1, ambiguous=cb.col("a"))  # type: ignore[arg-type]


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = _parts(400, 4, invalid=0.0)
    q = cb.lazy(table).select(t=cb.datetime("y", "m", "d", "h", "mi", "s", "us"),
                              d=cb.date("y", "m", "d").dt.replace(day=1),
                              c=cb.time("h", "mi"))  # fmt: skip
    on_host = compute_on_host(q)
    assert on_host.equals(q.compute(device="cpu"))
    want = pl.from_arrow(table).select(t=pl.datetime("y", "m", "d", "h", "mi", "s", "us"),
                                       d=pl.date("y", "m", "d").dt.replace(day=1),
                                       c=pl.time("h", "mi"))  # fmt: skip
    assert pl.from_arrow(on_host).equals(want)
