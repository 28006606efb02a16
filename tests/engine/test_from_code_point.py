"""``str.from_code_point()`` against polars: integers as the characters of their code points.

Generated integer columns of every integer type (code points of every UTF-8 length,
0, the last before and first after the surrogates, 0x10FFFF), with nulls, chunked,
then used as strings (compared, measured, joined); invalid code points fail as
polars' do, but not where a filter or a ``when`` has removed them; literals, the
string language and refusals of other types.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import ColbridgeError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier

_CODE_POINTS = st.one_of(
    st.integers(0, 0x7F), st.integers(0x80, 0xD7FF), st.integers(0xE000, 0x10FFFF),
    st.sampled_from([0, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF]),
)  # fmt: skip
_TYPES = {"int64": (0, 0x10FFFF), "uint32": (0, 0x10FFFF), "int32": (0, 0x10FFFF),
          "uint16": (0, 0xD7FF), "int8": (0, 0x7F), "uint8": (0, 0xFF)}  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(
    values=st.lists(st.one_of(_CODE_POINTS, st.none()), max_size=40),
    kind=st.sampled_from(sorted(_TYPES)),
    cut=st.integers(0, 40),
)
def test_as_polars(values: list[int | None], kind: str, cut: int) -> None:
    lo, hi = _TYPES[kind]
    fitting = [v if v is None or lo <= v <= hi else v % (hi + 1) for v in values]
    fitting = [None if v is not None and 0xD800 <= v <= 0xDFFF else v for v in fitting]
    column = pa.array(fitting, getattr(pa, kind)())
    table = pa.table({"c": pa.chunked_array([column[:cut], column[cut:]], column.type),
                      "s": pa.array(["x"] * len(fitting))})  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        ch = m.col("c").str.from_code_point()
        return q.select(ch=ch, bytes=ch.str.len_bytes(), a=ch == "A",
                        joined=m.concat_str([ch, m.col("s")], separator="-"))  # fmt: skip

    assert_same_as_polars(table, steps)


def test_invalid_code_points_fail_unless_removed_first() -> None:
    df = pl.DataFrame({"c": [65, -1, 0xD800, 0x110000, None]})
    for bad in ([65, -1], [0xDFFF], [0x110000]):
        frame = pl.DataFrame({"c": bad})
        with pytest.raises(pl.exceptions.ComputeError):
            frame.select(pl.col("c").str.from_code_point())
        with pytest.raises(ColbridgeError, match="invalid Unicode code point"):
            frame.gpu.select(cb.col("c").str.from_code_point()).compute()

    def steps(m: Any, q: Any) -> Any:  # the filter first: no invalid value is written
        return q.filter(m.col("c") == 65).select(m.col("c").str.from_code_point())

    assert_same_as_polars(pa.table(df.to_arrow()), steps)
    valid = (pl.col("c") >= 0) & (pl.col("c") < 0xD800)
    got = df.gpu.select(cb.when(cb.col("c").is_between(0, 0xD7FF)).then(cb.col("c"))
                        .otherwise(None).str.from_code_point()).compute()  # fmt: skip
    assert got.equals(df.select(pl.when(valid).then(pl.col("c")).otherwise(None)
                                .str.from_code_point()))  # fmt: skip


def test_literals_groups_and_the_string_language() -> None:
    df = pl.DataFrame({"g": [1, 1, 2], "c": [0x1F600, 97, None]})
    got = df.gpu.select(cb.lit(66).str.from_code_point(), n=cb.lit(None).str.from_code_point())
    want = df.select(pl.lit(66).str.from_code_point(), n=pl.lit(None).str.from_code_point())
    assert got.compute().equals(want)
    text = cb.lazy(df).eval("s = c.str.from_code_point()").compute()
    assert text.select("s").equals(df.select(s=pl.col("c").str.from_code_point()))
    agg = df.gpu.group_by("g").agg(cb.col("c").str.from_code_point().max()).compute()
    assert agg.sort("g").equals(
        df.group_by("g").agg(pl.col("c").str.from_code_point().max()).sort("g"))


@pytest.mark.parametrize("values", [[1.5], [True], ["a"]])
def test_other_types_are_refused(values: list[Any]) -> None:
    df = pl.DataFrame({"c": values})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        df.select(pl.col("c").str.from_code_point())
    with pytest.raises(ColbridgeError, match="expects an integer code point"):
        df.gpu.select(cb.col("c").str.from_code_point()).compute()


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    # the check of an invalid code point runs in the kernel: on every target, after the filter
    table = pa.table({"c": pa.array([65, -1, 0x1F600, None, 0xD800, 233], pa.int64())})
    q = cb.lazy(table).filter(cb.col("c").is_between(0, 0xD7FF) | cb.col("c").is_null())
    got = compute_on_tier(q.select(cb.col("c").str.from_code_point()), tier)
    want = pl.from_arrow(table).filter(pl.col("c").is_between(0, 0xD7FF) | pl.col("c").is_null())
    assert pa.table(got).column("c").to_pylist() == want.select(
        pl.col("c").str.from_code_point())["c"].to_list() == ["A", None, "é"]  # fmt: skip
    with pytest.raises(ColbridgeError, match="invalid Unicode code point"):
        compute_on_tier(cb.lazy(table).select(cb.col("c").str.from_code_point()), tier)
