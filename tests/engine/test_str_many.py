"""``str.contains_any``, ``replace_many`` and ``extract_many`` against polars' Aho-Corasick.

Several plain texts at once: each distinct string is searched once on the host.
Generated strings and pattern lists over a small alphabet of both cases, so that
patterns overlap, nest, repeat and fold into one another with
``ascii_case_insensitive``; both match kinds (polars' Standard and, with
``leftmost=True``, LeftmostFirst); one replacement for all patterns, one each,
a mapping; the results computed on further; a stream and Dask; the string
language; the refusals.
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

ALPHABET = "abAB-é"
PATTERNS = st.lists(st.text(ALPHABET, min_size=1, max_size=3), min_size=1, max_size=5)


def _table(values: list[str | None], offset: int, chunks: int) -> pa.Table:
    pad = ["pad"] * offset
    table = pa.table({"s": pa.array(pad + values, pa.string())})
    return cut_table(table, offset, len(values), chunks)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.none(), st.text(ALPHABET, max_size=10)), max_size=20),
       patterns=PATTERNS, insensitive=st.booleans(), leftmost=st.booleans(),
       offset=st.integers(0, 2), chunks=st.integers(1, 3))  # fmt: skip
def test_equal_polars(values: list[str | None], patterns: list[str], insensitive: bool,
                      leftmost: bool, offset: int, chunks: int) -> None:  # fmt: skip
    table = _table(values, offset, chunks)
    news = [f"<{k}>" for k in range(len(patterns))]

    def steps(m: Any, f: Any) -> Any:
        s = m.col("s")
        r = s.str.replace_many(patterns, news, ascii_case_insensitive=insensitive,
                               leftmost=leftmost)  # fmt: skip
        return f.select(
            r=r, one=s.str.replace_many(patterns, ["_"], ascii_case_insensitive=insensitive,
                                        leftmost=leftmost),
            n=r.str.len_chars(), c=s.str.contains_any(patterns),
            ci=s.str.contains_any(patterns, ascii_case_insensitive=insensitive),
            both=s.str.contains_any(patterns) & (r != s),
            found=s.str.extract_many(patterns, ascii_case_insensitive=insensitive,
                                     leftmost=leftmost).list.join("|"),
            k=s.str.extract_many(patterns, leftmost=leftmost).list.len(),
        )  # fmt: skip

    assert_same_as_polars(table, steps)


def test_a_mapping_keys_and_groups() -> None:
    frame = pl.DataFrame({"s": ["St. Main Rd.", "Rd. St.", None, "Elm Ave.", "st. x"],
                          "v": [1, 2, 3, 4, 5]})  # fmt: skip
    names = {"St.": "Street", "Rd.": "Road", "Ave.": "Avenue"}
    assert_same_as_polars(frame.to_arrow(), lambda m, f: f.group_by(
        m.col("s").str.contains_any(["St.", "Ave."], ascii_case_insensitive=True).alias("k"),
        maintain_order=True).agg(v=m.col("v").sum(),
                                 w=m.col("s").str.replace_many(names).first()))  # fmt: skip


def test_a_stream_and_dask(tmp_path: Any) -> None:
    values = [f"{'ab' * (k % 4)}-{'BA' * (k % 3)}" if k % 7 else None for k in range(200)]
    table = pa.table({"s": pa.array(values, pa.string())})
    assert_stream_and_dask_as_polars(table, lambda m: {
        "r": m.col("s").str.replace_many(["ab", "ba", "-"], ["1", "2", "+"],
                                         ascii_case_insensitive=True),
        "c": m.col("s").str.contains_any(["BA"])}, tmp_path)  # fmt: skip


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    frame = pl.DataFrame({"s": [f"{'ab' * (k % 4)}-{'BA' * (k % 3)}" if k % 7 else None
                                for k in range(3_000)]})  # fmt: skip

    def found(m: Any) -> dict[str, Any]:
        s = m.col("s").str
        return {"r": s.replace_many(["ab", "-"], ["1", "+"], ascii_case_insensitive=True),
                "c": s.contains_any(["BA", "x"]), "n": s.extract_many(["a", "B"]).list.len()}

    got = compute_on_tier(cb.lazy(frame).select(**found(cb)), tier)
    assert_frame_equal(got, frame.select(**found(pl)))


def test_the_string_language() -> None:
    frame = pl.DataFrame({"s": ["a-b", "AB", None]})
    got = cb.lazy(frame).eval(
        "r = s.str.replace_many(['a', 'b'], ['1', '2'], ascii_case_insensitive=True); "
        "c = s.str.contains_any(['-', 'x'])").compute()
    assert got.rows() == [("a-b", "1-2", True), ("AB", "12", False), (None, None, None)]


def test_refusals_name_the_function_and_the_way_out() -> None:
    s = cb.col("s").str
    with pytest.raises(SchemaError, match=r"at least one pattern, none of them empty"):
        s.contains_any([])
    with pytest.raises(SchemaError, match=r"none of them empty"):
        s.replace_many(["a", ""], ["x"])
    with pytest.raises(SchemaError, match=r"give a list of texts.*refuses a bare text"):
        s.replace_many(["a"], "x")  # type: ignore[arg-type]
    with pytest.raises(pl.exceptions.InvalidOperationError):
        pl.DataFrame({"s": ["a"]}).select(pl.col("s").str.replace_many(["a"], "x"))
    with pytest.raises(SchemaError, match=r"give a list of texts"):
        s.contains_any("ab")  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match=r"2 patterns and 3 replacements"):
        s.replace_many(["a", "b"], ["1", "2", "3"])
    with pytest.raises(SchemaError, match=r"replacements in one place"):
        s.replace_many({"a": "1"}, ["2"])
    with pytest.raises(UnsupportedOperationError, match=r"overlap only"):
        s.extract_many(["a"], overlapping=True)
    with pytest.raises(UnsupportedOperationError, match=r"is a List\(String\)"):
        pl.DataFrame({"s": ["a"]}).gpu.select(s.extract_many(["a"])).compute()
    with pytest.raises(UnsupportedOperationError, match=r"`str.extract_all`: a pattern that can"):
        pl.DataFrame({"s": ["a"]}).gpu.select(
            cb.col("s").str.extract_all("a*").list.len()).compute()  # fmt: skip
    with pytest.raises(UnsupportedOperationError, match=r"a list of texts, not an expression"):
        s.contains_any(cb.col("p"))  # type: ignore[arg-type]
    # polars refuses an empty list too (and, where it runs, matches "" everywhere)
    with pytest.raises(pl.exceptions.PolarsError):
        pl.DataFrame({"s": ["a"]}).select(pl.col("s").str.contains_any([]))
