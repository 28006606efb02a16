"""Type inference: untyped IR in, typed IR out (literals typed, implicit casts made explicit).

After this pass every `Literal` has a dtype and both operands of every binary
operation have the type the operation computes in, so code generation never
has to know a promotion rule.

Dynamic types (polars' ``dyn int`` / ``dyn float``): a Python number has no type
of its own until it meets a typed operand (``lit(3) + int8`` is Int8). Polars
keeps expressions built only from such numbers dynamic as well:
``when(c).then(1.0).otherwise(-1) * float32`` is Float32, and so are
``lit(3.5).round() + float32`` and ``(lit(100) + lit(100)) + int8`` (Int16: the
sum of two numbers is folded first). The checker mirrors it: a dynamic
expression stays untyped until its other operand is known; it is then computed
in its own (materialised) type and cast, without strictness, to the type its
*representative* takes next to that operand: for integers the range of every
number in it (polars 2.2: ``when(c).then(1).otherwise(300) + int8`` is Int16;
a power's exponent and a clip's bounds do not count), for floats a float
number. Alone, it is typed as polars materialises it: every number by itself,
then the usual rules.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from colbridge.errors import (
    ColbridgeError,
    ColumnNotFoundError,
    InvalidOperationError,
    SchemaError,
    UnsupportedOperationError,
    UnsupportedTypeError,
)
from colbridge.expr.nodes import (
    BIT_COUNT_FUNCS,
    BITWISE_AGGS,
    COMPARISONS,
    FLOAT_FUNCS,
    GROUPED_ONLY_FUNCS,
    LOGICAL,
    MOMENT_FUNCS,
    ROWS,
    Agg,
    Alias,
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
    Function,
    Gather,
    GroupAgg,
    KeySet,
    Literal,
    Narrow,
    Node,
    Over,
    Round,
    Scan,
    TableRef,
    Unary,
    When,
    children,
    one_value_per_group,
    push_window,
    walk,
)
from colbridge.plan.row_changing import filters_outermost
from colbridge.types import DType
from colbridge.types.logical import Logical
from colbridge.types.promotion import (
    agg_result,
    dynamic_int_type,
    float_result,
    int_range,
    literal_type,
    materialized_literal_type,
    pow_result,
    supertype,
    truediv_result,
)

__all__ = [
    "ColumnType",
    "TypeChecker",
    "cast_can_fail",
    "failed_node",
    "is_host_reduction",
    "is_scalar",
]


class ColumnType:
    """What the planner knows of an input column: its dtype, or why it has none."""

    __slots__ = ("arrow_type", "dtype", "name")

    def __init__(self, name: str, dtype: DType | None, arrow_type: object) -> None:
        self.name = name
        self.dtype = dtype
        self.arrow_type = arrow_type


def cast_can_fail(src: DType, dst: DType) -> bool:
    """True when some value of ``src`` has no value in ``dst`` (it becomes null or an error)."""
    if src == dst or dst.is_bool or dst.is_float:
        return False
    if src.is_bool:
        return False
    if src.is_float:
        return True
    lo, hi = int_range(src)
    dlo, dhi = int_range(dst)
    return lo < dlo or hi > dhi


def failed_node(exc: BaseException) -> Node | None:
    """The innermost expression the checker was typing when ``exc`` was raised, if any."""
    node = exc.__dict__.get("_failed_node")
    return node if isinstance(node, Node) else None


def _is_dynamic_literal(node: Node) -> bool:
    return isinstance(node, Literal) and node.dtype is None


# Operations that keep an expression of dynamic numbers dynamic (as polars does).
_DYNAMIC_BINARY = frozenset({"add", "sub", "mul", "floordiv", "truncdiv", "mod", "pow", "and",
                             "or", "xor"})  # fmt: skip
_DYNAMIC_UNARY = frozenset({"neg", "abs", "round", "floor", "ceil", "sign"})
# Arithmetic in which a Python float next to a boolean stays a Python float.
_ARITHMETIC = frozenset({"add", "sub", "mul", "mod"})
# polars computes `log(x)` and `log10(x)` as `x.log(base)` with a Python-float base
# (e, 10.0): a float `x` decides the type, otherwise that dynamic base does.
_LOG_DYNAMIC_BASE = frozenset({"log", "log10"})
_DYNAMIC_AGG = frozenset({"sum", "min", "max"})
# reductions polars answers in the Null type for a null-typed input (a null, per group too)
NULL_KEEPING_AGGS = frozenset({"sum", "min", "max", "mean", "median", "std", "var", "first",
                               "last"})  # fmt: skip
# elementwise functions polars answers for a null-typed input, in their result type
_NULL_RESULTS = {"sqrt": DType.FLOAT64, "cbrt": DType.FLOAT64, "is_nan": DType.BOOL,
                  "is_not_nan": DType.BOOL, "is_finite": DType.BOOL,
                  "is_infinite": DType.BOOL}  # fmt: skip
# ordered operations likewise (a null-typed column shifted or filled is null-typed still)
NULL_KEEPING_SCANS = frozenset({"shift", "diff", "forward_fill", "backward_fill",
                                "interpolate", "sort", "sort_by", "reverse"})  # fmt: skip
# ordered operations polars computes in Float64 for a null-typed input (all null), and rank
NULL_AS_FLOAT_SCANS = frozenset({"rolling_mean", "rolling_std", "rolling_var",
                                 "rolling_quantile", "ewm_mean", "ewm_std", "ewm_var",
                                 "ewm_sum", "pct_change", "rank"})  # fmt: skip

Number = int | float
#: what a dynamic expression is typed by: the range of its integers, or one of its floats
Representative = tuple[int, int] | float | None


def _fold_int(op: str, a: int, b: int) -> int | None:
    """``a <op> b`` for two Python integers as polars folds them, or None if not folded.

    polars folds sums, differences, products, floor divisions and remainders (the
    result decides the type); a truncated division, a power or a bitwise operation
    stays a dynamic integer typed by its numbers (``lit(2) ** lit(10) + int8`` is
    Int8: null where 1024 does not fit).
    """
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op in ("floordiv", "mod") and b != 0:  # by 0: null in polars; left to the kernels
        return a // b if op == "floordiv" else a % b
    return None


class TypeChecker:
    """Types expressions against one input schema; ``types`` maps typed nodes to dtypes."""

    def __init__(self, schema: Mapping[str, ColumnType], available: list[str]) -> None:
        self.schema = schema
        self.available = available
        self.types: dict[Node, DType] = {}
        # untyped dynamic expressions (not bare numbers) -> (kind "int"/"float", representative)
        self._dynamic: dict[Node, tuple[str, Representative]] = {}
        self._keep_dynamic = True
        #: (node, keep dynamic, allow opaque) -> its typed form, for subtrees met again
        self._typed_memo: dict[tuple[Node, bool, bool], Node] = {}
        #: Arrow types of grouped results no kernel computes (`first` of a string column)
        self.opaque: dict[Node, object] = {}
        #: whether such results may be typed (they can only be outputs of `group_by`)
        self.allow_opaque = False
        #: the segment computes one row of whole-frame reductions (`select(x.sum())`):
        #: a reduction made on the host as Arrow values (`str.join`) is an output there
        self.one_row = False
        #: typed nodes of a logical type (dates, datetimes, strings, ...) and, for strings,
        #: how the runtime builds their dictionary (`colbridge.plan.logical_typing`)
        self.logical: dict[Node, Logical] = {}
        self.dicts: dict[Node, tuple[object, ...]] = {}
        #: the dictionary of the argument of each scan that moves strings (`shift`, fills)
        self.scan_dicts: dict[Node, tuple[object, ...]] = {}
        from colbridge.plan.logical_typing import LogicalTyping

        self._lt = LogicalTyping(self)
        from colbridge.plan.ordered_typing import OrderedTyping

        self._ordered = OrderedTyping(self)

    # -- entry point ----------------------------------------------------------
    def output(self, node: Node) -> Node | None:
        """The typed form of an output, or None where it is polars' Null type.

        A bare ``lit(None)``, a null-typed column, and what polars keeps null-typed
        (``col("n").max()``, ``col("n").shift(1)``) have no type to compute in: the
        output is a column of the Null type, null in every row.
        """
        _refuse_joined_strings_inside(node)
        if is_null_literal(self._check(node)):
            return None
        return self.check(node)

    def check(self, node: Node) -> Node:
        """The typed form of ``node`` (dynamic literals materialised)."""
        typed = self._check(node)
        if self._is_dynamic(typed):
            typed = self._materialize(typed)
        for n in walk(typed):
            # a float16 number (`np.float16(2)`) may take part where the work is done in a
            # wider type; nothing is computed in float16 itself
            if self.types.get(n) is DType.FLOAT16:
                raise _float16_error(_quote(node))
        return typed

    def dtype(self, node: Node) -> DType:
        """The dtype of a typed node."""
        return self.types[node]

    # -- helpers --------------------------------------------------------------
    def _record(self, node: Node, dtype: DType) -> Node:
        self.types[node] = dtype
        return node

    def _is_dynamic(self, node: Node) -> bool:
        return _is_dynamic_literal(node) or node in self._dynamic

    def _dynamic_kind(self, node: Node) -> str | None:
        """The kind ("int" or "float") of a dynamic number or expression, else None."""
        if _is_dynamic_literal(node):
            assert isinstance(node, Literal)
            value = node.value
            if isinstance(value, bool) or value is None:
                return None
            return "float" if isinstance(value, float) else "int"
        info = self._dynamic.get(node)
        return info[0] if info is not None else None

    def _representative(self, node: Node) -> Representative:
        if isinstance(node, Literal):
            value = node.value
            if isinstance(value, bool) or value is None:
                return None
            return (value, value) if isinstance(value, int) else float(value)
        return self._dynamic[node][1]

    def _joined(self, *nodes: Node) -> Representative:
        """The integer range of every dynamic integer among ``nodes`` (nulls left out)."""
        ranges = [r for n in nodes if isinstance(r := self._representative(n), tuple)]
        if not ranges:
            return None
        return min(lo for lo, _ in ranges), max(hi for _, hi in ranges)

    def _dynamic_node(self, node: Node, kind: str, rep: Representative) -> Node:
        self._dynamic[node] = (kind, rep)
        return node

    def _materialize(self, node: Node) -> Node:
        """The typed form of a dynamic number or expression standing alone."""
        if not isinstance(node, Literal):
            keep, self._keep_dynamic = self._keep_dynamic, False
            try:
                typed = self._check(node)
            finally:
                self._keep_dynamic = keep
            return self._materialize(typed) if _is_dynamic_literal(typed) else typed
        lit = node
        if lit.value is None:
            msg = (
                "a bare `lit(None)` (or a null-typed column) has no type; give it one, e.g. "
                "`lit(None, dtype='float64')` or `col('n').cast('float64')`"
            )
            raise SchemaError(msg)
        dtype = materialized_literal_type(lit.value)
        if dtype is None:
            msg = f"literal {lit.value!r} does not fit in int64; colbridge has no wider integers"
            raise SchemaError(msg)
        return self._typed_literal(lit.value, dtype)

    def _typed_literal(self, value: bool | int | float | None, dtype: DType) -> Node:
        if value is not None:
            value = _convert_scalar(value, dtype)
        return self._record(Literal(value, dtype), dtype)

    def _is_boolean(self, node: Node) -> bool:
        """Whether ``node`` is typed Boolean, or is a bare ``lit(None)`` (Kleene logic's null)."""
        typed = self._check(node)
        return is_null_literal(typed) or self.types.get(typed) is DType.BOOL

    def _cast(self, node: Node, dtype: DType) -> Node:
        src = self.types[node]
        if src == dtype:
            return node
        if isinstance(node, Literal) and (node.value is None or not cast_can_fail(src, dtype)):
            # Fold: a literal converts once, here, not on every row.
            return self._typed_literal(node.value, dtype)
        return self._record(Cast(node, dtype, strict=False), dtype)

    def _resolve_pair(self, a: Node, b: Node, where: Node) -> tuple[Node, Node]:
        """Type dynamic operands against the other operand (polars' literal rules)."""
        if self._is_dynamic(a) and self._is_dynamic(b):
            # a null next to a Python number takes the number's own type (polars:
            # `lit(None) + 1` is Int32)
            if is_null_literal(a) and not is_null_literal(b):
                b = self._materialize(b)
                return self._typed_literal(None, self.types[b]), b
            if is_null_literal(b) and not is_null_literal(a):
                a = self._materialize(a)
                return a, self._typed_literal(None, self.types[a])
            return self._materialize(a), self._materialize(b)
        if self._is_dynamic(a):
            return self._type_dynamic_against(a, self.types[b], where), b
        if self._is_dynamic(b):
            return a, self._type_dynamic_against(b, self.types[a], where)
        return a, b

    def _type_dynamic_against(self, node: Node, other: DType, where: Node) -> Node:
        """A dynamic number or expression typed next to an operand of type ``other``."""
        if isinstance(node, Literal) and node.value is None:
            return self._typed_literal(None, other)
        rep = self._representative(node)
        if rep is None:
            dtype: DType | None = other
        elif isinstance(rep, tuple):
            dtype = dynamic_int_type(*rep, other)
        else:
            dtype = literal_type(rep, other)
        if dtype is None:
            shown = node.value if isinstance(node, Literal) else rep
            msg = (
                f"literal {shown!r} in `{where!r}` needs a 128-bit integer next to {other}; "
                "cast the column first, e.g. `.cast('float64')`"
            )
            raise SchemaError(msg)
        if isinstance(node, Literal):
            return self._typed_literal(node.value, dtype)
        # computed in its own type, then cast without strictness (polars: `.cast(dtype)`)
        return self._cast(self._materialize(node), dtype)

    def _super(self, a: DType, b: DType, where: Node) -> DType:
        st = supertype(a, b)
        if st is None:
            msg = (
                f"`{where!r}`: {a} and {b} have no common type short of int128, which colbridge "
                "does not support; cast one side first, e.g. `.cast('int64')` or `.cast('float64')`"
            )
            raise SchemaError(msg)
        return st

    # -- nodes ----------------------------------------------------------------
    def _check(self, node: Node) -> Node:
        # A subtree used in several places (``e = e + e``) is typed once: as a tree it
        # may be exponentially larger than its distinct nodes. Typing a number depends on
        # the node and the two modes below, nothing else of where it stands.
        key = (node, self._keep_dynamic, self.allow_opaque)
        typed = self._typed_memo.get(key)
        if typed is not None:
            return typed
        try:
            typed = self._check_node(node)
        except ColbridgeError as exc:
            # the innermost node being typed is the part that fails: kept for the report
            # of a plan's problems (`colbridge.runtime.problems`)
            if failed_node(exc) is None:
                exc.__dict__["_failed_node"] = node
            raise
        if typed not in self.logical:
            # strings, dates and durations are typed at every use, as before: their
            # dictionaries are per use (`s.shift(1) == s` in a stream compares the codes
            # of two dictionaries, and a shared typed `s` gave wrong answers there)
            self._typed_memo[key] = typed
        return typed

    def _check_node(self, node: Node) -> Node:
        if isinstance(node, (Check, Gather)) and node in self.types:
            return node  # made typed, inside a tree typed after them (`_replace_strict`)
        if isinstance(node, Alias):
            return self._check(node.arg)
        if isinstance(node, Column):
            return self._column(node)
        if isinstance(node, Literal):
            if node.dtype is None:
                return node
            return self._typed_literal(node.value, node.dtype)
        if isinstance(node, Binary):
            return self._binary(node)
        if isinstance(node, Unary):
            return self._unary(node)
        if isinstance(node, Cast):
            return self._cast_node(node)
        if isinstance(node, When):
            return self._when(node)
        if isinstance(node, Coalesce):
            return self._coalesce(node)
        if isinstance(node, FillNan):
            return self._fill_nan(node)
        if isinstance(node, Clip):
            return self._clip(node)
        if isinstance(node, Round):
            return self._round(node)
        if isinstance(node, Function):
            return self._function(node)
        if isinstance(node, Agg):
            return self._agg(node)
        if isinstance(node, GroupAgg):
            return self._group_agg(node)
        if isinstance(node, Scan):
            return self._ordered.scan(node)
        if isinstance(node, Over):
            return self._check(push_window(node.arg, node.key_set))
        if isinstance(node, Filtered):
            method = node.shown or "filter(...)"
            msg = (
                f"`{node!r}`: `{method}` inside an expression would change the number of "
                f"rows; use it as an output of `select` (outputs of one filter together), "
                f"as the input of a reduction (`x.{method}.sum()`)"
            )
            if not node.shown:
                msg += ", or filter the frame with `.filter(...)`"
            elif method.split("(")[0] in ("head", "tail", "slice", "gather_every", "unique"):
                msg += f", or take the frame's rows with `.{method}` on the lazy frame"
            raise SchemaError(msg)
        if isinstance(node, Constant):
            return self._lt.constant(node)
        if isinstance(node, EveryRow):  # `int_range`'s rows: a constant in every row
            arg = self._typed(node.arg)
            return self._record(EveryRow(arg), self.types[arg])
        if isinstance(node, Call):
            return self._call(node)
        msg = f"unsupported expression node {type(node).__name__}: {node!r}"
        raise UnsupportedOperationError(msg)

    def _call(self, node: Call) -> Node:
        """A compiled user function: numbers and booleans in, its result type out."""
        from colbridge.expr.udf import function_args_error

        args: list[Node] = []
        for k, arg in enumerate(node.args):
            if isinstance(arg, Column):
                info = self.schema.get(arg.name)
                if info is not None and info.dtype is None and not _is_null_type(info.arrow_type):
                    raise function_args_error(node.func, k, arg, f"of type {info.arrow_type}")
            typed = self._check(arg)
            if typed in self.logical:
                raise function_args_error(node.func, k, arg, f"of type {self.logical[typed]}")
            if is_null_literal(typed):
                msg = (
                    f"compiled user function `{node.func.name}`: argument {k + 1} `{arg!r}` is "
                    "a bare null without a type; give it one, e.g. "
                    "`lit(None, dtype='float64')`"
                )
                raise SchemaError(msg)
            if self._is_dynamic(typed):
                typed = self._materialize(typed)
            if self.types[typed] is DType.FLOAT16:
                raise function_args_error(node.func, k, arg, "float16")
            args.append(typed)
        dtypes = tuple(self.types[a] for a in args)
        return self._record(Call(node.func, tuple(args)), node.func.result_type(dtypes))

    def _column(self, node: Column) -> Node:
        info = self.schema.get(node.name)
        if info is None and node.constant is not None:
            # `e`, `pi`, `nan`, `inf` in a string expression: no column has the name
            return Literal(node.constant)
        if info is None:
            raise ColumnNotFoundError.from_missing(node.name, self.available)
        if node.constant is not None:
            node = Column(node.name)
        if info.dtype is None and _is_null_type(info.arrow_type):
            # a column that is null in every row: its type adapts like `lit(None)`'s
            return Literal(None)
        if info.dtype is None:
            typed = self._lt.column(node, info)
            if typed is not None:
                return typed
        if info.dtype is None or info.dtype is DType.FLOAT16:
            if info.dtype is DType.FLOAT16:
                where = f"column `{node.name}`"
                raise _float16_error(where)
            msg = (
                f"column `{node.name}` has type {info.arrow_type}, which expressions cannot "
                "compute on; colbridge expressions take numeric, boolean, temporal, string and "
                "categorical columns (cast it in the source frame, or leave it out of the "
                "expression)"
            )
            raise UnsupportedTypeError(msg)
        return self._record(node, info.dtype)

    def _binary(self, node: Binary) -> Node:
        left, right = self._check(node.left), self._check(node.right)
        if node.op == "pow" and (is_null_literal(left) or is_null_literal(right)):
            side = "exponent" if is_null_literal(right) else "base"
            msg = (
                f"`{node!r}`: `**` is not defined for a null {side} (a bare `lit(None)` or a "
                f"null-typed column has no type); give it one, e.g. `lit(None, dtype='float64')`"
            )
            raise SchemaError(msg)
        if is_null_literal(left) and is_null_literal(right):
            # two nulls without a type: polars' Null type for `+ - * %`, a Float64 null for
            # `/`, a Boolean null for comparisons (the other operators it refuses)
            if node.op in ("add", "sub", "mul", "mod"):
                return left
            if node.op == "truediv":
                return self._typed_literal(None, DType.FLOAT64)
            if node.op in COMPARISONS:
                return self._typed_literal(None, DType.BOOL)
        if node.op in ("floordiv", "truncdiv") and any(
            self._dynamic_kind(n) == "float" and not self._is_dynamic(o) and self.types[o].is_bool
            for n, o in ((left, right), (right, left))
        ):
            msg = (
                f"`{node!r}`: `//` is not defined for a boolean and a Python float (as in "
                "polars); cast the boolean first, e.g. `.cast('float64')`"
            )
            raise SchemaError(msg)
        if self._keep_dynamic and node.op in _ARITHMETIC:
            # a Python float next to a boolean stays a Python float (polars:
            # `x + 1e-30 * (x == 0)` on float32 is Float32)
            for number, other in ((left, right), (right, left)):
                if (
                    self._dynamic_kind(number) == "float"
                    and not self._is_dynamic(other)
                    and self.types[other].is_bool
                ):
                    rep = self._representative(number)
                    return self._dynamic_node(Binary(node.op, left, right), "float", rep)
        if left in self.logical or right in self.logical:
            return self._lt.binary(node, left, right)
        if node.op in LOGICAL:
            self._check_logic_operands(node, left, right)
        if self._keep_dynamic and node.op in _DYNAMIC_BINARY:
            dynamic = self._dynamic_binary(node.op, left, right)
            if dynamic is None and node.op == "pow":
                dynamic = self._dynamic_pow(left, right)
            if dynamic is not None:
                return dynamic
        if node.op == "pow":
            # a Python number in a power takes its own type, not the other side's: the
            # base's type decides unless the exponent is a float (2 ** int8 is Int32)
            if self._is_dynamic(left):
                left = self._materialize(left)
            if self._is_dynamic(right):
                right = self._materialize(right)
        if node.op == "arctan2" and self._is_dynamic(left):
            left = self._materialize(left)  # y decides the type: a Python number alone
        number_side = self._is_dynamic(left) != self._is_dynamic(right)
        left, right = self._resolve_pair(left, right, node)
        lt, rt = self.types[left], self.types[right]
        op = node.op
        if op in LOGICAL:
            if lt.is_float or rt.is_float or lt.is_bool != rt.is_bool:
                msg = (
                    f"`{node!r}`: `{op}` needs booleans (logic) or integers (bitwise), "
                    f"got {lt} and {rt}; compare first, e.g. `(x > 0) & (y > 0)`"
                )
                raise SchemaError(msg)
            if lt.is_bool and rt.is_bool:
                if isinstance(left, Literal) and isinstance(right, Literal):
                    # Kleene logic of two constants, folded as polars folds them
                    return self._typed_literal(_kleene(op, left.value, right.value),
                                               DType.BOOL)  # fmt: skip
                st = DType.BOOL
            elif number_side:
                # uint64 next to a negative Python integer: int64 (null above its range), as
                # for `+ - * // %` (polars: `u64 & -3` is Int64)
                st, _ = self._merge_number_type(lt, rt, node)
            else:
                st = self._super(lt, rt, node)
            if st.is_bool:
                return self._record(Binary(op, left, right), DType.BOOL)
            left, right = self._cast(left, st), self._cast(right, st)
            return self._record(Binary(op, left, right), st)
        if op in COMPARISONS:
            if supertype(lt, rt) is None:
                # int vs uint64: compared exactly without a common type (as polars does);
                # the signed side is widened to int64 and the kernel handles the sign.
                if lt.is_signed:
                    left = self._cast(left, DType.INT64)
                else:
                    right = self._cast(right, DType.INT64)
                return self._record(Binary(op, left, right), DType.BOOL)
            st = self._super(lt, rt, node)
            left, right = self._cast(left, st), self._cast(right, st)
            return self._record(Binary(op, left, right), DType.BOOL)
        if op == "arctan2":
            # polars: y's type when y is a float (x converted to it), else float64
            angle = lt if lt.is_float else DType.FLOAT64
            left, right = self._cast(left, angle), self._cast(right, angle)
            return self._record(Binary(op, left, right), angle)
        if op == "truediv":
            if number_side and {lt, rt} == {DType.UINT64, DType.INT64}:
                # a negative Python number next to uint64: polars converts the uint64 side
                # to int64 first (null above its range), as for `+ - * // %`
                left, right = self._cast(left, DType.INT64), self._cast(right, DType.INT64)
                lt = rt = DType.INT64
            res = truediv_result(lt, rt)
            if res is None:
                res = self._super(lt, rt, node)
            left, right = self._cast(left, res), self._cast(right, res)
            if res.is_float and is_scalar(right) and not is_scalar(left):
                # polars divides a column by one value (a literal, a reduction) as a
                # multiplication by its reciprocal: the same bits, not those of `x / c`
                one = self._typed_literal(1, res)
                reciprocal = self._record(Binary("truediv", one, right), res)
                return self._record(Binary("mul", left, reciprocal), res)
            return self._record(Binary(op, left, right), res)
        if op == "pow":
            res = pow_result(lt, rt)
            if res is None:
                msg = f"`{node!r}`: `**` is not defined for {lt} ** {rt}; cast booleans first"
                raise SchemaError(msg)
            if res.is_integer and isinstance(right, Literal) and isinstance(right.value, int) \
                    and right.value < 0:  # fmt: skip
                # polars refuses it while planning, whatever the rows (even none)
                msg = (
                    f"`{node!r}`: an integer raised to a negative integer power; cast the "
                    "base or the exponent to float first, e.g. `x.cast('float64') ** -1`"
                )
                raise InvalidOperationError(msg)
            left = self._cast(left, res)
            if res.is_float:
                right = self._cast(right, res)
                if isinstance(right, Literal) and right.value == 0.5:
                    # polars rewrites x ** 0.5 as sqrt(x) (so (-inf) ** 0.5 is NaN)
                    return self._record(Unary("sqrt", left), res)
                if isinstance(right, Literal) and isinstance(right.value, (int, float)) \
                        and float(right.value).is_integer() and 1 <= right.value < 10:  # fmt: skip
                    # polars multiplies by the base k - 1 times, in order, for a scalar
                    # whole exponent k in [2, 10) (x ** 1 is x): those roundings, not pow's
                    product = left
                    for _ in range(int(right.value) - 1):
                        product = self._record(Binary("mul", product, left), res)
                    return product
            return self._record(Binary(op, left, right), res)
        # + - * // %
        if lt.is_bool and rt.is_bool:
            if op != "add":
                msg = f"`{node!r}`: `{op}` is not defined for two booleans; cast one first"
                raise SchemaError(msg)
            st = DType.UINT32
        elif number_side:
            # uint64 next to a negative Python number computes in int64 (polars), its
            # values converted without strictness in arithmetic (unlike in when/coalesce)
            st, _ = self._merge_number_type(lt, rt, node)
        else:
            st = self._super(lt, rt, node)
        left, right = self._cast(left, st), self._cast(right, st)
        if op in ("floordiv", "truncdiv", "mod") and st.is_float and is_scalar(right) \
                and not is_scalar(left):  # fmt: skip
            # as `/`: polars takes x // c as floor(x * (1 / c)) and x % c as
            # x - c * floor(x * (1 / c)) for one value c (0.3 // 0.1 is 3.0 there, not 2.0);
            # truncdiv the same, truncated
            one = self._typed_literal(1, st)
            reciprocal = self._record(Binary("truediv", one, right), st)
            scaled = self._record(Binary("mul", left, reciprocal), st)
            if op == "truncdiv":  # toward zero: ceil below 0 (-0.0 kept), floor otherwise
                below = self._record(Binary("lt", scaled, self._typed_literal(0, st)), DType.BOOL)
                return self._record(When(below, self._record(Unary("ceil", scaled), st),
                                         self._record(Unary("floor", scaled), st)), st)  # fmt: skip
            quotient = self._record(Unary("floor", scaled), st)
            if op == "floordiv":
                return quotient
            return self._record(Binary("sub", left, self._record(Binary("mul", right, quotient),
                                                                  st)), st)  # fmt: skip
        return self._record(Binary(op, left, right), st)

    def _check_logic_operands(self, node: Binary, left: Node, right: Node) -> None:
        """Refuse ``&``, ``|``, ``^`` where polars does before the operands are typed.

        A Python boolean (``True``, ``lit(True)``) next to an integer, or a bare null (a
        ``lit(None)`` or a null-typed column) next to a Python integer: typing would make
        the boolean an integer and the null an Int32 null, where polars raises ("& on Int8
        and Boolean is not supported", "`bitand` operation not supported for dtype `null`").
        """
        for literal, other in ((left, right), (right, left)):
            if not (isinstance(literal, Literal) and literal.dtype is None):
                continue
            if isinstance(literal.value, bool) and not self._is_dynamic(other):
                t = self.types[other]
                if not t.is_bool:
                    msg = (
                        f"`{node!r}`: `{node.op}` needs booleans (logic) or integers (bitwise), "
                        f"got {t} and a boolean literal (as in polars); compare first, e.g. "
                        "`(x > 0) & True`, or give an integer mask, e.g. `x & 1`"
                    )
                    raise SchemaError(msg)
            if literal.value is None and self._dynamic_kind(other) == "int":
                msg = (
                    f"`{node!r}`: `{node.op}` of a bare null (a `lit(None)` or a null-typed "
                    "column) and a Python integer has no type (polars refuses it); give the "
                    "null a type, e.g. `lit(None, dtype='int32')` or `col('n').cast('int32')`"
                )
                raise SchemaError(msg)

    def _dynamic_binary(self, op: str, left: Node, right: Node) -> Node | None:
        """``left <op> right`` kept dynamic when both sides are dynamic numbers (polars)."""
        kinds = (self._dynamic_kind(left), self._dynamic_kind(right))
        if None in kinds or (op in LOGICAL and "float" in kinds):
            return None
        if isinstance(left, Literal) and isinstance(right, Literal) and kinds == ("int", "int"):
            assert isinstance(left.value, int)
            assert isinstance(right.value, int)
            folded = _fold_int(op, left.value, right.value)
            if folded is not None:
                return Literal(folded)  # polars folds numbers; the result decides the type
        if "float" in kinds:
            side = left if kinds[0] == "float" else right
            return self._dynamic_node(Binary(op, left, right), "float", self._representative(side))
        # polars 2.2 types it by every integer in it; a power by its base's alone
        rep = self._representative(left) if op == "pow" else self._joined(left, right)
        return self._dynamic_node(Binary(op, left, right), "int", rep)

    def _dynamic_pow(self, base: Node, exponent: Node) -> Node | None:
        """``base ** exponent`` with one side a Python number: dynamic when that side decides.

        polars types a power by its base, or by its exponent when that is a float
        (and the base is not); when the deciding side is a dynamic number the power
        stays dynamic: ``int8 ** 2.5 + float32`` is Float32, ``2 ** int8`` alone is Int32.
        """
        kb, ke = self._dynamic_kind(base), self._dynamic_kind(exponent)
        if (kb is None) == (ke is None):
            return None
        def typed_float(side: Node) -> bool:  # (a `lit(True)` is not typed yet)
            t = self.types.get(side)
            return t is not None and t.is_float

        base_float = kb == "float" or (kb is None and typed_float(base))
        exponent_float = ke == "float" or (ke is None and typed_float(exponent))
        side, kind = (exponent, ke) if exponent_float and not base_float else (base, kb)
        if kind is None:
            return None  # the typed side decides: an ordinary typed power
        return self._dynamic_node(Binary("pow", base, exponent), kind, self._representative(side))

    def _unary(self, node: Unary) -> Node:
        arg = self._check(node.arg)
        kind = self._dynamic_kind(arg)
        if self._keep_dynamic and kind is not None and node.op in _DYNAMIC_UNARY:
            rep = self._representative(arg)
            if kind == "int" and isinstance(arg, Literal) and node.op in ("round", "floor",
                                                                          "ceil"):  # fmt: skip
                return arg  # round/floor/ceil of a whole number is the number
            # polars types `-lit(3)`, `lit(-3).abs()` and `lit(300).sign()` by the number
            # they apply to: `uint8 * -lit(3)` is UInt8 (null: -3 does not fit),
            # `uint8 * lit(-3).abs()` Int16
            return self._dynamic_node(Unary(node.op, arg), kind, rep)
        if _is_dynamic_literal(arg) and node.op in ("neg", "abs"):
            lit = arg
            assert isinstance(lit, Literal)
            if isinstance(lit.value, (int, float)) and not isinstance(lit.value, bool):
                # materialised on its own: the number it gives
                return Literal(-lit.value if node.op == "neg" else abs(lit.value))
        if (
            self._keep_dynamic
            and node.op in _LOG_DYNAMIC_BASE
            and not is_null_literal(arg)
            and (self._is_dynamic(arg) or not self.types[arg].is_float)
        ):
            return self._dynamic_node(Unary(node.op, arg), "float", math.e)
        if is_null_literal(arg) and node.op in ("is_null", "is_not_null"):
            # a null literal, or a null-typed column: null in every row
            return self._typed_literal(node.op == "is_null", DType.BOOL)
        if is_null_literal(arg) and node.op in _NULL_RESULTS:
            return self._typed_literal(None, _NULL_RESULTS[node.op])  # polars' result type
        if self._is_dynamic(arg):
            arg = self._materialize(arg)
        t = self.types[arg]
        op = node.op
        # tests of a constant are constants (polars folds them: `when(lit(-4).is_nan())`
        # keeps one branch, `_when`)
        if op in ("is_null", "is_not_null"):
            if isinstance(arg, Literal):
                return self._typed_literal((arg.value is None) == (op == "is_null"), DType.BOOL)
            return self._record(Unary(op, arg), DType.BOOL)
        if arg in self.logical:
            return self._lt.unary(node, arg)
        if op in BIT_COUNT_FUNCS:
            if t.is_float:
                raise _bad_type(node, t, _BITS_WANTED)
            return self._record(Unary(op, arg), DType.UINT32)
        if op in _CONSTANT_TESTS:
            if t.is_bool:
                raise _bad_type(node, t, "a numeric column")
            if isinstance(arg, Literal):
                value = None if arg.value is None else _CONSTANT_TESTS[op](float(arg.value))
                return self._typed_literal(value, DType.BOOL)
            return self._record(Unary(op, arg), DType.BOOL)
        if op == "not":
            if t.is_float:
                raise _bad_type(node, t, "a boolean or integer column")
            if t.is_bool and isinstance(arg, Literal):
                return self._typed_literal(None if arg.value is None else not arg.value, t)
            return self._record(Unary(op, arg), t)
        if t.is_bool and op not in FLOAT_FUNCS:
            raise _bad_type(node, t, "a numeric column (cast booleans first)")
        if op == "neg" and t.is_unsigned:
            msg = f"`{node!r}`: cannot negate unsigned {t}; cast to a signed type first"
            raise SchemaError(msg)
        if op in FLOAT_FUNCS:
            res = float_result(t)
            if op in ("erf", "erfc") and res is DType.FLOAT32:
                # polars computes these of float64 and rounds the result to float32
                wide = self._record(Unary(op, self._cast(arg, DType.FLOAT64)), DType.FLOAT64)
                return self._cast(wide, DType.FLOAT32)
            return self._record(Unary(op, self._cast(arg, res)), res)
        if op in ("floor", "ceil", "round") and t.is_integer:
            return arg  # integers are already whole
        return self._record(Unary(op, arg), t)

    def _cast_node(self, node: Cast) -> Node:
        if node.dtype is DType.FLOAT16:
            raise _float16_error(repr(node))
        arg = self._check(node.arg)
        if self._is_dynamic(arg):
            if isinstance(arg, Literal) and arg.value is None:
                return self._typed_literal(None, node.dtype)
            arg = self._materialize(arg)
        if arg in self.logical:
            return self._lt.cast(arg, node.dtype, node.strict, node)
        src = self.types[arg]
        if src == node.dtype:
            return arg
        if isinstance(arg, Literal) and arg.value is not None and cast_can_fail(src, node.dtype):
            # A literal is converted here, once, with the same rules as the kernels.
            converted = _convert_checked(arg.value, node.dtype)
            if converted is None:
                if node.strict:
                    msg = (
                        f"strict cast to {node.dtype} failed: literal {arg.value!r} does not fit; "
                        "use `.cast(..., strict=False)` to get null instead"
                    )
                    raise InvalidOperationError(msg)
                return self._typed_literal(None, node.dtype)
            return self._typed_literal(converted, node.dtype)
        return self._record(Cast(arg, node.dtype, node.strict), node.dtype)

    def _when(self, node: When) -> Node:
        cond = self._check(node.condition)
        if self._is_dynamic(cond):
            cond = self._materialize(cond)
        if not self.types[cond].is_bool:
            msg = (
                f"`when` condition must be boolean, got {self.types[cond]} in `{node.condition!r}`;"
                " compare it, e.g. `col('a') > 0`"
            )
            raise SchemaError(msg)
        then, other = self._check(node.then), self._check(node.otherwise)
        if then in self.logical or other in self.logical:
            return self._lt.when(node, cond, then, other)
        if is_null_literal(then) and is_null_literal(other):
            return then  # null either way, without a type: polars' Null type
        dynamic = self._dynamic_when(node, then, other)
        if dynamic is not None:
            return dynamic
        if is_null_literal(other):
            if self._is_dynamic(then):
                then = self._materialize(then)
            other = self._typed_literal(None, self.types[then])
        elif is_null_literal(then):
            if self._is_dynamic(other):
                other = self._materialize(other)
            then = self._typed_literal(None, self.types[other])
        else:
            dynamic_then, dynamic_other = self._is_dynamic(then), self._is_dynamic(other)
            then, other = self._resolve_pair(then, other, node)
            if dynamic_then != dynamic_other:
                fixed, number = (other, then) if dynamic_then else (then, other)
                st, strict = self._merge_number_type(self.types[fixed], self.types[number], node)
                then = self._cast_branch(then, st, strict)
                other = self._cast_branch(other, st, strict)
                return self._record(When(cond, then, other), st)
        st = self._super(self.types[then], self.types[other], node)
        then, other = self._cast(then, st), self._cast(other, st)
        if isinstance(cond, Literal):
            # a constant condition (`lit(-4).is_nan()`, folded while typing): polars keeps
            # only the branch it picks, the other is never computed (nor its errors counted)
            return then if cond.value is True else other
        return self._record(When(cond, then, other), st)

    def _merge_number_type(self, st: DType, number: DType, where: Node) -> tuple[DType, bool]:
        """The common type of ``st`` and the type a Python number took next to it.

        A negative number next to uint64 takes int64, which has no supertype with
        uint64 short of int128; polars then converts the uint64 side to int64 (an
        error where a value does not fit). The flag says that conversion is needed.
        """
        if {st, number} == {DType.UINT64, DType.INT64}:
            return DType.INT64, True
        return self._super(st, number, where), False

    def _cast_branch(self, node: Node, dtype: DType, strict_uint64: bool) -> Node:
        if strict_uint64 and self.types[node] is DType.UINT64:
            return self._record(Cast(node, dtype, strict=True), dtype)
        return self._cast(node, dtype)

    def _dynamic_when(self, node: When, then: Node, other: Node) -> Node | None:
        """``when`` whose branches are dynamic numbers (or null) stays dynamic (polars)."""
        if not self._keep_dynamic:
            return None
        kinds = [self._dynamic_kind(b) for b in (then, other) if not is_null_literal(b)]
        if not kinds or None in kinds:
            return None
        # the condition is re-typed from its source when the expression is materialised
        out = When(node.condition, then, other)
        if "float" in kinds:
            side = then if self._dynamic_kind(then) == "float" else other
            return self._dynamic_node(out, "float", self._representative(side))
        return self._dynamic_node(out, "int", self._joined(then, other))

    def _coalesce(self, node: Coalesce) -> Node:
        args = [self._check(a) for a in node.args]
        if any(a in self.logical for a in args):
            if len(args) == 1:
                return args[0]
            return self._lt.coalesce(node, args)
        typed = [self.types[a] for a in args if not self._is_dynamic(a)]
        if not typed:
            # all dynamic: the first is materialised and the others follow it (polars)
            first = next((a for a in args if not is_null_literal(a)), None)
            if first is None:
                return args[0]  # only nulls without a type: polars' Null type
            typed = [self.types[self._materialize(first)]]
        st = typed[0]
        for t in typed[1:]:
            st = self._super(st, t, node)
        resolved = []
        strict = False
        for a in args:
            if self._is_dynamic(a):
                a = self._type_dynamic_against(a, st, node)
                st, needs_strict = self._merge_number_type(st, self.types[a], node)
                strict = strict or needs_strict
            resolved.append(a)
        out = tuple(self._cast_branch(a, st, strict) for a in resolved)
        if len(out) == 1:
            return out[0]
        return self._record(Coalesce(out), st)

    def _fill_nan(self, node: FillNan) -> Node:
        arg = self._check(node.arg)
        self._numeric_only(node, arg)
        value = self._check(node.value)
        logical = self.logical.get(value)
        if logical is not None and logical.is_string:
            # polars makes the column strings (the numbers' text, then the fill); a
            # string's code would otherwise pass for a number here
            msg = (
                f"`{node!r}`: a {logical.kind} fill of a number column is not supported; "
                "write it with the column cast to strings, e.g. `when(x.is_nan())"
                ".then(lit('n/a')).otherwise(x.cast(pl.String))`"
            )
            raise SchemaError(msg)
        kinds = (self._dynamic_kind(arg), self._dynamic_kind(value))
        if self._keep_dynamic and None not in kinds:
            if "float" in kinds:
                side = value if kinds == ("int", "float") else arg
                return self._dynamic_node(FillNan(arg, value), "float", self._representative(side))
            return self._dynamic_node(FillNan(arg, value), "int", self._joined(arg, value))
        if self._dynamic_kind(arg) is not None and not self._is_dynamic(value):
            arg = self._type_dynamic_against(arg, self.types[value], node)
        elif self._is_dynamic(arg):
            arg = self._materialize(arg)
        t = self.types[arg]
        if t.is_bool:
            # polars: "`is_not_nan` operation not supported for dtype `bool`", whatever the value
            msg = (
                f"`{node!r}` is not defined for bool (a boolean holds no NaN; polars refuses "
                "it); leave the `fill_nan` out, or use `fill_null` for its nulls"
            )
            raise SchemaError(msg)
        if self._is_dynamic(value):
            value = self._type_dynamic_against(value, t, node)
        st = self._super(t, self.types[value], node)
        if not t.is_float:
            # integers hold no NaN; the result still takes the common type
            return self._cast(arg, st)
        return self._record(FillNan(self._cast(arg, st), self._cast(value, st)), st)

    def _round(self, node: Round) -> Node:
        """``round(decimals, mode)`` lowered to elementwise nodes, computed as polars does.

        polars scales by ``m = 10**decimals`` (``f64::powi``), rounds and scales back,
        in float64 (a float32 column goes through float64 and back); where ``x * m``
        is not finite it returns ``x`` unchanged.
        """
        arg = self._check(node.arg)
        self._numeric_only(node, arg)
        kind = self._dynamic_kind(arg)
        if self._keep_dynamic and kind is not None:
            return self._dynamic_node(Round(arg, node.decimals, node.mode), kind,
                                      self._representative(arg))  # fmt: skip
        if self._is_dynamic(arg):
            arg = self._materialize(arg)
        t = self.types[arg]
        if t.is_bool:
            raise _bad_type(node, t, "a numeric column")
        if t.is_integer:
            return arg  # integers are already whole
        f64 = DType.FLOAT64
        x = self._cast(arg, f64)
        scale = self._typed_literal(_powi10(node.decimals), f64)
        y = self._record(Binary("mul", x, scale), f64) if node.decimals else x
        if node.mode == "half_to_even":
            whole = self._record(Unary("round", y), f64)
        elif node.mode == "to_zero":  # truncate
            zero = self._typed_literal(0.0, f64)
            negative = self._record(Binary("lt", y, zero), DType.BOOL)
            whole = self._record(When(negative, self._record(Unary("ceil", y), f64),
                                      self._record(Unary("floor", y), f64)), f64)  # fmt: skip
        else:
            whole = self._half_away(y)
        if node.decimals:
            back = self._record(Binary("truediv", whole, scale), f64)
            finite = self._record(Unary("is_finite", y), DType.BOOL)
            whole = self._record(When(finite, back, x), f64)
        return self._cast(whole, t)

    def _half_away(self, y: Node) -> Node:
        """Float64 ``y`` rounded half away from zero (Rust's ``f64::round``), exactly.

        ``y - trunc(y)`` is exact in floating point, so the tie test is too.
        """
        f64 = DType.FLOAT64
        zero, half = self._typed_literal(0.0, f64), self._typed_literal(0.5, f64)
        negative = self._record(Binary("lt", y, zero), DType.BOOL)
        trunc = self._record(When(negative, self._record(Unary("ceil", y), f64),
                                  self._record(Unary("floor", y), f64)), f64)  # fmt: skip
        rest = self._record(Unary("abs", self._record(Binary("sub", y, trunc), f64)), f64)
        up = self._record(Binary("ge", rest, half), DType.BOOL)
        away = self._record(Binary("add", trunc, self._record(Unary("sign", y), f64)), f64)
        return self._record(When(up, away, trunc), f64)

    def _round_sig_figs(self, node: Function) -> Node:
        """``round_sig_figs(digits)`` as polars computes it, in float64, bit for bit.

        polars takes ``e = digits - 1 - floor(log10(|x|))`` and splits ``10**e`` into
        ``5**e`` (``f64::powi``) and ``2**e`` (``scalbn``): ``scalbn(round(scalbn(x, e)
        * 5**e) / 5**e, -e)``, rounded half away from zero, and ``x`` itself where that
        is not finite (or ``x`` is 0). ``floor(log10(|x|))`` of a finite non-zero
        float64 lies in [-324, 308]: the three factors are tables over it
        (`sig_figs_table`), and a power of two multiplies exactly as ``scalbn`` scales
        (digits up to 700 keep both powers of two in range; from 700 on no value
        changes, as in polars). Integers are rounded exactly, in integers
        (`_int_sig_figs`).
        """
        (digits,) = node.options
        arg = self._typed(node.args[0])
        if arg in self.logical or self.types[arg].is_bool:
            raise _bad_type(node, self.logical.get(arg) or self.types[arg], "a numeric column")
        t = self.types[arg]
        if t is DType.FLOAT16:
            raise _float16_error(_quote(node))
        if not t.is_float:
            return self._int_sig_figs(arg, t, digits)
        x = self._cast(arg, DType.FLOAT64)
        out = x if digits >= SIG_FIGS_UNCHANGED else self._sig_figs_of(x, digits)
        return self._cast(out, t)

    def _int_sig_figs(self, x: Node, t: DType, digits: int) -> Node:
        """Integer ``x`` to ``digits`` figures exactly, half away from zero, as polars 2.2.

        ``x`` is divided by ``f = 10**(n - digits)`` (``n`` its count of digits, ``f =
        1`` where ``n <= digits``), the quotient rounded half away from zero and
        multiplied back; a result past the type's range is null (``Int8`` 127 to two
        figures, 130). Signed values are worked as their non-positive magnitude
        (``-|x|``, which holds every Int64 value), unsigned 64-bit ones as they are.
        """
        bool_ = DType.BOOL
        wide = DType.UINT64 if t is DType.UINT64 else DType.INT64
        v = self._cast(x, wide)

        def lit(value: int, dtype: DType = wide) -> Node:
            return self._typed_literal(value, dtype)

        def op(name: str, a: Node, b: Node, dtype: DType = wide) -> Node:
            return self._record(Binary(name, a, b), dtype)

        signed = wide is DType.INT64
        negative = op("lt", v, lit(0), bool_)  # (never true unsigned)
        # the magnitude: -|x| (<= 0) for signed values, x for unsigned 64-bit ones
        m = self._record(When(negative, v, self._record(Unary("neg", v), wide)), wide) \
            if signed else v  # fmt: skip
        # f: 10**(n - digits) where x has n > digits digits, from the most digits down
        most = len(str(int_range(wide)[1]))
        f = lit(1)
        for n in range(digits + 1, most + 1):
            bound = 10 ** (n - 1)  # x has n digits or more
            reached = op("le", m, lit(-bound), bool_) if signed else op("ge", m, lit(bound), bool_)
            f = self._record(When(reached, lit(10 ** (n - digits)), f), wide)
        q = op("truncdiv", m, f)
        rest = op("sub", m, op("mul", q, f))  # in (-f, 0] (signed), [0, f) (unsigned)
        if signed:
            up = op("le", op("add", rest, rest), op("sub", lit(0), f), bool_)
            q = self._record(When(up, op("sub", q, lit(1)), q), wide)
            # q * f >= Int64's least value: q >= that value divided by f toward zero
            fits = op("ge", q, op("truncdiv", lit(int_range(wide)[0]), f), bool_)
            magnitude = op("mul", q, f)
            out = self._record(When(negative, magnitude, self._record(
                Unary("neg", magnitude), wide)), wide)  # fmt: skip
            # -(least value) does not fit: a non-negative x must stay within the top
            fits = op("and", fits, op("or", negative, op("gt", magnitude, lit(
                int_range(wide)[0]), bool_), bool_), bool_)  # fmt: skip
        else:
            up = op("ge", rest, op("sub", f, rest), bool_)
            q = self._record(When(up, op("add", q, lit(1)), q), wide)
            fits = op("le", q, op("truncdiv", lit(int_range(wide)[1]), f), bool_)
            out = op("mul", q, f)
        lo, hi = int_range(t)
        if t is not wide:
            fits = op("and", fits, op("and", op("ge", out, lit(lo), bool_),
                                      op("le", out, lit(hi), bool_), bool_), bool_)  # fmt: skip
        # (the product is computed where it overflows too, and is not read there)
        return self._record(When(fits, self._cast(out, t), self._typed_literal(None, t)), t)

    def _sig_figs_of(self, x: Node, digits: int) -> Node:
        """Float64 ``x`` to ``digits`` figures (`_round_sig_figs`), ``x`` where not finite."""
        f64, bool_ = DType.FLOAT64, DType.BOOL
        size = self._record(Unary("abs", x), f64)
        zero = self._typed_literal(0.0, f64)
        finite = self._record(Binary("and", self._record(Unary("is_finite", x), bool_),
                                     self._record(Binary("gt", size, zero), bool_)), bool_)
        # 1.0 (index 324) where x is 0, infinite or NaN: x is the answer there
        size = self._record(When(finite, size, self._typed_literal(1.0, f64)), f64)
        magnitude = self._record(Unary("floor", self._record(Unary("log10", size), f64)), f64)
        index = self._cast(self._record(Binary("add", magnitude, self._typed_literal(
            float(SIG_FIGS_LOWEST), f64)), f64), DType.INT32)  # fmt: skip

        def factor(kind: str) -> Node:
            table = TableRef(("sig_figs", digits), (kind,), f64)
            return self._record(Gather(table, index), f64)

        pow5 = factor("pow5")
        scaled = self._record(Binary("mul", self._record(Binary("mul", x, factor("scale")),
                                                          f64), pow5), f64)  # fmt: skip
        whole = self._record(Binary("truediv", self._half_away(scaled), pow5), f64)
        back = self._record(Binary("mul", whole, factor("unscale")), f64)
        keep = self._record(Binary("and", finite, self._record(Unary("is_finite", back), bool_)),
                            bool_)  # fmt: skip
        return self._record(When(keep, back, x), f64)

    def _clip(self, node: Clip) -> Node:
        arg = self._check(node.arg)
        self._numeric_only(node, arg)
        kind = self._dynamic_kind(arg)
        if self._keep_dynamic and kind is not None:
            # the representative stays unclipped, as in polars: `lit(300).clip(0, 5) +
            # int8` and `when(c).then(300).otherwise(1).clip(0, 5) + int8` are Int16
            return self._dynamic_node(Clip(arg, node.lower, node.upper), kind,
                                      self._representative(arg))  # fmt: skip
        if self._is_dynamic(arg):  # alone: the number in its own type, then clipped
            arg = self._materialize(arg)
        t = self.types[arg]
        if not t.is_numeric:
            raise _bad_type(node, t, "a numeric column")

        def bound(value: bool | int | float | None) -> bool | int | float | None:
            if value is None:
                return None
            if t.is_float:
                return float(value)
            lo, hi = int_range(t)
            if isinstance(value, float) and (value != value or value in (math.inf, -math.inf)):
                msg = f"`{node!r}`: bound {value!r} cannot clip an integer column"
                raise SchemaError(msg)
            whole = int(value)  # polars truncates float bounds toward zero
            if not lo <= whole <= hi:
                msg = (
                    f"`{node!r}`: bound {value!r} does not fit in the column's type {t}; "
                    "use a bound inside its range"
                )
                raise SchemaError(msg)
            return whole

        return self._record(Clip(arg, bound(node.lower), bound(node.upper)), t)

    # -- functions lowered to elementwise nodes ------------------------------------------
    def _function(self, node: Function) -> Node:
        if "." in node.name or node.name in ("cast", "to_physical"):
            return self._lt.function(node)  # dt.*, str.*, casts to logical types
        if node.name == "concat_str":
            return self._lt.concat_str(node)
        if node.name == "replace":
            return self._replace(node)
        if node.name == "replace_strict":
            return self._replace_strict(node)
        if node.name == "is_in" and self._check(node.args[0]) in self.logical:
            return self._lt.is_in(node)  # strings, categories, dates, ...
        if node.name == "reinterpret":
            return self._reinterpret(node)
        if node.name == "log":
            return self._log(node)
        if node.name in ("degrees", "radians", "cot"):
            return self._trig(node)
        if node.name == "round_sig_figs":
            return self._round_sig_figs(node)
        if node.name == "int_range":  # the running count of the rows, less one
            (dtype,) = node.options
            count = self._cast(self._typed(node.args[0]), DType.INT64)
            first = self._record(Binary("sub", count, self._typed_literal(1, DType.INT64)),
                                 DType.INT64)  # fmt: skip
            if dtype == DType.INT64:
                return first
            return self._record(Cast(first, dtype, strict=True), dtype)  # as polars: strictly
        if node.name == "in_bounds":  # `get`'s position within the rows, or an error
            inside = self._check(node.args[0])
            return self._record(Check(inside, inside, node.options[0]), DType.BOOL)
        if node.name == "clip":
            return self._clip_expr(node)
        if node.name == "is_in":
            return self._is_in(node)
        if node.name == "bin_intervals":
            return self._bin_intervals(node)
        if node.name == "is_close":
            return self._is_close(node)
        if node.name == "may_be_nan":
            return self._may_be_nan(node)
        if node.name == "pair_float":
            return self._pair_float(node)
        if node.name == "entropy_values":
            return self._entropy_values(node)
        if node.name == "peak_values":
            return self._peak_values(node)
        if node.name in ("interpolate_by_values", "interpolate_by_key"):
            return self._interpolate_by_operand(node)
        if node.name == "pair_result":
            return self._pair_result(node)
        if node.name in ("all_horizontal", "any_horizontal"):
            # Kleene AND (OR) of the arguments, each cast to Boolean first as polars casts it
            # (non-zero numbers and NaN true): never a bitwise AND (OR) of integers
            op = "and" if node.name == "all_horizontal" else "or"
            args = [a if self._is_boolean(a) else Cast(a, DType.BOOL) for a in node.args]
            out = args[0]
            for arg in args[1:]:
                out = Binary(op, out, arg)
            return self._check(out)
        if node.name in ("max_horizontal", "min_horizontal", "sum_horizontal") and all(
                is_null_literal(self._check(a)) for a in node.args):  # fmt: skip
            return Literal(None)  # only nulls without a type: polars' Null type
        if node.name in ("max_horizontal", "min_horizontal"):
            return self._min_max_horizontal(node)
        if node.name == "sum_horizontal":
            return self._sum_horizontal(node, [self._check(a) for a in node.args])
        if node.name == "mean_horizontal":
            return self._mean_horizontal(node)
        if node.name == "cast_like":
            return self._cast_like(node)
        if node.name == "numbers_of":
            return self._numbers_of(node)
        if node.name == "duration_part":
            return self._duration_part(node)
        if node.name == "datetime_parts":
            return self._lt.datetime_parts(node)
        if node.name == "fill_zero_or_one":
            return self._fill_zero_or_one(node)
        if node.name == "scalar_fill":
            fill = self._check(node.args[0])
            if not is_scalar(fill) and not node.options:  # options: one value per group
                msg = (
                    f"`shift(fill_value={node.args[0]!r})`: the fill value must be one value "
                    "(a number, a string, a reduction such as `x.mean()`), not a column; "
                    "fill per row with `x.shift(n).fill_null(other)`"
                )
                raise SchemaError(msg)
            return fill
        msg = f"unsupported function `{node.name}` in `{node!r}`"
        raise UnsupportedOperationError(msg)

    def _duration_part(self, node: Function) -> Node:
        """A part of ``duration(...)``: integers as Int64 (strictly), floats as Float64.

        As polars coerces them; any other type is refused, as polars refuses it.
        """
        arg = self._check(node.args[0])
        if self._is_dynamic(arg):
            arg = self._materialize(arg)  # a Python int is Int64, a float Float64
        dtype = self.types.get(arg)
        if arg in self.logical or dtype is None or not (dtype.is_integer or dtype.is_float):
            got = self.logical.get(arg) or dtype or "null"
            msg = (f"`duration({node.options[0]}={node.args[0]!r})`: parts are integers or "
                   f"floats, got {got} (as polars refuses it); cast the part to a number")
            raise InvalidOperationError(msg)
        target = DType.INT64 if dtype.is_integer else DType.FLOAT64
        return self.cast_plain(arg, target, strict=True)

    def _is_close(self, node: Function) -> Node:
        """``x.is_close(y, abs_tol=, rel_tol=, nans_equal=)`` as polars computes it.

        Both sides as Float64 (polars converts every numeric type to it, Float32 too):
        finite values are close when ``|x - y| <= max(rel_tol * max(|x|, |y|),
        abs_tol)`` (a NaN tolerance, from ``inf * 0``, gives way to ``abs_tol``, as
        polars' total order takes x86's negative NaN), infinities of one sign are, and
        NaN are where both are and ``nans_equal``; null where either side is.
        """
        abs_tol, rel_tol, nans_equal = node.options
        for arg in node.args:
            typed = self._check(arg)
            dtype = None if self._is_dynamic(typed) else self.types[typed]
            if typed in self.logical or (dtype is not None
                                         and not (dtype.is_float or dtype.is_integer)):  # fmt: skip
                kind = self.logical.get(typed) or dtype
                msg = (
                    f"`{node!r}`: `is_close` compares numbers, and `{arg!r}` is {kind}; "
                    "compare other types with `==`, or cast to a number first"
                )
                raise InvalidOperationError(msg)
        x, y = (Cast(arg, DType.FLOAT64) for arg in node.args)
        size_x, size_y = Unary("abs", x), Unary("abs", y)
        larger = When(Binary("ge", size_x, size_y), size_x, size_y)
        scaled = Binary("mul", Literal(rel_tol, DType.FLOAT64), larger)
        least = Literal(abs_tol, DType.FLOAT64)
        tolerance = When(Binary("ge", scaled, least), scaled, least)
        finite = Binary("and", Unary("is_finite", x), Unary("is_finite", y))
        close = Binary("and", finite, Binary("le", Unary("abs", Binary("sub", x, y)), tolerance))
        infinite = Binary("and", Binary("and", Unary("is_infinite", x), Unary("is_infinite", y)),
                          Binary("eq", x, y))  # fmt: skip
        out = Binary("or", close, infinite)
        if nans_equal:
            out = Binary("or", out, Binary("and", Unary("is_nan", x), Unary("is_nan", y)))
        # each term reads both sides, but Kleene logic would answer some rows with a null
        # side (`false & null` is false): polars' result is null wherever a side is
        present = Binary("and", Unary("is_not_null", x), Unary("is_not_null", y))
        return self._check(When(present, out, Literal(None)))

    def _may_be_nan(self, node: Function) -> Node:
        """``is_nan`` of a float column; false on every row of any other (it holds no NaN).

        What ``nan_max``/``nan_min`` test (`colbridge.expr.api.Expr.nan_max`): polars
        gives a column of another type its ``max``/``min`` there, where ``is_nan``
        refuses it, and ``drop_nans`` keeps all its values. Null where the value is
        null for floats, as ``is_nan``.
        """
        (x,) = node.args
        arg = self._check(x)
        if arg not in self.logical and not self._is_dynamic(arg) and self.types[arg].is_float:
            return self._check(Unary("is_nan", x))
        # false on each row (Kleene: false and anything), of the column's length
        return self._check(Binary("and", Unary("is_null", x), Literal(False)))

    def _numbers_of(self, node: Function) -> Node:
        """An operand that must be a number or a boolean, as it is (a Python number stays one).

        ``options`` name the function it is an operand of (``x_log_y``), for the error.
        """
        (x,) = node.args
        arg = self._check(x)
        if self._is_dynamic(arg):
            return arg
        dtype = self.types[arg]
        if arg in self.logical or not (dtype.is_float or dtype.is_integer or dtype.is_bool):
            func = node.options[0]
            kind = self.logical.get(arg) or dtype
            msg = (f"`{func}` of `{x!r}`, which is {kind}: `{func}` takes numbers and "
                   "booleans; cast it to a number first")  # fmt: skip
            raise InvalidOperationError(msg)
        return arg

    def _entropy_values(self, node: Function) -> Node:
        """``entropy``'s values: floats as they are, integers as Float64; others refused."""
        (x,) = node.args
        typed = self._typed(x)
        dtype = self.types[typed]
        if typed in self.logical or not (dtype.is_float or dtype.is_integer):
            kind = self.logical.get(typed) or dtype
            msg = (f"`{x!r}.entropy()`: entropy takes numbers, and `{x!r}` is {kind}; cast "
                   "it to a number first")  # fmt: skip
            raise InvalidOperationError(msg)
        if dtype is DType.FLOAT16:
            raise _float16_error(_quote(node))
        return typed if dtype.is_float else self.cast_plain(typed, DType.FLOAT64, False)

    def _peak_values(self, node: Function) -> Node:
        """``peak_max``'s (``peak_min``'s) values: numbers, booleans, temporal values' integers.

        polars compares a date, a time, a datetime or a duration by its stored integer
        (the rows past the edges are 0 of the type: 1970-01-01 for a date).
        """
        (x,) = node.args
        typed = self._typed(x)
        logical = self.logical.get(typed)
        dtype = self.types[typed]
        if logical is not None and logical.is_temporal:
            return self._lt.to_physical(typed, node)
        if logical is not None or not (dtype.is_numeric or dtype.is_bool):
            func = node.options[0]
            msg = (f"`{x!r}.{func}()`: `{func}` takes numbers, booleans and temporal values, "
                   f"and `{x!r}` is {logical or dtype}; cast it first")  # fmt: skip
            raise InvalidOperationError(msg)
        if dtype is DType.FLOAT16:
            raise _float16_error(_quote(node))
        return typed

    def _interpolate_by_operand(self, node: Function) -> Node:
        """An operand of ``interpolate_by``: the values as their float type, or ``by``'s numbers.

        The types polars takes: values of Int32, Int64, UInt32, UInt64 (as Float64) or
        a float type; ``by`` of those, a date or a datetime (its stored integers). A null
        ``by`` is an error on the rows (polars does not support it yet).
        """
        (x,) = node.args
        typed = self._typed(x)
        logical = self.logical.get(typed)
        dtype = self.types[typed]
        numbers = (DType.INT32, DType.INT64, DType.UINT32, DType.UINT64, DType.FLOAT32,
                   DType.FLOAT64)  # fmt: skip
        key = node.name == "interpolate_by_key"
        dated = logical is not None and logical.kind in ("date", "datetime")
        if (logical is not None and not (key and dated)) or dtype not in numbers:
            msg = (f"`interpolate_by`: `{x!r}` ({'`by`' if key else 'the values'}) is "
                   f"{logical or dtype}; polars takes values of Int32, Int64, UInt32, UInt64, "
                   "Float32 or Float64 and a `by` of those, a Date or a Datetime: cast it "
                   "first")  # fmt: skip
            raise InvalidOperationError(msg)
        if not key:
            return typed if dtype.is_float else self.cast_plain(typed, DType.FLOAT64, False)
        physical = self._lt.to_physical(typed, node) if dated else typed
        present = self._check(Unary("is_null", x))  # true or false on every row: checked
        ok = self._check(Unary("is_not_null", x))
        message = (f"`interpolate_by({x!r})`: null values in `by` are not supported (as in "
                   "polars); fill them or filter those rows first")  # fmt: skip
        checked = self._record(Check(present, ok, message), DType.BOOL)
        # `physical` where the check holds (every row that reaches a result)
        return self._record(When(self._record(Unary("not", checked), DType.BOOL), physical,
                                 self._typed_literal(None, self.types[physical])),
                            self.types[physical])  # fmt: skip

    def _pair_side(self, node: Function, arg: Node) -> tuple[Node, DType]:
        """One side of ``cov``/``corr`` typed: a number or a boolean, refused otherwise."""
        typed = self._typed(arg)
        dtype = self.types[typed]
        if typed in self.logical or not (dtype.is_float or dtype.is_integer or dtype.is_bool):
            kind = self.logical.get(typed) or dtype
            func = node.options[0]
            # `pair_result` reads each side's `first()`: name the side as written
            side = arg.arg if isinstance(arg, (Agg, GroupAgg)) and arg.func == "first" else arg
            msg = (
                f"`{func}` of `{side!r}`, which is {kind}: `{func}` takes numbers and "
                "booleans; cast it to a number first (polars answers null for strings)"
            )
            raise InvalidOperationError(msg)
        if dtype is DType.FLOAT16:
            raise _float16_error(_quote(node))
        return typed, dtype

    def _pair_float(self, node: Function) -> Node:
        """``pair_float(x, other)``: ``x`` where both sides are non-null, null elsewhere.

        As Float64 (`colbridge.expr.api.cov`), in its own type with the option
        ``"own_type"`` (what Spearman's correlation ranks), or in the two sides' common
        type where that is a float with ``"common_float"`` (the rolling pairs).
        """
        (x, tx), (other, to) = (self._pair_side(node, a) for a in node.args)
        target = DType.FLOAT64
        if "common_float" in node.options:  # the rolling pairs: polars' float supertype
            common = supertype(tx, to)  # None: int64 with uint64 (Int128), not a float
            target = common if common is not None and common.is_float else DType.FLOAT64
        value = x if "own_type" in node.options else self.cast_plain(x, target, False)
        both = Binary("and", Unary("is_not_null", x), Unary("is_not_null", other))
        return self._check(When(both, value, Literal(None)))

    def _pair_result(self, node: Function) -> Node:
        """``pair_result(value, a, b)``: ``cov``'s or ``corr``'s Float64 ``value`` typed.

        As Float32 where the common type of ``a`` and ``b`` is Float32 (polars' type).
        """
        value, *sides = node.args
        types = [self._pair_side(node, side)[1] for side in sides]
        common = supertype(*types)
        out = self._typed(value)
        if common is DType.FLOAT32:
            return self.cast_plain(out, DType.FLOAT32, False)
        return out

    def _replace(self, node: Function) -> Node:
        """``replace(old, new)``: the values of ``old`` by those of ``new``, in the column's type.

        A string or categorical column maps its dictionary's distinct strings (any number
        of pairs; `colbridge.types.string_maps`), unless a null is replaced or made,
        which only rows can be; otherwise each ``old`` value, cast strictly to the
        column's type as polars casts it, is compared with every row in a chain of
        `When` nodes (``None`` in ``old`` picks the null rows), the rows matching none
        keeping their value.
        """
        x = node.args[0]
        x = arg = self.check(x)  # `lit(3).replace(1, 9)`: in the literal's own type
        olds, news = node.options
        logical = self.logical.get(arg)
        if logical is not None and logical.is_string:
            if logical.kind == "enum":
                msg = (f"`{node!r}`: `replace` on an Enum is not supported; cast it to "
                       "`pl.String` (or `pl.Categorical`) first")  # fmt: skip
                raise UnsupportedOperationError(msg)
            _categorical_takes_text(node, logical, olds + news)
            olds = tuple(_as_text(node, v) for v in olds)
            news = tuple(_as_text(node, v) for v in news)
            if None not in olds and None not in news:
                return self._lt.replace_strings(arg, olds, news)
        if len(olds) > _MAX_REPLACED:
            msg = (
                f"`{node!r}`: {len(olds)} values to replace; colbridge compares at most "
                f"{_MAX_REPLACED} per row in a kernel (string columns map any number): "
                "join a mapping table in the source frame instead"
            )
            raise UnsupportedOperationError(msg)

        out: Node = x
        for o, n in reversed(list(zip(olds, news, strict=True))):
            match = Unary("is_null", x) if o is None \
                else Binary("eq", x, self._replace_value(o, arg))  # fmt: skip
            out = When(match, self._replace_value(n, arg), out)
        return self._check(out)

    def _replace_value(self, v: Any, arg: Node) -> Node:
        """A ``replace`` key: cast strictly to ``arg``'s type (as written next to a logical one)."""
        written = Constant(v) if isinstance(v, _CONSTANT_TYPES) else Literal(v)
        if arg in self.logical:  # dates, times, durations, strings: typed with the column
            return written
        if isinstance(v, int) and not isinstance(v, bool) and v >= 2**63:
            written = Literal(v, DType.UINT64)  # above Int64 (a UInt64 column's values)
        return Cast(written, self.types[arg], True)

    def _replace_strict(self, node: Function) -> Node:
        """``replace_strict``: a chain of `When`s from each ``old`` to its ``new``.

        The new values are typed as polars types them (`colbridge.expr.api._series_type`
        for a list, a literal for one value), then cast to ``return_dtype`` (strictly
        without a default); the rows matching none take the default, and without one a
        `Check` in the first condition counts the non-null rows matching none: an error.
        """
        x = node.args[0]
        x = arg = self.check(x)  # `lit(1).replace_strict(...)`: the literal's own type
        olds, news, new_type, returned, given, single = node.options
        logical = self.logical.get(arg)
        if logical is not None and logical.kind == "enum":
            msg = (f"`{node!r}`: `replace_strict` on an Enum is not supported; cast it to "
                   "`pl.String` (or `pl.Categorical`) first")  # fmt: skip
            raise UnsupportedOperationError(msg)
        if logical is not None and logical.is_string:
            _categorical_takes_text(node, logical, olds)
            olds = tuple(_as_text(node, v) for v in olds)
        if not given and logical is not None and logical.kind in ("datetime", "duration") \
                and logical.unit != "us" \
                and any(isinstance(v, (_dt.datetime, _dt.timedelta)) for v in olds):  # fmt: skip
            # Python datetimes and timedeltas are microseconds: polars refuses them as keys
            # of another unit here (and only here: not with a default, nor in `replace`)
            msg = (f"`{node!r}`: cannot use values of type {logical.kind}[us] to replace "
                   f"values in a column of type {logical} (as in polars); cast the column "
                   "to microseconds first, or give a `default`")  # fmt: skip
            raise InvalidOperationError(msg)
        tabled = logical is not None and logical.is_string and None not in olds \
            and isinstance(new_type, DType) and returned in (None, new_type)  # fmt: skip
        if len(olds) > _MAX_REPLACED and not tabled:
            msg = (f"`{node!r}`: {len(olds)} values to replace; colbridge compares at most "
                   f"{_MAX_REPLACED} per row in a kernel (a string or categorical column "
                   "maps any number to numbers or booleans): join a mapping table in the "
                   "source frame instead")  # fmt: skip
            raise UnsupportedOperationError(msg)
        if not olds and not given:
            msg = f"`{node!r}`: no values to replace and no `default`: give `old` values"
            raise InvalidOperationError(msg)
        if new_type is None and returned is None and all(n is None for n in news) and not given:
            msg = f"`{node!r}`: every new value is None, which has no type; give a `return_dtype`"
            raise SchemaError(msg)

        def to_returned(value: Node, strict: bool) -> Node:
            if returned is None:
                return value
            if isinstance(returned, DType):
                return Cast(value, returned, strict)
            return Function("cast", (value,), (returned, strict))

        def new_value(v: Any) -> Node:
            if isinstance(returned, Logical) and returned.kind == "string" \
                    and isinstance(v, int):  # fmt: skip
                return Constant(_as_text(node, v))  # polars' text of an integer, a boolean
            written: Node = Constant(v) if isinstance(v, _CONSTANT_TYPES) else Literal(v)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 2**63:
                written = Literal(v, DType.UINT64)
            if isinstance(new_type, DType):
                written = Cast(written, new_type, True)
            elif new_type is not None and v is None:
                written = Function("cast", (written,), (new_type, False))
            return to_returned(written, strict=not given)

        otherwise = to_returned(node.args[1], strict=False) if given else Literal(None)
        if tabled and olds:
            return self._replace_strict_strings(node, x, arg, olds, news, new_type, otherwise,
                                                given)  # fmt: skip
        matches: list[Node] = [Unary("is_null", x) if o is None
                               else Binary("eq", x, self._replace_value(o, arg))
                               for o in olds]  # fmt: skip
        if not olds:  # the default on every row
            return self._check(When(Unary("is_null", x), otherwise, otherwise))
        if not given:
            # a non-null row matching no `old` is an error: counted by a check the first
            # condition reads, as `m or (check and m)`: the check is true on every
            # non-null row, so the condition is `m`'s (null, false or true) on every row
            ok: Node = Unary("is_null", x)
            for o, m in zip(olds, matches, strict=True):
                if o is not None or not single:
                    ok = Binary("or", ok, m)
            if single and None in olds and len(olds) > 1:
                # polars' one-new-value path compares with `is_in`, which leaves a null row
                # unmatched even with None among `old`: an error there, as in polars
                ok = Binary("and", Unary("is_not_null", x), ok)
            present = self._check(Unary("is_not_null", x))
            message = (f"`{node!r}`: incomplete mapping specified for `replace_strict`: a "
                       "non-null value is not among `old`; pass a `default` for the values "
                       "it does not list")  # fmt: skip
            checked = self._record(Check(present, self._check(ok), message), DType.BOOL)
            matches[0] = Binary("or", matches[0], Binary("and", checked, matches[0]))
        out = otherwise
        for m, v in reversed(list(zip(matches, news, strict=True))):
            out = When(m, new_value(v), out)
        return self._check(out)

    def _replace_strict_strings(self, node: Function, x: Node, arg: Node, olds: tuple[Any, ...],
                                news: tuple[Any, ...], new_type: DType, otherwise: Node,
                                given: bool) -> Node:  # fmt: skip
        """`_replace_strict` of a string column to numbers: two tables over its dictionary.

        Whether each distinct string is among ``olds`` (``is_in``), and its new value
        (``lookup``; null where it has none), each gathered by the row's code: any number
        of pairs, one lookup per row.
        """
        found = self._lt.table(arg, ("is_in", olds), DType.BOOL)
        mapped = self._lt.table(arg, ("lookup", olds, news, new_type.value), new_type,
                                nullable=True)  # fmt: skip
        if not given:
            ok = self._check(Binary("or", Unary("is_null", x), found))
            present = self._check(Unary("is_not_null", x))
            message = (f"`{node!r}`: incomplete mapping specified for `replace_strict`: a "
                       "non-null value is not among `old`; pass a `default` for the values "
                       "it does not list")  # fmt: skip
            checked = self._record(Check(present, ok, message), DType.BOOL)
            found = Binary("or", found, Binary("and", checked, found))
        return self._check(When(found, mapped, otherwise))

    def _reinterpret(self, node: Function) -> Node:
        """``reinterpret(signed=...)`` / ``(dtype=...)``: an integer's bits as its twin type.

        A conversion between integers of one width keeps the bits (two's complement), so
        it is a `Narrow` (a wrapping conversion on every target). Floats stay as they
        are (polars' ``signed=`` leaves them); a Python number alone is refused, as
        polars refuses it.
        """
        (target,) = node.options
        arg = self._check(node.args[0])
        if self._is_dynamic(arg) or arg in self.logical or not self.types[arg].is_numeric:
            got = self.logical.get(arg) or ("a Python number" if self._is_dynamic(arg)
                                            else self.types[arg])  # fmt: skip
            msg = (f"{_quote(node)}: cannot reinterpret {got}; reinterpret an integer or a "
                   "float column, or cast instead")  # fmt: skip
            raise InvalidOperationError(msg)
        t = self.types[arg]
        if isinstance(target, bool):  # signed=...
            if t.is_float:
                return arg
            twin = {8: (DType.INT8, DType.UINT8), 16: (DType.INT16, DType.UINT16),
                    32: (DType.INT32, DType.UINT32), 64: (DType.INT64, DType.UINT64)}
            target = twin[t.bits][0 if target else 1]
        if not (t.is_integer and target.is_integer and t.bits == target.bits):
            if t == target:
                return arg
            msg = (f"{_quote(node)}: cannot reinterpret {t} as {target}: colbridge reads "
                   "the bits of an integer as the other integer type of its width only; "
                   "cast instead, or reinterpret float bits in polars")  # fmt: skip
            raise InvalidOperationError(msg)
        if t == target:
            return arg
        return self._record(Narrow(arg, target), target)

    def _typed(self, node: Node) -> Node:
        """``node`` checked, a dynamic result materialised (it stands on its own)."""
        typed = self._check(node)
        return self._materialize(typed) if self._is_dynamic(typed) else typed

    def rows_of(self, source: Node, typed: Node) -> Node:
        """``typed`` with the rows of ``source``: one value per row where ``source`` reads them.

        A null-typed column is typed as a constant (``col("n").fill_null(1)`` is ``1``),
        but it has the frame's rows: a reduction or an ordered operation of it counts
        them (polars: 4 rows sum to 4, where ``lit(1).sum()`` is 1).
        """
        if not is_scalar(typed) or not self._reads_rows(source):
            return typed
        out = self._record(EveryRow(typed), self.types[typed])
        if typed in self.logical:
            self.logical[out] = self.logical[typed]
            if typed in self.dicts:
                self.dicts[out] = self.dicts[typed]
        return out

    def _reads_rows(self, node: Node) -> bool:
        """True when an untyped expression reads a column of the frame outside a reduction."""
        if isinstance(node, Column):
            return node.name in self.schema
        if isinstance(node, (Over, Scan, EveryRow)):
            return True
        if isinstance(node, GroupAgg):
            return bool(node.keys.exprs) and self._reads_rows(node.arg)
        if isinstance(node, Agg):
            return False
        return any(self._reads_rows(c) for c in children(node))

    def _cast_like(self, node: Function) -> Node:
        """``cast_like(value, like)``: ``value`` converted to ``like``'s type, not strictly.

        ``fill_null(strategy="mean")`` fills with the mean cast to the column's type
        (an integer column takes the mean truncated, as polars does).
        """
        if is_null_literal(self._check(node.args[1])):
            return Literal(None)  # like a null-typed column: null (polars' mean fill of one)
        like = self._typed(node.args[1])
        logical = self.logical.get(like)
        if logical is not None and logical.is_temporal:
            # polars: the mean of the integers, truncated to the column's integers
            mean = node.args[0]  # the column's mean (per group, under `over`)
            assert isinstance(mean, (Agg, GroupAgg))
            of_ints = dataclasses.replace(mean, arg=Function("to_physical", (mean.arg,)))
            ints = Cast(of_ints, logical.physical, False)
            return self._check(Function("cast", (ints,), (logical, False)))
        value = self._typed(node.args[0])
        if like in self.logical or value in self.logical:
            msg = f"`{node.args[1]!r}`: `fill_null(strategy='mean')` needs a numeric column"
            raise UnsupportedTypeError(msg)
        if self.types[like] is DType.BOOL:
            msg = (f"`{node.args[1]!r}`: `fill_null(strategy='mean')` of a Boolean column is "
                   "not supported (as in polars); fill with a value, or cast it to a "
                   "number")  # fmt: skip
            raise InvalidOperationError(msg)
        return self.cast_plain(value, self.types[like], strict=False)

    def _fill_zero_or_one(self, node: Function) -> Node:
        """``fill_null(strategy="zero" | "one")``: nulls filled with 0 or 1 of the column's type.

        As polars: booleans false or true, numbers of the column's type, temporal
        types their integer 0 or 1 (the epoch, one day, one unit), a string "" for
        zero; a string's one and categoricals are refused, as polars refuses them.
        """
        x = node.args[0]
        arg = self._typed(x)  # a null-typed column is refused, naming the cast
        one = bool(node.options[0])
        logical = self.logical.get(arg)
        if logical is None:
            t = self.types[arg]
            value: Node = Literal(one) if t is DType.BOOL else Cast(Literal(int(one)), t, True)
        elif logical.kind == "string" and not one:
            value = Constant("")
        elif logical.is_string:
            msg = (f"`{node!r}`: fill-null strategy {'one' if one else 'zero'!r} is not "
                   f"supported for type {logical} (as in polars); fill with a value "
                   "instead, e.g. `fill_null(\"?\")`")  # fmt: skip
            raise InvalidOperationError(msg)
        else:
            value = Function("cast", (Literal(int(one)),), (logical, True))
        return self._check(Coalesce((x, value)))

    def _log(self, node: Function) -> Node:
        """``x.log(base)``: ``ln(x) / ln(base)``, in polars' type.

        The type is ``x``'s when it is a float, else ``base``'s when that is a float,
        else float64; a Python float on the deciding side keeps the result dynamic
        (polars: ``int8.log(2.0) * float32`` is Float32).
        """
        x, base = (self._check(a) for a in node.args)
        kx, kb = self._dynamic_kind(x), self._dynamic_kind(base)
        x_float = kx == "float" or (not self._is_dynamic(x) and self.types[x].is_float)
        deciding = x if x_float else base
        base_float = kb == "float" or (not self._is_dynamic(base) and self.types[base].is_float)
        if self._keep_dynamic and self._dynamic_kind(deciding) == "float" and (
            x_float or base_float
        ):
            return self._dynamic_node(Function("log", (x, base)), "float", math.e)
        if is_null_literal(x) or is_null_literal(base):
            other = base if is_null_literal(x) else x
            t = DType.FLOAT64
            if not is_null_literal(other):
                other_type = self.types[self._typed(other)]
                t = other_type if other_type.is_float else DType.FLOAT64
            return self._typed_literal(None, t)
        x, base = self._typed(x), self._typed(base)
        tx, tb = self.types[x], self.types[base]
        t = tx if tx.is_float else tb if tb.is_float else DType.FLOAT64
        if t is DType.FLOAT16:
            raise _float16_error(_quote(node))
        ln_x = self._record(Unary("log", self._cast(x, t)), t)
        if isinstance(base, Literal) and base.value is not None:
            # polars: `x.ln() / base.ln()` with the base in x's type (e as a Float32 is
            # not e: its logarithm is not 1, and a Float32 `log()` divides by it)
            b = float(np.float32(base.value)) if t is DType.FLOAT32 else float(base.value)
            ln_b = _ln(b)
            if t is DType.FLOAT32:
                ln_b = float(np.float32(ln_b))
            if ln_b == 1.0:
                return ln_x  # a division by 1
            ln_base = self._typed_literal(ln_b, t)
        else:
            ln_base = self._record(Unary("log", self._cast(base, t)), t)
        return self._record(Binary("truediv", ln_x, ln_base), t)

    def _trig(self, node: Function) -> Node:
        """``degrees``, ``radians`` and ``cot``, each as Rust computes it in the input's type."""
        arg = self._typed(node.args[0])
        t = self.types[arg]
        if t.is_bool:
            raise _bad_type(node, t, "a numeric column")
        res = float_result(t)
        if res is DType.FLOAT16:
            raise _float16_error(_quote(node))
        x = self._cast(arg, res)
        if node.name == "cot":  # `tan(x).powi(-1)`
            one = self._typed_literal(1.0, res)
            return self._record(Binary("truediv", one, self._record(Unary("tan", x), res)), res)
        if node.name == "degrees":  # `x * (180 / PI)`, the constant rounded in the type
            factor = 180.0 / math.pi
        elif res is DType.FLOAT32:  # `x * (PI_f32 / 180_f32)`
            factor = float(np.float32(math.pi) / np.float32(180.0))
        else:  # `x * (PI / 180)`
            factor = math.pi / 180.0
        return self._record(Binary("mul", x, self._typed_literal(factor, res)), res)

    def _strict_cast(self, node: Node, dtype: DType, where: Node) -> Node:
        """``node`` converted strictly to ``dtype``: a value that does not fit is an error."""
        if is_null_literal(node):
            return self._typed_literal(None, dtype)
        node = self._typed(node)
        return self._cast_node(Cast(node, dtype, strict=True))

    def _clip_expr(self, node: Function) -> Node:
        """``clip`` with expression bounds, as polars: bounds cast strictly to the input's type.

        A null bound, or a NaN bound of a float column, leaves the value as it is;
        a NaN value stays NaN (Rust's ``PartialOrd`` comparisons are false there).
        """
        arg = self._typed(node.args[0])
        t = self.types[arg]
        logical = self.logical.get(arg)
        if logical is not None:
            return self._clip_temporal(node, logical)
        if not t.is_numeric:
            raise _bad_type(node, t, "a numeric column")
        if t is DType.FLOAT16:
            raise _float16_error(_quote(node))
        lower, upper = (self._strict_cast(b, t, node) for b in node.args[1:])
        result = arg
        if not _is_null_literal_typed(upper):
            above = self._record(Binary("gt", arg, upper), DType.BOOL)
            if t.is_float:  # NaN is the largest value in comparisons; not in Rust's clamp
                above = self._and(above, self._record(Unary("is_not_nan", arg), DType.BOOL))
            result = self._record(When(above, upper, result), t)
        if not _is_null_literal_typed(lower):
            below = self._record(Binary("lt", arg, lower), DType.BOOL)
            if t.is_float:
                below = self._and(below, self._record(Unary("is_not_nan", lower), DType.BOOL))
            result = self._record(When(below, lower, result), t)
        return result

    def _clip_temporal(self, node: Function, logical: Logical) -> Node:
        """``clip`` of dates, datetimes, durations or times: in the column's own type.

        The bounds (values or expressions) are cast strictly to it, as polars casts
        them; a null bound leaves the value as it is (the comparison is null).
        """
        if not logical.is_temporal:
            msg = f"`{node!r}`: clip needs numbers, dates, datetimes, durations or times, " \
                  f"got {logical}"  # fmt: skip
            raise SchemaError(msg)
        x, lower, upper = node.args
        out: Node = x
        for op, bound in (("gt", upper), ("lt", lower)):
            if isinstance(bound, Literal) and bound.value is None:
                continue
            typed = Function("cast", (bound,), (logical, True))
            out = When(Binary(op, x, typed), typed, out)
        return self._check(out)

    def _and(self, a: Node, b: Node) -> Node:
        return self._record(Binary("and", a, b), DType.BOOL)

    def _balanced(self, op: str, nodes: list[Node], dtype: DType) -> Node:
        """``nodes`` joined by ``op`` as a balanced tree (a few levels deep, not hundreds)."""
        if len(nodes) == 1:
            return nodes[0]
        mid = len(nodes) // 2
        left = self._balanced(op, nodes[:mid], dtype)
        right = self._balanced(op, nodes[mid:], dtype)
        return self._record(Binary(op, left, right), dtype)

    def _bin_intervals(self, node: Function) -> Node:
        """``bin_intervals``/``cut`` by explicit breakpoints: how many breaks lie below a value.

        A left-closed bin counts the breaks ``<= x``, a right-closed one those ``< x``,
        with polars' comparisons: NaN is the largest value, so it lands in the last bin
        (``cut`` makes it null). One comparison per break, summed: a branch-free
        elementwise kernel. Breaks are compared as polars compares the column with a
        Series of them: floats in Float64, integers exactly (a break outside the
        column's range is below or above every value), others in the column's type.
        With labels the count is the code of an Enum of them.
        """
        x = node.args[0]
        arg = self._typed(x)
        breaks, labels, right_closed, nan_is_null = node.options
        t, logical = self.types[arg], self.logical.get(arg)
        op = "gt" if right_closed else "ge"
        value: Node = x
        numbers = logical is None
        exact = t.is_integer and all(type(b) is int for b in breaks)
        if numbers and not exact:  # floats or booleans: ordered as Float64, their supertype
            value = Cast(x, DType.FLOAT64, True)
        below = 0  # breaks below every value of an integer column
        terms: list[Node] = []
        for b in breaks:
            if numbers and exact:
                lo, hi = int_range(t)
                if b < lo or (b == lo and not right_closed):
                    below += 1
                    continue
                if b > hi or (b == hi and right_closed):
                    continue
                bound: Node = Literal(b, t)
            elif numbers:
                bound = Literal(float(b), DType.FLOAT64)
            elif logical is not None and logical.is_temporal:  # polars casts the breaks:
                # a nanosecond column is compared in nanoseconds, not floored to a break's
                # microseconds as a comparison with the literal would
                bound = Function("cast", (Constant(b),), (logical, True))
            else:
                bound = Constant(b)  # a string
            terms.append(Cast(Binary(op, value, bound), DType.UINT32, True))
        count: Node
        if terms:
            count = self._balanced("add", [self._check(t) for t in terms], DType.UINT32)
            if below:
                count = self._check(Binary("add", count, Literal(below, DType.UINT32)))
        else:  # no comparison left to carry the nulls
            count = self._check(
                When(Unary("is_null", x), Literal(None, DType.UINT32),
                     Literal(below, DType.UINT32))
            )  # fmt: skip
        if nan_is_null and numbers and t.is_float:
            count = self._check(When(Unary("is_nan", x), Literal(None, DType.UINT32), count))
        if labels is None:
            return count
        codes = self._record(Narrow(count, DType.INT32), DType.INT32)
        return self._lt.mark(codes, Logical("enum"), ("lit", tuple(labels)))

    def _is_in(self, node: Function) -> Node:
        """``is_in`` of a literal list: equalities joined by Kleene OR, as polars answers.

        The list's kind must match the column's (polars refuses to coerce it);
        integers outside the column's range never match.
        """
        values, nulls_equal = node.options
        arg = self._check(node.args[0])
        if is_null_literal(arg):  # a null of the list's kind (polars: null, or true if equal)
            types = {type(v) for v in values if v is not None}
            like = {bool: DType.BOOL, int: DType.INT64, float: DType.FLOAT64}.get(
                types.pop() if len(types) == 1 else bool, DType.BOOL)  # fmt: skip
            arg = self._typed_literal(None, like)
        elif self._is_dynamic(arg):
            arg = self._materialize(arg)
        t = self.types[arg]
        present = [v for v in values if v is not None]
        kinds = {"bool" if isinstance(v, bool) else type(v).__name__ for v in present}
        if len(kinds) > 1:
            msg = (
                f"`{node!r}`: the list mixes {' and '.join(sorted(kinds))} values; "
                "give values of one kind, as for a polars Series"
            )
            raise SchemaError(msg)
        kind = kinds.pop() if kinds else None
        column_kind = "bool" if t.is_bool else "float" if t.is_float else "int"
        if kind is not None and kind != column_kind:
            msg = (
                f"`{node!r}`: cannot look for {t} values in a list of {kind} values; "
                f"give {column_kind} values, or cast the column first, e.g. `.cast('float64')`"
            )
            raise SchemaError(msg)
        if t is DType.FLOAT16:
            raise _float16_error(_quote(node))
        compare = DType.FLOAT64 if t.is_float else t  # the list is a Float64 Series
        x = self._cast(arg, compare)
        lo, hi = int_range(t) if t.is_integer else (None, None)
        tests = [
            self._record(Binary("eq", x, self._typed_literal(v, compare)), DType.BOOL)
            for v in dict.fromkeys(present)  # no value twice
            if lo is None or lo <= v <= hi  # type: ignore[operator]
        ]
        if tests:
            found = self._balanced("or", tests, DType.BOOL)
        else:  # nothing can match: false, null where the value is null
            valid = self._record(Unary("is_not_null", arg), DType.BOOL)
            found = self._record(
                When(valid, self._typed_literal(False, DType.BOOL),
                     self._typed_literal(None, DType.BOOL)), DType.BOOL)  # fmt: skip
        if not nulls_equal:
            return found
        is_null = self._record(Unary("is_null", arg), DType.BOOL)
        null_found = self._typed_literal(None in values, DType.BOOL)
        return self._record(When(is_null, null_found, found), DType.BOOL)

    def _horizontal_args(
        self, node: Function, args: list[Node] | None = None
    ) -> tuple[list[Node], DType]:
        """The arguments cast to their common type, as polars coerces them first.

        Dynamic numbers follow the typed arguments (all dynamic: the first is
        materialised and the others follow it). The typed ones are joined from left
        to right, as polars does (``i8, u16, f32`` is float64, ``f32, i8, u16``
        float32); a pair that needs int128 (``i8, u64``) still gives float64 when a
        float follows.
        """
        args = [self._check(a) for a in node.args] if args is None else args
        typed = [self.types[a] for a in args if not self._is_dynamic(a)]
        if not typed:
            first = next((a for a in args if not is_null_literal(a)), None)
            if first is None:
                msg = f"`{node!r}` has only null literals; give one a dtype"
                raise SchemaError(msg)
            typed = [self.types[self._materialize(first)]]
        st = typed[0]
        int128: tuple[DType, DType] | None = None  # the pair that needed it, till a float
        for t in typed[1:]:
            if int128 is not None:
                if t.is_float:
                    st, int128 = DType.FLOAT64, None
                continue
            joined = supertype(st, t)  # (None only for two integers)
            if joined is None:
                int128 = (st, t)
            else:
                st = joined
        if int128 is not None:
            self._super(*int128, node)  # the error that names the pair
        out = []
        for a in args:
            if self._is_dynamic(a):
                a = self._type_dynamic_against(a, st, node)
                st = self._super(st, self.types[a], node)
            out.append(a)
        return [self._cast(a, st) for a in out], st

    def _temporal_horizontal(self, node: Function, args: list[Node]) -> Logical | None:
        """The one temporal type of ``args`` (polars' supertype, `LogicalTyping.merge`).

        None where none is temporal; ``args`` are replaced by their values in it.

        Temporal values mixed with numbers are compared as their integers, as polars does.
        """
        present = [a for a in args if not is_null_literal(a)]
        logicals = [self.logical.get(a) for a in present]
        if not any(lg is not None for lg in logicals):
            return None
        if not all(lg is not None and lg.is_temporal for lg in logicals):
            return None  # with numbers: their integers (strings are refused as before)
        if node.name == "sum_horizontal" and any(lg.kind != "duration" for lg in logicals
                                                 if lg is not None):  # fmt: skip
            kinds = sorted({str(lg) for lg in logicals if lg is not None})
            msg = f"`{node!r}`: values of types {kinds} cannot be added; only durations sum"
            raise SchemaError(msg)
        merged, logical, _ = self._lt.merge(node, args)
        args[:] = merged
        return logical

    def _min_max_horizontal(self, node: Function) -> Node:
        """Pairwise max (min): nulls skipped, NaN skipped unless both are NaN (polars).

        Dates, datetimes, durations and times keep their type (in their supertype).
        """
        args = [self._check(a) for a in node.args]
        if self._strings_horizontal(node, args):
            # strings by their text: the same choice as `when` with a comparison, typed as
            # one (the branches' dictionaries merged, the comparison by label)
            op = "gt" if node.name == "max_horizontal" else "lt"

            def pick(p: Node, q: Node) -> Node:
                chosen = When(Binary(op, q, p), q, p)
                return When(Unary("is_null", p), q, When(Unary("is_null", q), p, chosen))

            return self._check(_tree(list(node.args), pick))
        logical = self._temporal_horizontal(node, args)
        if logical is not None:
            return self._lt.mark(self._min_max_of(node, args), logical)
        return self._min_max_of(node, args)

    def _strings_horizontal(self, node: Function, args: list[Node]) -> bool:
        """True when every argument is a string (or categorical, or enum).

        Strings mixed with other types are refused, as polars refuses them; so are a
        Categorical or an Enum next to a plain string (polars: "invalid or ambiguous
        dtypes"), and two or more different Categoricals: polars compares them by their physical
        codes (the order in which the process first met each category, which the
        frame's data does not carry; not their text), an order colbridge cannot know.
        """
        present = [a for a in args if not is_null_literal(a)]
        strings = [a for a in present if (lg := self.logical.get(a)) is not None and lg.is_string]
        if strings and len(strings) < len(present):
            other = next(a for a in present if a not in strings)
            got: object = self.logical.get(other) or self.types.get(other) or "a number"
            msg = f"`{node!r}` mixes strings with {got}; cast them to one type first"
            raise SchemaError(msg)
        kinds = {self.logical[a].kind for a in strings}
        if len(strings) > 1 and "string" in kinds and len(kinds) > 1:
            coded = next(self.logical[a] for a in strings if self.logical[a].kind != "string")
            msg = (
                f"`{node!r}` mixes a {coded} with plain strings (polars refuses it as "
                "ambiguous); cast them to one type first, e.g. `.cast('string')`"
            )
            raise SchemaError(msg)
        if len(set(strings)) > 1 and kinds == {"categorical"}:  # (one expression twice: itself)
            msg = (
                f"`{node!r}`: polars compares Categoricals here by their physical codes (the "
                "order in which the process first met each category), not by their text, and "
                "colbridge cannot know that order; cast them to strings to compare their text "
                "(`.cast('string')`), or to one Enum to compare by the order of its categories"
            )
            raise SchemaError(msg)
        return bool(strings)

    def _min_max_of(self, node: Function, nodes: list[Node]) -> Node:
        args, st = self._horizontal_args(node, nodes)
        if st is DType.FLOAT16:
            raise _float16_error(_quote(node))
        op = "gt" if node.name == "max_horizontal" else "lt"

        def pick(p: Node, q: Node) -> Node:
            better = self._record(Binary(op, q, p), DType.BOOL)
            out = self._record(When(better, q, p), st)
            if st.is_float:
                q_nan = self._record(Unary("is_nan", q), DType.BOOL)
                p_nan = self._record(Unary("is_nan", p), DType.BOOL)
                out = self._record(When(q_nan, p, out), st)
                out = self._record(When(p_nan, q, out), st)
            q_null = self._record(Unary("is_null", q), DType.BOOL)
            p_null = self._record(Unary("is_null", p), DType.BOOL)
            out = self._record(When(q_null, p, out), st)
            return self._record(When(p_null, q, out), st)

        return _tree(args, pick)

    def _sum_horizontal(self, node: Function, args: list[Node]) -> Node:
        """Sums as polars adds them: all cast to the common type, then pairwise in halves.

        With ``ignore_nulls`` each argument's nulls become 0 first (a row of nulls
        sums to 0); the common type widened as a `sum`'s (booleans to UInt32, 8- and
        16-bit integers to Int64, as polars 2.2); integers wrap in it.
        """
        if self._strings_horizontal(node, args):  # polars joins them, as `concat_str`
            coded = [lg for a in args if (lg := self.logical.get(a)) and lg.kind != "string"]
            if coded:  # polars adds no categoricals (`c + s` it joins)
                msg = (f"`{node!r}`: `add` operation not supported for dtype {coded[0]} (as "
                       "in polars); cast it with `.cast(pl.String)` first")  # fmt: skip
                raise InvalidOperationError(msg)
            return self._lt.join_typed(args, "", bool(node.options[0]), node)
        logical = self._temporal_horizontal(node, args)
        if logical is not None:  # durations: summed as their integers in one unit
            return self._lt.mark(self._sum_of(node, args), logical)
        return self._sum_of(node, args)

    def _sum_of(self, node: Function, args: list[Node]) -> Node:
        ignore_nulls = node.options[0]
        present = [a for a in args if not is_null_literal(a)]
        if not present:
            msg = f"`{node!r}` has only null literals; give one a dtype"
            raise SchemaError(msg)
        leaves, st = self._horizontal_args(node, present)
        if st is DType.FLOAT16:
            raise _float16_error(_quote(node))
        if agg_result("sum", st) is not st:  # polars 2.2 sums in `sum`'s type: Int64, UInt32
            st = agg_result("sum", st)
            leaves = [self._cast(a, st) for a in leaves]
        if len(present) < len(args) and not ignore_nulls:
            return self._typed_literal(None, st)  # a null argument: every row is null
        if ignore_nulls:
            zero = self._typed_literal(0, st)
            leaves = [self._record(Coalesce((a, zero)), st) for a in leaves]
        return _tree(leaves, lambda p, q: self._record(Binary("add", p, q), st))

    def _mean_horizontal(self, node: Function) -> Node:
        """The mean as polars takes it: the horizontal sum over the count of non-null values.

        The sum is `sum_horizontal`'s (polars 2.2: in the arguments' common type
        widened as a `sum`'s, integers wrapping there), divided in float32 when it is
        one, else in float64. No value left gives null.
        """
        args = [self._typed(a) if not is_null_literal(self._check(a)) else self._check(a)
                for a in node.args]  # fmt: skip
        if all(is_null_literal(a) for a in args):
            return self._typed_literal(None, DType.FLOAT64)
        if len(args) == 1:
            only = args[0]
            t = self.types[only]
            return self._cast(only, t if t in (DType.FLOAT32, DType.FLOAT16) else DType.FLOAT64)
        total = self._sum_of(node, args)
        st = self.types[total]
        res = st if st in (DType.FLOAT32, DType.FLOAT16) else DType.FLOAT64
        if res is DType.FLOAT16:
            raise _float16_error(_quote(node))
        counts = []
        for a in args:
            if is_null_literal(a):
                continue
            valid = self._record(Unary("is_not_null", a), DType.BOOL)
            counts.append(self._cast(valid, DType.UINT32))
        if not counts:
            return self._typed_literal(None, res)
        count = self._balanced("add", counts, DType.UINT32)
        zero = self._typed_literal(0, DType.UINT32)
        none_left = self._record(Binary("eq", count, zero), DType.BOOL)
        mean = self._record(
            Binary("truediv", self._cast(total, res), self._cast(count, res)), res
        )
        return self._record(When(none_left, self._typed_literal(None, res), mean), res)

    def _agg(self, node: Agg) -> Node:
        node = Agg(node.func, _scan_of_kept_rows(filters_outermost(node.arg)), node.ddof,
                   node.options)  # fmt: skip
        if node.func in MOMENT_FUNCS:  # sums over the empty key set: whole-column reductions
            return self._group_agg(GroupAgg(node.func, node.arg, KeySet(), node.ddof, node.options))
        if node.func in GROUPED_ONLY_FUNCS or node.func == "len" or (
            node.func in ("count", "null_count") and self._opaque_column(node.arg)
        ):
            # computed from the rows' positions or a factorization: one group
            return self._group_agg(GroupAgg(node.func, node.arg, KeySet(), node.ddof, node.options))
        if isinstance(node.arg, Filtered) and node.func in NULL_KEEPING_AGGS \
                and is_null_literal(self._check(_unfiltered(node.arg))):  # fmt: skip
            return Literal(None)  # polars: the Null type's reductions are null
        if isinstance(node.arg, Filtered):
            arg, pred = self._filtered(node.arg, node)
            assert isinstance(arg, Filtered)
            if arg.arg in self.logical and node.func not in ("count", "null_count"):
                # a date's, a string's: in its own type, as without the filter
                def kept(f: str, value: Node) -> Node:
                    rows = self._record(Filtered(value, pred), self.types[value])
                    return Agg(f, rows, node.ddof, node.options)

                return self._lt.agg(node, arg.arg, kept)
            t = self.types[arg]
            return self._record(Agg(node.func, arg, node.ddof, node.options),
                                agg_result(node.func, t))  # fmt: skip
        arg = self._check(node.arg)
        if is_null_literal(arg) and node.func in ("count", "null_count"):
            if node.func == "count":
                return self._typed_literal(0, DType.UINT32)
            # a null-typed column was taken above (its null count is the frame's height)
            return self._typed_literal(1, DType.UINT32)  # one value, and it is null
        if self._keep_dynamic and arg in self._dynamic and node.func in _DYNAMIC_AGG:
            # polars keeps sum/min/max of a dynamic expression dynamic (not of a bare number)
            kind, rep = self._dynamic[arg]
            return self._dynamic_node(Agg(node.func, arg, node.ddof, node.options), kind, rep)
        if is_null_literal(arg) and node.func in NULL_KEEPING_AGGS:
            return arg  # polars: the Null type's reductions are null, of the Null type
        if self._is_dynamic(arg):
            arg = self._materialize(arg)
        arg = self.rows_of(node.arg, arg)
        if self._reduces_to_itself(node.func, arg):
            return arg
        if arg in self.logical and node.func not in ("count", "null_count"):
            return self._lt.agg(node, arg, lambda f, value: Agg(f, value, node.ddof, node.options))
        t = self.types[arg]
        result = agg_result(node.func, t)
        if is_scalar(arg):
            # A reduction of a scalar (a literal, or another reduction) sees one value,
            # as in polars: lit(1).sum() is 1 whatever the frame's length.
            return self._scalar_agg(node.func, node.ddof, arg, result)
        return self._record(Agg(node.func, arg, node.ddof, node.options), result)

    # -- grouped reductions ---------------------------------------------------
    def key_set(self, keys: KeySet) -> KeySet:
        """The typed key set: columns of any groupable type as they are, expressions typed.

        The order of ``over(..., order_by=...)`` is typed the same way (any type polars
        sorts: not lists or structs).
        """
        typed = tuple(self._key(key) for key in keys.exprs)
        order = tuple(self._key(key) for key in keys.order_by)
        out = KeySet(typed, order, keys.descending, keys.nulls_last)
        if out.ids_column is not None:  # the group ids kernels read: int32, never null
            self._record(Column(out.ids_column), DType.INT32)
        return out

    def _key(self, key: Node) -> Node:
        """A key (or order) expression typed; a column of any groupable type as it is."""
        if not isinstance(key, Column):
            return self.check(key)
        info = self.schema.get(key.name)
        if info is None:
            from colbridge.columns.frames import missing_column_error

            raise missing_column_error(key.name, self.available)
        _check_key_type(key.name, info)
        if info.dtype is not None:
            self._record(key, info.dtype)
        return key

    def _opaque_column(self, node: Node) -> bool:
        """True for a column no kernel reads (strings, ...), which only grouping can use."""
        if not isinstance(node, Column):
            return False
        info = self.schema.get(node.name)
        return info is not None and info.dtype is None

    def _predicate(self, node: Node, where: Node) -> Node:
        pred = self.check(node)
        if self.types[pred] is not DType.BOOL:
            msg = (
                f"`{where!r}`: the filter predicate is {self.types[pred]}, not boolean; "
                "compare it, e.g. `x.filter(cb.col('y') > 0)`"
            )
            raise SchemaError(msg)
        return pred

    def _filtered(self, node: Filtered, where: Node) -> tuple[Node, Node]:
        """A typed ``arg.filter(predicate)`` as a reduction's input, and the typed predicate."""
        pred = self._predicate(node.predicate, where)
        if isinstance(node.arg, Filtered):  # x.filter(p).filter(q) keeps rows where both hold
            inner, inner_pred = self._filtered(node.arg, where)
            both = self._record(Binary("and", inner_pred, pred), DType.BOOL)
            assert isinstance(inner, Filtered)
            return self._record(Filtered(inner.arg, both), self.types[inner]), both
        arg = self.rows_of(node.arg, self.check(node.arg))
        return self._record(Filtered(arg, pred), self.types[arg]), pred

    def _group_agg(self, node: GroupAgg) -> Node:
        kept_first = filters_outermost(node.arg, node.keys)
        node = dataclasses.replace(node, arg=_scan_of_kept_rows(kept_first))
        keys = self.key_set(node.keys)
        func = node.func
        inner, pred = node.arg, None
        if isinstance(inner, Filtered):
            pred = self._predicate(inner.predicate, node)
            inner = inner.arg
            while isinstance(inner, Filtered):
                pred = self._record(Binary("and", self._predicate(inner.predicate, node), pred),
                                    DType.BOOL)  # fmt: skip
                inner = inner.arg

        def filtered(value: Node) -> Node:
            if pred is None:
                return value
            return self._record(Filtered(value, pred), self.types[value])

        if pred is None and func in _COUNTING_AGGS and inner != ROWS and not node.per_row \
                and one_value_per_group(inner, node.keys):  # fmt: skip
            # a reduction of reductions (`x.mean().sum().over(g)`): polars sees one value
            # per group, not one copy of it per row (a sum of copies multiplies it)
            if func == "len":
                return self._typed_literal(1, DType.UINT32)
            typed = self.check(inner)
            if typed not in self.logical or func in ("count", "null_count"):
                return self._scalar_agg(func, node.ddof, typed,
                                        agg_result(func, self.types[typed]))  # fmt: skip
        if pred is None and func in _ONE_VALUE_AGGS and not keys.exprs and not node.per_row \
                and one_value_per_group(inner, node.keys):  # fmt: skip
            # `lit(2).first()` of a whole column is 2 over an empty frame too: one value
            # (a group's copies of it give the same answer, so only this case needs it)
            typed = self._check(inner)
            typed = typed if is_null_literal(typed) else self.check(inner)
            t = self.types.get(typed)
            if t is not None and typed not in self.logical and not is_null_literal(typed) \
                    and not (func == "quantile" and t.is_bool):  # fmt: skip
                return self._scalar_agg(func, node.ddof, typed, agg_result(func, t),
                                        node.options)  # fmt: skip
        if func == "len":
            # the rows are counted, whatever their values: the argument is not evaluated
            rows: Node = ROWS if pred is None else Filtered(ROWS, pred)
            return self._record(GroupAgg("len", rows, keys), DType.UINT32)
        if func == "str_join":
            return self._str_join(node, inner, pred, keys)
        if isinstance(inner, Column) and self._opaque_column(inner) \
                and func in ("count", "null_count", "first", "last", "n_unique", "arg_min",
                             "arg_max") \
                and not (func in ("first", "last")
                         and _is_null_type(self.schema[inner.name].arrow_type)) \
                and not (func in ("first", "last") and not self.allow_opaque
                         and self._lt.column(inner, self.schema[inner.name]) is not None):
            # taken from the Arrow column itself: any type (strings, dates, decimals, ...);
            # a window's first string or date is gathered by code or value instead
            info = self.schema[inner.name]
            arg: Node = inner if pred is None else Filtered(inner, pred)
            import pyarrow as pa

            if func in ("arg_min", "arg_max") and pa.types.is_nested(info.arrow_type):
                msg = (
                    f"`{node!r}`: column `{info.name}` has type {info.arrow_type}, whose "
                    f"values colbridge does not order; `{func}` takes numbers, booleans, "
                    "strings, binary, categories and dates or times: compute it in polars"
                )
                raise UnsupportedTypeError(msg)
            if func not in ("first", "last"):
                return self._record(GroupAgg(func, arg, keys), DType.UINT32)
            if not self.allow_opaque:
                msg = (
                    f"`{node!r}`: column `{info.name}` has type {info.arrow_type}, which "
                    "kernels cannot compute on; its first/last value per group can only be "
                    "an output of `group_by(...).agg(...)`"
                )
                raise UnsupportedTypeError(msg)
            out = GroupAgg(func, arg, keys)
            self.opaque[out] = info.arrow_type
            return out
        # a reduction's argument is computed on: a `first` inside it (`d.first().max()`)
        # is typed as kernels read it, not taken whole from the Arrow column
        opaque, self.allow_opaque = self.allow_opaque, False
        try:
            typed = self._check(inner)
            if is_null_literal(typed) and func in NULL_KEEPING_AGGS:
                return typed  # polars: null, of the Null type, in every group
            typed = self.rows_of(inner, self.check(inner))
        finally:
            self.allow_opaque = opaque
        if func in MOMENT_FUNCS:
            def reduce(f: str, value: Node, result: DType) -> Node:
                if not keys.exprs:  # a whole column: the kernels' own reductions
                    return self._record(Agg(f, filtered(value)), result)
                return self._record(GroupAgg(f, filtered(value), keys), result)

            return self._moments(node, typed, reduce)
        if pred is None and self._reduces_to_itself(func, typed):
            return typed
        if typed in self.logical and func not in ("count", "null_count", "n_unique", "arg_min",
                                                  "arg_max"):
            return self._lt.agg(node, typed, lambda f, value: GroupAgg(
                f, filtered(value), keys, node.ddof, node.options))  # fmt: skip
        t = self.types[typed]
        result = agg_result(func, t)
        if func in ("first", "last", "n_unique", "arg_min", "arg_max"):
            return self._record(GroupAgg(func, filtered(typed), keys), result)
        if func in BITWISE_AGGS and t.is_float:
            raise _bad_type(node, t, _BITS_WANTED)
        if func == "product":  # multiplied in the result's type (integers wrap), as polars
            value = self._cast(typed, result)
            return self._record(GroupAgg(func, filtered(value), keys), result)
        if func in ("any", "all"):
            # polars casts the values to Boolean first, strictly (non-zero numbers true)
            value = typed if t.is_bool else self._record(Cast(typed, DType.BOOL, strict=True),
                                                          DType.BOOL)  # fmt: skip
            return self._record(GroupAgg(func, filtered(value), keys, options=node.options),
                                result)  # fmt: skip
        if func in ("median", "quantile"):  # booleans too: their 0s and 1s (polars 2.2)
            return self._record(GroupAgg(func, filtered(typed), keys, options=node.options),
                                result)  # fmt: skip
        if func in ("std", "var"):
            return self._grouped_moment(func, typed, filtered, keys, node.ddof, result)
        if pred is None and is_scalar(typed):
            return self._scalar_agg(func, node.ddof, typed, result)
        return self._record(GroupAgg(func, filtered(typed), keys, node.ddof), result)

    def _str_join(self, node: GroupAgg, inner: Node, pred: Node | None, keys: KeySet) -> Node:
        """``str.join``: the strings of each group joined on the host, from the Arrow values.

        A string column is read as it is; anything else as ``cast(pl.String)`` writes it
        (polars' rule), computed by a segment first. The result is strings, which no
        kernel computes on: an output of ``group_by(...).agg(...)``, as a string
        column's ``first`` is there (later steps compute on it as on any string column).
        """
        import pyarrow as pa

        info = self.schema.get(inner.name) if isinstance(inner, Column) else None
        arrow_type = None if info is None else info.arrow_type
        if isinstance(arrow_type, pa.DictionaryType):
            arrow_type = arrow_type.value_type
        text = isinstance(arrow_type, pa.DataType) and (
            pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
            or pa.types.is_string_view(arrow_type))  # fmt: skip
        if not (self.allow_opaque or (self.one_row and not keys.exprs)):
            raise _str_join_refused(node)
        value = inner
        if not text:
            from colbridge.types.logical import STRING

            cast = Function("cast", (inner,), (STRING, True))
            opaque, self.allow_opaque = self.allow_opaque, False
            try:
                value = self.rows_of(cast, self.check(cast))
            finally:
                self.allow_opaque = opaque
        out = GroupAgg("str_join", value if pred is None else Filtered(value, pred), keys,
                       options=node.options)  # fmt: skip
        self.opaque[out] = pa.large_string()
        return out

    def _reduces_to_itself(self, func: str, typed: Node) -> bool:
        """Whether ``func`` of the scalar temporal ``typed`` is ``typed`` (``lit(1h).sum()``).

        One value, not one copy of it per row, as polars reduces a literal.
        """
        if typed not in self.logical or not is_scalar(typed):
            return False
        return func in ("min", "max", "first", "last") or (
            func == "sum" and self.logical[typed].kind == "duration")

    def _grouped_moment(
        self,
        func: str,
        arg: Node,
        filtered: Callable[[Node], Node],
        keys: KeySet,
        ddof: int,
        result: DType,
    ) -> Node:
        """std/var per group, exactly two-pass: the group's mean, then squared deviations.

        ``var = sum((x - mean)**2) / (count - ddof)``, null where ``count <= ddof``
        (polars' rule), every step in float64; the group mean is gathered back to the
        rows by the second pass, so these are two grouped reduction passes. A group of
        one value repeated has a variance of exactly 0 (NaN stays NaN), as polars'
        online (Welford) variance gives it; the mean of ``0.1`` three times is not
        ``0.1``, and its deviations would not be 0.
        """
        f64 = DType.FLOAT64
        x = self._cast(arg, f64)
        count = self._record(GroupAgg("count", filtered(x), keys), DType.UINT32)
        mean = self._record(GroupAgg("mean", filtered(x), keys), f64)
        dev = self._record(Binary("sub", x, mean), f64)
        square = self._record(Binary("mul", dev, dev), f64)
        total = self._record(GroupAgg("sum", filtered(square), keys), f64)
        n = self._cast(count, f64)
        dof = self._typed_literal(float(ddof), f64)
        var = self._record(Binary("truediv", total, self._record(Binary("sub", n, dof), f64)),
                           f64)  # fmt: skip
        lo = self._record(GroupAgg("min", filtered(x), keys), f64)
        hi = self._record(GroupAgg("max", filtered(x), keys), f64)
        # NaN among the values stays NaN; a mean that overflowed (1e308 twice) does not
        constant = self._record(Binary("eq", lo, hi), DType.BOOL)
        nan = self._record(Unary("is_nan", var), DType.BOOL)
        zero = self._record(When(nan, var, self._typed_literal(0.0, f64)), f64)
        var = self._record(When(constant, zero, var), f64)
        enough = self._record(Binary("gt", n, dof), DType.BOOL)
        value = self._record(When(enough, var, self._typed_literal(None, f64)), f64)
        if func == "std":
            value = self._record(Unary("sqrt", value), f64)
        return self._cast(value, result)

    def _moments(self, node: GroupAgg, arg: Node,
                 reduce: Callable[[str, Node, DType], Node]) -> Node:  # fmt: skip
        """``skew``/``kurtosis``: polars' finalization of central moments made in two passes.

        ``reduce(func, value, result)`` reduces per group (or over the whole column).
        The mean first, then ``m_k = sum(d ** k) / n`` of the deviations ``d`` (``d * d``,
        ``d * d2``, ``d2 * d2`` as polars multiplies them), every step in float64; then
        polars' ``SkewState``/``KurtosisState.finalize`` step by step: NaN where
        ``m2 <= (eps * mean) ** 2``, null without values (or, with ``bias=False``, with
        at most 2 for skew and 3 for kurtosis). polars sums its moments in chunks it
        merges (Welford-style), colbridge in two passes: the last bits may differ.
        """
        t = self.types[arg]
        if arg in self.logical or not (t.is_float or t.is_integer or t.is_bool):
            shown = self.logical.get(arg) or t
            msg = (f"`{node!r}` needs numbers; column type {shown} has no {node.func}: cast "
                   "it to a number first, e.g. `.cast(pl.Float64)`")  # fmt: skip
            raise UnsupportedTypeError(msg)
        f64 = DType.FLOAT64

        def rec(op: str, left: Node, right: Node) -> Node:
            return self._record(Binary(op, left, right), f64)

        def lit(value: float) -> Node:
            return self._typed_literal(value, f64)

        x = self._cast(arg, f64)
        n = self._cast(reduce("count", x, DType.UINT32), f64)
        mean = reduce("mean", x, f64)
        d = rec("sub", x, mean)
        d2 = rec("mul", d, d)
        m2 = rec("truediv", reduce("sum", d2, f64), n)
        scaled = rec("mul", lit(float(np.finfo(np.float64).eps)), mean)
        flat = self._record(Binary("le", m2, rec("mul", scaled, scaled)), DType.BOOL)
        if node.func == "skew":
            (bias,) = node.options
            m3 = rec("truediv", reduce("sum", rec("mul", d, d2), f64), n)
            est = rec("truediv", m3, rec("pow", m2, lit(1.5)))
            value = self._record(When(flat, lit(math.nan), est), f64)
            least = 0.0 if bias else 2.0
            if not bias:
                root = self._record(Unary("sqrt", rec("mul", n, rec("sub", n, lit(1.0)))), f64)
                value = rec("mul", rec("truediv", root, rec("sub", n, lit(2.0))), value)
        else:
            fisher, bias = node.options
            m4 = rec("truediv", reduce("sum", rec("mul", d2, d2), f64), n)
            value = self._record(When(flat, lit(math.nan), rec("truediv", m4, rec("mul", m2, m2))),
                                 f64)  # fmt: skip
            least = 0.0 if bias else 3.0
            if not bias:
                nm1 = rec("sub", n, lit(1.0))
                nm1_nm2 = rec("truediv", nm1, rec("sub", n, lit(2.0)))
                nm3 = rec("sub", n, lit(3.0))
                np1_nm3 = rec("truediv", rec("add", n, lit(1.0)), nm3)
                nm1_nm3 = rec("truediv", nm1, nm3)
                inner = rec("sub", rec("mul", np1_nm3, value), rec("mul", lit(3.0), nm1_nm3))
                value = rec("add", rec("mul", nm1_nm2, inner), lit(3.0))
            if fisher:
                value = rec("sub", value, lit(3.0))
        enough = self._record(Binary("gt", n, lit(least)), DType.BOOL)
        return self._record(When(enough, value, self._typed_literal(None, f64)), f64)

    def _scalar_agg(self, func: str, ddof: int, arg: Node, result: DType,
                    options: tuple[Any, ...] = ()) -> Node:  # fmt: skip
        """``func`` of one value (a literal, a reduction), as polars reduces it."""
        if func in BITWISE_AGGS and self.types[arg].is_float:
            raise _bad_type(Agg(func, arg), self.types[arg], _BITS_WANTED)
        if func == "n_unique":  # a null is a value of its own
            return self._typed_literal(1, DType.UINT32)
        present = self._record(Unary("is_not_null", arg), DType.BOOL)
        if func in ("arg_min", "arg_max"):
            return self._record(When(present, self._typed_literal(0, DType.UINT32),
                                     self._typed_literal(None, DType.UINT32)), DType.UINT32)
        if func in ("any", "all"):
            value = arg if self.types[arg].is_bool else self._record(
                Cast(arg, DType.BOOL, strict=True), DType.BOOL)  # fmt: skip
            ignore_nulls = not options or bool(options[0])
            if not ignore_nulls:  # Kleene: a null alone decides nothing
                return value
            return self._record(Coalesce((value, self._typed_literal(func == "all", DType.BOOL))),
                                DType.BOOL)  # fmt: skip
        if func in ("count", "null_count"):
            test = self._record(Unary("is_not_null" if func == "count" else "is_null", arg),
                                DType.BOOL)  # fmt: skip
            return self._cast(test, result)
        if func in ("std", "var"):
            if ddof >= 1:
                return self._typed_literal(None, result)
            zero: Node = self._typed_literal(0.0, result)
            if self.types[arg].is_float:
                # (x - mean)**2 of one value: NaN when it is NaN or infinite, as polars
                finite = self._record(Unary("is_finite", arg), DType.BOOL)
                zero = self._record(When(finite, zero, self._typed_literal(math.nan, result)),
                                    result)  # fmt: skip
            missing = self._typed_literal(None, result)
            return self._record(When(present, zero, missing), result)
        value = self._cast(arg, result)
        if func in ("sum", "product"):  # the sum of nothing is 0, its product 1
            empty = self._typed_literal(0 if func == "sum" else 1, result)
            return self._record(Coalesce((value, empty)), result)
        return value

    # -- for the logical-type rules (colbridge.plan.logical_typing) ---------------------
    def _numeric_only(self, node: Node, arg: Node) -> None:
        logical = self.logical.get(arg)
        if logical is not None:
            msg = f"`{node!r}` is not defined for {logical}; it needs a numeric column"
            raise SchemaError(msg)

    def typed(self, node: Node) -> Node:
        """Type an expression that stands on its own (a Python number materialised)."""
        return self._typed(node)

    def merge_number_type(self, st: DType, number: DType, where: Node) -> tuple[DType, bool]:
        """The common type of ``st`` and a Python number's type next to it (see polars)."""
        return self._merge_number_type(st, number, where)

    def cast_branch(self, node: Node, dtype: DType, strict_uint64: bool) -> Node:
        """``node`` converted to a common type (strictly from uint64 where flagged)."""
        return self._cast_branch(node, dtype, strict_uint64)

    def mark_logical(self, node: Node, logical: Logical, spec: object = None) -> Node:
        """``node`` (typed) read as ``logical``."""
        return self._lt.mark(node, logical, spec)  # type: ignore[arg-type]

    def check_child(self, node: Node) -> Node:
        """Type a child expression (a Python number stays dynamic)."""
        return self._check(node)

    def is_dynamic(self, node: Node) -> bool:
        """True for a Python number (or an expression of them) not typed yet."""
        return self._is_dynamic(node)

    def materialize(self, node: Node) -> Node:
        """A dynamic number or expression typed as it stands alone."""
        return self._materialize(node)

    def type_dynamic_against(self, node: Node, other: DType, where: Node) -> Node:
        """A dynamic number typed next to an operand of type ``other``."""
        return self._type_dynamic_against(node, other, where)

    def null_of(self, dtype: DType) -> Node:
        """A null literal of ``dtype``."""
        return self._typed_literal(None, dtype)

    def record_bool(self, node: Node) -> Node:
        """Record ``node`` as boolean."""
        return self._record(node, DType.BOOL)

    def cast_plain(self, node: Node, dtype: DType, strict: bool) -> Node:
        """``node`` (a number, or a logical value read as one) converted to ``dtype``."""
        src = self.types[node]
        if src == dtype:
            return node
        return self._record(Cast(node, dtype, strict), dtype)


def _tree(nodes: list[Node], combine: Callable[[Node, Node], Node]) -> Node:
    """Combine ``nodes`` pairwise as polars' parallel reduce does: halves, recursively."""
    if len(nodes) == 1:
        return nodes[0]
    mid = len(nodes) // 2
    return combine(_tree(nodes[:mid], combine), _tree(nodes[mid:], combine))


def _categorical_takes_text(node: Node, logical: Logical, values: tuple[Any, ...]) -> None:
    """Refuse a value other than a string (or None) for a categorical, as polars does.

    polars casts the values to the column's type: a string column takes an integer
    as its text, a categorical nothing but strings.
    """
    if logical.kind != "categorical":
        return
    for v in values:
        if v is not None and not isinstance(v, str):
            msg = (f"`{node!r}`: casting {type(v).__name__} value {v!r} to Categorical is not "
                   "supported (as in polars); give strings, or cast the column to "
                   "`pl.String` first")  # fmt: skip
            raise InvalidOperationError(msg)


def _ln(value: float) -> float:
    """The natural logarithm as IEEE gives it: -inf at 0, NaN below."""
    if value != value or value < 0:
        return math.nan
    if value == 0:
        return -math.inf
    return math.log(value)


def _is_null_type(arrow_type: object) -> bool:
    import pyarrow as pa

    return isinstance(arrow_type, pa.DataType) and pa.types.is_null(arrow_type)


def _quote(node: Node) -> str:
    return f"`{node!r}`"


def _is_null_literal_typed(node: Node) -> bool:
    return isinstance(node, Literal) and node.value is None


def powi(base: float, n: int) -> float:
    """``base ** n`` as Rust's ``f64::powi`` computes it (LLVM's ``__powidf2``).

    Square and multiply from the lowest bit, the reciprocal for a negative ``n``;
    inf on overflow, 0 past it (``1 / inf``).
    """
    result, negative = 1.0, n < 0
    while True:
        if n & 1:
            result *= base
        n = n // 2 if n >= 0 else -(-n // 2)  # C's division: toward zero
        if n == 0:
            break
        base *= base
    if not negative:
        return result
    return 1.0 / result if result != 0.0 else math.inf


def _powi10(n: int) -> float:
    return powi(10.0, n)


#: `round_sig_figs`' tables are indexed by floor(log10(|x|)) plus this: the smallest
#: float64's is -324 (entry 0)
SIG_FIGS_LOWEST = 324
#: up to the largest's, 308: one entry each
SIG_FIGS_ENTRIES = 324 + 308 + 1
#: digits from which no float64 changes (polars' result is the value itself)
SIG_FIGS_UNCHANGED = 700


@functools.lru_cache(maxsize=64)
def sig_figs_table(digits: int, kind: str) -> tuple[float, ...]:
    """One factor of `round_sig_figs`, by floor(log10(|x|)) from -324 on.

    ``kind`` is ``pow5`` (``5**e`` as ``f64::powi`` gives it), ``scale`` (``2**e``)
    or ``unscale`` (``2**-e``), where ``e = digits - 1 - floor(log10(|x|))``. Kept
    (a few thousand multiplications each): every compute of the digits reads them.
    """
    out = []
    for k in range(SIG_FIGS_ENTRIES):
        e = digits - 1 - (k - SIG_FIGS_LOWEST)
        if kind == "pow5":
            out.append(powi(5.0, e))
        else:
            out.append(math.ldexp(1.0, e if kind == "scale" else -e))
    return tuple(out)


_CONSTANT_TESTS: dict[str, Callable[[float], bool]] = {
    "is_nan": math.isnan, "is_not_nan": lambda v: not math.isnan(v),
    "is_finite": math.isfinite, "is_infinite": math.isinf,
}  # fmt: skip


def _kleene(op: str, a: object, b: object) -> bool | None:
    """``a <op> b`` of two booleans or nulls, with Kleene's rules (``and``, ``or``, ``xor``)."""
    if op == "xor":
        return None if a is None or b is None else a != b
    decisive = op == "or"  # true decides `or`, false decides `and`
    if decisive in (a, b):
        return decisive
    return None if None in (a, b) else not decisive


def is_null_literal(node: Node) -> bool:
    """True for a null without a type: a bare ``lit(None)`` or a null-typed column's value."""
    return isinstance(node, Literal) and node.dtype is None and node.value is None


def is_host_reduction(node: GroupAgg, types: Mapping[Node, DType]) -> bool:
    """True for a grouped reduction computed from the groups themselves, not by a kernel.

    ``len``, ``first``, ``last``, ``n_unique``, ``arg_min`` and ``arg_max`` come from
    row positions and factorizations, ``median`` and ``quantile`` from the values sorted per group,
    ``any`` and ``all`` from counts of true, false and null values, ``product`` by a
    compiled fold in row order;
    ``count``/``null_count`` of a column no kernel reads (strings) from its validity,
    and over the whole column always: another expression may have typed the column (a
    date's ``min`` beside its ``count``), but there are no groups for a kernel to count.
    """
    if node.func in GROUPED_ONLY_FUNCS or node.func == "len":
        return True
    if node.func == "each":
        return False
    arg = node.arg.arg if isinstance(node.arg, Filtered) else node.arg
    return node.func in ("count", "null_count") and (arg not in types or not node.keys.exprs)


def _check_key_type(name: str, info: ColumnType) -> None:
    import pyarrow as pa

    arrow_type = info.arrow_type
    if not isinstance(arrow_type, pa.DataType):
        return
    t = arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if (
        pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
        or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
        or pa.types.is_large_binary(t) or pa.types.is_temporal(t) or pa.types.is_null(t)
        or pa.types.is_string_view(t) or pa.types.is_binary_view(t) or pa.types.is_decimal(t)
    ):  # fmt: skip
        return
    msg = (
        f"column `{name}` has type {arrow_type}, which cannot be a grouping key; "
        "group by numbers, booleans, strings, categoricals, dates or times"
    )
    raise UnsupportedTypeError(msg)


def _refuse_joined_strings_inside(output: Node) -> None:
    """Refuse ``str.join`` inside an expression (its strings are made on the host)."""
    root = output
    while isinstance(root, (Alias, Over)):
        root = root.arg
    for n in walk(output):
        if isinstance(n, (Agg, GroupAgg)) and n.func == "str_join" and n is not root:
            raise _str_join_refused(output)


def _str_join_refused(node: Node) -> UnsupportedOperationError:
    msg = (f"`{node!r}`: `str.join` is computed per group of `group_by(...).agg(...)` and "
           "of the whole column as an output of `select` (of one row), not in "
           "`with_columns` or `over`, nor inside an expression of a `select`; join in a "
           "`group_by` (a constant key for the whole column, `group_by(cb.lit(0))`)")  # fmt: skip
    return UnsupportedOperationError(msg)


def _unfiltered(node: Node) -> Node:
    """The values under ``node``'s filters (``x`` of ``x.filter(p).filter(q)``)."""
    while isinstance(node, Filtered):
        node = node.arg
    return node


def _scan_of_kept_rows(arg: Node) -> Node:
    """``x.filter(p).shift(1)`` in a reduction: the scan over the kept rows, then filtered.

    The rows ``p`` keeps and the others fall in different groups of a key ``p``, so
    the scan sees the kept rows in order as one sequence (per group of its own keys),
    and the reduction reads only them: ``x.shift(1).over(p).filter(p)``.
    """
    if isinstance(arg, Scan) and isinstance(arg.arg, Filtered):
        kept = arg.arg
        if arg.func.endswith("_by") and arg.keys.order_by:
            # polars refuses it: the kept values and the whole `by` differ in length
            msg = (
                f"`{arg!r}`: an operation ordered by another column (`by`) over filtered "
                "values is refused (polars raises: its `by` keeps every row); filter the "
                "frame's rows first (`.filter(...)` before the step), then apply it"
            )
            raise InvalidOperationError(msg)
        keys = KeySet((*arg.keys.exprs, kept.predicate)).ordered_like(arg.keys)
        return Filtered(Scan(arg.func, kept.arg, arg.options, keys), kept.predicate)
    return arg


# Reductions whose value over copies of one value is not that of the value alone.
_COUNTING_AGGS = frozenset({"sum", "product", "count", "null_count", "std", "var", "len",
                            "bitwise_xor"})  # fmt: skip
# reductions of one value that a whole column's copies of it answer too, but for no rows
_ONE_VALUE_AGGS = frozenset({"first", "last", "n_unique", "median", "quantile", "any", "all",
                             "arg_min", "arg_max", "bitwise_and", "bitwise_or"})  # fmt: skip


def is_one_value(node: Node) -> bool:
    """True when a reduction of ``node`` reduces one value: `is_scalar`, not ``cb.len()``'s rows.

    ``lit(1).count()`` is 1 over any rows (polars), so a piece's value is the whole's.
    """
    return node != ROWS and is_scalar(node)


def is_scalar(node: Node) -> bool:
    """True when ``node`` has one value per frame: no column outside a reduction."""
    if isinstance(node, Agg):
        return True
    if isinstance(node, GroupAgg):
        return not node.keys.exprs
    if isinstance(node, (Column, Scan, EveryRow)):
        return False
    return all(is_scalar(c) for c in children(node))


def _convert_checked(value: bool | int | float, dtype: DType) -> int | None:
    """``value`` as an integer of ``dtype`` (floats truncated), or None if it does not fit."""
    if isinstance(value, float):
        if value != value or value in (math.inf, -math.inf):
            return None
        value = int(value)  # toward zero, as the kernels truncate
    lo, hi = int_range(dtype)
    return int(value) if lo <= value <= hi else None


def _convert_scalar(value: bool | int | float, dtype: DType) -> bool | int | float:
    if dtype.is_bool:
        return bool(value)
    if dtype.is_float:
        return float(value)
    if isinstance(value, float):
        return int(value)
    lo, hi = int_range(dtype)
    value = int(value)
    if not lo <= value <= hi:
        msg = f"literal {value!r} does not fit in {dtype}"
        raise SchemaError(msg)
    return value


#: what the bitwise functions need, for their errors
_BITS_WANTED = "an integer or boolean column (cast it first, e.g. `.cast(pl.Int64)`)"


def _bad_type(node: Node, dtype: DType | Logical, wanted: str) -> SchemaError:
    return SchemaError(f"`{node!r}` is not defined for {dtype}; it needs {wanted}")


def _float16_error(where: str) -> UnsupportedTypeError:
    return UnsupportedTypeError(
        f"{where}: float16 is not computed by colbridge kernels; "
        "cast to float32 in the source frame first"
    )


#: the most values `replace` compares per row (a string column maps any number)
_MAX_REPLACED = 64
#: Python values typed with the column they stand next to (`Constant`)
_CONSTANT_TYPES = (_dt.date, _dt.time, _dt.timedelta, str)


def _as_text(node: Node, value: Any) -> Any:
    """A ``replace`` value for a string column, as polars casts it to a string.

    Strings and None stay; integers and booleans become text (``1`` is ``"1"``,
    ``True`` is ``"true"``); other values are refused.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    msg = (f"`{node!r}`: a string column's `replace` takes strings (or integers), got "
           f"{value!r}")  # fmt: skip
    raise SchemaError(msg)
