"""Compiled kernels of polars' time-based rolling windows (``rolling_*_by``).

Stage: backends. Imported on first use by `colbridge.backends.rolling_by`, which
describes the arguments. Every kernel walks *segments*: ``tasks[t] = (a, b, c0, c1)``
names the positions ``[a, b)`` of one group's rows (the whole frame without keys),
laid side by side (`take_rows`) in ascending order of ``by`` (rows of equal ``by`` in
frame order, rows whose ``by`` is null first), and the positions ``[c0, c1)`` the
task writes: a group's whole segment, or one chunk of a long one, cut where a run of
equal ``by`` starts. Tasks run in parallel; inside one the work is sequential, and a
chunk's aggregation starts afresh at its first window (as polars' does after a gap),
so a float result may differ from one walk's in its last bits.

`window_bounds` gives each position ``p`` its window ``[starts[p], ends[p])`` of
positions, as polars' ``group_by_values_iter_lookbehind`` does: the start moves
forward past values that are not in ``(lower, t]`` (or the other closures), never
past ``p``; the end moves forward over values up to ``t``; equal ``by`` values share
the window of the first of them. The aggregations then slide along those bounds:
both only move forward, so each row enters and leaves once. Sums and means repeat
polars' ``SumWindow`` (Kahan-compensated add and subtract, non-finite values counted,
a fresh sum when a window shares no row with the last one updated), variances its
``MomentWindow`` (two stacks of Welford states), min and max keep a monotonic queue,
quantiles the window's values sorted.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from colbridge.backends._scan_kernels import sorted_insert, sorted_remove, window_quantile

__all__ = ["ewm_mean_by", "rolling_extreme_by", "rolling_quantile_by", "rolling_sum_by",
           "rolling_var_by", "window_bounds"]  # fmt: skip

#: ``closed`` codes, in `colbridge.expr.nodes.ROLLING_CLOSED` order
_RIGHT, _LEFT, _BOTH, _NONE = range(4)


@numba.njit(cache=True, nogil=True, inline="always")
def _enters(value: Any, lower: Any, closed: int) -> bool:
    """``value`` is past the window's lower bound (polars' ``is_member_entry``)."""
    if closed in (_LEFT, _BOTH):
        return bool(value >= lower)
    return bool(value > lower)


@numba.njit(cache=True, nogil=True, inline="always")
def _within(value: Any, upper: Any, closed: int) -> bool:
    """``value`` is not past the window's upper bound (polars' ``is_member_exit``)."""
    if closed in (_RIGHT, _BOTH):
        return bool(value <= upper)
    return bool(value < upper)


@numba.njit(cache=True, nogil=True, inline="always")
def _first_valid(by_valid: Any, a: int, b: int) -> int:
    """The first position of ``[a, b)`` whose ``by`` is valid (b: none); nulls come first."""
    lo, hi = a, b
    while lo < hi:
        mid = (lo + hi) // 2
        if by_valid[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(cache=True, nogil=True, inline="always")
def _first_entering(by: Any, a: int, b: int, bound: Any, closed: int) -> int:
    """The first position of ``[a, b)`` whose ``by`` (ascending) is past ``bound`` (b: none)."""
    lo, hi = a, b
    while lo < hi:
        mid = (lo + hi) // 2
        if _enters(by[mid], bound, closed):
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(cache=True, nogil=True, inline="always")
def _lower_end(lower: Any, span: Any, now: Any, p: int) -> Any:
    """The lower end of the window of position ``p`` (whose ``by`` is ``now``)."""
    if lower.shape[0] == 0:
        return now - span
    return lower[p]


@numba.njit(cache=True, nogil=True, parallel=True)
def window_bounds(by: Any, by_valid: Any, lower: Any, span: Any, tasks: Any,
                  closed: int, starts: Any, ends: Any) -> None:  # fmt: skip
    """Each position's window ``[starts[p], ends[p])``; -1 for rows whose ``by`` is null.

    A row's window starts after ``lower`` of its row, or, ``lower`` empty, after its
    ``by`` less ``span``.

    A chunk after a segment's first (``c0 > a``) finds its first window's start by a
    binary search: the position the walk from the segment's start would have reached,
    where the windows' lower bounds never go down (the caller cuts only such segments).
    """
    for t in numba.prange(tasks.shape[0]):
        a, b, c0, c1 = tasks[t, 0], tasks[t, 1], tasks[t, 2], tasks[t, 3]
        if c0 == a:
            first = a
            while first < b and not by_valid[first]:
                first += 1
        else:
            first = _first_valid(by_valid, a, b)
        for p in range(c0, min(first, c1)):
            starts[p] = -1
            ends[p] = -1
        p0 = max(c0, first)
        if p0 >= c1:
            continue
        last = by[p0]
        start = first if p0 == first else \
            _first_entering(by, first, p0, _lower_end(lower, span, last, p0),
                            closed)  # fmt: skip
        end = start
        for p in range(p0, c1):
            now = by[p]
            if p > p0 and now == last:  # equal `by` values share one window
                starts[p] = start
                ends[p] = end
                continue
            last = now
            bound = _lower_end(lower, span, now, p)
            while start < p and not _enters(by[start], bound, closed):
                start += 1
            end = p if _within(now, now, closed) else max(end, start)
            while end < b and _within(by[end], now, closed):
                end += 1
            starts[p] = start
            ends[p] = end


@numba.njit(cache=True, nogil=True)
def _widest(starts: Any, ends: Any, c0: int, c1: int) -> int:
    """The most rows any window of positions ``[c0, c1)`` holds (at least 1): buffer sizes."""
    widest = 1
    for p in range(c0, c1):
        widest = max(widest, ends[p] - starts[p])
    return widest


@numba.njit(cache=True, nogil=True)
def _reach(starts: Any, ends: Any, c0: int, c1: int) -> int:
    """The positions the windows of ``[c0, c1)`` cover together, first to last (at least 1)."""
    lo = np.int64(-1)
    hi = np.int64(0)
    for p in range(c0, c1):
        if starts[p] >= 0:
            lo = starts[p] if lo < 0 or starts[p] < lo else lo
            hi = ends[p] if ends[p] > hi else hi
    return max(int(hi - lo), 1) if lo >= 0 else 1


@numba.njit(cache=True, nogil=True, inline="always")
def _finite(value: Any) -> bool:
    """Not NaN nor infinite (any integer is finite)."""
    return bool((value - value) == (value - value))


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_sum_by(values: Any, valid: Any, tasks: Any, starts: Any, ends: Any,
                   min_samples: int, mean: bool, kahan: bool, acc: Any, specials: Any,
                   out: Any, out_valid: Any) -> None:  # fmt: skip
    """Polars' ``SumWindow`` (``mean``: ``MeanWindow``) along the windows, in ``acc``'s type.

    A window with fewer rows than ``min_samples`` is null and leaves the state as it
    was (polars does not update it); otherwise the rows before the new start leave
    (subtracted) and those up to the new end enter (added), each direction with its
    own Kahan compensation for floats (``kahan``), and a window starting at or past
    the last one's end starts from zero. NaN and infinities are counted, not added:
    any infinity of one sign gives it, a NaN or both signs NaN. A sum is valid with
    ``min_samples`` non-null values (0 where there are none); a mean needs one, and
    divides the sum (in the output's type) by their count. ``specials``: +inf, -inf
    and NaN of the output's type (zeros for integers, which never meet them).
    """
    for t in numba.prange(tasks.shape[0]):
        a, c0, c1 = tasks[t, 0], tasks[t, 2], tasks[t, 3]
        total = acc - acc
        err_add = acc - acc
        err_sub = acc - acc
        bad = 0
        pos_inf = 0
        neg_inf = 0
        nulls = 0
        lo = a
        hi = a
        for p in range(c0, c1):
            s, e = starts[p], ends[p]
            if s < 0 or e - s < min_samples:
                out_valid[p] = False
                continue
            if s >= hi:
                total = acc - acc
                err_add = acc - acc
                err_sub = acc - acc
                bad = 0
                pos_inf = 0
                neg_inf = 0
                nulls = 0
                lo = s
                hi = s
            while lo < s:  # rows leaving
                if valid[lo]:
                    x = values[lo]
                    if not _finite(x):
                        bad -= 1
                        pos_inf -= 1 if x > 0 else 0
                        neg_inf -= 1 if x < 0 else 0
                    elif kahan:
                        y = (acc - acc) - x - err_sub
                        moved = total + y
                        err_sub = (moved - total) - y
                        total = moved
                    else:
                        total -= x
                else:
                    nulls -= 1
                lo += 1
            while hi < e:  # rows entering
                if valid[hi]:
                    x = values[hi]
                    if not _finite(x):
                        bad += 1
                        pos_inf += 1 if x > 0 else 0
                        neg_inf += 1 if x < 0 else 0
                    elif kahan:
                        y = (acc - acc) + x - err_add
                        moved = total + y
                        err_add = (moved - total) - y
                        total = moved
                    else:
                        total += x
                else:
                    nulls += 1
                hi += 1
            count = (e - s) - nulls
            if count < min_samples or (mean and count == 0):
                out_valid[p] = False
                continue
            out_valid[p] = True
            if bad == 0:
                out[p] = total
            elif bad == pos_inf:
                out[p] = specials[0]
            elif bad == neg_inf:
                out[p] = specials[1]
            else:
                out[p] = specials[2]
            if mean:
                out[p] = out[p] / count


@numba.njit(cache=True, nogil=True, inline="always")
def _insert(state: Any, at: int, x: float) -> None:
    """Polars' ``VarState::insert_one``: ``state[at] = (weight, mean, dp)``."""
    weight = state[at, 0] + 1.0
    delta = x - state[at, 1]
    mean = state[at, 1] + delta / weight
    state[at, 2] += (x - mean) * delta
    state[at, 0] = weight
    state[at, 1] = mean


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_var_by(values: Any, valid: Any, tasks: Any, starts: Any, ends: Any,
                   min_samples: int, ddof: int, std: bool, out: Any,
                   out_valid: Any) -> None:  # fmt: skip
    """Polars' ``MomentWindow`` with ``VarianceMoment`` along the windows (``std``: its root).

    Two stacks: the values entering are pushed on the back (a running Welford state
    of them kept); a value leaving pops the front, whose entries are the states of
    every suffix of the values once moved there (all of the back, newest first, when
    the front runs out). A window's state is the back's combined with the front's top,
    so no value is ever subtracted. Non-finite values enter as 0.0 and make the result
    NaN while in the window. Null where the window has fewer rows than
    ``min_samples`` (the state not updated), fewer non-null values, or no more than
    ``ddof``; negative variances (rounding) are 0.
    """
    for t in numba.prange(tasks.shape[0]):
        a, c0, c1 = tasks[t, 0], tasks[t, 2], tasks[t, 3]
        size = _widest(starts, ends, c0, c1)
        back = np.empty(size, dtype=np.float64)
        front = np.zeros((size, 3), dtype=np.float64)
        agg = np.zeros((1, 3), dtype=np.float64)
        n_back = 0
        n_front = 0
        bad = 0
        nulls = 0
        lo = a
        hi = a
        for p in range(c0, c1):
            s, e = starts[p], ends[p]
            if s < 0 or e - s < min_samples:
                out_valid[p] = False
                continue
            if s >= hi:
                n_back = 0
                n_front = 0
                agg[0, 0] = 0.0
                agg[0, 1] = 0.0
                agg[0, 2] = 0.0
                bad = 0
                nulls = 0
                lo = s
                hi = s
            while lo < s:
                if valid[lo]:
                    if n_front == 0:  # flip: the back's values become the front's suffixes
                        front[0, 0] = 0.0
                        front[0, 1] = 0.0
                        front[0, 2] = 0.0
                        k = 0
                        while n_back > 0:
                            n_back -= 1
                            if k > 0:
                                front[k, 0] = front[k - 1, 0]
                                front[k, 1] = front[k - 1, 1]
                                front[k, 2] = front[k - 1, 2]
                            _insert(front, k, back[n_back])
                            k += 1
                        n_front = k
                        agg[0, 0] = 0.0
                        agg[0, 1] = 0.0
                        agg[0, 2] = 0.0
                    n_front -= 1
                    if not _finite(values[lo]):
                        bad -= 1
                else:
                    nulls -= 1
                lo += 1
            while hi < e:
                if valid[hi]:
                    x = np.float64(values[hi])
                    if not _finite(x):
                        x = np.float64(0.0)  # polars pushes 0.0 and counts it
                        bad += 1
                    back[n_back] = x
                    n_back += 1
                    _insert(agg, 0, x)
                else:
                    nulls += 1
                hi += 1
            count = (e - s) - nulls
            weight = agg[0, 0]
            mean = agg[0, 1]
            dp = agg[0, 2]
            if n_front > 0:  # polars' `VarState::combine` of the front's top into the back's
                other_w = front[n_front - 1, 0]
                if other_w != 0.0:
                    total_w = weight + other_w
                    frac = other_w / total_w
                    delta = front[n_front - 1, 1] - mean
                    new_mean = mean + delta * frac
                    dp += front[n_front - 1, 2] + other_w * (front[n_front - 1, 1]
                                                             - new_mean) * delta  # fmt: skip
                    weight = total_w
                    mean = new_mean
            if count < min_samples or weight <= ddof:
                out_valid[p] = False
                continue
            var = dp / (weight - ddof)
            if var < 0.0:
                var = 0.0
            if bad > 0:
                var = np.nan
            out_valid[p] = True
            out[p] = var
            if std:  # the root in the output's type, as polars takes it of the variance
                out[p] = np.sqrt(out[p])


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_extreme_by(values: Any, valid: Any, tasks: Any, starts: Any,
                       ends: Any, min_samples: int, largest: bool, nan: Any, out: Any,
                       out_valid: Any) -> None:  # fmt: skip
    """Min (max: ``largest``) along the windows: a monotonic queue of positions.

    A value entering drops the queued values it beats (strictly: of equal values the
    earliest stays first, as polars gives it); NaN are counted and win while in the
    window (``nan``: NaN of the values' type, 0 for integers, which have none). Null
    with fewer than ``min_samples`` rows or non-null values, or none.
    """
    for t in numba.prange(tasks.shape[0]):
        a, c0, c1 = tasks[t, 0], tasks[t, 2], tasks[t, 3]
        # the queue's tail only moves back when a value is beaten, so it may reach as far as
        # the rows entering after a fresh start: at most all the chunk's windows cover
        queue = np.empty(_reach(starts, ends, c0, c1), dtype=np.int64)
        head = 0
        tail = 0
        nans = 0
        nulls = 0
        lo = a
        hi = a
        for p in range(c0, c1):
            s, e = starts[p], ends[p]
            if s < 0:
                out_valid[p] = False
                continue
            if s >= hi:
                head = 0
                tail = 0
                nans = 0
                nulls = 0
                lo = s
                hi = s
            while lo < s:
                if not valid[lo]:
                    nulls -= 1
                elif values[lo] != values[lo]:
                    nans -= 1
                elif head < tail and queue[head] == lo:
                    head += 1
                lo += 1
            while hi < e:
                if not valid[hi]:
                    nulls += 1
                else:
                    x = values[hi]
                    if x != x:
                        nans += 1
                    else:
                        while head < tail:
                            queued = values[queue[tail - 1]]
                            if (queued < x) if largest else (queued > x):
                                tail -= 1
                            else:
                                break
                        queue[tail] = hi
                        tail += 1
                hi += 1
            count = (e - s) - nulls
            if e - s < min_samples or count < min_samples or count == 0:
                out_valid[p] = False
                continue
            out_valid[p] = True
            if nans > 0:
                out[p] = nan
            else:
                out[p] = values[queue[head]]


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_quantile_by(values: Any, valid: Any, tasks: Any, starts: Any,
                        ends: Any, min_samples: int, quantile: float, method: int, half: Any,
                        out: Any, out_valid: Any) -> None:  # fmt: skip
    """Polars' ``QuantileWindow`` along the windows: the window's values kept sorted.

    As `colbridge.backends._scan_kernels.rolling_sorted` with windows of varying
    length: ascending with NaN last, a binary search and a move per value entering
    or leaving; the position ``(n - 1) * quantile`` among the ``n`` non-null values
    taken by ``method``, in the values' type (``half``: 0.5 of it).
    """
    for t in numba.prange(tasks.shape[0]):
        a, c0, c1 = tasks[t, 0], tasks[t, 2], tasks[t, 3]
        buf = np.empty(_widest(starts, ends, c0, c1), dtype=values.dtype)
        size = 0
        lo = a
        hi = a
        for p in range(c0, c1):
            s, e = starts[p], ends[p]
            if s < 0:
                out[p] = half - half
                out_valid[p] = False
                continue
            if s >= hi:
                size = 0
                lo = s
                hi = s
            while lo < s:
                if valid[lo]:
                    size = sorted_remove(buf, size, values[lo])
                lo += 1
            while hi < e:
                if valid[hi]:
                    size = sorted_insert(buf, size, values[hi])
                hi += 1
            if size == 0 or size < min_samples or e - s < min_samples:
                out[p] = half - half
                out_valid[p] = False
                continue
            out_valid[p] = True
            window_quantile(buf, size, quantile, method, half, out, p)


@numba.njit(cache=True, nogil=True, parallel=True)
def ewm_mean_by(values: Any, valid: Any, by: Any, by_valid: Any, tasks: Any, half_life: int,
                half: Any, out: Any, out_valid: Any) -> None:  # fmt: skip
    """Polars' ``ewm_mean_by``: each segment's rows (in ``by`` order) folded one by one.

    A row whose value or ``by`` is null is null and changes nothing. The first other
    row is its own value; each later one, unless it equals the running result,
    ``alpha * x + (1 - alpha) * prev`` with ``1 - alpha = half ** (dt / half_life)``
    (``dt`` the ``by`` step since the last such row), every step in the values' own
    type (``half`` is 0.5 of it; integers convert to it rounding to nearest), as
    polars' ``update``.
    """
    to_type = values.dtype.type  # int64 into the values' type, rounding to nearest
    span = to_type(half_life)
    for t in numba.prange(tasks.shape[0]):
        a, b = tasks[t, 0], tasks[t, 1]
        started = False
        prev_time = by[a] if b > a else 0
        prev = half - half
        for i in range(a, b):
            if not (valid[i] and by_valid[i]):
                out[i] = half - half
                out_valid[i] = False
                continue
            x = values[i]
            if not started:
                started = True
                prev = x
            elif x != prev:
                one_minus_alpha = half ** (to_type(by[i] - prev_time) / span)
                alpha = (half + half) - one_minus_alpha
                prev = alpha * x + one_minus_alpha * prev
            else:
                prev = x
            prev_time = by[i]
            out[i] = prev
            out_valid[i] = True
