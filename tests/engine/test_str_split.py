"""``str.split``, ``split_exact``, ``splitn`` and what ``list``/``struct`` take of them, vs polars.

colbridge has no list or struct columns: each distinct string is split once and one
value per string is taken of its parts (a table, or a new dictionary the rows keep
their codes into). Generated strings (separators doubled, at the ends, accents,
empty strings) with nulls, offsets and chunks; literal separators (one and several
characters, empty: characters), ``inclusive``, regex separators; every value taken,
after chains of list-to-list steps; the values computed on further (comparisons,
lengths, ``group_by`` keys, ``over``); every kernel tier, a stream and Dask; the
string language; and the refusals.
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
from colbridge.errors import (
    ColbridgeError,
    ColumnNotFoundError,
    ExpressionSyntaxError,
    InvalidOperationError,
    SchemaError,
    UnsupportedOperationError,
)
from colbridge.testing.asserts import assert_same_as_polars, assert_stream_and_dask_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from colbridge.types.regex import group_fields
from tests.ordered.ordered_data import cut_table

ALPHABET = "ab,,-é ü"
SEPARATORS = [",", "-", ",,", "", "é", "ab", " "]

#: list-to-list steps, as (name, arguments) chains applied in order
STEPS: list[tuple[tuple[str, tuple[Any, ...], dict[str, Any]], ...]] = [
    (),
    (("reverse", (), {}),),
    (("sort", (), {}),),
    (("sort", (), {"descending": True}),),
    (("slice", (1,), {}),),
    (("slice", (-2, 1), {}),),
    (("slice", (-5, 3), {}),),
    (("slice", (0, 0), {}),),
    (("head", (2,), {}),),
    (("head", (-1,), {}),),
    (("tail", (1,), {}),),
    (("tail", (-1,), {}),),
    (("tail", (0,), {}),),
    (("unique", (), {"maintain_order": True}),),
    (("sort", (), {}), ("head", (3,), {}), ("reverse", (), {})),
    (("slice", (1, 3), {}), ("unique", (), {"maintain_order": True})),
    (("gather_every", (2,), {}),),
    (("gather_every", (2, 1), {}), ("drop_nulls", (), {})),
    (("drop_nulls", (), {}), ("tail", (3,), {}), ("gather_every", (1, 2), {})),
]


def _table(values: list[str | None], offset: int, chunks: int) -> pa.Table:
    pad = ["pad"] * offset
    table = pa.table({"s": pa.array(pad + values, pa.string()),
                      "g": pa.array([k % 3 for k in range(offset + len(values))])})  # fmt: skip
    return cut_table(table, offset, len(values), chunks)


def _stepped(parts: Any, steps: tuple[tuple[str, tuple[Any, ...], dict[str, Any]], ...]) -> Any:
    for name, args, kwargs in steps:
        parts = getattr(parts.list, name)(*args, **kwargs)
    return parts


def _taken(m: Any, by: str, inclusive: bool, steps: Any) -> dict[str, Any]:
    """Every value a list gives, each also computed on."""
    p = _stepped(m.col("s").str.split(by, inclusive=inclusive), steps)
    return {
        "g0": p.list.get(0, null_on_oob=True), "g1": p.list.get(1, null_on_oob=True),
        "gl": p.list.get(-2, null_on_oob=True), "f": p.list.first(), "l": p.list.last(),
        "n": p.list.len(), "j": p.list.join("|"), "c": p.list.contains("a"),
        "ce": p.list.contains(""), "cm": p.list.count_matches("b"), "u": p.list.n_unique(),
        "mn": p.list.min(), "mx": p.list.max(), "amn": p.list.arg_min(),
        "amx": p.list.arg_max(), "fl": p.list.first().str.len_chars(),
        "eq": p.list.last() == "b", "n2": p.list.len() * 2 + 1,
        "fn": p.list.first().is_null(),
    }  # fmt: skip


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.none(), st.text(ALPHABET, max_size=9)), max_size=25),
       by=st.sampled_from(SEPARATORS), inclusive=st.booleans(),
       steps=st.sampled_from(STEPS), offset=st.integers(0, 3),
       chunks=st.integers(1, 3))  # fmt: skip
def test_list_values_equal_polars(values: list[str | None], by: str, inclusive: bool,
                                  steps: Any, offset: int, chunks: int) -> None:  # fmt: skip
    table = _table(values, offset, chunks)
    assert_same_as_polars(table, lambda m, f: f.select(**_taken(m, by, inclusive, steps)))


#: strings of 0 to 6 parts (by "," and by "-"), empty parts, a null
FIXED = ["", "a", "a,b", ",", "a,,b", "b,a,c,a", "x,y,z,w,v,u", "-", "a-b,c", None, "é,ü,"]


@pytest.mark.parametrize("steps", STEPS, ids=[str(s) for s in STEPS])
@pytest.mark.parametrize(("by", "literal"), [(",", True), ("[,-]", False), ("", True)])
def test_each_step_equals_polars(steps: Any, by: str, literal: bool) -> None:
    # every step over strings of every part count: Arrow's flat parts (a separator, a
    # regex) and the per-string path (characters) alike
    table = _table(FIXED, 1, 2)

    def taken(m: Any, f: Any) -> Any:
        p = _stepped(m.col("s").str.split(by, literal=literal), steps)
        return f.select(j=p.list.join("|"), n=p.list.len(), g1=p.list.get(1, null_on_oob=True),
                        last=p.list.last(), c=p.list.count_matches("a"))  # fmt: skip

    assert_same_as_polars(table, taken)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.none(), st.text(ALPHABET, max_size=9)), max_size=25),
       by=st.sampled_from(SEPARATORS), n=st.integers(0, 4), inclusive=st.booleans(),
       offset=st.integers(0, 3), chunks=st.integers(1, 3))  # fmt: skip
def test_struct_fields_equal_polars(values: list[str | None], by: str, n: int, inclusive: bool,
                                    offset: int, chunks: int) -> None:  # fmt: skip
    table = _table(values, offset, chunks)

    def fields(m: Any, f: Any) -> Any:
        exact = m.col("s").str.split_exact(by, n, inclusive=inclusive)
        out = [exact.struct.field(f"field_{k}").alias(f"e{k}") for k in range(n + 1)]
        if n >= 1:
            first_n = m.col("s").str.splitn(by, n)
            out += [first_n.struct.field(f"field_{k}").alias(f"n{k}") for k in range(n)]
            out.append(first_n.struct.field(f"field_{n - 1}").str.len_bytes().alias("last"))
        return f.select(out)

    assert_same_as_polars(table, fields)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.none(), st.text(ALPHABET, max_size=9)), max_size=25),
       index=st.integers(-4, 4), by=st.sampled_from(SEPARATORS))  # fmt: skip
def test_get_past_the_end_raises_as_polars(values: list[str | None], index: int, by: str) -> None:
    # polars raises where a row's list is too short, and only there
    table = _table(values, 0, 1)
    assert_same_as_polars(table, lambda m, f: f.select(
        m.col("s").str.split(by).list.get(index)))  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.none(), st.text(ALPHABET, max_size=6)), max_size=25),
       by=st.sampled_from(SEPARATORS), allow_empty=st.booleans())  # fmt: skip
def test_item_of_lists_not_of_one_part_raises_as_polars(values: list[str | None], by: str,
                                                        allow_empty: bool) -> None:  # fmt: skip
    # polars raises where a row's list holds more than one part (or none, unless
    # `allow_empty`), and only there
    table = _table(values, 0, 1)
    assert_same_as_polars(table, lambda m, f: f.select(
        m.col("s").str.split(by).list.item(allow_empty=allow_empty)))  # fmt: skip


GROUP_PATTERNS = [r"(\d+)-(?<b>\w)?", r"(?P<k>[a-z]+)=(?P<v>\d*)", r"(a)|(b)", r"x(y)?", r"(é+)"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.none(), st.text("ab12-=xyé", max_size=8)), max_size=25),
       pattern=st.sampled_from(GROUP_PATTERNS), offset=st.integers(0, 2))  # fmt: skip
def test_extract_groups_fields_equal_polars(values: list[str | None], pattern: str,
                                            offset: int) -> None:  # fmt: skip
    table = _table(values, offset, 2)

    names = list(group_fields(pattern))  # how many: their names and values are polars'

    def fields(m: Any, f: Any) -> Any:
        g = m.col("s").str.extract_groups(pattern)
        return f.select(*[g.struct[k] for k in range(len(names))],
                        *[g.struct[k].str.len_chars().alias(f"n{k}") for k in range(len(names))],
                        g.struct.field(names[-1]).alias("by_name"))  # fmt: skip

    assert_same_as_polars(table, fields)


REGEXES = [r",+", r"[,-]", r"\s", r"é|ü", r"(a)b", r"[^a-z]", r"b{2}", r"(?i)A"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.none(), st.text(ALPHABET + "AB", max_size=9)),
                       max_size=25),
       pattern=st.sampled_from(REGEXES), inclusive=st.booleans())  # fmt: skip
def test_regex_splits_equal_polars(values: list[str | None], pattern: str,
                                   inclusive: bool) -> None:  # fmt: skip
    table = _table(values, 0, 1)

    def taken(m: Any, f: Any) -> Any:
        p = m.col("s").str.split(pattern, inclusive=inclusive, literal=False)
        return f.select(n=p.list.len(), j=p.list.join("|"), f=p.list.first(),
                        l=p.list.get(-1, null_on_oob=True))  # fmt: skip

    assert_same_as_polars(table, taken)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.none(), st.text(ALPHABET + "AB", max_size=9)),
                       max_size=25),
       pattern=st.sampled_from([*REGEXES, r"^a", r"b$", r"(?:ab)+"]),
       steps=st.sampled_from(STEPS), offset=st.integers(0, 2))  # fmt: skip
def test_regex_matches_as_lists_equal_polars(values: list[str | None], pattern: str, steps: Any,
                                             offset: int) -> None:  # fmt: skip
    # `str.extract_all`: every match, a list as a split's parts are
    table = _table(values, offset, 2)

    def taken(m: Any, f: Any) -> Any:
        p = _stepped(m.col("s").str.extract_all(pattern), steps)
        return f.select(n=p.list.len(), j=p.list.join("|"), f=p.list.first(),
                        mx=p.list.max(), c=p.list.contains("a"))  # fmt: skip

    assert_same_as_polars(table, taken)


def test_taken_values_as_keys_and_windows() -> None:
    frame = pl.DataFrame({"route": ["JFK-LAX", "SFO-ORD-JFK", None, "JFK-SEA", "", "LAX-JFK"],
                          "v": [1, 2, 3, 4, 5, 6]})  # fmt: skip
    table = frame.to_arrow()
    assert_same_as_polars(table, lambda m, f: f.group_by(
        m.col("route").str.split("-").list.first().alias("origin"), maintain_order=True).agg(
        n=m.len(), stops=m.col("route").str.split("-").list.len().sum()))  # fmt: skip
    assert_same_as_polars(table, lambda m, f: f.with_columns(
        t=m.col("v").sum().over(m.col("route").str.split("-").list.last()),
        k=m.col("route").str.split("-").list.sort().list.join(",").rank("dense")))  # fmt: skip
    assert_same_as_polars(table, lambda m, f: f.filter(
        m.col("route").str.split("-").list.contains("JFK")))  # fmt: skip


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    values = [f"k{k % 11}-{'x' * (k % 4)}-{k % 7}" if k % 9 else None for k in range(3_000)]
    frame = pl.DataFrame({"s": values})

    def taken(m: Any) -> dict[str, Any]:
        p = m.col("s").str.split("-")
        return {"a": p.list.get(1, null_on_oob=True), "n": p.list.len() + 1,
                "j": p.list.reverse().list.join("+"), "mx": p.list.max(),
                "am": p.list.arg_min(),
                "e": m.col("s").str.split_exact("-", 3).struct.field("field_3"),
                "x": m.col("s").str.splitn("-", 2).struct.field("field_1")}  # fmt: skip

    got = compute_on_tier(cb.lazy(frame).select(**taken(cb)), tier)
    assert_frame_equal(got, frame.select(**taken(pl)))


def test_a_stream_and_dask(tmp_path: Any) -> None:
    values = [f"user{k % 13},host{k % 5},{'x' * (k % 3)}" if k % 9 else None for k in range(200)]
    table = pa.table({"s": pa.array(values, pa.string())})
    assert_stream_and_dask_as_polars(table, lambda m: {
        "h": m.col("s").str.split(",").list.get(1),
        "n": m.col("s").str.split(",").list.len(),
        "l": m.col("s").str.split_exact(",", 2).struct.field("field_2").str.len_chars()},
        tmp_path)  # fmt: skip


def test_the_string_language() -> None:
    frame = pl.DataFrame({"s": ["a-b", "c", None]})
    got = cb.lazy(frame).eval(
        "x = s.str.split('-').list.get(-1); n = s.str.split('-').list.len() + 1; "
        "y = s.str.splitn('-', 2).struct.field('field_1'); "
        "z = s.str.split('-', inclusive=True).list.sort(descending=True).list.first()"
    ).compute()
    want = frame.with_columns(
        x=pl.col("s").str.split("-").list.get(-1), n=pl.col("s").str.split("-").list.len() + 1,
        y=pl.col("s").str.splitn("-", 2).struct.field("field_1"),
        z=pl.col("s").str.split("-", inclusive=True).list.sort(descending=True).list.first())
    assert_frame_equal(got, want)
    with pytest.raises(ExpressionSyntaxError, match=r"unknown method `list.eval`"):
        cb.lazy(frame).eval("x = s.str.split('-').list.eval(1)")


def test_refusals_name_the_expression_and_the_way_out() -> None:
    frame = pl.DataFrame({"s": ["a,b", "c"], "c": pl.Series(["a,b", "c"], dtype=pl.Categorical),
                          "x": [1, 2]})  # fmt: skip
    # past the end: polars raises too (a ComputeError there)
    with pytest.raises(pl.exceptions.ComputeError):
        frame.select(pl.col("s").str.split(",").list.get(1))
    with pytest.raises(InvalidOperationError, match=r"index 1 is out of bounds.*null_on_oob=True"):
        frame.gpu.select(cb.col("s").str.split(",").list.get(1)).compute()
    # the list or struct itself as an output: colbridge has no such columns
    with pytest.raises(UnsupportedOperationError, match=r"is a List\(String\).*list\.get"):
        frame.gpu.select(cb.col("s").str.split(",")).compute()
    with pytest.raises(UnsupportedOperationError, match=r"is a Struct.*struct\.field"):
        frame.gpu.select(cb.col("s").str.splitn(",", 2)).compute()
    with pytest.raises(UnsupportedOperationError, match=r"list\.head\(1\)` is a List"):
        frame.gpu.select(cb.col("s").str.split(",").list.head(1).alias("h")).compute()
    with pytest.raises(UnsupportedOperationError, match=r"no list columns.*`str.split`"):
        frame.gpu.select(cb.col("s").list.len()).compute()
    with pytest.raises(UnsupportedOperationError, match=r"no struct columns.*split_exact"):
        frame.gpu.select(cb.col("s").str.split(",").struct.field("field_0")).compute()
    with pytest.raises(UnsupportedOperationError, match=r"is a Struct.*struct\.field"):
        frame.gpu.select(cb.col("s").str.extract_groups(r"(a)")).compute()
    with pytest.raises(ColumnNotFoundError, match=r"no field 'x'.*\['k', '2'\]"):
        frame.gpu.select(cb.col("s").str.extract_groups(r"(?<k>a)(b)").struct.field("x")).compute()
    with pytest.raises(ColumnNotFoundError, match=r"no field 'b'.*\['field_0', 'field_1'\]"):
        frame.gpu.select(cb.col("s").str.split_exact(",", 1).struct.field("b")).compute()
    # splitting needs a String, as in polars
    with pytest.raises(pl.exceptions.PolarsError):
        frame.select(pl.col("c").str.split(",").list.len())
    with pytest.raises(SchemaError, match=r"needs a String, got categorical"):
        frame.gpu.select(cb.col("c").str.split(",").list.len()).compute()
    with pytest.raises(SchemaError, match=r"needs a String"):
        frame.gpu.select(cb.col("x").str.split(",").list.len()).compute()
    # a regex that can match the empty string places its matches apart in RE2
    with pytest.raises(UnsupportedOperationError, match=r"can match the empty string"):
        frame.gpu.select(cb.col("s").str.split(",*", literal=False).list.len()).compute()
    # arguments checked where they are written
    with pytest.raises(UnsupportedOperationError, match=r"whole number as the index"):
        cb.col("s").str.split(",").list.get(cb.col("x"))
    with pytest.raises(SchemaError, match=r"takes a string"):
        cb.col("s").str.split(",").list.contains(1)  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match=r"`n` must be >= 1"):
        cb.col("s").str.splitn(",", 0)
    with pytest.raises(ColbridgeError, match=r"`list.eval` is not supported"):
        cb.col("s").str.split(",").list.eval(cb.col("x"))


def test_an_invalid_regex_is_an_error_or_null_lists() -> None:
    frame = pl.DataFrame({"s": ["a(b", None]})
    for strict in (True, False):
        def taken(m: Any, f: Any, strict: bool = strict) -> Any:
            p = m.col("s").str.split("(", literal=False, strict=strict)
            return f.select(n=p.list.len(), f=p.list.first(), j=p.list.join("-"))

        assert_same_as_polars(frame.to_arrow(), taken)


def test_tables_whose_hashes_collide_keep_their_own_values() -> None:
    # `hash(-1) == hash(-2)` in CPython: two lookup tables named by their hash alone
    # would hand one table's values to both
    assert hash(("get", -1, True)) == hash(("get", -2, True))
    frame = pl.DataFrame({"s": ["a,b,c", "d", None, "e,f"]})

    def taken(m: Any, f: Any) -> Any:
        p = m.col("s").str.split(",")
        return f.select(last=p.list.get(-1, null_on_oob=True),
                        second_last=p.list.get(-2, null_on_oob=True))  # fmt: skip

    assert_same_as_polars(frame.to_arrow(), taken)
    p = cb.col("s").str.split(",")
    got = frame.gpu.select(a=p.list.get(-1, null_on_oob=True),
                           b=p.list.get(-2, null_on_oob=True)).compute()  # fmt: skip
    assert got.rows() == [("c", "b"), ("d", None), (None, None), ("f", "e")]
