"""Compiled scans of the ordered pass (numba; cached on disk across processes).

Stage: backends. Imported on first use by `colbridge.backends.scans`, which
describes the arguments. Every kernel walks *segments*: the rows of one group in
frame order (``order[a:b]``), or, with ``order`` None, the whole frame as one
segment (``order`` unused). Segments run in parallel; inside one the work is
sequential, in frame order (or reversed).

Values arrive in one of four compute types (int64, uint64, float32, float64);
``valid`` has one flag per row; ``zero`` is 0 of the compute type. Each kernel
writes ``out`` and ``out_valid`` at the row's own position, so a grouped scan
needs no scatter afterwards.

Work comes as *tasks*, rows ``(a, b, c0, c1)`` of ``tasks``: the segment ``[a, b)``
(positions into ``order``) and the positions ``[c0, c1)`` the task writes. Scans
that carry a running state (cumulative, ewm, fills) take whole segments
(``c0 = a``, ``c1 = b``); shifts and windows also split one long segment into
chunks that run in parallel, each reading the rows before its chunk that its
first windows need.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

__all__ = [
    "counting_order",
    "cumulative",
    "ewm_mean",
    "ewm_mean_split",
    "ewm_sum",
    "ewm_var",
    "ewm_var_by_key",
    "ewm_var_split",
    "fill",
    "rolling_extreme",
    "rolling_moment",
    "rolling_sorted",
    "rolling_sum",
    "rolling_var",
    "rolling_var_by_key",
    "rolling_weighted",
    "rolling_weighted_by_key",
    "shift",
]

# cumulative operations, by code (`cumulative`)
CUM_SUM, CUM_PROD, CUM_MIN, CUM_MAX, CUM_COUNT = range(5)


@numba.njit(cache=True, nogil=True, inline="always")
def _row(order: Any, j: int) -> Any:
    """The row at segment position ``j``: ``order[j]``, or ``j`` itself when ``order`` is None.

    None is a type of its own to numba: the direct kernels compile without the branch.
    The row is unsigned, so indexing with it needs no negative-index wraparound (which
    otherwise costs the sliding loops half their speed).
    """
    if order is None:
        return np.uintp(j)
    return np.uintp(order[np.uintp(j)])


@numba.njit(cache=True, nogil=True)
def counting_order(ids: Any, count: int, order: Any) -> Any:
    """Rows sorted by group id, stably (frame order inside a group), and group starts.

    ``order`` (as many int64 as ``ids``) receives the rows; the caller allocates it
    from the memory pool, whose pages need no faulting in.
    """
    starts = np.zeros(count + 1, dtype=np.int64)
    for i in range(ids.shape[0]):
        starts[ids[i] + 1] += 1
    for g in range(count):
        starts[g + 1] += starts[g]
    fill_at = starts[:-1].copy()
    for i in range(ids.shape[0]):
        g = ids[i]
        order[fill_at[g]] = i
        fill_at[g] += 1
    return order, starts


@numba.njit(cache=True, nogil=True, parallel=True)
def shift(values: Any, valid: Any, order: Any, tasks: Any, n: int,
          has_fill: bool, fill_value: Any, out: Any, out_valid: Any) -> None:  # fmt: skip
    """``out[row] = values[row n places earlier in its segment]``; ``fill_value`` past the edge.

    Tasks as `rolling_sum`: rows are independent, so chunks of one segment run in parallel.
    """
    for t in numba.prange(tasks.shape[0]):
        a, b, c0, c1 = tasks[t, 0], tasks[t, 1], tasks[t, 2], tasks[t, 3]
        for j in range(c0, c1):
            i = _row(order, j)
            k = j - n
            if a <= k < b:
                src = _row(order, k)
                out[i] = values[src]
                out_valid[i] = valid[src]
            elif has_fill:
                out[i] = fill_value
                out_valid[i] = True
            else:
                out[i] = fill_value  # any value: the slot is null
                out_valid[i] = False


@numba.njit(cache=True, nogil=True, parallel=True)
def cumulative(values: Any, valid: Any, order: Any, tasks: Any, op: int,
               reverse: bool, start: Any, out: Any, out_valid: Any) -> None:  # fmt: skip
    """Running sum/product/min/max/count of the non-null values; a null row stays null.

    Sums and products wrap in the compute type (the caller narrows to the result type,
    which wraps the same way); min and max skip NaN, as polars' running extremes do.
    Only ``cum_count`` writes ``out_valid``: the others' nulls are their argument's,
    whose bitmap the caller gives the result (a null row's value is any value).
    """
    for t in numba.prange(tasks.shape[0]):
        a, b = tasks[t, 0], tasks[t, 1]
        if op == CUM_SUM:
            _running_total(values, valid, order, a, b, reverse, True, start, out)
            continue
        if op == CUM_PROD:
            _running_total(values, valid, order, a, b, reverse, False, start, out)
            continue
        acc = start
        count = 0
        seen = False
        for step in range(b - a):
            j = b - 1 - step if reverse else a + step
            i = _row(order, j)
            if op == CUM_COUNT:
                if valid[i]:
                    count += 1
                out[i] = count
                out_valid[i] = True
                continue
            if valid[i]:
                v = values[i]
                # of equal values the latest (-0.0 after 0.0), as polars
                if op == CUM_MIN:
                    if not seen or v <= acc or acc != acc:
                        acc = v
                elif v >= acc or acc != acc or not seen:
                    acc = v
                seen = True
            out[i] = acc


@numba.njit(cache=True, nogil=True, inline="always")
def _running_total(values: Any, valid: Any, order: Any, a: int, b: int, reverse: bool,
                   add: bool, start: Any, out: Any) -> None:  # fmt: skip
    """A segment's running sum (``add``) or product from ``start`` (0 or 1), branch-free.

    A null row adds ``start`` (0: the sum starts from +0 and never becomes -0, so adding
    0 changes nothing) or multiplies by it (1), so the loop carries no branch on the
    data and runs at the speed of its one chain of additions. Each value is read whether
    or not its row is null: a read under the test is a branch (LLVM does not move a
    load out of a condition), mispredicted at every scattered null, which took a
    column with 10% nulls from 6 to 11 ms per 1e7 rows. Two loops, not a test of
    ``add`` per row.
    """
    acc = start
    if add:
        for step in range(b - a):
            i = _row(order, b - 1 - step if reverse else a + step)
            v = values[i]  # read before the test: a select, not a branch (see above)
            acc = acc + (v if valid[i] else start)
            out[i] = acc
    else:
        for step in range(b - a):
            i = _row(order, b - 1 - step if reverse else a + step)
            v = values[i]
            acc = acc * (v if valid[i] else start)
            out[i] = acc


@numba.njit(cache=True, nogil=True, inline="always")
def _finite(v: Any) -> bool:
    return bool(v - v == 0)  # false for NaN and infinities; always true for integers


@numba.njit(cache=True, nogil=True, inline="always")
def _window(p: int, a: int, b: int, offset: int, window: int) -> tuple[int, int]:
    """Segment position ``p``'s window ``[start, end)``, clipped to the segment ``[a, b)``."""
    first = p - offset
    return max(first, a), min(first + window, b)


@numba.njit(cache=True, nogil=True, inline="always")
def _sum_step(v: Any, total: Any, err: Any, sign: int, tally: Any, row: Any,
              kahan: bool) -> tuple[Any, Any]:  # fmt: skip
    """A value enters (``sign`` 1) or leaves (-1) a sliding sum; the new sum and compensation.

    Floats (``kahan``) add with a Kahan compensation of their own per direction (``err``)
    and non-finite values are counted instead, in ``tally[row]`` ``[all, +inf, -inf]``
    (updated in place; a table row, so the per-group carries need no views);
    integers just add and wrap.
    """
    if not kahan:
        return (total + v, err) if sign > 0 else (total - v, err)
    if not _finite(v):
        tally[row, 0] += sign
        tally[row, 1] += sign * (v > 0)
        tally[row, 2] += sign * (v < 0)
        return total, err
    y = (v if sign > 0 else -v) - err
    new = total + y
    return new, (new - total) - y


@numba.njit(cache=True, nogil=True, inline="always")
def _sum_value(total: Any, tally: Any, row: Any, specials: Any) -> Any:
    """The window's sum: infinite or NaN where non-finite values are in it.

    ``specials`` holds +inf, -inf and NaN in the sum's own type (zeros for integers,
    which never have any): the result keeps that type, so 64-bit integer sums stay
    exact instead of passing through float64.
    """
    if tally[row, 0] == 0:
        return total
    if tally[row, 0] == tally[row, 1]:
        return specials[0]
    if tally[row, 0] == tally[row, 2]:
        return specials[1]
    return specials[2]


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_sum(values: Any, valid: Any, order: Any, tasks: Any, mean: bool, kahan: bool,
                window: int, min_samples: int, offset: int, zero: Any, specials: Any, out: Any,
                out_valid: Any) -> None:  # fmt: skip
    """Windowed sum (``mean``: average) of the non-null values of each row's window.

    A *task* ``(a, b, c0, c1)`` writes the rows at segment positions ``[c0, c1)`` of
    the segment ``[a, b)``: a group, or one chunk of the whole frame, whose windows
    start from the rows before ``c0`` (a halo), so chunks run in parallel. The window
    of position ``p`` is ``[p - offset, p - offset + window)`` (``offset`` is
    ``window - 1``, or ``window // 2`` centred). polars' sliding sum: the row leaving
    is subtracted, then the row entering added, each with its own Kahan compensation
    (``kahan``, for floats; integers wrap), in ``zero``'s type (float64 for a mean);
    NaN and infinities are counted, not added, so they leave without a trace.
    """
    for t in numba.prange(tasks.shape[0]):
        # one loop per kind of window: a test of ``window`` per row (loop-invariant, but
        # it resets the sums) slowed every window by a sixth
        if window == 1:
            _sliding_sum(values, valid, order, tasks[t], mean, kahan, window, min_samples,
                         offset, zero, specials, out, out_valid, True)  # fmt: skip
        else:
            _sliding_sum(values, valid, order, tasks[t], mean, kahan, window, min_samples,
                         offset, zero, specials, out, out_valid, False)  # fmt: skip


@numba.njit(cache=True, nogil=True, inline="always")
def _sliding_sum(values: Any, valid: Any, order: Any, task: Any, mean: bool, kahan: bool,
                 window: int, min_samples: int, offset: int, zero: Any, specials: Any,
                 out: Any, out_valid: Any, single: bool) -> None:  # fmt: skip
    """`rolling_sum`'s work for one task; ``single``: the window is one row (``window == 1``)."""
    a, b, c0, c1 = task[0], task[1], task[2], task[3]
    total = zero
    err_add = zero
    err_sub = zero
    tally = np.zeros((1, 3), dtype=np.int64)
    count = 0
    # the rows before the first window's last one (the halo, for a chunk)
    first = max(c0 - offset, a)
    for k in range(first, min(c0 - offset + window - 1, b)):
        i = _row(order, k)
        if valid[i]:
            total, err_add = _sum_step(zero + values[i], total, err_add, 1, tally, 0, kahan)
            count += 1
    live = window > 0
    for p in range(c0, c1):
        leave = p - offset - 1
        if leave >= first and live:  # a row this task added
            i = _row(order, leave)
            if valid[i]:
                count -= 1
                total, err_sub = _sum_step(zero + values[i], total, err_sub, -1, tally, 0,
                                           kahan)  # fmt: skip
        # with a window, the row entering is at or after p (offset < window): in the segment
        enter = p - offset + window - 1
        if enter < b and live:
            i = _row(order, enter)
            if valid[i]:
                total, err_add = _sum_step(zero + values[i], total, err_add, 1, tally, 0,
                                           kahan)  # fmt: skip
                count += 1
        i = _row(order, p)
        if single:
            # polars starts a window that shares no row with the last one afresh
            v = values[i]
            total = zero + v if valid[i] and _finite(v) else zero
            err_add, err_sub = zero, zero
        value = _sum_value(total, tally, 0, specials)
        if mean:
            # the sum in the output's type, then divided there, as polars does
            out[i] = value
            if count > 0:
                out[i] = out[i] / count
            out_valid[i] = count >= min_samples and count > 0
        else:
            out[i] = value
            out_valid[i] = count >= min_samples


@numba.njit(cache=True, nogil=True, inline="always")
def _two_part_var(n1: float, s1: float, q1: float, k1: float, n2: float, s2: float,
                  q2: float, k2: float, ddof: int) -> float:  # fmt: skip
    """The variance of two parts given as shifted sums (``n1 + n2 > ddof``).

    A part is ``n`` values as ``s = sum(x - k)``, ``q = sum((x - k)**2)`` around a
    ``k`` among its own values, so its ``M2 = q - s**2 / n`` does not cancel; the parts
    meet by Chan's update, ``M2 = M2_1 + M2_2 + (mean_2 - mean_1)**2 * n1 * n2 / n``,
    with two divisions in all. Equal values give exactly 0: every sum is 0 and both
    means are the same ``k``. A NaN or infinite value makes its part's ``q`` NaN
    (`_enter`), and the variance NaN, as in polars; finite values whose spread nears
    overflow are left to `_welford_var` (`_overflows`).
    """
    n = n1 + n2
    z = 1.0 / (n * (n - ddof))
    if n1 == 0.0 or n2 == 0.0:  # one part: the other's sums are 0
        s = s1 + s2
        var = ((q1 + q2) * n - s * s) * z
    else:
        r = 1.0 / (n1 * n2)
        delta = (k2 - k1) + (s2 * n1 - s1 * n2) * r
        m2 = (q1 + q2) - (s1 * s1 * n2 + s2 * s2 * n1) * r
        var = m2 * n * z + delta * delta * (n1 * n2) * z
    return var


#: a window's ``var * count`` at or above this (or not a number) may have overflowed a
#: step of polars' Welford updates, whose intermediates stay below twice the window's
#: sum of squared deviations; below it, both agree to rounding
_SPREAD_LIMIT = 2.0**996


@numba.njit(cache=True, nogil=True, inline="always")
def _overflows(var: float, count: float, q1: float, q2: float) -> bool:
    """Whether a window's variance must come from `_welford_var` instead.

    Only for finite values (``q`` not NaN, `_enter`) whose spread is near overflow:
    there polars' result is whatever its updates make of the infinities (often NaN,
    0 or infinity), so the window is run through the same updates.
    """
    return not var * count < _SPREAD_LIMIT and q1 == q1 and q2 == q2


@numba.njit(cache=True, nogil=True, inline="always")
def _welford_step(w: float, m: float, dp: float, x: float) -> tuple[float, float, float]:
    """One value joins a ``(weight, mean, dp)`` state, as polars' ``VarState::insert_one``."""
    nw = w + 1.0
    delta = x - m
    nm = m + delta / nw
    return nw, nm, dp + (x - nm) * delta


@numba.njit(cache=True, nogil=True, inline="always")
def _welford_join(w: float, m: float, dp: float, ow: float, om: float,
                  odp: float) -> tuple[float, float, float]:  # fmt: skip
    """The state ``(ow, om, odp)`` joins ``(w, m, dp)``, as polars' ``VarState::combine``."""
    if ow == 0.0:
        return w, m, dp
    nw = w + ow
    frac = ow / nw
    delta = om - m
    nm = m + delta * frac
    return nw, nm, dp + (odp + ow * (om - nm) * delta)


@numba.njit(cache=True, nogil=True, inline="always")
def _welford_value(w: float, dp: float, ddof: int) -> float:
    """The variance of more than ``ddof`` values, as polars' ``VarState::finalize``."""
    var = dp / (w - ddof)
    return 0.0 if var < 0.0 else var  # NaN stays NaN


@numba.njit(cache=True, nogil=True)
def _welford_var(values: Any, valid: Any, order: Any, s: int, fe: int, e: int,
                 ddof: int) -> float:  # fmt: skip
    """The rolling variance of the window ``[s, e)``, polars' update for update.

    Its two stacks: the front, the rows ``[s, fe)`` of the block last moved over
    (each stack entry the state of the rows after it, so inserted from ``fe - 1``
    backwards), joined to the back, the rows ``[fe, e)`` inserted in order. Only run
    where the spread nears overflow (`_overflows`): there the result hangs on every
    step (e.g. ``[1e308, -1e308]`` gives 0, the mean and ``dp`` having overflowed).
    """
    fw, fm, fdp = 0.0, 0.0, 0.0
    for pos in range(fe - 1, s - 1, -1):
        r = _row(order, pos)
        if valid[r]:
            x = np.float64(values[r])
            fw, fm, fdp = _welford_step(fw, fm, fdp, x if _finite(x) else 0.0)
    bw, bm, bdp = 0.0, 0.0, 0.0
    for pos in range(fe, e):
        r = _row(order, pos)
        if valid[r]:
            x = np.float64(values[r])
            bw, bm, bdp = _welford_step(bw, bm, bdp, x if _finite(x) else 0.0)
    bw, bm, bdp = _welford_join(bw, bm, bdp, fw, fm, fdp)
    return _welford_value(bw, bdp, ddof)


@numba.njit(cache=True, nogil=True)
def _welford_ring(ring: Any, ring_valid: Any, g: Any, slot: int, held: int, split: int,
                  ddof: int) -> float:  # fmt: skip
    """`_welford_var` of group ``g``'s window in its ring, row ``j`` back at slot ``slot - j``.

    The window is its ``held`` rows back from the newest (slot ``slot``); rows ``split``
    and more back are polars' front stack, the rest its back stack.
    """
    width = ring.shape[1]
    fw, fm, fdp = 0.0, 0.0, 0.0
    for j in range(split, held):  # from the block's end backwards
        at = (slot - j + width) % width
        if ring_valid[g, at]:
            x = np.float64(ring[g, at])
            fw, fm, fdp = _welford_step(fw, fm, fdp, x if _finite(x) else 0.0)
    bw, bm, bdp = 0.0, 0.0, 0.0
    for j in range(split - 1, -1, -1):
        at = (slot - j + width) % width
        if ring_valid[g, at]:
            x = np.float64(ring[g, at])
            bw, bm, bdp = _welford_step(bw, bm, bdp, x if _finite(x) else 0.0)
    bw, bm, bdp = _welford_join(bw, bm, bdp, fw, fm, fdp)
    return _welford_value(bw, bdp, ddof)


@numba.njit(cache=True, nogil=True, inline="always")
def _front_end(valid: Any, order: Any, b: int, s: int, window: int, cursor: Any) -> int:
    """Where polars' front stack ends for the window starting at ``s`` (``s``: no front).

    polars moves its back stack to the front when a non-null row leaves and the front
    is empty: blocks of ``window`` positions, each starting at the first non-null row
    at or after the last one's end (so nulls shift them, unlike `rolling_var`'s). The
    window holds the rest of the last block started before ``s``, if any. ``cursor``
    holds ``(the last block start found, where to look next)`` (``[-1, a]`` at first),
    carried between the windows of one task as ``s`` only grows.
    """
    start: int = cursor[0]
    look: int = cursor[1]
    while True:
        while look < s and not valid[_row(order, look)]:
            look += 1
        if look >= s:
            break
        start = look
        look += window
    cursor[0], cursor[1] = start, look
    if start >= 0 and s < start + window:
        return min(start + window, b)
    return s


@numba.njit(cache=True, nogil=True, inline="always")
def _enter(values: Any, valid: Any, order: Any, pos: int, k: float, s: float, q: float,
           n: float) -> tuple[float, float, float, float]:  # fmt: skip
    """Segment position ``pos`` joins a part summed around ``k``: its new ``(k, s, q, n)``."""
    r = _row(order, pos)
    if valid[r]:
        if n == 0.0:
            k = np.float64(values[r])
        x = np.float64(values[r])
        # x - x: 0 for a finite value (no bit changes), NaN for NaN and infinities, so
        # that ``q`` is NaN exactly where the part holds one (`_overflows`)
        d = (x - k) + (x - x)
        s += d
        q += d * d
        n += 1.0
    return k, s, q, n


@numba.njit(cache=True, nogil=True, inline="always")
def _suffix_sums(values: Any, valid: Any, order: Any, block_start: int, span: int,
                 k_front: float, suffix_s: Any, suffix_q: Any, suffix_n: Any) -> float:  # fmt: skip
    """A block's suffix sums (``suffix_*[j]``: positions ``j .. span - 1``), walking it backwards.

    Each around the block's last non-null value (the first met); returns that shift.
    """
    suffix_s[span] = 0.0
    suffix_q[span] = 0.0
    suffix_n[span] = 0.0
    s = 0.0
    q = 0.0
    c = 0.0
    for j in range(span - 1, -1, -1):
        k_front, s, q, c = _enter(values, valid, order, block_start + j, k_front, s, q, c)
        suffix_s[j] = s
        suffix_q[j] = q
        suffix_n[j] = c
    return k_front


@numba.njit(cache=True, nogil=True, inline="always")
def _rolling_var_block(values: Any, valid: Any, order: Any, block_start: int, p: int,
                       window: int, k_front: float, std: bool, min_samples: int, ddof: int,
                       suffix_s: Any, suffix_q: Any, suffix_n: Any, b: int, cursor: Any,
                       out: Any, out_valid: Any) -> float:  # fmt: skip
    """`rolling_var`'s rows ``p .. p + window - 1``: the windows starting in one block.

    The block's suffix sums walking it backwards, then each window's prefix as it
    reaches into the next block, joined by `_two_part_var`: `rolling_var`'s arithmetic,
    operation for operation. Returns the suffix's shift (``k_front``). ``b`` and
    ``cursor``: the segment's end and `_front_end`'s state, for `_welford_var`.
    """
    k_front = _suffix_sums(values, valid, order, block_start, window, k_front, suffix_s,
                           suffix_q, suffix_n)  # fmt: skip
    k_back = 0.0
    n_back = 0.0
    s_back = 0.0
    q_back = 0.0
    for j in range(1, window + 1):
        k_back, s_back, q_back, n_back = _enter(values, valid, order, block_start + window + j - 1,
                                                k_back, s_back, q_back, n_back)  # fmt: skip
        i = _row(order, p + j - 1)
        n_front = suffix_n[j]
        count = n_front + n_back
        var = 0.0
        if count - ddof > 0:
            var = _two_part_var(n_front, suffix_s[j], suffix_q[j], k_front, n_back, s_back,
                                q_back, k_back, ddof)  # fmt: skip
            if _overflows(var, count, suffix_q[j], q_back):
                s = block_start + j
                var = _welford_var(values, valid, order, s,
                                   _front_end(valid, order, b, s, window, cursor),
                                   s + window, ddof)  # fmt: skip
        if var < 0.0:
            var = 0.0
        out[i] = var
        if std:  # the root of the variance in the output's type (Float32 too), as polars
            out[i] = np.sqrt(out[i])
        out_valid[i] = count >= min_samples and count - ddof > 0
    return k_front


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_var(values: Any, valid: Any, order: Any, tasks: Any, std: bool,
                window: int, min_samples: int, offset: int, ddof: int, out: Any,
                out_valid: Any) -> None:  # fmt: skip
    """Windowed variance (``std``: its square root) of the non-null values.

    Tasks and windows as `rolling_sum`. Nothing leaves a running sum, so no rounding
    is left behind (polars' two stacks, with sums for its Welford states): a segment
    is cut into blocks of ``window`` positions from ``a``, and a window is the end of
    one block (a *suffix*, empty when the window starts on a block's first row) and
    the start of the next (a *prefix*), grouped as `rolling_var_by_key` groups a
    group's rows, so a frame, one group of it and its stream agree bit for bit. Each
    block's suffix sums are made once, walking it backwards, and the next block's prefix
    sums as the windows reach into it; a window's variance joins the two
    (`_two_part_var`). Each part is summed around a value it holds for certain (the
    suffix's last non-null value, the prefix's first), so no subtraction cancels and
    a window of equal values has a variance of exactly 0, as in polars; NaN and
    infinities give NaN. Every value is read twice, whatever the window. Fewer than
    ``ddof + 1`` values: null. A window of finite values whose spread nears overflow
    takes polars' own steps instead (`_welford_var`, its blocks found by `_front_end`).
    """
    for t in numba.prange(tasks.shape[0]):
        a, b, c0, c1 = tasks[t, 0], tasks[t, 1], tasks[t, 2], tasks[t, 3]
        size = max(min(window, b - a), 0) + 1
        suffix_s = np.zeros(size)
        suffix_q = np.zeros(size)
        suffix_n = np.zeros(size)
        cursor = np.array([-1, a], dtype=np.int64)  # `_front_end`'s, for `_welford_var`
        front = -2  # the block whose suffix sums are held (-1: none, the window starts at a)
        block_start = a
        k_front = 0.0
        pos = a  # the next row the prefix takes
        k_back = 0.0
        n_back = 0.0
        s_back = 0.0
        q_back = 0.0
        p = c0
        while p < c1:
            start = p - offset
            if window > 1 and start > a and (start - a - 1) % window == 0 \
                    and p + window <= c1 and start + 2 * window - 1 <= b:  # fmt: skip
                # the windows starting in one whole block, every row in the task: as
                # below, without its per-row bookkeeping (the same sums: the same bits)
                k_front = _rolling_var_block(values, valid, order, start - 1, p, window,
                                             k_front, std, min_samples, ddof, suffix_s,
                                             suffix_q, suffix_n, b, cursor, out,
                                             out_valid)  # fmt: skip
                p += window
                front = -2  # the next row's window starts in the next block: summed anew
                continue
            i = _row(order, p)
            p += 1
            start = max(start, a)
            end = min(p - 1 - offset + window, b) if window > 0 else start
            if end <= start:
                out[i] = 0.0
                out_valid[i] = False
                continue
            # the block whose suffix the window starts in: block_start < start <= its end
            # (a window starting on a block's first row takes none of its suffix but the
            # whole block as its prefix, as `rolling_var_by_key` and a stream sum it)
            if start == a:
                block = -1
            elif front >= 0 and start <= block_start + window:
                block = front  # the window's start moves a row at a time: no division per row
            else:
                block = (start - a - 1) // window
            if block != front:
                front = block
                block_start = a + max(block, 0) * window
                pos = block_start if block < 0 else min(block_start + window, b)
                if block >= 0:  # the block's suffix sums, from its end backwards
                    k_front = _suffix_sums(values, valid, order, block_start, pos - block_start,
                                           k_front, suffix_s, suffix_q, suffix_n)  # fmt: skip
                n_back = 0.0
                s_back = 0.0
                q_back = 0.0
            if pos + 1 == end:  # the window's end moved a row: one row enters the prefix
                k_back, s_back, q_back, n_back = _enter(values, valid, order, pos, k_back,
                                                        s_back, q_back, n_back)  # fmt: skip
                pos = end
            while pos < end:  # a new block's prefix catches up with the window's end
                k_back, s_back, q_back, n_back = _enter(values, valid, order, pos, k_back,
                                                        s_back, q_back, n_back)  # fmt: skip
                pos += 1
            j = start - block_start
            n_front = suffix_n[j] if front >= 0 else 0.0
            s_front = suffix_s[j] if front >= 0 else 0.0
            q_front = suffix_q[j] if front >= 0 else 0.0
            count = n_front + n_back
            ok = count >= min_samples and count - ddof > 0
            var = 0.0
            if count - ddof > 0:
                var = _two_part_var(n_front, s_front, q_front, k_front, n_back, s_back, q_back,
                                    k_back, ddof)  # fmt: skip
                if _overflows(var, count, q_front, q_back):
                    var = _welford_var(values, valid, order, start,
                                       _front_end(valid, order, b, start, window, cursor), end,
                                       ddof)  # fmt: skip
            if var < 0.0:
                var = 0.0
            out[i] = var
            if std:  # the root of the variance in the output's type (Float32 too), as polars
                out[i] = np.sqrt(out[i])
            out_valid[i] = ok


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_extreme(values: Any, valid: Any, order: Any, tasks: Any, largest: bool,
                    window: int, min_samples: int, offset: int, zero: Any,
                    out: Any, out_valid: Any) -> None:  # fmt: skip
    """Windowed min (``largest``: max) of the non-null values; NaN in the window wins.

    Tasks and windows as `rolling_sum`. A monotonic queue of segment positions
    (a ring buffer of ``window + 1``) holds the candidates: each row enters once
    and leaves once, whatever the window's length.
    """
    for t in numba.prange(tasks.shape[0]):
        a, b, c0, c1 = tasks[t, 0], tasks[t, 1], tasks[t, 2], tasks[t, 3]
        cap = 1
        while cap < min(window, b - a) + 1:
            cap *= 2
        mask = cap - 1  # a power-of-two ring: positions wrap with a mask, not a division
        queue = np.empty(cap, dtype=np.int64)
        head = 0
        size = 0
        count = 0
        nans = 0
        first = max(c0 - offset, a)
        for k in range(first, min(c0 - offset + window - 1, b)):
            count, nans, size = _extreme_enter(values, valid, order, k, largest, queue, head,
                                               size, mask, count, nans)  # fmt: skip
        for p in range(c0, c1):
            enter = p - offset + window - 1
            if a <= enter < b and window > 0:
                count, nans, size = _extreme_enter(values, valid, order, enter, largest, queue,
                                                   head, size, mask, count, nans)  # fmt: skip
            leave = p - offset - 1
            if leave >= first and window > 0:  # a row this task added
                i = _row(order, leave)
                if valid[i]:
                    count -= 1
                    if values[i] != values[i]:
                        nans -= 1
                    elif size > 0 and queue[head] == leave:
                        head = (head + 1) & mask
                        size -= 1
            i = _row(order, p)
            if nans > 0:
                out[i] = np.nan
            elif size > 0:
                out[i] = values[_row(order, queue[head])]
            else:
                out[i] = zero
            out_valid[i] = count >= min_samples and count > 0


# -- weighted windows (`rolling_*(weights=...)`): polars' arithmetic, window by window ------
#
# polars computes a weighted window afresh for every row, over a column without nulls
# (it refuses nulls; so does the caller), in the values' float type. These kernels do
# the same operations in the same order, so results are polars' bits. They are kept
# apart from the unweighted kernels above, whose sliding loops they would slow.

# weighted operations, by code
W_SUM, W_MEAN, W_VAR, W_STD, W_MIN, W_MAX = range(6)


@numba.njit(cache=True, nogil=True)
def _weighted_of(buf: Any, weights: Any, w0: int, count: int, op: int, zero: Any) -> Any:
    """Weighted ``op`` of ``buf[:count]`` (oldest first) with ``weights[w0:w0 + count]``.

    Sum: ``-0.0 + x0*w0 + x1*w1 + ...`` (Rust's float sum starts from -0.0); mean:
    ``sum(x*w) / sum(w)`` (0 where the weights sum to 0); variance: ``sum(x*x*w) /
    sum(w) - mean**2`` (the weights normalised by the caller; not clamped at 0, so a
    standard deviation can be NaN, as polars'); min and max of ``x*w`` with NaN
    winning and the later of equal values kept.
    """
    if op == W_SUM:
        acc = -zero
        for j in range(count):
            acc = acc + buf[j] * weights[w0 + j]
        return acc
    if op >= W_MIN:  # W_MIN or W_MAX
        best = buf[0] * weights[w0]
        for j in range(1, count):
            v = buf[j] * weights[w0 + j]
            if op == W_MIN:
                if not (best < v or best != best):
                    best = v
            elif not (best > v or best != best):
                best = v
        return best
    wsum = zero
    wtot = zero
    wssq = zero
    for j in range(count):
        x = buf[j]
        w = weights[w0 + j]
        if op != W_MEAN:
            wssq = wssq + x * x * w
        wsum = wsum + x * w
        wtot = wtot + w
    if wtot == zero:
        return zero
    mean = wsum / wtot
    if op == W_MEAN:
        return mean
    var = wssq / wtot - mean * mean
    return np.sqrt(var) if op == W_STD else var


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_weighted(values: Any, order: Any, tasks: Any, op: int, weights: Any,
                     min_samples: int, offset: int, zero: Any, out: Any,
                     out_valid: Any) -> None:  # fmt: skip
    """Weighted window ``op`` (`W_SUM`...) of each row; no row is null (the caller checks).

    Tasks as `rolling_sum`. The window of position ``p`` starts at ``s = p - offset``;
    the row at position ``r`` weighs ``weights[r - s]``, so a window cut by the
    segment's edge keeps the weights of its rows' places (polars' alignment, centred
    or not). Fewer than ``min_samples`` rows: null.
    """
    window = weights.shape[0]
    for t in numba.prange(tasks.shape[0]):
        a, b, c0, c1 = tasks[t, 0], tasks[t, 1], tasks[t, 2], tasks[t, 3]
        buf = np.empty(window, dtype=values.dtype)
        for p in range(c0, c1):
            s = p - offset
            start = max(s, a)
            end = min(s + window, b)
            for k in range(start, end):
                buf[k - start] = values[_row(order, k)]
            i = _row(order, p)
            out[i] = _weighted_of(buf, weights, start - s, end - start, op, zero)
            out_valid[i] = end - start >= min_samples


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_weighted_by_key(values: Any, ids: Any, parts: int, op: int, weights: Any,
                            min_samples: int, zero: Any, ring: Any, ring_valid: Any,
                            heads: Any, out: Any, out_valid: Any) -> None:  # fmt: skip
    """Trailing `rolling_weighted` per group of ``ids``, each group's window in its ring.

    ``parts`` threads share the groups.
    """
    window = ring.shape[1]
    groups = ring.shape[0]
    for part in numba.prange(parts):
        # a range of groups of its own: no cache line of the tables is written by two threads
        lo = np.uintp(part * groups // parts)
        hi = np.uintp((part + 1) * groups // parts)
        buf = np.empty(window, dtype=values.dtype)
        for r in range(values.shape[0]):
            i = np.uintp(r)
            g = np.uintp(ids[i])  # unsigned: no negative-index wraparound per table read
            if g < lo or g >= hi:
                continue
            _ring_push(ring, ring_valid, heads, g, values[i], True)
            filled = heads[g, 1]
            oldest = heads[g, 0] if filled == window else 0
            for j in range(filled):
                at = oldest + j
                buf[j] = ring[g, at - window if at >= window else at]
            out[i] = _weighted_of(buf, weights, window - filled, filled, op, zero)
            out_valid[i] = filled >= min_samples


@numba.njit(cache=True, nogil=True, inline="always")
def _extreme_enter(values: Any, valid: Any, order: Any, pos: int, largest: bool, queue: Any,
                   head: int, size: int, mask: int, count: int,
                   nans: int) -> tuple[int, int, int]:  # fmt: skip
    """Position ``pos`` enters a min/max window: counted, and queued unless dominated."""
    i = _row(order, pos)
    if valid[i]:
        v = values[i]
        count += 1
        if v != v:
            nans += 1
        else:
            # queued values the new one beats or equals can never be the extreme again
            # (of equal extremes the latest, as polars: -0.0 after 0.0 wins)
            while size > 0:
                w = values[_row(order, queue[(head + size - 1) & mask])]
                if (w <= v) if largest else (w >= v):
                    size -= 1
                else:
                    break
            queue[(head + size) & mask] = pos
            size += 1
    return count, nans, size


@numba.njit(cache=True, nogil=True, inline="always")
def _ewm_step(x: Any, x_valid: bool, mean: Any, weight: Any, seen: int, alpha: Any,
              new_wt: Any, adjust: bool, ignore_nulls: bool) -> tuple[Any, Any, int]:  # fmt: skip
    """One row of polars' exponentially weighted mean: the new (mean, weight, non-null count).

    The first non-null value starts the mean with weight 1; after it, the weight decays
    by ``1 - alpha`` per row (per non-null row with ``ignore_nulls``), and a value moves
    the mean by ``(x - mean) * new_wt / (weight + new_wt)``, in this order of
    operations, so that results (NaN and infinities included) are polars' own.
    """
    one = alpha / alpha
    if seen == 0 and x_valid:
        return x, one, 1
    if x_valid or not ignore_nulls:
        weight = weight * (one - alpha)
    if x_valid:
        total = weight + new_wt
        mean = mean + (x - mean) * (new_wt / total)
        weight = weight + one if adjust else one
        seen += 1
    return mean, weight, seen


@numba.njit(cache=True, nogil=True, parallel=True)
def ewm_mean(values: Any, valid: Any, order: Any, tasks: Any, alpha: Any, adjust: bool,
             min_samples: int, ignore_nulls: bool, out: Any, out_valid: Any) -> None:  # fmt: skip
    """Exponentially weighted mean (`_ewm_step`), each segment from its first row.

    A null row is null; a row is null until ``max(min_samples, 1)`` non-null values.
    """
    new_wt = alpha / alpha if adjust else alpha
    least = max(min_samples, 1)
    for t in numba.prange(tasks.shape[0]):
        a, b = tasks[t, 0], tasks[t, 1]
        mean = alpha - alpha
        weight = alpha - alpha
        seen = 0
        for j in range(a, b):
            i = _row(order, j)
            x_valid = valid[i]
            mean, weight, seen = _ewm_step(values[i], x_valid, mean, weight, seen, alpha,
                                           new_wt, adjust, ignore_nulls)  # fmt: skip
            out[i] = mean
            out_valid[i] = x_valid and seen >= least


@numba.njit(cache=True, nogil=True, inline="always")
def _ewm_rows(values: Any, valid: Any, a: int, b: int, write_from: int, alpha: Any,
              new_wt: Any, adjust: bool, ignore_nulls: bool, least: int, mean: Any,
              weight: Any, seen: int, out: Any, out_valid: Any) -> Any:  # fmt: skip
    """`_ewm_step` over rows ``[a, b)`` from a state; rows from ``write_from`` are written.

    Returns the state at ``write_from`` (``a <= write_from <= b``) and at ``b``.
    """
    for j in range(a, write_from):  # warming up: nothing written
        i = np.uintp(j)
        mean, weight, seen = _ewm_step(values[i], valid[i], mean, weight, seen, alpha,
                                       new_wt, adjust, ignore_nulls)  # fmt: skip
    at_mean, at_weight, at_seen = mean, weight, seen
    for j in range(write_from, b):
        i = np.uintp(j)
        x_valid = valid[i]
        mean, weight, seen = _ewm_step(values[i], x_valid, mean, weight, seen, alpha,
                                       new_wt, adjust, ignore_nulls)  # fmt: skip
        out[i] = mean
        out_valid[i] = x_valid and seen >= least
    return at_mean, at_weight, at_seen, mean, weight, seen


@numba.njit(cache=True, nogil=True, inline="always")
def _same_value(x: float, y: float) -> bool:
    """``x`` and ``y`` are one value: equal with the same sign (0.0 is not -0.0), or both NaN."""
    if x != x:
        return y != y
    return x == y and math.copysign(1.0, x) == math.copysign(1.0, y)


@numba.njit(cache=True, nogil=True, inline="always")
def _same_state(m1: Any, w1: Any, s1: int, m2: Any, w2: Any, s2: int, least: int) -> bool:
    """Whether two `_ewm_step` states give the same rows from here on.

    The same mean and weight (`_same_value`); the same count, or both past ``least``
    (every later row then reads the same).
    """
    return _same_value(m1, m2) and _same_value(w1, w2) \
        and (s1 == s2 or (s1 >= least and s2 >= least))  # fmt: skip


@numba.njit(cache=True, nogil=True, parallel=True)
def ewm_mean_split(values: Any, valid: Any, starts: Any, warm: int, alpha: Any,
                   adjust: bool, min_samples: int, ignore_nulls: bool, out: Any,
                   out_valid: Any) -> int:  # fmt: skip
    """`ewm_mean` of one frame-order segment, its parts ``[starts[k], starts[k + 1])`` in parallel.

    A part cannot know the state the rows before it leave, but the mean forgets it:
    each step keeps ``1 - alpha`` (or less) of the old mean's weight, so from any start
    the states meet, bit for bit, within a few hundred rows (about ``40 / alpha``). Each
    part but the first starts ``warm`` rows early from an empty state and records the
    state it reaches at its first row; the parts run in parallel; then, in order, a
    part whose recorded state is not its predecessor's last one, bit for bit
    (`_same_state`: the means did not meet; NaN far back), is run again from the true
    state. Either way every row is the sequential recurrence's own: polars' bits.
    Returns how many parts were run again.
    """
    new_wt = alpha / alpha if adjust else alpha
    least = max(min_samples, 1)
    parts = starts.shape[0] - 1
    zero = alpha - alpha
    means = np.zeros((parts, 2), dtype=values.dtype)  # at the part's start, at its end
    weights = np.zeros((parts, 2), dtype=values.dtype)
    seens = np.zeros((parts, 2), dtype=np.int64)
    for k in numba.prange(parts):
        a = starts[k]
        first = max(a - warm, 0) if k > 0 else a
        m0, w0, s0, m1, w1, s1 = _ewm_rows(values, valid, first, starts[k + 1], a, alpha,
                                           new_wt, adjust, ignore_nulls, least, zero, zero,
                                           0, out, out_valid)  # fmt: skip
        means[k, 0], weights[k, 0], seens[k, 0] = m0, w0, s0
        means[k, 1], weights[k, 1], seens[k, 1] = m1, w1, s1
    again = 0
    for k in range(1, parts):
        m, w, s = means[k - 1, 1], weights[k - 1, 1], seens[k - 1, 1]
        if _same_state(m, w, s, means[k, 0], weights[k, 0], seens[k, 0], least):
            continue
        again += 1
        _, _, _, m1, w1, s1 = _ewm_rows(values, valid, starts[k], starts[k + 1], starts[k],
                                        alpha, new_wt, adjust, ignore_nulls, least, m, w, s,
                                        out, out_valid)  # fmt: skip
        means[k, 1], weights[k, 1], seens[k, 1] = m1, w1, s1
    return again


@numba.njit(cache=True, nogil=True, inline="always")
def _ewm_var_step(x: Any, x_valid: bool, state: Any, alpha: Any, adjust: bool,
                  ignore_nulls: bool) -> Any:  # fmt: skip
    """One row of polars' exponentially weighted variance (its ``EwmCovState``, x = y).

    ``state`` holds (weight, mean, cov, weight sum, the square of the weight sum less
    the sum of the weights' squares, non-null count) in the values' type, updated in
    place with polars' operations in polars' order. The fifth, the denominator of
    the bias correction, is kept as it changes (``2 * new * sum``), not as the
    difference of two sums: a gap of nulls decays the old weights below the rounding
    of the new one, where the difference is 0 (the row null) and this is not;
    the new non-null count is returned (a Float32 count stops at 2**24, far above any
    ``min_samples`` it is compared with).
    """
    one = alpha / alpha
    zero = alpha - alpha
    count = np.int64(state[5])
    if count == 0 and x_valid:
        state[0] = one
        state[1] = x
        state[2] = zero
        state[3] = one
        state[4] = zero
        state[5] = one
        return 1
    decay = one - alpha
    decays = x_valid or not ignore_nulls  # polars decays the weights on null rows too
    if decays:
        state[3] = state[3] * decay
        state[4] = state[4] * (decay * decay)
        state[0] = state[0] * decay
    if x_valid:
        other = one if adjust else alpha
        weight, mean, cov = state[0], state[1], state[2]
        new_weight = weight + other
        frac = other / new_weight
        new_mean = mean + (x - mean) * frac
        d_old = mean - new_mean
        d_new = x - new_mean
        state[2] = (weight * (cov + d_old * d_old) + other * d_new * d_new) / new_weight
        state[0] = new_weight
        state[1] = new_mean
        state[4] = state[4] + (other + other) * state[3]
        state[3] = state[3] + other
        if not adjust:
            state[3] = state[3] / new_weight
            state[4] = state[4] / (new_weight * new_weight)
            state[0] = one
        count += 1
        state[5] = state[5] + one
    return count


@numba.njit(cache=True, nogil=True, inline="always")
def _ewm_var_value(state: Any, x_valid: bool, count: int, least: int, bias: bool,
                   std: bool) -> tuple[Any, bool]:  # fmt: skip
    """The row's variance (``std``: its square root) and whether it is valid."""
    cov = state[2]
    if not x_valid or count < least:
        return cov, False
    if not bias:  # polars' correction: (sum w)^2 / ((sum w)^2 - sum w^2)
        numerator = state[3] * state[3]
        denominator = state[4]
        if not denominator > numerator - numerator:  # 0 of the type (one value, or none)
            return cov, False
        cov = (numerator / denominator) * cov
    return (np.sqrt(cov) if std else cov), True


@numba.njit(cache=True, nogil=True, parallel=True)
def ewm_var(values: Any, valid: Any, order: Any, tasks: Any, alpha: Any, adjust: bool,
            bias: bool, min_samples: int, ignore_nulls: bool, std: bool, out: Any,
            out_valid: Any) -> None:  # fmt: skip
    """Exponentially weighted variance (``std``: deviation), each segment from its first row.

    polars' recurrence (`_ewm_var_step`), in the values' type (Float32 stays); a null
    row is null, as is a row before ``max(min_samples, 1)`` non-null values and, unless
    ``bias``, one whose weights leave no correction (the first value).
    """
    least = max(min_samples, 1)
    for t in numba.prange(tasks.shape[0]):
        a, b = tasks[t, 0], tasks[t, 1]
        state = np.zeros(6, dtype=values.dtype)
        for j in range(a, b):
            i = _row(order, j)
            x_valid = valid[i]
            count = _ewm_var_step(values[i], x_valid, state, alpha, adjust, ignore_nulls)
            out[i], out_valid[i] = _ewm_var_value(state, x_valid, count, least, bias, std)


@numba.njit(cache=True, nogil=True, inline="always")
def _ewm_var_rows(values: Any, valid: Any, a: int, b: int, write_from: int, alpha: Any,
                  adjust: bool, bias: bool, least: int, ignore_nulls: bool, std: bool,
                  state: Any, at_start: Any, out: Any, out_valid: Any) -> None:  # fmt: skip
    """`_ewm_var_step` over rows ``[a, b)`` from ``state``; rows from ``write_from`` written.

    ``at_start`` receives the state at ``write_from`` (``a <= write_from <= b``).
    """
    for j in range(a, write_from):  # warming up: nothing written
        i = np.uintp(j)
        _ewm_var_step(values[i], valid[i], state, alpha, adjust, ignore_nulls)
    at_start[:] = state
    for j in range(write_from, b):
        i = np.uintp(j)
        x_valid = valid[i]
        count = _ewm_var_step(values[i], x_valid, state, alpha, adjust, ignore_nulls)
        out[i], out_valid[i] = _ewm_var_value(state, x_valid, count, least, bias, std)


@numba.njit(cache=True, nogil=True, parallel=True)
def ewm_var_split(values: Any, valid: Any, starts: Any, warm: int, alpha: Any, adjust: bool,
                  bias: bool, min_samples: int, ignore_nulls: bool, std: bool, out: Any,
                  out_valid: Any) -> int:  # fmt: skip
    """`ewm_var` of one frame-order segment in parallel parts, as `ewm_mean_split`.

    Each part but the first warms up from an empty state on the ``warm`` rows before
    it; a part whose warmed state (weights, mean, covariance, their sums: by value and
    sign, NaN equal to NaN; the count where either is below ``min_samples``) is not its
    predecessor's last one runs again from it. Returns how many parts ran again.
    """
    least = max(min_samples, 1)
    parts = starts.shape[0] - 1
    firsts = np.zeros((parts, 6), dtype=values.dtype)  # the state at the part's first row
    lasts = np.zeros((parts, 6), dtype=values.dtype)  # and after its last
    for k in numba.prange(parts):
        a = starts[k]
        state = np.zeros(6, dtype=values.dtype)
        _ewm_var_rows(values, valid, max(a - warm, 0) if k > 0 else a, starts[k + 1], a, alpha,
                      adjust, bias, least, ignore_nulls, std, state, firsts[k], out,
                      out_valid)  # fmt: skip
        lasts[k] = state
    again = 0
    for k in range(1, parts):
        same = True
        for m in range(5):
            same = same and _same_value(lasts[k - 1, m], firsts[k, m])
        c1, c2 = np.int64(lasts[k - 1, 5]), np.int64(firsts[k, 5])
        if same and (c1 == c2 or (c1 >= least and c2 >= least)):
            continue
        again += 1
        state = lasts[k - 1].copy()
        _ewm_var_rows(values, valid, starts[k], starts[k + 1], starts[k], alpha, adjust, bias,
                      least, ignore_nulls, std, state, firsts[k], out, out_valid)  # fmt: skip
        lasts[k] = state
    return again


@numba.njit(cache=True, nogil=True)
def ewm_var_by_key(values: Any, valid: Any, ids: Any, alpha: Any, adjust: bool, bias: bool,
                   min_samples: int, ignore_nulls: bool, std: bool, states: Any, out: Any,
                   out_valid: Any) -> None:  # fmt: skip
    """`ewm_var` per group of ``ids``: each group's state a row of ``states``."""
    least = max(min_samples, 1)
    for r in range(values.shape[0]):
        i = np.uintp(r)
        state = states[np.uintp(ids[i])]  # unsigned: no negative-index wraparound
        x_valid = valid[i]
        count = _ewm_var_step(values[i], x_valid, state, alpha, adjust, ignore_nulls)
        out[i], out_valid[i] = _ewm_var_value(state, x_valid, count, least, bias, std)


@numba.njit(cache=True, nogil=True, parallel=True)
def fill(values: Any, valid: Any, order: Any, tasks: Any, backward: bool,
         limit: int, zero: Any, out: Any, out_valid: Any) -> None:  # fmt: skip
    """A null row takes the previous (``backward``: next) non-null value of its segment.

    At most ``limit`` rows away (``limit < 0``: any distance); further rows stay null.
    """
    for t in numba.prange(tasks.shape[0]):
        a, b = tasks[t, 0], tasks[t, 1]
        last = -1  # step of the last non-null value seen
        held = zero
        for step in range(b - a):
            j = b - 1 - step if backward else a + step
            i = _row(order, j)
            if valid[i]:
                held = values[i]
                last = step
                out[i] = held
                out_valid[i] = True
            elif last >= 0 and (limit < 0 or step - last <= limit):
                out[i] = held
                out_valid[i] = True
            else:
                out[i] = held
                out_valid[i] = False


# -- per-group carries: one pass in frame order, a small state per group -------------------
#
# With few groups, a scan by key is fastest as one sequential pass over the rows in frame
# order (or reversed), keeping each group's running state in small tables indexed by the
# group id: no sort, no random reads of the values. The tables are arguments: a scan over
# a whole column passes new ones (`colbridge.backends.scans.new_carry`); a stream passes
# the same ones batch after batch, so each batch goes on where the last one stopped.
# They give the same answers as the kernels above. Where a row's work is much more than
# reading its group id (a window read whole from its ring), ``parts`` threads each take a
# range of the groups and walk all the rows, skipping other threads' groups, so that
# every group is still scanned in frame order, by one thread. Elsewhere a row costs
# little more than that read (and the branch on it), and one thread is faster, except
# for a shift: it adds nothing, so chunks of rows can run apart and mend their first
# rows of each group afterwards (`shift_by_key`).


@numba.njit(cache=True, nogil=True, inline="always")
def _step_row(n: int, reverse: bool, step: int) -> Any:
    return np.uintp(n - 1 - step if reverse else step)


@numba.njit(cache=True, nogil=True)
def cumulative_by_key(values: Any, valid: Any, ids: Any, op: int, reverse: bool, acc: Any,
                      seen: Any, counts: Any, out: Any, out_valid: Any) -> None:  # fmt: skip
    """`cumulative` per group of ``ids``: running values ``acc``, whether ``seen``, ``counts``.

    As `cumulative`, only ``cum_count`` writes ``out_valid``. One loop per operation, not
    a test of ``op`` per row; sums and products branch-free, as `_running_total`.
    """
    n = values.shape[0]
    if op == CUM_COUNT:
        for step in range(n):
            i = _step_row(n, reverse, step)
            g = np.uintp(ids[i])  # unsigned: no negative-index wraparound per table read
            c = counts[g] + valid[i]
            counts[g] = c
            out[i] = c
            out_valid[i] = True
        return
    # a null row adds +0 or multiplies by 1 (where the tables start: `new_carry`)
    if op == CUM_SUM:
        zero = acc.dtype.type(0)
        for step in range(n):
            i = _step_row(n, reverse, step)
            g = np.uintp(ids[i])
            v = values[i]  # read before the test: a select, not a branch (`_running_total`)
            a = acc[g] + (v if valid[i] else zero)
            acc[g] = a
            out[i] = a
        return
    if op == CUM_PROD:
        one = acc.dtype.type(1)
        for step in range(n):
            i = _step_row(n, reverse, step)
            g = np.uintp(ids[i])
            v = values[i]
            a = acc[g] * (v if valid[i] else one)
            acc[g] = a
            out[i] = a
        return
    for step in range(n):
        i = _step_row(n, reverse, step)
        g = np.uintp(ids[i])
        a = acc[g]
        if valid[i]:
            v = values[i]
            # of equal values the latest (-0.0 after 0.0), as polars
            if op == CUM_MIN:
                if not seen[g] or v <= a or a != a:
                    a = v
            elif v >= a or a != a or not seen[g]:
                a = v
            seen[g] = True
            acc[g] = a
        out[i] = a


@numba.njit(cache=True, nogil=True)
def ewm_mean_by_key(values: Any, valid: Any, ids: Any, alpha: Any, adjust: bool,
                    min_samples: int, ignore_nulls: bool, means: Any, weights: Any, seen: Any,
                    out: Any, out_valid: Any) -> None:  # fmt: skip
    """`ewm_mean` per group of ``ids``: each group's mean, weight and non-null count."""
    new_wt = alpha / alpha if adjust else alpha
    least = max(min_samples, 1)
    for r in range(values.shape[0]):
        i = np.uintp(r)
        g = np.uintp(ids[i])  # unsigned: no negative-index wraparound per table read
        x_valid = valid[i]
        mean, weight, n = _ewm_step(values[i], x_valid, means[g], weights[g], seen[g], alpha,
                                    new_wt, adjust, ignore_nulls)  # fmt: skip
        means[g] = mean
        weights[g] = weight
        seen[g] = n
        out[i] = mean
        out_valid[i] = x_valid and n >= least


@numba.njit(cache=True, nogil=True)
def fill_by_key(values: Any, valid: Any, ids: Any, backward: bool, limit: int, held: Any,
                last: Any, steps: Any, out: Any, out_valid: Any) -> None:  # fmt: skip
    """`fill` per group of ``ids``.

    State: each group's last value ``held``, its step ``last`` (-1: none yet) and the
    group's rows so far ``steps``.
    """
    n = values.shape[0]
    for step in range(n):
        i = _step_row(n, backward, step)
        g = np.uintp(ids[i])  # unsigned: no negative-index wraparound per table read
        s = steps[g]
        steps[g] = s + 1
        if valid[i]:
            held[g] = values[i]
            last[g] = s
            out[i] = values[i]
            out_valid[i] = True
        else:
            out[i] = held[g]
            out_valid[i] = last[g] >= 0 and (limit < 0 or s - last[g] <= limit)


@numba.njit(cache=True, nogil=True, inline="always")
def _ring_push(ring: Any, ring_valid: Any, heads: Any, g: Any, v: Any, ok: bool) -> None:
    """Row value ``v`` enters group ``g``'s ring.

    ``heads[g]`` is (the next slot, rows held): a full ring's next slot holds the row
    ``width`` rows earlier, which the new row replaces. (No value is returned: with a
    returned tuple, numba compiles the carried loops several times slower.)
    """
    width = ring.shape[1]
    slot = heads[g, 0]
    ring[g, slot] = v
    ring_valid[g, slot] = ok
    heads[g, 0] = slot + 1 if slot + 1 < width else 0
    if heads[g, 1] < width:
        heads[g, 1] += 1


@numba.njit(cache=True, nogil=True)
def _shift_steps(values: Any, valid: Any, ids: Any, a: int, b: int, backward: bool,
                 has_fill: bool, fill_value: Any, ring: Any, ring_valid: Any, heads: Any,
                 first: Any, out: Any, out_valid: Any) -> None:  # fmt: skip
    """`shift_by_key`'s steps ``[a, b)`` (rows in frame order, or reversed: ``backward``).

    A row whose group's ring is not yet full takes the fill, and its row is kept in
    ``first[g, k]`` (``k``: the group's rows held before it) where ``first`` has rows:
    a chunk after the first one mends those rows from the chunks before it.
    A shift by one row (``diff()``, the usual lag) keeps the ring's one slot without
    its bookkeeping: the same tables and answers, in half the time (measured).
    """
    rows = values.shape[0]
    lag = ring.shape[1]
    mend = first.shape[0] > 0
    if lag == 1:
        for step in range(a, b):
            i = _step_row(rows, backward, step)
            g = np.uintp(ids[i])  # unsigned: no negative-index wraparound per table read
            if heads[g, 1] == 1:  # the group's row before this one
                out[i] = ring[g, 0]
                out_valid[i] = ring_valid[g, 0]
            else:
                out[i] = fill_value
                out_valid[i] = has_fill
                if mend:
                    first[g, 0] = i
            ring[g, 0] = values[i]
            ring_valid[g, 0] = valid[i]
            heads[g, 1] = 1  # slot 0 is the next slot of a ring of one
        return
    for step in range(a, b):
        i = _step_row(rows, backward, step)
        g = np.uintp(ids[i])  # unsigned: no negative-index wraparound per table read
        if heads[g, 1] == lag:  # the next slot holds the row `lag` rows earlier
            slot = heads[g, 0]
            out[i] = ring[g, slot]
            out_valid[i] = ring_valid[g, slot]
        else:
            out[i] = fill_value
            out_valid[i] = has_fill
            if mend:
                first[g, heads[g, 1]] = i
        _ring_push(ring, ring_valid, heads, g, values[i], valid[i])


@numba.njit(cache=True, nogil=True, parallel=True)
def shift_by_key(values: Any, valid: Any, ids: Any, n: int, parts: int, has_fill: bool,
                 fill_value: Any, ring: Any, ring_valid: Any, heads: Any, out: Any,
                 out_valid: Any) -> None:  # fmt: skip
    """`shift` per group of ``ids``: each group's last ``|n|`` rows in a ring (``n != 0``).

    ``parts`` chunks of rows run in parallel, each from empty rings of its own (the
    first from the tables passed); then, group by group, the rows at the start of each
    chunk whose row ``|n|`` earlier lies in an earlier chunk take it from the rings of
    the chunks before, which each chunk's last rows then join. Exact in any split: a
    shift moves values, it adds nothing.
    """
    rows = values.shape[0]
    lag = ring.shape[1]
    backward = n < 0
    no_rows = np.empty((0, lag), dtype=np.int64)
    if parts <= 1:
        _shift_steps(values, valid, ids, 0, rows, backward, has_fill, fill_value, ring,
                     ring_valid, heads, no_rows, out, out_valid)  # fmt: skip
        return
    groups = ring.shape[0]
    rings = np.empty((parts, groups, lag), dtype=ring.dtype)
    rings_valid = np.zeros((parts, groups, lag), dtype=np.bool_)
    held = np.zeros((parts, groups, 2), dtype=np.int64)
    firsts = np.empty((parts, groups, lag), dtype=np.int64)
    rings[0] = ring
    rings_valid[0] = ring_valid
    held[0] = heads
    for c in numba.prange(parts):
        a, b = rows * c // parts, rows * (c + 1) // parts
        _shift_steps(values, valid, ids, a, b, backward, has_fill, fill_value, rings[c],
                     rings_valid[c], held[c], firsts[c] if c > 0 else no_rows, out,
                     out_valid)  # fmt: skip
    ring[:] = rings[0]
    ring_valid[:] = rings_valid[0]
    heads[:] = held[0]
    for gi in numba.prange(groups):
        g = np.uintp(gi)
        for c in range(1, parts):
            count = held[c, g, 1]  # the chunk's rows of the group, up to the ring's
            for k in range(count):  # its k-th row reads the (lag - k)-th last row before
                back = lag - k
                if back <= heads[g, 1]:
                    at = heads[g, 0] - back
                    at = at + lag if at < 0 else at
                    i = firsts[c, g, k]
                    out[i] = ring[g, at]
                    out_valid[i] = ring_valid[g, at]
            oldest = held[c, g, 0] if count == lag else 0
            for k in range(count):  # the chunk's last rows join the rings', oldest first
                at = oldest + k
                at = at - lag if at >= lag else at
                _ring_push(ring, ring_valid, heads, g, rings[c, g, at], rings_valid[c, g, at])


@numba.njit(cache=True, nogil=True)
def rolling_sum_by_key(values: Any, valid: Any, ids: Any, mean: bool, kahan: bool,
                       min_samples: int, zero: Any, specials: Any, ring: Any, ring_valid: Any,
                       heads: Any, totals: Any, tallies: Any, counts: Any, out: Any,
                       out_valid: Any) -> None:  # fmt: skip
    """`rolling_sum` (trailing windows of ``ring.shape[1]`` rows) per group of ``ids``.

    Each group keeps its window in a ring, its running sum with both compensations
    (``totals``), its tally of non-finite values and its count; the same updates, in
    the same order, as `rolling_sum`.
    """
    window = ring.shape[1]
    for r in range(values.shape[0]):
        i = np.uintp(r)
        g = np.uintp(ids[i])  # unsigned: no negative-index wraparound per table read
        slot = heads[g, 0]
        leaving = heads[g, 1] == window and ring_valid[g, slot]
        old = ring[g, slot]
        total, err_add, err_sub = totals[g, 0], totals[g, 1], totals[g, 2]
        c = counts[g]
        if leaving:
            c -= 1
            total, err_sub = _sum_step(zero + old, total, err_sub, -1, tallies, g, kahan)
        _ring_push(ring, ring_valid, heads, g, values[i], valid[i])
        if valid[i]:
            total, err_add = _sum_step(zero + values[i], total, err_add, 1, tallies, g, kahan)
            c += 1
        if window == 1:  # as `rolling_sum`: a window sharing no row starts afresh
            v = values[i]
            total = zero + v if valid[i] and _finite(v) else zero
            err_add, err_sub = zero, zero
        totals[g, 0], totals[g, 1], totals[g, 2] = total, err_add, err_sub
        counts[g] = c
        # the output as `rolling_sum` writes it, repeated rather than shared: an inlined
        # helper writing `out` made this loop three times slower (measured)
        value = _sum_value(total, tallies, g, specials)
        if mean:
            out[i] = value
            if c > 0:
                out[i] = out[i] / c
            out_valid[i] = c >= min_samples and c > 0
        else:
            out[i] = value
            out_valid[i] = c >= min_samples


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_var_by_key(values: Any, valid: Any, ids: Any, parts: int, std: bool,
                       min_samples: int, ddof: int, ring: Any, ring_valid: Any, heads: Any,
                       suffix: Any, sums: Any, out: Any, out_valid: Any) -> None:  # fmt: skip
    """Trailing rolling var (``std``: its square root) per group of ``ids``: two stacks.

    `rolling_var`'s blocks within each group: a group's rows fill its ring's slots in
    turn, so when a row lands in slot 0 the ring holds the block just completed, in
    order, and its suffix sums are made then (``suffix[g, j]``: ``(s, q, n)`` of slots
    ``j..``, around the block's last non-null value ``sums[g, 4]``). ``sums[g, :4]``:
    the current block's prefix ``(n, s, q)`` and its first non-null value;
    ``sums[g, 5]``: how far back polars' block starts (`_front_end`), plus one (0:
    none yet), for the windows left to `_welford_ring` (`_overflows`). A row's
    window is the suffix after its slot and the prefix up to it (`_two_part_var`):
    each value is read twice, whatever the window. ``parts`` threads share the groups
    (each a range of them; a range of its own keeps each cache line of the tables
    to one thread).
    """
    window = ring.shape[1]
    groups = ring.shape[0]
    for part in numba.prange(parts):
        lo = np.uintp(part * groups // parts)
        hi = np.uintp((part + 1) * groups // parts)
        for r in range(values.shape[0]):
            i = np.uintp(r)
            g = np.uintp(ids[i])  # unsigned: no negative-index wraparound per table read
            if g < lo or g >= hi:
                continue
            slot = heads[g, 0]
            full = heads[g, 1] == window  # a block before this one: the window reaches it
            # polars' block: starts anew where a non-null row leaves `window` or more rows
            # after the last block started (the slot to be overwritten holds the row leaving)
            age = sums[g, 5] + 1.0 if sums[g, 5] > 0.0 else 0.0
            if full and ring_valid[g, slot] and (age == 0.0 or age > 2 * window):
                age = window + 1.0
            sums[g, 5] = age
            if slot == 0 and full:  # the ring holds the last block: its suffix sums
                s = 0.0
                q = 0.0
                c = 0.0
                k = 0.0
                suffix[g, window, 0] = 0.0
                suffix[g, window, 1] = 0.0
                suffix[g, window, 2] = 0.0
                for j in range(window - 1, -1, -1):
                    if ring_valid[g, j]:
                        if c == 0.0:
                            k = np.float64(ring[g, j])
                        x = np.float64(ring[g, j])
                        d = (x - k) + (x - x)  # NaN for NaN and infinities, as `_enter`
                        s += d
                        q += d * d
                        c += 1.0
                    suffix[g, j, 0] = s
                    suffix[g, j, 1] = q
                    suffix[g, j, 2] = c
                sums[g, 4] = k
            if slot == 0:
                sums[g, 0] = 0.0
                sums[g, 1] = 0.0
                sums[g, 2] = 0.0
            ok = valid[i]
            _ring_push(ring, ring_valid, heads, g, values[i], ok)
            if ok:
                x = np.float64(values[i])
                if sums[g, 0] == 0.0:
                    sums[g, 3] = x
                d = (x - sums[g, 3]) + (x - x)  # NaN for NaN and infinities, as `_enter`
                sums[g, 0] += 1.0
                sums[g, 1] += d
                sums[g, 2] += d * d
            n_front = suffix[g, slot + 1, 2] if full else 0.0
            count = n_front + sums[g, 0]
            var = 0.0
            if count - ddof > 0:
                var = _two_part_var(n_front, suffix[g, slot + 1, 0], suffix[g, slot + 1, 1],
                                    sums[g, 4], sums[g, 0], sums[g, 1], sums[g, 2],
                                    sums[g, 3], ddof)  # fmt: skip
                if _overflows(var, count, suffix[g, slot + 1, 1], sums[g, 2]):
                    held = heads[g, 1]
                    split = min(int(age) - window, held) if age > 0.0 else held
                    var = _welford_ring(ring, ring_valid, g, slot, held, split, ddof)
            if var < 0.0:
                var = 0.0
            out[i] = var
            if std:  # the root of the variance in the output's type, as `rolling_var`
                out[i] = np.sqrt(out[i])
            out_valid[i] = count >= min_samples and count - ddof > 0


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_extreme_by_key(values: Any, valid: Any, ids: Any, parts: int, largest: bool,
                           min_samples: int, zero: Any, ring: Any, ring_valid: Any,
                           heads: Any, out: Any, out_valid: Any) -> None:  # fmt: skip
    """Trailing rolling min (max: ``largest``) per group of ``ids``, from each group's ring.

    Each row's window is its group's last ``ring.shape[1]`` rows, read whole from the
    ring (oldest first), NaN winning, as `rolling_extreme`. ``parts`` threads share the groups (each
    a range of them, as `rolling_var_by_key`).
    """
    groups = ring.shape[0]
    for part in numba.prange(parts):
        # a range of groups of its own: no cache line of the tables is written by two threads
        lo = np.uintp(part * groups // parts)
        hi = np.uintp((part + 1) * groups // parts)
        for r in range(values.shape[0]):
            i = np.uintp(r)
            g = np.uintp(ids[i])  # unsigned: no negative-index wraparound per table read
            if g < lo or g >= hi:
                continue
            _ring_push(ring, ring_valid, heads, g, values[i], valid[i])
            filled = heads[g, 1]
            width = ring.shape[1]
            oldest = heads[g, 0] if filled == width else 0
            best = zero
            nans = 0
            count = 0
            for j in range(filled):
                # oldest first: of equal extremes (0.0 and -0.0) the latest, as polars
                at = oldest + j
                at = at - width if at >= width else at
                if not ring_valid[g, at]:
                    continue
                v = ring[g, at]
                if v != v:
                    nans += 1
                elif count == nans or ((v >= best) if largest else (v <= best)):
                    best = v
                count += 1
            if nans > 0:
                out[i] = np.nan
            else:
                out[i] = best  # a statement of its own: an integer stays one
            out_valid[i] = count >= min_samples and count > 0


#: `rolling_quantile`'s interpolation codes, in `colbridge.expr.nodes.QUANTILE_METHODS` order
_NEAREST, _HIGHER, _LOWER, _MIDPOINT, _LINEAR, _EQUIPROBABLE = range(6)


@numba.njit(cache=True, nogil=True, inline="always")
def sorts_before(a: Any, b: Any) -> bool:
    """``a`` sorts before ``b``: numbers in order, NaN after every number."""
    return bool(a < b or (b != b and a == a))


@numba.njit(cache=True, nogil=True, inline="always")
def _place_of(buf: Any, size: int, x: Any) -> int:
    """Where one ``x`` is in the sorted ``buf[:size]``: its first copy (NaN: the last NaN)."""
    if x != x:
        return size - 1  # the NaN are last: one of them
    k_lo, k_hi = 0, size
    while k_lo < k_hi:  # the first value not before x: x itself
        mid = (k_lo + k_hi) // 2
        if sorts_before(buf[mid], x):
            k_lo = mid + 1
        else:
            k_hi = mid
    return k_lo


@numba.njit(cache=True, nogil=True, inline="always")
def sorted_remove(buf: Any, size: int, x: Any) -> int:
    """Take one ``x`` out of the sorted ``buf[:size]`` (NaN last); the new size."""
    for k in range(_place_of(buf, size, x), size - 1):
        buf[k] = buf[k + 1]
    return size - 1


@numba.njit(cache=True, nogil=True, inline="always")
def sorted_insert(buf: Any, size: int, x: Any) -> int:
    """Put ``x`` into the sorted ``buf[:size]`` after its equals (NaN last); the new size."""
    k_lo, k_hi = 0, size
    while k_lo < k_hi:  # after every value not after x
        mid = (k_lo + k_hi) // 2
        if sorts_before(x, buf[mid]):
            k_hi = mid
        else:
            k_lo = mid + 1
    for k in range(size, k_lo, -1):
        buf[k] = buf[k - 1]
    buf[k_lo] = x
    return size + 1


@numba.njit(cache=True, nogil=True, inline="always")
def sorted_replace(buf: Any, size: int, old: Any, new: Any) -> None:
    """`sorted_remove` of ``old``, then `sorted_insert` of ``new``, in one move.

    The buffer comes out as the two calls leave it: ``old``'s copy is found as
    `sorted_remove` finds it, and the values from there towards ``new``'s place move
    one step while ``new`` goes after those not after it, as `sorted_insert` puts it
    (one binary search, and a walk over the values that move anyway).
    """
    k = _place_of(buf, size, old)
    while k + 1 < size and not sorts_before(new, buf[k + 1]):  # new goes further up
        buf[k] = buf[k + 1]
        k += 1
    while k > 0 and sorts_before(new, buf[k - 1]):  # new goes further down
        buf[k] = buf[k - 1]
        k -= 1
    buf[k] = new


@numba.njit(cache=True, nogil=True, inline="always")
def window_quantile(buf: Any, size: int, quantile: float, method: int, half: Any, out: Any,
                    i: int) -> None:  # fmt: skip
    """``out[i]``: the ``quantile`` of a window's ``size`` sorted values ``buf[:size]``.

    As polars' ``QuantileUpdate`` (`method` one of ``_NEAREST``... ``_EQUIPROBABLE``);
    ``half`` is 0.5 in the values' type. A linear interpolation's fraction is rounded
    to the values' type first (through ``out``), as polars computes it in that type.
    """
    last = size - 1
    position = (size - 1.0) * quantile
    below = np.floor(position)
    low = min(int(below), last)
    top = min(int(np.ceil(position)), last)
    if method == _NEAREST:
        out[i] = buf[min(int(below) + (1 if position - below >= 0.5 else 0), last)]
    elif method == _HIGHER:
        out[i] = buf[top]
    elif method == _LOWER:
        out[i] = buf[low]
    elif method == _EQUIPROBABLE:
        out[i] = buf[max(int(np.ceil(size * quantile)) - 1, 0)]
    elif top == low:
        out[i] = buf[low]
    elif method == _MIDPOINT:
        out[i] = (buf[low] + buf[top]) * half
    else:
        out[i] = position - below  # the fraction, rounded to the values' type
        fraction = out[i]
        out[i] = fraction * (buf[top] - buf[low]) + buf[low]


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_sorted(values: Any, valid: Any, order: Any, tasks: Any, window: int,
                   min_samples: int, offset: int, quantile: float, method: int, rank: int,
                   half: Any, out: Any, out_valid: Any) -> None:  # fmt: skip
    """Polars' ``rolling_quantile`` (``rank`` -1) or ``rolling_rank``: windows kept sorted.

    Tasks and windows as `rolling_sum`. The window's values stay in ascending order
    (NaN last) in a buffer: a row entering is inserted after the values not above it,
    one leaving removed where its value is, each a binary search and a move of the
    values after it (``O(window)`` per row); where the window moves by one row, the row
    leaving and the one entering are one move (`sorted_replace`). With ``n`` values (at least
    ``min_samples``, else null), the position ``(n - 1) * quantile`` is taken as
    polars' ``QuantileUpdate`` takes it (``method``: `QUANTILE_METHODS` order), in the
    values' own type: ``midpoint`` is ``(lower + upper) * half`` (``half`` = 0.5 of that
    type: halving is exact), ``linear`` ``p * (upper - lower) + lower`` with the
    fraction ``p`` rounded to the type. With ``rank`` (a ``RANK_*`` code) the row's own
    value is ranked among them instead (`window_rank`), a null row null.
    """
    for t in numba.prange(tasks.shape[0]):
        a, b, c0, c1 = tasks[t, 0], tasks[t, 1], tasks[t, 2], tasks[t, 3]
        buf = np.empty(max(window, 1), dtype=values.dtype)
        size = 0
        lo = -1  # the window held: positions lo .. hi - 1
        hi = -1
        for p in range(c0, c1):
            start = max(p - offset, a)
            end = max(min(p - offset + window, b), start)
            size, lo, hi = _slide_sorted(buf, size, lo, hi, start, end, values, valid, order)
            i = _row(order, p)
            if size == 0 or size < min_samples or (rank >= 0 and not valid[i]):
                out[i] = 0
                out_valid[i] = False
                continue
            out_valid[i] = True
            if rank >= 0:
                out[i] = window_rank(buf, size, values[i], rank)
            else:
                window_quantile(buf, size, quantile, method, half, out, i)


@numba.njit(cache=True, nogil=True, inline="always")
def _slide_sorted(buf: Any, size: int, lo: int, hi: int, start: int, end: int, values: Any,
                  valid: Any, order: Any) -> tuple[int, int, int]:  # fmt: skip
    """Move a sorted window ``buf[:size]`` of segment positions ``[lo, hi)`` to ``[start, end)``.

    ``lo`` -1: nothing held yet. Where the window moves a row (every row but the edges'),
    the row leaving and the one entering are one move (`sorted_replace`); otherwise
    the rows leaving are removed and those entering inserted. Returns the new size and
    ``(lo, hi)``.
    """
    if lo < 0:
        lo = start
        hi = start
    if start == lo + 1 and end == hi + 1 and lo < hi:
        r_out = _row(order, lo)
        r_in = _row(order, hi)
        if valid[r_out] and valid[r_in]:
            sorted_replace(buf, size, values[r_out], values[r_in])
        elif valid[r_out]:
            size = sorted_remove(buf, size, values[r_out])
        elif valid[r_in]:
            size = sorted_insert(buf, size, values[r_in])
        return size, start, end
    while lo < start:  # rows leaving the window
        if lo < hi:
            r = _row(order, lo)
            if valid[r]:
                size = sorted_remove(buf, size, values[r])
        lo += 1
    if hi < lo:
        hi = lo
    while hi < end:  # rows entering it
        r = _row(order, hi)
        if valid[r]:
            size = sorted_insert(buf, size, values[r])
        hi += 1
    return size, lo, hi


#: `rolling_rank`'s methods, by code
RANK_AVERAGE, RANK_MIN, RANK_MAX, RANK_DENSE = range(4)


@numba.njit(cache=True, nogil=True, inline="always")
def window_rank(buf: Any, size: int, x: Any, method: int) -> float:
    """The rank of ``x`` among a window's ``size`` sorted values ``buf[:size]`` (it is one).

    As polars' ``rolling_rank`` (NaN last, equal to each other; ``-0.0`` equals
    ``0.0``): with ``b`` values sorting before ``x`` and ``u`` not after it,
    ``RANK_AVERAGE`` ``(b + 1 + u) / 2``, ``RANK_MIN`` ``b + 1``, ``RANK_MAX`` ``u``,
    ``RANK_DENSE`` one more than the distinct values before it.
    """
    k_lo, k_hi = 0, size
    while k_lo < k_hi:  # the values sorting before x
        mid = (k_lo + k_hi) // 2
        if sorts_before(buf[mid], x):
            k_lo = mid + 1
        else:
            k_hi = mid
    below = k_lo
    k_hi = size
    while k_lo < k_hi:  # and those not after it
        mid = (k_lo + k_hi) // 2
        if sorts_before(x, buf[mid]):
            k_hi = mid
        else:
            k_lo = mid + 1
    upto = k_lo
    if method == RANK_AVERAGE:
        return (below + 1 + upto) / 2.0
    if method == RANK_MIN:
        return float(below + 1)
    if method == RANK_MAX:
        return float(upto)
    distinct = 0
    for k in range(below):
        if k == 0 or sorts_before(buf[k - 1], buf[k]):
            distinct += 1
    return float(distinct + 1)


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_moment(values: Any, valid: Any, order: Any, tasks: Any, window: int,
                   min_samples: int, offset: int, kurtosis: bool, bias: bool, fisher: bool,
                   out: Any, out_valid: Any) -> None:  # fmt: skip
    """Polars' ``rolling_skew`` (``kurtosis``: ``rolling_kurtosis``) of each row's window.

    Tasks and windows as `rolling_sum`. Each window is taken afresh, in two passes
    over its non-null values in float64 (``O(window)`` per row): their mean, then the
    sums of the deviations' squares, cubes and fourth powers, so a window's answer
    does not depend on the rows before it. Both passes read the values less the
    window's first one (exact for values near it), so values far from zero keep their
    deviations' precision and a window of equal values has deviations of exactly 0.
    The formulas are the whole-column ones (`colbridge.plan.typecheck`'s
    ``_moments``): NaN where the window does not vary
    (``m2 <= (eps * mean)**2``), the bias corrections where ``bias`` is false (null
    below 3 values for the skew, 4 for the kurtosis), ``fisher`` subtracting 3;
    fewer than ``min_samples`` values is null.
    """
    eps = np.finfo(np.float64).eps
    for t in numba.prange(tasks.shape[0]):
        a, b, c0, c1 = tasks[t, 0], tasks[t, 1], tasks[t, 2], tasks[t, 3]
        for p in range(c0, c1):
            start = max(p - offset, a)
            end = max(min(p - offset + window, b), start)
            n = 0
            total = 0.0
            anchor = 0.0
            for j in range(start, end):
                r = _row(order, j)
                if valid[r]:
                    if n == 0:
                        anchor = np.float64(values[r])
                    n += 1
                    total += np.float64(values[r]) - anchor
            i = _row(order, p)
            least = (3 if kurtosis else 2) if not bias else 0
            if n == 0 or n < min_samples or n <= least:
                out[i] = 0
                out_valid[i] = False
                continue
            shift = total / n
            s2 = 0.0
            s3 = 0.0
            s4 = 0.0
            for j in range(start, end):
                r = _row(order, j)
                if valid[r]:
                    d = (np.float64(values[r]) - anchor) - shift
                    d2 = d * d
                    s2 += d2
                    s3 += d2 * d
                    s4 += d2 * d2
            m2 = s2 / n
            scaled = eps * (anchor + shift)
            flat = m2 <= scaled * scaled
            k = np.float64(n)
            if kurtosis:
                value = np.nan if flat else (s4 / n) / (m2 * m2)
                if not bias:
                    value = ((k - 1.0) / (k - 2.0)) * (((k + 1.0) / (k - 3.0)) * value
                                                       - 3.0 * ((k - 1.0) / (k - 3.0))) + 3.0
                if fisher:
                    value = value - 3.0
            else:
                value = np.nan if flat else (s3 / n) / m2**1.5
                if not bias:
                    value = (math.sqrt(k * (k - 1.0)) / (k - 2.0)) * value
            out[i] = value
            out_valid[i] = True


@numba.njit(cache=True, nogil=True, parallel=True)
def ewm_sum(values: Any, valid: Any, order: Any, tasks: Any, alpha: Any, min_samples: int,
            ignore_nulls: bool, out: Any, out_valid: Any) -> None:  # fmt: skip
    """Polars' ``ewm_sum``, each segment from its first row, in the values' own type.

    The first non-null value starts the sum; each later one multiplies it by
    ``1 - alpha`` and adds itself; a null row after the first value decays it too
    unless ``ignore_nulls``. A null row is null; a row is null until ``max(min_samples,
    1)`` non-null values.
    """
    least = max(min_samples, 1)
    decay = alpha / alpha - alpha  # 1 - alpha, in alpha's type
    for t in numba.prange(tasks.shape[0]):
        a, b = tasks[t, 0], tasks[t, 1]
        total = alpha - alpha
        count = 0
        for j in range(a, b):
            i = _row(order, j)
            if valid[i]:
                if count == 0:
                    total = values[i]
                else:
                    total = total * decay
                    total = total + values[i]
                count += 1
                out[i] = total
                out_valid[i] = count >= least
            else:
                if count > 0 and not ignore_nulls:
                    total = total * decay
                out[i] = alpha - alpha
                out_valid[i] = False
