"""The CUDA test corpus: expression groups × dtypes, and tables of data at the limits for them.

The groups (one ``with_columns`` step each, so one fused kernel per nullability
pattern) live in `colbridge.testing.gpu_cases`, written once over a module ``m``
that is either ``colbridge`` or ``polars``; this module adds the polars spelling
and hypothesis tables from the shared generator (`colbridge.testing.data`) for
the host-run tests; comparisons come from `colbridge.testing.asserts`.
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa
from hypothesis import strategies as st

from colbridge.testing import data
from colbridge.testing.asserts import assert_arrays_match, ulp_distance
from colbridge.testing.data import make_column
from colbridge.testing.gpu_cases import CB, DTYPE_NAMES, GROUPS, NULL_PATTERNS, Group, namespace

__all__ = [
    "CB", "GROUPS", "LENGTHS", "NULL_PATTERNS", "OFFSETS", "PL", "Group", "assert_arrays_match",
    "make_column", "tables", "ulp_distance",
]  # fmt: skip

#: the polars spelling of the corpus (`gpu_cases.CB` is the colbridge one)
PL = namespace(pl, {n: getattr(pl, n) for n in DTYPE_NAMES})

#: lengths: not multiples of 8, one past a warp, and past the host grid (2 blocks of 64
#: threads), so the kernels' grid-stride loops wrap; offsets not multiples of 8
LENGTHS = (0, 1, 7, 9, 13, 31, 33, 70, 200, 1100)
OFFSETS = (0, 3, 5, 13)


@st.composite
def tables(draw: st.DrawFn, group: Group, *, max_len: int = 1100) -> pa.Table:
    """A sliced table with columns a, b, c of the group (data at the limits, nulls by pattern)."""
    return draw(data.tables(group.types, ("a", "b", "c"),
                            lengths=[x for x in LENGTHS if x <= max_len], offsets=OFFSETS,
                            null_patterns=NULL_PATTERNS, chunks=False))  # fmt: skip
