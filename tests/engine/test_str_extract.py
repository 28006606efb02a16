"""``str.extract(pattern, group_index)`` against polars.

Each distinct string's group text is found once (RE2 through pyarrow, leftmost-first
as Rust's ``regex``), the rows keep their codes, and a table of which strings have a
text makes the others null. Generated strings (ASCII, accents, other scripts' digits,
newlines) with nulls, offsets and chunks; patterns with alternations, optional and
nested groups, anchors, flags and named groups; the group's text computed on further
(``len_chars``, ``is_null``, comparisons, ``group_by`` keys); the string language.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import SchemaError, UnsupportedOperationError
from colbridge.testing.asserts import assert_same_as_polars, assert_stream_and_dask_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from tests.ordered.ordered_data import cut_table

PATTERNS = [
    (r"(a)|(b)", 1), (r"(a)|(b)", 2), (r"(a)|(b)", 0), (r"(\d+)", 1), (r"(\d+)", 3),
    (r"(?<n>\d+)", 1), (r"(?P<n>[a-z]+)(\d)", 2), (r"(x)?y", 1), (r"id=(\d+)", 1),
    (r"(\d*)", 1), (r"^(\w+)-(\w+)", 2), (r"(?i)(A+)", 1), (r"y(\d)$", 1), (r"(.)(.)", 2),
    (r"z", 0), (r"((a)b)", 2), (r"\w(\d)", 1), (r"(a*)b", 1), (r"(?s)a(.)b", 1),
    (r"(é+)", 1), (r"([^a-c]+)", 1), (r"(\s)", 1),
]  # fmt: skip
ALPHABET = "abcxyz-=é1234٣\n "


def _table(values: list[str | None], offset: int, chunks: int) -> pa.Table:
    pad = ["pad"] * offset
    table = pa.table({"s": pa.array(pad + values, pa.string()),
                      "g": pa.array([k % 3 for k in range(offset + len(values))])})  # fmt: skip
    return cut_table(table, offset, len(values), chunks)


def _extracted(m: Any, pattern: str, group: int) -> dict[str, Any]:
    e = m.col("s").str.extract(pattern, group)
    return {"r": e, "n": e.is_null(), "l": e.str.len_chars(), "eq": e == "1",
            "u": e.str.to_uppercase(), "f": e.first().over("g")}  # fmt: skip


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.none(), st.text(ALPHABET, max_size=8)), max_size=30),
       case=st.sampled_from(PATTERNS), offset=st.integers(0, 3),
       chunks=st.integers(1, 3))  # fmt: skip
def test_equal_polars(values: list[str | None], case: tuple[str, int], offset: int,
                      chunks: int) -> None:  # fmt: skip
    pattern, group = case
    table = _table(values, offset, chunks)
    assert_same_as_polars(table, lambda m, f: f.select(**_extracted(m, pattern, group)))
    assert_same_as_polars(table, lambda m, f: f.with_columns(
        k=m.col("s").str.extract(pattern, group)).group_by("k", maintain_order=True).agg(
        n=m.len()))  # fmt: skip


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    frame = pl.DataFrame({"s": [f"item-{k % 97}" if k % 7 else None for k in range(3_000)]})
    want = frame.select(r=pl.col("s").str.extract(r"-(\d)(\d)?", 2),
                        n=pl.col("s").str.extract(r"(\d+)").str.len_chars())  # fmt: skip
    got = compute_on_tier(cb.lazy(frame).select(
        r=cb.col("s").str.extract(r"-(\d)(\d)?", 2),
        n=cb.col("s").str.extract(r"(\d+)").str.len_chars()), tier)  # fmt: skip
    assert_frame_equal(got, want)


def test_the_string_language_refusals_and_the_known_difference() -> None:
    frame = pl.DataFrame({"s": ["a.com/x?id=12", "b.org/y", None]})
    got = cb.lazy(frame).eval(r'i = s.str.extract(r"id=(\d+)")').compute()
    assert got["i"].to_list() == ["12", None, None]
    with pytest.raises(UnsupportedOperationError, match=r"group is a whole number"):
        cb.col("s").str.extract("(a)", -1)
    categories = pl.DataFrame({"c": pl.Series(["a1"], dtype=pl.Categorical)})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        categories.select(pl.col("c").str.extract(r"(\d)"))
    with pytest.raises(SchemaError, match=r"needs a String, got categorical"):
        categories.gpu.select(cb.col("c").str.extract(r"(\d)")).compute()
    # documented: a group that can match nothing and takes no part in the match is
    # null in polars and "" here (RE2 through pyarrow writes both as "")
    either = pl.DataFrame({"s": ["b"]})
    assert either.select(pl.col("s").str.extract("(b)|(a*)", 2)).item() is None
    assert either.gpu.select(cb.col("s").str.extract("(b)|(a*)", 2)).compute().item() == ""


def test_a_stream_and_dask(tmp_path: Any) -> None:
    values = [f"user{k % 13}@host{k % 5}.org" if k % 9 else None for k in range(200)]
    table = pa.table({"s": pa.array(values, pa.string())})
    assert_stream_and_dask_as_polars(table, lambda m: {
        "d": m.col("s").str.extract(r"@(\w+)\."),
        "n": m.col("s").str.extract(r"user(\d+)", 1)}, tmp_path)  # fmt: skip
