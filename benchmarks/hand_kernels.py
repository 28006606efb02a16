"""Hand-written numba kernels: the roofline contenders of ``fused_cpu.py``.

Each is what an ideal fused kernel does for one workload: flat ``prange(n)``
loops over the values, validity bitmaps combined a byte (8 rows) at a time,
outputs written into buffers from ``pa.allocate_buffer`` and wrapped as Arrow
arrays without a copy. They read the Arrow buffers in place (``values``,
``validity``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
import pyarrow as pa


# -- Arrow buffers in and out of the hand kernels ------------------------------------
def values(arr: pa.Array, dtype: Any) -> np.ndarray:
    """The values of a primitive Arrow array as a read-only NumPy view (no copy)."""
    itemsize = np.dtype(dtype).itemsize
    return np.frombuffer(
        arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * itemsize
    )


def validity(arr: pa.Array) -> np.ndarray | None:
    """The validity bitmap as bytes (None when the array has no nulls)."""
    buf = arr.buffers()[0]
    if buf is None or arr.null_count == 0:
        return None
    if arr.offset % 8:
        # the generated data always starts at bit 0; the hand kernels read whole bytes
        msg = f"hand kernels expect byte-aligned bitmaps, got offset {arr.offset}"
        raise ValueError(msg)
    return np.frombuffer(buf, dtype=np.uint8, count=(len(arr) + 7) // 8, offset=arr.offset // 8)


def alloc(n: int, dtype: Any) -> tuple[pa.Buffer, np.ndarray]:
    """A fresh buffer from Arrow's memory pool and a writable NumPy view of it."""
    buf = pa.allocate_buffer(n * np.dtype(dtype).itemsize)
    return buf, np.frombuffer(buf, dtype=dtype)


def alloc_bitmap(n: int) -> tuple[pa.Buffer, np.ndarray]:
    """A bitmap for n rows, rounded up to whole 64-bit words (viewed as bytes)."""
    buf = pa.allocate_buffer(8 * ((n + 63) // 64))
    return buf, np.frombuffer(buf, dtype=np.uint8)


def arrow(
    typ: pa.DataType, n: int, values: pa.Buffer, validity: pa.Buffer | None = None
) -> pa.Array:
    return pa.Array.from_buffers(typ, n, [validity, values])


# -- hand-written kernels ----------------------------------------------------------------
# How they are written, as measured with numba here:
# * ``va is None`` branches are pruned at compile time: the no-null variants
#   carry no bitmap code at all.
# * Row loops are flat ``prange(n)`` loops, which LLVM vectorises. Where rows go
#   in blocks (the filter's compaction, the z-score's per-block statistics) the
#   indices are unsigned: a block loop over signed indices stayed scalar (numba
#   must allow for negative indices), 3-4x slower.
# * Validity bits are read as integers and combined with `&`; a bool truth test
#   of the bit kept the loop scalar (3x slower).


@numba.njit(inline="always")
def _bit(v, i):  # type: ignore[no-untyped-def]
    """Bit i of a bitmap, for a signed row index (flat loops)."""
    return np.int64((v[i >> 3] >> (i & 7)) & 1)


@numba.njit(inline="always")
def _ubit(v, i):  # type: ignore[no-untyped-def]
    """Bit i of a bitmap, for an unsigned row index (block loops)."""
    return np.uint64(v[i >> np.uint64(3)] >> (i & np.uint64(7))) & np.uint64(1)


@numba.njit(inline="always")
def _rows(k, block, n):  # type: ignore[no-untyped-def]
    """The unsigned row range of block k."""
    lo = np.uint64(k) * np.uint64(block)
    return lo, min(lo + np.uint64(block), np.uint64(n))


def _k_triad(a, b, c, s):  # type: ignore[no-untyped-def]
    for i in numba.prange(a.shape[0]):
        a[i] = b[i] + s * c[i]


def _k_z(a, b, c, va, vb, vc, z, vz):  # type: ignore[no-untyped-def]
    for i in numba.prange(z.shape[0]):
        z[i] = math.sqrt(a[i] * b[i] + c[i]) * 2.0 - a[i] / c[i]
    if va is not None:
        for j in numba.prange(va.shape[0]):
            vz[j] = va[j] & vb[j] & vc[j]


def _k_zw(a, b, c, va, vb, vc, z, w, vz, vw):  # type: ignore[no-untyped-def]
    for i in numba.prange(z.shape[0]):
        ai, bi, ci = a[i], b[i], c[i]
        z[i] = math.sqrt(ai * bi + ci) * 2.0 - ai / ci
        take_a = np.int64(ai > bi)
        if va is not None:
            # a null condition takes the `otherwise` branch, as in polars
            take_a &= _bit(va, i)
        w[i] = (ai if take_a != 0 else bi) * ci
    if va is not None:
        for j in numba.prange(va.shape[0]):
            vz[j] = va[j] & vb[j] & vc[j]
            # when(a > b).then(a).otherwise(b) is valid wherever b is: a null `a`
            # makes the condition null, which takes b
            vw[j] = vb[j] & vc[j]


def _k_int(a, b, q, p):  # type: ignore[no-untyped-def]
    n = q.shape[0]
    for i in numba.prange(n):
        q[i] = (a[i] * 3 + b[i]) // 7
    # the comparison, bit-packed 64 rows per word
    for w in numba.prange(n // 64):
        bits = np.uint64(0)
        for k in range(64):
            i = w * 64 + k
            bits |= np.uint64(a[i] * 3 > b[i]) << np.uint64(k)
        p[w] = bits
    if n % 64:
        bits = np.uint64(0)
        for i in range(n - n % 64, n):
            bits |= np.uint64(a[i] * 3 > b[i]) << np.uint64(i % 64)
        p[n // 64] = bits


def _k_filter_count(a, b, va, vb, block, counts):  # type: ignore[no-untyped-def]
    for k in numba.prange(counts.shape[0]):
        lo, hi = _rows(k, block, a.shape[0])
        kept = np.uint64(0)
        for i in range(lo, hi):
            keep = np.uint64(a[i] * 2.0 + b[i] > 1.0)
            if va is not None:
                keep &= _ubit(va, i) & _ubit(vb, i)
            kept += keep
        counts[k] = kept


def _k_filter_write(a, b, va, vb, block, starts, oa, ob, ow):  # type: ignore[no-untyped-def]
    for k in numba.prange(starts.shape[0] - 1):
        lo, hi = _rows(k, block, a.shape[0])
        pos, end = np.uint64(starts[k]), np.uint64(starts[k + 1])
        for i in range(lo, hi):
            w = a[i] * 2.0 + b[i]
            keep = np.uint64(w > 1.0)
            if va is not None:
                keep &= _ubit(va, i) & _ubit(vb, i)
            # branch-free compaction: write every row, advance only past kept ones;
            # the bound (predictable) keeps the block out of its neighbour's slots
            if pos < end:
                oa[pos] = a[i]
                ob[pos] = b[i]
                ow[pos] = w
            pos += keep


def _k_zscore(a, va, block, z, vz):  # type: ignore[no-untyped-def]
    n = a.shape[0]
    nb = (n + block - 1) // block
    cnt, mu, m2 = np.empty(nb), np.empty(nb), np.empty(nb)
    # per block: count and mean, then squared deviations (the block is in cache)
    for k in numba.prange(nb):
        lo, hi = _rows(k, block, n)
        s, c = 0.0, np.uint64(0)
        for i in range(lo, hi):
            if va is None:
                s += a[i]
            else:
                v = _ubit(va, i)
                s += a[i] if v != np.uint64(0) else 0.0
                c += v
        if va is None:
            c = hi - lo
        m = s / c if c > 0 else 0.0
        q = 0.0
        for i in range(lo, hi):
            d = a[i] - m
            if va is None:
                q += d * d
            else:
                q += d * d if _ubit(va, i) != np.uint64(0) else 0.0
        cnt[k], mu[k], m2[k] = c, m, q
    # blocks combined as Chan et al.
    tc, tm, tq = 0.0, 0.0, 0.0
    for k in range(nb):
        if cnt[k] > 0:
            new = tc + cnt[k]
            delta = mu[k] - tm
            tm += delta * cnt[k] / new
            tq += m2[k] + delta * delta * tc * cnt[k] / new
            tc = new
    std = math.sqrt(tq / (tc - 1.0))
    for i in numba.prange(n):
        z[i] = (a[i] - tm) / std
    if va is not None:
        for j in numba.prange(va.shape[0]):
            vz[j] = va[j]


def _k_sum_max(a, b, va, vb, out):  # type: ignore[no-untyped-def]
    # one flat loop; numba gives each thread its own partial sum and max
    s, m = 0.0, -np.inf
    for i in numba.prange(a.shape[0]):
        if va is None:
            s += a[i]
        else:
            s += a[i] if _bit(va, i) != 0 else 0.0
        # numba's float max does not vectorise (NumPy's max is faster here); a
        # statement, not an expression, so that numba prunes the `is None` branch
        if vb is None:  # noqa: SIM108
            m = max(m, b[i])
        else:
            m = max(m, b[i] if _bit(vb, i) != 0 else -np.inf)
    out[0] = s
    out[1] = m


# Reductions may reassociate (several partial sums, so LLVM vectorises them);
# max also assumes no NaN, which holds for the generated data. The answers are
# still compared with polars' (within a tolerance) before timing.
_REASSOC = {"reassoc"}
_REDUCE = {"reassoc", "nnan", "nsz"}


def _compile(fn: Callable[..., Any], fastmath: Any = False) -> Any:
    # error_model="numpy" (what numba uses inside parallel loops anyway): the
    # default "python" model tests every float division for zero, which keeps
    # loops scalar (4-5x slower)
    return numba.njit(parallel=True, cache=True, fastmath=fastmath, error_model="numpy")(fn)


K_TRIAD = _compile(_k_triad)
K_Z = _compile(_k_z)
K_ZW = _compile(_k_zw)
K_INT = _compile(_k_int)
K_FILTER_COUNT = _compile(_k_filter_count)
K_FILTER_WRITE = _compile(_k_filter_write)
K_ZSCORE = _compile(_k_zscore, _REASSOC)
K_SUM_MAX = _compile(_k_sum_max, _REDUCE)

#: Rows per block of the hand reductions and the filter's compaction.
BLOCK = 16384


def pick(kernel: Any, threaded: bool) -> Callable[..., Any]:
    """The kernel on numba's threads, or on one thread.

    One thread runs the same compiled code (the parallel build, with numba's
    thread count set to 1 for the call): a ``parallel=False`` build of the same
    bodies measured slower here on the loops that read validity bits.
    """
    if threaded:
        return kernel  # type: ignore[no-any-return]

    def one_thread(*args: Any) -> Any:
        saved = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            return kernel(*args)
        finally:
            numba.set_num_threads(saved)

    return one_thread
