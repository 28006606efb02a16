"""Strings at the edges of polars' semantics: regex dialect, distinct counts, chrono formats.

polars is the oracle throughout (the same expression, the same frame); where colbridge
refuses, the test checks the error names the pattern or format and what to do.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb


def _same(values: list[str | None], build: Any) -> None:
    df = pl.DataFrame({"s": values}, schema={"s": pl.String})
    got = df.gpu.select(y=build(cb.col("s"))).compute()
    assert_frame_equal(got, df.select(y=build(pl.col("s"))))


# -- distinct values of a string function ----------------------------------------------------

_MAPS = [
    lambda s: s.str.to_lowercase(),
    lambda s: s.str.replace("a", "b"),
    lambda s: s.str.slice(0, 1),
    lambda s: s.str.to_lowercase().shift(1),
]


@pytest.mark.parametrize("string_map", _MAPS)
def test_n_unique_counts_the_mapped_strings_not_their_sources(string_map: Any) -> None:
    # a map gives equal strings to different source codes: counted by value, as polars
    df = pl.DataFrame({"s": ["a", "b", "A", None, "B", "ab"], "g": [1, 1, 1, 2, 2, 2]})

    def steps(m: Any, q: Any) -> list[Any]:
        e = string_map(m.col("s"))
        return [
            q.select(y=e.n_unique()),
            q.group_by("g", maintain_order=True).agg(y=e.n_unique(),
                                                     f=e.filter(m.col("g") > 1).n_unique()),
            q.with_columns(y=e.n_unique().over("g")),
        ]  # fmt: skip

    for got, want in zip(steps(cb, df.gpu), steps(pl, df), strict=True):
        assert_frame_equal(got.compute(), want)


# -- regex: polars' (Rust) dialect on RE2 ---------------------------------------------------------


@pytest.mark.parametrize("pattern", ["^a", "(?m)^.", r"\Aa|b", "^a|b$", "(?m)^a+$"])
def test_count_matches_with_anchors_as_polars(pattern: str) -> None:
    # Arrow's count restarts each search at the last match, where `^` matched again
    _same(["aaa", "ab", None, "a\na", "ab\nab", "b", ""], lambda s: s.str.count_matches(pattern))


@pytest.mark.parametrize("literal", [False, True])
def test_count_matches_of_the_empty_pattern(literal: bool) -> None:
    # before each character and at the end: characters + 1 (not bytes + 1, as RE2 counts)
    _same(["abc", "", None, "日本x", "e\u0301"],
          lambda s: s.str.count_matches("", literal=literal))  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text("ab\n", max_size=6)), min_size=1, max_size=8),
       st.sampled_from(["^a", "(?m)^a", "a$", "(?m)^[ab]", "^a|a"]))  # fmt: skip
def test_count_matches_property(values: list[str | None], pattern: str) -> None:
    _same(values, lambda s: s.str.count_matches(pattern))


@pytest.mark.parametrize(
    ("values", "pattern"),
    [
        (["x", "b", "1", "-"], "[[:alpha:][0-9]]"),  # a POSIX class and a nested class
        (["x", "b", "c", "-"], "[a[bc]]"),  # Rust: a union; RE2: a literal `[`
        (["ǅǆǄ", "a b", "é", "!", "_"], r"[\W]"),  # Unicode's non-word characters
        (["\xa0x", "a b", "ab"], r"[\S\s]x"),
        (["é1", "x", "-"], r"[\Wx]"),
        (["é", "e", "x"], r"\u00e9"),
        (["é", "e", "x"], r"\u{e9}"),
        (["é", "e", "x"], r"[\u{e8}-\u{ea}]"),
        (["a_b1", "__", "-"], r"[^\W_]"),  # ASCII strings: RE2's classes agree
    ],
)
def test_classes_and_escapes_as_polars(values: list[str], pattern: str) -> None:
    _same(values, lambda s: s.str.contains(pattern))
    _same(values, lambda s: s.str.replace_all(pattern, "<$0>"))


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (r"[^\W_]", r"`\\W` in the negated class .* non-ASCII"),
        (r"\<a", r"word boundary `\\<` is not in colbridge's RE2"),
        (r"\b{start}a", r"`\\b\{start\}`"),
        ("[a[^b]]", "negated class nested in a class"),
        (r"\p{Alphabetic}", "syntax colbridge's RE2 engine does not have"),
        ("(?x)a b", "syntax colbridge's RE2 engine does not have"),
    ],
)
def test_what_re2_reads_differently_is_refused(pattern: str, words: str) -> None:
    df = pl.DataFrame({"s": ["é", "ab"]})
    with pytest.raises(cb.UnsupportedOperationError, match=words):
        df.gpu.select(cb.col("s").str.contains(pattern)).compute()


@pytest.mark.parametrize("pattern", ["(", ")", "[a", "*a", "a\\"])
def test_an_invalid_regex_is_an_error_or_null_as_polars(pattern: str) -> None:
    df = pl.DataFrame({"s": ["a(", "b", None]})
    with pytest.raises(pl.exceptions.ComputeError):
        df.select(pl.col("s").str.contains(pattern))
    with pytest.raises(cb.ComputeError, match="is not valid"):
        df.gpu.select(cb.col("s").str.contains(pattern)).compute()
    _same(["a(", "b", None], lambda s: s.str.contains(pattern, strict=False))


@pytest.mark.parametrize("n", [0, 1, 2, 5, -1])
@pytest.mark.parametrize("literal", [False, True])
def test_replace_n_as_polars(n: int, literal: bool) -> None:
    _same(["aaa", "bab", None, ""], lambda s: s.str.replace("a", "X", n=n, literal=literal))


def test_the_string_language_spells_the_python_api() -> None:
    df = pl.DataFrame({"s": ["abc", "a.c", None, "a("]})
    got = df.gpu.eval("y = contains(s, 'a.'); z = s.str.contains('a.', literal=True); "
                      "w = s.str.replace('a', 'X', n=-1); v = s.str.contains('(', strict=False)")
    s = pl.col("s")
    want = df.with_columns(y=s.str.contains("a."), z=s.str.contains("a.", literal=True),
                           w=s.str.replace("a", "X", n=-1),
                           v=s.str.contains("(", strict=False))  # fmt: skip
    assert_frame_equal(got, want)
    with pytest.raises(cb.ExpressionSyntaxError, match=r"unexpected keyword argument 'literl'"):
        df.gpu.eval("y = s.str.contains('a', literl=True)")


# -- chrono formats ------------------------------------------------------------------------------

_FORMATS = [
    (["2024-01-15", "2024-02-30", None, "x"], "to_date", "%F", None),
    (["2024-01-15 10:11:12", "2024-01-15 25:00:00"], "to_datetime", "%F %T", None),
    (["69-01-01", "68-12-31", "70-01-01", "99-03-04", "00-01-01"], "to_date", "%y-%m-%d", None),
    (["01/15/24", "12/31/69"], "to_date", "%D", None),
    (["2024-Jan-05", "2024-jan-05"], "to_date", "%Y-%h-%d", None),
    (["2024-01- 5", "2024-01-15"], "to_date", "%Y-%m-%e", None),
    (["2024-1-5", "2024-01-05"], "to_date", "%Y-%-m-%-d", None),
    (["2024-01-01 00:00:00.123", "2024-01-01 00:00:00.12", "2024-01-01 00:00:00"], "to_datetime",
     "%Y-%m-%d %H:%M:%S%.3f", None),
    (["2024-01-01 00:00:00.123456789"], "to_datetime", "%Y-%m-%d %H:%M:%S%.9f", None),
    (["2024-01-01 00:00:00.123456789", "2024-01-01 00:00:00"], "to_datetime",
     "%Y-%m-%d %H:%M:%S%.f", "ns"),
    (["10:11:12.345 2024-01-15", "10:11:12 2024-01-15"], "to_datetime", "%H:%M:%S%.3f %Y-%m-%d",
     None),
    (["2024-01-01 00:00:00123"], "to_datetime", "%Y-%m-%d %H:%M:%S%3f", None),
    (["2024-01-01 00:00:00.123456789", "2024-01-01T10:00:00", "2024-01-01"], "to_datetime", None,
     "ns"),
    (["1969-12-31 23:59:59.5", "1900-01-01 00:00:00.25"], "to_datetime", "%Y-%m-%d %H:%M:%S%.f",
     None),
    # digits split as chrono splits them, each number as far as it goes (Python's strptime
    # backtracks: 5:23, the 5th of the 31st month...)
    (["20240101523", "202401011523", "19209110229"], "to_datetime", "%Y%m%d%H%M", None),
    (["5920531", "59200531", "60319"], "to_date", "%Y%m%d", None),
    (["60319", "600319", "12605"], "to_date", "%y%m%d", None),
]


@pytest.mark.parametrize(("values", "func", "fmt", "unit"), _FORMATS)
def test_chrono_formats_as_polars(values: list[str | None], func: str, fmt: str | None,
                                  unit: str | None) -> None:  # fmt: skip
    options = {} if unit is None else {"time_unit": unit}
    _same(values, lambda s: getattr(s.str, func)(fmt, strict=False, **options))


def test_a_datetime_beyond_the_unit_does_not_parse() -> None:
    # 1500 in nanoseconds does not fit an int64 (polars wraps it to 2084; colbridge: null)
    df = pl.DataFrame({"s": ["1500-01-01 00:00:00", "2024-01-01 00:00:00"]})
    fmt = "%Y-%m-%d %H:%M:%S"
    got = df.gpu.select(cb.col("s").str.to_datetime(fmt, time_unit="ns", strict=False))
    assert got.compute()["s"].to_list()[0] is None
    with pytest.raises(cb.InvalidOperationError, match="pass `strict=False`"):
        df.gpu.select(cb.col("s").str.to_datetime(fmt, time_unit="ns")).compute()


@pytest.mark.parametrize("fmt", ["%Y %z", "%Y %#z", "%+", "%Y %:z", "%Y %Z"])
def test_formats_with_an_offset_are_refused_by_name(fmt: str) -> None:
    df = pl.DataFrame({"s": ["2024 +01:00"]})
    with pytest.raises(cb.UnsupportedOperationError, match="time zone or offset"):
        df.gpu.select(cb.col("s").str.to_datetime(fmt)).compute()
