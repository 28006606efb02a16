"""Lists of strings made of strings (``str.split``, ``str.extract_all``) and what ``list`` takes.

Stage: types. colbridge has no list or struct columns: a list exists here only as
the parts (or matches) of a distinct string, on the way to one value per string
that a table or a new dictionary holds (`colbridge.runtime.tables`):
``s.str.split(",")`` followed by ``list.get(0)``, ``list.len()``,
``list.join("-")``, ...; a ``str.split_exact``/``str.splitn`` struct followed by
``struct.field("field_1")``. The rows keep their codes, so each distinct string is
split once, whatever the row count.

A recipe is ``(source, steps, terminal)``, hashable:

- ``source``: ``("split", by, inclusive, literal, strict)``,
  ``("split_exact", by, n, inclusive)``, ``("splitn", by, n)``,
  ``("extract_all", pattern)`` (a regex's matches) or
  ``("extract_many", patterns, ascii_case_insensitive, leftmost)`` (plain texts' matches);
- ``steps``: list-to-list functions in order, ``("slice", offset, length)``,
  ``("head", n)``, ``("tail", n)``, ``("reverse",)``, ``("sort", descending)``,
  ``("unique",)``, ``("gather_every", n, offset)``, ``("drop_nulls",)``;
- ``terminal``: the one value taken, ``("get", index, null_on_oob)``,
  ``("item", allow_empty)``, ``("len",)``,
  ``("join", separator)``, ``("contains", item)``, ``("count_matches", item)``,
  ``("n_unique",)``, ``("min",)``, ``("max",)``, ``("arg_min",)``, ``("arg_max",)``,
  ``("field", k)``.

Every function is polars' (2.1): literal splits as Rust's ``str::split`` and
``str::split_inclusive`` (an empty separator splits into characters), regex splits
with RE2 where it finds the matches Rust's ``regex`` does (`lists_of`),
indices and slices as polars' ``slice_offsets``, strings ordered by code point.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.errors import UnsupportedOperationError

__all__ = ["REFUSED", "Recipe", "list_values", "lists_of", "taken_values"]

#: ``(split, steps, terminal)``: see the module's docstring
Recipe = tuple[tuple[Any, ...], tuple[tuple[Any, ...], ...], tuple[Any, ...]]


class _Refused:
    """A value polars refuses to take: an error where a row reads it.

    ``list.get(i)`` past a list's end without ``null_on_oob``; ``list.item()`` of a
    list not of one part (of none, unless ``allow_empty``).
    """

    def __repr__(self) -> str:
        return "REFUSED"


REFUSED = _Refused()


def _characters(s: str, most: int | None, keep_remainder: bool) -> list[str]:
    # polars' `SplitNChars`: single characters, the last part the rest of the string
    # when `keep_remainder` (splitn), nothing at all for an empty string
    if most is None:
        return list(s)
    if not keep_remainder:
        return list(s[:most])
    if most <= 0 or not s:
        return []
    head = list(s[: most - 1])
    rest = s[most - 1 :]
    return [*head, rest] if rest else head


def _inclusive(s: str, by: str) -> list[str]:
    # Rust's `split_inclusive`: each part keeps the separator that ends it; no empty
    # last part (and none at all for an empty string)
    parts = s.split(by)
    return [p + by for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _literal_parts(s: str, split: tuple[Any, ...]) -> list[str]:
    kind, by = split[0], split[1]
    if kind == "split":
        if not by:
            return _characters(s, None, False)
        return _inclusive(s, by) if split[2] else s.split(by)
    if kind == "split_exact":
        n, inclusive = split[2], split[3]
        if not by:
            return _characters(s, n + 1, False)
        return (_inclusive(s, by) if inclusive else s.split(by))[: n + 1]
    n = split[2]  # splitn
    if not by:
        return _characters(s, n, True)
    return s.split(by, n - 1)


def lists_of(values: pa.Array, source: tuple[Any, ...]) -> list[list[str] | None]:
    r"""The list ``source`` makes of each of ``values`` (strings without nulls); None: null.

    Regexes (a split with ``literal=False``, ``extract_all``) run RE2 over all the
    strings at once: each match is marked with characters none of them holds, then
    the strings are cut at the marks. A pattern that can match the empty string is
    refused (Rust's ``regex`` and RE2 place empty matches differently), as a word
    boundary over non-ASCII text is (`colbridge.types.regex.re2_pattern`); an
    invalid pattern is an error, or for a split with ``strict=False`` a null list on
    every row, as in polars. ``extract_many`` finds its texts as polars' Aho-Corasick
    automaton does (`colbridge.types.string_maps.many_matches`).

    >>> lists_of(pa.array(["a1b22", "x"]), ("extract_all", r"\d+"))
    [['1', '22'], []]
    """
    import pyarrow.compute as pc

    from colbridge.types.string_maps import absent_character, many_matches

    texts: list[str] = values.to_pylist()
    kind = source[0]
    if kind == "extract_many":
        patterns, insensitive, leftmost = source[1:]
        return [[s[a:b] for a, b, _ in many_matches(s, patterns, insensitive, leftmost)]
                for s in texts]  # fmt: skip
    if kind == "split" and not source[3] and source[1]:  # a regex split
        by, inclusive = source[1], bool(source[2])
        regex = _regex(values, by, f"str.split({by!r}, literal=False)", bool(source[4]))
        if regex is None:
            return [None] * len(texts)
        cut = absent_character(values)  # after each match, the match dropped or kept
        replacement = ("\\0" + cut) if inclusive else cut
        marked = pc.replace_substring_regex(values, pattern=regex, replacement=replacement)
        out: list[list[str] | None] = []
        for text, m in zip(texts, marked.to_pylist(), strict=True):
            parts = m.split(cut)
            if inclusive and len(parts) > 1 and not parts[-1]:
                parts.pop()  # a match at the very end: no empty part after it
            out.append(parts if text or not inclusive else [""])
        return out
    if kind == "extract_all":
        regex = _regex(values, source[1], "str.extract_all", True)
        assert regex is not None
        if not texts:
            return []
        # text, cut, start, match, cut, text, ...: the pieces that begin with `start`
        cut = absent_character(values)
        start = absent_character(pa.array([*texts, cut]))
        marked = pc.replace_substring_regex(values, pattern=regex,
                                            replacement=f"{cut}{start}\\0{cut}")  # fmt: skip
        return [[p[1:] for p in m.split(cut) if p.startswith(start)]
                for m in marked.to_pylist()]  # fmt: skip
    return [_literal_parts(s, source) for s in texts]  # literal splits, or characters


def _regex(values: pa.Array, pattern: str, what: str, strict: bool) -> str | None:
    """``pattern`` as RE2 reads it over ``values``, checked; None: invalid, not ``strict``."""
    from colbridge.types.regex import matches_empty, re2_pattern_or_none

    regex = re2_pattern_or_none(pattern, values, strict)
    if regex is not None and matches_empty(regex, pattern):
        msg = (
            f"`{what}`: a pattern that can match the empty string (or a word boundary) "
            "matches differently in polars' engine and colbridge's RE2; make the pattern "
            "match at least one character (`,+` rather than `,*`)"
        )
        raise UnsupportedOperationError(msg)
    return regex


def _slice_offsets(offset: int, length: int | None, size: int) -> tuple[int, int]:
    # polars' `slice_offsets`: a negative offset counts from the end, the length from
    # there; both ends clamped to the list
    start = offset + size if offset < 0 else offset
    stop = size if length is None else start + max(length, 0)
    return min(max(start, 0), size), min(max(stop, 0), size)


def _step(parts: list[str], step: tuple[Any, ...]) -> list[str]:
    op = step[0]
    if op == "slice":
        lo, hi = _slice_offsets(step[1], step[2], len(parts))
        return parts[lo:hi]
    if op == "head":  # `slice(0, n)`; a negative n keeps every part, as polars
        return parts if step[1] < 0 else parts[: step[1]]
    if op == "tail":  # `slice(-n)`: a negative n drops the first -n parts, as polars
        return parts[-step[1] :] if step[1] else []
    if op == "reverse":
        return parts[::-1]
    if op == "sort":
        return sorted(parts, reverse=bool(step[1]))
    if op == "unique":  # first-seen order (polars' order without `maintain_order` is unset)
        return list(dict.fromkeys(parts))
    if op == "gather_every":
        return parts[step[2] :: step[1]]
    if op == "drop_nulls":  # a string's parts are never null
        return parts
    msg = f"unknown list step {step!r}"
    raise AssertionError(msg)


def _terminal(parts: list[str | None], terminal: tuple[Any, ...]) -> Any:
    op = terminal[0]
    if op in ("get", "field"):
        index = terminal[1]
        at = index + len(parts) if index < 0 else index
        if 0 <= at < len(parts):
            return parts[at]
        return None if op == "field" or terminal[2] else REFUSED
    if op == "item":  # the one part; an empty list is null with `allow_empty`
        if len(parts) == 1:
            return parts[0]
        return None if not parts and terminal[1] else REFUSED
    if op == "len":
        return len(parts)
    if op == "join":
        return str(terminal[1]).join(p for p in parts if p is not None)
    if op == "contains":
        return terminal[1] in parts
    if op == "count_matches":
        return sum(p == terminal[1] for p in parts)
    if op == "n_unique":
        return len(set(parts))
    if not parts:  # min, max, arg_min, arg_max of an empty list
        return None
    if op in ("min", "max"):
        return min(parts) if op == "min" else max(parts)  # type: ignore[type-var]
    if op == "arg_min":  # the first place of the least part
        return parts.index(min(parts))  # type: ignore[type-var]
    if op == "arg_max":  # the last place of the greatest: Rust's `max_by`, polars' for strings
        return len(parts) - 1 - parts[::-1].index(max(parts))  # type: ignore[type-var]
    msg = f"unknown list function {terminal!r}"
    raise AssertionError(msg)


def list_values(lists: list[list[str] | None], recipe: Recipe) -> list[Any]:
    """The terminal of ``recipe`` of each list (`lists_of`' lists): None where null.

    `REFUSED` where polars raises (``list.get`` past a list without ``null_on_oob``,
    ``list.item`` of a list not of one part).

    >>> lists = lists_of(pa.array(["a,b", "c"]), ("split", ",", False, True, True))
    >>> split = ("split", ",", False, True, True)
    >>> list_values(lists, (split, (), ("len",)))
    [2, 1]
    >>> list_values(lists, (split, (("reverse",),), ("get", 0, True)))
    ['b', 'c']
    >>> list_values(lists, (split, (), ("get", 1, False)))
    ['b', REFUSED]
    """
    _, steps, terminal = recipe
    out: list[Any] = []
    for parts in lists:
        if parts is None:
            out.append(None)
            continue
        for step in steps:
            parts = _step(parts, step)
        out.append(_terminal(list(parts), terminal))
    return out


def taken_values(values: pa.Array, recipe: Recipe) -> tuple[pa.Array, np.ndarray[Any, Any]]:
    """What ``recipe`` takes of each of ``values`` (strings without nulls), as Arrow.

    Returns the values (null where none) and where polars refuses one (`REFUSED`: an
    error if a row reads it). Literal and regex splits, and ``splitn`` and
    ``split_exact`` by a separator, run in Arrow's kernels (``split_pattern``),
    then ``slice``/``head``/``tail`` steps and the positional and counting values
    are taken over the flat parts with NumPy: no Python per string, so a column
    of a million distinct strings splits in Arrow's time. The rest (other sources
    and steps, ``sort``, ``unique``, ``min``, ``max``, ``n_unique``) goes through
    `lists_of` and `list_values`.

    >>> taken, refused = taken_values(pa.array(["a,b", "c"]),
    ...                               (("split", ",", False, True, True), (), ("get", 1, False)))
    >>> taken.to_pylist(), refused.tolist()
    (['b', None], [False, True])
    """
    flat = _flat_parts(values, recipe)
    if flat is None:
        out = list_values(lists_of(values, recipe[0]), recipe)
        refused = np.array([v is REFUSED for v in out], dtype=bool)
        return pa.array([None if v is REFUSED else v for v in out]), refused
    offsets, parts, valid = flat
    for step in recipe[1]:
        offsets, parts = _sliced(offsets, parts, step)
    return _taken(offsets, parts, valid, recipe[2])


#: steps and values `_flat_parts` takes over the flat parts
_FLAT_STEPS = frozenset({"slice", "head", "tail"})
_FLAT_TERMINALS = frozenset({"get", "field", "item", "len", "join", "contains", "count_matches"})


_Flat = tuple[np.ndarray[Any, Any], pa.Array, np.ndarray[Any, Any] | None]


def _flat_parts(values: pa.Array, recipe: Recipe) -> _Flat | None:
    """Each string's parts as flat Arrow strings and offsets (None: not done this way)."""
    import pyarrow.compute as pc

    source, steps, terminal = recipe
    if terminal[0] not in _FLAT_TERMINALS or any(s[0] not in _FLAT_STEPS for s in steps):
        return None
    kind, by = source[0], source[1]
    if kind == "extract_all":
        return _flat_matches(values, by)
    if not by or (kind in ("split", "split_exact") and source[-1 if kind == "split_exact" else 2]):
        return None  # characters, or separators kept (Rust's `split_inclusive`)
    if kind not in ("split", "split_exact", "splitn"):
        return None
    cut, valid = by, None
    if kind == "split" and not source[3]:  # a regex: its matches marked, then cut there
        regex = _regex(values, by, f"str.split({by!r}, literal=False)", bool(source[4]))
        if regex is None:
            return np.zeros(len(values) + 1, dtype=np.int64), pa.array([], _STR), \
                np.zeros(len(values), dtype=bool)  # fmt: skip
        from colbridge.types.string_maps import absent_character

        cut = absent_character(values) if len(values) else "\x00"
        values = pc.replace_substring_regex(values, pattern=regex, replacement=cut)
    most = source[2] - 1 if kind == "splitn" else None
    lists = pc.split_pattern(values.cast(_STR), pattern=cut, max_splits=most)
    offsets = np.asarray(lists.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    return offsets - offsets[0], lists.flatten(), valid


_STR = pa.large_string()


def _flat_matches(values: pa.Array, pattern: str) -> _Flat:
    """Every match of the regex ``pattern`` in each string, as flat parts (`extract_all`)."""
    import pyarrow.compute as pc

    from colbridge.types.string_maps import absent_character

    regex = _regex(values, pattern, "str.extract_all", True)
    assert regex is not None  # strict: an invalid pattern raised
    n = len(values)
    if not n:
        return np.zeros(1, dtype=np.int64), pa.array([], _STR), None
    # text, cut, start, match, cut, text, ...: the pieces that begin with `start`
    cut = absent_character(values)
    start = absent_character(pa.concat_arrays([values.cast(_STR), pa.array([cut], _STR)]))
    marked = pc.replace_substring_regex(values.cast(_STR), pattern=regex,
                                        replacement=f"{cut}{start}\\0{cut}")  # fmt: skip
    pieces = pc.split_pattern(marked, pattern=cut)
    bounds = np.asarray(pieces.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    sizes: np.ndarray[Any, Any] = bounds[1:] - bounds[:-1]
    flat = pieces.flatten()
    keep = np.asarray(pc.starts_with(flat, pattern=start).to_numpy(zero_copy_only=False),
                      dtype=bool)  # fmt: skip
    owner = np.repeat(np.arange(n), sizes)[keep]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=offsets[1:])
    matches = pc.replace_substring(flat.filter(pa.array(keep)), pattern=start, replacement="",
                                   max_replacements=1)  # fmt: skip
    return offsets, matches, None


def _sliced(offsets: np.ndarray[Any, Any], parts: pa.Array,
            step: tuple[Any, ...]) -> tuple[np.ndarray[Any, Any], pa.Array]:  # fmt: skip
    """A ``slice``/``head``/``tail`` step over flat parts: new offsets, the kept parts."""
    sizes = np.diff(offsets)
    if step[0] == "slice":
        offset, length = step[1], step[2]
    elif step[0] == "head":  # a negative n keeps every part, as polars
        offset, length = 0, (None if step[1] < 0 else step[1])
    else:  # tail: `slice(-n)`; a negative n drops the first -n parts
        offset, length = (-step[1], None) if step[1] else (0, 0)
    start = sizes + offset if offset < 0 else np.full_like(sizes, offset)
    stop = sizes if length is None else start + max(length, 0)
    lo, hi = np.clip(start, 0, sizes), np.clip(stop, 0, sizes)
    lengths = hi - lo
    new = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new[1:])
    # the kept parts' places in the old flat array, list by list
    within = np.arange(new[-1], dtype=np.int64) - np.repeat(new[:-1], lengths)
    return new, parts.take(pa.array(np.repeat(offsets[:-1] + lo, lengths) + within))


def _taken(offsets: np.ndarray[Any, Any], parts: pa.Array, valid: np.ndarray[Any, Any] | None,
           terminal: tuple[Any, ...]) -> tuple[pa.Array, np.ndarray[Any, Any]]:  # fmt: skip
    """The terminal of each list of flat parts, and where polars refuses it."""
    import pyarrow.compute as pc

    sizes = np.diff(offsets)
    refused = np.zeros(len(sizes), dtype=bool)
    mask = None if valid is None else ~valid  # a null list: a null value
    op = terminal[0]
    if op in ("get", "field", "item"):
        index = 0 if op == "item" else terminal[1]
        at = sizes + index if index < 0 else np.full_like(sizes, index)
        found = (at >= 0) & (at < sizes)
        if op == "item":
            found = sizes == 1
            refused = ~found & ((sizes > 1) | (not terminal[1]))
        elif op == "get" and not terminal[2]:
            refused = ~found  # past the end without `null_on_oob`
        if valid is not None:
            refused &= valid
            found &= valid
        where = np.where(found, offsets[:-1] + at, 0)
        taken = parts.take(pa.array(where)) if len(parts) else pa.nulls(len(sizes), _STR)
        return pc.if_else(pa.array(found), taken, pa.scalar(None, _STR)), refused
    if op == "len":
        return pa.array(sizes.astype(np.uint32), mask=mask), refused
    if op == "join":
        lists = pa.LargeListArray.from_arrays(pa.array(offsets), parts.cast(_STR))
        joined = pc.binary_join(lists, pa.scalar(str(terminal[1]), _STR))
        if mask is not None:
            joined = pc.if_else(pa.array(mask), pa.scalar(None, _STR), joined)
        return joined, refused
    # contains, count_matches: the parts equal to the item, counted per list
    equal = np.asarray(pc.equal(parts, pa.scalar(terminal[1], _STR)).to_numpy(
        zero_copy_only=False), dtype=bool)  # fmt: skip
    owner = np.repeat(np.arange(len(sizes)), sizes)
    counts = np.bincount(owner[equal], minlength=len(sizes))
    if op == "contains":
        return pa.array(counts > 0, mask=mask), refused
    return pa.array(counts.astype(np.uint32), mask=mask), refused
