"""Jobs layer: the numba loops behind `colbridge.io.encoders`.

One-hot scatter, hashing, folds and per-category target sums, apart from the encoders
so that importing them (and `colbridge.io`) does not import numba;
`colbridge.io.encoders` loads this module on first use.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from colbridge.backends._group_kernels import same_strings

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


@numba.njit(cache=True, nogil=True, parallel=True)  # type: ignore[misc]
def _splitmix_folds(first: np.uint64, rows: int, folds: np.uint64) -> np.ndarray:  # type: ignore[type-arg]
    # each row's fold from its position alone: the rows split across the cores
    out = np.empty(rows, dtype=np.int64)
    for i in prange(rows):
        x = first + np.uint64(i) + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
        out[i] = np.int64(x % folds)
    return out


@numba.njit(cache=True, nogil=True, parallel=True)  # type: ignore[misc]
def _target_sums(codes, fold, y, folds, table, per_fold, parts):  # type: ignore[no-untyped-def]
    # rows in order; a row whose target is not finite (null, NaN) is left out. Each of
    # `parts` (a power of two) threads reads every row and adds those whose category's
    # number falls to it: a category's rows are added by one thread, in row order (the
    # same sums as one thread's), and the threads' misses on the table overlap
    k = np.uintp(folds)
    low = np.uintp(parts - 1)
    for p in prange(parts):
        part = np.uintp(p)
        for i in range(codes.shape[0]):
            c = np.uintp(codes[i])
            if (c & low) != part:
                continue
            v = y[i]
            if not np.isfinite(v):
                continue
            f = np.uintp(fold[i])
            table[c, f] += v
            table[c, k + f] += 1.0
            table[c, k + k + f] += v * v
    for i in range(codes.shape[0] if per_fold.shape[0] > 0 else 0):
        v = y[i]
        if np.isfinite(v):
            f = fold[i]
            per_fold[f, 0] += 1.0
            per_fold[f, 1] += v
            per_fold[f, 2] += v * v


@numba.njit(cache=True, nogil=True, parallel=True)  # type: ignore[misc]
def _fold_columns(table, order, folds):  # type: ignore[no-untyped-def]
    k = order.shape[0]
    sums = np.empty((folds, k))
    counts = np.empty((folds, k), dtype=np.int64)
    squares = np.empty((folds, k))
    counted = np.empty(k, dtype=np.bool_)
    for j in prange(k):
        r = order[j]
        rows = 0.0
        for f in range(folds):
            sums[f, j] = table[r, f]
            n = table[r, folds + f]
            counts[f, j] = np.int64(n)  # whole numbers, held exactly
            rows += n
            squares[f, j] = table[r, 2 * folds + f]
        counted[j] = rows > 0
    return sums, counts, squares, counted


@numba.njit(cache=True, nogil=True, inline="always")
def _encoding(s, n, q, n_y, s_y, q_y, m, auto):  # type: ignore[no-untyped-def]
    # one category's encoding (`colbridge.io.encoders.fold_encodings`), NumPy's
    # operations in NumPy's order: NaN where NumPy gives NaN
    mean = s_y / n_y if n_y != 0.0 else np.nan
    if n == 0.0:
        return mean
    if not auto:
        return (s + m * mean) / (n + m)
    var = q_y / n_y - mean * mean if n_y != 0.0 else np.nan
    var = 0.0 if var < 0.0 else var  # NaN stays NaN, as with np.maximum
    cat_mean = s / n
    cat_var = q / n - cat_mean * cat_mean
    cat_var = 0.0 if cat_var < 0.0 else cat_var
    spread = var * n + cat_var
    if spread == 0.0:  # 0 / 0: NaN in NumPy (a constant target), which gives the mean
        return mean
    lam = var * n / spread
    if lam != lam:
        return mean
    return lam * cat_mean + (1 - lam) * mean


@numba.njit(cache=True, nogil=True, parallel=True)
def _fold_encodings(sums, counts, squares, ys, m, auto):  # type: ignore[no-untyped-def]
    folds, k = sums.shape
    n_y = 0.0
    s_y = 0.0
    q_y = 0.0
    for f in range(folds):  # the folds in order, as NumPy sums an axis
        n_y += ys[f, 0]
        s_y += ys[f, 1]
        q_y += ys[f, 2]
    full = np.empty(k + 1)
    per_fold = np.empty((folds, k + 1))
    for j in prange(k):  # each category's encodings from its own sums: across the cores
        s = 0.0
        n = 0.0
        q = 0.0
        for f in range(folds):
            s += sums[f, j]
            n += counts[f, j]
            q += squares[f, j]
        full[j] = _encoding(s, n, q, n_y, s_y, q_y, m, auto)
        for f in range(folds):
            per_fold[f, j] = _encoding(s - sums[f, j], n - counts[f, j], q - squares[f, j],
                                       n_y - ys[f, 0], s_y - ys[f, 1], q_y - ys[f, 2], m,
                                       auto)  # fmt: skip
    full[k] = s_y / n_y if n_y != 0.0 else np.nan
    for f in range(folds):
        n_f = n_y - ys[f, 0]
        per_fold[f, k] = (s_y - ys[f, 1]) / n_f if n_f != 0.0 else np.nan
    return full, per_fold


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


# -- strings numbered across batches (`colbridge.io.encoders.StringNumbers`) ---------------
# Every distinct string seen so far keeps its bytes in one growing buffer; an
# open-addressing table, at most half full, finds them. A slot is four words side by
# side: the string's hash, its bytes 0-7 and 8-15, and its length (capped) beside its
# number + 1 (0: an empty slot). Strings of at most 16 bytes are equal when their
# keys are, so a probe reads one cache line; only longer ones are compared with the
# known bytes. (Slots holding only numbers, the hashes and bytes found through them,
# made each lookup a chain of four dependent loads and ran a third slower.)

_LEN_SHIFT = np.uint64(40)
_NUMBER_MASK = np.uint64((1 << 40) - 1)
_LEN_CAP = (1 << 23) - 1  # longer lengths are kept as this (their bytes are compared)
_PART_BITS = 4  # a large table is probed a sixteenth at a time (`_find_strings`)


@numba.njit(cache=True, nogil=True, inline="always")
def _string_key(offsets, data, i):  # type: ignore[no-untyped-def]
    # (hash, bytes 0-7, bytes 8-15, capped length << 40) of string i: FNV-1a over the
    # bytes, then MurmurHash3's finaliser, since the slot is the hash's low bits. Byte
    # by byte, where `colbridge.backends._group_kernels` hashes whole words (reading
    # past a string's end, from a zero-padded copy of the buffer's tail); the hashing
    # is a third of a lookup here (4 of 11 ms for 1e6 rows), a word-wise variant was
    # not tried
    start = offsets[i]
    stop = offsets[i + 1]
    h = np.uint64(14695981039346656037)
    head = np.uint64(0)
    head2 = np.uint64(0)
    for j in range(start, stop):
        b = np.uint64(data[j])
        h = (h ^ b) * np.uint64(1099511628211)
        p = j - start
        if p < 8:
            head |= b << np.uint64(8 * p)
        elif p < 16:
            head2 |= b << np.uint64(8 * (p - 8))
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    return h, head, head2, np.uint64(min(stop - start, _LEN_CAP)) << _LEN_SHIFT


@numba.njit(cache=True, nogil=True, inline="always")
def _probe(slots, mask, h, head, head2, meta, offsets, data, i, known_offsets, known_data):  # type: ignore[no-untyped-def]
    # (slot, number) of string i with key (h, head, head2, meta): number -1 and the
    # empty slot that ends its probe when it is not known
    s = h & mask
    while True:
        at = np.intp(s) * 4
        tag = slots[at + 3]
        if tag == 0:
            return at, -1
        if (slots[at] == h and slots[at + 1] == head and slots[at + 2] == head2
                and (tag >> _LEN_SHIFT) == (meta >> _LEN_SHIFT)):  # fmt: skip
            k = np.intp(tag & _NUMBER_MASK) - 1
            if (meta >> _LEN_SHIFT) <= np.uint64(16) or same_strings(
                offsets, data, i, known_offsets, known_data, k
            ):
                return at, k
        s = (s + np.uint64(1)) & mask


@numba.njit(cache=True, nogil=True)
def _string_keys(offsets, data):  # type: ignore[no-untyped-def]
    # each string's key (`_string_key`), a row of four words
    n = offsets.shape[0] - 1
    keys = np.empty((n, 4), dtype=np.uint64)
    for i in range(n):
        keys[i, 0], keys[i, 1], keys[i, 2], keys[i, 3] = _string_key(offsets, data, i)
    return keys


@numba.njit(cache=True, nogil=True)
def _slot_order(keys, slots):  # type: ignore[no-untyped-def]
    # the strings in the order of their first slots (a counting sort of the top bits)
    mask = np.uint64(slots.shape[0] // 4 - 1)
    bits = 0
    while (np.uint64(1) << np.uint64(bits)) <= mask:
        bits += 1
    shift = np.uint64(max(bits - 12, 0))
    hist = np.zeros((1 << (bits - int(shift))) + 1, dtype=np.int64)
    for i in range(keys.shape[0]):
        hist[((keys[i, 0] & mask) >> shift) + np.uint64(1)] += 1
    for b in range(1, hist.shape[0]):
        hist[b] += hist[b - 1]
    order = np.empty(keys.shape[0], dtype=np.int64)
    for i in range(keys.shape[0]):
        b = (keys[i, 0] & mask) >> shift
        order[hist[b]] = i
        hist[b] += 1
    return order


@numba.njit(cache=True, nogil=True)
def _look_up_strings(keys, order, slots, offsets, data, known_offsets, known_data, numbers):  # type: ignore[no-untyped-def]
    # each string's number among the known ones (-1: not known), looked up in slot
    # order; returns how many are not known
    mask = np.uint64(slots.shape[0] // 4 - 1)
    new = 0
    for i in order:
        k = _probe(slots, mask, keys[i, 0], keys[i, 1], keys[i, 2], keys[i, 3], offsets,
                   data, i, known_offsets, known_data)[1]  # fmt: skip
        numbers[i] = k
        new += k < 0
    return new


@numba.njit(cache=True, nogil=True)
def _add_strings(keys, order, slots, offsets, data, known_offsets, known_data, count, numbers):  # type: ignore[no-untyped-def]
    # number the strings not known (numbers[i] < 0) in their order, append their bytes
    # and place them, in slot order (the caller has made room); a string given twice
    # takes its first's number (the second's bytes stay, unused); returns the count
    first = count
    used = known_offsets[count]
    for i in range(numbers.shape[0]):
        if numbers[i] < 0:
            for j in range(offsets[i], offsets[i + 1]):
                known_data[used] = data[j]
                used += 1
            known_offsets[count + 1] = used
            numbers[i] = count
            count += 1
    mask = np.uint64(slots.shape[0] // 4 - 1)
    for i in order:
        if numbers[i] >= first:
            at, k = _probe(slots, mask, keys[i, 0], keys[i, 1], keys[i, 2], keys[i, 3],
                           offsets, data, i, known_offsets, known_data)  # fmt: skip
            if k >= 0:  # given twice: the first one placed
                numbers[i] = k
                continue
            slots[at] = keys[i, 0]
            slots[at + 1] = keys[i, 1]
            slots[at + 2] = keys[i, 2]
            slots[at + 3] = keys[i, 3] | np.uint64(numbers[i] + 1)
    return count


@numba.njit(cache=True, nogil=True)
def _string_slots(old, slots):  # type: ignore[no-untyped-def]
    # the slots of `old` re-placed into the zeroed `slots` (read in order, they land
    # in order: a slot's place is its hash's low bits)
    mask = np.uint64(slots.shape[0] // 4 - 1)
    for t in range(0, old.shape[0], 4):
        if old[t + 3] != 0:
            s = old[t] & mask
            while slots[np.intp(s) * 4 + 3] != 0:
                s = (s + np.uint64(1)) & mask
            for q in range(4):
                slots[np.intp(s) * 4 + q] = old[t + q]


_BLOCK = 32  # rows whose keys `_find_strings` makes before probing for them


@numba.njit(cache=True, nogil=True, parallel=True)
def _find_strings(offsets, data, valid, known_offsets, known_data, slots, chunks, out):  # type: ignore[no-untyped-def]
    # each row's number among the known strings: -1 for one not known, -2 for a null
    # (`valid[i]` false; `valid` empty: no nulls); the rows split into `chunks`. The
    # keys of a block of rows are made first, then the table probed for each: the
    # probes' cache misses overlap (a third faster than a key and a probe per row,
    # whose data-dependent hashing loop stalled each miss)
    n = offsets.shape[0] - 1
    nulls = valid.shape[0] > 0
    mask = np.uint64(slots.shape[0] // 4 - 1)
    for c in prange(chunks):
        keys = np.empty((_BLOCK, 4), dtype=np.uint64)
        hi = n * (c + 1) // chunks
        for lo in range(n * c // chunks, hi, _BLOCK):
            m = min(_BLOCK, hi - lo)
            for j in range(m):
                keys[j, 0], keys[j, 1], keys[j, 2], keys[j, 3] = _string_key(offsets, data,
                                                                             lo + j)  # fmt: skip
            for j in range(m):
                i = lo + j
                if nulls and not valid[i]:
                    out[i] = -2
                else:
                    out[i] = _probe(slots, mask, keys[j, 0], keys[j, 1], keys[j, 2], keys[j, 3],
                                    offsets, data, i, known_offsets, known_data)[1]  # fmt: skip
