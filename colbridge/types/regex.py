r"""Types layer: polars' (Rust ``regex``) Unicode character classes written for RE2.

polars matches ``\d``, ``\s`` and ``\w`` as Unicode classes; pyarrow's RE2 engine
matches them as ASCII, so ``"é"`` is no word character and ``"١"`` no digit there.
`unicode_classes` rewrites them as the Unicode property classes RE2 has, so a
pattern finds what polars finds.
"""

from __future__ import annotations

import re

import pyarrow as pa

from colbridge.errors import ComputeError, UnsupportedOperationError

__all__ = [
    "InvalidRegexError",
    "capture_groups",
    "check_compiles",
    "group_body",
    "group_fields",
    "has_word_boundary",
    "matches_empty",
    "re2_pattern",
    "re2_pattern_or_none",
    "re2_replacement",
    "translate",
    "unicode_classes",
]

# Rust's \w: Alphabetic, marks, decimal digits, connector punctuation, join controls.
# RE2 has no Alphabetic property: letters and letter numbers, with the symbols that
# are Other_Alphabetic (circled, parenthesised and squared letters; the marks among
# Other_Alphabetic are in \p{M} already).
_WORD = (
    r"\p{L}\p{M}\p{Nd}\p{Pc}\p{Nl}\x{200C}\x{200D}\x{24B6}-\x{24E9}"
    r"\x{1F130}-\x{1F149}\x{1F150}-\x{1F169}\x{1F170}-\x{1F189}"
)
_DIGIT = r"\p{Nd}"
# Rust's \s: the White_Space property, \t-\r, U+0085 and the separators \p{Z}
_SPACE = r"\t-\r\x{85}\p{Z}"

_OUTSIDE = {"w": f"[{_WORD}]", "W": f"[^{_WORD}]", "d": _DIGIT, "D": r"\P{Nd}",
            "s": f"[{_SPACE}]", "S": f"[^{_SPACE}]"}  # fmt: skip
# in a bracketed class a negated class cannot join a union: \W and \S are alternatives
# of the class instead (`_bracketed`)
_INSIDE = {"w": _WORD, "d": _DIGIT, "D": r"\P{Nd}", "s": _SPACE}
_HEX = re.compile(r"u\{([0-9A-Fa-f]{1,6})\}|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})")


def unicode_classes(pattern: str) -> str:
    r"""``pattern`` with ``\d \D \s \S \w \W`` as polars reads them (Unicode).

    See `translate`, which also says where the pattern is ASCII's only.
    """
    return translate(pattern)[0]


def translate(pattern: str) -> tuple[str, str | None]:
    r"""``pattern`` (Rust ``regex`` syntax, as polars reads it) written for RE2.

    ``\d \D \s \S \w \W`` become Unicode classes, ``\u{e9}``/``\u00e9``/``\U000000e9``
    RE2's ``\x{e9}``, a class nested in a class (``[a[bc]]``, a union in Rust, a
    literal ``[`` in RE2) joins its parent. Returns the pattern and, where RE2 reads
    part of it as ASCII only (``\W`` or ``\S`` in a negated class), what that part is.
    A pattern that turns Unicode off from its start (``(?-u)``) is RE2's own (without
    the flag, which RE2 does not know). Refused by name: class set operations (Rust's
    ``[\w&&[^\d]]``), a negated class nested in a class, and the word-boundary forms
    RE2 lacks (``\<``, ``\>``, ``\b{start}``...).
    """
    if pattern.startswith("(?-u)"):
        return pattern[len("(?-u)") :], None  # RE2's classes are ASCII already; no `u` flag
    if "(?-u" in pattern:
        return pattern, None
    out: list[str] = []
    ascii_only: str | None = None
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            text, i = _escape(pattern, i, _OUTSIDE)
            out.append(text)
            continue
        if c == "[":
            text, i, why = _bracketed(pattern, i)
            out.append(text)
            ascii_only = ascii_only or why
            continue
        out.append(c)
        i += 1
    return "".join(out), ascii_only


def _escape(pattern: str, i: int, table: dict[str, str]) -> tuple[str, int]:
    """The escape at ``pattern[i]`` (a backslash) for RE2, and where the pattern goes on."""
    e = pattern[i + 1]
    if e in table:
        return table[e], i + 2
    if e in "uU":
        found = _HEX.match(pattern, i + 1)
        if found is not None:
            digits = next(g for g in found.groups() if g is not None)
            return f"\\x{{{digits}}}", found.end()
    if e in "<>" or pattern.startswith("b{", i + 1):
        form = pattern[i : pattern.find("}", i) + 1] if e == "b" else pattern[i : i + 2]
        msg = (f"regex {pattern!r}: the word boundary `{form}` is not in colbridge's RE2 "
               "engine; use `\\b` (over ASCII strings), or compute it in polars")  # fmt: skip
        raise UnsupportedOperationError(msg)
    return pattern[i : i + 2], i + 2


def _bracketed(pattern: str, i: int) -> tuple[str, int, str | None]:
    r"""The bracketed class at ``pattern[i]`` (a ``[``) for RE2; where it ends; ASCII-only part.

    A class nested in it is a union with it (its items join the class); ``\W`` and ``\S``
    in a class that is not negated become alternatives beside it (RE2 cannot put a
    negated class in a union); in a negated class they stay RE2's (ASCII).
    """
    try:
        body, alternatives, j, negated, ascii_only = _class_items(pattern, i)
    except _Unclosed:
        return pattern[i:], len(pattern), None
    if not alternatives:
        return f"[{'^' if negated else ''}{body}]", j, ascii_only
    parts = ([f"[{body}]"] if body else []) + alternatives
    return "(?:" + "|".join(parts) + ")", j, ascii_only


class _Unclosed(Exception):
    """A bracketed class without its closing bracket (RE2 reports it)."""


def _class_items(pattern: str, i: int) -> tuple[str, list[str], int, bool, str | None]:
    """A class's items for RE2, its alternatives, its end, whether negated, ASCII-only part."""
    n = len(pattern)
    j = i + 1
    negated = j < n and pattern[j] == "^"
    j += negated
    items: list[str] = []
    alternatives: list[str] = []
    ascii_only: str | None = None
    first = True  # a ']' first in a class is itself
    while j < n:
        c = pattern[j]
        if c == "]" and not first:
            return "".join(items), alternatives, j + 1, negated, ascii_only
        first = False
        if pattern[j : j + 2] in ("&&", "--", "~~"):
            msg = (f"regex {pattern!r}: character class set operations (`&&`, `--`, `~~`) "
                   "are not supported by colbridge's RE2 engine; write the class out, or "
                   "filter in polars")  # fmt: skip
            raise UnsupportedOperationError(msg)
        if c == "\\" and j + 1 < n:
            e = pattern[j + 1]
            if e in "WS" and not negated:
                alternatives.append(_OUTSIDE[e])
                j += 2
            elif e in "WS":
                items.append(pattern[j : j + 2])
                ascii_only = f"`\\{e}` in the negated class of {pattern!r}"
                j += 2
            else:
                text, j = _escape(pattern, j, _INSIDE)
                items.append(text)
            continue
        if c == "[" and pattern.startswith("[:", j):  # a POSIX class, `[:alpha:]`
            end = pattern.find(":]", j + 2)
            if end >= 0:
                items.append(pattern[j : end + 2])
                j = end + 2
                continue
        if c == "[":  # a nested class: a union with this one
            inner, inner_alts, j, inner_negated, why = _class_items(pattern, j)
            if inner_negated:
                msg = (f"regex {pattern!r}: a negated class nested in a class is not "
                       "supported by colbridge's RE2 engine; write the class out, or "
                       "filter in polars")  # fmt: skip
                raise UnsupportedOperationError(msg)
            items.append(inner)
            alternatives += inner_alts
            ascii_only = ascii_only or why
            continue
        items.append(c)
        j += 1
    # no closing bracket: the class as written (the brackets before it too), for RE2 to report
    raise _Unclosed


def group_fields(pattern: str) -> dict[str, int]:
    r"""The fields of polars' ``str.extract_groups(pattern)`` in order, each its group's number.

    A named group's field is its name, another's its number (``"1"``).

    >>> group_fields(r"(?<y>\d{4})-(\d{2})")
    {'y': 1, '2': 2}
    """
    groups = capture_groups(pattern)
    named = {number: name for name, number in groups.items() if not name.isdigit()}
    return {named.get(n, str(n)): n for n in sorted(set(groups.values())) if n}


def capture_groups(pattern: str) -> dict[str, int]:
    """The capture groups of ``pattern``: each group's number by its name (``"1"``: the first).

    Groups are numbered by their opening parenthesis, as Rust's ``regex`` and RE2 number
    them; ``(?P<name>...)`` and ``(?<name>...)`` are named (and numbered); other ``(?``
    groups capture nothing. Escapes and bracketed classes hold no group.
    """
    groups: dict[str, int] = {"0": 0}
    for number, name, _ in _scan_groups(pattern):
        groups[str(number)] = number
        if name:
            groups[name] = number
    return groups


def group_body(pattern: str, number: int) -> str | None:
    """The text inside capture group ``number`` of ``pattern`` (None: no such group)."""
    for k, _, body in _scan_groups(pattern):
        if k == number:
            return body
    return None


def _scan_groups(pattern: str) -> list[tuple[int, str | None, str]]:
    """Each capture group of ``pattern``: its number, its name (or None) and its body."""
    found: list[tuple[int, str | None, int]] = []  # number, name, where the body starts
    bodies: dict[int, str] = {}
    opened: list[tuple[int | None, int]] = []  # per open parenthesis: group number, start
    count = 0
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":  # a ']' first in a class is itself
                i += 1
            continue
        elif c == "(":
            rest = pattern[i + 1 :]
            name = None
            start = i + 1
            for prefix in ("?P<", "?<"):
                if rest.startswith(prefix) and not rest.startswith(("?<=", "?<!")):
                    name = rest[len(prefix) : rest.find(">")]
                    start = i + 1 + rest.find(">") + 1
            if name is not None or not rest.startswith("?"):
                count += 1
                found.append((count, name, start))
                opened.append((count, start))
            else:
                opened.append((None, start))
        elif c == ")" and opened:
            number, start = opened.pop()
            if number is not None:
                bodies[number] = pattern[start:i]
        i += 1
    return [(k, name, bodies.get(k, pattern[start:])) for k, name, start in found]


def re2_replacement(pattern: str, value: str) -> str:
    r"""A polars replacement text (``$1``, ``${1}``, ``${name}``, ``$name``, ``$$``) as RE2's.

    RE2 writes groups ``\0``-``\9`` and a backslash as ``\\``. As in Rust, ``$name``
    takes the longest run of letters, digits and ``_`` after the ``$`` (``$1a`` is the
    group named ``1a``); a group the pattern does not have is the empty string; a ``$``
    followed by nothing it can name stays a ``$``.
    """
    groups = capture_groups(pattern)
    out: list[str] = []
    i, n = 0, len(value)
    while i < n:
        c = value[i]
        if c == "\\":
            out.append("\\\\")
            i += 1
            continue
        if c != "$":
            out.append(c)
            i += 1
            continue
        if value[i + 1 : i + 2] == "$":
            out.append("$")
            i += 2
            continue
        if value[i + 1 : i + 2] == "{":
            end = value.find("}", i + 2)
            if end < 0:
                out.append("$")
                i += 1
                continue
            name, i = value[i + 2 : end], end + 1
        else:
            j = i + 1
            while j < n and (value[j].isascii() and (value[j].isalnum() or value[j] == "_")):
                j += 1
            if j == i + 1:
                out.append("$")
                i += 1
                continue
            name, i = value[i + 1 : j], j
        number = groups.get(name)
        if number is None:
            continue  # no such group: nothing, as in Rust
        if number > 9:
            msg = (
                f"replacement {value!r} refers to group {number} of {pattern!r}; colbridge's "
                "RE2 engine writes groups 0 to 9 only"
            )
            raise UnsupportedOperationError(msg)
        out.append(f"\\{number}")
    return "".join(out)


_WORD_BOUNDARY = re.compile(r"(?<!\\)(?:\\\\)*\\[bB]")


def has_word_boundary(pattern: str) -> bool:
    r"""Whether ``pattern`` holds a word boundary, ``\b`` or ``\B`` (not an escaped backslash)."""
    return _WORD_BOUNDARY.search(pattern) is not None


def re2_pattern(pattern: str, values: pa.Array) -> str:
    r"""``pattern`` as RE2 reads polars' dialect over ``values`` (`translate`).

    Every regex function runs its pattern through here. A word boundary, or a part RE2
    reads as ASCII, is refused over strings that are not all ASCII: RE2's is ASCII's,
    polars' Unicode's (``"é"`` is a word character there); over ASCII strings the two
    agree. A pattern RE2 cannot compile is an `InvalidRegexError` naming it.
    """
    from colbridge.types.string_maps import all_ascii

    regex, ascii_only = translate(pattern)
    if has_word_boundary(pattern):
        ascii_only = "a word boundary (`\\b`, `\\B`)"
    if ascii_only is not None and not all_ascii(values):
        msg = (
            f"regex {pattern!r}: {ascii_only} over non-ASCII strings is Unicode's in "
            "polars and ASCII's in colbridge's RE2 engine; write it without (a word "
            "boundary as `(^|\\W)word(\\W|$)`), or compute it in polars"
        )
        raise UnsupportedOperationError(msg)
    check_compiles(pattern, regex)
    return regex


def re2_pattern_or_none(pattern: str, values: pa.Array, strict: bool) -> str | None:
    """`re2_pattern`, or None for a pattern polars refuses too when not ``strict``.

    polars gives null on every row there (``str.contains``, ``str.find``,
    ``str.split``); a pattern only RE2 cannot read is an error either way.

    >>> re2_pattern_or_none("a(b", pa.array(["ab"]), strict=False) is None
    True
    """
    try:
        return re2_pattern(pattern, values)
    except InvalidRegexError as exc:
        if strict or not exc.invalid_in_polars:
            raise
        return None


def matches_empty(regex: str, pattern: str) -> bool:
    """Whether ``pattern`` (``regex`` as RE2 reads it) can match the empty string, or a boundary.

    Rust's ``regex`` (polars) and RE2 place empty matches differently (one per
    character or per byte, and after a match or not): what counts, cuts or lists
    matches refuses such a pattern.

    >>> matches_empty("a*", "a*"), matches_empty("a+", "a+")
    (True, False)
    """
    import pyarrow.compute as pc

    empty = pc.match_substring_regex(pa.array([""], pa.large_string()), pattern=regex)
    return bool(empty[0].as_py()) or has_word_boundary(pattern)


#: RE2's errors for patterns that Rust's ``regex`` (polars) refuses too: the rest may be
#: polars syntax RE2 lacks (``\p{Alphabetic}``, ``(?x)``, ``a**``)
_INVALID_IN_BOTH = ("missing )", "unexpected )", "missing ]",
                    "no argument for repetition operator", "trailing \\")  # fmt: skip


class InvalidRegexError(ComputeError, UnsupportedOperationError):
    """A regex RE2 cannot compile; ``invalid_in_polars``: polars' engine refuses it too.

    A `ComputeError` as polars raises for an invalid pattern, and an
    `UnsupportedOperationError` as colbridge raises for syntax its engine lacks.
    """

    def __init__(self, message: str, invalid_in_polars: bool) -> None:
        super().__init__(message)
        self.invalid_in_polars = invalid_in_polars


def check_compiles(pattern: str, regex: str) -> None:
    """Raise `InvalidRegexError` naming ``pattern`` where RE2 cannot compile ``regex``."""
    import pyarrow.compute as pc  # on first use: its import is slow

    try:
        pc.match_substring_regex(pa.array([""], pa.string()), pattern=regex)
    except pa.ArrowInvalid as exc:
        reason = str(exc).removeprefix("Invalid regular expression: ")
        invalid = reason.startswith(_INVALID_IN_BOTH)
        msg = (
            f"regex {pattern!r} is not valid ({reason})" if invalid else
            f"regex {pattern!r} uses syntax colbridge's RE2 engine does not have "
            f"({reason}): no look-around, backreferences, `(?x)`, possessive repetition, "
            "or Unicode properties other than scripts and general categories"
        )  # fmt: skip
        raise InvalidRegexError(msg, invalid) from None
