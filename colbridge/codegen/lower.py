"""Code generation: the meaning of every IR node, written once for every target.

Stage: codegen. `Lowering` turns typed nodes into per-row statements through a
`colbridge.codegen.dialect.Dialect`; the targets' loop skeletons place those
statements in their loops. Values and validity are kept apart:

* a value is computed for every row, branch-free (a select, never an ``if``), so
  the row loop vectorises; computing under a null slot is fine because the slot
  is masked anyway, and nothing here can trap;
* a validity is a `Valid`: a set of *sources* whose bits are ANDed (input
  bitmaps, the validity of an earlier reduction, a null literal) plus, only
  where nullness depends on the data (integer ``//`` ``%`` by zero, non-strict
  casts, Kleene logic, ``when``, ``coalesce``, NaN meaning null), a per-row
  boolean. A target ANDs sources a word at a time where it can (64 rows per
  operation on the CPU) and reads them per row only where a per-row boolean
  needs them.

Reductions are lowered here too (`ReductionLowering`): the state each one keeps,
its per-row update and where its per-block partials go (`AggSlot`), which is the
contract with `colbridge.backends.common.finalize_reduction`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import singledispatchmethod
from typing import Any, Protocol

from colbridge.codegen.dialect import Dialect
from colbridge.codegen.kernel import (
    ERR_NEGATIVE_EXPONENT,
    ERR_STRICT_CAST,
    ERR_STRICT_PARSE,
    ERR_USER_FUNCTION,
    AggSlot,
    GroupedSpec,
    InputSpec,
    ScalarSpec,
    collect_grouped,
    collect_inputs,
    collect_scalars,
    kernel_tables,
)
from colbridge.errors import UnsupportedOperationError
from colbridge.expr.nodes import (
    BIT_COUNT_FUNCS,
    Agg,
    Binary,
    Call,
    Cast,
    Check,
    Clip,
    Coalesce,
    Column,
    Constant,
    EveryRow,
    FillNan,
    Filtered,
    Gather,
    GroupAgg,
    Literal,
    Narrow,
    Node,
    Reduction,
    Reinterpret,
    Search,
    TableRef,
    Unary,
    When,
    clip_bound,
)
from colbridge.plan.nullability import Nullability
from colbridge.plan.typecheck import cast_can_fail
from colbridge.types import DType
from colbridge.types.promotion import int_range

__all__ = [
    "FLOAT_FUNCTIONS",
    "NULL_SOURCE",
    "Fold",
    "Lowering",
    "ReductionLowering",
    "RowAccess",
    "Val",
    "Valid",
    "input_source",
    "merge_messages",
    "moment_combine",
    "row_updates",
    "scalar_source",
    "take_better",
]

#: IR unary functions computed by a math call, and the call's (C) name.
FLOAT_FUNCTIONS: dict[str, str] = {
    "sqrt": "sqrt",
    "cbrt": "cbrt",
    "erf": "erf",
    "erfc": "erfc",
    "exp": "exp",
    "log": "log",
    "log10": "log10",
    "log1p": "log1p",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
    "floor": "floor",
    "ceil": "ceil",
    "round": "rint",  # half to even, as polars rounds
}

_SYMBOLS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

#: The validity source of a null literal: a word of zeros.
NULL_SOURCE = "null"


def merge_messages(first: Mapping[int, str], second: Mapping[int, str]) -> dict[int, str]:
    """The error message of each failure kind, from two sets: both texts where they differ.

    A kernel's counter says how many rows failed in one way, not which expression
    failed: the error lists every expression that can fail that way.
    """
    merged = dict(first)
    for kind, message in second.items():
        merged[kind] = _joined(merged.get(kind), message)
    return merged


def _joined(known: str | None, message: str) -> str:
    """``message`` added to the text ``known`` already holds for its kind (once)."""
    return message if known is None or message in known else f"{known}; or {message}"


def input_source(k: int) -> str:
    """The validity source of input column ``k`` (its bitmap ``v{k}``)."""
    return f"v{k}"


def scalar_source(j: int) -> str:
    """The validity source of reduction result ``j`` of an earlier pass (``sv{j}``)."""
    return f"sv{j}"


@dataclass(frozen=True)
class Valid:
    """Where a value is valid: every bitmap source in ``sources`` AND the per-row ``row``."""

    sources: frozenset[str] = frozenset()
    row: str | None = None

    @property
    def never_null(self) -> bool:
        """True when the value has no null at all."""
        return not self.sources and self.row is None


NEVER_NULL = Valid()


@dataclass(frozen=True)
class Val:
    """A lowered value: an expression (a temporary, a literal, an argument) and its validity."""

    expr: str
    valid: Valid


class RowAccess(Protocol):
    """What a target's loop skeleton provides to the lowering of one row."""

    #: a boolean that is false on rows past the end (padding lanes), or None if none exist
    in_range: str | None

    def column(self, k: int, spec: InputSpec, emit: Callable[[str], None]) -> str:
        """The value of input column ``k`` at this row."""
        ...

    def sources_bit(self, sources: frozenset[str], emit: Callable[[str], None]) -> str:
        """A boolean: every source in ``sources`` is valid at this row."""
        ...

    def count_error(self, kind: int, failed: str) -> str:
        """A statement adding one to failure counter ``kind`` where ``failed`` is true."""
        ...


class Lowering:
    """Per-row statements for typed nodes, one temporary per distinct node (CSE).

    ``inputs`` and ``scalars`` number the kernel's input columns and the reduction
    results it reads; ``params`` numbers the literals passed as arguments
    ``p0, p1, ...`` instead of being written in.
    """

    def __init__(
        self,
        dialect: Dialect,
        rows: RowAccess,
        types: Mapping[Node, DType],
        inputs: Mapping[str, int],
        input_specs: list[InputSpec],
        scalars: Mapping[Agg, int],
        scalar_specs: list[ScalarSpec],
        params: Mapping[Node, int] | None = None,
        grouped: Mapping[GroupAgg, int] | None = None,
        grouped_specs: list[GroupedSpec] | None = None,
        suffix: str = "",
        tables: Mapping[TableRef, int] | None = None,
    ) -> None:
        self.d = dialect
        #: appended to every temporary's name (several lowerings of one row side by side)
        self.suffix = suffix
        #: per-group results of earlier passes: ``g{j}`` (and ``gv{j}``), by group id
        self.grouped = grouped or {}
        self.grouped_specs = grouped_specs or []
        self.rows = rows
        self.types = types
        self.inputs = inputs
        self.input_specs = input_specs
        self.scalars = scalars
        self.scalar_specs = scalar_specs
        self.params = params or {}
        #: lookup tables, passed as arguments ``lut{k}`` (values), ``lutv{k}`` (validity
        #: bytes of nullable tables) and ``lutn{k}`` (length)
        self.tables = tables or {}
        self.lines: list[str] = []
        self.memo: dict[Node, Val] = {}
        self.err_messages: dict[int, str] = {}
        #: indices in `lines` of the statements that count failures
        self.error_lines: set[int] = set()
        #: a per-row boolean: failures count only where it holds (see `gate_failures`)
        self.gate: str | None = None
        #: nodes whose failures another kernel of the pass already counted
        self.counted_elsewhere: frozenset[Node] = frozenset()
        self._lowering: list[Node] = []
        self._counter = 0
        #: compiled user functions called: wrapper name -> (function, result dtype, arity,
        #: how it is called: "valid" rows only, "all" rows, "all" returning "validity")
        self.functions: dict[str, tuple[Any, DType, int, str]] = {}

    # -- helpers ----------------------------------------------------------------------
    def emit(self, line: str) -> None:
        """Append one statement."""
        self.lines.append(line)

    def fresh(self, prefix: str = "t") -> str:
        """A new temporary name."""
        self._counter += 1
        return f"{prefix}{self._counter}{self.suffix}"

    def declare(self, dtype: DType, expr: str, prefix: str = "t") -> str:
        """Declare a temporary holding ``expr``; its name."""
        name = self.fresh(prefix)
        self.emit(self.d.decl(name, dtype, expr))
        return name

    def value(self, node: Node) -> Val:
        """The lowered value of a typed node (memoised: shared subtrees are computed once)."""
        hit = self.memo.get(node)
        if hit is None:
            self._lowering.append(node)
            try:
                hit = self.lower(node)
            finally:
                self._lowering.pop()
            self.memo[node] = hit
        return hit

    def row_valid(self, valid: Valid) -> str | None:
        """``valid`` as one per-row boolean, or None when never null."""
        if valid.never_null:
            return None
        parts = []
        if valid.sources:
            parts.append(self.rows.sources_bit(valid.sources, self.emit))
        if valid.row is not None:
            parts.append(valid.row)
        if len(parts) == 1:
            return parts[0]
        return self.declare(DType.BOOL, self.d.and_(*parts), "m")

    def both(self, *valids: Valid, row: str | None = None) -> Valid:
        """Valid where all of ``valids`` are (and ``row``, a per-row boolean, if given)."""
        sources: frozenset[str] = frozenset()
        rows = [] if row is None else [row]
        for v in valids:
            sources |= v.sources
            if v.row is not None and v.row not in rows:
                rows.append(v.row)
        if len(rows) > 1:
            return Valid(sources, self.declare(DType.BOOL, self.d.and_(*rows), "m"))
        return Valid(sources, rows[0] if rows else None)

    def count_error(self, kind: int, failed: str, valid: Valid, message: str) -> None:
        """Count rows where ``failed`` holds on a valid row (strict casts, bad exponents).

        A kernel counts each kind of failure once: where two expressions can fail the
        same way, the error names both (`merge_messages`), never only the last one.
        """
        self.err_messages[kind] = _joined(self.err_messages.get(kind), message)
        if self._lowering and self._lowering[-1] in self.counted_elsewhere:
            return
        rv = self.row_valid(valid)
        conditions = [failed, *(c for c in (rv, self.gate) if c is not None)]
        self.error_lines.add(len(self.lines))
        self.emit(self.rows.count_error(kind, self.d.and_(*conditions) if len(conditions) > 1
                                        else failed))  # fmt: skip

    def gate_failures(self, keep: str) -> None:
        """From now on, count failures only on rows where ``keep`` (the filter) holds.

        polars pushes a filter below the columns it does not read, so a strict cast
        that fails only on rows the filter drops raises nothing there. Lower the
        filter first: its own nodes keep counting on every row (polars evaluates the
        predicate on all of them), and nodes lowered afterwards are outside it.
        """
        self.gate = keep

    def filter_rows(self, mask: Node, gate: Node | None) -> str:
        """Lower the filter ``mask``: a boolean, true on the rows it keeps (null drops).

        ``gate`` is the part of the mask polars applies before the outputs (the
        planner's `Segment.gate`): lowered first, its failures count on every row, and
        every node lowered after it (the rest of the mask, the outputs) counts failures
        only on the rows it keeps. None: every failure counts on every row.
        """
        whole = gate == mask
        if gate is not None and not whole:
            self.gate_failures(self._keep(gate))
        keep = self._keep(mask)
        if whole:
            self.gate_failures(keep)
        return keep

    def _keep(self, predicate: Node) -> str:
        val = self.value(predicate)
        valid = self.row_valid(val.valid)
        return self.declare(DType.BOOL, self.d.and_(valid, val.expr)) if valid else val.expr

    # -- nodes --------------------------------------------------------------------------
    @singledispatchmethod
    def lower(self, node: Node) -> Val:
        """Lower one node (its children through `value`)."""
        msg = (
            f"the {self.d.name} code generator does not support {type(node).__name__} nodes "
            f"({node!r})"
        )
        raise UnsupportedOperationError(msg)

    @lower.register
    def _(self, node: Column) -> Val:
        k = self.inputs[node.name]
        spec = self.input_specs[k]
        t = self.declare(spec.dtype, self.rows.column(k, spec, self.emit), "c")
        # a lagged input has nulls where the shift moves rows in (unless they are filled),
        # bitmap or not
        lag_nulls = spec.lag and not spec.fill
        sources = frozenset({input_source(k)}) if spec.nullable or lag_nulls else frozenset()
        row = None
        if spec.nan_null:  # NaN means null in this column (pandas NumPy-backed floats)
            row = self.declare(DType.BOOL, self.d.compare("==", t, t), "m")
        return Val(t, Valid(sources, row))

    @lower.register
    def _(self, node: Literal) -> Val:
        dtype = self.types[node]
        if node.value is None:
            return Val(self.d.const(None, dtype), Valid(frozenset({NULL_SOURCE})))
        k = self.params.get(node)
        if k is not None:
            return Val(f"p{k}", NEVER_NULL)  # an argument: other values reuse the kernel
        return Val(self.d.const(node.value, dtype), NEVER_NULL)

    @lower.register
    def _(self, node: Agg) -> Val:
        j = self.scalars[node]
        sources = frozenset({scalar_source(j)}) if self.scalar_specs[j].nullable else frozenset()
        return Val(f"s{j}", Valid(sources))

    @lower.register
    def _(self, node: GroupAgg) -> Val:
        # the group's value, gathered at the row's group id (one group: its only value)
        j = self.grouped[node]
        spec = self.grouped_specs[j]
        index = "0" if spec.ids is None else self.value(Column(spec.ids)).expr
        value = self.declare(spec.dtype, self.d.gather(f"g{j}", index))
        if not spec.nullable:
            return Val(value, NEVER_NULL)
        return Val(value, Valid(row=self.declare(DType.BOOL, self.d.gather(f"gv{j}", index), "m")))

    @lower.register
    def _(self, node: Binary) -> Val:
        a, b = self.value(node.left), self.value(node.right)
        op, d = node.op, self.d
        operand, result = self.types[node.left], self.types[node]
        if op in ("and", "or") and result.is_bool:
            return self._kleene(op, a, b)
        valid = self.both(a.valid, b.valid)
        if op in _SYMBOLS:
            if operand != self.types[node.right]:  # int64 against uint64, compared exactly
                expr = self._compare_mixed(op, a.expr, b.expr, operand.is_signed)
            else:
                expr = self._compare(op, a.expr, b.expr, operand.is_float)
            return Val(self.declare(DType.BOOL, expr), valid)
        if op == "xor" and result.is_bool:
            return Val(self.declare(DType.BOOL, d.compare("!=", a.expr, b.expr)), valid)
        if op in ("and", "or", "xor"):
            sym = {"and": "&", "or": "|", "xor": "^"}[op]
            return Val(self.declare(result, d.wrapping(sym, a.expr, b.expr, result)), valid)
        if op in ("add", "sub", "mul"):
            sym = {"add": "+", "sub": "-", "mul": "*"}[op]
            if result.is_float:
                expr = d.float_op(sym, a.expr, b.expr, result)
            else:
                expr = d.wrapping(sym, a.expr, b.expr, result)
            return Val(self.declare(result, expr), valid)
        if op == "truediv":
            return Val(self.declare(result, d.float_op("/", a.expr, b.expr, result)), valid)
        if op == "arctan2":
            return Val(self.declare(result, d.math("atan2", result, a.expr, b.expr)), valid)
        if op in ("floordiv", "truncdiv", "mod"):
            if result.is_float:
                # polars: a // b = floor(a / b) and a % b = a - b * floor(a / b), each step
                # rounded to the result type (so x % inf is NaN, not x as in Python);
                # truncdiv is a / b toward zero (ceil below zero keeps -0.0)
                ratio = self.declare(result, d.float_op("/", a.expr, b.expr, result))
                floor = d.math("floor", result, ratio)
                if op == "truncdiv":
                    below = d.compare("<", ratio, d.const(0.0, result))
                    expr = d.select(below, d.math("ceil", result, ratio), floor)
                    return Val(self.declare(result, expr), valid)
                q = self.declare(result, floor)
                if op == "floordiv":
                    return Val(q, valid)
                prod = d.float_op("*", b.expr, q, result)
                return Val(self.declare(result, d.float_op("-", a.expr, prod, result)), valid)
            divisor = node.right
            constant = divisor.value if isinstance(divisor, Literal) \
                and divisor not in self.params and type(divisor.value) is int else None  # fmt: skip
            return self._int_divmod(op, result, a, b, valid, constant)
        if op == "pow":
            if result.is_float:
                return Val(self.declare(result, d.math("pow", result, a.expr, b.expr)), valid)
            return self._int_pow(result, self.types[node.right], a, b, valid)
        msg = f"operator `{op}` has no {d.name} lowering"
        raise UnsupportedOperationError(msg)

    def _compare(self, op: str, a: str, b: str, is_float: bool) -> str:
        d = self.d
        sym = _SYMBOLS[op]
        if not is_float:
            return d.compare(sym, a, b)
        # polars orders floats totally: NaN equals NaN and is larger than every number.
        a_nan, b_nan = d.compare("!=", a, a), d.compare("!=", b, b)
        a_num, b_num = d.compare("==", a, a), d.compare("==", b, b)
        if op in ("eq", "ne"):
            equal = d.or_(d.compare("==", a, b), d.and_(a_nan, b_nan))
            return equal if op == "eq" else d.not_(equal)
        return {
            "lt": d.or_(d.compare("<", a, b), d.and_(b_nan, a_num)),
            "le": d.or_(d.compare("<=", a, b), b_nan),
            "gt": d.or_(d.compare(">", a, b), d.and_(a_nan, b_num)),
            "ge": d.or_(d.compare(">=", a, b), a_nan),
        }[op]

    def _compare_mixed(self, op: str, a: str, b: str, left_signed: bool) -> str:
        """Compare int64 with uint64 exactly: a negative int64 is below every uint64."""
        d = self.d
        if not left_signed:  # put the signed operand on the left
            a, b = b, a
            op = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(op, op)
        zero = d.const(0, DType.INT64)
        ua = d.to_uint64(a)
        negative, nonnegative = d.compare("<", a, zero), d.compare(">=", a, zero)
        sym = _SYMBOLS[op]
        if op == "eq":
            return d.and_(nonnegative, d.compare("==", ua, b))
        if op == "ne":
            return d.not_(d.and_(nonnegative, d.compare("==", ua, b)))
        if op in ("lt", "le"):
            return d.or_(negative, d.compare(sym, ua, b))
        return d.and_(nonnegative, d.compare(sym, ua, b))

    def _kleene(self, op: str, a: Val, b: Val) -> Val:
        d = self.d
        if a.valid.never_null and b.valid.never_null:
            expr = d.and_(a.expr, b.expr) if op == "and" else d.or_(a.expr, b.expr)
            return Val(self.declare(DType.BOOL, expr), NEVER_NULL)
        av = self.row_valid(a.valid) or d.true
        bv = self.row_valid(b.valid) or d.true
        if op == "and":
            # false wins over null; null otherwise wins over true
            false = self.declare(
                DType.BOOL, d.or_(d.and_(av, d.not_(a.expr)), d.and_(bv, d.not_(b.expr)))
            )
            value = self.declare(DType.BOOL, d.not_(false))
            valid = self.declare(DType.BOOL, d.or_(false, d.and_(av, bv)), "m")
            return Val(value, Valid(row=valid))
        true = self.declare(DType.BOOL, d.or_(d.and_(av, a.expr), d.and_(bv, b.expr)))
        valid = self.declare(DType.BOOL, d.or_(true, d.and_(av, bv)), "m")
        return Val(true, Valid(row=valid))

    def _int_divmod(self, op: str, result: DType, a: Val, b: Val, valid: Valid,
                    constant: int | None) -> Val:  # fmt: skip
        """Integer ``//``, ``truncdiv`` and ``%``: by zero gives null; ``MIN // -1`` wraps.

        ``constant`` is the divisor where it is a literal compiled into the kernel
        (`planner._constant_divisor`): other than 0 or -1, no row needs a check (and
        the compiler divides by multiplying).
        """
        d = self.d
        if constant is not None and constant not in (0, -1):
            if op == "truncdiv":
                return Val(self.declare(result, self._toward_zero(a.expr, b.expr, result)),
                           valid)  # fmt: skip
            divide = d.floordiv if op == "floordiv" else d.mod
            return Val(self.declare(result, divide(a.expr, b.expr, result)), valid)
        zero, one = d.const(0, result), d.const(1, result)
        by_zero = self.declare(DType.BOOL, d.compare("==", b.expr, zero))
        special = by_zero
        minus_one = None
        if result.is_signed:
            # MIN // -1 overflows the hardware divide: divide by 1 instead, then fix up
            minus_one = self.declare(DType.BOOL, d.compare("==", b.expr, d.const(-1, result)))
            special = self.declare(DType.BOOL, d.or_(by_zero, minus_one))
        divisor = self.declare(result, d.select(special, one, b.expr))
        if op in ("floordiv", "truncdiv"):
            expr = d.floordiv(a.expr, divisor, result) if op == "floordiv" \
                else self._toward_zero(a.expr, divisor, result)  # fmt: skip
            if minus_one is not None:
                expr = d.select(minus_one, d.negate_wrapping(a.expr, result), expr)
        else:
            expr = d.select(special, zero, d.mod(a.expr, divisor, result))
        nonzero = self.declare(DType.BOOL, d.not_(by_zero), "m")
        return Val(self.declare(result, expr), self.both(valid, row=nonzero))

    def _toward_zero(self, a: str, b: str, result: DType) -> str:
        """Integer ``a / b`` rounded toward zero, ``b`` neither 0 nor -1 where ``a`` is MIN.

        From the targets' floor division (numba's ``//`` floors): one more where the
        division left a remainder and the signs differ (the floor went past zero).
        """
        d = self.d
        quotient = d.floordiv(a, b, result)
        if result.is_unsigned:
            return quotient
        zero = d.const(0, result)
        remainder = d.compare("!=", d.mod(a, b, result), zero)
        signs = d.compare("!=", d.compare("<", a, zero), d.compare("<", b, zero))
        return d.wrapping("+", quotient, d.select(d.and_(remainder, signs), d.const(1, result),
                                                  zero), result)  # fmt: skip

    def _int_pow(self, result: DType, exp_dtype: DType, a: Val, b: Val, valid: Valid) -> Val:
        d = self.d
        checks = []
        if exp_dtype.is_signed:
            checks.append(d.compare(">=", b.expr, d.const(0, exp_dtype)))
        if exp_dtype.bits == 64:
            checks.append(d.compare("<=", b.expr, d.const(2**32 - 1, exp_dtype)))
        if not checks:
            return Val(self.declare(result, d.ipow(a.expr, b.expr, result)), valid)
        ok = self.declare(DType.BOOL, d.and_(*checks) if len(checks) > 1 else checks[0])
        exponent = self.declare(exp_dtype, d.select(ok, b.expr, d.const(0, exp_dtype)))
        self.count_error(
            ERR_NEGATIVE_EXPONENT,
            d.not_(ok),
            # polars casts the whole exponent column to u32 first: a row whose base is
            # null fails too
            b.valid,
            "integer raised to a negative integer power (or one above 2**32-1); "
            "cast the base to float first, e.g. `x.cast('float64') ** y`",
        )
        value = d.select(ok, d.ipow(a.expr, exponent, result), d.const(0, result))
        return Val(self.declare(result, value), valid)

    @lower.register
    def _(self, node: Unary) -> Val:
        op, d = node.op, self.d
        a = self.value(node.arg)
        src, result = self.types[node.arg], self.types[node]
        if op in ("is_null", "is_not_null"):
            rv = self.row_valid(a.valid)
            if rv is None:
                expr = d.false if op == "is_null" else d.true
            else:
                expr = d.not_(rv) if op == "is_null" else rv
            return Val(self.declare(DType.BOOL, expr), NEVER_NULL)
        if op in ("is_nan", "is_not_nan", "is_finite", "is_infinite"):
            if src.is_float:
                expr = {
                    "is_nan": d.compare("!=", a.expr, a.expr),
                    "is_not_nan": d.compare("==", a.expr, a.expr),
                    "is_finite": d.is_finite(a.expr),
                    "is_infinite": d.is_inf(a.expr),
                }[op]
            else:
                expr = d.false if op in ("is_nan", "is_infinite") else d.true
            return Val(self.declare(DType.BOOL, expr), a.valid)
        if op == "not":
            expr = d.not_(a.expr) if result.is_bool else d.invert(a.expr, result)
            return Val(self.declare(result, expr), a.valid)
        if op == "neg":
            expr = d.negate(a.expr) if result.is_float else d.negate_wrapping(a.expr, result)
            return Val(self.declare(result, expr), a.valid)
        if op == "abs":
            if result.is_float:
                expr = d.math("fabs", result, a.expr)
            elif result.is_signed:
                negative = d.compare("<", a.expr, d.const(0, result))
                expr = d.select(negative, d.negate_wrapping(a.expr, result), a.expr)
            else:
                expr = a.expr
            return Val(self.declare(result, expr), a.valid)
        if op == "sign":
            one, minus, zero = d.const(1, result), d.const(-1, result), d.const(0, result)
            positive = d.compare(">", a.expr, zero)
            if result.is_unsigned:
                expr = d.select(positive, one, zero)
            else:
                # floats keep NaN and ±0.0 as they are
                rest = a.expr if result.is_float else zero
                expr = d.select(positive, one,
                                d.select(d.compare("<", a.expr, zero), minus, rest))  # fmt: skip
            return Val(self.declare(result, expr), a.valid)
        if op in BIT_COUNT_FUNCS:
            return Val(self.declare(result, self._bit_count(op, a.expr, src)), a.valid)
        if op == "arctanh":
            # as Rust's std (so polars) computes it, not the C library's atanh (they differ
            # in the last bit on a quarter of the rows): 0.5 * log1p(2x / (1 - x))
            x = self.declare(result, d.convert(a.expr, result))
            twice = d.float_op("*", d.const(2.0, result), x, result)
            ratio = d.float_op("/", twice, d.float_op("-", d.const(1.0, result), x, result),
                               result)  # fmt: skip
            expr = d.float_op("*", d.const(0.5, result), d.math("log1p", result, ratio), result)
            return Val(self.declare(result, expr), a.valid)
        func = FLOAT_FUNCTIONS.get(op)
        if func is not None:
            return Val(self.declare(result, d.math(func, result, a.expr)), a.valid)
        msg = f"function `{op}` has no {d.name} lowering"
        raise UnsupportedOperationError(msg)

    def _bit_count(self, op: str, a: str, src: DType) -> str:
        """Polars' ``bitwise_*`` count of integer (or boolean) ``a`` in its type's width.

        The value's bits, zero-extended to 64 (a boolean is one bit); ones are counted
        as the zeros of the complement within the width. Leading zeros: the width less
        the set bits once every bit below the highest set one is set too; trailing
        zeros: the set bits of ``~x & (x - 1)`` (the ones below the lowest set bit; all
        64 for 0, hence the cap at the width). Every step a popcount, so all three
        targets compute it the same way with one intrinsic.
        """
        d, u64, i64 = self.d, DType.UINT64, DType.INT64
        width = 1 if src.is_bool else src.bits
        if src.is_bool:
            bits = d.select(a, d.const(1, u64), d.const(0, u64))
        else:
            unsigned = {8: DType.UINT8, 16: DType.UINT16, 32: DType.UINT32, 64: u64}[width]
            bits = d.to_uint64(d.convert(a, unsigned))
        x = self.declare(u64, bits)
        kind = op.removeprefix("bitwise_")
        if kind.endswith("_ones") and kind != "count_ones":
            x = self.declare(u64, d.wrapping("^", x, d.const(2**width - 1, u64), u64))
        w = d.const(width, i64)
        if kind == "count_ones":
            count = d.popcount(x)
        elif kind == "count_zeros":
            count = d.wrapping("-", w, d.popcount(x), i64)
        elif kind.startswith("trailing"):
            below = d.wrapping("&", d.invert(x, u64), d.wrapping("-", x, d.const(1, u64), u64),
                               u64)  # fmt: skip
            ones = self.declare(i64, d.popcount(below))
            count = d.select(d.compare("<", ones, w), ones, w)
        else:
            smeared = x
            for shift in (1, 2, 4, 8, 16, 32):
                smeared = self.declare(
                    u64, d.wrapping("|", smeared, d.shift_right(smeared, shift, u64), u64)
                )
            count = d.wrapping("-", w, d.popcount(smeared), i64)
        return d.convert(count, DType.UINT32)

    @lower.register
    def _(self, node: Cast) -> Val:
        d = self.d
        a = self.value(node.arg)
        src, dst = self.types[node.arg], node.dtype
        if dst.is_bool:
            expr = a.expr if src.is_bool else d.compare("!=", a.expr, d.const(0, src))
            return Val(self.declare(DType.BOOL, expr), a.valid)
        if src.is_bool:
            expr = d.select(a.expr, d.const(1, dst), d.const(0, dst))
            return Val(self.declare(dst, expr), a.valid)
        if not cast_can_fail(src, dst):
            return Val(self.declare(dst, d.convert(a.expr, dst)), a.valid)
        ok = self.declare(DType.BOOL, self._fits(a.expr, src, dst), "m")
        # convert a value that fits everywhere: out-of-range conversions are undefined in C
        safe = self.declare(src, d.select(ok, a.expr, d.const(0, src)))
        value = self.declare(dst, d.convert(safe, dst))
        if node.strict:
            self.count_error(
                ERR_STRICT_CAST,
                d.not_(ok),
                a.valid,
                f"strict cast to {dst} failed: some values do not fit; "
                "use `.cast(..., strict=False)` to turn them into nulls",
            )
            return Val(value, a.valid)
        return Val(value, self.both(a.valid, row=ok))

    def _fits(self, a: str, src: DType, dst: DType) -> str:
        """True where value ``a`` of ``src`` converts to the integer type ``dst`` exactly enough."""
        d = self.d
        lo, hi = int_range(dst)
        if src.is_float:
            # compared in float64 (float32 widens exactly); the bounds are exact in float64
            f64 = DType.FLOAT64
            number = d.compare("==", a, a)
            upper = d.compare("<", a, d.const(float(hi + 1), f64))
            if dst.bits == 64:
                lower = (d.compare(">=", a, d.const(float(lo), f64)) if lo < 0
                         else d.compare(">", a, d.const(-1.0, f64)))  # fmt: skip
            else:
                lower = d.compare(">", a, d.const(float(lo - 1), f64))
            return d.and_(number, lower, upper)
        slo, shi = int_range(src)
        checks = []
        if lo > slo:
            checks.append(d.compare(">=", a, d.const(lo, src)))
        if hi < shi:
            checks.append(d.compare("<=", a, d.const(hi, src)))
        if not checks:
            return d.true
        return d.and_(*checks) if len(checks) > 1 else checks[0]

    @lower.register
    def _(self, node: When) -> Val:
        d = self.d
        c = self.value(node.condition)
        a, b = self.value(node.then), self.value(node.otherwise)
        cv = self.row_valid(c.valid)
        cond = self.declare(DType.BOOL, d.and_(cv, c.expr) if cv else c.expr)
        value = self.declare(self.types[node], d.select(cond, a.expr, b.expr))
        if a.valid == b.valid:
            return Val(value, a.valid)  # valid in the same places whichever branch is taken
        av = self.row_valid(a.valid) or d.true
        bv = self.row_valid(b.valid) or d.true
        return Val(value, Valid(row=self.declare(DType.BOOL, d.select(cond, av, bv), "m")))

    @lower.register
    def _(self, node: Coalesce) -> Val:
        d = self.d
        parts = [self.value(a) for a in node.args]
        expr, valid = parts[-1].expr, parts[-1].valid
        valid_row: str | None = None  # once a per-row validity is needed
        for part in reversed(parts[:-1]):
            if part.valid.never_null:
                expr, valid, valid_row = part.expr, part.valid, None
                continue
            pv = self.row_valid(part.valid)
            assert pv is not None
            expr = d.select(pv, part.expr, expr)
            if valid.never_null and valid_row is None:
                continue  # the fallback is never null: neither is the result
            rest = valid_row if valid_row is not None else self.row_valid(valid)
            assert rest is not None
            valid_row = self.declare(DType.BOOL, d.or_(pv, rest), "m")
        value = self.declare(self.types[node], expr)
        if valid_row is not None:
            return Val(value, Valid(row=valid_row))
        return Val(value, valid)

    @lower.register
    def _(self, node: FillNan) -> Val:
        d = self.d
        a, b = self.value(node.arg), self.value(node.value)
        is_nan = self.declare(DType.BOOL, d.compare("!=", a.expr, a.expr))
        value = self.declare(self.types[node], d.select(is_nan, b.expr, a.expr))
        bv = self.row_valid(b.valid)
        if bv is None:
            return Val(value, a.valid)
        return Val(value, self.both(a.valid, row=self.declare(
            DType.BOOL, d.or_(d.not_(is_nan), bv), "m")))  # fmt: skip

    @lower.register
    def _(self, node: Clip) -> Val:
        d = self.d
        a = self.value(node.arg)
        dtype = self.types[node]
        # polars' clip: below the lower bound, the lower bound; else above the upper one,
        # the upper one (bounds in the wrong order give the lower bound below it)
        x = expr = a.expr
        # a bound is an argument where the plan made it one (`Segment.params`)
        if node.upper is not None:
            k = self.params.get(clip_bound(node.upper, dtype))
            hi = d.const(node.upper, dtype) if k is None else f"p{k}"
            expr = self.declare(dtype, d.select(d.compare(">", x, hi), hi, expr))
        if node.lower is not None:
            k = self.params.get(clip_bound(node.lower, dtype))
            lo = d.const(node.lower, dtype) if k is None else f"p{k}"
            expr = self.declare(dtype, d.select(d.compare("<", x, lo), lo, expr))
        return Val(expr, a.valid)

    def _table(self, table: TableRef) -> int:
        k = self.tables.get(table)
        if k is None:  # pragma: no cover - a generator passes every table its roots read
            msg = f"lookup table {table!r} is not an argument of this {self.d.name} kernel"
            raise AssertionError(msg)
        return k

    @lower.register
    def _(self, node: Narrow) -> Val:
        a = self.value(node.arg)
        return Val(self.declare(node.dtype, self.d.convert(a.expr, node.dtype)), a.valid)

    @lower.register
    def _(self, node: Check) -> Val:
        a, ok = self.value(node.arg), self.value(node.ok)
        self.count_error(ERR_STRICT_CAST, self.d.not_(ok.expr), a.valid, node.message)
        return a

    @lower.register
    def _(self, node: EveryRow) -> Val:
        return self.value(node.arg)  # the same value in every row: only its shape differs

    @lower.register
    def _(self, node: Reinterpret) -> Val:
        return self.value(node.arg)  # the integers are the same; only their meaning changed

    @lower.register
    def _(self, node: Constant) -> Val:
        # a string constant standing alone: code 0 of its one-value dictionary
        return Val(self.d.const(0, self.types[node]), NEVER_NULL)

    @lower.register
    def _(self, node: Gather) -> Val:
        d = self.d
        k = self._table(node.table)
        a = self.value(node.index)
        index_type = self.types[node.index]
        # an index under a null may be anything (pandas writes -1): out of range reads 0
        inside = d.compare("<", d.to_uint64(a.expr), d.to_uint64(f"lutn{k}"))
        index = self.declare(index_type, d.select(inside, a.expr, d.const(0, index_type)))
        value = self.declare(node.table.dtype, d.gather(f"lut{k}", index))
        if not node.table.nullable:
            return Val(value, a.valid)
        present = self.declare(DType.BOOL, d.compare("!=", d.gather(f"lutv{k}", index),
                                                     d.const(0, DType.UINT8)), "m")  # fmt: skip
        if node.error:
            self.count_error(ERR_STRICT_PARSE, d.not_(present), a.valid, node.error)
            return Val(value, a.valid)
        return Val(value, self.both(a.valid, row=present))

    @lower.register
    def _(self, node: Call) -> Val:
        # A compiled user function sees valid rows only: the call is guarded by the
        # arguments' validity (a null argument gives null, as polars' `map_elements`
        # with `skip_nulls=True`). The target's wrapper returns (value, no exception);
        # an exception (integer division by zero) is counted and raised after the kernel.
        # With `skip_nulls=False` every row is passed, each value followed by its validity,
        # and the function's own (value, valid) decides the result's validity.
        d = self.d
        args = [self.value(a) for a in node.args]
        result = self.types[node]
        exprs = [a.expr for a in args]
        if node.func.skip_nulls:
            mode = "valid"
            valid = self.both(*(a.valid for a in args))
            guard = self.row_valid(valid)
        else:
            mode = "validity" if node.func.returns_validity(
                tuple(self.types[a] for a in node.args)) else "all"  # fmt: skip
            exprs = [x for a in args for x in (a.expr, self.row_valid(a.valid) or d.true)]
            valid, guard = NEVER_NULL, None
        name = f"_call{node.func.token}_{result.value}_{len(exprs)}_{mode}"
        self.functions[name] = (node.func, result, len(exprs), mode)
        pair = self.fresh("r")
        self.emit(d.decl(pair, result, d.call(name, result, exprs, guard)))
        ok = self.declare(DType.BOOL, d.item(pair, 1), "m")
        if mode == "validity":
            valid = Valid(row=self.declare(DType.BOOL, d.item(pair, 2), "m"))
        names = sorted({f.name for f, _, _, _ in self.functions.values()})
        which = f"`{names[0]}`" if len(names) == 1 else "one of " + ", ".join(
            f"`{n}`" for n in names)  # fmt: skip
        message = (
            f"compiled user function {which} raised an exception (for example an integer "
            "division by zero); guard the case inside the function, e.g. "
            "`if b == 0: return 0`"
        )
        # the rows the function was called on: the valid ones, or every row
        self.count_error(ERR_USER_FUNCTION, d.not_(ok), valid if guard else NEVER_NULL, message)
        return Val(self.declare(result, d.item(pair, 0)), valid)

    @lower.register
    def _(self, node: Search) -> Val:
        k = self._table(node.table)
        a = self.value(node.value)
        found = self.d.search(f"lut{k}", f"lutn{k}", a.expr)
        return Val(self.declare(DType.INT32, self.d.convert(found, DType.INT32)), a.valid)


# -- reductions -----------------------------------------------------------------------------

#: "key": a float min/max kept in a kernel as the float's int64 order key (the CPU
#: reduction kernels; `numba_cpu._keyed`), stored back into its "f" partial column
_ACC_DTYPE = {"f": DType.FLOAT64, "i": DType.INT64, "u": DType.UINT64, "key": DType.INT64}


@dataclass
class Accumulator:
    """One running value of a reduction's state, and the partial column it is stored in."""

    name: str
    kind: str  # "f" (float64), "i" (int64), "u" (uint64): which partial array; or "key"
    column: int
    init: str
    #: ``init`` as a number (tables made on the host start at it)
    start: float | int = 0

    @property
    def dtype(self) -> DType:
        """The accumulator's type."""
        return _ACC_DTYPE[self.kind]


@dataclass(frozen=True)
class Fold:
    """One per-row update of an accumulator.

    ``add``/``or``: ``acc = acc + value`` / ``acc | value`` (``value`` is already zero on
    rows that do not count); ``count``: one more where the boolean ``value`` holds;
    ``min``/``max``: ``value`` replaces ``acc`` where ``when`` holds and it is
    smaller/larger. A row target applies folds row by row (`row_updates`); the CPU
    target counts a word's rows at once (a population count of their bits); a
    whole-array target reduces each fold's values at once.
    """

    op: str
    acc: Accumulator
    value: str
    when: str | None = None
    #: min/max of floats: ``acc`` is NaN until a number arrives, and NaN never replaces it
    nan_empty: bool = False


def take_better(d: Dialect, fold: Fold, value: str, acc: str, when: str | None) -> str:
    """True where ``value`` should replace ``acc`` in a min/max fold (``when`` rows only)."""
    better = d.compare("<" if fold.op == "min" else ">", value, acc)
    if fold.nan_empty:
        # a NaN value never beats a number (every comparison with NaN is false); while
        # ``acc`` is NaN any value replaces it, a NaN one with a NaN: no test of the value
        # itself, which costs the row loop a third of its speed
        better = d.or_(better, d.compare("!=", acc, acc))
    return d.and_(when, better) if when else better


def row_updates(d: Dialect, folds: list[Fold]) -> list[str]:
    """The statements applying ``folds`` to one row, in order."""
    out = []
    for fold in folds:
        acc, dtype = fold.acc.name, fold.acc.dtype
        if fold.op == "add":
            expr = (d.accumulate(acc, fold.value, dtype) if dtype.is_float
                    else d.wrapping("+", acc, fold.value, dtype))  # fmt: skip
        elif fold.op == "count":
            one = d.select(fold.value, d.const(1, dtype), d.const(0, dtype))
            expr = d.wrapping("+", acc, one, dtype)
        elif fold.op == "or":
            expr = d.wrapping("|", acc, fold.value, dtype)
        else:
            expr = d.select(take_better(d, fold, fold.value, acc, fold.when), fold.value, acc)
        out.append(d.assign(acc, expr))
    return out


@dataclass
class ReductionState:
    """The accumulators of one reduction and its slot (partials layout) for the finalizer."""

    slot: AggSlot
    accumulators: list[Accumulator] = field(default_factory=list)
    #: per-row "this row counts" boolean (None: every row counts)
    ok: str | None = None
    #: std and var: the float64 value whose moments are taken two-pass per chunk
    moment_of: str | None = None


@dataclass
class GroupedReduceStart:
    """What every target's grouped-reduction kernel starts from: its arguments and a lowering.

    ``ids_name`` is the column of group ids (None: one group, every row in group 0).
    """

    ids_name: str | None
    inputs: list[InputSpec]
    scalars: list[ScalarSpec]
    groups: list[GroupedSpec]
    tables: list[TableRef]
    lw: Lowering


def start_grouped_reduce(
    dialect: Dialect,
    rows: RowAccess,
    aggs: Sequence[GroupAgg],
    types: Mapping[Node, DType],
    nulls: Nullability,
    tables: Sequence[TableRef],
    literals: Sequence[Literal] = (),
) -> GroupedReduceStart:
    """The arguments of a kernel computing the grouped reductions ``aggs`` (same keys).

    ``literals`` are read from arguments ``p0, p1, ...`` (after the tables').
    """
    ids_name = aggs[0].keys.ids_column
    roots: list[Node] = [a.arg for a in aggs]
    if ids_name is not None:
        roots.append(Column(ids_name))
    typed = dict(types)
    inputs, input_index = collect_inputs(roots, typed, nulls)
    scalars, scalar_index = collect_scalars(roots, typed, nulls, skip_inside_agg=True)
    groups, group_index = collect_grouped(roots, typed, nulls)
    used = kernel_tables(roots, tables)
    params: dict[Node, int] = {lit: k for k, lit in enumerate(literals)}
    lw = Lowering(dialect, rows, types, input_index, inputs, scalar_index, scalars, params,
                  group_index, groups, tables={t: k for k, t in enumerate(used)})  # fmt: skip
    return GroupedReduceStart(ids_name, inputs, scalars, groups, used, lw)


class ReductionLowering:
    """The state, per-row update and partial layout of a pass's reductions, for any target.

    Layout (the contract with `colbridge.backends.common.finalize_reduction`): each
    reduction has a ``count`` of the valid rows it saw (int64), then its own roles —
    ``sum`` (float64, int64 or uint64 by the argument), ``sum_hi``/``sum_lo`` (an exact
    64-bit integer mean), ``best`` (min/max; for floats NaN until a number arrives),
    ``mean``/``m2`` (std and var: a chunk-wise two-pass state, combined with the
    formula polars uses).
    """

    def __init__(self, lowering: Lowering) -> None:
        self.lw = lowering
        self.d = lowering.d
        self.states: list[ReductionState] = []
        #: the state each (argument, accumulator family) was first lowered to
        self._by_content: dict[tuple[Node, str], ReductionState] = {}
        self.n_f = self.n_i = self.n_u = 0
        #: the per-row updates of every accumulator, in order
        self.folds: list[Fold] = []

    def _acc(
        self, state: ReductionState, role: str, kind: str, init: str, start: float | int = 0
    ) -> Accumulator:
        column = {"f": self.n_f, "i": self.n_i, "u": self.n_u}[kind]
        if kind == "f":
            self.n_f += 1
            state.slot.f[role] = column
        elif kind == "i":
            self.n_i += 1
            state.slot.i[role] = column
        else:
            self.n_u += 1
            state.slot.u[role] = column
        acc = Accumulator(f"r{len(self.states)}_{role}{self.lw.suffix}", kind, column, init, start)
        state.accumulators.append(acc)
        return acc

    def add(self, agg: Reduction) -> ReductionState:
        """Lower one reduction: its argument's row statements go to the lowering's lines.

        ``x.filter(p)`` as the argument counts only rows where ``p`` is true (a null
        ``p`` counts as false); ``null_count`` then also counts those rows (``rows``).
        """
        lw, d = self.lw, self.d
        shared = self._shared(agg)
        if shared is not None:
            return shared
        arg_node, kept = agg.arg, None
        if isinstance(arg_node, Filtered):
            pred = lw.value(arg_node.predicate)
            pv = lw.row_valid(pred.valid)
            kept = lw.declare(DType.BOOL, d.and_(pv, pred.expr), "k") if pv else pred.expr
            arg_node = arg_node.arg
        arg = lw.value(arg_node)
        arg_dtype = lw.types[arg_node]
        state = ReductionState(AggSlot(agg, arg_dtype, lw.types[agg]))
        rv = lw.row_valid(arg.valid)
        ok = rv
        if kept is not None:
            ok = d.and_(kept, rv) if rv else kept
        if lw.rows.in_range is not None:
            ok = d.and_(lw.rows.in_range, ok) if ok else lw.rows.in_range
            if kept is not None:
                kept = lw.declare(DType.BOOL, d.and_(lw.rows.in_range, kept), "k")
        if ok is not None and ok not in (rv,):
            ok = lw.declare(DType.BOOL, ok, "k")
        x = arg.expr
        i64, u64, f64 = DType.INT64, DType.UINT64, DType.FLOAT64

        def add_to(acc: Accumulator, value: str) -> None:
            addend = d.select(ok, value, d.const(0, acc.dtype)) if ok else value
            self.folds.append(Fold("add", acc, addend))

        func = agg.func
        count = self._acc(state, "count", "i", d.const(0, i64))
        if func not in ("std", "var"):  # their count grows chunk by chunk (`moment_combine`)
            self.folds.append(Fold("count", count, ok if ok is not None else d.true))
        if func == "null_count" and kept is not None:
            rows = self._acc(state, "rows", "i", d.const(0, i64))
            self.folds.append(Fold("count", rows, kept))
        if func == "mean" and arg_dtype.is_integer and arg_dtype.bits == 64:
            # An exact integer mean: 64-bit values summed as high and low 32-bit halves
            # (neither overflows an int64 within a block); the host adds them exactly.
            kind, dt = ("u", u64) if arg_dtype.is_unsigned else ("i", i64)
            hi = self._acc(state, "sum_hi", kind, d.const(0, dt))
            lo = self._acc(state, "sum_lo", kind, d.const(0, dt))
            add_to(hi, d.shift_right(d.convert(x, dt), 32, dt))
            add_to(lo, d.wrapping("&", d.convert(x, dt), d.const(0xFFFFFFFF, dt), dt))
        elif func in ("sum", "mean"):
            if arg_dtype.is_float:
                acc = self._acc(state, "sum", "f", d.const(0.0, f64))
                add_to(acc, d.convert(x, f64) if arg_dtype != f64 else x)
            elif arg_dtype.is_unsigned:
                acc = self._acc(state, "sum", "u", d.const(0, u64))
                add_to(acc, d.convert(x, u64))
            else:
                acc = self._acc(state, "sum", "i", d.const(0, i64))
                add_to(acc, d.convert(x, i64) if not arg_dtype.is_bool
                       else d.select(x, d.const(1, i64), d.const(0, i64)))  # fmt: skip
        elif func in ("min", "max"):
            self._min_max(state, func, x, arg_dtype, ok)
        elif func in ("std", "var"):
            state.moment_of = d.convert(x, f64) if arg_dtype != f64 else x
            self._acc(state, "mean", "f", d.const(0.0, f64))
            self._acc(state, "m2", "f", d.const(0.0, f64))
        elif func not in ("count", "null_count"):
            msg = f"reduction `{func}` has no {d.name} lowering"
            raise UnsupportedOperationError(msg)
        state.ok = ok
        self.states.append(state)
        self._by_content[(agg.arg, _family(agg, arg_dtype))] = state
        return state

    def _shared(self, agg: Reduction) -> ReductionState | None:
        """A state for ``agg`` over the accumulators of an earlier reduction, if they are its.

        ``sum`` and ``mean`` of one argument keep the same count and sum, ``std`` and
        ``var`` (any ``ddof``) the same moments, ``count`` and ``null_count`` the same
        count: the later reduction reads the earlier one's partial columns (its slot
        names them) and adds no accumulator and no per-row work. Folding and finishing
        partials only read them, so two slots may name one column.
        """
        arg = agg.arg.arg if isinstance(agg.arg, Filtered) else agg.arg
        first = self._by_content.get((agg.arg, _family(agg, self.lw.types[arg])))
        if first is None:
            return None
        slot = first.slot
        state = ReductionState(AggSlot(agg, slot.arg_dtype, self.lw.types[agg], dict(slot.f),
                                       dict(slot.i), dict(slot.u)), ok=first.ok)  # fmt: skip
        self.states.append(state)
        return state

    def _min_max(
        self, state: ReductionState, func: str, x: str, arg_dtype: DType, ok: str | None
    ) -> None:
        d, folds = self.d, self.folds
        f64, i64, u64 = DType.FLOAT64, DType.INT64, DType.UINT64
        if arg_dtype.is_float:
            # NaN until a valid number comes (NaN values never compete): the best stays NaN
            # exactly when every valid value was NaN, which with `count` says null or NaN
            best = self._acc(state, "best", "f", d.const(float("nan"), f64), float("nan"))
            xf = d.convert(x, f64) if arg_dtype != f64 else x
            folds.append(Fold(func, best, xf, ok, nan_empty=True))
            return
        kind, dt = ("u", u64) if arg_dtype.is_unsigned else ("i", i64)
        lo, hi = int_range(arg_dtype) if not arg_dtype.is_bool else (0, 1)
        first = hi if func == "min" else lo
        best = self._acc(state, "best", kind, d.const(first, dt), first)
        xi = d.select(x, d.const(1, dt), d.const(0, dt)) if arg_dtype.is_bool \
            else d.convert(x, dt)  # fmt: skip
        folds.append(Fold(func, best, xi, ok))


def _family(agg: Reduction, arg_dtype: DType) -> str:
    """Which accumulators a reduction keeps.

    Reductions of one argument and one family keep the same ones
    (`ReductionLowering._shared`).
    """
    func = agg.func
    if func in ("std", "var"):
        return "moments"
    if func == "mean" and arg_dtype.is_integer and arg_dtype.bits == 64:
        return "exact mean"
    if func in ("sum", "mean"):
        return "sum"
    if func == "null_count" and isinstance(agg.arg, Filtered):
        return "null_count"  # also counts the rows the filter keeps
    if func in ("count", "null_count"):
        return "count"
    return func


def moment_combine(
    d: Dialect, count: str, mean: str, m2: str, n: str, chunk_mean: str, chunk_m2: str
) -> list[str]:
    """Fold one chunk's moments (``n`` valid rows, their mean and squared deviations) into a state.

    The state is (``count`` int64, ``mean``, ``m2``); the formula is polars' (Schubert &
    Gertz 2018, eq. 17 and 23), so chunk-wise two-pass variances combine as polars
    combines its 128-value chunks; an overflow to inf stays inf rather than NaN.
    """
    f64 = DType.FLOAT64
    weight = d.convert(n, f64)
    total = d.float_op("+", d.convert(count, f64), weight, f64)
    frac = d.float_op("/", weight, total, f64)
    delta = d.float_op("-", chunk_mean, mean, f64)
    body = [
        d.decl("cw_frac", f64, frac),
        d.decl("cw_delta", f64, delta),
        d.decl("cw_mean", f64, d.float_op("+", mean, d.float_op("*", "cw_delta", "cw_frac",
                                                                   f64), f64)),
        d.assign(m2, d.float_op("+", m2, d.float_op("+", chunk_m2, d.float_op(
            "*", d.float_op("*", weight, d.float_op("-", chunk_mean, "cw_mean", f64), f64),
            "cw_delta", f64), f64), f64)),
        d.assign(mean, "cw_mean"),
        d.assign(count, d.wrapping("+", count, d.convert(n, DType.INT64), DType.INT64)),
    ]  # fmt: skip
    return d.if_block(d.compare(">", n, d.const(0, DType.INT64)), body)
