"""Jobs layer: the numba loops behind `colbridge.io.encoders`.

One-hot scatter, hashing, folds and per-category target sums, apart from the encoders
so that importing them (and `colbridge.io`) does not import numba;
`colbridge.io.encoders` loads this module on first use.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

__all__ = ["top_histograms"]


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _scatter(features, mapped, code, column_of, unknown_column, pos):  # type: ignore[no-untyped-def]
    for i in range(code.shape[0]):
        c = code[i]
        k = column_of[c] if c >= 0 else (unknown_column if c == -1 else -1)
        if k >= 0:
            features[i, pos + k] = 1
        else:
            mapped[i] = False


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _fnv_strings(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    prime = np.uint64(1099511628211)
    for i in range(n):
        h = np.uint64(14695981039346656037)
        for j in range(offsets[i], offsets[i + 1]):
            h = (h ^ np.uint64(data[j])) * prime
        out[i] = h
    return out


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _splitmix_folds(first: np.uint64, rows: int, folds: np.uint64) -> np.ndarray:  # type: ignore[type-arg]
    out = np.empty(rows, dtype=np.int64)
    for i in range(rows):
        x = first + np.uint64(i) + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
        out[i] = np.int64(x % folds)
    return out


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _target_sums(codes, fold, y, folds, table, per_fold):  # type: ignore[no-untyped-def]
    # rows in order; a row whose target is not finite (null, NaN) is left out
    k = np.uintp(folds)
    by_fold = per_fold.shape[0] > 0
    for i in range(codes.shape[0]):
        v = y[i]
        if not np.isfinite(v):
            continue
        c = np.uintp(codes[i])
        f = np.uintp(fold[i])
        table[c, f] += v
        table[c, k + f] += 1.0
        table[c, k + k + f] += v * v
        if by_fold:
            per_fold[f, 0] += 1.0
            per_fold[f, 1] += v
            per_fold[f, 2] += v * v


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _fold_columns(table, order, folds):  # type: ignore[no-untyped-def]
    k = order.shape[0]
    sums = np.empty((folds, k))
    counts = np.empty((folds, k), dtype=np.int64)
    squares = np.empty((folds, k))
    for j in range(k):
        r = order[j]
        for f in range(folds):
            sums[f, j] = table[r, f]
            counts[f, j] = np.int64(table[r, folds + f])  # whole numbers, held exactly
            squares[f, j] = table[r, 2 * folds + f]
    return sums, counts, squares


# -- exact order statistics (the robust scaler's quantiles) ------------------------------
# A float64's bits, with the sign bit flipped for numbers >= +0.0 and every bit flipped
# for negative ones, order as the numbers do (-0.0 just below +0.0): ranks are found
# by their top 16 bits first (one histogram pass and one pass that gathers the few
# buckets holding the wanted ranks, both over the values themselves and split among
# the threads), then the next 16 bits inside a bucket still larger than _SMALL, and a
# partition of what is left.

_SIGN = np.uint64(0x8000000000000000)
_SMALL = 1 << 15


@numba.njit(cache=True, nogil=True, inline="always")
def _key(bits):  # type: ignore[no-untyped-def]
    return bits ^ ((np.uint64(0) - (bits >> np.uint64(63))) | _SIGN)


@numba.njit(cache=True, nogil=True)
def _digit_buckets(keys, shift, ranks):  # type: ignore[no-untyped-def]
    # per rank (sorted): its bucket of the 16-bit digit at `shift`, and its rank inside
    hist = np.zeros(1 << 16, dtype=np.int64)
    for i in range(keys.shape[0]):
        hist[(keys[i] >> shift) & np.uint64(0xFFFF)] += 1
    bucket, within = _buckets_of(hist, ranks)
    return bucket, within, hist


@numba.njit(cache=True, nogil=True)
def _buckets_of(hist, ranks):  # type: ignore[no-untyped-def]
    # per rank (sorted): the bucket of `hist` it falls in, and its rank inside
    bucket = np.empty(ranks.shape[0], dtype=np.int64)
    within = np.empty(ranks.shape[0], dtype=np.int64)
    below = 0
    j = 0
    for b in range(1 << 16):
        while j < ranks.shape[0] and ranks[j] < below + hist[b]:
            bucket[j] = b
            within[j] = ranks[j] - below
            j += 1
        below += hist[b]
    return bucket, within


@numba.njit(cache=True, nogil=True)
def _gather(keys, shift, bucket, hist):  # type: ignore[no-untyped-def]
    # the keys of each distinct bucket in `bucket` (sorted), in one pass: (keys, starts)
    slot = np.full(1 << 16, -1, dtype=np.int64)
    starts = [0]
    for b in bucket:
        if slot[b] < 0:
            slot[b] = len(starts) - 1
            starts.append(starts[-1] + hist[b])
    out = np.empty(starts[-1], dtype=np.uint64)
    pos = np.array(starts[:-1], dtype=np.int64)
    for i in range(keys.shape[0]):
        s = slot[(keys[i] >> shift) & np.uint64(0xFFFF)]
        if s >= 0:
            out[pos[s]] = keys[i]
            pos[s] += 1
    return out, np.array(starts, dtype=np.int64), slot


@numba.njit(cache=True, nogil=True)
def _select(keys, ranks):  # type: ignore[no-untyped-def]
    # the keys at sorted positions `ranks` (ascending) of `keys`: digit by digit, a stack
    # of (keys, digit shift, ranks among them, their places in the result) still to
    # narrow (no recursion: numba's disk cache does not keep recursive functions)
    out = np.empty(ranks.shape[0], dtype=np.uint64)
    stack = [(keys, 48, ranks, np.arange(ranks.shape[0]))]
    while len(stack):
        keys, shift, ranks, places = stack.pop()
        bucket, within, hist = _digit_buckets(keys, np.uint64(shift), ranks)
        if hist[bucket[0]] == keys.shape[0]:  # every key in one bucket: no copy
            gathered = keys
            starts = np.array([0, keys.shape[0]], dtype=np.int64)
            slot = np.zeros(1 << 16, dtype=np.int64)
        else:
            gathered, starts, slot = _gather(keys, np.uint64(shift), bucket, hist)
        j = 0
        while j < ranks.shape[0]:
            end = j  # the ranks in this bucket share its keys
            while end < ranks.shape[0] and bucket[end] == bucket[j]:
                end += 1
            s = slot[bucket[j]]
            part = gathered[starts[s] : starts[s + 1]]
            if shift == 0:  # the last digit: the bucket's keys are all the same key
                for r in range(j, end):
                    out[places[r]] = part[0]
            elif part.shape[0] > _SMALL:
                stack.append((part, shift - 16, within[j:end], places[j:end]))
            else:
                for r in range(j, end):
                    out[places[r]] = np.partition(part, within[r])[within[r]]
            j = end
    return out


#: Chunks of at least this many values per thread in the first histogram and gather.
_PER_THREAD = 1 << 18


def top_histograms(values: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
    """Per chunk of the float64 ``values``, the count of finite values by their key's top 16 bits.

    One chunk per thread (at least `_PER_THREAD` values each), so the threads count
    apart; `_order_statistics` takes these counts.
    """
    chunks = max(1, min(numba.get_num_threads(), values.shape[0] // _PER_THREAD))
    return _top_histograms(values, chunks)  # type: ignore[no-any-return]


@numba.njit(cache=True, nogil=True, parallel=True)
def _top_histograms(values, chunks):  # type: ignore[no-untyped-def]
    # NaN and the infinities have top digits no finite value has (0x0000-0x000F,
    # 0xFFF0-0xFFFF): counted without a branch, those buckets are then emptied
    bits = values.view(np.uint64)
    n = bits.shape[0]
    size = (n + chunks - 1) // chunks
    hists = np.zeros((chunks, 1 << 16), dtype=np.int64)
    for c in prange(chunks):
        for i in range(c * size, min(n, (c + 1) * size)):
            hists[c, _key(bits[i]) >> np.uint64(48)] += 1
    hists[:, :16] = 0
    hists[:, 0xFFF0:] = 0
    return hists


@numba.njit(cache=True, nogil=True, parallel=True)
def _order_statistics(values, ranks, hists):  # type: ignore[no-untyped-def]
    # the finite values at sorted positions `ranks` (ascending) of `values` (float64),
    # `hists` their `_top_histograms`: the keys of the buckets holding the ranks are
    # gathered by the chunks' threads, each into its own place, then narrowed by
    # `_select`
    bits = values.view(np.uint64)
    n = bits.shape[0]
    chunks = hists.shape[0]
    size = (n + chunks - 1) // chunks
    hist = hists.sum(axis=0)
    bucket, within = _buckets_of(hist, ranks)
    slot = np.full(1 << 16, -1, dtype=np.int64)
    wanted = [bucket[0]]
    for b in bucket:
        if b != wanted[-1]:
            wanted.append(b)
    starts = np.zeros(len(wanted) + 1, dtype=np.int64)
    for s in range(len(wanted)):
        slot[wanted[s]] = s
        starts[s + 1] = starts[s] + hist[wanted[s]]
    at = np.empty((chunks, len(wanted)), dtype=np.int64)  # each chunk's first place
    for s in range(len(wanted)):
        place = starts[s]
        for c in range(chunks):
            at[c, s] = place
            place += hists[c, wanted[s]]
    gathered = np.empty(starts[-1], dtype=np.uint64)
    for c in prange(chunks):
        place = at[c].copy()
        for i in range(c * size, min(n, (c + 1) * size)):
            key = _key(bits[i])
            s = slot[key >> np.uint64(48)]
            if s >= 0:
                gathered[place[s]] = key
                place[s] += 1
    found = np.empty(ranks.shape[0], dtype=np.uint64)
    j = 0
    while j < ranks.shape[0]:
        end = j  # the ranks in this bucket
        while end < ranks.shape[0] and bucket[end] == bucket[j]:
            end += 1
        s = slot[bucket[j]]
        found[j:end] = _select(gathered[starts[s] : starts[s + 1]], within[j:end])
        j = end
    for j in range(found.shape[0]):  # back to the numbers' own bits
        key = found[j]
        found[j] = key ^ (_SIGN if key >> np.uint64(63) else ~np.uint64(0))
    return found.view(np.float64)


@numba.njit(cache=True, nogil=True, inline="always")
def _chunk(offsets, data, i, pos):  # type: ignore[no-untyped-def]
    # string i's bytes [pos, pos + 7) big-endian, zero past its end, then how many of
    # them it has (7: it goes on past them)
    start = offsets[i] + pos
    end = offsets[i + 1]
    key = np.uint64(0)
    for j in range(start, start + 7):
        key = key << np.uint64(8)
        if j < end:
            key |= np.uint64(data[j])
    return (key << np.uint64(8)) | np.uint64(min(max(end - start, 0), 8))


@numba.njit(cache=True, nogil=True)
def _common_prefix(offsets, data, order, lo, hi, pos):  # type: ignore[no-untyped-def]
    # how many bytes past `pos` every string of order[lo:hi] shares
    first = order[lo]
    common = offsets[first + 1] - offsets[first] - pos
    for r in range(lo + 1, hi):
        i = order[r]
        common = min(common, offsets[i + 1] - offsets[i] - pos)
        k = 0
        while k < common and data[offsets[i] + pos + k] == data[offsets[first] + pos + k]:
            k += 1
        common = k
        if common == 0:
            break
    return max(common, 0)


@numba.njit(cache=True, nogil=True)
def _sort_run(keys, order, lo, hi, spare_keys, spare_order):  # type: ignore[no-untyped-def]
    # keys[lo:hi] and order[lo:hi] sorted by key, stably: an insertion sort for a few,
    # else a radix sort a byte at a time (least significant first), skipping the
    # bytes every key shares
    if hi - lo <= 32:
        for r in range(lo + 1, hi):
            k, o = keys[r], order[r]
            j = r - 1
            while j >= lo and keys[j] > k:
                keys[j + 1], order[j + 1] = keys[j], order[j]
                j -= 1
            keys[j + 1], order[j + 1] = k, o
        return
    counts = np.empty(256, dtype=np.int64)
    for shift in range(0, 64, 8):
        s = np.uint64(shift)
        counts[:] = 0
        for r in range(lo, hi):
            counts[(keys[r] >> s) & np.uint64(0xFF)] += 1
        if counts.max() == hi - lo:
            continue
        at = lo
        for b in range(256):
            c = counts[b]
            counts[b] = at
            at += c
        for r in range(lo, hi):
            b = (keys[r] >> s) & np.uint64(0xFF)
            spare_keys[counts[b]] = keys[r]
            spare_order[counts[b]] = order[r]
            counts[b] += 1
        keys[lo:hi] = spare_keys[lo:hi]
        order[lo:hi] = spare_order[lo:hi]


@numba.njit(cache=True, nogil=True)
def _sort_strings(offsets, data):  # type: ignore[no-untyped-def]
    # The positions of the strings in byte order (UTF-8 bytes: code-point order, as
    # Arrow's sort), equal strings in position order. A run of strings sharing their
    # first `pos` bytes is sorted (stably) by one integer per string: its next 7 bytes
    # and how many it has (8: more follow), so a string ending there comes before
    # those it is a prefix of; a run of one such integer whose strings go on is sorted
    # again past those bytes, after skipping a prefix all of them share.
    n = offsets.shape[0] - 1
    order = np.arange(n)
    keys = np.empty(n, dtype=np.uint64)
    spare_keys = np.empty(n, dtype=np.uint64)
    spare_order = np.empty(n, dtype=np.int64)
    stack = [(0, n, 0)]
    while len(stack) > 0:
        lo, hi, pos = stack.pop()
        if hi - lo < 2:
            continue
        pos += _common_prefix(offsets, data, order, lo, hi, pos)
        for r in range(lo, hi):
            keys[r] = _chunk(offsets, data, order[r], pos)
        _sort_run(keys, order, lo, hi, spare_keys, spare_order)
        r = lo
        while r < hi:
            end = r + 1
            while end < hi and keys[end] == keys[r]:
                end += 1
            if end - r > 1 and keys[r] & np.uint64(0xFF) == np.uint64(8):
                stack.append((r, end, pos + 7))
            r = end
    return order
