"""``str.find`` against polars: the byte offset of a pattern's first match, null where none.

Generated strings over ASCII and non-ASCII characters (offsets are in bytes), with
nulls and empty strings; literal and regex patterns, the empty pattern, and invalid
regexes with ``strict`` both ways.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import assert_same_as_polars

_TEXT = st.text(alphabet="ab.é1 Ωx", max_size=8)
PATTERNS = ("a", "b.", "é", ".", "", "a+", "[0-9]", r"\d", "x|Ω", "(?i)A", "^a", "a$", "é+a",
            "[", "Ω.")  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.one_of(_TEXT, st.none()), max_size=12),
       pattern=st.sampled_from(PATTERNS), literal=st.booleans(),
       strict=st.booleans())  # fmt: skip
def test_find_as_polars(texts: list[str | None], pattern: str, literal: bool,
                        strict: bool) -> None:  # fmt: skip
    table = pa.table({"s": pa.array(texts, pa.string())})

    def steps(m: Any, q: Any) -> Any:
        found = m.col("s").str.find(pattern, literal=literal, strict=strict)
        return q.select(found, n=found.is_null().sum())

    assert_same_as_polars(table, steps)


def test_the_string_language_finds() -> None:
    import polars as pl

    df = pl.DataFrame({"s": ["éa", None, "b"]})
    got = cb.lazy(df).eval("i = s.str.find('a')").compute()
    assert got.equals(df.with_columns(i=pl.col("s").str.find("a")))
