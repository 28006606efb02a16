"""Types layer: numbers, booleans, dates, datetimes and times written as polars writes them.

``cast(pl.String)`` of a column that is not a string makes new strings, one per
distinct value: the values are dictionary-encoded (`format_as_strings`), each distinct
value written once, and the rows keep their codes, so the result is a string column
like any other (its dictionary, its codes) for the operations that follow.

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
* times ``%H:%M:%S`` (polars writes no fraction).

Arrow's casts to strings write the same texts for all but a few values (a float's
layout near polars' bounds, a whole float's ``.0``, a year past 9999): they write the
bulk at C++ speed, and those few are rewritten.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from colbridge.types.timezones import transitions

__all__ = ["float_text", "format_as_strings"]

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


def _civil(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian (year, month, day) of ``days`` since 1970-01-01, any year."""
    cycles, rest = divmod(days + 719468, 146097)  # 400-year eras from 0000-03-01
    year_of_era = (rest - rest // 1460 + rest // 36524 - rest // 146096) // 365
    day_of_year = rest - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    mp = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return year_of_era + cycles * 400 + (month <= 2), month, day


def _far_datetime_text(ticks: int, unit: str) -> str:
    """A naive datetime Arrow cannot write (a year far past 9999), as chrono writes it."""
    seconds, fraction = divmod(ticks, _PER_SECOND[unit])
    days, clock = divmod(seconds, 86_400)
    year, month, day = _civil(days)
    sign = "-" if year < 0 else "+" if year > 9999 else ""
    digits = len(str(_PER_SECOND[unit])) - 1
    return (f"{sign}{abs(year):04d}-{month:02d}-{day:02d} {clock // 3600:02d}:"
            f"{clock // 60 % 60:02d}:{clock % 60:02d}.{fraction:0{digits}d}")


def _naive_datetime_texts(values: pa.Array, unit: str) -> pa.Array:
    """Naive timestamps (none null) as polars writes them; Arrow's cast for the bulk."""
    import pyarrow.compute as pc  # on first use: its import is slow

    texts = _chrono_years(values.cast(pa.string()))
    far = pc.starts_with(texts, "<").to_numpy(zero_copy_only=False)  # "<value out of range"
    if not far.any():
        return texts
    ticks = values.cast(pa.int64()).to_numpy(zero_copy_only=False)[far]
    written = pa.array([_far_datetime_text(t, unit) for t in ticks.tolist()], pa.string())
    return pc.replace_with_mask(texts, pa.array(far), written)


def _chrono_years(texts: pa.Array) -> pa.Array:
    """Arrow's date texts with chrono's years: a ``+`` before a year past 9999.

    Arrow writes ``%Y-%m-%d`` (and ``%H:%M:%S`` with the unit's fraction, always) as
    polars does, four-digit years and ``-0001`` included; ``10000`` is chrono's
    ``+10000``.
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    return pc.replace_substring_regex(texts, r"^([0-9]{5,})", r"+\1")


def _offset_texts(offsets: np.ndarray) -> pa.Array:
    """UTC offsets in seconds as ``+05:30``, each distinct one written once."""
    import pyarrow.compute as pc  # on first use: its import is slow

    distinct, at = np.unique(offsets, return_inverse=True)
    written = [f"{'-' if o < 0 else '+'}{abs(o) // 3600:02d}:{abs(o) // 60 % 60:02d}"
               for o in distinct.tolist()]  # fmt: skip
    return pc.take(pa.array(written, pa.string()), pa.array(at.reshape(-1)))


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
    return pc.binary_join_element_wise(texts, _offset_texts(offsets), "")


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


def format_as_strings(array: pa.Array | pa.ChunkedArray) -> pa.DictionaryArray:
    """``array`` as polars' ``cast(pl.String)`` writes it: int32 codes into distinct texts.

    Each distinct value is written once, in order of first appearance; distinct values
    write distinct texts once a float's NaNs (of any bits) are one NaN.

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
    return pa.DictionaryArray.from_arrays(encoded.indices.cast(pa.int32()),
                                          _texts(encoded.dictionary))  # fmt: skip
