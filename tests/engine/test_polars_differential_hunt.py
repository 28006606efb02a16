"""Expressions on generated frames against polars: cases a differential hunt found wrong."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pandas as pd
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb


def _string_exprs(m: Any) -> dict[str, Any]:
    s = m.col("s")
    return {"n": s.str.len_chars(), "eq": s == "a", "up": s.str.to_uppercase(),
            "mx": s.max(), "f": s.first().over("g"), "null": s.is_null()}  # fmt: skip


@settings(deadline=None, max_examples=40)  # each example compiles its kernels
@given(values=st.lists(st.one_of(st.none(), st.sampled_from(["a", "", "ß", "日本"])),
                       max_size=6))  # fmt: skip
def test_a_pandas_object_column_of_strings_or_nothing(values: list[str | None]) -> None:
    # an object column with no string in it (empty, or every value None) has no type
    # to infer: it was refused as "Python objects", where polars' from_pandas reads a
    # String column, so a plan that ran on a batch failed on its empty or missing slice
    pdf = pd.DataFrame({"s": pd.Series(values, dtype=object), "g": range(len(values))})
    got = pdf.gpu.select(**_string_exprs(cb)).compute()
    want = pl.from_pandas(pdf).select(**_string_exprs(pl))
    assert_frame_equal(pl.from_pandas(got), want, check_dtypes=False)
    keys = pdf.gpu.group_by("s").agg(n=cb.len()).compute()
    want_keys = pl.from_pandas(pdf).group_by("s", maintain_order=True).agg(n=pl.len())
    assert_frame_equal(pl.from_pandas(keys), want_keys, check_dtypes=False)


@pytest.mark.parametrize("rows", [1, 3])
def test_an_object_column_of_missing_values_is_not_a_string_column(rows: int) -> None:
    # only None is a missing string: an object column of NaN is not a string column
    # (polars reads it as Null, and refuses string functions on it), nor is it here
    pdf = pd.DataFrame({"s": pd.Series([float("nan")] * rows, dtype=object)})
    with pytest.raises(pl.exceptions.SchemaError):
        pl.from_pandas(pdf).select(n=pl.col("s").str.len_chars())
    with pytest.raises(cb.ColbridgeError, match=r"needs a String, got null"):
        pdf.gpu.select(n=cb.col("s").str.len_chars()).compute()


def _parsed(df: pl.DataFrame, fmt: str) -> None:
    for kind in ("to_date", "to_datetime"):
        got = df.gpu.select(x=getattr(cb.col("s").str, kind)(fmt, strict=False)).compute()
        assert_frame_equal(got, df.select(x=getattr(pl.col("s").str, kind)(fmt, strict=False)))


_DAYS = st.dates(min_value=dt.date(1600, 1, 1), max_value=dt.date(2400, 12, 31))


@settings(deadline=None, max_examples=30)
@given(days=st.lists(_DAYS, min_size=1, max_size=8), shift=st.integers(0, 6),
       ordinal=st.integers(0, 2))  # fmt: skip
def test_a_weekday_or_day_of_the_year_must_agree_with_the_date(
    days: list[dt.date], shift: int, ordinal: int
) -> None:
    # Python's strptime ignored a weekday that is not the date's and rolled day 366 of a
    # common year into the next year; chrono (polars) finds no date in either
    names = [(d + dt.timedelta(days=shift)).strftime("%a") + d.strftime(" %Y-%m-%d")
             for d in days]  # fmt: skip
    full = [(d + dt.timedelta(days=shift)).strftime("%A") + d.strftime(" %d %b %Y") for d in days]
    julian = [d.strftime("%Y-") + f"{d.timetuple().tm_yday + ordinal:03d}" for d in days]
    _parsed(pl.DataFrame({"s": [*names, None]}), "%a %Y-%m-%d")
    _parsed(pl.DataFrame({"s": [*full, None]}), "%A %d %B %Y")  # %B reads "Jan" too
    _parsed(pl.DataFrame({"s": [*julian, "2021-366", "2020-366", None]}), "%Y-%j")


@pytest.mark.parametrize("fmt", ["%Y-%m-%d %H:%M:%S", "%d/%m/%Y %H:%M:%S%.f", "%F %T%.3f"])
def test_a_leap_second_as_polars_reads_it(fmt: str) -> None:
    # chrono reads second 60 (a datetime: the next minute's first second, a date: its
    # own day) and not 61, which Python's strptime reads; second 60 was null
    stamps = [dt.datetime(2020, 12, 31, 23, 59), dt.datetime(2016, 6, 30, 10, 11),
              dt.datetime(1969, 12, 31, 23, 59)]  # fmt: skip
    texts = [t.strftime(fmt.replace("%.f", "").replace("%.3f", "")) for t in stamps]
    texts = [t[: t.rindex(":") + 1] + sec + ("" if "%." not in fmt else frac)
             for t in texts for sec in ("59", "60", "61") for frac in ("", ".5")]  # fmt: skip
    _parsed(pl.DataFrame({"s": [*texts, None]}), fmt)


@pytest.mark.parametrize("spec", ["%s", "%k", "%C", "%P"])
def test_a_specifier_python_cannot_read_is_refused_not_null(spec: str) -> None:
    # strptime rejected each value, so every row was null where polars parses them
    df = pl.DataFrame({"s": ["0", None]})
    with pytest.raises(cb.ColbridgeError, match=f"specifier {spec} is not supported"):
        df.gpu.select(cb.col("s").str.to_datetime(f"%Y {spec}", strict=False)).compute()
