"""Runtime: the dictionaries of string values and the lookup tables kernels gather from.

Stage: runtime. Strings never enter a kernel: a string column reaches it as
dictionary codes, and whatever an expression asks of the strings (a comparison,
``is_in``, a length, a parse) is computed here once per distinct value with
``pyarrow.compute``, into a small table the kernel reads by code. Time zone
transition tables are built here too. A string result comes back as codes and
is turned into a string or categorical column against its dictionary
(`finish_output`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.codegen.kernel import table_key
from colbridge.errors import InvalidOperationError, SchemaError, UnsupportedOperationError
from colbridge.expr.nodes import Gather, GroupAgg, Scan, TableRef, walk
from colbridge.plan.logical_typing import ENUM_CAST_FAILED
from colbridge.plan.planner import Segment
from colbridge.plan.typecheck import sig_figs_table
from colbridge.types import DType
from colbridge.types.business_days import busday_table
from colbridge.types.chrono import (
    TIME_PATTERNS,
    infer_parse,
    infer_time_format,
    parse_stamps,
    parse_times,
)
from colbridge.types.formatting import concat_radix
from colbridge.types.logical import Logical, parse_logical
from colbridge.types.promotion import int_range
from colbridge.types.regex import matches_empty, re2_pattern, re2_pattern_or_none
from colbridge.types.string_lists import Recipe, taken_values
from colbridge.types.string_maps import (
    ASCII_LOWER,
    absent_character,
    apply_string_map,
    extract_regex,
)
from colbridge.types.timezones import daylight, zone_table

__all__ = ["TableBuilder", "enum_failures_named", "finish_output", "segment_tables"]

_FLOAT = re.compile(r"^[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|infinity|nan)$",
                    re.IGNORECASE)  # fmt: skip
_STR = pa.large_string()


class TableBuilder:
    """Builds dictionaries and tables for one compute, each once.

    ``arrays`` are the kernel inputs: a string column is a dictionary array there.
    """

    def __init__(self, arrays: Mapping[str, pa.Array]) -> None:
        self.arrays = arrays
        self._dicts: dict[tuple[Any, ...], pa.Array] = {}
        self._extracts: dict[tuple[Any, ...], tuple[pa.Array, pa.Array]] = {}
        self._lists: dict[tuple[Any, ...], tuple[pa.Array, np.ndarray[Any, Any]]] = {}

    # -- dictionaries ---------------------------------------------------------------------
    def dictionary(self, spec: tuple[Any, ...]) -> pa.Array:
        """The values of a dictionary spec, as large strings without nulls."""
        hit = self._dicts.get(spec)
        if hit is None:
            hit = self._dicts[spec] = self._dictionary(spec)
        return hit

    def _extracted(self, source: tuple[Any, ...], pattern: str, group: int
                   ) -> tuple[pa.Array, pa.Array]:  # fmt: skip
        """`str.extract` of a dictionary's strings, once: its texts and which have one."""
        key = (source, pattern, group)
        hit = self._extracts.get(key)
        if hit is None:
            hit = self._extracts[key] = extract_regex(self.dictionary(source), pattern, group)
        return hit

    def _list_values(self, source: tuple[Any, ...], recipe: Recipe
                     ) -> tuple[pa.Array, np.ndarray[Any, Any]]:  # fmt: skip
        """What ``recipe`` takes of each string's parts, and where polars refuses it.

        Once per compute: a text's dictionary and the table of which strings give one
        read the same (`colbridge.types.string_lists.taken_values`).
        """
        key = (source, recipe)
        hit = self._lists.get(key)
        if hit is None:
            hit = self._lists[key] = taken_values(self.dictionary(source), recipe)
        return hit

    def _dictionary(self, spec: tuple[Any, ...]) -> pa.Array:
        import pyarrow.compute as pc  # on first use: its import is slow
        kind = spec[0]
        if kind in ("col", "scan"):  # a column's, or the strings a scan moved: its result's
            return self.arrays[spec[1]].dictionary.cast(_STR)
        if kind == "lit":
            return pa.array(list(spec[1]), type=_STR)
        if kind == "union":
            parts = [self.dictionary(s) for s in spec[1]]
            return pc.unique(pa.concat_arrays(parts)) if parts else pa.array([], _STR)
        if kind == "enum":  # enums that meet in `when`/`coalesce`: one set of categories
            first, *others = [self.dictionary(s) for s in spec[1]]
            if any(not other.equals(first) for other in others):
                msg = (
                    f"enums with different categories meet in one column: {first.to_pylist()} "
                    f"and {next(o for o in others if not o.equals(first)).to_pylist()}; cast "
                    "them to one `pl.Enum`, or to `pl.String`"
                )
                raise SchemaError(msg)
            return first
        if kind == "map" and spec[1] == "extract":  # texts; which strings have one: a table
            return self._extracted(spec[2], *spec[3:])[0]
        if kind == "map" and spec[1] == "list_text":  # parts taken; "" where none (a table)
            texts = self._list_values(spec[2], spec[3])[0]
            return pc.fill_null(texts.cast(_STR), pa.scalar("", _STR))
        if kind == "map":  # a string function of each value (`colbridge.types.string_maps`)
            return apply_string_map(spec[1], spec[3:], self.dictionary(spec[2]))
        msg = f"unknown dictionary spec {spec!r}"
        raise AssertionError(msg)

    def first_seen(self, spec: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray] | None:
        """Where the rows' strings are in the dictionary of ``spec``, and in what order.

        The positions of the strings the rows hold, in the order of the rows they first
        appear in, and each non-null row's string as an index into them (None: not
        known, e.g. a literal's).

        A column's codes (and those of a string function of it: `"map"`, which keeps them)
        say it; a plain column's dictionary is in that order already, a categorical's not.
        """
        while spec[0] == "map":
            spec = spec[2]
        column = self.arrays[spec[1]] if spec[0] in ("col", "scan") else None
        if not isinstance(column, pa.DictionaryArray):
            return None
        indices = column.indices
        codes = indices.drop_null().to_numpy(zero_copy_only=False).astype(np.int64)
        distinct, first = np.unique(codes, return_index=True)
        order = distinct[np.argsort(first, kind="stable")]
        rank = np.zeros(len(column.dictionary), dtype=np.int64)
        rank[order] = np.arange(len(order))
        return order, rank[codes]

    # -- tables ---------------------------------------------------------------------------
    def table(self, ref: TableRef) -> pa.Array:
        """The values of one lookup table (nulls where an entry has no value)."""
        import pyarrow.compute as pc  # on first use: its import is slow
        if ref.source[0] == "sig_figs":  # `round_sig_figs`'s factors of a digit count
            return pa.array(sig_figs_table(ref.source[1], ref.recipe[0]), pa.float64())
        if ref.source[0] == "concat":  # `concat_str`'s radices
            return pa.array([concat_radix(ref.source[1], ref.recipe[1],
                                          [len(self.dictionary(s)) for s in ref.source[1]])],
                            pa.int64())  # fmt: skip
        if ref.source[0] == "busday":  # business days' tables (`types.business_days`)
            return pa.array(busday_table(ref.source[1], ref.source[2], ref.recipe[0]),
                            pa.int64())  # fmt: skip
        if ref.source[0] == "zone":
            if ref.recipe[0] == "daylight":  # 1 where the offset is a daylight saving one
                return pa.array([int(d) for d in daylight(ref.source[1])], pa.int64())
            # instants, offsets or their daylight saving parts ("saving"), in the unit
            table = zone_table(ref.source[1], ref.recipe[1])
            part = ("instants", "offsets", "saving").index(ref.recipe[0])
            return pa.array(table[part], pa.int64())
        d = self.dictionary(ref.source)
        op = ref.recipe[0]
        if op == "cmp":
            fn = {"eq": pc.equal, "ne": pc.not_equal, "lt": pc.less, "le": pc.less_equal,
                  "gt": pc.greater, "ge": pc.greater_equal}[ref.recipe[1]]  # fmt: skip
            return fn(d, pa.scalar(ref.recipe[2], _STR))
        if op == "enum_cmp":
            position = pc.index(d, pa.scalar(ref.recipe[2], _STR)).as_py()
            if position < 0:
                msg = f"{ref.recipe[2]!r} is not a category of the enum it is compared with"
                raise InvalidOperationError(msg)
            positions = np.arange(len(d))
            fn = {"lt": np.less, "le": np.less_equal, "gt": np.greater,
                  "ge": np.greater_equal}[ref.recipe[1]]  # fmt: skip
            return pa.array(fn(positions, position))
        if op == "is_in":
            return pc.is_in(d, value_set=pa.array(list(ref.recipe[1]), _STR))
        if op == "lookup":  # `replace_strict`: each string's new value, null where none
            new_of = dict(zip(ref.recipe[1], ref.recipe[2], strict=True))
            return pa.array([new_of.get(s) for s in d.to_pylist()], ref.dtype.arrow)
        if op == "len_chars":
            return pc.utf8_length(d).cast(pa.uint32())
        if op == "len_bytes":
            return pc.binary_length(d).cast(pa.uint32())
        if op == "starts_with":
            return pc.starts_with(d, pattern=ref.recipe[1])
        if op == "ends_with":
            return pc.ends_with(d, pattern=ref.recipe[1])
        if op == "contains":
            pattern, literal, strict = ref.recipe[1:]
            if literal:
                return pc.match_substring(d, pattern=pattern)
            regex = re2_pattern_or_none(pattern, d, strict)
            if regex is None:  # as polars: an invalid pattern, null
                return pa.nulls(len(d), pa.bool_())
            return pc.match_substring_regex(d, pattern=regex)
        if op == "extract_found":  # which strings have the group's text
            return self._extracted(ref.source, ref.recipe[1], ref.recipe[2])[1]
        if op == "contains_any":  # any pattern in the text (ASCII letters folded if asked)
            patterns, insensitive = ref.recipe[1], ref.recipe[2]
            texts = pc.ascii_lower(d) if insensitive else d
            hit = pa.array(np.zeros(len(d), dtype=bool))
            for p in patterns:
                p = p.translate(ASCII_LOWER) if insensitive else p
                hit = pc.or_(hit, pc.match_substring(texts, pattern=p))
            return hit
        if op == "list_value":  # a number or flag taken of each string's parts
            return self._list_values(ref.source, ref.recipe[1])[0].cast(ref.dtype.arrow)
        if op == "list_found":  # which strings' parts give a text (null: an error if read)
            taken, refused = self._list_values(ref.source, ref.recipe[1])
            return pc.if_else(pa.array(refused), pa.scalar(None, pa.bool_()),
                              pc.is_valid(taken))  # fmt: skip
        if op == "count_matches":
            return _count_matches(d, ref.recipe[1], ref.recipe[2])
        if op == "find":
            return _find(d, *ref.recipe[1:])
        if op == "enum_code":  # a literal among an enum's categories
            _, enum_spec, strict = ref.recipe
            codes = pc.index_in(d, value_set=self.dictionary(enum_spec)).cast(pa.int32())
            if strict and codes.null_count:
                msg = (
                    f"{d[0].as_py()!r} is not a category of the enum "
                    f"{self.dictionary(enum_spec).to_pylist()}"
                )
                raise InvalidOperationError(msg)
            return codes
        if op == "rank":
            union = self.dictionary(ref.recipe[1])
            ordered = pc.take(union, pc.sort_indices(union))
            return pc.index_in(d, value_set=ordered).cast(pa.int64())
        if op == "code_of_rank":  # a code of the string at each sorted position (`rank`)
            return pc.sort_indices(d).cast(ref.dtype.arrow)
        if op == "remap":
            return pc.index_in(d, value_set=self.dictionary(ref.recipe[1])).cast(pa.int32())
        if op == "cast":
            return _parse(d, ref.recipe[1], ref.dtype.arrow)
        if op == "to_integer":  # `str.to_integer(base=..., dtype=...)`
            return pa.array(_parse_integers(d.to_pylist(), ref.recipe[1], ref.dtype),
                            ref.dtype.arrow)  # fmt: skip
        if op == "strptime":
            fmt, target = ref.recipe[1], ref.recipe[2]
            strict = ref.recipe[3] if len(ref.recipe) > 3 else True
            if fmt is None:  # polars infers one format: from the rows' first values
                return _strptime_inferred(d, self.first_seen(ref.source), target, strict,
                                          ref.recipe[4] if len(ref.recipe) > 4 else "")  # fmt: skip
            return _strptime(d, fmt, target)
        msg = f"unknown table recipe {ref.recipe!r}"
        raise AssertionError(msg)


def _count_matches(values: pa.Array, pattern: str, literal: bool) -> pa.Array:
    """How many times ``pattern`` occurs in each string (UInt32), matches not overlapping.

    The empty pattern matches before each character and at the end, as in polars
    (characters + 1). Another pattern that can match the empty string is refused:
    Rust's ``regex`` (polars) counts an empty match per character and none right after
    a match, RE2 (pyarrow) one per byte and one there too.
    """
    import pyarrow.compute as pc

    if not pattern:
        return pc.add(pc.utf8_length(values), 1).cast(pa.uint32())
    if literal:
        return pc.count_substring(values, pattern=pattern).cast(pa.uint32())
    regex = re2_pattern(pattern, values)
    if matches_empty(regex, pattern):
        raise UnsupportedOperationError(_EMPTY_MATCHES.format(pattern=pattern))
    if "^" not in pattern and "\\A" not in pattern:
        return pc.count_substring_regex(values, pattern=regex).cast(pa.uint32())
    # Arrow's count starts each search anew, where `^` matches again; RE2's global
    # replace does not: a mark after each match, counted
    mark = absent_character(values)
    marked = pc.replace_substring_regex(values, pattern=regex, replacement="\\0" + mark)
    return pc.count_substring(marked, pattern=mark).cast(pa.uint32())


def _find(values: pa.Array, pattern: str, literal: bool, strict: bool) -> pa.Array:
    """The character offset of ``pattern``'s first match in each string (UInt32), null where none.

    As polars' ``str.find`` (2.2 on: characters, not bytes: ``"éa"`` finds ``"a"`` at
    1); an empty pattern is found at 0; an invalid regex raises, or with
    ``strict=False`` gives null on every row.
    """
    import pyarrow.compute as pc

    if literal:
        found = pc.find_substring(values, pattern=pattern)
    else:
        regex = re2_pattern_or_none(pattern, values, strict)
        if regex is None:
            return pa.nulls(len(values), pa.uint32())
        found = pc.find_substring_regex(values, pattern=regex)
    at = found.cast(pa.int64()).fill_null(-1).to_numpy()
    chars = _characters_before(values, at)
    return pa.array(chars, pa.uint32(), mask=at < 0)


def _characters_before(values: pa.Array, at: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """How many characters of each string lie before its byte offset ``at`` (-1: none).

    The bytes before it less the UTF-8 continuation bytes (``10xxxxxx``) among them,
    counted once over the strings' data buffer.
    """
    texts = values.cast(pa.large_string())
    _, offsets_buffer, data_buffer = texts.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int64)[texts.offset:texts.offset + len(texts) + 1]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None \
        else np.zeros(0, np.uint8)  # fmt: skip
    continuations = np.zeros(len(data) + 1, np.int64)
    np.cumsum((data & 0xC0) == 0x80, out=continuations[1:])
    starts = offsets[:-1]
    end = starts + np.maximum(at, 0)
    return np.where(at < 0, 0, at - (continuations[end] - continuations[starts]))


_EMPTY_MATCHES = (
    "`str.count_matches({pattern!r})`: a pattern that can match the empty string (or a "
    "word boundary) is counted differently by polars' engine and colbridge's RE2; make "
    "the pattern match at least one character (`a+` rather than `a*`)"
)


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def _parse_integers(texts: list[str | None], base: int, dtype: DType) -> list[int | None]:
    """Each text as an integer of ``dtype`` in ``base``, as Rust's ``from_str_radix``; else None.

    A ``+`` or (signed types only: not even ``-0`` is unsigned) ``-``, then one or more
    digits below the base, letters in either case; no spaces, ``_`` or ``0x``.
    """
    lo, hi = int_range(dtype)
    allowed = frozenset(_DIGITS[:base] + _DIGITS[:base].upper())
    out: list[int | None] = []
    for s in texts:
        if s is None:
            out.append(None)
            continue
        body = s[1:] if s[:1] in ("+", "-") else s
        if not body or not allowed.issuperset(body) or (lo == 0 and s.startswith("-")):
            out.append(None)
            continue
        v = int(s, base)
        out.append(v if lo <= v <= hi else None)
    return out


def _parse(values: pa.Array, target: str, arrow_type: pa.DataType) -> pa.Array:
    """Strings parsed as numbers as polars parses them (no spaces; ``+`` allowed), else null."""
    logical = parse_logical(target)
    if logical is not None:  # polars 2 casts no string to a date or datetime (see `cast`)
        msg = f"casting from string to {logical.kind} is not supported (as in polars 2)"
        raise InvalidOperationError(msg)
    texts = values.to_pylist()
    out: list[Any] = []
    if pa.types.is_integer(arrow_type):
        from colbridge.types import dtype_from_arrow

        dtype = dtype_from_arrow(arrow_type)
        assert dtype is not None
        out = _parse_integers(texts, 10, dtype)
    elif pa.types.is_floating(arrow_type):
        for s in texts:
            out.append(float(s) if s is not None and _FLOAT.match(s) else None)
    else:
        out = [None] * len(texts)
    return pa.array(out, type=arrow_type)


def _strptime(values: pa.Array, fmt: str, target: str) -> pa.Array:
    """Strings parsed as dates or datetimes (the logical type ``target``), nulls where they fail."""
    logical = parse_logical(target)
    assert logical is not None
    if logical.kind == "time":
        return pa.array(parse_times(values.to_pylist(), fmt), pa.int64())
    unit = logical.unit if logical.kind == "datetime" else "us"
    stamps = parse_stamps(values.to_pylist(), fmt, unit,  # per distinct value: see there
                          dates=logical.kind == "date")  # fmt: skip
    if logical.kind == "date":
        per_day = 86_400 * 1_000_000
        return pa.array([None if v is None else v // per_day for v in stamps], pa.int32())
    return pa.array(stamps, pa.int64())


def _strptime_inferred(values: pa.Array, seen: tuple[np.ndarray, np.ndarray] | None,
                       target: str, strict: bool, where: str) -> pa.Array:  # fmt: skip
    """Strings parsed without a format, as polars parses them (`infer_parse`).

    One group of formats, inferred from the first value (in the rows) one of them reads.

    ``seen``: the positions of the strings the rows hold, in the order they first
    appear there, and the rows' strings as indices into them (`TableBuilder.first_seen`;
    None: the dictionary's order, rows unknown). Where polars finds no format, or an
    offset without a time zone, it raises, or with ``strict=False`` gives nulls.
    """
    logical = parse_logical(target)
    assert logical is not None
    texts = values.to_pylist()
    positions = list(range(len(texts))) if seen is None else seen[0].tolist()
    in_rows = [texts[i] for i in positions]
    if logical.kind == "time":
        return _times_inferred(texts, in_rows, seen is not None, strict, where)
    dates = logical.kind == "date"
    unit = "us" if dates else logical.unit
    found = infer_parse(in_rows, unit, dates=dates, zoned=logical.tz is not None,
                        rows=None if seen is None else seen[1].tolist())  # fmt: skip
    stamps: list[int | None] = [None] * len(texts)
    if found.problem == "order":
        msg = (
            f"`{where}`: without a format polars infers one from the first value that fits one "
            f"of its patterns, and reads {found.detail!r} or not depending on the rows before "
            "it (which colbridge does not follow here: strings of several columns or "
            "branches, or a value polars reads only with the previous row's pattern); give "
            "the format, e.g. `format=\"%Y-%m-%d\"`"
        )
        raise UnsupportedOperationError(msg)
    if found.problem is not None and strict:
        if found.problem == "offset":
            msg = (
                f"`{where}`: called with no format and no time zone, but the strings carry "
                "a UTC offset or `Z` (as polars, which raises then); give "
                "`time_zone=\"UTC\"`, or a format"
            )
        else:
            msg = (
                f"`{where}`: could not find an appropriate format to parse "
                f"{logical.kind}s from {in_rows[0]!r}... (as polars: it tries its patterns, "
                "e.g. %Y-%m-%d, %d/%m/%Y, %Y-%m-%d %H:%M:%S); please give a format"
            )
        raise InvalidOperationError(msg)
    for i, stamp in zip(positions, found.stamps, strict=True):
        stamps[i] = stamp
    if dates:
        per_day = 86_400 * 1_000_000
        return pa.array([None if v is None else v // per_day for v in stamps], pa.int32())
    return pa.array(stamps, pa.int64())


def _times_inferred(texts: list[str | None], in_rows: list[str | None], rows_known: bool,
                    strict: bool, where: str) -> pa.Array:  # fmt: skip
    """Strings parsed as times with polars' pattern of the first value one of them reads.

    ``in_rows``: the strings in the order the rows first hold them (``rows_known``; else
    the dictionary's order, which decides nothing where the strings' patterns differ).
    No pattern reads any of them: polars raises, or with ``strict=False`` gives nulls.
    """
    fmt = infer_time_format(in_rows)
    if not rows_known and len({infer_time_format([t]) for t in in_rows} - {None}) > 1:
        msg = (f"`{where}`: without a format polars takes the pattern of the first value "
               "its patterns read, which the rows decide here (strings of several columns "
               "or branches); give the format, e.g. `format=\"%H:%M:%S\"`")  # fmt: skip
        raise UnsupportedOperationError(msg)
    if fmt is None:
        if strict and any(t is not None for t in in_rows):
            msg = (f"`{where}`: could not find an appropriate format to parse times from "
                   f"{next(t for t in in_rows if t is not None)!r}... (as polars: it tries "
                   f"{' and '.join(TIME_PATTERNS)}); please give a format")  # fmt: skip
            raise InvalidOperationError(msg)
        return pa.nulls(len(texts), pa.int64())
    return pa.array(parse_times(texts, fmt), pa.int64())


def segment_tables(segment: Segment, builder: TableBuilder) -> dict[str, pa.Array]:
    """Every lookup table a segment's kernels read (`Segment.tables`), by `table_key`.

    ``builder`` is the segment run's: its outputs' dictionaries (`finish_output`) reuse
    what the tables took of the same strings (a split's parts, an extract's texts).
    """
    _refuse_inference_on_other_rows(segment)
    if not segment.tables:
        return {}
    return {table_key(ref): builder.table(ref) for ref in segment.tables}


def _refuse_inference_on_other_rows(segment: Segment) -> None:
    """Refuse parsing without a format where polars infers it from other rows than these.

    The table is made from the strings of the whole column, in its rows' order; polars
    infers the format from the rows it evaluates the expression on: those a filter
    before it keeps (``segment.gate``), or each group's (within a reduction per group).
    """
    tables = list(segment.tables) + (list(segment.pre.tables) if segment.pre else [])
    inferred = [r for r in tables if r.recipe[0] == "strptime" and r.recipe[1] is None]
    if not inferred:
        return
    where = ""
    if segment.gate is not None and any(r in segment.tables for r in inferred):
        # a filter in the step: polars infers from the rows it keeps where it comes first
        # (it pushes no filter below such a parse: after it, from all the rows)
        where = "(with a filter in the step: on the rows the filter keeps, if it comes first)"
    else:
        roots = [e for _, e in segment.outputs] + [a for level in segment.agg_levels
                                                   for a in level] + list(segment.host_aggs) \
            + list(segment.scans.values())  # fmt: skip
        grouped = {n.table for r in roots for g in walk(r) if isinstance(g, GroupAgg)
                   or (isinstance(g, Scan) and g.keys.exprs)
                   for n in walk(g) if isinstance(n, Gather)}  # fmt: skip
        if any(r in grouped for r in inferred):
            where = "within each group (of a reduction per group or a window)"
    if where:
        what = next(r.recipe[4] for r in inferred if len(r.recipe) > 4)
        msg = (
            f"`{what}`: without a format polars infers one from the first value {where}, "
            "where colbridge infers it from the whole column's; give the format, e.g. "
            "`format=\"%Y-%m-%d\"`, or parse in a step before"
        )
        raise UnsupportedOperationError(msg)


@contextmanager
def enum_failures_named(segment: Segment, arrays: Mapping[str, pa.Array]) -> Iterator[None]:
    """Errors of ``segment``'s kernels, naming the strings compared with an enum it lacks.

    A kernel counts the rows that fail; the strings themselves are in the tables that
    cast them to the enums' categories (``("remap", ...)``, nullable: null where a
    string is not a category). Any other error passes as it is.
    """
    try:
        yield
    except InvalidOperationError as exc:
        if ENUM_CAST_FAILED not in str(exc):
            raise
        named = _not_categories(segment, arrays)
        if not named:
            raise
        msg = f"{exc}; strings that are not categories: {named}"
        raise InvalidOperationError(msg) from None


def _not_categories(segment: Segment, arrays: Mapping[str, pa.Array]) -> str:
    import pyarrow.compute as pc  # on first use: its import is slow
    builder = TableBuilder(arrays)
    named = []
    for ref in segment.tables:
        if ref.recipe[0] != "remap" or not ref.nullable:
            continue
        table = arrays.get(table_key(ref))
        found = table if table is not None else builder.table(ref)
        missing = pc.filter(builder.dictionary(ref.source), pc.is_null(found)).to_pylist()
        if missing:
            categories = builder.dictionary(ref.recipe[1]).to_pylist()
            named.append(f"{_few(missing)} (the categories: {_few(categories)})")
    return "; ".join(named)


def _few(values: list[Any], most: int = 10) -> str:
    """Up to ``most`` values, as Python writes them, and how many more there are."""
    shown = ", ".join(repr(v) for v in values[:most])
    more = f", ... ({len(values) - most} more)" if len(values) > most else ""
    return f"[{shown}{more}]"


def finish_output(array: pa.Array, logical: Logical, spec: tuple[Any, ...] | None,
                  builder: TableBuilder) -> pa.Array:  # fmt: skip
    """A kernel result as a column of its logical type.

    Temporal values are the same buffers viewed with their Arrow type (no copy);
    string codes are looked up in their dictionary (a string column) or kept with it
    (a categorical).
    """
    if logical.is_temporal:
        return array.view(logical.arrow)
    if logical.kind == "null":
        return pa.nulls(len(array))
    assert spec is not None
    dictionary = builder.dictionary(spec)
    if logical.kind == "string":
        import pyarrow.compute as pc  # on first use: its import is slow

        return pc.take(dictionary, array)
    codes = array.cast(pa.uint32()) if len(dictionary) else pa.nulls(len(array), pa.uint32())
    # an enum's dictionary is its categories, in order
    return pa.DictionaryArray.from_arrays(codes, dictionary, ordered=logical.kind == "enum")
