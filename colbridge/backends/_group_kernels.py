"""Compiled helpers of the factorize pass and of group order statistics (numba, on disk).

Stage: backends. Imported on first use by `colbridge.backends.groups`, which
describes them; they are hand-written, not generated: they do not depend on a plan.
A *code* is ``values[i] - lo`` (``null_code`` where ``valid[i]`` is false; an
empty ``valid`` means no nulls), an integer in ``[0, span)``.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

__all__ = [
    "bounds", "edge_rows", "first_ranks", "group_products", "group_select", "rank_packed",
    "rank_runs", "renumber", "same_strings",
]  # fmt: skip


@numba.njit(cache=True, nogil=True, parallel=True)
def bounds(values: Any, valid: Any, parts: int) -> Any:
    """The smallest and largest of the values where ``valid`` holds (empty: every row).

    ``parts`` ranges of rows, one per thread; returns ``(lo, hi, found)``, ``found``
    false where no value is valid. Branch-free within a range (a null row reads as the
    range's first valid value), so the loop vectorises, 4- and 8-byte integers too
    (the compiler takes the test of ``nulls`` out of the loop: 1e7 int64 keys without
    nulls in 4 ms on 2 threads, where eight running extremes by hand took 7-10 ms).
    """
    n = values.shape[0]
    nulls = valid.shape[0] > 0
    los = np.zeros(parts, dtype=values.dtype)
    his = np.zeros(parts, dtype=values.dtype)
    found = np.zeros(parts, dtype=np.bool_)
    for p in numba.prange(parts):
        a, b = n * p // parts, n * (p + 1) // parts
        first = a
        if nulls:
            while first < b and not valid[first]:
                first += 1
        if first >= b:
            continue
        lo = hi = values[first]
        for i in range(first + 1, b):
            v = values[i] if not nulls or valid[i] else lo
            lo = min(lo, v)
            hi = max(hi, v)
        los[p], his[p], found[p] = lo, hi, True
    if not found.any():
        return values.dtype.type(0), values.dtype.type(0), False
    return los[found].min(), his[found].max(), True


@numba.njit(cache=True, nogil=True)
def first_ranks(values: Any, lo: Any, valid: Any, null_code: int, span: int,
                reachable: int) -> Any:  # fmt: skip
    """Each code's rank in order of first appearance, and each rank's first row.

    One sequential pass (ids must follow row order): ``rank[code]`` is -1 for codes
    that do not occur; returns ``(rank, first_rows, count)``. The pass stops once
    ``reachable`` codes (all that can occur) have been seen: with a few keys over
    many rows, that is within the first rows.
    """
    rank = np.full(span, -1, dtype=np.int32)
    first = np.empty(min(span, values.shape[0]), dtype=np.int64)
    count = 0
    nulls = valid.shape[0] > 0
    for i in range(values.shape[0]):
        c = np.int64(values[i] - lo)
        if nulls and not valid[i]:
            c = np.int64(null_code)
        if rank[c] < 0:
            rank[c] = count
            first[count] = i
            count += 1
            if count == reachable:
                break
    return rank, first[:count], count


@numba.njit(cache=True, nogil=True, parallel=True)
def renumber(values: Any, lo: Any, valid: Any, null_code: int, rank: Any, out: Any) -> None:
    """``out[i] = rank[code of row i]`` on every core."""
    nulls = valid.shape[0] > 0
    for i in numba.prange(values.shape[0]):
        c = np.int64(values[i] - lo)
        if nulls and not valid[i]:
            c = np.int64(null_code)
        out[i] = rank[c]


@numba.njit(cache=True, nogil=True, parallel=True)
def take_rows(values: Any, order: Any, out: Any) -> None:
    """``out[p] = values[order[p]]``: rows taken in a group order, on every core."""
    for p in numba.prange(order.shape[0]):
        out[p] = values[order[p]]


@numba.njit(cache=True, nogil=True, parallel=True)
def put_rows(values: Any, valid: Any, order: Any, out: Any, out_valid: Any) -> None:
    """``out[order[p]] = values[p]`` and the same of the flags: `take_rows` undone."""
    for p in numba.prange(order.shape[0]):
        i = order[p]
        out[i] = values[p]
        out_valid[i] = valid[p]


@numba.njit(cache=True, nogil=True)
def edge_rows(ids: Any, keep: Any, count: int, last: bool) -> Any:  # pragma: no cover
    """Each group's first (``last``: last) row where ``keep`` holds (empty ``keep``: all)."""
    rows = np.full(count, -1, dtype=np.int64)
    n = ids.shape[0]
    for k in range(n):
        i = n - 1 - k if last else k
        if keep.shape[0] and not keep[i]:
            continue
        g = ids[i]
        if rows[g] < 0:
            rows[g] = i
    return rows


@numba.njit(cache=True, nogil=True, inline="always")
def _put_rank(out: Any, p: Any, method: int, k: int, run: int, stop: int, first: int,
              dense: int) -> None:  # fmt: skip
    """The rank of the value at sorted place ``k`` into ``out[p]``, by ``method``.

    Its run of equal values is places ``run .. stop - 1``, its group's first place
    ``first``, the run's number in the group ``dense``. ``method``: 0 ordinal, 1 min,
    2 max, 3 average, 4 dense.
    """
    if method == 0:
        out[p] = k - first + 1
    elif method == 1:
        out[p] = run - first + 1
    elif method == 2:
        out[p] = stop - first
    elif method == 3:
        out[p] = (run + stop - 1) / 2.0 - first + 1.0
    else:
        out[p] = dense


@numba.njit(cache=True, nogil=True, parallel=True)
def rank_runs(rows: Any, starts: Any, keys: Any, method: int, out: Any) -> None:
    """Each position's rank within its group, from the groups' value-ordered positions.

    Group ``g``'s positions are ``rows[starts[g]:starts[g + 1]]``, ordered by ``keys``
    (equal keys in any order). ``method``: 0 ordinal (equal keys ranked in position order), 1 min,
    2 max, 3 average, 4 dense; ``out[p]`` receives position ``p``'s rank, from 1.
    """
    for g in numba.prange(starts.shape[0] - 1):
        first, end = starts[g], starts[g + 1]
        run = first
        dense = 0
        while run < end:
            stop = run + 1
            while stop < end and keys[rows[stop]] == keys[rows[run]]:
                stop += 1
            dense += 1
            if method == 0 and stop - run > 1:
                rows[run:stop].sort()  # equal values take their ranks in row order
            for k in range(run, stop):
                _put_rank(out, rows[k], method, k, run, stop, first, dense)
            run = stop


@numba.njit(cache=True, nogil=True)
def rank_packed(packed: Any, row_bits: int, key_bits: int, method: int, out: Any) -> None:
    """`rank_runs` over sorted words ``group << (key_bits + row_bits) | key << row_bits | p``.

    Sorting the words put each group's positions ``p`` in key order, equal keys in
    position order, so the ranks are read in one sequential pass.
    """
    row_mask = (np.int64(1) << row_bits) - 1
    n = packed.shape[0]
    first = 0
    run = 0
    dense = 0
    while run < n:
        value = packed[run] >> row_bits  # group and key
        if run == 0 or (value >> key_bits) != (packed[run - 1] >> (row_bits + key_bits)):
            first = run
            dense = 0
        stop = run + 1
        while stop < n and (packed[stop] >> row_bits) == value:
            stop += 1
        dense += 1
        for k in range(run, stop):
            _put_rank(out, packed[k] & row_mask, method, k, run, stop, first, dense)
        run = stop


@numba.njit(cache=True, nogil=True, parallel=True)
def group_select(values: Any, owners: Any, starts: Any, picks: Any, nexts: Any,
                 threads: int) -> Any:  # fmt: skip
    """Each group's ``picks[g]``-th least value and, where ``nexts[g]``, the one after it.

    Values are ordered with NaN above every number; ``owners[i]`` is value ``i``'s group,
    ``starts`` the groups' offsets in a group-by-group copy of the values (a counting
    sort), ``picks[g] < 0`` a group with no values (its answers are left at 0). Each
    group is a quickselect on its own run, groups spread over every core
    (``threads``: numba's thread count, read by the caller: read here, it would keep
    the kernel out of the disk cache). Returns ``(lower, upper)``.
    """
    count = picks.shape[0]
    n = values.shape[0]
    run = np.empty(n, dtype=np.float64)
    # the counting sort on every core: each thread's rows counted per group, then placed
    # after the earlier threads' rows of the group (1e6 rows, 1,000 groups: 14 -> 8 ms)
    parts = max(min(threads, n // 65536), 1)
    size = (n + parts - 1) // parts
    fill = np.zeros((parts, count), dtype=np.int64)
    for part in numba.prange(parts):
        for i in range(part * size, min(n, (part + 1) * size)):
            fill[part, owners[i]] += 1
    for g in range(count):
        at = starts[g]
        for part in range(parts):
            rows = fill[part, g]
            fill[part, g] = at
            at += rows
    for part in numba.prange(parts):
        for i in range(part * size, min(n, (part + 1) * size)):
            g = owners[i]
            run[fill[part, g]] = values[i]
            fill[part, g] += 1
    lower = np.zeros(count, dtype=np.float64)
    upper = np.zeros(count, dtype=np.float64)
    for g in numba.prange(count):
        if picks[g] < 0:
            continue
        lo, hi = starts[g], starts[g + 1]
        numbers = hi  # NaN to the end of the run: the select compares numbers only
        i = lo
        while i < numbers:
            if np.isnan(run[i]):
                numbers -= 1
                run[i], run[numbers] = run[numbers], run[i]
            else:
                i += 1
        k = lo + picks[g]
        if k >= numbers:
            lower[g] = np.nan
            upper[g] = np.nan
            continue
        _select(run, lo, numbers, k)
        lower[g] = run[k]
        if nexts[g]:
            if k + 1 < numbers:
                least = run[k + 1]
                for j in range(k + 2, numbers):
                    least = min(least, run[j])
                upper[g] = least
            else:
                upper[g] = np.nan if k + 1 < hi else run[k]
    return lower, upper


@numba.njit(cache=True, nogil=True)
def _select(a: Any, lo: int, hi: int, k: int) -> None:
    """Put the value of rank ``k`` of ``a[lo:hi]`` (no NaN) at ``a[k]``, lesser ones before.

    A three-way quickselect with median-of-three pivots; the greater values end up
    after ``k``, in no order; a run that resists 64 rounds is sorted.
    """
    rounds = 0
    while hi - lo > 16:
        rounds += 1
        if rounds > 64:
            a[lo:hi].sort()
            return
        x, y, z = a[lo], a[(lo + hi) // 2], a[hi - 1]
        pivot = max(min(x, y), min(max(x, y), z))
        less, i, more = lo, lo, hi
        while i < more:
            v = a[i]
            if v < pivot:
                a[i], a[less] = a[less], v
                less += 1
                i += 1
            elif v > pivot:
                more -= 1
                a[i], a[more] = a[more], v
            else:
                i += 1
        if k < less:
            hi = less
        elif k >= more:
            lo = more
        else:
            return
    a[lo:hi].sort()


@numba.njit(cache=True, nogil=True)
def group_products(values: Any, take: Any, ids: Any, out: Any) -> None:
    """``out[ids[i]] *= values[i]`` where ``take[i]``, in row order (integers wrap)."""
    for i in range(values.shape[0]):
        if take[i]:
            out[ids[i]] *= values[i]


# -- strings: first-appearance codes by hashing -------------------------------------------
# Rows are hashed on every core, sorted by the top bits of their hash into _PARTS
# partitions (a counting sort, so each partition's rows stay in row order), and each
# partition numbers its distinct strings in its own hash table, again on every core.
# Which of a partition's values came first is known, so a pass over the first rows of
# all values in row order gives the codes in order of first appearance, whatever the
# partitioning and the number of threads.
#
# Bytes are read eight at a time as two aligned words (`_load`), which needs a word
# after the last one a row touches: rows ``0 .. safe-1`` read the column's own bytes,
# the last few rows a zero-padded copy of theirs (``tail_offsets``, ``tail_words``).
# Each pass runs the two sets of rows as two loops: one loop choosing its source per
# row ran eight times slower (numba kept the choice inside the hashing loop).

_PART_BITS = 4
_PARTS = 1 << _PART_BITS
_MUL = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, nogil=True, inline="always")
def _load(words: Any, pos: Any) -> Any:
    """The eight bytes from byte ``pos`` as one little-endian word (two aligned loads)."""
    a = np.int64(pos) >> np.int64(3)
    shift = np.uint64(pos & 7) * np.uint64(8)
    # the second shift in two steps: a shift by 64 is undefined
    return (words[a] >> shift) | ((words[a + 1] << (np.uint64(63) - shift)) << np.uint64(1))


@numba.njit(cache=True, nogil=True, inline="always")
def _head(offsets: Any, words: Any, i: Any) -> Any:
    """Row ``i``'s first eight bytes as one word (zeros past its end)."""
    start = offsets[i]
    length = np.int64(offsets[i + 1] - start)
    word = _load(words, start)
    if length >= 8:
        return word
    return word & ((np.uint64(1) << np.uint64(8 * length)) - np.uint64(1))


@numba.njit(cache=True, nogil=True, inline="always")
def _head2(offsets: Any, words: Any, i: Any) -> Any:
    """Row ``i``'s bytes 8 to 15 as one word (zeros past its end)."""
    start = offsets[i]
    length = np.int64(offsets[i + 1] - start)
    if length <= 8:
        return np.uint64(0)
    word = _load(words, start + 8)
    if length >= 16:
        return word
    return word & ((np.uint64(1) << np.uint64(8 * (length - 8))) - np.uint64(1))


# A value's key is four words: its hash, bytes 0-7, bytes 8-15 and `_meta` (its row and
# length). Values of at most 16 bytes are equal exactly when their keys (but the row)
# are; longer ones when their bytes are, too.
_ROW_BITS = np.uint64(40)
_ROW_MASK = np.uint64((1 << 40) - 1)
_LEN_CAP = (1 << 24) - 1  # longer lengths are kept as this (their bytes are compared)


@numba.njit(cache=True, nogil=True, inline="always")
def _meta(row: Any, length: Any) -> Any:
    return np.uint64(row) | (np.uint64(min(length, _LEN_CAP)) << _ROW_BITS)


@numba.njit(cache=True, nogil=True, inline="always")
def _same_key(h: Any, head: Any, head2: Any, meta: Any, h_: Any, head_: Any, head2_: Any,
              meta_: Any, offsets: Any, data: Any) -> bool:  # fmt: skip
    """Whether two values are equal, from their keys (and bytes past the sixteenth)."""
    if h != h_ or head != head_ or head2 != head2_ or (meta >> _ROW_BITS) != (meta_ >> _ROW_BITS):
        return False
    if (meta >> _ROW_BITS) <= np.uint64(16):
        return True
    return same_strings(offsets, data, np.intp(meta & _ROW_MASK), offsets, data,
                        np.intp(meta_ & _ROW_MASK))  # fmt: skip


@numba.njit(cache=True, nogil=True, inline="always")
def _hash_bytes(offsets: Any, words: Any, i: Any) -> Any:
    """A 64-bit hash of row ``i``'s bytes.

    Eight bytes at a time, then MurmurHash3's finaliser, so that the top bits (the
    partition) and the low bits (the slot) are both well mixed.
    """
    start = np.int64(offsets[i])
    stop = np.int64(offsets[i + 1])
    h = np.uint64(stop - start) * _MUL
    for pos in range(start, stop, 8):
        word = _load(words, pos)
        left = stop - pos
        if left < 8:
            word &= (np.uint64(1) << np.uint64(8 * left)) - np.uint64(1)
        h = ((h ^ word) * _MUL) ^ (h >> np.uint64(29))
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


@numba.njit(cache=True, nogil=True, inline="always")
def same_strings(offsets: Any, data: Any, i: Any, other_offsets: Any, other_data: Any,
                 j: Any) -> bool:  # fmt: skip
    """Whether string ``i`` of one array's buffers has the bytes of string ``j`` of another's."""
    a = offsets[i]
    b = other_offsets[j]
    length = offsets[i + 1] - a
    if other_offsets[j + 1] - b != length:
        return False
    for k in range(length):  # noqa: SIM110 (a loop numba compiles)
        if data[a + k] != other_data[b + k]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _number_partition(offsets: Any, data: Any, part: Any, lo: int, hi: int, local: Any,
                      firsts: Any) -> int:  # fmt: skip
    """Number the distinct strings of partition places ``lo .. hi`` from 0.

    The places hold rows in row order; place ``r`` is the key of its row,
    ``part[4r : 4r + 4]``. Each place's number goes into ``local``, each number's
    first row into ``firsts[lo + number]``.

    Open addressing, the table doubled past half full. A slot is four words side by
    side: the value's hash, bytes 0-7 and 8-15, and its number + 1 (0: an empty slot)
    beside its length; so a probe reads one cache line, and only strings longer than
    16 bytes are compared with their first row's bytes.
    """
    size = 1024
    slots = np.zeros(4 * size, dtype=np.uint64)
    mask = np.uint64(size - 1)
    count = 0
    for r in range(lo, hi):
        h = part[4 * r]
        head = part[4 * r + 1]
        head2 = part[4 * r + 2]
        meta = part[4 * r + 3]
        length = meta >> _ROW_BITS
        s = h & mask
        while True:
            at = np.intp(s) * 4
            tag = slots[at + 3]
            if tag == 0:
                slots[at] = h
                slots[at + 1] = head
                slots[at + 2] = head2
                slots[at + 3] = np.uint64(count + 1) | (length << _ROW_BITS)
                firsts[lo + count] = np.int64(meta & _ROW_MASK)
                local[r] = count
                count += 1
                if 2 * count > size:
                    size *= 2
                    mask = np.uint64(size - 1)
                    slots = _regrown(slots, size, mask)
                break
            k = np.int64(tag & _ROW_MASK) - 1
            if _same_key(h, head, head2, meta, slots[at], slots[at + 1], slots[at + 2],
                         np.uint64(firsts[lo + k]) | ((tag >> _ROW_BITS) << _ROW_BITS),
                         offsets, data):  # fmt: skip
                local[r] = k
                break
            s = (s + np.uint64(1)) & mask
    return count


@numba.njit(cache=True, nogil=True)
def _regrown(old: Any, size: Any, mask: Any) -> Any:
    """The slots of `_number_partition` re-placed by their hashes into a table of ``size``."""
    slots = np.zeros(4 * size, dtype=np.uint64)
    for t in range(0, old.shape[0], 4):
        if old[t + 3] != 0:
            s = old[t] & mask
            while slots[np.intp(s) * 4 + 3] != 0:
                s = (s + np.uint64(1)) & mask
            at = np.intp(s) * 4
            for q in range(4):
                slots[at + q] = old[t + q]
    return slots


@numba.njit(cache=True, nogil=True, inline="always")
def _hash_rows(offsets: Any, words: Any, base: int, lo: int, hi: int, valid: Any,
               hashes: Any, hist: Any, shift: Any) -> None:  # fmt: skip
    nulls = valid.shape[0] > 0
    for i in range(lo, hi):
        if nulls and not valid[i]:
            continue
        h = _hash_bytes(offsets, words, i - base)
        hashes[i] = h
        hist[h >> shift] += 1


@numba.njit(cache=True, nogil=True, inline="always")
def _scatter_rows(offsets: Any, words: Any, base: int, lo: int, hi: int, valid: Any,
                  hashes: Any, at: Any, part: Any, shift: Any) -> None:  # fmt: skip
    nulls = valid.shape[0] > 0
    for i in range(lo, hi):
        if nulls and not valid[i]:
            continue
        h = hashes[i]
        p = h >> shift
        r = at[p]
        part[4 * r] = h
        part[4 * r + 1] = _head(offsets, words, i - base)
        part[4 * r + 2] = _head2(offsets, words, i - base)
        part[4 * r + 3] = _meta(i, offsets[i - base + 1] - offsets[i - base])
        at[p] = r + 1


@numba.njit(cache=True, nogil=True, parallel=True)
def string_codes(offsets: Any, data: Any, words: Any, tail_offsets: Any, tail_words: Any,
                 safe: int, valid: Any, chunks: int, work: Any, codes: Any) -> Any:  # fmt: skip
    """First-appearance codes of a string column: ``(codes, first_rows)``.

    ``codes[i]`` is the number of row ``i``'s string among the distinct strings in
    order of first appearance, -1 for a null row (``valid[i]`` false; an empty
    ``valid`` means no nulls); ``first_rows[c]`` is code ``c``'s first row. Strings
    are equal when their bytes are. Rows from ``safe`` on are read from the tail copy.
    Every pass reads and writes its arrays in order (the partitions' copies of the
    rows' keys are what makes the numbering pass sequential: reading them through the
    row numbers missed the cache at each row). ``work`` (``8 * n`` words) and
    ``codes`` (``n``) come from the caller, from memory whose pages are mapped already:
    fresh pages for them took as long as the work.
    """
    n = offsets.shape[0] - 1
    nulls = valid.shape[0] > 0
    per = (n + chunks - 1) // chunks
    hashes = work[:n]
    hist = np.zeros((chunks, _PARTS), dtype=np.int64)
    shift = np.uint64(64 - _PART_BITS)
    for c in numba.prange(chunks):
        lo = c * per
        hi = min(n, lo + per)
        _hash_rows(offsets, words, 0, lo, min(hi, safe), valid, hashes, hist[c], shift)
        _hash_rows(tail_offsets, tail_words, safe, max(lo, safe), hi, valid, hashes, hist[c],
                   shift)  # fmt: skip
    # partition-major places: partition p's rows of chunk c start at place[c, p]
    place = np.empty((chunks, _PARTS), dtype=np.int64)
    bounds = np.empty(_PARTS + 1, dtype=np.int64)
    total = 0
    for p in range(_PARTS):
        bounds[p] = total
        for c in range(chunks):
            place[c, p] = total
            total += hist[c, p]
    bounds[_PARTS] = total
    # each row's key (hash, first sixteen bytes, row and length) side by side in its place
    # (one stream of writes per partition: four arrays of them ran at a quarter speed)
    part = work[n : n + 4 * total]
    for c in numba.prange(chunks):
        lo = c * per
        hi = min(n, lo + per)
        at = place[c].copy()
        _scatter_rows(offsets, words, 0, lo, min(hi, safe), valid, hashes, at, part, shift)
        _scatter_rows(tail_offsets, tail_words, safe, max(lo, safe), hi, valid, hashes, at,
                      part, shift)  # fmt: skip
    local = work[5 * n : 5 * n + total].view(np.int64)
    firsts = work[6 * n : 6 * n + total].view(np.int64)
    distinct = np.zeros(_PARTS, dtype=np.int64)
    for p in numba.prange(_PARTS):
        distinct[p] = _number_partition(offsets, data, part, bounds[p], bounds[p + 1], local,
                                        firsts)  # fmt: skip
    # each value's first row knows its place (+1; 0: not a first row)
    first_place = codes
    for i in numba.prange(n):
        first_place[i] = 0
    for p in numba.prange(_PARTS):
        for k in range(distinct[p]):
            first_place[firsts[bounds[p] + k]] = bounds[p] + k + 1
    # the codes: values numbered in the order of their first rows, chunk by chunk
    starts = np.zeros(chunks + 1, dtype=np.int64)
    for c in numba.prange(chunks):
        found = 0
        for i in range(c * per, min(n, (c + 1) * per)):
            if first_place[i]:
                found += 1
        starts[c + 1] = found
    for c in range(chunks):
        starts[c + 1] += starts[c]
    number = work[7 * n : 7 * n + total].view(np.int64)  # by a value's first place: its code
    first_rows = np.empty(starts[chunks], dtype=np.int64)
    for c in numba.prange(chunks):
        code = starts[c]
        for i in range(c * per, min(n, (c + 1) * per)):
            if first_place[i]:
                number[first_place[i] - 1] = code
                first_rows[code] = i
                code += 1
    # each row's code, walking the partitions' places as the scatter above did
    # first_place is codes: every row is written once, after its own read
    for c in numba.prange(chunks):
        at = place[c].copy()
        for i in range(c * per, min(n, (c + 1) * per)):
            if nulls and not valid[i]:
                codes[i] = -1
                continue
            p = hashes[i] >> shift
            r = at[p]
            codes[i] = number[bounds[p] + local[r]]
            at[p] = r + 1
    return codes, first_rows


# Few distinct strings (a carrier, a country): a table per chunk of rows, small enough
# for the first-level cache, then the chunks' values numbered in chunk order. It gives
# up once a chunk has more than ``cap`` values, for `string_codes`.


@numba.njit(cache=True, nogil=True, inline="always")
def _number_rows(offsets: Any, words: Any, base: int, lo: int, hi: int, all_offsets: Any,
                 data: Any, valid: Any, cap: int, slots: Any, seen: Any, count: int,
                 codes: Any) -> int:  # fmt: skip
    """Number the distinct strings of rows ``lo .. hi`` into ``codes`` (-1: null).

    Numbers go on after the ``count`` values whose keys ``seen`` holds; rows are read
    from ``offsets``/``words`` as row ``i - base``. Returns the new count, or -1 once
    it would pass ``cap``.
    """
    nulls = valid.shape[0] > 0
    mask = np.uint64(slots.shape[0] - 1)
    for i in range(lo, hi):
        if nulls and not valid[i]:
            codes[i] = -1
            continue
        j = i - base
        h = _hash_bytes(offsets, words, j)
        head = _head(offsets, words, j)
        head2 = _head2(offsets, words, j)
        meta = _meta(i, offsets[j + 1] - offsets[j])
        s = h & mask
        while True:
            k = slots[s] - 1
            if k < 0:
                if count == cap:
                    return -1
                slots[s] = count + 1
                seen[count, 0] = h
                seen[count, 1] = head
                seen[count, 2] = head2
                seen[count, 3] = meta
                codes[i] = count
                count += 1
                break
            if _same_key(h, head, head2, meta, seen[k, 0], seen[k, 1], seen[k, 2], seen[k, 3],
                         all_offsets, data):  # fmt: skip
                codes[i] = k
                break
            s = (s + np.uint64(1)) & mask
    return count


@numba.njit(cache=True, nogil=True, parallel=True)
def few_string_codes(offsets: Any, data: Any, words: Any, tail_offsets: Any, tail_words: Any,
                     safe: int, valid: Any, chunks: int, cap: int, codes: Any) -> Any:  # fmt: skip
    """`string_codes` for columns of few values: ``(done, codes, first_rows)``.

    ``done`` is false (and the rest unfinished) when a chunk of the rows holds more
    than ``cap`` distinct strings. ``codes`` (``n``) comes from the caller.
    """
    n = offsets.shape[0] - 1
    per = (n + chunks - 1) // chunks
    seen = np.empty((chunks, cap, 4), dtype=np.uint64)
    counts = np.zeros(chunks, dtype=np.int64)
    size = 16
    while size < 2 * cap:
        size *= 2
    for c in numba.prange(chunks):
        lo = c * per
        hi = min(n, lo + per)
        slots = np.zeros(size, dtype=np.int64)  # number + 1 (0: empty)
        count = _number_rows(offsets, words, 0, lo, min(hi, safe), offsets, data, valid, cap,
                             slots, seen[c], 0, codes)  # fmt: skip
        if count >= 0:
            count = _number_rows(tail_offsets, tail_words, safe, max(lo, safe), hi, offsets,
                                 data, valid, cap, slots, seen[c], count, codes)  # fmt: skip
        counts[c] = count
    for c in range(chunks):
        if counts[c] < 0:
            return False, codes, codes[:0]
    # the chunks' values in chunk order, each chunk's in its own order: first appearance
    total = 0
    for c in range(chunks):
        total += counts[c]
    size = 16
    while size < 2 * total:
        size *= 2
    mask = np.uint64(size - 1)
    slots = np.zeros(size, dtype=np.int64)  # (chunk * cap + k) + 1 of the value's first
    numbers = np.zeros(size, dtype=np.int64)
    first_rows = np.empty(total, dtype=np.int64)
    global_of = np.empty((chunks, cap), dtype=np.int64)
    count = 0
    for c in range(chunks):
        for k in range(counts[c]):
            h = seen[c, k, 0]
            s = h & mask
            while True:
                at = slots[s] - 1
                if at < 0:
                    slots[s] = c * cap + k + 1
                    numbers[s] = count
                    first_rows[count] = np.int64(seen[c, k, 3] & _ROW_MASK)
                    global_of[c, k] = count
                    count += 1
                    break
                oc = at // cap
                ok = at % cap
                if _same_key(h, seen[c, k, 1], seen[c, k, 2], seen[c, k, 3], seen[oc, ok, 0],
                             seen[oc, ok, 1], seen[oc, ok, 2], seen[oc, ok, 3], offsets,
                             data):  # fmt: skip
                    global_of[c, k] = numbers[s]
                    break
                s = (s + np.uint64(1)) & mask
    for c in numba.prange(chunks):
        for i in range(c * per, min(n, (c + 1) * per)):
            k = codes[i]
            if k >= 0:
                codes[i] = global_of[c, k]
    return True, codes, first_rows[:count]
