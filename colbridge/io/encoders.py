"""Jobs layer: the encoders of feature fusion — category counts, vocabularies, folds, hashes.

Fitting adds each batch to per-category totals (value counts, per-fold target
sums: `CategoryTotals`) kept over the first pass; applying maps each batch's
values to their fitted categories' positions (`CategoryIndex`: strings looked up on
every core, other types by ``pyarrow.compute.index_in``) and gathers NumPy arrays,
so no per-row Python runs. The rules follow scikit-learn where it has the encoder
(`OneHotEncoder`'s infrequent categories, `TargetEncoder`'s smoothing,
`KBinsDiscretizer`'s quantile edges) and NVTabular's ``Categorify`` for ids.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from colbridge.backends.groups import gather_views, string_buffers, string_codes, thread_count
from colbridge.errors import UnsupportedTypeError
from colbridge.memory import empty_array, one_array, read_only
from colbridge.types import dtype_from_arrow
from colbridge.types.promotion import int_range

__all__ = [
    "NULL_ID",
    "RARE_ID",
    "CategoryIndex",
    "CategoryTotals",
    "StringNumbers",
    "add_target_rows",
    "category_array",
    "check_kind",
    "fnv1a64",
    "fold_columns",
    "fold_encodings",
    "folds_of",
    "id_order",
    "id_vocabulary",
    "infrequent_mask",
    "linear_quantiles",
    "quantile_edges",
    "scatter_one_hot",
    "sort_categories",
    "sort_indices",
    "value_set",
]

#: Id of a null value in an ``ids`` column.
NULL_ID = 0
#: Id of a value not in the vocabulary (unseen, rarer than ``min_frequency`` or cut by
#: ``max_categories``); the vocabulary's ids start at 2.
RARE_ID = 1
# `CategoryIndex.codes` gives -2 for a null and -1 for a value not there: the ids are
# the codes + 2 (`colbridge.io.fuse`)
assert (NULL_ID, RARE_ID) == (-2 + 2, -1 + 2)



def _plain(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The values of ``array`` with dictionaries decoded and large strings narrowed."""
    array = one_array(array)
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if pa.types.is_large_string(array.type):
        array = array.cast(pa.string())
    return array


def _is_plain_string(typ: pa.DataType) -> bool:
    """Strings `string_codes` numbers here (views, binary and dictionaries: pyarrow's hash)."""
    return bool(pa.types.is_string(typ) or pa.types.is_large_string(typ))


def _string_distinct(array: pa.Array) -> tuple[pa.Array, np.ndarray[Any, Any]]:
    """A plain string batch's distinct values and each row's position among them.

    Values in order of first appearance; a null row's position is -1.
    """
    plain = _plain(array)
    rows, first = string_codes(plain)
    return plain.take(pa.array(first)), rows


def _kernels() -> Any:
    """The encoders' numba loops, imported on first use.

    A job that encodes nothing (`colbridge run`) should not wait for numba to import.
    """
    from colbridge.io import encoder_kernels

    return encoder_kernels


class StringNumbers:
    """Distinct strings numbered in order of first appearance, kept over the batches.

    Their bytes go into one growing buffer, and an open-addressing table of their
    keys (hash, first 16 bytes, length, number; at most half full) finds them
    (`colbridge.io.encoder_kernels`): looking up a batch's distinct values is one pass
    over their bytes, where ``index_in`` against an Arrow array of those seen so far
    hashed all of them again on every batch. A null takes a number of its own
    (`add_null`) and no lookup finds it. Buffers come from Arrow's pool: the pages of
    fresh ones took longer to fault in than the lookups.
    """

    def __init__(self) -> None:
        self.count = 0
        self.null: int | None = None
        self._offsets = _pooled(np.zeros(1025, dtype=np.int64))
        self._data = _pooled(np.zeros(8192, dtype=np.uint8))
        self._slots = _pooled(np.zeros(4 * 2048, dtype=np.uint64))  # 2048 slots

    def __len__(self) -> int:
        return self.count

    def find(self, local: pa.Array) -> np.ndarray[Any, Any]:
        """The numbers of ``local``'s values (strings, no null); new ones numbered in order.

        The values are looked up, then the new ones placed, in the order of their slots
        (a counting sort of their hashes): the table, larger than the caches at 100,000
        strings, is walked from one end to the other instead of at random. A value given
        twice in one call gets its first copy's number; the second copy's number is
        used by nothing else and no lookup finds it (so from an empty table, a value's
        number is its first position in ``local``).
        """
        if local.null_count:  # a null's empty bytes would be numbered as ""
            msg = "StringNumbers.find takes no null: number it with add_null"
            raise ValueError(msg)
        k = _kernels()
        offsets, data = (read_only(b) for b in string_buffers(local))
        n = len(local)
        self._make_room(n, int(offsets[-1] - offsets[0]) if n else 0)
        keys = k._string_keys(offsets, data)
        numbers = np.full(n, -1, dtype=np.int64)
        new = n
        if self.count:
            order = k._slot_order(keys, self._slots)
            new = k._look_up_strings(keys, order, self._slots, offsets, data, self._offsets,
                                     self._data, numbers)  # fmt: skip
        if new:
            self._grow_slots(self.count + new)
            order = k._slot_order(keys, self._slots)
            self.count = k._add_strings(keys, order, self._slots, offsets, data, self._offsets,
                                        self._data, self.count, numbers)  # fmt: skip
        return numbers

    def probe(
        self,
        offsets: np.ndarray[Any, Any],
        data: np.ndarray[Any, Any],
        valid: np.ndarray[Any, Any],
        out: np.ndarray[Any, Any],
    ) -> None:
        """Each string's number into ``out`` (-1: not known, -2: null), on every core.

        ``offsets``/``data`` are a string array's (`string_buffers`), ``valid`` its
        validity (empty: no nulls); nothing is added.
        """
        chunks = 1 if len(out) < 16384 else 4 * thread_count()
        _kernels()._find_strings(offsets, data, valid, read_only(self._offsets),
                                 read_only(self._data), read_only(self._slots), chunks,
                                 out)  # fmt: skip

    def add_null(self) -> int:
        """Number the null (an entry of no bytes that no lookup finds)."""
        self._make_room(1, 0)
        self.null = self.count
        self._offsets[self.count + 1] = self._offsets[self.count]
        self.count += 1
        return self.null

    def _make_room(self, values: int, size: int) -> None:
        """Grow the buffers of offsets and bytes for ``values`` more strings of ``size`` bytes."""
        need = self.count + values
        if need + 1 > len(self._offsets):
            self._offsets = _grown(self._offsets, need + 1)
        used = int(self._offsets[self.count])
        if used + size > len(self._data):
            self._data = _grown(self._data, used + size)

    def _grow_slots(self, count: int) -> None:
        """Make the table at most half full with ``count`` strings."""
        slots = len(self._slots) // 4
        if 2 * count <= slots:
            return
        while 2 * count > slots:
            slots *= 2
        grown = empty_array(4 * slots, np.uint64)
        grown.fill(0)
        _kernels()._string_slots(read_only(self._slots), grown)
        self._slots = grown

    def values(self) -> pa.Array:
        """The strings in the order of their numbers (large strings; the null's slot null)."""
        count = self.count
        validity = None
        if self.null is not None:
            valid = np.ones(count, dtype=bool)
            valid[self.null] = False
            validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        # in place: later batches write past these ends, or into grown copies
        offsets = self._offsets[: count + 1]
        data = self._data[: int(offsets[-1])]
        return pa.Array.from_buffers(
            pa.large_string(), count, [validity, pa.py_buffer(offsets), pa.py_buffer(data)],
            null_count=int(self.null is not None),
        )  # fmt: skip


class _ArrowNumbers:
    """Distinct values of any type numbered in order of first appearance (``index_in``)."""

    def __init__(self, value_type: pa.DataType) -> None:
        self._type = value_type  # a null's, before any value is seen
        self._seen: pa.Array | None = None  # the values, in the order of their numbers
        self.null: int | None = None

    def __len__(self) -> int:
        return 0 if self._seen is None else len(self._seen)

    def find(self, local: pa.Array) -> np.ndarray[Any, Any]:
        """The numbers of ``local``'s values (distinct, no null); new ones numbered."""
        if self._seen is not None and local.type != self._seen.type:
            local = local.cast(self._seen.type)
        if self._seen is None or not len(local):
            mapping = np.full(len(local), -1, dtype=np.int64)
        else:
            found = pc.index_in(local, value_set=self._seen).fill_null(-1)
            mapping = np.asarray(found.to_numpy(zero_copy_only=False), dtype=np.int64)
        new = mapping < 0
        if new.any():
            first = len(self)
            mapping[new] = np.arange(first, first + int(new.sum()))
            self._append(local.filter(pa.array(new)))
        return mapping

    def add_null(self) -> int:
        """Number the null."""
        self.null = len(self)
        self._append(pa.nulls(1, self._seen.type if self._seen is not None else self._type))
        return self.null

    def _append(self, values: pa.Array) -> None:
        self._seen = values if self._seen is None else pa.concat_arrays([self._seen, values])

    def values(self) -> pa.Array | None:
        """The values in the order of their numbers (None before the first)."""
        return self._seen


def _validity(array: pa.Array) -> np.ndarray[Any, Any]:
    """An array's validity as bools, or an empty array when it holds no null."""
    if not array.null_count:
        return np.zeros(0, np.bool_)
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)


def _grown(array: np.ndarray[Any, Any], size: int) -> np.ndarray[Any, Any]:
    """``array`` copied into one at least ``size`` long (and half as long again).

    From Arrow's pool; the part past ``array``'s end is not zeroed (written before read).
    """
    out = empty_array(max(size, len(array) + len(array) // 2), array.dtype)
    out[: len(array)] = array
    return out


def _pooled(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``array`` copied into Arrow's pool (see `_grown`)."""
    out = empty_array(len(array), array.dtype)
    out[:] = array
    return out


class CategoryTotals:
    """Totals per category of one column, kept over the batches of a pass.

    Categories are numbered in order of first appearance: each batch's values are
    hashed once (strings on every core by `colbridge.backends.groups.string_codes`,
    other types by ``dictionary_encode``) and its distinct values looked up among
    those seen before (strings in `StringNumbers`, other types by ``index_in``), so a
    value has one number in every batch; ``table`` holds a row of ``width`` float64
    totals per number, which the batch's rows are added to (`count`,
    `add_target_rows`). Null is a category of its own. Adding rows in place spares a
    table per batch and a merge by value at the end (at 1e6 rows of 100,000 string
    categories, that merge took as long as the batches).
    """

    def __init__(self, width: int) -> None:
        self._rows = np.zeros((0, width))  # room for more categories than there are
        self.table = self._rows  # a row per category: the first rows of `_rows`
        self._known: StringNumbers | _ArrowNumbers | None = None
        self._null: int | None = None  # the number of the null category, once seen
        self._mostly_new = False  # whether most rows of the last string batch were new

    def codes(self, keys: pa.Array | pa.ChunkedArray) -> np.ndarray[Any, Any]:
        """The number of each row's category; new categories are numbered and given a row.

        A dictionary column's dictionary is hashed, not its rows: a row takes its
        entry's number (entries holding the same value, in this batch or another, are
        one category; a row pointing at a null entry is null).
        """
        array = one_array(keys)
        if _is_text_column(array.type):
            numbers = self._string_rows(array)
            if array.null_count:
                numbers[numbers < 0] = self._null_number(pa.string())
            return numbers
        if pa.types.is_dictionary(array.type):
            entries = pc.dictionary_encode(_plain(array.dictionary))
            local = entries.dictionary
            indices = entries.indices.take(array.indices)
        else:
            encoded = pc.dictionary_encode(_plain(array))
            local, indices = encoded.dictionary, encoded.indices
        mapping = self._numbers(local)
        if indices.null_count:
            mapping = np.append(mapping, self._null_number(local.type))
            indices = indices.fill_null(len(local))
        return mapping[np.asarray(indices.to_numpy(zero_copy_only=False), dtype=np.intp)]

    def count(self, keys: pa.Array | pa.ChunkedArray) -> None:
        """Count one batch's non-null rows by category, in the table's first column.

        Each batch's distinct values are counted first (``value_counts``; a dictionary
        column's codes, named by its dictionary), so only they are looked up.
        """
        array = one_array(keys)
        if pa.types.is_dictionary(array.type):
            counted = pc.value_counts(array.indices.drop_null())
            values = _plain(array.dictionary).take(counted.field("values"))
            # entries may hold one value twice, or a null (its rows are null)
            encoded = pc.dictionary_encode(values)
            numbers = self._numbers(encoded.dictionary)
            mapping = np.append(numbers, -1)
            entries = encoded.indices.fill_null(len(numbers))
            where = mapping[np.asarray(entries.to_numpy(zero_copy_only=False), dtype=np.intp)]
        elif _is_text_column(array.type):
            numbers = self._string_rows(array)
            counted_rows = np.bincount(numbers + 1, minlength=len(self.table) + 1)[1:]
            self.table[:, 0] += counted_rows
            return
        else:
            counted = pc.value_counts(_plain(array).drop_null())
            where = self._numbers(counted.field("values"))
        n = np.asarray(counted.field("counts").to_numpy(zero_copy_only=False), dtype=np.float64)
        kept = where >= 0
        np.add.at(self.table[:, 0], where[kept], n[kept])

    def _string_rows(self, array: pa.Array) -> np.ndarray[Any, Any]:
        """The number of each row's string (-1: null); new strings are numbered.

        Once some strings are known, every core looks the rows up among them first
        (`StringNumbers.probe`) and only the rows not found are numbered
        (`string_codes` of those rows, in row order): a later batch mostly repeats
        earlier categories. While over half of the last batch's rows were new, the
        batch goes to `string_codes` whole.
        """
        plain = _plain(gather_views(array))
        known = self._known
        before = 0 if known is None else len(known)
        if isinstance(known, StringNumbers) and before and not self._mostly_new:
            offsets, data = string_buffers(plain)
            numbers = np.empty(len(plain), dtype=np.int64)
            known.probe(read_only(offsets), read_only(data), _validity(plain), numbers)
            missing = np.flatnonzero(numbers == -1)
            if len(missing):
                local, rows = _string_distinct(plain.take(pa.array(missing)))
                numbers[missing] = self._numbers(local)[rows]
            numbers[numbers == -2] = -1  # null
            new_rows = len(missing)
        else:
            local, rows = _string_distinct(plain)
            numbers = np.append(self._numbers(local), -1)[rows]
            # a first batch's rows are all new: it tells nothing of the next
            new_rows = int(np.count_nonzero(numbers >= before)) if before else 0
        self._mostly_new = 2 * new_rows > len(plain)
        return numbers

    def _null_number(self, value_type: pa.DataType) -> int:
        """The null category's number (given a row of the table when first seen)."""
        if self._null is None:
            self._null = self._known_values(value_type).add_null()
            self._grow()
        return self._null

    def _numbers(self, local: pa.Array) -> np.ndarray[Any, Any]:
        """The numbers of ``local``'s values (distinct, not null); new ones are numbered."""
        mapping = self._known_values(local.type).find(local)
        self._grow()
        return mapping

    def _known_values(self, value_type: pa.DataType) -> StringNumbers | _ArrowNumbers:
        """The categories seen so far, kept as the first batch's type suits."""
        if self._known is None:
            self._known = (
                StringNumbers() if _is_plain_string(value_type) else _ArrowNumbers(value_type)
            )
        return self._known

    def _grow(self) -> None:
        """Give each category numbered since the last call a row of zeros."""
        n = 0 if self._known is None else len(self._known)
        if n > len(self._rows):  # room for half as many again: a batch copies no table
            rows = np.zeros((max(n, len(self._rows) * 3 // 2), self._rows.shape[1]))
            rows[: len(self.table)] = self.table
            self._rows = rows
        self.table = self._rows[:n]

    def sorted(self, value_type: pa.DataType) -> tuple[pa.Array, np.ndarray[Any, Any]]:
        """The categories in ascending order, null last, and their rows of ``table``."""
        values, order = self.order(value_type)
        return values, self.table[order]

    def order(self, value_type: pa.DataType) -> tuple[pa.Array, np.ndarray[Any, Any]]:
        """The categories in ascending order, null last, and their numbers (rows of ``table``)."""
        seen = None if self._known is None else self._known.values()
        values = pa.nulls(0, value_type) if seen is None else seen.cast(value_type)
        order = sort_indices(values)
        return values.take(order), order

    def counts(self, value_type: pa.DataType) -> tuple[list[Any], list[int]]:
        """The non-null categories of the rows counted (`count`), ascending, and their counts.

        Arrow sorts strings by their UTF-8 bytes, which is code-point order: the order
        of Python's ``sorted`` and of ``np.unique``. A dictionary's entry that no row
        points at is not a category.
        """
        values, table = self.sorted(value_type)
        valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        seen = valid & (table[:, 0] > 0)
        return values.filter(pa.array(seen)).to_pylist(), table[seen, 0].astype(np.int64).tolist()


def sort_indices(values: pa.Array) -> np.ndarray[Any, Any]:
    """``pc.sort_indices(values)`` (ascending, nulls last, ties in position order).

    Strings are sorted by `colbridge.io.encoder_kernels`' radix sort of their bytes:
    Arrow's comparison sort took 35 ms for 100,000 categories, a third of fitting
    a target encoding of 1e6 rows.
    """
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return np.asarray(pc.sort_indices(values), dtype=np.intp)
    order: np.ndarray[Any, Any] = _kernels()._sort_strings(*_string_bytes(values))
    if values.null_count:  # nulls last, in position order
        valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)[order]
        order = np.concatenate([order[valid], order[~valid]])
    return order.astype(np.intp, copy=False)


def add_target_rows(
    totals: CategoryTotals,
    codes: np.ndarray[Any, Any],
    fold: np.ndarray[Any, Any],
    y: np.ndarray[Any, Any],
    folds: int,
    per_fold: np.ndarray[Any, Any],
) -> None:
    """Add each row with a finite target to its category's fold in ``totals.table``.

    And to its fold's ``(rows, sum, sum of squares)`` in ``per_fold`` (``(folds, 3)``;
    with no rows, ``(0, 3)``, the folds' totals are not counted).
    The table's columns are the folds' target sums, then their row counts, then their
    sums of squares (``3 * folds`` columns); rows are added in order.
    """
    parts = 1 << max(thread_count() - 1, 0).bit_length()  # threads, to a power of 2
    _kernels()._target_sums(codes, fold, read_only(y), folds, totals.table, per_fold, parts)


def fold_columns(
    table: np.ndarray[Any, Any], order: np.ndarray[Any, Any], folds: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A target table's rows ``order`` as ``(folds, categories)`` sums, counts, squares.

    And which of those categories had a row counted (in any fold). One pass that
    gathers and transposes, on every core (``table[order]`` and three transposed
    copies took three times as long at 100,000 categories); counts become int64.
    """
    result: tuple[np.ndarray[Any, Any], ...] = _kernels()._fold_columns(
        read_only(table), order.astype(np.intp, copy=False), folds
    )
    sums, counts, squares, counted = result
    return sums, counts, squares, counted


def sort_categories(values: list[Any]) -> list[Any]:
    """Categories in ascending order (as ``np.unique`` orders them), ``repr`` order if mixed."""
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=repr)


def infrequent_mask(
    counts: np.ndarray[Any, Any],
    rows: int,
    min_frequency: float | None,
    max_categories: int | None,
) -> np.ndarray[Any, Any]:
    """Which categories (in sorted order, with ``counts``) are infrequent.

    scikit-learn's ``OneHotEncoder._identify_infrequent``: an integer ``min_frequency``
    is a count, a float one a fraction of ``rows``; a category is infrequent when its
    count is below it. ``max_categories`` counts the infrequent output column, so at
    most ``max_categories - 1`` categories stay frequent: the most frequent ones, and
    among equal counts the ones that sort last (a stable ascending sort by count
    marks the first ones infrequent).
    """
    counts = np.asarray(counts, dtype=np.int64)
    if min_frequency is None:
        mask = np.zeros(counts.shape[0], dtype=bool)
    elif isinstance(min_frequency, numbers.Integral) and not isinstance(min_frequency, bool):
        mask = counts < int(min_frequency)
    else:
        mask = counts < rows * float(min_frequency)
    n_features = counts.size - int(mask.sum()) + 1
    if max_categories is not None and max_categories < n_features:
        keep = max_categories - 1
        if keep == 0:
            mask[:] = True
        else:
            mask[np.argsort(counts, kind="mergesort")[:-keep]] = True
    return mask


def id_order(
    counts: list[int] | np.ndarray[Any, Any],
    rows: int,
    min_frequency: float | None,
    max_categories: int | None,
) -> np.ndarray[Any, Any]:
    """Which categories get their own id, in id order (id = position + 2): their indices.

    Most frequent first; equal counts in ascending category order (the order of
    `sort_categories`, the order ``counts`` are given in), so the vocabulary does not
    depend on the order of the rows. A category rarer than ``min_frequency`` (a count,
    or a fraction of ``rows``) is left out, and at most ``max_categories`` are kept.
    """
    count = np.asarray(counts, dtype=np.int64)
    if min_frequency is None:
        keep = np.ones(count.shape[0], dtype=bool)
    elif isinstance(min_frequency, numbers.Integral) and not isinstance(min_frequency, bool):
        keep = count >= int(min_frequency)
    else:
        keep = count >= rows * float(min_frequency)
    # stable sort by descending count keeps the ascending category order among ties
    order = np.argsort(-count, kind="mergesort")
    order = order[keep[order]]
    if max_categories is not None:
        order = order[:max_categories]
    return order


def id_vocabulary(
    categories: list[Any] | pa.Array,
    counts: list[int],
    rows: int,
    min_frequency: float | None,
    max_categories: int | None,
) -> list[Any]:
    """The categories that get their own id, in id order (`id_order`)."""
    order = id_order(counts, rows, min_frequency, max_categories)
    if isinstance(categories, (pa.Array, pa.ChunkedArray)):
        return categories.take(pa.array(order, pa.int64()))  # type: ignore[no-any-return]
    return [categories[i] for i in order]


def value_set(categories: list[Any] | pa.Array, typ: pa.DataType) -> pa.Array:
    """``categories`` as an Arrow array of ``typ`` (the plain type of a column)."""
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if pa.types.is_large_string(typ):
        typ = pa.string()
    if isinstance(categories, pa.Array):
        return categories if categories.type == typ else categories.cast(typ)
    return pa.array(categories, type=typ)


def category_array(values: list[Any]) -> pa.Array:
    """Fitted categories (as the statistics file keeps them) as an Arrow array.

    Integers above Int64's range (a UInt64 column's) are UInt64, where Arrow's own
    inference stops at Int64 and overflows.
    """
    try:
        return pa.array(values)
    except (OverflowError, pa.ArrowInvalid):
        if all(v is None or (isinstance(v, int) and v >= 0) for v in values):
            return pa.array(values, pa.uint64())
        raise


class CategoryIndex:
    """Positions of fitted categories, looked up batch after batch (`codes`).

    String categories are numbered into a `StringNumbers` on the first lookup of
    strings, whose table every core then probes with the rows' strings (one pass over
    their bytes); ``index_in`` hashed the categories again on every batch and the rows
    on one thread (33 of the 40 ms of a target encoding's transform of 1e6 rows of
    100,000 categories). Categories of other types, or rows that are not strings, are
    found by ``index_in``.
    """

    def __init__(
        self, categories: list[Any] | pa.Array, order: np.ndarray[Any, Any] | None = None
    ) -> None:
        self._given = categories
        self._order = order  # the categories are `categories[order]`, when given
        self._values: pa.Array | None = None
        self._strings: StringNumbers | None = None  # built on first use: fits need none
        self._positions: np.ndarray[Any, Any] | None = None  # of the numbers, with a null

    @property
    def categories(self) -> pa.Array:
        """The categories, as an Arrow array (made on first use: a fit needs none)."""
        if self._values is None:
            given = self._given
            values = given if isinstance(given, pa.Array) else category_array(list(given))
            if self._order is not None:
                values = values.take(pa.array(self._order, pa.int64()))
            self._values = values
        return self._values

    def _string_numbers(self) -> StringNumbers:
        if self._strings is None:
            values = self.categories
            strings = StringNumbers()
            if values.null_count:  # numbers count the others: each's position among all
                valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
                strings.find(values.filter(pa.array(valid)))
                self._positions = np.flatnonzero(valid)
            else:
                # a category given twice is found at its first position
                strings.find(values)
            self._strings = strings
        return self._strings

    def __len__(self) -> int:
        return len(self._given) if self._order is None else len(self._order)

    def codes(self, array: pa.Array | pa.ChunkedArray) -> np.ndarray[Any, Any]:
        """Position of each row's value among the categories: -1 for a value not there.

        A null row gets the position of the null among the categories when they hold
        one (null as a category of its own, as scikit-learn's encoders count it), else -2.
        """
        array = one_array(array)
        n = len(array)
        if pa.types.is_dictionary(array.type):
            dictionary = _plain(array.dictionary)
            table = self._lookup(dictionary)
            if dictionary.null_count:  # a row pointing at a null entry is null
                table[~np.asarray(dictionary.is_valid())] = -2
            indices = array.indices
            idx = np.asarray(indices.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
            out = table[idx] if n else np.zeros(0, dtype=np.int64)
            if indices.null_count:
                out[~np.asarray(indices.is_valid())] = -2
        else:
            out = self._lookup(array)
        null = self.null_position()
        if null is not None:
            out[out == -2] = null
        return out

    def _lookup(self, array: pa.Array) -> np.ndarray[Any, Any]:
        """Positions of a plain array's values: -1 not among the categories, -2 null."""
        if _is_plain_string(self.categories.type) and _is_text_column(array.type):
            return self._find(gather_views(array))
        plain = _plain(gather_views(array))  # index_in reads no views
        check_kind(self.categories.type, plain.type)
        categories, positions = self.categories, None
        if pa.types.is_integer(categories.type) and pa.types.is_integer(plain.type) \
                and categories.type != plain.type:  # fmt: skip
            # categories outside the column's type match no row (-1 in uint8 is none of
            # its values); the others are looked up in the column's type
            column_type = dtype_from_arrow(plain.type)
            assert column_type is not None  # an Arrow integer type
            lo, hi = int_range(column_type)
            keep = [v is None or lo <= v <= hi for v in categories.to_pylist()]
            if not all(keep):
                positions = np.flatnonzero(keep)
                categories = categories.filter(pa.array(keep))
        values = value_set(categories, plain.type)
        found = pc.index_in(plain, value_set=values).fill_null(-1)
        out = np.asarray(found.to_numpy(zero_copy_only=False), dtype=np.int64)
        if positions is not None:
            out[out >= 0] = positions[out[out >= 0]]
        if plain.null_count:
            out[~np.asarray(plain.is_valid())] = -2
        return out

    def _find(self, array: pa.Array) -> np.ndarray[Any, Any]:
        strings = self._string_numbers()
        offsets, data = string_buffers(array)
        out = np.empty(len(array), dtype=np.int64)
        strings.probe(read_only(offsets), read_only(data), _validity(array), out)
        if self._positions is not None:
            found = out >= 0
            out[found] = self._positions[out[found]]
        return out

    def null_position(self) -> int | None:
        """Where the categories hold the null, if they do."""
        values = self.categories
        if not values.null_count:
            return None
        return int(np.flatnonzero(~np.asarray(values.is_valid()))[0])


def _value_kind(typ: pa.DataType) -> str:
    """What a category is: ``text``, ``number`` or ``bool`` (others: the type itself)."""
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if _is_text_column(typ):
        return "text"
    if pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        return "number"
    return "bool" if pa.types.is_boolean(typ) else str(typ)


def check_kind(fitted: pa.DataType, given: pa.DataType) -> None:
    """Refuse a column whose values are of another kind than the categories fitted.

    Strings against integer categories were matched by their text (`"1"` was the
    category 1), and integers against strings failed inside Arrow.
    """
    if pa.types.is_null(fitted) or pa.types.is_null(given):
        return  # no category, or a column of nulls only: nothing to compare
    kinds = _value_kind(fitted), _value_kind(given)
    if kinds[0] != kinds[1]:
        msg = (
            f"the categories were fitted on {kinds[0]} values ({fitted}) but the column "
            f"holds {kinds[1]} values ({given}); cast it to the type it was fitted on"
        )
        raise UnsupportedTypeError(msg)


def _is_text_column(typ: pa.DataType) -> bool:
    """Rows `CategoryIndex` probes its strings with (views gathered first)."""
    return bool(_is_plain_string(typ) or pa.types.is_string_view(typ))


def scatter_one_hot(
    features: np.ndarray[Any, Any],
    code: np.ndarray[Any, Any],
    column_of: np.ndarray[Any, Any],
    unknown_column: int,
    pos: int,
) -> np.ndarray[Any, Any]:
    """Set ``features[i, pos + column_of[code[i]]] = 1`` in one pass; which rows got a 1.

    ``code`` is `codes`'s: -1 (unseen) goes to ``unknown_column`` when that is >= 0,
    -2 (null) nowhere.
    """
    mapped = np.ones(code.shape[0], dtype=np.bool_)
    _kernels()._scatter(features, mapped, code, column_of, unknown_column, pos)
    return mapped


def fnv1a64(array: pa.Array | pa.ChunkedArray) -> np.ndarray[Any, Any]:
    """64-bit FNV-1a hash of each value's UTF-8 text (integers as decimal text).

    Stable across processes, machines and versions (unlike Python's ``hash``);
    null rows hash as the empty text; the caller gives them the null id.
    """
    plain = _plain(array)
    if not (pa.types.is_string(plain.type)):
        plain = plain.cast(pa.string())
    plain = plain.fill_null("")
    result: np.ndarray[Any, Any] = _kernels()._fnv_strings(*_string_bytes(plain))
    return result


def _string_bytes(values: pa.Array) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A string array's offsets (int64, from its own offset) and UTF-8 bytes (in place)."""
    offsets, data = string_buffers(values)
    return offsets.astype(np.int64), data


def folds_of(start: int, rows: int, folds: int, seed: int) -> np.ndarray[Any, Any]:
    """Fold of rows ``start .. start + rows - 1`` (their position in the input).

    ``splitmix64(seed * 2**32 + position) % folds`` (the finaliser of Java's
    ``SplittableRandom``, with its golden-ratio increment): deterministic from the seed
    and the row's position, the same in the fitting pass and the transforming one,
    and independent of batch sizes.
    """
    first = np.uint64(((seed & 0xFFFFFFFF) << 32) + start)
    result: np.ndarray[Any, Any] = _kernels()._splitmix_folds(first, rows, np.uint64(folds))
    return result


def fold_encodings(
    sums: np.ndarray[Any, Any],
    counts: np.ndarray[Any, Any],
    sumsq: np.ndarray[Any, Any],
    ys: np.ndarray[Any, Any],
    smoothing: float | str,
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Target encodings fitted on all folds and on all but each one.

    ``sums``, ``counts``, ``sumsq``: ``(folds, categories)`` target sums, row counts and
    sums of squares; ``ys``: ``(folds, 3)`` rows, sum and sum of squares of the target
    per fold. Returns ``full`` (``categories + 1``: each category's encoding fitted on
    every fold, then the unseen value's, the target mean) and ``per_fold`` (``(folds,
    categories + 1)``: the same fitted on the other folds only, so that a training
    row never sees its own label). A float ``smoothing`` m gives ``(sum + m * mean) /
    (count + m)``; ``"auto"`` gives scikit-learn's empirical-Bayes blend ``λ *
    cat_mean + (1 - λ) * mean`` with ``λ = var * n / (var * n + cat_var)`` (population
    variances). A category with no fitting rows gets the mean. One pass
    (`colbridge.io.encoder_kernels`), each category's totals over the folds made once.
    """
    auto = smoothing == "auto"
    result: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] = _kernels()._fold_encodings(
        np.ascontiguousarray(sums, dtype=np.float64),
        np.ascontiguousarray(counts, dtype=np.float64),
        np.ascontiguousarray(sumsq, dtype=np.float64),
        np.ascontiguousarray(ys, dtype=np.float64),
        0.0 if auto else float(smoothing),
        auto,
    )
    return result


def linear_quantiles(values: np.ndarray[Any, Any], qs: list[float]) -> list[float | None]:
    """Quantiles of the finite ``values`` as ``np.percentile``'s default (linear) method does.

    ``values``: float64 numbers; NaN and the infinities are left out, and with no
    finite value every quantile is None. The order
    statistics the quantiles interpolate are selected by the radix select of
    `colbridge.io.encoder_kernels` (two passes over the values, split among the
    threads, and a partition of a small remainder; a ``np.partition`` of 1e6 values at
    the three quartiles took 4x as long on one thread); the interpolation is NumPy's
    (``a + (b - a) * t``, from ``b`` when ``t >= 0.5``), so the results are the same.
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    kernels = _kernels()
    hists = kernels.top_histograms(values)
    n = int(hists.sum())
    if n == 0 or not qs:
        return [None] * len(qs)
    positions = [q * (n - 1) for q in qs]
    below = [int(np.floor(p)) for p in positions]
    ranks = np.array(sorted({k for b in below for k in (b, min(b + 1, n - 1))}), dtype=np.int64)
    found = kernels._order_statistics(values, ranks, hists)
    at = dict(zip(ranks.tolist(), found.tolist(), strict=True))
    out = []
    for p, b in zip(positions, below, strict=True):
        lo, hi = at[b], at[min(b + 1, n - 1)]
        t = p - b
        out.append(hi - (hi - lo) * (1 - t) if t >= 0.5 else lo + (hi - lo) * t)
    return out


def quantile_edges(values: np.ndarray[Any, Any], bins: int) -> list[float]:
    """Bin edges of ``KBinsDiscretizer(strategy="quantile")`` (scikit-learn ≥ 1.7 default).

    ``np.percentile(values, linspace(0, 100, bins + 1), method="averaged_inverted_cdf")``,
    then edges closer than 1e-8 to the previous one are dropped (fewer bins).
    """
    if values.size == 0:
        return []
    edges = np.percentile(values, np.linspace(0, 100, bins + 1), method="averaged_inverted_cdf")
    mask = np.ediff1d(edges, to_begin=np.inf) > 1e-8
    return [float(e) for e in edges[mask]]
