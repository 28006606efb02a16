"""Group ids: keys of any type factorized into dense int32 ids, and what follows from them alone.

Stage: backends (the factorize pass of a plan, run on the host for every target).
`factorize` turns one or several key columns into ids ``0 .. count-1`` numbered in
order of first appearance (polars' ``maintain_order=True``), with a null key a
group of its own, NaN one group and ``-0.0`` the group of ``0.0``, as polars
groups them. Categories are grouped by label, not by code.

How (measured on this project's machines; see ``benchmarks/grouped.py``):

* each key becomes integer *codes* in ``[0, range)``: small-range integers,
  booleans, dates and dictionary codes directly (value minus minimum, nulls
  last); strings of more than `NUMPY_MAX_ROWS` rows by `string_codes` (a hash
  table per partition of the rows, on every core: codes in first-appearance
  order, which also are the ids when there is one key and no null); smaller
  string columns, wide-range integers and floats through pyarrow's
  ``dictionary_encode`` (a hash table on one thread: codes already in
  first-appearance order);
* several keys combine their codes arithmetically (``c1 * range2 + c2``);
* the combined codes are renumbered in first-appearance order by one pass that
  records each code's first row (numba, compiled once and cached on disk; NumPy
  for small inputs), and one parallel pass that maps codes to ids.

`host_reduction` computes the grouped reductions that need no kernel: ``len``,
``first``, ``last`` (rows of the groups, then a take: any Arrow type) and
``n_unique`` (a factorization of (group, value) pairs), ``arg_min``/``arg_max``
(a sort of each group's values by polars' order); ``count``/``null_count``
of columns kernels cannot read (strings) from their validity; the bitwise reductions
(NumPy's ``ufunc.at`` per group).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from colbridge.errors import UnsupportedTypeError
from colbridge.expr.nodes import BITWISE_AGGS
from colbridge.memory import empty_array, one_array, read_only

if TYPE_CHECKING:
    from colbridge.plan.planner import LaggedRead

__all__ = [
    "NUMPY_MAX_ROWS",
    "GroupIds",
    "Grouping",
    "any_all",
    "bitwise",
    "dictionary_encoded",
    "factorize",
    "gather_views",
    "host_reduction",
    "in_group_order",
    "integer_values",
    "one_group",
    "raw_values",
    "string_buffers",
    "string_codes",
    "take",
    "thread_count",
    "to_frame_order",
]

#: Up to this many rows ids are renumbered with NumPy (nothing to compile).
NUMPY_MAX_ROWS = 100_000
#: Up to this many distinct strings in each chunk of rows, strings are numbered in a
#: table per chunk (`string_codes`); past it, in hash partitions.
_FEW = 1024
#: A code range up to ``max(this, 4 rows)`` is renumbered through a table, else hashed.
_TABLE_MIN = 1 << 20


@dataclass
class GroupIds:
    """The groups of one key set over one frame: row ``i`` is in group ``ids[i]``.

    ``ids`` is None for the one group of the empty key set (every row). Groups are
    numbered in order of first appearance; ``first_rows[g]`` is group ``g``'s first row.
    """

    ids: np.ndarray[Any, Any] | None
    count: int
    first_rows: np.ndarray[Any, Any]
    num_rows: int
    #: how the keys were factorized (for `explain()`)
    method: str = ""
    _cache: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict, repr=False)

    def sizes(self) -> np.ndarray[Any, Any]:
        """Rows per group (int64)."""
        hit = self._cache.get("sizes")
        if hit is None:
            if self.ids is None:
                hit = np.array([self.num_rows], dtype=np.int64)
            else:
                hit = np.bincount(self.ids, minlength=self.count).astype(np.int64)
            self._cache["sizes"] = hit
        return hit

    def rows_by_group(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """The rows sorted by group, stably (frame order inside a group), and group starts.

        One counting sort per grouping, shared by the scans over it (windows, fills,
        interpolations, sorts); readers must not write into the arrays.
        """
        assert self.ids is not None, "one group of every row: the rows are in order"
        hit, starts = self._cache.get("rows_by_group"), self._cache.get("group_starts")
        if hit is None or starts is None:
            from colbridge.backends import _scan_kernels  # on first use: numba

            hit, starts = _scan_kernels.counting_order(self.ids, self.count,
                                                       empty_array(len(self.ids), np.int64))
            self._cache["rows_by_group"], self._cache["group_starts"] = hit, starts
        return hit, starts

    def last_rows(self) -> np.ndarray[Any, Any]:
        """Each group's last row (int64; -1 for the empty frame's one group)."""
        hit = self._cache.get("last")
        if hit is None:
            if self.ids is None:
                hit = np.array([self.num_rows - 1], dtype=np.int64)
            else:
                hit = _edge_rows(self.ids, None, self.count, last=True)
            self._cache["last"] = hit
        return hit

    def reordered(self, rows: np.ndarray[Any, Any]) -> GroupIds:
        """The same groups over the rows taken in the order ``rows`` (a permutation).

        Group ``g`` keeps its number; its first row is the first of its rows in that order.
        """
        if self.ids is None:
            return self
        ids = np.ascontiguousarray(self.ids[rows])
        return GroupIds(ids, self.count, _edge_rows(ids, None, self.count, last=False),
                        self.num_rows, self.method)  # fmt: skip

    def ids_array(self) -> pa.Array:
        """The ids as an Arrow int32 array over the same memory (kernels read it as a column)."""
        assert self.ids is not None
        return pa.Array.from_buffers(pa.int32(), len(self.ids), [None, pa.py_buffer(self.ids)])


def one_group(num_rows: int) -> GroupIds:
    """The empty key set: one group holding every row (even when there are none)."""
    first = np.array([0 if num_rows else -1], dtype=np.int64)
    return GroupIds(None, 1, first, num_rows, "one group")


@dataclass
class Grouping:
    """What a segment's grouped passes read: group ids per key set, and host-made results."""

    #: by `colbridge.expr.nodes.KeySet.ids_column`
    ids: dict[str, GroupIds]
    one: GroupIds
    #: results of `host_reduction`, by node (Arrow arrays, one value per group)
    host: dict[Any, pa.Array] = field(default_factory=dict)
    #: whole columns computed for the grouping (key expressions...), by name
    computed: dict[str, pa.Array] = field(default_factory=dict)
    #: results of the segment's ordered operations, by the input names passes read them
    scanned: dict[str, pa.Array] = field(default_factory=dict)
    #: those of them, and of the segment's ``pre``, that moved strings: dictionary
    #: arrays, whose dictionaries the segment's tables and results look up by name
    moved: dict[str, pa.Array] = field(default_factory=dict)
    #: shifts the kernels read in place (`colbridge.plan.planner.Segment.lagged`): by the
    #: input name the passes read them as, the frame column, the rows back and the fill
    lagged: dict[str, LaggedRead] = field(default_factory=dict)

    def of(self, ids_column: str | None) -> GroupIds:
        """The groups of a key set (None: the one group)."""
        return self.one if ids_column is None else self.ids[ids_column]


# -- codes ----------------------------------------------------------------------------------


@dataclass
class _Codes:
    """Integer codes of one key, ``values - lo`` (``null_code`` where ``valid`` is false).

    Kept as the values themselves where they can be (a key column read in place),
    so no array of codes is made for them.
    """

    values: np.ndarray[Any, Any]
    lo: Any
    valid: np.ndarray[Any, Any] | None
    null_code: int
    span: int
    method: str
    #: ``null_code`` is a slot of its own, taken only by rows ``valid`` marks null (not a
    #: code that ``values - lo`` can give)
    null_slot: bool = False
    #: the codes are already ids in order of first appearance (no null, no gap), and
    #: these are their first rows
    first_rows: np.ndarray[Any, Any] | None = None

    @classmethod
    def of(cls, codes: np.ndarray[Any, Any], span: int, method: str) -> _Codes:
        return cls(codes, np.int64(0), None, 0, span, method)

    @property
    def reachable(self) -> int:
        """At most how many distinct codes the rows hold (the null slot needs a null)."""
        return self.span - 1 if self.null_slot and self.valid is None else self.span

    def array(self) -> np.ndarray[Any, Any]:
        """The codes as int64."""
        codes: np.ndarray[Any, Any]
        if self.values.dtype == np.uint64:  # the difference fits; the values may not fit int64
            codes = (self.values - self.lo).astype(np.int64)
        else:
            codes = self.values.astype(np.int64) - np.int64(self.lo)
        if self.valid is not None:
            codes = np.where(self.valid, codes, self.null_code)
        return codes


def integer_values(array: pa.Array) -> pa.Array:
    """Temporal, boolean and integer arrays as plain integers of the same width."""
    import pyarrow.compute as pc  # on first use: its import is slow
    t = array.type
    if pa.types.is_boolean(t):
        return pc.cast(array, pa.int8())
    if pa.types.is_temporal(t):
        width = t.bit_width
        return array.view(pa.int64() if width == 64 else pa.int32())
    return array


def _valid(array: pa.Array) -> np.ndarray[Any, Any] | None:
    if not array.null_count:
        return None
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)


def raw_values(array: pa.Array) -> np.ndarray[Any, Any]:
    """The value buffer of a primitive array, in place (whatever sits under its nulls)."""
    dtype = np.dtype(array.type.to_pandas_dtype())
    data = array.buffers()[1]
    if data is None or len(array) == 0:
        return np.zeros(len(array), dtype=dtype)
    out: np.ndarray[Any, Any] = np.frombuffer(data, dtype=dtype, count=len(array),
                                              offset=array.offset * dtype.itemsize)  # fmt: skip
    return out


def _hashed(array: pa.Array) -> _Codes:
    """First-appearance codes of any hashable array (a null is a value of its own)."""
    import pyarrow.compute as pc  # on first use: its import is slow
    encoded = pc.dictionary_encode(array, null_encoding="encode")
    indices = encoded.indices
    codes = np.asarray(indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    return _Codes.of(codes, max(len(encoded.dictionary), 1), "hash (pyarrow)")


def string_codes(array: pa.Array) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """First-appearance codes of a string or binary array, on every core.

    Returns ``(codes, first_rows)``: ``codes[i]`` (int64) numbers row ``i``'s value
    among the distinct values in order of first appearance, -1 where the row is null;
    ``first_rows[c]`` is value ``c``'s first row. The same numbering as pyarrow's
    ``dictionary_encode``, which hashes on one thread: here rows are hashed on every
    core and numbered in a table per chunk of rows (few values) or per hash partition
    (`colbridge.backends._group_kernels`). Inputs of at most `NUMPY_MAX_ROWS` rows go
    through ``dictionary_encode`` (nothing to load).
    """
    t = array.type
    if not _is_text(t):
        msg = f"string_codes reads string or binary arrays, not {t}"
        raise TypeError(msg)
    n = len(array)
    if n <= NUMPY_MAX_ROWS:
        import pyarrow.compute as pc  # on first use: its import is slow
        encoded = pc.dictionary_encode(array)
        indices = encoded.indices.fill_null(-1) if encoded.indices.null_count else encoded.indices
        codes = np.asarray(indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        first = np.full(len(encoded.dictionary), n, dtype=np.int64)
        np.minimum.at(first, codes[codes >= 0], np.flatnonzero(codes >= 0))
        return codes, first
    # views hashed in place (a value of up to 12 bytes is its 16-byte view) ran slower
    # than gathering their bytes first and hashing those
    array = gather_views(array)
    offsets, data = string_buffers(array)
    if data.ctypes.data % 8:  # whole words are read from the start of the bytes
        data = data.copy()  # NumPy aligns its own allocations
    words = data[: len(data) // 8 * 8].view(np.uint64)
    # a row is read eight bytes at a time, with the word after its last one: the rows
    # ending within the last two words read a zero-padded copy of their bytes
    end = np.asarray((len(words) - 1) * 8).astype(offsets.dtype)  # the offsets' type: no copy
    safe = int(np.searchsorted(offsets[1:], end, side="left"))
    first_tail = int(offsets[safe])
    tail_offsets = offsets[safe:].astype(np.int64) - first_tail
    tail = np.zeros((int(tail_offsets[-1]) + 23) // 8 * 8, dtype=np.uint8)
    tail[: int(tail_offsets[-1])] = data[first_tail : int(offsets[-1])]
    valid = _valid(array)
    chunks = 4 * thread_count()
    args = (read_only(offsets), read_only(data), read_only(words), read_only(tail_offsets),
            read_only(tail.view(np.uint64)), safe,
            np.zeros(0, np.bool_) if valid is None else valid, chunks)  # fmt: skip
    codes = empty_array(n, np.int64)  # pooled pages: fresh ones fault in slower than this fills
    done, codes, first = _kernels().few_string_codes(*args, _FEW, codes)
    if not done:
        codes, first = _kernels().string_codes(*args, empty_array(8 * n, np.uint64), codes)
    return codes, first


def string_buffers(array: pa.Array) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A string or binary array's offsets and bytes (uint8), both in place.

    The offsets start at the array's own offset and keep their width (int32 or int64).
    """
    t = array.type
    width = np.int64 if pa.types.is_large_string(t) or pa.types.is_large_binary(t) else np.int32
    _, offsets_buf, data_buf = array.buffers()[:3]
    offsets = np.frombuffer(offsets_buf, dtype=width, count=len(array) + 1,
                            offset=array.offset * np.dtype(width).itemsize)  # fmt: skip
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None \
        else np.zeros(0, np.uint8)  # fmt: skip
    return offsets, data


def dictionary_encoded(array: pa.Array) -> pa.DictionaryArray:
    """``pc.dictionary_encode(array)`` of a string or binary array, by `string_codes`.

    Int32 indices, the dictionary in order of first appearance, nulls in the indices.
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    if len(array) <= NUMPY_MAX_ROWS:
        return pc.dictionary_encode(array)
    t = array.type
    plain = gather_views(array)  # pyarrow takes no views
    codes, first = string_codes(plain)
    dictionary = plain.take(pa.array(first))
    if dictionary.type != t:
        dictionary = dictionary.cast(t)
    mask = codes < 0 if array.null_count else None
    indices = pa.array(codes.astype(np.int32), mask=mask)
    return pa.DictionaryArray.from_arrays(indices, dictionary)


def gather_views(array: pa.Array) -> pa.Array:
    """Views (polars' strings) as large strings or binary; other arrays as they are.

    Views point into several buffers; the bytes are gathered into one (a copy, a tenth
    of the time the codes take).
    """
    t = array.type
    if pa.types.is_string_view(t):
        return array.cast(pa.large_string())
    if pa.types.is_binary_view(t):
        return array.cast(pa.large_binary())
    return array


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_string_view(t)
            or pa.types.is_binary_view(t))  # fmt: skip


def thread_count() -> int:
    """The threads numba runs parallel loops on (`numba.set_num_threads` may lower it)."""
    import numba  # on first use: `import colbridge` does not load it

    return int(numba.get_num_threads())


def _canonical_floats(array: pa.Array) -> pa.Array:
    """Floats as integers that are equal exactly where polars groups them together.

    Every NaN is one value and ``-0.0`` is ``0.0``; nulls stay null.
    """
    values = raw_values(array)
    with np.errstate(invalid="ignore"):
        clean = np.where(np.isnan(values), np.nan, values + values.dtype.type(0.0))
    bits = clean.view(np.int64 if values.dtype.itemsize == 8 else np.int32)
    valid = _valid(array)
    return pa.array(bits, mask=None if valid is None else ~valid)


def _bounds(ints: pa.Array, values: np.ndarray[Any, Any],
            valid: np.ndarray[Any, Any] | None) -> tuple[Any, Any]:  # fmt: skip
    """The smallest and largest non-null value of ``ints`` (``values``, flags ``valid``).

    ``(None, None)`` where every row is null. Past NumPy's sizes, on every core.
    """
    if len(values) <= NUMPY_MAX_ROWS:
        import pyarrow.compute as pc  # on first use: its import is slow
        found = pc.min_max(ints)
        return found["min"].as_py(), found["max"].as_py()
    flags = valid if valid is not None else np.zeros(0, dtype=np.bool_)
    lo, hi, any_valid = _kernels().bounds(values, flags, thread_count())
    return (lo, hi) if any_valid else (None, None)


def codes_of(array: pa.Array) -> _Codes:
    """Integer codes equal exactly where the values group together (see `_Codes`)."""
    t = array.type
    n = len(array)
    if pa.types.is_dictionary(t):
        labels = codes_of(array.dictionary)  # equal labels, one code
        label_codes = labels.array()
        valid = _valid(array.indices)
        if not array.dictionary.null_count and np.array_equal(
            label_codes, np.arange(len(label_codes))
        ):
            # distinct labels (the usual case): the indices are the codes, read in place
            nlabels = len(label_codes)
            return _Codes(raw_values(array.indices), array.indices.type.to_pandas_dtype()(0),
                          valid, nlabels, nlabels + 1, "dictionary codes",
                          null_slot=True)  # fmt: skip
        index = raw_values(array.indices).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
        if valid is not None:
            index = np.where(valid, index, 0)
        codes = label_codes[index] if len(label_codes) else np.zeros(n, dtype=np.int64)
        null_code = labels.span
        if array.dictionary.null_count and len(label_codes):
            # a null label and a null index are one group: the null code
            null_label = label_codes[np.asarray(array.dictionary.is_null())][0]
            codes = np.where(codes == null_label, null_code, codes)
        if valid is not None:
            codes = np.where(valid, codes, null_code)
        return _Codes.of(codes, labels.span + 1, "dictionary labels")
    if pa.types.is_floating(t):
        return _hashed(_canonical_floats(array))
    if pa.types.is_null(t):
        return _Codes.of(np.zeros(n, dtype=np.int64), 1, "null")
    if pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_temporal(t):
        ints = integer_values(array)
        values, valid = raw_values(ints), _valid(ints)
        lo, hi = _bounds(ints, values, valid)
        if lo is None:  # every value null (or no rows)
            return _Codes.of(np.zeros(n, dtype=np.int64), 1, "null")
        span = int(hi) - int(lo) + 1
        if span <= max(_TABLE_MIN, 4 * n):
            # small range: the value itself is the code (minus the smallest); nulls last
            return _Codes(values, values.dtype.type(lo), valid, span, span + 1,
                          "value range", null_slot=True)  # fmt: skip
        return _hashed(ints)
    if _is_text(t) and n > NUMPY_MAX_ROWS:
        codes, first = string_codes(array)
        method = "hash (strings, every core)"
        if not array.null_count:
            return _Codes(codes, np.int64(0), None, 0, len(first), method, first_rows=first)
        return _Codes(codes, np.int64(0), _valid(array), len(first), len(first) + 1, method,
                      null_slot=True)  # fmt: skip
    try:
        return _hashed(array)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as exc:
        msg = f"cannot group by values of type {t}: {exc}"
        raise UnsupportedTypeError(msg) from exc


# -- first-appearance numbering ---------------------------------------------------------------


def _kernels() -> Any:
    """The compiled helpers (numba is imported, and they compile or load, on first use)."""
    from colbridge.backends import _group_kernels

    return _group_kernels


def in_group_order(order: np.ndarray[Any, Any], *arrays: np.ndarray[Any, Any]
                   ) -> list[np.ndarray[Any, Any]]:  # fmt: skip
    """Each of ``arrays`` taken in ``order`` (an empty one stays empty), on every core.

    A window or scan per group then reads each group's rows side by side, where
    reading them through ``order`` missed the cache at each row among many groups.
    """
    taken = [array if not len(array) else empty_array(len(order), array.dtype)
             for array in arrays]  # fmt: skip
    kernels = _kernels()
    for array, into in zip(arrays, taken, strict=True):
        if len(array):
            kernels.take_rows(array, order, into)
    return taken


def to_frame_order(
    order: np.ndarray[Any, Any], out: np.ndarray[Any, Any], out_valid: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], ...]:
    """Results made in ``order`` (`in_group_order`), put back at their rows' places."""
    values, flags = empty_array(len(order), out.dtype), empty_array(len(order), np.bool_)
    _kernels().put_rows(out, out_valid, order, values, flags)
    return values, flags


def _edge_rows(
    ids: np.ndarray[Any, Any], keep: np.ndarray[Any, Any] | None, count: int, *, last: bool
) -> np.ndarray[Any, Any]:
    """Each group's first (or last) row among rows where ``keep`` holds; -1 where none."""
    if len(ids) <= NUMPY_MAX_ROWS:
        sel = np.arange(len(ids), dtype=np.int64) if keep is None else np.flatnonzero(keep)
        if last:
            rows = np.full(count, -1, dtype=np.int64)
            np.maximum.at(rows, ids[sel], sel)
            return rows
        rows = np.full(count, len(ids), dtype=np.int64)
        np.minimum.at(rows, ids[sel], sel)
        return np.where(rows == len(ids), -1, rows)
    flags = np.zeros(0, dtype=np.bool_) if keep is None else keep
    return _kernels().edge_rows(ids, flags, count, last)  # type: ignore[no-any-return]


def _renumber(codes: _Codes) -> tuple[np.ndarray[Any, Any], int, np.ndarray[Any, Any]]:
    """Codes renumbered 0.. in order of first appearance: (ids int32, count, first rows)."""
    n = len(codes.values)
    if codes.first_rows is not None:
        return codes.values.astype(np.int32), codes.span, codes.first_rows
    if codes.span > max(_TABLE_MIN, 4 * n):
        codes = _hashed(pa.array(codes.array()))  # sparse codes: a hash table renumbers them
    if n <= NUMPY_MAX_ROWS:
        array = codes.array()
        first = np.full(codes.span, n, dtype=np.int64)
        np.minimum.at(first, array, np.arange(n, dtype=np.int64))
        present = np.flatnonzero(first < n)
        order = present[np.argsort(first[present], kind="stable")]
        rank = np.zeros(codes.span, dtype=np.int32)
        rank[order] = np.arange(len(order), dtype=np.int32)
        return rank[array], len(order), first[order]
    kernels = _kernels()
    valid = codes.valid if codes.valid is not None else np.zeros(0, dtype=np.bool_)
    values = read_only(codes.values)  # a key read in place and computed codes: one compile
    rank, first, count = kernels.first_ranks(values, codes.lo, valid, codes.null_code,
                                             codes.span, codes.reachable)  # fmt: skip
    ids = empty_array(n, np.int32)  # pooled pages: fresh ones fault in slower than this fills
    kernels.renumber(values, codes.lo, valid, codes.null_code, rank, ids)
    return ids, int(count), first


def factorize(arrays: Sequence[pa.Array], num_rows: int) -> GroupIds:
    """Dense first-appearance group ids of the rows of ``arrays`` (one array per key)."""
    if not arrays:
        return one_group(num_rows)
    combined: _Codes | None = None
    methods = []
    for array in arrays:
        codes = codes_of(array)
        methods.append(codes.method)
        if combined is None:
            combined = codes
        elif combined.span * codes.span < 2**62:
            joined = combined.array() * np.int64(codes.span) + codes.array()
            combined = _Codes.of(joined, combined.span * codes.span, "")
        else:  # too wide to combine: renumber what we have first (ids < rows)
            ids, count, _ = _renumber(combined)
            joined = ids.astype(np.int64) * np.int64(codes.span) + codes.array()
            combined = _Codes.of(joined, count * codes.span, "")
    assert combined is not None
    ids, count, first = _renumber(combined)
    return GroupIds(ids, count, first, num_rows, ", ".join(dict.fromkeys(methods)))


# -- reductions taken from the groups ----------------------------------------------------------


def _keep(pred: pa.Array | None) -> np.ndarray[Any, Any] | None:
    """A filter predicate as booleans (null counts as false)."""
    if pred is None:
        return None
    return np.asarray(pred.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.bool_)


def _counts(groups: GroupIds, rows: np.ndarray[Any, Any] | None) -> np.ndarray[Any, Any]:
    """How many of the rows where ``rows`` holds are in each group."""
    if rows is None:
        return groups.sizes()
    if groups.ids is None:
        return np.array([int(np.count_nonzero(rows))], dtype=np.int64)
    return np.bincount(groups.ids[rows], minlength=groups.count).astype(np.int64)


def take(array: pa.Array, rows: np.ndarray[Any, Any]) -> pa.Array:
    """``array[rows]`` with a null where ``rows`` is -1 (a group with no row to take)."""
    import pyarrow.compute as pc  # on first use: its import is slow
    missing = rows < 0
    index = pa.array(np.where(missing, 0, rows), mask=missing if missing.any() else None)
    if pa.types.is_string_view(array.type) or pa.types.is_binary_view(array.type):
        # pyarrow's take has no kernel for views (polars' strings): the large layout
        large = pa.large_string() if pa.types.is_string_view(array.type) else pa.large_binary()
        kept = rows[~missing]
        if len(kept) > 0 and len(kept) * 256 <= len(array):
            # a few rows (the keys of a few groups): those rows alone, not the column
            array = pa.concat_arrays([array.slice(int(r), 1) for r in kept]).cast(large)
            at = np.cumsum(~missing) - 1  # each taken row's place among those kept
            index = pa.array(np.where(missing, 0, at), mask=missing if missing.any() else None)
        else:
            array = array.cast(large)
    if len(array) == 0:
        return _nulls_like(array, len(rows))
    return pc.take(array, index)


def _nulls_like(array: pa.Array | pa.ChunkedArray, length: int) -> pa.Array:
    """``length`` nulls of ``array``'s type, a dictionary's values kept.

    ``pa.nulls`` of a dictionary type has an empty dictionary, and an Enum's
    categories are its dictionary: a group of an empty frame would come back as
    ``Enum([])``, where polars keeps the column's categories.
    """
    if not pa.types.is_dictionary(array.type):
        return pa.nulls(length, type=array.type)
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    if not chunks:
        return pa.nulls(length, type=array.type)
    indices = pa.nulls(length, type=array.type.index_type)
    return pa.DictionaryArray.from_arrays(indices, chunks[0].dictionary,
                                          ordered=array.type.ordered)  # fmt: skip


def host_reduction(
    func: str,
    groups: GroupIds,
    arg: pa.Array | None,
    pred: pa.Array | None,
    options: tuple[Any, ...] = (),
    *,
    ordered: bool = False,
) -> pa.Array:
    """One value per group of ``func`` over ``arg`` (where ``pred`` holds), without a kernel.

    ``len`` counts rows; ``count``/``null_count`` the valid/null values of ``arg``;
    ``first``/``last`` take the value at the group's first/last row (null included,
    as polars does); ``n_unique`` counts distinct values, null being one of them;
    ``median`` and ``quantile`` (``options``: the quantile and the interpolation) are
    `quantiles` of the group's sorted values; ``arg_min``/``arg_max`` are
    `arg_extremes` (``ordered``: the rows were put in the order of ``over(order_by=)``).
    """
    keep = _keep(pred)
    if func in ("any", "all"):
        assert arg is not None
        return any_all(func, groups, arg, keep, ignore_nulls=options[0])
    if func in ("median", "quantile"):
        assert arg is not None
        quantile, method = (0.5, "linear") if func == "median" else options
        return quantiles(groups, arg, keep, quantile, method)
    if func == "product":
        assert arg is not None
        return products(groups, arg, keep)
    if func in BITWISE_AGGS:
        assert arg is not None
        return bitwise(func, groups, arg, keep)
    if func == "len":
        return pa.array(_counts(groups, keep).astype(np.uint32))
    assert arg is not None
    if func in ("count", "null_count"):
        valid = np.asarray(arg.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
        present = valid if keep is None else valid & keep
        counted = _counts(groups, present)
        if func == "null_count":
            counted = _counts(groups, keep) - counted
        return pa.array(counted.astype(np.uint32))
    if func in ("first", "last"):
        if keep is None:
            rows = groups.first_rows if func == "first" else groups.last_rows()
        elif groups.ids is None:
            sel = np.flatnonzero(keep)
            rows = np.array([(sel[0] if func == "first" else sel[-1]) if len(sel) else -1])
        else:
            rows = _edge_rows(groups.ids, keep, groups.count, last=func == "last")
        return take(arg, rows)
    if func in ("arg_min", "arg_max"):
        return arg_extremes(func, groups, arg, keep, ordered=ordered)
    if func == "str_join":
        return joined_strings(groups, arg, keep, *options)
    if func == "n_unique":
        value_codes = codes_of(arg)
        codes = value_codes.array()
        ids = groups.ids if groups.ids is not None else np.zeros(len(arg), dtype=np.int32)
        if keep is not None:
            codes, ids = codes[keep], ids[keep]
        if len(codes) == 0:
            return pa.array(np.zeros(groups.count, dtype=np.uint32))
        pairs = ids.astype(np.int64) * np.int64(value_codes.span) + codes
        _, _, first = _renumber(_Codes.of(pairs, groups.count * value_codes.span, ""))
        distinct = np.bincount(ids[first], minlength=groups.count)  # pairs per group
        return pa.array(distinct.astype(np.uint32))
    msg = f"reduction `{func}` is not computed from the groups"
    raise AssertionError(msg)


def joined_strings(
    groups: GroupIds,
    arg: pa.Array,
    keep: np.ndarray[Any, Any] | None,
    delimiter: str,
    ignore_nulls: bool,
) -> pa.Array:
    """Each group's strings (where ``keep`` holds) joined with ``delimiter``, in row order.

    As polars' ``str.join``: nulls left out (``ignore_nulls``), or the group's result
    null where it has one; a group without strings gives ``""``. The rows are put in
    group order (a stable sort of the ids) and cut into one list per group, which
    Arrow's ``binary_join`` joins.
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    data = one_array(arg)
    if pa.types.is_dictionary(data.type):
        data = data.dictionary_decode()
    if pa.types.is_null(data.type):
        data = pa.nulls(len(data), pa.large_string())
    data = data.cast(pa.large_string())
    ids = groups.ids if groups.ids is not None else np.zeros(len(data), dtype=np.int32)
    rows = np.arange(len(data)) if keep is None else np.flatnonzero(keep)
    valid = np.asarray(data.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
    has_null = np.zeros(groups.count, dtype=np.bool_)
    if not ignore_nulls:
        has_null[ids[rows[~valid[rows]]]] = True
    rows = rows[valid[rows]]
    rows = rows[np.argsort(ids[rows], kind="stable")]
    counts = np.bincount(ids[rows], minlength=groups.count)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    lists = pa.LargeListArray.from_arrays(pa.array(offsets), data.take(pa.array(rows)))
    joined = pc.binary_join(lists, pa.scalar(delimiter, pa.large_string()))
    if has_null.any():
        joined = pc.if_else(pa.array(has_null), pa.nulls(len(joined), joined.type), joined)
    return joined


def arg_extremes(
    func: str,
    groups: GroupIds,
    arg: pa.Array,
    keep: np.ndarray[Any, Any] | None,
    *,
    ordered: bool = False,
) -> pa.Array:
    """Each group's ``arg_max`` or ``arg_min``: the position of its extreme value (UInt32).

    Positions count the group's rows where ``keep`` holds, in order. As polars: nulls
    are left out, and NaN unless every value of the group is NaN (then its first
    NaN); of equal values the first (``-0.0`` equals ``0.0``), a group without values
    is null. Values are ordered as polars sorts them (`colbridge.backends.scans.value_keys`).

    But ``arg_max`` takes the last of equal values where polars' own kernels do: of a
    Categorical always, of strings and binary over the whole column (no keys) in frame
    order (polars' column kernel, Rust's ``Iterator::max_by``, keeps the last of equal
    values; its grouped kernel, one group of keys included, keeps the first). These are
    polars' eager and in-memory engines; its streaming engine (what ``collect()`` picks
    in polars 2.1) breaks ties by how it splits the rows among its threads.
    """
    from colbridge.backends.scans import value_keys

    data = one_array(arg)
    count = groups.count
    if pa.types.is_null(data.type):  # no value in any group
        return pa.nulls(count, pa.uint32())
    valid, keys = value_keys(data)
    nan = np.zeros(len(data), dtype=np.bool_)
    if pa.types.is_floating(data.type) and data.null_count < len(data):
        nan = np.isnan(np.asarray(data.to_numpy(zero_copy_only=False), dtype=np.float64))
        nan &= valid
    rows = np.flatnonzero(keep) if keep is not None else np.arange(len(data), dtype=np.int64)
    ids = (groups.ids[rows] if groups.ids is not None
           else np.zeros(len(rows), dtype=np.int64)).astype(np.int64)  # fmt: skip
    # each kept row's position in its group: its place in a stable sort by group, less
    # the group's start
    by_group = np.argsort(ids, kind="stable")
    sizes = np.bincount(ids, minlength=count)
    starts = np.cumsum(sizes) - sizes
    position = np.empty(len(rows), dtype=np.int64)
    position[by_group] = np.arange(len(rows), dtype=np.int64) - starts[ids[by_group]]
    text = pa.types.is_string(data.type) or pa.types.is_large_string(data.type) \
        or pa.types.is_string_view(data.type) or pa.types.is_binary(data.type) \
        or pa.types.is_large_binary(data.type) or pa.types.is_binary_view(data.type)  # fmt: skip
    categorical = pa.types.is_dictionary(data.type) and not data.type.ordered  # not an Enum
    whole = groups.ids is None  # the whole column (no keys), not a single group of keys
    last_of_ties = func == "arg_max" and (categorical or (text and whole and not ordered))
    out = np.zeros(count, dtype=np.uint32)
    found = np.zeros(count, dtype=np.bool_)
    for candidates, by_value in ((valid[rows] & ~nan[rows], True), (nan[rows], False)):
        # values first; groups with none but NaN then take their first NaN
        at = np.flatnonzero(candidates & ~found[ids])
        if not len(at):
            continue
        g, p = ids[at], position[at]
        k = keys[rows[at]] if by_value else np.zeros(len(at), dtype=np.int64)
        if func == "arg_max":
            k = ~k  # the largest first (~ reverses the order of every int64)
        by_group_and_value = np.lexsort((-p if last_of_ties else p, k, g))
        g, p = g[by_group_and_value], p[by_group_and_value]
        first = np.ones(len(g), dtype=np.bool_)
        first[1:] = g[1:] != g[:-1]
        out[g[first]] = p[first]
        found[g[first]] = True
    return pa.array(out, mask=~found)


def quantiles(
    groups: GroupIds, arg: pa.Array, keep: np.ndarray[Any, Any] | None, quantile: float,
    method: str,
) -> pa.Array:  # fmt: skip
    """The ``quantile`` of each group's non-null values of ``arg`` (rows where ``keep`` holds).

    polars' arithmetic, step by step (``quantile_idx`` in polars-core): the values are
    sorted (NaN above every number), a group of ``n`` values takes the position
    ``(n - 1) * quantile`` among them (its nulls left out, as polars 2.2; 2.1 counted
    them), rounded as ``method`` says; ``midpoint`` and ``linear`` join that value and
    the next in float64 (the value itself where the two are equal). Integers and
    booleans give float64, floats keep their width; a group without values is null.
    """
    data = one_array(arg)
    if pa.types.is_temporal(data.type) or pa.types.is_boolean(data.type):
        data = integer_values(data)  # days, ticks, 0 and 1
    count = groups.count
    raw = raw_values(data)
    if groups.ids is None and keep is None:  # a whole column: no group ids to read
        valid = _valid(data)
        values = (raw if valid is None else raw[valid]).astype(np.float64, copy=False)
        counts = np.array([len(values)], dtype=np.int64)
    elif keep is None and not data.null_count and groups.ids is not None:  # no masks
        values, owners = raw.astype(np.float64, copy=False), groups.ids
        counts = np.bincount(owners, minlength=count).astype(np.int64)
    else:
        ids, present, rows = _rows_of(groups, data, keep)
        taken = present & rows
        values = raw[taken].astype(np.float64, copy=False)
        owners = ids[taken]
        counts = np.bincount(owners, minlength=count).astype(np.int64)
    starts = np.cumsum(counts) - counts
    has = counts > 0
    c = np.where(has, counts, 1)  # groups without values give null; any position will do
    position = (c - 1.0) * quantile
    if method == "nearest":
        # half away from zero, as Rust's `round` (positions are >= 0; the fraction is exact)
        index = np.floor(position)
        index = index + (position - index >= 0.5)
    elif method == "higher":
        index = np.ceil(position)
    elif method == "equiprobable":
        index = np.maximum(np.ceil(c * quantile) - 1.0, 0.0)
    else:  # lower, midpoint, linear: truncated
        index = np.floor(position)
    at = np.clip(index.astype(np.int64), 0, c - 1)  # among the group's values
    joins = method in ("midpoint", "linear")
    between = has & (np.ceil(position) != index) if joins else np.zeros(count, dtype=np.bool_)
    # the values at ``at`` and, where ``between``, the next, values ordered with NaN last
    if count == 1:
        # NumPy's partition puts one in place, O(n) (1e6 rows: 3.6 ms, against 12 ms to
        # sort and 18 ms to place two); the next is the least to its right (NaN if all are)
        k = int(at[0])
        ordered = np.partition(values, k) if len(values) else np.zeros(1)
        lower = ordered[k : k + 1]
        upper = np.fmin.reduce(ordered[k + 1 :], keepdims=True) if between[0] else lower
    else:
        # a quickselect per group, on every core (1e6 rows, 1,000 groups: ~20 ms, against
        # 436 ms for a lexsort of the pairs and 110 ms for NumPy's sort and a regrouping)
        bounds = np.append(starts, len(values))
        picks = np.where(has, at, -1)
        import numba

        lower, upper = _kernels().group_select(values, owners, bounds, picks, between,
                                               numba.get_num_threads())  # fmt: skip
    result = lower
    if joins:
        with np.errstate(invalid="ignore", over="ignore"):
            if method == "midpoint":
                joined = (lower + upper) / 2.0
            else:
                joined = (position - index) * (upper - lower) + lower
        result = np.where(between & (lower != upper), joined, lower)
    out_type = data.type if pa.types.is_floating(data.type) else pa.float64()
    out = result.astype(out_type.to_pandas_dtype())
    return pa.array(out, type=out_type, mask=~has)


def products(groups: GroupIds, arg: pa.Array, keep: np.ndarray[Any, Any] | None) -> pa.Array:
    """Each group's product of the non-null values of ``arg``, in row order (1 for none).

    Typing cast ``arg`` to the result type (Int64, UInt64 or a float): integers wrap.
    """
    data = one_array(arg)
    ids, present, rows = _rows_of(groups, data, keep)
    out = np.ones(groups.count, dtype=data.type.to_pandas_dtype())
    _kernels().group_products(raw_values(data), present & rows, ids, out)
    return pa.array(out, type=data.type)


def bitwise(func: str, groups: GroupIds, arg: pa.Array, keep: np.ndarray[Any, Any] | None
            ) -> pa.Array:  # fmt: skip
    """Each group's ``bitwise_and``/``_or``/``_xor`` of the non-null integers (or booleans).

    The type kept; null for a group with no value, as polars, but for booleans per group
    of keys (``group_by``, ``over``), where polars' grouped kernel answers the
    operation's identity (AND: true, OR and XOR: false) and only over a whole column
    null. (polars' streaming engine answers null there too; its default engine, the
    oracle here, the identity.)
    """
    data = one_array(arg)
    ids, present, rows = _rows_of(groups, data, keep)
    take = present & rows
    values = np.asarray(raw_values(data) if not pa.types.is_boolean(data.type) else
                        data.fill_null(False).to_numpy(zero_copy_only=False))  # fmt: skip
    ufunc = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
             "bitwise_xor": np.bitwise_xor}[func]  # fmt: skip
    # the operation's identity: every bit set for AND (~0 of the type; True), none otherwise
    start = ~np.zeros((), values.dtype) if func == "bitwise_and" else np.zeros((), values.dtype)
    out = np.full(groups.count, start, dtype=values.dtype)
    ufunc.at(out, ids[take], values[take])
    if pa.types.is_boolean(data.type) and groups.ids is not None:
        return pa.array(out, type=data.type)
    counted = np.bincount(ids[take], minlength=groups.count)
    return pa.array(out, type=data.type, mask=counted == 0)


def any_all(func: str, groups: GroupIds, arg: pa.Array, keep: np.ndarray[Any, Any] | None, *,
             ignore_nulls: bool) -> pa.Array:  # fmt: skip
    """``any``/``all`` of each group's booleans, from counts of its true, false and null rows.

    Nulls are left out (``any`` of none: false, ``all`` of none: true); without
    ``ignore_nulls`` a group whose answer a null could change is null (Kleene logic).
    """
    data = one_array(arg)
    ids, present, rows = _rows_of(groups, data, keep)
    truth = np.asarray(data.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.bool_)

    def count(where: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return np.bincount(ids[where & rows], minlength=groups.count)

    trues, falses = count(present & truth), count(present & ~truth)
    decided = trues > 0 if func == "any" else falses > 0
    answer = decided if func == "any" else ~decided
    unknown = None if ignore_nulls else (~decided & (count(~present) > 0))
    return pa.array(answer, type=pa.bool_(), mask=unknown)


_Rows = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]


def _rows_of(groups: GroupIds, data: pa.Array, keep: np.ndarray[Any, Any] | None) -> _Rows:
    """Each row's group id, whether its value is present, and whether ``keep`` keeps it."""
    n = len(data)
    ids = groups.ids if groups.ids is not None else np.zeros(n, dtype=np.int32)
    valid = _valid(data)
    present = np.ones(n, dtype=np.bool_) if valid is None else valid
    rows = np.ones(n, dtype=np.bool_) if keep is None else keep
    return ids, present, rows
