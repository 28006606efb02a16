"""Polars' duration strings (``"2d"``, ``"1h30m"``, ``"1mo"``, ``"3i"``) and their arithmetic.

Stage: types. A duration string is integer-unit pairs with an optional leading sign:
``ns``, ``us``, ``ms``, ``s``, ``m``, ``h`` (a fixed length), ``d``, ``w`` (calendar
days and weeks: in local time under a time zone), ``mo``, ``q``, ``y`` (calendar
months) and ``i`` (an index count, for integer columns). `parse_duration` reads one
as polars' ``Duration::parse`` does, with its error messages; `minus_duration` moves
timestamps back by one as polars' ``Duration::add_*`` does with a negative duration:
months first (the day clamped to the month's length), then weeks, then days (each in
local time for a zoned column, localized again as polars does, RFC 5545), then the
fixed part.
"""

from __future__ import annotations

import datetime as _dt
import zoneinfo
from dataclasses import dataclass
from typing import Any

import numpy as np

from colbridge.errors import ComputeError, InvalidOperationError
from colbridge.types.timezones import zone_table

__all__ = ["DURATION_PARTS", "UNIT_NS", "Duration", "constant_duration", "minus_duration",
           "parse_duration", "parse_duration_in", "timedelta_text"]

_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_NS_DAY = 86_400 * 10**9
_NS_WEEK = 7 * _NS_DAY
#: nanoseconds per unit of a datetime column
UNIT_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000}


#: ``duration(...)``'s parts, largest first, and each one's length in nanoseconds
DURATION_PARTS = {"weeks": _NS_WEEK, "days": _NS_DAY, "hours": 3600 * 10**9,
                  "minutes": 60 * 10**9, "seconds": 10**9, "milliseconds": 1_000_000,
                  "microseconds": 1_000, "nanoseconds": 1}  # fmt: skip
_I64 = 1 << 63


def constant_duration(parts: dict[str, int | float], unit: str) -> int:
    """``duration(**parts)`` of Python numbers in ticks of ``unit``, as polars folds it.

    Integers: the exact sum in nanoseconds, divided toward zero by the unit's
    nanoseconds, then wrapped to int64 (Rust's ``i128 as i64``). With a float among
    them: the sum in float64, added largest part first, divided, then saturated to
    int64 (Rust's ``f64 as i64``: NaN is 0).
    """
    values = [parts.get(name, 0) for name in DURATION_PARTS]
    per_unit = UNIT_NS[unit]
    if all(isinstance(v, int) for v in values):
        total = sum(int(v) * ns for v, ns in zip(values, DURATION_PARTS.values(), strict=True))
        ticks = abs(total) // per_unit * (1 if total >= 0 else -1)
        return (ticks + _I64) % (1 << 64) - _I64
    w, d, h, m, sec, ms, us, ns = (float(v) for v in values)
    total_ns = (w * 7.0 * _NS_DAY + d * float(_NS_DAY) + h * 3600.0 * 1e9 + m * 60.0 * 1e9
                + sec * 1e9 + ms * 1e6 + us * 1e3 + ns)  # fmt: skip
    ticks_f = total_ns / float(per_unit)
    if ticks_f != ticks_f:
        return 0
    if ticks_f >= float(_I64):
        return _I64 - 1
    if ticks_f <= -float(_I64):
        return -_I64
    return int(ticks_f)


@dataclass(frozen=True, slots=True)
class Duration:
    """A parsed duration: calendar months, weeks, days and a fixed part in nanoseconds."""

    months: int
    weeks: int
    days: int
    nsecs: int
    negative: bool
    #: written with the ``i`` unit (an index count, for integer ``by`` columns)
    parsed_int: bool

    @property
    def is_zero(self) -> bool:
        """No length at all (polars refuses it as a window)."""
        return not (self.months or self.weeks or self.days or self.nsecs)


def timedelta_text(value: _dt.timedelta) -> str:
    """A ``timedelta`` as a duration string, as polars writes it (``"1d43200s0us"``)."""
    sign = "-" if value < _dt.timedelta(0) else ""
    value = abs(value)
    return f"{sign}{value.days}d{value.seconds}s{value.microseconds}us"


def parse_duration_in(text: str, where: str) -> Duration:
    """`parse_duration`, its error naming ``where`` (the expression that gave ``text``)."""
    try:
        return parse_duration(text)
    except InvalidOperationError as exc:
        msg = f"`{where}`: {exc}"
        raise InvalidOperationError(msg) from None


def parse_duration(text: str) -> Duration:
    """Polars' ``Duration::parse`` of ``text``; `InvalidOperationError` where it fails."""
    pos, n = 0, len(text)
    negative = text[:1] == "-"
    if text[:1] in ("-", "+"):
        pos = 1
    months = weeks = days = nsecs = 0
    parsed_int = False
    while pos < n:
        ch = text[pos]
        if not ch.isascii() or not ch.isdigit():
            if ch in "+-":
                msg = f"only a single {'minus' if ch == '-' else 'plus'} sign is allowed, " \
                    "at the front of the string"  # fmt: skip
                raise InvalidOperationError(msg)
            msg = f"expected leading integer in the duration string, found {ch!r}"
            raise InvalidOperationError(msg)
        start = pos
        while pos < n and text[pos].isascii() and text[pos].isdigit():
            pos += 1
        count = int(text[start:pos])
        if pos >= n:
            msg = f"expected a valid unit to follow integer in the duration string {text!r}"
            raise InvalidOperationError(msg)
        start = pos
        while pos < n and text[pos].isascii() and text[pos].isalpha():
            pos += 1
        unit = text[start:pos]
        if not unit:
            msg = f"expected a valid unit to follow integer in the duration string {text!r}"
            raise InvalidOperationError(msg)
        if unit in _NS:
            nsecs += count * _NS[unit]
        elif unit == "d":
            days += count
        elif unit == "w":
            weeks += count
        elif unit in ("mo", "q", "y"):
            months += count * {"mo": 1, "q": 3, "y": 12}[unit]
        elif unit == "i":
            nsecs += count
            parsed_int = True
        else:
            msg = (
                f"unit: {unit!r} not supported; available units are: 'y', 'mo', 'q', 'w', "
                "'d', 'h', 'm', 's', 'ms', 'us', 'ns'"
            )
            raise InvalidOperationError(msg)
    return Duration(months, weeks, days, nsecs, negative, parsed_int)


def fixed_span(duration: Duration, unit: str, tz: str | None) -> int | None:
    """``duration`` in ticks of ``unit`` where `minus_duration` is ``values - span`` for all.

    None where it takes calendar arithmetic: months, or days and weeks in a time zone
    other than UTC (local days of 23 or 25 hours).
    """
    if duration.months or (tz not in (None, "UTC") and (duration.weeks or duration.days)):
        return None
    per_unit = UNIT_NS[unit]
    return (duration.weeks * 7 + duration.days) * (_NS_DAY // per_unit) \
        + duration.nsecs // per_unit  # fmt: skip


def minus_duration(values: np.ndarray[Any, Any], duration: Duration, unit: str,
                   tz: str | None) -> np.ndarray[Any, Any]:  # fmt: skip
    """``values - duration`` (int64 timestamps in ``unit``, UTC for a zoned column).

    As polars' ``Duration::add_ns/us/ms`` with the duration negated: calendar months
    on the civil date and time (the day clamped to the new month's length), then
    weeks, then days, then the fixed part, truncated toward zero to the unit. Under a
    time zone other than UTC the calendar parts are taken in local time, each
    localized again (`_localized`, per distinct value). Raises `ComputeError` where
    polars does (a local time that a zone's clock changes make ambiguous both ways).
    """
    per_unit = UNIT_NS[unit]
    per_day = _NS_DAY // per_unit
    out = values.astype(np.int64, copy=True)
    zone = None if tz in (None, "UTC") else zoneinfo.ZoneInfo(str(tz))
    steps = [(kind, amount) for kind, amount in (("months", duration.months),
             ("days", duration.weeks * 7), ("days", duration.days)) if amount]  # fmt: skip
    for kind, amount in steps:
        if zone is None and kind == "days":
            out -= amount * per_day  # `out` is this function's own array
        elif zone is None:
            out = _minus_months(out, amount, per_day)
        else:
            out = _zoned_step(out, kind, amount, unit, zone)
    # the fixed part: Rust's `-nsecs / per_unit` truncates toward zero
    out -= duration.nsecs // per_unit
    return out


def _minus_months(values: np.ndarray[Any, Any], months: int,
                  per_day: int) -> np.ndarray[Any, Any]:  # fmt: skip
    """``values`` moved ``months`` calendar months back, the time of day kept."""
    days = np.floor_divide(values, per_day)
    rest = values - days * per_day
    date = days.astype("datetime64[D]")
    month = date.astype("datetime64[M]")
    day = (date - month.astype("datetime64[D]")).astype(np.int64)
    moved = month - np.timedelta64(months, "M")
    first = moved.astype("datetime64[D]").astype(np.int64)
    length = (moved + np.timedelta64(1, "M")).astype("datetime64[D]").astype(np.int64) - first
    result: np.ndarray[Any, Any] = (first + np.minimum(day, length - 1)) * per_day + rest
    return result


def _zoned_step(values: np.ndarray[Any, Any], kind: str, amount: int, unit: str,
                zone: zoneinfo.ZoneInfo) -> np.ndarray[Any, Any]:  # fmt: skip
    """One calendar step back in local time, localized again as polars does (RFC 5545).

    Vectorized over the zone's offset table (`colbridge.types.timezones.zone_table`):
    each value's local time, the step, then the UTC instants whose local time that is,
    tried with the offsets a day before and a day after it. Where exactly one fits,
    it is the result; the others (a local time the clocks skip or repeat) go through
    `_localized`, one value at a time.
    """
    per_unit = UNIT_NS[unit]
    per_second = 10**9 // per_unit
    per_day = _NS_DAY // per_unit
    instants, shifts, _ = zone_table(zone.key, unit)
    starts = np.asarray(instants, dtype=np.int64)
    offsets = np.asarray(shifts, dtype=np.int64)

    def offset_at(at: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        found: np.ndarray[Any, Any] = offsets[np.searchsorted(starts, at, side="right") - 1]
        return found

    local = values + offset_at(values)
    target = _minus_months(local, amount, per_day) if kind == "months" \
        else local - amount * per_day  # fmt: skip
    before, after = offset_at(target - per_day), offset_at(target + per_day)
    first, second = target - before, target - after
    first_fits = offset_at(first) == before
    second_fits = (offset_at(second) == after) & (after != before)
    out: np.ndarray[Any, Any] = np.where(first_fits, first, second)
    for k in np.flatnonzero(first_fits == second_fits).tolist():  # two or no instants
        value = int(values[k])
        _, dst = _offsets(zone, value // per_second)
        out[k] = _localized(int(target[k]), dst, zone, per_second)
    return out


def _offsets(zone: zoneinfo.ZoneInfo, seconds: int) -> tuple[int, int]:
    """The zone's UTC offset and its daylight-saving part at UTC ``seconds``."""
    when = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(seconds=seconds)
    local = when.astimezone(zone)
    offset, dst = local.utcoffset(), local.dst()
    return (int(offset.total_seconds()) if offset is not None else 0,
            int(dst.total_seconds()) if dst is not None else 0)  # fmt: skip


def _candidates(zone: zoneinfo.ZoneInfo, local: int,
                per_second: int) -> list[tuple[int, int]]:  # fmt: skip
    """The UTC instants (with their DST part) whose local time is ``local``, earliest first."""
    seconds, below = divmod(local, per_second)
    naive = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=seconds)
    found: list[tuple[int, int]] = []
    for fold in (0, 1):
        offset = naive.replace(tzinfo=zone, fold=fold).utcoffset()
        shift = int(offset.total_seconds()) if offset is not None else 0
        utc = seconds - shift
        real, dst = _offsets(zone, utc)
        if real == shift and all(utc * per_second + below != c for c, _ in found):
            found.append((utc * per_second + below, dst))
    return sorted(found)


def _localized(local: int, dst: int, zone: zoneinfo.ZoneInfo, per_second: int) -> int:
    """Polars' ``localize_result_rfc_5545``: a local result back to UTC.

    One instant: that one. Two (the clock went back): the one whose daylight-saving
    part is the original's. None (the clock went forward): the local time moved by
    the original's daylight-saving part, or else back by that of the hour after it.
    """
    found = _candidates(zone, local, per_second)
    if len(found) == 1:
        return found[0][0]
    if len(found) == 2:
        for utc, part in found:
            if part == dst:
                return utc
        raise _not_localized(local, zone, per_second)
    if dst != 0:
        shifted = local + dst * per_second
    else:
        after = _candidates(zone, local + 3600 * per_second, per_second)
        if not after:  # pragma: no cover - a gap longer than an hour
            raise _not_localized(local, zone, per_second)
        shifted = local - after[0][1] * per_second
    again = _candidates(zone, shifted, per_second)
    if len(again) != 1:  # pragma: no cover - polars raises on it too
        raise _not_localized(shifted, zone, per_second)
    return again[0][0]


def _not_localized(local: int, zone: zoneinfo.ZoneInfo, per_second: int) -> ComputeError:
    when = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=local // per_second)
    msg = f"could not localize datetime '{when}' to time zone '{zone.key}'"
    return ComputeError(msg)
