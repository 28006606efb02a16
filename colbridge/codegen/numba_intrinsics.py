"""Codegen: helpers the generated CPU kernels call, written as numba intrinsics.

An intrinsic is emitted straight into the caller's LLVM IR, where LLVM optimises it
with the loop around it. A plain jitted helper stays a call (numba compiles it into a
library of its own, and LLVM does not inline across them): for `validity_word` that
call cost up to a third of an elementwise kernel's time. Marked ``inline="always"``
it is inlined in numba's own IR instead, at each call site, and the kernel's IR then
goes through typing and SSA construction with every copy: measured, that made a
kernel reading nullable columns compile 2-3x slower (an 11-output kernel over ten
nullable columns: 12-17 s against 5.5 s). An intrinsic has neither cost.

A module of its own, imported by the generated kernel modules only, so that
importing colbridge does not import numba. Every kernel's header carries a digest of
this file (`numba_cpu`), so that a change here is a change of every kernel's cache key.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = [
    "KEY_ABOVE",
    "KEY_BELOW",
    "accumulate",
    "from_order_key",
    "order_key",
    "popcount",
    "select",
    "validity_word",
]

_U = np.uint64


def _word_tail(bits, byte, shift, size):  # type: ignore[no-untyped-def]
    """`validity_word` where fewer than nine bytes are left: byte by byte, zeros past the end.

    Compiled into the kernel by `validity_word` (``compile_internal``).
    """
    word = _U(0)
    for k in range(8):  # the ninth byte, whose bits a shift would bring in, is past the end
        j = byte + _U(k)
        if j < size:
            word |= _U(bits[j]) << _U(8 * k)
    return word >> shift


@intrinsic
def validity_word(typingctx: Any, bits: Any, offset: Any, w: Any) -> Any:
    """64 validity bits from bit ``offset + 64 * w`` of the bitmap ``bits`` (zeros past its end).

    ``bits`` is a 1-D uint8 array (Arrow's bitmap: least significant bit first);
    ``offset`` and ``w`` are integers, read as uint64. Where nine bytes are in reach
    (every word but a bitmap's last), one unaligned 8-byte load and the ninth byte,
    shifted without a branch; the rest goes through `_word_tail`.
    """
    if not (isinstance(bits, types.Array) and bits.ndim == 1 and bits.dtype == types.uint8
            and isinstance(offset, types.Integer) and isinstance(w, types.Integer)):  # fmt: skip
        return None
    sig = types.uint64(bits, offset, w)
    tail_sig = types.uint64(bits, types.uint64, types.uint64, types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        bits_value, offset_value, w_value = args
        u64 = ir.IntType(64)
        array = context.make_array(bits)(context, builder, bits_value)
        size = builder.extract_value(array.shape, 0)
        first = builder.add(context.cast(builder, offset_value, offset, types.uint64),
                            builder.shl(context.cast(builder, w_value, w, types.uint64),
                                        ir.Constant(u64, 6)))  # fmt: skip
        byte = builder.lshr(first, ir.Constant(u64, 3))
        shift = builder.and_(first, ir.Constant(u64, 7))
        fits = builder.icmp_unsigned("<=", builder.add(byte, ir.Constant(u64, 9)), size)
        with builder.if_else(fits, likely=True) as (near, end):
            with near:
                at = builder.gep(array.data, [byte])
                low = builder.load(builder.bitcast(at, u64.as_pointer()), align=1)
                if sys.byteorder == "big":
                    low = builder.bswap(low)
                ninth = builder.zext(builder.load(builder.gep(array.data, [
                    builder.add(byte, ir.Constant(u64, 8))])), u64)  # fmt: skip
                # the ninth byte's bits land at 64 - shift: shifted in two steps, so that a
                # shift of 0 drops them instead of shifting by 64 (undefined in LLVM)
                high = builder.shl(builder.shl(ninth, ir.Constant(u64, 1)),
                                   builder.sub(ir.Constant(u64, 63), shift))  # fmt: skip
                fast = builder.or_(builder.lshr(low, shift), high)
                fast_block = builder.basic_block
            with end:
                slow = context.compile_internal(builder, _word_tail, tail_sig,
                                                [bits_value, byte, shift, size])  # fmt: skip
                slow_block = builder.basic_block
        word = builder.phi(u64)
        word.add_incoming(fast, fast_block)
        word.add_incoming(slow, slow_block)
        return word

    return sig, codegen


@intrinsic
def popcount(typingctx: Any, x: Any) -> Any:
    """The number of set bits of the integer ``x`` (read as uint64), as an int64.

    LLVM's ``ctpop``: one instruction where the CPU has one (a jitted helper was a call
    per word of a count, in every reduction and filter over nullable columns).
    """
    if not isinstance(x, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.ctpop(context.cast(builder, args[0], x, types.uint64))

    return types.int64(x), codegen


@intrinsic
def select(typingctx: Any, cond: Any, a: Any, b: Any) -> Any:
    """``a`` where ``cond`` is true, else ``b``, both evaluated: LLVM's ``select``.

    The kernels' selects choose between values already computed (`Dialect.select`).
    Written as Python's ``a if cond else b``, each one is a branch and three basic
    blocks in numba's IR, and numba's SSA reconstruction grows with the blocks times
    the variables assigned more than once: a 36-reduction kernel spent 14 of its 30 s
    of compile there. ``a`` and ``b`` take the type numba unifies them to, as the
    ternary did.
    """
    if not isinstance(cond, (types.Boolean, types.Integer)):
        return None
    if isinstance(a, types.Literal):
        a = a.literal_type
    if isinstance(b, types.Literal):
        b = b.literal_type
    result = typingctx.unify_pairs(a, b)
    if not isinstance(result, (types.Number, types.Boolean)):
        return None
    sig = result(cond, a, b)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        c, x, y = args
        truth = context.cast(builder, c, cond, types.boolean)
        return builder.select(truth, context.cast(builder, x, a, result),
                              context.cast(builder, y, b, result))  # fmt: skip

    return sig, codegen


@intrinsic
def accumulate(typingctx: Any, acc: Any, x: Any) -> Any:
    """``acc + x`` in float64, an add LLVM may reassociate with the others of its chain.

    For the running sums of reduction kernels only (the ``reassoc`` flag is on this
    add alone, not on the arithmetic that computes ``x``): a loop summing a column is
    then vectorised, its chain split into as many partial sums as the vectors hold,
    where an ordinary add keeps one chain in row order. Measured: a sum with nulls at
    100,000 rows 1.4x faster. The rows' order of summation becomes the compiler's
    (partial sums in vector lanes, added at the loop's end), as any parallel sum's is.
    """
    if not (isinstance(acc, types.Float) and acc.bitwidth == 64
            and isinstance(x, types.Float)):  # fmt: skip
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        total, value = args
        return builder.fadd(total, context.cast(builder, value, x, types.float64),
                            flags=("reassoc",))  # fmt: skip

    return types.float64(acc, x), codegen


#: The int64 order keys of a float64 lie strictly between these two: a running maximum of
#: keys starts at the first, a running minimum at the second (no number seen yet).
KEY_BELOW = -(2**63)
KEY_ABOVE = 2**63 - 1


@intrinsic
def order_key(typingctx: Any, x: Any) -> Any:
    """The float64 ``x`` as an int64 that orders as the float: its bits, the negatives' flipped.

    ``-0.0`` orders before ``0.0``; NaNs land outside ``-inf``..``inf`` (callers never
    fold one). A running float max is a chain of compares and selects LLVM does not
    vectorise (a NaN-ordered select is not a reduction it knows); over the keys it is an
    integer max, which it does: measured, the reduction kernel of a sum and a max over
    10% nulls at 1e7 rows, 18 ms against 6.4 ms.
    """
    if not isinstance(x, types.Float):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i64 = ir.IntType(64)
        value = context.cast(builder, args[0], x, types.float64)
        bits = builder.bitcast(value, i64)
        flip = builder.and_(builder.ashr(bits, ir.Constant(i64, 63)),
                            ir.Constant(i64, KEY_ABOVE))  # fmt: skip
        return builder.xor(bits, flip)

    return types.int64(x), codegen


@intrinsic
def from_order_key(typingctx: Any, key: Any) -> Any:
    """The float64 whose `order_key` is ``key``; NaN for `KEY_BELOW` and `KEY_ABOVE` (no number)."""
    if not isinstance(key, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i64 = ir.IntType(64)
        k = context.cast(builder, args[0], key, types.int64)
        flip = builder.and_(builder.ashr(k, ir.Constant(i64, 63)), ir.Constant(i64, KEY_ABOVE))
        value = builder.bitcast(builder.xor(k, flip), ir.DoubleType())
        empty = builder.or_(builder.icmp_signed("==", k, ir.Constant(i64, KEY_BELOW)),
                            builder.icmp_signed("==", k, ir.Constant(i64, KEY_ABOVE)))  # fmt: skip
        return builder.select(empty, ir.Constant(ir.DoubleType(), float("nan")), value)

    return types.float64(key), codegen
