"""Signed integer overflow wraps, as in polars, in every kernel the optimiser sees.

numba marks signed integer arithmetic ``nsw`` (overflow undefined), so LLVM may fold
``x + 1 > x`` to true and ``log(x * x)`` to a number that is never NaN. polars wraps
int64 arithmetic modulo 2**64; the generated kernels must give the wrapped answer
even where the comparison that reads it is fused into the same loop. Each expression
runs on polars and on the NumPy tier, the compiled kernels and the CUDA kernel text
run on the host, over the int64 limits and generated values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier

MAX, MIN = 2**63 - 1, -(2**63)
EDGES = [MAX, MIN, 0, -1, 1, 3_037_000_500, -3_037_000_500, MAX // 2 + 1, None]

Expr = Callable[[Any], Any]

# each compares a wrapped result with something LLVM could reason about under `nsw`
EXPRS: dict[str, Expr] = {
    "x + 1 > x": lambda m: (m.col("x") + 1) > m.col("x"),
    "x - 1 < x": lambda m: (m.col("x") - 1) < m.col("x"),
    "x * x >= 0": lambda m: (m.col("x") * m.col("x")) >= 0,
    "1 <= log(x * x)": lambda m: m.lit(1.0) <= (m.col("x") * m.col("x")).log(),
    "-x <= 0": lambda m: (-m.col("x")) <= 0,
    "abs(x) >= 0": lambda m: m.col("x").abs() >= 0,
    "x * 2 // 2 == x": lambda m: (m.col("x") * 2) // 2 == m.col("x"),
    "x + y - y == x": lambda m: (m.col("x") + m.col("y")) - m.col("y") == m.col("x"),
    "x + y >= x where y >= 0": lambda m: (
        (m.col("y") < 0) | ((m.col("x") + m.col("y")) >= m.col("x"))
    ),
}


def _check(table: pa.Table, tier: str) -> None:
    want = pl.from_arrow(table).select(**{k: f(pl) for k, f in EXPRS.items()})
    query = cb.lazy(table).select(**{k: f(cb) for k, f in EXPRS.items()})
    got = pl.from_arrow(compute_on_tier(query, tier))
    assert isinstance(got, pl.DataFrame)
    for name in EXPRS:
        assert got[name].to_list() == want[name].to_list(), name


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_overflow_at_the_limits_wraps_like_polars(tier: str) -> None:
    y = [1, MAX, MIN, MAX, 2, -2, MIN, MAX, 5]
    table = pa.table({"x": pa.array(EDGES, pa.int64()), "y": pa.array(y, pa.int64())})
    _check(table, tier)


def test_the_limits_do_overflow() -> None:
    # the table above must hold rows where polars' wrapped answers differ from exact ones
    table = pl.DataFrame({"x": EDGES}, schema={"x": pl.Int64})
    out = table.select(a=(pl.col("x") + 1) > pl.col("x"), b=(pl.col("x") * pl.col("x")) >= 0)
    assert out["a"].to_list().count(False) == 1
    assert out["b"].to_list().count(False) >= 2


@pytest.mark.parametrize("tier", KERNEL_TIERS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_generated_int64_wraps_like_polars(tier: str, data: st.DataObject) -> None:
    values = st.one_of(st.integers(MIN, MAX), st.sampled_from(EDGES[:-1]), st.none())
    n = data.draw(st.integers(0, 70))
    x = data.draw(st.lists(values, min_size=n, max_size=n))
    y = data.draw(st.lists(values, min_size=n, max_size=n))
    table = pa.table({"x": pa.array(x, pa.int64()), "y": pa.array(y, pa.int64())})
    _check(table, tier)
