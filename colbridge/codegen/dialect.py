"""Code generation: a target's dialect — how it spells a declaration, a literal, a math call.

Stage: codegen. The meaning of every operation (nulls, overflow, NaN order,
errors) is written once, in `colbridge.codegen.lower`, in terms of the few
spellings below. A target is one `Dialect` plus its loop skeletons: adding an
operation means writing its semantics once and, at most, a spelling here.

Every expression a dialect returns is fully parenthesised where precedence could
matter, so the lowering can nest them freely.
"""

from __future__ import annotations

from colbridge.types import DType

__all__ = ["MATH_FUNCTIONS", "Dialect"]

#: Math functions a lowering may call, by their C name (the dialects map them).
MATH_FUNCTIONS: frozenset[str] = frozenset(
    {
        "sqrt", "cbrt", "exp", "log", "log10", "log1p", "sin", "cos", "tan", "asin", "acos",
        "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "atan2", "floor", "ceil",
        "rint", "fabs", "pow", "erf", "erfc",
    }
)  # fmt: skip


class Dialect:
    """The spellings of one target. Subclasses implement every method."""

    #: short target name, e.g. ``"cpu"`` or ``"cuda"``
    name: str = ""
    true: str = ""
    false: str = ""

    # -- statements --------------------------------------------------------------------
    def decl(self, name: str, dtype: DType, expr: str) -> str:
        """A per-row temporary that is assigned once (``const`` where the target has it)."""
        raise NotImplementedError

    def var(self, name: str, dtype: DType, expr: str) -> str:
        """A mutable variable (an accumulator) with its first value."""
        raise NotImplementedError

    def assign(self, name: str, expr: str) -> str:
        """``name = expr`` for a variable made with `var`."""
        raise NotImplementedError

    # -- values ------------------------------------------------------------------------
    def const(self, value: bool | int | float | None, dtype: DType) -> str:
        """A literal of exactly ``dtype`` holding ``value`` (zero for a null)."""
        raise NotImplementedError

    def convert(self, expr: str, dtype: DType) -> str:
        """``expr`` converted to ``dtype`` (integers truncate, floats round; in range only)."""
        raise NotImplementedError

    def wrapping(self, sym: str, a: str, b: str, dtype: DType) -> str:
        """Integer ``a sym b`` for ``sym`` in ``+ - * & | ^``, modulo ``2**bits`` of ``dtype``."""
        raise NotImplementedError

    def shift_right(self, a: str, bits: int, dtype: DType) -> str:
        """``a >> bits`` of an integer (arithmetic for signed types)."""
        raise NotImplementedError

    def negate(self, a: str) -> str:
        """Floating-point ``-a`` (flips the sign of zeros too)."""
        return f"(-{a})"

    def negate_wrapping(self, a: str, dtype: DType) -> str:
        """Integer ``-a`` modulo ``2**bits``."""
        raise NotImplementedError

    def invert(self, a: str, dtype: DType) -> str:
        """Bitwise ``~a`` of an integer."""
        raise NotImplementedError

    def float_op(self, sym: str, a: str, b: str, dtype: DType) -> str:
        """Floating-point ``a sym b`` for ``sym`` in ``+ - * /``, rounded to ``dtype``."""
        raise NotImplementedError

    def accumulate(self, acc: str, value: str, dtype: DType) -> str:
        """A running float sum ``acc + value`` (a reduction's fold), rounded to ``dtype``.

        A target may let the compiler reorder the adds of one such chain (the CPU
        target vectorises it); elsewhere it is `float_op`.
        """
        return self.float_op("+", acc, value, dtype)

    def compare(self, sym: str, a: str, b: str) -> str:
        """``a sym b`` for ``sym`` in ``== != < <= > >=`` (plain IEEE / integer comparison)."""
        return f"({a} {sym} {b})"

    def and_(self, *parts: str) -> str:
        """Logical AND of booleans."""
        raise NotImplementedError

    def or_(self, *parts: str) -> str:
        """Logical OR of booleans."""
        raise NotImplementedError

    def not_(self, a: str) -> str:
        """Logical NOT of a boolean."""
        raise NotImplementedError

    def select(self, cond: str, a: str, b: str) -> str:
        """``a`` where ``cond`` else ``b`` (both already computed: no branch is implied)."""
        raise NotImplementedError

    def math(self, func: str, dtype: DType, *args: str) -> str:
        """A call of a function of `MATH_FUNCTIONS` in the precision of ``dtype``."""
        raise NotImplementedError

    def is_finite(self, a: str) -> str:
        """True where the float ``a`` is neither NaN nor infinite."""
        raise NotImplementedError

    def is_inf(self, a: str) -> str:
        """True where the float ``a`` is ±infinity."""
        raise NotImplementedError

    def floordiv(self, a: str, b: str, dtype: DType) -> str:
        """Integer floor division (Python's rule); ``b`` is neither 0 nor -1 here."""
        raise NotImplementedError

    def mod(self, a: str, b: str, dtype: DType) -> str:
        """Integer remainder with the divisor's sign (Python's rule); ``b`` not 0 or -1."""
        raise NotImplementedError

    def ipow(self, a: str, b: str, dtype: DType) -> str:
        """Integer ``a ** b`` modulo ``2**64``, truncated to ``dtype``; ``0 <= b < 2**32``."""
        raise NotImplementedError

    def if_block(self, cond: str, body: list[str]) -> list[str]:
        """Statements ``body`` run only where ``cond`` holds (outside row loops only)."""
        raise NotImplementedError

    def to_uint64(self, a: str) -> str:
        """``a`` reinterpreted as an unsigned 64-bit integer (two's complement)."""
        raise NotImplementedError

    def popcount(self, a: str) -> str:
        """The number of set bits of the unsigned 64-bit ``a``, as an int64."""
        raise NotImplementedError

    # -- compiled user functions ----------------------------------------------------------
    def call(self, function: str, dtype: DType, args: list[str], guard: str | None) -> str:
        """A pair (value of ``dtype``, no exception) from user function wrapper ``function``.

        The function is called only where ``guard`` (a per-row boolean; None: every row)
        holds; elsewhere the pair is (0, true). A target that cannot call compiled Python
        functions leaves this unimplemented (the runtime runs such work on the host).
        """
        from colbridge.errors import UnsupportedOperationError

        msg = (
            f"the {self.name} code generator cannot call compiled user functions; "
            "the runtime runs the segments that call one on the host CPU"
        )
        raise UnsupportedOperationError(msg)

    def item(self, pair: str, k: int) -> str:
        """Element ``k`` of a pair made by `call`."""
        return f"{pair}[{k}]"

    # -- per-group arrays and lookup tables ----------------------------------------------
    def gather(self, array: str, index: str) -> str:
        """Element ``index`` of an array argument: a per-group array or a lookup table.

        ``index`` is a non-negative integer in range, or one per row.
        """
        return f"{array}[{index}]"

    def search(self, table: str, length: str, value: str) -> str:
        """The position of the last entry ``<= value`` of the sorted table ``table``.

        Its first entry is the smallest value of its type, so the answer is at least 0;
        a target spells it as a call of its binary-search helper.
        """
        raise NotImplementedError
