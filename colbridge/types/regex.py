r"""Types layer: polars' (Rust ``regex``) Unicode character classes written for RE2.

polars matches ``\d``, ``\s`` and ``\w`` as Unicode classes; pyarrow's RE2 engine
matches them as ASCII, so ``"é"`` is no word character and ``"١"`` no digit there.
`unicode_classes` rewrites them as the Unicode property classes RE2 has, so a
pattern finds what polars finds.
"""

from __future__ import annotations

from colbridge.errors import UnsupportedOperationError

__all__ = ["unicode_classes"]

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
