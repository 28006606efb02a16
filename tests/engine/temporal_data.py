"""Generated dates, datetimes, durations, times and strings for the engine's differential tests.

Values mix the edges polars' calendar code has to get right (leap days of 1900,
2000, 2100, 1600; year boundaries; before 1970; far future; the offset changes
of time zones, a unit either side) with uniform random values, nulls at a drawn
density, tables sliced at offsets that are not a multiple of 8, and sometimes
split into chunks.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

from colbridge.types.timezones import transitions

ZONES = ["UTC", "Europe/London", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]
UNITS = ["ns", "us", "ms"]
PER_SECOND = {"ns": 10**9, "us": 10**6, "ms": 10**3}

_EDGE_DATES = [
    dt.date(1600, 2, 29), dt.date(1900, 2, 28), dt.date(1900, 3, 1), dt.date(2000, 2, 29),
    dt.date(2000, 3, 1), dt.date(2004, 12, 31), dt.date(2005, 1, 1), dt.date(2100, 2, 28),
    dt.date(2100, 3, 1), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(1970, 1, 4),
    dt.date(2020, 12, 28), dt.date(2021, 1, 3), dt.date(2026, 1, 1), dt.date(1999, 1, 1),
    dt.date(2009, 12, 31), dt.date(2010, 1, 3), dt.date(1904, 1, 4), dt.date(1800, 7, 1),
]  # fmt: skip
# years each unit can hold (ns: 1678 to 2262)
_YEARS = {"ns": (1680, 2260), "us": (1, 9999), "ms": (1, 9999), "d": (1, 9999)}


def _days(d: dt.date) -> int:
    return (d - dt.date(1970, 1, 1)).days


def datetime_values(rng: np.random.Generator, n: int, unit: str, tz: str | None) -> np.ndarray:
    """Datetimes as integers of ``unit`` since the epoch (UTC for a zoned column)."""
    per_second = PER_SECOND[unit]
    per_day = 86_400 * per_second
    lo_year, hi_year = _YEARS[unit]
    lo = _days(dt.date(lo_year, 1, 1)) * per_day
    hi = _days(dt.date(hi_year, 1, 1)) * per_day
    uniform = rng.integers(lo, hi, size=n, dtype=np.int64)
    recent = rng.integers(_days(dt.date(1950, 1, 1)) * per_day, _days(dt.date(2060, 1, 1))
                          * per_day, size=n, dtype=np.int64)  # fmt: skip
    edges = [_days(d) * per_day for d in _EDGE_DATES if lo_year <= d.year < hi_year]
    edges += [e + s for e in list(edges) for s in (-1, 1, per_day - 1)]
    if tz is not None and tz != "UTC":
        for when in transitions(tz)[0][1:]:
            if -2_000_000_000 < when < 4_000_000_000:
                base = when * per_second
                edges += [base - per_second * 3600, base - 1, base, base + 1,
                          base + per_second * 1800]  # fmt: skip
    pick = rng.random(n)
    edge = rng.choice(np.array(edges, dtype=np.int64), size=n)
    values = np.where(pick < 0.35, uniform, np.where(pick < 0.7, recent, edge))
    return values.astype(np.int64)


def date_values(rng: np.random.Generator, n: int) -> np.ndarray:
    """Days since the epoch, over years 1 to 9999 with calendar edges."""
    uniform = rng.integers(_days(dt.date(1, 1, 1)), _days(dt.date(9999, 12, 31)), size=n)
    recent = rng.integers(_days(dt.date(1890, 1, 1)), _days(dt.date(2110, 1, 1)), size=n)
    edge = rng.choice(np.array([_days(d) for d in _EDGE_DATES]), size=n)
    pick = rng.random(n)
    return np.where(pick < 0.3, uniform, np.where(pick < 0.7, recent, edge)).astype(np.int32)


def duration_values(rng: np.random.Generator, n: int, unit: str) -> np.ndarray:
    """Durations of either sign, from a unit to a few thousand days."""
    per_second = PER_SECOND[unit]
    big = rng.integers(-3000 * 86_400 * per_second, 3000 * 86_400 * per_second, size=n)
    small = rng.integers(-5 * per_second, 5 * per_second, size=n)
    hours = rng.integers(-100, 100, size=n) * 3600 * per_second
    pick = rng.random(n)
    return np.where(pick < 0.4, big, np.where(pick < 0.7, small, hours)).astype(np.int64)


def time_values(rng: np.random.Generator, n: int) -> np.ndarray:
    """Nanoseconds since midnight."""
    values = rng.integers(0, 86_400 * 10**9, size=n, dtype=np.int64)
    edges = np.array([0, 1, 86_400 * 10**9 - 1, 12 * 3600 * 10**9], dtype=np.int64)
    return np.where(rng.random(n) < 0.1, rng.choice(edges, size=n), values)


def temporal_column(rng: np.random.Generator, kind: pa.DataType, n: int,
                    density: float) -> pa.Array:  # fmt: skip
    """A column of an Arrow temporal type with nulls at ``density``."""
    if pa.types.is_timestamp(kind):
        values = datetime_values(rng, n, kind.unit, kind.tz)
    elif pa.types.is_date32(kind):
        values = date_values(rng, n)
    elif pa.types.is_duration(kind):
        values = duration_values(rng, n, kind.unit)
    else:
        values = time_values(rng, n)
    mask = rng.random(n) < density if density > 0 else None
    storage = pa.array(values, type=pa.int32() if pa.types.is_date32(kind) else pa.int64(),
                       mask=mask)  # fmt: skip
    return storage.view(kind)


WORDS = ["", "a", "b", "UA", "AA", "DL", "JFK", "LGA", "EWR", "é", "Ünïcödé", "日本", "a b",
         "ab", "abc", "B", "z", "10", "-7", "+3", "1e3", "2.5", "12345678901234567890", "x1",
         "2020-01-05", "1999-12-31", "2020-02-30", " 4"]  # fmt: skip


def string_column(rng: np.random.Generator, n: int, density: float, distinct: int) -> pa.Array:
    """Strings from a fixed list (empty, non-ASCII, numbers, dates) or many random ones."""
    if distinct <= len(WORDS):
        pool = WORDS[:distinct] if distinct else WORDS
        values = [pool[i] for i in rng.integers(0, len(pool), size=n)]
    else:
        values = [f"s{int(i)}é" if i % 3 else str(int(i)) for i in rng.integers(0, distinct, n)]
    mask = rng.random(n) < density if density > 0 else None
    return pa.array(values, type=pa.string(), mask=mask)


@st.composite
def temporal_tables(
    draw: st.DrawFn, types: Sequence[pa.DataType], names: Sequence[str] = ("a", "b", "c"),
    *, strings: Sequence[str] = (), max_rows: int = 60, chunks: bool = True,
) -> pa.Table:  # fmt: skip
    """A table of temporal columns (``types``) and string columns (``strings``).

    Often sliced at an offset that is not a multiple of 8, often with nulls, sometimes
    in two chunks; lengths include 0, 1 and sizes that are not multiples of 8.
    """
    n = draw(st.sampled_from([0, 1, 7, 9, 33, max_rows]))
    offset = draw(st.sampled_from([0, 0, 3, 13]))
    seed = draw(st.integers(0, 2**32 - 1))
    density = draw(st.sampled_from([0.0, 0.0, 0.25, 1.0]))
    distinct = draw(st.sampled_from([0, 3, 1000]))
    rng = np.random.default_rng(seed)
    columns = {}
    for name, kind in zip(names, types, strict=False):
        col_density = density if draw(st.booleans()) else 0.0
        columns[name] = temporal_column(rng, kind, n + offset, col_density)
    for name in strings:
        col_density = density if draw(st.booleans()) else 0.0
        columns[name] = string_column(rng, n + offset, col_density, distinct)
    table = pa.table(columns).slice(offset, n)
    if chunks and n > 2 and draw(st.booleans()):
        cut = draw(st.integers(1, n - 1))
        table = pa.concat_tables([table.slice(0, cut), table.slice(cut)])
    return table
