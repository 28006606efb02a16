"""Typing of ordered operations (`Scan` nodes): polars' result types, arguments cast first.

Stage: plan. Every scan computes in its result type: the argument is cast to it
before the scan (``cum_sum`` of int8 sums int64 values, ``rolling_mean`` of an
integer averages float64 values), so the scan kernels only see int64, uint64,
float32 and float64 (`colbridge.backends.scans`). ``diff`` and ``pct_change``
are written with ``shift`` and elementwise arithmetic, which then fuses:
``x.diff(n)`` is ``x - x.shift(n)`` (unsigned integers widened to a signed type
first), ``x.pct_change(n)`` is ``(x - x.shift(n)) / x.shift(n)`` in floating point.

Dates and times keep their type through the operations that only move or
compare values (``shift`` without a fill, fills, running and rolling min/max);
strings and categoricals through those that only move them (``shift`` without a
fill, fills): their codes move, and the result has a dictionary of its own
(``("scan", name)``: the argument's, after the strings a stream carried in from
the batches before; see `colbridge.backends.scans.ScanStreams`).
``cum_count`` counts any column. Everything else over a logical type is refused
with the column's type named. Weighted windows (``rolling_*(weights=...)``)
compute in Float64 (Float32 stays), as polars turns the column into floats first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from colbridge.errors import InvalidOperationError, SchemaError, UnsupportedTypeError
from colbridge.expr.nodes import (
    DISTINCT_FLAGS,
    PERMUTATIONS,
    ROLLING_BY_FUNCS,
    ROLLING_MOMENTS,
    STRING_COMPARISONS,
    Binary,
    Cast,
    Column,
    Function,
    KeySet,
    Literal,
    Node,
    Reinterpret,
    Scan,
    one_value_per_group,
    rolling_by_params,
    rolling_weights,
    shift_with_fill,
)
from colbridge.types import DType
from colbridge.types.durations import parse_duration
from colbridge.types.logical import STRING, Logical

if TYPE_CHECKING:
    from colbridge.plan.typecheck import TypeChecker

__all__ = ["OrderedTyping", "scan_column", "scan_result_type"]

_SMALL_INTS = (DType.INT8, DType.INT16, DType.UINT8, DType.UINT16)
#: operations that only move or compare values: a date stays a date
_KEEP_LOGICAL = frozenset({"shift", "forward_fill", "backward_fill", "cum_min", "cum_max",
                           "rolling_min", "rolling_max"})  # fmt: skip
#: operations that only move values: a string's codes move, its dictionary stays
_MOVE_ONLY = frozenset({"shift", "forward_fill", "backward_fill"})
#: ordered operations polars computes over a temporal column's integers (`to_physical`):
#: Float64 results, and ``rolling_mean`` a mean of them truncated back to the type
_OVER_PHYSICAL = frozenset({"pct_change", "ewm_mean", "ewm_var", "ewm_std", "rolling_std",
                            "rolling_var", "rolling_mean"})  # fmt: skip
_MICROS_PER_DAY = 86_400_000_000.0
_DIFF_TYPE = {DType.UINT8: DType.INT16, DType.UINT16: DType.INT32, DType.UINT32: DType.INT64,
              DType.UINT64: DType.INT64}  # fmt: skip


def scan_column(scan: Scan) -> str:
    """The input name the passes read an ordered operation's result under."""
    return f"__scan__[{scan!r}]"


def scan_result_type(func: str, dtype: DType) -> DType:
    """Polars' result type of ordered operation ``func`` over a column of ``dtype``."""
    if func == "cum_count":
        return DType.UINT32
    if func in ("cum_sum", "rolling_sum"):
        if dtype is DType.BOOL:
            return DType.UINT32
        return DType.INT64 if dtype in _SMALL_INTS else dtype
    if func == "cum_prod":
        if dtype.is_float or dtype is DType.UINT64:
            return dtype
        return DType.INT64
    if func in ("rolling_mean", "rolling_var", "rolling_std", "ewm_mean", "ewm_var", "ewm_std",
                "pct_change"):
        return DType.FLOAT32 if dtype is DType.FLOAT32 else DType.FLOAT64
    if func == "diff":
        return _DIFF_TYPE.get(dtype, dtype)
    return dtype  # shift, fills, min and max


def _replaced(spec: tuple[object, ...], old: tuple[object, ...],
              new: tuple[object, ...]) -> tuple[object, ...]:  # fmt: skip
    """Dictionary spec ``spec`` made from ``new`` where it was made from ``old``."""
    if spec == old:
        return new
    if spec[0] == "map":
        inner = spec[2]
        assert isinstance(inner, tuple)
        return (*spec[:2], _replaced(inner, old, new), *spec[3:])
    msg = f"dictionary spec {spec!r} is not made from {old!r}"  # pragma: no cover
    raise AssertionError(msg)


class OrderedTyping:
    """Types `Scan` nodes for a `TypeChecker` (which owns the types it records)."""

    def __init__(self, tc: TypeChecker) -> None:
        self.tc = tc

    def scan(self, node: Scan) -> Node:
        """The typed form of an ordered operation (diff and pct_change lowered)."""
        tc = self.tc
        from colbridge.plan.typecheck import (
            NULL_AS_FLOAT_SCANS,
            NULL_KEEPING_SCANS,
            is_null_literal,
            is_scalar,
        )

        raw = tc.check_child(node.arg)
        if is_null_literal(raw) and node.func in NULL_KEEPING_SCANS and not (
                node.func == "shift" and node.options[1] is not None):  # fmt: skip
            return raw  # polars: a null-typed column shifted or filled is null-typed still
        if is_null_literal(raw) and node.func in NULL_AS_FLOAT_SCANS:
            typed = tc.typed(Literal(None, DType.FLOAT64))  # polars computes these in Float64
        elif is_null_literal(raw) and node.func == "shift" \
                and isinstance(node.options[1], (bool, int, float)):  # fmt: skip
            # filled: in the fill value's type (polars: `shift(1, fill_value=0)` is Int32)
            typed = tc.typed(Literal(None, tc.dtype(tc.typed(Literal(node.options[1])))))
        elif is_null_literal(raw) and (node.func in ("cum_count", "arg_sort")
                                       or node.func in DISTINCT_FLAGS):
            typed = tc.typed(Literal(None, DType.INT8))  # read for their nulls only: any type
        else:
            typed = tc.typed(node.arg)
        arg = tc.rows_of(node.arg, typed)

        if is_scalar(arg) or (node.keys.exprs and not node.per_row
                              and one_value_per_group(node.arg, node.keys)):
            # one value per group (`x.sum().cum_sum().over(g)`) ran over copies of it
            msg = (
                f"`{node!r}`: an ordered operation needs a column, not one value"
                f"{' per group' if node.keys.exprs else ''}; apply it to a column expression"
            )
            raise SchemaError(msg)
        keys = tc.key_set(node.keys) if node.keys.inputs else KeySet()
        logical = tc.logical.get(arg)
        func = node.func
        if func == "shift_in_range":  # reads no value: any column's rows will do
            return self._record(Scan(func, arg, node.options, keys), DType.BOOL)
        if func == "rank":
            return self._rank(node, arg, keys, logical)
        if func in PERMUTATIONS:
            return self._permuted(node, arg, keys, logical)
        if func in DISTINCT_FLAGS:  # of values of any type, compared as polars groups them
            return self._record(Scan(func, arg, node.options, keys), DType.BOOL)
        if func == "interpolate":
            return self._interpolate(node, arg, keys, logical)
        if func in ROLLING_BY_FUNCS:
            return self._rolling_by(node, arg, keys, logical)
        if func == "rolling_rank":
            return self._rolling_rank(node, arg, keys, logical)
        if func == "ewm_mean_by":
            return self._ewm_mean_by(node, arg, keys, logical)
        if func == "ewm_sum":
            dtype = tc.types[arg]
            if logical is not None or not (dtype.is_numeric or dtype.is_bool):
                raise self._refuse(node, arg, f"{logical.kind if logical else dtype} values; "
                                   "`ewm_sum` takes numbers and booleans")  # fmt: skip
            result = DType.FLOAT32 if dtype is DType.FLOAT32 else DType.FLOAT64
            value = tc.cast_plain(arg, result, strict=False)
            return self._record(Scan(func, value, node.options, keys), result)
        if func in ROLLING_MOMENTS:
            dtype = tc.types[arg]
            if logical is not None or not (dtype.is_integer or dtype.is_float):
                raise self._refuse(node, arg, f"{logical.kind if logical else dtype} values; "
                                   f"`{func}` takes numbers (cast to one first)")  # fmt: skip
            # polars: Float32 windows stay Float32, integers become Float64
            result = DType.FLOAT32 if dtype is DType.FLOAT32 else DType.FLOAT64
            value = tc.cast_plain(arg, result, strict=False)
            return self._record(Scan(func, value, node.options, keys), result)
        if func == "rolling_quantile":
            if logical is not None and logical.is_temporal:
                return self._over_physical(node, arg, logical)
            if logical is not None:
                raise self._refuse(node, arg, f"{logical.kind}s; rolling quantiles are of "
                                   "numbers and temporal values (cast to one first)")  # fmt: skip
            # polars: Float32 windows stay Float32, everything else becomes Float64
            result = DType.FLOAT32 if tc.types[arg] is DType.FLOAT32 else DType.FLOAT64
            value = tc.cast_plain(arg, result, strict=False)
            return self._record(Scan(func, value, node.options, keys), result)
        if func == "diff" and logical is not None and logical.is_temporal:
            # a duration, as `x - x.shift(n)` of dates, datetimes, durations and times is
            # typed (Duration[us] for dates, [ns] for times, the unit otherwise: polars')
            (n,) = node.options
            return tc.typed(Binary("sub", node.arg, Scan("shift", node.arg, (n, None),
                                                         node.keys)))  # fmt: skip
        if logical is not None:
            return self._logical(node, arg, keys)
        dtype = tc.types[arg]
        if func == "diff":
            (n,) = node.options
            if dtype is DType.BOOL:
                raise self._refuse(node, arg, "booleans; cast to an integer first")
            value = tc.cast_plain(arg, scan_result_type("diff", dtype), strict=False)
            shifted = self._shifted(value, n, keys)
            return self._record(Binary("sub", value, shifted), tc.types[value])
        if func == "pct_change":
            (n,) = node.options
            value = tc.cast_plain(arg, scan_result_type("pct_change", dtype), strict=False)
            t = tc.types[value]
            shifted = self._shifted(value, n, keys)
            change = self._record(Binary("sub", value, shifted), t)
            return self._record(Binary("truediv", change, shifted), t)
        if func == "shift":
            return self._shift(node, arg, keys)
        result = scan_result_type(func, dtype)
        if rolling_weights(func, node.options) is not None:
            # polars weighs floats: integers and booleans first become Float64
            result = DType.FLOAT32 if dtype is DType.FLOAT32 else DType.FLOAT64
        value = arg if func == "cum_count" else tc.cast_plain(arg, result, strict=False)
        return self._record(Scan(func, value, node.options, keys), result)

    def _rank(self, node: Scan, arg: Node, keys: KeySet, logical: Logical | None) -> Node:
        """``rank``: of the values themselves (strings and categories by their text).

        It reads the argument as a column of values, not as kernel codes, so it takes
        any type the host can sort (`colbridge.backends.scans.rank`).
        """
        if logical is not None and logical.kind == "enum":
            raise self._refuse(node, arg, "enums (ranked by category order in polars); "
                               "rank their codes with `.to_physical().rank()`, or their "
                               "text with `.cast(pl.String).rank()`")  # fmt: skip
        method = node.options[0]
        result = DType.FLOAT64 if method == "average" else DType.UINT32
        return self._record(Scan("rank", arg, node.options, keys), result)

    def _permuted(self, node: Scan, arg: Node, keys: KeySet, logical: Logical | None) -> Node:
        """``sort``, ``sort_by``, ``reverse`` (values moved, their type kept), ``arg_sort``.

        The host reads the argument's values (`colbridge.backends.scans.permuted`):
        temporal ones as their integers (the order is theirs), strings, categoricals
        and enums as text, moved with a dictionary of their own as ``to_string`` writes.
        ``arg_sort`` is UInt32 of any argument.
        """
        tc = self.tc
        if node.func == "arg_sort":
            return self._record(Scan("arg_sort", arg, node.options, keys), DType.UINT32)
        if logical is not None and logical.is_string:
            scan = Scan(node.func, arg, node.options, keys)
            self._record(scan, DType.INT32)
            return tc.mark_logical(scan, logical, ("scan", scan_column(scan)))
        value = arg.arg if isinstance(arg, Reinterpret) else arg
        scanned = self._record(Scan(node.func, value, node.options, keys), tc.types[value])
        return scanned if logical is None else tc.mark_logical(scanned, logical, None)

    def _rolling_rank(self, node: Scan, arg: Node, keys: KeySet,
                      logical: Logical | None) -> Node:  # fmt: skip
        """``rolling_rank``: of numbers, booleans and temporal values (their integers).

        Every integer and boolean is ranked as Int64 (UInt64 as it is), floats as they
        are: the scans' compute types; strings and categories are refused, as polars
        refuses them.
        """
        tc = self.tc
        if logical is not None and not logical.is_temporal:
            raise self._refuse(node, arg, f"{logical.kind}s; rolling ranks are of numbers, "
                               "booleans and temporal values (`rank` ranks strings)")  # fmt: skip
        value = arg.arg if isinstance(arg, Reinterpret) else arg  # a temporal's integers
        dtype = tc.types[value]
        compute = dtype if dtype in (DType.FLOAT32, DType.FLOAT64, DType.UINT64) else \
            DType.INT64  # the scans' compute types: every integer as it is, booleans 0/1
        value = tc.cast_plain(value, compute, strict=False)
        result = DType.FLOAT64 if node.options[3] == "average" else DType.UINT32
        return self._record(Scan("rolling_rank", value, node.options, keys), result)

    def _interpolate(self, node: Scan, arg: Node, keys: KeySet,
                     logical: Logical | None) -> Node:  # fmt: skip
        """``interpolate``: numbers (integers to Float64 when linear) and temporal integers.

        Strings and categories are refused: polars returns them unchanged in one engine
        and panics in another.
        """
        tc = self.tc
        if logical is not None and logical.is_string:
            raise self._refuse(node, arg, f"{logical.kind}s (there is nothing between two "
                               "strings); fill them with `fill_null(strategy=...)`")  # fmt: skip
        if logical is not None:  # in the integers, the result back in the type (polars)
            value = arg.arg if isinstance(arg, Reinterpret) else arg
            scanned = self._record(Scan("interpolate", value, node.options, keys),
                                   tc.types[value])  # fmt: skip
            return tc.mark_logical(scanned, logical, None)
        dtype = tc.types[arg]
        linear = node.options[0] == "linear"
        if dtype.is_bool and linear and not keys.exprs:
            return arg  # polars returns a boolean column as it is (its nulls kept)
        if dtype.is_bool:
            raise self._refuse(node, arg, "booleans per group or to the nearest value "
                               "(polars cannot interpolate them: it panics); cast to a "
                               "number first")  # fmt: skip
        result = DType.FLOAT64 if linear and not dtype.is_float else dtype
        return self._record(Scan("interpolate", arg, node.options, keys), result)

    def _by_spec(self, node: Scan, accepted: str) -> tuple[Any, ...]:
        """How the runtime reads a scan's ``by`` (`rolling_by_params`): refused by name else."""
        tc = self.tc
        by = tc.typed(node.keys.order_by[0])
        by_logical = tc.logical.get(by)
        by_type = tc.types[by]
        if by_logical is not None and by_logical.kind == "date":
            return ("date", "us", None)
        if by_logical is not None and by_logical.kind == "datetime":
            return ("datetime", by_logical.unit, by_logical.tz)
        if by_logical is None and by_type in (DType.INT32, DType.INT64, DType.UINT32,
                                              DType.UINT64):  # fmt: skip
            return ("int", "ns", None)
        shown = str(by_logical) if by_logical is not None else str(by_type)
        msg = (f"`{node!r}`: `by` of type {shown} is not supported (polars takes {accepted}); "
               "cast it to one first")  # fmt: skip
        raise InvalidOperationError(msg)

    def _ewm_mean_by(self, node: Scan, arg: Node, keys: KeySet,
                     logical: Logical | None) -> Node:  # fmt: skip
        """``ewm_mean_by``: Float64 (Float32 stays) of numbers, a constant half-life.

        As polars: values of Int32, Int64, UInt32, UInt64 or a float type; ``by`` a
        Date, Datetime, Int32, Int64, UInt32 or UInt64; the half-life is a fixed number
        of nanoseconds (days count 24 hours, but not under a time zone). The typed
        options are that number and how the runtime reads ``by``.
        """
        tc = self.tc
        spec = self._by_spec(node, "Date, Datetime, Int64, Int32, UInt64 or UInt32")
        duration = parse_duration(node.options[0])
        if spec[2] not in (None, "UTC") and (duration.days or duration.weeks):
            msg = (f"`{node!r}`: expected `half_life` to be a constant duration, and a day of "
                   f"time zone {spec[2]!r} is not; give it in hours (e.g. '24h')")  # fmt: skip
            raise InvalidOperationError(msg)
        half_life = (duration.weeks * 7 + duration.days) * 86_400_000_000_000 + duration.nsecs
        dtype = tc.types[arg]
        numbers = (DType.INT32, DType.INT64, DType.UINT32, DType.UINT64)
        if logical is not None or not (dtype.is_float or dtype in numbers):
            raise self._refuse(node, arg, f"{logical.kind if logical else dtype} values; "
                               "polars takes Float64, Float32, Int64, Int32, UInt64 or "
                               "UInt32 (cast to one first)")  # fmt: skip
        result = DType.FLOAT32 if dtype is DType.FLOAT32 else DType.FLOAT64
        value = tc.cast_plain(arg, result, strict=False)
        return self._record(Scan("ewm_mean_by", value, (half_life, spec), keys), result)

    def _rolling_by(self, node: Scan, arg: Node, keys: KeySet, logical: Logical | None) -> Node:
        """A time-based window (``rolling_*_by``): its ``by`` and window checked, values cast.

        As polars: ``by`` is a Date, a Datetime, or an Int32/Int64/UInt32/UInt64 (an
        index, whose window is written ``"<n>i"``, the only unit temporal ``by`` refuses);
        sums keep numbers (booleans as UInt32, 8- and 16-bit integers as Int64), means,
        variances and quantiles are Float64 (Float32 stays), min and max keep the type
        (dates, datetimes, durations and times too: over their integers); variances and
        deviations of dates, datetimes and times are Float64 of their integers; means,
        medians and quantiles of temporal values are the Float64 result over their
        integers truncated back to the type (a date's to Datetime[us]), as polars'
        ``roll_by_with_temporal_conversion``. Sums of temporal values, the variance of
        durations, strings and categoricals are refused as polars refuses them. The typed
        scan's options end with how the runtime reads ``by`` (`rolling_by_params`).
        """
        tc = self.tc
        func = node.func
        spec = self._by_spec(node, "Date, Datetime, Int64, Int32, UInt64 or UInt32")
        params = rolling_by_params(func, node.options)
        duration = parse_duration(params["window"])
        if spec[0] == "int" and not duration.parsed_int:
            msg = (
                f"`{node!r}`: `window_size` duration must be a parsed integer (i.e. use "
                f"'2i', not '2d') when working with a numeric column"
            )
            raise InvalidOperationError(msg)
        if spec[0] != "int" and duration.parsed_int:
            msg = (
                f"`{node!r}`: `window_size` duration may not be a parsed integer (i.e. use "
                f"'2d', not '2i') when working with a temporal column"
            )
            raise InvalidOperationError(msg)
        options = (*node.options, spec)
        base = func[len("rolling_"):-len("_by")]
        if logical is not None:
            if logical.is_temporal and base in ("min", "max"):
                value = arg.arg if isinstance(arg, Reinterpret) else arg
                moved = self._record(Scan(func, value, options, keys), tc.types[value])
                return tc.mark_logical(moved, logical, None)
            if logical.is_temporal and base in ("var", "std") and logical.kind != "duration":
                physical = Function("to_physical", (node.arg,))
                return tc.typed(Scan(func, physical, node.options, node.keys))
            if logical.is_temporal and base in ("mean", "quantile"):
                # polars: the Float64 result over the integers, truncated back to the type
                # (a date's days as microseconds of a Datetime[us]), as `rolling_mean`
                physical = Function("to_physical", (node.arg,))
                scanned: Node = Scan(func, physical, node.options, node.keys)
                target = logical
                if logical.kind == "date":
                    scanned = Binary("mul", scanned, Literal(_MICROS_PER_DAY))
                    target = Logical("datetime", "us")
                whole = Cast(scanned, DType.INT64, strict=False)
                return tc.typed(Function("cast", (whole,), (target, False)))
            raise self._refuse(node, arg, f"{logical} values (polars refuses them); cast "
                               "them to numbers first (`to_physical()` or "
                               "`cast(pl.Float64)`)")  # fmt: skip
        dtype = tc.types[arg]
        result: DType
        if base == "sum":
            result = DType.UINT32 if dtype is DType.BOOL else \
                DType.INT64 if dtype in _SMALL_INTS else dtype  # fmt: skip
        elif base in ("min", "max"):
            result = dtype
        else:
            result = DType.FLOAT32 if dtype is DType.FLOAT32 else DType.FLOAT64
        value = arg if result is dtype else tc.cast_plain(arg, result, strict=False)
        return self._record(Scan(func, value, options, keys), result)

    def _shifted(self, value: Node, n: int, keys: KeySet) -> Node:
        """``value.shift(n)`` for ``diff`` and ``pct_change``, a widening cast after the shift.

        Both widen without raising (``strict=False``): the cast maps each value, and
        null to null (a value that does not fit to null), wherever its row goes, so
        ``x.cast(t).shift(n)`` is ``x.shift(n).cast(t)``: a shift of the column itself,
        which the kernels read in place (`colbridge.plan.planner.Segment.lagged`), and
        the diff of unsigned integers and the pct_change of integers need no shifted copy.
        """
        tc = self.tc
        if isinstance(value, Cast) and not value.strict and isinstance(value.arg, Column):
            moved = self._record(Scan("shift", value.arg, (n, None), keys),
                                 tc.types[value.arg])  # fmt: skip
            return self._record(Cast(moved, value.dtype, value.strict), value.dtype)
        return self._record(Scan("shift", value, (n, None), keys), tc.types[value])

    def _record(self, node: Node, dtype: DType) -> Node:
        self.tc.types[node] = dtype
        return node

    def _shift(self, node: Scan, arg: Node, keys: KeySet) -> Node:
        """``shift``: the supertype of the column and the fill value, as polars types it."""
        tc = self.tc
        n, fill = node.options
        dtype = tc.types[arg]
        if fill is None:
            return self._record(Scan("shift", arg, (n, None), keys), dtype)
        lit = tc.type_dynamic_against(Literal(fill), dtype, node)
        st, strict = tc.merge_number_type(dtype, tc.types[lit], node)
        # polars casts the column to the supertype without raising: a UInt64 value
        # above Int64's range shifted with a negative fill becomes null (`fill_null`
        # raises there, in polars and here)
        value = tc.cast_branch(arg, st, False)
        converted = tc.cast_branch(lit, st, strict)
        if not isinstance(converted, Literal):  # pragma: no cover - a literal folds
            msg = f"`{node!r}`: fill value {fill!r} does not convert to {st}"
            raise SchemaError(msg)
        return self._record(Scan("shift", value, (n, converted.value), keys), st)

    def _logical(self, node: Scan, arg: Node, keys: KeySet) -> Node:
        """A scan over dates, times or durations: only those that keep the values' meaning."""
        tc = self.tc
        logical = tc.logical[arg]
        func = node.func
        if func == "cum_count":
            return self._record(Scan(func, arg, node.options, keys), DType.UINT32)
        if rolling_weights(func, node.options) is not None:
            raise self._refuse(node, arg, f"weights over {logical} (weights multiply "
                               "values); cast to a number first (`to_physical()` or "
                               "`cast(pl.Float64)`)")  # fmt: skip
        if logical.is_temporal and func in _OVER_PHYSICAL:
            return self._over_physical(node, arg, logical)
        comparable = func in STRING_COMPARISONS and logical.kind == "string"
        if logical.is_string and func not in _MOVE_ONLY and not comparable:
            # codes are numbered by first appearance, not by value; polars compares
            # strings (`cum_min`, `cum_max`) but not categoricals
            raise self._refuse(node, arg, f"{logical.kind}s (it compares or adds values); "
                               "cast to a number first, or use `shift` and the fills, "
                               "which only move values" + ("; `cum_min`/`cum_max` take "
                               "strings: cast with `.cast(pl.String)`" if func in
                               STRING_COMPARISONS else ""))  # fmt: skip
        # a running total of durations is a duration (polars adds them; dates do not add)
        adds_durations = func == "cum_sum" and logical.kind == "duration"
        if func == "shift" and node.options[1] is not None:
            if logical.kind == "string":
                return self._string_fill(node)
            self._check_physical_fill(node, arg, logical)
        elif func not in _KEEP_LOGICAL and not adds_durations:
            raise self._refuse(node, arg, f"{logical}; cast to an integer first "
                               "(`to_physical()`) and back")  # fmt: skip
        value = arg.arg if isinstance(arg, Reinterpret) else arg
        dtype = tc.types[value]
        spec = tc.dicts.get(arg)
        if func in STRING_COMPARISONS and spec is not None and spec != tc.dicts.get(value, spec):
            # strings compared through a function of each value (`s.str.to_lowercase()`):
            # the scan reads those strings' codes, not ``value``'s, so that it is another
            # scan than the one of ``value`` itself (another order of the same codes)
            value = arg
        scan = Scan(func, value, node.options, keys)
        scanned = self._record(scan, dtype)
        if logical.is_string:
            # the moved codes index a dictionary the scan makes (in a stream, the strings
            # carried in from the batch before come first) from the one ``value``'s codes
            # index, which ``arg`` may read through a string function of each value
            # (``s.str.to_uppercase()`` is the codes of ``s``)
            assert spec is not None
            base = tc.dicts.get(value, spec)
            own = ("scan", scan_column(scan))
            tc.scan_dicts[scanned] = base
            tc.dicts[scanned] = own  # the codes' own dictionary, for a scan of them
            spec = _replaced(spec, base, own)
        return tc.mark_logical(scanned, logical, spec)

    def _string_fill(self, node: Scan) -> Node:
        """A number or bool filling a shift of strings: its text, as polars casts it.

        (``s.shift(1, fill_value=3)`` fills with ``"3"``, ``2.5`` with ``"2.5"``, ``True``
        with ``"true"``): the rows shifted in take it, as they take a string fill.
        """
        n, fill = node.options
        text = Function("cast", (Literal(fill),), (STRING, True))
        return self.tc.typed(shift_with_fill(node.arg, n, text, node.keys))

    def _check_physical_fill(self, node: Scan, arg: Node, logical: Logical) -> None:
        """A number filling a shift of dates, datetimes, durations or times.

        polars casts an integer to the column's type: it is the column's integer (days
        of a date, units of a datetime or duration, nanoseconds of a time), so the scan
        moves the integers and fills with it. Anything else is refused.
        """
        fill = node.options[1]
        if not logical.is_temporal or isinstance(fill, bool) or not isinstance(fill, int):
            raise self._refuse(node, arg, f"{logical} with the fill value {fill!r}; give a "
                               "fill of the column's kind (a date, a string, ...) or "
                               "cast the column first")  # fmt: skip
        physical = self.tc.types[arg.arg if isinstance(arg, Reinterpret) else arg]
        info = np.iinfo(physical.numpy)  # a temporal value's integers
        if not info.min <= fill <= info.max:
            raise self._refuse(node, arg, f"{logical} with the fill value {fill!r}, beyond "
                               f"its {physical} integers")  # fmt: skip

    def _over_physical(self, node: Scan, arg: Node, logical: Logical) -> Node:
        """An ordered operation over a temporal column's integers, as polars computes it.

        ``pct_change``, ``ewm_mean``, ``ewm_var``, ``ewm_std``, ``rolling_std`` and
        ``rolling_var`` are Float64 of
        the integers (a date's days, a datetime's or duration's units, a time's
        nanoseconds); polars refuses the deviation and variance of durations.
        ``rolling_mean`` and ``rolling_quantile`` (``rolling_median``) are the Float64
        result over the integers truncated toward zero, back in the column's type (so
        a datetime of nanoseconds keeps Float64's precision, as in polars); a date's is
        a Datetime[us] (days times 86,400,000,000, then truncated).
        """
        func = node.func
        if logical.kind == "duration" and func in ("rolling_std", "rolling_var", "ewm_std",
                                                   "ewm_var"):
            raise self._refuse(node, arg, f"{logical} (polars has no deviation of "
                               "durations); cast to an integer first "
                               "(`to_physical()`)")  # fmt: skip
        physical = Function("to_physical", (node.arg,))
        scan = Scan(func, physical, node.options, node.keys)
        if func not in ("rolling_mean", "rolling_quantile"):
            return self.tc.typed(scan)
        mean: Node = scan
        target = logical
        if logical.kind == "date":
            mean = Binary("mul", scan, Literal(_MICROS_PER_DAY))
            target = Logical("datetime", "us")
        whole = Cast(mean, DType.INT64, strict=False)
        return self.tc.typed(Function("cast", (whole,), (target, False)))

    def _refuse(self, node: Scan, arg: Node, what: str) -> Exception:
        column = arg.arg if isinstance(arg, Reinterpret) else arg
        where = ""
        if isinstance(column, Column) and column.name in self.tc.schema:
            where = f" (column `{column.name}` has type {self.tc.schema[column.name].arrow_type})"
        msg = f"`{node!r}`{where}: `{node.func}` is not supported for {what}"
        return UnsupportedTypeError(msg)
