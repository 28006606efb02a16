"""The string language keeps its contracts (issue 14, items 1 and 11).

* A bare name is a column of the frame; `e`, `pi`, `nan` and `inf` are the
  constants only where no column (of the input, or made by an earlier step) has
  that name: in `eval`, `parse_expr`, and the CLI's `--with`, `--filter` and `--spec`.
* What the language's own hints suggest is accepted: method calls, keyword
  arguments with the API's parameter names, third arguments; string literals
  compare with string columns and `x in [...]` is `is_in` (issue 17).

Every expectation is computed by polars from the same data.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.cli import main
from colbridge.expr.parser import FUNCTIONS, parse_assignments, parse_expr

CONSTANTS = {"e": math.e, "pi": math.pi, "nan": math.nan, "inf": math.inf}


def frame_with(name: str) -> pl.DataFrame:
    # `d` and a column named like the constant, with nulls and a value that differs from it
    return pl.DataFrame({"d": [1.0, 2.0, None, -3.0], name: [2.0, None, 0.5, 4.0]})


@pytest.mark.parametrize("name", list(CONSTANTS))
def test_a_column_named_like_a_constant_wins_in_eval(name: str) -> None:
    df = frame_with(name)
    got = df.gpu.eval(f"r = d * {name}; s = {name} + 1")
    want = df.with_columns(r=pl.col("d") * pl.col(name), s=pl.col(name) + 1)
    assert_frame_equal(got, want)


@pytest.mark.parametrize("name", list(CONSTANTS))
def test_without_such_a_column_the_name_is_the_constant(name: str) -> None:
    df = pl.DataFrame({"d": [1.0, 2.0, None]})
    got = df.gpu.eval(f"r = d * {name}")
    want = df.with_columns(r=pl.col("d") * CONSTANTS[name])
    assert_frame_equal(got, want)


def test_a_column_made_by_an_earlier_statement_wins_too() -> None:
    df = pl.DataFrame({"d": [1.0, 2.0, None]})
    got = df.gpu.eval("pi = d * 3; r = pi + e")
    want = df.with_columns(pi=pl.col("d") * 3).with_columns(r=pl.col("pi") + math.e)
    assert_frame_equal(got, want)


@pytest.mark.parametrize("kind", ["pyarrow", "pandas"])
def test_names_resolve_on_every_frame_kind_and_in_filters(kind: str) -> None:
    df = frame_with("e")
    frame = df.to_arrow() if kind == "pyarrow" else df.to_pandas()
    got = cb.lazy(frame).filter(parse_expr("e > 1")).with_columns(r=parse_expr("e * 2"))
    out = pl.from_arrow(got.compute()) if kind == "pyarrow" else pl.from_pandas(got.compute())
    want = df.filter(pl.col("e") > 1).with_columns(r=pl.col("e") * 2)
    assert_frame_equal(out, want)


def test_select_of_a_constant_without_a_column_is_one_value() -> None:
    df = pl.DataFrame({"d": [1.0, 2.0]})
    got = df.gpu.select(z=parse_expr("pi * 2")).compute()
    assert_frame_equal(got, df.select(z=pl.lit(math.pi) * 2))


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, pl.DataFrame]:
    df = pl.DataFrame({"d": [1.0, 2.0, None, -3.0, 5.0], "e": [2.0, None, 0.5, 4.0, 8.0]})
    path = tmp_path / "in.parquet"
    df.write_parquet(path)
    return path, df


def test_cli_with_and_filter_read_the_column(files: tuple[Path, pl.DataFrame]) -> None:
    path, df = files
    out = path.parent / "out.parquet"
    rc = main(["run", str(path), "-o", str(out), "-q", "--with", "r = d * e",
               "--with", "c = e - mean(e)", "--filter", "e > 1", "--select", "r,c"])  # fmt: skip
    assert rc == 0
    e = pl.col("e")
    want = df.with_columns(r=pl.col("d") * e, c=e - e.mean()).filter(e > 1).select("r", "c")
    assert_frame_equal(pl.read_parquet(out), want)


def test_cli_spec_reads_the_column(files: tuple[Path, pl.DataFrame]) -> None:
    path, df = files
    out = path.parent / "out.parquet"
    spec = path.parent / "job.toml"
    spec.write_text(
        f'input = "{path}"\noutput = "{out}"\nwith = ["r = d * e", "p = d * pi"]\n'
        'filter = "e < inf"\n'
    )
    assert main(["run", "--spec", str(spec), "-q"]) == 0
    want = df.with_columns(r=pl.col("d") * pl.col("e"), p=pl.col("d") * math.pi).filter(
        pl.col("e") < math.inf
    )
    assert_frame_equal(pl.read_parquet(out), want)


# -- item 11: the language accepts what its hints say ------------------------------------
X = pl.DataFrame({"x": [1.5, 300.0, -2.0, None], "y": [2.0, 2.0, 0.5, 1.0]})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('x.cast("int8", strict=False)', pl.col("x").cast(pl.Int8, strict=False)),
        ('cast(x, "int8", strict=False)', pl.col("x").cast(pl.Int8, strict=False)),
        ('cast(x, "int8", False)', pl.col("x").cast(pl.Int8, strict=False)),
        ('cast(x, dtype="float32")', pl.col("x").cast(pl.Float32)),
        ('round(x, 0, "half_away_from_zero")', pl.col("x").round(0, mode="half_away_from_zero")),
        ('x.round(decimals=1, mode="half_to_even")', pl.col("x").round(1)),
        ("clip(x, lower_bound=0)", pl.col("x").clip(lower_bound=0)),
        ("x.clip(upper_bound=y)", pl.col("x").clip(upper_bound=pl.col("y"))),
        ("x.log(y)", pl.col("x").log(pl.col("y"))),
        ("log(x, base=2)", pl.col("x").log(2)),
        ("x.std(ddof=0) + var(y, ddof=0)", pl.col("x").std(ddof=0) + pl.col("y").var(ddof=0)),
        ("x.fill_null(0).sqrt()", pl.col("x").fill_null(0).sqrt()),
        ("x.is_between(0, y, closed='left')", pl.col("x").is_between(0, pl.col("y"), "left")),
        ("x.is_in([1.5, -2.0])", pl.col("x").is_in([1.5, -2.0])),
        ("is_in(x, [1.5, None], nulls_equal=True)",
         pl.col("x").is_in([1.5, None], nulls_equal=True)),
        ("sum_horizontal(x, y, ignore_nulls=False)",
         pl.sum_horizontal("x", "y", ignore_nulls=False)),
        ("max_horizontal(x, y) - min_horizontal(x, y)",
         pl.max_horizontal("x", "y") - pl.min_horizontal("x", "y")),
        ("(x > 0).and_(y > 1, x < 100)",
         (pl.col("x") > 0).and_(pl.col("y") > 1, pl.col("x") < 100)),
        ("x + lit(None, dtype='float64')", pl.col("x") + pl.lit(None, dtype=pl.Float64)),
        ("x.truncate(0) + x.degrees()", pl.col("x").truncate(0) + pl.col("x").degrees()),
    ],
)  # fmt: skip
def test_methods_keywords_and_third_arguments(text: str, expected: pl.Expr) -> None:
    got = X.gpu.select(z=parse_expr(text)).compute()
    assert_frame_equal(got, X.select(z=expected))


def test_the_strict_cast_hint_is_valid_in_the_language() -> None:
    with pytest.raises(cb.InvalidOperationError, match=r"\.cast\(\.\.\., strict=False\)"):
        X.gpu.eval('z = x.cast("int8")')
    # ... and doing what it says works
    got = X.gpu.eval('z = x.cast("int8", strict=False)')
    assert got["z"].to_list() == [1, None, -2, None]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("carrier == 'UA'", pl.col("carrier") == "UA"),
        ("'UA' != carrier", pl.lit("UA") != pl.col("carrier")),
        ("carrier.is_in(['UA', 'AA'])", pl.col("carrier").is_in(["UA", "AA"])),
        ("is_in(carrier, ['UA', None], nulls_equal=True)",
         pl.col("carrier").is_in(["UA", None], nulls_equal=True)),
        ("x in [1.5, -2.0]", pl.col("x").is_in([1.5, -2.0])),
        ("x not in (1.5,)", ~pl.col("x").is_in([1.5])),
    ],
)  # fmt: skip
def test_strings_and_membership_in_the_language(text: str, expected: pl.Expr) -> None:
    df = X.with_columns(carrier=pl.Series(["UA", None, "AA", "DL"]))
    got = df.gpu.select(z=parse_expr(text)).compute()
    assert_frame_equal(got, df.select(z=expected))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("clip(x, lo=1)", r"`clip` has no keyword argument `lo`; its keyword arguments: "
         r"lower_bound, upper_bound"),
        ("x.cast(dtype=int8)", r"`dtype` must be a string"),
        ("x.cast('int8', strict=1)", r"`strict` must be True or False"),
        ("round(x, 1.5)", r"`decimals` must be a whole number"),
        ("x.nope()", r"unknown method `nope`"),
        ("x.__class__()", r"unknown method `__class__`"),
        ("x.col('a')", r"unknown method `col`"),
        ("cast(x)", r"`cast` needs `dtype`"),
        ("clip(x, 1, lower_bound=2)", r"got `lower_bound` twice"),
        ("sqrt(x=a)", r"`sqrt` takes positional arguments only"),
        ("coalesce()", r"needs at least one expression"),
        ("x in y", r"`in` takes a tuple or list of values"),
        ("sqrt(**kw)", r"`\*\*` arguments are not allowed"),
        ("is_in(x, y)", r"must be a list of values"),
    ],
)  # fmt: skip
def test_refusals_name_what_the_context_accepts(text: str, match: str) -> None:
    with pytest.raises(cb.ExpressionSyntaxError, match=match):
        parse_expr(text)


def test_every_example_in_a_hint_parses() -> None:
    # each function's example (shown in its errors) is itself valid text
    for name, fn in FUNCTIONS.items():
        assert fn.example, name
        parse_expr(fn.example)


def test_unknown_function_lists_only_callable_names() -> None:
    with pytest.raises(cb.ExpressionSyntaxError) as info:
        parse_expr("open(x)")
    listed = str(info.value).split("allowed: ")[1].split("\n")[0].split(", ")
    assert sorted(listed) == sorted(FUNCTIONS)
    for name in listed:  # each listed name really is callable
        assert name in FUNCTIONS


def test_assignments_accept_methods() -> None:
    parsed = parse_assignments('z = x.cast("float32").sqrt(); w = z.clip(0, 1)')
    assert [n for n, _ in parsed] == ["z", "w"]


def test_string_language_matches_the_api_on_random_data() -> None:
    rng = np.random.default_rng(5)
    n = 1_000
    t = pa.table(
        {
            "a": pa.array(rng.normal(size=n), mask=rng.random(n) < 0.1),
            "b": pa.array(rng.integers(-5, 5, n).astype(np.int16), mask=rng.random(n) < 0.1),
        }
    ).slice(3)
    df = pl.from_arrow(t)
    text = "clip(a, b, 2).log(2) + round(a * 10, 1, mode='half_away_from_zero') - b.is_in([1, 2])"
    a, b = pl.col("a"), pl.col("b")
    want = df.select(
        z=a.clip(b, 2).log(2) + (a * 10).round(1, mode="half_away_from_zero") - b.is_in([1, 2])
    )
    assert_frame_equal(df.gpu.select(z=parse_expr(text)).compute(), want)
