"""``round_sig_figs(digits)`` against polars, bit for bit.

polars splits ``10**e`` into ``5**e`` (``f64::powi``) and ``2**e`` (``scalbn``):
the values tested reach both ends of float64 (subnormals, 1.7e308), where a
plain ``x * 10**e`` overflows; integers are rounded exactly (polars 2.2), null past
their type's range.
Generated values of every numeric type with nulls, offsets and chunks; both CPU
tiers and the CUDA code path on the host; the string language; refusals.
"""

from __future__ import annotations

import math
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
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from tests.ordered.ordered_data import cut_table

EDGES = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
         1.7976931348623157e308, 0.5, 1.5, 2.5, -2.5, 125.0, 0.125, 1e-5, 99999.5, 9.5, 0.95,
         0.095, 1234.5678, -0.001234]  # fmt: skip
INTS = {"i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64(),
        "u8": pa.uint8(), "u16": pa.uint16(), "u32": pa.uint32(), "u64": pa.uint64()}  # fmt: skip


def _floats(rng: np.random.Generator, n: int) -> np.ndarray:
    wide = rng.normal(0, 1, n) * 10.0 ** rng.integers(-320, 308, n)
    near = rng.normal(0, 1, n) * 10.0 ** rng.integers(-4, 6, n)
    edges = rng.choice(np.array(EDGES), n)
    pick = rng.random(n)
    with np.errstate(over="ignore"):
        return np.where(pick < 0.3, edges, np.where(pick < 0.6, wide, near))


def _ints(rng: np.random.Generator, t: pa.DataType, n: int) -> np.ndarray:
    info = np.iinfo(t.to_pandas_dtype())
    ends = np.array([v for v in (info.min, info.max, info.max - 1, 0, 1, 5, 15, 25, 95, 99,
                                 994, 995, -5, -15, -995) if info.min <= v <= info.max],
                    dtype=info.dtype)  # fmt: skip
    uniform = rng.integers(info.min, info.max, n, endpoint=True, dtype=info.dtype)
    return np.where(rng.random(n) < 0.4, rng.choice(ends, n), uniform)


def _table(n: int, seed: int, *, nulls: float, offset: int, chunks: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    floats = _floats(rng, total)
    with np.errstate(over="ignore"):
        columns = {"f64": pa.array(floats, mask=mask()),
                   "f32": pa.array(floats.astype(np.float32), mask=mask())}  # fmt: skip
    for name, t in INTS.items():
        columns[name] = pa.array(_ints(rng, t, total), type=t, mask=mask())
    return cut_table(pa.table(columns), offset, n, chunks)


def _rounded(m: Any, digits: int) -> list[Any]:
    return [m.col(name).round_sig_figs(digits).alias(name) for name in ("f64", "f32", *INTS)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(0, 300), seed=st.integers(0, 2**31 - 1),
       nulls=st.sampled_from([0.0, 0.2]), offset=st.integers(0, 5), chunks=st.integers(1, 3),
       digits=st.one_of(st.integers(1, 20), st.sampled_from([300, 699, 700, 701, 10_000])))
def test_equal_polars(n: int, seed: int, nulls: float, offset: int, chunks: int,
                      digits: int) -> None:  # fmt: skip
    table = _table(n, seed, nulls=nulls, offset=offset, chunks=chunks)
    assert_same_as_polars(table, lambda m, f: f.select(_rounded(m, digits)))


@given(value=st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
       digits=st.integers(1, 40))  # fmt: skip
@settings(max_examples=300, deadline=None)
def test_any_float64_bit_for_bit(value: float, digits: int) -> None:
    frame = pl.DataFrame({"x": [value]}, schema={"x": pl.Float64})
    want = frame.select(pl.col("x").round_sig_figs(digits))
    got = frame.gpu.select(cb.col("x").round_sig_figs(digits)).compute()
    assert_frame_equal(got, want, check_exact=True)
    if not math.isnan(value):  # -0.0 stays -0.0, the sign of every result is kept
        assert math.copysign(1.0, got["x"][0]) == math.copysign(1.0, want["x"][0])


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    table = _table(2_000, 11, nulls=0.1, offset=3, chunks=2)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    for digits in (1, 3, 17):
        want = frame.select(_rounded(pl, digits))
        got = compute_on_tier(cb.lazy(frame).select(_rounded(cb, digits)), tier)
        assert_frame_equal(got, want, check_exact=True)


def test_the_string_language_and_refusals() -> None:
    frame = pl.DataFrame({"x": [0.01234, 3.333, 1234.0], "b": [True, False, None],
                          "s": ["a", "b", "c"]})  # fmt: skip
    got = cb.lazy(frame).eval("r = round_sig_figs(x, 2)").compute()
    assert_frame_equal(got, frame.with_columns(r=pl.col("x").round_sig_figs(2)),
                       check_exact=True)  # fmt: skip
    for digits in (0, -1, True, 1.5):
        with pytest.raises(InvalidOperationError, match=r"digits must be a whole number >= 1"):
            cb.col("x").round_sig_figs(digits)  # type: ignore[arg-type]
    for name in ("b", "s"):
        with pytest.raises(pl.exceptions.InvalidOperationError):
            frame.select(pl.col(name).round_sig_figs(2))
        with pytest.raises(SchemaError, match=r"round_sig_figs\(2\)` is not defined for "
                           r"(bool|string); it needs a numeric column"):
            frame.gpu.select(cb.col(name).round_sig_figs(2)).compute()
