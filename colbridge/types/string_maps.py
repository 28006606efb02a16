"""String-to-string functions, applied to the distinct strings of a dictionary.

Stage: types. A ``str`` function whose result is a string (``str.slice``,
``str.strip_chars``, ``str.zfill``, ...) is typed as a dictionary spec
``("map", function, source, *params)`` (`colbridge.plan.logical_typing`): the rows
keep their codes, and the result's dictionary is the source dictionary with the
function applied to each entry, here. Entries may become equal (``"UA"`` and
``"UAL"`` sliced to ``"U"``); comparisons, groups and outputs read a dictionary by
its values, so equal entries act as one string.

Each function is polars' (2.1), written per string in Python: lengths and offsets
count characters (code points), and whitespace is Unicode's White_Space, as Rust's
``str::trim`` takes it (Python's ``str.strip()`` also strips the separators U+001C
to U+001F).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import pyarrow as pa

from colbridge.errors import UnsupportedOperationError

__all__ = [
    "ASCII_LOWER",
    "STRING_FUNCTIONS",
    "STRING_MAPS",
    "absent_character",
    "all_ascii",
    "apply_string_map",
    "extract_regex",
    "many_matches",
]

#: Unicode's White_Space characters (what Rust's `char::is_whitespace` accepts)
WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def _slice(s: str, offset: int, length: int | None) -> str:
    # a negative offset counts from the end; a window reaching before the start keeps
    # only its part from the start on (polars: "abc".slice(-5, 3) is "a")
    start = offset if offset >= 0 else len(s) + offset
    stop = None if length is None else start + length
    if stop is not None and stop <= 0:
        return ""
    return s[max(start, 0) : stop]


def _tail(s: str, n: int) -> str:
    if n >= 0:
        return s[len(s) - n :] if n < len(s) else s
    return s[-n:]


def _strip(chars: str | None, how: str) -> Callable[[str], str]:
    chars = WHITESPACE if chars is None else chars
    if how == "start":
        return lambda s: s.lstrip(chars)
    if how == "end":
        return lambda s: s.rstrip(chars)
    return lambda s: s.strip(chars)


def _strip_prefix(s: str, prefix: str) -> str:
    return s[len(prefix) :] if s.startswith(prefix) else s


def _strip_suffix(s: str, suffix: str) -> str:
    return s[: len(s) - len(suffix)] if suffix and s.endswith(suffix) else s


#: the characters Rust's `regex::escape` escapes (polars' `str.escape_regex`): not
#: Python's `re.escape` set (which escapes spaces and more)
_REGEX_META = frozenset("\\.+*?()|[]{}^$#&-~")


def _escape_regex(s: str) -> str:
    return "".join("\\" + c if c in _REGEX_META else c for c in s)


def _normalize(form: Literal["NFC", "NFKC", "NFD", "NFKD"]) -> Callable[[str], str]:
    import unicodedata

    return lambda s: unicodedata.normalize(form, s)


#: ASCII's capital letters to small ones (`str.translate`), nothing else
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def many_matches(s: str, patterns: tuple[str, ...], insensitive: bool,
                 leftmost: bool) -> list[tuple[int, int, int]]:  # fmt: skip
    """The matches ``(start, end, pattern)`` polars' Aho-Corasick automaton finds in ``s``.

    Not overlapping, each search going on from the end of the last match. Standard
    semantics (``leftmost=False``): the match that ends first, of those the
    longest (the automaton's state holds its own pattern before the shorter ones
    its failure links add); ``leftmost=True`` (LeftmostFirst): the match that starts
    first, of those the pattern given first. ``insensitive``: ASCII letters fold to
    one case. Patterns are not empty (`colbridge.expr.api` refuses an empty one).

    >>> many_matches("abcd", ("bcd", "c"), False, False)
    [(2, 3, 1)]
    >>> many_matches("abcd", ("bcd", "c"), False, True)
    [(1, 4, 0)]
    """
    if insensitive:
        s = s.translate(ASCII_LOWER)
        patterns = tuple(p.translate(ASCII_LOWER) for p in patterns)
    # each pattern's next occurrence from the search position (`str.find`, in C); a
    # pattern's first occurrence is also its earliest-ending one
    following = [s.find(p) for p in patterns]  # -1: none left
    out: list[tuple[int, int, int]] = []
    while True:
        found = [(start, start + len(patterns[k]), k) for k, start in enumerate(following)
                 if start >= 0]  # fmt: skip
        if not found:
            return out
        if leftmost:
            match = min(found, key=lambda m: (m[0], m[2]))  # the first start, then pattern
        else:  # the first end; of those the longest, then the pattern given first
            match = min(found, key=lambda m: (m[1], m[0], m[2]))
        out.append(match)
        end = match[1]
        following = [s.find(p, end) if 0 <= start < end else start
                     for start, p in zip(following, patterns, strict=True)]  # fmt: skip


def _replace_many(patterns: tuple[str, ...], news: tuple[str, ...], insensitive: bool,
                  leftmost: bool) -> Callable[[str], str]:  # fmt: skip
    def replaced(s: str) -> str:
        parts, pos = [], 0
        for start, end, k in many_matches(s, patterns, insensitive, leftmost):
            parts += [s[pos:start], news[k]]
            pos = end
        return "".join(parts) + s[pos:]

    return replaced


def _encode_hex(s: str) -> str:
    return s.encode().hex()


def _encode_base64(s: str) -> str:
    import base64

    return base64.b64encode(s.encode()).decode("ascii")


def _reverse_graphemes(s: str) -> str:
    # polars reverses extended grapheme clusters (Rust's `unicode-segmentation`): a
    # letter and its combining marks, an emoji sequence, "\r\n" stay in their order;
    # the `regex` module's `\X` matches one cluster
    import regex

    return "".join(reversed(regex.findall(r"\X", s)))


def _title_case(s: str) -> str:
    # polars' rule (Rust's): a character after an alphabetic one in lower case, any
    # other in title case ("ǆ" to "ǅ", "ß" to "Ss", "they're" to "They'Re"). Python's
    # `str.title` asks whether the one before is *cased*: the two differ after a letter
    # without case ("a日z": polars "A日z", Python "A日Z"). The lower case of the whole
    # string gives each character's own in its context (a final "Σ" is "ς")
    if s.isascii():  # ASCII letters are all cased
        return s.title()
    import regex

    alphabetic = regex.compile(r"\p{Alphabetic}")
    lowered = s.lower()
    out: list[str] = []
    at, after_letter = 0, False
    for c in s:
        size = len(c.lower())
        out.append(lowered[at : at + size] if after_letter else c.title())
        at += size
        after_letter = alphabetic.match(c) is not None
    return "".join(out)


def _lookup(table: dict[str, str]) -> Callable[[str], str]:
    # strings not among the table's keys stay as they are
    return lambda s: table.get(s, s)


#: function name -> (params -> a function of one string)
STRING_MAPS: dict[str, Callable[..., Callable[[str], str]]] = {
    "slice": lambda offset, length: lambda s: _slice(s, offset, length),
    "head": lambda n: lambda s: s[:n],
    "tail": lambda n: lambda s: _tail(s, n),
    "strip_chars": lambda chars: _strip(chars, "both"),
    "strip_chars_start": lambda chars: _strip(chars, "start"),
    "strip_chars_end": lambda chars: _strip(chars, "end"),
    "strip_prefix": lambda prefix: lambda s: _strip_prefix(s, prefix),
    "strip_suffix": lambda suffix: lambda s: _strip_suffix(s, suffix),
    "pad_start": lambda length, fill: lambda s: s.rjust(length, fill),
    "pad_end": lambda length, fill: lambda s: s.ljust(length, fill),
    "zfill": lambda length: lambda s: s.zfill(length),
    # plain text (`str.replace(..., literal=True)`; an empty pattern matches between
    # every two characters, as in Rust)
    "replace": lambda pattern, value, n: lambda s: s.replace(pattern, value, n),
    "replace_all": lambda pattern, value: lambda s: s.replace(pattern, value),
    # each word's first character in title case, the others lower case (`_title_case`)
    "to_titlecase": lambda: _title_case,
    # `s + suffix`, `prefix + s`: polars joins the strings
    "affix": lambda prefix, suffix: lambda s: prefix + s + suffix,
    "normalize": _normalize,  # NFC, NFKC, NFD or NFKD
    "escape_regex": lambda: _escape_regex,
    # `replace(old, new)` of whole values: each string of `olds` by its `news`
    "replace_values": lambda olds, news: _lookup(dict(zip(olds, news, strict=True))),
    # `str.replace_many`: several plain texts at once, matched as polars' Aho-Corasick does
    "replace_many": _replace_many,
    # `str.encode`: the UTF-8 bytes as lowercase hex, or as base64 with padding
    "encode": lambda encoding: _encode_hex if encoding == "hex" else _encode_base64,
    "reverse": lambda: _reverse_graphemes,
}


#: every string-to-string function (the case mappings pyarrow's where the strings are ASCII;
#: `replace_regex`, a regex `str.replace`/`replace_all`, RE2's through pyarrow)
STRING_FUNCTIONS = frozenset({"to_lowercase", "to_uppercase", "replace_regex", *STRING_MAPS})


def apply_string_map(name: str, params: tuple[Any, ...], values: pa.Array) -> pa.Array:
    """``values`` (strings without nulls) with the function ``name(*params)`` applied."""
    import pyarrow.compute as pc  # on first use: its import is slow

    if name in ("to_lowercase", "to_uppercase"):
        # Arrow maps each character to one ("ß" to "ẞ", no final sigma); polars maps as
        # Rust and Python do ("ß" to "SS", "ΟΔΟΣ" to "οδος"): Python's, for those strings
        lower = name == "to_lowercase"
        return _ascii_in_arrow(values, pc.utf8_lower if lower else pc.utf8_upper,
                               str.lower if lower else str.upper)  # fmt: skip
    if name == "replace_regex":
        return _replace_regex(values, *params)
    window = _code_point_window(name, params)
    if window is not None:  # Arrow's slice by code points: no Python per string
        return pc.utf8_slice_codeunits(values, window[0], window[1]).cast(values.type)
    mapped = _arrow_map(name, params, values)
    if mapped is not None:
        return mapped.cast(values.type)
    fn = STRING_MAPS[name](*params)
    return pa.array([fn(s) for s in values.to_pylist()], type=values.type)


def _arrow_map(name: str, params: tuple[Any, ...], values: pa.Array) -> pa.Array | None:
    """`STRING_MAPS`' function ``name(*params)`` of ``values`` in Arrow's kernels.

    None where Arrow's kernels do not give its answers (for these parameters). A
    column of mostly distinct strings then maps in Arrow's time, not Python's per
    string. Arrow counts code points where Python does (padding, slicing), trims the
    characters it is given (Rust's whitespace, spelled out, where none are), and
    replaces plain text leftmost first, without overlaps, as Python and Rust do; an
    empty pattern (a match between every two characters) stays with Python.

    >>> _arrow_map("zfill", (4,), pa.array(["-7", "+", "12345", ""])).to_pylist()
    ['-007', '+000', '12345', '0000']
    >>> _arrow_map("strip_suffix", ("é",), pa.array(["café", "é", "cafe"])).to_pylist()
    ['caf', '', 'cafe']
    """
    import pyarrow.compute as pc

    if name in ("strip_chars", "strip_chars_start", "strip_chars_end"):
        chars = WHITESPACE if params[0] is None else params[0]
        trim = {"strip_chars": pc.utf8_trim, "strip_chars_start": pc.utf8_ltrim,
                "strip_chars_end": pc.utf8_rtrim}[name]  # fmt: skip
        return trim(values, characters=chars) if chars else values
    if name in ("pad_start", "pad_end") and params[0] >= 0 and len(params[1]) == 1:
        pad = pc.utf8_lpad if name == "pad_start" else pc.utf8_rpad
        return pad(values, width=params[0], padding=params[1])
    if name == "zfill" and params[0] >= 0:  # zeros after a sign, as Python's `str.zfill`
        width = params[0]
        signed = pc.or_(pc.starts_with(values, pattern="-"), pc.starts_with(values, pattern="+"))
        after_sign = pc.utf8_lpad(pc.utf8_slice_codeunits(values, 1), width=max(width - 1, 0),
                                  padding="0")  # fmt: skip
        sign = pc.utf8_slice_codeunits(values, 0, 1)
        return pc.if_else(signed, pc.binary_join_element_wise(sign, after_sign,
                                                         pa.scalar("", values.type)),
                          pc.utf8_lpad(values, width=width, padding="0"))  # fmt: skip
    if name in ("replace", "replace_all") and params[0]:
        most = params[2] if name == "replace" else -1
        if most == 0:
            return values
        return pc.replace_substring(values, pattern=params[0], replacement=params[1],
                                    max_replacements=None if most < 0 else most)  # fmt: skip
    if name == "strip_prefix":
        prefix = params[0]
        return pc.if_else(pc.starts_with(values, pattern=prefix),
                          pc.utf8_slice_codeunits(values, len(prefix)), values)  # fmt: skip
    if name == "strip_suffix":
        suffix = params[0]
        if not suffix:
            return values
        return pc.if_else(pc.ends_with(values, pattern=suffix),
                          pc.utf8_slice_codeunits(values, 0, -len(suffix)), values)  # fmt: skip
    if name == "affix":
        prefix, suffix = (pa.scalar(p, values.type) for p in params)
        return pc.binary_join_element_wise(prefix, values, suffix, pa.scalar("", values.type))
    if name == "replace_values":
        table = dict(zip(*params, strict=True))  # of a repeated string, its last new value
        if any(new is None for new in table.values()):
            return None
        found = pc.index_in(values, value_set=pa.array(list(table), values.type))
        news = pa.array(list(table.values()), values.type)
        return pc.if_else(pc.is_null(found), values, pc.take(news, found))
    if name in ("to_titlecase", "normalize"):
        # ASCII: Arrow's title case is Python's; every normal form of ASCII is itself
        arrow = pc.utf8_title if name == "to_titlecase" else (lambda v: v)
        return _ascii_in_arrow(values, arrow, STRING_MAPS[name](*params))
    if name == "reverse":  # ASCII's grapheme clusters are its characters, but "\r\n"
        crlf = pc.match_substring(values, pattern="\r\n")
        return _ascii_in_arrow(values, pc.utf8_reverse, _reverse_graphemes, also=crlf)
    return None


def _ascii_in_arrow(values: pa.Array, arrow: Callable[[pa.Array], pa.Array],
                    python: Callable[[str], str],
                    also: pa.Array | None = None) -> pa.Array:  # fmt: skip
    """``arrow`` of the ASCII strings of ``values``, ``python`` of each of the others.

    For functions whose Arrow kernel gives Python's answers on ASCII only (case
    mappings, which Arrow makes one character to one): a column of mostly ASCII
    strings runs Python for its few others. ``also`` marks more strings for Python.

    >>> import pyarrow.compute as pc
    >>> _ascii_in_arrow(pa.array(["straße", "ab"]), pc.utf8_upper, str.upper).to_pylist()
    ['STRASSE', 'AB']
    """
    import pyarrow.compute as pc

    mapped = arrow(values)
    other = pc.invert(pc.string_is_ascii(values))
    if also is not None:
        other = pc.or_(other, also)
    if not pc.any(other).as_py():
        return mapped
    rest = [python(s) for s in values.filter(other).to_pylist()]
    return pc.replace_with_mask(mapped.cast(values.type), other, pa.array(rest, values.type))


def _code_point_window(name: str, params: tuple[Any, ...]) -> tuple[int, int | None] | None:
    """``(start, stop)`` of Arrow's ``utf8_slice_codeunits`` that gives ``name``, if one does.

    Arrow counts code points (as polars does) and reads a negative bound from the
    end, clamped to the string. A negative ``slice`` offset with a length ends at a
    place that depends on each string's length: None (Python's `_slice`).
    """
    if name == "slice":
        offset, length = params
        if length is None:
            return offset, None
        return (offset, offset + length) if offset >= 0 else None
    if name == "head":  # negative: all but the last -n
        return 0, params[0]
    if name == "tail":  # negative: all but the first -n; 0: nothing
        n = params[0]
        return (-n, None) if n else (0, 0)
    return None


def all_ascii(values: pa.Array) -> bool:
    """Whether every string of ``values`` is ASCII (true of none)."""
    import pyarrow.compute as pc

    return pc.all(pc.string_is_ascii(values)).as_py() is not False


def absent_character(values: pa.Array) -> str:
    """A character none of ``values`` holds (from the private use area, then beyond).

    >>> absent_character(pa.array(["a", "\ue000"]))
    '\ue001'
    """
    import pyarrow.compute as pc

    for point in range(0xE000, 0x110000):  # above the surrogates
        char = chr(point)
        if not pc.any(pc.match_substring(values, char)).as_py():
            return char
    msg = "no character is absent from the strings"  # pragma: no cover - 1.1M distinct
    raise AssertionError(msg)


def extract_regex(values: pa.Array, pattern: str, group: int) -> tuple[pa.Array, pa.Array]:
    """Capture group ``group`` of each string's first match of ``pattern``, as polars' ``extract``.

    Returns the texts ("" where there is none) and whether each has one: polars gives
    null where the pattern does not match or the group takes no part in the match.
    RE2 (through pyarrow) finds the match as Rust's ``regex`` does (leftmost-first)
    but writes a group that takes no part as "": a group that cannot match the empty
    string took part exactly where its text is not empty; one that can (``(a*)``)
    is taken to have taken part (polars: null where it did not).
    """
    import pyarrow.compute as pc

    from colbridge.types.regex import capture_groups, group_body, re2_pattern, translate

    regex = re2_pattern(pattern, values)
    none = pa.array([False] * len(values), pa.bool_())
    if group not in capture_groups(pattern).values():  # no such group: null everywhere
        return pa.array([""] * len(values), values.type), none
    if group > 9:
        msg = (
            f"`str.extract({pattern!r}, {group})`: colbridge's RE2 engine writes groups 0 to "
            "9 only; name fewer groups, or extract it in polars"
        )
        raise UnsupportedOperationError(msg)
    found = pc.match_substring_regex(values, pattern=regex)
    # the whole string replaced by the group: the first match, wherever it starts (group
    # 0, the match itself, as a group of its own: RE2's \0 would be the whole string)
    inner = f"({regex})" if group == 0 else f"(?:{regex})"
    whole = f"^(?s:.*?){inner}(?s:.*)$"
    texts = pc.replace_substring_regex(values, pattern=whole, replacement=f"\\{group or 1}",
                                       max_replacements=1)  # fmt: skip
    texts = pc.if_else(found, texts, pa.scalar("", values.type))
    body = group_body(pattern, group) if group else None
    if body is not None:
        try:
            empty = pc.match_substring_regex(pa.array([""], pa.string()),
                                             pattern=f"^(?:{translate(body)[0]})$")[0].as_py()
        except pa.ArrowInvalid:
            empty = True  # not a pattern alone: taken as able to match nothing
        if not empty:
            found = pc.and_(found, pc.not_equal(texts, pa.scalar("", values.type)))
    return texts, found


def _replace_regex(values: pa.Array, pattern: str, value: str, most: int | None) -> pa.Array:
    """The matches of the regex ``pattern`` replaced by ``value`` (the first ``most`` of them).

    RE2's leftmost-first matches, as Rust's ``regex`` finds them, with polars' Unicode
    classes (`unicode_classes`) and replacement syntax (`re2_replacement`).
    """
    import pyarrow.compute as pc

    from colbridge.types.regex import re2_pattern, re2_replacement

    regex, replacement = re2_pattern(pattern, values), re2_replacement(pattern, value)
    if most == 0:  # Arrow reads 0 as "no limit"
        return values
    try:
        return pc.replace_substring_regex(values, pattern=regex, replacement=replacement,
                                          max_replacements=most)  # fmt: skip
    except pa.ArrowInvalid as exc:
        msg = (
            f"`str.replace` with the regex {pattern!r} failed in colbridge's RE2 engine ({exc}); "
            "look-around and backreferences are in neither polars' engine nor RE2: compute "
            "it in polars"
        )
        raise UnsupportedOperationError(msg) from None
