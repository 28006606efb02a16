"""Integer ``//`` and ``%`` by a literal, against polars, on every kernel tier.

A literal divisor is compiled into the kernel; one that is neither 0 nor -1 needs no
check per row (no null, no ``MIN // -1`` overflow), so the kernels divide without
one and the result has no validity of its own. These cases pin that shortcut to
polars' answers: every integer type, divisors of both signs and around the type's
limits, 0 and -1 (which keep the checked path), values at the limits, nulls.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier

INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(),
             pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]  # fmt: skip
DIVISORS = [1, 2, 3, 7, 64, 100, 127, 255, 1000, 2**31 - 1, -1, -2, -3, -7, -128, 0]


def _limits(t: pa.DataType) -> tuple[int, int]:
    info = np.iinfo(t.to_pandas_dtype())
    return int(info.min), int(info.max)


def _column(t: pa.DataType, draw_values: list[int | None]) -> pa.Array:
    lo, hi = _limits(t)
    edges = [lo, lo + 1, hi, hi - 1, 0, 1, -1, 6, -6, 7, -7, 13, -13, None]
    kept = [v for v in edges + draw_values if v is None or lo <= v <= hi]
    return pa.array(kept, t)


def _check(column: pa.Array, divisors: list[int], tier: str) -> None:
    table = pa.table({"x": column})
    exprs = {}
    for k in divisors:
        tag = f"m{-k}" if k < 0 else str(k)
        exprs[f"q{tag}"] = lambda m, k=k: m.col("x") // k
        exprs[f"r{tag}"] = lambda m, k=k: m.col("x") % k
    want = pl.from_arrow(table).select(**{n: f(pl) for n, f in exprs.items()})
    assert isinstance(want, pl.DataFrame)
    query = cb.lazy(table).select(**{n: f(cb) for n, f in exprs.items()})
    got = pl.from_arrow(compute_on_tier(query, tier))
    assert isinstance(got, pl.DataFrame)
    assert got.schema == want.schema
    for name in exprs:
        assert got[name].to_list() == want[name].to_list(), (column.type, name)


@pytest.mark.parametrize("tier", KERNEL_TIERS)
@pytest.mark.parametrize("dtype", INT_TYPES, ids=str)
def test_every_integer_type_at_its_limits(dtype: pa.DataType, tier: str) -> None:
    lo, _ = _limits(dtype)
    # negative divisors with signed columns only (with an unsigned one, the type changes)
    divisors = [k for k in DIVISORS if k >= 0 or lo < 0]
    _check(_column(dtype, []), divisors, tier)


@settings(max_examples=40, deadline=None)
@given(
    dtype=st.sampled_from(INT_TYPES),
    values=st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**64 - 1)), max_size=70),
    offset=st.integers(0, 9),
)
def test_generated_values(dtype: pa.DataType, values: list[int | None], offset: int) -> None:
    # the divisors of the test above, so the same kernels run (each divisor is compiled
    # in: the data varies here, not the kernels)
    lo, _ = _limits(dtype)
    column = _column(dtype, values)
    _check(column.slice(min(offset, len(column))), [k for k in DIVISORS if k >= 0 or lo < 0],
           "compiled")  # fmt: skip


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_a_literal_divisor_leaves_the_result_without_a_bitmap(tier: str) -> None:
    # no per-row check, so no validity of its own: the column has no nulls, and the
    # results no bitmap (polars has none either); by zero, every row is null
    table = pa.table({"x": pa.array([-7, -1, 0, 5, 9], pa.int64())})
    out = cb.lazy(table).select(q=cb.col("x") // 3, r=cb.col("x") % -4, z=cb.col("x") // 0)
    result = pa.table(compute_on_tier(out, tier))
    for name in ("q", "r"):
        (chunk,) = result.column(name).chunks
        assert chunk.buffers()[0] is None, (name, "has a validity bitmap")
    assert result.column("z").null_count == 5
    assert result.column("q").to_pylist() == [-3, -1, 0, 1, 3]
    assert result.column("r").to_pylist() == [-3, -1, 0, -3, -3]
