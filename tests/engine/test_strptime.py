"""``str.strptime`` against polars: polars' spelling of `to_date` and `to_datetime`.

Generated strings hold valid and invalid dates and times, nulls and empty strings;
each target type (``pl.Date``, ``pl.Datetime`` with and without a unit, UTC) and
``strict`` both ways; where polars raises, colbridge raises too. Nanosecond
datetimes are drawn within their range (1678-2261): past it polars wraps the
value around, where colbridge counts it as a value that does not convert.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import UnsupportedOperationError
from colbridge.testing.asserts import assert_same_as_polars


def _day(first_year: int) -> st.SearchStrategy[str]:
    # months up to 13 and days up to 31 in every month: invalid dates too
    return st.builds(lambda y, m, d: f"{y:04d}-{m:02d}-{d:02d}", st.integers(first_year, 2200),
                     st.integers(1, 13), st.integers(1, 31))  # fmt: skip


_TIME = st.builds(lambda h, m, s, f: f"{h:02d}:{m:02d}:{s:02d}{f}", st.integers(0, 24),
                  st.integers(0, 59), st.integers(0, 59),
                  st.sampled_from(["", ".5", ".123456", ".123456789"]))  # fmt: skip


def _texts(kind: str, first_year: int) -> st.SearchStrategy[list[str | None]]:
    day = _day(first_year)
    value = day if kind == "date" else st.builds(lambda d, t: f"{d} {t}", day, _TIME)
    return st.lists(st.one_of(value, st.none(), st.sampled_from(["", "x", "2024-02-30"])),
                    max_size=12)  # fmt: skip


def _dtype(name: str) -> Any:
    import polars as pl

    return {"date": pl.Date, "datetime": pl.Datetime, "datetime_ms": pl.Datetime("ms"),
            "datetime_ns_utc": pl.Datetime("ns", "UTC")}[name]  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(data=st.data(), target=st.sampled_from(["date", "datetime", "datetime_ms",
                                               "datetime_ns_utc"]),
       strict=st.booleans(), with_format=st.booleans())  # fmt: skip
def test_strptime_as_polars(data: st.DataObject, target: str, strict: bool,
                            with_format: bool) -> None:  # fmt: skip
    kind = "date" if target == "date" else "datetime"
    texts = data.draw(_texts(kind, 1700 if target.endswith("utc") else 1))
    table = pa.table({"s": pa.array(texts, pa.string())})
    fmt = ("%Y-%m-%d" if kind == "date" else "%Y-%m-%d %H:%M:%S%.f") if with_format else None

    def steps(m: Any, q: Any) -> Any:
        return q.select(m.col("s").str.strptime(_dtype(target), fmt, strict=strict))

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow", "pandas"))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"exact": False}, "exact=False"),
    ({"ambiguous": "earliest"}, "ambiguous='earliest'"),
    ({"strict": "yes"}, "True or False"),
])  # fmt: skip
def test_options_not_built_are_refused_by_name(kwargs: dict[str, Any], match: str) -> None:
    import polars as pl

    with pytest.raises(cb.ColbridgeError, match=match):
        cb.col("s").str.strptime(pl.Date, "%Y-%m-%d", **kwargs)


def test_other_types_are_refused_by_name() -> None:
    import polars as pl

    with pytest.raises(UnsupportedOperationError, match=r"pl.Time.*here; other types are not "
                                                        r"supported.*cast\(Int64\)"):
        cb.col("s").str.strptime(pl.Int64, "%H:%M")


def test_a_time_is_to_time() -> None:
    import polars as pl

    assert repr(cb.col("s").str.strptime(pl.Time, "%H:%M", strict=False)) == repr(
        cb.col("s").str.to_time("%H:%M", strict=False))
