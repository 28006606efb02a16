"""The user-facing expression API: `col`, `lit`, `when`, `coalesce` and `Expr` operators.

An `Expr` only wraps an IR node; building one evaluates nothing and imports
no backend.
"""

from __future__ import annotations

import builtins
import dataclasses
import datetime as _dt
import difflib
import itertools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, NoReturn

import numpy as np

from colbridge.errors import (
    InvalidOperationError,
    SchemaError,
    ShapeError,
    UnsupportedOperationError,
)
from colbridge.expr.nodes import (
    MODE_SHOWN,
    QUANTILE_METHODS,
    RANK_METHODS,
    ROLLING_CLOSED,
    ROUND_MODES,
    ROWS,
    Agg,
    Alias,
    Binary,
    Cast,
    Clip,
    Coalesce,
    Column,
    Constant,
    EveryRow,
    FillNan,
    Filtered,
    Function,
    KeySet,
    Literal,
    Node,
    Over,
    Round,
    Scan,
    Selector,
    Unary,
    When,
    children,
    output_name,
    shift_with_fill,
    transform,
    walk,
)
from colbridge.expr.selectors import NameNamespace, expand_arguments, is_pattern, names_of
from colbridge.types import DType, parse_dtype
from colbridge.types.business_days import DEFAULT_WEEK_MASK, holiday_days
from colbridge.types.business_days import week_mask as business_week_mask
from colbridge.types.dtypes import polars_type_name
from colbridge.types.durations import (
    DURATION_PARTS,
    UNIT_NS,
    constant_duration,
    parse_duration_in,
    timedelta_text,
)
from colbridge.types.logical import Logical, parse_logical

__all__ = [
    "Expr",
    "all_horizontal",
    "any_horizontal",
    "arctan2",
    "arg_sort_by",
    "arg_where",
    "coalesce",
    "col",
    "concat_str",
    "corr",
    "cov",
    "date_diff",
    "format",
    "from_epoch",
    "len",
    "lit",
    "max_horizontal",
    "mean_horizontal",
    "min_horizontal",
    "row_index",
    "sum_horizontal",
    "to_node",
    "when",
]

Scalar = bool | int | float | None

#: Values `is_in` takes at most: each is one comparison in the fused kernel.
MAX_IS_IN_VALUES = 64


class _NoNew:
    """``replace(old)`` without ``new``: ``old`` is a mapping."""

    def __repr__(self) -> str:
        return "<no new>"


_NO_NEW: Any = _NoNew()
#: the string language's "no `new`" / "no `default`" (`colbridge.expr.parser`)
NO_NEW: Any = _NO_NEW

#: `is_between`'s interval ends, as polars names them.
CLOSED = ("both", "left", "right", "none")


#: Python values that become typed constants: dates, datetimes, times, durations, strings.
CONSTANT_TYPES = (_dt.date, _dt.time, _dt.timedelta, str)


def _literal_node(value: Any, dtype: Any = None) -> Node:
    if isinstance(value, (np.datetime64, np.timedelta64)) or (
        isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "mM"
    ):
        moment = _numpy_temporal(np.asarray(value)[()])
        return moment if dtype is None else Expr(moment).cast(dtype).node
    if isinstance(value, CONSTANT_TYPES):
        node: Node = Constant(value)
        if dtype is not None:
            node = _zoned_wall_time(value, dtype) or Expr(node).cast(dtype).node
        return node
    if (
        dtype is None
        and isinstance(value, (np.generic, np.ndarray))
        and value.ndim == 0
        and value.dtype.kind in "biuf"
    ):
        # A NumPy scalar carries its type, as in polars: `col("i32") * np.int64(2)` is Int64.
        return Literal(value.item(), parse_dtype(value.dtype))
    if value is not None and not isinstance(value, (bool, int, float)):
        # Other scalars with `.item()` are fine; anything else is not a number we can
        # embed in a kernel.
        shape = getattr(value, "shape", None)
        if isinstance(value, (list, tuple)) or (shape is not None and shape not in ((), (1,))):
            # (polars: a list is one List value, a Series a column of its own)
            size = builtins.len(value) if shape is None else int(np.prod(shape))
            msg = (
                f"cannot use a {type(value).__name__} of {size} values as a literal: a "
                "literal is one number, string, date or time; add the values to the frame "
                "as a column first (`df.with_columns(name=values)`), then use `col(name)`"
            )
            raise SchemaError(msg)
        item = getattr(value, "item", None)
        if item is None:
            msg = (
                f"cannot use {type(value).__name__} value {value!r} as a literal; "
                "literals are bool, int, float, str, date, datetime, time, timedelta or None"
            )
            if isinstance(value, str):
                msg += (
                    " (string columns and string literals are not supported in expressions "
                    "yet: filter strings in the source frame first)"
                )
            raise SchemaError(msg)
        if shape == (1,) and dtype is None:  # one value of a Series keeps its type
            dtype = getattr(value, "dtype", None)
        value = item()
        if not isinstance(value, (bool, int, float)):
            msg = f"cannot use {value!r} as a literal; literals are bool, int, float or None"
            raise SchemaError(msg)
    if dtype is not None and parse_logical(dtype) is not None:
        return Expr(Literal(value)).cast(dtype).node
    typed = parse_dtype(dtype) if dtype is not None else None
    if typed is DType.FLOAT32 and isinstance(value, (int, float)) and not isinstance(value, bool):
        # the value a Float32 holds (0.1 is 0.10000000149011612), which it keeps when
        # widened: `lit(0.1, dtype=pl.Float32) + x` adds that value, as polars does
        with np.errstate(over="ignore"):  # past Float32's range: infinity, as polars
            value = float(np.float32(value))
    return Literal(value, typed)


def _numpy_temporal(value: Any) -> Node:
    """A NumPy datetime or timedelta as polars types it: nanoseconds stay nanoseconds.

    ``datetime64[D]`` is a Date; other units are microseconds (Datetime or Duration),
    as polars reads them. NaT is refused, as polars refuses it.
    """
    if np.isnat(value):
        msg = ("a NaT literal has no value; write `cb.lit(None, dtype=pl.Datetime(...))` "
               "(or `pl.Duration`)")  # fmt: skip
        raise SchemaError(msg)
    unit = np.datetime_data(value.dtype)[0]
    if isinstance(value, np.datetime64) and unit == "D":
        return Constant(value.astype("datetime64[D]").item())
    kind = "datetime" if isinstance(value, np.datetime64) else "duration"
    unit = "ns" if unit == "ns" else "us"
    code = "datetime64" if kind == "datetime" else "timedelta64"
    try:
        ticks = int(value.astype(f"{code}[{unit}]").astype(np.int64))
    except OverflowError:
        msg = f"{value!r} does not fit a {kind} in {unit}"
        raise SchemaError(msg) from None
    return Function("cast", (Literal(ticks, DType.INT64),), (Logical(kind, unit), True))


def _zoned_wall_time(value: Any, dtype: Any) -> Node | None:
    """``lit(naive, dtype=Datetime(unit, zone))``: the wall time in that zone, as polars reads it.

    A cast would read the naive value as UTC (polars' cast of a column); a literal with
    a zoned type is that clock time in the zone. None where this does not apply.
    """
    logical = parse_logical(dtype)
    if logical is None or logical.kind != "datetime" or logical.tz is None:
        return None
    if isinstance(value, _dt.datetime) and value.tzinfo is not None:
        return None  # an instant: the cast converts it
    if not isinstance(value, _dt.date):
        return None
    naive = Expr(Constant(value)).cast(Logical("datetime", logical.unit))
    return naive.dt.replace_time_zone(logical.tz).node


def to_node(value: Any) -> Node:
    """An IR node from an `Expr`, a node, or a Python scalar (a literal)."""
    if isinstance(value, Expr):
        return value.node
    if isinstance(value, Node):
        return value
    if isinstance(value, _WhenThen):
        return value._finish().node
    return _literal_node(value)


def _arg_node(value: Any) -> Node:
    """A function argument: a string names a column (as in polars), else as `to_node`."""
    if isinstance(value, str):
        return Column(value)
    return to_node(value)


def _is_expression(value: Any) -> bool:
    return isinstance(value, (Expr, Node, str, _WhenThen))


def _flatten(values: Iterable[Any]) -> list[Any]:
    flat: list[Any] = []
    for v in values:
        flat.extend(v if isinstance(v, (list, tuple)) else [v])
    return flat


class ScalarUseError(TypeError):
    """An expression was used where Python needs one value (``if``, ``math.sin``, ``int``).

    A `TypeError`, as before; `colbridge.udf` tells by it that a function cannot be
    traced into expressions and must be compiled instead.
    """


class Expr:
    """A lazy column expression with polars' names and semantics.

    Examples
    --------
    >>> import colbridge as cb
    >>> e = (cb.col("a") * cb.col("b") + 1).sqrt()
    >>> e
    <Expr ((col("a") * col("b")) + lit(1)).sqrt()>
    """

    __slots__ = ("node",)

    def __getattr__(self, name: str) -> Any:
        # only for names the class lacks: a polars method colbridge has no kernel for
        raise _missing_method(self, "Expr", name)

    def __init__(self, node: Node) -> None:
        self.node = node

    def __repr__(self) -> str:
        return f"<Expr {self.node!r}>"

    def __hash__(self) -> int:
        return hash(self.node)

    def __bool__(self) -> NoReturn:
        msg = (
            "the truth value of an expression is ambiguous; "
            "use `&` for AND, `|` for OR and `~` for NOT (with parentheses: "
            "`(cb.col('a') > 1) & (cb.col('b') < 2)`), not `and`, `or`, `not` or chained "
            "comparisons like `0 < x < 1`"
        )
        raise ScalarUseError(msg)

    def _not_a_number(self, what: str) -> NoReturn:
        msg = (
            f"an expression is not a Python {what}: it stands for a whole column; use its "
            "methods (`.sin()`, `.sqrt()`, `.abs()`, `cb.when(...)`) instead of `math` or "
            "`int()`/`float()`, or wrap a scalar function in `cb.udf`"
        )
        raise ScalarUseError(msg)

    # `math.sin(expr)`, `int(expr)` and `range(expr)` ask for these: a traced user function
    # (`colbridge.udf`) that does so is compiled row by row instead
    def __float__(self) -> float:
        self._not_a_number("float")

    def __int__(self) -> int:
        self._not_a_number("int")

    def __index__(self) -> int:
        self._not_a_number("integer")

    def __complex__(self) -> complex:
        self._not_a_number("complex number")

    # -- operators ------------------------------------------------------------
    def _bin(self, op: str, other: Any, *, reflected: bool = False) -> Expr:
        other_node = to_node(other)
        if reflected:
            return Expr(Binary(op, other_node, self.node))
        return Expr(Binary(op, self.node, other_node))

    def __add__(self, other: Any) -> Expr:
        return self._bin("add", other)

    def __radd__(self, other: Any) -> Expr:
        return self._bin("add", other, reflected=True)

    def __sub__(self, other: Any) -> Expr:
        return self._bin("sub", other)

    def __rsub__(self, other: Any) -> Expr:
        return self._bin("sub", other, reflected=True)

    def __mul__(self, other: Any) -> Expr:
        return self._bin("mul", other)

    def __rmul__(self, other: Any) -> Expr:
        return self._bin("mul", other, reflected=True)

    def __truediv__(self, other: Any) -> Expr:
        return self._bin("truediv", other)

    def __rtruediv__(self, other: Any) -> Expr:
        return self._bin("truediv", other, reflected=True)

    def __floordiv__(self, other: Any) -> Expr:
        return self._bin("floordiv", other)

    def __rfloordiv__(self, other: Any) -> Expr:
        return self._bin("floordiv", other, reflected=True)

    def __mod__(self, other: Any) -> Expr:
        return self._bin("mod", other)

    def __rmod__(self, other: Any) -> Expr:
        return self._bin("mod", other, reflected=True)

    def __pow__(self, other: Any) -> Expr:
        return self._bin("pow", other)

    def __rpow__(self, other: Any) -> Expr:
        return self._bin("pow", other, reflected=True)

    def __eq__(self, other: Any) -> Expr:  # type: ignore[override]
        return self._bin("eq", other)

    def __ne__(self, other: Any) -> Expr:  # type: ignore[override]
        return self._bin("ne", other)

    def __lt__(self, other: Any) -> Expr:
        return self._bin("lt", other)

    def __le__(self, other: Any) -> Expr:
        return self._bin("le", other)

    def __gt__(self, other: Any) -> Expr:
        return self._bin("gt", other)

    def __ge__(self, other: Any) -> Expr:
        return self._bin("ge", other)

    def __and__(self, other: Any) -> Expr:
        return self._bin("and", other)

    def __rand__(self, other: Any) -> Expr:
        return self._bin("and", other, reflected=True)

    def __or__(self, other: Any) -> Expr:
        return self._bin("or", other)

    def __ror__(self, other: Any) -> Expr:
        return self._bin("or", other, reflected=True)

    def __xor__(self, other: Any) -> Expr:
        return self._bin("xor", other)

    def __rxor__(self, other: Any) -> Expr:
        return self._bin("xor", other, reflected=True)

    def __neg__(self) -> Expr:
        return Expr(Unary("neg", self.node))

    def __pos__(self) -> Expr:
        return self

    def __invert__(self) -> Expr:
        return Expr(Unary("not", self.node))

    def __abs__(self) -> Expr:
        return self.abs()

    # -- named methods (polars names) ----------------------------------------
    def add(self, other: Any) -> Expr:
        """``self + other``."""
        return self._bin("add", other)

    def sub(self, other: Any) -> Expr:
        """``self - other``."""
        return self._bin("sub", other)

    def mul(self, other: Any) -> Expr:
        """``self * other``."""
        return self._bin("mul", other)

    def truediv(self, other: Any) -> Expr:
        """``self / other`` (always a float result)."""
        return self._bin("truediv", other)

    def truncdiv(self, other: Any) -> Expr:
        """Divide, rounding the quotient toward zero (``floordiv`` rounds down), as polars.

        The type ``//`` gives; an integer divided by 0 is null, ``MIN`` by -1 wraps;
        floats are ``a / b`` truncated (by one value: ``a * (1 / b)``, as polars).

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"x": [-5, -4, 4, 5]})
        >>> df.gpu.select(cb.col("x").truncdiv(2)).compute()["x"].to_list()
        [-2, -2, 2, 2]
        """
        return self._bin("truncdiv", other)

    def floordiv(self, other: Any) -> Expr:
        """``self // other`` (floor division; integer division by zero gives null)."""
        return self._bin("floordiv", other)

    def mod(self, other: Any) -> Expr:
        """``self % other`` (sign of the divisor, as in Python)."""
        return self._bin("mod", other)

    def pow(self, exponent: Any) -> Expr:
        """``self ** exponent``."""
        return self._bin("pow", exponent)

    def eq(self, other: Any) -> Expr:
        """``self == other``."""
        return self._bin("eq", other)

    def ne(self, other: Any) -> Expr:
        """``self != other``."""
        return self._bin("ne", other)

    def eq_missing(self, other: Any) -> Expr:
        """``self == other`` where null equals null: never null (polars' ``eq_missing``).

        Two nulls are equal, a null and a value are not; values compare as ``==``
        does (NaN equals NaN, ``-0.0`` equals ``0.0``). Written with the operations
        it is made of: ``(a == b).fill_null(a.is_null() & b.is_null())``.
        """
        other_expr = Expr(to_node(other))
        return (self == other_expr).fill_null(self.is_null() & other_expr.is_null())

    def ne_missing(self, other: Any) -> Expr:
        """``self != other`` where null equals null: never null (see `eq_missing`)."""
        other_expr = Expr(to_node(other))
        return (self != other_expr).fill_null(self.is_null() ^ other_expr.is_null())

    def lt(self, other: Any) -> Expr:
        """``self < other``."""
        return self._bin("lt", other)

    def le(self, other: Any) -> Expr:
        """``self <= other``."""
        return self._bin("le", other)

    def gt(self, other: Any) -> Expr:
        """``self > other``."""
        return self._bin("gt", other)

    def ge(self, other: Any) -> Expr:
        """``self >= other``."""
        return self._bin("ge", other)

    def and_(self, *others: Any) -> Expr:
        """Kleene AND for booleans, bitwise AND for integers, of ``self`` and every other."""
        out = self
        for other in _flatten(others):
            out = out._bin("and", other)
        return out

    def or_(self, *others: Any) -> Expr:
        """Kleene OR for booleans, bitwise OR for integers, of ``self`` and every other."""
        out = self
        for other in _flatten(others):
            out = out._bin("or", other)
        return out

    def xor(self, other: Any) -> Expr:
        """Exclusive or."""
        return self._bin("xor", other)

    def not_(self) -> Expr:
        """Logical NOT for booleans, bitwise NOT for integers."""
        return ~self

    def neg(self) -> Expr:
        """``-self``."""
        return -self

    def _unary(self, op: str) -> Expr:
        return Expr(Unary(op, self.node))

    def abs(self) -> Expr:
        """Absolute value."""
        return self._unary("abs")

    def sqrt(self) -> Expr:
        """Square root (NaN for negative input)."""
        return self._unary("sqrt")

    def cbrt(self) -> Expr:
        """Cube root."""
        return self._unary("cbrt")

    def erf(self) -> Expr:
        """The error function, the C library's as polars calls it (Float32 computed in Float64).

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [0.0, 0.5]})
        >>> df.gpu.select(cb.col("x").erf()).compute()["x"].to_list()
        [0.0, 0.5204998778130465]
        """
        return self._unary("erf")

    def erfc(self) -> Expr:
        """``1 - erf(x)``, computed without the cancellation (the C library's ``erfc``)."""
        return self._unary("erfc")

    def exp(self) -> Expr:
        """``e ** self``."""
        return self._unary("exp")

    def log(self, base: Any = math.e) -> Expr:
        """Logarithm to ``base`` (natural by default): a number, or an expression per row.

        Computed as polars does, ``ln(x) / ln(base)``: in ``x``'s type when it is a
        float, else in ``base``'s when that is a float, else in float64. A string
        names a column.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [8.0, 100.0], "b": [2.0, 10.0]})
        >>> df.gpu.select(cb.col("x").log(cb.col("b"))).compute()["x"].to_list()
        [3.0, 2.0]
        """
        if _is_expression(base):
            return Expr(Function("log", (self.node, _arg_node(base))))
        return Expr(Function("log", (self.node, to_node(base))))

    def log10(self) -> Expr:
        """Base-10 logarithm: ``ln(x) / ln(10)``, as polars computes it (not libm's log10)."""
        return self.log(10.0)

    def log1p(self) -> Expr:
        """``log(1 + self)``, accurate near zero."""
        return self._unary("log1p")

    def sin(self) -> Expr:
        """Sine."""
        return self._unary("sin")

    def cos(self) -> Expr:
        """Cosine."""
        return self._unary("cos")

    def tan(self) -> Expr:
        """Tangent."""
        return self._unary("tan")

    def arcsin(self) -> Expr:
        """Inverse sine."""
        return self._unary("arcsin")

    def arccos(self) -> Expr:
        """Inverse cosine."""
        return self._unary("arccos")

    def arctan(self) -> Expr:
        """Inverse tangent."""
        return self._unary("arctan")

    def sinh(self) -> Expr:
        """Hyperbolic sine."""
        return self._unary("sinh")

    def cosh(self) -> Expr:
        """Hyperbolic cosine."""
        return self._unary("cosh")

    def tanh(self) -> Expr:
        """Hyperbolic tangent."""
        return self._unary("tanh")

    def arcsinh(self) -> Expr:
        """Inverse hyperbolic sine."""
        return self._unary("arcsinh")

    def arccosh(self) -> Expr:
        """Inverse hyperbolic cosine (NaN below 1)."""
        return self._unary("arccosh")

    def arctanh(self) -> Expr:
        """Inverse hyperbolic tangent (±inf at ±1, NaN beyond)."""
        return self._unary("arctanh")

    def cot(self) -> Expr:
        """Cotangent, ``1 / tan(x)`` (a float input keeps its type, others give float64)."""
        return Expr(Function("cot", (self.node,)))

    def degrees(self) -> Expr:
        """Radians to degrees (a float input keeps its type, others give float64)."""
        return Expr(Function("degrees", (self.node,)))

    def radians(self) -> Expr:
        """Degrees to radians (a float input keeps its type, others give float64)."""
        return Expr(Function("radians", (self.node,)))

    def floor(self) -> Expr:
        """Round down (integers unchanged)."""
        return self._unary("floor")

    def ceil(self) -> Expr:
        """Round up (integers unchanged)."""
        return self._unary("ceil")

    def round(self, decimals: int = 0, mode: str = "half_to_even") -> Expr:
        """Round to ``decimals`` places, as polars does (integers unchanged).

        ``mode`` breaks ties: ``"half_to_even"`` (the default: 2.5 → 2.0) or
        ``"half_away_from_zero"`` (2.5 → 3.0). With decimals, a float is scaled by
        10**decimals, rounded and scaled back, in float64 (float32 columns are
        rounded through float64 and keep their type); a value too large to scale
        is returned unchanged.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [2.675, -0.125, 2.5]})
        >>> x = cb.col("x")
        >>> df.gpu.select(a=x.round(2), b=x.round(0, "half_away_from_zero")).compute()
        shape: (3, 2)
        ┌───────┬──────┐
        │ a     ┆ b    │
        │ ---   ┆ ---  │
        │ f64   ┆ f64  │
        ╞═══════╪══════╡
        │ 2.68  ┆ 3.0  │
        │ -0.12 ┆ -0.0 │
        │ 2.5   ┆ 3.0  │
        └───────┴──────┘
        """
        if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
            msg = (
                f"`round(decimals={decimals!r})`: decimals must be a whole number >= 0, "
                "e.g. `x.round(2)`"
            )
            raise UnsupportedOperationError(msg)
        if mode not in ROUND_MODES:
            msg = f"`round(mode={mode!r})` is not a rounding mode; use one of {ROUND_MODES}"
            raise UnsupportedOperationError(msg)
        if decimals == 0 and mode == "half_to_even":
            return self._unary("round")
        return Expr(Round(self.node, decimals, mode))

    def round_sig_figs(self, digits: int) -> Expr:
        """Round to ``digits`` significant figures, as polars does (bit for bit).

        Computed in float64 (float32 goes through float64 and back, integers too,
        saturating at their type's ends: Int8 127 to 2 figures stays 127); zero,
        NaN and infinities are returned as they are, and so is a value whose scaled
        form overflows. ``digits`` is a whole number >= 1.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"a": [0.01234, 3.333, 1234.0]})
        >>> df.gpu.select(r=cb.col("a").round_sig_figs(2)).compute()
        shape: (3, 1)
        ┌────────┐
        │ r      │
        │ ---    │
        │ f64    │
        ╞════════╡
        │ 0.012  │
        │ 3.3    │
        │ 1200.0 │
        └────────┘
        """
        if isinstance(digits, bool) or not isinstance(digits, int) or digits < 1:
            msg = (
                f"`round_sig_figs(digits={digits!r})`: digits must be a whole number >= 1 "
                "(as in polars), e.g. `x.round_sig_figs(3)`"
            )
            raise InvalidOperationError(msg)
        return Expr(Function("round_sig_figs", (self.node,), (digits,)))

    def truncate(self, decimals: int = 0) -> Expr:
        """Cut toward zero to ``decimals`` places, as polars does (integers unchanged).

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [2.679, -0.991]})
        >>> df.gpu.select(cb.col("x").truncate(1)).compute()["x"].to_list()
        [2.6, -0.9]
        """
        if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
            msg = (
                f"`truncate(decimals={decimals!r})`: decimals must be a whole number >= 0, "
                "e.g. `x.truncate(2)`"
            )
            raise UnsupportedOperationError(msg)
        return Expr(Round(self.node, decimals, "to_zero"))

    def sign(self) -> Expr:
        """-1, 0 or 1 (floats keep -0.0 and NaN)."""
        return self._unary("sign")

    def is_null(self) -> Expr:
        """True where the value is null (never null itself)."""
        return self._unary("is_null")

    def is_not_null(self) -> Expr:
        """True where the value is not null (never null itself)."""
        return self._unary("is_not_null")

    def is_nan(self) -> Expr:
        """True where the value is NaN (null stays null; integers are never NaN)."""
        return self._unary("is_nan")

    def is_not_nan(self) -> Expr:
        """True where the value is not NaN (null stays null)."""
        return self._unary("is_not_nan")

    def is_finite(self) -> Expr:
        """True where the value is neither infinite nor NaN."""
        return self._unary("is_finite")

    def is_infinite(self) -> Expr:
        """True where the value is +inf or -inf."""
        return self._unary("is_infinite")

    def reinterpret(self, *, signed: bool | None = None, dtype: Any = None) -> Expr:
        """The bits of each integer read as the integer type of the same width (``pl.reinterpret``).

        ``signed=True`` reads them as the signed type, ``False`` as the unsigned one
        (-1 as Int64 is 18446744073709551615 as UInt64); ``dtype`` names an integer
        type of the same width instead (exactly one of the two). A float is left as it
        is, as polars leaves it; other types, widths that differ and float bits read as
        integers (or back) are refused.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"a": [-1, 2]}, schema={"a": pl.Int8})
        >>> df.gpu.select(cb.col("a").reinterpret(signed=False)).compute()["a"].to_list()
        [255, 2]
        """
        if (signed is None) == (dtype is None):
            msg = "`reinterpret` takes exactly one of `signed` and `dtype`, e.g. `signed=False`"
            raise InvalidOperationError(msg)
        target = bool(signed) if dtype is None else parse_dtype(dtype)
        return Expr(Function("reinterpret", (self.node,), (target,)))

    def bitwise_count_ones(self) -> Expr:
        """The number of set bits of each integer (or boolean), as UInt32.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [0, 5, -1]}, schema={"a": pl.Int8})
        >>> df.gpu.select(cb.col("a").bitwise_count_ones()).compute()["a"].to_list()
        [0, 2, 8]
        """
        return self._unary("bitwise_count_ones")

    def bitwise_count_zeros(self) -> Expr:
        """The number of unset bits of each integer in its type's width (a boolean: one bit).

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [0, 5, -1]}, schema={"a": pl.Int8})
        >>> df.gpu.select(cb.col("a").bitwise_count_zeros()).compute()["a"].to_list()
        [8, 6, 0]
        """
        return self._unary("bitwise_count_zeros")

    def bitwise_leading_ones(self) -> Expr:
        """The number of set bits above the highest unset one (UInt32).

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [0, -4, -1]}, schema={"a": pl.Int8})
        >>> df.gpu.select(cb.col("a").bitwise_leading_ones()).compute()["a"].to_list()
        [0, 6, 8]
        """
        return self._unary("bitwise_leading_ones")

    def bitwise_leading_zeros(self) -> Expr:
        """The number of unset bits above the highest set one, in the type's width (UInt32).

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [0, 1, 5]}, schema={"a": pl.UInt16})
        >>> df.gpu.select(cb.col("a").bitwise_leading_zeros()).compute()["a"].to_list()
        [16, 15, 13]
        """
        return self._unary("bitwise_leading_zeros")

    def bitwise_trailing_ones(self) -> Expr:
        """The number of set bits below the lowest unset one (UInt32).

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [0, 7, -1]}, schema={"a": pl.Int32})
        >>> df.gpu.select(cb.col("a").bitwise_trailing_ones()).compute()["a"].to_list()
        [0, 3, 32]
        """
        return self._unary("bitwise_trailing_ones")

    def bitwise_trailing_zeros(self) -> Expr:
        """The number of unset bits below the lowest set one; the type's width for 0 (UInt32).

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [0, 8, 12]}, schema={"a": pl.Int64})
        >>> df.gpu.select(cb.col("a").bitwise_trailing_zeros()).compute()["a"].to_list()
        [64, 3, 2]
        """
        return self._unary("bitwise_trailing_zeros")

    def is_close(self, other: Any, *, abs_tol: float = 0.0, rel_tol: float = 1e-09,
                 nans_equal: bool = False) -> Expr:  # fmt: skip
        """True where the value is close to ``other`` (a number, or an expression per row).

        As polars' (and Python's ``math.isclose``): both sides as Float64, finite values
        are close when ``|x - y| <= max(rel_tol * max(|x|, |y|), abs_tol)``, infinities
        when they have one sign, NaN only with ``nans_equal``; null where either side
        is. Numbers only (integers, floats); a string names a column.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"a": [1.5, 2.0, 2.5], "b": [1.55, 2.2, 3.0]})
        >>> df.gpu.select(c=cb.col("a").is_close("b", abs_tol=0.1)).compute()["c"].to_list()
        [True, False, False]
        """
        tolerances = {"abs_tol": abs_tol, "rel_tol": rel_tol}
        for name, value in tolerances.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not value >= 0:  # fmt: skip
                msg = (f"`is_close`: `{name}` must be a non-negative number, got {value!r}; "
                       "give 0 or more (0 asks for equal values)")  # fmt: skip
                raise InvalidOperationError(msg)
        options = (float(abs_tol), float(rel_tol), bool(nans_equal))
        return Expr(Function("is_close", (self.node, _arg_node(other)), options))

    def bin_intervals(
        self,
        intervals: Sequence[Any] | Any,
        *,
        labels: Sequence[str] | bool,
        include_intervals: bool = False,
        right_closed: bool = False,
    ) -> Expr:
        """The bin of each value between ascending breakpoints, as polars' ``bin_intervals``.

        Bins are left-closed ``[a, b)`` (``right_closed=True``: ``(a, b]``), the first
        open below and the last open above; NaN is the largest value, so it falls in
        the last bin. ``labels=False`` gives the bin's index (UInt32), a list of one
        label per bin an Enum of them. Breakpoints are numbers, dates, datetimes,
        durations, times or strings, non-decreasing and without nulls.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [0.5, 1.0, 7.0, None]})
        >>> b = cb.col("x").bin_intervals([1, 5], labels=["low", "mid", "high"])
        >>> df.gpu.select(b).compute()["x"].to_list()
        ['low', 'mid', 'high', None]
        """
        if include_intervals:
            msg = ("`bin_intervals(include_intervals=True)` makes a struct column, which "
                   "colbridge does not build; bin, then join the breakpoints")  # fmt: skip
            raise UnsupportedOperationError(msg)
        if isinstance(intervals, int) and not isinstance(intervals, bool):
            msg = (
                f"`bin_intervals({intervals})`: equal-width bins over the data's range are not "
                "supported; give the breakpoints, e.g. from `x.min()` and `x.max()` computed "
                "first"
            )
            raise UnsupportedOperationError(msg)
        breaks = _breakpoints("bin_intervals", intervals)
        for a, b in itertools.pairwise(breaks):
            if _total_order_key(b) < _total_order_key(a):
                msg = f"`bin_intervals`: the breakpoints {list(breaks)} must be non-decreasing"
                raise InvalidOperationError(msg)
        names = _bin_labels("bin_intervals", labels, builtins.len(breaks) + 1)
        return Expr(Function("bin_intervals", (self.node,), (breaks, names, right_closed, False)))

    def cut(
        self,
        breaks: Sequence[float],
        *,
        labels: Sequence[str] | None = None,
        left_closed: bool = False,
        include_breaks: bool = False,
    ) -> Expr:
        """Values in bins between ``breaks``, as an Enum, as polars' (deprecated) ``cut``.

        Bins are right-closed ``(a, b]`` unless ``left_closed``; the breaks are sorted,
        compared as floats and must be unique; a NaN value is null. Without ``labels``
        each bin is named by its interval as polars writes it (``"(-inf, 1]"``).
        """
        if include_breaks:
            msg = ("`cut(include_breaks=True)` makes a struct column, which colbridge does "
                   "not build; cut, then join the breaks")  # fmt: skip
            raise UnsupportedOperationError(msg)
        values = _breakpoints("cut", breaks)
        if any(isinstance(b, (str, bool)) or not isinstance(b, (int, float)) for b in values):
            msg = f"`cut`: the breaks {list(values)} must be numbers"
            raise SchemaError(msg)
        points = tuple(sorted(float(b) for b in values))
        if any(math.isnan(b) for b in points):
            msg = "`cut`: the breaks cannot be NaN"
            raise InvalidOperationError(msg)
        if any(math.isinf(b) for b in points):  # polars: its bins already end at -inf and inf
            msg = (f"`cut`: the breaks {list(values)} include an infinity; leave it out "
                   "(the first bin starts at -inf, the last ends at inf)")  # fmt: skip
            raise InvalidOperationError(msg)
        if builtins.len(set(points)) < builtins.len(points):
            msg = f"`cut`: the breaks {list(values)} are not unique"
            raise InvalidOperationError(msg)
        names: tuple[str, ...] | None
        if labels is None:
            ends = ["-inf", *(_float_text(b) for b in points), "inf"]
            pairs = itertools.pairwise(ends)
            names = tuple(f"[{a}, {b})" if left_closed else f"({a}, {b}]" for a, b in pairs)
        else:
            if builtins.len(labels) != builtins.len(points) + 1:
                msg = (f"`cut`: expected {builtins.len(points) + 1} labels "
                       f"(len(breaks) + 1), got {builtins.len(labels)}")  # fmt: skip
                raise ShapeError(msg)
            names = _bin_labels("cut", list(labels), builtins.len(points) + 1)
        return Expr(Function("bin_intervals", (self.node,), (points, names, not left_closed, True)))

    def bin_quantiles(
        self,
        quantiles: Sequence[float] | int,
        *,
        labels: Sequence[str] | bool,
        include_intervals: bool = False,
        right_closed: bool = False,
    ) -> Expr:
        """The bin of each value between quantiles of the data, as polars' ``bin_quantiles``.

        The breakpoint of quantile ``q`` is the sorted value at ``floor(q * (len - 1))``
        of the non-null values (NaN the largest), in the column's own type; an integer
        ``k`` gives ``k`` bins, the ``i``-th breakpoint at ``i * (len - 1) // k`` exactly.
        Bins are left-closed ``[a, b)`` (``right_closed=True``: ``(a, b]``), the first
        open below and the last open above; two equal breakpoints delimit an empty bin.
        Per group in ``group_by`` and ``over``, as polars. ``labels=False`` gives the
        bin's index (UInt32), a list of one label per bin an Enum of them.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1, 1, 2, 2]})
        >>> b = cb.col("x").bin_quantiles([0.1, 0.25, 0.75], labels=["a", "b", "c", "d"])
        >>> df.gpu.select(b).compute()["x"].to_list()
        ['c', 'c', 'd', 'd']
        """
        if include_intervals:
            msg = ("`bin_quantiles(include_intervals=True)` makes a struct column, which "
                   "colbridge does not build; bin, then compute the breakpoints with "
                   "`quantile(q, 'lower')`")  # fmt: skip
            raise UnsupportedOperationError(msg)
        _flag(right_closed, "bin_quantiles", "right_closed")
        # the breakpoint at a position of the sorted non-null values (NaN the largest),
        # taken as the value itself (exact, where `quantile` gives a Float64)
        last = self.count().cast("int64") - 1
        places: list[Expr]
        if isinstance(quantiles, int) and not isinstance(quantiles, bool):
            if quantiles < 1:
                msg = f"`bin_quantiles({quantiles})`: binning needs at least one bin"
                raise InvalidOperationError(msg)
            places = [last * i // quantiles for i in range(1, quantiles)]  # exactly
        else:
            fractions = _fractions("bin_quantiles", quantiles)
            places = [(last * float(q)).floor() for q in fractions]  # as polars rounds
        names = _bin_labels("bin_quantiles", labels, builtins.len(places) + 1)
        order = self.rank("ordinal")  # 1, 2, ... in sorted order, NaN last, nulls none
        above: list[Expr] = []
        for place in places:
            point = self.filter(order == place + 1).first()
            above.append((self > point) if right_closed else (self >= point))
        return self._bin_of(above, names)

    def bin_ranks(
        self,
        ranks: Sequence[float] | int,
        *,
        labels: Sequence[str] | bool,
        include_intervals: bool = False,
    ) -> Expr:
        """The bin of each value by its position in sorted order, as polars' ``bin_ranks``.

        Each non-null value's position among the ``len`` sorted ones (equal values in
        frame order, NaN the largest) is compared with the cumulative bin sizes: for
        fractions ``f``, ``floor(f * len + 0.5)``; for an integer ``k``, ``k`` bins of
        ``len // k`` values, the first ``len % k`` one more. Equal values may be split
        between two bins. Per group in ``group_by`` and ``over``. ``labels=False`` gives
        the bin's index (UInt32), a list of one label per bin an Enum of them.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1, 1, 2, 2]})
        >>> b = cb.col("x").bin_ranks([0.25, 0.75], labels=["a", "b", "c"])
        >>> df.gpu.select(b).compute()["x"].to_list()
        ['a', 'b', 'b', 'c']
        """
        if include_intervals:
            msg = ("`bin_ranks(include_intervals=True)` makes a struct column, which "
                   "colbridge does not build")  # fmt: skip
            raise UnsupportedOperationError(msg)
        size = self.count().cast("int64")
        ends: list[Expr]  # the last position of each bin but the last
        if isinstance(ranks, int) and not isinstance(ranks, bool):
            if ranks < 1:
                msg = f"`bin_ranks({ranks})`: binning needs at least one bin"
                raise InvalidOperationError(msg)
            each, extra = size // ranks, size % ranks  # the first `extra` bins one more
            ends = [each * i + min_horizontal(extra, i) for i in range(1, ranks)]
        else:
            fractions = _fractions("bin_ranks", ranks)
            ends = [(size.cast("float64") * float(f) + 0.5).floor() for f in fractions]
        names = _bin_labels("bin_ranks", labels, builtins.len(ends) + 1)
        position = self.rank("ordinal")  # 1, 2, ... in sorted order, ties in frame order
        return self._bin_of([position > end for end in ends], names)

    def _bin_of(self, above: list[Expr], names: tuple[str, ...] | None) -> Expr:
        """The bin index, the number of ``above`` tests true (null for a null value)."""
        index: Expr = lit(0, dtype="uint32")
        for test in above:
            index = index + test.cast("uint32")
        # a null value is in no bin; named after the column, as polars names it
        index = when(self.is_not_null()).then(index).name.keep()
        if names is None:
            return index
        # the index's bin among 0, 1, ...: one label each
        steps = tuple(range(1, builtins.len(names)))
        return Expr(Function("bin_intervals", (index.node,), (steps, names, False, False)))

    def is_between(self, lower_bound: Any, upper_bound: Any, closed: str = "both") -> Expr:
        """True where the value lies between the bounds (numbers or expressions).

        ``closed`` is ``"both"`` (the default), ``"left"``, ``"right"`` or ``"none"``.
        The comparisons are polars' (NaN is the largest value) and are joined with
        Kleene AND, so a null in a bound column gives null only where the other test
        is true; a bound given as ``None`` makes every row null, as in polars.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1, 5, 9, None]})
        >>> df.gpu.select(cb.col("x").is_between(2, 9, closed="left")).compute()["x"].to_list()
        [False, True, False, None]
        """
        if closed not in CLOSED:
            msg = f"`is_between(closed={closed!r})` is not an interval kind; use one of {CLOSED}"
            raise UnsupportedOperationError(msg)
        if lower_bound is None or upper_bound is None:
            # polars: a missing bound (Python None) makes every row null, not only those
            # the other test holds for (a null in a bound column is Kleene's, below)
            return Expr(When(Unary("is_null", self.node), Literal(None, DType.BOOL),
                             Literal(None, DType.BOOL)))  # fmt: skip
        lower, upper = Expr(_arg_node(lower_bound)), Expr(_arg_node(upper_bound))
        left = self >= lower if closed in ("both", "left") else self > lower
        right = self <= upper if closed in ("both", "right") else self < upper
        return left & right

    def is_in(self, other: Any, *, nulls_equal: bool = False) -> Expr:
        """True where the value equals one of ``other``, a list of numbers or booleans.

        As in polars, the list's kind must match the column's (integers for an
        integer column, floats for a float column, booleans for a bool column);
        a null row gives null unless ``nulls_equal=True`` and the list holds None.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1, 2, 3, None]})
        >>> df.gpu.select(cb.col("x").is_in([1, 3])).compute()["x"].to_list()
        [True, False, True, None]
        """
        if _is_expression(other) or not isinstance(other, Iterable):
            msg = (
                f"`is_in` takes a list of values, got {type(other).__name__}; columns of "
                "lists are not supported: write the values, e.g. `is_in([1, 2, 3])`"
            )
            raise UnsupportedOperationError(msg)
        values = tuple(_is_in_value(v) for v in other)
        if builtins.len(values) > MAX_IS_IN_VALUES:
            msg = (
                f"`is_in` with {builtins.len(values)} values: colbridge compares at most "
                f"{MAX_IS_IN_VALUES} in a kernel; filter with a join in the source frame instead"
            )
            raise UnsupportedOperationError(msg)
        return Expr(Function("is_in", (self.node,), (values, bool(nulls_equal))))

    def cast(self, dtype: Any, *, strict: bool = True) -> Expr:
        """Convert to ``dtype``. ``strict=True`` raises on values that do not fit; else null.

        ``dtype`` is a number type, or a logical one (``pl.Date``, ``pl.Datetime("ms")``,
        ``pl.Duration``, ``pl.Time``, ``pl.String``, ``pl.Categorical``) as polars casts:
        a datetime to a coarser unit or to a date is floored; strings parse as numbers
        (to dates with `str.to_date`/`str.to_datetime`: polars 2 has no such cast).
        """
        if isinstance(dtype, str):
            dtype = polars_type_name(dtype)
        logical = parse_logical(dtype)
        if logical is not None:
            return Expr(Function("cast", (self.node,), (logical, strict)))
        return Expr(Cast(self.node, parse_dtype(dtype), strict))

    def to_physical(self) -> Expr:
        """The stored integers: a categorical's codes (UInt32), a date's days, and so on."""
        return Expr(Function("to_physical", (self.node,)))

    def fill_null(self, value: Any = None, strategy: str | None = None,
                  limit: int | None = None) -> Expr:  # fmt: skip
        """Replace nulls by ``value`` (an expression or a scalar), or by a ``strategy``.

        Strategies (polars'): ``"forward"`` / ``"backward"`` (the previous / next
        non-null value, at most ``limit`` rows away), ``"min"``, ``"max"``, ``"mean"``
        (of the column; an integer column takes the mean truncated), ``"zero"``, ``"one"``.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1, None, None, 4]})
        >>> filled = df.gpu.select(cb.col("x").fill_null(strategy="forward", limit=1)).compute()
        >>> filled["x"].to_list()
        [1, 1, None, 4]
        """
        if strategy is None:
            if limit is not None:
                msg = "`fill_null(limit=...)` applies to the forward and backward strategies only"
                raise SchemaError(msg)
            if value is None:
                msg = "`fill_null` needs a `value` or a `strategy` (e.g. strategy='forward')"
                raise SchemaError(msg)
            return Expr(Coalesce((self.node, to_node(value))))
        if value is not None:
            msg = "`fill_null` takes a `value` or a `strategy`, not both"
            raise SchemaError(msg)
        if strategy in ("forward", "backward"):
            limit = _count_param(limit, "fill_null", "limit", allow_none=True)
            func = "forward_fill" if strategy == "forward" else "backward_fill"
            return Expr(Scan(func, self.node, (limit,)))
        if limit is not None:
            msg = f"`fill_null(strategy={strategy!r})` takes no `limit`; only forward/backward do"
            raise SchemaError(msg)
        if strategy in ("min", "max"):
            return Expr(Coalesce((self.node, Agg(strategy, self.node))))
        if strategy in ("zero", "one"):  # the zero or one of the column's own type
            return Expr(Function("fill_zero_or_one", (self.node,), (strategy == "one",)))
        if strategy == "mean":
            # the mean in the column's type (an integer column's truncated, as polars)
            mean = Function("cast_like", (Agg("mean", self.node), self.node))
            return Expr(Coalesce((self.node, mean)))
        msg = (
            f"unknown `fill_null` strategy {strategy!r}; use one of 'forward', 'backward', "
            "'min', 'max', 'mean', 'zero', 'one'"
        )
        raise SchemaError(msg)

    def forward_fill(self, limit: int | None = None) -> Expr:
        """Fill nulls with the previous non-null value, at most ``limit`` rows back.

        The same as ``fill_null(strategy="forward", limit=limit)``, as in polars.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1, None, None, 4]})
        >>> df.gpu.select(cb.col("x").forward_fill()).compute()["x"].to_list()
        [1, 1, 1, 4]
        >>> df.gpu.select(cb.col("x").forward_fill(limit=1)).compute()["x"].to_list()
        [1, 1, None, 4]
        """
        return self.fill_null(strategy="forward", limit=limit)

    def backward_fill(self, limit: int | None = None) -> Expr:
        """Fill nulls with the next non-null value, at most ``limit`` rows ahead.

        The same as ``fill_null(strategy="backward", limit=limit)``, as in polars.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1, None, None, 4]})
        >>> df.gpu.select(cb.col("x").backward_fill()).compute()["x"].to_list()
        [1, 4, 4, 4]
        >>> df.gpu.select(cb.col("x").backward_fill(limit=1)).compute()["x"].to_list()
        [1, None, 4, 4]
        """
        return self.fill_null(strategy="backward", limit=limit)

    # -- ordered operations (rows in frame order; per group with `.over`) -------------------
    def shift(self, n: int = 1, *, fill_value: Any = None) -> Expr:
        """The value ``n`` rows earlier (later for negative ``n``); ``fill_value`` where none.

        The result takes the supertype of the column and ``fill_value``, as in polars.
        ``fill_value`` is a number (filled in by the scan), or a string, date or
        expression (``x.shift(1, fill_value=x.mean())``), taken on the rows shifted in.
        """
        n = _count_param(n, "shift", "n", signed=True)
        fill = _number_of(fill_value)
        if fill is None or (isinstance(fill, (bool, int, float)) and not isinstance(
                fill, np.generic)):  # fmt: skip
            return Expr(Scan("shift", self.node, (n, fill)))
        # a NumPy scalar keeps its type (`np.float64(0.1)` next to Float32 is Float64), as
        # in polars: a typed value, as an expression fill is
        return Expr(shift_with_fill(self.node, n, to_node(fill)))

    def diff(self, n: int = 1, null_behavior: str = "ignore") -> Expr:
        """``x - x.shift(n)``; unsigned integers are first widened to a signed type.

        ``null_behavior="drop"`` (polars drops the first ``n`` rows, the last ``-n``
        for a negative ``n``: a result shorter than the frame, which polars allows only
        alone in a ``select``) is refused: compute ``x.diff(n)`` and slice the computed
        frame (``out[n:]``, or ``out[:n]`` for a negative ``n``).
        """
        n = _count_param(n, "diff", "n", signed=True)
        if null_behavior == "drop":
            rows = f"out[{n}:]" if n >= 0 else f"out[:{n}]"
            which = f"the first {n}" if n >= 0 else f"the last {-n}"
            msg = (
                f"`diff({n}, null_behavior='drop')` is not supported: it drops {which} "
                "row(s), so its result is shorter than the frame and cannot sit beside "
                "other columns (polars allows it only alone in a `select`); compute "
                f"`diff({n})` (null_behavior='ignore') and slice the computed frame, "
                f"e.g. `{rows}`"
            )
            raise UnsupportedOperationError(msg)
        if null_behavior != "ignore":
            msg = f"unknown `diff` null_behavior {null_behavior!r}; use 'ignore' or 'drop'"
            raise SchemaError(msg)
        return Expr(Scan("diff", self.node, (n,)))

    def pct_change(self, n: int = 1) -> Expr:
        """``(x - x.shift(n)) / x.shift(n)`` in floating point."""
        n = _count_param(n, "pct_change", "n", signed=True)
        return Expr(Scan("pct_change", self.node, (n,)))

    def is_duplicated(self) -> Expr:
        """True where the row's value occurs on another row too, as polars.

        Null and NaN are values, ``-0.0`` is ``0.0``; any type; per group with ``.over(...)``.
        """
        return Expr(Scan("is_duplicated", self.node))

    def is_unique(self) -> Expr:
        """True where the row's value occurs on no other row (see `is_duplicated`)."""
        return Expr(Scan("is_unique", self.node))

    def is_first_distinct(self) -> Expr:
        """True on the first row of each distinct value (see `is_duplicated`)."""
        return Expr(Scan("is_first_distinct", self.node))

    def is_last_distinct(self) -> Expr:
        """True on the last row of each distinct value (see `is_duplicated`)."""
        return Expr(Scan("is_last_distinct", self.node))

    def replace(self, old: Any, new: Any = _NO_NEW) -> Expr:
        """Values equal to one of ``old`` replaced by the matching ``new`` (polars' ``replace``).

        ``old`` and ``new``: one value each, lists of equal length (or one ``new`` for
        every ``old``), or a mapping ``{old: new}`` alone. The result keeps the column's
        type: both are cast to it strictly, as polars casts them (``2.5`` matches ``2``
        in an integer column, ``"7"`` is the number 7, a value out of the type's range is
        an error); values not in ``old`` stay; ``None`` in ``old`` replaces nulls, in
        ``new`` gives null. Values match as ``==`` does (NaN matches NaN, ``-0.0``
        matches ``0.0``). A string or categorical column maps its distinct strings (any
        number of pairs); other types compare each row with each ``old`` (at most
        64). ``old`` and ``new`` are values, not expressions.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1, 2, 3, None]})
        >>> df.gpu.select(cb.col("x").replace({1: 10, None: 0})).compute()["x"].to_list()
        [10, 2, 3, 0]
        """
        olds, news = _replace_pairs(old, new)
        if not olds:
            return self
        return Expr(Function("replace", (self.node,), (olds, news)))

    def replace_strict(self, old: Any, new: Any = _NO_NEW, *, default: Any = _NO_NEW,
                       return_dtype: Any = None) -> Expr:  # fmt: skip
        """Every value mapped by ``old`` -> ``new``, as polars' ``replace_strict``.

        ``old``/``new`` as in `replace`; ``old`` is cast strictly to the column's
        type. The result's type is ``return_dtype``, else that of the ``new`` values
        (a list's as a polars Series types it: Int64 for integers; one scalar as a
        literal: Int32) and ``default`` together. Rows whose value is not in ``old``
        take ``default`` (a value or an expression; nulls too, unless ``None`` is in
        ``old``); without a ``default``, such a non-null row is an error and a null row
        stays null. At most 64 values (each row is compared with each).

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"s": ["lo", "hi", None, "lo"]})
        >>> df.gpu.select(cb.col("s").replace_strict({"lo": 0, "hi": 1})).compute()["s"].to_list()
        [0, 1, None, 0]
        """
        scalar_new = new is not _NO_NEW and (
            isinstance(new, (str, bytes)) or not isinstance(new, Iterable))  # fmt: skip
        olds, news = _replace_pairs(old, new)
        # one new value for every old one: polars' single-value path, whose checks differ
        single = scalar_new or (new is not _NO_NEW and builtins.len(_replace_values(new)) == 1)
        single = single or builtins.len(olds) == 1
        new_type = None if scalar_new else _series_type(news)
        returned = None if return_dtype is None else (
            parse_logical(return_dtype) or parse_dtype(return_dtype))  # fmt: skip
        given = default is not _NO_NEW
        # a default is a value (a string too, as in polars) or an expression
        args = (self.node, to_node(default)) if given else (self.node,)
        return Expr(Function("replace_strict", args,
                             (olds, news, new_type, returned, given, single)))  # fmt: skip

    def rle_id(self) -> Expr:
        """The number of the row's run of equal values, from 0 (UInt32), as polars' ``rle_id``.

        A new run starts where the value differs from the row before (`ne_missing`:
        nulls are equal to each other, NaN to NaN, ``-0.0`` to ``0.0``). Per group with
        ``.over(...)``, a group's rows in frame order. Written with the operations it is
        made of: a running count of the rows (after the first) that start a run.
        """
        after_first = Scan("shift_in_range", self.node, (1,))  # the row has one before it
        starts = When(after_first, self.ne_missing(self.shift(1)).node, Literal(False))
        return Expr(starts).cum_sum()

    def interpolate(self, method: str = "linear") -> Expr:
        """Nulls between two non-null values filled from them, as polars fills them.

        ``"linear"``: ``low + k * (high - low) / steps`` at ``k`` rows past the value
        before (integers become Float64, floats keep their type; dates, datetimes,
        durations and times in their integers, the step truncated toward zero);
        ``"nearest"``: the nearer of the two (the later one at a tie), in the column's
        type. Nulls before the first value and after the last stay null; NaN is a
        value. Strings, categoricals and booleans are refused (polars panics on them).
        Per group with ``.over(...)``.
        """
        if method not in ("linear", "nearest"):
            msg = f"`interpolate(method={method!r})`: use 'linear' or 'nearest'"
            raise SchemaError(msg)
        return Expr(Scan("interpolate", self.node, (method,)))

    def interpolate_by(self, by: Any) -> Expr:
        """Nulls filled linearly in ``by`` between the values around them, as polars.

        The rows are taken in the order of ``by`` (equal ones in frame order); a null
        between two values is ``low + (by - by_low) * ((high - low) / (by_high -
        by_low))`` in the result's type (integers as Float64, floats keep theirs; the
        ``by`` differences taken in ``by``'s own type, a date's or datetime's integers,
        then converted). Nulls before the first value and after the last stay null.
        Values of Int32, Int64, UInt32, UInt64 or a float type; ``by`` of those, a
        Date or a Datetime, without nulls (as polars). Per group with ``.over(keys)``.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [1, None, None, 3], "b": [1, 2, 7, 8]})
        >>> df.gpu.select(cb.col("a").interpolate_by("b")).compute()["a"].round(4).to_list()
        [1.0, 1.2857, 2.7143, 3.0]
        """
        key = _arg_node(by)
        y = Expr(Function("interpolate_by_values", (self.node,)))
        x = Expr(Function("interpolate_by_key", (key,)))
        known = y.is_not_null()
        x_known = when(known).then(x)
        y0, y1 = y.forward_fill(), y.backward_fill()
        x0, x1 = x_known.forward_fill(), x_known.backward_fill()

        def as_y(e: Expr) -> Expr:  # a `by` difference in the values' float type
            return Expr(Function("cast_like", (e.node, y.node)))

        slope = (y1 - y0) / as_y(x1 - x0)
        value = y0 + as_y(x - x0) * slope
        return when(known).then(y).otherwise(value).over(order_by=Expr(key))

    def rank(self, method: str = "average", *, descending: bool = False,
             seed: int | None = None) -> Expr:  # fmt: skip
        """Each value's rank among the column's non-null values, 1 for the smallest (polars).

        Equal values (NaN equals NaN and ranks above every number; ``-0.0`` equals
        ``0.0``) share the ``"average"`` of their ranks (Float64), the ``"min"`` or
        ``"max"`` of them, or take ``"dense"`` ranks (no gaps) or ``"ordinal"`` ones (in
        row order); those four are UInt32. A null stays null. ``descending`` ranks the
        largest first. Numbers, booleans, strings (by their UTF-8 bytes), dates, times
        and durations; per group with ``.over(...)``. ``method="random"`` (and so
        ``seed``) is not supported: use ``"ordinal"`` on shuffled rows.
        """
        if method == "random" or seed is not None:
            msg = (
                f"`rank(method={method!r}, seed={seed!r})`: random tie-breaking is not "
                "supported; use 'ordinal' (ties in row order) on rows shuffled first"
            )
            raise UnsupportedOperationError(msg)
        if method not in RANK_METHODS:
            msg = (f"`rank(method={method!r})`: unknown method; use one of "
                   f"{', '.join(repr(m) for m in RANK_METHODS)}")  # fmt: skip
            raise SchemaError(msg)
        if not isinstance(descending, (bool, np.bool_)):
            msg = f"`rank(descending={descending!r})`: expected True or False"
            raise SchemaError(msg)
        return Expr(Scan("rank", self.node, (method, bool(descending))))

    def sort(self, *, descending: bool = False, nulls_last: bool = False) -> Expr:
        """The column's values in sorted order (polars): nulls first unless ``nulls_last``.

        Values ordered as polars sorts them: NaN after every number, ``-0.0`` equal to
        ``0.0``, strings and categoricals by their UTF-8 bytes, an Enum by the order of
        its categories, ``False`` before ``True``. With ``.over(keys)`` each group's
        values are sorted and take the group's rows in frame order.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"g": [1, 2, 1, 2], "x": [3, None, 1, 2]})
        >>> df.gpu.select(cb.col("x").sort().over("g")).compute()["x"].to_list()
        [1, None, 3, 2]
        """
        return Expr(Scan("sort", self.node, (_flag(descending, "sort", "descending"),
                                             _flag(nulls_last, "sort", "nulls_last"))))

    def arg_sort(self, *, descending: bool = False, nulls_last: bool = False) -> Expr:
        """The row indices (UInt32) that put the column in `sort`'s order (polars).

        Stable: equal values (and nulls) keep their frame order, ``descending`` too.
        With ``.over(keys)`` each group's indices count its own rows from 0.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"x": [3.0, None, 1.0, 3.0]})
        >>> df.gpu.select(cb.col("x").arg_sort(descending=True)).compute()["x"].to_list()
        [1, 0, 3, 2]
        """
        return Expr(Scan("arg_sort", self.node, (
            _flag(descending, "arg_sort", "descending"),
            _flag(nulls_last, "arg_sort", "nulls_last"))))  # fmt: skip

    def sort_by(self, by: Any, *more_by: Any, descending: bool | Sequence[bool] = False,
                nulls_last: bool | Sequence[bool] = False, multithreaded: bool = True,
                maintain_order: bool = False) -> Expr:  # fmt: skip
        """The column's values in the order of ``by`` (then ``more_by``), as polars sorts them.

        ``descending`` and ``nulls_last`` are one flag for every key or one per key
        (nulls first unless ``nulls_last``, values ordered as `sort` orders them).
        Rows of equal keys keep their frame order whatever ``maintain_order`` says
        (the stable order is one polars may give, and the only one it gives with
        ``maintain_order=True``). With ``.over(keys)`` each group's values are taken in
        its order of ``by`` and placed on the group's rows in frame order; inside
        ``over(..., order_by=...)`` it is refused (sort the frame by that order first).

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"x": [1, 2, 3, 4], "t": [2, None, 1, 2], "u": [0, 0, 0, 9]})
        >>> x = cb.col("x")
        >>> df.gpu.select(x.sort_by("t", "u", descending=[False, True])).compute()["x"].to_list()
        [2, 3, 4, 1]
        """
        keys = _key_nodes((by, *more_by), "sort_by")
        flags = tuple(_flags(value, builtins.len(keys), name)
                      for name, value in (("descending", descending), ("nulls_last", nulls_last)))
        _flag(multithreaded, "sort_by", "multithreaded")
        _flag(maintain_order, "sort_by", "maintain_order")
        return Expr(Scan("sort_by", self.node, flags, KeySet((), keys)))

    def reverse(self) -> Expr:
        """The column's rows in reverse order (polars); per group with ``.over(keys)``.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"x": ["a", None, "c"]})
        >>> df.gpu.select(cb.col("x").reverse()).compute()["x"].to_list()
        ['c', None, 'a']
        """
        return Expr(Scan("reverse", self.node, ()))

    def _cumulative(self, func: str, reverse: bool) -> Expr:
        return Expr(Scan(func, self.node, (bool(reverse),)))

    def cum_sum(self, *, reverse: bool = False) -> Expr:
        """Running sum of the non-null values; a null row stays null (polars' types)."""
        return self._cumulative("cum_sum", reverse)

    def cum_prod(self, *, reverse: bool = False) -> Expr:
        """Running product of the non-null values; a null row stays null."""
        return self._cumulative("cum_prod", reverse)

    def cum_min(self, *, reverse: bool = False) -> Expr:
        """Running minimum of the non-null values; a null row stays null."""
        return self._cumulative("cum_min", reverse)

    def cum_max(self, *, reverse: bool = False) -> Expr:
        """Running maximum of the non-null values; a null row stays null."""
        return self._cumulative("cum_max", reverse)

    def cum_count(self, *, reverse: bool = False) -> Expr:
        """Running count of the non-null values (UInt32, never null)."""
        return self._cumulative("cum_count", reverse)

    def _rolling(self, func: str, window_size: int, weights: Any, min_samples: int | None,
                 center: bool, ddof: int = 1) -> Expr:  # fmt: skip
        window_size, min_samples = _window(func, window_size, min_samples)
        weighted = _rolling_weights(func, window_size, weights)
        ddof = _count_param(ddof, func, "ddof")
        options: tuple[Any, ...] = (window_size, min_samples, bool(center), ddof)
        if weighted is not None:
            options += (weighted,)
        return Expr(Scan(func, self.node, options))

    def rolling_sum(self, window_size: int, weights: Any = None, *,
                    min_samples: int | None = None, center: bool = False) -> Expr:  # fmt: skip
        """Sum over the last ``window_size`` rows (centred with ``center``).

        A window with fewer than ``min_samples`` non-null values (default: the
        window size) is null; nulls inside a window are left out.

        ``weights`` (one number per row of the window, the oldest row's first) make
        every ``rolling_*`` a weighted window, as polars computes it, in Float64
        (Float32 stays): the sum of ``w * x``; the mean ``sum(w * x) / sum(w)``; the
        variance ``sum(p * x**2) / sum(p) - mean**2`` with ``p = w / sum(weights)``
        (``ddof`` is not used) and the deviation its square root; min and max of
        ``w * x``. A window cut by the frame's edge takes the weights of its rows'
        places. Weighted windows over a column with nulls raise an error (polars
        defines none): fill the nulls first.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1.0, 2.0, 4.0, 8.0]})
        >>> out = df.gpu.select(cb.col("x").rolling_sum(2, weights=[0.5, 1.0])).compute()
        >>> out["x"].to_list()
        [None, 2.5, 5.0, 10.0]
        """
        return self._rolling("rolling_sum", window_size, weights, min_samples, center)

    def rolling_mean(self, window_size: int, weights: Any = None, *,
                     min_samples: int | None = None, center: bool = False) -> Expr:  # fmt: skip
        """Mean over the last ``window_size`` rows (see `rolling_sum` for nulls and weights)."""
        return self._rolling("rolling_mean", window_size, weights, min_samples, center)

    def rolling_min(self, window_size: int, weights: Any = None, *,
                    min_samples: int | None = None, center: bool = False) -> Expr:  # fmt: skip
        """Smallest value over the last ``window_size`` rows (see `rolling_sum`)."""
        return self._rolling("rolling_min", window_size, weights, min_samples, center)

    def rolling_max(self, window_size: int, weights: Any = None, *,
                    min_samples: int | None = None, center: bool = False) -> Expr:  # fmt: skip
        """Largest value over the last ``window_size`` rows (see `rolling_sum`)."""
        return self._rolling("rolling_max", window_size, weights, min_samples, center)

    def rolling_var(self, window_size: int, weights: Any = None, *,
                    min_samples: int | None = None, center: bool = False,
                    ddof: int = 1) -> Expr:  # fmt: skip
        """Variance over the last ``window_size`` rows; null where fewer than ``ddof + 1``."""
        return self._rolling("rolling_var", window_size, weights, min_samples, center, ddof)

    def rolling_std(self, window_size: int, weights: Any = None, *,
                    min_samples: int | None = None, center: bool = False,
                    ddof: int = 1) -> Expr:  # fmt: skip
        """Standard deviation over the last ``window_size`` rows (see `rolling_var`)."""
        return self._rolling("rolling_std", window_size, weights, min_samples, center, ddof)

    def rolling_quantile(self, quantile: float, interpolation: str = "nearest",
                         window_size: int = 2, weights: Any = None, *,
                         min_samples: int | None = None, center: bool = False) -> Expr:  # fmt: skip
        """The ``quantile`` of the non-null values of the last ``window_size`` rows.

        As polars: the window's values sorted (NaN above every number), the position
        ``(count - 1) * quantile`` taken as ``interpolation`` says (`quantile`'s
        methods; nulls are not counted in it, as in the whole-column `quantile`);
        integers and booleans give Float64, floats keep their type (a Float32 window
        interpolates in Float32). Windows, ``min_samples`` and ``center`` as
        `rolling_sum`; weights are not supported. Computed on the host from the whole
        column (or group); a stream cannot carry it.
        """
        value = _quantile_param(quantile, interpolation, "rolling_quantile")
        if weights is not None:
            msg = (
                "`rolling_quantile(weights=...)`: weighted rolling quantiles are not "
                "supported; leave `weights` out"
            )
            raise SchemaError(msg)
        window = self._rolling("rolling_quantile", window_size, None, min_samples, center)
        scan = window.node
        assert isinstance(scan, Scan)
        options = (*scan.options[:3], value, interpolation)
        return Expr(Scan("rolling_quantile", self.node, options))

    def rolling_skew(self, window_size: int, *, bias: bool = True,
                     min_samples: int | None = None, center: bool = False) -> Expr:  # fmt: skip
        """The skewness of the non-null values of each row's window, as polars' ``rolling_skew``.

        Each window's ``skew(bias=...)`` (NaN where its values do not vary; unbiased,
        null below 3 values); integers give Float64, floats keep their type. Windows,
        ``min_samples`` (by default the window) and ``center`` as `rolling_sum`. Each
        window is taken exactly, ``O(window_size)`` per row, on the host from the
        whole column (or group); a stream cannot carry it. polars updates its sums as
        the window slides: the two agree to about 1e-12 of the answer on ordinary data.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [1.0, 4.0, 2.0, 9.0]})
        >>> df.gpu.select(cb.col("a").rolling_skew(3)).compute()["a"].round(6).to_list()
        [None, None, 0.381802, 0.47033]
        """
        return self._rolling_moment("rolling_skew", window_size, min_samples, center,
                                    (_flag(bias, "rolling_skew", "bias"),))  # fmt: skip

    def rolling_kurtosis(self, window_size: int, *, fisher: bool = True, bias: bool = True,
                         min_samples: int | None = None, center: bool = False) -> Expr:  # fmt: skip
        """The kurtosis of each row's window, as polars' ``rolling_kurtosis``.

        Fisher's (a normal distribution gives 0.0) or Pearson's (3.0); unbiased, null
        below 4 values. Otherwise as `rolling_skew`.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [1.0, 4.0, 2.0, 9.0]})
        >>> df.gpu.select(cb.col("a").rolling_kurtosis(3)).compute()["a"].round(6).to_list()
        [None, None, -1.5, -1.5]
        """
        flags = (_flag(fisher, "rolling_kurtosis", "fisher"),
                 _flag(bias, "rolling_kurtosis", "bias"))  # fmt: skip
        return self._rolling_moment("rolling_kurtosis", window_size, min_samples, center,
                                    flags)  # fmt: skip

    def rolling_rank(self, window_size: int, method: str = "average", *,
                     seed: int | None = None, min_samples: int | None = None,
                     center: bool = False) -> Expr:  # fmt: skip
        """Each row's value ranked among its window's non-null values, as polars.

        The row's own value (the last of its window; its centre with ``center``) among
        the window's values sorted (NaN above every number and equal to NaN, ``-0.0``
        equal to ``0.0``): ``"average"`` of the tied ranks (Float64), ``"min"``,
        ``"max"`` or ``"dense"`` (UInt32). A null row is null; so is a window of fewer
        than ``min_samples`` values (by default the window). Numbers, booleans, dates,
        datetimes, durations and times. ``method="random"`` (and ``seed``) is not
        supported. Computed on the host from the whole column (or group), each
        window's values kept sorted; a stream cannot carry it.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [1, 4, 4, 1, 9]})
        >>> df.gpu.select(cb.col("a").rolling_rank(3)).compute()["a"].to_list()
        [None, None, 2.5, 1.0, 3.0]
        """
        if method == "random" or seed is not None:
            msg = (
                f"`rolling_rank(method={method!r}, seed={seed!r})`: random tie-breaking is "
                "not supported; use 'min', 'max', 'dense' or 'average'"
            )
            raise UnsupportedOperationError(msg)
        if method not in ("average", "min", "max", "dense"):
            msg = (f"`rolling_rank(method={method!r})`: unknown method; use 'average', 'min', "
                   "'max' or 'dense'")  # fmt: skip
            raise SchemaError(msg)
        window = self._rolling("rolling_rank", window_size, None, min_samples, center)
        scan = window.node
        assert isinstance(scan, Scan)
        return Expr(Scan("rolling_rank", self.node, (*scan.options[:3], method)))

    def _rolling_moment(self, func: str, window_size: int, min_samples: int | None,
                        center: bool, flags: tuple[bool, ...]) -> Expr:  # fmt: skip
        window = self._rolling(func, window_size, None, min_samples, center)
        scan = window.node
        assert isinstance(scan, Scan)
        return Expr(Scan(func, self.node, (*scan.options[:3], *flags)))

    def rolling_median(self, window_size: int, weights: Any = None, *,
                       min_samples: int | None = None, center: bool = False) -> Expr:  # fmt: skip
        """``rolling_quantile(0.5, "linear", ...)``, as polars defines it."""
        return self.rolling_quantile(0.5, "linear", window_size, weights,
                                     min_samples=min_samples, center=center)  # fmt: skip

    def _rolling_by(self, func: str, by: Any, window_size: Any, min_samples: Any, closed: Any,
                    extra: tuple[Any, ...] = ()) -> Expr:  # fmt: skip
        """A time-based window ``func`` (`rolling_by_params`): its arguments checked."""
        window_size = _time_window(func, "window_size", window_size, closed)
        min_samples = _count_param(min_samples, func, "min_samples")
        if not isinstance(by, (str, Expr)):
            msg = f"`{func}(by=...)` takes one column name or expression, got {by!r}"
            raise SchemaError(msg)
        (key,) = _key_nodes((by,), f"{func}(by=...)")
        options = (window_size, min_samples, closed, *extra)
        return Expr(Scan(func, self.node, options, KeySet((), (key,))))

    def rolling(self, index_column: Any, *, period: Any, offset: Any = None,
                closed: str = "right") -> Expr:  # fmt: skip
        """Each row's reductions over the rows whose index lies in its window (polars' ``rolling``).

        The window of a row is ``(t - period, t]`` of its ``index_column`` value ``t``
        (``closed`` as `rolling_sum_by`'s). Each reduction written in the expression
        (``sum``, ``mean``, ``min``, ``max``, ``std``, ``var``, ``median``, ``quantile``,
        ``count``, ``len``: ``cb.len().rolling(...)`` counts the window's rows) is that
        time-based window (``x.sum().rolling("t", period="2d")`` is
        ``x.rolling_sum_by("t", "2d")``), and the expression combines them row by row,
        as polars evaluates it per window; a column outside any reduction (a list per
        window in polars) is refused. The index must be sorted, as polars asks:
        an error names the expression where it is not. ``offset`` other than
        ``-period`` (the default), reductions of reductions, and other reductions
        (``first``, ``n_unique``...) are refused by name.

        >>> import datetime as dt, polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"t": [dt.date(2024, 1, d) for d in (1, 2, 4)], "x": [1, 2, 3]})
        >>> df.gpu.select(cb.col("x").sum().rolling("t", period="2d")).compute()["x"].to_list()
        [1, 3, 3]
        """
        shown = f"rolling({index_column!r}, period={period!r})"
        period = _time_window("rolling", "period", period, closed)
        if not isinstance(index_column, (builtins.str, Expr)):
            msg = (f"`rolling(index_column=...)` takes one column name or expression, got "
                   f"{index_column!r}")  # fmt: skip
            raise SchemaError(msg)
        if offset is not None and offset != f"-{period}":
            msg = (f"`{shown}`: an `offset` other than `-period` (the window ending at each "
                   "row) is not supported; shift the index column instead")  # fmt: skip
            raise UnsupportedOperationError(msg)
        index = col(index_column) if isinstance(index_column, builtins.str) else index_column

        _refuse_values_outside_reductions(self.node, shown)
        for node in walk(self.node):  # checked as written, before any is replaced
            if isinstance(node, (Over, Filtered)) or (
                isinstance(node, Agg) and any(isinstance(n, (Agg, Filtered, Over))
                                              for n in walk(node.arg))
            ):
                msg = (f"`{self.node!r}.{shown}`: only reductions of columns (or of "
                       "expressions of them) are taken per window; not a filter, a window "
                       "or a reduction of reductions")  # fmt: skip
                raise UnsupportedOperationError(msg)

        def windowed(node: Node) -> Node:
            if not isinstance(node, Agg):
                return node
            x, func = Expr(node.arg), node.func
            window: dict[builtins.str, Any] = {"closed": closed}
            if func == "sum":
                return x.rolling_sum_by(index, period, **window).node
            if func in ("count", "len"):  # the window's non-null values, or its rows
                rows = index if func == "len" and node.arg == ROWS else x
                counted = (rows.is_not_null() if func == "count" else
                           rows.is_null() | rows.is_not_null()).cast("uint32")  # fmt: skip
                return counted.rolling_sum_by(index, period, **window).node
            if func in ("mean", "min", "max", "median"):
                taken: Expr = getattr(x, f"rolling_{func}_by")(index, period, **window)
                return taken.node
            if func in ("std", "var"):
                spread: Expr = getattr(x, f"rolling_{func}_by")(index, period, ddof=node.ddof,
                                                                **window)  # fmt: skip
                return spread.node
            if func == "quantile":
                quantile, interpolation = node.options
                share = x.rolling_quantile_by(index, period, quantile=quantile,
                                              interpolation=interpolation, **window)
                return share.node
            msg = (f"`{node!r}.{shown}`: `{func}` per window is not supported; the windows "
                   "take sum, mean, min, max, std, var, median, quantile, count and len")
            raise UnsupportedOperationError(msg)

        value = Expr(transform(self.node, windowed))
        # polars refuses an index that is not sorted (nulls aside)
        ordered = (index >= index.shift(1)).all()
        message = (f"`{self.node!r}.{shown}`: the index column is not sorted; sort the frame "
                   "by it first")  # fmt: skip
        checked = Expr(Function("in_bounds", (ordered.node,), (message,)))
        return when(checked).then(value).otherwise(None)

    def rolling_sum_by(self, by: Any, window_size: Any, *, min_samples: int = 0,
                       closed: str = "right") -> Expr:  # fmt: skip
        """Sum over the rows whose ``by`` lies in the window ending at this row's ``by``.

        Polars' time-based window: ``by`` is a Date, Datetime (any unit or zone),
        Int32, Int64, UInt32 or UInt64 column or expression; ``window_size`` a
        duration (``"2d"``, ``"1h30m"``, calendar ``"1mo"``/``"1y"``; ``"3i"`` for
        integer ``by``) or a timedelta; the window is ``(by - window_size, by]`` and
        ``closed`` says which ends it holds (``"right"``, ``"left"``, ``"both"``,
        ``"none"``). ``by`` need not be sorted (rows are taken in its order; equal
        values share one window); a row whose ``by`` is null is null and in no window.
        Fewer than ``min_samples`` non-null values (default 0 here, 1 for the others)
        is null; a window without values sums to 0. Sums as `rolling_sum` types them.
        Computed on the host from the whole column (or group); streams and Dask refuse it.

        Examples
        --------
        >>> import datetime as dt
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"t": [dt.date(2024, 1, d) for d in (1, 2, 4, 5)],
        ...                    "x": [1, 2, 3, 4]})
        >>> df.gpu.select(s=cb.col("x").rolling_sum_by("t", "2d")).compute()["s"].to_list()
        [1, 3, 3, 7]
        """
        return self._rolling_by("rolling_sum_by", by, window_size, min_samples, closed)

    def rolling_mean_by(self, by: Any, window_size: Any, *, min_samples: int = 1,
                        closed: str = "right") -> Expr:  # fmt: skip
        """Mean over a time-based window (see `rolling_sum_by`): Float64 (Float32 stays)."""
        return self._rolling_by("rolling_mean_by", by, window_size, min_samples, closed)

    def rolling_min_by(self, by: Any, window_size: Any, *, min_samples: int = 1,
                       closed: str = "right") -> Expr:  # fmt: skip
        """Minimum over a time-based window (see `rolling_sum_by`), in the column's type."""
        return self._rolling_by("rolling_min_by", by, window_size, min_samples, closed)

    def rolling_max_by(self, by: Any, window_size: Any, *, min_samples: int = 1,
                       closed: str = "right") -> Expr:  # fmt: skip
        """Maximum over a time-based window (see `rolling_sum_by`), in the column's type."""
        return self._rolling_by("rolling_max_by", by, window_size, min_samples, closed)

    def rolling_var_by(self, by: Any, window_size: Any, *, min_samples: int = 1,
                       closed: str = "right", ddof: int = 1) -> Expr:  # fmt: skip
        """Variance over a time-based window (see `rolling_sum_by`); null up to ``ddof`` values."""
        ddof = _ddof_param(ddof, "rolling_var_by")
        return self._rolling_by("rolling_var_by", by, window_size, min_samples, closed, (ddof,))

    def rolling_std_by(self, by: Any, window_size: Any, *, min_samples: int = 1,
                       closed: str = "right", ddof: int = 1) -> Expr:  # fmt: skip
        """Standard deviation over a time-based window (the root of `rolling_var_by`)."""
        ddof = _ddof_param(ddof, "rolling_std_by")
        return self._rolling_by("rolling_std_by", by, window_size, min_samples, closed, (ddof,))

    def rolling_quantile_by(self, by: Any, window_size: Any, *, quantile: float,
                            interpolation: str = "nearest", min_samples: int = 1,
                            closed: str = "right") -> Expr:  # fmt: skip
        """The ``quantile`` of a time-based window's values (see `rolling_sum_by`).

        Taken as `rolling_quantile` takes it (the window's non-null values sorted, NaN
        last, the position ``(n - 1) * quantile`` by ``interpolation``).
        """
        value = _quantile_param(quantile, interpolation, "rolling_quantile_by")
        return self._rolling_by("rolling_quantile_by", by, window_size, min_samples, closed,
                                (value, interpolation))  # fmt: skip

    def rolling_median_by(self, by: Any, window_size: Any, *, min_samples: int = 1,
                          closed: str = "right") -> Expr:  # fmt: skip
        """``rolling_quantile_by(quantile=0.5, interpolation="linear")``, as polars defines it."""
        return self.rolling_quantile_by(by, window_size, quantile=0.5, interpolation="linear",
                                        min_samples=min_samples, closed=closed)  # fmt: skip

    def ewm_mean(self, *, com: float | None = None, span: float | None = None,
                 half_life: float | None = None, alpha: float | None = None,
                 adjust: bool = True, min_samples: int = 1,
                 ignore_nulls: bool = False) -> Expr:  # fmt: skip
        """Exponentially weighted mean (polars' recurrence and null rules).

        Give exactly one of ``com``, ``span``, ``half_life``, ``alpha``.
        """
        alpha = _ewm_alpha(com, span, half_life, alpha)
        min_samples = _count_param(min_samples, "ewm_mean", "min_samples")
        options = (alpha, bool(adjust), min_samples, bool(ignore_nulls))
        return Expr(Scan("ewm_mean", self.node, options))

    def ewm_var(self, *, com: float | None = None, span: float | None = None,
                half_life: float | None = None, alpha: float | None = None,
                adjust: bool = True, bias: bool = False, min_samples: int = 1,
                ignore_nulls: bool = False) -> Expr:  # fmt: skip
        """Exponentially weighted variance (polars' recurrence, parameters and null rules).

        Give exactly one of ``com``, ``span``, ``half_life``, ``alpha``. Without
        ``bias``, the variance is corrected by ``(sum w)**2 / ((sum w)**2 - sum w**2)``
        (null where that is not defined, as on the first value); a null row is null.
        """
        return self._ewm_var("ewm_var", com, span, half_life, alpha, adjust, bias,
                             min_samples, ignore_nulls)  # fmt: skip

    def ewm_std(self, *, com: float | None = None, span: float | None = None,
                half_life: float | None = None, alpha: float | None = None,
                adjust: bool = True, bias: bool = False, min_samples: int = 1,
                ignore_nulls: bool = False) -> Expr:  # fmt: skip
        """Exponentially weighted standard deviation: the square root of `ewm_var`."""
        return self._ewm_var("ewm_std", com, span, half_life, alpha, adjust, bias,
                             min_samples, ignore_nulls)  # fmt: skip

    def ewm_sum(self, *, com: float | None = None, span: float | None = None,
                half_life: float | None = None, alpha: float | None = None,
                min_samples: int = 1, ignore_nulls: bool = False) -> Expr:  # fmt: skip
        """Exponentially weighted sum, as polars' ``ewm_sum``.

        ``s = x`` at the first non-null value, then ``s = s * (1 - alpha) + x``; a null
        row after it decays ``s`` too, unless ``ignore_nulls``. A null row is null, and
        so is every row before ``min_samples`` non-null values. Float32 stays,
        integers and booleans become Float64. Give exactly one of ``com``, ``span``,
        ``half_life``, ``alpha``. On the host from the whole column (or group); streams
        and Dask refuse it.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [1, 2, 3]})
        >>> df.gpu.select(cb.col("a").ewm_sum(alpha=0.5)).compute()["a"].to_list()
        [1.0, 2.5, 4.25]
        """
        alpha = _ewm_alpha(com, span, half_life, alpha, "ewm_sum")
        min_samples = _count_param(min_samples, "ewm_sum", "min_samples")
        flag = _flag(ignore_nulls, "ewm_sum")
        return Expr(Scan("ewm_sum", self.node, (alpha, min_samples, flag)))

    def ewm_mean_by(self, by: Any, *, half_life: Any) -> Expr:
        """Time-based exponentially weighted mean, as polars' ``ewm_mean_by``.

        The rows taken in ``by``'s order (equal ones in frame order): the first row
        with a value is that value; each later one ``alpha * x + (1 - alpha) * prev``
        with ``1 - alpha = 0.5 ** (dt / half_life)``, ``dt`` the ``by`` step since the
        row before (a row equal to the running result keeps it), in the values' type
        (Float32 stays, integers become Float64). A row whose value or ``by`` is null is
        null and changes nothing. ``by`` is a Date, Datetime, Int32, Int64, UInt32 or
        UInt64 column; ``half_life`` a constant duration (``"4d"``, ``"90m"``, a
        timedelta; ``"2i"`` for an integer ``by``), not months, nor days in a time
        zone. Per group with ``.over(keys)``. On the host; streams and Dask refuse it.

        >>> import datetime as dt
        >>> import polars as pl, colbridge as cb
        >>> days = [dt.date(2020, 1, 1), dt.date(2020, 1, 3), dt.date(2020, 1, 10)]
        >>> df = pl.DataFrame({"v": [0.0, 1.0, 2.0], "t": days})
        >>> e = cb.col("v").ewm_mean_by("t", half_life="4d")
        >>> df.gpu.select(e).compute()["v"].round(4).to_list()
        [0.0, 0.2929, 1.4925]
        """
        if isinstance(half_life, _dt.timedelta):
            half_life = timedelta_text(half_life)
        if not isinstance(half_life, str):
            msg = (f"`ewm_mean_by(half_life=...)` takes a duration string (\"4d\", \"90m\", "
                   f"\"2i\") or a timedelta, got {half_life!r}")  # fmt: skip
            raise SchemaError(msg)
        duration = parse_duration_in(half_life, f"ewm_mean_by(half_life={half_life!r})")
        if duration.negative:
            msg = f"`ewm_mean_by(half_life={half_life!r})`: half_life cannot be negative"
            raise InvalidOperationError(msg)
        if duration.months:
            msg = (f"`ewm_mean_by(half_life={half_life!r})`: expected a constant duration, not "
                   "months; give it in hours or days (e.g. '720h')")  # fmt: skip
            raise InvalidOperationError(msg)
        if not isinstance(by, (str, Expr)):
            msg = f"`ewm_mean_by(by=...)` takes one column name or expression, got {by!r}"
            raise SchemaError(msg)
        (key,) = _key_nodes((by,), "ewm_mean_by(by=...)")
        return Expr(Scan("ewm_mean_by", self.node, (half_life,), KeySet((), (key,))))

    def _ewm_var(self, func: str, com: float | None, span: float | None,
                 half_life: float | None, alpha: float | None, adjust: bool, bias: bool,
                 min_samples: int, ignore_nulls: bool) -> Expr:  # fmt: skip
        alpha = _ewm_alpha(com, span, half_life, alpha, func)
        min_samples = _count_param(min_samples, func, "min_samples")
        options = (alpha, bool(adjust), bool(bias), min_samples, bool(ignore_nulls))
        return Expr(Scan(func, self.node, options))

    def fill_nan(self, value: Any) -> Expr:
        """Replace NaN by ``value``; ``None`` turns NaN into null."""
        return Expr(FillNan(self.node, to_node(value)))

    def clip(self, lower_bound: Any = None, upper_bound: Any = None) -> Expr:
        """Clamp to ``[lower_bound, upper_bound]``; the output keeps the input's type.

        A bound is a number, None (no bound on that side), or an expression per
        row (a string names a column). As in polars, expression bounds are cast
        strictly to the input's type, and a null or NaN bound leaves the value as is.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1, 5, 9], "hi": [4, None, 6]})
        >>> df.gpu.select(cb.col("x").clip(2, cb.col("hi"))).compute()["x"].to_list()
        [2, 5, 6]
        """
        lower_bound, upper_bound = _number_of(lower_bound), _number_of(upper_bound)
        # temporal bounds (NumPy's datetime64/timedelta64 too) are typed with the column
        if any(_is_expression(b) or isinstance(b, (_dt.date, _dt.time, _dt.timedelta,
                                                   np.datetime64, np.timedelta64))
               for b in (lower_bound, upper_bound)):  # fmt: skip
            bounds = tuple(
                _arg_node(b) if b is not None else Literal(None) for b in (lower_bound, upper_bound)
            )
            return Expr(Function("clip", (self.node, *bounds)))
        lower, upper = (_bound_value(b) for b in (lower_bound, upper_bound))
        return Expr(Clip(self.node, lower, upper))

    def _agg(self, func: str, ddof: int = 1) -> Expr:
        return Expr(Agg(func, self.node, ddof))

    def sum(self) -> Expr:
        """Sum of the non-null values (0 when there are none)."""
        return self._agg("sum")

    def product(self) -> Expr:
        """Product of the non-null values (1 when there are none), as polars.

        Integers and booleans multiply in Int64 (UInt64 stays UInt64), wrapping on
        overflow; floats keep their type and multiply in row order.
        """
        return self._agg("product")

    def bitwise_and(self) -> Expr:
        """The bitwise AND of the non-null values of an integer (or boolean) column.

        Its type kept, null when there are none, as polars (``group_by``, ``over`` too).

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"flags": [7, 5, None, 13]})
        >>> df.gpu.select(cb.col("flags").bitwise_and()).compute()["flags"].to_list()
        [5]
        """
        return self._agg("bitwise_and")

    def bitwise_or(self) -> Expr:
        """The bitwise OR of the non-null values (null when there are none).

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"flags": [1, 4, None, 8]})
        >>> df.gpu.select(cb.col("flags").bitwise_or()).compute()["flags"].to_list()
        [13]
        """
        return self._agg("bitwise_or")

    def bitwise_xor(self) -> Expr:
        """The bitwise exclusive OR of the non-null values (null when there are none).

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"flags": [1, 3, None, 8]})
        >>> df.gpu.select(cb.col("flags").bitwise_xor()).compute()["flags"].to_list()
        [10]
        """
        return self._agg("bitwise_xor")

    def mean(self) -> Expr:
        """Mean of the non-null values (null when there are none)."""
        return self._agg("mean")

    def min(self) -> Expr:
        """Smallest non-null value."""
        return self._agg("min")

    def max(self) -> Expr:
        """Largest non-null value."""
        return self._agg("max")

    def max_by(self, by: Any) -> Expr:
        """The value on the row where ``by`` is largest (its first such row), as polars.

        ``by`` is an expression or a column name, of any type ``max`` orders; a NaN
        ``by`` counts only where every value is NaN (as ``max``), and where ``by`` has
        no value the result is null. A reduction: one value, per group in
        ``group_by`` and ``over``.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"city": ["a", "b", "c"], "sales": [3, 9, 9]})
        >>> df.gpu.select(cb.col("city").max_by("sales")).compute().item()
        'b'
        """
        key = Expr(_arg_node(by))
        return self.filter(key == key.max()).first()

    def min_by(self, by: Any) -> Expr:
        """The value on the row where ``by`` is smallest (its first such row), as polars.

        As `max_by`.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"city": ["a", "b", "c"], "sales": [3, 1, 9]})
        >>> df.gpu.select(cb.col("city").min_by("sales")).compute().item()
        'b'
        """
        key = Expr(_arg_node(by))
        return self.filter(key == key.min()).first()

    def x_log_y(self, y: Any, base: float = math.e) -> Expr:
        """``x * log(y, base)``, 0 where ``x`` is 0 (unless ``y`` is NaN), as polars 2.2.

        So ``0 * log(0)`` is 0. In the float type of the two sides' common type
        (Float32 stays, integers and booleans as Float64; a Python number takes the
        other side's type); a null on either side is null. A string names a column.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [0, 1, 2, 3], "y": [0, 2, 4, 8]})
        >>> df.gpu.select(cb.col("x").x_log_y("y", base=2)).compute()["x"].to_list()
        [0.0, 1.0, 4.0, 9.0]
        """
        if isinstance(base, bool) or not isinstance(base, (int, float)):
            msg = f"`x_log_y(base={base!r})`: the base is a number, e.g. `x_log_y(y, base=2)`"
            raise SchemaError(msg)
        mine, other = (Expr(Function("numbers_of", (_arg_node(e),), ("x_log_y",)))
                       for e in (self, y))  # fmt: skip
        # both sides in the float type of their common one (`x + y` adapts a Python number)
        common = (mine + other) * 1.0
        x = Expr(Function("cast_like", (mine.node, common.node)))
        logged = Expr(Function("cast_like", (other.node, common.node)))
        value = x * logged.log(float(base))
        # (the value first: it names the result; a null side keeps it null)
        keep = ((x != 0) | logged.is_nan()).fill_null(True)
        return when(keep).then(value).otherwise(0.0)

    def entropy(self, base: float = math.e, *, normalize: bool = True) -> Expr:
        """``-sum(p * log(p, base))`` of the values ``p``, as polars' ``entropy``.

        With ``normalize`` each value is first divided by the sum, and a column (or
        group) without a value, or whose values sum to 0, has entropy NaN. A zero
        adds nothing (``0 * log 0`` counts as 0) and a negative value gives NaN, as
        in polars (2.2); nulls are left out. Numbers only; integers as Float64,
        Float32 kept.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"p": [0.5, 0.25, 0.25]})
        >>> df.gpu.select(cb.col("p").entropy(base=2)).compute().item()
        1.5
        """
        if isinstance(base, bool) or not isinstance(base, (int, float)):
            msg = f"`entropy(base={base!r})`: the base is a number, e.g. `entropy(base=2)`"
            raise SchemaError(msg)
        flag = _flag(normalize, "entropy", "normalize")
        p = Expr(Function("entropy_values", (self.node,)))
        def information(q: Expr) -> Expr:  # 0 * log 0 is 0 (NaN before polars 2.2)
            return -q.x_log_y(q, float(base)).sum()

        if not flag:
            return information(p)
        # (polars skips the division where the sum is 1: the same values)
        value = information(p / p.sum())
        # no value to share: NaN, as polars (the formula's sum of nothing is -0.0)
        return when(p.count() == 0).then(float("nan")).otherwise(value)

    def peak_max(self) -> Expr:
        """True where the value is above both its neighbours, as polars' ``peak_max``.

        The rows past either edge count as 0 of the column's type (polars' rule: the
        last row of ``[1, 2, 3]`` is a peak, the first of ``[-3, -2]`` is not); a null
        neighbour makes the answer null unless the other side already says false
        (Kleene ``&``); NaN is above every number. Within groups with ``.over(keys)``.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [1, 3, 1, 3, 3, 5]})
        >>> df.gpu.select(cb.col("a").peak_max()).compute()["a"].to_list()
        [False, True, False, False, False, True]
        """
        return _peak(self, "gt", "peak_max")

    def peak_min(self) -> Expr:
        """True where the value is below both its neighbours (the edges' are 0), as polars.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [-2, 3, 1, 3, 0, 1]})
        >>> df.gpu.select(cb.col("a").peak_min()).compute()["a"].to_list()
        [True, False, True, False, True, False]
        """
        return _peak(self, "lt", "peak_min")

    def index_of(self, element: Any) -> Expr:
        """The position of the first value equal to ``element`` (UInt32), null if none is.

        As polars: ``None`` finds the first null; NaN finds NaN and ``-0.0`` finds
        ``0.0``; ``element`` may be an expression of one value (``x.max()``). Positions
        count from 0 over the whole column, or per group in ``group_by`` and ``over``.
        polars refuses an ``element`` its column's type cannot hold exactly (2.5 in an
        integer column); colbridge answers null there.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"a": [1, None, 17]})
        >>> df.gpu.select(cb.col("a").index_of(17)).compute()["a"].to_list()
        [2]
        """
        found = self.is_null() if element is None else self.eq_missing(element)
        position = self.is_null().cum_count() - 1  # 0, 1, 2... (never null)
        return position.filter(found).first()

    def nan_max(self) -> Expr:
        """Largest non-null value, or NaN where one is NaN (``max`` leaves NaN out), as polars.

        A column of another type than float holds no NaN: its ``max``.
        """
        return self._nan_extreme(self.max())

    def nan_min(self) -> Expr:
        """Smallest non-null value, or NaN where one is NaN (``min`` leaves NaN out), as polars.

        A column of another type than float holds no NaN: its ``min``.
        """
        return self._nan_extreme(self.min())

    def _nan_extreme(self, extreme: Expr) -> Expr:
        # a reduction as written, so that `group_by`, `over` and one-value checks see one;
        # the NaN given is one of the column's own values (its type, Float32 too)
        nan = Expr(Function("may_be_nan", (self.node,)))
        return when(nan.any()).then(self.filter(nan).first()).otherwise(extreme)

    def std(self, ddof: int = 1) -> Expr:
        """Standard deviation with ``ddof`` delta degrees of freedom (0 to 255, as polars)."""
        return self._agg("std", _ddof_param(ddof, "std"))

    def var(self, ddof: int = 1) -> Expr:
        """Variance with ``ddof`` delta degrees of freedom (0 to 255, as polars)."""
        return self._agg("var", _ddof_param(ddof, "var"))

    def count(self) -> Expr:
        """Number of non-null values."""
        return self._agg("count")

    def null_count(self) -> Expr:
        """Number of null values."""
        return self._agg("null_count")

    def len(self) -> Expr:
        """Number of rows, nulls included (``count`` leaves nulls out)."""
        return self._agg("len")

    def has_nulls(self) -> Expr:
        """Whether any value is null: ``null_count() > 0``, as polars."""
        return self.null_count() > 0

    def is_empty(self) -> Expr:
        """Whether there are no rows (in a group: no rows of it): ``len() == 0``, as polars."""
        return self.len() == 0

    def dot(self, other: Any) -> Expr:
        """The dot product with ``other``: ``(self * other).sum()``, as polars computes it.

        The products in the type ``*`` gives (integers wrap), summed without their nulls;
        a string names a column.
        """
        return (self * Expr(_arg_node(other))).sum()

    def first(self, *, ignore_nulls: builtins.bool = False) -> Expr:
        """The first value (null when it is null or there are no rows).

        With ``ignore_nulls`` the first value that is not null (null when there is none).

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"g": [1, 1, 2], "x": [None, 2.0, 3.0]})
        >>> out = df.gpu.group_by("g").agg(a=cb.col("x").first(),
        ...                                b=cb.col("x").first(ignore_nulls=True)).compute()
        >>> out.sort("g").rows()
        [(1, None, 2.0), (2, 3.0, 3.0)]
        """
        if _flag(ignore_nulls, "first", "ignore_nulls"):
            return self.drop_nulls()._agg("first")
        return self._agg("first")

    def last(self, *, ignore_nulls: builtins.bool = False) -> Expr:
        """The last value (null when it is null or there are no rows).

        With ``ignore_nulls`` the last value that is not null (null when there is none).

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1.0, 2.0, None]})
        >>> df.gpu.select(cb.col("x").last(ignore_nulls=True)).compute().item()
        2.0
        """
        if _flag(ignore_nulls, "last", "ignore_nulls"):
            return self.drop_nulls()._agg("last")
        return self._agg("last")

    def get(self, index: int, *, null_on_oob: builtins.bool = False) -> Expr:
        """The value at position ``index`` (negative: from the end), nulls counted: one value.

        Of the whole column, of each group in ``group_by(...).agg`` and of each window of
        ``over``. A position past either end is an error naming the expression, as in
        polars, unless ``null_on_oob`` (then null). ``index`` is a whole number, not an
        expression.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"g": [1, 1, 2], "x": [None, 2.0, 3.0]})
        >>> df.gpu.group_by("g").agg(cb.col("x").get(-1)).compute()["x"].to_list()
        [2.0, 3.0]
        """
        if isinstance(index, Expr):
            msg = ("`get(index)`: colbridge takes a whole number as `index`, not an "
                   "expression; compute `x.gather(...)` in polars")  # fmt: skip
            raise UnsupportedOperationError(msg)
        position = _count_param(index, "get", "index", signed=True)
        _flag(null_on_oob, "get", "null_on_oob")
        value = self._rows("get", (position,), position, 1).first()
        if null_on_oob:
            return value
        count = self.len()
        inside = count > position if position >= 0 else count >= -position
        message = (f"`{self.node!r}.get({position})`: the index is out of bounds (a column or "
                   "group with fewer rows); pass `null_on_oob=True` for a null there")  # fmt: skip
        checked = Expr(Function("in_bounds", (inside.node,), (message,)))
        return when(checked).then(value).otherwise(None)

    def n_unique(self) -> Expr:
        """Number of distinct values; null counts as one value, as in polars."""
        return self._agg("n_unique")

    def approx_n_unique(self) -> Expr:
        """The number of distinct values, counted exactly (`n_unique`; a null is one value).

        polars estimates it with a HyperLogLog sketch (its answer may differ from the
        exact count by about 1% past a few dozen values); colbridge's is the count itself.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1, 1, None]})
        >>> df.gpu.select(cb.col("x").approx_n_unique()).compute().item()
        2
        """
        return self._agg("n_unique")

    def arg_max(self) -> Expr:
        """The position (UInt32) of the largest value, as polars finds it.

        Nulls are left out, and NaN unless every value is NaN (then the first NaN);
        of equal values the first is taken (`-0.0` equals `0.0`), but for a whole
        string column the last, as polars does there. No value: null. Strings compare
        by their bytes, a Categorical by its text, an Enum by its categories' order.
        Per group (``over``, ``group_by``) the position within the group, in the
        order of ``over(order_by=...)`` where one is given.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1.0, None, 3.0, 3.0]})
        >>> df.gpu.select(cb.col("x").arg_max()).compute()["x"].to_list()
        [2]
        """
        return self._agg("arg_max")

    def arg_min(self) -> Expr:
        """The position (UInt32) of the smallest value (see `arg_max`; ties: the first)."""
        return self._agg("arg_min")

    def any(self, *, ignore_nulls: bool = True) -> Expr:
        """Whether any value is true (numbers: non-zero, NaN included), as polars.

        Nulls are left out (no rows: false); with ``ignore_nulls=False`` the answer is
        Kleene's: null where no value is true but one is null. Numbers are cast to
        Boolean first (strictly, as polars casts them); other types are refused.
        """
        return Expr(Agg("any", self.node, options=(_flag(ignore_nulls, "any"),)))

    def all(self, *, ignore_nulls: bool = True) -> Expr:
        """Whether every value is true; nulls left out (no rows: true), as polars.

        With ``ignore_nulls=False``: null where no value is false but one is null.
        """
        return Expr(Agg("all", self.node, options=(_flag(ignore_nulls, "all"),)))

    def skew(self, *, bias: bool = True) -> Expr:
        """Sample skewness of the non-null values (Float64), as polars computes it.

        ``m3 / m2 ** 1.5`` of the central moments ``m2``, ``m3`` (the mean of the squared
        and cubed deviations from the mean); NaN where the values do not vary (``m2`` at
        most ``(eps * mean) ** 2``) or one is NaN or infinite; null without values. With
        ``bias=False``, corrected by ``sqrt(n * (n - 1)) / (n - 2)`` (null for
        ``n <= 2``). Numbers and booleans (as 0 and 1); other types are refused.
        """
        return Expr(Agg("skew", self.node, options=(_flag(bias, "skew", "bias"),)))

    def kurtosis(self, *, fisher: bool = True, bias: bool = True) -> Expr:
        """Kurtosis of the non-null values (Float64), as polars computes it.

        ``m4 / m2 ** 2`` of the central moments, minus 3 with ``fisher`` (a normal
        distribution gives 0); ``bias=False`` uses the k-statistics correction (null for
        ``n <= 3``). NaN and nulls as `skew`.
        """
        return Expr(Agg("kurtosis", self.node, options=(
            _flag(fisher, "kurtosis", "fisher"), _flag(bias, "kurtosis", "bias"))))

    def median(self) -> Expr:
        """The middle of the non-null values: ``quantile(0.5, "linear")``, as in polars.

        Numbers give Float64 (Float32 stays Float32; booleans count as 0 and 1);
        NaN sorts above every number and counts as a value. Dates give Datetime[us],
        datetimes, durations and times keep their type (truncated toward zero).
        """
        return Expr(Agg("median", self.node))

    def quantile(self, quantile: float, interpolation: str = "nearest") -> Expr:
        """The value at ``quantile`` (0 to 1) of the sorted non-null values.

        The position is ``quantile * (count - 1)``; between two values
        ``interpolation`` takes the ``"nearest"`` (ties away from zero), the
        ``"lower"``, the ``"higher"``, their ``"midpoint"``, the ``"linear"``
        interpolation, or ``"equiprobable"`` (the value at ``ceil(quantile * count)``),
        as polars (2.2) does. Types as `median` (booleans as their 0s and 1s).
        ``quantile`` is a number, not an expression; ``None`` gives null.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]})
        >>> df.gpu.select(q=cb.col("x").quantile(0.5, "linear")).compute()["q"][0]
        2.5
        """
        if quantile is None:  # no quantile: a null in the quantile's type (polars 2.2)
            return when(lit(False)).then(self.quantile(0.5, interpolation))
        value = _quantile_param(quantile, interpolation, "quantile")
        return Expr(Agg("quantile", self.node, options=(value, interpolation)))

    def filter(self, predicate: Any) -> Expr:
        """The values on rows where ``predicate`` is true: a reduction's input or `select`'s output.

        Elsewhere it is refused (it changes the number of rows). As outputs of one
        ``select``, those of one predicate go together, with single values beside them
        (docs/semantics.md, "Outputs with fewer rows").

        Examples
        --------
        >>> import colbridge as cb
        >>> cb.col("x").filter(cb.col("y") > 0).sum()
        <Expr col("x").filter((col("y") > lit(0))).sum()>
        """
        return Expr(Filtered(self.node, as_expr(predicate).node))

    def head(self, n: int = 10) -> Expr:
        """The first ``n`` values: a reduction's input (``x.head(5).mean()``) or `select`'s output.

        Per group inside ``group_by(...).agg`` and ``.over(keys)``, in frame order.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"g": [1, 2, 1, 1], "x": [1, 2, 3, 4]})
        >>> df.gpu.group_by("g").agg(cb.col("x").head(2).sum()).compute().sort("g")["x"].to_list()
        [4, 2]
        """
        return self._rows("head", (n,), 0, _count_param(n, "head", "n"))

    def tail(self, n: int = 10) -> Expr:
        """The last ``n`` values: a reduction's input (``x.tail(5).mean()``) or `select`'s output.

        >>> import colbridge as cb
        >>> cb.col("x").tail(3).sum()
        <Expr col("x").tail(3).sum()>
        """
        return self._rows("tail", (n,), -_count_param(n, "tail", "n"), n)

    def limit(self, n: int = 10) -> Expr:
        """The first ``n`` values: `head` (polars' other name for it).

        >>> import colbridge as cb
        >>> cb.col("x").limit(3).sum()
        <Expr col("x").head(3).sum()>
        """
        return self.head(n)

    def slice(self, offset: int, length: int | None = None) -> Expr:
        """``length`` values from ``offset`` (negative: from the end; None: to the end).

        Only as the input of a reduction, as polars slices: an offset before the first
        row shortens the slice (``slice(-7, 3)`` of 5 rows is the first one).

        >>> import colbridge as cb
        >>> cb.col("x").slice(1, 2).max()
        <Expr col("x").slice(1, 2).max()>
        """
        if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
            msg = f"`slice({offset!r}, {length!r})`: the offset is an integer"
            raise SchemaError(msg)
        if length is not None:
            _count_param(length, "slice", "length")
        return self._rows("slice", (offset, length), int(offset), length)

    def gather_every(self, n: int, offset: int = 0) -> Expr:
        """Every ``n``-th value from position ``offset``: a reduction's input, `select`'s output.

        >>> import colbridge as cb
        >>> cb.col("x").gather_every(2).sum()
        <Expr col("x").gather_every(2, 0).sum()>
        """
        step = _count_param(n, "gather_every", "n")
        start = _count_param(offset, "gather_every", "offset")
        if step == 0:
            msg = "`gather_every(0)`: `n` is at least 1"
            raise InvalidOperationError(msg)
        position = self._position()
        keep = (position >= start) & ((position - start) % step == 0)
        return Expr(Filtered(self.node, keep.node, f"gather_every({n}, {offset})"))

    def _position(self) -> Expr:
        # each row's position, 0 first, in frame order (per group inside a grouped reduction,
        # where scans take the group's keys): a count of the rows so far, nulls included
        return self.is_null().cum_count().cast("int64") - 1

    def _rows(self, method: str, shown: tuple[Any, ...], start: int,
              length: int | None) -> Expr:  # fmt: skip
        """The rows from position ``start`` (negative: from the end), ``length`` of them."""
        position = self._position()
        first = len().cast("int64") + start if start < 0 else lit(start)
        keep = position >= first
        if length is not None:
            keep = keep & (position < first + length)
        text = ", ".join(repr(v) for v in shown)
        return Expr(Filtered(self.node, keep.node, f"{method}({text})"))

    def drop_nulls(self) -> Expr:
        """The non-null values, ``filter(is_not_null())``: a reduction's input, `select` output."""
        return self.filter(self.is_not_null())

    def unique(self, *, maintain_order: builtins.bool = False) -> Expr:
        """Each distinct value once: a reduction's input (``x.unique().sum()``), `select`'s output.

        Per group in ``agg`` and ``over``, in the order values first appear. Values
        are distinct as polars tells them apart: one null, one NaN, ``-0.0`` equal to
        ``0.0`` (see `is_first_distinct`). The order is the one ``maintain_order=True``
        gives, which polars allows without it too.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"g": [1, 1, 1, 2], "x": [5, 5, 7, 5]})
        >>> out = df.gpu.group_by("g").agg(cb.col("x").unique().sum()).compute().sort("g")
        >>> out["x"].to_list()
        [12, 5]
        """
        _flag(maintain_order, "unique", "maintain_order")
        return Expr(Filtered(self.node, self.is_first_distinct().node, "unique()"))

    def mode(self, *, maintain_order: builtins.bool = False) -> Expr:
        """The most frequent values (a null counts as one): a reduction's input, `select` output.

        Per group in ``agg`` and ``over``. Values are told apart as in `unique`, and
        come in the order they first appear (the order ``maintain_order=True`` gives;
        without it polars allows any). ``x.mode().first()`` depends on that order where
        several values are as frequent; ``x.mode().min()`` does not.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [3, 1, 1, 3, 2, None]})
        >>> df.gpu.select(cb.col("x").mode()).compute()["x"].to_list()
        [3, 1]
        """
        _flag(maintain_order, "mode", "maintain_order")
        return Expr(Filtered(self.node, mode_predicate(self.node), MODE_SHOWN))

    def arg_true(self) -> Expr:
        """The positions (UInt32) of the true values (null is not true): fewer rows, as `filter`.

        A `select` output or a reduction's input; per group, positions within the group.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"b": [True, None, False, True]})
        >>> df.gpu.select(cb.col("b").arg_true()).compute()["b"].to_list()
        [0, 3]
        """
        return Expr(Filtered(_positions().node, self.node, "arg_true()"))

    def arg_unique(self) -> Expr:
        """The position (UInt32) of each distinct value's first row (see `unique`).

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"x": [3, 1, 3, None, 1]})
        >>> df.gpu.select(cb.col("x").arg_unique()).compute()["x"].to_list()
        [0, 1, 3]
        """
        return Expr(Filtered(_positions().node, self.is_first_distinct().node, "arg_unique()"))

    def unique_counts(self) -> Expr:
        """How many rows hold each distinct value (UInt32), in the order values first appear.

        A null counts as a value, as in `unique`.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"x": ["a", "b", "a", None]})
        >>> df.gpu.select(cb.col("x").unique_counts()).compute()["x"].to_list()
        [2, 1, 1]
        """
        count = len().over(self)
        return Expr(Filtered(count.node, self.is_first_distinct().node, "unique_counts()"))

    def item(self, *, allow_empty: builtins.bool = False) -> Expr:
        """The one value: a reduction, an error naming the expression for more (or no) values.

        ``allow_empty``: no value gives null. Per group in ``agg`` and ``over``.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"x": [1, 2, 2]})
        >>> df.gpu.select(cb.col("x").filter(cb.col("x") < 2).item()).compute().item()
        1
        """
        _flag(allow_empty, "item", "allow_empty")
        count = self.len()
        one = count <= 1 if allow_empty else count == 1
        message = (f"`{self.node!r}.item()`: expected a single value (per group in `agg` and "
                   "`over`); take one with `.first()`, `.get(i)` or a filter"
                   + ("" if allow_empty else ", or pass `allow_empty=True` for null where "
                      "there is none"))  # fmt: skip
        checked = Expr(Function("in_bounds", (one.node,), (message,)))
        return when(checked).then(self.first()).otherwise(None)

    def top_k_by(self, by: Any, k: int = 5, *,
                 reverse: builtins.bool | Sequence[builtins.bool] = False) -> Expr:  # fmt: skip
        """The values of the ``k`` rows of the largest ``by`` (nulls last), polars' ``top_k_by``.

        ``by``: one key or a list; ``reverse`` (one flag, or one per key) takes the
        smallest of that key instead. Of rows with equal keys the first in frame order;
        a reduction's input or a `select` output, as `top_k`.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"name": ["a", "b", "c"], "score": [2, 9, 5]})
        >>> df.gpu.select(cb.col("name").top_k_by("score", 2)).compute()["name"].to_list()
        ['b', 'c']
        """
        return self._extremes_by("top_k_by", by, k, reverse, descending=True)

    def bottom_k_by(self, by: Any, k: int = 5, *,
                    reverse: builtins.bool | Sequence[builtins.bool] = False) -> Expr:  # fmt: skip
        """The values of the ``k`` rows with the smallest ``by`` (nulls last), as polars.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"name": ["a", "b", "c"], "score": [2, 9, 5]})
        >>> df.gpu.select(cb.col("name").bottom_k_by("score", 2)).compute()["name"].to_list()
        ['a', 'c']
        """
        return self._extremes_by("bottom_k_by", by, k, reverse, descending=False)

    def _extremes_by(self, method: builtins.str, by: Any, k: int,
                     reverse: builtins.bool | Sequence[builtins.bool], *,
                     descending: builtins.bool) -> Expr:  # fmt: skip
        if isinstance(k, Expr):
            msg = f"`{method}(k)`: colbridge takes a whole number as `k`, not an expression"
            raise UnsupportedOperationError(msg)
        k = _count_param(k, method, "k")
        keys = [Expr(n) for n in _key_nodes((by,), method)]
        flips = _flags(reverse, builtins.len(keys), "reverse", method)
        order = [descending != flip for flip in flips]
        ordered = self.sort_by(keys, descending=order, nulls_last=True)
        head = ordered._rows("head", (k,), 0, k).node
        assert isinstance(head, Filtered)
        return Expr(dataclasses.replace(head, shown=f"{method}({k})"))

    def top_k(self, k: int = 5) -> Expr:
        """The ``k`` largest values: a reduction's input (``x.top_k(3).mean()``), `select`'s output.

        Per group in ``agg`` and ``over``; nulls only after every value, NaN the
        largest. polars gives them in no set order; here largest first.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [3, None, 9, 1, 7]})
        >>> df.gpu.select(cb.col("x").top_k(2).sum()).compute().item()
        16
        """
        return self._extremes("top_k", k, descending=True)

    def bottom_k(self, k: int = 5) -> Expr:
        """The ``k`` smallest values: a reduction's input (``x.bottom_k(3).sum()``), an output.

        Per group in ``agg`` and ``over``; nulls only after every value.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"x": [3, None, 9, 1, 7]})
        >>> df.gpu.select(cb.col("x").bottom_k(2).sum()).compute().item()
        4
        """
        return self._extremes("bottom_k", k, descending=False)

    def _extremes(self, method: builtins.str, k: int, *, descending: builtins.bool) -> Expr:
        if isinstance(k, Expr):
            msg = f"`{method}(k)`: colbridge takes a whole number as `k`, not an expression"
            raise UnsupportedOperationError(msg)
        k = _count_param(k, method, "k")
        ordered = self.sort(descending=descending, nulls_last=True)
        head = ordered._rows("head", (k,), 0, k).node
        assert isinstance(head, Filtered)
        return Expr(dataclasses.replace(head, shown=f"{method}({k})"))

    def drop_nans(self) -> Expr:
        """The values but NaN (nulls kept); only as the input of a reduction, as `filter`.

        A column of another type than float holds no NaN: all its values (booleans,
        dates and strings too, as polars 2.2).
        """
        nan = Expr(Function("may_be_nan", (self.node,)))
        return self.filter(nan.not_().fill_null(True))

    def over(self, *keys: Any, order_by: Any = None, descending: builtins.bool = False,
             nulls_last: builtins.bool = False,
             mapping_strategy: builtins.str = "group_to_rows") -> Expr:  # fmt: skip
        """The expression evaluated per group of ``keys`` and broadcast to the group's rows.

        Every reduction inside is taken per group, as in polars:
        ``(x - x.mean()).over("g")`` is ``x - x.mean().over("g")``. Keys are
        column names or expressions of any type (strings, categoricals, dates,
        floats...); a null key is a group of its own.

        ``order_by`` (names or expressions; ``keys`` may then be left out: the whole
        frame is one group) puts each group's rows in that order for the ordered
        operations inside (``shift``, ``cum_sum``, ``rolling_*``, ``rank``...) and
        for ``first``/``last``, as polars does: ascending (``descending`` reverses
        every order key), nulls first (``nulls_last``), NaN after every number, rows
        of equal order keys in frame order. Results are in frame order. Only
        polars' default ``mapping_strategy="group_to_rows"`` is taken.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"g": ["a", "b", "a"], "x": [1.0, 5.0, 3.0]})
        >>> x = cb.col("x")
        >>> df.gpu.with_columns(d=x - x.mean().over("g")).compute()["d"].to_list()
        [-1.0, 0.0, 1.0]
        """
        if mapping_strategy != "group_to_rows":
            msg = (
                f"`over(mapping_strategy={mapping_strategy!r})` is not supported: results "
                "are one per row (\"group_to_rows\"); aggregate with `group_by(...).agg(...)` "
                "for one row per group"
            )
            raise UnsupportedOperationError(msg)
        for flag, value in (("descending", descending), ("nulls_last", nulls_last)):
            if not isinstance(value, builtins.bool):
                msg = f"`over({flag}=...)` takes True or False, got {value!r}"
                raise SchemaError(msg)
        order = () if order_by is None else _key_nodes((order_by,), "over(order_by=...)")
        nodes = _key_nodes(keys, "over") if keys or not order else ()
        return Expr(Over(self.node, nodes, order, descending, nulls_last))

    def alias(self, name: str) -> Expr:
        """Name the output."""
        return Expr(Alias(self.node.arg if isinstance(self.node, Alias) else self.node, name))

    def exclude(self, *names: builtins.str | Sequence[builtins.str]) -> Expr:
        """These columns (names or ``^...$`` patterns) taken out of a selection of columns.

        For ``col(...)`` of several columns, `colbridge.all` and `colbridge.exclude`.
        """
        node = self.node
        if not isinstance(node, Selector):
            msg = (
                f"`exclude` takes columns out of a selection of several columns, such as "
                f"`cb.all()` or `cb.col(\"a\", \"b\")`; `{node!r}` is an expression"
            )
            raise SchemaError(msg)
        return Expr(Selector(node.names, node.every, node.exclude + names_of(names, "exclude")))

    @property
    def name(self) -> NameNamespace:
        """The output's name (polars' ``.name``): ``suffix``, ``prefix``, ``keep``, ``map``..."""
        return NameNamespace(self)

    # namespaces last: the name `str` below shadows the builtin in the class body
    @property
    def dt(self) -> DateTimeNamespace:
        """Date and time functions (polars' ``.dt``)."""
        return DateTimeNamespace(self)

    @property
    def str(self) -> StringNamespace:
        """String functions (polars' ``.str``), computed once per distinct string."""
        return StringNamespace(self)

    @property
    def cat(self) -> CategoricalNamespace:
        """Functions of a categorical's or enum's labels (polars' ``.cat``)."""
        return CategoricalNamespace(self)

    @property
    def list(self) -> ListNamespace:
        """One value of each row's parts of a ``str.split`` (polars' ``.list``)."""
        return ListNamespace(self)

    @property
    def struct(self) -> StructNamespace:
        """A field of a ``str.split_exact`` or ``str.splitn`` (polars' ``.struct``)."""
        return StructNamespace(self)


def _key_nodes(keys: tuple[Any, ...], where: str) -> tuple[Node, ...]:
    """Key expressions from names, expressions or lists of them (polars' ``*keys``)."""
    flat: list[Any] = []
    for k in keys:
        flat.extend(k if isinstance(k, (list, tuple)) else [k])
    if not flat:
        msg = f"`{where}` needs at least one key, e.g. `{where}(\"carrier\")`"
        raise SchemaError(msg)
    nodes: list[Node] = []
    for k in flat:
        if not isinstance(k, (str, Expr, _WhenThen)):
            msg = (
                f"`{where}` keys are column names or expressions, got {type(k).__name__} "
                f"{k!r}"
            )
            raise SchemaError(msg)
        node = as_expr(k).node
        nodes.append(node.arg if isinstance(node, Alias) else node)
    return expand_arguments(nodes, where)


def col(name: str | Sequence[str], *more_names: str) -> Expr:
    """Refer to a column by name, or to several at once (``col("a", "b")``, ``col(["a", "b"])``).

    An expression over several columns is one output per column, each named after
    its column (`colbridge.expr.selectors`); a name written ``^...$`` is a regular
    expression over the frame's columns, as in polars.

    Examples
    --------
    >>> import colbridge as cb
    >>> cb.col("price") * 2
    <Expr (col("price") * lit(2))>
    >>> import polars as pl
    >>> df = pl.DataFrame({"a": [1, 2], "b": [3, 4]})
    >>> df.gpu.with_columns(cb.col("a", "b") * 10).compute().rows()
    [(10, 30), (20, 40)]
    """
    flat: list[Any] = []
    for n in (name, *more_names):
        flat.extend(n if isinstance(n, (list, tuple)) else [n])
    for n in flat:
        if not isinstance(n, builtins.str):
            msg = f"column names are strings, got {type(n).__name__} {n!r}"
            if isinstance(n, (DType, type)) or "DataType" in type(n).__name__ \
                    or type(n).__module__.startswith("polars.datatypes"):  # fmt: skip
                msg += (
                    "; colbridge selects columns by name or `^...$` pattern, not by data "
                    "type: name them, e.g. `cb.col(\"a\", \"b\")`"
                )
            raise SchemaError(msg)
    if builtins.len(flat) == 1 and not is_pattern(flat[0]):
        return Expr(Column(flat[0]))
    return Expr(Selector(names=tuple(flat)))


def lit(
    value: Scalar | str | _dt.date | _dt.time | _dt.timedelta, dtype: Any = None
) -> Expr:
    """A constant; Python numbers adapt their type to the other operand, as in polars.

    Strings, dates, datetimes (naive or with a ``zoneinfo`` zone), times and
    timedeltas are typed as polars types them (``Datetime('us')``, ``Duration('us')``).

    Examples
    --------
    >>> import colbridge as cb
    >>> cb.col("a") + cb.lit(1.5)
    <Expr (col("a") + lit(1.5))>
    >>> cb.lit(None, dtype="int8")
    <Expr lit(None, dtype=int8)>
    """
    return Expr(_literal_node(value, dtype))


class _WhenThen:
    __slots__ = ("_branches",)

    def __init__(self, branches: tuple[tuple[Node, Node], ...]) -> None:
        self._branches = branches

    def when(self, condition: Any) -> _When:
        return _When(self._branches, to_node(condition))

    def otherwise(self, value: Any) -> Expr:
        node = _branch_node(value)
        for condition, then in reversed(self._branches):
            node = When(condition, then, node)
        return Expr(node)

    def _finish(self) -> Expr:
        return self.otherwise(None)

    # A when/then chain without `otherwise` behaves as an expression with null there.
    def __getattr__(self, name: str) -> Any:
        return getattr(self._finish(), name)

    def __repr__(self) -> str:
        return repr(self._finish())


for _dunder in (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
    "__rtruediv__", "__floordiv__", "__mod__", "__pow__", "__eq__", "__ne__", "__lt__",
    "__le__", "__gt__", "__ge__", "__and__", "__or__", "__xor__", "__neg__", "__invert__",
):  # fmt: skip
    setattr(
        _WhenThen,
        _dunder,
        (lambda name: lambda self, *a: getattr(self._finish(), name)(*a))(_dunder),
    )


class _When:
    __slots__ = ("_branches", "_condition")

    def __init__(self, branches: tuple[tuple[Node, Node], ...], condition: Node) -> None:
        self._branches = branches
        self._condition = condition

    def then(self, value: Any) -> _WhenThen:
        return _WhenThen((*self._branches, (self._condition, _branch_node(value))))


def _branch_node(value: Any) -> Node:
    """A ``then``/``otherwise`` value: as in polars a string names a column (`lit` for text)."""
    return Column(value) if isinstance(value, str) else to_node(value)


def when(condition: Any) -> _When:
    """Start a ``when(...).then(...).otherwise(...)`` chain; without otherwise, null.

    Examples
    --------
    >>> import colbridge as cb
    >>> cb.when(cb.col("a") > 0).then(cb.col("a")).otherwise(0)
    <Expr when((col("a") > lit(0))).then(col("a")).otherwise(lit(0))>
    """
    return _When((), to_node(condition))


def arctan2(y: Any, x: Any) -> Expr:
    """The angle of the point ``(x, y)``, in radians, row by row (polars' ``arctan2``).

    The type is ``y``'s when it is a float (``x`` converted to it), else float64.
    A string names a column.

    Examples
    --------
    >>> import colbridge as cb
    >>> cb.arctan2("y", cb.col("x"))
    <Expr arctan2(col("y"), col("x"))>
    """
    return Expr(Binary("arctan2", _arg_node(y), _arg_node(x)))


#: `corr`'s methods, as polars names them.
CORRELATION_METHODS = ("pearson", "spearman")


def cov(a: Any, b: Any, *, ddof: int = 1, eager: bool = False) -> Expr:
    """Covariance of ``a`` and ``b`` over the rows where both are non-null (``pl.cov``).

    ``sum((a - mean a) * (b - mean b)) / (n - ddof)`` over those ``n`` rows, null
    where ``n <= ddof``; NaN where a value is NaN, but 0.0 for a lone row of a frame
    (or group) without nulls, as polars' running state gives it. Float64, or Float32 where the two
    types' common type is Float32 (as polars). Numbers and booleans; a string names a
    column. Each mean is the first value plus the mean of the differences from it, as
    polars' later versions anchor it (a column that does not vary gives exactly 0;
    polars 2.1 takes ``sum / n``, which can be an ulp off there: docs/semantics.md);
    polars sums in blocks of 128 rows merged pairwise, colbridge in one pass: the two
    agree to a few units in the last place on well-conditioned data. A reduction: one
    value, per group in ``group_by`` and ``over``.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1.0, 2.0, None, 3.0], "b": [2.0, 4.0, 5.0, 6.0]})
    >>> df.gpu.select(cb.cov("a", "b")).compute().item()
    2.0
    """
    ddof = _ddof_param(ddof, "cov")
    _not_eager("cov", eager)
    x, y, sides = _pairs("cov", a, b)
    pairs = x.is_not_null().sum().cast(DType.FLOAT64)
    products = ((x - _anchored_mean(x)) * (y - _anchored_mean(y))).sum()
    # polars' running state gives a lone row (of a frame or group without nulls) a
    # co-moment of exactly 0, infinite or NaN values included. (The first `then` names
    # the result, as in polars: the first side's name.)
    several = (pairs != 1) | (x.len() != 1)
    value = when(pairs > ddof).then(
        when(several).then(products / (pairs - ddof)).otherwise(0.0)).otherwise(None)
    return _pair_result("cov", value, sides)


def corr(
    a: Any, b: Any, *, method: str = "pearson", propagate_nans: bool = False,
    eager: bool = False,
) -> Expr:  # fmt: skip
    """Correlation of ``a`` and ``b`` over the rows where both are non-null (``pl.corr``).

    ``method="pearson"``: ``sum(da * db) / sqrt(sum(da**2) * sum(db**2))`` of the
    differences from the means, NaN where that root is not above 0 (one row, a
    column that does not vary), null where no row has both sides (as polars 2.2);
    ``"spearman"``: Pearson's of the rows'
    ``"average"`` ranks among those rows, NaN ranking above every number, or, with
    ``propagate_nans``, NaN where a value is NaN. Types and precision as `cov`.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [1.0, 3.0, 2.0, 4.0]})
    >>> df.gpu.select(cb.corr("a", "b", method="spearman")).compute().item()
    0.8
    """
    if method not in CORRELATION_METHODS:
        msg = (f"`corr(method={method!r})`: unknown method; use one of "
               f"{', '.join(repr(m) for m in CORRELATION_METHODS)}")  # fmt: skip
        raise SchemaError(msg)
    propagate = _flag(propagate_nans, "corr", "propagate_nans")
    _not_eager("corr", eager)
    if method == "spearman":
        # each side ranked, in its own type, among the rows where both are present (null
        # on the others), as polars ranks them
        sides = (_arg_node(a), _arg_node(b))
        masked = [Expr(Function("pair_float", (p, q), ("corr", "own_type")))
                  for p, q in (sides, sides[::-1])]
        x, y = (m.rank("average") for m in masked)
    else:
        x, y, sides = _pairs("corr", a, b)
    dx, dy = x - _anchored_mean(x), y - _anchored_mean(y)
    spread = (dx * dx).sum() * (dy * dy).sum()
    value = when(spread > 0).then((dx * dy).sum() / spread.sqrt()).otherwise(float("nan"))
    if method == "spearman" and propagate:
        nans = [Expr(Function("may_be_nan", (m.node,))) for m in masked]
        # the value first: the output keeps `a`'s name, as polars names it
        value = when(~(nans[0].any() | nans[1].any())).then(value).otherwise(float("nan"))
    # no pair of values: null, not NaN
    value = when(x.is_not_null().sum() > 0).then(value).otherwise(None)
    return _pair_result("corr", value, sides)


def rolling_cov(a: Any, b: Any, *, window_size: int, min_samples: int | None = None,
                ddof: int = 1) -> Expr:  # fmt: skip
    """Covariance of ``a`` and ``b`` over the last ``window_size`` rows (``pl.rolling_cov``).

    polars' own composition, so its bits where the rolling means are: over the rows
    where both sides are non-null, ``(mean(a*b) - mean(a) * mean(b)) * n / (n - ddof)``
    with rolling means of ``min_samples`` values at least (``window_size`` by default)
    and ``n`` the window's count of such rows. In the two sides' common type where it is
    a float, Float64 otherwise; per group with ``over``. A string names a column.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1.0, 2.0, 4.0, 7.0], "b": [2.0, 4.0, 5.0, 9.0]})
    >>> df.gpu.select(cb.rolling_cov("a", "b", window_size=2)).compute()["a"].to_list()
    [None, 1.0, 1.0, 6.0]
    """
    return _rolling_pair("rolling_cov", a, b, window_size, min_samples, ddof)


def rolling_corr(a: Any, b: Any, *, window_size: int, min_samples: int | None = None,
                 ddof: int = 1) -> Expr:  # fmt: skip
    """Pearson correlation of ``a`` and ``b`` over the last ``window_size`` rows.

    As ``pl.rolling_corr``: `rolling_cov` with ``ddof=1`` (polars ignores ``ddof``
    here) over the square root of the product of the two rolling variances
    (``(var_a * var_b) ** 0.5``), over the rows where both sides are non-null.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1.0, 2.0, 4.0, 7.0], "b": [2.0, 4.0, 5.0, 9.0]})
    >>> df.gpu.select(cb.rolling_corr("a", "b", window_size=3)).compute()["a"].to_list()
    [None, None, 0.9285714285714288, 0.9762210399274296]
    """
    return _rolling_pair("rolling_corr", a, b, window_size, min_samples, ddof)


def _window(func: str, window_size: int, min_samples: int | None) -> tuple[int, int]:
    """A fixed window's ``window_size`` and ``min_samples`` (the size by default), checked."""
    window_size = _count_param(window_size, func, "window_size")
    min_samples = _count_param(min_samples, func, "min_samples", allow_none=True)
    if min_samples is None:
        min_samples = window_size
    if min_samples > window_size:
        msg = (
            f"`{func}`: `min_samples` ({min_samples}) must be <= `window_size` "
            f"({window_size}); lower `min_samples` or widen the window"
        )
        raise SchemaError(msg)
    return window_size, min_samples


def _rolling_pair(func: str, a: Any, b: Any, window_size: int, min_samples: int | None,
                  ddof: int) -> Expr:  # fmt: skip
    """`rolling_cov` (or `rolling_corr`) as polars 2.1 composed it, NaN as 2.2 gives it.

    polars 2.2 takes each window's co-moment with Welford states (more exact where
    the values span many orders of magnitude); the composition of rolling means
    agrees with it to the ordered operations' float tolerance on ordinary data.
    """
    window_size, min_samples = _window(func, window_size, min_samples)  # named as the pair
    ddof = _ddof_param(ddof, func)
    sides = (_arg_node(a), _arg_node(b))
    # each side in the common float type, null where either side is
    x = Expr(Function("pair_float", sides, (func, "common_float")))
    y = Expr(Function("pair_float", sides[::-1], (func, "common_float")))

    def mean(v: Expr) -> Expr:
        return v.rolling_mean(window_size, min_samples=min_samples)

    def like_x(value: Any) -> Expr:  # a number (or flag) in the sides' common type
        return Expr(Function("cast_like", (to_node(value), x.node)))

    # the window's count of rows with both sides (polars: a rolling sum of that flag)
    count = like_x(x.is_not_null()).rolling_sum(window_size, min_samples=0)
    least = like_x(1 if func == "rolling_corr" else ddof)
    shrink = count / (count - least)
    numerator = (mean(x * y) - mean(x) * mean(y)) * shrink
    if func == "rolling_cov":
        value = numerator
    else:
        spread = x.rolling_var(window_size, min_samples=min_samples) * y.rolling_var(
            window_size, min_samples=min_samples)  # fmt: skip
        value = numerator / spread.pow(like_x(0.5))
    # polars 2.2: NaN where the window holds an infinite or NaN value (of a pair), or
    # no more pairs than `ddof` (the value first: it names the result)
    unbounded = like_x((x.is_finite() & y.is_finite()).not_()).rolling_sum(
        window_size, min_samples=0)  # fmt: skip
    defined = (unbounded == 0) & (count > least)
    return when(value.is_null() | defined).then(value).otherwise(like_x(float("nan")))


def _pairs(func: str, a: Any, b: Any) -> tuple[Expr, Expr, tuple[Node, Node]]:
    """`cov`'s and `corr`'s operands: each as Float64, null where either side is null.

    And the two sides as given.
    """
    sides = (_arg_node(a), _arg_node(b))
    x = Expr(Function("pair_float", sides, (func,)))
    y = Expr(Function("pair_float", sides[::-1], (func,)))
    return x, y, sides


def _pair_result(func: str, value: Expr, sides: tuple[Node, Node]) -> Expr:
    """``value`` in `cov`'s or `corr`'s type.

    Each side's first value tells its type (a reduction, so that ``group_by`` and
    ``over`` see one value per group).
    """
    witnesses = tuple(Expr(side).first().node for side in sides)
    return Expr(Function("pair_result", (value.node, *witnesses), (func,)))


def _peak(x: Expr, op: str, func: str) -> Expr:
    """``peak_max`` (``op`` "gt") or ``peak_min`` ("lt"): polars' comparisons with both neighbours.

    polars shifts the column both ways filling 0 of its type, then compares and takes
    the Kleene AND: a row with no neighbour on a side (the first and last rows, of a
    group under ``over``) is compared with 0 there, as a number (a boolean with false).
    """
    v = Expr(Function("peak_values", (x.node,), (func,)))
    # the shifts fill 0 (a boolean compares as 0 and 1 against it): read in place by the
    # kernels, no pass of their own
    return v._bin(op, v.shift(1, fill_value=0)) & v._bin(op, v.shift(-1, fill_value=0))


def _anchored_mean(x: Expr) -> Expr:
    """The mean as later polars takes it for `cov` and `corr`, anchored on the first value.

    The first value plus the mean of the differences from it: the values of a column
    that does not vary differ from their mean by exactly 0 (``sum / n`` can be an ulp
    off).
    """
    anchor = x.drop_nulls().first()
    return anchor + (x - anchor).mean()


def _not_eager(func: str, eager: Any) -> None:
    if eager is not False:
        msg = (f"`{func}(eager={eager!r})`: colbridge's expressions are lazy; compute "
               f"`df.gpu.select(cb.{func}(a, b))` instead")  # fmt: skip
        raise UnsupportedOperationError(msg)


def coalesce(*exprs: Any) -> Expr:
    """The first non-null value of the arguments, row by row (a string names a column).

    Examples
    --------
    >>> import colbridge as cb
    >>> cb.coalesce(cb.col("a"), "b", 0)
    <Expr coalesce(col("a"), col("b"), lit(0))>
    """
    return Expr(Coalesce(_arguments("coalesce", exprs)))


def concat_str(*exprs: Any, separator: str = "", ignore_nulls: bool = False) -> Expr:
    """The arguments' texts joined row by row, with ``separator`` between them (polars').

    Numbers, booleans, dates and times are written as ``cast(pl.String)`` writes them,
    categoricals as their labels. A null makes the row null, unless ``ignore_nulls``:
    then it is left out with its separator (a row of nulls is ""). A string names a
    column.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": ["x", None, "z"], "b": [1, 2, None]})
    >>> df.gpu.select(k=cb.concat_str("a", "b", separator="-")).compute()["k"].to_list()
    ['x-1', None, None]
    >>> df.gpu.select(k=cb.concat_str("a", "b", separator="-", ignore_nulls=True)
    ...               ).compute()["k"].to_list()
    ['x-1', '2', 'z']
    """
    if not isinstance(separator, str):
        msg = f"`concat_str` takes a string separator, got {separator!r}"
        raise SchemaError(msg)
    return Expr(Function("concat_str", _arguments("concat_str", exprs),
                         (separator, _flag(ignore_nulls, "concat_str"))))  # fmt: skip


def _arguments(name: str, exprs: tuple[Any, ...]) -> tuple[Node, ...]:
    flat = _flatten(exprs)
    if not flat:
        msg = f"`{name}` needs at least one expression"
        raise SchemaError(msg)
    return expand_arguments([_arg_node(e) for e in flat], name)


def max_horizontal(*exprs: Any) -> Expr:
    """The largest value across the arguments, row by row, as polars computes it.

    Nulls are skipped (null only where every argument is null), and so is NaN
    unless every value is NaN. A string names a column.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1.0, None, None], "b": [3.0, 2.0, None]})
    >>> df.gpu.select(m=cb.max_horizontal("a", "b")).compute()["m"].to_list()
    [3.0, 2.0, None]
    """
    return Expr(Function("max_horizontal", _arguments("max_horizontal", exprs)))


def min_horizontal(*exprs: Any) -> Expr:
    """The smallest value across the arguments, row by row (nulls and NaN as `max_horizontal`).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1.0, None, None], "b": [3.0, 2.0, None]})
    >>> df.gpu.select(m=cb.min_horizontal("a", "b")).compute()["m"].to_list()
    [1.0, 2.0, None]
    """
    return Expr(Function("min_horizontal", _arguments("min_horizontal", exprs)))


def sum_horizontal(*exprs: Any, ignore_nulls: bool = True) -> Expr:
    """The sum across the arguments, row by row, as polars computes it.

    With ``ignore_nulls=True`` (the default) a null counts as 0, so a row of nulls
    sums to 0; with False a null anywhere gives null. The sum is in the arguments'
    common type widened as `sum` widens it (booleans to UInt32, 8- and 16-bit
    integers to Int64); integers wrap on overflow in it.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, None, None], "b": [3, 2, None]})
    >>> df.gpu.select(s=cb.sum_horizontal("a", "b")).compute()["s"].to_list()
    [4, 2, 0]
    """
    node = Function("sum_horizontal", _arguments("sum_horizontal", exprs), (bool(ignore_nulls),))
    return Expr(node)


def mean_horizontal(*exprs: Any, ignore_nulls: bool = True) -> Expr:
    """The mean across the arguments, row by row, as polars computes it.

    With ``ignore_nulls=True`` (the default) the mean of the non-null values (null
    where all are null); with False a null anywhere gives null. float32 stays
    float32, everything else gives float64.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, None, None], "b": [3, 2, None]})
    >>> df.gpu.select(m=cb.mean_horizontal("a", "b")).compute()["m"].to_list()
    [2.0, 2.0, None]
    """
    node = Function("mean_horizontal", _arguments("mean_horizontal", exprs), (bool(ignore_nulls),))
    return Expr(node)


def all_horizontal(*exprs: Any) -> Expr:
    """Kleene AND across the arguments, row by row (a string names a column).

    Each argument is cast to Boolean first, as polars casts it (a non-zero number or
    NaN is true), so integers are never combined bit by bit as ``&`` combines them.

    Examples
    --------
    >>> import colbridge as cb
    >>> cb.all_horizontal("a", cb.col("b") > 0)
    <Expr all_horizontal(col("a"), (col("b") > lit(0)))>
    """
    # a selection (`all_horizontal(cb.all() > 0)`) is spread into one argument per column
    return Expr(Function("all_horizontal", tuple(_arguments("all_horizontal", exprs))))


def any_horizontal(*exprs: Any) -> Expr:
    """Kleene OR across the arguments, row by row (a string names a column).

    Each argument is cast to Boolean first, as in `all_horizontal`.

    Examples
    --------
    >>> import colbridge as cb
    >>> cb.any_horizontal("a", "b", "c")
    <Expr any_horizontal(col("a"), col("b"), col("c"))>
    """
    return Expr(Function("any_horizontal", tuple(_arguments("any_horizontal", exprs))))


def _count_param(value: Any, func: str, name: str, *, signed: bool = False,
                 allow_none: bool = False) -> Any:  # fmt: skip
    """An integer parameter of an ordered operation, checked (``n``, ``window_size``...)."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        msg = f"`{func}({name}=...)` takes an integer, got {value!r}"
        raise SchemaError(msg)
    value = int(value)
    if value < 0 and not signed:
        msg = f"`{func}({name}={value})`: `{name}` must be >= 0"
        raise SchemaError(msg)
    return value


def _ddof_param(ddof: Any, func: str) -> int:
    """A ``ddof``: an integer from 0 to 255 (polars keeps it in a byte)."""
    value = _count_param(ddof, func, "ddof")
    if value > 255:
        msg = f"`{func}(ddof={value})`: `ddof` must be at most 255"
        raise SchemaError(msg)
    return int(value)


def _rolling_weights(func: str, window_size: int, weights: Any) -> tuple[float, ...] | None:
    """A rolling window's ``weights``, checked: one number per row of the window (polars' rule)."""
    if weights is None:
        return None
    if isinstance(weights, (str, bytes)) or _is_expression(weights) \
            or not isinstance(weights, Iterable):  # fmt: skip
        msg = (
            f"`{func}(weights=...)` takes a list of numbers, one per row of the window, "
            f"got {type(weights).__name__}"
        )
        raise SchemaError(msg)
    values = list(np.asarray(weights, dtype=object).ravel()) if isinstance(weights, np.ndarray) \
        else list(weights)  # fmt: skip
    for w in values:
        if isinstance(w, (bool, np.bool_)) or not isinstance(w, (int, float, np.integer,
                                                                 np.floating)):  # fmt: skip
            msg = f"`{func}(weights=...)`: each weight must be a number, got {w!r}"
            raise SchemaError(msg)
    if builtins.len(values) != window_size or window_size == 0:
        msg = (
            f"`{func}(weights=...)` has {builtins.len(values)} weight(s) for a `window_size` "
            f"of {window_size}: give exactly one weight per row of the window (at least one)"
        )
        raise SchemaError(msg)
    return tuple(float(w) for w in values)


def _ewm_alpha(com: float | None, span: float | None, half_life: float | None,
               alpha: float | None, func: str = "ewm_mean") -> float:  # fmt: skip
    """The smoothing factor from exactly one of polars' decay parameters."""
    given = [(k, v) for k, v in (("com", com), ("span", span), ("half_life", half_life),
                                 ("alpha", alpha)) if v is not None]  # fmt: skip
    if builtins.len(given) != 1:
        msg = (
            f"`{func}` needs exactly one of `com`, `span`, `half_life`, `alpha`, got "
            + (", ".join(k for k, _ in given) or "none")
        )
        raise SchemaError(msg)
    name, value = given[0]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        msg = f"`{func}({name}=...)` takes a number, got {value!r}"
        raise SchemaError(msg)
    value = float(value)
    if name == "com":
        if not value >= 0.0:
            msg = f"`{func}`: require `com` >= 0 (found {value!r})"
            raise SchemaError(msg)
        return 1.0 / (1.0 + value)
    if name == "span":
        if not value >= 1.0:
            msg = f"`{func}`: require `span` >= 1 (found {value!r})"
            raise SchemaError(msg)
        return 2.0 / (value + 1.0)
    if name == "half_life":
        if not value > 0.0:
            msg = f"`{func}`: require `half_life` > 0 (found {value!r})"
            raise SchemaError(msg)
        return 1.0 - math.exp(-math.log(2.0) / value)
    if not 0.0 < value <= 1.0:
        msg = f"`{func}`: require 0 < `alpha` <= 1 (found {value!r})"
        raise SchemaError(msg)
    return value


def _quantile_param(quantile: Any, interpolation: Any, function: str) -> float:
    """A quantile argument (a number from 0 to 1) checked with its interpolation's name."""
    value = _number_of(quantile)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = (
            f"`{function}({quantile!r})`: the quantile must be a number from 0 to 1; "
            "colbridge takes a literal, not an expression"
        )
        raise SchemaError(msg)
    if not 0.0 <= value <= 1.0:
        msg = f"`{function}({quantile!r})`: the quantile must be between 0.0 and 1.0"
        raise SchemaError(msg)
    if interpolation not in QUANTILE_METHODS:
        msg = (
            f"`{function}({quantile!r}, {interpolation!r})`: unknown interpolation; use "
            f"one of {', '.join(repr(m) for m in QUANTILE_METHODS)}"
        )
        raise SchemaError(msg)
    return float(value)


def _flag(value: Any, function: str, name: str = "ignore_nulls") -> bool:
    """A boolean keyword argument ``name`` of ``function`` (`any`, `all`, `skew`, ...)."""
    if not isinstance(value, (bool, np.bool_)):
        msg = f"`{function}({name}={value!r})`: expected True or False"
        raise SchemaError(msg)
    return bool(value)


def _flags(value: Any, count: int, name: str, method: str = "sort_by") -> tuple[bool, ...]:
    """``method``'s ``name`` flag for each of its ``count`` keys: one for all, or one each."""
    if isinstance(value, (list, tuple)):
        if builtins.len(value) != count:
            msg = (f"`{method}({name}={list(value)!r})`: {builtins.len(value)} flag(s) for "
                   f"{count} key(s); give one flag, or one per key")  # fmt: skip
            raise SchemaError(msg)
        return tuple(_flag(v, method, name) for v in value)
    return (_flag(value, method, name),) * count


def _number_of(value: Any) -> Any:
    """A Python number written as an expression (`lit(2)`) is the number itself."""
    node = value.node if isinstance(value, Expr) else value
    if isinstance(node, Literal) and node.dtype is None:
        return node.value
    return value


def _replace_value(value: Any) -> Any:
    """One ``replace`` value: a scalar as the kernels take it (expressions refused).

    A string is a value here, not a column name (polars reads it so too).
    """
    if isinstance(value, str):
        return str(value)  # a NumPy string too
    if _is_expression(value):
        msg = (
            "`replace` takes values (a scalar, a list or a mapping), not expressions; "
            "for a replacement per row use `when(...).then(...).otherwise(...)`"
        )
        raise UnsupportedOperationError(msg)
    if isinstance(value, CONSTANT_TYPES):
        return value
    node = _literal_node(value)
    if not isinstance(node, Literal):
        msg = f"`replace` takes numbers, strings, dates or None, got {type(value).__name__}"
        raise UnsupportedOperationError(msg)
    return node.value


def _replace_values(values: Any) -> tuple[Any, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        return (_replace_value(values),)
    return tuple(_replace_value(v) for v in values)


def _replace_pairs(old: Any, new: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``replace``'s ``(olds, news)``, of equal length; polars' errors for bad ones."""
    if new is _NO_NEW:
        if not isinstance(old, Mapping):
            msg = "`replace`: `new` is required where `old` is not a mapping"
            raise SchemaError(msg)
        olds, news = _replace_values(list(old.keys())), _replace_values(list(old.values()))
    else:
        olds, news = _replace_values(old), _replace_values(new)
    if builtins.len(news) == 1 and builtins.len(olds) != 1:
        news = news * builtins.len(olds)
    if builtins.len(news) != builtins.len(olds):
        msg = (
            f"`replace`: {builtins.len(olds)} old value(s) and {builtins.len(news)} new ones; "
            "give one new value, or as many as old ones"
        )
        raise SchemaError(msg)
    seen: list[Any] = []
    for v in olds:
        nan = isinstance(v, float) and v != v
        if any(w is v or w == v or (nan and isinstance(w, float) and w != w) for w in seen):
            msg = "`replace`: `old` must not contain duplicates (as in polars)"
            raise InvalidOperationError(msg)
        seen.append(v)
    return olds, news


def _series_type(values: tuple[Any, ...]) -> Any:
    """The type polars gives a Series of ``values`` (``replace_strict``'s list of new values).

    Integers are Int64 (UInt64 above it), floats Float64, strings String, dates Date,
    datetimes Datetime[us], durations Duration[us]; None where every value is None
    (polars' Null type). Kinds do not mix (polars refuses a Series of 1 and 2.5).
    """
    kinds = {_value_kind(v) for v in values if v is not None}
    if not kinds:
        return None
    if builtins.len(kinds) > 1:
        mixed = " and ".join(sorted(kinds))
        msg = (f"`replace_strict`: the new values mix {mixed} values; give values of one "
               "kind (polars refuses them too), or a `return_dtype`")  # fmt: skip
        raise SchemaError(msg)
    kind = kinds.pop()
    if kind == "int":
        big = any(v >= 2**63 for v in values if v is not None)
        return DType.UINT64 if big else DType.INT64
    return {"bool": DType.BOOL, "float": DType.FLOAT64}.get(kind) or parse_logical(
        {"str": "string", "date": "date", "datetime": "datetime[us]", "timedelta": "duration[us]",
         "time": "time"}[kind])  # fmt: skip


def _value_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, _dt.datetime):
        return "datetime"
    for kind in (int, float, str, _dt.date, _dt.timedelta, _dt.time):
        if isinstance(value, kind):
            return kind.__name__
    return type(value).__name__  # pragma: no cover - `_replace_value` admits no other


def _breakpoints(method: str, values: Any) -> tuple[Any, ...]:
    """Binning breakpoints as a tuple of one kind of scalar, without nulls."""
    if hasattr(values, "to_list"):  # a polars or pandas Series
        values = values.to_list()
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        msg = f"`{method}` takes a list of breakpoints, got {values!r}"
        raise SchemaError(msg)
    points = tuple(values)
    if any(v is None for v in points):
        msg = f"`{method}`: the breakpoints cannot contain nulls"
        raise InvalidOperationError(msg)
    if any(isinstance(v, Expr) for v in points):
        msg = f"`{method}` takes breakpoints as values, not expressions"
        raise UnsupportedOperationError(msg)
    if method == "bin_intervals":
        kinds = {_value_kind(v) for v in points}
        if builtins.len(kinds) > 1:
            msg = (f"`bin_intervals`: the breakpoints mix {' and '.join(sorted(kinds))} "
                   "values; give values of one kind (polars refuses them too)")  # fmt: skip
            raise SchemaError(msg)
    return points


def _total_order_key(value: Any) -> Any:
    """The order polars sorts floats in: NaN above every other value."""
    if isinstance(value, float):
        return (math.isnan(value), 0.0 if math.isnan(value) else value)
    return (False, value)


def _fractions(method: str, values: Any) -> list[float]:
    """``bin_quantiles``/``bin_ranks`` fractions: numbers in [0, 1], non-decreasing."""
    fractions = list(_breakpoints(method, values))
    if any(isinstance(q, bool) or not isinstance(q, (int, float)) for q in fractions):
        msg = f"`{method}`: the fractions {fractions} must be numbers in [0, 1]"
        raise SchemaError(msg)
    if any(not 0.0 <= q <= 1.0 for q in fractions):
        msg = f"`{method}`: the fractions {fractions} must be between 0.0 and 1.0"
        raise InvalidOperationError(msg)
    if any(b < a for a, b in itertools.pairwise(fractions)):
        msg = f"`{method}`: the fractions {fractions} must be non-decreasing"
        raise InvalidOperationError(msg)
    return [float(q) for q in fractions]


def _bin_labels(method: str, labels: Any, bins: int) -> tuple[str, ...] | None:
    """One label per bin (an Enum's categories), or None for ``labels=False``."""
    if labels is False:
        return None
    if labels is True or isinstance(labels, str) or not isinstance(labels, Iterable):
        msg = f"`{method}`: labels are a list of one string per bin, or False for the index"
        raise SchemaError(msg)
    names = tuple(labels)
    if builtins.len(names) != bins:
        msg = f"`{method}` produces {bins} bins but got {builtins.len(names)} labels"
        raise ShapeError(msg)
    if not all(isinstance(n, str) for n in names):
        msg = f"`{method}`: the labels {list(names)} must be strings"
        raise SchemaError(msg)
    if builtins.len(set(names)) < builtins.len(names):
        duplicate = next(n for n in names if names.count(n) > 1)
        msg = f"`{method}`: the labels must be unique; {duplicate!r} is given twice"
        raise InvalidOperationError(msg)
    return names


def _float_text(value: float) -> str:
    """A float as polars writes a break in ``cut``'s labels (Rust's ``Display``)."""
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return np.format_float_positional(value, unique=True, trim="-")


def _is_in_value(value: Any) -> Any:
    if isinstance(value, CONSTANT_TYPES):
        return value  # strings, dates, datetimes, times, durations: typed with the column
    if _is_expression(value):
        msg = "`is_in` takes a list of scalars, not expressions"
        raise UnsupportedOperationError(msg)
    return _bound_value(value)


def _bound_value(bound: Any) -> bool | int | float | None:
    """A scalar `clip` bound as a plain number (NumPy scalars included)."""
    if bound is None or isinstance(bound, (bool, int, float)):
        return bound
    node = _literal_node(bound)
    if not isinstance(node, Literal):
        msg = f"a bound must be a number, got {type(bound).__name__} {bound!r}"
        raise SchemaError(msg)
    return node.value


def as_expr(value: Any) -> Expr:
    """An `Expr` from an `Expr`, a `_WhenThen` chain, a column name string or a scalar."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, _WhenThen):
        return value._finish()
    if isinstance(value, str):
        return col(value)
    return Expr(to_node(value))


def datetime(year: Any, month: Any, day: Any, hour: Any = None, minute: Any = None,
             second: Any = None, microsecond: Any = None, *, time_unit: str = "us",
             time_zone: str | None = None, ambiguous: str = "raise") -> Expr:
    """A Datetime from its parts, as polars' ``pl.datetime``.

    Each part a number, a column name or an expression; cast as polars casts them,
    not strictly (``year`` to Int32, ``month`` ... ``second`` to Int8, ``microsecond``
    to Int32 and then to nanoseconds there, wrapping): a part that does not fit (or
    a string that does not parse) makes its row null, as does a null part. A row
    whose parts are no date and time (month 13, February 30, hour 24, ...) fails the
    compute with `InvalidOperationError` (polars: ``ComputeError``). With
    ``time_zone`` the wall time is placed in that zone (``ambiguous`` as in
    ``dt.replace_time_zone``; a time in a daylight-saving gap fails, as in polars).

    >>> import polars as pl, colbridge as cb
    >>> df = pl.DataFrame({"m": [2, 12], "h": [5, 23]})
    >>> df.gpu.select(t=cb.datetime(2024, "m", 29, "h", 30)).compute()["t"].to_list()
    [datetime.datetime(2024, 2, 29, 5, 30), datetime.datetime(2024, 12, 29, 23, 30)]
    """
    if time_unit not in UNIT_NS:
        msg = f"`datetime(time_unit={time_unit!r})`: use 'ns', 'us' or 'ms'"
        raise SchemaError(msg)

    def part(value: Any, dtype: DType) -> Node:  # cast as polars casts it: not strictly
        given = 0 if value is None else value
        expr = col(given) if isinstance(given, builtins.str) else as_expr(given)
        return expr.cast(dtype, strict=False).node

    nanos = Expr(part(microsecond, DType.INT32)) * lit(1_000).cast(DType.INT32)
    parts = (part(year, DType.INT32), *(part(v, DType.INT8) for v in (month, day, hour, minute,
                                                                       second)), nanos.node)
    # Python integers alone (no zone): polars builds the value with chrono's `with_*`,
    # which takes a leap second's nanoseconds (1e9 to 2e9) in any second
    given = (year, month, day, hour, minute, second, microsecond)
    folded = time_zone is None and all(
        v is None or type(_python_number(v)) is int for v in given)  # fmt: skip
    out = Expr(Function("datetime_parts", parts, (time_unit, None, folded)))
    if time_zone is not None:
        out = out.dt.replace_time_zone(time_zone, ambiguous=ambiguous)
    return out


def date(year: Any, month: Any, day: Any) -> Expr:
    """A Date from its parts, as polars' ``pl.date``: `datetime`'s rules, then its date.

    >>> import polars as pl, colbridge as cb
    >>> df = pl.DataFrame({"y": [2024, None], "m": [2, 3]})
    >>> df.gpu.select(d=cb.date("y", "m", 29)).compute()["d"].to_list()
    [datetime.date(2024, 2, 29), None]
    """
    return datetime(year, month, day).cast(Logical("date"))


def time(hour: Any = None, minute: Any = None, second: Any = None,
         microsecond: Any = None) -> Expr:  # fmt: skip
    """A Time from its parts, as polars' ``pl.time``: `datetime`'s rules on 1970-01-01.

    >>> import polars as pl, colbridge as cb
    >>> df = pl.DataFrame({"h": [9, 23]})
    >>> df.gpu.select(t=cb.time("h", 30)).compute()["t"].to_list()
    [datetime.time(9, 30), datetime.time(23, 30)]
    """
    return datetime(1970, 1, 1, hour, minute, second, microsecond).cast(Logical("time"))


def _python_number(value: Any) -> Any:
    """``value``, or the Python number a literal expression holds (the string language's).

    polars folds constructors of literals alone (`duration`, `datetime`) its own way.
    """
    if isinstance(value, Expr) and isinstance(value.node, Literal) \
            and type(value.node.value) in (int, float):  # fmt: skip
        return value.node.value
    return value


#: a unit's own part of ``duration`` and the other parts below a second, in the order
#: polars adds them to it
_SUBSECOND_PARTS = {"us": ("microseconds", ("nanoseconds", "milliseconds")),
                    "ns": ("nanoseconds", ("microseconds", "milliseconds")),
                    "ms": ("milliseconds", ("nanoseconds", "microseconds"))}  # fmt: skip


def duration(*, weeks: Any = None, days: Any = None, hours: Any = None, minutes: Any = None,
             seconds: Any = None, milliseconds: Any = None, microseconds: Any = None,
             nanoseconds: Any = None, time_unit: str | None = None) -> Expr:
    """A Duration from its parts, as polars' ``pl.duration`` (a fixed length: a day is 24h).

    Each part is a number, a column name or an expression of integers (read as
    Int64, strictly: a UInt64 past Int64's range is an error) or floats (Float64);
    other types are refused, as polars refuses them. A null part makes the row null.
    ``time_unit`` is ``"ns"`` where ``nanoseconds`` is given, else ``"us"``, unless
    set. Computed as polars does: the parts below a second, in the unit (finer
    ones divided toward zero), then seconds, minutes, hours, days and weeks each
    times its length in the unit, added in that order in the parts' types
    (integers wrap; a float part makes the sum Float64, truncated at the end, NaN or
    out of range null). Python numbers alone fold to one constant as polars folds
    them.

    >>> import datetime as dt, polars as pl, colbridge as cb
    >>> df = pl.DataFrame({"t": [dt.datetime(2024, 1, 1)], "n": [3]})
    >>> df.gpu.select(cb.col("t") + cb.duration(days="n", hours=1.5)).compute()["t"].to_list()
    [datetime.datetime(2024, 1, 4, 1, 30)]
    """
    given = {"weeks": weeks, "days": days, "hours": hours, "minutes": minutes,
             "seconds": seconds, "milliseconds": milliseconds, "microseconds": microseconds,
             "nanoseconds": nanoseconds}  # fmt: skip
    parts = {name: _python_number(value) for name, value in given.items() if value is not None}
    unit = time_unit if time_unit is not None else "ns" if nanoseconds is not None else "us"
    if unit not in UNIT_NS:
        msg = f"`duration(time_unit={time_unit!r})`: use 'ns', 'us' or 'ms'"
        raise SchemaError(msg)
    target = Logical("duration", unit)
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in parts.values())
    if numbers and all(-(1 << 63) <= v < 1 << 63 for v in parts.values() if isinstance(v, int)):
        ticks = constant_duration(parts, unit)  # type: ignore[arg-type]
        return lit(ticks).cast(target)

    def part(name: str) -> Expr:  # Int64 or Float64, as polars coerces each part
        value = parts[name]
        node = col(value).node if isinstance(value, builtins.str) else to_node(value)
        return Expr(Function("duration_part", (node,), (name,)))

    per_unit = UNIT_NS[unit]
    own, finer = _SUBSECOND_PARTS[unit]
    total = part(own) if own in parts else lit(0)
    for name in finer:  # in polars' order: a finer part divided toward zero, a coarser one
        length = DURATION_PARTS[name]  # multiplied
        if name in parts:
            total = total + (part(name).truncdiv(per_unit // length) if length < per_unit
                             else part(name) * (length // per_unit))  # fmt: skip
    for name in ("seconds", "minutes", "hours", "days", "weeks"):
        if name in parts:
            total = total + part(name) * (DURATION_PARTS[name] // per_unit)
    return total.cast(DType.INT64, strict=False).cast(target)


def int_range(start: Any = 0, end: Any = None, step: int = 1, *, dtype: Any = "int64") -> Expr:
    """0, 1, 2, ... one per row, as polars' ``int_range(len())`` (per group with ``over``).

    The range of the frame's rows is the one colbridge computes: ``int_range(len())``
    or ``int_range(0, len())``, step 1, in an integer ``dtype`` (a strict cast: a
    range past the type's end is an error). Other ranges have another number of rows
    than the frame: build them in polars.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"g": [1, 1, 2, 1]})
    >>> df.gpu.with_columns(i=cb.int_range(cb.len()),
    ...                     k=cb.int_range(cb.len()).over("g")).compute()
    shape: (4, 3)
    ┌─────┬─────┬─────┐
    │ g   ┆ i   ┆ k   │
    │ --- ┆ --- ┆ --- │
    │ i64 ┆ i64 ┆ i64 │
    ╞═════╪═════╪═════╡
    │ 1   ┆ 0   ┆ 0   │
    │ 1   ┆ 1   ┆ 1   │
    │ 2   ┆ 2   ┆ 0   │
    │ 1   ┆ 3   ┆ 2   │
    └─────┴─────┴─────┘
    """
    if end is None:
        start, end = 0, start
    rows_end = isinstance(end, Expr) and end.node == Agg("len", ROWS)
    if isinstance(start, Expr) and isinstance(start.node, Literal):  # `int_range(0, len())`
        start = start.node.value  # in the string language
    whole = isinstance(start, int) and not isinstance(start, bool) and start == 0
    if not (rows_end and whole and isinstance(step, int) and step == 1):
        shown = ", ".join(repr(v.node) if isinstance(v, Expr) else repr(v) for v in (start, end))
        msg = (
            f"`int_range({shown}, step={step!r})`: colbridge computes the range of "
            "the frame's rows, `int_range(len())` (0, 1, 2, ... per row, per group with "
            "`over`); other ranges have another number of rows than the frame: build them "
            "in polars"
        )
        raise UnsupportedOperationError(msg)
    wanted = parse_dtype(dtype)
    if not wanted.is_integer:
        msg = f"`int_range(dtype={dtype!r})`: the range is of integers; give an integer type"
        raise SchemaError(msg)
    # the rows counted by a running count of `true` in every row (1, 2, 3, ...): a scan,
    # so `over` counts within each group and a stream goes on from the batch before
    counted = Scan("cum_count", EveryRow(Literal(True)), (False,))
    return Expr(Function("int_range", (counted,), (wanted,)))


def _time_window(method: str, name: str, length: Any, closed: Any) -> str:
    """A time-based window's length as a duration string, and its ``closed``, checked.

    ``length``: a duration string (``"2d"``, ``"1h30m"``, ``"3i"``) or a timedelta,
    strictly positive; ``closed`` one of `ROLLING_CLOSED`.
    """
    if isinstance(length, _dt.timedelta):
        length = timedelta_text(length)
    if not isinstance(length, builtins.str):
        msg = (f"`{method}({name}=...)` takes a duration string (\"2d\", \"1h30m\", \"3i\") "
               f"or a timedelta, got {length!r}")  # fmt: skip
        raise SchemaError(msg)
    duration = parse_duration_in(length, f"{method}({length!r})")
    if duration.is_zero or duration.negative:
        msg = f"`{method}({length!r})`: `{name}` must be strictly positive"
        raise InvalidOperationError(msg)
    if closed not in ROLLING_CLOSED:
        msg = f"`{method}(closed={closed!r})`: use one of {', '.join(map(repr, ROLLING_CLOSED))}"
        raise SchemaError(msg)
    return length


def _refuse_values_outside_reductions(node: Node, shown: str) -> None:
    """Refuse a column (or ordered operation) of ``expr.rolling`` outside a reduction.

    polars gives such a value a list per window (each row's window of values); here
    every value is reduced per window.
    """
    seen: set[Node] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n in seen or isinstance(n, Agg):
            continue
        seen.add(n)
        if isinstance(n, (Column, Selector, Scan, EveryRow)):
            msg = (f"`{n!r}` in `.{shown}` is outside a reduction: polars gives each row a "
                   "list of its window's values there, which colbridge does not hold; reduce "
                   "it (`.sum()`, `.mean()`, `.max()`...)")  # fmt: skip
            raise UnsupportedOperationError(msg)
        stack.extend(children(n))


def _positions() -> Expr:
    """Each row's position (UInt32): 0, 1, 2, ... (per group in ``agg`` and ``over``)."""
    return int_range(len(), dtype="uint32")


def arg_where(condition: Any) -> Expr:
    """The positions (UInt32) where ``condition`` is true: ``condition.arg_true()``.

    >>> import polars as pl, colbridge as cb
    >>> df = pl.DataFrame({"x": [5, 1, 7]})
    >>> df.gpu.select(cb.arg_where(cb.col("x") > 2)).compute()["x"].to_list()
    [0, 2]
    """
    return Expr(_arg_node(condition)).arg_true()


def arg_sort_by(exprs: Any, *more_exprs: Any, descending: bool | Sequence[bool] = False,
                nulls_last: bool | Sequence[bool] = False, multithreaded: bool = True,
                maintain_order: bool = False) -> Expr:  # fmt: skip
    """The row positions (UInt32) in the order of the keys, as polars' ``arg_sort_by``.

    Keys and flags as `Expr.sort_by`'s (stable: rows of equal keys in frame order);
    per group with ``over``, positions within the group.

    >>> import polars as pl, colbridge as cb
    >>> df = pl.DataFrame({"x": [5, 1, 7]})
    >>> df.gpu.select(cb.arg_sort_by("x")).compute()["x"].to_list()
    [1, 0, 2]
    """
    keys = _key_nodes((exprs, *more_exprs), "arg_sort_by")
    positions = _positions().sort_by(*(Expr(k) for k in keys), descending=descending,
                                     nulls_last=nulls_last, multithreaded=multithreaded,
                                     maintain_order=maintain_order)  # fmt: skip
    return positions.alias(output_name(keys[0]))  # named as polars: after the first key


def format(f_string: str, *args: Any) -> Expr:  # polars' name (the builtin is not used here)
    """``f_string`` with each ``{}`` replaced by the next argument's text, as polars' ``format``.

    Strings name columns; a null argument makes the row null (`concat_str`'s rule).

    >>> import polars as pl, colbridge as cb
    >>> df = pl.DataFrame({"a": ["x", None], "n": [1, 2]})
    >>> df.gpu.select(cb.format("{} = {}", "a", "n")).compute()["a"].to_list()
    ['x = 1', None]
    """
    if not isinstance(f_string, builtins.str):
        msg = f"`format({f_string!r}, ...)`: the format is a string with a `{{}}` per argument"
        raise SchemaError(msg)
    spec = re.search(r"\{:[^{}]*\}", f_string)
    if spec is not None:  # polars 2.2 reads Rust-like specs (`{:.2f}`, `{:>5}`, `{:x}`)
        msg = (f"`format({f_string!r}, ...)`: the format spec `{spec.group()}` is not "
               "supported by colbridge; shape the argument first (`.round(2)`, "
               "`.cast(pl.String).str.pad_start(5)`) and use a plain `{}`")  # fmt: skip
        raise UnsupportedOperationError(msg)
    parts = f_string.split("{}")
    if builtins.len(parts) - 1 != builtins.len(args):
        msg = (f"`format({f_string!r}, ...)`: {builtins.len(parts) - 1} placeholder(s) "
               f"`{{}}` for {builtins.len(args)} argument(s); give one argument per "
               "placeholder")  # fmt: skip
        raise SchemaError(msg)
    pieces: list[Any] = []
    for text, arg in zip(parts, [*args, None], strict=True):
        if text:
            pieces.append(lit(text))
        if arg is not None:
            pieces.append(Expr(_arg_node(arg)))
    if not args:
        return lit(f_string)
    # named after the first argument, as polars names it (whatever text comes first)
    return concat_str(*pieces).alias(output_name(_arg_node(args[0])))


def row_index(name: str = "index") -> Expr:
    """Each row's position (UInt32), named ``name``: polars' ``row_index``.

    >>> import polars as pl, colbridge as cb
    >>> df = pl.DataFrame({"x": ["a", "b"]})
    >>> df.gpu.with_columns(cb.row_index()).compute()["index"].to_list()
    [0, 1]
    """
    if not isinstance(name, builtins.str):
        msg = f"`row_index({name!r})`: the name is a string, e.g. `row_index(\"index\")`"
        raise SchemaError(msg)
    return _positions().alias(name)


def from_epoch(column: Any, time_unit: str = "s") -> Expr:
    """Integers since 1970-01-01 as dates or datetimes, as polars' ``from_epoch``.

    ``time_unit``: ``"d"`` (days: a Date), ``"s"`` (seconds: a Datetime in
    microseconds), ``"ms"`` (milliseconds: in microseconds), ``"us"``, ``"ns"``.

    >>> import polars as pl, colbridge as cb
    >>> df = pl.DataFrame({"t": [0, 86400]})
    >>> df.gpu.select(cb.from_epoch("t")).compute()["t"].to_list()[1]
    datetime.datetime(1970, 1, 2, 0, 0)
    """
    x = Expr(_arg_node(column))
    if time_unit == "d":
        return x.cast("date")
    scale = {"s": 1_000_000, "ms": 1_000}.get(time_unit)
    if scale is not None:  # as polars: times an Int64 literal (floats stay floats)
        return (x * lit(scale, "int64")).cast("datetime[us]")
    if time_unit in ("us", "ns"):
        return x.cast(f"datetime[{time_unit}]")
    msg = (f"`from_epoch(time_unit={time_unit!r})`: the unit is one of 'd', 's', 'ms', 'us', "
           "'ns'")  # fmt: skip
    raise SchemaError(msg)


#: ``date_diff``'s units, as polars spells them
DATE_DIFF_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second",
                   "millisecond", "microsecond", "nanosecond")  # fmt: skip


def date_diff(start: Any, end: Any, unit: str) -> Expr:
    """How many ``unit`` boundaries lie between ``start`` and ``end`` (``pl.date_diff``).

    The count of times the calendar or the clock moves into a new ``unit`` on the way
    (negative when ``end`` is before ``start``): 2024-01-31 to 2024-02-01 is one month,
    10:59 to 11:01 one hour. Weeks start on Monday; a zoned datetime counts on its
    local wall clock, where the hour a daylight saving change skips or repeats is
    counted once. Dates, Datetimes (a Date beside one is its midnight, UTC midnight
    for a zoned one; two take the finer unit and must share a zone) or Times (units
    of an hour or finer). Int64, named after ``start``; a string names a column.

    Examples
    --------
    >>> import datetime as dt
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [dt.date(2024, 1, 31), dt.date(2024, 3, 10)],
    ...                    "b": [dt.date(2024, 2, 1), dt.date(2024, 3, 4)]})
    >>> out = df.gpu.select(cb.date_diff("a", "b", "month"), days=cb.date_diff("a", "b", "day"))
    >>> out.compute().rows()
    [(1, 1), (0, -6)]
    """
    if unit not in DATE_DIFF_UNITS:
        units = ", ".join(map(repr, DATE_DIFF_UNITS))
        msg = f"`date_diff(unit={unit!r})`: the unit is one of {units}"
        raise InvalidOperationError(msg)
    return Expr(Function("dt.date_diff", (_arg_node(start), _arg_node(end)), (unit,)))


def mode_predicate(
    values: Node, kept: Node | None = None, groups: tuple[Node, ...] = ()
) -> Node:
    """True on the first row of each of the most frequent ``values`` (of the rows ``kept``).

    `Expr.mode` filters by it; with ``kept`` (``x.filter(p).mode()``), values are
    counted among the rows the predicate keeps: in groups of value and predicate, and
    of ``groups`` (the keys of the ``group_by`` or ``over`` the mode is taken in).

    >>> mode_predicate(col("a").node)
    (col("a").is_first_distinct() & (len().over(col("a")) == len().over(col("a")).max()))
    """
    x = Expr(values)
    if kept is None:
        count = len().over(x)  # the rows of each row's value
        return (x.is_first_distinct() & (count == count.max())).node
    rows, keys = Expr(kept), [Expr(k) for k in groups]
    count = len().over(*keys, x, rows)
    first = x.is_first_distinct().over(*keys, rows)
    most = count.filter(rows).max()
    return (first & (count == (most.over(*keys) if keys else most))).node


def len() -> Expr:  # polars' name: the builtin is `builtins.len` in this module
    """The number of rows (per group with ``over`` or in ``group_by(...).agg``).

    Examples
    --------
    >>> import colbridge as cb
    >>> cb.len()
    <Expr len()>
    """
    from colbridge.expr.nodes import ROWS

    return Expr(Agg("len", ROWS))


_ = DType  # re-exported type used in signatures


def _holidays(holidays: Any, mask: tuple[bool, ...], what: str) -> tuple[int, ...]:
    """``holidays`` as day counts (`holiday_days`); an expression is refused by name."""
    if isinstance(holidays, Expr):
        msg = (f"`dt.{what}`: holidays given as an expression are not supported; pass the "
               "dates themselves (a list, or a polars Series of dates)")  # fmt: skip
        raise UnsupportedOperationError(msg)
    return holiday_days(holidays, mask, what)  # a list, or a Series of dates (its values)


def _function(name: str, expr: Expr, *params: Any) -> Expr:
    return Expr(Function(name, (expr.node,), params))


class MissingMethodError(UnsupportedOperationError, AttributeError):
    """A polars method colbridge's namespace does not have (``hasattr`` reads it as absent)."""


def _missing_method(namespace: object, prefix: str, name: str) -> AttributeError:
    """The error for ``expr.<prefix>.<name>``, listing the namespace's methods.

    An expression has too many methods to list: its error names the closest ones.
    """
    if name.startswith("_"):
        return AttributeError(name)
    have = sorted(m for m in dir(type(namespace))
                  if not m.startswith("_") and callable(getattr(type(namespace), m)))  # fmt: skip
    if isinstance(namespace, Expr):
        close = difflib.get_close_matches(name, have, n=5)
        hint = f"; the closest methods: {', '.join(close)}" if close else ""
        return MissingMethodError(
            f"`Expr.{name}` is not supported by colbridge expressions; compute it in "
            f"polars (docs/semantics.md lists what colbridge runs){hint}"
        )
    return MissingMethodError(
        f"`{prefix}.{name}` is not supported by colbridge expressions; compute it in "
        f"polars. `{prefix}` has: {', '.join(have)}"
    )


class _Namespace:
    """A namespace of expression methods (``expr.dt``, ``expr.str``, ``expr.list``, ...).

    Each method builds a `Function` named ``<_prefix>.<method>`` of the expression; a
    method the namespace lacks is refused by name (`_missing_method`).
    """

    __slots__ = ("_expr",)
    _prefix: ClassVar[str]

    def __init__(self, expr: Expr) -> None:
        self._expr = expr

    def _f(self, name: str, *params: Any) -> Expr:
        return _function(f"{self._prefix}.{name}", self._expr, *params)

    def __getattr__(self, name: str) -> Any:
        raise _missing_method(self, self._prefix, name)


class DateTimeNamespace(_Namespace):
    """``expr.dt``: fields and arithmetic of dates, datetimes, durations and times.

    Fields are integer arithmetic in the kernel (the same on every device); a
    time-zoned datetime's fields are local, its offsets read from the zone's
    transitions. Result types are polars'.

    Examples
    --------
    >>> import datetime as dt
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"t": [dt.datetime(2024, 3, 31, 0, 30)]})
    >>> t = cb.col("t").dt.replace_time_zone("UTC").dt.convert_time_zone("Europe/London")
    >>> df.gpu.select(h=t.dt.hour(), wd=t.dt.weekday()).compute().row(0)
    (0, 7)
    """

    __slots__ = ()
    _prefix = "dt"

    def year(self) -> Expr:
        """The year (Int32)."""
        return self._f("year")

    def iso_year(self) -> Expr:
        """The ISO 8601 week-numbering year (Int32)."""
        return self._f("iso_year")

    def century(self) -> Expr:
        """The century (Int32): 2000 is in the 20th, 2001 in the 21st."""
        return self._f("century")

    def millennium(self) -> Expr:
        """The millennium (Int32)."""
        return self._f("millennium")

    def quarter(self) -> Expr:
        """The quarter, 1 to 4 (Int8)."""
        return self._f("quarter")

    def month(self) -> Expr:
        """The month, 1 to 12 (Int8)."""
        return self._f("month")

    def week(self) -> Expr:
        """The ISO 8601 week, 1 to 53 (Int8)."""
        return self._f("week")

    def weekday(self) -> Expr:
        """The ISO weekday, Monday 1 to Sunday 7 (Int8)."""
        return self._f("weekday")

    def day(self) -> Expr:
        """The day of the month, 1 to 31 (Int8)."""
        return self._f("day")

    def ordinal_day(self) -> Expr:
        """The day of the year, 1 to 366 (Int16)."""
        return self._f("ordinal_day")

    def days_in_month(self) -> Expr:
        """The number of days in the value's month (Int8)."""
        return self._f("days_in_month")

    def is_leap_year(self) -> Expr:
        """True in leap years (Boolean)."""
        return self._f("is_leap_year")

    def hour(self) -> Expr:
        """The hour, 0 to 23 (Int8)."""
        return self._f("hour")

    def minute(self) -> Expr:
        """The minute, 0 to 59 (Int8)."""
        return self._f("minute")

    def second(self) -> Expr:
        """The second, 0 to 59 (Int8)."""
        return self._f("second")

    def millisecond(self) -> Expr:
        """Milliseconds within the second (Int32)."""
        return self._f("millisecond")

    def microsecond(self) -> Expr:
        """Microseconds within the second (Int32)."""
        return self._f("microsecond")

    def nanosecond(self) -> Expr:
        """Nanoseconds within the second (Int32)."""
        return self._f("nanosecond")

    def epoch(self, time_unit: str = "us") -> Expr:
        """Time since 1970-01-01 in ``time_unit`` (``ns us ms s``: Int64; ``d``: Int32)."""
        return self._f("epoch", time_unit)

    def timestamp(self, time_unit: str = "us") -> Expr:
        """Time since 1970-01-01 in ``time_unit`` (Int64)."""
        return self._f("timestamp", time_unit)

    def date(self) -> Expr:
        """The (local) date (Date)."""
        return self._f("date")

    def time(self) -> Expr:
        """The (local) time of day (Time)."""
        return self._f("time")

    def truncate(self, every: str) -> Expr:
        """Round down to a multiple of ``every`` (``'15m'``, ``'1h'``, ``'1w'``, ``'1mo'``)."""
        return self._f("truncate", every)

    def round(self, every: str) -> Expr:
        """Round to the nearest multiple of ``every`` (``'15m'``, ``'1d'``, ``'1w'``, ``'1mo'``).

        As polars: `truncate` of the value plus half of ``every``'s length, where
        polars counts a month as 28 days (``'1mo'`` adds 14 days, so January 18th
        rounds to February 1st but January 17th to January 1st); ties go up. A
        negative ``every`` is refused; kinds as in `truncate`.
        """
        return self._f("round", every)

    def offset_by(self, by: str) -> Expr:
        """The date or datetime moved by the duration ``by`` (``"1mo"``, ``"-3d"``, ``"1h30m"``).

        As polars: calendar months first (``y``, ``q``, ``mo``; the day clamped to the
        new month's length: Jan 31 + ``"1mo"`` is the end of February), then weeks and
        days, then the fixed part (``h m s ms us ns``, truncated toward zero to the
        column's unit; a Date moves by whole days, floored). The type stays. Calendar
        offsets of a datetime in a time zone other than UTC are refused; ``by`` as a
        column of strings is not supported.
        """
        if not isinstance(by, str):
            msg = (f"`dt.offset_by({by!r})`: `by` is a duration string such as '1mo' or "
                   "'-3d' (a column of them is not supported)")  # fmt: skip
            raise InvalidOperationError(msg)
        return self._f("offset_by", by)

    def is_business_day(self, *, week_mask: Iterable[bool] = DEFAULT_WEEK_MASK,
                        holidays: Iterable[_dt.date] = ()) -> Expr:  # fmt: skip
        """Whether the date (a datetime's local date) is a business day, as polars.

        ``week_mask``: seven booleans, Monday first, True where the day counts;
        ``holidays``: dates that do not count (a list, or a polars Series of dates; a
        column of holidays is not supported). See `colbridge.types.business_days`.

        >>> import datetime as dt, polars as pl, colbridge as cb
        >>> frame = pl.DataFrame({"d": [dt.date(2024, 1, 5), dt.date(2024, 1, 6)]})
        >>> frame.gpu.select(cb.col("d").dt.is_business_day()).compute().to_series().to_list()
        [True, False]
        """
        mask = business_week_mask(week_mask, "is_business_day")
        return self._f("is_business_day", mask,
                       _holidays(holidays, mask, "is_business_day"))  # fmt: skip

    def add_business_days(self, n: Any, *, week_mask: Iterable[bool] = DEFAULT_WEEK_MASK,
                          holidays: Iterable[_dt.date] = (), roll: str = "raise") -> Expr:
        """The date (or datetime, its time of day kept) ``n`` business days on, as polars.

        ``n``: an integer or an expression of Int32, Int64, UInt32 or UInt64 (read as
        Int32: a value past it is null, as polars casts it). ``roll``: what a start that
        is not a business day does: ``"raise"`` (an error), ``"forward"`` to the next
        business day, ``"backward"`` to the previous one. ``week_mask`` and
        ``holidays`` as `is_business_day`. The type stays.

        >>> import datetime as dt, polars as pl, colbridge as cb
        >>> frame = pl.DataFrame({"d": [dt.date(2024, 1, 5)]})
        >>> frame.gpu.select(cb.col("d").dt.add_business_days(1)).compute().item()
        datetime.date(2024, 1, 8)
        """
        if roll not in ("raise", "forward", "backward"):
            msg = (f"`dt.add_business_days(roll={roll!r})`: roll is 'raise', 'forward' or "
                   "'backward'")  # fmt: skip
            raise InvalidOperationError(msg)
        mask = business_week_mask(week_mask, "add_business_days")
        days = _holidays(holidays, mask, "add_business_days")
        return Expr(Function("dt.add_business_days", (self._expr.node, to_node(n)),
                             (mask, days, roll)))  # fmt: skip

    def month_start(self) -> Expr:
        """The first day of the value's month, time of day kept."""
        return self._f("month_start")

    def month_end(self) -> Expr:
        """The last day of the value's month, time of day kept."""
        return self._f("month_end")

    def convert_time_zone(self, time_zone: str) -> Expr:
        """The same instants, seen in another time zone (only the fields change)."""
        return self._f("convert_time_zone", time_zone)

    def base_utc_offset(self) -> Expr:
        """A zoned datetime's standard UTC offset there (Duration in ms), as polars'.

        The whole offset less `dst_offset`; a naive datetime is refused, as in polars.

        >>> import datetime as dt, polars as pl, colbridge as cb
        >>> s = pl.Series("t", [dt.datetime(2024, 1, 5), dt.datetime(2024, 7, 5)])
        >>> df = s.dt.replace_time_zone("Europe/Paris").to_frame()
        >>> df.gpu.select(cb.col("t").dt.base_utc_offset()).compute()["t"].to_list()
        [datetime.timedelta(seconds=3600), datetime.timedelta(seconds=3600)]
        """
        return self._f("base_utc_offset")

    def dst_offset(self) -> Expr:
        """A zoned datetime's daylight saving part of its UTC offset (Duration in ms).

        From the zone data, as ``zoneinfo``'s ``dst()`` gives it (docs/temporal.md says
        where that differs from polars' zone data); a naive datetime is refused.

        >>> import datetime as dt, polars as pl, colbridge as cb
        >>> s = pl.Series("t", [dt.datetime(2024, 1, 5), dt.datetime(2024, 7, 5)])
        >>> df = s.dt.replace_time_zone("Europe/Paris").to_frame()
        >>> df.gpu.select(cb.col("t").dt.dst_offset()).compute()["t"].to_list()
        [datetime.timedelta(0), datetime.timedelta(seconds=3600)]
        """
        return self._f("dst_offset")

    def combine(self, time: Any, time_unit: str = "us") -> Expr:
        """A Datetime of the value's date and ``time`` (a Time expression or a ``datetime.time``).

        As polars' ``dt.combine``: the date as polars casts the value to a Date (a
        zoned datetime's UTC date, as that cast gives), at midnight in ``time_unit``,
        plus the time of day (truncated to the unit); a zoned value's zone is put
        back on that wall time (ambiguous or missing times fail, as in polars).

        >>> import datetime as dt, polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"d": [dt.date(2024, 3, 9)], "t": [dt.time(14, 30)]})
        >>> df.gpu.select(cb.col("d").dt.combine(cb.col("t"))).compute()["d"].to_list()
        [datetime.datetime(2024, 3, 9, 14, 30)]
        """
        if not isinstance(time, (_dt.time, Expr)) or isinstance(time, _dt.datetime):
            msg = (f"`dt.combine({time!r})`: expected a Time expression or a datetime.time, "
                   f"got {type(time).__name__}")  # fmt: skip
            raise SchemaError(msg)
        if time_unit not in UNIT_NS:
            msg = f"`dt.combine(time_unit={time_unit!r})`: use 'ns', 'us' or 'ms'"
            raise SchemaError(msg)
        return Expr(Function("dt.combine", (self._expr.node, to_node(time)), (time_unit,)))

    def replace(self, *, year: Any = None, month: Any = None, day: Any = None,
                hour: Any = None, minute: Any = None, second: Any = None,
                microsecond: Any = None, ambiguous: str = "raise") -> Expr:  # fmt: skip
        """Dates or datetimes with some of their parts replaced, as polars' ``dt.replace``.

        Each part given (a number, a column name or an expression) is cast strictly as
        polars casts it (year to Int32, the others to Int8, microseconds to Int32); where
        it is null the row keeps its own part (all of its sub-second nanoseconds for
        ``microsecond``). A Date takes ``year``, ``month`` and ``day`` only. The parts
        of a zoned datetime are its wall-clock ones, placed back in its zone
        (``ambiguous`` as in `replace_time_zone`). A row whose parts make no date and
        time (February 30, ...) fails the compute, as in polars; a null row stays null.

        >>> import datetime as dt, polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"d": [dt.date(2024, 1, 31), None], "m": [2, 3]})
        >>> df.gpu.select(cb.col("d").dt.replace(month="m", day=1)).compute()["d"].to_list()
        [datetime.date(2024, 2, 1), None]
        """
        parts = (year, month, day, hour, minute, second, microsecond)
        nodes = [Literal(None) if v is None else
                 col(v).node if isinstance(v, builtins.str) else as_expr(v).node
                 for v in parts]  # fmt: skip
        if not isinstance(ambiguous, builtins.str):
            msg = (f"`dt.replace(ambiguous={ambiguous!r})`: 'raise', 'earliest', 'latest' or "
                   "'null' (per-row expressions are not supported)")  # fmt: skip
            raise UnsupportedOperationError(msg)
        return Expr(Function("dt.replace", (self._expr.node, *nodes), (ambiguous,)))

    def replace_time_zone(self, time_zone: str | None, *, ambiguous: str = "raise",
                          non_existent: str = "raise") -> Expr:  # fmt: skip
        """Keep the wall-clock times, change the zone (None: drop it).

        A local time that occurs twice (daylight saving ends) raises, or takes the
        ``earliest`` or ``latest`` instant; one that never occurs raises or is ``null``.
        """
        return self._f("replace_time_zone", time_zone, ambiguous, non_existent)

    def cast_time_unit(self, time_unit: str) -> Expr:
        """The same values in another time unit (coarser: floored)."""
        return self._f("cast_time_unit", time_unit)

    def to_string(self, format: str | None = None) -> Expr:
        """Dates, datetimes or times as text, by chrono's strftime ``format``.

        None, ``"iso"`` and ``"iso:strict"`` (a ``T`` between date and time): the
        type's ISO text, as polars writes it. A duration is written in one of polars'
        two forms: None or ``"iso"`` (``P1DT2H``), ``"polars"`` (``1d 2h``). See
        `colbridge.types.formatting`.

        >>> import datetime as dt, polars as pl, colbridge as cb
        >>> frame = pl.DataFrame({"d": [dt.date(2024, 3, 9)], "t": [dt.timedelta(hours=26)]})
        >>> frame.gpu.select(cb.col("d").dt.to_string("%d %b %Y")).compute().item()
        '09 Mar 2024'
        >>> frame.gpu.select(cb.col("t").dt.to_string("polars")).compute().item()
        '1d 2h'
        """
        if format is not None and not isinstance(format, str):
            msg = f"`dt.to_string` takes a format string (chrono's, e.g. \"%Y-%m\"), got {format!r}"
            raise SchemaError(msg)
        return self._f("to_string", "iso" if format is None else format)

    def strftime(self, format: str) -> Expr:
        """`to_string` with a ``format`` (polars' alias).

        >>> import datetime as dt, polars as pl, colbridge as cb
        >>> frame = pl.DataFrame({"t": [dt.datetime(2024, 3, 9, 14, 5)]})
        >>> frame.gpu.select(cb.col("t").dt.strftime("%H:%M on %A")).compute().item()
        '14:05 on Saturday'
        """
        return self.to_string(format)

    def total_days(self, fractional: bool = False) -> Expr:
        """A duration in whole days (Int64, toward zero), or Float64 with ``fractional``."""
        return self._f("total_days", fractional)

    def total_hours(self, fractional: bool = False) -> Expr:
        """A duration in hours (see `total_days`)."""
        return self._f("total_hours", fractional)

    def total_minutes(self, fractional: bool = False) -> Expr:
        """A duration in minutes (see `total_days`)."""
        return self._f("total_minutes", fractional)

    def total_seconds(self, fractional: bool = False) -> Expr:
        """A duration in seconds (see `total_days`)."""
        return self._f("total_seconds", fractional)

    def total_milliseconds(self, fractional: bool = False) -> Expr:
        """A duration in milliseconds (see `total_days`)."""
        return self._f("total_milliseconds", fractional)

    def total_microseconds(self, fractional: bool = False) -> Expr:
        """A duration in microseconds (see `total_days`)."""
        return self._f("total_microseconds", fractional)

    def total_nanoseconds(self, fractional: bool = False) -> Expr:
        """A duration in nanoseconds (see `total_days`)."""
        return self._f("total_nanoseconds", fractional)


class _TextFunctions(_Namespace):
    """The functions of text that ``str`` and ``cat`` share, named under ``_prefix``.

    A string's own text, or a categorical's or enum's label: typing reads either
    (`colbridge.plan.logical_typing`) and refuses the other kind of column.
    """

    __slots__ = ()

    def len_chars(self) -> Expr:
        """Length in characters (UInt32)."""
        return self._f("len_chars")

    def len_bytes(self) -> Expr:
        """Length in UTF-8 bytes (UInt32)."""
        return self._f("len_bytes")

    def starts_with(self, prefix: str) -> Expr:
        """True where the text starts with ``prefix``."""
        return self._f("starts_with", prefix)

    def ends_with(self, suffix: str) -> Expr:
        """True where the text ends with ``suffix``."""
        return self._f("ends_with", suffix)

    def slice(self, offset: int, length: int | None = None) -> Expr:
        """``length`` characters from character ``offset`` (negative: from the end).

        ``length=None`` takes the rest of the text. The result is a String.
        """
        offset = _count_param(offset, f"{self._prefix}.slice", "offset", signed=True)
        length = _count_param(length, f"{self._prefix}.slice", "length", allow_none=True)
        return self._f("slice", offset, length)


class CategoricalNamespace(_TextFunctions):
    """``expr.cat``: the ``str`` functions polars also gives categoricals and enums.

    Each reads the labels (the categories' strings) as `StringNamespace`'s function of
    the same name reads strings: once per category. A column that is not a
    categorical or an enum is refused, as polars refuses it.

    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"c": pl.Series(["UA", "AAL", "UA"], dtype=pl.Categorical)})
    >>> df.gpu.select(cb.col("c").cat.len_chars()).compute().to_series().to_list()
    [2, 3, 2]
    """

    __slots__ = ()
    _prefix = "cat"


class StringNamespace(_TextFunctions):
    """``expr.str``: string predicates, lengths and conversions.

    Each is computed once per distinct string (the column's dictionary) with
    ``pyarrow.compute``; the kernel gathers the answer by code, so no string
    enters a kernel. A plain string column is dictionary-encoded once per compute
    (a copy, shown by ``explain()``).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"carrier": ["UA", "AA", None, "UAL"]})
    >>> s = cb.col("carrier")
    >>> df.gpu.select(ua=s == "UA", n=s.str.len_chars()).compute().to_dict(as_series=False)
    {'ua': [True, False, None, False], 'n': [2, 2, None, 3]}
    """

    __slots__ = ()
    _prefix = "str"

    def from_code_point(self) -> Expr:
        """Each integer as the one character of that Unicode code point (a String).

        As polars' ``str.from_code_point``: nulls stay null; a negative value, a UTF-16
        surrogate (55296 to 57343) or one past 1114111 (0x10FFFF) fails the compute,
        naming it; other types are refused. Each distinct value is written once.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"code": [65, 233, 8364, None]})
        >>> df.gpu.select(cb.col("code").str.from_code_point()).compute()["code"].to_list()
        ['A', 'é', '€', None]
        """
        return self._f("from_code_point")

    def join(self, delimiter: builtins.str = "", *, ignore_nulls: builtins.bool = True) -> Expr:
        """The values joined into one string with ``delimiter``: a reduction, as polars'.

        Of the whole column, per group in ``agg`` and ``over``, in frame order; nulls are
        left out, or make the result null with ``ignore_nulls=False``; no value gives
        ``""``. Other types are written as ``cast(pl.String)`` writes them.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"g": [1, 1, 2], "s": ["a", "b", None]})
        >>> out = df.gpu.group_by("g", maintain_order=True).agg(cb.col("s").str.join("-"))
        >>> out.compute()["s"].to_list()
        ['a-b', '']
        """
        if not isinstance(delimiter, builtins.str):
            msg = f"`str.join({delimiter!r})`: the delimiter is a string, e.g. `str.join(',')`"
            raise SchemaError(msg)
        flag = _flag(ignore_nulls, "str.join", "ignore_nulls")
        return Expr(Agg("str_join", self._expr.node, options=(delimiter, flag)))

    def contains(self, pattern: str, *, literal: bool = False, strict: bool = True) -> Expr:
        """True where ``pattern`` occurs: a plain substring with ``literal=True``, else a regex.

        Regular expressions run on pyarrow's RE2 engine, which matches polars' for
        ordinary patterns (no look-around or backreferences in either). An invalid
        regex is an error, or with ``strict=False`` null on every row (polars').
        """
        return self._f("contains", pattern, bool(literal), bool(strict))

    def to_integer(self, *, base: int = 10, dtype: Any = DType.INT64, strict: bool = True) -> Expr:
        """Parse as an integer of ``dtype`` (Int64) in ``base`` (2 to 36).

        As Rust's ``from_str_radix``, which polars calls: a sign (``-`` for signed
        types only) and digits (letters for digits past 9, either case), nothing
        else; a value outside ``dtype`` fails too. Failures raise, or with
        ``strict=False`` are null.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"h": ["ff", "-1A", "0x10"]})
        >>> out = df.gpu.select(cb.col("h").str.to_integer(base=16, strict=False)).compute()
        >>> out["h"].to_list()
        [255, -26, None]
        """
        if isinstance(base, Expr):
            msg = "`str.to_integer(base=...)`: colbridge takes one whole number as the base"
            raise UnsupportedOperationError(msg)
        base = _count_param(base, "str.to_integer", "base")
        if not 2 <= base <= 36:
            msg = f"`str.to_integer(base={base})`: the base is a whole number from 2 to 36"
            raise SchemaError(msg)
        target = parse_dtype(polars_type_name(dtype) if isinstance(dtype, str) else dtype)
        if not target.is_integer:
            msg = f"`str.to_integer(dtype={dtype})`: the type is an integer type (Int8 to UInt64)"
            raise SchemaError(msg)
        return self._f("to_integer", base, _flag(strict, "str.to_integer", "strict"), target)

    def to_datetime(self, format: str | None = None, *, time_unit: str | None = None,
                    time_zone: str | None = None, strict: bool = True) -> Expr:  # fmt: skip
        """Parse as Datetime with a strftime ``format`` (None: ISO 8601)."""
        return self._f("to_datetime", format, time_unit, time_zone, strict)

    def to_date(self, format: str | None = None, *, strict: bool = True) -> Expr:
        """Parse as Date with a strftime ``format`` (None: ISO 8601)."""
        return self._f("to_date", format, strict)

    def to_time(self, format: str | None = None, *, strict: bool = True,
                cache: bool = True) -> Expr:  # fmt: skip
        """Parse as Time with a chrono ``format``, as polars' ``str.to_time``.

        The format says an hour and a minute (seconds and their fraction optional);
        without one, polars' patterns ``%T%.f`` and ``%R``, the first that reads the
        first value one of them reads. ``cache`` is a hint colbridge takes as given
        (each distinct string is parsed once).

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"s": ["09:30", "17:05"]})
        >>> df.gpu.select(cb.col("s").str.to_time("%H:%M")).compute()["s"].to_list()
        [datetime.time(9, 30), datetime.time(17, 5)]
        """
        if not isinstance(strict, bool) or not isinstance(cache, bool):
            msg = f"`str.to_time({format!r})`: `strict` and `cache` are True or False"
            raise InvalidOperationError(msg)
        return self._f("to_time", format, strict)

    def strptime(self, dtype: Any, format: str | None = None, *, strict: bool = True,
                 exact: bool = True, cache: bool = True,
                 ambiguous: str = "raise") -> Expr:  # fmt: skip
        """Parse as ``dtype``, polars' spelling: `to_date` or `to_datetime` by the type.

        ``pl.Date`` is `to_date`; ``pl.Datetime`` `to_datetime` (its unit inferred
        from ``format`` as there; ``pl.Datetime("ms", "UTC")`` gives the unit and the
        zone). ``cache`` is a hint polars may ignore and so does colbridge;
        ``exact=False`` (a match anywhere in the string), ``ambiguous`` other than
        ``"raise"`` are not built and are refused. ``pl.Time`` is `to_time`.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"s": ["2024-03-01", "2024-12-31"]})
        >>> df.gpu.select(cb.col("s").str.strptime(pl.Date, "%Y-%m-%d")).compute()["s"].dtype
        Date
        """
        where = f"str.strptime({dtype!r}, {format!r})"
        if not isinstance(strict, bool) or not isinstance(cache, bool):
            msg = f"`{where}`: `strict` and `cache` are True or False"
            raise InvalidOperationError(msg)
        if exact is not True:
            msg = (f"`{where}`: `exact=False` (the format matched anywhere in the string) is "
                   "not supported; extract the date first (`str.slice`) or parse in polars")
            raise UnsupportedOperationError(msg)
        if ambiguous != "raise":
            msg = (f"`{where}`: `ambiguous={ambiguous!r}` is not supported (only 'raise'); "
                   "parse without a time zone and set it in polars")
            raise UnsupportedOperationError(msg)
        target = parse_logical(dtype)
        if target is not None and target.kind == "date":
            return self.to_date(format, strict=strict)
        if target is not None and target.kind == "time":
            return self.to_time(format, strict=strict)
        if target is not None and target.kind == "datetime":
            # the class `pl.Datetime` (no unit) lets the format choose it, as in polars
            unit = None if isinstance(dtype, type) or dtype is _dt.datetime else target.unit
            return self.to_datetime(format, time_unit=unit, time_zone=target.tz, strict=strict)
        msg = (f"`{where}`: strings parse to `pl.Date`, `pl.Datetime` or `pl.Time` here; "
               f"other types are not supported (for numbers: `.cast({dtype!r})`)")
        raise UnsupportedOperationError(msg)

    def to_lowercase(self) -> Expr:
        """Lower case (a new dictionary; the codes stay)."""
        return self._f("to_lowercase")

    def to_uppercase(self) -> Expr:
        """Upper case (a new dictionary; the codes stay)."""
        return self._f("to_uppercase")

    # -- strings to strings: each a function of the distinct strings (`types.string_maps`)
    # (counts and texts are literals: polars also takes expressions there, colbridge not)
    def head(self, n: int) -> Expr:
        """The first ``n`` characters (negative: all but the last ``-n``)."""
        return self._f("head", _count_param(n, "str.head", "n", signed=True))

    def tail(self, n: int) -> Expr:
        """The last ``n`` characters (negative: all but the first ``-n``)."""
        return self._f("tail", _count_param(n, "str.tail", "n", signed=True))

    def strip_chars(self, characters: str | None = None) -> Expr:
        """Without the leading and trailing ``characters`` (None: whitespace)."""
        return self._strip("strip_chars", characters)

    def strip_chars_start(self, characters: str | None = None) -> Expr:
        """Without the leading ``characters`` (None: whitespace)."""
        return self._strip("strip_chars_start", characters)

    def strip_chars_end(self, characters: str | None = None) -> Expr:
        """Without the trailing ``characters`` (None: whitespace)."""
        return self._strip("strip_chars_end", characters)

    def _strip(self, name: str, characters: str | None) -> Expr:
        return self._f(name, _text_param(characters, f"str.{name}", "characters",
                                         allow_none=True))  # fmt: skip

    def strip_prefix(self, prefix: str) -> Expr:
        """Without ``prefix`` where the string starts with it."""
        return self._f("strip_prefix", _text_param(prefix, "str.strip_prefix", "prefix"))

    def strip_suffix(self, suffix: str) -> Expr:
        """Without ``suffix`` where the string ends with it."""
        return self._f("strip_suffix", _text_param(suffix, "str.strip_suffix", "suffix"))

    def pad_start(self, length: int, fill_char: str = " ") -> Expr:
        """Padded at the start with ``fill_char`` to ``length`` characters."""
        return self._pad("pad_start", length, fill_char)

    def pad_end(self, length: int, fill_char: str = " ") -> Expr:
        """Padded at the end with ``fill_char`` to ``length`` characters."""
        return self._pad("pad_end", length, fill_char)

    def _pad(self, name: str, length: int, fill_char: str) -> Expr:
        length = _count_param(length, f"str.{name}", "length")
        fill_char = _text_param(fill_char, f"str.{name}", "fill_char")
        if builtins.len(fill_char) != 1:
            msg = f"`str.{name}(fill_char=...)` takes one character, got {fill_char!r}"
            raise SchemaError(msg)
        return self._f(name, length, fill_char)

    def replace(self, pattern: str, value: str, *, literal: bool = False, n: int = 1) -> Expr:
        """The first ``n`` matches of ``pattern`` replaced by ``value`` (every one: ``n=-1``).

        A regular expression (RE2, polars' dialect for ordinary patterns; ``$1``,
        ``${name}`` and ``$$`` in ``value`` as polars reads them), or plain text with
        ``literal=True``.
        """
        n = _count_param(n, "str.replace", "n", signed=True)  # as polars: n < 0 is every match
        if literal:
            return self._f("replace", *_texts("replace", pattern, value), n)
        return self._f("replace_regex", *_texts("replace", pattern, value), None if n < 0 else n)

    def replace_all(self, pattern: str, value: str, *, literal: bool = False) -> Expr:
        """Every match of ``pattern`` replaced by ``value`` (regex or plain text, as `replace`)."""
        if literal:
            return self._f("replace_all", *_texts("replace_all", pattern, value))
        return self._f("replace_regex", *_texts("replace_all", pattern, value), None)

    def find(self, pattern: str, *, literal: bool = False, strict: bool = True) -> Expr:
        """The character offset (UInt32) of the first match of ``pattern``; null where none.

        A regex, or plain text with ``literal=True``, as polars (2.2) finds it (an
        offset in characters: ``"éa"`` finds ``"a"`` at 1). An invalid regex is an
        error, or with ``strict=False`` null on every row.
        """
        return self._f("find", _text_param(pattern, "str.find", "pattern"), bool(literal),
                       bool(strict))  # fmt: skip

    def count_matches(self, pattern: str, *, literal: bool = False) -> Expr:
        """How often ``pattern`` occurs (UInt32): a regex, or plain text with ``literal=True``."""
        return self._f("count_matches", _text_param(pattern, "str.count_matches", "pattern"),
                       bool(literal))  # fmt: skip

    def extract(self, pattern: str, group_index: int = 1) -> Expr:
        r"""Capture group ``group_index`` of the first match of the regex ``pattern`` (String).

        Null where the pattern does not match, or the group takes no part in the
        match (a group that can match the empty string, ``(a*)``, is taken to have
        taken part: polars' null there is colbridge's ""). Group 0 is the whole
        match; a group the pattern does not have gives null. Computed once per
        distinct string, with RE2 as the other regex functions (docs/semantics.md).

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"url": ["a.com/x?id=12", "b.org/y", None]})
        >>> df.gpu.select(cb.col("url").str.extract(r"id=(\d+)")).compute()["url"].to_list()
        ['12', None, None]
        """
        if isinstance(group_index, bool) or not isinstance(group_index, int) or group_index < 0:
            msg = (f"`str.extract(group_index={group_index!r})`: the group is a whole number "
                   ">= 0 (0: the whole match)")  # fmt: skip
            raise UnsupportedOperationError(msg)
        return self._f("extract", _text_param(pattern, "str.extract", "pattern"), group_index)

    def contains_any(self, patterns: Sequence[str], *,
                     ascii_case_insensitive: bool = False) -> Expr:  # fmt: skip
        """True where any of the plain texts ``patterns`` occurs (polars' Aho-Corasick).

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"s": ["a red car", "Blue sky", None]})
        >>> hit = cb.col("s").str.contains_any(["red", "blue"], ascii_case_insensitive=True)
        >>> df.gpu.select(hit).compute()["s"].to_list()
        [True, True, None]
        """
        texts = _pattern_texts(patterns, "str.contains_any")
        return self._f("contains_any", texts,
                       _flag(ascii_case_insensitive, "str.contains_any",
                             "ascii_case_insensitive"))  # fmt: skip

    def replace_many(self, patterns: Sequence[str] | Mapping[str, str],
                     replace_with: Sequence[str] | None = None, *,
                     ascii_case_insensitive: bool = False,
                     leftmost: bool = False) -> Expr:  # fmt: skip
        """Each of the plain texts ``patterns`` replaced by its ``replace_with``, in one pass.

        ``patterns`` is a list (``replace_with`` a list of one text for all, or of one
        each; a bare text is refused, as in polars 2) or a mapping of texts to their
        replacements. Matches do not overlap and are found as polars' Aho-Corasick
        automaton finds them: the match that ends first (of
        those the longest), or with ``leftmost=True`` the one that starts first (of
        those the pattern given first).

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"s": ["St. Main Rd.", None]})
        >>> e = cb.col("s").str.replace_many({"St.": "Street", "Rd.": "Road"})
        >>> df.gpu.select(e).compute()["s"].to_list()
        ['Street Main Road', None]
        """
        if isinstance(patterns, Mapping):
            if replace_with is not None:
                msg = ("`str.replace_many(mapping, replace_with)`: give the replacements in "
                       "one place")  # fmt: skip
                raise SchemaError(msg)
            replace_with = list(patterns.values())
            patterns = list(patterns)
        olds = _pattern_texts(patterns, "str.replace_many")
        if not isinstance(replace_with, (list, tuple)) \
                or not all(isinstance(v, str) for v in replace_with):  # fmt: skip
            msg = (f"`str.replace_many(replace_with={replace_with!r})`: give a list of "
                   "texts, one for all patterns or one each (polars 2 refuses a bare text "
                   "too)")  # fmt: skip
            raise SchemaError(msg)
        news = tuple(replace_with) * (builtins.len(olds) if builtins.len(replace_with) == 1 else 1)
        if builtins.len(news) != builtins.len(olds):
            msg = (f"`str.replace_many`: {builtins.len(olds)} patterns and "
                   f"{builtins.len(news)} replacements; give one text for all, or one per "
                   "pattern")  # fmt: skip
            raise SchemaError(msg)
        return self._f("replace_many", olds, news,
                       _flag(ascii_case_insensitive, "str.replace_many", "ascii_case_insensitive"),
                       _flag(leftmost, "str.replace_many", "leftmost"))  # fmt: skip

    def extract_all(self, pattern: str) -> Expr:
        r"""Every match of the regex ``pattern``, not overlapping (a list of strings).

        As a ``str.split``, taken to one value per row with the ``list`` functions
        (``.list.len()``, ``.list.get(0)``, ``.list.join(",")``, ...). RE2 finds the
        matches (not a pattern that can match the empty string).

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"s": ["a1b22", "x", None]})
        >>> n = cb.col("s").str.extract_all(r"\d+")
        >>> df.gpu.select(n.list.len(), last=n.list.last()).compute().rows()
        [(2, '22'), (0, None), (None, None)]
        """
        return self._f("extract_all", _text_param(pattern, "str.extract_all", "pattern"))

    def extract_many(self, patterns: Sequence[str], *, ascii_case_insensitive: bool = False,
                     overlapping: bool = False, leftmost: bool = False) -> Expr:  # fmt: skip
        """The matches of the plain texts ``patterns`` (a list of strings).

        Found as `replace_many` finds them, and taken to one value per row with the
        ``list`` functions; ``overlapping=True`` is refused.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"s": ["red and blue", "green"]})
        >>> found = cb.col("s").str.extract_many(["red", "blue", "green"])
        >>> df.gpu.select(found.list.join("+")).compute()["s"].to_list()
        ['red+blue', 'green']
        """
        if _flag(overlapping, "str.extract_many", "overlapping"):
            msg = ("`str.extract_many(overlapping=True)`: colbridge finds matches that do not "
                   "overlap only; compute overlapping ones in polars")  # fmt: skip
            raise UnsupportedOperationError(msg)
        return self._f("extract_many", _pattern_texts(patterns, "str.extract_many"),
                       _flag(ascii_case_insensitive, "str.extract_many",
                             "ascii_case_insensitive"),
                       _flag(leftmost, "str.extract_many", "leftmost"))  # fmt: skip

    def split(self, by: str, *, inclusive: bool = False, literal: bool = True,
              strict: bool = True) -> Expr:  # fmt: skip
        """The parts of each string between the matches of ``by`` (a list of strings).

        colbridge has no list columns: take one value of each row's parts with the
        ``list`` functions (``get``, ``first``, ``last``, ``len``, ``join``,
        ``contains``, ``count_matches``, ``n_unique``, ``min``, ``max``, ``arg_min``,
        ``arg_max``), after list-to-list steps if any (``slice``, ``head``, ``tail``,
        ``reverse``, ``sort``, ``unique``); each distinct string is split once.
        As polars: an empty ``by`` splits into characters; ``inclusive`` keeps
        each separator at the end of its part; ``literal=False`` reads ``by`` as a
        regex (not one that can match the empty string).

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"route": ["JFK-LAX", "SFO-ORD-JFK", None]})
        >>> parts = cb.col("route").str.split("-")
        >>> out = df.gpu.select(first=parts.list.first(), stops=parts.list.len()).compute()
        >>> out.to_dict(as_series=False)
        {'first': ['JFK', 'SFO', None], 'stops': [2, 3, None]}
        """
        return self._f("split", _text_param(by, "str.split", "by"),
                       _flag(inclusive, "str.split", "inclusive"),
                       _flag(literal, "str.split", "literal"),
                       _flag(strict, "str.split", "strict"))  # fmt: skip

    def split_exact(self, by: str, n: int, *, inclusive: bool = False) -> Expr:
        """The first ``n + 1`` parts between the matches of ``by``, as a struct.

        Its fields ``field_0`` to ``field_n`` are read with ``struct.field``; a
        string with fewer parts has nulls in the rest (polars').

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"kv": ["a=1", "b", None]})
        >>> v = cb.col("kv").str.split_exact("=", 1).struct.field("field_1")
        >>> df.gpu.select(v).compute()["field_1"].to_list()
        ['1', None, None]
        """
        return self._f("split_exact", _text_param(by, "str.split_exact", "by"),
                       _count_param(n, "str.split_exact", "n"),
                       _flag(inclusive, "str.split_exact", "inclusive"))  # fmt: skip

    def encode(self, encoding: str) -> Expr:
        """The UTF-8 bytes of each string written as ``"hex"`` (lowercase) or ``"base64"``.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"s": ["abc", "é", None]})
        >>> df.gpu.select(cb.col("s").str.encode("base64")).compute()["s"].to_list()
        ['YWJj', 'w6k=', None]
        """
        if encoding not in ("hex", "base64"):
            msg = f"`str.encode({encoding!r})`: the encoding is 'hex' or 'base64'"
            raise SchemaError(msg)
        return self._f("encode", encoding)

    def extract_groups(self, pattern: str) -> Expr:
        r"""The capture groups of the regex ``pattern``'s first match, as a struct.

        A field is read with ``struct.field(name)``: a named group by its name, another
        by its number (``"1"``); it is ``str.extract(pattern, number)``.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"d": ["2024-03", "n/a"]})
        >>> g = cb.col("d").str.extract_groups(r"(?<y>\d{4})-(\d{2})")
        >>> df.gpu.select(g.struct.field("y"), g.struct.field("2")).compute().rows()
        [('2024', '03'), (None, None)]
        """
        return self._f("extract_groups", _text_param(pattern, "str.extract_groups", "pattern"))

    def splitn(self, by: str, n: int) -> Expr:
        """At most ``n`` parts, the last holding the rest of the string, as a struct.

        Its fields ``field_0`` to ``field_{n-1}`` are read with ``struct.field``.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"path": ["usr/local/bin", "tmp"]})
        >>> rest = cb.col("path").str.splitn("/", 2).struct.field("field_1")
        >>> df.gpu.select(rest).compute()["field_1"].to_list()
        ['local/bin', None]
        """
        n = _count_param(n, "str.splitn", "n")
        if n == 0:
            msg = "`str.splitn(n=0)` makes a struct without fields; `n` must be >= 1"
            raise SchemaError(msg)
        return self._f("splitn", _text_param(by, "str.splitn", "by"), n)

    def zfill(self, length: int) -> Expr:
        """Zeros at the start to ``length`` characters, after a leading ``+`` or ``-``."""
        return self._f("zfill", _count_param(length, "str.zfill", "length"))

    def to_titlecase(self) -> Expr:
        """Each word's first letter in title case, the rest lower case (``"ab cD"``: ``"Ab Cd"``).

        A word is a run of cased letters: ``"they're"`` becomes ``"They'Re"``, as polars
        (and Python's ``str.title``) give it.
        """
        return self._f("to_titlecase")

    def normalize(self, form: str = "NFC") -> Expr:
        """The strings in Unicode normal form ``form``: ``NFC``, ``NFKC``, ``NFD`` or ``NFKD``."""
        if form not in ("NFC", "NFKC", "NFD", "NFKD"):
            msg = (f"`str.normalize`: form {form!r} is not a Unicode normal form; use "
                   "'NFC', 'NFKC', 'NFD' or 'NFKD'")  # fmt: skip
            raise SchemaError(msg)
        return self._f("normalize", form)

    def escape_regex(self) -> Expr:
        """Regex metacharacters escaped with a backslash, as polars (Rust's ``regex::escape``)."""
        return self._f("escape_regex")

    def reverse(self) -> Expr:
        """The string backwards by grapheme clusters, as polars: a letter keeps its accents.

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"s": ["abc", "e\u0301a", None]})
        >>> df.gpu.select(cb.col("s").str.reverse()).compute()["s"].to_list()
        ['cba', 'ae\u0301', None]
        """
        return self._f("reverse")


def _pattern_texts(patterns: Any, func: str) -> tuple[str, ...]:
    """The plain texts of ``contains_any``/``replace_many``: a list of non-empty strings."""
    if isinstance(patterns, Expr):
        msg = f"`{func}(patterns)`: colbridge takes a list of texts, not an expression"
        raise UnsupportedOperationError(msg)
    if isinstance(patterns, str) or not isinstance(patterns, (list, tuple)) \
            or not all(isinstance(p, str) for p in patterns):  # fmt: skip
        msg = f"`{func}(patterns={patterns!r})`: give a list of texts"
        raise SchemaError(msg)
    if not patterns or "" in patterns:
        msg = (f"`{func}(patterns={list(patterns)!r})`: give at least one pattern, none of them "
               "empty (an empty text matches everywhere)")  # fmt: skip
        raise SchemaError(msg)
    return tuple(patterns)


class ListNamespace(_Namespace):
    """``expr.list``: one value of each row's parts of a ``str.split``.

    colbridge has no list columns: a list exists only between ``str.split`` and the
    value taken of it, computed once per distinct string (`colbridge.types.string_lists`).
    List-to-list steps (``slice``, ``head``, ``tail``, ``reverse``, ``sort``,
    ``unique``) chain before the value taken. Values are polars': a null string
    gives null; ``get`` past a list's end is an error unless ``null_on_oob=True``.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"tags": ["b,a,c", "a", ""]})
    >>> t = cb.col("tags").str.split(",")
    >>> df.gpu.select(t.list.sort().list.join("|"), has_a=t.list.contains("a")).compute().rows()
    [('a|b|c', True), ('a', True), ('', False)]
    """

    __slots__ = ()
    _prefix = "list"

    # -- the value taken -----------------------------------------------------------------
    def get(self, index: int, *, null_on_oob: bool = False) -> Expr:
        """The part at ``index`` (negative: from the end); past the end an error, or null."""
        if isinstance(index, Expr):
            msg = ("`list.get(index)`: colbridge takes a whole number as the index, not an "
                   "expression")  # fmt: skip
            raise UnsupportedOperationError(msg)
        return self._f("get", _count_param(index, "list.get", "index", signed=True),
                       _flag(null_on_oob, "list.get", "null_on_oob"))  # fmt: skip

    def first(self) -> Expr:
        """The first part; null for an empty list."""
        return self.get(0, null_on_oob=True)

    def item(self, *, allow_empty: bool = False) -> Expr:
        """The part of a list of one; another is an error (empty: null with ``allow_empty``)."""
        return self._f("item", _flag(allow_empty, "list.item", "allow_empty"))

    def last(self) -> Expr:
        """The last part; null for an empty list."""
        return self.get(-1, null_on_oob=True)

    def len(self) -> Expr:
        """The number of parts (UInt32)."""
        return self._f("len")

    def join(self, separator: str, *, ignore_nulls: bool = True) -> Expr:
        """The parts joined by ``separator`` (a split's parts are never null)."""
        _flag(ignore_nulls, "list.join", "ignore_nulls")
        return self._f("join", _text_param(separator, "list.join", "separator"))

    def contains(self, item: str, *, nulls_equal: bool = True) -> Expr:
        """True where a part equals ``item``."""
        _flag(nulls_equal, "list.contains", "nulls_equal")
        return self._f("contains", _text_param(item, "list.contains", "item"))

    def count_matches(self, element: str) -> Expr:
        """How many parts equal ``element`` (UInt32)."""
        return self._f("count_matches", _text_param(element, "list.count_matches", "element"))

    def n_unique(self) -> Expr:
        """The number of distinct parts (UInt32)."""
        return self._f("n_unique")

    def min(self) -> Expr:
        """The least part (by code point); null for an empty list."""
        return self._f("min")

    def max(self) -> Expr:
        """The greatest part (by code point); null for an empty list."""
        return self._f("max")

    def arg_min(self) -> Expr:
        """The index of the first least part (UInt32); null for an empty list."""
        return self._f("arg_min")

    def arg_max(self) -> Expr:
        """The index of the last greatest part (UInt32), as polars; null for an empty list."""
        return self._f("arg_max")

    # -- lists of lists --------------------------------------------------------------------
    def slice(self, offset: int, length: int | None = None) -> Expr:
        """``length`` parts from ``offset`` (negative: from the end), as polars slices."""
        return self._f("slice", _count_param(offset, "list.slice", "offset", signed=True),
                       _count_param(length, "list.slice", "length", signed=True,
                                    allow_none=True))  # fmt: skip

    def head(self, n: int = 5) -> Expr:
        """The first ``n`` parts."""
        return self._f("head", _count_param(n, "list.head", "n", signed=True))

    def tail(self, n: int = 5) -> Expr:
        """The last ``n`` parts."""
        return self._f("tail", _count_param(n, "list.tail", "n", signed=True))

    def reverse(self) -> Expr:
        """The parts in reverse order."""
        return self._f("reverse")

    def gather_every(self, n: int, offset: int = 0) -> Expr:
        """Every ``n``-th part from ``offset`` on."""
        n = _count_param(n, "list.gather_every", "n")
        if n == 0:
            msg = "`list.gather_every(n=0)`: `n` must be >= 1"
            raise SchemaError(msg)
        return self._f("gather_every", n, _count_param(offset, "list.gather_every", "offset"))

    def drop_nulls(self) -> Expr:
        """The parts that are not null: all of a string's parts."""
        return self._f("drop_nulls")

    def sort(self, *, descending: bool = False, nulls_last: bool = False) -> Expr:
        """The parts in code point order (a split's parts are never null)."""
        _flag(nulls_last, "list.sort", "nulls_last")
        return self._f("sort", _flag(descending, "list.sort", "descending"))

    def unique(self, *, maintain_order: bool = False) -> Expr:
        """The distinct parts, in the order they first appear.

        That is one of the orders polars allows without ``maintain_order``.
        """
        _flag(maintain_order, "list.unique", "maintain_order")
        return self._f("unique")


class StructNamespace(_Namespace):
    """``expr.struct``: a field of a ``str.split_exact`` or ``str.splitn``.

    colbridge has no struct columns: a struct exists only as the parts a field is
    taken of.

    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"name": ["Ada Lovelace", "Plato"]})
    >>> last = cb.col("name").str.split_exact(" ", 1).struct.field("field_1").alias("last")
    >>> df.gpu.select(last).compute()["last"].to_list()
    ['Lovelace', None]
    """

    __slots__ = ()
    _prefix = "struct"

    def field(self, name: str) -> Expr:
        """The field ``name`` (``field_0``, ``field_1``, ...), under that name, as polars."""
        out = _function("struct.field", self._expr, _text_param(name, "struct.field", "name"))
        return out.alias(name)

    def __getitem__(self, item: int | str) -> Expr:
        """A field by its position or its name."""
        if isinstance(item, str):
            return self.field(item)
        k = _count_param(item, "struct", "index")
        node = self._expr.node
        if isinstance(node, Function) and node.name == "str.extract_groups":
            from colbridge.types.regex import group_fields

            names = list(group_fields(node.options[0]))
            return self.field(names[k] if k < builtins.len(names) else f"{k}")
        return self.field(f"field_{k}")


def _text_param(value: Any, func: str, name: str, *, allow_none: bool = False) -> Any:
    """A text parameter of a string function, checked (a literal string)."""
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        msg = f"`{func}({name}=...)` takes a string, got {value!r}"
        raise SchemaError(msg)
    return value


def _texts(name: str, pattern: Any, value: Any) -> tuple[str, str]:
    """``pattern`` and ``value`` of `replace`, checked to be strings."""
    return (_text_param(pattern, f"str.{name}", "pattern"),
            _text_param(value, f"str.{name}", "value"))  # fmt: skip
