"""The CUDA test corpus: the groups of `colbridge.testing.gpu_cases`, spelled for polars too.

`colbridge.testing.gpu_cases` holds the expression groups, the data makers
and the comparisons (NumPy and pyarrow only, for GPU machines); this module
adds the polars spelling of the groups and a hypothesis strategy for tables.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
from hypothesis import strategies as st

from colbridge.testing.gpu_cases import (
    CB,
    DTYPE_NAMES,
    GROUPS,
    NULL_PATTERNS,
    Group,
    assert_arrays_match,
    make_column,
    namespace,
    ulp_distance,
)

__all__ = [
    "CB",
    "GROUPS",
    "LENGTHS",
    "NULL_PATTERNS",
    "OFFSETS",
    "PL",
    "Group",
    "assert_arrays_match",
    "make_column",
    "tables",
    "ulp_distance",
]

#: the corpus spelled with polars expressions
PL = namespace(pl, {n: getattr(pl, n) for n in DTYPE_NAMES})

LENGTHS = (0, 1, 7, 9, 13, 31, 33, 70)
OFFSETS = (0, 3, 5, 13)


@st.composite
def tables(draw: st.DrawFn, group: Group, *, max_len: int = 70) -> pa.Table:
    """A sliced table (offset often not a multiple of 8) with columns a, b, c of the group."""
    n = draw(st.sampled_from([x for x in LENGTHS if x <= max_len]))
    offset = draw(st.sampled_from(OFFSETS))
    pattern = draw(st.sampled_from(NULL_PATTERNS))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cols = {
        name: make_column(rng, t, n + offset, has_nulls)
        for name, t, has_nulls in zip("abc", group.types, pattern, strict=True)
    }
    return pa.table(cols).slice(offset, n)
