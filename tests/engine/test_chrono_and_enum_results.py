"""Dates read as chrono reads numbers, and polars' Enum mark on pyarrow results.

chrono reads ``%Y`` of 1 to 4 digits, or signed with any number, ``%y`` of one digit
and a number after spaces, where Python's ``strptime`` reads none of them; a pyarrow
result keeps the field metadata by which polars knows an Enum column (else it reads
an ordered dictionary back as a Categorical). Expected values are polars' own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

import colbridge as cb

pl = pytest.importorskip("polars")
from polars.testing import assert_frame_equal  # noqa: E402

#: texts polars (chrono) reads with each format, and some it does not
_TEXTS: dict[str, list[str | None]] = {
    "%d/%m/%Y": ["05/01/20", "05/01/2020", "05/01/2", "05/01/202", "05/01/20201",
                 "05/01/-20", "05/01/+20", "05/01/-0020", "05/01/+2020", "05/01/+20201",
                 "05/01/ 20", "05/01/0", "05/01/-0", "05/01/-", "05/01/+262142",
                 "05/01/+262143", "05/01/-262143", "05/01/-262144", "29/02/-4", "29/02/-1",
                 "29/02/20", "29/02/21", "5/1/20", None],
    "%Y-%m-%d": ["20-01-05", "2-1-5", "-20-01-05", "+2020-01-05", "12345-01-05",
                 "+12345-01-05", " 2020-01-05", "2020- 1-05", "2020-01- 5", "2020-001-05",
                 " -5-01-01", "- 5-01-01", "+-5-01-01", "20-02-30", "x"],
    "%y-%m-%d": ["5-01-05", " 5-01-05", "69-1-5", " 69-01-05", "9-1-5", "+5-01-05",
                 "005-01-05", "105-01-05"],
    "%d.%m.%y": ["5.1.5", " 5. 1. 5", "05.01.05", "5.13.5"],
    "%Y-%j": [" 20- 5", "-20-60", "20-366", "21-366", "2020-5"],
    "%a %d %b %Y": ["Sun 05 Jan 20", "Mon 05 Jan 20", "Sat 05 Jan -20", "Fri 05 Jan -20"],
    "%d %B %Y": ["5 Jan 20", "5 january -20", "5 JANUARY 20", "5 Janu 20"],
    "%G-W%V-%u": ["20-W01-1", "-20-W01-1", "21-W53-1", "20-W53-4", "2020-W1-1"],
    "%Y%%%m%%%d": ["20%1%5", "2020%01%05"],
}
#: datetimes: time fields after spaces, fractions, literals in their case
_DATETIMES: dict[str, list[str | None]] = {
    "%H:%M:%S %d-%m-%Y": ["1:2:3 5-1-20", " 1: 2: 3  5- 1- 20", "01:02:03 05-01-0020"],
    "%Y-%m-%d %H:%M:%S%.f": ["20-01-05 01:02:03.5", "-20-01-05 01:02:03.123456789",
                             "20-01-05 01:02:03", "+2020-01-05 01:02:03.25"],
    "%H:%M:%S%.f %Y-%m-%d": [" 1:2:3.5 20-01-05", "1:2:3.5 -20-01-05"],
    "%Y-%m-%dT%H:%M:%S": ["20-01-05T01:02:03", "20-01-05t01:02:03"],
}


def _days(texts: list[str | None], fmt: str, polars: bool, **options: Any) -> list[Any]:
    """The parsed values as integers (polars' negative years are no Python dates)."""
    if polars:
        series = pl.Series("s", texts, pl.String)
        parsed = series.str.to_datetime(fmt, **options) if "time_unit" in options \
            else series.str.to_date(fmt, **options)  # fmt: skip
        return list(parsed.to_physical().to_list())
    col = cb.col("s").str
    expr = col.to_datetime(fmt, **options) if "time_unit" in options \
        else col.to_date(fmt, **options)  # fmt: skip
    table = cb.lazy(pa.table({"s": pa.array(texts, pa.string())})).select(expr).compute()
    return list(pl.from_arrow(table).to_series().to_physical().to_list())


@pytest.mark.parametrize("fmt", list(_TEXTS))
def test_dates_read_as_chrono(fmt: str) -> None:
    texts = _TEXTS[fmt]
    assert _days(texts, fmt, False, strict=False) == _days(texts, fmt, True, strict=False)


@pytest.mark.parametrize("unit", ["ms", "us"])
@pytest.mark.parametrize("fmt", [*_DATETIMES, "%d/%m/%Y"])
def test_datetimes_read_as_chrono(fmt: str, unit: str) -> None:
    texts = _DATETIMES.get(fmt, _TEXTS["%d/%m/%Y"])
    want = _days(texts, fmt, True, strict=False, time_unit=unit)
    assert _days(texts, fmt, False, strict=False, time_unit=unit) == want


def test_short_years_parse_strictly() -> None:
    # every value parses: strict reading raises nowhere, as polars'
    texts: list[str | None] = ["05/01/20", "05/01/2020", "5/1/-44", None]
    want = _days(texts, "%d/%m/%Y", True)
    assert None not in want[:3]
    assert _days(texts, "%d/%m/%Y", False) == want


_FRAME = {"x": (["b", None, "a", "b"], ["b", "a", "c"]), "k": ([1, 2, 3, 4], None)}

Query = Callable[[Any, Any], Any]
_QUERIES: dict[str, Query] = {
    "with_columns": lambda m, q: q.with_columns(y=m.col("x").is_null()),
    "select": lambda m, q: q.select("x"),
    "renamed": lambda m, q: q.select(z=m.col("x")),
    "group_by": lambda m, q: q.group_by("x").agg(m.col("k").sum()),
    "key_and_first": lambda m, q: q.group_by("k").agg(m.col("x").first()),
    "filter": lambda m, q: q.filter(m.col("k") > 2),
    "filter_none": lambda m, q: q.filter(m.col("k") > 100),
    "filter_nulls": lambda m, q: q.filter(m.col("x").is_null()).select("x"),
    "bins": lambda m, q: q.select(b=m.col("k").bin_intervals([2, 3], labels=["lo", "mi", "hi"])),
}

_GROUPED = {"group_by": "x", "key_and_first": "k"}


def _enum_frame() -> Any:
    values, categories = _FRAME["x"]
    return pl.DataFrame({"x": pl.Series(values, dtype=pl.Enum(categories)),
                         "k": _FRAME["k"][0],
                         "c": pl.Series(["u", "v", None, "u"], dtype=pl.Categorical)})  # fmt: skip


def _compare(table: pa.Table, name: str) -> None:
    want = _QUERIES[name](pl, pl.from_arrow(table).lazy()).collect()
    result = _QUERIES[name](cb, cb.lazy(table)).compute()
    assert isinstance(result, pa.Table)
    got = pl.from_arrow(result)
    assert got.schema == want.schema
    if name in _GROUPED:  # groups come in no set order
        got, want = got.sort(_GROUPED[name]), want.sort(_GROUPED[name])
    assert_frame_equal(got, want, categorical_as_str=True)


@pytest.mark.parametrize("name", list(_QUERIES))
def test_enum_results_of_a_polars_table_stay_enums(name: str) -> None:
    _compare(_enum_frame().to_arrow(), name)


@pytest.mark.parametrize("name", ["with_columns", "group_by", "filter", "bins"])
def test_unmarked_ordered_dictionary_stays_categorical(name: str) -> None:
    # an ordered dictionary without polars' mark is a Categorical to polars: so it stays
    x = pa.DictionaryArray.from_arrays(pa.array([0, None, 1, 0], pa.int8()),
                                       pa.array(["b", "a", "c"]), ordered=True)  # fmt: skip
    table = pa.table({"x": x, "k": _FRAME["k"][0]})
    _compare(table, name)
