"""String expressions: ``"z = sqrt(a * b + c)"`` → IR, through Python's ``ast`` and a whitelist.

Nothing in the string is ever executed: the text is parsed into a syntax tree
and only whitelisted node types, names and functions are translated;
everything else is rejected with an error that points at the offending part.

Functions are called by name (``sqrt(x)``, ``cast(x, "int8", strict=False)``)
or as methods of an expression (``x.sqrt()``, ``x.cast("int8", strict=False)``),
with the parameter names of the Python API (polars' names) as keywords. A bare
name is a column, except ``e``, ``pi``, ``nan`` and ``inf``, which are the
constants only where the frame has no column of that name. Quoted text is a
string (``carrier == 'UA'``); ``date('2013-06-01')`` and ``datetime(...)`` are
dates and datetimes; ``x in ('a', 'b')`` is ``is_in``; temporal and string
functions are called by name (``hour(t)``, ``starts_with(s, 'J')``) or through
their namespace (``t.dt.hour()``, ``s.str.starts_with('J')``).
"""

from __future__ import annotations

import ast
import datetime as _dt
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from colbridge.errors import ColbridgeError, ExpressionSyntaxError
from colbridge.expr import api
from colbridge.expr.api import Expr
from colbridge.expr.nodes import Column, Constant, Literal, Node
from colbridge.types.durations import DURATION_PARTS

__all__ = ["FUNCTIONS", "MAX_DEPTH", "MAX_LENGTH", "parse_assignments", "parse_expr"]

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
_KEYWORD_CONSTANTS: dict[str, bool | None] = {"True": True, "False": False, "None": None}
# Names that are constants unless the frame has a column of that name.
_NAMED_NUMBERS: dict[str, float] = {"nan": math.nan, "inf": math.inf, "pi": math.pi, "e": math.e}

_REQUIRED = object()


@dataclass(frozen=True)
class _Param:
    """One parameter: its name and what it takes.

    Kinds: ``expr`` (an expression), ``exprs`` (one expression or a list of them),
    ``str`` (a string literal), ``bool``, ``int``,
    ``list`` (a list of numbers, booleans, strings or dates), ``values`` (one of those,
    or a list of them), ``value`` (a number, bool or None) and ``fill`` (a number,
    bool or None, else an expression: ``shift``'s ``fill_value=x.mean()``).
    """

    name: str
    kind: str = "expr"
    default: Any = _REQUIRED
    keyword: bool = True


@dataclass(frozen=True)
class _Function:
    """A function of the string language: its parameters and how to build it."""

    params: tuple[_Param, ...]
    build: Callable[..., Expr]
    varargs: int | None = None  # this parameter takes the remaining positional arguments
    method: bool = True  # also callable as `x.name(...)`, `x` being the first argument
    example: str = ""


def _x() -> _Param:
    return _Param("x", keyword=False)


def _one(name: str) -> _Function:
    return _Function((_x(),), lambda x: getattr(x, name)(), example=f"{name}(x)")


_UNARY = (
    "abs", "sqrt", "cbrt", "exp", "log10", "log1p", "sin", "cos", "tan", "cot", "arcsin",
    "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "degrees",
    "radians", "floor", "ceil", "sign", "erf", "erfc", "bitwise_count_ones",
    "bitwise_count_zeros", "bitwise_leading_ones", "bitwise_leading_zeros",
    "bitwise_trailing_ones", "bitwise_trailing_zeros", "bitwise_and", "bitwise_or",
    "bitwise_xor", "peak_max", "peak_min",
    "is_null", "is_not_null", "is_nan", "is_not_nan", "is_finite", "is_infinite", "sum", "mean",
    "min", "max", "count", "null_count", "n_unique", "approx_n_unique",
    "median", "neg", "not_",
    "product", "arg_min", "arg_max", "has_nulls", "is_empty", "nan_max", "nan_min",
    "drop_nulls", "drop_nans", "unique", "mode", "arg_true", "arg_unique", "unique_counts",
    "is_duplicated", "is_unique", "is_first_distinct", "is_last_distinct", "rle_id",
)  # fmt: skip
_OPERATORS = (
    "add", "sub", "mul", "truediv", "floordiv", "truncdiv", "mod", "pow", "eq", "ne", "lt",
    "le", "gt", "ge", "xor", "eq_missing", "ne_missing",
)  # fmt: skip


def _names_a_number(node: ast.AST) -> bool:
    """True for ``nan``, ``inf``, ``pi``, ``e`` (signed or not) as written."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Name) and node.id in _NAMED_NUMBERS


def _key_column(key: Any) -> Any:
    """A key of ``over``: a string literal as the column it names, anything else as is."""
    node = key.node if isinstance(key, Expr) else None
    if isinstance(node, Constant) and isinstance(node.value, str):
        return api.col(node.value)
    return key


def _varargs(name: str, build: Callable[..., Expr], *extra: _Param) -> _Function:
    params = (_Param("exprs", keyword=False), *extra)
    return _Function(params, build, varargs=0, method=False, example=f"{name}(a, b, c)")


#: Every function of the string language, by name.
FUNCTIONS: dict[str, _Function] = {
    **{name: _one(name) for name in _UNARY},
    **{
        name: _Function(
            (_x(), _Param("other")), (lambda n: lambda x, o: getattr(x, n)(o))(name),
            example=f"{name}(a, b)",
        )
        for name in _OPERATORS
    },
    "log": _Function((_x(), _Param("base", default=math.e)), lambda x, base: x.log(base),
                     example="log(x, 2)"),
    "std": _Function((_x(), _Param("ddof", "int", 1)), lambda x, ddof: x.std(ddof),
                     example="std(x, ddof=0)"),
    "var": _Function((_x(), _Param("ddof", "int", 1)), lambda x, ddof: x.var(ddof),
                     example="var(x, ddof=0)"),
    **{name: _Function((_x(), _Param("ignore_nulls", "bool", True)),
                       (lambda f: lambda x, ignore: getattr(x, f)(ignore_nulls=ignore))(name),
                       example=f"{name}(x > 0)")
       for name in ("any", "all")},
    **{name: _Function((_x(), _Param("ignore_nulls", "bool", False)),
                       (lambda f: lambda x, ignore: getattr(x, f)(ignore_nulls=ignore))(name),
                       example=f"{name}(x, ignore_nulls=True)")
       for name in ("first", "last")},
    "skew": _Function((_x(), _Param("bias", "bool", True)), lambda x, bias: x.skew(bias=bias),
                      example="skew(x, bias=False)"),
    "kurtosis": _Function(
        (_x(), _Param("fisher", "bool", True), _Param("bias", "bool", True)),
        lambda x, fisher, bias: x.kurtosis(fisher=fisher, bias=bias),
        example="kurtosis(x, fisher=False)",
    ),
    "quantile": _Function(
        (_x(), _Param("quantile", "value"), _Param("interpolation", "str", "nearest")),
        lambda x, quantile, interpolation: x.quantile(quantile, interpolation),
        example='quantile(x, 0.25, "linear")',
    ),
    "round": _Function(
        (_x(), _Param("decimals", "int", 0), _Param("mode", "str", "half_to_even")),
        lambda x, decimals, mode: x.round(decimals, mode), example="round(x, 2)",
    ),
    "truncate": _Function((_x(), _Param("decimals", "int", 0)), lambda x, d: x.truncate(d),
                          example="truncate(x, 2)"),
    "round_sig_figs": _Function((_x(), _Param("digits", "int")),
                                lambda x, d: x.round_sig_figs(d), example="round_sig_figs(x, 3)"),
    "cast": _Function(
        (_x(), _Param("dtype", "str"), _Param("strict", "bool", True)),
        lambda x, dtype, strict: x.cast(dtype, strict=strict),
        example='cast(x, "int8", strict=False)',
    ),
    "dot": _Function((_x(), _Param("other")), lambda x, other: x.dot(other),
                     example="dot(x, y)"),
    "is_close": _Function(
        (_x(), _Param("other"), _Param("abs_tol", "value", 0.0),
         _Param("rel_tol", "value", 1e-09), _Param("nans_equal", "bool", False)),
        lambda x, other, abs_tol, rel_tol, nans: x.is_close(
            other, abs_tol=abs_tol, rel_tol=rel_tol, nans_equal=nans),
        example="is_close(x, y, abs_tol=0.1)",
    ),
    "clip": _Function(
        (_x(), _Param("lower_bound", default=None), _Param("upper_bound", default=None)),
        lambda x, lo, hi: x.clip(lo, hi), example="clip(x, 0, 1)",
    ),
    "fill_null": _Function(
        (_x(), _Param("value", default=None), _Param("strategy", "str", None),
         _Param("limit", "value", None)),
        lambda x, v, strategy, limit: x.fill_null(v, strategy, limit),
        example="fill_null(x, strategy='forward')",
    ),
    "forward_fill": _Function((_x(), _Param("limit", "value", None)),
                              lambda x, limit: x.forward_fill(limit),
                              example="forward_fill(x, limit=2)"),
    "backward_fill": _Function((_x(), _Param("limit", "value", None)),
                               lambda x, limit: x.backward_fill(limit),
                               example="backward_fill(x, limit=2)"),
    # ordered operations (rows in frame order; per group with `over`)
    "shift": _Function((_x(), _Param("n", "int", 1), _Param("fill_value", "fill", None)),
                       lambda x, n, fill: x.shift(n, fill_value=fill), example="shift(x, 1)"),
    "diff": _Function((_x(), _Param("n", "int", 1)), lambda x, n: x.diff(n),
                      example="diff(x, 1)"),
    "pct_change": _Function((_x(), _Param("n", "int", 1)), lambda x, n: x.pct_change(n),
                            example="pct_change(x, 1)"),
    **{name: _Function((_x(), _Param("reverse", "bool", False)),
                       (lambda f: lambda x, reverse: getattr(x, f)(reverse=reverse))(name),
                       example=f"{name}(x)")
       for name in ("cum_sum", "cum_prod", "cum_min", "cum_max", "cum_count")},
    # polars' order: the window, then its weights (min_samples, center, ddof by name there)
    **{name: _Function(
        (_x(), _Param("window_size", "int"), _Param("weights", "list", None),
         _Param("min_samples", "value", None), _Param("center", "bool", False),
         *((_Param("ddof", "int", 1),) if name in ("rolling_var", "rolling_std") else ())),
        (lambda f: lambda x, w, weights, m, c, *ddof: getattr(x, f)(
            w, weights, min_samples=m, center=c, **({"ddof": ddof[0]} if ddof else {})))(name),
        example=f"{name}(x, 20)")
       for name in ("rolling_sum", "rolling_mean", "rolling_min", "rolling_max", "rolling_var",
                    "rolling_std")},
    "rolling_quantile": _Function(
        (_x(), _Param("quantile", "value"), _Param("interpolation", "str", "nearest"),
         _Param("window_size", "int", 2), _Param("min_samples", "value", None),
         _Param("center", "bool", False)),
        lambda x, q, how, w, m, c: x.rolling_quantile(q, how, w, min_samples=m, center=c),
        example='rolling_quantile(x, 0.9, "linear", 20)',
    ),
    "rolling_skew": _Function(
        (_x(), _Param("window_size", "int"), _Param("bias", "bool", True),
         _Param("min_samples", "value", None), _Param("center", "bool", False)),
        lambda x, w, bias, m, c: x.rolling_skew(w, bias=bias, min_samples=m, center=c),
        example="rolling_skew(x, 20)",
    ),
    "rolling_rank": _Function(
        (_x(), _Param("window_size", "int"), _Param("method", "str", "average"),
         _Param("min_samples", "value", None), _Param("center", "bool", False)),
        lambda x, w, method, m, c: x.rolling_rank(w, method, min_samples=m, center=c),
        example='rolling_rank(x, 20, "min")',
    ),
    "rolling_kurtosis": _Function(
        (_x(), _Param("window_size", "int"), _Param("fisher", "bool", True),
         _Param("bias", "bool", True), _Param("min_samples", "value", None),
         _Param("center", "bool", False)),
        lambda x, w, fisher, bias, m, c: x.rolling_kurtosis(w, fisher=fisher, bias=bias,
                                                             min_samples=m, center=c),
        example="rolling_kurtosis(x, 20, fisher=False)",
    ),
    # polars' time-based windows: `by` (a column, or a string naming one) and a duration
    **{name: _Function(
        (_x(), _Param("by"), _Param("window_size", "str"),
         _Param("min_samples", "int", 0 if name == "rolling_sum_by" else 1),
         _Param("closed", "str", "right"),
         *((_Param("ddof", "int", 1),) if name in ("rolling_var_by", "rolling_std_by") else ())),
        (lambda f: lambda x, by, w, m, c, *ddof: getattr(x, f)(
            _key_column(by), w, min_samples=m, closed=c,
            **({"ddof": ddof[0]} if ddof else {})))(name),
        example=f'{name}(x, t, "2d")')
       for name in ("rolling_sum_by", "rolling_mean_by", "rolling_min_by", "rolling_max_by",
                    "rolling_var_by", "rolling_std_by", "rolling_median_by")},
    "rolling_quantile_by": _Function(
        (_x(), _Param("by"), _Param("window_size", "str"), _Param("quantile", "value"),
         _Param("interpolation", "str", "nearest"), _Param("min_samples", "int", 1),
         _Param("closed", "str", "right")),
        lambda x, by, w, q, how, m, c: x.rolling_quantile_by(
            _key_column(by), w, quantile=q, interpolation=how, min_samples=m, closed=c),
        example='rolling_quantile_by(x, t, "2d", quantile=0.9)',
    ),
    "rolling_median": _Function(
        (_x(), _Param("window_size", "int"), _Param("min_samples", "value", None),
         _Param("center", "bool", False)),
        lambda x, w, m, c: x.rolling_median(w, min_samples=m, center=c),
        example="rolling_median(x, 20)",
    ),
    "ewm_mean": _Function(
        (_x(), _Param("com", "value", None), _Param("span", "value", None),
         _Param("half_life", "value", None), _Param("alpha", "value", None),
         _Param("adjust", "bool", True), _Param("min_samples", "int", 1),
         _Param("ignore_nulls", "bool", False)),
        lambda x, com, span, half_life, alpha, adjust, min_samples, ignore_nulls: x.ewm_mean(
            com=com, span=span, half_life=half_life, alpha=alpha, adjust=adjust,
            min_samples=min_samples, ignore_nulls=ignore_nulls),
        example="ewm_mean(x, alpha=0.1)",
    ),
    **{name: _Function(
        (_x(), _Param("com", "value", None), _Param("span", "value", None),
         _Param("half_life", "value", None), _Param("alpha", "value", None),
         _Param("adjust", "bool", True), _Param("bias", "bool", False),
         _Param("min_samples", "int", 1), _Param("ignore_nulls", "bool", False)),
        (lambda f: lambda x, com, span, half_life, alpha, adjust, bias, min_samples,
         ignore_nulls: getattr(x, f)(com=com, span=span, half_life=half_life, alpha=alpha,
                                     adjust=adjust, bias=bias, min_samples=min_samples,
                                     ignore_nulls=ignore_nulls))(name),
        example=f"{name}(x, span=10, bias=True)")
       for name in ("ewm_var", "ewm_std")},
    "interpolate": _Function((_x(), _Param("method", "str", "linear")),
                             lambda x, method: x.interpolate(method),
                             example='interpolate(x, "nearest")'),
    **{name: _Function(
        (_x(), _Param("descending", "bool", False), _Param("nulls_last", "bool", False)),
        (lambda f: lambda x, descending, nulls_last: getattr(x, f)(
            descending=descending, nulls_last=nulls_last))(name),
        example=f"{name}(x, descending=True)")
       for name in ("sort", "arg_sort")},
    "reverse": _Function((_x(),), lambda x: x.reverse(), example="reverse(x)"),
    "duration": _Function(
        (*(_Param(name, "expr", None) for name in DURATION_PARTS),
         _Param("time_unit", "str", None)),
        lambda *values: api.duration(**dict(zip(DURATION_PARTS, values[:-1], strict=True)),
                                     time_unit=values[-1]),
        method=False, example="duration(days=n, hours=1.5)"),
    "sort_by": _Function((_x(), _Param("by", keyword=False), _Param("descending", "values", False),
                          _Param("nulls_last", "values", False)),
                         lambda x, *by, descending, nulls_last: x.sort_by(
                             *[_key_column(k) for k in by], descending=descending,
                             nulls_last=nulls_last),
                         varargs=1, example="sort_by(x, t, u, descending=[True, False])"),
    "rank": _Function(
        (_x(), _Param("method", "str", "average"), _Param("descending", "bool", False)),
        lambda x, method, descending: x.rank(method, descending=descending),
        example='rank(x, "dense")',
    ),
    "ewm_sum": _Function(
        (_x(), _Param("com", "value", None), _Param("span", "value", None),
         _Param("half_life", "value", None), _Param("alpha", "value", None),
         _Param("min_samples", "int", 1), _Param("ignore_nulls", "bool", False)),
        lambda x, com, span, half_life, alpha, min_samples, ignore_nulls: x.ewm_sum(
            com=com, span=span, half_life=half_life, alpha=alpha, min_samples=min_samples,
            ignore_nulls=ignore_nulls),
        example="ewm_sum(x, alpha=0.1)",
    ),
    "ewm_mean_by": _Function((_x(), _Param("by"), _Param("half_life", "str")),
                             lambda x, by, half_life: x.ewm_mean_by(by, half_life=half_life),
                             example='ewm_mean_by(x, t, half_life="4d")'),
    "index_of": _Function((_x(), _Param("element")), lambda x, v: x.index_of(v),
                          example="index_of(carrier, 'UA')"),
    "interpolate_by": _Function((_x(), _Param("by")), lambda x, by: x.interpolate_by(by),
                                example="interpolate_by(temp, time)"),
    "max_by": _Function((_x(), _Param("by")), lambda x, by: x.max_by(by),
                        example="max_by(carrier, dep_delay)"),
    "min_by": _Function((_x(), _Param("by")), lambda x, by: x.min_by(by),
                        example="min_by(carrier, dep_delay)"),
    "entropy": _Function(
        (_x(), _Param("base", "value", math.e), _Param("normalize", "bool", True)),
        lambda x, base, normalize: x.entropy(base, normalize=normalize),
        example="entropy(p, base=2)",
    ),
    "reinterpret": _Function((_x(), _Param("signed", "value", None), _Param("dtype", "str", None)),
                             lambda x, signed, dtype: x.reinterpret(signed=signed, dtype=dtype),
                             example="reinterpret(a, signed=False)"),
    "x_log_y": _Function((_x(), _Param("y"), _Param("base", "value", math.e)),
                         lambda x, y, base: x.x_log_y(y, base), example="x_log_y(p, q, base=2)"),
    "fill_nan": _Function((_x(), _Param("value")), lambda x, v: x.fill_nan(v),
                          example="fill_nan(x, 0)"),
    "replace": _Function((_x(), _Param("old", "values"), _Param("new", "values")),
                         lambda x, old, new: x.replace(old, new),
                         example="replace(x, [1, 2], [10, 20])"),
    "replace_strict": _Function(
        (_x(), _Param("old", "values"), _Param("new", "values"),
         _Param("default", "expr", api.NO_NEW), _Param("return_dtype", "str", None)),
        lambda x, old, new, default, return_dtype: x.replace_strict(
            old, new, default=default, return_dtype=return_dtype),
        example="replace_strict(x, ['lo', 'hi'], [0, 1], default=-1)"),
    "is_between": _Function(
        (_x(), _Param("lower_bound"), _Param("upper_bound"), _Param("closed", "str", "both")),
        lambda x, lo, hi, closed: x.is_between(lo, hi, closed), example="is_between(x, 0, 1)",
    ),
    "bin_intervals": _Function(
        (_x(), _Param("intervals", "list"), _Param("labels", "values"),
         _Param("right_closed", "bool", False)),
        lambda x, breaks, labels, right_closed: x.bin_intervals(
            breaks, labels=labels, right_closed=right_closed),
        example='bin_intervals(x, [0, 10], labels=["low", "mid", "high"])',
    ),
    "bin_quantiles": _Function(
        (_x(), _Param("quantiles", "values"), _Param("labels", "values"),
         _Param("right_closed", "bool", False)),
        lambda x, quantiles, labels, right_closed: x.bin_quantiles(
            quantiles, labels=labels, right_closed=right_closed),
        example='bin_quantiles(x, 4, labels=False)',
    ),
    "bin_ranks": _Function(
        (_x(), _Param("ranks", "values"), _Param("labels", "values")),
        lambda x, ranks, labels: x.bin_ranks(ranks, labels=labels),
        example='bin_ranks(x, 4, labels=False)',
    ),
    "cut": _Function(
        (_x(), _Param("breaks", "list"), _Param("labels", "values", None),
         _Param("left_closed", "bool", False)),
        lambda x, breaks, labels, left_closed: x.cut(breaks, labels=labels,
                                                     left_closed=left_closed),
        example="cut(x, [0, 10])",
    ),
    "is_in": _Function(
        (_x(), _Param("other", "list"), _Param("nulls_equal", "bool", False)),
        lambda x, other, nulls_equal: x.is_in(other, nulls_equal=nulls_equal),
        example="is_in(x, [1, 2, 3])",
    ),
    "and_": _Function((_x(), _Param("others", keyword=False)), lambda x, *o: x.and_(*o),
                      varargs=1, example="and_(a, b, c)"),
    "or_": _Function((_x(), _Param("others", keyword=False)), lambda x, *o: x.or_(*o),
                     varargs=1, example="or_(a, b, c)"),
    "where": _Function(
        (_Param("condition", keyword=False), _Param("then", keyword=False),
         _Param("otherwise", keyword=False)),
        lambda c, a, b: api.when(c).then(a).otherwise(b), method=False,
        example="where(a > 0, a, 0)",
    ),
    "arctan2": _Function(
        (_Param("y", keyword=False), _Param("x", keyword=False)),
        lambda y, x: api.arctan2(y, x), method=False, example="arctan2(y, x)",
    ),
    "cov": _Function(
        (_Param("a", keyword=False), _Param("b", keyword=False), _Param("ddof", "int", 1)),
        lambda a, b, ddof: api.cov(a, b, ddof=ddof), method=False, example="cov(a, b)",
    ),
    **{name: _Function(
        (_Param("a", keyword=False), _Param("b", keyword=False), _Param("window_size", "int"),
         _Param("min_samples", "value", None), _Param("ddof", "int", 1)),
        (lambda f: lambda a, b, window, low, ddof: f(a, b, window_size=window, min_samples=low,
                                                     ddof=ddof))(getattr(api, name)),
        method=False, example=f"{name}(a, b, window_size=20)",
    ) for name in ("rolling_cov", "rolling_corr")},
    "corr": _Function(
        (_Param("a", keyword=False), _Param("b", keyword=False),
         _Param("method", "str", "pearson"), _Param("propagate_nans", "bool", False)),
        lambda a, b, method, propagate_nans: api.corr(a, b, method=method,
                                                      propagate_nans=propagate_nans),
        method=False, example='corr(a, b, method="spearman")',
    ),
    "coalesce": _varargs("coalesce", lambda *xs: api.coalesce(*xs)),
    "max_horizontal": _varargs("max_horizontal", lambda *xs: api.max_horizontal(*xs)),
    "min_horizontal": _varargs("min_horizontal", lambda *xs: api.min_horizontal(*xs)),
    "sum_horizontal": _varargs(
        "sum_horizontal",
        lambda *xs, ignore_nulls: api.sum_horizontal(*xs, ignore_nulls=ignore_nulls),
        _Param("ignore_nulls", "bool", True),
    ),
    "mean_horizontal": _varargs(
        "mean_horizontal",
        lambda *xs, ignore_nulls: api.mean_horizontal(*xs, ignore_nulls=ignore_nulls),
        _Param("ignore_nulls", "bool", True),
    ),
    "concat_str": _varargs(
        "concat_str",
        lambda *xs, separator, ignore_nulls: api.concat_str(*xs, separator=separator,
                                                           ignore_nulls=ignore_nulls),
        _Param("separator", "str", ""), _Param("ignore_nulls", "bool", False),
    ),
    "all_horizontal": _varargs("all_horizontal", lambda *xs: api.all_horizontal(*xs)),
    "any_horizontal": _varargs("any_horizontal", lambda *xs: api.any_horizontal(*xs)),
    # windows and grouped reductions: over(mean(a), carrier) or mean(a).over(carrier)
    # a quoted key names a column, as `over("g")` does in Python (a string is no key)
    "over": _Function((_x(), _Param("keys", keyword=False), _Param("order_by", "exprs", None),
                       _Param("descending", "bool", False), _Param("nulls_last", "bool", False)),
                      lambda x, *keys, order_by, descending, nulls_last: x.over(
                          *[_key_column(k) for k in keys],
                          order_by=None if order_by is None else [_key_column(k)
                                                                  for k in order_by],
                          descending=descending, nulls_last=nulls_last),
                      varargs=1, example="over(shift(a, 1), carrier, order_by=time_hour)"),
    "filter": _Function((_x(), _Param("predicate")), lambda x, p: x.filter(p),
                        example="sum(filter(a, b > 0))"),
    "head": _Function((_x(), _Param("n", "int", 10)), lambda x, n: x.head(n),
                      example="mean(head(a, 5))"),
    "tail": _Function((_x(), _Param("n", "int", 10)), lambda x, n: x.tail(n),
                      example="a.tail(3).sum()"),
    "get": _Function((_x(), _Param("index", "int"), _Param("null_on_oob", "bool", False)),
                     lambda x, index, null_on_oob: x.get(index, null_on_oob=null_on_oob),
                     example="a.get(0)"),
    "rolling": _Function((_x(), _Param("index_column"), _Param("period", "str"),
                          _Param("closed", "str", "right")),
                         lambda x, index_column, period, closed: x.rolling(
                             index_column, period=period, closed=closed),
                         example="sum(a).rolling(time, period='2d')"),
    "limit": _Function((_x(), _Param("n", "int", 10)), lambda x, n: x.limit(n),
                       example="a.limit(3).sum()"),
    "item": _Function((_x(), _Param("allow_empty", "bool", False)),
                      lambda x, allow_empty: x.item(allow_empty=allow_empty),
                      example="a.filter(b == 1).item()"),
    "top_k_by": _Function((_x(), _Param("by", "exprs"), _Param("k", "int", 5),
                           _Param("reverse", "values", False)),
                          lambda x, by, k, reverse: x.top_k_by(by, k, reverse=reverse),
                          example="name.top_k_by(score, 3)"),
    "bottom_k_by": _Function((_x(), _Param("by", "exprs"), _Param("k", "int", 5),
                              _Param("reverse", "values", False)),
                             lambda x, by, k, reverse: x.bottom_k_by(by, k, reverse=reverse),
                             example="name.bottom_k_by(score, 3)"),
    "arg_where": _Function((_Param("condition"),), lambda c: api.arg_where(c), method=False,
                           example="arg_where(a > 0)"),
    "arg_sort_by": _Function(
        (_Param("exprs", "exprs"), _Param("descending", "values", False),
         _Param("nulls_last", "values", False)),
        lambda exprs, descending, nulls_last: api.arg_sort_by(
            exprs, descending=descending, nulls_last=nulls_last),
        method=False, example="arg_sort_by([a, b], descending=[True, False])",
    ),
    "format": _Function((_Param("f_string", "str", keyword=False), _Param("exprs", keyword=False)),
                        lambda f_string, *xs: api.format(f_string, *xs), varargs=1,
                        method=False, example='format("{} of {}", a, b)'),
    "row_index": _Function((_Param("name", "str", "index"),), lambda name: api.row_index(name),
                           method=False, example="row_index()"),
    "from_epoch": _Function((_Param("column"), _Param("time_unit", "str", "s")),
                            lambda column, time_unit: api.from_epoch(column, time_unit),
                            method=False, example='from_epoch(t, "ms")'),
    "date_diff": _Function((_Param("start", keyword=False), _Param("end", keyword=False),
                            _Param("unit", "str")),
                           lambda start, end, unit: api.date_diff(start, end, unit),
                           method=False, example='date_diff(start, end, "month")'),
    "top_k": _Function((_x(), _Param("k", "int", 5)), lambda x, k: x.top_k(k),
                       example="a.top_k(3).mean()"),
    "bottom_k": _Function((_x(), _Param("k", "int", 5)), lambda x, k: x.bottom_k(k),
                          example="a.bottom_k(3).sum()"),
    "slice": _Function((_x(), _Param("offset", "int"), _Param("length", "int", None)),
                       lambda x, offset, length: x.slice(offset, length),
                       example="a.slice(-5, 2).max()"),
    "gather_every": _Function((_x(), _Param("n", "int"), _Param("offset", "int", 0)),
                              lambda x, n, offset: x.gather_every(n, offset),
                              example="sum(gather_every(a, 2))"),
    "len": _Function((_Param("x", keyword=False, default=None),),
                     lambda x: api.len() if x is None else x.len(), example="len()"),
    "int_range": _Function(
        (_Param("start"), _Param("end", default=None), _Param("step", "int", 1),
         _Param("dtype", "str", "int64")),
        lambda start, end, step, dtype: api.int_range(start, end, step, dtype=dtype),
        method=False, example="over(int_range(len()), carrier)",
    ),
    "col": _Function((_Param("name", "str", keyword=False),), lambda name: api.col(name),
                     method=False, example='col("my column")'),
    "lit": _Function(
        (_Param("value", "value", keyword=False), _Param("dtype", "str", None)),
        lambda value, dtype: api.lit(value, dtype), method=False,
        example='lit(None, dtype="float64")',
    ),
}
#: ``hour(t)`` is ``t.dt.hour()``; ``len_chars(s)`` is ``s.str.len_chars()``.
_DT_FIELDS = (
    "year", "iso_year", "quarter", "month", "week", "weekday", "day", "ordinal_day", "hour",
    "minute", "second", "millisecond", "microsecond", "nanosecond", "is_leap_year",
    "days_in_month", "century", "millennium", "month_start", "month_end", "total_seconds",
    "total_minutes", "total_hours", "total_days", "total_milliseconds",
)  # fmt: skip
_STR_FUNCS = ("len_chars", "len_bytes", "to_integer", "to_lowercase", "to_uppercase",
              "to_titlecase", "escape_regex")  # fmt: skip


def _namespaced(namespace: str, name: str) -> _Function:
    return _Function((_x(),), lambda x: getattr(getattr(x, namespace), name)(), method=False,
                     example=f"{name}(x)")  # fmt: skip


_TEMPORAL_PARTS = {"datetime": ("year", "month", "day", "hour", "minute", "second",
                                  "microsecond"),
                   "date": ("year", "month", "day"),
                   "time": ("hour", "minute", "second", "microsecond")}  # fmt: skip


def _temporal(kind: str) -> _Function:
    """``date(y, m, d)``, ``datetime(y, m, d, h, ...)`` or ``time(h, m, ...)`` of ``kind``.

    Built from their parts as `cb.date` (`cb.datetime`, `cb.time`) builds them;
    ``date('2013-06-01')`` and ``datetime('...')``: one ISO text, a constant.
    """
    names = _TEMPORAL_PARTS[kind]
    options = (_Param("time_unit", "str", "us"), _Param("time_zone", "str", None),
               _Param("ambiguous", "str", "raise")) if kind == "datetime" else ()  # fmt: skip

    def build(*values: Any) -> Expr:
        parts, settings = values[:len(names)], values[len(names):]
        first = parts[0]
        if kind != "time" and all(p is None for p in parts[1:]) and isinstance(first, Expr) \
                and isinstance(first.node, Constant) and isinstance(first.node.value, str):
            cls = _dt.datetime if kind == "datetime" else _dt.date
            try:
                return api.lit(cls.fromisoformat(first.node.value))
            except ValueError:
                msg = f"not an ISO {kind}: {first.node.value!r}"
                raise ValueError(msg) from None
        if kind == "datetime":
            unit, tz, ambiguous = settings
            return api.datetime(*parts, time_unit=unit, time_zone=tz, ambiguous=ambiguous)
        return getattr(api, kind)(*parts)  # type: ignore[no-any-return]

    required = 1 if kind != "time" else 0  # (the ISO text alone, or the parts)
    params = tuple(_Param(n, "expr", None if i >= required else _REQUIRED)
                   for i, n in enumerate(names))  # fmt: skip
    example = {"date": "date(year, month, 1)", "datetime": "datetime(2024, m, d, hour=h)",
               "time": "time(h, 30)"}[kind]  # fmt: skip
    return _Function((*params, *options), build, method=False, example=example)


def _matching(name: str) -> _Function:
    def build(x: Expr, pattern: str) -> Expr:
        return getattr(x.str, name)(pattern)  # type: ignore[no-any-return]

    return _Function((_x(), _Param("pattern", "str", keyword=False)), build, method=False,
                     example=f"{name}(x, 'a')")  # fmt: skip


FUNCTIONS.update({
    **{name: _namespaced("dt", name) for name in _DT_FIELDS},
    **{name: _namespaced("str", name) for name in _STR_FUNCS},
    **{kind: _temporal(kind) for kind in _TEMPORAL_PARTS},
    **{name: _matching(name) for name in ("starts_with", "ends_with", "contains")},
})  # fmt: skip
_METHODS = sorted(name for name, fn in FUNCTIONS.items() if fn.method)

#: Methods of the namespace form ``t.dt.hour()``, ``s.str.contains('a', literal=True)``:
#: their arguments (constants) are the Python API's, positional or by keyword.
_NAMESPACE_METHODS: dict[str, frozenset[str]] = {
    "dt": frozenset({*_DT_FIELDS, "date", "time", "epoch", "timestamp", "truncate",
                     "convert_time_zone", "cast_time_unit", "offset_by", "round",
                     "to_string", "strftime", "is_business_day", "add_business_days",
                     "replace", "combine", "base_utc_offset", "dst_offset"}),
    "str": frozenset({*_STR_FUNCS, "starts_with", "ends_with", "contains", "to_datetime",
                      "to_date", "to_time", "slice", "head", "tail", "strip_chars",
                      "strip_chars_start", "strip_chars_end", "strip_prefix", "strip_suffix",
                      "pad_start", "pad_end", "zfill", "replace", "replace_all", "count_matches",
                      "find", "normalize", "extract", "split", "split_exact", "splitn",
                      "contains_any", "replace_many", "extract_all", "extract_many",
                      "extract_groups", "encode", "reverse", "join", "from_code_point"}),
    "cat": frozenset({"len_bytes", "len_chars", "starts_with", "ends_with", "slice"}),
    # one value of a `str.split`'s parts (or a field of `str.split_exact`/`splitn`)
    "list": frozenset({"get", "first", "last", "len", "join", "contains", "count_matches",
                       "n_unique", "min", "max", "arg_min", "arg_max", "slice", "head", "tail",
                       "reverse", "sort", "unique", "item", "gather_every", "drop_nulls"}),
    "struct": frozenset({"field"}),
}  # fmt: skip
#: Their parameters that take an expression per row, as in the Python API (the rest
#: take constants): `d.dt.combine(t)`, `t.dt.replace(day=d)`, `d.dt.add_business_days(n)`.
_EXPRESSION_PARAMS: dict[str, frozenset[str]] = {
    "dt.combine": frozenset({"time"}),
    "dt.replace": frozenset({"year", "month", "day", "hour", "minute", "second",
                             "microsecond"}),
    "dt.add_business_days": frozenset({"n"}),
}  # fmt: skip


class _Translator:
    def __init__(self, text: str) -> None:
        self.text = text

    def name(self, node: ast.Name) -> str:
        """A column name as written, not as Python's parser normalises it.

        The parser applies NFKC to identifiers: ``ﬁ`` (one ligature character) would
        read the column ``fi``.
        """
        written = ast.get_source_segment(self.text, node)
        return written if written and written.isidentifier() else node.id

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
                inner = operand.node
                if (
                    isinstance(node.operand, ast.Constant)  # `-3`, not `-lit(3)`
                    and isinstance(inner, Literal)
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
            # `a and b and ...` is one node here but a chain as deep as its terms later
            if depth + len(node.values) > MAX_DEPTH:
                raise self.fail(node, f"expression nested deeper than {MAX_DEPTH} levels")
            values = [self.expr(v, d) for v in node.values]
            out = values[0]
            for v in values[1:]:
                out = (out & v) if isinstance(node.op, ast.And) else (out | v)
            return out
        if isinstance(node, ast.Compare):
            return self.compare(node, d)
        if isinstance(node, ast.Name):
            name = self.name(node)
            if name in _KEYWORD_CONSTANTS:
                return api.lit(_KEYWORD_CONSTANTS[name])
            if name.startswith("__"):
                raise self.fail(node, f"name `{name}` is not allowed")
            # `e`, `pi`, `nan`, `inf`: a column of that name wins (decided by planning)
            return Expr(Column(name, _NAMED_NUMBERS.get(name)))
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
            raise self.fail(
                node, "attribute access is not allowed; call functions by name, e.g. "
                "`sqrt(x)` or `x.sqrt()`",
            )  # fmt: skip
        raise self.fail(node, f"{type(node).__name__} is not allowed in an expression")

    def compare(self, node: ast.Compare, depth: int) -> Expr:
        if depth + len(node.ops) > MAX_DEPTH:  # `a < b < c ...`: a chain of `&` later
            raise self.fail(node, f"expression nested deeper than {MAX_DEPTH} levels")
        parts = [node.left, *node.comparators]
        result: Expr | None = None
        for cmp, left, right in zip(node.ops, parts, parts[1:], strict=False):
            if isinstance(cmp, (ast.In, ast.NotIn)):
                term = self.membership(left, right, depth, negate=isinstance(cmp, ast.NotIn))
                result = term if result is None else result & term
                continue
            fn = _CMPOPS.get(type(cmp))
            if fn is None:
                raise self.fail(node, f"comparison `{type(cmp).__name__}` is not allowed")
            term = fn(self.expr(left, depth), self.expr(right, depth))
            result = term if result is None else result & term
        assert result is not None
        return result

    # -- calls ---------------------------------------------------------------------------
    def membership(self, left: ast.AST, right: ast.AST, depth: int, *, negate: bool) -> Expr:
        """``x in ('a', 'b')``: `Expr.is_in` over a tuple or list of constants."""
        if not isinstance(right, (ast.Tuple, ast.List)):
            op = "In" if not negate else "NotIn"
            msg = (
                f"comparison `{op}` is not allowed with that right side: `in` takes a tuple "
                "or list of values, e.g. `x in ('a', 'b')`"
            )
            raise self.fail(right, msg)
        values = self.constants(right, depth, "`in` takes constants only")
        out = self.expr(left, depth).is_in(values)
        return ~out if negate else out

    def constants(self, node: ast.Tuple | ast.List, depth: int, refusal: str) -> list[Any]:
        """The values of a tuple or list of constants.

        Numbers (`nan`, `-inf`, `pi` too), strings, booleans, None,
        `date('2024-01-15')` and `datetime(...)`.
        """
        values: list[Any] = []
        for item in node.elts:
            named = self.number(item) if _names_a_number(item) else None
            if named is not None:
                values.append(named)  # `nan`, `-inf`, `pi`, `e`: constants here
                continue
            value = self.expr(item, depth)
            if not isinstance(value.node, (Literal, Constant)):
                raise self.fail(item, refusal)
            values.append(value.node.value)
        return values

    def method(self, node: ast.Call, depth: int) -> Expr:
        """``t.dt.hour()`` or ``s.str.starts_with('a')``: whitelisted namespace methods."""
        func = node.func
        assert isinstance(func, ast.Attribute)
        owner = func.value
        assert isinstance(owner, ast.Attribute)
        allowed = _NAMESPACE_METHODS[owner.attr]
        name = f"{owner.attr}.{func.attr}"
        if func.attr not in allowed:
            raise self.fail(func, f"unknown method `{name}`; allowed: "
                            f"{', '.join(sorted(allowed))}")  # fmt: skip
        what = f"`{func.attr}` arguments"
        target = self.expr(owner.value, depth)
        method = getattr(getattr(target, owner.attr), func.attr)
        # parameters the Python API takes as expressions (`d.dt.combine(t)`), by position too
        per_row = _EXPRESSION_PARAMS.get(name, frozenset())
        names = list(inspect.signature(method).parameters)

        def value(arg: ast.AST, param: str | None) -> Any:
            # a constant stays one: the API reads a string there as a column's name
            negative = isinstance(arg, ast.UnaryOp) and isinstance(arg.operand, ast.Constant)
            if param in per_row and not (isinstance(arg, ast.Constant) or negative):
                return self.expr(arg, depth)
            return self.argument(arg, depth, what)

        args = [value(a, names[i] if i < len(names) else None) for i, a in enumerate(node.args)]
        if any(k.arg is None for k in node.keywords):
            raise self.fail(node, f"`{name}`: `**` arguments are not allowed")
        keywords = {k.arg: value(k.value, k.arg) for k in node.keywords if k.arg is not None}
        try:  # the Python API's own parameters, nothing else
            inspect.signature(method).bind(*args, **keywords)
        except TypeError as exc:
            params = ", ".join(inspect.signature(method).parameters)
            raise self.fail(node, f"`{name}({params})`: {exc}") from None
        return method(*args, **keywords)  # type: ignore[no-any-return]

    def argument(self, node: ast.AST, depth: int, what: str) -> Any:
        """A namespace method's argument: a constant, or a list of them.

        Lists: `week_mask=[True, ...]`, `holidays=[date('2024-12-25')]`.
        """
        if isinstance(node, (ast.Tuple, ast.List)):
            return self.constants(node, depth, f"{what} must be constants")
        return _constant(node, self, what)

    def call(self, node: ast.Call, depth: int) -> Expr:
        func = node.func
        if len(node.args) + len(node.keywords) > MAX_DEPTH:
            # many arguments are many levels later (`coalesce`, `max_horizontal` fold them)
            raise self.fail(node, f"a call of more than {MAX_DEPTH} arguments")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) \
                and func.value.attr in _NAMESPACE_METHODS:  # fmt: skip
            return self.method(node, depth)
        if isinstance(func, ast.Attribute):
            name = func.attr
            spec = FUNCTIONS.get(name)
            if spec is None or not spec.method or name.startswith("_"):
                raise self.fail(
                    func, f"unknown method `{name}`: only plain function names can be called, "
                    "and the methods `x.dt.<field>()`, `x.str.<function>()` and the functions "
                    f"that are also methods (e.g. `x.sqrt()`); methods: {', '.join(_METHODS)}",
                )  # fmt: skip
            receiver: list[ast.AST] = [func.value]
            shown = f"x.{name}"
        elif isinstance(func, ast.Name):
            name = func.id
            spec = FUNCTIONS.get(name)
            if spec is None:
                allowed = ", ".join(sorted(FUNCTIONS))
                raise self.fail(func, f"unknown function `{name}`; allowed: {allowed}")
            receiver = []
            shown = name
        else:
            raise self.fail(func, "only plain function names can be called")
        positional = receiver + list(node.args)
        values = self.bind(node, name, shown, spec, positional, depth)
        try:
            return spec.build(*values[0], **values[1])
        except ColbridgeError:
            raise  # already names the problem and the remedy
        except (ValueError, TypeError, NotImplementedError) as exc:
            raise self.fail(node, f"`{name}`: {exc}") from None

    def bind(
        self,
        node: ast.Call,
        name: str,
        shown: str,
        spec: _Function,
        positional: list[ast.AST],
        depth: int,
    ) -> tuple[list[Any], dict[str, Any]]:
        """Match the call's arguments with ``spec``'s parameters, as Python would.

        Returns the positional values (variadic ones included) and the keyword-only
        values (parameters after a variadic one).
        """
        params = spec.params
        v = spec.varargs
        leading = params if v is None else params[:v]
        for arg in positional:
            if isinstance(arg, ast.Starred):
                raise self.fail(arg, "`*` arguments are not allowed")
        if v is None and len(positional) > len(params):
            raise self.fail(
                node, f"`{name}` takes {self.arity(spec)} argument(s), got {len(positional)}"
            )
        bound: dict[str, Any] = {}
        for param, arg in zip(leading, positional, strict=False):
            bound[param.name] = self.value(arg, param, name, depth)
        extra = [] if v is None else [
            self.value(arg, params[v], name, depth) for arg in positional[len(leading):]
        ]  # fmt: skip
        keywords = {p.name: p for p in params if p.keyword}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.fail(kw.value, "`**` arguments are not allowed")
            named = keywords.get(kw.arg)
            if named is None:
                if not keywords:
                    raise self.fail(node, f"`{name}` takes positional arguments only")
                raise self.fail(
                    kw, f"`{shown}` has no keyword argument `{kw.arg}`; its keyword arguments: "
                    f"{', '.join(keywords)} (e.g. `{spec.example}`)",
                )  # fmt: skip
            if named.name in bound:
                raise self.fail(kw, f"`{name}` got `{named.name}` twice")
            bound[named.name] = self.value(kw.value, named, name, depth)
        for param in leading:
            if param.name not in bound and param.default is _REQUIRED:
                if not param.keyword:
                    raise self.fail(
                        node,
                        f"`{name}` takes {self.arity(spec)} argument(s), got {len(positional)}",
                    )
                raise self.fail(node, f"`{name}` needs `{param.name}`, e.g. `{spec.example}`")
        if v is not None and params[v].name == "exprs" and not extra:
            raise self.fail(node, f"`{name}` needs at least one expression")
        args = [bound.get(p.name, p.default) for p in leading] + extra
        kwargs = {} if v is None else {
            p.name: bound.get(p.name, p.default) for p in params[v + 1:]
        }  # fmt: skip
        return args, kwargs

    @staticmethod
    def arity(spec: _Function) -> str:
        if spec.varargs is not None:
            return f"at least {spec.varargs + (spec.params[spec.varargs].name == 'exprs')}"
        required = sum(p.default is _REQUIRED for p in spec.params)
        total = len(spec.params)
        return f"{required}" if required == total else f"{required} to {total}"

    def value(self, node: ast.AST, param: _Param, name: str, depth: int) -> Any:
        """One argument's value, as ``param`` takes it."""
        kind = param.kind
        if kind == "expr":
            return self.expr(node, depth)
        if kind == "exprs":  # one expression or a list of them: a list either way
            items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
            return [self.expr(item, depth) for item in items]
        if kind == "str":
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                return node.value
            raise self.fail(node, f"`{name}`: `{param.name}` must be a string, e.g. "
                                  f"`{FUNCTIONS[name].example}`")  # fmt: skip
        if kind == "bool":
            if isinstance(node, ast.Constant) and isinstance(node.value, bool):
                return node.value
            raise self.fail(node, f"`{name}`: `{param.name}` must be True or False")
        if kind == "int":
            number = self.number(node)
            if isinstance(number, int) and not isinstance(number, bool):
                return number
            raise self.fail(node, f"`{name}`: `{param.name}` must be a whole number, e.g. "
                                  f"`{FUNCTIONS[name].example}`")  # fmt: skip
        if kind == "fill" and not (isinstance(node, ast.Constant) and (
            node.value is None or isinstance(node.value, (bool, int, float))
        )) and self.number(node) is None:  # fmt: skip
            return self.expr(node, depth)  # a string, a date, a reduction
        if kind in ("value", "fill"):
            if isinstance(node, ast.Constant) and (
                node.value is None or isinstance(node.value, (bool, int, float))
            ):
                return node.value
            number = self.number(node)
            if number is not None:
                return number
            raise self.fail(node, f"`{name}` takes a number, True, False or None")
        if kind == "values" and not isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return self.item(node, name, depth)  # one value
        # list
        if param.default is None and isinstance(node, ast.Constant) and node.value is None:
            return None  # an optional list left out by name: `rolling_mean(x, 3, None, 2)`
        if not isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            raise self.fail(node, f"`{name}`: `{param.name}` must be a list of values, "
                                  f"e.g. `{FUNCTIONS[name].example}`")  # fmt: skip
        return [self.item(item, name, depth) for item in node.elts]

    def item(self, item: ast.AST, name: str, depth: int) -> Any:
        """One value of a list: a number, string, date, True, False or None."""
        if isinstance(item, ast.Constant) and (
            item.value is None or isinstance(item.value, (bool, int, float, str))
        ):
            return item.value
        number = self.number(item)
        if number is None and isinstance(item, ast.Call):
            constant = self.expr(item, depth).node  # date('...'), datetime('...')
            if isinstance(constant, Constant):
                return constant.value
        if number is None:
            raise self.fail(item, f"`{name}`: list items must be numbers, strings, dates, "
                            "True, False or None")  # fmt: skip
        return number

    @staticmethod
    def number(node: ast.AST) -> int | float | None:
        """A number written as a constant, ``-constant`` or a named constant, else None."""
        sign = 1
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            sign = -1 if isinstance(node.op, ast.USub) else 1
            node = node.operand
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not (
            isinstance(node.value, bool)
        ):
            return sign * node.value
        if isinstance(node, ast.Name) and node.id in _NAMED_NUMBERS:
            return sign * _NAMED_NUMBERS[node.id]
        return None


def _constant(node: ast.AST, translator: _Translator, what: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant):  # fmt: skip
        value = node.operand.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value  # a negative number (`s.str.head(-1)`)
    raise translator.fail(node, f"{what} must be constants")


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
    >>> parse_expr('x.cast("int8", strict=False)')
    col("x").cast(int8, strict=False)
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
        if not isinstance(target, ast.Name) or translator.name(target).startswith("__"):
            raise translator.fail(target, "the left side must be a plain column name")
        try:
            out.append((translator.name(target), translator.expr(stmt.value).node))
        except RecursionError:
            msg = "expression nested too deeply"
            raise ExpressionSyntaxError(msg) from None
    return out
