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

from typing import Any

import numba
import numpy as np

__all__ = [
    "counting_order",
    "cumulative",
    "ewm_mean",
    "fill",
    "rolling_extreme",
    "rolling_sum",
    "rolling_var",
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
def counting_order(ids: Any, count: int) -> Any:
    """Rows sorted by group id, stably (frame order inside a group), and group starts."""
    starts = np.zeros(count + 1, dtype=np.int64)
    for i in range(ids.shape[0]):
        starts[ids[i] + 1] += 1
    for g in range(count):
        starts[g + 1] += starts[g]
    fill_at = starts[:-1].copy()
    order = np.empty(ids.shape[0], dtype=np.int64)
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
               reverse: bool, zero: Any, out: Any, out_valid: Any) -> None:  # fmt: skip
    """Running sum/product/min/max/count of the non-null values; a null row stays null.

    Sums and products wrap in the compute type (the caller narrows to the result type,
    which wraps the same way); min and max skip NaN, as polars' running extremes do.
    """
    for t in numba.prange(tasks.shape[0]):
        a, b = tasks[t, 0], tasks[t, 1]
        acc = zero + 1 if op == CUM_PROD else zero
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
            if not valid[i]:
                out[i] = acc
                out_valid[i] = False
                continue
            v = values[i]
            if op == CUM_SUM:
                acc = acc + v
            elif op == CUM_PROD:
                acc = acc * v
            elif op == CUM_MIN:
                if not seen or v < acc or acc != acc:
                    acc = v
            elif v > acc or acc != acc or not seen:
                acc = v
            seen = True
            out[i] = acc
            out_valid[i] = True


@numba.njit(cache=True, nogil=True, inline="always")
def _finite(v: Any) -> bool:
    return bool(v - v == 0)  # false for NaN and infinities; always true for integers


@numba.njit(cache=True, nogil=True, inline="always")
def _window(p: int, a: int, b: int, offset: int, window: int) -> tuple[int, int]:
    """Segment position ``p``'s window ``[start, end)``, clipped to the segment ``[a, b)``."""
    first = p - offset
    return max(first, a), min(first + window, b)


@numba.njit(cache=True, nogil=True, inline="never")
def _window_sum(values: Any, valid: Any, order: Any, lo: int, hi: int, zero: Any) -> Any:
    """The sum of the non-null values at positions ``[lo, hi)``.

    A rare path, kept out of line so that the sliding loop stays small.
    """
    total = zero
    for k in range(lo, hi):
        i = _row(order, k)
        if valid[i]:
            total += values[i]
    return total


@numba.njit(cache=True, nogil=True, inline="never")
def _window_moments(values: Any, valid: Any, order: Any, lo: int, hi: int) -> Any:
    """Welford's mean and sum of squared deviations of the non-null values in ``[lo, hi)``."""
    mean = 0.0
    m2 = 0.0
    seen = 0
    for k in range(lo, hi):
        i = _row(order, k)
        if valid[i]:
            v = np.float64(values[i])
            seen += 1
            delta = v - mean
            mean += delta / seen
            m2 += delta * (v - mean)
    return mean, m2


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_sum(values: Any, valid: Any, order: Any, tasks: Any, mean: bool,
                window: int, min_samples: int, offset: int, zero: Any, out: Any,
                out_valid: Any) -> None:  # fmt: skip
    """Windowed sum (``mean``: average) of the non-null values of each row's window.

    A *task* ``(a, b, c0, c1)`` writes the rows at segment positions ``[c0, c1)`` of
    the segment ``[a, b)``: a group, or one chunk of the whole frame, whose windows
    start from the rows before ``c0`` (a halo), so chunks run in parallel. The window
    of position ``p`` is ``[p - offset, p - offset + window)`` (``offset`` is
    ``window - 1``, or ``window // 2`` centred). The sum slides: the row entering is
    added, the row leaving subtracted; when a NaN or an infinity leaves, the sum
    starts again from the window's rows, as polars does.
    """
    for t in numba.prange(tasks.shape[0]):
        a, b, c0, c1 = tasks[t, 0], tasks[t, 1], tasks[t, 2], tasks[t, 3]
        total = zero
        count = 0
        # the rows before the first window's last one (the halo, for a chunk)
        for k in range(max(c0 - offset, a), min(c0 - offset + window - 1, b)):
            i = _row(order, k)
            if valid[i]:
                total += values[i]
                count += 1
        for p in range(c0, c1):
            enter = p - offset + window - 1
            if enter < b and enter >= a and window > 0:
                i = _row(order, enter)
                if valid[i]:
                    total += values[i]
                    count += 1
            leave = p - offset - 1
            if leave >= a and window > 0:
                i = _row(order, leave)
                if valid[i]:
                    count -= 1
                    v = values[i]
                    if _finite(v):
                        total -= v
                    else:  # NaN and inf do not subtract out: sum the window again
                        total = _window_sum(values, valid, order, leave + 1, min(enter + 1, b),
                                            zero)  # fmt: skip
            i = _row(order, p)
            if mean:
                out[i] = total / count if count > 0 else total
                out_valid[i] = count >= min_samples and count > 0
            else:
                out[i] = total
                out_valid[i] = count >= min_samples


@numba.njit(cache=True, nogil=True, parallel=True)
def rolling_var(values: Any, valid: Any, order: Any, tasks: Any, std: bool,
                window: int, min_samples: int, offset: int, ddof: int, out: Any,
                out_valid: Any) -> None:  # fmt: skip
    """Windowed variance (``std``: its square root) of the non-null values.

    Tasks and windows as `rolling_sum`. Welford's running mean and sum of squared
    deviations slide (a row added, a row removed); when a NaN or an infinity leaves,
    they start again from the window's rows. Fewer than ``ddof + 1`` values: null.
    """
    for t in numba.prange(tasks.shape[0]):
        a, b, c0, c1 = tasks[t, 0], tasks[t, 1], tasks[t, 2], tasks[t, 3]
        mean = 0.0
        m2 = 0.0
        count = 0
        lo, _ = _window(c0, a, b, offset, window)
        hi = lo
        for p in range(c0, c1):
            start, end = _window(p, a, b, offset, window)
            if window == 0:
                start = end = p
            while hi < end:
                i = _row(order, hi)
                if valid[i]:
                    v = np.float64(values[i])
                    count += 1
                    delta = v - mean
                    mean += delta / count
                    m2 += delta * (v - mean)
                hi += 1
            restart = False
            while lo < start:
                i = _row(order, lo)
                if valid[i]:
                    v = np.float64(values[i])
                    count -= 1
                    if not _finite(v):
                        restart = True
                    elif count == 0:
                        mean = 0.0
                        m2 = 0.0
                    else:
                        delta = v - mean
                        mean -= delta / count
                        m2 -= delta * (v - mean)
                lo += 1
            if restart:
                mean, m2 = _window_moments(values, valid, order, lo, hi)
            i = _row(order, p)
            ok = count >= min_samples and count - ddof > 0
            var = max(m2, 0.0) / (count - ddof) if count - ddof > 0 else 0.0
            out[i] = np.sqrt(var) if std else var
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
        cap = min(window, b - a) + 1
        queue = np.empty(cap, dtype=np.int64)
        head = 0
        size = 0
        count = 0
        nans = 0
        lo, _ = _window(c0, a, b, offset, window)
        hi = lo
        for p in range(c0, c1):
            start, end = _window(p, a, b, offset, window)
            if window == 0:
                start = end = p
            while hi < end:
                i = _row(order, hi)
                if valid[i]:
                    v = values[i]
                    count += 1
                    if v != v:
                        nans += 1
                    else:
                        while size > 0:
                            last = queue[(head + size - 1) % cap]
                            w = values[_row(order, last)]
                            if (w <= v) if largest else (w >= v):
                                size -= 1
                            else:
                                break
                        queue[(head + size) % cap] = hi
                        size += 1
                hi += 1
            while lo < start:
                i = _row(order, lo)
                if valid[i]:
                    count -= 1
                    if values[i] != values[i]:
                        nans -= 1
                    elif size > 0 and queue[head] == lo:
                        head = (head + 1) % cap
                        size -= 1
                lo += 1
            i = _row(order, p)
            if nans > 0:
                out[i] = np.nan
            elif size > 0:
                out[i] = values[_row(order, queue[head])]
            else:
                out[i] = zero
            out_valid[i] = count >= min_samples and count > 0


@numba.njit(cache=True, nogil=True, parallel=True)
def ewm_mean(values: Any, valid: Any, order: Any, tasks: Any, alpha: Any,
             adjust: bool, min_samples: int, ignore_nulls: bool, out: Any,
             out_valid: Any) -> None:  # fmt: skip
    """Exponentially weighted mean, polars' recurrence (pandas' ``ewm(...).mean()``).

    ``old_wt`` decays by ``1 - alpha`` per row (per non-null row with
    ``ignore_nulls``); a null row is null; rows before ``min_samples`` non-null
    values are null.
    """
    one = alpha / alpha
    new_wt = one if adjust else alpha
    factor = one - alpha
    for t in numba.prange(tasks.shape[0]):
        a, b = tasks[t, 0], tasks[t, 1]
        old_wt = one
        avg = one - one
        has_avg = False
        seen = 0
        for j in range(a, b):
            i = _row(order, j)
            x_valid = valid[i]
            if x_valid:
                seen += 1
            x = values[i]
            if not has_avg:
                if x_valid:
                    avg = x
                    has_avg = True
            elif x_valid or not ignore_nulls:
                old_wt = old_wt * factor
                if x_valid:
                    if avg != x:
                        avg = (old_wt * avg + new_wt * x) / (old_wt + new_wt)
                    old_wt = old_wt + new_wt if adjust else one
            out[i] = avg
            out_valid[i] = x_valid and seen >= min_samples


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
