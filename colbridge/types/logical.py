"""Logical types: dates, datetimes, durations, times, strings and categories over integer storage.

Stage: types. Kernels compute with the primitive `DType`s only; a logical type
says what those integers mean and which Arrow type a result column gets:

============  ===================  ======================  ==========================
polars        Arrow                kernel value            meaning
============  ===================  ======================  ==========================
Date          date32               int32                   days since 1970-01-01
Datetime(u)   timestamp[u, tz]     int64                   units since the epoch (UTC)
Duration(u)   duration[u]          int64                   units
Time          time64[ns]           int64                   nanoseconds since midnight
String        (large_)string,      the code of the value   the dictionary holds the
              string_view          in a dictionary         strings, built once per
                                                           compute (a copy, reported)
Categorical   dictionary<i, str>   the dictionary index    the column's own dictionary
Enum          dictionary<i, str>,  the dictionary index    categories in a fixed order
              ordered
============  ===================  ======================  ==========================

``u`` is ``ns``, ``us`` or ``ms``; a time zone only changes what the fields of a
datetime are (they are local), never the stored value.
"""

from __future__ import annotations

import datetime as _dt
import functools
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from colbridge.errors import UnsupportedTypeError
from colbridge.types.dtypes import DType

__all__ = [
    "NULL",
    "TEMPORAL_KINDS",
    "TIME_UNITS",
    "UNIT_PER_SECOND",
    "Logical",
    "coarser_unit",
    "logical_from_arrow",
    "parse_logical",
]

#: The time units of datetimes and durations, finest first.
TIME_UNITS = ("ns", "us", "ms")
#: How many of each unit make one second.
UNIT_PER_SECOND = {"ns": 1_000_000_000, "us": 1_000_000, "ms": 1_000}
TEMPORAL_KINDS = frozenset({"date", "datetime", "duration", "time"})
STRING_KINDS = frozenset({"string", "categorical", "enum"})


@dataclass(frozen=True)
class Logical:
    """A logical type: what the integers of a kernel value mean.

    ``kind`` is ``date``, ``datetime``, ``duration``, ``time``, ``string``,
    ``categorical``, ``enum`` or ``null`` (polars' Null type, of outputs only);
    ``unit`` the time unit of datetimes and durations (``ns`` for time); ``tz`` a
    datetime's time zone; ``categories`` an enum's categories in order.
    """

    kind: str
    unit: str = ""
    tz: str | None = None
    categories: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.kind == "datetime":
            return f"datetime[{self.unit}{', ' + self.tz if self.tz else ''}]"
        if self.kind == "duration":
            return f"duration[{self.unit}]"
        if self.kind == "enum":
            return f"enum{list(self.categories)!r}"
        return self.kind

    @property
    def is_temporal(self) -> bool:
        """True for date, datetime, duration and time."""
        return self.kind in TEMPORAL_KINDS

    @property
    def is_string(self) -> bool:
        """True for strings, categoricals and enums (values held in a dictionary)."""
        return self.kind in STRING_KINDS

    @property
    def physical(self) -> DType:
        """The kernel value type of a temporal type (string kinds depend on the column)."""
        if self.kind == "date":
            return DType.INT32
        if self.kind == "null":
            return DType.INT8  # any type would do (a boolean null literal is `ROWS`)
        if self.is_temporal:
            return DType.INT64
        return DType.UINT32

    @property
    def arrow(self) -> pa.DataType:
        """The Arrow type of a result column."""
        if self.kind == "date":
            return pa.date32()
        if self.kind == "datetime":
            return pa.timestamp(self.unit, self.tz)
        if self.kind == "duration":
            return pa.duration(self.unit)
        if self.kind == "time":
            return pa.time64("ns")
        if self.kind == "string":
            return pa.large_string()
        if self.kind == "null":
            return pa.null()
        return pa.dictionary(pa.uint32(), pa.large_string(), ordered=self.kind == "enum")

    def polars(self) -> Any:
        """The polars dtype (imports polars)."""
        import polars as pl

        if self.kind == "date":
            return pl.Date
        if self.kind == "datetime":
            return pl.Datetime(self.unit, self.tz)  # type: ignore[arg-type]
        if self.kind == "duration":
            return pl.Duration(self.unit)  # type: ignore[arg-type]
        if self.kind == "time":
            return pl.Time
        if self.kind == "string":
            return pl.String
        if self.kind == "null":
            return pl.Null
        if self.kind == "enum":
            return pl.Enum(list(self.categories))
        return pl.Categorical


DATE = Logical("date")
TIME = Logical("time", "ns")
STRING = Logical("string")
CATEGORICAL = Logical("categorical")
#: polars' Null type: no value in any row (an output only; kernels compute nulls)
NULL = Logical("null")


def coarser_unit(a: str, b: str) -> str:
    """The coarser of two time units (polars' supertype of ``us`` and ``ns`` is ``us``)."""
    return a if TIME_UNITS.index(a) >= TIME_UNITS.index(b) else b


def _check_tz(tz: str | None) -> str | None:
    if tz is None:
        return None
    from colbridge.types.timezones import check_zone

    return check_zone(tz)


def logical_from_arrow(arrow_type: pa.DataType) -> Logical | None:
    """The logical type of an Arrow column type, or None for primitives and unsupported types.

    Examples
    --------
    >>> import pyarrow as pa
    >>> logical_from_arrow(pa.timestamp("us", tz="UTC")).kind
    'datetime'
    >>> logical_from_arrow(pa.float64()) is None
    True
    """
    if isinstance(arrow_type, pa.BaseExtensionType):
        return None  # none of them; and a user's extension type need not be hashable
    return _logical_of(arrow_type)


@functools.lru_cache(maxsize=512)  # asked per column per compute: 10 us a warm compute
def _logical_of(arrow_type: pa.DataType) -> Logical | None:
    if pa.types.is_date32(arrow_type):
        return DATE
    if pa.types.is_timestamp(arrow_type):
        if arrow_type.unit == "s":
            return None  # polars has no second unit; the caller explains
        return Logical("datetime", arrow_type.unit, _check_tz(arrow_type.tz))
    if pa.types.is_duration(arrow_type):
        if arrow_type.unit == "s":
            return None
        return Logical("duration", arrow_type.unit)
    if pa.types.is_time64(arrow_type) and arrow_type.unit == "ns":
        return TIME
    if (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or pa.types.is_string_view(arrow_type)
    ):
        return STRING
    if pa.types.is_dictionary(arrow_type):
        value_type = arrow_type.value_type
        if not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)
                or pa.types.is_string_view(value_type)):  # fmt: skip
            return None
        return Logical("enum" if arrow_type.ordered else "categorical")
    return None


_NAMES: dict[str, Logical] = {
    "date": DATE,
    "date32": DATE,
    "time": TIME,
    "time64[ns]": TIME,
    "str": STRING,
    "string": STRING,
    "utf8": STRING,
    "large_string": STRING,
    "categorical": CATEGORICAL,
    "category": CATEGORICAL,
    "datetime": Logical("datetime", "us"),
    "duration": Logical("duration", "us"),
}


def parse_logical(spec: Any) -> Logical | None:
    """A logical type from a polars dtype, an Arrow type, a `Logical` or a name; else None.

    Names: ``"date"``, ``"time"``, ``"string"``, ``"categorical"``,
    ``"datetime[us]"``, ``"datetime[ms, Europe/London]"``, ``"duration[ns]"``.

    Examples
    --------
    >>> str(parse_logical("datetime[ms, UTC]"))
    'datetime[ms, UTC]'
    >>> parse_logical("float32") is None
    True
    """
    if isinstance(spec, Logical):
        return spec
    if isinstance(spec, pa.DataType):
        if pa.types.is_dictionary(spec) and not pa.types.is_dictionary(spec.value_type):
            return logical_from_arrow(spec)
        return logical_from_arrow(spec)
    if spec is _dt.date:
        return DATE
    if spec is _dt.datetime:
        return Logical("datetime", "us")
    if spec is _dt.timedelta:
        return Logical("duration", "us")
    if spec is _dt.time:
        return TIME
    if spec is str:
        return STRING
    if isinstance(spec, str):
        return _parse_name(spec)
    module = getattr(spec, "__module__", "") or getattr(type(spec), "__module__", "")
    if module.startswith("polars"):
        return _parse_polars(spec)
    return None


def _parse_name(text: str) -> Logical | None:
    name = text.strip().lower()
    hit = _NAMES.get(name)
    if hit is not None:
        return hit
    for kind in ("datetime", "duration", "timestamp"):
        if name.startswith(kind + "[") and name.endswith("]"):
            parts = [p.strip() for p in text.strip()[len(kind) + 1 : -1].split(",")]
            unit = parts[0].replace("μ", "u")
            if unit not in TIME_UNITS:
                msg = f"time unit {parts[0]!r} in {text!r} is not one of {TIME_UNITS}"
                raise UnsupportedTypeError(msg)
            if kind == "duration":
                return Logical("duration", unit)
            tz = parts[1] if len(parts) > 1 and parts[1] else None
            return Logical("datetime", unit, _check_tz(tz))
    return None


def _parse_polars(spec: Any) -> Logical | None:
    name = spec.__name__ if isinstance(spec, type) else type(spec).__name__
    if name == "Date":
        return DATE
    if name == "Time":
        return TIME
    if name in ("String", "Utf8"):
        return STRING
    if name == "Categorical":
        return CATEGORICAL
    if name == "Enum":
        if isinstance(spec, type):
            msg = "`pl.Enum` needs its categories, e.g. `pl.Enum(['a', 'b'])`"
            raise UnsupportedTypeError(msg)
        return Logical("enum", categories=tuple(str(c) for c in spec.categories.to_list()))
    if name in ("Datetime", "Duration"):
        unit = "us" if isinstance(spec, type) else (spec.time_unit or "us")
        if name == "Duration":
            return Logical("duration", unit)
        tz = None if isinstance(spec, type) else spec.time_zone
        return Logical("datetime", unit, _check_tz(tz))
    return None
