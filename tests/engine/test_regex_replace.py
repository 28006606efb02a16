"""Regular-expression ``str.replace``/``replace_all`` and ``str.count_matches``, against polars.

Strings drawn from ASCII letters and digits, accented and Arabic-Indic characters and
spaces (multi-byte characters, Unicode digits and word characters), with nulls; the
patterns and replacement texts exercise groups by number and name, ``$$``, a ``$name``
that runs on, a group the pattern lacks, alternatives whose group did not take part,
and empty matches.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_series_equal

import colbridge as cb

TEXT = st.lists(
    st.one_of(st.none(), st.text(alphabet="ab c1é٣x-_.", max_size=12)), min_size=1, max_size=30
)

REPLACEMENTS = [
    (r"(\d)(\d)", "<$2$1>"),
    (r"(?P<x>\d)", "[${x}]"),
    (r"(\d)", "$1a"),  # `$1a` names a group "1a", which is not there: nothing
    (r"(\d)", "$$"),
    (r"(\d)|(x)", "<$1|$2>"),
    (r"\w+", "W"),
    (r"\s", "_"),
    (r"a.c", "$0$0"),
    ("é", "e"),
    (r"[^\w\s]", ""),
    (r"\d", r"\0"),
    ("a*", "-"),
    ("", "+"),
    (r"(a)(b)?", "${2}${1}"),
]

COUNTS = [r"\d+", r"\d", r"\w", r"[a-c]{2}", "é", r"\s+", r"a|b", r"[^\w]"]


def _compare(strings: list[str | None], build: Any) -> None:
    df = pl.DataFrame({"s": pl.Series(strings, dtype=pl.String)})
    want = df.select(build(pl.col("s"))).to_series()
    got = df.gpu.select(build(cb.col("s"))).compute().to_series()
    assert_series_equal(got, want)


@settings(max_examples=30, deadline=None)
@given(strings=TEXT)
def test_regex_replace_as_polars(strings: list[str | None]) -> None:
    for pattern, value in REPLACEMENTS:
        _compare(strings, lambda s, p=pattern, v=value: s.str.replace_all(p, v))
        _compare(strings, lambda s, p=pattern, v=value: s.str.replace(p, v))


@settings(max_examples=30, deadline=None)
@given(strings=TEXT)
def test_count_matches_as_polars(strings: list[str | None]) -> None:
    for pattern in COUNTS:
        _compare(strings, lambda s, p=pattern: s.str.count_matches(p))
    for text in ["a", "é", "1.", "."]:
        _compare(strings, lambda s, t=text: s.str.count_matches(t, literal=True))


def test_categorical_columns_and_the_string_language() -> None:
    df = pl.DataFrame({"s": pl.Series(["a1", "b22", None, "a1"], dtype=pl.Categorical)})
    want = df.select(pl.col("s").cast(pl.String).str.replace_all(r"\d", "#"))
    got = df.gpu.select(cb.col("s").cast(pl.String).str.replace_all(r"\d", "#")).compute()
    assert_series_equal(got.to_series(), want.to_series())
    got = df.gpu.eval(r"r = s.cast('str').str.replace_all('[0-9]', '#')")
    assert got["r"].to_list() == ["a#", "b##", None, "a#"]
    got = df.gpu.eval(r"n = s.cast('str').str.count_matches('[0-9]')")
    assert got["n"].to_list() == [1, 2, None, 1]
    assert got["n"].dtype == pl.UInt32


@pytest.mark.parametrize(
    ("build", "words"),
    [
        (lambda s: s.str.count_matches("a*"), "can match the empty string"),
        (lambda s: s.str.count_matches(r"\b"), "word boundary"),
        (lambda s: s.str.replace_all(r"\b", "-"), "word boundary"),
        (lambda s: s.str.contains(r"a\B"), "word boundary"),
        (lambda s: s.str.replace_all(r"(a)\1", "-"), "backreferences"),
        (lambda s: s.str.replace_all(r"(?=a)", "-"), "look-around"),
        (lambda s: s.str.replace_all("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)", "$10"), "groups 0 to 9"),
    ],
)
def test_what_re2_cannot_do_is_refused(build: Any, words: str) -> None:
    df = pl.DataFrame({"s": ["ab", "aéb", "ééé"]})
    with pytest.raises(cb.UnsupportedOperationError, match=words):
        df.gpu.select(build(cb.col("s"))).compute()


def test_word_boundaries_over_ascii_strings_as_polars() -> None:
    _compare(["a b", "ab", None, "x-y_z 9"], lambda s: s.str.replace_all(r"\b", "|"))
    _compare(["a b", "ab", None, "x-y_z 9"], lambda s: s.str.contains(r"\bb"))
