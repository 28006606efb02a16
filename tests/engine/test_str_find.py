"""``str.find`` against polars: the character offset of a pattern's first match, null where none.

Generated strings over ASCII and non-ASCII characters (offsets count characters), with
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

_TEXT = st.text(alphabet="ab.é1 Ωx日\U0001f600", max_size=8)
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


def test_on_the_cuda_path_through_the_host_shim() -> None:
    import polars as pl

    from colbridge.testing.cuda_host import compute_on_host

    df = pl.DataFrame({"s": ["éa", None, "b.a", "", "xyz"]})
    handle = df.gpu.select(a=cb.col("s").str.find("a"), b=cb.col("s").str.find(".", literal=True))
    want = df.select(a=pl.col("s").str.find("a"), b=pl.col("s").str.find(".", literal=True))
    assert compute_on_host(handle).equals(want)
