"""Type checking of dates, datetimes, durations, times, strings and categories.

Stage: planning. `colbridge.plan.typecheck.TypeChecker` hands every node that
touches a logical type (`colbridge.types.logical`) to `LogicalTyping`, which
lowers it to the nodes kernels already know, so every target runs it unchanged:

* temporal values are integers with a unit; fields come from integer
  arithmetic (days → civil date by Howard Hinnant's algorithm), with constants
  written into the kernel (`Const`: a division by a constant is a multiply);
  a time-zoned datetime's fields are local: its offset is read from the zone's
  transition table (`Search` then `Gather`);
* a string value is a code into a dictionary the runtime builds once per
  compute (`DictSpec`); a predicate or mapping over strings is a lookup table
  computed once per distinct value with ``pyarrow.compute`` (`Gather`), so no
  string enters a kernel. Categories compare by label, never by code.

Every result is wrapped in `Reinterpret` carrying its logical type, so a typed
node's meaning is part of its identity.

A `DictSpec` says how the runtime builds a dictionary: ``("col", name)`` (the
column's own, after dictionary-encoding a plain string column), ``("lit",
values)``, ``("union", specs)`` (values in order, duplicates dropped: the
literals of a ``("lit", ...)`` first spec keep their positions), ``("enum",
specs)`` (the categories of enums that must all have the same), ``("map",
function, spec, *params)`` (a string function applied to each value:
`colbridge.types.string_maps`) or ``("scan",
name)`` (the dictionary of the strings a ``shift`` or fill moved, held by the
scan's result `name`: see `colbridge.plan.ordered_typing`).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from colbridge.errors import (
    ColumnNotFoundError,
    ComputeError,
    InvalidOperationError,
    SchemaError,
    UnsupportedOperationError,
    UnsupportedTypeError,
)
from colbridge.expr.nodes import (
    COMPARISONS,
    Agg,
    Binary,
    Cast,
    Check,
    Coalesce,
    Column,
    Const,
    Constant,
    Function,
    Gather,
    GroupAgg,
    Literal,
    Narrow,
    Node,
    Reinterpret,
    Scan,
    Search,
    TableRef,
    Unary,
    When,
)
from colbridge.plan.ordered_typing import scan_column
from colbridge.types import DType, dtype_from_arrow
from colbridge.types.business_days import FIRST_MONDAY
from colbridge.types.chrono import (
    inferred_unit,
    says_a_time,
    unreadable_specifier,
    zone_specifier,
)
from colbridge.types.durations import parse_duration_in
from colbridge.types.formatting import (
    CODE_POINT,
    format_as_strings,
    format_needs,
    parse_chrono_format,
)
from colbridge.types.logical import (
    DATE,
    STRING,
    TIME,
    TIME_UNITS,
    UNIT_PER_SECOND,
    Logical,
    coarser_unit,
    logical_from_arrow,
    parse_logical,
)
from colbridge.types.string_maps import STRING_FUNCTIONS
from colbridge.types.timezones import check_zone

if TYPE_CHECKING:
    from colbridge.plan.typecheck import ColumnType, TypeChecker

__all__ = ["ENUM_CAST_FAILED", "DictSpec", "LogicalTyping", "dict_columns"]

DictSpec = tuple[Any, ...]

#: in the error of an enum compared with strings that are not all its categories: the
#: runtime names those strings (`colbridge.runtime.tables.enum_failures_named`)
ENUM_CAST_FAILED = "comparing an Enum with a String casts the strings to the enum"

I8, I16, I32, I64 = DType.INT8, DType.INT16, DType.INT32, DType.INT64
U32, F64, BOOL = DType.UINT32, DType.FLOAT64, DType.BOOL

_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_MICRO = _dt.timedelta(microseconds=1)
_NS_PER_DAY = 86_400 * 1_000_000_000

#: Integer results of ``dt`` fields, as polars types them.
_FIELD_TYPES = {
    "year": I32, "iso_year": I32, "century": I32, "millennium": I32, "quarter": I8,
    "month": I8, "week": I8, "weekday": I8, "day": I8, "ordinal_day": I16,
    "days_in_month": I8, "hour": I8, "minute": I8, "second": I8, "millisecond": I32,
    "microsecond": I32, "nanosecond": I32,
}  # fmt: skip
_DATE_FIELDS = frozenset({
    "year", "iso_year", "century", "millennium", "quarter", "month", "week", "weekday", "day",
    "ordinal_day", "days_in_month", "is_leap_year",
})  # fmt: skip
_TIME_FIELDS = frozenset({"hour", "minute", "second", "millisecond", "microsecond", "nanosecond"})
#: ``total_*`` of a duration: how many nanoseconds one of it is.
_TOTALS = {
    "total_days": _NS_PER_DAY, "total_hours": 3_600 * 10**9, "total_minutes": 60 * 10**9,
    "total_seconds": 10**9, "total_milliseconds": 10**6, "total_microseconds": 10**3,
    "total_nanoseconds": 1,
}  # fmt: skip
#: Units of ``every`` in ``truncate``, in nanoseconds (calendar units apart).
_EVERY_UNITS = {"ns": 1, "us": 1_000, "ms": 10**6, "s": 10**9, "m": 60 * 10**9,
                "h": 3_600 * 10**9}  # fmt: skip
_EVERY = re.compile(r"(\d+)(ns|us|ms|mo|s|m|h|d|w|q|y)")


def _is_shift_fill(node: Node) -> bool:
    """True for the ``when`` that `Expr.shift` writes for a fill that is not a number."""
    return isinstance(node, When) and isinstance(node.condition, Scan) \
        and node.condition.func == "shift_in_range"  # fmt: skip


#: the rule `str.from_code_point` states where a value breaks it
_NOT_A_CODE_POINT = ("invalid Unicode code point (0 to 1114111 (0x10FFFF), not the surrogates "
                     "55296 to 57343); null such values first, e.g. with `when(...).then(...)`")
#: `date_diff`'s units of the calendar (counted on local dates) ...
_CALENDAR_UNITS = frozenset({"year", "quarter", "month", "week", "day"})
#: ... and of the clock, in nanoseconds
_DIFF_UNIT_NS = {"hour": 3_600 * 10**9, "minute": 60 * 10**9, "second": 10**9,
                 "millisecond": 10**6, "microsecond": 10**3, "nanosecond": 1}  # fmt: skip


def _ns_per_unit(unit: str) -> int:
    return 10**9 // UNIT_PER_SECOND[unit]


def _per_day(unit: str) -> int:
    return 86_400 * UNIT_PER_SECOND[unit]


def dict_columns(spec: DictSpec) -> set[str]:
    """The columns whose dictionaries a `DictSpec` is built from."""
    if spec[0] == "col":
        return {spec[1]}
    if spec[0] in ("union", "enum"):
        out: set[str] = set()
        for part in spec[1]:
            out |= dict_columns(part)
        return out
    if spec[0] == "map":
        return dict_columns(spec[2])
    return set()


def _joinable(side: Node, logical: Logical | None) -> bool:
    """A side of ``+`` that polars joins as a string: a string-like column, a text, a null."""
    text = isinstance(side, Constant) and isinstance(side.value, str)
    null = isinstance(side, Literal) and side.value is None
    return text or null or (logical is not None and logical.is_string)


#: list-to-list functions between a `str.split` and the value taken of its parts
_LIST_STEPS = frozenset({"list.slice", "list.head", "list.tail", "list.reverse", "list.sort",
                         "list.unique", "list.gather_every", "list.drop_nulls"})  # fmt: skip
#: the list functions whose value is a number or a flag: (type, whether it can be null)
_LIST_NUMBERS: dict[str, tuple[DType, bool]] = {
    "len": (U32, False), "n_unique": (U32, False), "count_matches": (U32, False),
    "arg_min": (U32, True), "arg_max": (U32, True), "contains": (BOOL, False),
}  # fmt: skip


def _not_a_column(node: Node, *, listed: bool) -> UnsupportedOperationError:
    """The error for a list (``listed``) or a struct where a column is wanted."""
    what = "a List(String)" if listed else "a Struct"
    takes = ("`.list.get(i)`, `.list.len()`, `.list.join(sep)`, ..." if listed
             else "`.struct.field(\"field_0\")`")  # fmt: skip
    return UnsupportedOperationError(
        f"`{node!r}` is {what}, and colbridge has no list or struct columns: take one value "
        f"of each row's parts ({takes}), or compute it in polars"
    )


def _group_number(node: Function, pattern: str) -> int:
    """The group ``struct.field(name)`` of ``str.extract_groups(pattern)`` names.

    polars names a field after its group's name, else its number (``"1"``).
    """
    from colbridge.types.regex import group_fields

    fields = group_fields(pattern)
    if node.options[0] not in fields:
        msg = (f"`{node!r}`: the struct has no field {node.options[0]!r}; its fields are "
               f"{list(fields)}")  # fmt: skip
        raise ColumnNotFoundError(msg)
    return fields[node.options[0]]


def _field_index(node: Function, split: Function) -> int:
    """The part ``struct.field(name)`` names: polars calls them ``field_0``, ``field_1``, ..."""
    fields = split.options[1] + 1 if split.name == "str.split_exact" else split.options[1]
    names = [f"field_{k}" for k in range(fields)]
    name = node.options[0]
    if name not in names:
        msg = f"`{node!r}`: the struct has no field {name!r}; its fields are {names}"
        raise ColumnNotFoundError(msg)
    return names.index(name)


class LogicalTyping:
    """The logical-type rules of one `TypeChecker` (see the module docstring)."""

    def __init__(self, tc: TypeChecker) -> None:
        self.tc = tc

    # -- typed-node helpers -------------------------------------------------------------
    def of(self, node: Node) -> Logical | None:
        """The logical type of a typed node, or None for plain numbers and booleans."""
        return self.tc.logical.get(node)

    def _kind(self, node: Node) -> object:
        """What a typed node is, for messages: its logical type, dtype, or "a number"."""
        return self.of(node) or self.tc.types.get(node) or "a number"

    def mark(self, node: Node, logical: Logical | None, spec: DictSpec | None = None) -> Node:
        """``node`` read as ``logical`` (wrapped, so the meaning is part of its identity)."""
        out = Reinterpret(node, logical, spec)
        self.tc.types[out] = self.tc.types[node]
        if logical is not None:
            self.tc.logical[out] = logical
        if spec is not None:
            self.tc.dicts[out] = spec
        return out

    def rec(self, node: Node, dtype: DType) -> Node:
        """Record ``node``'s kernel type."""
        self.tc.types[node] = dtype
        return node

    def const(self, value: int, dtype: DType = I64) -> Node:
        """A constant written into the kernel text."""
        return self.rec(Const(value, dtype), dtype)

    def i64(self, node: Node | int) -> Node:
        """``node`` as int64 (a Python int becomes a constant)."""
        if isinstance(node, int):
            return self.const(node)
        t = self.tc.types[node]
        if t is I64:
            return node
        return self.rec(Cast(node, I64, strict=False), I64)  # widening: cannot fail

    def op(self, op: str, a: Node | int, b: Node | int) -> Node:
        """``a <op> b`` in int64 (comparisons give booleans)."""
        left, right = self.i64(a), self.i64(b)
        return self.rec(Binary(op, left, right), BOOL if op in COMPARISONS else I64)

    def add(self, a: Node | int, b: Node | int) -> Node:
        """``a + b`` in int64."""
        return self.op("add", a, b)

    def sub(self, a: Node | int, b: Node | int) -> Node:
        """``a - b`` in int64."""
        return self.op("sub", a, b)

    def mul(self, a: Node | int, b: Node | int) -> Node:
        """``a * b`` in int64 (wrapping)."""
        if isinstance(b, int) and b == 1:
            return self.i64(a)
        return self.op("mul", a, b)

    def fdiv(self, a: Node | int, k: int) -> Node:
        """Floor division by a positive constant."""
        if k == 1:
            return self.i64(a)
        return self.op("floordiv", a, k)

    def fmod(self, a: Node | int, k: int) -> Node:
        """Remainder of the floor division by a positive constant (0 <= r < k)."""
        return self.op("mod", a, k)

    def both(self, op: str, a: Node, b: Node) -> Node:
        """A logical ``and``/``or`` of two booleans."""
        return self.rec(Binary(op, a, b), BOOL)

    def to_int(self, flag: Node) -> Node:
        """A boolean as 0 or 1 (int64)."""
        return self.rec(Cast(flag, I64, strict=False), I64)  # booleans convert to 0 or 1

    def select(self, cond: Node, a: Node | int, b: Node | int) -> Node:
        """``a`` where ``cond`` holds, else ``b`` (int64)."""
        return self.rec(When(cond, self.i64(a), self.i64(b)), I64)

    def narrow(self, node: Node, dtype: DType) -> Node:
        """An int64 known to fit in ``dtype``, converted."""
        if dtype is I64:
            return node
        return self.rec(Narrow(node, dtype), dtype)

    # -- leaves -------------------------------------------------------------------------
    def column(self, node: Column, info: ColumnType) -> Node | None:
        """A temporal or string column, typed; None when its type is not logical."""
        arrow_type = info.arrow_type
        if not isinstance(arrow_type, pa.DataType):
            return None
        if (pa.types.is_timestamp(arrow_type) or pa.types.is_duration(arrow_type)) and (
            arrow_type.unit == "s"
        ):
            msg = (
                f"column `{node.name}` has type {arrow_type}: polars has no second unit and "
                "neither do colbridge expressions; cast it to milliseconds in the source, e.g. "
                "`arr.cast(pa.timestamp('ms'))`"
            )
            raise SchemaError(msg)
        logical = logical_from_arrow(arrow_type)
        if logical is None:
            return None
        self.tc.logical[node] = logical
        if logical.is_temporal:
            return self.rec(node, logical.physical)
        code = I32
        if pa.types.is_dictionary(arrow_type):
            found = dtype_from_arrow(arrow_type.index_type)
            code = found if found is not None else I32
        self.tc.dicts[node] = ("col", node.name)
        return self.rec(node, code)

    def constant(self, node: Constant) -> Node:
        """A Python date, datetime, time, timedelta or string constant, typed."""
        value = node.value
        if isinstance(value, str):
            self.tc.logical[node] = STRING
            self.tc.dicts[node] = ("lit", (value,))
            return self.rec(node, I32)
        if isinstance(value, _dt.datetime):
            if value.tzinfo is None:
                us = (value - _EPOCH) // _MICRO
                logical = Logical("datetime", "us")
            else:
                us = (value - _EPOCH_UTC) // _MICRO
                key = getattr(value.tzinfo, "key", None)
                # polars keeps a zone's name and turns a fixed offset into UTC
                logical = Logical("datetime", "us", check_zone(key) if key else "UTC")
            return self.mark(self.literal(us, I64), logical)
        if isinstance(value, _dt.date):
            return self.mark(self.literal((value - _EPOCH_DATE).days, I32), DATE)
        if isinstance(value, _dt.time):
            seconds = (value.hour * 60 + value.minute) * 60 + value.second
            return self.mark(self.literal(seconds * 10**9 + value.microsecond * 1000, I64), TIME)
        if isinstance(value, _dt.timedelta):
            us = value // _MICRO
            if not -(2**63) <= us < 2**63:  # polars: milliseconds where microseconds overflow
                ms = value // _dt.timedelta(milliseconds=1)
                return self.mark(self.literal(ms, I64), Logical("duration", "ms"))
            return self.mark(self.literal(us, I64), Logical("duration", "us"))
        msg = f"cannot use {type(value).__name__} value {value!r} as a literal"
        raise SchemaError(msg)

    def literal(self, value: int, dtype: DType) -> Node:
        """A typed number passed to the kernel as an argument (dates differ per plan)."""
        return self.rec(Literal(value, dtype), dtype)

    # -- unit conversions ---------------------------------------------------------------
    def to_unit(self, node: Node, src: str, dst: str, *, duration: bool = False) -> Node:
        """A datetime or duration value in another unit, as polars converts.

        To a coarser unit a datetime is floored and a duration truncated toward zero.
        """
        if src == dst:
            return node
        if TIME_UNITS.index(src) < TIME_UNITS.index(dst):
            ratio = UNIT_PER_SECOND[src] // UNIT_PER_SECOND[dst]
            return self.tdiv(node, ratio) if duration else self.fdiv(node, ratio)
        return self.mul(node, UNIT_PER_SECOND[dst] // UNIT_PER_SECOND[src])

    def tdiv(self, a: Node, k: int) -> Node:
        """Division by a positive constant toward zero (the floor, plus one where needed)."""
        q = self.fdiv(a, k)
        inexact = self.both("and", self.op("ne", self.fmod(a, k), 0), self.op("lt", a, 0))
        return self.add(q, self.to_int(inexact))

    def as_datetime(self, node: Node, logical: Logical, unit: str) -> Node:
        """A date or datetime value as a datetime in ``unit`` (a date is its midnight)."""
        if logical.kind == "date":  # a midnight beyond the unit's range is null, as polars
            return self.widen(self.i64(node), _per_day(unit), False, Logical("datetime", unit),
                              node)  # fmt: skip
        return self.to_unit(node, logical.unit, unit)

    def local(self, node: Node, logical: Logical) -> Node:
        """A datetime's local wall-clock value: UTC plus the zone's offset at that instant."""
        tz = logical.tz
        if tz is None or tz == "UTC":
            return node
        from colbridge.types.timezones import transitions

        offsets = transitions(tz)[1]
        if len(set(offsets)) == 1:
            return self.add(node, offsets[0] * UNIT_PER_SECOND[logical.unit])
        return self.add(node, self.offset_at(node, tz, logical.unit))

    def offset_at(self, value: Node, tz: str, unit: str, table: str = "offsets",
                  in_unit: str | None = None) -> Node:  # fmt: skip
        """The UTC offset of zone ``tz`` at the instant ``value`` (in ``unit``).

        ``table="daylight"``: instead, 1 where the zone keeps daylight saving time
        there, else 0; ``"saving"``: the offset's daylight saving part (a transition's
        entry of any table, found by one search). ``in_unit``: the offset in that unit
        (default ``unit``).
        """
        zone = ("zone", tz)
        where = self.rec(Search(TableRef(zone, ("instants", unit), I64), value), I32)
        return self.rec(Gather(TableRef(zone, (table, in_unit or unit), I64), where), I64)

    def zone_offset(self, op: str, arg: Node, node: Node) -> Node:
        """``dt.base_utc_offset`` / ``dt.dst_offset``: a zoned value's offset parts (ms).

        The daylight saving part from the zone data (`offset_parts`), the base
        offset the whole offset less it; a Duration in milliseconds, as polars gives.
        """
        logical = self.of(arg)
        if logical is None or logical.kind != "datetime" or logical.tz is None:
            got = logical if logical is not None else self.tc.types.get(arg, "a number")
            msg = (f"`{node!r}` needs a time-zone-aware Datetime, got {got}; give it a zone "
                   "first with `.dt.replace_time_zone(...)`")  # fmt: skip
            raise InvalidOperationError(msg)
        duration = Logical("duration", "ms")
        saving = self.offset_at(arg, logical.tz, logical.unit, "saving", in_unit="ms")
        if op == "dst_offset":
            return self.mark(saving, duration)
        whole = self.offset_at(arg, logical.tz, logical.unit, in_unit="ms")
        return self.mark(self.sub(whole, saving), duration)

    def _placings(self, local: Node, tz: str, unit: str) -> tuple[Node, ...]:
        """A wall-clock time's two candidate instants in ``tz`` and which of them hold.

        The offsets a day before and after are the candidates (zones change offset
        months apart); a candidate holds where the zone really has that offset at it.
        Returns ``early``, ``late``, ``ok_early``, ``ok_late`` and ``both`` (two
        different instants hold: the time is ambiguous).
        """
        day = _per_day(unit)
        before = self.offset_at(self.sub(local, day), tz, unit)
        after = self.offset_at(self.add(local, day), tz, unit)
        early, late = self.sub(local, before), self.sub(local, after)
        ok_early = self.op("eq", self.offset_at(early, tz, unit), before)
        ok_late = self.op("eq", self.offset_at(late, tz, unit), after)
        both = self.both("and", self.both("and", ok_early, ok_late), self.op("ne", early, late))
        return early, late, ok_early, ok_late, both

    def localize(self, local: Node, tz: str, unit: str, node: Node, *, ambiguous: str = "raise",
                 non_existent: str = "raise", original: Node | None = None) -> Node:  # fmt: skip
        """The UTC instant of a wall-clock time in zone ``tz``, resolved as polars resolves it.

        The offsets a day before and after are the candidates (zones change offset
        months apart); a candidate is valid where the zone really has that offset at it.
        Both valid: the time is ambiguous (``earliest``, ``latest``, ``raise``, or with
        ``original`` the interpretation the original instant had, as polars' truncate
        does); neither: it does not exist (``raise``, ``null``, or ``earliest``: read
        with the offset before the gap where daylight saving starts there, as polars'
        truncate reads a bucket's start that falls in one, such as 02:00 on a
        spring-forward day; a gap of a change of standard offset still raises).
        """
        if tz == "UTC":
            return local
        day = _per_day(unit)
        early, late, ok_early, ok_late, both = self._placings(local, tz, unit)
        unique = self.select(ok_early, early, late)
        if original is not None:
            o_local = self.local(original, Logical("datetime", unit, tz))
            was_early = self.op("eq", self.offset_at(original, tz, unit),
                                self.offset_at(self.sub(o_local, day), tz, unit))  # fmt: skip
            value = self.select(both, self.select(was_early, early, late), unique)
        elif ambiguous == "latest":
            value = self.select(ok_late, late, early)
        else:
            value = unique
        missing = self.rec(Unary("not", self.both("or", ok_early, ok_late)), BOOL)
        if non_existent == "null":
            value = self.rec(When(missing, self.tc.null_of(I64), value), I64)
        elif non_existent == "earliest":
            dst_before = self.offset_at(self.sub(local, day), tz, unit, "daylight")
            dst_after = self.offset_at(self.add(local, day), tz, unit, "daylight")
            starts = self.both("and", self.op("eq", dst_before, 0), self.op("eq", dst_after, 1))
            value = self.select(self.both("and", missing, starts), early, value)
            missing = self.both("and", missing, self.rec(Unary("not", starts), BOOL))
        # a kernel holds one message per failure kind: one check says what can fail
        failed: list[Node] = []
        what = []
        if original is None and ambiguous == "raise":
            failed.append(both)
            what.append("is ambiguous (pass `ambiguous='earliest'` or `'latest'`)")
        if non_existent in ("raise", "earliest"):
            failed.append(missing)
            what.append("does not exist, falling in a daylight saving gap (pass "
                        "`non_existent='null'` for null there)")  # fmt: skip
        if not failed:
            return value
        bad = failed[0] if len(failed) == 1 else self.both("or", failed[0], failed[1])
        msg = f"`{node!r}`: a local time in time zone {tz!r} " + " or ".join(what)
        return self.rec(Check(value, self.rec(Unary("not", bad), BOOL), msg), I64)

    # -- the civil calendar (Howard Hinnant's algorithms) -------------------------------
    def civil(self, days: Node) -> dict[str, Node]:
        """Year, month, day and the March-based day of year of a day count."""
        z = self.add(days, 719_468)
        era = self.fdiv(z, 146_097)
        doe = self.sub(z, self.mul(era, 146_097))  # [0, 146096]
        yoe = self.fdiv(self.sub(self.add(self.sub(doe, self.fdiv(doe, 1460)),
                                          self.fdiv(doe, 36_524)),
                                 self.fdiv(doe, 146_096)), 365)  # fmt: skip
        doy = self.sub(doe, self.add(self.mul(yoe, 365),
                                     self.sub(self.fdiv(yoe, 4), self.fdiv(yoe, 100))))  # fmt: skip
        mp = self.fdiv(self.add(self.mul(doy, 5), 2), 153)  # March = 0
        day = self.add(self.sub(doy, self.fdiv(self.add(self.mul(mp, 153), 2), 5)), 1)
        march_on = self.op("lt", mp, 10)
        month = self.select(march_on, self.add(mp, 3), self.sub(mp, 9))
        year0 = self.add(yoe, self.mul(era, 400))
        year = self.add(year0, self.to_int(self.op("le", month, 2)))
        return {"year": year, "month": month, "day": day, "doy": doy, "march_on": march_on}

    def days_from_civil(self, year: Node, month: Node | int, day: Node | int) -> Node:
        """The day count of a civil date (month and day each a node or a constant)."""
        if isinstance(month, int):
            y = self.sub(year, 1 if month <= 2 else 0)
            mp = month + 9 if month <= 2 else month - 3
            first = (153 * mp + 2) // 5  # the month's first day in the March-based year
            doy = self.const(first + day - 1) if isinstance(day, int) \
                else self.add(self.sub(day, 1), first)  # fmt: skip
        else:
            y = self.sub(year, self.to_int(self.op("le", month, 2)))
            mp_node = self.select(self.op("gt", month, 2), self.sub(month, 3), self.add(month, 9))
            doy = self.add(self.fdiv(self.add(self.mul(mp_node, 153), 2), 5),
                           self.sub(day, 1))  # fmt: skip
        era = self.fdiv(y, 400)
        yoe = self.sub(y, self.mul(era, 400))
        leap_days = self.sub(self.fdiv(yoe, 4), self.fdiv(yoe, 100))
        doe = self.add(self.add(self.mul(yoe, 365), leap_days), doy)
        return self.sub(self.add(self.mul(era, 146_097), doe), 719_468)

    def datetime_parts(self, node: Function) -> Node:
        """``datetime(year, month, day, hour, minute, second, ...)`` of integer parts.

        The parts come cast as polars casts them (year Int32; month, day, hour, minute,
        second Int8; nanoseconds Int32, the microseconds times 1,000 wrapped there);
        a row is valid where chrono's ``NaiveDate::from_ymd_opt`` and
        ``and_hms_nano_opt`` accept it: years -262,143 to 262,142, a day of the month,
        a time of day, nanoseconds under 2e9 and at or past 1e9 only in second 59 (a
        leap second, counted into the next second as chrono counts it; in any second
        where polars folds Python integers alone, as chrono's ``with_nanosecond``
        takes them). Any other
        row with every part present fails the compute; in nanoseconds, a time past
        int64's range fails too (polars panics there).
        """
        # the unit, `dt.replace`'s text (its repr shows it) and whether a leap second's
        # nanoseconds come in any second (polars' fold of Python integers)
        unit, _, leap_anywhere = node.options
        y, month, day, hour, minute, second, nanos = (
            self.i64(self.tc.check_child(a)) for a in node.args)  # fmt: skip

        def within(value: Node, lo: int, hi: int) -> Node:
            return self.both("and", self.op("ge", value, lo), self.op("le", value, hi))

        date_ok = self.both("and", self.both("and", within(y, -262_143, 262_142),
                                             within(month, 1, 12)),
                            within(day, 1, 31))  # fmt: skip
        date_ok = self.both("and", date_ok, self.op("le", day, self.days_in_month(y, month)))
        in_second_59 = self.both("or", self.op("lt", nanos, 10**9), self.op("eq", second, 59))
        leap_ok = self.op("lt", nanos, 2 * 10**9) if leap_anywhere else in_second_59
        time_ok = self.both("and", self.both("and", within(hour, 0, 23), within(minute, 0, 59)),
                            self.both("and", within(second, 0, 59),
                                      within(nanos, 0, 2 * 10**9 - 1)))  # fmt: skip
        ok = self.both("and", date_ok, self.both("and", time_ok, leap_ok))
        days = self.days_from_civil(y, month, day)
        seconds = self.add(self.add(self.mul(days, 86_400), self.mul(hour, 3_600)),
                           self.add(self.mul(minute, 60), second))  # fmt: skip
        per_second = UNIT_PER_SECOND[unit]
        ticks = self.add(self.mul(seconds, per_second), self.fdiv(nanos, 10**9 // per_second))
        what = "invalid date or time components (a month outside 1-12, a day past its "\
            "month's end, a year outside -262143..262142, an hour, minute or second out "\
            "of range, a microsecond part outside 0..999999)"  # fmt: skip
        if unit == "ns":  # the day and time of day within int64's nanoseconds
            hi_days, lo_days = (2**63 - 1) // _NS_PER_DAY, -(2**63) // _NS_PER_DAY
            time_of_day = self.sub(ticks, self.mul(days, _NS_PER_DAY))
            fits = self.both("and",
                             self.both("or", self.op("lt", days, hi_days), self.both(
                                 "and", self.op("eq", days, hi_days),
                                 self.op("le", time_of_day, 2**63 - 1 - hi_days * _NS_PER_DAY))),
                             self.both("or", self.op("gt", days, lo_days), self.both(
                                 "and", self.op("eq", days, lo_days),
                                 self.op("ge", time_of_day, -(2**63) - lo_days * _NS_PER_DAY))))
            ok = self.both("and", ok, fits)
            what += " or a time outside Datetime('ns')'s range (1677 to 2262)"
        msg = f"`{node!r}`: {what}; check the parts, or null them where they are invalid"
        value = self.rec(Check(ticks, ok, msg), I64)
        return self.mark(value, Logical("datetime", unit))

    def combine(self, arg: Node, time: Node, node: Function) -> Node:
        """``dt.combine(time, unit)``: the value cast to a Date, at midnight, plus ``time``.

        As polars computes it (`dispatch/temporal.rs`'s ``combine``): the Date cast
        (a zoned datetime's UTC date), the time of day in the unit (its nanoseconds
        floored), and a zoned value's zone placed back on the naive sum.
        """
        logical = self._need(arg, node, ("date", "datetime"), "a Date or a Datetime")
        self._need(time, node.args[1], ("time",), "a Time")
        (unit,) = node.options
        day = Function("cast", (node.args[0],), (Logical("date"), True))
        midnight = Function("to_physical", (Function("cast", (day,), (Logical("datetime", unit),
                                                                      True)),))  # fmt: skip
        nanos = Function("to_physical", (node.args[1],))
        ticks = Binary("add", midnight, Binary("floordiv", nanos, Literal(10**9 // UNIT_PER_SECOND[
            unit], DType.INT64)))  # fmt: skip
        out: Node = Function("cast", (ticks,), (Logical("datetime", unit), True))
        if logical.tz is not None:
            out = Function("dt.replace_time_zone", (out,), (logical.tz, "raise", "raise"))
        return self.tc.typed(out)

    def date_diff(self, start: Node, end: Node, node: Function) -> Node:
        """``pl.date_diff(start, end, unit)``: the ``unit`` boundaries crossed, as polars counts.

        Both sides are taken in their common type: two Dates stay Dates; a Date beside
        a Datetime is its midnight (UTC midnight for a zoned one) in the Datetime's unit;
        two Datetimes take the finer unit (not polars' usual supertype) and must share a
        zone; Times only beside Times. A calendar unit (day and up) is the difference of
        the local dates' days, Monday weeks, months, quarters or years. A clock unit is
        the difference of the local values' floors, less the change of UTC offset in
        whole units (toward zero), which is how polars counts a daylight saving change:
        the hour a clock skips is not a boundary crossed. A unit finer than the values'
        is their difference scaled, an overflow of int64 failing the compute.
        """
        unit = node.options[0]
        if any(self.tc.is_dynamic(side) and isinstance(side, Literal) and side.value is None
               for side in (start, end)):  # a null side: a null count
            return self.tc.null_of(I64)
        common, (s, e) = self._date_diff_sides(start, end, unit, node)
        if common.kind == "datetime":
            tick = _ns_per_unit(common.unit)
        else:
            tick = _NS_PER_DAY if common.kind == "date" else 1
        if unit in _CALENDAR_UNITS:
            def index(value: Node) -> Node:
                days = value if common.kind == "date" else self.fdiv(
                    self.local(value, common), _per_day(common.unit))  # fmt: skip
                if unit == "day":
                    return days
                if unit == "week":  # weeks from Monday 1969-12-29 (day -3)
                    return self.fdiv(self.add(days, 3), 7)
                cal = self.civil(days)
                if unit == "year":
                    return cal["year"]
                if unit == "quarter":
                    quarter = self.fdiv(self.sub(cal["month"], 1), 3)
                    return self.add(self.mul(cal["year"], 4), quarter)
                return self.add(self.mul(cal["year"], 12), cal["month"])

            return self.mark(self.sub(index(e), index(s)), None)
        size = _DIFF_UNIT_NS[unit]
        if size <= tick:  # every value is on a boundary: the difference, scaled
            return self.mark(self._checked_scaled_difference(s, e, tick // size, node), None)
        per = size // tick
        from colbridge.types.timezones import transitions

        if common.kind != "datetime" or common.tz in (None, "UTC") or len(
                set(transitions(common.tz)[1])) == 1:  # one offset: no change to take off
            if common.kind == "datetime":  # (`local` leaves a naive or UTC value as it is)
                s, e = self.local(s, common), self.local(e, common)
            return self.mark(self.sub(self.fdiv(e, per), self.fdiv(s, per)), None)
        offset_s, offset_e = (self.offset_at(v, common.tz, common.unit) for v in (s, e))
        crossed = self.sub(self.fdiv(self.add(e, offset_e), per),
                           self.fdiv(self.add(s, offset_s), per))  # fmt: skip
        return self.mark(self.sub(crossed, self.tdiv(self.sub(offset_e, offset_s), per)), None)

    def _date_diff_sides(self, start: Node, end: Node, unit: str,
                         node: Function) -> tuple[Logical, tuple[Node, Node]]:  # fmt: skip
        """`date_diff`'s common type and its two sides in it (int64), refused as polars refuses."""
        sides = (start, end)
        logicals: list[Logical] = []
        for side in sides:
            logical = self.of(side)
            if logical is None or logical.kind not in ("date", "datetime", "time"):
                got = logical if logical is not None else self.tc.types.get(side, "a number")
                msg = (f"`{node!r}` needs Date, Datetime or Time inputs, got {got}; a string "
                       "names a column, or parse text first with `.str.to_date()` / "
                       "`.str.to_datetime()`")  # fmt: skip
                raise InvalidOperationError(msg)
            logicals.append(logical)
        first, second = logicals
        kinds = {first.kind, second.kind}
        zones_differ = first.kind == second.kind == "datetime" and first.tz != second.tz
        if ("time" in kinds and kinds != {"time"}) or zones_differ:
            msg = (f"`{node!r}`: no common type of {first} and {second}; give both sides the "
                   "same kind (and the same time zone)")  # fmt: skip
            raise SchemaError(msg)
        if kinds == {"time"} and unit in _CALENDAR_UNITS:
            msg = (f"`{node!r}`: unit {unit!r} is not supported for Time; count hours or "
                   "finer units between times")  # fmt: skip
            raise InvalidOperationError(msg)
        if "datetime" not in kinds:
            return first, (self.i64(start), self.i64(end))
        # the finer unit (not polars' usual supertype), the zone of the datetime side(s)
        units = [lg.unit for lg in logicals if lg.kind == "datetime"]
        zone = next(lg.tz for lg in logicals if lg.kind == "datetime")
        common = Logical("datetime", min(units, key=TIME_UNITS.index), zone)
        s, e = (self.i64(side if lg == common else self.cast(side, common, True, node))
                for side, lg in zip(sides, logicals, strict=True))  # fmt: skip
        return common, (s, e)

    def _checked_scaled_difference(self, s: Node, e: Node, scale: int, node: Node) -> Node:
        """``(e - s) * scale`` in int64, an overflow failing the compute as polars fails it."""
        difference = self.sub(e, s)
        # a difference wraps only where the sides' signs differ and its sign is not `e`'s
        e_sign = self.op("ge", e, 0)
        ok = self.both("or", self.op("eq", e_sign, self.op("ge", s, 0)),
                       self.op("eq", self.op("ge", difference, 0), e_sign))  # fmt: skip
        if scale > 1:
            hi = (2**63 - 1) // scale
            ok = self.both("and", ok, self.both("and", self.op("ge", difference, -hi),
                                                self.op("le", difference, hi)))  # fmt: skip
        msg = (f"overflow in `{node!r}`: the count does not fit in int64; count a coarser "
               "unit")  # fmt: skip
        return self.rec(Check(self.mul(difference, scale), ok, msg), I64)

    def replace_parts(self, arg: Node, node: Function) -> Node:
        """``dt.replace(...)``: each part given (cast strictly) or the value's own.

        Written as `datetime_parts` of ``coalesce(part, x.dt.<part>())`` (microseconds
        times 1,000 in Int32, else the value's nanoseconds), then back to a Date or to
        the value's zone, and null wherever the value is null (polars keeps its
        nulls: a part given to a null row does not make it a value).
        """
        logical = self._need(arg, node, ("date", "datetime"), "a Date or a Datetime")
        x, given = node.args[0], node.args[1:]
        fields = ("year", "month", "day", "hour", "minute", "second", "microsecond")
        kinds = (DType.INT32, *(DType.INT8,) * 5, DType.INT32)
        parts: list[Node] = []
        for field, dtype, value in zip(fields, kinds, given, strict=True):
            own: Node = Function("dt.nanosecond" if field == "microsecond" else f"dt.{field}",
                                 (x,))  # fmt: skip
            if logical.kind == "date" and field not in ("year", "month", "day"):
                own = Literal(0, dtype)  # a date's time of day, whatever is given
            elif not (isinstance(value, Literal) and value.value is None):
                new: Node = Cast(value, dtype, strict=True)
                if field == "microsecond":
                    new = Binary("mul", new, Literal(1_000, DType.INT32))
                own = Coalesce((new, own))
            parts.append(own)
        unit = "us" if logical.kind == "date" else logical.unit
        out: Node = Function("datetime_parts", tuple(parts), (unit, repr(node), False))
        if logical.kind == "date":
            out = Function("cast", (out,), (logical, True))
        elif logical.tz is not None:
            out = Function("dt.replace_time_zone", (out,),
                           (logical.tz, node.options[0], "raise"))  # fmt: skip
        return self.tc.typed(When(Unary("is_not_null", x), out, Literal(None)))

    def is_leap(self, year: Node) -> Node:
        """True in leap years of the proleptic Gregorian calendar."""
        four = self.op("eq", self.fmod(year, 4), 0)
        hundred = self.op("ne", self.fmod(year, 100), 0)
        four_hundred = self.op("eq", self.fmod(year, 400), 0)
        return self.both("or", self.both("and", four, hundred), four_hundred)

    def weekday(self, days: Node) -> Node:
        """ISO weekday, Monday 1 to Sunday 7 (1970-01-01 was a Thursday)."""
        return self.add(self.fmod(self.add(days, 3), 7), 1)

    def days_in_month(self, year: Node, month: Node) -> Node:
        """The length of a month (28 to 31)."""
        # 31 for months 1 3 5 7 8 10 12: (m + m // 8) is odd; February by the leap year
        odd = self.op("and", self.add(month, self.fdiv(month, 8)), 1)
        feb = self.add(self.to_int(self.is_leap(year)), 28)
        return self.select(self.op("eq", month, 2), feb, self.add(odd, 30))

    # -- dt functions -------------------------------------------------------------------
    def function(self, node: Function) -> Node:
        """A `Function` node: ``dt.*``, ``str.*``, ``cast``, ``is_in``, ``to_physical``."""
        name = node.name
        if name == "is_in":
            return self.is_in(node)
        if name.startswith(("list.", "struct.")):  # before the list itself is typed
            return self.list_function(node)
        args = [self.tc.check_child(a) for a in node.args]
        if name == "cast":
            return self.cast(args[0], node.options[0], bool(node.options[1]), node)
        if name == "to_physical":
            return self.to_physical(args[0], node)
        if name == "dt.add_business_days":  # two expressions: the date and `n`
            return self.add_business_days(args[0], args[1], node)
        if name == "dt.replace":  # the value and its parts
            return self.replace_parts(args[0], node)
        if name == "dt.combine":  # the date and the time
            return self.combine(args[0], args[1], node)
        if name == "dt.date_diff":  # the start and the end
            return self.date_diff(args[0], args[1], node)
        if name == "str.from_code_point":  # of integers, not strings
            return self.from_code_point(args[0], node)
        if name.startswith("dt."):
            return self.dt(name[3:], args[0], node)
        if name.startswith("str."):
            return self.str_function(name[4:], args[0], node)
        if name.startswith("cat."):  # a `str` function of the labels
            logical = self.of(args[0])
            if logical is None or logical.kind not in ("categorical", "enum"):
                got = logical if logical is not None else self.tc.types.get(args[0])
                msg = (f"`{node!r}` needs a Categorical or an Enum, got {got}; use "
                       f"`.str.{name[4:]}` for strings")  # fmt: skip
                raise SchemaError(msg)
            labels = self.mark(args[0], STRING, self.tc.dicts[args[0]])
            return self.str_function(name[4:], labels, node)
        msg = f"unsupported function `{name}` in `{node!r}`"
        raise UnsupportedOperationError(msg)

    def _need(self, arg: Node, node: Node, kinds: tuple[str, ...], what: str) -> Logical:
        logical = self.of(arg)
        if logical is None or logical.kind not in kinds:
            got = logical if logical is not None else self.tc.types.get(arg, "a number")
            msg = f"`{node!r}` needs {what}, got {got}"
            raise SchemaError(msg)
        return logical

    def dt(self, op: str, arg: Node, node: Function) -> Node:
        """A ``dt`` function of a temporal value."""
        if op in _FIELD_TYPES or op == "is_leap_year":
            return self.field(op, arg, node)
        if op in _TOTALS:
            return self.total(op, arg, bool(node.options[0]) if node.options else False, node)
        if op in ("epoch", "timestamp"):
            return self.epoch(arg, str(node.options[0]) if node.options else "us", node)
        if op == "date":
            logical = self._need(arg, node, ("datetime", "date"), "a Datetime or Date")
            if logical.kind == "date":
                return arg
            local = self.local(arg, logical)
            return self.mark(self.narrow(self.fdiv(local, _per_day(logical.unit)), I32), DATE)
        if op == "time":
            logical = self._need(arg, node, ("datetime", "time"), "a Datetime or Time")
            if logical.kind == "time":
                return arg
            local = self.local(arg, logical)
            rem = self.fmod(local, _per_day(logical.unit))
            return self.mark(self.mul(rem, _ns_per_unit(logical.unit)), TIME)
        if op in ("truncate", "month_start", "month_end"):
            return self.calendar(op, arg, node)
        if op == "offset_by":
            return self.offset_by(arg, node)
        if op == "is_business_day":
            logical = self._need(arg, node, ("datetime", "date"), "a Date or Datetime")
            days = self._days_and_rest(arg, logical)[0]
            assert days is not None
            return self.mark(self.is_business_day(days, *node.options), None)
        if op == "round":
            return self.round_to(arg, node)
        if op in ("base_utc_offset", "dst_offset"):
            return self.zone_offset(op, arg, node)
        if op == "convert_time_zone":
            logical = self._need(arg, node, ("datetime",), "a Datetime")
            tz = check_zone(str(node.options[0]))
            # the instant is stored as UTC; a datetime without a zone is read as UTC, as
            # polars reads it
            return self.mark(arg, Logical("datetime", logical.unit, tz))
        if op == "replace_time_zone":
            logical = self._need(arg, node, ("datetime",), "a Datetime")
            tz = node.options[0]
            if tz is None:
                return self.mark(self.local(arg, logical), Logical("datetime", logical.unit))
            tz = check_zone(str(tz))
            ambiguous, non_existent = (str(p) for p in node.options[1:3])
            if ambiguous not in ("raise", "earliest", "latest") or non_existent not in (
                "raise", "null"
            ):
                msg = (
                    f"`{node!r}`: `ambiguous` is 'raise', 'earliest' or 'latest' and "
                    "`non_existent` 'raise' or 'null' (per-row expressions are not supported)"
                )
                raise UnsupportedOperationError(msg)
            wall = self.local(arg, logical)
            value = self.localize(wall, tz, logical.unit, node, ambiguous=ambiguous,
                                  non_existent=non_existent)  # fmt: skip
            return self.mark(value, Logical("datetime", logical.unit, tz))
        if op == "to_string":
            return self.strftime(arg, str(node.options[0]), node)
        if op == "cast_time_unit":
            logical = self._need(arg, node, ("datetime", "duration"), "a Datetime or Duration")
            unit = _unit(node.options[0], node)
            target = Logical(logical.kind, unit, logical.tz)
            factor = UNIT_PER_SECOND[unit] // UNIT_PER_SECOND[logical.unit]
            if factor > 1:  # finer: a value that does not fit fails, as in polars
                return self.mark(self.widen(self.i64(arg), factor, True, target, node), target)
            value = self.to_unit(arg, logical.unit, unit, duration=logical.kind == "duration")
            return self.mark(value, target)
        msg = f"`dt.{op}` is not supported by colbridge expressions (in `{node!r}`)"
        raise UnsupportedOperationError(msg)

    # -- business days (`colbridge.types.business_days`) ---------------------------------
    def _busday(self, mask: tuple[bool, ...], holidays: tuple[int, ...], which: str,
                index: Node) -> Node:  # fmt: skip
        """An entry of a business-day table: gathered at ``index``, or searched for it."""
        ref = TableRef(("busday", mask, holidays), (which,), I64)
        if which in ("holidays", "shifted"):
            return self.i64(self.rec(Search(ref, index), I32))
        return self.rec(Gather(ref, self.narrow(index, I32)), I64)

    def _week_of(self, days: Node) -> tuple[Node, Node]:
        """A day's week, counted from the Monday `FIRST_MONDAY`, and its weekday (Monday 0)."""
        since = self.sub(days, FIRST_MONDAY)
        return self.fdiv(since, 7), self.fmod(since, 7)

    def business_index(self, days: Node, mask: tuple[bool, ...],
                       holidays: tuple[int, ...]) -> Node:  # fmt: skip
        """``B(d)``: the business days before day ``d`` (from a fixed Monday)."""
        weeks, weekday = self._week_of(days)
        index = self.add(self.mul(weeks, sum(mask)),
                         self._busday(mask, holidays, "before", weekday))  # fmt: skip
        if not holidays:
            return index
        return self.sub(index, self._busday(mask, holidays, "holidays", self.sub(days, 1)))

    def business_day_of(self, index: Node, mask: tuple[bool, ...],
                        holidays: tuple[int, ...]) -> Node:  # fmt: skip
        """The business day whose `business_index` is ``index``."""
        if holidays:  # the holidays before it: those with W(h_i) - i <= index
            index = self.add(index, self._busday(mask, holidays, "shifted", index))
        per_week = sum(mask)
        weeks = self.fdiv(index, per_week)
        weekday = self._busday(mask, holidays, "nth", self.fmod(index, per_week))
        return self.add(self.add(self.mul(weeks, 7), weekday), FIRST_MONDAY)

    def is_business_day(self, days: Node, mask: tuple[bool, ...],
                        holidays: tuple[int, ...]) -> Node:  # fmt: skip
        """Day ``d`` is on the mask and not a holiday."""
        weekday = self._week_of(days)[1]
        on_mask = self.op("ne", self._busday(mask, holidays, "mask", weekday), 0)
        if not holidays:
            return on_mask
        before = self._busday(mask, holidays, "holidays", self.sub(days, 1))
        through = self._busday(mask, holidays, "holidays", days)
        return self.both("and", on_mask, self.op("eq", before, through))

    def add_business_days(self, arg: Node, n: Node, node: Function) -> Node:
        """``dt.add_business_days(n, week_mask, holidays, roll)``, as polars computes it.

        The day of index ``B(start) + n`` (`business_index`), the start rolled first:
        forward, the day of index ``B(d)``; backward, ``B(d + 1) - 1``; ``raise``: a
        start off the business days is an error. A datetime keeps its time of day (its
        local one, in a time zone, placed back in it as `replace_time_zone` places it).
        """
        mask, holidays, roll = node.options
        logical = self._need(arg, node, ("datetime", "date"), "a Date or Datetime")
        tc = self.tc
        if tc.is_dynamic(n):
            n = tc.materialize(n)
        n_type = tc.types[n]
        if self.of(n) is not None or n_type not in (I32, I64, DType.UINT32, DType.UINT64):
            got = self.of(n) or n_type
            msg = (f"`{node!r}`: `n` must be Int64, Int32, UInt64 or UInt32 (as in polars), "
                   f"got {got}; cast it first")  # fmt: skip
            raise InvalidOperationError(msg)
        if n_type is not I32:  # read as Int32, as polars casts it: a value past it is null
            n = tc.cast_plain(n, I32, strict=False)
        days, rest, _ = self._days_and_rest(arg, logical)
        assert days is not None
        if roll == "backward":
            start = self.sub(self.business_index(self.add(days, 1), mask, holidays), 1)
        else:
            start = self.business_index(days, mask, holidays)
        target = self.add(start, n)
        if roll == "raise":  # checked where `n` is not null too, as polars checks
            ok = self.is_business_day(days, mask, holidays)
            msg = (f"`{node!r}`: a date is not a business date; use `roll` to roll forwards "
                   "(or backwards) to the next (or previous) valid date")  # fmt: skip
            target = self.rec(Check(target, ok, msg), I64)
        result = self.business_day_of(target, mask, holidays)
        if logical.kind == "date":
            return self.mark(self.narrow(result, I32), DATE)
        assert rest is not None
        wall = self.add(self.mul(result, _per_day(logical.unit)), rest)
        if logical.tz is not None:
            wall = self.localize(wall, logical.tz, logical.unit, node)
        return self.mark(wall, logical)

    def _days_and_rest(self, arg: Node, logical: Logical) -> tuple[Node | None, Node | None, str]:
        """Local day count, time of day in the value's unit, and that unit."""
        if logical.kind == "date":
            return self.i64(arg), None, "ns"
        if logical.kind == "time":
            return None, arg, "ns"
        local = self.local(arg, logical)
        per_day = _per_day(logical.unit)
        days = self.fdiv(local, per_day)
        return days, self.fmod(local, per_day), logical.unit

    def field(self, op: str, arg: Node, node: Function) -> Node:
        """A calendar or clock field, as integer arithmetic on local values."""
        kinds = ("datetime", "date") if op in _DATE_FIELDS else ("datetime", "time")
        logical = self._need(arg, node, kinds, "a " + " or ".join(k.capitalize() for k in kinds))
        days, rest, unit = self._days_and_rest(arg, logical)
        if op in _TIME_FIELDS:
            assert rest is not None
            per_second = UNIT_PER_SECOND[unit]
            if op == "hour":
                value = self.fdiv(rest, 3600 * per_second)
            elif op == "minute":
                value = self.fmod(self.fdiv(rest, 60 * per_second), 60)
            elif op == "second":
                value = self.fmod(self.fdiv(rest, per_second), 60)
            else:
                sub = self.fmod(rest, per_second)  # the fraction of the second, in the unit
                scale = {"millisecond": 1_000, "microsecond": 1_000_000,
                         "nanosecond": 1_000_000_000}[op]  # fmt: skip
                value = self.fdiv(sub, per_second // scale) if per_second >= scale \
                    else self.mul(sub, scale // per_second)  # fmt: skip
            return self.mark(self.narrow(value, _FIELD_TYPES[op]), None)
        assert days is not None
        if op == "weekday":
            return self.mark(self.narrow(self.weekday(days), I8), None)
        cal = self.civil(days)
        year, month = cal["year"], cal["month"]
        if op == "is_leap_year":
            return self.mark(self.is_leap(year), None)
        if op in ("year", "month", "day"):
            value = cal[op]
        elif op == "century":
            value = self.add(self.fdiv(self.sub(year, 1), 100), 1)
        elif op == "millennium":
            value = self.add(self.fdiv(self.sub(year, 1), 1000), 1)
        elif op == "quarter":
            value = self.add(self.fdiv(self.sub(month, 1), 3), 1)
        elif op == "ordinal_day":
            leap = self.to_int(self.is_leap(year))
            value = self.select(cal["march_on"], self.add(self.add(cal["doy"], 60), leap),
                              self.sub(cal["doy"], 305))  # fmt: skip
        elif op == "days_in_month":
            value = self.days_in_month(year, month)
        else:  # ISO week and its year: those of the Thursday of the same week
            thursday = self.add(self.sub(days, self.weekday(days)), 4)
            iso_year = self.civil(thursday)["year"]
            if op == "iso_year":
                value = iso_year
            else:
                jan1 = self.days_from_civil(iso_year, 1, 1)
                value = self.add(self.fdiv(self.sub(thursday, jan1), 7), 1)
        return self.mark(self.narrow(value, _FIELD_TYPES[op]), None)

    def total(self, op: str, arg: Node, fractional: bool, node: Function) -> Node:
        """``total_*`` of a duration: toward zero as polars, or a float."""
        logical = self._need(arg, node, ("duration",), "a Duration")
        per = _TOTALS[op]
        unit_ns = _ns_per_unit(logical.unit)
        if fractional:
            value = self.rec(Cast(arg, F64, strict=False), F64)
            scale = per / unit_ns
            if scale != 1:  # polars multiplies by the reciprocal of the float scale
                factor = self.rec(Const(1.0 / float(scale), F64), F64)
                value = self.rec(Binary("mul", value, factor), F64)
            return self.mark(value, None)
        if per <= unit_ns:
            return self.mark(self.mul(arg, unit_ns // per), None)
        return self.mark(self.tdiv(arg, per // unit_ns), None)  # toward zero, as polars

    def epoch(self, arg: Node, unit: str, node: Function) -> Node:
        """Time since 1970-01-01 in a unit."""
        logical = self._need(arg, node, ("datetime", "date"), "a Datetime or Date")
        if unit == "d":
            if logical.kind == "date":
                return self.mark(arg, None)
            return self.mark(self.narrow(self.fdiv(arg, _per_day(logical.unit)), I32), None)
        if unit == "s":
            if logical.kind == "date":
                return self.mark(self.mul(arg, 86_400), None)
            return self.mark(self.fdiv(arg, UNIT_PER_SECOND[logical.unit]), None)
        unit = _unit(unit, node)
        target = Logical("datetime", unit)
        if logical.kind == "date":  # a finer unit that overflows is null, as polars
            return self.mark(self.widen(self.i64(arg), _per_day(unit), False, target, node), None)
        if TIME_UNITS.index(unit) >= TIME_UNITS.index(logical.unit):
            return self.mark(self.to_unit(arg, logical.unit, unit), None)
        factor = UNIT_PER_SECOND[unit] // UNIT_PER_SECOND[logical.unit]
        return self.mark(self.widen(arg, factor, False, target, node), None)

    def calendar(self, op: str, arg: Node, node: Function) -> Node:
        """``truncate``, ``month_start`` and ``month_end``."""
        logical = self._need(arg, node, ("datetime", "date"), "a Datetime or Date")
        if logical.tz not in (None, "UTC"):
            # on the local wall clock, then back to an instant (polars' rules for the rare
            # results that are ambiguous or fall in a gap)
            assert logical.tz is not None
            every = str(node.options[0]) if op == "truncate" else ""
            if op == "truncate" and not any(int(n) for n, _ in _EVERY.findall(every)):
                # polars refuses a zero interval on a zoned datetime (a naive one is returned)
                msg = f"`{node!r}`: the interval {every!r} must be positive"
                raise InvalidOperationError(msg)
            naive = Logical("datetime", logical.unit)
            wall = self.calendar(op, self.mark(self.local(arg, logical), naive), node)
            # truncate keeps the original's reading of an ambiguous time and reads a time
            # in a gap with the offset before it; month_start and month_end raise at
            # both, as polars does
            truncate = op == "truncate"
            value = self.localize(wall, logical.tz, logical.unit, node,
                                  non_existent="earliest" if truncate else "raise",
                                  original=arg if truncate else None)  # fmt: skip
            return self.mark(value, logical)
        is_date = logical.kind == "date"
        per_day = 1 if is_date else _per_day(logical.unit)
        days = self.i64(arg) if is_date else self.fdiv(arg, per_day)
        rest = None if is_date else self.fmod(arg, per_day)

        def back(new_days: Node, keep_time: bool) -> Node:
            value = self.mul(new_days, per_day) if not is_date else new_days
            if keep_time and rest is not None:
                value = self.add(value, rest)
            return self.mark(self.narrow(value, I32) if is_date else value, logical)

        if op in ("month_start", "month_end"):
            cal = self.civil(days)
            start = self.sub(days, self.sub(cal["day"], 1))
            if op == "month_start":
                return back(start, True)
            length = self.days_in_month(cal["year"], cal["month"])
            return back(self.add(start, self.sub(length, 1)), True)
        every = str(node.options[0])
        parts = _EVERY.findall(every)
        if not parts or "".join(n + u for n, u in parts) != every.replace(" ", ""):
            msg = f"`{node!r}`: cannot read the interval {every!r}; write e.g. '1h', '15m', '1mo'"
            raise InvalidOperationError(msg)
        kinds = {("month" if u in ("mo", "q", "y") else u if u in ("d", "w") else "fixed")
                 for _, u in parts}  # fmt: skip
        if len(kinds) > 1:
            msg = f"`{node!r}`: cannot mix month, week, day and sub-daily units in {every!r}"
            raise InvalidOperationError(msg)
        kind = kinds.pop()
        if kind == "fixed":
            total_ns = sum(int(n) * _EVERY_UNITS[u] for n, u in parts)
            if is_date:
                if total_ns > 0 and (24 * 3600 * 10**9) % total_ns == 0:
                    return arg  # a date's midnight is a multiple of a day's divisors: itself
                msg = (f"`{node!r}`: a Date truncates to days, weeks, months or years, or to "
                       f"an interval a day divides into ('1h', '15m'), not {every!r}")  # fmt: skip
                raise InvalidOperationError(msg)
            # the interval in the column's unit, truncated toward zero as polars converts
            # it (1500us is 1ms of a ms column); below one unit it leaves the values as
            # they are, as in polars
            step = total_ns // _ns_per_unit(logical.unit)
            if step <= 0:
                return arg
            return self.mark(self.sub(arg, self.fmod(arg, step)), logical)
        count = sum(int(n) * {"d": 1, "w": 7, "mo": 1, "q": 3, "y": 12}[u] for n, u in parts)
        if count <= 0:
            msg = f"`{node!r}`: the interval {every!r} must be positive"
            raise InvalidOperationError(msg)
        if kind == "d":
            return back(self.sub(days, self.fmod(days, count)), False)
        if kind == "w":  # weeks start on Monday 1970-01-05 (day 4), as polars counts them
            return back(self.sub(days, self.fmod(self.sub(days, 4), count)), False)
        cal = self.civil(days)
        months = self.add(self.mul(cal["year"], 12), self.sub(cal["month"], 1))
        # counted from 1970-01 (month 23640 since year 0), as polars counts them
        months = self.sub(months, self.fmod(self.sub(months, 1970 * 12), count))
        year = self.fdiv(months, 12)
        month = self.add(self.sub(months, self.mul(year, 12)), 1)
        return back(self.days_from_civil(year, month, 1), False)

    def offset_by(self, arg: Node, node: Function) -> Node:
        """``dt.offset_by(by)``, as polars' ``Duration`` adds to a date or datetime.

        Calendar months first (the civil date's month moved, its day clamped to the new
        month's length, the time of day kept), then weeks and days, then the fixed
        part in the column's unit, truncated toward zero (a Date counts as a
        Datetime[us] there, floored back to its day); a leading ``-`` negates it all.
        """
        logical = self._need(arg, node, ("datetime", "date"), "a Date or Datetime")
        text = str(node.options[0])
        duration = parse_duration_in(text, repr(node))
        if duration.parsed_int:
            msg = (f"`{node!r}`: {text!r} is an index count (`i`), which has no length in "
                   "time; offset by a duration such as '3d' or '1h'")  # fmt: skip
            raise InvalidOperationError(msg)
        sign = -1 if duration.negative else 1
        months = sign * duration.months
        days = sign * (7 * duration.weeks + duration.days)
        if logical.tz not in (None, "UTC") and (months or days):
            return self._zoned_offset_by(arg, logical, node, months, sign * duration.weeks,
                                         sign * duration.days, sign * duration.nsecs)  # fmt: skip
        is_date = logical.kind == "date"
        per_day = 1 if is_date else _per_day(logical.unit)
        # the fixed part in the unit, truncated toward zero as polars converts it
        per_unit = 1_000 if is_date else _ns_per_unit(logical.unit)
        fixed = sign * (duration.nsecs // per_unit)
        value: Node = arg
        if months:
            day_count = self.i64(arg) if is_date else self.fdiv(arg, per_day)
            cal = self.civil(day_count)
            total = self.add(self.add(self.mul(cal["year"], 12), self.sub(cal["month"], 1)),
                             months)  # fmt: skip
            year = self.fdiv(total, 12)
            month = self.add(self.sub(total, self.mul(year, 12)), 1)
            length = self.days_in_month(year, month)
            day = self.select(self.op("lt", cal["day"], length), cal["day"], length)
            moved = self.add(self.days_from_civil(year, month, 1), self.sub(day, 1))
            value = moved if is_date else self.add(self.mul(moved, per_day),
                                                   self.fmod(arg, per_day))  # fmt: skip
        if is_date:
            # a date is midnight in microseconds: the fixed part moves it by whole days,
            # floored (-1us is the day before)
            shift = days + fixed // 86_400_000_000
            if not shift and not months:
                return arg
            return self.mark(self.narrow(self.add(value, shift), I32), logical)
        shift = days * per_day + fixed
        if not shift and not months:
            return arg
        return self.mark(self.add(value, shift) if shift else value, logical)

    def _moved_months(self, value: Node, months: int, per_day: int) -> Node:
        """A wall-clock value ``months`` calendar months on (day clamped, time of day kept)."""
        cal = self.civil(self.fdiv(value, per_day))
        total = self.add(self.add(self.mul(cal["year"], 12), self.sub(cal["month"], 1)), months)
        year = self.fdiv(total, 12)
        month = self.add(self.sub(total, self.mul(year, 12)), 1)
        length = self.days_in_month(year, month)
        day = self.select(self.op("lt", cal["day"], length), cal["day"], length)
        moved = self.add(self.days_from_civil(year, month, 1), self.sub(day, 1))
        return self.add(self.mul(moved, per_day), self.fmod(value, per_day))

    def _zoned_offset_by(self, arg: Node, logical: Logical, node: Function, months: int,
                         weeks: int, days: int, nsecs: int) -> Node:  # fmt: skip
        """``dt.offset_by`` of a datetime in a time zone: its calendar parts on the wall clock.

        As polars: the months, then the weeks, then the days each move the local time
        and are placed back in the zone as RFC 5545 says (`_localize_like`); the fixed
        part is added to the instant last.
        """
        tz, unit = logical.tz, logical.unit
        assert tz is not None
        per_day = _per_day(unit)
        value = arg
        for step, size in ((months, 0), (weeks, 7 * per_day), (days, per_day)):
            if not step:
                continue
            local = self.local(value, logical)
            moved = self._moved_months(local, step, per_day) if size == 0 \
                else self.add(local, step * size)  # fmt: skip
            value = self._localize_like(moved, value, tz, unit, node)
        fixed = nsecs // _ns_per_unit(unit)
        return self.mark(self.add(value, fixed) if fixed else value, logical)

    def _localize_like(self, local: Node, original: Node, tz: str, unit: str,
                       node: Node) -> Node:  # fmt: skip
        """The instant of wall-clock time ``local`` in ``tz``, resolved as RFC 5545 (polars).

        An ambiguous time takes the interpretation with the daylight saving part the
        ``original`` instant had (an error if neither has it); a time in a gap is moved
        on by that part, or, where the original had none, back by the part the zone has
        an hour later, then placed (an error if it still falls in a gap).
        """
        day, hour = _per_day(unit), 3_600 * UNIT_PER_SECOND[unit]
        early, late, ok_early, ok_late, both = self._placings(local, tz, unit)
        after = self.offset_at(self.add(local, day), tz, unit)
        saving = self.offset_at(original, tz, unit, "saving")
        early_saves = self.op("eq", self.offset_at(early, tz, unit, "saving"), saving)
        late_saves = self.op("eq", self.offset_at(late, tz, unit, "saving"), saving)
        value = self.select(both, self.select(early_saves, early, late),
                            self.select(ok_early, early, late))  # fmt: skip
        unmatched = self.both("and", both, self.rec(Unary("not", self.both(
            "or", early_saves, late_saves)), BOOL))  # fmt: skip
        missing = self.rec(Unary("not", self.both("or", ok_early, ok_late)), BOOL)
        # in a gap: the would-be result an hour later, read with the offset after the gap
        later = self.sub(self.add(local, hour), after)
        later_ok = self.op("eq", self.offset_at(later, tz, unit), after)
        later_saving = self.offset_at(later, tz, unit, "saving")
        had_saving = self.op("ne", saving, 0)
        shift = self.select(had_saving, saving, self.sub(0, later_saving))
        shifted = self.select(missing, self.add(local, shift), local)
        placed = self.localize(shifted, tz, unit, node, ambiguous="earliest")
        value = self.select(missing, placed, value)
        no_saving = self.rec(Unary("not", had_saving), BOOL)
        no_later = self.rec(Unary("not", later_ok), BOOL)
        lost = self.both("and", missing, self.both("and", no_saving, no_later))
        bad = self.both("or", unmatched, lost)
        msg = f"`{node!r}`: could not place the local time in time zone {tz!r}"
        return self.rec(Check(value, self.rec(Unary("not", bad), BOOL), msg), I64)

    def round_to(self, arg: Node, node: Function) -> Node:
        """``dt.round(every)``: `calendar`'s ``truncate`` of the value plus half ``every``.

        As polars' ``Window::round``: half the interval's length, a month counted as 28
        days (so ``'1mo'`` adds 14 days, ``'1y'`` 168), truncated toward zero to the
        column's unit (a Date's to whole days); ties go up.
        """
        logical = self._need(arg, node, ("datetime", "date"), "a Date or Datetime")
        every = str(node.options[0])
        duration = parse_duration_in(every, repr(node))
        if duration.negative or duration.parsed_int:
            what = "a negative duration" if duration.negative else "an index count (`i`)"
            msg = f"`{node!r}`: cannot round to {what}; give a positive one such as '1h'"
            raise InvalidOperationError(msg)
        length_ns = (duration.months * 28 + duration.weeks * 7 + duration.days) * 86_400 \
            * 10**9 + duration.nsecs  # fmt: skip
        if logical.kind == "date":
            # polars rounds a date as milliseconds: half the length in whole days, floored
            days = length_ns // 2_000_000 // 86_400_000
            shifted = self.mark(self.narrow(self.add(arg, days), I32), logical) if days else arg
        else:
            half = length_ns // (2 * _ns_per_unit(logical.unit))
            shifted = self.mark(self.add(arg, half), logical) if half else arg
        return self.calendar("truncate", shifted, node)

    # -- casts --------------------------------------------------------------------------
    def cast(self, arg: Node, target: Any, strict: bool, node: Node) -> Node:
        """``arg.cast(target)`` where the source or the target is a logical type."""
        tc = self.tc
        if tc.is_dynamic(arg):
            if isinstance(arg, Literal) and arg.value is None:
                if isinstance(target, Logical):
                    dtype = target.physical if target.is_temporal else U32
                    # an enum's null keeps its categories: they are its type
                    return self.mark(tc.null_of(dtype), target, ("lit", target.categories))
                return tc.null_of(target)
            arg = tc.materialize(arg)
        src = self.of(arg)
        if isinstance(target, DType):
            if src is None:  # pragma: no cover - plain casts never come here
                return tc.cast_plain(arg, target, strict)
            if src.is_string:
                if src.kind != "string" and not target.is_integer:  # polars: no such cast
                    msg = (f"`{node!r}`: casting from {src.kind} to {target} is not supported "
                           "(as in polars); cast its labels with "
                           "`.cast(pl.String).cast(...)`")  # fmt: skip
                    raise InvalidOperationError(msg)
                if src.kind != "string" and target.is_integer:
                    msg = (
                        f"`{node!r}`: cast a categorical's codes with `.to_physical()`, or its "
                        "labels with `.cast(pl.String).cast(...)`"
                    )
                    raise SchemaError(msg)
                if target.is_bool:  # polars has no such cast, strict or not
                    msg = (f"`{node!r}`: casting from {src.kind} to Boolean is not supported "
                           "(as in polars); compare instead, e.g. `s == \"true\"`")  # fmt: skip
                    raise InvalidOperationError(msg)
                return self.parse(arg, ("cast", target.value), target, None, strict, node)
            if src.kind == "time" and target.is_integer and target is not I64:
                msg = f"`{node!r}`: casting from Time to {target} is not supported; use Int64"
                raise SchemaError(msg)
            plain = self.mark(arg, None)
            return tc.cast_plain(plain, target, strict)
        if not isinstance(target, Logical):
            msg = f"cannot cast to {target!r}"
            raise SchemaError(msg)
        if target.is_string and (src is None or src.is_temporal):
            return self.to_string(arg, src, node)
        if src is None:
            t = tc.types[arg]
            if t.is_bool:
                msg = f"`{node!r}`: casting from Boolean to {target} is not supported"
                raise SchemaError(msg)
            value = tc.cast_plain(arg, target.physical, strict)
            if target.kind == "time":  # nanoseconds of one day, or the cast fails
                value = self.within_day(value, strict, node)
            return self.mark(value, target)
        if src.is_string:
            spec = tc.dicts[arg]
            if target.kind in ("string", "categorical"):
                return self.mark(arg, target, spec)
            if target.kind == "enum":
                # each string's place among the categories; one that is not there is null,
                # or an error on a row holding it when strict (polars' rule)
                categories: DictSpec = ("lit", target.categories)
                error = (f"strict conversion of {src.kind} to {target} failed in `{node!r}`: some "
                         "values are not categories of the enum; pass `strict=False` to turn "
                         "them into nulls") if strict else ""  # fmt: skip
                codes = self.table(arg, ("remap", categories), I32, nullable=True, error=error)
                return self.mark(codes, target, categories)
            if target.kind in ("date", "datetime", "time"):  # polars 2 removed these casts
                fn = {"date": "to_date", "datetime": "to_datetime", "time": "to_time"}
                msg = (f"`{node!r}`: casting from string to {target.kind} is not supported (as "
                       f"in polars 2); use `str.{fn[target.kind]}()` instead")  # fmt: skip
                raise InvalidOperationError(msg)
            msg = f"`{node!r}`: colbridge does not cast strings to {target}"
            raise UnsupportedOperationError(msg)
        return self.cast_temporal(arg, src, target, node, strict)

    def to_string(self, arg: Node, src: Logical | None, node: Node,
                  fmt: str | None = None) -> Node:  # fmt: skip
        """``arg.cast(pl.String)`` of a number, boolean, date, datetime or time.

        New strings, one per distinct value, written as polars writes them
        (`colbridge.types.formatting`; with ``fmt``, chrono's strftime of a temporal
        value): a host step between passes (a `Scan` of `HOST_SCANS`, ``to_string``,
        that reads each row alone) dictionary-encodes the values and writes the
        dictionary; the result is its codes, a string column whose dictionary is that
        step's (``("scan", name)``), so it compares, maps, groups and joins as any
        string column. A literal is written at once.
        """
        tc = self.tc
        if src is not None and src.kind == "duration" and fmt is None:  # polars has no such cast
            msg = (f"`{node!r}`: casting from Duration to String is not supported (as in "
                   "polars); cast its integer (`dt.total_*()`, `to_physical()`) instead")
            raise InvalidOperationError(msg)
        arrow_type = src.arrow if src is not None else tc.types[arg].arrow
        if isinstance(arg, Literal):
            if arg.value is None:  # pragma: no cover - a null literal is cast before
                return tc.null_of(I32)
            value = pa.array([arg.value], pa.int64() if src is not None else arrow_type)
            written = format_as_strings(value.cast(arrow_type), fmt)
            return tc.typed(Constant(written.dictionary[0].as_py()))
        scan = Scan("to_string", arg, () if fmt is None else (fmt,))
        return self.mark(self.rec(scan, I32), STRING, ("scan", scan_column(scan)))

    def from_code_point(self, arg: Node, node: Function) -> Node:
        """``str.from_code_point()``: integers written as characters by `to_string`'s host step.

        `colbridge.types.formatting.CODE_POINT`: each distinct value's character once;
        a value that is no code point is null there, and the kernel fails the compute
        where such a row reaches the result (a literal's fails at once).
        """
        tc = self.tc
        if isinstance(arg, Literal) and arg.value is None:
            return self.mark(tc.null_of(I32), STRING, ("lit", ()))
        if tc.is_dynamic(arg):
            arg = tc.materialize(arg)
        dtype = tc.types[arg]
        if self.of(arg) is not None or not dtype.is_integer:
            got = self.of(arg) or dtype
            msg = (f"`{node!r}` expects an integer code point, got {got}; cast to an integer "
                   "first (e.g. `.cast(pl.Int64)`)")  # fmt: skip
            raise InvalidOperationError(msg)
        if isinstance(arg, Literal):
            assert isinstance(arg.value, int)  # an integer type: typing made it one
            code = arg.value
            if code < 0 or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                msg = f"`{node!r}`: {_NOT_A_CODE_POINT}: {code}"
                raise ComputeError(msg)
            return self.tc.typed(Constant(chr(code)))
        scan = Scan("to_string", arg, (CODE_POINT,))
        codes = self.rec(scan, I32)  # null where the value is no code point
        bad = self.both("and", self.rec(Unary("is_not_null", arg), BOOL),
                        self.rec(Unary("is_null", codes), BOOL))  # fmt: skip
        msg = f"`{node!r}`: {_NOT_A_CODE_POINT}"
        checked = self.rec(Check(bad, self.rec(Unary("not", bad), BOOL), msg), BOOL)
        value = self.rec(When(self.rec(Unary("not", checked), BOOL), codes, tc.null_of(I32)), I32)
        return self.mark(value, STRING, ("scan", scan_column(scan)))

    def concat_str(self, node: Function) -> Node:
        """``concat_str(args, separator, ignore_nulls)``: the arguments' texts joined by row.

        Each argument is a string (a number, boolean or temporal value first written as
        `to_string` writes it; a categorical by its labels). The kernel combines the
        rows' codes into one key, ``sum((code_i + 1) * radix_i)`` with
        ``radix_i = prod(len(dictionary_j) + 1 for j > i)`` (0: a null left out with
        ``ignore_nulls``; without, a null anywhere makes the key null), the radices a
        lookup table the runtime builds from the dictionaries (and refuses past int64);
        a host step between passes joins each distinct key's strings once
        (`colbridge.types.formatting.join_strings`). A literal string is an argument of
        one string; a null literal makes every row null, or is left out.
        """
        separator, ignore_nulls = node.options
        return self.join_typed([self.tc.check_child(a) for a in node.args], separator,
                               bool(ignore_nulls), node)  # fmt: skip

    def join_typed(self, args: list[Node], separator: str, ignore_nulls: bool,
                   node: Node) -> Node:  # fmt: skip
        """Typed ``args`` joined as `concat_str` joins them.

        Also ``s + t`` of two strings and polars' ``sum_horizontal`` of strings.
        """
        tc = self.tc
        strings: list[Node] = []
        for arg in args:
            if tc.is_dynamic(arg):
                if isinstance(arg, Literal) and arg.value is None:
                    if ignore_nulls:
                        continue
                    return self.mark(tc.null_of(I32), STRING, ("lit", ()))
                arg = tc.materialize(arg)
            logical = self.of(arg)
            if logical is None or not logical.is_string:
                arg = self.to_string(arg, logical, node)
            strings.append(arg)
        if not strings:  # every argument a null literal, left out
            return tc.typed(Constant(""))
        if all(isinstance(a, Constant) for a in strings):  # polars folds literals
            return tc.typed(Constant(separator.join(a.value for a in strings)))  # type: ignore[attr-defined]
        if len(strings) == 1 and not ignore_nulls:  # a String (of a categorical's labels)
            return self.mark(strings[0], STRING, tc.dicts[strings[0]])
        specs = tuple(tc.dicts[a] for a in strings)
        key: Node | None = None
        for i, arg in enumerate(strings):
            digit = self.add(arg, 1)  # null where the string is
            if ignore_nulls:
                digit = self.rec(Coalesce((digit, self.const(0))), I64)
            ref = TableRef(("concat", specs), ("radix", i), I64)
            radix = self.rec(Gather(ref, self.const(0, I32)), I64)
            term = self.mul(digit, radix)
            key = term if key is None else self.add(key, term)
        assert key is not None
        scan = Scan("concat_str", key, (separator, bool(ignore_nulls), specs))
        return self.mark(self.rec(scan, I32), STRING, ("scan", scan_column(scan)))

    def strftime(self, arg: Node, fmt: str, node: Function) -> Node:
        """``dt.to_string(fmt)``: chrono's strftime of a date, datetime or time.

        ``iso``/``iso:strict`` are polars' formats of the type; a format is checked
        here as polars checks it when it writes (a specifier chrono does not write, a
        time's field of a date, a date's of a time, a zone of a naive datetime:
        `ComputeError`, naming it). A duration takes polars' two forms of its own,
        ``iso`` (also ``iso:strict``) and ``polars``, and no other format
        (`InvalidOperationError`, as polars).
        """
        logical = self._need(arg, node, ("datetime", "date", "time", "duration"),
                             "a Datetime, Date, Time or Duration")  # fmt: skip
        if logical.kind == "duration":
            if fmt not in ("iso", "iso:strict", "polars"):
                msg = (f"`{node!r}`: format {fmt!r} is not supported for a Duration (as in "
                       "polars): use \"iso\" (ISO 8601, P1DT2H3M4S) or \"polars\" "
                       "(1d 2h 3m 4s); a Duration has no calendar fields to format")  # fmt: skip
                raise InvalidOperationError(msg)
            return self.to_string(arg, logical, node, "polars" if fmt == "polars" else "iso")
        if fmt in ("iso", "iso:strict"):
            offset = "%:z" if logical.tz is not None else ""
            fraction = {"ms": "%.3f", "us": "%.6f", "ns": "%.9f"}.get(logical.unit or "", "")
            sep = "T" if fmt == "iso:strict" else " "
            fmt = {"date": "%F", "time": "%T%.f"}.get(logical.kind,
                                                       f"%F{sep}%T{fraction}{offset}")
        kind = {"date": "Date", "time": "Time"}.get(
            logical.kind, "timezone-aware Datetime" if logical.tz else "timezone-naive Datetime")
        try:
            date, time, zone = format_needs(parse_chrono_format(fmt))
        except ValueError as exc:
            msg = (f"`{node!r}`: cannot format {kind} with format {fmt!r}: {exc}; chrono's "
                   "specifiers are listed in docs/temporal.md (`%%` writes a %)")  # fmt: skip
            raise ComputeError(msg) from None
        lacks = {"date": time or zone, "time": date or zone}.get(
            logical.kind, zone and logical.tz is None)
        if lacks:
            if zone and logical.kind == "datetime":
                reads, instead = "a time zone", "give it one first (`.dt.replace_time_zone(...)`)"
            elif zone:
                reads, instead = "a time zone", "leave out the zone's specifiers (%z %Z)"
            elif logical.kind == "date":
                reads = "a time of day"
                instead = "cast it to a Datetime first (`.cast(pl.Datetime)`)"
            else:
                reads, instead = "a date", "write only the time's specifiers (%H %M %S %.f ...)"
            msg = (f"`{node!r}`: cannot format {kind} with format {fmt!r}: it writes {reads}, "
                   f"which a {kind} does not have; {instead}")  # fmt: skip
            raise ComputeError(msg)
        return self.to_string(arg, logical, node, fmt)

    def within_day(self, value: Node, strict: bool, node: Node) -> Node:
        """Nanoseconds as a time of day: outside ``[0, 86400e9)`` an error, or null."""
        ok = self.both("and", self.op("ge", value, 0), self.op("lt", value, 86_400 * 10**9))
        if strict:
            message = (
                f"strict cast to time failed in `{node!r}`: values outside one day's "
                "nanoseconds [0, 86400e9); use `.cast(..., strict=False)` to turn them into "
                "nulls"
            )
            return self.rec(Check(value, ok, message), I64)
        return self.rec(When(ok, value, self.tc.null_of(I64)), I64)

    def widen(self, value: Node, factor: int, strict: bool, target: Logical, node: Node) -> Node:
        """``value * factor`` for a cast to a finer unit: overflow fails or is null, as polars."""
        if factor == 1:
            return value
        hi = (2**63 - 1) // factor
        ok = self.both("and", self.op("ge", value, -hi), self.op("le", value, hi))
        product = self.mul(value, factor)
        if strict:
            message = (
                f"strict cast to {target} failed in `{node!r}`: some values do not fit; use "
                "`.cast(..., strict=False)` to turn them into nulls"
            )
            return self.rec(Check(product, ok, message), I64)
        return self.rec(When(ok, product, self.tc.null_of(I64)), I64)

    def cast_temporal(self, arg: Node, src: Logical, target: Logical, node: Node,
                      strict: bool = True) -> Node:  # fmt: skip
        """A cast between temporal types (floors to coarser units, as polars)."""
        if src.kind == target.kind and src.kind in ("date", "time"):
            return arg
        if target.kind in ("datetime", "duration"):
            if src.kind not in (("datetime", "date") if target.kind == "datetime"
                                else ("duration",)):  # fmt: skip
                raise _cast_error(node, src, target)
            if src.kind == "date":
                factor = _per_day(target.unit)
            elif TIME_UNITS.index(src.unit) <= TIME_UNITS.index(target.unit):
                coarser = self.to_unit(arg, src.unit, target.unit, duration=src.kind == "duration")
                return self.mark(coarser, target)
            else:
                factor = UNIT_PER_SECOND[target.unit] // UNIT_PER_SECOND[src.unit]
            return self.mark(self.widen(self.i64(arg), factor, strict, target, node), target)
        if target.kind == "date":
            if src.kind != "datetime":
                raise _cast_error(node, src, target)
            return self.mark(self.narrow(self.fdiv(arg, _per_day(src.unit)), I32), DATE)
        if target.kind == "time":
            if src.kind != "datetime":
                raise _cast_error(node, src, target)
            rem = self.fmod(arg, _per_day(src.unit))
            return self.mark(self.mul(rem, _ns_per_unit(src.unit)), TIME)
        raise _cast_error(node, src, target)

    def to_physical(self, arg: Node, node: Node) -> Node:
        """The stored integers of a logical value."""
        logical = self.of(arg)
        if logical is None or logical.kind == "string":
            return arg
        if logical.kind == "categorical":
            return self.tc.cast_plain(self.mark(arg, None), U32, strict=False)
        if logical.kind == "enum" and logical.categories:
            # polars stores an enum's codes in the smallest unsigned type that holds a
            # null sentinel beside them: UInt8 below 256 categories, UInt16 below 65536
            n = len(logical.categories)
            stored = DType.UINT8 if n < 2**8 else DType.UINT16 if n < 2**16 else U32
            return self.tc.cast_plain(self.mark(arg, None), stored, strict=False)
        return self.mark(arg, None)

    # -- strings ------------------------------------------------------------------------
    def table(self, arg: Node, recipe: tuple[Any, ...], dtype: DType, *, nullable: bool = False,
              error: str = "") -> Node:  # fmt: skip
        """``recipe`` computed per distinct value of the string ``arg``, gathered by code."""
        spec = self.tc.dicts[arg]
        ref = TableRef(spec, recipe, dtype, nullable)
        return self.rec(Gather(ref, arg, error), dtype)

    def _need_string(self, arg: Node, node: Node) -> None:
        logical = self.of(arg)
        if logical is None or logical.kind != "string":
            got: object = logical if logical is not None else self.tc.types.get(arg)
            if got is None:  # a bare `lit(None)`, or a column of the Null type
                got = "null (a column with no type)"
            msg = f"`{node!r}` needs a String, got {got}"
            if logical is not None and logical.is_string:
                msg += "; cast it first with `.cast(pl.String)`"
            raise SchemaError(msg)

    def str_function(self, op: str, arg: Node, node: Function) -> Node:
        """A ``str`` function, computed once per distinct string."""
        self._need_string(arg, node)
        params = node.options
        if op in ("len_chars", "len_bytes"):
            return self.mark(self.table(arg, (op,), U32), None)
        if op in ("starts_with", "ends_with"):
            return self.mark(self.table(arg, (op, _text(params[0], node)), BOOL), None)
        if op == "contains":
            pattern, literal, strict = _text(params[0], node), bool(params[1]), bool(params[2])
            recipe: tuple[Any, ...] = ("contains", pattern, literal, strict)
            # not strict: an invalid regex gives a table of nulls
            nullable = not (strict or literal)
            return self.mark(self.table(arg, recipe, BOOL, nullable=nullable), None)
        if op == "contains_any":  # polars' Aho-Corasick, each distinct string once
            return self.mark(self.table(arg, ("contains_any", *params), BOOL), None)
        if op == "count_matches":
            pattern, literal = _text(params[0], node), bool(params[1])
            return self.mark(self.table(arg, ("count_matches", pattern, literal), U32), None)
        if op == "find":  # null where the pattern is not found
            recipe = ("find", _text(params[0], node), bool(params[1]), bool(params[2]))
            return self.mark(self.table(arg, recipe, U32, nullable=True), None)
        if op == "to_integer":
            base, strict, target = int(params[0]), bool(params[1]), params[2]
            if base == 10 and target == I64:  # pyarrow's parse of each distinct string
                return self.parse(arg, ("cast", "int64"), I64, None, strict, node)
            return self.parse(arg, ("to_integer", base, target.value), target, None, strict, node)
        if op in ("to_datetime", "to_date", "to_time"):
            fmt = params[0]
            if op in ("to_date", "to_time"):
                target = DATE if op == "to_date" else TIME
                strict = bool(params[1])
            else:
                # polars' unit where none is given: of the format's fractional seconds
                unit = _unit(params[1] or inferred_unit(fmt), node)
                tz = params[2]
                if tz is not None and check_zone(str(tz)) != "UTC":
                    msg = (
                        f"`{node!r}`: colbridge parses into naive or UTC datetimes only "
                        "(local times in other zones can be ambiguous)"
                    )
                    raise UnsupportedOperationError(msg)
                target = Logical("datetime", unit, tz)
                strict = bool(params[3])
            zone = None if fmt is None else zone_specifier(str(fmt))
            if zone is not None:
                msg = (f"`{node!r}`: formats with a time zone or offset ({zone}) are not "
                       "supported; parse in polars, or cut the offset off the strings")  # fmt: skip
                raise UnsupportedOperationError(msg)
            unreadable = None if fmt is None else unreadable_specifier(str(fmt))
            if unreadable is not None:  # else every value would be null
                msg = (f"`{node!r}`: the format specifier {unreadable} is not supported; "
                       "parse in polars, or write the format without it")  # fmt: skip
                raise UnsupportedOperationError(msg)
            # without a format polars infers one from the first values: its errors then
            # (no format fits, an offset without a zone) depend on ``strict``
            recipe = ("strptime", fmt, str(target)) if fmt is not None \
                else ("strptime", None, str(target), strict, repr(node))  # fmt: skip
            why = ""
            if op == "to_time" and fmt is not None and not says_a_time(str(fmt)):
                why = (f" (the format {fmt!r} says no hour and minute, without which "
                       "chrono reads no time: `%H`, or `%I` with `%p`, and `%M`)")  # fmt: skip
            return self.parse(arg, recipe, target.physical, target, strict, node, why)
        if op == "extract":
            # the group's text of each distinct string (a new dictionary), null where a
            # string has none: the codes stay, gated by a table of which strings have one
            spec = ("map", op, self.tc.dicts[arg], *params)
            t = self.tc.types[arg]
            found = self.table(arg, ("extract_found", *params), BOOL)
            texts = self.mark(arg, STRING, spec)
            nothing = self.tc.typed(Literal(None, t))
            return self.mark(self.rec(When(found, texts, nothing), t), STRING, spec)
        if op in ("split", "split_exact", "splitn", "extract_all", "extract_many",
                  "extract_groups"):  # fmt: skip
            raise _not_a_column(node, listed=op not in ("split_exact", "splitn", "extract_groups"))
        if op in STRING_FUNCTIONS:
            # a new dictionary (the function of each distinct string); the codes stay
            return self.mark(arg, STRING, ("map", op, self.tc.dicts[arg], *params))
        msg = f"`str.{op}` is not supported by colbridge expressions (in `{node!r}`)"
        raise UnsupportedOperationError(msg)

    def list_function(self, node: Function) -> Node:
        """One value per row taken of a string's parts (`colbridge.types.string_lists`).

        ``node`` is a ``list.*`` function of a ``str.split`` (through list-to-list
        steps such as ``list.slice``), or ``struct.field`` of a ``str.split_exact`` /
        ``str.splitn``: a recipe computed once per distinct string, into a table (a
        number, a flag) or a new dictionary (a text: the rows keep their codes),
        gated by a table of which strings give one.
        """
        op = node.name.partition(".")[2]
        if node.name in _LIST_STEPS:  # a list still: an output, or the input of another function
            raise _not_a_column(node, listed=True)
        terminal: tuple[Any, ...] = (op, *node.options)
        steps: list[tuple[Any, ...]] = []
        inner = node.args[0]
        while isinstance(inner, Function) and inner.name in _LIST_STEPS:
            steps.append((inner.name[5:], *inner.options))
            inner = inner.args[0]
        split = inner.name[4:] if isinstance(inner, Function) else ""
        wanted = (("split_exact", "splitn", "extract_groups") if node.name == "struct.field"
                  else ("split", "extract_all", "extract_many"))  # fmt: skip
        if split not in wanted:
            made = " or ".join(f"`str.{w}`" for w in wanted)
            msg = (
                f"`{node!r}`: colbridge has no {node.name.partition('.')[0]} columns; it "
                f"takes `{node.name}` only of the parts of a {made} of a String "
                "(compute other lists and structs in polars)"
            )
            raise UnsupportedOperationError(msg)
        assert isinstance(inner, Function)
        if split == "extract_groups":  # a field is one group's `str.extract`
            group = _group_number(node, inner.options[0])
            return self.tc.typed(Function("str.extract", inner.args, (inner.options[0], group)))
        arg = self.tc.check_child(inner.args[0])
        self._need_string(arg, inner)
        if node.name == "struct.field":
            terminal = ("field", _field_index(node, inner))
        recipe = ((split, *inner.options), tuple(reversed(steps)), terminal)
        # a regex polars cannot compile, not strict: a null list for every string
        null_lists = split == "split" and not (recipe[0][3] or recipe[0][4])
        if op in _LIST_NUMBERS:
            dtype, nullable = _LIST_NUMBERS[op]
            nullable = nullable or null_lists
            return self.mark(self.table(arg, ("list_value", recipe), dtype, nullable=nullable),
                             None)  # fmt: skip
        spec = ("map", "list_text", self.tc.dicts[arg], recipe)
        texts = self.mark(arg, STRING, spec)
        if op == "join" and not null_lists:  # a text for every list
            return texts
        error = ""
        if op == "get" and not node.options[1]:
            error = (
                f"`{node!r}`: index {node.options[0]} is out of bounds of some lists; pass "
                "`null_on_oob=True` to get nulls there"
            )
        if op == "item":
            error = (
                f"`{node!r}`: some lists hold more than one part"
                + ("" if node.options[0] else " or none (`allow_empty=True`: null for none)")
                + "; take one with `.list.get(i)`"
            )
        found = self.table(arg, ("list_found", recipe), BOOL, nullable=bool(error), error=error)
        nothing = self.tc.typed(Literal(None, self.tc.types[arg]))
        return self.mark(self.rec(When(found, texts, nothing), self.tc.types[arg]), STRING, spec)

    def replace_strings(self, arg: Node, olds: tuple[str, ...], news: tuple[str, ...]) -> Node:
        """``replace`` of a string or categorical column: its dictionary's strings mapped.

        The rows keep their codes; the result's dictionary is the argument's with each
        string of ``olds`` replaced by its ``news`` (the type stays the argument's).
        """
        logical = self.of(arg)
        assert logical is not None
        spec = ("map", "replace_values", self.tc.dicts[arg], olds, news)
        return self.mark(arg, logical, spec)

    def parse(self, arg: Node, recipe: tuple[Any, ...], dtype: DType, logical: Logical | None,
              strict: bool, node: Node, why: str = "") -> Node:  # fmt: skip
        """Strings converted per distinct value; failures null, or an error when strict.

        ``why``: what makes every value fail, said in the error.
        """
        error = ""
        if strict:
            error = (
                f"strict conversion of strings to {logical or dtype} failed in `{node!r}`: some "
                f"values do not convert{why}; pass `strict=False` to turn them into nulls"
            )
        return self.mark(self.table(arg, recipe, dtype, nullable=True, error=error), logical)

    def is_in(self, node: Function) -> Node:
        """Membership in a list: a table for strings, equalities otherwise."""
        tc = self.tc
        arg = tc.check_child(node.args[0])
        given, nulls_equal = node.options
        values = [v for v in given if v is not None]
        found = self._is_in(node, arg, values)
        if not nulls_equal:
            return found
        # a null row is in the list where the list holds None (polars' nulls_equal)
        is_null = self.rec(Unary("is_null", arg), BOOL)
        null_found = tc.record_bool(Literal(None in given, BOOL))
        return self.mark(self.rec(When(is_null, null_found, found), BOOL), None)

    def _is_in(self, node: Function, arg: Node, values: list[Any]) -> Node:
        tc = self.tc
        logical = self.of(arg)
        if logical is not None and logical.is_string:
            for v in values:
                if not isinstance(v, str):
                    msg = f"`{node!r}`: a string column's `is_in` takes strings, got {v!r}"
                    raise SchemaError(msg)
            return self.mark(self.table(arg, ("is_in", tuple(values)), BOOL), None)
        if logical is not None and logical.is_temporal:
            _temporal_values(node, logical, values)
            if logical.tz is not None:  # aware values of any zone: the same instants in its
                values = _in_zone(values, logical.tz)
        if not values:
            false = tc.record_bool(Literal(False, BOOL))
            return self.mark(self.rec(When(self.rec(Unary("is_not_null", arg), BOOL), false,
                                           tc.null_of(BOOL)), BOOL), None)  # fmt: skip
        # untyped equalities joined in a balanced tree (as deep as log2 of the values),
        # typed once: a typed node is not typed again
        raw = node.args[0]
        terms: list[Node] = [Binary("eq", raw, Constant(v) if _is_temporal_value(v)
                                    else Literal(v)) for v in values]  # fmt: skip
        while len(terms) > 1:
            pairs = [Binary("or", terms[k], terms[k + 1]) for k in range(0, len(terms) - 1, 2)]
            terms = pairs + terms[len(pairs) * 2 :]
        return tc.check_child(terms[0])

    # -- operators ----------------------------------------------------------------------
    def binary(self, node: Binary, left: Node, right: Node) -> Node:
        """``left <op> right`` where a side is logical (or a string constant)."""
        ll, rl = self.of(left), self.of(right)
        if (ll is not None and ll.is_string) or (rl is not None and rl.is_string):
            return self.string_binary(node, left, right, ll, rl)
        tc = self.tc
        op = node.op
        # a Python number or null next to a temporal value takes its stored type
        if ll is None and tc.is_dynamic(left):
            left = self._number_against(left, right, rl, node)
        if rl is None and tc.is_dynamic(right):
            right = self._number_against(right, left, ll, node)
        ll, rl = self.of(left), self.of(right)
        if op in COMPARISONS:
            return self.compare(node, left, right, ll, rl)
        if op in ("add", "sub"):
            return self.add_sub(node, left, right, ll, rl)
        if op in ("mul", "truediv"):
            return self.scale(node, left, right, ll, rl)
        raise _op_error(node, self._kind(left), self._kind(right))

    def _number_against(self, number: Node, other: Node, logical: Logical | None,
                        node: Node) -> Node:  # fmt: skip
        tc = self.tc
        if isinstance(number, Literal) and number.value is None:
            dtype = tc.types[other]
            return self.mark(tc.null_of(dtype), logical) if logical is not None \
                else tc.null_of(dtype)  # fmt: skip
        if node.op in COMPARISONS and logical is not None:  # type: ignore[attr-defined]
            return tc.type_dynamic_against(number, tc.types[other], node)
        return tc.materialize(number)

    def compare(self, node: Binary, left: Node, right: Node, ll: Logical | None,
                rl: Logical | None) -> Node:  # fmt: skip
        """A comparison of temporal values (in a common unit)."""
        tc = self.tc
        if ll is None or rl is None:
            plain = right if ll is not None else left
            if tc.types[plain].is_integer and isinstance(plain, Literal):
                # a Python number compares with the stored integers, as polars does
                return self.rec(Binary(node.op, left, right), BOOL)
            raise _op_error(node, self._kind(left), self._kind(right))
        a, b = self._common(node, left, right, ll, rl)
        return self.mark(self.rec(Binary(node.op, a, b), BOOL), None)

    def _common(self, node: Node, left: Node, right: Node, ll: Logical,
                rl: Logical) -> tuple[Node, Node]:  # fmt: skip
        """Both sides in one type: the coarser unit, a date as a datetime (polars' supertype)."""
        kinds = {ll.kind, rl.kind}
        if kinds <= {"datetime", "date"} and "datetime" in kinds:
            if ll.kind == rl.kind and ll.tz != rl.tz:
                msg = (
                    f"`{node!r}`: datetimes in different time zones ({ll.tz} and {rl.tz}) "
                    "do not compare; convert one with `.dt.convert_time_zone(...)`"
                )
                raise SchemaError(msg)
            unit = coarser_unit(ll.unit or "ns", rl.unit or "ns") if ll.unit and rl.unit \
                else (ll.unit or rl.unit)  # fmt: skip
            return self.as_datetime(left, ll, unit), self.as_datetime(right, rl, unit)
        if ll.kind != rl.kind:
            raise _op_error(node, ll, rl)
        if ll.kind == "duration":
            unit = coarser_unit(ll.unit, rl.unit)
            # polars truncates a duration column to the other column's coarser unit, but
            # floors it to a literal's (`-1ns < timedelta(0)` holds, `-1ns == -1us` too)
            trunc = not (_is_literal(left) or _is_literal(right))
            return (self.to_unit(left, ll.unit, unit, duration=trunc),
                    self.to_unit(right, rl.unit, unit, duration=trunc))  # fmt: skip
        return left, right

    def add_sub(self, node: Binary, left: Node, right: Node, ll: Logical | None,
                rl: Logical | None) -> Node:  # fmt: skip
        """``+`` and ``-`` of dates, datetimes and durations."""
        op = node.op
        if ll is None or rl is None:
            raise _op_error(node, self._kind(left), self._kind(right))
        kinds = (ll.kind, rl.kind)
        if kinds == ("duration", "duration"):
            unit = coarser_unit(ll.unit, rl.unit)
            a = self.to_unit(left, ll.unit, unit, duration=True)
            b = self.to_unit(right, rl.unit, unit, duration=True)
            return self.mark(self.op(op, a, b), Logical("duration", unit))
        if kinds in (("datetime", "duration"), ("duration", "datetime")) and (
            op == "add" or kinds[0] == "datetime"
        ):
            tz = ll.tz if ll.kind == "datetime" else rl.tz
            unit = coarser_unit(ll.unit, rl.unit)
            a = self.to_unit(left, ll.unit, unit, duration=ll.kind == "duration")
            b = self.to_unit(right, rl.unit, unit, duration=rl.kind == "duration")
            return self.mark(self.op(op, a, b), Logical("datetime", unit, tz))
        if kinds in (("date", "duration"), ("duration", "date")) and (
            op == "add" or kinds[0] == "date"
        ):
            d_node, du_node, du_l = (left, right, rl) if ll.kind == "date" else (right, left, ll)
            # polars adds in microseconds at the finest (a nanosecond duration is truncated
            # to them), then floors to days
            unit = coarser_unit("us", du_l.unit)
            as_dt = self.as_datetime(d_node, DATE, unit)
            du = self.to_unit(du_node, du_l.unit, unit, duration=True)
            value = self.op(op, as_dt, du) if d_node is left else self.op(op, du, as_dt)
            return self.mark(self.narrow(self.fdiv(value, _per_day(unit)), I32), DATE)
        if op == "sub" and kinds == ("time", "time"):
            return self.mark(self.op("sub", left, right), Logical("duration", "ns"))
        if op == "sub" and kinds == ("date", "date"):
            diff = self.op("sub", left, right)
            return self.mark(self.mul(diff, _per_day("us")), Logical("duration", "us"))
        if op == "sub" and set(kinds) <= {"datetime", "date"}:
            a, b = self._common(node, left, right, ll, rl)
            units = [lg.unit for lg in (ll, rl) if lg.kind == "datetime"]
            unit = units[0] if len(units) == 1 else coarser_unit(*units)
            return self.mark(self.op("sub", a, b), Logical("duration", unit))
        raise _op_error(node, ll, rl)

    def scale(self, node: Binary, left: Node, right: Node, ll: Logical | None,
              rl: Logical | None) -> Node:  # fmt: skip
        """A duration times or divided by a number; a duration divided by a duration."""
        tc = self.tc
        op = node.op
        if op == "truediv" and ll is not None and rl is not None:
            if ll.kind == rl.kind == "duration":
                # polars brings the divisor to the dividend's unit
                a = left
                b = self.to_unit(right, rl.unit, ll.unit, duration=True)
                a = tc.cast_plain(self.mark(a, None), F64, False)
                b = tc.cast_plain(self.mark(b, None), F64, False)
                return self.mark(self.rec(Binary("truediv", a, b), F64), None)
            raise _op_error(node, ll, rl)
        if ll is not None and ll.kind == "duration" and rl is None:
            duration, number, logical = left, right, ll
        elif rl is not None and rl.kind == "duration" and ll is None and op == "mul":
            duration, number, logical = right, left, rl
        else:
            raise _op_error(node, self._kind(left), self._kind(right))
        t = tc.types[number]
        if t.is_bool:
            raise _op_error(node, ll or t, rl or t)
        if t.is_float:
            duration_f = tc.cast_plain(self.mark(duration, None), t, False)
            if op == "truediv" and isinstance(number, Literal) and number.value:
                # polars divides by a constant as a multiplication by its reciprocal
                op = "mul"
                number = self.rec(Literal(1.0 / float(number.value), t), t)
            product = self.rec(Binary("mul" if op == "mul" else "truediv", duration_f, number), t)
            value = tc.cast_plain(product, I64, strict=False)  # toward zero, as polars
            return self.mark(value, logical)
        number = self.i64(tc.cast_plain(number, I64, strict=False) if t is not I64 else number)
        value = self.op("mul" if op == "mul" else "floordiv", duration, number)
        return self.mark(value, logical)

    def affixed(self, node: Binary, left: Node, right: Node, ll: Logical | None,
                rl: Logical | None) -> Node:  # fmt: skip
        """``s + "x"`` and ``"x" + s``: polars joins the strings.

        A String, null where ``s`` is null, of a string, categorical or enum column
        alike. With a text constant on one side, each distinct string of the column's
        dictionary is joined to it (`colbridge.types.string_maps` ``affix``); the rows
        keep their codes. Two strings are joined as `concat_str` joins them (`join_typed`).
        """
        tc = self.tc
        texts = [isinstance(side, Constant) and isinstance(side.value, str)
                 for side in (left, right)]  # fmt: skip
        if all(texts):
            return tc.typed(Constant(left.value + right.value))  # type: ignore[attr-defined]
        for constant, column, logical, prefix in ((right, left, ll, False),
                                                  (left, right, rl, True)):  # fmt: skip
            if isinstance(constant, Constant) and isinstance(constant.value, str) \
                    and logical is not None and logical.is_string:  # fmt: skip
                text = constant.value
                affix = (text, "") if prefix else ("", text)
                return self.mark(column, STRING, ("map", "affix", tc.dicts[column], *affix))
        # two strings (or a null): new strings, as `concat_str` makes them
        return self.join_typed([left, right], "", False, node)

    def string_binary(self, node: Binary, left: Node, right: Node, ll: Logical | None,
                      rl: Logical | None) -> Node:  # fmt: skip
        """A comparison of strings: by label, through lookup tables (``+``: `affixed`)."""
        tc = self.tc
        op = node.op
        if op == "add" and _joinable(left, ll) and _joinable(right, rl):
            return self.affixed(node, left, right, ll, rl)
        if op not in COMPARISONS:
            msg = (
                f"`{node!r}`: `{op}` is not defined for strings in colbridge expressions; "
                "strings compare (== != < <= > >=), match (`str.starts_with`, `is_in`) and "
                "convert (`str.to_integer`, `cast`)"
            )
            raise UnsupportedOperationError(msg)
        # null on either side: every row is null
        for side, other in ((left, right), (right, left)):
            if isinstance(side, Literal) and side.value is None:
                null = tc.null_of(tc.types[other]) if not tc.is_dynamic(other) else \
                    tc.null_of(I32)  # fmt: skip
                return self.mark(self.rec(Binary("eq", null, null), BOOL), None)
        if ll is None or rl is None or not (ll.is_string and rl.is_string):
            raise _op_error(node, self._kind(left), self._kind(right))
        if isinstance(left, Constant) and isinstance(right, Constant):
            return tc.record_bool(Literal(_compare_py(op, left.value, right.value), BOOL))
        if isinstance(left, Constant) or isinstance(right, Constant):
            right_const = isinstance(right, Constant)
            if isinstance(left, Constant):
                column, value, logical = right, left.value, rl
            else:
                assert isinstance(right, Constant)
                column, value, logical = left, right.value, ll
            flipped = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
            sym = op if right_const else flipped.get(op, op)
            ordered = logical.kind == "enum" and sym not in ("eq", "ne")
            recipe = ("enum_cmp" if ordered else "cmp", sym, value)
            return self.mark(self.table(column, recipe, BOOL), None)
        kinds = {ll.kind, rl.kind}
        if kinds == {"categorical", "enum"}:
            msg = f"`{node!r}`: a Categorical and an Enum do not compare; cast one of them"
            raise SchemaError(msg)
        if kinds == {"enum"}:
            # two enums: one set of categories (checked by the runtime), in category order
            spec: DictSpec = ("enum", (tc.dicts[left], tc.dicts[right]))
            a = self.table(left, ("remap", spec), I32)
            b = self.table(right, ("remap", spec), I32)
            return self.mark(self.rec(Binary(op, a, b), BOOL), None)
        if "enum" in kinds and op not in ("eq", "ne"):
            return self.enum_order(node, left, right, ll)
        # two string values (an enum by == and != too, as polars: a string that is not a
        # category is just unequal): compare their ranks among the values of both dictionaries
        union = ("union", (tc.dicts[left], tc.dicts[right]))
        a = self.table(left, ("rank", union), I64)
        b = self.table(right, ("rank", union), I64)
        return self.mark(self.rec(Binary(op, a, b), BOOL), None)

    def enum_order(self, node: Binary, left: Node, right: Node, ll: Logical) -> Node:
        """An enum and a string by ``< <= > >=``: in category order, as polars 2.1.

        polars casts the strings to the enum: each side becomes a position among the
        enum's categories (the remap of two enums, with one of them). A string that is
        not a category fails on a row where the enum is not null (polars looks it up
        row by row, only where both sides are valid); elsewhere it is never looked up.
        """
        tc = self.tc
        enum, strings = (left, right) if ll.kind == "enum" else (right, left)
        enum_expr, strings_expr = (node.left, node.right) if enum is left else \
            (node.right, node.left)  # fmt: skip
        categories: DictSpec = ("enum", (tc.dicts[enum],))
        position = self.table(enum, ("remap", categories), I32)
        codes = tc.types[strings]
        # the strings' codes where the enum is not null, else null: only those are looked up
        enum_valid = self.rec(Unary("is_not_null", enum), BOOL)
        looked_up = self.rec(When(enum_valid, strings, tc.null_of(codes)), codes)
        message = (
            f"`{node!r}`: `{strings_expr!r}` holds a string that is not a category of "
            f"`{enum_expr!r}`, on a row where that is not null: {ENUM_CAST_FAILED}, as "
            "polars does (polars raises InvalidOperationError there too); keep only the rows "
            f"whose strings are categories (`.filter({strings_expr!r}.is_in([...]))`), make "
            f"the others null first (`when({strings_expr!r}.is_in([...]))"
            f".then({strings_expr!r})`), or compare as strings with "
            f"`{enum_expr!r}.cast(pl.String)`"
        )
        ref = TableRef(tc.dicts[strings], ("remap", categories), I32, nullable=True)
        cast = self.rec(Gather(ref, looked_up, message), I32)
        a, b = (position, cast) if enum is left else (cast, position)
        return self.mark(self.rec(Binary(node.op, a, b), BOOL), None)

    # -- when, coalesce, reductions -----------------------------------------------------
    def merge(
        self, node: Node, branches: list[Node]
    ) -> tuple[list[Node], Logical, DictSpec | None]:
        """Branches of ``when``/``coalesce`` in one logical type (nulls take it too)."""
        tc = self.tc
        logicals = [self.of(b) for b in branches if not _is_null(b)]
        if any(lg is None for lg in logicals) or not logicals:
            kinds = [str(self.of(b) or tc.types.get(b) or "a number") for b in branches]
            msg = f"`{node!r}`: branches of types {kinds} have no common type"
            raise SchemaError(msg)
        first = logicals[0]
        assert first is not None
        if first.is_string:
            return self._merge_strings(node, branches)
        result = first
        for lg in logicals[1:]:
            assert lg is not None
            if lg.kind != result.kind:
                if {lg.kind, result.kind} == {"date", "datetime"}:
                    result = lg if lg.kind == "datetime" else result
                    continue
                raise _op_error(node, result, lg)
            if lg.kind in ("datetime", "duration"):
                if lg.tz != result.tz:
                    raise _op_error(node, result, lg)
                result = Logical(lg.kind, coarser_unit(lg.unit, result.unit), lg.tz)
        out = []
        for b in branches:
            if _is_null(b):
                out.append(tc.null_of(result.physical))
                continue
            lg = self.of(b)
            assert lg is not None
            if result.kind == "datetime":
                out.append(self.as_datetime(b, lg, result.unit))
            elif result.kind == "duration":
                out.append(self.to_unit(b, lg.unit, result.unit, duration=True))
            else:
                out.append(b)
        return out, result, None

    def _merge_strings(self, node: Node, branches: list[Node]) -> tuple[list[Node], Logical,
                                                                        DictSpec]:  # fmt: skip
        """String branches in polars' supertype, each as a code into the result's dictionary.

        String literals (and null strings) adapt to the other branches (in ``coalesce``
        only when it has two arguments, as polars 2.1); of the rest, any String makes
        the result String, else all Categorical stay Categorical and all Enum stay
        Enum. Categorical with Enum has no supertype (polars 2.1).
        """
        tc = self.tc
        # each branch: None (a null), a str (a literal that adapts), or a node with a dictionary
        parts: list[str | Node | None] = []
        literals: list[str] = []
        specs: list[DictSpec] = []
        kinds: set[str] = set()
        for b in branches:
            if _is_null(b):
                parts.append(None)
                continue
            lg = self.of(b)
            if lg is None or not lg.is_string:
                raise _op_error(node, STRING, lg or tc.types[b])
            # a literal is one string in a dictionary of its own; `lit("q").str.to_uppercase()`
            # is not a literal any more (its dictionary maps the literal's), as in polars
            own: DictSpec = tc.dicts[b]
            if lg.kind == "string" and own == ("lit", ()):
                parts.append(None)  # `lit(None, dtype=pl.String)`
            elif lg.kind == "string" and own[0] == "lit" and len(own[1]) == 1:
                value = own[1][0]
                parts.append(value)
                if value not in literals:
                    literals.append(value)
            else:
                parts.append(b)
                kinds.add(lg.kind)
                if tc.dicts[b] not in specs:
                    specs.append(tc.dicts[b])
        if isinstance(node, Coalesce) and len(branches) > 2 and any(
            isinstance(p, str) or (p is None and not _is_null(b))
            for p, b in zip(parts, branches, strict=True)
        ):
            kinds.add("string")  # polars 2.1 adapts string literals in two-way coalesces only
        result = _string_supertype(node, kinds)
        spec: DictSpec
        if result.kind == "enum":
            # the categories are data: the runtime checks that the enums agree, and
            # looks each literal up among them; in `when` a literal that is not a
            # category fails, in `coalesce` it is null (polars 2.1 does both)
            spec = ("enum", tuple(specs))
            strict = not isinstance(node, Coalesce)
        else:
            spec = ("union", (("lit", tuple(literals)), *specs))
        out = []
        for part in parts:
            if part is None:
                out.append(tc.null_of(I32))
            elif isinstance(part, str) and result.kind == "enum":
                ref = TableRef(("lit", (part,)), ("enum_code", spec, strict), I32, not strict)
                out.append(self.rec(Gather(ref, self.const(0, I32)), I32))
            elif isinstance(part, str):
                out.append(self.const(literals.index(part), I32))
            else:
                out.append(self.table(part, ("remap", spec), I32))
        return out, result, spec

    def when(self, node: When, cond: Node, then: Node, other: Node) -> Node:
        """``when/then/otherwise`` with logical branches."""
        try:
            (a, b), logical, spec = self.merge(node, [then, other])
        except SchemaError as exc:
            if not _is_shift_fill(node):
                raise
            # the `when` that `Expr.shift` writes for a fill that is not a number
            assert isinstance(node.then, Scan)
            kinds = [str(self.of(b) or self.tc.types.get(b) or "a number") for b in (then, other)]
            msg = (
                f"`{node.then.arg!r}.shift({node.then.options[0]}, fill_value=...)`: the "
                f"column is {kinds[0]} and the fill {kinds[1]}, which have no common type "
                "here (polars makes numbers and strings strings; colbridge formats no "
                "numbers as strings): give a fill of the column's kind, or cast first"
            )
            raise SchemaError(msg) from exc
        dtype = self.tc.types[a]
        return self.mark(self.rec(When(cond, a, b), dtype), logical, spec)

    def coalesce(self, node: Coalesce, args: list[Node]) -> Node:
        """``coalesce``/``fill_null`` with logical arguments."""
        parts, logical, spec = self.merge(node, args)
        dtype = self.tc.types[parts[0]]
        return self.mark(self.rec(Coalesce(tuple(parts)), dtype), logical, spec)

    def unary(self, node: Unary, arg: Node) -> Node:
        """``-`` and ``abs`` of a duration."""
        logical = self.of(arg)
        assert logical is not None
        if node.op in ("neg", "abs") and logical.kind == "duration":
            return self.mark(self.rec(Unary(node.op, arg), I64), logical)
        msg = f"`{node!r}` is not defined for {logical}"
        raise SchemaError(msg)

    def agg(self, node: Agg | GroupAgg, arg: Node,
            make: Callable[[str, Node], Node]) -> Node:  # fmt: skip
        """A reduction of a logical value (min/max/first/last keep the type).

        ``make(func, value)`` builds the reduction node: whole-column or per group.
        """
        logical = self.of(arg)
        assert logical is not None
        tc = self.tc
        func = node.func
        if func in ("first", "last"):
            return self.mark(self.rec(make(func, arg), tc.types[arg]), logical,
                             self.tc.dicts.get(arg))  # fmt: skip
        if logical.is_temporal and func in ("min", "max"):
            return self.mark(self.rec(make(func, arg), logical.physical), logical)
        if logical.is_string and func in ("min", "max"):
            return self._least_or_greatest_string(func, arg, logical, make)
        if logical.kind == "duration" and func == "sum":
            return self.mark(self.rec(make(func, arg), I64), logical)
        if logical.kind in ("duration", "datetime", "time") and func == "mean":
            mean = self.rec(make(func, arg), F64)
            return self.mark(tc.cast_plain(mean, I64, strict=False), logical)
        if logical.kind == "date" and func == "mean":
            # polars: the mean day in microseconds, truncated: a Datetime[us]
            value = self.rec(make(func, arg), F64)
            per_day = self.rec(Literal(86_400_000_000.0, F64), F64)
            value = self.rec(Binary("mul", value, per_day), F64)
            return self.mark(tc.cast_plain(value, I64, strict=False), Logical("datetime", "us"))
        if logical.is_temporal and func in ("median", "quantile"):
            # polars: the quantile of the integers (Float64), truncated toward zero back
            # to the type; a date's in days, times the microseconds of a day: Datetime[us]
            value = self.rec(make(func, arg), F64)
            if logical.kind == "date":
                per_day = self.rec(Literal(86_400_000_000.0, F64), F64)
                value = self.rec(Binary("mul", value, per_day), F64)
                logical = Logical("datetime", "us")
            return self.mark(tc.cast_plain(value, I64, strict=False), logical)
        column = arg.arg if isinstance(arg, Reinterpret) else arg
        where = ""
        if isinstance(column, Column) and column.name in tc.schema:
            where = f"column `{column.name}` has type {tc.schema[column.name].arrow_type}: "
        msg = (f"`{node!r}`: {where}`{func}` of {logical} is not supported by colbridge "
               "expressions")  # fmt: skip
        raise UnsupportedTypeError(msg)

    def _least_or_greatest_string(self, func: str, arg: Node, logical: Logical,
                                  make: Callable[[str, Node], Node]) -> Node:  # fmt: skip
        """``min``/``max`` of strings: in text order (an enum's in category order), as polars.

        The reduction runs over each string's rank among its dictionary's sorted values
        (a table gathered by code), and the least or greatest rank is read back as a
        code of that string (a second table, by rank): the result keeps the column's
        dictionary, as ``first``/``last`` do. An enum's codes are its order already.
        """
        tc = self.tc
        spec = tc.dicts[arg]
        code_type = tc.types[arg]
        if logical.kind == "enum":
            return self.mark(self.rec(make(func, arg), code_type), logical, spec)
        ranks = self.table(arg, ("rank", spec), I64)
        best = self.rec(make(func, ranks), I64)
        code = self.rec(Gather(TableRef(spec, ("code_of_rank",), code_type), best), code_type)
        return self.mark(code, logical, spec)


def _is_null(node: Node) -> bool:
    return isinstance(node, Literal) and node.value is None and node.dtype is None


def _string_supertype(node: Node, kinds: set[str]) -> Logical:
    """Polars' supertype of the string kinds of branches that are not literals."""
    if {"categorical", "enum"} <= kinds:
        msg = f"`{node!r}`: Categorical and Enum values have no common type; cast one of them"
        raise SchemaError(msg)
    if "string" in kinds or not kinds:
        return STRING
    return Logical("enum") if "enum" in kinds else Logical("categorical")


#: the Python values a temporal column's `is_in` takes, by its kind (`bool` and numbers
#: never: polars refuses them, as it refuses another kind's values)
_IS_IN_VALUES: dict[str, tuple[type, ...]] = {"date": (_dt.date,), "datetime": (_dt.datetime,),
                                               "duration": (_dt.timedelta,), "time": (_dt.time,)}


def _temporal_values(node: Node, logical: Logical, values: list[Any]) -> None:
    """Refuse values of another kind in a temporal column's `is_in`, as polars does.

    polars takes only values of the column's kind: dates for a Date column (not
    datetimes, nor their days), datetimes for a Datetime column (of any unit; aware ones,
    in any zone, for a column with a time zone, naive ones for a column without),
    timedeltas for a Duration, times for a Time; never numbers or strings.
    """
    wanted = _IS_IN_VALUES[logical.kind]
    for v in values:
        fits = isinstance(v, wanted) and not (logical.kind == "date"
                                              and isinstance(v, _dt.datetime))  # fmt: skip
        aware = isinstance(v, _dt.datetime) and v.tzinfo is not None
        if fits and logical.kind == "datetime" and aware != (logical.tz is not None):
            what = "time-zone-aware" if aware else "naive"
            column = f"column with time zone {logical.tz}" if logical.tz else "naive column"
            msg = (
                f"`{node!r}`: cannot look for {what} datetimes in a {column} ({logical}) "
                f"(polars refuses it too): give "
                f"{'aware datetimes (tzinfo set)' if logical.tz else 'naive datetimes'}, or "
                "convert the column first (`dt.replace_time_zone(...)`)"
            )
            raise SchemaError(msg)
        if not fits:
            kind = type(v).__name__
            instead = {"date": "dates (`datetime.date`)", "datetime": "datetimes "
                       "(`datetime.datetime`)", "duration": "timedeltas (`datetime.timedelta`)",
                       "time": "times (`datetime.time`)"}[logical.kind]  # fmt: skip
            if logical.kind == "date" and isinstance(v, _dt.datetime):
                instead += ", e.g. the values' days `[v.date() for v in values]`"
            elif logical.kind == "datetime" and isinstance(v, _dt.date):
                instead += (", e.g. the values cast: `[datetime.combine(d, time()) for d in "
                            "values]`, or look for the column's days: "
                            "`.dt.date().is_in([...])`")  # fmt: skip
            msg = (
                f"`{node!r}`: cannot look for {logical} values in a list of {kind} values "
                f"(polars refuses it too: 'is_in' takes values of the column's kind); give "
                f"{instead}"
            )
            raise SchemaError(msg)


def _in_zone(values: list[Any], tz: str) -> list[Any]:
    """Aware datetimes as the same instants in the zone ``tz`` (as they are if unknown)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        return values
    return [v.astimezone(zone) for v in values]


def _is_temporal_value(value: Any) -> bool:
    return isinstance(value, (_dt.date, _dt.time, _dt.timedelta, str))


def _text(value: Any, node: Node) -> str:
    if not isinstance(value, str):
        msg = f"`{node!r}`: expected a string, got {value!r}"
        raise SchemaError(msg)
    return value


def _unit(value: Any, node: Node) -> str:
    unit = str(value).replace("μ", "u")
    if unit not in TIME_UNITS:
        msg = f"`{node!r}`: time unit {value!r} is not one of {TIME_UNITS}"
        raise SchemaError(msg)
    return unit


def _compare_py(op: str, a: Any, b: Any) -> bool:
    import operator

    fn = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
          "gt": operator.gt, "ge": operator.ge}[op]  # fmt: skip
    return bool(fn(a.encode(), b.encode()))


def _cast_error(node: Node, src: Logical, target: Logical) -> SchemaError:
    return SchemaError(f"`{node!r}`: casting from {src} to {target} is not supported")


def _is_literal(node: Node) -> bool:
    """A typed literal: a number, or one read as a date, time or duration."""
    return isinstance(node.arg if isinstance(node, Reinterpret) else node, Literal)


def _op_error(node: Node, a: Any, b: Any) -> SchemaError:
    sym = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
           "truncdiv": "truncdiv",
           "pow": "**", "and": "&", "or": "|", "xor": "^"}  # fmt: skip
    op = getattr(node, "op", "")
    what = f"`{sym.get(op, op)}`" if op else "this operation"
    return SchemaError(
        f"`{node!r}`: {what} is not defined for {a} and {b} "
        "(datetimes subtract to durations, durations add to datetimes and dates, "
        "durations scale by numbers; compare values of the same kind)"
    )


_ = parse_logical  # re-exported for the API's casts
