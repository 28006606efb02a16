"""String expressions: ``"z = sqrt(a * b + c)"`` → IR, through Python's ``ast`` and a whitelist.

Nothing in the string is ever executed: the text is parsed into a syntax tree
and only whitelisted node types and names are translated; everything else is
rejected with an error that points at the offending part.
"""

from __future__ import annotations

import ast
import datetime as _dt
import math
from collections.abc import Callable
from typing import Any

from colbridge.errors import ExpressionSyntaxError
from colbridge.expr import api
from colbridge.expr.api import Expr
from colbridge.expr.nodes import Node

__all__ = ["MAX_DEPTH", "MAX_LENGTH", "parse_assignments", "parse_expr"]

MAX_LENGTH = 10_000
MAX_DEPTH = 64

_BINOPS: dict[type[ast.operator], Callable[[Expr, Expr], Expr]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
}
_CMPOPS: dict[type[ast.cmpop], Callable[[Expr, Expr], Expr]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}
_CONSTANTS: dict[str, bool | float | None] = {
    "True": True,
    "False": False,
    "None": None,
    "nan": math.nan,
    "inf": math.inf,
    "pi": math.pi,
    "e": math.e,
}
_ONE_ARG = {
    name: (lambda n: lambda x: getattr(x, n)())(name)
    for name in (
        "abs", "sqrt", "cbrt", "exp", "log", "log10", "log1p", "sin", "cos", "tan", "arcsin",
        "arccos", "arctan", "sinh", "cosh", "tanh", "floor", "ceil", "sign", "is_null",
        "is_not_null", "is_nan", "is_not_nan", "is_finite", "is_infinite", "sum", "mean", "min",
        "max", "std", "var", "count", "null_count",
    )
}  # fmt: skip
#: ``hour(t)`` is ``t.dt.hour()``; ``len_chars(s)`` is ``s.str.len_chars()``.
_DT_FIELDS = (
    "year", "iso_year", "quarter", "month", "week", "weekday", "day", "ordinal_day", "hour",
    "minute", "second", "millisecond", "microsecond", "nanosecond", "is_leap_year",
    "days_in_month", "century", "millennium", "month_start", "month_end", "total_seconds",
    "total_minutes", "total_hours", "total_days", "total_milliseconds",
)  # fmt: skip
_STR_FUNCS = ("len_chars", "len_bytes", "to_integer", "to_lowercase", "to_uppercase")
_FUNCS: dict[str, tuple[int, int, Callable[..., Expr]]] = {
    # name: (min args, max args, builder)
    **{name: (1, 1, fn) for name, fn in _ONE_ARG.items()},
    "where": (3, 3, lambda c, a, b: api.when(c).then(a).otherwise(b)),
    "fill_null": (2, 2, lambda x, v: x.fill_null(v)),
    "fill_nan": (2, 2, lambda x, v: x.fill_nan(v)),
    "coalesce": (1, 64, lambda *xs: api.coalesce(*xs)),
    "clip": (
        3, 3, lambda x, lo, hi: x.clip(_scalar(lo, "`clip` bounds"), _scalar(hi, "`clip` bounds"))
    ),
    "round": (1, 2, lambda x, d=None: x.round(0 if d is None else _scalar(d, "`round` decimals"))),
    **{name: (1, 1, (lambda n: lambda x: getattr(x.dt, n)())(name)) for name in _DT_FIELDS},
    **{name: (1, 1, (lambda n: lambda x: getattr(x.str, n)())(name)) for name in _STR_FUNCS},
}
_STRING_FUNCS = {"col", "cast", "datetime", "date", "starts_with", "ends_with", "contains"}

#: Methods of the method form ``t.dt.hour()``, ``s.str.starts_with('a')``: (min, max) args.
_METHODS: dict[str, dict[str, tuple[int, int]]] = {
    "dt": {**{f: (0, 0) for f in _DT_FIELDS}, "date": (0, 0), "time": (0, 0),
           "epoch": (0, 1), "timestamp": (0, 1), "truncate": (1, 1),
           "convert_time_zone": (1, 1), "cast_time_unit": (1, 1)},
    "str": {**{f: (0, 0) for f in _STR_FUNCS}, "starts_with": (1, 1), "ends_with": (1, 1),
            "to_datetime": (0, 1), "to_date": (0, 1)},
}  # fmt: skip


def _scalar(e: Expr, what: str) -> Any:
    from colbridge.expr.nodes import Literal

    if isinstance(e.node, Literal):
        return e.node.value
    msg = f"{what} must be numbers"
    raise ExpressionSyntaxError(msg)


class _Translator:
    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, node: ast.AST, what: str) -> ExpressionSyntaxError:
        col = getattr(node, "col_offset", 0)
        end = getattr(node, "end_col_offset", col + 1) or col + 1
        line_no = getattr(node, "lineno", 1)
        line = self.text.splitlines()[line_no - 1] if self.text.splitlines() else self.text
        caret = " " * col + "^" * max(1, end - col)
        return ExpressionSyntaxError(f"{what}\n  {line}\n  {caret}")

    def expr(self, node: ast.AST, depth: int = 0) -> Expr:
        if depth > MAX_DEPTH:
            raise self.fail(node, f"expression nested deeper than {MAX_DEPTH} levels")
        d = depth + 1
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise self.fail(node, f"operator `{type(node.op).__name__}` is not allowed")
            return op(self.expr(node.left, d), self.expr(node.right, d))
        if isinstance(node, ast.UnaryOp):
            operand = self.expr(node.operand, d)
            if isinstance(node.op, ast.USub):
                from colbridge.expr.nodes import Literal

                inner = operand.node
                if (
                    isinstance(inner, Literal)
                    and isinstance(inner.value, (int, float))
                    and not isinstance(inner.value, bool)
                    and inner.dtype is None
                ):
                    # "-1" is the literal -1 (as in Python), not a negated int32
                    return api.lit(-inner.value)
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
            return ~operand  # Invert and Not
        if isinstance(node, ast.BoolOp):
            values = [self.expr(v, d) for v in node.values]
            out = values[0]
            for v in values[1:]:
                out = (out & v) if isinstance(node.op, ast.And) else (out | v)
            return out
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            result: Expr | None = None
            for cmp, left, right in zip(node.ops, parts, parts[1:], strict=False):
                if isinstance(cmp, (ast.In, ast.NotIn)):
                    term = self.membership(node, left, right, d, negate=isinstance(cmp, ast.NotIn))
                    result = term if result is None else result & term
                    continue
                fn = _CMPOPS.get(type(cmp))
                if fn is None:
                    raise self.fail(node, f"comparison `{type(cmp).__name__}` is not allowed")
                term = fn(self.expr(left, d), self.expr(right, d))
                result = term if result is None else result & term
            assert result is not None
            return result
        if isinstance(node, ast.Name):
            if node.id in _CONSTANTS:
                return api.lit(_CONSTANTS[node.id])
            if node.id.startswith("__"):
                raise self.fail(node, f"name `{node.id}` is not allowed")
            return api.col(node.id)
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or value is None:
                return api.lit(value)
            if isinstance(value, int):
                if not -(2**63) <= value < 2**64:
                    raise self.fail(node, "integer literal does not fit in 64 bits")
                return api.lit(value)
            if isinstance(value, float):
                return api.lit(value)
            if isinstance(value, str):
                return api.lit(value)  # a string; a column is a bare name or col("name")
            raise self.fail(node, f"{type(value).__name__} literals are not allowed")
        if isinstance(node, ast.IfExp):
            return api.when(self.expr(node.test, d)).then(self.expr(node.body, d)).otherwise(
                self.expr(node.orelse, d)
            )
        if isinstance(node, ast.Call):
            return self.call(node, d)
        if isinstance(node, ast.Attribute):
            raise self.fail(node, "attribute access is not allowed; call functions by name")
        raise self.fail(node, f"{type(node).__name__} is not allowed in an expression")

    def membership(self, node: ast.AST, left: ast.AST, right: ast.AST, depth: int, *,
                   negate: bool) -> Expr:  # fmt: skip
        """``x in ('a', 'b')``: `Expr.is_in` over a tuple or list of constants."""
        if not isinstance(right, (ast.Tuple, ast.List)):
            op = "In" if not negate else "NotIn"
            msg = (
                f"comparison `{op}` is not allowed with that right side: `in` takes a tuple "
                "or list of values, e.g. `x in ('a', 'b')`"
            )
            raise self.fail(right, msg)
        values = []
        for item in right.elts:
            value = self.expr(item, depth)
            from colbridge.expr.nodes import Constant, Literal

            if not isinstance(value.node, (Literal, Constant)):
                raise self.fail(item, "`in` takes constants only")
            values.append(value.node.value)
        out = self.expr(left, depth).is_in(values)
        return ~out if negate else out

    def method(self, node: ast.Call, depth: int) -> Expr:
        """``t.dt.hour()`` or ``s.str.starts_with('a')``: whitelisted namespace methods."""
        func = node.func
        assert isinstance(func, ast.Attribute)
        owner = func.value
        if not (isinstance(owner, ast.Attribute) and owner.attr in _METHODS):
            raise self.fail(func, "only plain function names can be called, and the methods "
                            "`x.dt.<field>()` and `x.str.<function>()`")  # fmt: skip
        allowed = _METHODS[owner.attr]
        spec = allowed.get(func.attr)
        if spec is None:
            raise self.fail(func, f"unknown method `{owner.attr}.{func.attr}`; allowed: "
                            f"{', '.join(sorted(allowed))}")  # fmt: skip
        lo, hi = spec
        if not lo <= len(node.args) <= hi:
            raise self.fail(node, f"`{owner.attr}.{func.attr}` takes {lo} to {hi} argument(s)")
        args = [_constant(a, self, f"`{func.attr}` arguments") for a in node.args]
        target = self.expr(owner.value, depth)
        return getattr(getattr(target, owner.attr), func.attr)(*args)  # type: ignore[no-any-return]

    def call(self, node: ast.Call, depth: int) -> Expr:
        if isinstance(node.func, ast.Attribute):
            if node.keywords:
                raise self.fail(node, "methods take positional arguments only")
            return self.method(node, depth)
        if not isinstance(node.func, ast.Name):
            raise self.fail(node.func, "only plain function names can be called")
        name = node.func.id
        if node.keywords:
            raise self.fail(node, f"`{name}` takes positional arguments only")
        if name in _STRING_FUNCS:
            return self.string_call(node, name, depth)
        spec = _FUNCS.get(name)
        if spec is None:
            allowed = ", ".join(sorted([*_FUNCS, *_STRING_FUNCS]))
            raise self.fail(node.func, f"unknown function `{name}`; allowed: {allowed}")
        lo, hi, build = spec
        if not lo <= len(node.args) <= hi:
            count = f"{lo}" if lo == hi else f"{lo} to {hi}"
            raise self.fail(node, f"`{name}` takes {count} argument(s), got {len(node.args)}")
        return build(*(self.expr(a, depth) for a in node.args))

    def string_call(self, node: ast.Call, name: str, depth: int) -> Expr:
        if name in ("datetime", "date"):
            if len(node.args) != 1 or not _is_str(node.args[0]):
                raise self.fail(node, f"`{name}` takes one ISO string: {name}('2013-06-01')")
            text = node.args[0].value  # type: ignore[attr-defined]
            try:
                value = (_dt.datetime if name == "datetime" else _dt.date).fromisoformat(text)
            except ValueError:
                raise self.fail(node.args[0], f"not an ISO {name}: {text!r}") from None
            return api.lit(value)
        if name in ("starts_with", "ends_with", "contains"):
            if len(node.args) != 2 or not _is_str(node.args[1]):
                raise self.fail(node, f"`{name}` takes a string expression and a string")
            arg = self.expr(node.args[0], depth)
            text = node.args[1].value  # type: ignore[attr-defined]
            if name == "contains":
                return arg.str.contains(text, literal=True)
            return getattr(arg.str, name)(text)  # type: ignore[no-any-return]
        if name == "col":
            if len(node.args) != 1 or not _is_str(node.args[0]):
                raise self.fail(node, '`col` takes one string: col("column name")')
            return api.col(node.args[0].value)  # type: ignore[attr-defined]
        if len(node.args) != 2 or not _is_str(node.args[1]):
            raise self.fail(node, '`cast` takes an expression and a type name: cast(x, "float32")')
        return self.expr(node.args[0], depth).cast(node.args[1].value)  # type: ignore[attr-defined]


def _constant(node: ast.AST, translator: _Translator, what: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool)):
        return node.value
    raise translator.fail(node, f"{what} must be constants")


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _parse(text: str, mode: str) -> ast.AST:
    if not isinstance(text, str):
        msg = f"expression must be a string, got {type(text).__name__}"
        raise ExpressionSyntaxError(msg)
    if len(text) > MAX_LENGTH:
        msg = f"expression is {len(text)} characters long; the limit is {MAX_LENGTH}"
        raise ExpressionSyntaxError(msg)
    try:
        return ast.parse(text.strip(), mode=mode)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        where = ""
        if isinstance(exc, SyntaxError) and exc.offset is not None:
            where = f"\n  {text.strip()}\n  {' ' * (exc.offset - 1)}^"
        msg = f"cannot parse expression {text!r}: {getattr(exc, 'msg', exc)}{where}"
        raise ExpressionSyntaxError(msg) from None


def parse_expr(text: str) -> Node:
    """Parse one expression, e.g. ``"sqrt(a * b + c)"``, into an IR node.

    Examples
    --------
    >>> parse_expr("sqrt(a * b) > 1")
    ((col("a") * col("b")).sqrt() > lit(1))
    """
    tree = _parse(text, "eval")
    assert isinstance(tree, ast.Expression)
    try:
        return _Translator(text.strip()).expr(tree.body).node
    except RecursionError:
        msg = f"expression nested too deeply: {text[:80]!r}..."
        raise ExpressionSyntaxError(msg) from None


def parse_assignments(text: str) -> list[tuple[str, Node]]:
    """Parse ``"name = expression"`` statements separated by ``;`` or newlines.

    Examples
    --------
    >>> parse_assignments("z = a * 2; w = z + 1")
    [('z', (col("a") * lit(2))), ('w', (col("z") + lit(1)))]
    """
    tree = _parse(text, "exec")
    assert isinstance(tree, ast.Module)
    translator = _Translator(text.strip())
    out: list[tuple[str, Node]] = []
    if not tree.body:
        msg = "no assignment found; write `name = expression`"
        raise ExpressionSyntaxError(msg)
    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            raise translator.fail(stmt, "expected `name = expression`")
        target = stmt.targets[0]
        if not isinstance(target, ast.Name) or target.id.startswith("__"):
            raise translator.fail(target, "the left side must be a plain column name")
        try:
            out.append((target.id, translator.expr(stmt.value).node))
        except RecursionError:
            msg = "expression nested too deeply"
            raise ExpressionSyntaxError(msg) from None
    return out
