"""Types layer: strings parsed as dates and datetimes with polars' (chrono's) formats.

polars parses with Rust's chrono; colbridge parses each distinct string with Python's
``datetime`` (which, like chrono and unlike Arrow's ``strptime``, rejects impossible
dates such as 2020-02-30), after writing the format in Python's terms:

* chrono's shorthands: ``%F`` (``%Y-%m-%d``), ``%T`` (``%H:%M:%S``), ``%D``
  (``%m/%d/%y``), ``%R`` (``%H:%M``), ``%h`` (``%b``), ``%e`` (a day, space padded) and
  the unpadded forms ``%-d``, ``%-m``, ``%-H``... (Python reads both paddings);
* fractional seconds anywhere in the format: ``%.f`` (a dot and any number of digits),
  ``%.3f``/``%.6f``/``%.9f`` (a dot and exactly that many), each also nothing at all;
  ``%3f``/``%6f``/``%9f`` (exactly that many digits, no dot); nanoseconds kept;
* ``%y``: chrono reads 00-69 as 2000-2069 and 70-99 as 1970-1999 (Python: 69 is 1969);
* numbers as chrono reads them where Python does not: after any spaces, up to the
  specifier's width (``%y`` of one digit, ``%m`` or ``%j`` after a space); ``%Y`` and
  ``%G`` of 1 to 4 digits, or a sign and any number (``-44``, ``+12345``: a year within
  chrono's -262143 to 262142, Python's 1-9999 reached by whole 400-year cycles). Such a
  text is read field by field, each number as far as chrono reads it, from a format
  that says a whole date (a year with a month and a day, or a day of the year; an ISO
  year, week and weekday);
* what chrono checks and Python does not: a weekday (``%a``, ``%A``, ``%u``, ``%w``) or a
  day of the year (``%j``) that disagrees with the date is not a date (Python takes
  ``2021-366`` as 2022-01-01 and ignores the weekday); ``%B`` and ``%A`` also read the
  abbreviated names; a leap second (``:60``) is the next minute's first second.

A value that does not fit the result's int64 (a year 1500 in nanoseconds) does not
parse. Formats with a time zone or an offset are refused by `zone_specifier`.

chrono reads each number as far as it goes (``%H%M`` of "10" is no time, where Python
reads 1 and 0). Without a format, `infer_parse` reads the strings as polars does: one
group of its patterns (``polars-time/src/chunkedarray/string/patterns.rs``), inferred
from the first value one of them reads (``infer.rs``), offsets included.
"""

from __future__ import annotations

import datetime as _dt
import re
import time as _time
from collections.abc import Sequence

__all__ = ["DAY_NAMES", "MONTH_NAMES", "TIME_PATTERNS", "Inferred", "infer_parse",
           "infer_time_format", "inferred_unit", "parse_stamps", "parse_times",
           "says_a_time", "unreadable_specifier", "zone_specifier"]

_SHORTHANDS = {"%F": "%Y-%m-%d", "%T": "%H:%M:%S", "%D": "%m/%d/%y", "%R": "%H:%M",
               "%h": "%b", "%e": "%d"}  # fmt: skip
#: fractional seconds: (the token, whether a dot comes first, the digits it takes; 0: any)
_FRACTIONS = (("%.3f", True, 3), ("%.6f", True, 6), ("%.9f", True, 9), ("%.f", True, 0),
              ("%3f", False, 3), ("%6f", False, 6), ("%9f", False, 9))  # fmt: skip
_ZONES = ("%z", "%Z", "%:z", "%::z", "%:::z", "%#z", "%+")
_INT64 = (-(2**63), 2**63 - 1)
_EPOCH = _dt.datetime(1970, 1, 1)
#: chrono's dates: its years
_YEARS = (-262_143, 262_142)
#: chrono's numeric specifiers and the digits each reads at most (a year: more after a sign)
_NUMBERS = {"Y": 4, "G": 4, "y": 2, "m": 2, "d": 2, "H": 2, "M": 2, "S": 2, "j": 3, "I": 2,
            "U": 2, "W": 2, "V": 2, "u": 1, "w": 1}  # fmt: skip
#: chrono's month and weekday names (Monday first), read here and written by
#: `colbridge.types.formatting`
MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")  # fmt: skip
DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS, _DAYS = MONTH_NAMES, DAY_NAMES
#: chrono's names: `%b`, `%a` the first three letters; `%B`, `%A` also the full name
_NAMES = {"b": "|".join(m[:3] for m in _MONTHS), "a": "|".join(d[:3] for d in _DAYS),
          "B": "|".join(_MONTHS + tuple(m[:3] for m in _MONTHS)),
          "A": "|".join(_DAYS + tuple(d[:3] for d in _DAYS)), "p": "am|pm"}  # fmt: skip
#: a format's regex of `_chrono_regex` (None: a format it does not read)
_REGEXES: dict[str, tuple[re.Pattern[str], list[str], bool] | None] = {}
#: a text read: its datetime (its year moved by whole 400-year cycles) and the days to add
_Read = tuple[_dt.datetime, int]


def zone_specifier(fmt: str) -> str | None:
    """The time zone or offset specifier of a chrono format (``%z``, ``%+``...), if any."""
    return next((z for z in _ZONES if z in fmt), None)


def unreadable_specifier(fmt: str) -> str | None:
    """A specifier of ``fmt`` that Python's ``strptime`` cannot read (``%s``, ``%k``...).

    Such a format parsed nothing: every value was null, where polars reads them.
    """
    python = _python_format(fmt)
    for token in (f for f in _FRACTIONS if f[0] in python):
        python = python.replace(token[0], "")
    try:
        _dt.datetime.strptime("", python)
    except ValueError as exc:
        found = re.match(r"'(.)' is a bad directive", str(exc))
        if found is not None:
            return "%" + found.group(1)
        if "stray %" in str(exc):
            return "%"
    return None


def inferred_unit(fmt: str | None) -> str:
    """The time unit polars gives a datetime parsed with ``fmt`` and no ``time_unit``."""
    if fmt is not None and any(t in fmt for t in ("%.9f", "%9f")):
        return "ns"
    if fmt is not None and any(t in fmt for t in ("%.3f", "%3f")):
        return "ms"
    return "us"


def parse_stamps(texts: list[str | None], fmt: str, unit: str, *,
                 dates: bool = False) -> list[int | None]:  # fmt: skip
    """Each text as ticks of ``unit`` since 1970 (None where it does not parse or fit).

    ``dates``: only the day is wanted; a leap second keeps its day, as polars' dates do
    (its datetimes take it as the next minute's first second).
    """
    python = _python_format(fmt)
    fraction = next((f for f in _FRACTIONS if f[0] in python), None)
    year_69 = "%y" in python
    out: list[int | None] = []
    for text in texts:
        if text is None:
            out.append(None)
            continue
        ticks = _parse(text, python, fraction, unit, leap=not dates)
        if ticks is not None and year_69:
            ticks = _chrono_century(ticks, unit)
        out.append(_fit(ticks))
    return out


_DAY_NS = 86_400 * 10**9
#: polars' patterns for times without a format (``patterns.rs``: ``TIME_H_M_S``)
TIME_PATTERNS = ("%T%.f", "%R")


def parse_times(texts: list[str | None], fmt: str) -> list[int | None]:
    """Each text as a time of day in nanoseconds, as chrono's ``NaiveTime`` reads it.

    The format must say an hour (``%H``, or ``%I`` with ``%p``) and a minute, else
    nothing parses (chrono has not enough fields); seconds and their fraction are
    optional. A leap second (``:60``) is the next minute's first second, as polars
    counts it: ``10:59:60`` is 11:00, and ``23:59:60``, past the day, does not parse.
    Date fields in the format are read, and checked as dates (chrono does not check
    them for a time: polars reads ``2021-02-30 10:00`` as 10:00, colbridge not).
    """
    python = _python_format(fmt)
    if not says_a_time(fmt):
        return [None] * len(texts)
    fraction = next((f for f in _FRACTIONS if f[0] in python), None)
    out: list[int | None] = []
    for text in texts:
        if text is None:
            out.append(None)
            continue
        read = _parse(text, python, fraction, "ns", leap=True, part=True)
        if read is None:
            out.append(None)
            continue
        time = read % _DAY_NS
        # a leap second moves the time one second on: one that lands in the day's first
        # second from 23:59:60 is out of the day (read again without it, it is 23:59:59)
        if time < 10**9:
            plain = _parse(text, python, fraction, "ns", leap=False, part=True)
            assert plain is not None
            if plain % _DAY_NS > time:
                out.append(None)
                continue
        out.append(time)
    return out


def says_a_time(fmt: str) -> bool:
    """Whether chrono can read a time with ``fmt``: it says an hour and a minute.

    An hour is ``%H`` (or a shorthand holding it), or ``%I`` with ``%p``.
    """
    python = _python_format(fmt)
    return ("%H" in python or ("%I" in python and "%p" in python)) and "%M" in python


def infer_time_format(texts: list[str | None]) -> str | None:
    """Polars' format for times without one: of the first text one of its patterns reads.

    ``texts`` in the order of the rows; None where no pattern reads any of them.
    """
    for text in texts:
        if text is None:
            continue
        for fmt in TIME_PATTERNS:
            if parse_times([text], fmt)[0] is not None:
                return fmt
    return None


def _python_format(fmt: str) -> str:
    """A chrono format with its shorthands and unpadded forms in Python's terms."""
    out: list[str] = []
    i = 0
    while i < len(fmt):
        if fmt[i] != "%" or i + 1 >= len(fmt):
            out.append(fmt[i])
            i += 1
            continue
        token = fmt[i : i + 2]
        if token == "%%":
            out.append(token)
        elif token == "%-" and i + 2 < len(fmt):  # unpadded: Python reads it padded or not
            token = "%" + fmt[i + 2]
            i += 1
            out.append(_SHORTHANDS.get(token, token))
        else:
            out.append(_SHORTHANDS.get(token, token))
        i += 2
    return "".join(out)


def _parse(text: str, fmt: str, fraction: tuple[str, bool, int] | None,
           unit: str, *, leap: bool = True, part: bool = False) -> int | None:  # fmt: skip
    """``text`` read with the Python-terms ``fmt`` as ticks of ``unit`` since 1970.

    ``part``: ``fmt`` need not say a whole date (a time's format; the date then is
    Python's default, 1900-01-01).
    """
    if fraction is None:
        value = _strptime(text, fmt, leap=leap, part=part)
        return None if value is None else _ticks(value, unit, 0)
    token, dotted, digits = fraction
    before, after = fmt.split(token, 1)
    pattern = re.compile(("\\." if dotted else "") + ("[0-9]+" if not digits
                                                      else "[0-9]{%d}" % digits))  # noqa: UP031
    # the fraction starts where the format before it has read its part of the text: at a
    # dot (or a digit), the text before it read by ``before`` alone, as much of it as
    # ``before`` reads (chrono's fields are greedy: `%S%3f` on "00123" is 00 and 123)
    marks = "." if dotted else "0123456789"
    for start in reversed([i for i, c in enumerate(text) if c in marks]):
        found = pattern.match(text, start)
        if found is None or (_strptime(text[:start], before, part=True) is None if before
                             else start):  # fmt: skip
            continue
        value = _strptime(text[:start] + text[found.end() :], before + after, leap=leap,
                          part=part)  # fmt: skip
        if value is not None:
            nanos = int(found.group(0).lstrip(".")[:9].ljust(9, "0"))
            return _ticks(value, unit, nanos)
    if dotted:  # `%.f`, `%.3f`... read nothing where there is no dot (chrono's)
        value = _strptime(text, before + after, leap=leap, part=part)
        return None if value is None else _ticks(value, unit, 0)
    return None


def _chrono_century(ticks: int, unit: str) -> int:
    """``ticks`` with a two-digit year 69 read as 2069 (chrono), not 1969 (Python)."""
    us = {"ns": ticks // 1000, "us": ticks, "ms": ticks * 1000}[unit]
    if not -365 * 86_400_000_000 <= us < 0:  # 1969: the 365 days before 1970
        return ticks
    century = 36_525 * 86_400 * 1_000_000  # 1969 to 2069 in microseconds (25 leap days)
    return ticks + {"ns": century * 1000, "us": century, "ms": century // 1000}[unit]


def _strptime(text: str, fmt: str, *, leap: bool = True, part: bool = False) -> _Read | None:
    """``text`` read with ``fmt`` as chrono reads it (None: not a date chrono accepts).

    ``leap``: a leap second is the next minute's first second (else the 59th); ``part``:
    ``fmt`` is the start of a format, or a time's, which need not say a whole date.
    """
    compiled = _chrono_regex(fmt)
    if compiled is not None and compiled[0].fullmatch(text) is None:
        # chrono reads each number as far as it goes and never gives digits back: `%H%M`
        # of "10" is no time (Python's `strptime` backtracks and reads 1 and 0)
        return None
    # each field as chrono splits the text where the regex reads the format (Python's
    # `strptime` may split digits otherwise: `%H%M` of "523" is no time to chrono, which
    # reads 52 and 3; `%Y%m%d` of "5920531" no date)
    chrono_split = compiled is not None and (part or compiled[2])
    read = None if chrono_split else _python_strptime(text, fmt, leap)
    if read is not None:
        return read
    # what Python's fields do not read (a year of 1-3 or 5+ digits or signed, a `%y` of
    # one digit, spaces before a number): read as chrono does, then again by Python
    written = _chrono_fields(text, fmt, part)
    if written is None:
        return None
    canonical_text, canonical_fmt, days, week = written
    read = _python_strptime(canonical_text, canonical_fmt, leap)
    if read is None or (week is not None and read[0].isocalendar()[:2] != week):
        return None  # (Python takes the week 0 or a 53rd a year lacks as another year's)
    return read[0], read[1] + days


def _python_strptime(text: str, fmt: str, leap: bool) -> _Read | None:
    """``text`` read by Python's ``strptime``, then checked as chrono checks it."""
    for variant in _name_variants(fmt):
        try:
            fields = _time.strptime(text, variant)
        except (ValueError, OverflowError):
            continue
        value = _checked(fields, variant, leap)
        return None if value is None else (value, 0)
    return None


def _chrono_fields(text: str, fmt: str,
                   part: bool) -> tuple[str, str, int, tuple[int, int] | None] | None:  # fmt: skip
    """``text`` and ``fmt`` rewritten for Python, each field read as chrono reads it.

    chrono reads a number after any spaces, greedily, up to its width; a year (``%Y``,
    ``%G``) takes a sign and then any number of digits. The rewritten format puts a
    NUL character between its fields so that Python splits the text where chrono did. A
    year is moved into 2000-2399 by whole 400-year cycles (146097 days, whole weeks:
    leap years, weekdays and ISO weeks are the same). Returned with the text and the
    format: the days to add and the ISO year (moved) and week of the text, if it has
    both. None: ``fmt`` has a specifier this does not rewrite, or no whole date (unless
    ``part``), or ``text`` does not fit it.
    """
    compiled = _chrono_regex(fmt)
    if compiled is None or not (part or compiled[2]):
        return None
    regex, tokens, _ = compiled
    found = regex.fullmatch(text)
    if found is None:
        return None
    texts: list[str] = []
    cycles: int | None = None
    week: dict[str, int] = {}
    for token, value in zip(tokens, found.groups()[::2], strict=True):
        if token.startswith("%") and token[1] in _NUMBERS:
            value = value.lstrip()
        if token in ("%Y", "%G"):
            digits = value.lstrip("+-").lstrip("0") or "0"
            if len(digits) > 6:  # past chrono's years (and past what `int` reads, maybe)
                return None
            year = -int(digits) if value.startswith("-") else int(digits)
            if not _YEARS[0] <= year <= _YEARS[1]:
                return None
            cycles = (year - 2000) // 400 if cycles is None else cycles
            year -= 400 * cycles
            if not 1 <= year <= 9999:
                return None
            value = f"{year:04d}"
            week[token] = year
        elif token == "%V":
            week[token] = int(value)
        elif token == "%y":
            value = value.zfill(2)
        elif token.isspace():
            value = " "
        texts.append(value)
    written_fmt = "\x00".join(" " if t.isspace() else t for t in tokens)
    iso = (week["%G"], week["%V"]) if {"%G", "%V"} <= week.keys() else None
    return "\x00".join(texts), written_fmt, 146_097 * (cycles or 0), iso


def _chrono_regex(fmt: str) -> tuple[re.Pattern[str], list[str], bool] | None:
    """A regex of ``fmt`` reading as chrono does, its tokens, whether it says a whole date.

    Each token has two groups in the regex: the text it reads, then a lookahead's.
    """
    if fmt in _REGEXES:
        return _REGEXES[fmt]
    tokens = re.findall(r"%.|\s+|[^%\s]+", fmt, re.DOTALL)
    # chrono reads no date from a format without a whole one (Python: January, the 1st)
    have = set(tokens)
    days = (bool(have & {"%m", "%b", "%B"}) and "%d" in have) or "%j" in have
    dated = bool(have & {"%Y", "%y"}) and days
    weeks = {"%G", "%V"} <= have and bool(have & {"%u", "%a", "%A"})
    whole = dated or weeks
    if "".join(tokens) != fmt:  # a lone `%` at its end
        _REGEXES[fmt] = None
        return None
    parts: list[str] = []
    for token in tokens:
        if token.startswith("%") and token[1] in _NUMBERS:
            signed = "[+-][0-9]+|" if token[1] in "YG" else ""
            number = f"(?:{signed}[0-9]{{1,{_NUMBERS[token[1]]}}})"
            # a lookahead and its backreference: as much as chrono reads, never less
            piece = rf"(?=(\s*{number}))\{2 * len(parts) + 2}"
        elif token.startswith("%") and token[1] in _NAMES:
            piece = f"(?=({_NAMES[token[1]]}))\\{2 * len(parts) + 2}"
        elif token.startswith("%") and token != "%%":
            _REGEXES[fmt] = None
            return None
        else:
            # chrono's literals keep their case (names do not), spaces: any, or none
            literal = r"\s*" if token.isspace() else re.escape(token.replace("%%", "%"))
            piece = f"()(?-i:{literal})"
        parts.append(f"({piece})")
    compiled = re.compile("".join(parts), re.IGNORECASE | re.DOTALL)
    _REGEXES[fmt] = (compiled, tokens, whole)
    return _REGEXES[fmt]


def _name_variants(fmt: str) -> list[str]:
    """``fmt``, then with ``%B``/``%A`` as ``%b``/``%a``: chrono reads full or short names."""
    variants = [fmt]
    for full, short in (("%B", "%b"), ("%A", "%a")):
        if full in fmt:
            variants += [v.replace(full, short) for v in variants]
    return variants


def _checked(fields: _time.struct_time, fmt: str, leap: bool) -> _dt.datetime | None:
    """The datetime of ``strptime``'s fields, None where chrono finds them inconsistent.

    Python's ``strptime`` rolls a day of the year past the year's end into the next
    year and ignores a weekday that is not the date's; chrono rejects both. Its leap
    second (60) is the first second of the next minute in polars' datetimes.
    """
    second = fields.tm_sec
    if second > 60:  # Python reads up to 61
        return None
    try:
        value = _dt.datetime(fields.tm_year, fields.tm_mon, fields.tm_mday,
                             fields.tm_hour, fields.tm_min, min(second, 59))  # fmt: skip
    except (ValueError, OverflowError):
        return None
    # only what the text said: an ISO week date (%G %V) gives a day of its ISO year
    if any(t in fmt for t in ("%a", "%A", "%u", "%w")) and value.weekday() != fields.tm_wday:
        return None
    if "%j" in fmt and value.timetuple().tm_yday != fields.tm_yday:
        return None
    if second == 60 and leap:
        try:
            return value + _dt.timedelta(seconds=1)
        except OverflowError:  # 9999-12-31 23:59:60: past Python's last datetime
            return None
    return value


def _ticks(value: _dt.datetime | _Read, unit: str, nanos: int) -> int:
    """``value`` plus ``nanos`` as ticks of ``unit`` since 1970 (toward the past)."""
    value, days = (value, 0) if isinstance(value, _dt.datetime) else value
    us = (value - _EPOCH) // _dt.timedelta(microseconds=1) + days * 86_400_000_000
    ns = us * 1000 + nanos
    return {"ns": ns, "us": ns // 1000, "ms": ns // 1_000_000}[unit]


def _fit(ticks: int | None) -> int | None:
    return ticks if ticks is not None and _INT64[0] <= ticks <= _INT64[1] else None


# -- parsing without a format: polars' inference ------------------------------------------
# polars-time/src/chunkedarray/string/patterns.rs and infer.rs: the first non-null value
# that one of a group's patterns reads picks the group (day-month-year first, then
# year-month-day, then year-month-day with an offset); every value is then read with the
# group's patterns, each row trying the pattern the previous row used, then (dates
# always, datetimes where the value looks like a date: `_LOOKS`) each pattern in order.

DATE_D_M_Y: tuple[str, ...] = ("%d-%m-%Y", "%d/%m/%Y", "%d.%m.%Y")
DATE_Y_M_D: tuple[str, ...] = ("%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d")


def _datetime_patterns(date_forms: tuple[str, ...], zoned: bool) -> tuple[str, ...]:
    times = ("T%H:%M:%S%.f", "T%H%M%S%.f", "T%H:%M", "T%H%M",
             " %H:%M:%S%.f", " %H%M%S%.f", " %H:%M", " %H%M")  # fmt: skip
    out: list[str] = []
    for form in date_forms:
        out += [form + t + ("%#z" if zoned else "") for t in times]
        if not zoned:
            out.append(form)
    return tuple(out)


DATETIME_D_M_Y = _datetime_patterns(("%d-%m-%Y", "%d/%m/%Y", "%d.%m.%Y"), zoned=False)
DATETIME_Y_M_D = (*_datetime_patterns(("%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d"), zoned=False),
                  "%Y%m%dT%H%M%S%.f", "%Y-%m-%dT%H:%M:%S%.f")  # fmt: skip
DATETIME_Y_M_D_Z = (*_datetime_patterns(("%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d"), zoned=True),
                    "%Y%m%dT%H%M%S%.f%#z", "%Y%m%dT%H%M%S%.fZ", "%+")  # fmt: skip

_TIME_RE = r"""(?:[T\ ][0-9]{1,2}:?[0-9]{1,2}(?::?[0-9]{1,2}(?:\.[0-9]{1,9})?)?)?"""
#: polars' regexes of a value that looks like a datetime of the group (`is_inferable`)
_LOOKS = {
    "dmy": re.compile(r"""['"]?[0-9]{1,2}[-/.](?P<month>[01]?[0-9])[-/.][0-9]{4,}"""
                      + _TIME_RE + """['"]?"""),
    "ymd": re.compile(r"""['"]?[0-9]{4,}[-/.]?(?P<month>[01]?[0-9])[-/.]?[0-9]{1,2}"""
                      + _TIME_RE + """['"]?"""),
}  # fmt: skip
_LOOKS["ymdz"] = re.compile(
    r"""['"]?[0-9]{4,}[-/.]?(?P<month>[01]?[0-9])[-/.]?[0-9]{1,2}[T\ ][0-9]{2}:?[0-9]{2}"""
    r"""(?::?[0-9]{2}(?:\.[0-9]{1,9})?)?(?:[+-][0-9]{2}(?::?[0-9]{2})?|Z)['"]?""")
_ZONED = frozenset(DATETIME_Y_M_D_Z)
#: chrono's offsets: `%#z` (after any spaces: Z, z, or a sign, hours and maybe minutes,
#: a colon between them or not); `%+` (RFC 3339, relaxed: T, t or a space between the
#: date and the time, seconds, then maybe spaces, and Z, z, UTC or a sign, hours and
#: minutes)
_PERMISSIVE = re.compile(r"(?P<naive>.*?)\s*(?:(?P<zulu>[zZ])|(?P<sign>[+-])(?P<h>[0-9]{2})"
                         r"(?::?(?P<m>[0-9]{2}))?)", re.DOTALL)  # fmt: skip
_RFC3339 = re.compile(r"(?P<date>[^Tt ]*)[Tt ](?P<time>.*?)\s*(?:(?P<zulu>[zZ]|UTC)|"
                      r"(?P<sign>[+-])(?P<h>[0-9]{2}):?(?P<m>[0-9]{2}))", re.DOTALL)  # fmt: skip
_UNIT_SECONDS = {"ns": 10**9, "us": 10**6, "ms": 10**3}


def _read_zoned(text: str, fmt: str, unit: str, *, lax: bool = False) -> int | None:
    """``text`` read with one of polars' offset patterns, as a UTC instant (None: not).

    ``lax``: as polars finds the pattern (chrono's naive datetime, which reads an offset
    of 24 hours or more without checking it): its local time, not an instant.
    """
    if fmt == "%+":
        found = _RFC3339.fullmatch(text)
        naive, base = (None, "") if found is None else (
            f"{found.group('date')}T{found.group('time')}", "%Y-%m-%dT%H:%M:%S%.f")
    elif fmt.endswith("%#z"):
        found = _PERMISSIVE.fullmatch(text)
        naive, base = (None, "") if found is None else (found.group("naive"), fmt[:-3])
    else:  # a literal Z
        found = None
        naive, base = (text[:-1], fmt[:-1]) if text.endswith("Z") else (None, "")
    if naive is None:
        return None
    seconds = 0
    if found is not None and found.group("sign"):
        hours, minutes = int(found.group("h")), int(found.group("m") or 0)
        if minutes > 59 or (hours > 23 and not lax):
            return None
        seconds = (hours * 60 + minutes) * 60 * (1 if found.group("sign") == "+" else -1)
    ticks = _read(naive, base, unit, False)
    return None if ticks is None else _fit(ticks - seconds * _UNIT_SECONDS[unit])


class Inferred:
    """What polars infers for strings parsed without a format (`infer_parse`).

    ``stamps``: each text's value (None: not read); ``problem``: None, or ``"no format"``
    (no pattern reads any value: polars raises, or with ``strict=False`` all are null),
    ``"offset"`` (the values carry offsets: polars raises without a time zone, or with
    ``strict=False`` all are null), ``"order"`` (some value is read or not depending on
    the rows before it, or values of different groups come in rows of unknown order:
    ``detail`` names it).
    """

    def __init__(self, stamps: list[int | None], problem: str | None = None,
                 detail: str = "") -> None:  # fmt: skip
        self.stamps, self.problem, self.detail = stamps, problem, detail


def infer_parse(texts: list[str | None], unit: str, *, dates: bool, zoned: bool = False,
                rows: Sequence[int] | None = None) -> Inferred:  # fmt: skip
    """``texts`` read as polars reads strings without a format (`Inferred`).

    ``texts``: in the order of the rows they first appear in; read as dates (``dates``)
    or datetimes of ``unit``. ``zoned``: the result has a time zone, so values with
    offsets are read (as UTC instants; polars: else an error). ``rows``: the rows' texts
    (positions in ``texts``, nulls left out), where known: a value polars reads or not
    as the row before leaves its pattern is then followed through them (else: the
    problem ``"order"``).
    """
    nulls: list[int | None] = [None] * len(texts)
    if all(t is None for t in texts):  # no value, or only nulls: nulls
        return Inferred(nulls)
    groups: dict[str, tuple[str, ...]]
    if dates:
        groups = {"dmy": DATE_D_M_Y, "ymd": DATE_Y_M_D}
    else:
        groups = {"dmy": DATETIME_D_M_Y, "ymd": DATETIME_Y_M_D}
        groups["ymdz"] = DATETIME_Y_M_D_Z
    group: str | None = None
    for text in (t for t in texts if t is not None):
        group = next((g for g, patterns in groups.items()
                      if any(_found(text, p, unit, dates) for p in patterns)), None)
        if group is not None:
            break
    if rows is None and group is not None:  # which value comes first in the rows is unknown
        for text in (t for t in texts if t is not None):
            other = next((g for g, patterns in groups.items()
                          if any(_found(text, p, unit, dates) for p in patterns)), None)
            if other not in (None, group):
                return Inferred(nulls, "order", text)
    if group == "ymdz" and not zoned:
        return Inferred(nulls, "offset")
    if group is None:
        return Inferred(nulls, "no format")
    patterns = groups[group]
    out: list[int | None] = []
    latest = patterns[0]  # the pattern tried first (polars: the previous row's)
    looked: list[int] = []  # the values that look like the group's, read
    unlooked: list[tuple[int, list[str]]] = []  # the others some pattern reads
    for i, given in enumerate(texts):
        value = None
        if given is not None and (dates or _looks(given, group)):
            value = _read(given, latest, unit, dates)
            if value is None:
                for p in patterns:
                    value = _read(given, p, unit, dates)
                    if value is not None:
                        latest = p
                        break
            if value is not None:
                looked.append(i)
        elif given is not None:
            # read with the previous row's pattern only, the first one at the first row
            readers = [p for p in patterns if _read(given, p, unit, dates) is not None]
            if readers:
                unlooked.append((i, readers))
        out.append(value)
    if not unlooked:
        return Inferred(out)
    # the patterns a row can find as the previous row's: the first, and the first
    # pattern that reads each value that looks like the group's
    latest_ones = {patterns[0]}
    for i in looked:
        text = texts[i] or ""
        latest_ones.add(next(p for p in patterns if _read(text, p, unit, dates) is not None))
    depends: dict[int, list[str]] = {}
    for i, readers in unlooked:
        hits = latest_ones.intersection(readers)
        if hits == latest_ones:  # read whatever the rows before
            out[i] = _read(texts[i] or "", readers[0], unit, dates)
        elif hits:  # read or not, as the rows before it leave the pattern
            depends[i] = readers
    if not depends:
        return Inferred(out)
    if rows is None:
        return Inferred(nulls, "order", texts[next(iter(depends))] or "")
    # the rows followed as polars reads them: the pattern each row finds
    firsts = {i: next(p for p in patterns if _read(texts[i] or "", p, unit, dates) is not None)
              for i in looked}  # fmt: skip
    found: dict[int, set[bool]] = {i: set() for i in depends}
    latest = patterns[0]
    for i in rows:
        if i in depends:
            found[i].add(latest in depends[i])
        elif i in firsts and _read(texts[i] or "", latest, unit, dates) is None:
            latest = firsts[i]
    for i, reads in found.items():
        if len(reads) > 1:  # read in some rows, not in others: no value per string
            return Inferred(nulls, "order", texts[i] or "")
        if reads == {True}:
            out[i] = _read(texts[i] or "", depends[i][0], unit, dates)
    return Inferred(out)


def _looks(text: str, group: str) -> bool:
    """Whether ``text`` looks like a datetime of ``group`` as polars' regex finds it.

    Its first match (Rust's regex and Python's try the same ways first), with a month
    of 1 to 12.
    """
    found = _LOOKS[group].fullmatch(text)
    return found is not None and 1 <= int(found.group("month")) <= 12


def _found(text: str, fmt: str, unit: str, dates: bool) -> bool:
    """Whether polars finds ``fmt`` fits ``text`` (chrono reads it as a naive datetime)."""
    if fmt in _ZONED:
        return _read_zoned(text, fmt, unit, lax=True) is not None
    return _read(text, fmt, unit, dates) is not None


def _read(text: str, fmt: str, unit: str, dates: bool) -> int | None:
    """``text`` read with the chrono format ``fmt`` (None: not read)."""
    key = (text, fmt, unit, dates)
    hit = _READS.get(key, _MISSING)
    if hit is _MISSING:
        hit = _read_zoned(text, fmt, unit) if fmt in _ZONED \
            else parse_stamps([text], fmt, unit, dates=dates)[0]  # fmt: skip
        if len(_READS) > 100_000:
            _READS.clear()
        _READS[key] = hit
    return hit  # type: ignore[return-value]


_MISSING = object()
_READS: dict[tuple[str, str, str, bool], object] = {}
