"""Columns: the numba kernels that pack many columns into one matrix (see `matrix`).

A module of its own so that importing colbridge does not import numba: `matrix`
loads it the first time a matrix is packed with a kernel.
"""

from __future__ import annotations

import numpy as np
from numba import literal_unroll, njit, prange

__all__ = [
    "fill_column",
    "interleave",
    "interleave_mixed",
    "interleave_mixed_rows",
    "interleave_rows",
    "keep_column",
    "pack_fill",
    "pack_keep",
]


# The masked kernels below take ``cols``: a tuple with one ``(values, bits,
# bit_offset, column)`` tuple per matrix column. ``values`` is the column's
# flat 1-D array for the rows of one segment (bool as uint8, float16 widened
# to float32), written to matrix rows ``base + i``; ``bits`` is its Arrow
# validity bitmap (bytes, least significant bit first), or all ones when the
# column has no null; ``bit_offset`` is the bitmap bit of row 0; ``column`` is
# the matrix column to write. The caller orders the tuple by dtype, so the
# compiled kernel (numba's cache key: the tuple's element types, ``out``'s
# dtype and layout, ``fill``'s type) depends
# on the multiset of column dtypes, not on their order in the matrix.
#
# Shape, as measured (six columns of five dtypes, 10% nulls): one flat loop
# over rows with the tuple unrolled inside, so each output row is written in
# one go. The bit index is unsigned (numba adds no negative-index wraparound:
# about 20% faster); each value is stored cast to ``out``'s dtype and read
# back before the select, so the select is branch-free and in ``out``'s dtype
# (a direct cast, as NumPy's, not through float64). An inner loop over the 8
# rows of a bitmap byte inside the unrolled tuple ran 5x slower; a blocked
# loop with a scratch buffer, 3x slower. The same body written out per column
# (generated source, one argument per array) ran about 25% faster on one core
# than the unrolled tuple.
#
# Every index is unsigned (the loop runs over ``U(lo)..U(hi)``): with signed
# indices from ``range(lo, hi)`` numba guards each access for a negative index
# (wraparound), and LLVM neither vectorises nor unrolls the loop. Measured at
# 2e6 rows, six columns, 10% nulls, one thread: `pack_fill` 46 -> 30 ms into a
# row-major matrix (a hand-written kernel over fixed arguments: 26 ms), 41 ->
# 29 ms into a column-major one.
#
# A column-major matrix is filled column by column instead (`fill_column`,
# `keep_column`: one call per column and row range, into the contiguous matrix
# column): every store is then sequential, 29 -> 14 ms in the case above.

U = np.uint64


@njit(nogil=True, cache=True)
def pack_fill(cols, out, fill, base, lo, hi):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Rows ``lo:hi`` of the columns into ``out[base + lo:base + hi]``, nulls as ``fill``."""
    for i in range(U(lo), U(hi)):
        r = U(base) + i
        for col in literal_unroll(cols):
            values, bits, offset, j = col
            k = U(offset) + i
            ok = (bits[k >> U(3)] >> (k & U(7))) & U(1)
            out[r, j] = values[i]
            x = out[r, j]
            out[r, j] = x if ok else fill


# `pack_keep` repeats `pack_fill`'s body and adds the validity store. One kernel
# for both, with the store under a test of an empty `valid`, made the fill alone
# 1.3x slower at 1e6 rows (2.8 -> 3.8 ms, C order, measured): the test was not
# taken out of the loop.
@njit(nogil=True, cache=True)
def pack_keep(cols, out, valid, fill, base, lo, hi):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """As `pack_fill`, and ``valid[base + i, j]`` set to whether the value is valid."""
    for i in range(U(lo), U(hi)):
        r = U(base) + i
        for col in literal_unroll(cols):
            values, bits, offset, j = col
            k = U(offset) + i
            ok = (bits[k >> U(3)] >> (k & U(7))) & U(1)
            out[r, j] = values[i]
            x = out[r, j]
            out[r, j] = x if ok else fill
            valid[r, j] = ok != 0


@njit(nogil=True, cache=True)
def fill_column(values, bits, offset, dst, fill, lo, hi):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Rows ``lo:hi`` of one column (values, bitmap, bit offset) into ``dst``, nulls as ``fill``.

    ``dst`` is the matrix column (contiguous) from the segment's first row on.
    """
    for i in range(U(lo), U(hi)):
        k = U(offset) + i
        ok = (bits[k >> U(3)] >> (k & U(7))) & U(1)
        dst[i] = values[i]
        x = dst[i]
        dst[i] = x if ok else fill


# repeats `fill_column` with the validity store added, as `pack_keep` repeats `pack_fill`
@njit(nogil=True, cache=True)
def keep_column(values, bits, offset, dst, dst_valid, fill, lo, hi):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """As `fill_column`, and ``dst_valid[i]`` set to whether the value is valid."""
    for i in range(U(lo), U(hi)):
        k = U(offset) + i
        ok = (bits[k >> U(3)] >> (k & U(7))) & U(1)
        dst[i] = values[i]
        x = dst[i]
        dst[i] = x if ok else fill
        dst_valid[i] = ok != 0


@njit(nogil=True, cache=True)
def interleave(cols, out, lo, hi):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Interleave rows ``lo:hi`` of columns of one dtype into a row-major matrix."""
    # cols: a homogeneous tuple of 1-D columns; out: C-ordered (rows, len(cols)).
    ncols = U(len(cols))
    for i in range(U(lo), U(hi)):
        for j in range(ncols):
            out[i, j] = cols[j][i]


@njit(nogil=True, cache=True)
def interleave_mixed(cols, out, lo, hi):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Interleave rows ``lo:hi`` of columns of several dtypes into a row-major matrix."""
    # cols: a heterogeneous tuple of 1-D columns; out: C-ordered (rows, len(cols)).
    # The tuple unrolls inside the row loop: each row is written in one go, like a
    # hand-written loop over these columns (measured 1.9x faster than unrolling
    # outside a blocked loop, at 1e7 rows of six columns of five dtypes).
    for i in range(U(lo), U(hi)):
        j = U(0)
        for col in literal_unroll(cols):
            out[i, j] = col[i]
            j += U(1)  # (numba cannot enumerate a literal_unroll)


# -- on every core: numba's threads take ranges of rows -----------------------------------
# Each wrapper splits the rows into ``chunks`` ranges (`prange`) and runs its serial
# kernel on each. Measured at six columns of five dtypes into a row-major float32
# matrix, against this thread and a pool worker each running the serial kernel on
# half the rows: 626 -> 497 us at 336,776 rows, 1.33 -> 1.16 ms at 1e6 (a
# hand-written `prange` loop: 492 us, 1.16 ms); below about a million elements one
# thread is faster than either (100,000 rows: 218 us, against 257 us on two).


@njit(nogil=True, parallel=True, cache=True)
def interleave_rows(cols, out, chunks):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """`interleave` of all rows, ``chunks`` ranges of them on numba's threads."""
    n = out.shape[0]
    for c in prange(chunks):
        interleave(cols, out, n * c // chunks, n * (c + 1) // chunks)


@njit(nogil=True, parallel=True, cache=True)
def interleave_mixed_rows(cols, out, chunks):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """`interleave_mixed` of all rows, ``chunks`` ranges of them on numba's threads."""
    n = out.shape[0]
    for c in prange(chunks):
        interleave_mixed(cols, out, n * c // chunks, n * (c + 1) // chunks)

