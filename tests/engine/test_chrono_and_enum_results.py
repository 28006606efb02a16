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
from hypothesis import given, settings
from hypothesis import strategies as st

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


# -- parsing without a format: polars infers one (polars-time/.../string/infer.rs) --------

#: polars' patterns (polars-time/src/chunkedarray/string/patterns.rs), written out here
#: apart from colbridge's copy: dates, then datetimes, then datetimes with an offset
_TIMES = ["T%H:%M:%S%.f", "T%H%M%S%.f", "T%H:%M", "T%H%M", " %H:%M:%S%.f", " %H%M%S%.f",
          " %H:%M", " %H%M"]  # fmt: skip
_POLARS_PATTERNS = [
    "%d-%m-%Y", "%d/%m/%Y", "%d.%m.%Y", "%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d",
    *[d + t for d in ("%d-%m-%Y", "%d/%m/%Y", "%d.%m.%Y", "%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d")
      for t in _TIMES],
    "%Y%m%dT%H%M%S%.f",
    *[d + t + "%#z" for d in ("%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d") for t in _TIMES],
    "%Y%m%dT%H%M%S%.f%#z", "%Y%m%dT%H%M%S%.fZ", "%+",
]  # fmt: skip

Parse = Callable[[Any], Any]
_PARSES: dict[str, Parse] = {
    "to_date": lambda m: m.col("s").str.to_date(strict=False),
    "to_date_strict": lambda m: m.col("s").str.to_date(),
    "strptime_date": lambda m: m.col("s").str.strptime(pl.Date, strict=False),
    "to_datetime": lambda m: m.col("s").str.to_datetime(strict=False),
    "to_datetime_strict": lambda m: m.col("s").str.to_datetime(),
    "to_datetime_ms_utc": lambda m: m.col("s").str.to_datetime(time_unit="ms", time_zone="UTC",
                                                               strict=False),
    "to_datetime_utc_strict": lambda m: m.col("s").str.to_datetime(time_zone="UTC"),
    "strptime_ns": lambda m: m.col("s").str.strptime(pl.Datetime("ns"), strict=False),
}  # fmt: skip


def _written(pattern: str, when: Any) -> str:
    """``when`` written with a chrono ``pattern`` (an offset of +01:00, microseconds)."""
    python = pattern.replace("%.f", ".%f").replace("%#z", "+01:00")
    return when.strftime(python.replace("%+", "%Y-%m-%dT%H:%M:%S.%f+01:00"))


def _outcome(texts: list[str | None], parse: Parse, lib: Any) -> Any:
    """What parsing ``texts`` gives: its type and stored integers, or the error's kind."""
    frame = pl.DataFrame({"s": texts}, schema={"s": pl.String})
    expr = parse(lib)
    refused = ""
    try:
        result = frame.select(expr) if lib is pl else frame.gpu.select(expr).compute()
    except cb.UnsupportedOperationError as exc:
        refused = str(exc)
    except (pl.exceptions.PolarsError, cb.ColbridgeError) as exc:
        return "error" if lib is pl or isinstance(exc, cb.ColbridgeError) else repr(exc)
    if refused:
        # colbridge's one refusal: a value polars reads or not as the rows before it go
        return "refused" if "depending on the rows before" in refused else refused
    series = result["s"]
    return str(series.dtype), series.to_physical().to_list()


class _Cast:
    """``lib`` whose ``col(name)`` is the column cast to a string first."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib

    def col(self, name: str) -> Any:
        return self.lib.col(name).cast(pl.String)


def _same_parse(texts: list[str | None], name: str) -> None:
    want = _outcome(texts, _PARSES[name], pl)
    got = _outcome(texts, _PARSES[name], cb)
    if name == "strptime_ns" and isinstance(want, tuple):
        # a datetime past nanoseconds' range (the year 24) does not parse in colbridge;
        # polars wraps it around (docs/temporal.md)
        micro = _outcome(texts, lambda m: m.col("s").str.strptime(pl.Datetime("us"),
                                                                  strict=False), pl)  # fmt: skip
        fits = [v is None or abs(v) < 2**63 // 1000 for v in micro[1]]
        want = (want[0], [v if ok else None for v, ok in zip(want[1], fits, strict=True)])
    assert got == want or got == "refused", (texts, name, want, got)


_INFERRED: dict[str, list[str | None]] = {
    "mixed_iso": ["2024-01-05", "20240105", "2024-01-05T10:00:00"],
    "compact_first": ["20240105", "2024-01-05"],
    "datetime_first": ["2024-01-05T10:00:00", "2024-01-06"],
    "unpadded": ["2024-02-29", "2024-1-5"],
    "first_null": [None, "2024-01-05", "2024/01/06", None],
    "all_null": [None, None],
    "empty": [],
    "no_pattern": ["x", None],
    "first_unreadable": ["x", "2024-01-05"],
    "day_first": ["05-01-2024", "2024-01-05", "05/01/2024", "5.1.2024 10:00"],
    "offsets": ["2024-01-05T10:00:00Z", "2024-01-05T10:00:00+01:00", "2024-01-05 10:00-0530",
                "2024-01-05T10:00:00", "2024-01-05T10:00:00 +01:00", "2024-01-05T10:00+24:00"],
    "offset_after_naive": ["2024-01-05T10:00:00", "2024-01-05T10:00:00Z"],
    "fractions": ["2024-01-05T10:00:00.123456789", "2024-01-05 10:00:00.1234567891",
                  "2024-01-05T10:00:00.5"],
    "leap_second": ["2024-01-05T10:00:60", "2024-01-05T10:00:59"],
    # read by the previous row's pattern only (polars' regex finds year 24 no date)
    "short_year_after_minutes": ["2024-01-05T10:00", "24-01-05T10:00"],
    "short_year_after_seconds": ["2024-01-05T10:00:00", "24-01-05T10:00"],
    "compact_iso": ["20240105T100000", "20240105T100000.5"],
    "numbers_not_split": ["2024-01-05T1000", "2024-01-05T123", "2024-01-05T12345"],
    "quoted": ["'2024-01-05T10:00'", "2024-01-05"],
    "month_13": ["2024-13-01", "2024-01-05"],
}  # fmt: skip


@pytest.mark.parametrize("name", list(_PARSES))
@pytest.mark.parametrize("case", list(_INFERRED))
def test_parsing_without_a_format_infers_as_polars(case: str, name: str) -> None:
    _same_parse(_INFERRED[case], name)


@pytest.mark.parametrize("name", ["to_date", "to_datetime", "to_datetime_ms_utc",
                                  "to_datetime_strict"])  # fmt: skip
@pytest.mark.parametrize("pattern", _POLARS_PATTERNS)
def test_each_of_polars_patterns_is_inferred(pattern: str, name: str) -> None:
    import datetime as dt

    when = dt.datetime(2024, 2, 29, 13, 4, 5, 250_000)
    text = _written(pattern, when)
    # alone, first among others of its kind and of other kinds, and after a null
    _same_parse([text], name)
    others = [_written(p, when - dt.timedelta(days=40)) for p in _POLARS_PATTERNS[::7]]
    _same_parse([None, text, *others, "x", None, text], name)
    _same_parse([*others[::-1], text], name)


def test_inference_follows_the_rows_not_the_dictionary() -> None:
    # a dictionary column's strings in another order than the rows': polars infers the
    # format from the first row (day first here), not from the dictionary's first string
    codes = pa.array([1, 0, 1, None], pa.int32())
    column = pa.DictionaryArray.from_arrays(codes, pa.array(["2024-01-05", "05-01-2024"]))
    table = pa.table({"s": column})
    for name in ("to_date", "to_datetime", "to_date_strict"):
        parse = _PARSES[name]
        try:
            want: Any = pl.from_arrow(table).select(parse(_Cast(pl)))["s"].to_list()
        except pl.exceptions.PolarsError:
            want = "error"
        try:
            got: Any = pl.from_arrow(cb.lazy(table).select(parse(_Cast(cb))).compute())
            got = got["s"].to_list()
        except cb.ColbridgeError:
            got = "error"
        assert got == want, name
    assert want == "error"  # strict: "2024-01-05" is no day-first date


def test_strict_inference_errors_are_colbridge_errors() -> None:
    frame = pl.DataFrame({"s": ["2024-01-05", "20240105"]})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        frame.select(pl.col("s").str.to_date())
    with pytest.raises(cb.InvalidOperationError, match="strict conversion of strings to date"):
        frame.gpu.select(cb.col("s").str.to_date()).compute()
    nothing = pl.DataFrame({"s": ["x"]})
    with pytest.raises(pl.exceptions.ComputeError, match="appropriate format"):
        nothing.select(pl.col("s").str.to_datetime())
    with pytest.raises(cb.InvalidOperationError, match="appropriate format"):
        nothing.gpu.select(cb.col("s").str.to_datetime()).compute()
    zoned = pl.DataFrame({"s": ["2024-01-05T10:00:00Z"]})
    with pytest.raises(pl.exceptions.ComputeError, match="no format and no time zone"):
        zoned.select(pl.col("s").str.to_datetime())
    with pytest.raises(cb.InvalidOperationError, match="no format and no time zone"):
        zoned.gpu.select(cb.col("s").str.to_datetime()).compute()


def test_a_value_read_as_the_rows_before_differ_is_refused() -> None:
    # "24-01-05T10:00" does not look like a date to polars: it reads it with the previous
    # row's pattern only, here once with it and once without
    texts = ["2024-01-05T10:00", "24-01-05T10:00", "2024-01-05T10:00:00", "24-01-05T10:00"]
    frame = pl.DataFrame({"s": texts})
    want = frame.select(pl.col("s").str.to_datetime(strict=False))["s"].to_list()
    assert want[1] is not None
    assert want[3] is None
    with pytest.raises(cb.UnsupportedOperationError, match="depending on the rows before"):
        frame.gpu.select(cb.col("s").str.to_datetime(strict=False)).compute()


def test_inference_over_other_rows_than_the_column_is_refused() -> None:
    # polars infers from each group's first value, or from the rows a filter keeps:
    # colbridge infers from the whole column, and refuses those it cannot follow
    frame = pl.DataFrame({"s": ["05-01-2024", "2024-01-05", "2024-01-06", None],
                          "g": [1, 1, 2, 2]})  # fmt: skip
    queries: dict[str, Callable[[Any, Any], Any]] = {
        "group_first": lambda m, q: q.group_by("g", maintain_order=True).agg(
            m.col("s").str.to_date(strict=False).first()),
        "group_max": lambda m, q: q.group_by("g", maintain_order=True).agg(
            m.col("s").str.to_date(strict=False).max()),
        "window_max": lambda m, q: q.select(m.col("s").str.to_date(strict=False).max().over("g")),
        "window_shift": lambda m, q: q.select(
            m.col("s").str.to_date(strict=False).shift(1).over("g")),
        "after_filter": lambda m, q: q.filter(m.col("g") == 2).select(
            m.col("s").str.to_date(strict=False)),
    }  # fmt: skip
    for name, query in queries.items():
        assert query(pl, frame).height, name  # polars answers
        with pytest.raises(cb.UnsupportedOperationError, match="give the format"):
            query(cb, frame.gpu).compute()
    # the whole column's: as polars
    for query in (lambda m, q: q.select(m.col("s").str.to_date(strict=False).max()),
                  lambda m, q: q.select(m.col("s").str.to_date(strict=False).shift(1)),
                  lambda m, q: q.group_by(d=m.col("s").str.to_date(strict=False),
                                          maintain_order=True).agg(m.col("g").sum())):  # fmt: skip
        assert_frame_equal(query(cb, frame.gpu).compute(), query(pl, frame))


def test_casting_strings_to_dates_fails_as_polars() -> None:
    frame = pl.DataFrame({"s": ["2024-01-05"]})
    for dtype in (pl.Date, pl.Datetime, pl.Datetime("ms")):
        for strict in (True, False):
            with pytest.raises(pl.exceptions.InvalidOperationError):
                frame.select(pl.col("s").cast(dtype, strict=strict))
            with pytest.raises(cb.InvalidOperationError, match="casting from string to"):
                frame.gpu.select(cb.col("s").cast(dtype, strict=strict)).compute()


def test_adjacent_numbers_are_read_greedily_as_chrono() -> None:
    # chrono reads `%H` as far as it goes and never gives a digit back to `%M`
    cases = [("2024-01-05T1000", "%Y-%m-%dT%H%M%S"), ("1999/1/31T10", "%Y/%m/%dT%H%M"),
             ("19990129T1000", "%Y%m%dT%H%M%S%.f"),
             ("2024-01-05T123", "%Y-%m-%dT%H%M")]  # fmt: skip
    for text, fmt in cases:
        frame = pl.DataFrame({"s": [text]})
        want = frame.select(pl.col("s").str.to_datetime(fmt, strict=False))
        got = frame.gpu.select(cb.col("s").str.to_datetime(fmt, strict=False)).compute()
        assert_frame_equal(got, want)


_YEARS = ["2024", "1999", "24", "02024", "+2024"]
_MONTHS = ["01", "1", "12", "13", "00", "2"]
_DAYS = ["05", "5", "29", "31", "30"]
_CLOCKS = ["", "T10:00:00", " 10:00", "T1000", " 100000", "T10:00:00.123",
           "T10:00:00.1234567891", "T25:00", "T10:61", "T10:00:60", " 10:00:00", "T10", "10:00"]
_ZONES = ["", "Z", "+01:00", "+0100", "-05", " +01:00", "z", "UTC", "+24:00"]  # fmt: skip


@st.composite
def _texts(draw: Any) -> str:
    y, m, d = draw(st.sampled_from(_YEARS)), draw(st.sampled_from(_MONTHS)), \
        draw(st.sampled_from(_DAYS))  # fmt: skip
    sep = draw(st.sampled_from(["-", "/", ".", ""]))
    date = sep.join([y, m, d] if draw(st.booleans()) else [d, m, y])
    return date + draw(st.sampled_from(_CLOCKS)) + draw(st.sampled_from(_ZONES))


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.one_of(st.none(), _texts()), max_size=6),
       repeat=st.booleans(), name=st.sampled_from(list(_PARSES)))  # fmt: skip
def test_generated_strings_parse_without_a_format_as_polars(
    texts: list[str | None], repeat: bool, name: str
) -> None:
    if repeat and texts:
        texts = [*texts, *texts[::2]]
    _same_parse(texts, name)


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
