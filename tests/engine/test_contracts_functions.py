"""Functions peer users missed (issue 14), each with polars' semantics and result types.

`log` with an expression base, `degrees`/`radians`, `cot`, `truncate`, `is_between`
(every `closed`), `is_in`, `max/min/sum/mean_horizontal` (their null rules, both
`ignore_nulls`), `all/any_horizontal`, `clip` with expression bounds, `coalesce` by
name, `and_`/`or_` of several. polars is the oracle: each case runs on the same
generated data (every numeric type and bool, nulls, NaN, ±inf, -0.0, a slice whose
offset is not a multiple of 8, two chunks, and an empty frame), and the frames
must be equal, types included. To keep compiles few, one `select` computes a
function for many column types at once (one fused kernel).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb

NUMERIC = {
    "i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64(),
    "u8": pa.uint8(), "u16": pa.uint16(), "u32": pa.uint32(), "u64": pa.uint64(),
    "f32": pa.float32(), "f64": pa.float64(),
}  # fmt: skip
TYPES = {**NUMERIC, "b": pa.bool_()}
FLOATS = ("f32", "f64")


def column(rng: np.random.Generator, arrow_type: pa.DataType, n: int) -> pa.Array:
    """Random values with the edge values of the type; NaN, ±inf, ±0.0 for floats; nulls."""
    if pa.types.is_boolean(arrow_type):
        values: Any = rng.integers(0, 2, n).astype(bool)
    elif pa.types.is_floating(arrow_type):
        dtype = arrow_type.to_pandas_dtype()
        values = rng.normal(scale=30.0, size=n).astype(dtype)
        special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 0.5, 10.0], dtype=dtype)
        pick = rng.random(n) < 0.3
        values[pick] = rng.choice(special, int(pick.sum()))
    else:
        info = np.iinfo(arrow_type.to_pandas_dtype())
        small = rng.integers(max(info.min, -40), min(info.max, 40), n, endpoint=True)
        edge = rng.choice(np.array([info.min, info.max, 0, 1, 2, 10], dtype=object), n)
        values = np.where(rng.random(n) < 0.85, small, edge).astype(arrow_type.to_pandas_dtype())
    return pa.array(values, type=arrow_type, mask=rng.random(n) < 0.15)


def frames(names: dict[str, pa.DataType], seed: int = 0) -> list[pl.DataFrame]:
    """The same columns as: one sliced chunk (offset 3), two chunks, and no rows."""
    rng = np.random.default_rng(seed)
    n = 203
    table = pa.table({k: column(rng, t, n + 3) for k, t in names.items()}).slice(3)
    chunked = pa.concat_tables([table.slice(0, 77), table.slice(77)])
    empty = table.slice(0, 0)
    out = [pl.from_arrow(table), pl.from_arrow(chunked, rechunk=False), pl.from_arrow(empty)]
    assert out[1].n_chunks() == 2
    return [f for f in out if isinstance(f, pl.DataFrame)]


def check(names: dict[str, pa.DataType], build: Callable[[Any], dict[str, Any]],
          seed: int = 0, exact: bool = True) -> None:  # fmt: skip
    """Every output of ``build(module)`` computed by colbridge equals polars', on every frame."""
    for frame in frames(names, seed):
        try:
            want = frame.select(**build(pl))
        except pl.exceptions.PolarsError:
            with pytest.raises(cb.ColbridgeError):
                frame.gpu.select(**build(cb)).compute()
            continue
        got = frame.gpu.select(**build(cb)).compute()
        if exact:
            assert_frame_equal(got, want, check_exact=True)
        else:
            assert_close(got, want)


def assert_close(got: pl.DataFrame, want: pl.DataFrame) -> None:
    """Same schema, nulls and NaN; floats within a few units in the last place.

    For logarithms: polars divides by ``ln(base)`` computed in the column's type, so
    a float32 ``log()`` is ``ln(x) / ln(2.7182817f)``, one unit in the last place
    off the true logarithm colbridge computes (docs/semantics.md).
    """
    assert got.schema == want.schema
    for name in want.columns:
        a, b = got[name], want[name]
        assert a.is_null().to_list() == b.is_null().to_list(), name
        if not b.dtype.is_float():
            assert a.to_list() == b.to_list(), name
            continue
        x, y = a.drop_nulls().to_numpy(), b.drop_nulls().to_numpy()
        tol = 4 * float(np.finfo(y.dtype).eps)
        np.testing.assert_allclose(x, y, rtol=tol, atol=0, equal_nan=True, err_msg=name)


def each(names: dict[str, pa.DataType], fn: Callable[[Any, Any], Any]) -> Callable[[Any], dict]:
    return lambda m: {k: fn(m, m.col(k)) for k in names}


@pytest.mark.parametrize("func", ["degrees", "radians", "cot"])
def test_trigonometry_helpers(func: str) -> None:
    names = {k: t for k, t in NUMERIC.items()}
    check(names, each(names, lambda m, x: getattr(x, func)()), exact=func != "cot")
    # booleans are refused, as by polars
    with pytest.raises(pl.exceptions.PolarsError):
        pl.DataFrame({"b": [True]}).select(getattr(pl.col("b"), func)())
    with pytest.raises(cb.SchemaError, match="not defined for bool"):
        pl.DataFrame({"b": [True]}).gpu.select(getattr(cb.col("b"), func)()).compute()


@pytest.mark.parametrize("decimals", [0, 1, 3])
def test_truncate(decimals: int) -> None:
    names = {k: t for k, t in NUMERIC.items()}
    check(names, each(names, lambda m, x: x.truncate(decimals)))
    with pytest.raises(cb.UnsupportedOperationError, match="whole number >= 0"):
        cb.col("x").truncate(-1)


PAIRS = [("f32", "f64"), ("f64", "f32"), ("i8", "u16"), ("u8", "f32"), ("i32", "i64"),
         ("b", "f64"), ("f32", "i8"), ("u64", "f64"), ("i16", "i16"), ("f64", "b")]  # fmt: skip


def pairs_frame() -> dict[str, pa.DataType]:
    names = {}
    for a, b in PAIRS:
        names[f"x_{a}_{b}"] = TYPES[a]
        names[f"y_{a}_{b}"] = TYPES[b]
    return names


def on_pairs(fn: Callable[[Any, Any, Any], Any]) -> Callable[[Any], dict]:
    return lambda m: {f"{a}_{b}": fn(m, m.col(f"x_{a}_{b}"), m.col(f"y_{a}_{b}")) for a, b in PAIRS}


def test_log_with_an_expression_base() -> None:
    check(pairs_frame(), on_pairs(lambda m, x, y: x.log(y)), exact=False)


@pytest.mark.parametrize("base", [2, 2.0, 0.5, 10, math.e])
def test_log_with_a_number_base(base: float) -> None:
    names = {k: NUMERIC[k] for k in ("i8", "u32", "f32", "f64")}
    check(names, each(names, lambda m, x: x.log(base)), exact=False)


def test_log_with_a_base_next_to_float32_stays_dynamic() -> None:
    f = pl.DataFrame({"x": pl.Series([2.0], dtype=pl.Float32), "i": pl.Series([8], dtype=pl.Int8)})
    for build in (
        lambda m: m.col("x") * m.col("i").log(2.0),
        lambda m: m.col("x") / m.lit(8).log(2.0),
    ):
        want = f.select(z=build(pl))
        assert want.schema["z"] == pl.Float32
        assert_frame_equal(f.gpu.select(z=build(cb)).compute(), want)


@pytest.mark.parametrize("closed", ["both", "left", "right", "none"])
def test_is_between_with_expression_and_number_bounds(closed: str) -> None:
    names = {**pairs_frame(), "lo": pa.float64()}
    check(names, lambda m: {
        **on_pairs(lambda m_, x, y: x.is_between(y, 20, closed))(m),
        **{f"n_{k}": m.col(k).is_between(-5, m.col("lo"), closed)
           for k in ("x_i8_u16", "y_f32_f64")},
    })  # fmt: skip
    with pytest.raises(cb.UnsupportedOperationError, match="closed='middle'"):
        cb.col("x").is_between(1, 2, closed="middle")
    # a bound given as None: every row null in polars (a null in a bound column is Kleene's)
    check(names, lambda m: {
        "lo_none": m.col("x_i8_u16").is_between(None, 5, closed),
        "hi_none": m.col("y_f32_f64").is_between(-1, None, closed),
    })  # fmt: skip


@pytest.mark.parametrize("nulls_equal", [False, True])
def test_is_in(nulls_equal: bool) -> None:
    ints = [0, 1, -1, 2, 10, 300, -300, 2**40, None]
    floats = [0.5, -0.0, math.nan, math.inf, 10.0, None]
    names = dict(NUMERIC)
    check(names, lambda m: {
        k: m.col(k).is_in(floats if k in FLOATS else ints, nulls_equal=nulls_equal)
        for k in names
    })  # fmt: skip
    check({"b": pa.bool_()}, lambda m: {
        "b": m.col("b").is_in([True, None], nulls_equal=nulls_equal),
        "e": m.col("b").is_in([]),
    })  # fmt: skip


def test_is_in_refuses_like_polars() -> None:
    df = pl.DataFrame({"i": [1, 2], "f": [1.0, 2.0]})
    for expr in (lambda m: m.col("i").is_in([1.5]), lambda m: m.col("f").is_in([1, 2]),
                 lambda m: m.col("i").is_in([True])):  # fmt: skip
        with pytest.raises(pl.exceptions.PolarsError):
            df.select(expr(pl))
        with pytest.raises(cb.SchemaError, match="cannot look for"):
            df.gpu.select(expr(cb)).compute()
    strings = pl.DataFrame({"c": ["UA", None]})
    with pytest.raises(pl.exceptions.PolarsError):
        strings.select(pl.col("c").is_in([1]))
    with pytest.raises(cb.SchemaError, match="a string column's `is_in` takes strings"):
        strings.gpu.select(cb.col("c").is_in([1])).compute()
    with pytest.raises(cb.UnsupportedOperationError, match="at most 64"):
        cb.col("i").is_in(list(range(65)))


# the common type is joined from left to right, as polars does: ("i8", "u16", "f32") is
# Float64, ("f32", "i8", "u16") Float32; ("i8", "u64", "f32") needs int128 on the way
GROUPS = [("f32", "f64"), ("i8", "u8", "i16"), ("b", "i32"), ("f32", "i8", "u32"), ("b", "b"),
          ("f64",), ("i64", "f64", "f32", "u8", "i8"), ("u64", "f64"), ("i8", "u16", "f32"),
          ("f32", "i8", "u16"), ("i8", "u64", "f32"), ("b", "i8", "u32")]  # fmt: skip


def groups_frame() -> dict[str, pa.DataType]:
    return {f"g{g}_{i}": TYPES[t] for g, group in enumerate(GROUPS) for i, t in enumerate(group)}


def on_groups(fn: Callable[[Any, list[str]], Any]) -> Callable[[Any], dict]:
    return lambda m: {
        f"g{g}": fn(m, [f"g{g}_{i}" for i in range(len(group))]) for g, group in enumerate(GROUPS)
    }


@pytest.mark.parametrize("name", ["max_horizontal", "min_horizontal"])
def test_min_max_horizontal(name: str) -> None:
    check(groups_frame(), on_groups(lambda m, cols: getattr(m, name)(*cols)))
    check(groups_frame(), on_groups(lambda m, cols: getattr(m, name)(m.col(cols[0]), 3)), seed=1)


@pytest.mark.parametrize("ignore_nulls", [True, False])
@pytest.mark.parametrize("name", ["sum_horizontal", "mean_horizontal"])
def test_sum_mean_horizontal(name: str, ignore_nulls: bool) -> None:
    build = on_groups(lambda m, cols: getattr(m, name)(*cols, ignore_nulls=ignore_nulls))
    check(groups_frame(), build, exact=name == "sum_horizontal")


def test_all_any_horizontal_and_and_or_of_several() -> None:
    names = {"p": pa.bool_(), "q": pa.bool_(), "r": pa.bool_(), "i": pa.int16(), "j": pa.int16()}
    check(names, lambda m: {
        "all": m.all_horizontal("p", "q", m.col("r")),
        "any": m.any_horizontal(m.col("p"), "q", "r"),
        "and": m.col("p").and_(m.col("q"), m.col("r")),
        "or": m.col("p").or_(m.col("q"), m.col("r")),
        "bits": m.col("i").and_(m.col("j"), 7),
    })  # fmt: skip


def test_all_any_horizontal_cast_numbers_to_boolean() -> None:
    # polars casts each argument to Boolean (non-zero and NaN true); `&`/`|` of the
    # integers bit by bit gave 3 | 300 = 303, an integer column
    names = {"p": pa.bool_(), "i": pa.int16(), "u": pa.uint8(), "f": pa.float64()}
    check(names, lambda m: {
        "all": m.all_horizontal("i", "u"),
        "any": m.any_horizontal("i", m.col("f")),
        "mixed": m.all_horizontal("p", "f", m.col("u") - 1),
        "one": m.any_horizontal("u"),
        "lits": m.any_horizontal(m.lit(3), m.lit(300, dtype=pl.Int64)),
        "null": m.all_horizontal(None, "i"),
    })  # fmt: skip


def test_clip_with_expression_bounds() -> None:
    names = {**pairs_frame(), "lo": pa.float64(), "hi": pa.float64()}
    check(names, lambda m: {
        "f": m.col("y_f32_f64").clip(m.col("lo"), m.col("hi")),
        "f_lo": m.col("y_f32_f64").clip(m.col("lo")),
        "f_hi": m.col("x_f64_f32").clip(upper_bound=m.col("hi")),
        "f_mixed": m.col("x_f64_f32").clip(-1.0, m.col("hi")),
        "i_u": m.col("x_i8_u16").clip(m.col("x_i16_i16"), 30),
        "names": m.col("y_f32_f64").clip("lo", "hi"),
    })  # fmt: skip


def test_clip_bounds_are_cast_strictly_like_polars() -> None:
    df = pl.DataFrame({"i": pl.Series([1, 2, 3], dtype=pl.Int8), "f": [2.7, -1.5, 300.0]})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        df.select(pl.col("i").clip(pl.col("f")))
    with pytest.raises(cb.InvalidOperationError, match="strict cast to int8"):
        df.gpu.select(cb.col("i").clip(cb.col("f"))).compute()
    small = df.head(2)
    assert_frame_equal(small.gpu.select(cb.col("i").clip(cb.col("f"))).compute(),
                       small.select(pl.col("i").clip(pl.col("f"))))  # fmt: skip


def test_coalesce_takes_column_names() -> None:
    names = {"a": pa.float64(), "b": pa.float64(), "c": pa.int32()}
    check(names, lambda m: {"z": m.coalesce("a", "b", m.col("c")), "w": m.coalesce(["a", "c"])})


def test_issue_examples_give_colbridge_errors_or_work() -> None:
    df = pl.DataFrame({"a": [8.0, 9.0], "b": [2.0, 3.0]})
    # log with an expression base works
    assert df.gpu.select(cb.col("a").log(cb.col("b"))).compute()["a"].to_list() == pytest.approx(
        [3.0, 2.0]
    )
    # clip("min") names a column, as in polars: a missing column is a clear error
    with pytest.raises(cb.ColumnNotFoundError, match="column `min` not found"):
        df.gpu.select(cb.col("a").clip("min")).compute()
    with pytest.raises(cb.SchemaError, match="cannot use dict"):
        cb.col("a").clip({"lo": 1})
