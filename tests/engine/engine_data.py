"""Shared data generators for the engine's differential tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st


def make_column(
    rng: np.random.Generator, arrow_type: pa.DataType, n: int, null_density: float
) -> pa.Array:
    """Random values of a type, with NaN/±inf for floats and nulls at the given density."""
    if pa.types.is_boolean(arrow_type):
        values = rng.integers(0, 2, size=n).astype(bool)
    elif pa.types.is_floating(arrow_type):
        dtype = arrow_type.to_pandas_dtype()
        values = (rng.normal(scale=20.0, size=n)).astype(dtype)
        if n:
            specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0], dtype=dtype)
            picks = rng.random(n) < 0.15
            values[picks] = rng.choice(specials, size=int(picks.sum()))
    else:
        dtype = np.dtype(arrow_type.to_pandas_dtype())
        info = np.iinfo(dtype)
        pool = [int(info.min), int(info.max), 0, 1, 2, 3, 7]
        if info.min < 0:
            pool += [-1, -2, -7]
        small = rng.integers(max(int(info.min), -50), min(int(info.max), 50), size=n,
                             endpoint=True, dtype=dtype)  # fmt: skip
        wide = rng.integers(int(info.min), int(info.max), size=n, endpoint=True, dtype=dtype)
        edge = rng.choice(np.array(pool, dtype=dtype), size=n)
        which = rng.random(n)
        values = np.where(which < 0.6, small, np.where(which < 0.8, wide, edge)).astype(dtype)
    mask = rng.random(n) < null_density if null_density > 0 else None
    return pa.array(values, type=arrow_type, mask=mask)


@st.composite
def tables(
    draw: st.DrawFn,
    types: Sequence[pa.DataType],
    names: Sequence[str] = ("a", "b", "c"),
    max_rows: int = 40,
    *,
    chunks: bool = True,
) -> pa.Table:
    """A table with one column per name (types given per column), nulls, offsets and chunks.

    The row count is often not a multiple of 8 and the table is often a slice
    whose offset is not a multiple of 8, so values and bitmaps start mid-byte.
    """
    n = draw(st.sampled_from([0, 1, 2, 7, 9, 17, 33, max_rows]))
    offset = draw(st.sampled_from([0, 0, 3, 5, 13]))
    seed = draw(st.integers(0, 2**32 - 1))
    density = draw(st.sampled_from([0.0, 0.0, 0.2, 0.5, 1.0]))
    rng = np.random.default_rng(seed)
    columns = {}
    for name, arrow_type in zip(names, types, strict=True):
        col_density = density if draw(st.booleans()) else 0.0
        columns[name] = make_column(rng, arrow_type, n + offset, col_density)
    table = pa.table(columns).slice(offset, n)
    if chunks and n > 2 and draw(st.booleans()):
        cut = draw(st.integers(1, n - 1))
        table = pa.concat_tables([table.slice(0, cut), table.slice(cut)])
    return table
