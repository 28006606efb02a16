"""Group ids: keys of any type factorized into dense int32 ids, and what follows from them alone.

Stage: backends (the factorize pass of a plan, run on the host for every target).
`factorize` turns one or several key columns into ids ``0 .. count-1`` numbered in
order of first appearance (polars' ``maintain_order=True``), with a null key a
group of its own, NaN one group and ``-0.0`` the group of ``0.0``, as polars
groups them. Strings and categories never reach a kernel as bytes: they are
dictionary-encoded by pyarrow (categories by label, not by code).

How (measured on this project's machines; see ``benchmarks/grouped.py``):

* each key becomes integer *codes* in ``[0, range)``: small-range integers,
  booleans, dates and dictionary codes directly (value minus minimum, nulls
  last); strings, wide-range integers and floats through pyarrow's
  ``dictionary_encode`` (a hash table: codes already in first-appearance order);
* several keys combine their codes arithmetically (``c1 * range2 + c2``);
* the combined codes are renumbered in first-appearance order by one pass that
  records each code's first row (numba, compiled once and cached on disk; NumPy
  for small inputs), and one parallel pass that maps codes to ids.

`host_reduction` computes the grouped reductions that need no kernel: ``len``,
``first``, ``last`` (rows of the groups, then a take: any Arrow type) and
``n_unique`` (a factorization of (group, value) pairs); ``count``/``null_count``
of columns kernels cannot read (strings) from their validity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from colbridge.errors import UnsupportedTypeError

__all__ = [
    "NUMPY_MAX_ROWS",
    "GroupIds",
    "Grouping",
    "factorize",
    "host_reduction",
    "one_group",
    "take",
]

#: Up to this many rows ids are renumbered with NumPy (nothing to compile).
NUMPY_MAX_ROWS = 100_000
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

    def of(self, ids_column: str | None) -> GroupIds:
        """The groups of a key set (None: the one group)."""
        return self.one if ids_column is None else self.ids[ids_column]


# -- codes ----------------------------------------------------------------------------------


def _integers(array: pa.Array) -> pa.Array:
    """Temporal, boolean and integer arrays as plain integers of the same width."""
    t = array.type
    if pa.types.is_boolean(t):
        return pc.cast(array, pa.int8())
    if pa.types.is_temporal(t):
        width = t.bit_width
        return array.view(pa.int64() if width == 64 else pa.int32())
    return array


def _hashed(array: pa.Array) -> tuple[np.ndarray[Any, Any], int]:
    """First-appearance codes of any hashable array (a null is a value of its own)."""
    encoded = pc.dictionary_encode(array, null_encoding="encode")
    indices = encoded.indices
    codes = np.asarray(indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    return codes, len(encoded.dictionary)


def _canonical_floats(array: pa.Array) -> pa.Array:
    """Floats as integers that are equal exactly where polars groups them together.

    Every NaN is one value and ``-0.0`` is ``0.0``; nulls stay null.
    """
    values = np.asarray(array.to_numpy(zero_copy_only=False))
    with np.errstate(invalid="ignore"):
        clean = np.where(np.isnan(values), np.nan, values + values.dtype.type(0.0))
    bits = clean.view(np.int64 if values.dtype.itemsize == 8 else np.int32)
    mask = np.asarray(array.is_null().to_numpy(zero_copy_only=False)) if array.null_count else None
    return pa.array(bits, mask=mask)


def codes_of(array: pa.Array) -> tuple[np.ndarray[Any, Any], int, str]:
    """Integer codes in ``[0, range)`` equal exactly where the values group together.

    Returns the codes (int64), the range and how they were made.
    """
    t = array.type
    n = len(array)
    if pa.types.is_dictionary(t):
        labels, nlabels, _ = codes_of(array.dictionary)  # equal labels, one code
        indices = array.indices
        index = np.asarray(indices.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        codes = labels[index] if n and len(labels) else np.zeros(n, dtype=np.int64)
        if array.null_count:
            # a null index and a null label are one group; nulls take a code of their own
            null_code = nlabels
            if array.dictionary.null_count:
                null_label = labels[np.asarray(array.dictionary.is_null())][0]
                codes = np.where(codes == null_label, null_code, codes)
            valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False))
            codes = np.where(valid, codes, null_code)
            return codes, nlabels + 1, "dictionary labels"
        return codes, max(nlabels, 1), "dictionary labels"
    if pa.types.is_floating(t):
        return (*_hashed(_canonical_floats(array)), "hash (pyarrow)")
    if pa.types.is_null(t):
        return np.zeros(n, dtype=np.int64), 1, "null"
    if pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_temporal(t):
        ints = _integers(array)
        bounds = pc.min_max(ints)
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        if lo is None:  # every value null (or no rows)
            return np.zeros(n, dtype=np.int64), 1, "null"
        span = int(hi) - int(lo) + 1
        if span <= max(_TABLE_MIN, 4 * n):
            # small range: the value itself is the code (minus the smallest); nulls last
            values = np.asarray(ints.fill_null(lo).to_numpy(zero_copy_only=False))
            if values.dtype == np.uint64:  # the difference fits; the values may not fit int64
                codes = (values - np.uint64(lo)).astype(np.int64)
            else:
                codes = values.astype(np.int64) - np.int64(lo)
            if ints.null_count:
                valid = np.asarray(ints.is_valid().to_numpy(zero_copy_only=False))
                codes = np.where(valid, codes, span)
            return codes, span + 1, "value range"
        return (*_hashed(ints), "hash (pyarrow)")
    try:
        return (*_hashed(array), "hash (pyarrow)")
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as exc:
        msg = f"cannot group by values of type {t}: {exc}"
        raise UnsupportedTypeError(msg) from exc


# -- first-appearance numbering ---------------------------------------------------------------


def _kernels() -> Any:
    """The compiled helpers (numba is imported, and they compile or load, on first use)."""
    from colbridge.backends import _group_kernels

    return _group_kernels


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


def _renumber(codes: np.ndarray[Any, Any], span: int) -> tuple[np.ndarray[Any, Any], int,
                                                               np.ndarray[Any, Any]]:  # fmt: skip
    """Codes renumbered 0.. in order of first appearance: (ids int32, count, first rows)."""
    n = len(codes)
    if span > max(_TABLE_MIN, 4 * n):
        codes, span = _hashed(pa.array(codes))  # sparse codes: a hash table renumbers them
    if n <= NUMPY_MAX_ROWS:
        first = np.full(span, n, dtype=np.int64)
        np.minimum.at(first, codes, np.arange(n, dtype=np.int64))
        present = np.flatnonzero(first < n)
    else:
        first = _kernels().first_rows(codes, span)
        present = np.flatnonzero(first >= 0)
    order = present[np.argsort(first[present], kind="stable")]
    rank = np.zeros(span, dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    if n <= NUMPY_MAX_ROWS:
        ids = rank[codes]
    else:
        ids = np.empty(n, dtype=np.int32)
        _kernels().renumber(codes, rank, ids)
    return ids, len(order), first[order]


def factorize(arrays: Sequence[pa.Array], num_rows: int) -> GroupIds:
    """Dense first-appearance group ids of the rows of ``arrays`` (one array per key)."""
    if not arrays:
        return one_group(num_rows)
    combined: np.ndarray[Any, Any] | None = None
    span = 1
    methods = []
    for array in arrays:
        codes, size, method = codes_of(array)
        methods.append(method)
        if combined is None:
            combined, span = codes, size
        elif span * size < 2**62:
            combined = combined * np.int64(size) + codes
            span *= size
        else:  # too wide to combine: renumber what we have first (ids < rows)
            ids, count, _ = _renumber(combined, span)
            combined = ids.astype(np.int64) * np.int64(size) + codes
            span = count * size
    assert combined is not None
    ids, count, first = _renumber(combined, span)
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
    missing = rows < 0
    index = pa.array(np.where(missing, 0, rows), mask=missing if missing.any() else None)
    if pa.types.is_string_view(array.type) or pa.types.is_binary_view(array.type):
        # pyarrow's take has no kernel for views (polars' strings): the large layout
        large = pa.large_string() if pa.types.is_string_view(array.type) else pa.large_binary()
        array = array.cast(large)
    if len(array) == 0:
        return pa.nulls(len(rows), type=array.type)
    return pc.take(array, index)


def host_reduction(
    func: str, groups: GroupIds, arg: pa.Array | None, pred: pa.Array | None
) -> pa.Array:
    """One value per group of ``func`` over ``arg`` (where ``pred`` holds), without a kernel.

    ``len`` counts rows; ``count``/``null_count`` the valid/null values of ``arg``;
    ``first``/``last`` take the value at the group's first/last row (null included,
    as polars does); ``n_unique`` counts distinct values, null being one of them.
    """
    keep = _keep(pred)
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
    if func == "n_unique":
        codes, span, _ = codes_of(arg)
        if keep is not None:
            codes = codes[keep]
        ids = groups.ids if groups.ids is not None else np.zeros(len(arg), dtype=np.int32)
        if keep is not None:
            ids = ids[keep]
        if len(codes) == 0:
            return pa.array(np.zeros(groups.count, dtype=np.uint32))
        pairs, npairs, first = _renumber(ids.astype(np.int64) * np.int64(span) + codes,
                                         groups.count * span)  # fmt: skip
        _ = pairs, npairs
        distinct = np.bincount(ids[first], minlength=groups.count)
        return pa.array(distinct.astype(np.uint32))
    msg = f"reduction `{func}` is not computed from the groups"
    raise AssertionError(msg)
