"""The string language where it once parted from the Python API it spells.

A quoted key of ``over`` names a column (as ``over("g")`` does), ``nan`` and the
other named numbers are constants inside ``in (...)``, ``-lit(3)`` negates the
literal (it is not the bare number ``-3``), a string predicate is named as a
string, and chains or calls too long for the engine are refused by the parser.
"""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import ExpressionSyntaxError, SchemaError

FRAME = pl.DataFrame(
    {
        "a": [1, 2, 3, 4],
        "g": ["x", "y", "x", None],
        "b": [float("nan"), 2.5, 1.0, None],
        "u": pl.Series([1, 2, 3, 250], dtype=pl.UInt8),
    }
)


@pytest.mark.parametrize(
    "text", ["z = sum(a).over('g')", "z = over(sum(a), 'g')", 'z = a.sum().over("g")']
)
def test_a_quoted_key_of_over_names_a_column(text: str) -> None:
    want = FRAME.with_columns(z=pl.col("a").sum().over("g"))
    assert_frame_equal(FRAME.gpu.eval(text), want)


@pytest.mark.parametrize(
    ("values", "numbers"),
    [
        ("(nan, 2.5)", [float("nan"), 2.5]),
        ("[inf, 1.0]", [float("inf"), 1.0]),
        ("(-inf, pi, e)", [float("-inf"), 3.141592653589793, 2.718281828459045]),
    ],
)
def test_named_numbers_are_constants_in_a_membership(values: str, numbers: list[float]) -> None:
    want = FRAME.with_columns(z=pl.col("b").is_in(numbers))
    assert_frame_equal(FRAME.gpu.eval(f"z = b in {values}"), want)


def test_negating_lit_is_not_a_bare_negative_number() -> None:
    want = FRAME.with_columns(z=pl.col("u") * -pl.lit(3), w=pl.col("u") * -3)
    assert_frame_equal(FRAME.gpu.eval("z = u * -lit(3); w = u * -3"), want)


@pytest.mark.parametrize(
    "text",
    [
        "z = " + " and ".join(["a > 0"] * 200),
        "z = " + " < ".join(["a"] * 200),
        "z = coalesce(" + ", ".join(["a"] * 250) + ")",
        "z = max_horizontal(" + ", ".join(["a"] * 2000) + ")",
    ],
)
def test_chains_and_calls_too_long_are_refused_by_the_parser(text: str) -> None:
    # refused while parsing, before any plan is built (planning such a chain took
    # minutes, or overflowed Python's recursion)
    refused = r"deeper than 64 levels|more than 64 arguments"
    with pytest.raises(ExpressionSyntaxError, match=refused):
        cb.parse_assignments(text)
    with pytest.raises(ExpressionSyntaxError, match=refused):
        FRAME.gpu.eval(text)


def test_a_string_predicate_is_named_as_a_string() -> None:
    with pytest.raises(SchemaError, match=r'`col\("g"\)` is string, not boolean'):
        FRAME.gpu.filter(cb.col("g")).compute()


def test_names_are_read_as_written_not_normalised() -> None:
    # Python's parser applies NFKC to identifiers: `ﬁ` (U+FB01) read the column `fi`
    df = pl.DataFrame({"\ufb01": [1], "fi": [10], "x\u00b2": [4]})
    got = df.gpu.eval("r = \ufb01 * 2; \ufb01 = \ufb01 + 1")
    assert got.to_dict(as_series=False) == {"\ufb01": [2], "fi": [10], "x\u00b2": [4], "r": [2]}


def test_statements_building_on_each_other_nest_as_deep_as_they_like() -> None:
    # 150 statements `x = sqrt(abs(x)) * 2`, each nesting x one level deeper: a
    # RecursionError (Python's limit) where polars runs them
    df = pl.DataFrame({"x": [1.0, 2.0, None]})
    got = df.gpu.eval("; ".join(["x = sqrt(abs(x)) * 2"] * 150))
    want = df
    for _ in range(150):
        want = want.with_columns(x=pl.col("x").abs().sqrt() * 2)
    assert got["x"].to_list() == want["x"].to_list()


def test_cast_reads_polars_type_names_and_refuses_ambiguous_ones() -> None:
    # 'i8' is how polars prints Int8 but NumPy's code for int64: it silently gave Int64
    df = pl.DataFrame({"x": [300.0, 5.0]})
    for name, want in [("Int8", pl.Int8), ("i16", pl.Int16), ("u32", pl.UInt32),
                       ("f32", pl.Float32), ("UInt64", pl.UInt64), ("Boolean", pl.Boolean)]:
        assert df.gpu.eval(f"r = x.cast('{name}', strict=False)")["r"].dtype == want, name
    for name in ("i8", "u8"):
        with pytest.raises(cb.SchemaError, match="ambiguous"):
            cb.col("x").cast(name)
