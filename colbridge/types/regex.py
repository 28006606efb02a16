r"""Types layer: polars' (Rust ``regex``) Unicode character classes written for RE2.

polars matches ``\d``, ``\s`` and ``\w`` as Unicode classes; pyarrow's RE2 engine
matches them as ASCII, so ``"é"`` is no word character and ``"١"`` no digit there.
`unicode_classes` rewrites them as the Unicode property classes RE2 has, so a
pattern finds what polars finds.
"""

from __future__ import annotations

import re

import pyarrow as pa

from colbridge.errors import UnsupportedOperationError

__all__ = [
    "capture_groups",
    "has_word_boundary",
    "re2_pattern",
    "re2_replacement",
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
# in a bracketed class a negated class cannot join a union; \W and \S stay (ASCII)
_INSIDE = {"w": _WORD, "d": _DIGIT, "D": r"\P{Nd}", "s": _SPACE}


def unicode_classes(pattern: str) -> str:
    r"""``pattern`` with ``\d \D \s \S \w \W`` as polars reads them (Unicode).

    A pattern that turns Unicode off from its start (``(?-u)``) is RE2's own
    (without the flag, which RE2 does not know); class set operations (Rust's
    ``[\w&&[^\d]]``), which RE2 would read as literal characters, are refused.
    """
    if pattern.startswith("(?-u)"):
        return pattern[len("(?-u)") :]  # RE2's classes are ASCII already; it has no `u` flag
    if "(?-u" in pattern:
        return pattern
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            table = _INSIDE if in_class else _OUTSIDE
            out.append(table.get(e, c + e))
            i += 2
            continue
        if not in_class and c == "[":
            in_class = True
            out.append(c)
            i += 1
            # a ']' right after '[' or '[^' is a literal one
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":
                out.append("]")
                i += 1
            continue
        if in_class and pattern[i : i + 2] in ("&&", "--", "~~"):
            msg = (f"regex {pattern!r}: character class set operations (`&&`, `--`, `~~`) "
                   "are not supported by colbridge's RE2 engine; write the class out, or "
                   "filter in polars")  # fmt: skip
            raise UnsupportedOperationError(msg)
        if in_class and c == "]":
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


def capture_groups(pattern: str) -> dict[str, int]:
    """The capture groups of ``pattern``: each group's number by its name (``"1"``: the first).

    Groups are numbered by their opening parenthesis, as Rust's ``regex`` and RE2 number
    them; ``(?P<name>...)`` and ``(?<name>...)`` are named (and numbered); other ``(?``
    groups capture nothing. Escapes and bracketed classes hold no group.
    """
    groups: dict[str, int] = {"0": 0}
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
            for start in ("?P<", "?<"):
                if rest.startswith(start) and not rest.startswith(("?<=", "?<!")):
                    name = rest[len(start) : rest.find(">")]
            if name is not None or not rest.startswith("?"):
                count += 1
                groups[str(count)] = count
                if name:
                    groups[name] = count
        i += 1
    return groups


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
    r"""``pattern`` as RE2 reads polars' dialect over ``values`` (`unicode_classes`).

    Every regex function runs its pattern through here. A word boundary is refused
    over strings that are not all ASCII: RE2's is ASCII's, polars' Unicode's (``"é"``
    is a word character there); over ASCII strings the two agree.
    """
    from colbridge.types.string_maps import all_ascii

    if has_word_boundary(pattern) and not all_ascii(values):
        msg = (
            f"regex {pattern!r}: a word boundary (`\\b`, `\\B`) over non-ASCII strings is "
            "Unicode's in polars and ASCII's in colbridge's RE2 engine; match the "
            "boundary another way (`(^|\\W)word(\\W|$)`), or compute it in polars"
        )
        raise UnsupportedOperationError(msg)
    return unicode_classes(pattern)
