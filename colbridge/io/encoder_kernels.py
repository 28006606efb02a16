"""Jobs layer: the numba loops behind `colbridge.io.encoders`.

One-hot scatter, hashing, folds and per-category target sums, apart from the encoders
so that importing them (and `colbridge.io`) does not import numba;
`colbridge.io.encoders` loads this module on first use.
"""

from __future__ import annotations

import numba
import numpy as np

__all__: list[str] = []


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
def _target_sums(codes, fold, y, folds, table):  # type: ignore[no-untyped-def]
    # rows in order; a row whose target is not finite (null, NaN) is left out
    k = np.uintp(folds)
    for i in range(codes.shape[0]):
        v = y[i]
        if not np.isfinite(v):
            continue
        c = np.uintp(codes[i])
        f = np.uintp(fold[i])
        table[c, f] += v
        table[c, k + f] += 1.0
        table[c, k + k + f] += v * v
