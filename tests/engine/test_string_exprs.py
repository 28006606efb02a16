"""Strings and categories in expressions, against polars on generated data.

Plain strings (string, large_string, string_view), Arrow dictionaries, polars
Categorical and Enum, pandas ``str``/``object``/``category``: comparisons
with literals and between columns (by label, whatever the dictionaries), ``is_in``,
lengths, prefix tests, parses, ``when`` building strings, with empty and
non-ASCII strings, nulls, few and many distinct values, slices and chunks.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import (
    ColbridgeError,
    InvalidOperationError,
    UnsupportedOperationError,
)
from colbridge.testing.asserts import assert_same_as_polars
from tests.engine.temporal_data import temporal_tables

SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _strings(data: st.DataObject, names: tuple[str, ...] = ("s", "t")) -> pa.Table:
    return data.draw(temporal_tables([], names=(), strings=names))


def _predicates(m: Any, q: Any) -> Any:
    s, t = m.col("s"), m.col("t")
    return q.with_columns(
        eq=s == "UA", ne=s != "a", lt=s < "b", le=s <= "", gt=s > "b", ge=s >= "日本",
        cols_eq=s == t, cols_lt=s < t, cols_ge=s >= t, isin=s.is_in(["UA", "é", "", "zz"]),
        nchars=s.str.len_chars(), nbytes=s.str.len_bytes(), sw=s.str.starts_with("a"),
        ew=s.str.ends_with("é"), has=s.str.contains("b", literal=True),
        null_eq=s == m.lit(None, dtype=pl.String),
        both=(s == "a") | t.is_in(["b", "z"]), n=s.str.len_chars() + t.str.len_bytes(),
    )  # fmt: skip


@SETTINGS
@given(data=st.data())
def test_predicates_and_lengths(data: st.DataObject) -> None:
    assert_same_as_polars(_strings(data), _predicates)


@pytest.mark.parametrize("kind", ["large_string", "string_view", "dictionary"])
def test_arrow_string_kinds(kind: str) -> None:
    values = ["UA", None, "", "é", "AA", "UA", "b", "日本", "a"] * 3
    s = pa.array(values)
    t = pa.array(list(reversed(values)))
    convert = {"large_string": lambda a: a.cast(pa.large_string()),
               "string_view": lambda a: a.cast(pa.string_view()),
               "dictionary": lambda a: a.dictionary_encode()}[kind]  # fmt: skip
    table = pa.table({"s": convert(s), "t": convert(t)}).slice(5)
    assert_same_as_polars(table, _predicates)


@SETTINGS
@given(data=st.data())
def test_parses(data: st.DataObject) -> None:
    table = _strings(data)

    def steps(m: Any, q: Any) -> Any:
        s = m.col("s")
        return q.with_columns(
            i=s.str.to_integer(strict=False), i64=s.cast(pl.Int64, strict=False),
            i8=s.cast(pl.Int8, strict=False), f=s.cast(pl.Float64, strict=False),
            d=s.str.to_date("%Y-%m-%d", strict=False),
            dtm=s.str.to_datetime("%Y-%m-%d", strict=False),
        )  # fmt: skip

    assert_same_as_polars(table, steps)


def test_strict_parse_raises_only_for_rows_present() -> None:
    t = pa.table({"s": pa.array(["1", "2", "x", None]).dictionary_encode()})
    q = cb.lazy(t.slice(0, 2)).select(i=cb.col("s").cast(pl.String).str.to_integer())
    assert q.compute().column("i").to_pylist() == [1, 2]  # "x" is in the dictionary only
    with pytest.raises(cb.InvalidOperationError, match="strict conversion of strings"):
        cb.lazy(t).select(i=cb.col("s").cast(pl.String).str.to_integer()).compute()
    with pytest.raises(pl.exceptions.ComputeError):
        pl.from_arrow(t).select(pl.col("s").cast(pl.String).str.to_integer())


@SETTINGS
@given(data=st.data())
def test_when_and_fill_null_build_strings(data: st.DataObject) -> None:
    table = _strings(data)

    def steps(m: Any, q: Any) -> Any:
        s, t = m.col("s"), m.col("t")
        return q.with_columns(
            w=m.when(s == "UA").then(m.lit("united")).otherwise(t),
            w2=m.when(s.str.len_chars() > 2).then(s).otherwise(m.lit("short")),
            only=m.when(s.is_null()).then(m.lit("none")).otherwise(m.lit("some")),
            f=s.fill_null("?"), c=m.coalesce(s, t, m.lit("-")),
            upper=s.str.to_uppercase(), up_eq=s.str.to_uppercase() == "UA",
        )  # fmt: skip

    assert_same_as_polars(table, steps)


@SETTINGS
@given(data=st.data())
def test_categories_compare_by_label(data: st.DataObject) -> None:
    table = _strings(data)
    # two categorical columns whose dictionaries differ (each its own values, own order)
    table = pa.table({"s": table.column("s").dictionary_encode(),
                      "t": table.column("t").dictionary_encode()})  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        s, t = m.col("s"), m.col("t")
        return q.with_columns(
            eq=s == t, ne=s != t, lit=s == "UA", lt=s < "b", cat=t.cast(pl.Categorical) == s,
            isin=s.is_in(["a", "é"]), w=m.when(s == "a").then(m.lit("x")).otherwise(t),
            as_str=s.cast(pl.String).str.len_bytes(),
        )  # fmt: skip

    assert_same_as_polars(table, steps)


def test_enum_order_and_codes() -> None:
    df = pl.DataFrame({"e": ["b", "a", None, "c", "b"]},
                      schema={"e": pl.Enum(["c", "b", "a"])})  # fmt: skip
    steps = lambda m, q: q.with_columns(  # noqa: E731
        lt=m.col("e") < "b", eq=m.col("e") == "a", code=m.col("e").to_physical()
    )
    assert_same_as_polars(df.to_arrow(), steps, kinds=("polars",))


def test_frame_kinds_from_pandas() -> None:
    pdf = pd.DataFrame({
        "obj": pd.Series(["UA", None, "AA", "é", "UA"], dtype=object),
        "cat": pd.Categorical(["x", None, "y", "x", "z"]),
        "st": pd.Series(["a", "b", None, "c", ""], dtype="string"),
    })  # fmt: skip
    q = pdf.gpu.with_columns(
        ua=cb.col("obj") == "UA", cx=cb.col("cat") == "x", n=cb.col("st").str.len_bytes(),
        lt=cb.col("cat") < cb.col("obj"), code=cb.col("cat").to_physical(),
    )  # fmt: skip
    out = q.compute()
    expected = pl.from_pandas(pdf).with_columns(
        ua=pl.col("obj") == "UA", cx=pl.col("cat") == "x", n=pl.col("st").str.len_bytes(),
        lt=pl.col("cat") < pl.col("obj"), code=pl.col("cat").to_physical(),
    )  # fmt: skip
    got = pl.from_pandas(out)
    for name in ("ua", "cx", "n", "lt"):
        assert got[name].to_list() == expected[name].to_list(), name
    # polars numbers categories its own way; colbridge gives the frame's codes (pandas')
    assert got["code"].to_list() == [0, None, 1, 0, 2]
    copies = "; ".join(q.last_report.copies)  # type: ignore[union-attr]
    assert "`obj`: pandas `object` values converted to Arrow string (a copy)" in copies
    assert "`obj`: dictionary-encoded once" in copies


def test_string_outputs_keep_their_types() -> None:
    t = pa.table({"s": ["a", None, "b"], "c": pa.array(["x", "y", None]).dictionary_encode()})
    out = cb.lazy(t).select(
        w=cb.when(cb.col("s") == "a").then(cb.lit("A")).otherwise(cb.col("s")),
        k=cb.col("s").cast(pl.Categorical),
    ).compute()
    assert pa.types.is_large_string(out.schema.field("w").type)
    assert pa.types.is_dictionary(out.schema.field("k").type)
    assert out.column("w").to_pylist() == ["A", None, "b"]
    assert out.column("k").to_pylist() == ["a", None, "b"]
    pl_out = cb.lazy(pl.from_arrow(t)).select(k=cb.col("s").cast(pl.Categorical)).compute()
    assert pl_out.schema["k"] == pl.Categorical


def test_filter_on_strings_and_datetimes_mixed() -> None:
    t = pa.table({
        "carrier": ["UA", "AA", "UA", None, "DL", "UA"],
        "origin": ["JFK", "LGA", "EWR", "JFK", "JFK", "LGA"],
        "time_hour": pa.array([dt.datetime(2013, 6, d, h) for d, h in
                               [(1, 5), (2, 7), (3, 9), (4, 11), (5, 13), (6, 23)]]),
    })  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        return q.filter((m.col("carrier") == "UA") & m.col("origin").is_in(["JFK", "LGA"])
                        ).with_columns(h=m.col("time_hour").dt.hour())  # fmt: skip

    assert_same_as_polars(t, steps)


@pytest.mark.parametrize(
    "build",
    [lambda m: m.col("s") > 3, lambda m: m.col("c").str.len_chars(),
     lambda m: m.col("s").sum()],
    ids=["str>int", "cat.len_chars", "sum"],
)  # fmt: skip
def test_refused_with_a_clear_error(build: Any) -> None:
    t = pa.table({"s": ["a", None], "c": pa.array(["x", "y"]).dictionary_encode()})
    with pytest.raises(cb.ColbridgeError, match=r"`.+`"):
        cb.lazy(t).select(x=build(cb)).compute()


def test_a_string_and_a_categorical_join_as_polars_joins_them() -> None:
    t = pa.table({"s": ["a", None], "c": pa.array(["x", "y"]).dictionary_encode()})
    assert_same_as_polars(t, lambda m, q: q.select(x=m.col("s") + m.col("c"),
                                                   y=m.col("c") + m.col("s")))  # fmt: skip


def test_plans_differing_in_strings_share_a_kernel() -> None:
    t = pa.table({"s": ["UA", "AA", None, "DL"] * 5})
    cb.lazy(t).with_columns(x=cb.col("s") == "UA").compute(device="cpu")
    before = cb.cache_info().compiles
    outs = [cb.lazy(t).with_columns(x=cb.col("s") == v).compute(device="cpu") for v in ("AA", "DL")]
    assert cb.cache_info().compiles == before  # the tables differ, the kernel does not
    assert outs[0].column("x").to_pylist()[:4] == [False, True, None, False]
    assert outs[1].column("x").to_pylist()[:4] == [False, False, None, True]


def test_plans_differing_in_strings_write_one_kernel_text() -> None:
    # the text names the kernel's file on disk: one text, so a later process that
    # computes `s == "DL"` loads what `s == "UA"` compiled
    t = pa.table({"s": ["UA", "AA", None, "DL"] * 5, "x": [1.5, None, 2.0, 3.0] * 5})

    def kernels(v: str, pattern: str) -> str:
        q = cb.lazy(t).with_columns(a=cb.col("s") == v, c=cb.col("s").str.contains(pattern),
                                    z=cb.col("x").filter(cb.col("s") != v).sum())  # fmt: skip
        text = q.explain(source=True, device="cpu")
        return text[text.index("kernel source"):text.index("\ncopies:")]

    first = kernels("UA", "U.")
    assert "'UA'" not in first
    assert "U." not in first
    assert kernels("DL", "^D") == first


def test_numpy_tier_agrees_with_compiled_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    table = pa.table({
        "s": ["UA", None, "é", "AA", "", "UA", "12"] * 3,
        "t": pa.array([10**12 * k for k in range(-10, 11)], pa.timestamp("us", "Europe/London")),
    })  # fmt: skip
    s, t = cb.col("s"), cb.col("t")
    q = cb.lazy(table.slice(3)).with_columns(
        a=s == "UA", b=s.is_in(["é", ""]), n=s.str.len_chars(), i=s.str.to_integer(strict=False),
        h=t.dt.hour(), w=t.dt.week(), d=t.dt.date(),
        x=cb.when(s.is_null()).then(cb.lit("-")).otherwise(s),
    ).filter(t.dt.year() > 1950)  # fmt: skip
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "compiled")
    compiled = q.compute(device="cpu")
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "numpy")
    assert q.compute(device="cpu").equals(compiled)
    assert compiled.num_rows > 0


@pytest.mark.parametrize("strict", [True, False])
def test_strings_do_not_cast_to_booleans(strict: bool) -> None:
    # polars has no string -> Boolean cast, strict or not (a comparison does it)
    df = pl.DataFrame({"s": ["true", "a", None]}).with_columns(c=pl.col("s").cast(pl.Categorical))
    for column in ("s", "c"):
        with pytest.raises(pl.exceptions.PolarsError):
            df.select(pl.col(column).cast(pl.Boolean, strict=strict))
        with pytest.raises(InvalidOperationError, match=r"to (Boolean|bool) is not supported"):
            df.gpu.select(cb.col(column).cast(pl.Boolean, strict=strict)).compute()


def test_a_minus_sign_is_no_unsigned_integer() -> None:
    # "-0" parses as 0 for a signed type only (polars' parser): null, or an error if strict
    df = pl.DataFrame({"s": ["-0", "+0", "-00", "+5", "-1", "0"]})
    for dtype in (pl.UInt8, pl.UInt64, pl.Int8):
        got = df.gpu.select(cb.col("s").cast(dtype, strict=False)).compute()
        assert got.equals(df.select(pl.col("s").cast(dtype, strict=False)))
    with pytest.raises(InvalidOperationError):
        pl.DataFrame({"s": ["-0", "3"]}).gpu.select(cb.col("s").cast(pl.UInt8)).compute()


@pytest.mark.parametrize("dtype", [pl.Date, pl.Datetime("us"), pl.Datetime("ms", "UTC")])
def test_strings_cast_to_dates_is_refused_as_in_polars_2(dtype: pl.DataType) -> None:
    df = pl.DataFrame({"s": ["2024-02-29", "x", None]})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        df.select(pl.col("s").cast(dtype, strict=False))
    with pytest.raises(InvalidOperationError, match=r"use `str.to_date"):
        df.gpu.select(cb.col("s").cast(dtype, strict=False)).compute()


@pytest.mark.parametrize("dtype", [pl.Float64, pl.Float32])
def test_categoricals_do_not_parse_as_floats(dtype: pl.DataType) -> None:
    # polars casts a categorical to its integer codes' types only, not by parsing labels
    df = pl.DataFrame({"c": ["1.5", "x", None]}).with_columns(pl.col("c").cast(pl.Categorical))
    with pytest.raises(pl.exceptions.PolarsError):
        df.select(pl.col("c").cast(dtype, strict=False))
    with pytest.raises(InvalidOperationError, match=r"`.cast\(pl.String\).cast\(...\)`"):
        df.gpu.select(cb.col("c").cast(dtype, strict=False)).compute()


_UNICODE_TEXTS = ["é", "١٢", "x\u2028", "\x85", "ß", "a_b", "Ⓐ", "\u200d", "e\u0301", "\x0b",
                  " ", "\u3000", "12", "ab-cd", "[x]", "A1", "", "\t", "\x1c", "²", "Ⅻ",
                  "_"]  # fmt: skip


@pytest.mark.parametrize(
    "pattern",
    [r"\w", r"\d", r"\s", r"^\S$", r"^\w+$", r"\W", r"\D", r"[\w-]+$", r"^[\d]+$", r"[^\d]",
     r"[\s]", r"\\", r"[]x]", r"^[^]a]", r"(?i)A", r"^.$", r"\w\s\d", r"(?-u)\w"],
)  # fmt: skip
def test_regex_classes_are_unicode_as_in_polars(pattern: str) -> None:
    # RE2 reads \d \s \w as ASCII; polars (Rust regex) as Unicode: "é" is a word
    # character, "١" a digit, U+2028 a space
    df = pl.DataFrame({"s": _UNICODE_TEXTS})
    try:
        want = df.select(pl.col("s").str.contains(pattern))
    except pl.exceptions.PolarsError:
        with pytest.raises(ColbridgeError):
            df.gpu.select(cb.col("s").str.contains(pattern)).compute()
        return
    assert df.gpu.select(cb.col("s").str.contains(pattern)).compute().equals(want)


def test_regex_class_set_operations_are_refused() -> None:
    df = pl.DataFrame({"s": ["a", "1"]})
    with pytest.raises(UnsupportedOperationError, match="set operations"):
        df.gpu.select(cb.col("s").str.contains(r"[\w&&[^\d]]")).compute()


@pytest.mark.parametrize("values", [
    [None, np.nan], [1, None], [1.5, None, np.nan], [True, None], [1, 2.5],
    [dt.date(2020, 1, 1), None], [np.int8(3), None], [dt.timedelta(days=1), None],
])  # fmt: skip
def test_pandas_object_columns_take_the_types_polars_gives_them(values: list[Any]) -> None:
    # polars' `from_pandas` types an object column with pyarrow's inference (missing
    # values of several kinds alone: Null); colbridge reads it the same way (a copy)
    pdf = pd.DataFrame({"a": pd.Series(values, dtype=object), "b": range(len(values))})
    exprs = lambda m: [m.col("a"), m.col("a").is_null().alias("n"),  # noqa: E731
                       m.col("a").count().alias("c")]
    got = pl.from_pandas(pdf.gpu.select(exprs(cb)).compute())
    want = pl.from_pandas(pdf).select(exprs(pl))
    assert_frame_equal(got, want)
    q = pdf.gpu.select(cb.col("a").is_null())
    q.compute()
    assert any("pandas `object` values converted to Arrow" in c
               for c in q.last_report.copies)  # type: ignore[union-attr]


BASES = [2, 8, 10, 16, 36]
INTEGER_TYPES = [pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32,
                 pl.UInt64]  # fmt: skip
DIGITS = "0123456789abcfxzAFZ+-_ "


@SETTINGS
@given(values=st.lists(st.one_of(st.none(), st.text(DIGITS, max_size=21)), max_size=20),
       base=st.sampled_from(BASES), dtype=st.sampled_from(INTEGER_TYPES))  # fmt: skip
def test_to_integer_in_every_base_and_type(values: list[str | None], base: int,
                                           dtype: Any) -> None:  # fmt: skip
    # signs, letters of either case past the base, `0x`, `_`, spaces, values past the type
    edges = ["-0", "+", "-", "0x1f", "1_0", " 1", "18446744073709551615", "-9223372036854775808",
             "9223372036854775808", "zz", "FF", "-80", "255", "256", "١٢"]  # fmt: skip
    table = pa.table({"s": pa.array(values + edges, pa.string())})
    assert_same_as_polars(table, lambda m, q: q.select(
        s=m.col("s").str.to_integer(base=base, dtype=dtype, strict=False),
        ok=m.col("s").str.to_integer(base=base, dtype=dtype, strict=False).is_not_null()))
    # strict: polars raises where any present value fails, as colbridge must
    assert_same_as_polars(table.slice(0, len(values)), lambda m, q: q.select(
        m.col("s").str.to_integer(base=base, dtype=dtype)))  # fmt: skip


def test_to_integer_arguments_are_checked_where_written() -> None:
    with pytest.raises(cb.SchemaError, match=r"base is a whole number from 2 to 36"):
        cb.col("s").str.to_integer(base=37)
    with pytest.raises(cb.SchemaError, match=r"an integer type"):
        cb.col("s").str.to_integer(dtype=pl.Float64)
    with pytest.raises(cb.UnsupportedOperationError, match=r"one whole number as the base"):
        cb.col("s").str.to_integer(base=cb.col("b"))  # type: ignore[arg-type]
    frame = pl.DataFrame({"s": ["ff", "-1", None]})
    got = frame.gpu.select(cb.col("s").str.to_integer(base=16, dtype=pl.UInt8, strict=False))
    assert got.compute()["s"].to_list() == [255, None, None]
    assert frame.gpu.eval("h = s.str.to_integer(base=16, strict=False)")["h"].to_list() == [
        255, -1, None]
