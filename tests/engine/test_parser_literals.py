"""The string language with strings, dates and temporal functions, against polars."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pyarrow as pa
import pytest

import colbridge as cb

TABLE = pa.table({
    "carrier": ["UA", "AA", None, "UA", "DL"],
    "origin": ["JFK", "EWR", "LGA", "LGA", "JFK"],
    "time_hour": pa.array([dt.datetime(2013, 6, 1, 5), dt.datetime(2013, 5, 31, 23), None,
                           dt.datetime(2013, 12, 31, 13), dt.datetime(2014, 1, 1)]),
})  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("carrier == 'UA'", pl.col("carrier") == "UA"),
        ("carrier != \"AA\"", pl.col("carrier") != "AA"),
        ("hour(time_hour)", pl.col("time_hour").dt.hour()),
        ("time_hour.dt.weekday()", pl.col("time_hour").dt.weekday()),
        ("time_hour >= datetime('2013-06-01')", pl.col("time_hour") >= dt.datetime(2013, 6, 1)),
        ("time_hour.dt.date() < date('2013-06-01')",
         pl.col("time_hour").dt.date() < dt.date(2013, 6, 1)),
        ("origin in ('JFK', 'LGA')", pl.col("origin").is_in(["JFK", "LGA"])),
        ("origin not in ['JFK']", ~pl.col("origin").is_in(["JFK"])),
        ("starts_with(origin, 'J') & (month(time_hour) > 5)",
         pl.col("origin").str.starts_with("J") & (pl.col("time_hour").dt.month() > 5)),
        ("len_chars(carrier) + year(time_hour)",
         pl.col("carrier").str.len_chars() + pl.col("time_hour").dt.year()),
        ("time_hour.dt.truncate('1d')", pl.col("time_hour").dt.truncate("1d")),
        ("cast(time_hour, 'date')", pl.col("time_hour").cast(pl.Date)),
    ],
)  # fmt: skip
def test_parsed_expressions_match_polars(text: str, expected: pl.Expr) -> None:
    got = cb.lazy(TABLE).eval(f"x = {text}").compute().column("x")
    want = pl.from_arrow(TABLE).select(x=expected).to_arrow().column("x")
    assert pl.Series(got).to_list() == pl.Series(want).to_list()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("time_hour.year()", r"only plain function names can be called, and the methods"),
        ("time_hour.dt.__class__()", "unknown method `dt.__class__`"),
        ("time_hour.dt.hour(x=1)", r"`dt.hour\(\)`: got an unexpected keyword argument .x."),
        ("datetime('2013-13-01')", "not an ISO datetime"),
        ("carrier in col('origin')", "`in` takes a tuple or list"),
        ("carrier in (origin,)", "`in` takes constants only"),
        ("carrier.str.starts_with(origin)", "must be constants"),
    ],
)
def test_parser_refuses_with_pointers(text: str, match: str) -> None:
    with pytest.raises(cb.ExpressionSyntaxError, match=match):
        cb.lazy(TABLE).eval(f"x = {text}").compute()
