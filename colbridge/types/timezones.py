"""Time zones: a zone's UTC-offset transitions, as the sorted table kernels search.

Stage: types. A time-zoned datetime stores UTC; its fields are local. Kernels
find the offset of a value with a binary search over the zone's transitions
(`zone_table`), built here from the standard library's ``zoneinfo`` data: the
zone file's explicit transitions, then those its rule gives up to the end of
2099. Like polars (whose zone data stops there too), an instant from 2100 on
keeps the offset of the last transition before it.
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.resources
import os
import struct
import zoneinfo

from colbridge.errors import UnsupportedTypeError

__all__ = ["LAST_RULE_YEAR", "check_zone", "daylight", "offset_parts", "transitions",
           "zone_table"]

#: Transitions are generated from a zone's rule through the end of this year.
LAST_RULE_YEAR = 2099
INT64_MIN = -(2**63)
_END = int(_dt.datetime(LAST_RULE_YEAR + 1, 1, 1, tzinfo=_dt.timezone.utc).timestamp())
_UNIT = {"ns": 1_000_000_000, "us": 1_000_000, "ms": 1_000, "s": 1}


@functools.lru_cache(maxsize=256)
def check_zone(tz: str) -> str:
    """``tz`` if it names a zone of the time zone database, else a clear error."""
    if tz == "UTC":
        return tz
    try:
        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        msg = (
            f"unknown time zone {tz!r}: use a name of the time zone database, e.g. "
            "'Europe/London' or 'UTC'"
        )
        raise UnsupportedTypeError(msg) from exc
    return tz


def transitions(tz: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(UTC instants in seconds, offsets in seconds) of ``tz``: offset k holds from instant k.

    The first instant is the smallest int64 (the offset before any transition). The
    instants are `offset_parts`'s: an offset may repeat where only its daylight saving
    part changed.
    """
    instants, offsets, _ = offset_parts(tz)
    return instants, offsets


def daylight(tz: str) -> tuple[bool, ...]:
    """Whether each offset of `transitions` is a daylight saving one (the zone's ``dst()``).

    A gap where daylight saving starts is read with the offset before it by polars'
    truncate; one where the standard offset changes (Lord Howe's +10:00 to +10:30 in
    1981) raises there.
    """
    return tuple(saving != 0 for saving in offset_parts(tz)[2])


@functools.lru_cache(maxsize=64)
def offset_parts(tz: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(UTC instants, offsets, their daylight saving parts), in seconds, for ``tz``.

    An entry wherever either part changes (Britain's 1968-71 standard time kept the
    summer offset), from the zone file's transitions and, past them, those of its
    rule through `LAST_RULE_YEAR`. Both parts are ``zoneinfo``'s (``utcoffset()``,
    ``dst()``): the zone file marks which offsets are daylight saving ones, and
    ``zoneinfo`` takes the amount as the offset less the standard one beside it.
    polars (chrono-tz) reads the amount from the rules the zone files are compiled
    from: the two differ where a zone changed its standard offset while on daylight
    saving time (America/Bahia_Banderas in 2010, America/Inuvik in 1979) and in WET's
    1996 change (docs/temporal.md).
    """
    check_zone(tz)
    if tz == "UTC":
        return (INT64_MIN,), (0,), (0,)
    zone = zoneinfo.ZoneInfo(tz)
    data = _read_tzif(tz)
    changes = [w for w in data[0][1:] if w < _END] + [w for w, _ in _rule_transitions(
        zone, max(data[0][-1] + 1, int(_dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
                                       .timestamp())), _END)]  # fmt: skip

    def at(when: int) -> tuple[int, int]:
        try:
            local = _dt.datetime.fromtimestamp(when, tz=_dt.timezone.utc).astimezone(zone)
        except (OverflowError, OSError, ValueError):  # before year 1: the first offset's
            return data[1][0], 0
        whole, saving = local.utcoffset(), local.dst()
        return (int(whole.total_seconds()) if whole is not None else 0,
                int(saving.total_seconds()) if saving is not None else 0)  # fmt: skip

    instants, offsets, savings = [INT64_MIN], [data[1][0]], [0]
    if changes:
        offsets[0], savings[0] = at(changes[0] - 1)
    for when in changes:
        whole, saving = at(when)
        if (whole, saving) != (offsets[-1], savings[-1]):
            instants.append(when)
            offsets.append(whole)
            savings.append(saving)
    return tuple(instants), tuple(offsets), tuple(savings)


def zone_table(tz: str, unit: str) -> tuple[list[int], list[int], list[int]]:
    """`offset_parts` in a time unit (``ns``, ``us``, ``ms``).

    The instants (the sentinel kept), the offsets and their daylight saving parts.
    """
    instants, offsets, savings = offset_parts(tz)
    scale = _UNIT[unit]
    return _in_unit(instants, unit), [o * scale for o in offsets], [s * scale for s in savings]


def _in_unit(instants: tuple[int, ...], unit: str) -> list[int]:
    # past int64 in a fine unit: clamped (no value of the unit lies beyond)
    scale = _UNIT[unit]
    lo, hi = INT64_MIN, 2**63 - 1
    return [INT64_MIN, *(min(max(when * scale, lo + 1), hi) for when in instants[1:])]


def _offset_at(zone: zoneinfo.ZoneInfo, when: int) -> int:
    local = _dt.datetime.fromtimestamp(when, tz=_dt.timezone.utc).astimezone(zone)
    delta = local.utcoffset()
    return int(delta.total_seconds()) if delta is not None else 0


def _rule_transitions(zone: zoneinfo.ZoneInfo, start: int, end: int) -> list[tuple[int, int]]:
    """Transitions in ``[start, end)`` found by sampling daily and bisecting to the second.

    Used past a zone file's explicit transitions, where the zone's rule (the file's
    footer) decides; its changes are months apart, so a daily sample sees each one.
    """
    out: list[tuple[int, int]] = []
    day = 86_400
    before = _offset_at(zone, start)
    t = start
    while t < end:
        nxt = min(t + day, end)
        after = _offset_at(zone, nxt) if nxt < end else _offset_at(zone, end - 1)
        if after != before:
            lo, hi = t, nxt  # offset(lo) == before, offset(hi) != before
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if _offset_at(zone, mid) == before:
                    lo = mid
                else:
                    hi = mid
            out.append((hi, _offset_at(zone, hi)))
            before = _offset_at(zone, hi)
            if hi < nxt and _offset_at(zone, nxt) != before:
                continue  # a second change within the day: look again from here
        t = nxt
    return out


def _zone_bytes(tz: str) -> bytes:
    for base in zoneinfo.TZPATH:
        path = os.path.join(base, tz)
        if os.path.isfile(path):
            with open(path, "rb") as fh:
                return fh.read()
    try:
        package = "tzdata.zoneinfo." + ".".join(tz.split("/")[:-1]) if "/" in tz \
            else "tzdata.zoneinfo"  # fmt: skip
        return importlib.resources.files(package).joinpath(tz.split("/")[-1]).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        msg = f"no zone data for time zone {tz!r}; install the `tzdata` package"
        raise UnsupportedTypeError(msg) from exc


def _read_tzif(tz: str) -> tuple[list[int], list[int]]:
    """(transition instants, offsets after them) from a TZif file, 64-bit data preferred.

    The offset before the first transition comes first with the instant INT64_MIN.
    """
    raw = _zone_bytes(tz)

    def header(at: int) -> tuple[int, int, int, int, int, int, int]:
        if raw[at : at + 4] != b"TZif":
            msg = f"zone data for {tz!r} is not in TZif format"
            raise UnsupportedTypeError(msg)
        counts = struct.unpack(">6l", raw[at + 20 : at + 44])
        return (raw[at + 4], *counts)  # type: ignore[return-value]

    version, isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt = header(0)
    at, time_size = 44, 4
    if version >= ord("2"):
        # skip the 32-bit block; the second header and its 64-bit data follow
        at += timecnt * 4 + timecnt + typecnt * 6 + charcnt + leapcnt * 8 + isstdcnt + isutcnt
        _, isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt = header(at)
        at += 44
        time_size = 8
    fmt = f">{timecnt}q" if time_size == 8 else f">{timecnt}l"
    times = list(struct.unpack(fmt, raw[at : at + timecnt * time_size]))
    at += timecnt * time_size
    indices = list(raw[at : at + timecnt])
    at += timecnt
    offsets = [struct.unpack(">l", raw[at + 6 * k : at + 6 * k + 4])[0] for k in range(typecnt)]
    # the offset before the first transition is that of time type 0 (RFC 8536 3.2)
    instants = [INT64_MIN, *times]
    after = [offsets[0] if offsets else 0, *(offsets[i] for i in indices)]
    return instants, after
