"""Positions, counts and small polars functions, against polars.

``arg_true``, ``arg_unique``, ``unique_counts``, ``cb.arg_where``, ``cb.arg_sort_by``,
``cb.row_index``, ``item``, ``top_k_by``/``bottom_k_by``, ``limit``, ``cb.format``,
``cb.from_epoch``, ``cb.head``/``cb.tail``/``cb.approx_n_unique``: as `select` outputs,
as reductions' inputs, per group in ``agg`` and per window of ``over``, over integers,
floats with NaN, booleans and strings with nulls, null keys, sliced and chunked columns
and empty frames; output names and types as polars gives them; the string language.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import InvalidOperationError, SchemaError
from colbridge.expr.parser import parse_expr
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from tests.ordered.ordered_data import cut_table


def _table(n: int, seed: int, *, groups: int, offset: int, chunks: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    total = n + offset
    table = pa.table({
        "g": pa.array(rng.integers(0, groups, total), mask=rng.random(total) < 0.1),
        "x": pa.array(rng.choice([-1.5, 0.0, 2.0, np.nan], total), mask=rng.random(total) < 0.2),
        "i": pa.array(rng.integers(-3, 4, total), mask=rng.random(total) < 0.2),
        "b": pa.array(rng.random(total) < 0.5, mask=rng.random(total) < 0.2),
        "s": pa.array([f"s{v}" for v in rng.integers(0, 3, total)], mask=rng.random(total) < 0.2),
        "r": rng.permutation(total),  # distinct keys: `top_k_by` picks no tie
        "t": rng.integers(-10**9, 10**10, total),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


_SETTINGS = settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
_FRAMES = {"n": st.sampled_from([0, 1, 3, 8, 40]), "seed": st.integers(0, 2**31 - 1),
           "groups": st.sampled_from([1, 3]), "offset": st.sampled_from([0, 3]),
           "chunks": st.sampled_from([1, 2])}  # fmt: skip


@_SETTINGS
@given(**_FRAMES, column=st.sampled_from(["x", "i", "b", "s"]),
       context=st.sampled_from(["agg", "over", "select"]))  # fmt: skip
def test_positions_and_counts_equal_polars(
    n: int, seed: int, groups: int, offset: int, chunks: int, column: str, context: str
) -> None:
    table = _table(n, seed, groups=groups, offset=offset, chunks=chunks)

    def steps(m: Any, q: Any) -> Any:
        x = m.col(column)
        reduced = [m.col("b").arg_true().sum().alias("true_at"),
                   x.arg_unique().max().alias("first_at"),
                   x.unique_counts().max().alias("most"),
                   m.arg_where(m.col("i") > 0).len().alias("where"),
                   x.limit(2).n_unique().alias("limit"),
                   m.col("s").top_k_by("r", 2).min().alias("top"),
                   x.bottom_k_by(["r"], 3).len().alias("bottom"),
                   x.filter(m.col("r") == 0).item(allow_empty=True).alias("item")]  # fmt: skip
        if context == "agg":
            return q.group_by("g", maintain_order=True).agg(reduced)
        if context == "over":
            return q.select(m.col("g"), *[e.over("g") for e in reduced],
                            m.arg_sort_by("r", "i").over("g").alias("order"))  # fmt: skip
        return q.select(reduced)

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


@_SETTINGS
@given(**_FRAMES, column=st.sampled_from(["x", "i", "b", "s"]),
       context=st.sampled_from(["agg", "over", "ordered", "select"]))  # fmt: skip
def test_first_and_last_ignoring_nulls_equal_polars(
    n: int, seed: int, groups: int, offset: int, chunks: int, column: str, context: str
) -> None:
    table = _table(n, seed, groups=groups, offset=offset, chunks=chunks)

    def steps(m: Any, q: Any) -> Any:
        x = m.col(column)
        values = [x.first(ignore_nulls=True).alias("first"),
                  x.last(ignore_nulls=True).alias("last"),
                  x.first(ignore_nulls=False).alias("first_or_null")]  # fmt: skip
        if context == "agg":
            return q.group_by("g", maintain_order=True).agg(values)
        if context == "over":
            return q.select(m.col("g"), *[e.over("g") for e in values])
        if context == "ordered":
            return q.with_columns(*[e.over("g", order_by="r") for e in values])
        return q.select(values)

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_first_and_last_ignoring_nulls_in_the_string_language() -> None:
    df = pl.DataFrame({"x": [None, 1.0, None, 3.0, None]})
    got = df.gpu.select(a=parse_expr("x.first(ignore_nulls=True)"),
                        b=parse_expr("last(x, ignore_nulls=True)"),
                        c=parse_expr("x.first()")).compute()  # fmt: skip
    assert got.rows() == [(1.0, 3.0, None)]
    with pytest.raises(SchemaError, match="ignore_nulls"):
        cb.col("x").first(ignore_nulls=1)  # type: ignore[arg-type]


@_SETTINGS
@given(**_FRAMES, column=st.sampled_from(["x", "i", "b", "s"]),
       descending=st.booleans(), nulls_last=st.booleans())  # fmt: skip
def test_outputs_with_their_own_rows_equal_polars(n: int, seed: int, groups: int, offset: int,
                                                  chunks: int, column: str, descending: bool,
                                                  nulls_last: bool) -> None:  # fmt: skip
    table = _table(n, seed, groups=groups, offset=offset, chunks=chunks)
    checks = [
        lambda m, q: q.select(m.col("b").arg_true()),
        lambda m, q: q.select(m.col(column).arg_unique()),
        lambda m, q: q.select(m.col(column).unique_counts()),
        lambda m, q: q.select(m.arg_where(m.col(column).is_null())),
        lambda m, q: q.select(m.arg_sort_by(column, "r", descending=[descending, False],
                                            nulls_last=nulls_last)),
        lambda m, q: q.with_columns(m.row_index(), m.row_index("in_g").over("g")),
        lambda m, q: q.select(m.format("{}-{}!", column, m.col("i") * 2)),
        lambda m, q: q.select(m.format("at {}: {}", m.col("i") + 1, column)),
        lambda m, q: q.select(m.col(column).limit(3), m.head("r", 3), m.approx_n_unique("i")),
    ]
    for steps in checks:
        assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))
    # polars gives the k values in no set order: compared sorted
    for build in (lambda m: m.col(column).top_k_by("r", 3), lambda m: m.col(column).bottom_k_by(
            "r", 2, reverse=True)):  # fmt: skip
        got = pl.from_arrow(cb.lazy(table).select(build(cb)).compute())
        want = pl.from_arrow(table).select(build(pl))
        assert_frame_equal(got.sort(column), want.sort(column))


@pytest.mark.parametrize("unit", ["d", "s", "ms", "us", "ns"])
def test_from_epoch(unit: str) -> None:
    values = [0, 1, -86_400, 1_700_000_000, None] if unit != "d" else [0, -1, 19_000, None]
    table = pa.table({"t": pa.array(values, pa.int64()), "f": pa.array([1.9] * len(values))})
    assert_same_as_polars(table, lambda m, q: q.select(
        m.from_epoch("t", unit), f=m.from_epoch(m.col("f"), unit)))  # fmt: skip
    with pytest.raises(SchemaError, match=r"from_epoch\(time_unit='h'\)"):
        cb.from_epoch("t", "h")  # type: ignore[arg-type]


def test_item_raises_naming_the_expression() -> None:
    df = pl.DataFrame({"g": [1, 1, 2], "x": [1, 2, 3]})
    assert df.gpu.select(cb.col("x").filter(cb.col("x") > 2).item()).compute().item() == 3
    got = df.gpu.group_by("g", maintain_order=True).agg(cb.col("x").filter(cb.col("x") > 1)
                                                        .item()).compute()  # fmt: skip
    assert got.rows() == [(1, 2), (2, 3)]
    message = r"`col\(\"x\"\)\.item\(\)`: expected a single value .*allow_empty=True"
    with pytest.raises(InvalidOperationError, match=message):
        df.gpu.select(cb.col("x").item()).compute()
    with pytest.raises(InvalidOperationError, match=r"expected a single value"):
        df.gpu.group_by("g").agg(cb.col("x").item()).compute()  # group 1 has two
    with pytest.raises(pl.exceptions.ComputeError):  # polars, on the same frame
        df.group_by("g").agg(pl.col("x").item())
    none = df.gpu.select(cb.col("x").filter(cb.col("x") > 5).item(allow_empty=True)).compute()
    assert none.item() is None


def test_top_k_by_keeps_nulls_last_and_names_the_values() -> None:
    df = pl.DataFrame({"name": ["a", "b", "c", "d"], "score": [2, None, 9, 5]})
    got = df.gpu.select(top=cb.col("name").top_k_by("score", 3),
                        low=cb.col("name").bottom_k_by("score", 3)).compute()  # fmt: skip
    assert got.rows() == [("c", "a"), ("d", "d"), ("a", "c")]
    with pytest.raises(SchemaError, match=r"`top_k_by\(reverse=\[True, False\]\)`: 2 flag"):
        cb.col("name").top_k_by("score", 2, reverse=[True, False])


def test_bad_keys_and_names_are_refused_by_name() -> None:
    with pytest.raises(SchemaError, match=r"`arg_sort_by` needs at least one key"):
        cb.arg_sort_by([])
    with pytest.raises(SchemaError, match=r"`top_k_by` keys are column names or expressions"):
        cb.col("x").top_k_by(5, 2)
    with pytest.raises(SchemaError, match=r"`row_index\(5\)`: the name is a string"):
        cb.row_index(5)  # type: ignore[arg-type]


def test_format_needs_one_argument_per_placeholder() -> None:
    with pytest.raises(SchemaError, match=r"2 placeholder\(s\) `\{\}` for 1 argument"):
        cb.format("{} and {}", "a")
    df = pl.DataFrame({"a": [1, None]})
    assert df.gpu.select(cb.format("none")).compute().rows() == [("none",)]
    assert df.select(pl.format("none")).rows() == [("none",)]


def test_format_specs_are_refused_by_name() -> None:
    # polars 2.2 reads `{:.2f}`-like specs; colbridge names the spec and the way round it
    # (it counted them as no placeholder at all before)
    df = pl.DataFrame({"x": [1.23456, 2.0], "i": [5, 255]})
    assert df.select(pl.format("{:.2f}", "x")).rows() == [("1.23",), ("2.00",)]
    with pytest.raises(cb.UnsupportedOperationError, match=r"the format spec `\{:\.2f\}` is not "
                       r"supported.*`\.round\(2\)`.*plain `\{\}`"):  # fmt: skip
        cb.format("{:.2f} and {}", "x", "i")
    got = df.gpu.select(cb.format("{} and {}", cb.col("x").round(2), "i")).compute()
    assert got.rows() == [("1.23 and 5",), ("2.0 and 255",)]


def test_the_string_language() -> None:
    df = pl.DataFrame({"t": [0, 86_400, None], "a": [3, 1, None], "b": [True, None, True],
                       "g": [1, 2, 1], "s": ["x", None, "y"]})  # fmt: skip
    got = cb.lazy(df).eval(
        "x = sum(arg_true(b))\ny = a.arg_unique().len()\nz = g.unique_counts().max()\n"
        "w = a.limit(2).sum()\nv = a.filter(g == 2).item()\nu = s.top_k_by(a, 1).first()\n"
        "r = sum(arg_where(a > 1))\nf = format('{} is {}', s, a)\nd = from_epoch(t, 's')\n"
        "i = row_index()\no = arg_sort_by([g, a], descending=[True, False])"
    ).compute()
    want = df.with_columns(
        x=pl.col("b").arg_true().sum(), y=pl.col("a").arg_unique().len(),
        z=pl.col("g").unique_counts().max(), w=pl.col("a").limit(2).sum(),
        v=pl.col("a").filter(pl.col("g") == 2).item(), u=pl.col("s").top_k_by("a", 1).first(),
        r=pl.arg_where(pl.col("a") > 1).sum(), f=pl.format("{} is {}", "s", "a"),
        d=pl.from_epoch("t", "s"), i=pl.row_index(),
        o=pl.arg_sort_by(["g", "a"], descending=[True, False]),
    )  # fmt: skip
    assert_frame_equal(got, want)


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    frame = pl.DataFrame({"g": [1, 2, 1, 3, 3, 3] * 300, "x": [None, 2.0, 3.0, 3.0, 5.0, 5.0] * 300,
                          "r": np.arange(1800)[::-1]})  # fmt: skip

    def outputs(m: Any) -> list[Any]:
        x = m.col("x")
        return [x.is_null().arg_true().sum().alias("a"), x.arg_unique().len().alias("b"),
                x.unique_counts().max().alias("c"), x.top_k_by("r", 4).sum().alias("d"),
                x.filter(m.col("r") == 7).item(allow_empty=True).alias("e")]  # fmt: skip

    q = cb.lazy(frame).group_by("g", maintain_order=True).agg(outputs(cb))
    want = frame.group_by("g", maintain_order=True).agg(outputs(pl))
    assert_frame_equal(compute_on_tier(q, tier), want)
    assert_frame_equal(compute_on_tier(cb.lazy(frame).select(outputs(cb)), tier),
                       frame.select(outputs(pl)))  # fmt: skip
