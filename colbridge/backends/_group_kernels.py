"""Compiled helpers of the factorize pass (numba; cached on disk across processes).

Stage: backends. Imported on first use by `colbridge.backends.groups`, which
describes them; they are hand-written, not generated: they do not depend on a plan.
A *code* is ``values[i] - lo`` (``null_code`` where ``valid[i]`` is false; an
empty ``valid`` means no nulls), an integer in ``[0, span)``.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

__all__ = ["edge_rows", "first_ranks", "renumber"]


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
