"""Expression IR: immutable, hashable nodes; structural equality is the CSE and cache key."""

from __future__ import annotations

import math
import operator
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from typing import Any

from colbridge.errors import UnsupportedOperationError
from colbridge.types import DType
from colbridge.types.logical import Logical

__all__ = [
    "AGG_FUNCS",
    "BINARY_OPS",
    "BITWISE_AGGS",
    "BIT_COUNT_FUNCS",
    "BY_ORDER_FUNCS",
    "DISTINCT_FLAGS",
    "FOLDED_HOST_AGGS",
    "FUNCTIONS",
    "GROUPED_ONLY_FUNCS",
    "HOST_SCANS",
    "MOMENT_FUNCS",
    "OWN_ORDER_FUNCS",
    "PERMUTATIONS",
    "QUANTILE_METHODS",
    "RANK_METHODS",
    "ROLLING_BY_FUNCS",
    "ROLLING_CLOSED",
    "ROLLING_MOMENTS",
    "ROUND_MODES",
    "ROWS",
    "SCAN_FUNCS",
    "STRING_COMPARISONS",
    "UNARY_FUNCS",
    "Agg",
    "Alias",
    "Binary",
    "Call",
    "Cast",
    "Check",
    "Clip",
    "Coalesce",
    "Column",
    "Const",
    "Constant",
    "EveryRow",
    "FillNan",
    "Filtered",
    "Function",
    "Gather",
    "GroupAgg",
    "KeySet",
    "Literal",
    "NameOp",
    "Narrow",
    "Node",
    "Over",
    "Reduction",
    "Reinterpret",
    "Round",
    "Scan",
    "Search",
    "Selector",
    "SubtreeText",
    "TableRef",
    "Unary",
    "When",
    "children",
    "clip_bound",
    "deep_walk",
    "fill_per_group",
    "holds_window",
    "looks_ahead",
    "option_kinds",
    "output_name",
    "push_window",
    "reconstruct",
    "rolling_by_params",
    "rolling_weights",
    "root_name",
    "walk",
]

# Arithmetic, comparison and logical operators, by the names the IR uses.
BINARY_OPS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "floordiv": "//",
    "truncdiv": "truncdiv",  # written a.truncdiv(b)
    "mod": "%",
    "pow": "**",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "and": "&",
    "or": "|",
    "xor": "^",
    "arctan2": "arctan2",  # written arctan2(y, x)
}
COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
LOGICAL = frozenset({"and", "or", "xor"})

# Elementwise math that computes in floating point (integers become float64).
FLOAT_FUNCS = frozenset(
    {
        "sqrt", "cbrt", "exp", "log", "log10", "log1p", "sin", "cos", "tan", "arcsin",
        "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "erf",
        "erfc",
    }
)  # fmt: skip

# Counts of an integer's (or a boolean's) bits, in its type's width: UInt32, as polars.
BIT_COUNT_FUNCS = frozenset(
    {
        "bitwise_count_ones", "bitwise_count_zeros", "bitwise_leading_ones",
        "bitwise_leading_zeros", "bitwise_trailing_ones", "bitwise_trailing_zeros",
    }
)  # fmt: skip

# Elementwise functions of one argument.
UNARY_FUNCS = FLOAT_FUNCS | BIT_COUNT_FUNCS | frozenset(
    {
        "neg", "not", "abs", "floor", "ceil", "round", "sign", "is_null", "is_not_null",
        "is_nan", "is_not_nan", "is_finite", "is_infinite",
    }
)  # fmt: skip

# Reductions: a column in, one value out (broadcast when used elementwise).
AGG_FUNCS = frozenset(
    {
        "sum", "mean", "min", "max", "std", "var", "count", "null_count", "len", "first",
        "last", "n_unique", "median", "quantile", "any", "all", "skew", "kurtosis", "product",
        "arg_min", "arg_max", "bitwise_and", "bitwise_or", "bitwise_xor",
    }
)  # fmt: skip
# The bits of an integer (or boolean) column's non-null values combined: its type kept,
# null where there are none.
BITWISE_AGGS = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor"})
# Reductions computed on the host whose whole-column value a stream (or Dask) folds from
# its pieces' values (`runtime.execute._HOSTED_FOLDS`): sums of counts, a product, the
# extremes of temporal values, the bitwise reductions.
FOLDED_HOST_AGGS = frozenset({"count", "null_count", "len", "product", "min", "max"}) \
    | BITWISE_AGGS
# Shape statistics: typing writes them as two passes of sums (`typecheck._moments`).
MOMENT_FUNCS = frozenset({"skew", "kurtosis"})
# Reductions computed from a factorization (one group for a whole column), not by a fold:
# a whole-column one is a `GroupAgg` over the empty key set.
GROUPED_ONLY_FUNCS = frozenset({"first", "last", "n_unique", "median", "quantile", "any",
                                "all", "product", "arg_min", "arg_max",
                                "str_join"}) | BITWISE_AGGS  # fmt: skip
# How `quantile` picks between the two values around its position (polars' names).
QUANTILE_METHODS = ("nearest", "higher", "lower", "midpoint", "linear", "equiprobable")

# How `round` breaks ties (polars' names; "half_to_even" is the default). `truncate`
# is a `Round` node with the internal mode "to_zero" (as polars implements it).
ROUND_MODES = ("half_to_even", "half_away_from_zero")


@dataclass(frozen=True, slots=True)
class Node:
    """Base of every IR node. Subclasses are frozen dataclasses: hashable and comparable.

    The hash is computed once per node and kept (nodes are immutable): plans, CSE
    and caches hash whole trees on every ``compute()``.
    """

    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        writing: SubtreeText | None = getattr(_WRITING, "current", None)
        if writing is not None:  # a node inside the one being written
            return writing(self)
        _WRITING.current = writing = SubtreeText(_format, [self])
        try:
            return writing(self)
        finally:
            _WRITING.current = None


@dataclass(frozen=True, slots=True, repr=False)
class Column(Node):
    """A column of the input frame (or one defined by an earlier step).

    ``constant`` is set only by the string parser, for a bare name that is also a
    constant (``e``, ``pi``, ``nan``, ``inf``): a column of that name wins, and
    the constant is used only where no such column exists (resolved by planning,
    when the columns are known).
    """

    name: str
    constant: float | None = None


def value_kind(value: Any) -> str:
    """What tells ``value`` apart from the values equal to it in Python.

    Its type, and the sign of a float zero (``0.0 == -0.0``, but ``1 / -0.0`` is ``-inf``).
    """
    name = type(value).__name__
    floating = isinstance(value, float) or name in ("float16", "float32")  # NumPy's too
    if floating and value == 0 and math.copysign(1.0, value) < 0:
        return name + "-0"
    return name


@dataclass(frozen=True, slots=True, repr=False)
class Literal(Node):
    """A constant. ``dtype=None`` marks a Python number whose type adapts, as in polars."""

    value: bool | int | float | None
    dtype: DType | None = None
    # 3, 3.0 and True compare (and hash) equal in Python, but as literals their types
    # differ, as do 0.0 and -0.0 (`x / -0.0`); this field keeps them apart in CSE,
    # memos and caches.
    kind: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", value_kind(self.value))


@dataclass(frozen=True, slots=True, repr=False)
class Binary(Node):
    """``left <op> right`` for an op in `BINARY_OPS`."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True, slots=True, repr=False)
class Unary(Node):
    """An elementwise function of one argument, from `UNARY_FUNCS`."""

    op: str
    arg: Node


@dataclass(frozen=True, slots=True, repr=False)
class Cast(Node):
    """Convert to ``dtype``; ``strict`` raises on values that do not fit, else they become null."""

    arg: Node
    dtype: DType
    strict: bool = True


@dataclass(frozen=True, slots=True, repr=False)
class When(Node):
    """``when(condition).then(then).otherwise(otherwise)``; a null condition counts as false."""

    condition: Node
    then: Node
    otherwise: Node


@dataclass(frozen=True, slots=True, repr=False)
class Coalesce(Node):
    """The first non-null of ``args`` (``fill_null`` is a two-argument coalesce)."""

    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True, repr=False)
class FillNan(Node):
    """Replace NaN by ``value`` (a null ``value`` turns NaN into null)."""

    arg: Node
    value: Node


@dataclass(frozen=True, slots=True, repr=False)
class Clip(Node):
    """Clamp to ``[lower, upper]`` (either may be None); the bounds are cast to the input type."""

    arg: Node
    lower: bool | int | float | None
    upper: bool | int | float | None


def clip_bound(value: bool | int | float | None, dtype: DType) -> Literal:
    """A typed `Clip` bound as the literal kernels read it (an argument, like other numbers).

    Examples
    --------
    >>> clip_bound(2.5, DType.FLOAT32)
    lit(2.5, dtype=float32)
    """
    return Literal(value, dtype)


@dataclass(frozen=True, slots=True, repr=False)
class Round(Node):
    """Round to ``decimals`` places with a tie rule from `ROUND_MODES`, or toward zero.

    Only in expressions as written: type checking lowers it to elementwise nodes
    (plain ``round()`` is the ``Unary`` op ``"round"``). ``mode="to_zero"`` is
    ``truncate(decimals)``.
    """

    arg: Node
    decimals: int
    mode: str = "half_to_even"


# Functions only in expressions as written: type checking lowers each to elementwise
# nodes (`colbridge.plan.typecheck`), so code generation never sees them.
FUNCTIONS = frozenset(
    {
        "log", "degrees", "radians", "cot", "is_in", "clip", "max_horizontal",
        "min_horizontal", "sum_horizontal", "mean_horizontal", "cast_like", "scalar_fill",
        "replace", "replace_strict", "fill_zero_or_one", "bin_intervals", "all_horizontal",
        "any_horizontal", "is_close", "may_be_nan", "pair_float", "pair_result",
        "entropy_values", "peak_values", "interpolate_by_values", "interpolate_by_key",
        "round_sig_figs", "int_range", "concat_str", "in_bounds", "numbers_of",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True, repr=False)
class Function(Node):
    """A function from `FUNCTIONS` of several expressions, with hashable ``options``.

    Like `Round`, it only appears in expressions as written: ``log`` with a base,
    ``degrees``, ``radians``, ``cot``, ``is_in``, ``clip`` with expression bounds
    and the horizontal reductions are lowered to existing nodes, with
    polars' types and null rules, when the expression is typed. So are polars'
    namespaces (``dt.hour``, ``str.starts_with``, ``cast`` to a logical type,
    ``to_physical``): integer arithmetic for temporal fields, lookup tables for
    strings (`colbridge.plan.logical_typing`).
    """

    name: str
    args: tuple[Node, ...]
    options: tuple[Any, ...] = ()
    #: the options' Python types (`option_kinds`): ``is_in([1, 3])`` is not ``is_in([1.0, 3.0])``
    kinds: tuple[Any, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", option_kinds(self.options))


@dataclass(frozen=True, slots=True, repr=False)
class Call(Node):
    """A compiled scalar function (`colbridge.udf`) applied to ``args`` row by row.

    ``func`` is a `colbridge.expr.udf.UserFunction`: it compares and hashes by
    identity, and its ``repr`` carries a number unique in the process, so two
    functions never share a kernel cache key even when their names are equal.
    """

    func: Any
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True, repr=False)
class Agg(Node):
    """A reduction over the whole column: one value, broadcast in elementwise use."""

    func: str
    arg: Node
    ddof: int = 1
    #: ``quantile``'s ``(quantile, interpolation)``, ``any``'s and ``all``'s
    #: ``(ignore_nulls,)``, ``skew``'s ``(bias,)``, ``kurtosis``' ``(fisher, bias)``;
    #: empty for every other reduction
    options: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True, repr=False)
class Alias(Node):
    """Names an output; only meaningful at the top of an expression."""

    arg: Node
    name: str


@dataclass(frozen=True, slots=True, repr=False)
class Selector(Node):
    """Several columns at once (``col("a", "b")``, ``all()``, ``exclude(...)``).

    Never planned: a step expands an expression holding selectors into one expression
    per selected column (`colbridge.expr.selectors.expand`). ``names`` are column names
    and ``^...$`` patterns, in order; ``every`` selects every column; ``exclude``
    (names and patterns) is taken out of what the rest selects; ``positions`` select
    by place among the frame's columns (keys included in ``group_by``, as polars).
    """

    names: tuple[str, ...] = ()
    every: bool = False
    exclude: tuple[str, ...] = ()
    #: columns by position in the frame (``nth``; negative from the end)
    positions: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, repr=False)
class NameOp(Node):
    """``expr.name.<op>(value)``: the output's name changed, its values not.

    ``op`` is ``suffix``, ``prefix``, ``keep`` (the root column's name), ``map`` (a
    function of the name), ``to_lowercase``, ``to_uppercase``, ``strip_prefix``,
    ``strip_suffix`` or ``replace`` (``value``: pattern, replacement, literal);
    `output_name` applies it, and a step drops the node before planning.
    """

    arg: Node
    op: str
    value: Any = None


@dataclass(frozen=True, slots=True)
class KeySet:
    """The keys of a window or a ``group_by``: rows with equal key values form a group.

    Not a node: the keys are evaluated and factorized into group ids by a pass of
    their own, never inside the kernels that read the groups' results, so tree
    walks do not enter it. The empty key set is one group holding every row (it
    carries whole-column ``first``, ``last`` and ``n_unique``).
    """

    exprs: tuple[Node, ...] = ()
    #: ``over(..., order_by=...)``: each group's rows in the order of these expressions
    #: (then in frame order), as polars sorts them: ascending unless ``descending``, nulls
    #: first unless ``nulls_last``. Only ordered operations and ``first``/``last`` read it.
    order_by: tuple[Node, ...] = ()
    descending: bool = False
    nulls_last: bool = False

    @property
    def ids_column(self) -> str | None:
        """The input name kernels read the int32 group ids under (None: one group).

        The same with or without an order: the groups are the same.
        """
        if not self.exprs:
            return None
        return f"__group_ids__[{self.grouping!r}]"

    @property
    def grouping(self) -> KeySet:
        """The key set without its order: the groups alone."""
        return KeySet(self.exprs) if self.order_by else self

    @property
    def inputs(self) -> tuple[Node, ...]:
        """Every expression the key set evaluates over the rows: keys, then the order."""
        return self.exprs + self.order_by

    def ordered_like(self, other: KeySet) -> KeySet:
        """These keys in ``other``'s order (unchanged where ``other`` has none)."""
        if not other.order_by:
            return self
        return KeySet(self.exprs, other.order_by, other.descending, other.nulls_last)

    def __repr__(self) -> str:
        text = ", ".join(repr(e) for e in self.exprs)
        if self.order_by:
            order = ", ".join(repr(e) for e in self.order_by)
            text += (", " if text else "") + f"order_by=[{order}]"
            text += ", descending=True" if self.descending else ""
            text += ", nulls_last=True" if self.nulls_last else ""
        return text


@dataclass(frozen=True, slots=True, repr=False)
class Over(Node):
    """``arg.over(*keys)`` as written: every reduction inside ``arg`` is taken per group.

    Planning pushes the window onto those reductions (`GroupAgg`), as polars
    evaluates ``(x - x.mean()).over(g)`` as ``x - x.mean().over(g)``.
    """

    arg: Node
    keys: tuple[Node, ...]
    order_by: tuple[Node, ...] = ()
    descending: bool = False
    nulls_last: bool = False

    @property
    def key_set(self) -> KeySet:
        """The window's keys and order."""
        return KeySet(self.keys, self.order_by, self.descending, self.nulls_last)


@dataclass(frozen=True, slots=True, repr=False)
class Filtered(Node):
    """``arg.filter(predicate)``: the rows where ``predicate`` is true (only inside a reduction).

    ``shown``: the method the user wrote when it was not ``filter`` (``head(3)``, whose
    predicate is written with the rows' positions), for messages and ``repr``.
    """

    arg: Node
    predicate: Node
    shown: str = ""


@dataclass(frozen=True, slots=True, repr=False)
class GroupAgg(Node):
    """A reduction per group of ``keys``: one value per group, gathered back to its rows.

    Made by `Over` and by ``group_by(...).agg(...)``; the empty key set is one group.
    Planning also makes ``func="each"``: ``arg``, an expression of the groups' results
    only, evaluated once per group (not once per row) and gathered like a reduction.
    """

    func: str
    arg: Node
    keys: KeySet
    ddof: int = 1
    #: as `Agg.options`
    options: tuple[Any, ...] = ()
    #: ``arg`` holds a window's results on every row of its group (an ``.over`` written
    #: inside this reduction): a reduction that counts (``sum``, ``len``...) counts those
    #: rows, where the same reductions without the inner ``.over`` see one value per group
    per_row: bool = False


#: A reduction of the whole column or per group.
Reduction = Agg | GroupAgg

# Ordered operations: each row's value depends on the rows before it (or after it) in
# frame order. Typing writes `diff` and `pct_change` with `shift` and arithmetic.
SCAN_FUNCS = frozenset(
    {
        "shift", "cum_sum", "cum_prod", "cum_min", "cum_max", "cum_count", "rolling_sum",
        "rolling_mean", "rolling_var", "rolling_std", "rolling_min", "rolling_max", "ewm_mean",
        "ewm_var", "ewm_std",
        "forward_fill", "backward_fill", "diff", "pct_change", "shift_in_range", "rank",
        "interpolate", "is_duplicated", "is_unique", "is_first_distinct", "is_last_distinct",
        "rolling_quantile", "rolling_sum_by", "rolling_mean_by", "rolling_min_by",
        "rolling_max_by", "rolling_var_by", "rolling_std_by", "rolling_quantile_by",
        "rolling_skew", "rolling_kurtosis", "rolling_rank", "ewm_mean_by", "ewm_sum",
        "sort", "arg_sort", "reverse", "sort_by",
    }
)  # fmt: skip
# Polars' time-based windows: each row's window is the rows whose `by` value lies within
# `window_size` before its own (`rolling_by_params`). `Scan.keys.order_by` holds `by`:
# the rows are put in its order, as for `over(order_by=...)`, and the scan reads it too.
ROLLING_BY_FUNCS = frozenset({"rolling_sum_by", "rolling_mean_by", "rolling_min_by",
                              "rolling_max_by", "rolling_var_by", "rolling_std_by",
                              "rolling_quantile_by"})  # fmt: skip
# Ordered by another column, which the scan reads too (`Scan.keys.order_by` holds it):
# the time-based windows and polars' time-based `ewm_mean_by`.
BY_ORDER_FUNCS = ROLLING_BY_FUNCS | frozenset({"ewm_mean_by"})
# A time-based window's `closed`: which of its ends it holds (polars' names).
ROLLING_CLOSED = ("right", "left", "both", "none")
# Ordered operations computed on the host from their whole column (or group) at once:
# no stream carries them, no kernel computes them.
# Whether each row's value occurs elsewhere, or first or last, in its column (or group).
DISTINCT_FLAGS = frozenset({"is_duplicated", "is_unique", "is_first_distinct",
                            "is_last_distinct"})  # fmt: skip
# Rolling shape statistics: each window's moments taken exactly (`rolling_moment`).
ROLLING_MOMENTS = frozenset({"rolling_skew", "rolling_kurtosis"})
# ``to_string`` (a typed `cast(pl.String)` of a number, boolean or temporal value, made
# by typing only) writes each row's value as text: new strings, with a dictionary;
# ``concat_str`` (typed `concat_str`) joins the strings a key per row combines.
# Permutations: each group's rows in sorted (``sort``), reverse (``reverse``) or another
# column's order (``sort_by``: `Scan.keys.order_by` holds ``by``, its flags per key in the
# options), and the indices that sort a group (``arg_sort``).
PERMUTATIONS = frozenset({"sort", "arg_sort", "reverse", "sort_by"})
# Scans whose `Scan.keys.order_by` is an argument of their own, not a window's order: an
# enclosing ``over(order_by=...)`` leaves it as it is.
OWN_ORDER_FUNCS = BY_ORDER_FUNCS | frozenset({"sort_by"})
HOST_SCANS = frozenset({"rank", "interpolate", "rolling_quantile", "rolling_rank",
                        "ewm_sum", "to_string", "concat_str"}) \
    | DISTINCT_FLAGS | BY_ORDER_FUNCS | ROLLING_MOMENTS | PERMUTATIONS
# How `rank` numbers equal values (polars' names; "random" is not supported).
RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


@dataclass(frozen=True, slots=True, repr=False)
class Scan(Node):
    """An ordered operation over the rows in frame order, per group of ``keys`` if any.

    ``func`` is from `SCAN_FUNCS`; ``options`` holds its parameters as hashable
    values, by function (see `colbridge.expr.api`): ``shift`` ``(n, fill)``,
    ``diff``, ``pct_change`` and ``shift_in_range`` (whether row ``n`` places
    earlier exists: a shift's fill by an expression) ``(n,)``, ``cum_*`` ``(reverse,)``,
    ``rolling_*`` ``(window_size, min_samples, center, ddof)`` and, with weights, a
    fifth item: the weights as a tuple of floats (`rolling_weights`),
    ``rolling_quantile`` ``(window_size, min_samples, center, quantile, interpolation)``
    (``rolling_median`` is its ``0.5, "linear"``), ``rolling_skew`` ``(window_size,
    min_samples, center, bias)``, ``rolling_kurtosis`` ``(window_size, min_samples,
    center, fisher, bias)``, ``rolling_rank`` ``(window_size, min_samples, center,
    method)``, ``ewm_sum`` ``(alpha, min_samples, ignore_nulls)``, ``ewm_mean_by``
    ``(half_life,)`` (typing: the half-life in nanoseconds and
    how the runtime reads ``by``),
    ``rolling_*_by`` as `rolling_by_params` reads them (``by`` is ``keys.order_by[0]``),
    ``ewm_mean`` ``(alpha, adjust, min_samples, ignore_nulls)``, ``ewm_var`` and
    ``ewm_std`` ``(alpha, adjust, bias, min_samples, ignore_nulls)``, ``forward_fill`` and
    ``backward_fill`` ``(limit,)``, ``rank`` ``(method, descending)``, ``interpolate``
    ``(method,)``, the `DISTINCT_FLAGS` and ``to_string`` ``()`` (or ``(format,)``),
    ``concat_str`` ``(separator, ignore_nulls, specs)`` (the dictionaries joined). Like a reduction
    it needs whole columns: planning computes its argument over every row of the
    segment first, runs the scan as a pass of its own, and the elementwise pass reads
    its result as a column. With ``keys`` (``.over``), each group is scanned on its
    own, its rows in frame order.
    """

    func: str
    arg: Node
    options: tuple[Any, ...] = ()
    keys: KeySet = field(default_factory=KeySet)
    #: the options' Python types (`option_kinds`): a shift filling 0, 0.0 or False
    kinds: tuple[Any, ...] = field(default=(), repr=False)
    #: as `GroupAgg.per_row`: ``arg`` is a window's results on every row, a column to
    #: scan even where they are one value per group (``x.max().over(g).cum_sum()``)
    per_row: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", option_kinds(self.options))

    @property
    def looks_ahead(self) -> bool:
        """Whether a row's value depends on rows after it (a stream cannot carry it)."""
        return looks_ahead(self.func, self.options)


def shift_with_fill(arg: Node, n: int, fill: Node, keys: KeySet | None = None) -> Node:
    """``arg.shift(n, fill_value=fill)`` for a fill the scan does not hold.

    (An expression, a string, a date.) The rows shifted in from past the edge take
    ``fill`` (one value, as polars requires), any other row the shifted value.
    """
    keys = keys if keys is not None else KeySet()
    inside = Scan("shift_in_range", arg, (n,), keys)
    return When(inside, Scan("shift", arg, (n, None), keys), Function("scalar_fill", (fill,)))


#: ordered operations that compare values: over strings they run on each string's rank
#: (polars compares strings by their UTF-8 bytes; categoricals it does not compare)
STRING_COMPARISONS = frozenset({"cum_min", "cum_max"})


def looks_ahead(func: str, options: tuple[Any, ...]) -> bool:
    """Whether ordered operation ``func`` with ``options`` reads rows after each row.

    Reversed cumulative operations, backward fills, shifts (and ``diff``,
    ``pct_change``) by a negative ``n``, centred windows, ranks (of every row) and
    interpolations (of the next non-null value) do.
    """
    if func in HOST_SCANS:
        return func not in ("to_string", "concat_str")  # each row's value alone
    if func in ("shift", "diff", "pct_change", "shift_in_range"):
        return bool(options[0] < 0)
    if func.startswith("cum_"):
        return bool(options[0])
    if func.startswith("rolling_"):
        return bool(options[2])
    return func == "backward_fill"


def rolling_weights(func: str, options: tuple[Any, ...]) -> tuple[float, ...] | None:
    """The weights of a ``rolling_*`` scan's ``options`` (None: an unweighted window)."""
    if func.startswith("rolling_") and func != "rolling_quantile" \
            and func not in ROLLING_BY_FUNCS and func not in ROLLING_MOMENTS \
            and func != "rolling_rank" \
            and len(options) > 4:  # fmt: skip
        weights: tuple[float, ...] = options[4]
        return weights
    return None


#: The argument of ``cb.len()``: the rows themselves (``len`` counts nulls too).
ROWS = Literal(None, DType.BOOL)


@dataclass(frozen=True, slots=True, repr=False)
class Constant(Node):
    """A date, datetime, time, timedelta or string constant; type checking gives it its type."""

    value: Any
    # aware datetimes compare equal across zones, and a date never equals a datetime:
    # the type and the zone keep such constants apart in CSE and caches
    kind: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        tz = getattr(self.value, "tzinfo", None)
        zone = "" if tz is None else f":{getattr(tz, 'key', None) or tz!s}"
        object.__setattr__(self, "kind", type(self.value).__name__ + zone)


@dataclass(frozen=True, slots=True)
class TableRef:
    """A small array passed to a kernel as an argument and indexed per row.

    ``source`` and ``recipe`` say how the runtime builds it: from the dictionary of
    a string value (``source`` names it) or from a constant recipe (time zone
    transitions); ``dtype`` is its element type; ``nullable`` tables carry a
    validity flag per entry (an entry that has no value).
    """

    source: tuple[Any, ...]
    recipe: tuple[Any, ...]
    dtype: DType
    nullable: bool = False


@dataclass(frozen=True, slots=True, repr=False)
class Gather(Node):
    """``table[index]``: a lookup table read at a per-row index (a dictionary code).

    An index outside the table reads entry 0 (indices under nulls may be anything).
    With ``error`` set, a table entry without a value is a failure with that message
    on a valid row instead of a null.
    """

    table: TableRef
    index: Node
    error: str = ""


@dataclass(frozen=True, slots=True, repr=False)
class Search(Node):
    """The position of the last entry of a sorted table that is ``<= value`` (int32).

    The table's first entry is the smallest value of its type, so a position exists.
    """

    table: TableRef
    value: Node


@dataclass(frozen=True, slots=True, repr=False)
class Narrow(Node):
    """Convert an integer known to fit in ``dtype`` (no check, never null).

    Made by type checking for lowered operations whose range is known (an hour
    computed in int64 fits in int8).
    """

    arg: Node
    dtype: DType


@dataclass(frozen=True, slots=True, repr=False)
class Reinterpret(Node):
    """The same kernel values read as another logical type (None: plain integers).

    Type checking wraps the result of every operation on dates, times and strings
    in one, so a typed node's logical type is part of its identity (CSE never merges
    a datetime with the integer it is stored as).
    """

    arg: Node
    logical: Logical | None
    #: of a string: how its dictionary is made (a `DictSpec`), also part of the identity:
    #: ``s.str.to_uppercase()`` and ``s.str.head(2)`` are the same codes, other strings
    dictionary: tuple[Any, ...] | None = None


@dataclass(frozen=True, slots=True, repr=False)
class Check(Node):
    """``arg``, counting a strict-cast failure on every valid row where ``ok`` is false.

    Made by type checking for strict conversions it lowers (a date to nanoseconds
    that overflows int64); ``message`` is the error raised.
    """

    arg: Node
    ok: Node
    message: str


@dataclass(frozen=True, slots=True, repr=False)
class EveryRow(Node):
    """``arg``, a constant expression, as a column: its one value in every row.

    Made by type checking where a null-typed column was typed as a constant
    (``col("n").is_null()`` is ``true`` in every row): a reduction or an ordered
    operation of it sees the frame's rows (``sum`` counts them), where one of a bare
    constant sees one value, as in polars (``lit(True).sum()`` is 1).
    """

    arg: Node


@dataclass(frozen=True, slots=True, repr=False)
class Const(Literal):
    """A literal written into the kernel text, not passed as an argument.

    Made by type checking for the constants of lowered operations (a day's length
    in microseconds): the compilers fold them, dividing by a constant is a multiply.
    """


def _memo_hash(node: Node) -> int:
    cached = node._hash
    if cached:
        return cached
    value = hash((type(node).__name__, *(getattr(node, f.name) for f in _COMPARED[type(node)])))
    value = value or 1  # 0 means "not computed yet"
    object.__setattr__(node, "_hash", value)
    return value


#: the comparison under way in this thread: ``[pairs walked, pairs found equal or None]``
_EQUAL = threading.local()
#: node pairs a comparison walks before it remembers the equal ones
_EQUAL_WALK = 256


def _memo_eq(node: Node, other: object) -> Any:
    """Structural equality, each pair of nodes compared once (not once per path to it).

    Typing builds the same subtree again and again (a zoned datetime's local time is
    read in several places), and records each node in dicts: compared path by path,
    two such trees cost time exponential in their depth (a group_by on a zoned
    `t.dt.truncate("1mo")` spent minutes there). A comparison that walks more than
    `_EQUAL_WALK` pairs remembers the pairs it finds equal from then on; smaller ones,
    most of them, only count. Hashes already made reject most unequal pairs at once.
    """
    if node is other:
        return True
    if type(other) is not type(node):
        return NotImplemented  # as a dataclass's: the other side may know
    a, b = node._hash, other._hash  # hashes already made (not made here: that walks)
    if a and b and a != b:
        return False
    state: list[Any] | None = getattr(_EQUAL, "state", None)
    outermost = state is None
    if state is None:
        state = _EQUAL.state = [0, None]
    try:
        state[0] += 1
        pairs = state[1]
        if pairs is None and state[0] > _EQUAL_WALK:
            pairs = state[1] = set()
        if pairs is not None and (id(node), id(other)) in pairs:
            return True
        fields_of = _FIELDS_OF[type(node)]
        # tuples compare element by element, an element by identity first (NaN as is)
        same = bool(fields_of(node) == fields_of(other))
        if same and state[1] is not None:  # made by the comparisons below, perhaps
            state[1].add((id(node), id(other)))
        return same
    finally:
        if outermost:
            _EQUAL.state = None


def _state_without_hash(node: Node) -> list[Any]:
    # string hashes differ between processes: a pickled node (Dask, process pools)
    # must compute its hash again where it is unpickled
    return [0 if f.name == "_hash" else getattr(node, f.name) for f in fields(node)]


def _tuple_getter(names: tuple[str, ...]) -> Callable[[Node], tuple[Any, ...]]:
    """The compared fields of a node as one tuple (`operator.attrgetter`, in C)."""
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda node: (one(node),)
    return operator.attrgetter(*names)  # type: ignore[return-value]


#: each node class's compared fields, as a tuple (`_memo_eq`)
_FIELDS_OF: dict[type, Callable[[Node], tuple[Any, ...]]] = {}

# every node class of this module gets the cached hash, with no list to keep up to date
# (slots=True makes dataclass build a second class; the first, unused, is skipped)
_COMPARED: dict[type, tuple[Any, ...]] = {}
for _cls in [c for c in Node.__subclasses__() if globals().get(c.__name__) is c]:
    _COMPARED[_cls] = tuple(f for f in fields(_cls) if f.compare)
    _cls.__hash__ = _memo_hash  # type: ignore[method-assign,assignment]
    _cls.__eq__ = _memo_eq  # type: ignore[method-assign,assignment]
    _FIELDS_OF[_cls] = _tuple_getter(tuple(f.name for f in _COMPARED[_cls]))
    _cls.__getstate__ = _state_without_hash  # type: ignore[method-assign,assignment]
_COMPARED[Const] = _COMPARED[Literal]  # a subclass of a node class, not of Node itself
_FIELDS_OF[Const] = _FIELDS_OF[Literal]


#: each node class's field names (``dataclasses.fields`` builds its answer per call,
#: and walks ask for every node's children)
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def children(node: Node) -> tuple[Node, ...]:
    """The child nodes, in field order."""
    names = _FIELD_NAMES.get(type(node))
    if names is None:
        names = _FIELD_NAMES[type(node)] = tuple(f.name for f in fields(node))
    out: list[Node] = []
    for name in names:
        value = getattr(node, name)
        if isinstance(value, Node):
            out.append(value)
        elif isinstance(value, tuple):
            out.extend(v for v in value if isinstance(v, Node))
    return tuple(out)


def reconstruct(node: Node, new_children: tuple[Node, ...]) -> Node:
    """The same node with its children replaced, in `children` order.

    The node itself when every child is the very same object: a rewrite that changes
    nothing keeps the tree's objects, so shared subtrees stay shared and comparing the
    result with the original is an identity check, not a walk of the tree as written
    out (exponential in its depth where subtrees are shared, ``e = e + e``).
    """
    if all(new is old for new, old in zip(new_children, children(node), strict=True)):
        return node
    it = iter(new_children)
    changes: dict[str, Any] = {}
    for f in fields(node):
        value = getattr(node, f.name)
        if isinstance(value, Node):
            changes[f.name] = next(it)
        elif isinstance(value, tuple) and any(isinstance(v, Node) for v in value):
            changes[f.name] = tuple(next(it) if isinstance(v, Node) else v for v in value)
    return replace(node, **changes) if changes else node


def option_kinds(options: tuple[Any, ...]) -> tuple[Any, ...]:
    """The Python types of ``options``, tuples within them item by item.

    ``0``, ``0.0`` and ``False`` compare and hash equal in Python, but as options of an
    operation they type it differently (``x.shift(1, fill_value=0)`` is Int32 on a
    boolean column, ``fill_value=False`` Boolean; ``is_in([1.0])`` on an integer column
    is refused, ``is_in([1])`` is not). A node keeps them beside its options, as
    `Literal` keeps ``kind``, so that no cache keyed by nodes takes one for the other.
    """
    return tuple(option_kinds(o) if isinstance(o, tuple) else value_kind(o) for o in options)


def walk(node: Node) -> Iterator[Node]:
    """Every distinct node of the tree once, parents before children.

    Trees share subtrees: typing lowers a time-zoned ``dt.truncate("1mo")`` into a few
    hundred distinct nodes that, written out as a tree, are millions. A node equal to
    one already yielded is skipped with everything under it.
    """
    return _walk(node, deep=False)


def deep_walk(node: Node) -> Iterator[Node]:
    """As `walk`, the key expressions of windows and groups included."""
    return _walk(node, deep=True)


def _walk(node: Node, deep: bool) -> Iterator[Node]:
    seen: set[Node] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        yield current
        stack.extend(reversed(children(current)))
        if deep and isinstance(current, (GroupAgg, Scan)):
            stack.extend(reversed(current.keys.inputs))


def transform(node: Node, fn: Callable[[Node], Node], memo: dict[Node, Node] | None = None) -> Node:
    """Rebuild bottom-up, applying ``fn`` to each node after its children."""
    if memo is None:
        memo = {}
    hit = memo.get(node)
    if hit is not None:
        return hit
    kids = children(node)
    rebuilt = reconstruct(node, tuple(transform(k, fn, memo) for k in kids)) if kids else node
    result = fn(rebuilt)
    memo[node] = result
    return result


def push_window(arg: Node, keys: KeySet) -> Node:
    """``arg.over(keys)``: every whole-column reduction and scan inside ``arg`` per group.

    A window inside the window is taken within each of its groups (by the outer
    keys and its own, as polars evaluates it); elementwise parts are unchanged
    (``x.over(g)`` is ``x``), as in polars.
    """
    windows: set[int] = set()  # the inner windows, as rebuilt here (by identity)

    def fn(n: Node) -> Node:
        if isinstance(n, Agg):
            return GroupAgg(n.func, n.arg, _ordered_for(n.func, keys), n.ddof, n.options,
                            per_row=holds_window(n.arg, windows))  # fmt: skip
        if isinstance(n, GroupAgg):
            inner = tuple(e for e in n.keys.exprs if e not in keys.exprs)
            merged = KeySet(keys.exprs + inner).ordered_like(n.keys).ordered_like(keys)
            out = replace(n, keys=_ordered_for(n.func, merged))
            windows.add(id(out))
            return out
        if isinstance(n, Scan):
            inner = tuple(e for e in n.keys.exprs if e not in keys.exprs)
            merged = KeySet(keys.exprs + inner).ordered_like(n.keys)
            if n.func == "sort_by" and keys.order_by:
                msg = (f"`{n!r}` inside `over(..., order_by=...)`: not supported (the window's "
                       "order decides the rows its result goes back to); sort the frame by "
                       "that order first and drop `order_by`")  # fmt: skip
                raise UnsupportedOperationError(msg)
            if n.func not in OWN_ORDER_FUNCS:  # a time window keeps its own order: `by`
                merged = merged.ordered_like(keys)
            return replace(n, keys=merged, per_row=n.per_row or holds_window(n.arg, windows))
        return fill_per_group(n, keys.grouping)

    return transform(arg, fn)


def holds_window(node: Node, windows: set[int]) -> bool:
    """Whether ``node`` reads one of ``windows`` (reductions, by identity) on its rows.

    Not through another reduction: ``x.max().over(b).sum()`` has one value per group,
    so a reduction of it (``.product()``) sees that value once, not once per row.
    """
    seen: set[Node] = set()
    stack = [node]
    while stack:  # (a walk that stops at reductions; trees may be deep)
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if isinstance(n, GroupAgg) and id(n) in windows:
            return True
        if isinstance(n, (Agg, GroupAgg)):
            continue  # one value per group
        stack.extend(children(n))
        if isinstance(n, Scan):
            stack.extend(n.keys.inputs)
    return False


#: reductions whose value depends on the order of the rows (`KeySet.order_by`)
ORDERED_AGGS = frozenset({"first", "last", "arg_min", "arg_max"})


def _ordered_for(func: str, keys: KeySet) -> KeySet:
    """``keys`` with their order for a reduction that reads it, else the groups alone."""
    return keys if func in ORDERED_AGGS else keys.grouping


def fill_per_group(n: Node, keys: KeySet) -> Node:
    """A shift's fill by an expression (``scalar_fill``) taken per group of ``keys``.

    `x.shift(1, fill_value=x.mean()).over(g)` (or inside `group_by(g).agg(...)`):
    each group's own fill, as polars, where the fill has one value per group (its
    reductions are over those keys, already); any other node as it is.
    """
    if isinstance(n, Function) and n.name == "scalar_fill" and not n.options \
            and one_value_per_group(n.args[0], keys):  # fmt: skip
        return Function("scalar_fill", n.args, (keys,))
    return n


def one_value_per_group(node: Node, keys: KeySet) -> bool:
    """True when ``node`` has one value per group of ``keys``: reductions over them only."""
    if isinstance(node, GroupAgg):
        return node.keys.grouping == keys.grouping
    if isinstance(node, (Column, Scan, Agg, EveryRow)):
        return isinstance(node, Agg)
    return all(one_value_per_group(c, keys) for c in children(node))


#: the `Filtered.shown` of ``x.mode()``: its predicate counts values (`mode_predicate`), so
#: the mode of filtered values is rebuilt, counting the kept rows only
#: (`colbridge.plan.row_changing.filters_outermost`)
MODE_SHOWN = "mode()"

#: `Filtered` values named after their predicate's column, as polars names them: the
#: positions or counts of ``x.arg_true()``, ``x.arg_unique()``, ``x.unique_counts()``
NAMED_BY_PREDICATE = frozenset({"arg_true()", "arg_unique()", "unique_counts()"})


def output_name(node: Node) -> str:
    """The name polars would give the expression's output: the alias, else the first column."""
    if isinstance(node, Alias):
        return node.name
    if isinstance(node, NameOp):
        if node.op == "keep":
            return root_name(node.arg)
        name = output_name(node.arg)
        if node.op == "suffix":
            return f"{name}{node.value}"
        if node.op == "prefix":
            return f"{node.value}{name}"
        if node.op == "to_lowercase":
            return name.lower()
        if node.op == "to_uppercase":
            return name.upper()
        if node.op == "strip_prefix":
            return name[len(node.value) :] if name.startswith(node.value) else name
        if node.op == "strip_suffix":
            return name[: len(name) - len(node.value)] if node.value and \
                name.endswith(node.value) else name  # fmt: skip
        if node.op == "replace":  # every match, as `str.replace_all` (a regex unless literal)
            import pyarrow as pa

            from colbridge.types.string_maps import apply_string_map

            pattern, value, literal = node.value
            function, params = ("replace_all", (pattern, value)) if literal \
                else ("replace_regex", (pattern, value, None))  # fmt: skip
            return str(apply_string_map(function, params, pa.array([name], pa.large_string()))[0])
        renamed = node.value(name)  # "map"
        if not isinstance(renamed, str):
            msg = f"`name.map` must return a string, got {type(renamed).__name__} for `{name}`"
            raise TypeError(msg)
        return renamed
    if isinstance(node, (Agg, GroupAgg)) and node.func == "len" and node.arg == ROWS:
        return "len"
    if isinstance(node, Column):
        return node.name
    if isinstance(node, Literal):
        return "literal"
    if isinstance(node, When):  # polars names a `when` by its first `then`
        return output_name(node.then)
    if isinstance(node, Filtered) and node.shown in NAMED_BY_PREDICATE:
        return output_name(node.predicate)  # positions or counts of the column filtered by
    for child in children(node):
        return output_name(child)
    return "literal"


def root_name(node: Node) -> str:
    """The name of the first column the expression reads, aliases aside (polars' root name).

    A `when` is read from its first `then` (then its `otherwise`, then its condition),
    as polars names it.
    """
    seen: set[int] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, Column):
            return n.name
        kids = (n.then, n.otherwise, n.condition) if isinstance(n, When) else children(n)
        stack.extend(reversed(kids))
    return output_name(node)


def method_name(node: Agg | GroupAgg) -> str:
    """A reduction's method as written (``str.join`` is the reduction ``str_join``)."""
    return "str.join" if node.func == "str_join" else node.func


def _agg_arguments(node: Agg | GroupAgg) -> str:
    """A reduction's arguments as written: ``ddof`` where not 1, a quantile's two."""
    if node.func == "str_join":
        delimiter, ignore_nulls = node.options
        return repr(delimiter) + ("" if ignore_nulls else ", ignore_nulls=False")
    if node.func == "quantile":
        quantile, interpolation = node.options
        return f"{quantile!r}, {interpolation!r}"
    if node.func in ("any", "all") and node.options and not node.options[0]:
        return "ignore_nulls=False"
    if node.func == "skew" and node.options and not node.options[0]:
        return "bias=False"
    if node.func == "kurtosis" and node.options:
        fisher, bias = node.options
        return ", ".join([*([] if fisher else ["fisher=False"]), *([] if bias else ["bias=False"])])
    return f"ddof={node.ddof}" if node.func in ("std", "var") and node.ddof != 1 else ""


#: the `SubtreeText` writing the node whose ``repr`` is being made, per thread
_WRITING = threading.local()


class SubtreeText:
    """Text of the nodes of ``roots`` (by ``write``) in which each shared subtree is written once.

    Typing lowers some operations into trees that use one subtree in many places (a
    time-zoned ``dt.truncate("1mo")``: millions of nodes written out, a few hundred
    distinct). A subtree used in several places whose text is at least `SHARED_TEXT`
    long is written where it first appears as ``#k=<text>`` and as ``#k`` after that,
    so the text grows with the distinct nodes and stays one for one with the trees
    (``repr`` and the planner's kernel shapes are cache keys). Smaller trees, what
    users write, read as before. ``write(node)`` writes one node, calling this
    object for its children.
    """

    SHARED_TEXT = 200

    def __init__(self, write: Callable[[Node], str], roots: Iterable[Node]) -> None:
        self._write = write
        uses: dict[Node, int] = {}
        for root in roots:
            for node in deep_walk(root):  # the keys of windows and groups are written too
                kids = children(node)
                if isinstance(node, (GroupAgg, Scan)):
                    kids += node.keys.inputs
                for child in kids:
                    uses[child] = uses.get(child, 0) + 1
        self._shared = {node for node, count in uses.items() if count > 1}
        self._written: dict[Node, str] = {}
        self._labels = 0

    def __call__(self, node: Node) -> str:
        """The node's text: in full the first time, ``#k`` after that where it is labelled."""
        done = self._written.get(node)
        if done is not None:
            return done
        text = self._write(node)
        if node in self._shared and len(text) >= self.SHARED_TEXT:
            label = f"#{self._labels}"
            self._labels += 1
            self._written[node] = label
            return f"{label}={text}"
        self._written[node] = text
        return text


def _format(node: Node) -> str:
    if isinstance(node, Column):
        if node.constant is not None:
            return f'col("{node.name}", else_constant={node.constant!r})'
        return f'col("{node.name}")'
    if isinstance(node, Literal):
        suffix = f", dtype={node.dtype}" if node.dtype is not None else ""
        return f"lit({node.value!r}{suffix})"
    if isinstance(node, Binary):
        if node.op == "arctan2":
            return f"arctan2({node.left!r}, {node.right!r})"
        if node.op == "truncdiv":
            return f"{node.left!r}.truncdiv({node.right!r})"
        return f"({node.left!r} {BINARY_OPS[node.op]} {node.right!r})"
    if isinstance(node, Unary):
        if node.op == "neg":
            return f"-{node.arg!r}"
        if node.op == "not":
            return f"~{node.arg!r}"
        return f"{node.arg!r}.{node.op}()"
    if isinstance(node, Cast):
        strict = "" if node.strict else ", strict=False"
        return f"{node.arg!r}.cast({node.dtype}{strict})"
    if isinstance(node, When):
        return f"when({node.condition!r}).then({node.then!r}).otherwise({node.otherwise!r})"
    if isinstance(node, Coalesce):
        return "coalesce(" + ", ".join(repr(a) for a in node.args) + ")"
    if isinstance(node, FillNan):
        return f"{node.arg!r}.fill_nan({node.value!r})"
    if isinstance(node, Clip):
        return f"{node.arg!r}.clip({node.lower!r}, {node.upper!r})"
    if isinstance(node, Round):
        if node.mode == "to_zero":
            return f"{node.arg!r}.truncate({node.decimals})"
        return f"{node.arg!r}.round({node.decimals}, mode={node.mode!r})"
    if isinstance(node, Function):
        return _format_function(node)
    if isinstance(node, Call):
        return f"{node.func!r}({', '.join(repr(a) for a in node.args)})"
    if isinstance(node, Agg):
        if node.func == "len" and node.arg == ROWS:
            return "len()"
        return f"{node.arg!r}.{method_name(node)}({_agg_arguments(node)})"
    if isinstance(node, Alias):
        return f'{node.arg!r}.alias("{node.name}")'
    if isinstance(node, Selector):
        text = "all()" if node.every else "col(" + ", ".join(repr(n) for n in node.names) + ")"
        if node.positions:
            text = "nth(" + ", ".join(str(k) for k in node.positions) + ")"
        if node.exclude:
            text += ".exclude(" + ", ".join(repr(n) for n in node.exclude) + ")"
        return text
    if isinstance(node, NameOp):
        value = "" if node.value is None else getattr(node.value, "__name__", repr(node.value))
        if isinstance(node.value, tuple):  # `replace`'s pattern, value and literal
            value = ", ".join(repr(v) for v in node.value)
        return f"{node.arg!r}.name.{node.op}({value})"
    if isinstance(node, Over):
        return f"{node.arg!r}.over({node.key_set!r})"
    if isinstance(node, Filtered):
        return f"{node.arg!r}.{node.shown or f'filter({node.predicate!r})'}"
    if isinstance(node, GroupAgg):
        extra = _agg_arguments(node)
        window = f".over({node.keys!r})" if node.keys.inputs else ""
        if node.func == "len" and node.arg == ROWS:
            return f"len(){window}"
        if node.func == "each":
            return f"per_group[{node.keys!r}]({node.arg!r})"
        return f"{node.arg!r}.{method_name(node)}({extra}){window}"
    if isinstance(node, Scan) and node.func in ROLLING_BY_FUNCS:
        return _format_rolling_by(node)
    if isinstance(node, Scan) and node.func == "ewm_mean_by":
        by = repr(node.keys.order_by[0]) if node.keys.order_by else "?"
        window = f".over({KeySet(node.keys.exprs)!r})" if node.keys.exprs else ""
        return f"{node.arg!r}.ewm_mean_by({by}, half_life={node.options[0]!r}){window}"
    if isinstance(node, Scan) and node.func in ("sort", "arg_sort", "sort_by"):
        written = [repr(k) for k in node.keys.order_by] if node.func == "sort_by" else []
        for flag, value in zip(("descending", "nulls_last"), node.options, strict=True):
            flags = value if isinstance(value, tuple) else (value,)  # `sort_by`'s: per key
            if any(flags):  # the defaults left out
                shown = list(flags) if len(flags) > 1 else flags[0]
                written.append(f"{flag}={shown!r}")
        keys = KeySet(node.keys.exprs) if node.func == "sort_by" else node.keys
        window = f".over({keys!r})" if keys.inputs else ""
        return f"{node.arg!r}.{node.func}({', '.join(written)}){window}"
    if isinstance(node, Scan):
        window = f".over({node.keys!r})" if node.keys.inputs else ""
        params = ", ".join(_format_param(p) for p in node.options)
        return f"{node.arg!r}.{node.func}({params}){window}"
    if isinstance(node, Constant):
        return f"lit({node.value!r})"
    if isinstance(node, Gather):
        return f"{_format_table(node.table)}[{node.index!r}]"
    if isinstance(node, Search):
        return f"search({_format_table(node.table)}, {node.value!r})"
    if isinstance(node, Narrow):
        return f"{node.arg!r}.narrow({node.dtype})"
    if isinstance(node, Check):
        return f"{node.arg!r}.check({node.ok!r})"
    if isinstance(node, EveryRow):
        return f"{node.arg!r}.every_row()"
    if isinstance(node, Reinterpret):
        return f"{node.arg!r}.as({node.logical or 'integer'})"
    return type(node).__name__


def _format_function(node: Function) -> str:
    args = [repr(a) for a in node.args]
    if node.name == "dt.replace":  # the parts given, by name
        names = ("year", "month", "day", "hour", "minute", "second", "microsecond")
        given = [f"{name}={arg!r}" for name, arg in zip(names, node.args[1:], strict=True)
                 if not (isinstance(arg, Literal) and arg.value is None)]  # fmt: skip
        if node.options[0] != "raise":
            given.append(f"ambiguous={node.options[0]!r}")
        return f"{args[0]}.dt.replace({', '.join(given)})"
    if node.name == "dt.date_diff":  # a function of two, not a method
        return f"date_diff({args[0]}, {args[1]}, {node.options[0]!r})"
    if node.name == "reinterpret":  # `signed=` (a flag) or `dtype=`
        (target,) = node.options
        keyword = "signed" if isinstance(target, bool) else "dtype"
        return f"{args[0]}.reinterpret({keyword}={target})"
    if node.name in _KEYWORD_OPTIONS:  # as written: the first positionally, then keywords
        first, keywords = _KEYWORD_OPTIONS[node.name]
        written = [_format_param(v) for v in node.options[:first]]
        named = zip(keywords, node.options[first:], strict=True)
        written += [f"{name}={_format_param(v)}" for (name, default), v in named if v != default]
        return f"{args[0]}.{node.name}({', '.join(written)})"
    if "." in node.name or node.name in ("cast", "to_physical"):
        params = ", ".join(_format_param(p) for p in node.options)
        inner = ", ".join(x for x in (", ".join(args[1:]), params) if x)
        return f"{args[0]}.{node.name}({inner})"
    if node.name == "int_range":  # its argument: the running count of the rows
        keys = node.args[0].keys if isinstance(node.args[0], Scan) else KeySet()
        window = f".over({keys!r})" if keys.inputs else ""
        return f"int_range(len(), dtype={node.options[0]}){window}"
    if node.name == "fill_zero_or_one":
        return f"{args[0]}.fill_null(strategy={'one' if node.options[0] else 'zero'!r})"
    if node.name == "datetime_parts" and node.options[1] is not None:  # `dt.replace`'s
        return str(node.options[1])
    if node.name == "datetime_parts":  # the parts as written, before polars' casts
        casts = [*node.args[:6], node.args[6].left if isinstance(node.args[6], Binary)
                 else node.args[6]]  # `microsecond` cast, then times 1,000  # fmt: skip
        written = [repr(a.arg if isinstance(a, Cast) else a) for a in casts]
        return f"datetime({', '.join(written)}, time_unit={node.options[0]!r})"
    if node.name.endswith("_horizontal"):
        extra = [] if not node.options or node.options[0] else ["ignore_nulls=False"]
        return f"{node.name}({', '.join(args + extra)})"
    rest = args[1:]
    if node.name == "is_between":
        rest.append(f"closed={node.options[0]!r}")
    elif node.name == "is_in":
        rest = [repr(list(node.options[0]))]
    elif node.name == "round_sig_figs":
        rest = [str(node.options[0])]
    elif node.name in ("replace", "replace_strict"):
        rest = [repr(list(node.options[0])), repr(list(node.options[1]))]
        if node.name == "replace_strict" and node.options[4]:
            rest.append(f"default={args[1]}")
        if node.name == "replace_strict" and node.options[3] is not None:
            rest.append(f"return_dtype={node.options[3]}")
    return f"{args[0]}.{node.name}({', '.join(rest)})"


def rolling_by_params(func: str, options: tuple[Any, ...]) -> dict[str, Any]:
    """The parameters of a ``rolling_*_by`` scan's ``options``, by name.

    ``(window, min_samples, closed)``, then ``ddof`` (var, std) or ``quantile,
    interpolation`` (quantile); typing appends ``by_spec``: how the runtime reads
    ``by``, ``(kind, unit, time_zone)`` (``"int"`` as nanoseconds, ``"date"`` as
    microseconds, ``"datetime"`` in its unit), absent (None) before typing.
    """
    names = ["window", "min_samples", "closed"]
    if func in ("rolling_var_by", "rolling_std_by"):
        names.append("ddof")
    elif func == "rolling_quantile_by":
        names += ["quantile", "interpolation"]
    params = dict(zip(names, options, strict=False))
    params["by_spec"] = options[len(names)] if len(options) > len(names) else None
    return params


def _format_rolling_by(node: Scan) -> str:
    """``x.rolling_mean_by(col("t"), '2d', ...)`` with polars' keywords, then ``.over(keys)``."""
    params = rolling_by_params(node.func, node.options)
    by = repr(node.keys.order_by[0]) if node.keys.order_by else "?"
    text = [by, repr(params["window"])]
    if node.func == "rolling_quantile_by":
        text += [f"quantile={params['quantile']!r}",
                 f"interpolation={params['interpolation']!r}"]  # fmt: skip
    text += [f"min_samples={params['min_samples']!r}", f"closed={params['closed']!r}"]
    if "ddof" in params:
        text.append(f"ddof={params['ddof']!r}")
    window = f".over({KeySet(node.keys.exprs)!r})" if node.keys.exprs else ""
    return f"{node.arg!r}.{node.func}({', '.join(text)}){window}"


#: functions whose options read best as polars' keywords: (how many are positional,
#: then each keyword's name and default, left out where the option is the default)
_KEYWORD_OPTIONS: dict[str, tuple[int, tuple[tuple[str, Any], ...]]] = {
    "str.split": (1, (("inclusive", False), ("literal", True), ("strict", True))),
    "str.split_exact": (2, (("inclusive", False),)),
    "list.get": (1, (("null_on_oob", False),)),
    "list.sort": (0, (("descending", False),)),
    "str.to_integer": (0, (("base", 10), ("strict", True), ("dtype", "int64"))),
}


def _format_param(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(_format_param(v) for v in value) + "]"
    return str(value) if type(value).__name__ in ("Logical", "DType") else repr(value)


def _format_table(table: TableRef) -> str:
    what = ", ".join(_format_param(p) for p in table.recipe)
    return f"table<{what}>"
