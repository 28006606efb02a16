"""Hand-written numba kernels for `features.py`: the roofline of each fit and transform.

Each is the plain fused loop an engineer would write for one case, with nothing
colbridge has to handle and these do not (nulls, batches, dtypes, option checks):

* strings are hashed (FNV-1a over their UTF-8 bytes) on every core;
* a fit groups the rows by string in open-addressing tables, one per thread, each
  thread keeping the strings whose hash falls to it (so no two threads share a
  category), and counts each category's rows and sums its target in row order;
  the tables are sized for the data's category count, which a real fit does not
  know in advance (an advantage of the roofline's);
* a transform looks each row's string up in a table of the fitted categories
  (built once per fit, as colbridge builds its lookup once per fitted spec), a
  block of 32 rows hashed before their probes so that their table misses overlap,
  then writes each row's value, or its one-hot column;
* matrices are allocated from Arrow's memory pool, whose pages are recycled;
* scaling: one parallel pass for the sums and the extremes, one for the squared
  deviations, and a radix select for the three quantiles (a parallel histogram of
  the top 16 bits of each value's order key, then NumPy's ``partition`` of the
  few values in the buckets that hold the wanted ranks).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from numba import get_num_threads, njit, prange

_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


def thread_count() -> int:
    """The threads numba's parallel loops run on (the hand kernels' tables: one each)."""
    return int(get_num_threads())


def string_buffers(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A string column's offsets (one per row and one past the end) and bytes, in place."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    width = np.int64 if column.type == pa.large_string() else np.int32
    _, offsets_buf, data_buf = column.buffers()
    offsets = np.frombuffer(offsets_buf, width)[column.offset : column.offset + len(column) + 1]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return offsets, data


def table_bits(categories: int) -> int:
    """log2 of a table at most half full with ``categories`` strings."""
    return max(4, int(2 * max(categories, 1) - 1).bit_length())


@njit(cache=True, inline="always")
def _fnv(data, start, stop):  # type: ignore[no-untyped-def]
    h = _FNV_OFFSET
    for j in range(start, stop):
        h = (h ^ np.uint64(data[j])) * _FNV_PRIME
    return h


@njit(cache=True, inline="always")
def _same(a_data, a0, a1, b_data, b0, b1):  # type: ignore[no-untyped-def]
    if a1 - a0 != b1 - b0:
        return False
    for j in range(a1 - a0):  # noqa: SIM110 (numba compiles no generator in all())
        if a_data[a0 + j] != b_data[b0 + j]:
            return False
    return True


@njit(parallel=True, cache=True)
def _hashes(offsets, data):  # type: ignore[no-untyped-def]
    out = np.empty(offsets.shape[0] - 1, np.uint64)
    for i in prange(out.shape[0]):
        out[i] = _fnv(data, offsets[i], offsets[i + 1])
    return out


# A table slot is four words: the string's hash, its category number + 1 (0: empty),
# its length and its first 8 bytes, so that one cache line decides a string of up to
# 8 bytes; a longer one is compared with its category's first row.


@njit(cache=True, inline="always")
def _head(data, start, stop):  # type: ignore[no-untyped-def]
    word = np.uint64(0)
    for j in range(start, min(stop, start + 8)):
        word |= np.uint64(data[j]) << np.uint64(8 * (j - start))
    return word


@njit(cache=True, inline="always")
def _probe(table, h, length, head, data, start, k_offsets, k_data):  # type: ignore[no-untyped-def]
    """The slot of the string (``data[start:start + length]``), or the empty slot where
    it would go; its category's bytes start at ``k_offsets[k]`` in ``k_data``."""
    mask = np.uint64(table.shape[0] - 1)
    s = h & mask
    while True:
        k = table[s, 1]
        if k == 0:
            return s
        if table[s, 0] == h and table[s, 2] == length and table[s, 3] == head:
            if length <= 8:
                return s
            a = k_offsets[np.int64(k) - 1]
            if _same(data, start, start + length, k_data, a, a + length):
                return s
        s = (s + np.uint64(1)) & mask


@njit(cache=True, inline="always")
def _fill(table, s, h, k, length, head):  # type: ignore[no-untyped-def]
    table[s, 0] = h
    table[s, 1] = np.uint64(k + 1)
    table[s, 2] = length
    table[s, 3] = head


@njit(parallel=True, cache=True)
def _group(offsets, data, hashes, y, parts, categories, bits):  # type: ignore[no-untyped-def]
    """Each distinct string's first row, row count and target sum (rows in order), one
    table per thread; thread ``p``'s category ``k`` is ``first[p, k]`` etc. (``k <
    used[p]``). At most ``categories`` strings (the roofline knows the data)."""
    n = hashes.shape[0]
    tables = np.zeros((parts, 1 << bits, 4), np.uint64)
    first = np.empty((parts, categories), np.int64)
    starts = np.empty((parts, categories), offsets.dtype)  # where its bytes are
    count = np.zeros((parts, categories), np.int64)
    total = np.zeros((parts, categories))
    used = np.zeros(parts, np.int64)
    for p in prange(parts):
        table = tables[p]
        k_starts = starts[p]
        k_count = 0
        for i in range(n):
            h = hashes[i]
            if np.int64(h >> np.uint64(56)) % parts != p:  # the top bits pick the thread
                continue
            start = offsets[i]
            length = np.uint64(offsets[i + 1] - start)
            head = _head(data, start, offsets[i + 1])
            s = _probe(table, h, length, head, data, start, k_starts, data)
            k = np.int64(table[s, 1]) - 1
            if k < 0:
                k = k_count
                k_count += 1
                _fill(table, s, h, k, length, head)
                k_starts[k] = start
                first[p, k] = i
            count[p, k] += 1
            total[p, k] += y[i]
        used[p] = k_count
    return first, count, total, used


def group_strings(
    column: pa.ChunkedArray, y: np.ndarray | None, categories: int, parts: int
) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """The distinct strings of ``column`` (at most ``categories``; in no particular
    order), their row counts and the sums of ``y`` over their rows (zeros without ``y``)."""
    offsets, data = string_buffers(column)
    values = y if y is not None else np.zeros(len(offsets) - 1)
    hashes = _hashes(offsets, data)
    bits = table_bits(categories // parts + 1)
    first, count, total, used = _group(offsets, data, hashes, values, parts, categories, bits)
    rows = np.concatenate([first[p, : used[p]] for p in range(parts)])
    keys = column.take(pa.array(rows))
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    counts = np.concatenate([count[p, : used[p]] for p in range(parts)])
    sums = np.concatenate([total[p, : used[p]] for p in range(parts)])
    return keys, counts, sums


@njit(cache=True)
def _index(offsets, data, bits):  # type: ignore[no-untyped-def]
    """A table of strings ``k`` (distinct), laid out as `_group`'s."""
    table = np.zeros((1 << bits, 4), np.uint64)
    for k in range(offsets.shape[0] - 1):
        start = offsets[k]
        h = _fnv(data, start, offsets[k + 1])
        length = np.uint64(offsets[k + 1] - start)
        head = _head(data, start, offsets[k + 1])
        s = _probe(table, h, length, head, data, start, offsets, data)
        _fill(table, s, h, k, length, head)
    return table


@njit(cache=True, inline="always")
def _found(offsets, data, i, h, k_offsets, k_data, table):  # type: ignore[no-untyped-def]
    """Row ``i``'s category (its hash ``h``) among the table's strings, or -1."""
    start = offsets[i]
    stop = offsets[i + 1]
    s = _probe(table, h, np.uint64(stop - start), _head(data, start, stop), data, start,
               k_offsets, k_data)  # fmt: skip
    return np.int64(table[s, 1]) - 1


_BLOCK = 32  # rows hashed before any of them probes: their table misses overlap


@njit(parallel=True, cache=True)
def _lookup(offsets, data, k_offsets, k_data, table, out):  # type: ignore[no-untyped-def]
    """Each row's category (-1: none), blocks of rows on every core."""
    n = out.shape[0]
    for b in prange((n + _BLOCK - 1) // _BLOCK):
        lo = b * _BLOCK
        hi = min(lo + _BLOCK, n)
        hashes = np.empty(_BLOCK, np.uint64)
        for i in range(lo, hi):
            hashes[i - lo] = _fnv(data, offsets[i], offsets[i + 1])
        for i in range(lo, hi):
            out[i] = _found(offsets, data, i, hashes[i - lo], k_offsets, k_data, table)


@njit(parallel=True, cache=True)
def _gather(found, values, default, out):  # type: ignore[no-untyped-def]
    for i in prange(out.shape[0]):
        k = found[i]
        out[i, 0] = values[k] if k >= 0 else default


@njit(parallel=True, cache=True)
def _set_ones(found, other, out):  # type: ignore[no-untyped-def]
    for i in prange(out.shape[0]):
        k = found[i] if found[i] >= 0 else other
        if k >= 0:
            out[i, k] = 1.0


def pooled(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised array in Arrow's memory pool, whose pages are recycled (a fresh
    NumPy array of megabytes faults each page in as it is first written)."""
    dt = np.dtype(dtype)
    size = int(np.prod(shape)) * dt.itemsize
    return np.frombuffer(pa.allocate_buffer(max(size, 1)), dt, int(np.prod(shape))).reshape(shape)


class StringIndex:
    """Fitted categories (an Arrow string array) as a hash table, with a value each."""

    def __init__(self, keys: pa.Array, values: np.ndarray) -> None:
        self.offsets, self.data = string_buffers(keys)
        self.table = _index(self.offsets, self.data, table_bits(len(keys)))
        self.values = values

    def _found(self, column: pa.ChunkedArray) -> np.ndarray:
        offsets, data = string_buffers(column)
        found = pooled((len(offsets) - 1,), np.int64)
        _lookup(offsets, data, self.offsets, self.data, self.table, found)
        return found

    def gather(self, column: pa.ChunkedArray, default: float) -> np.ndarray:
        """Each row's value as a float32 column; ``default`` where its string is unknown."""
        found = self._found(column)
        out = pooled((len(found), 1), np.float32)
        _gather(found, self.values, np.float32(default), out)
        return out

    def one_hot(self, column: pa.ChunkedArray, width: int, other: int) -> np.ndarray:
        """A float32 one-hot block; an unknown string sets column ``other`` (-1: none)."""
        found = self._found(column)
        out = pooled((len(found), width), np.float32)
        out.fill(0.0)
        _set_ones(found, other, out)
        return out


@njit(parallel=True, cache=True)
def _sums(x1, x2):  # type: ignore[no-untyped-def]
    total = 0.0
    lo = np.inf
    hi = -np.inf
    for i in prange(x1.shape[0]):
        total += x1[i]
        lo = min(lo, x2[i])
        hi = max(hi, x2[i])
    return total, lo, hi


@njit(parallel=True, cache=True)
def _squares(x, mean):  # type: ignore[no-untyped-def]
    total = 0.0
    for i in prange(x.shape[0]):
        d = x[i] - mean
        total += d * d
    return total


@njit(cache=True, inline="always")
def _order_key(bits):  # type: ignore[no-untyped-def]
    """A float64's bits as an integer in the floats' order (finite values)."""
    if bits >> np.uint64(63):
        return ~bits
    return bits | np.uint64(1 << 63)


@njit(parallel=True, cache=True)
def _top_histogram(bits, parts):  # type: ignore[no-untyped-def]
    """Counts of the values by the top 16 bits of their order keys, one table per thread."""
    n = bits.shape[0]
    hist = np.zeros((parts, 1 << 16), np.int64)
    for p in prange(parts):
        for i in range(p * n // parts, (p + 1) * n // parts):
            hist[p, _order_key(bits[i]) >> np.uint64(48)] += 1
    return hist.sum(axis=0)


@njit(cache=True)
def _in_buckets(bits, values, wanted, size):  # type: ignore[no-untyped-def]
    """The values whose top 16 bits are a ``wanted`` bucket (``size`` of them)."""
    out = np.empty(size)
    j = 0
    for i in range(bits.shape[0]):
        if wanted[_order_key(bits[i]) >> np.uint64(48)]:
            out[j] = values[i]
            j += 1
    return out


def order_statistics(values: np.ndarray, ranks: list[int]) -> dict[int, float]:
    """The values at sorted positions ``ranks`` (a radix select: one parallel histogram
    of the top 16 bits, then a partition of the buckets that hold the ranks)."""
    bits = values.view(np.uint64)
    counts = _top_histogram(bits, thread_count())
    below = np.concatenate([[0], np.cumsum(counts)])
    buckets = sorted({int(np.searchsorted(below, r, side="right")) - 1 for r in ranks})
    wanted = np.zeros(1 << 16, np.bool_)
    wanted[buckets] = True
    held = _in_buckets(bits, values, wanted, int(counts[buckets].sum()))
    # a rank's place among the held values: the held values of lower buckets come first
    start = {b: int(counts[[c for c in buckets if c < b]].sum()) for b in buckets}
    local = {r: start[b] + r - int(below[b]) for r in ranks
             for b in [int(np.searchsorted(below, r, side="right")) - 1]}  # fmt: skip
    part = np.partition(held, sorted(set(local.values())))
    return {r: float(part[k]) for r, k in local.items()}


def scaling_stats(x1: np.ndarray, x2: np.ndarray, x3: np.ndarray) -> dict[str, float]:
    """Mean and population std of ``x1``, min and max of ``x2``, and the linear 25%,
    50% and 75% quantiles of ``x3`` (the keys of the polars fit in `features.py`)."""
    n = len(x1)
    total, lo, hi = _sums(x1, x2)
    mean = total / n
    std = float(np.sqrt(_squares(x1, mean) / n))
    places = [q * (n - 1) for q in (0.25, 0.5, 0.75)]
    ranks = sorted({k for p in places for k in (int(p), min(int(p) + 1, n - 1))})
    at = order_statistics(np.ascontiguousarray(x3, dtype=np.float64), ranks)

    def quantile(p: float) -> float:  # NumPy's linear interpolation, its bits
        k = int(p)
        a, b, t = at[k], at[min(k + 1, n - 1)], p - k
        return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t

    q25, med, q75 = (quantile(p) for p in places)
    return {"m": mean, "s": std, "lo": float(lo), "hi": float(hi), "med": med, "q25": q25,
            "q75": q75}  # fmt: skip
