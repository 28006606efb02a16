"""Promotion rules: the result type of every operation, following polars.

The rules, as one table (tested against polars for every pair of types):

=====================  =====================================================
operation              result type
=====================  =====================================================
supertype(a, b)        same kind: the wider one. signed with unsigned: the
                       signed type if wider, else the signed type of twice
                       the unsigned width (uint64 with a signed type needs
                       int128: unsupported, cast first). float with int:
                       the wider of the float and the smallest float that
                       holds the int exactly (8-bit → float16, 16-bit →
                       float32, 32/64-bit → float64). bool with x: x.
``+ - * // %``         supertype; bool with bool gives uint32 for ``+``.
``/``                  float64 if neither side is a float, else supertype.
``**``                 float base: the base's type; int base with float
                       exponent: the exponent's type; int ** int: the base.
comparisons            bool (compared in the supertype).
``& | ^``              bool for bools (Kleene logic), else supertype (bitwise).
sqrt, exp, log, trig   float input keeps its type; int and bool → float64.
abs, neg, sign, clip   the input type (unsigned neg is an error).
floor, ceil, round     the input type (integers are returned unchanged).
sum                    int8/16, uint8/16 → int64; bool → uint32; else same.
mean                   float32 → float32, float16 → float16; else float64.
std, var               as mean.
min, max               the input type.
count, null_count      uint32.
Python int literal     takes the other side's type if the value fits, else
                       the smallest type that does; alone: int32 (int64 if
                       needed). Python float literal: the other side's type
                       if that is a float, else float64.
=====================  =====================================================
"""

from __future__ import annotations

from colbridge.types.dtypes import DType

__all__ = [
    "agg_result",
    "dynamic_int_type",
    "float_result",
    "literal_type",
    "pow_result",
    "smallest_int_type",
    "supertype",
    "truediv_result",
]

_SIGNED = [DType.INT8, DType.INT16, DType.INT32, DType.INT64]
_UNSIGNED = [DType.UINT8, DType.UINT16, DType.UINT32, DType.UINT64]
_FLOATS = [DType.FLOAT16, DType.FLOAT32, DType.FLOAT64]
_SIGNED_BY_BITS = {d.bits: d for d in _SIGNED}
_FLOAT_BY_BITS = {d.bits: d for d in _FLOATS}
# The smallest float that represents every value of an integer width exactly
# (64-bit integers go to float64, as polars does, losing exactness).
_FLOAT_FOR_INT_BITS = {8: DType.FLOAT16, 16: DType.FLOAT32, 32: DType.FLOAT64, 64: DType.FLOAT64}


def supertype(a: DType, b: DType) -> DType | None:
    """The type both ``a`` and ``b`` convert to; None where polars would need int128."""
    if a == b:
        return a
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.is_float and b.is_float:
        return a if a.bits >= b.bits else b
    if a.is_float or b.is_float:
        f, i = (a, b) if a.is_float else (b, a)
        need = _FLOAT_FOR_INT_BITS[i.bits]
        return f if f.bits >= need.bits else need
    if a.is_signed == b.is_signed:
        return a if a.bits >= b.bits else b
    signed, unsigned = (a, b) if a.is_signed else (b, a)
    if signed.bits > unsigned.bits:
        return signed
    return _SIGNED_BY_BITS.get(unsigned.bits * 2)


def truediv_result(a: DType, b: DType) -> DType | None:
    """Result type of ``a / b``."""
    if not a.is_float and not b.is_float:
        return DType.FLOAT64
    return supertype(a, b)


def pow_result(base: DType, exponent: DType) -> DType | None:
    """Result type of ``base ** exponent`` (None: unsupported combination)."""
    if base.is_bool or exponent.is_bool:
        return None
    if base.is_float:
        return base
    if exponent.is_float:
        return exponent
    return base


def float_result(a: DType) -> DType:
    """Result type of sqrt/exp/log/trig: floats keep their type, others become float64."""
    return a if a.is_float else DType.FLOAT64


def agg_result(func: str, a: DType) -> DType:
    """Result type of a reduction."""
    if func in ("count", "null_count", "len", "n_unique", "arg_min", "arg_max"):
        return DType.UINT32
    if func in ("any", "all"):
        return DType.BOOL
    if func in ("skew", "kurtosis"):
        return DType.FLOAT64
    if func == "product":  # polars: integers in Int64 (UInt64 stays), floats keep their width
        return a if a.is_float or a is DType.UINT64 else DType.INT64
    if func in ("min", "max", "first", "last", "bitwise_and", "bitwise_or", "bitwise_xor"):
        return a
    if func in ("mean", "std", "var", "median", "quantile"):
        return a if a in (DType.FLOAT32, DType.FLOAT16) else DType.FLOAT64
    # sum
    if a.is_bool:
        return DType.UINT32
    if a.is_integer and a.bits < 32:
        return DType.INT64
    return a


def int_range(d: DType) -> tuple[int, int]:
    """Smallest and largest value of an integer type."""
    if d.is_bool:
        return 0, 1
    if d.is_unsigned:
        return 0, (1 << d.bits) - 1
    return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1


def smallest_int_type(value: int, *, unsigned: bool, high: int | None = None) -> DType | None:
    """The narrowest integer type holding ``value`` (unsigned ones first if asked).

    With ``high``, every integer from ``value`` to ``high``.
    """
    high = value if high is None else high
    candidates = (_UNSIGNED if unsigned and value >= 0 else []) + _SIGNED
    for d in candidates:
        lo, hi = int_range(d)
        if lo <= value and high <= hi:
            return d
    if value >= 0 and high <= int_range(DType.UINT64)[1]:
        return DType.UINT64
    return None


def materialized_literal_type(value: bool | int | float) -> DType | None:
    """The type of a Python literal standing alone: bool, int32/int64, float64."""
    if isinstance(value, bool):
        return DType.BOOL
    if isinstance(value, int):
        lo, hi = int_range(DType.INT32)
        if lo <= value <= hi:
            return DType.INT32
        lo, hi = int_range(DType.INT64)
        return DType.INT64 if lo <= value <= hi else None
    return DType.FLOAT64


def literal_type(value: bool | int | float, other: DType) -> DType | None:
    """The type a Python literal takes next to an operand of type ``other``."""
    if isinstance(value, bool):
        return DType.BOOL
    if isinstance(value, int):
        return dynamic_int_type(value, value, other)
    # float
    return other if other.is_float else DType.FLOAT64


def dynamic_int_type(low: int, high: int, other: DType) -> DType | None:
    """The type Python integers from ``low`` to ``high`` take next to an operand of ``other``.

    polars 2.2 types an expression of several Python integers (``when(c).then(1)
    .otherwise(300)``) by all of them: ``other`` where each fits, else the common type
    of ``other`` and the narrowest type holding them all.
    """
    if other.is_float:
        return other
    if other.is_bool:
        low_type, high_type = materialized_literal_type(low), materialized_literal_type(high)
        if low_type is None or high_type is None:
            return None
        return supertype(low_type, high_type)
    lo, hi = int_range(other)
    if lo <= low and high <= hi:
        return other
    fit = smallest_int_type(low, unsigned=other.is_unsigned, high=high)
    if fit is None:
        return None
    widest = supertype(other, fit)
    if widest is None and other is DType.UINT64 and low < 0:
        return DType.INT64  # polars stops at int64 for a negative literal next to uint64
    return widest
