"""Types layer: new strings, written as polars writes them.

``cast(pl.String)`` of a column that is not a string, ``dt.to_string(format)`` and
``concat_str`` make new strings, one per distinct value (or combination): the values
are dictionary-encoded (`format_as_strings`, `join_strings`), each distinct one written
once, and the rows keep their codes, so the result is a string column like any other
(its dictionary, its codes) for the operations that follow.

polars' texts, checked against it value by value in tests/engine/test_to_string.py:

* integers in decimal; booleans ``true``/``false``;
* floats as Rust's ``zmij`` writes them: the shortest digits that read back as the same
  float (Python's ``repr`` for float64, NumPy's ``unique`` digits for float32), laid out
  positionally (``1000000000000000.0``, ``0.00001``, a whole number with ``.0``) while
  the decimal exponent is from -5 to 15 (float32: -6 to 12), else as ``1.2345e-7`` /
  ``1e+16``; ``NaN``, ``inf``, ``-inf``, ``-0.0``;
* dates ``%Y-%m-%d``, with chrono's years: four digits at least, a sign before a
  negative year and before one past 9999 (``-0768-02-04``, ``+10183-09-21``);
* datetimes ``%Y-%m-%d %H:%M:%S`` and the unit's fraction (3, 6 or 9 digits, always
  written), in a time zone the local time and its offset (``+05:30``; the zone's
  transitions as the kernels read them, `colbridge.types.timezones`);
* times ``%H:%M:%S`` (polars writes no fraction);
* durations, by ``dt.to_string`` only (polars does not cast them), in polars' two
  forms: ISO 8601 (``P1DT2H3M4.5S``, ``-PT0.0015S``) and its own (``1d 2h 3m 4s
  500ms``, ``-1500µs``), by `_duration_texts`.

Arrow's casts to strings write the same texts for all but a few values (a float's
layout near polars' bounds, a whole float's ``.0``, a year past 9999): they write the
bulk at C++ speed, and those few are rewritten. ``dt.to_string`` writes chrono's
specifiers field by field for all values at once (`parse_chrono_format`, `_strftime`).
"""

from __future__ import annotations

import datetime as _dt

import numpy as np
import pyarrow as pa

from colbridge.types.chrono import DAY_NAMES, MONTH_NAMES
from colbridge.types.timezones import LAST_RULE_YEAR, transitions

__all__ = ["CODE_POINT", "float_text", "format_as_strings", "format_needs",
           "parse_chrono_format"]

#: `format_as_strings`'s format for integers written as the character of their code
#: point (``str.from_code_point``), not as digits
CODE_POINT = "code point"

#: the decimal exponents written positionally, by float width (bits): zmij's choice
_POSITIONAL = {64: (-5, 15), 32: (-6, 12)}
_PER_SECOND = {"ms": 10**3, "us": 10**6, "ns": 10**9}


def _shortest(value: float, bits: int) -> tuple[str, int]:
    """The shortest digits reading back as ``value`` (finite, positive) and its exponent."""
    text = repr(value) if bits == 64 else np.format_float_scientific(np.float32(value),
                                                                     unique=True)  # fmt: skip
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    if exponent:  # d.ddd e±x
        exp = int(exponent)
    elif whole != "0":  # ddd.ddd
        exp = len(whole) - 1
    else:  # 0.000ddd
        exp = -(len(fraction) - len(fraction.lstrip("0"))) - 1
    return digits.rstrip("0") or "0", exp


def float_text(value: float, bits: int = 64) -> str:
    """``value`` as polars writes a Float64 (``bits`` 32: a Float32) in a string.

    >>> [float_text(v) for v in (1.0, 1e15, 1e16, 1.5e-5, 1.5e-6, -0.0)]
    ['1.0', '1000000000000000.0', '1e+16', '0.000015', '1.5e-6', '-0.0']
    >>> float_text(0.1, 32), float_text(1e13, 32)
    ('0.1', '1e+13')
    """
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    sign = "-" if np.signbit(value) else ""
    if value == 0:
        return sign + "0.0"
    digits, exp = _shortest(abs(value), bits)
    low, high = _POSITIONAL[bits]
    if low <= exp <= high:
        if exp < 0:
            return f"{sign}0.{'0' * (-exp - 1)}{digits}"
        whole = digits[: exp + 1].ljust(exp + 1, "0")
        return f"{sign}{whole}.{digits[exp + 1:] or '0'}"
    mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'+' if exp > 0 else ''}{exp}"


def _float_texts(values: pa.Array, bits: int) -> pa.Array:
    """`float_text` of many values (no nulls): Arrow's shortest digits, fixed up.

    Arrow casts a float to the same shortest digits (double-conversion) and lays
    them out as polars does from 1e-4 to 1e9 (positionally) and below 1e-7 and from
    1e17 (scientifically), but for a whole number's ``.0`` and ``nan``. Values in the
    bands between, where the two layouts differ, are written one by one: float64s
    through ``repr`` (the same digits; rewritten as polars lays them out),
    float32s by `float_text`.
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    low, high = _POSITIONAL[bits]
    text = pc.cast(values, pa.string())
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # NaN, zeros
        floats = values.to_numpy(zero_copy_only=False).astype(np.float64)
        exponent = np.floor(np.log10(np.abs(floats)))
        # a rounded log10 may put a value a decade off at a power of ten: the bands
        # reach a decade past Arrow's layout and polars' bounds on each side
        band = (exponent >= low - 1) & (exponent <= high + 1) \
            & ~((exponent >= -4) & (exponent <= 8))  # fmt: skip
        whole = (floats == np.trunc(floats)) & (np.abs(floats) < 1e9)
    text = pc.if_else(pa.array(whole), pc.binary_join_element_wise(text, ".0", ""), text)
    text = pc.if_else(pc.equal(text, "nan"), "NaN", text)
    if not band.any():
        return text
    picked = floats[band].tolist()
    written = _repr_texts(picked) if bits == 64 else \
        pa.array([float_text(v, 32) for v in picked], pa.string())  # fmt: skip
    return pc.replace_with_mask(text, pa.array(band), written)


def _repr_texts(values: list[float]) -> pa.Array:
    """`float_text` of float64 values through Python's ``repr`` (the same digits, faster).

    From 1e-4 to 1e16 ``repr`` writes what polars writes; below, polars writes a
    decimal exponent of -5 positionally and any exponent without a leading zero
    (``1e-7``, where ``repr`` writes ``1e-07``).
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    texts = [repr(v) for v in values]
    texts = [float_text(v) if t.endswith("e-05") else t
             for v, t in zip(values, texts, strict=True)]  # fmt: skip
    return pc.replace_substring_regex(pa.array(texts, pa.string()), r"e-0(\d)$", r"e-\1")


def _naive_datetime_texts(values: pa.Array, unit: str) -> pa.Array:
    """Naive timestamps (none null) as polars writes them; Arrow's cast for the bulk."""
    import pyarrow.compute as pc  # on first use: its import is slow

    texts = _chrono_years(values.cast(pa.string()))
    far = pc.starts_with(texts, "<").to_numpy(zero_copy_only=False)  # "<value out of range"
    if not far.any():
        return texts
    digits = len(str(_PER_SECOND[unit])) - 1  # chrono's years, through `_strftime`
    written = _strftime(values.filter(pa.array(far)),
                        parse_chrono_format(f"%Y-%m-%d %H:%M:%S%.{digits}f"))  # fmt: skip
    return pc.replace_with_mask(texts, pa.array(far), written)


def _chrono_years(texts: pa.Array) -> pa.Array:
    """Arrow's date texts with chrono's years: a ``+`` before a year past 9999.

    Arrow writes ``%Y-%m-%d`` (and ``%H:%M:%S`` with the unit's fraction, always) as
    polars does, four-digit years and ``-0001`` included; ``10000`` is chrono's
    ``+10000``.
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    return pc.replace_substring_regex(texts, r"^([0-9]{5,})", r"+\1")


def _datetime_texts(values: pa.Array, unit: str, tz: str | None) -> pa.Array:
    """Distinct timestamps (none null) in ``unit`` as polars writes them, in ``tz``."""
    import pyarrow.compute as pc  # on first use: its import is slow

    if tz is None:
        return _naive_datetime_texts(values, unit)
    # each value's offset from UTC (the kernels' transition table), then its local time
    ticks = values.cast(pa.int64()).to_numpy(zero_copy_only=False)
    per_second = _PER_SECOND[unit]
    instants, table = transitions(tz)
    at = np.searchsorted(np.array(instants, np.int64), ticks // per_second, "right") - 1
    offsets = np.array(table, np.int64)[at]
    texts = _naive_datetime_texts(pa.array(ticks + offsets * per_second, pa.timestamp(unit)),
                                  unit)  # fmt: skip
    return pc.binary_join_element_wise(texts, _zone_texts(":z", offsets, None), "")


def _characters(codes: pa.Array, code_points: pa.Array) -> pa.DictionaryArray:
    """Codes into distinct integers as codes into the characters of those code points.

    A negative value, a surrogate (0xD800 to 0xDFFF) or one past 0x10FFFF is no
    character: its rows are null here, and the kernel reading them fails the compute
    where such a row reaches the result (`LogicalTyping.from_code_point`), so a row a
    filter or a ``when`` removed first fails nothing, as in polars.
    """
    values = code_points.to_numpy(zero_copy_only=False)  # a dictionary: no nulls
    bad = (values < 0) | (values > 0x10FFFF) | ((values >= 0xD800) & (values <= 0xDFFF))
    characters = pa.array([chr(v) for v in values[~bad].tolist()], pa.string())
    if not bad.any():
        return pa.DictionaryArray.from_arrays(codes, characters)
    renumbered = np.cumsum(~bad, dtype=np.int32) - 1  # each valid value's new code
    new_codes = pa.array(renumbered, mask=bad).take(codes)
    return pa.DictionaryArray.from_arrays(new_codes, characters)


def _texts(values: pa.Array) -> pa.Array:
    """Distinct non-null values (a dictionary) written as polars writes them."""
    import pyarrow.compute as pc  # on first use: its import is slow

    t = values.type
    if pa.types.is_integer(t):
        return pc.cast(values, pa.string())
    if pa.types.is_boolean(t):
        return pc.if_else(values, "true", "false")
    if pa.types.is_floating(t):
        return _float_texts(values, 32 if t == pa.float32() else 64)
    if pa.types.is_date32(t):
        return _chrono_years(values.cast(pa.string()))
    if pa.types.is_timestamp(t):
        return _datetime_texts(values, t.unit, t.tz)
    if pa.types.is_time(t):  # polars writes no fraction
        return pc.utf8_slice_codeunits(values.cast(pa.string()), 0, 8)
    msg = f"no string form for {t}"  # pragma: no cover - typing allows only the above
    raise TypeError(msg)


def format_as_strings(array: pa.Array | pa.ChunkedArray,
                      fmt: str | None = None) -> pa.DictionaryArray:  # fmt: skip
    """``array`` as polars' ``cast(pl.String)`` writes it: int32 codes into distinct texts.

    With ``fmt``, dates, datetimes or times as ``dt.to_string(fmt)`` writes them
    (chrono's strftime: `parse_chrono_format`). Each distinct value is written once,
    in order of first appearance, and each text is in the dictionary once: a float's
    NaNs (of any bits) are one NaN first, and values a format writes alike (``%Y`` of
    two dates of one year) share the text's code.

    >>> out = format_as_strings(pa.array([2.0, None, 0.5, 2.0]))
    >>> out.dictionary.to_pylist(), out.indices.to_pylist()
    (['2.0', '0.5'], [0, None, 1, 0])
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    if pa.types.is_floating(array.type):
        array = pc.if_else(pc.is_nan(array), pa.scalar(float("nan"), array.type), array)
    encoded = pc.dictionary_encode(array)
    codes = encoded.indices.cast(pa.int32())
    if fmt is None:  # distinct values write distinct texts
        return pa.DictionaryArray.from_arrays(codes, _texts(encoded.dictionary))
    if fmt == CODE_POINT:  # distinct code points are distinct characters
        return _characters(codes, encoded.dictionary)
    if pa.types.is_duration(array.type):  # one form or the other: distinct texts too
        return pa.DictionaryArray.from_arrays(codes, _duration_texts(encoded.dictionary, fmt))
    written = pc.dictionary_encode(_strftime(encoded.dictionary, parse_chrono_format(fmt)))
    return pa.DictionaryArray.from_arrays(pc.take(written.indices.cast(pa.int32()), codes),
                                          written.dictionary)  # fmt: skip


# -- durations (`dt.to_string("iso" | "polars")`) ---------------------------------------------

#: the names of a duration's parts (days, hours, minutes, seconds), by form
_DURATION_PARTS = {"polars": ("d", "h", "m", "s"), "iso": ("D", "H", "M", "S")}
#: polars' names of a fraction of a second, finest first, by the duration's unit
_FRACTION_UNITS = {"ns": ("ns", "µs", "ms"), "us": ("µs", "ms", ""), "ms": ("ms", "", "")}


def _tdiv(a: np.ndarray, b: int) -> np.ndarray:
    """``a / b`` toward zero, as Rust's integer division (exact: no float in between)."""
    quotient: np.ndarray = (a - np.fmod(a, b)) // b
    return quotient


def _digits(values: np.ndarray) -> pa.Array:
    return pa.array(values).cast(pa.string())


def _duration_texts(values: pa.Array, form: str) -> pa.Array:
    """Durations (Arrow's, ms, us or ns) as polars writes them in ``form``.

    ``"iso"`` (or ``"iso:strict"``): ISO 8601, ``[-]P[nD][T[nH][nM][n[.f]S]]``, the
    fraction's trailing zeros dropped, ``PT0S`` for zero. ``"polars"``: the non-zero
    parts among days, hours, minutes and seconds, each with its sign
    (``-2d -19h -54m``), then the rest of a second in the largest of ns, µs and ms
    that holds it whole; ``0ns`` (the unit) for zero. polars' arithmetic (Rust's, toward
    zero), its quirk included: the smallest int64 has no absolute value, and its ISO
    text keeps the signs (``-P-106751DT-23H-47M-16.-854775808S``).
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    unit = values.type.unit
    per_second = _PER_SECOND[unit]
    v = np.asarray(values.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False),
                   dtype=np.int64)  # fmt: skip
    sizes = [86_400 * per_second, 3_600 * per_second, 60 * per_second, per_second]
    empty = pa.scalar("")

    def piece(keep: np.ndarray, *texts: pa.Array | str) -> pa.Array:
        return pc.if_else(keep, pc.binary_join_element_wise(*texts, ""), empty)

    if form == "polars":
        pieces = []
        for i, (size, name) in enumerate(zip(sizes, _DURATION_PARTS["polars"], strict=True)):
            whole = _tdiv(v if i == 0 else np.fmod(v, sizes[i - 1]), size)
            more = pc.if_else(np.fmod(v, size) != 0, " ", empty)
            pieces.append(piece(whole != 0, _digits(whole), name, more))
        fraction = np.fmod(v, per_second)
        finest, middle, coarsest = _FRACTION_UNITS[unit]
        by_thousand = np.fmod(fraction, 1_000) != 0
        by_million = np.fmod(fraction, 1_000_000) != 0
        value = np.where(by_thousand, fraction, np.where(
            by_million, _tdiv(fraction, 1_000), _tdiv(fraction, 1_000_000)))  # fmt: skip
        name = pc.if_else(by_thousand, finest, pc.if_else(by_million, middle, coarsest))
        pieces.append(piece(fraction != 0, _digits(value), name))
        texts = pc.binary_join_element_wise(*pieces, "")
        zero = f"0{_FRACTION_UNITS[unit][0]}"
    else:
        a = np.abs(v)  # wraps at the smallest int64, as polars' `abs` does
        days, hours, minutes = (_tdiv(a if i == 0 else np.fmod(a, sizes[i - 1]), sizes[i])
                                for i in range(3))  # fmt: skip
        seconds = _tdiv(np.fmod(a, sizes[2]), per_second)
        fraction = np.fmod(a, per_second)
        width = len(str(per_second)) - 1  # Rust's `{:09}`: the sign counts in the width
        padded = pc.if_else(
            fraction < 0,
            pc.binary_join_element_wise("-", pc.utf8_lpad(_digits(-fraction), width - 1, "0"), ""),
            pc.utf8_lpad(_digits(fraction), width, "0"))  # fmt: skip
        point = piece(fraction != 0, ".", pc.utf8_rtrim(padded, characters="0"))
        has_time = (hours != 0) | (minutes != 0) | (seconds != 0) | (fraction != 0)
        texts = pc.binary_join_element_wise(
            pc.if_else(v < 0, "-P", "P"),
            piece(days != 0, _digits(days), "D"),
            pc.if_else(has_time, "T", empty),
            piece(hours != 0, _digits(hours), "H"),
            piece(minutes != 0, _digits(minutes), "M"),
            piece((seconds != 0) | (fraction != 0), _digits(seconds), point, "S"),
            "")  # fmt: skip
        zero = "PT0S"
    return pc.if_else(v == 0, zero, texts)


# -- chrono's strftime (`dt.to_string(format)`) ------------------------------------------------

#: chrono's shorthands, written out
_SHORTHANDS = {"D": "%m/%d/%y", "x": "%m/%d/%y", "F": "%Y-%m-%d", "v": "%e-%b-%Y",
               "R": "%H:%M", "T": "%H:%M:%S", "X": "%H:%M:%S", "r": "%I:%M:%S %p",
               "c": "%a %b %e %H:%M:%S %Y", "+": "%Y-%m-%dT%H:%M:%S%.f%:z",
               "h": "%b"}  # fmt: skip
#: numbers: (field, width, padding) of each specifier (``%C``'s: `_century_texts`)
_NUMBERS = {"C": ("year", 2, "0"), "y": ("year2", 2, "0"), "m": ("month", 2, "0"),
            "d": ("day", 2, "0"), "e": ("day", 2, " "), "w": ("weekday0", 1, "0"),
            "u": ("weekday", 1, "0"), "U": ("week_sunday", 2, "0"),
            "W": ("week_monday", 2, "0"), "g": ("iso_year2", 2, "0"),
            "V": ("iso_week", 2, "0"), "j": ("ordinal", 3, "0"), "q": ("quarter", 1, "0"),
            "H": ("hour", 2, "0"), "k": ("hour", 2, " "), "I": ("hour12", 2, "0"),
            "l": ("hour12", 2, " "), "M": ("minute", 2, "0"), "S": ("second", 2, "0"),
            "s": ("timestamp", 1, "0")}  # fmt: skip
_YEARS = {"Y": "year", "G": "iso_year"}
_SUNDAY_FIRST = tuple(d.title() for d in (DAY_NAMES[-1], *DAY_NAMES[:-1]))
_MONTH_TITLES = ("", *(m.title() for m in MONTH_NAMES))  # month 1 at index 1
_NAMES = {"a": ("weekday0", tuple(d[:3] for d in _SUNDAY_FIRST)),
          "A": ("weekday0", _SUNDAY_FIRST), "b": ("month", tuple(m[:3] for m in _MONTH_TITLES)),
          "B": ("month", _MONTH_TITLES), "p": ("pm", ("AM", "PM")),
          "P": ("pm", ("am", "pm"))}  # fmt: skip
_FRACTIONS = ("f", ".f", ".3f", ".6f", ".9f", "3f", "6f", "9f")
_ZONES = ("z", ":z", "::z", ":::z", "Z")
_LITERALS = {"%": "%", "t": "\t", "n": "\n"}
_TIME_FIELDS = frozenset({"hour", "hour12", "minute", "second", "pm", "timestamp"})
_PADDINGS = {"-": "", "_": " ", "0": "0"}

#: A parsed format: literal texts and (specifier, padding or None) pairs.
Token = str | tuple[str, str | None]


def parse_chrono_format(fmt: str) -> list[Token]:
    """``fmt``'s literal texts and specifiers, shorthands written out, as chrono reads them.

    Raises `ValueError` naming a specifier chrono does not write (``%Q``, a lone ``%``).

    >>> parse_chrono_format("%F at %-H")
    [('Y', None), '-', ('m', None), '-', ('d', None), ' at ', ('H', '')]
    """
    tokens: list[Token] = []
    text, i = "", 0
    while i < len(fmt):
        if fmt[i] != "%":
            text += fmt[i]
            i += 1
            continue
        rest = fmt[i + 1:]
        pad = _PADDINGS.get(rest[:1]) if rest[:1] in _PADDINGS and len(rest) > 1 else None
        if pad is not None:
            rest = rest[1:]
        spec = next((s for s in (*_FRACTIONS, *_ZONES) if rest.startswith(s)), rest[:1])
        if spec in _LITERALS and pad is None:
            text += _LITERALS[spec]
        elif spec in _SHORTHANDS and pad is None:
            if text:
                tokens.append(text)
                text = ""
            tokens.extend(parse_chrono_format(_SHORTHANDS[spec]))
        elif spec in _NUMBERS or spec in _YEARS or (pad is None and (
                spec in _NAMES or spec in _FRACTIONS or spec in _ZONES)):  # fmt: skip
            if text:
                tokens.append(text)
                text = ""
            tokens.append((spec, pad))
        else:
            msg = f"chrono does not write the specifier %{fmt[i + 1:i + 2 + len(spec)]}"
            raise ValueError(msg)
        i += 1 + (pad is not None) + len(spec)
    if text:
        tokens.append(text)
    return tokens


def format_needs(tokens: list[Token]) -> tuple[bool, bool, bool]:
    """Whether parsed ``tokens`` read a date's fields, a time's, and a time zone."""
    date = time = zone = False
    for token in tokens:
        if isinstance(token, str):
            continue
        spec = token[0]
        field = _NUMBERS.get(spec, _NAMES.get(spec, (spec,)))[0]
        zone |= spec in _ZONES
        time |= spec in _FRACTIONS or field in _TIME_FIELDS
        # a timestamp counts days too
        date |= spec in _YEARS or field == "timestamp" or (
            field not in _TIME_FIELDS and spec not in _FRACTIONS and spec not in _ZONES)
    return date, time, zone


def _days_from_civil(year: np.ndarray, month: int, day: int) -> np.ndarray:
    """Days since 1970-01-01 of (year, month, day), for arrays of years."""
    y = year - (month <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days: np.ndarray = era * 146097 + doe - 719468
    return days


def _civil_arrays(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(year, month, day) of arrays of days since 1970-01-01 (NumPy's calendar, in C)."""
    dates = days.astype("datetime64[D]")
    months = dates.astype("datetime64[M]")
    month_count = months.astype(np.int64)
    return (np.floor_divide(month_count, 12) + 1970, month_count % 12 + 1,
            (dates - months).astype(np.int64) + 1)  # fmt: skip


class _Fields:
    """The fields a format reads, each computed once when first read, for all values."""

    def __init__(self, days: np.ndarray, seconds: np.ndarray, stamps: np.ndarray) -> None:
        self.days, self.seconds = days, seconds
        self.values: dict[str, np.ndarray] = {"timestamp": stamps}

    def __getitem__(self, name: str) -> np.ndarray:
        hit = self.values.get(name)
        if hit is None:
            hit = self.values[name] = getattr(self, "_" + name)()
        return hit

    def _civil(self) -> None:
        self.values["year"], self.values["month"], self.values["day"] = \
            _civil_arrays(self.days)  # fmt: skip

    def _year(self) -> np.ndarray:
        self._civil()
        return self.values["year"]

    def _month(self) -> np.ndarray:
        self._civil()
        return self.values["month"]

    def _day(self) -> np.ndarray:
        self._civil()
        return self.values["day"]

    def _weekday0(self) -> np.ndarray:  # Sunday 0; 1970-01-01 was a Thursday
        return np.asarray((self.days + 4) % 7)

    def _weekday(self) -> np.ndarray:  # Monday 1
        return np.asarray((self.days + 3) % 7 + 1)

    def _ordinal(self) -> np.ndarray:
        return np.asarray(self.days - _days_from_civil(self["year"], 1, 1) + 1)

    def _year2(self) -> np.ndarray:
        return np.asarray(self["year"] % 100)

    def _quarter(self) -> np.ndarray:
        return np.asarray((self["month"] + 2) // 3)

    def _week_sunday(self) -> np.ndarray:
        return np.asarray((self["ordinal"] - 1 + 7 - self["weekday0"]) // 7)

    def _week_monday(self) -> np.ndarray:
        return np.asarray((self["ordinal"] - 1 + 7 - (self["weekday0"] + 6) % 7) // 7)

    def _thursday(self) -> np.ndarray:  # the ISO week's Thursday names its year
        return np.asarray(self.days - (self["weekday"] - 1) + 3)

    def _iso_year(self) -> np.ndarray:
        return _civil_arrays(self["thursday"])[0]

    def _iso_year2(self) -> np.ndarray:
        return np.asarray(self["iso_year"] % 100)

    def _iso_week(self) -> np.ndarray:
        first = _days_from_civil(self["iso_year"], 1, 1)
        return np.asarray((self["thursday"] - first) // 7 + 1)

    def _hour(self) -> np.ndarray:
        return np.asarray(self.seconds // 3600)

    def _hour12(self) -> np.ndarray:
        return np.asarray((self["hour"] + 11) % 12 + 1)

    def _minute(self) -> np.ndarray:
        return np.asarray(self.seconds // 60 % 60)

    def _second(self) -> np.ndarray:
        return np.asarray(self.seconds % 60)

    def _pm(self) -> np.ndarray:
        return (self["hour"] >= 12).astype(np.int64)


def _number_texts(values: np.ndarray, width: int, pad: str) -> pa.Array:
    import pyarrow.compute as pc  # on first use: its import is slow

    texts = pc.cast(pa.array(values), pa.string())
    return pc.utf8_lpad(texts, width, pad) if pad else texts


def _year_texts(years: np.ndarray, pad: str | None) -> pa.Array:
    """Chrono's ``%Y``: years 0-9999 padded to four digits; others signed, padded to five.

    ``pad`` (``%-Y`` none, ``%_Y`` spaces, else zeros) pads before the sign with
    spaces, after it with zeros, as Rust's ``{:+05}`` and ``{:+5}`` do.
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    pad = "0" if pad is None else pad
    inside = (years >= 0) & (years <= 9999)
    digits = pc.cast(pa.array(np.abs(years)), pa.string())
    signs = pa.array(np.where(inside, "", np.where(years < 0, "-", "+")))
    width = np.where(inside, 4, 5)
    if pad == "0":  # zeros after the sign
        return pc.binary_join_element_wise(signs, pc.utf8_lpad(digits, 4, "0"), "")
    texts = pc.binary_join_element_wise(signs, digits, "")
    if not pad:
        return texts
    return pc.if_else(pa.array(width == 4), pc.utf8_lpad(texts, 4, " "),
                      pc.utf8_lpad(texts, 5, " "))  # fmt: skip


def _century_texts(years: np.ndarray, pad: str | None) -> pa.Array:
    """Chrono's ``%C``: the century as one byte (wrapping), written as two digit characters.

    chrono writes ``year.div_euclid(100) as u8`` with ``'0' + n / 10`` and ``'0' + n % 10``,
    so a century past 99 (or below 0) reads ``:1`` for 101 or ``H5`` for -11: as polars.
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    n = np.floor_divide(years, 100) % 256
    high = (48 + n // 10).astype(np.uint8).view("S1").astype(str)
    low = (48 + n % 10).astype(np.uint8).view("S1").astype(str)
    first = np.where(n >= 10, high, {"0": "0", " ": " ", "": ""}["0" if pad is None else pad])
    return pc.binary_join_element_wise(pa.array(first), pa.array(low), "")


def _fraction_texts(spec: str, nanos: np.ndarray) -> pa.Array:
    """Chrono's fractions of a second, written.

    ``%f`` nanoseconds, ``%.f`` 3, 6 or 9 digits as needed (nothing for none),
    ``%.3f``/``%3f``... that many digits, with or without a dot.
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    if spec == "f":
        return _number_texts(nanos, 9, "0")
    if spec == ".f":
        digits = np.where(nanos % 1_000_000 == 0, 3, np.where(nanos % 1_000 == 0, 6, 9))
        texts = pc.utf8_lpad(pc.cast(pa.array(nanos), pa.string()), 9, "0")
        cut = [pc.utf8_slice_codeunits(texts, 0, k) for k in (3, 6, 9)]
        picked = pc.case_when(pc.make_struct(pa.array(digits == 3), pa.array(digits == 6)),
                              *cut)  # fmt: skip
        return pc.if_else(pa.array(nanos == 0), "", pc.binary_join_element_wise(".", picked, ""))
    width = int(spec.strip(".f"))
    texts = _number_texts(nanos // 10 ** (9 - width), width, "0")
    return pc.binary_join_element_wise(".", texts, "") if spec.startswith(".") else texts


def _zone_texts(spec: str, offsets: np.ndarray, names: pa.Array | None) -> pa.Array:
    import pyarrow.compute as pc  # on first use: its import is slow

    if spec == "Z":
        assert names is not None
        return names
    distinct, at = np.unique(offsets, return_inverse=True)
    written = []
    for o in distinct.tolist():
        hours, minutes, seconds = abs(o) // 3600, abs(o) // 60 % 60, abs(o) % 60
        sign = "-" if o < 0 else "+"
        written.append({"z": f"{sign}{hours:02d}{minutes:02d}",
                        ":z": f"{sign}{hours:02d}:{minutes:02d}",
                        "::z": f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}",
                        ":::z": f"{sign}{hours:02d}"}[spec])  # fmt: skip
    return pc.take(pa.array(written, pa.string()), pa.array(at.reshape(-1)))


def _zone_names(tz: str, utc: np.ndarray) -> pa.Array:
    """The zone's abbreviation (``IST``, ``CEST``, ``LMT``) at each instant (UTC seconds).

    Read from ``zoneinfo`` value by value (an abbreviation may change where the offset
    does not: Dublin's LMT and DMT), within its years 1-9999; from 2100 on, the last
    transition's, as the offsets (`colbridge.types.timezones`).
    """
    import zoneinfo

    import pyarrow.compute as pc  # on first use: its import is slow

    zone = zoneinfo.ZoneInfo(tz)
    instants, _ = transitions(tz)
    last = max(instants[-1], -62_135_596_800)  # 0001-01-01
    end = int(_dt.datetime(LAST_RULE_YEAR + 1, 1, 1, tzinfo=_dt.timezone.utc).timestamp())
    distinct, at = np.unique(utc, return_inverse=True)
    names = []
    for when in distinct.tolist():
        when = last if when >= end else min(max(when, -62_135_596_800), 253_402_300_799)
        names.append(_dt.datetime.fromtimestamp(when, tz=zone).tzname() or "")
    return pc.take(pa.array(names, pa.string()), pa.array(at.reshape(-1)))


def _strftime(values: pa.Array, tokens: list[Token]) -> pa.Array:
    """Distinct dates, datetimes or times (none null) written by chrono's ``tokens``."""
    import pyarrow.compute as pc  # on first use: its import is slow

    t = values.type
    ticks = values.cast(pa.int32() if pa.types.is_date32(t) else pa.int64()) \
        .to_numpy(zero_copy_only=False).astype(np.int64)  # fmt: skip
    offsets = np.zeros(len(ticks), np.int64)
    names = None
    if pa.types.is_date32(t):
        days, seconds, nanos = ticks, np.zeros_like(ticks), np.zeros_like(ticks)
        stamps = ticks * 86_400
    elif pa.types.is_time(t):  # nanoseconds of a day
        days = np.zeros_like(ticks)
        seconds, nanos = np.divmod(ticks, 10**9)
        stamps = seconds
    else:
        per_second = _PER_SECOND[t.unit]
        utc, fraction = np.divmod(ticks, per_second)
        stamps = utc
        nanos = fraction * (10**9 // per_second)
        local = utc
        if t.tz is not None:
            instants, zone_offsets = transitions(t.tz)
            at = np.asarray(np.searchsorted(np.array(instants, np.int64), utc, "right") - 1)
            offsets = np.array(zone_offsets, np.int64)[at]
            local = utc + offsets
            if any(tok[0] == "Z" for tok in tokens if not isinstance(tok, str)):
                names = _zone_names(t.tz, utc)
        days, seconds = np.divmod(local, 86_400)
    fields = _Fields(days, seconds, stamps)
    pieces: list[pa.Array | pa.Scalar] = []
    for token in tokens:
        if isinstance(token, str):
            pieces.append(pa.scalar(token, pa.string()))
            continue
        spec, pad = token
        if spec in _YEARS:
            pieces.append(_year_texts(fields[_YEARS[spec]], pad))
        elif spec == "C":
            pieces.append(_century_texts(fields["year"], pad))
        elif spec in _NUMBERS:
            field, width, default = _NUMBERS[spec]
            pieces.append(_number_texts(fields[field], width, default if pad is None else pad))
        elif spec in _NAMES:
            field, names_of = _NAMES[spec]
            pieces.append(pc.take(pa.array(names_of, pa.string()), pa.array(fields[field])))
        elif spec in _FRACTIONS:
            pieces.append(_fraction_texts(spec, nanos))
        else:
            pieces.append(_zone_texts(spec, offsets, names))
    pieces.append(pa.array([""], pa.string()).take(pa.array(np.zeros(len(ticks), np.int64))))
    return pc.binary_join_element_wise(*pieces, "")  # literals broadcast to the rows


# -- concat_str: strings of several columns, joined --------------------------------------------


def concat_radix(specs: tuple[object, ...], i: int, sizes: list[int]) -> int:
    """Argument ``i``'s place value in `concat_str`'s key: ``prod(sizes[j] + 1, j > i)``.

    Refused where the keys of every combination would not fit an int64 (naming the
    dictionaries' sizes): join fewer columns at once.

    >>> concat_radix(("a", "b", "c"), 0, [2, 9, 99])
    1000
    """
    total = 1
    for n in sizes:
        total *= n + 1
    if total >= 2**63:
        from colbridge.errors import ComputeError

        msg = (f"`concat_str` of {len(specs)} strings with {', '.join(map(str, sizes))} "
               "distinct values: their combinations outnumber an int64 key; join fewer "
               "columns at once (`concat_str` of the joined ones and the rest)")  # fmt: skip
        raise ComputeError(msg)
    radix = 1
    for n in sizes[i + 1:]:
        radix *= n + 1
    return radix


def join_strings(keys: pa.Array | pa.ChunkedArray, dictionaries: list[pa.Array],
                 separator: str, ignore_nulls: bool) -> pa.DictionaryArray:  # fmt: skip
    """`concat_str`'s strings from its keys: each distinct key's strings joined once.

    A key's digits (`concat_radix`) are each argument's code + 1 (0: a null left out,
    with ``ignore_nulls``); a null key is a null row. Keys that join to one text (``a``
    and ``bc``, ``ab`` and ``c``) share its code.

    >>> out = join_strings(pa.array([1 * 3 + 2, None, 2 * 3 + 0]),
    ...                    [pa.array(["x", "y"]), pa.array(["p", "q"])], "-", True)
    >>> out.dictionary.to_pylist(), out.indices.to_pylist()
    (['x-q', 'y'], [0, None, 1])
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks else pa.array([], pa.int64())
    encoded = pc.dictionary_encode(keys)
    distinct = encoded.dictionary.to_numpy(zero_copy_only=False).astype(np.int64)
    # key 0 (every argument null, left out) is "": Arrow's skipping join drops such a row
    joined = distinct[distinct != 0]
    rest = joined
    digits: list[np.ndarray] = []
    for dictionary in reversed(dictionaries):
        rest, digit = np.divmod(rest, len(dictionary) + 1)
        digits.append(digit)
    pieces = [pc.take(dictionary.cast(pa.string()), pa.array(digit - 1, mask=digit == 0))
              for dictionary, digit in zip(dictionaries, reversed(digits), strict=True)]
    texts = pc.binary_join_element_wise(*pieces, separator,
                                        null_handling="skip" if ignore_nulls else "emit_null")
    if len(joined) < len(distinct):
        texts = pc.replace_with_mask(pa.array([""] * len(distinct), pa.string()),
                                     pa.array(distinct != 0), texts)  # fmt: skip
    written = pc.dictionary_encode(texts)
    codes = pc.take(written.indices.cast(pa.int32()), encoded.indices.cast(pa.int32()))
    return pa.DictionaryArray.from_arrays(codes, written.dictionary)
