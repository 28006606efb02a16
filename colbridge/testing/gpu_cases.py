"""Testing: the CUDA test corpus without polars or hypothesis (usable on a bare GPU machine).

Expression groups × dtypes (each group is one ``with_columns`` step, so one
fused kernel per nullability pattern), written once over a module ``m`` that
is either colbridge (`CB`) or polars (both spell these expressions the same
way); data with the edge cases of each type; and comparisons of Arrow arrays
bit for bit, within ULPs or within a relative tolerance. Needs only NumPy and
pyarrow: ``tests/cuda/test_gpu_real.py`` and ``benchmarks/gpu_check.py`` use it on
machines that have nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa

# comparisons: shared with the test suite (NumPy and pyarrow only)
from colbridge.testing.asserts import assert_arrays_match, ulp_distance

__all__ = [
    "CB",
    "DTYPE_NAMES",
    "GROUPS",
    "NULL_PATTERNS",
    "Group",
    "assert_arrays_match",
    "make_column",
    "namespace",
    "ulp_distance",
]

F64, F32 = pa.float64(), pa.float32()
I8, I16, I32, I64 = pa.int8(), pa.int16(), pa.int32(), pa.int64()
U8, U16, U32, U64 = pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()
BOOL = pa.bool_()

Exprs = Callable[[Any], dict[str, Any]]

#: the dtype names a corpus namespace offers (polars' spelling)
DTYPE_NAMES = ("Float64", "Float32", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16",
               "UInt32", "UInt64", "Boolean")  # fmt: skip


def namespace(mod: Any, dtypes: dict[str, Any]) -> SimpleNamespace:
    """The corpus spelling over ``mod``: ``col``, ``when``, ``coalesce``, ``lit`` and dtypes."""
    return SimpleNamespace(col=mod.col, when=mod.when, coalesce=mod.coalesce, lit=mod.lit,
                           **dtypes)  # fmt: skip


def _colbridge() -> SimpleNamespace:
    import colbridge as cb

    arrow = (F64, F32, I8, I16, I32, I64, U8, U16, U32, U64, BOOL)
    return namespace(cb, dict(zip(DTYPE_NAMES, arrow, strict=True)))


#: the corpus spelled with colbridge expressions (dtypes as pyarrow types)
CB = _colbridge()


def _float_exact(m: Any) -> dict[str, Any]:
    a, b, c = m.col("a"), m.col("b"), m.col("c")
    return {
        "add": a + b, "sub": a - b, "mul": a * b, "div": a / b, "floordiv": a // b,
        "truncdiv": a.truncdiv(b), "mod": a % b, "neg": -a, "abs": a.abs(), "sign": a.sign(),
        "sqrt": a.sqrt(),
        "floor": a.floor(), "ceil": a.ceil(), "round": a.round(),
        "round2": a.round(2), "round_away": a.round(1, mode="half_away_from_zero"),
        "eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
        "is_nan": a.is_nan(), "is_finite": a.is_finite(), "is_inf": a.is_infinite(),
        "fill_nan": a.fill_nan(c), "clip": a.clip(-3.5, 7.25),
        "fused": (a * b + c).sqrt() * 2 - a / c, "lit": a * 0.1 + 1e-300,
    }  # fmt: skip


def _float_ulp(m: Any) -> dict[str, Any]:
    a, b = m.col("a"), m.col("b")
    return {
        "exp": a.exp(), "log": a.log(), "log10": a.log10(), "log1p": a.log1p(),
        # scaled by multiplying: polars turns `x / constant` into `x * (1 / constant)`
        # on columns of 2+ rows, and near ±1 asin/acos magnify that last-bit difference
        "sin": a.sin(), "cos": a.cos(), "tan": a.tan(), "asin": (a * 0.025).arcsin(),
        "acos": (a * 0.025).arccos(), "atan": a.arctan(), "sinh": (a * 0.25).sinh(),
        "cosh": (a * 0.25).cosh(), "tanh": a.tanh(), "cbrt": a.cbrt(),
        "pow": a.abs() ** (b * 0.125),
    }  # fmt: skip


def _int_arith(m: Any) -> dict[str, Any]:
    a, b = m.col("a"), m.col("b")
    return {
        "add": a + b, "sub": a - b, "mul": a * b, "floordiv": a // b, "mod": a % b,
        "div": a / b, "abs": a.abs(), "sign": a.sign(), "and": a & b, "or": a | b,
        "xor": a ^ b, "not": ~a, "eq": a == b, "lt": a < b, "ge": a >= b,
        "pow": a ** b.clip(0, 5), "clip": a.clip(-7, 9), "to_f": a.cast(m.Float64) * 0.5,
        "ones": a.bitwise_count_ones(), "lead0": a.bitwise_leading_zeros(),
        "truncdiv": a.truncdiv(b), "truncdiv_k": a.truncdiv(-3),
        "trail1": b.bitwise_trailing_ones(),
    }  # fmt: skip


def _uint_arith(m: Any) -> dict[str, Any]:
    a, b = m.col("a"), m.col("b")
    return {
        "add": a + b, "sub": a - b, "mul": a * b, "floordiv": a // b, "mod": a % b,
        "and": a & b, "xor": a ^ b, "not": ~a, "lt": a < b, "pow": a ** b.clip(0, 3),
        "sign": a.sign(), "abs": a.abs(), "div": a / b,
        "cmp_i64": a < m.col("c").cast(m.Int64, strict=False) - 100,
        "eq_i64": a == m.col("c").cast(m.Int64, strict=False) - 100,
        "zeros": a.bitwise_count_zeros(), "lead1": a.bitwise_leading_ones(),
        "truncdiv": a.truncdiv(b),
        "trail0": b.bitwise_trailing_zeros(),
    }  # fmt: skip


def _logic(m: Any) -> dict[str, Any]:
    a, b, c = m.col("a"), m.col("b"), m.col("c")
    return {
        "and": a & b, "or": a | b, "xor": a ^ b, "not": ~a, "is_null": a.is_null(),
        "is_not_null": b.is_not_null(), "fill_null": a.fill_null(False),
        "when": m.when(a).then(c).otherwise(c * 2 + 1),
        "when_null": m.when(b).then(c).otherwise(None),
        "coalesce": m.coalesce(c, c * 3, 7), "to_int": a.cast(m.Int32) + b.cast(m.Int32),
        "from_int": c.cast(m.Boolean), "kleene": (a & ~b) | (c > 5),
        "bit_ones": a.bitwise_count_ones(), "bit_lead0": b.bitwise_leading_zeros(),
    }  # fmt: skip


def _casts(m: Any) -> dict[str, Any]:
    a, b = m.col("a"), m.col("b")
    return {
        "f_i8": a.cast(m.Int8, strict=False), "f_i32": a.cast(m.Int32, strict=False),
        "f_i64": a.cast(m.Int64, strict=False), "f_u8": a.cast(m.UInt8, strict=False),
        "f_u64": a.cast(m.UInt64, strict=False), "f_f32": a.cast(m.Float32),
        "i_i8": b.cast(m.Int8, strict=False), "i_u32": b.cast(m.UInt32, strict=False),
        "i_f32": b.cast(m.Float32), "i_u64": b.cast(m.UInt64, strict=False),
        "i_bool": b.cast(m.Boolean),
    }  # fmt: skip


def _mixed(m: Any) -> dict[str, Any]:
    a, b, c = m.col("a"), m.col("b"), m.col("c")
    return {
        "promote": a + b, "cmp": a < b, "lit_int": a * 3 + 250, "lit_f": a + 0.5,
        "chain": m.when(a > 10).then(b).when(a < -10).then(-b).otherwise(c),
        "floordiv": b // 7, "mod": a % -3, "fill": b.fill_null(c),
    }  # fmt: skip


@dataclass(frozen=True)
class Group:
    """One fused kernel shape: expressions over columns a, b, c of fixed types."""

    name: str
    types: tuple[pa.DataType, pa.DataType, pa.DataType]
    exprs: Exprs
    ulps: int = 0  # allowed ULP distance from the CPU backend (0: bit-identical)


GROUPS: list[Group] = [
    Group("float64_exact", (F64, F64, F64), _float_exact),
    Group("float32_exact", (F32, F32, F32), _float_exact),
    Group("float64_transcendental", (F64, F64, F64), _float_ulp, ulps=2),
    Group("float32_transcendental", (F32, F32, F32), _float_ulp, ulps=2),
    Group("int64", (I64, I64, I64), _int_arith),
    Group("int8", (I8, I8, I8), _int_arith),
    Group("int32", (I32, I32, I32), _int_arith),
    Group("uint8", (U8, U8, U8), _uint_arith),
    Group("uint64", (U64, U64, U64), _uint_arith),
    Group("int64_uint32", (I64, U32, U8), _int_arith),
    Group("bool_logic", (BOOL, BOOL, I64), _logic),
    Group("casts", (F64, I64, I64), _casts),
    Group("mixed_i32_f64", (I32, F64, F64), _mixed),
    Group("mixed_u8_f32", (U8, F32, F32), _mixed),
]

#: null patterns: which of a, b, c get nulls (kernels differ only in validity handling)
NULL_PATTERNS: tuple[tuple[bool, bool, bool], ...] = (
    (False, False, False),
    (True, False, True),  # nullable and non-nullable inputs in one kernel
)

def make_column(rng: np.random.Generator, arrow_type: pa.DataType, n: int, nulls: bool) -> pa.Array:
    """Random values with the edge cases of the type (NaN, ±inf, ±0, MIN, MAX, -1)."""
    if pa.types.is_boolean(arrow_type):
        values: Any = rng.integers(0, 2, size=n).astype(bool)
    elif pa.types.is_floating(arrow_type):
        dtype = arrow_type.to_pandas_dtype()
        values = rng.normal(scale=20.0, size=n).astype(dtype)
        big = float(np.finfo(dtype).max) / 4
        specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5,
                             big, -7.0], dtype=np.float64).astype(dtype)  # fmt: skip
        picks = rng.random(n) < 0.25
        values[picks] = rng.choice(specials, size=int(picks.sum()))
    else:
        dtype = np.dtype(arrow_type.to_pandas_dtype())
        info = np.iinfo(dtype)
        pool = [info.min, info.max, 0, 1, 2, 3, 7]
        if info.min < 0:
            pool += [-1, -2, -7]
        small = rng.integers(max(info.min, -40), min(info.max, 40), size=n, endpoint=True)
        wide = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dtype)
        edge = rng.choice(np.array(pool, dtype=dtype), size=n)
        which = rng.random(n)
        values = np.where(which < 0.6, small.astype(dtype), np.where(which < 0.8, wide, edge))
        values = values.astype(dtype)
    mask = rng.random(n) < 0.3 if nulls else None
    return pa.array(values, type=arrow_type, mask=mask)
