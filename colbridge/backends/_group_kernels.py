"""Compiled helpers of the factorize pass (numba; cached on disk across processes).

Stage: backends. Imported on first use by `colbridge.backends.groups`, which
describes them; they are hand-written, not generated: they do not depend on a plan.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

__all__ = ["edge_rows", "first_rows", "renumber"]


@numba.njit(cache=True, nogil=True)
def first_rows(codes: Any, span: int) -> Any:  # pragma: no cover - compiled
    """The first row of every code in ``[0, span)`` (-1 where it does not occur)."""
    first = np.full(span, -1, dtype=np.int64)
    for i in range(codes.shape[0]):
        c = codes[i]
        if first[c] < 0:
            first[c] = i
    return first


@numba.njit(cache=True, nogil=True, parallel=True)
def renumber(codes: Any, rank: Any, out: Any) -> None:  # pragma: no cover - compiled
    """``out[i] = rank[codes[i]]`` on every core."""
    for i in numba.prange(codes.shape[0]):
        out[i] = rank[codes[i]]


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
