"""Testing: hypothesis strategies for Arrow columns and frames, with the edge cases.

Columns vary over dtype x null pattern (none, some, all) x offset (slices
whose offset is not a multiple of 8) x chunking (1..3 chunks) x length (0, 1,
lengths that are not multiples of 8). Helpers turn a pyarrow array into the
same column as polars or pandas (NumPy-backed, nullable-masked, ArrowDtype).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

__all__ = [
    "BOOL_TYPE",
    "NUMERIC_TYPES",
    "TEMPORAL_TYPES",
    "TENSOR_TYPES",
    "arrays",
    "chunked_arrays",
    "frames",
    "to_pandas_arrow",
    "to_pandas_masked",
    "to_pandas_numpy",
    "to_polars",
]

NUMERIC_TYPES: tuple[pa.DataType, ...] = (
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
)
BOOL_TYPE = pa.bool_()
TEMPORAL_TYPES: tuple[pa.DataType, ...] = (
    pa.date32(),
    pa.date64(),
    pa.timestamp("us"),
    pa.timestamp("ns", tz="UTC"),
    pa.duration("ms"),
)
TENSOR_TYPES: tuple[pa.DataType, ...] = (*NUMERIC_TYPES, BOOL_TYPE, *TEMPORAL_TYPES)

#: Lengths that are 0, 1, or not multiples of 8, plus a few that are.
_LENGTHS = st.sampled_from([0, 1, 3, 7, 8, 9, 13, 16, 31, 33])


def _values(
    draw: st.DrawFn, arrow_type: pa.DataType, n: int, special: bool
) -> np.ndarray[Any, Any]:
    storage = arrow_type
    if pa.types.is_date32(arrow_type):
        storage = pa.int32()
    elif pa.types.is_temporal(arrow_type):
        storage = pa.int64()
    if pa.types.is_boolean(storage):
        bits = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        return np.array(bits, dtype=bool)
    dtype = np.dtype(storage.to_pandas_dtype())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        values = rng.normal(scale=100.0, size=n).astype(dtype)
        if special and n:
            picks = rng.integers(0, n, size=min(n, 3))
            values[picks] = rng.choice(
                np.array([np.nan, np.inf, -np.inf], dtype=dtype), size=len(picks)
            )
        return values
    info = np.iinfo(dtype)
    lo, hi = max(int(info.min), -(2**40)), min(int(info.max), 2**40)
    return rng.integers(lo, hi, size=n, endpoint=True, dtype=dtype)


def _mask(draw: st.DrawFn, n: int, pattern: str) -> np.ndarray[Any, Any] | None:
    if pattern == "none":
        return None
    if pattern == "all":
        return np.ones(n, dtype=bool)
    bits = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return np.array(bits, dtype=bool)


@st.composite
def arrays(
    draw: st.DrawFn,
    types: Sequence[pa.DataType] = TENSOR_TYPES,
    *,
    nulls: Sequence[str] = ("none", "some", "all"),
    sliced: bool = True,
    special_floats: bool = True,
) -> pa.Array:
    """Draw one pyarrow array: a dtype from ``types``, a null pattern, a length, maybe a slice.

    Slices start at an offset that is not a multiple of 8, so the values and
    the validity bitmap both start mid-byte.
    """
    arrow_type = draw(st.sampled_from(list(types)))
    n = draw(_LENGTHS)
    offset = draw(st.sampled_from([0, 1, 3, 5, 11])) if sliced else 0
    tail = draw(st.integers(0, 3)) if sliced else 0
    total = n + offset + tail
    pattern = draw(st.sampled_from(list(nulls)))
    values = _values(draw, arrow_type, total, special_floats)
    mask = _mask(draw, total, pattern)
    storage = pa.array(values, mask=mask)
    array = storage if storage.type == arrow_type else storage.cast(arrow_type)
    return array.slice(offset, n) if (offset or tail) else array


@st.composite
def chunked_arrays(
    draw: st.DrawFn,
    types: Sequence[pa.DataType] = TENSOR_TYPES,
    *,
    max_chunks: int = 3,
    nulls: Sequence[str] = ("none", "some", "all"),
) -> pa.ChunkedArray:
    """Draw a ChunkedArray of 1..``max_chunks`` chunks of one type, each drawn by :func:`arrays`."""
    arrow_type = draw(st.sampled_from(list(types)))
    count = draw(st.integers(1, max_chunks))
    chunks = [draw(arrays([arrow_type], nulls=nulls)) for _ in range(count)]
    return pa.chunked_array(chunks, type=arrow_type)


@st.composite
def frames(
    draw: st.DrawFn,
    min_rows: int = 0,
    max_rows: int = 50,
    dtypes: Sequence[pa.DataType] | None = None,
    columns: Sequence[str] = ("a", "b", "c"),
    nulls: bool = True,
    chunked: bool = True,
) -> pa.Table:
    """Draw a pyarrow Table of numeric/bool columns, with nulls, NaN and ±inf, maybe chunked.

    Every column has its own dtype (drawn from ``dtypes``, default: numeric and
    bool) and its own chunk layout.
    """
    types = list(dtypes) if dtypes is not None else [*NUMERIC_TYPES, BOOL_TYPE]
    n = draw(st.integers(min_rows, max_rows))
    out = {}
    for name in columns:
        arrow_type = draw(st.sampled_from(types))
        pattern = draw(st.sampled_from(["none", "some", "all"])) if nulls else "none"
        values = _values(draw, arrow_type, n, True)
        mask = _mask(draw, n, pattern)
        array = pa.array(values, mask=mask)
        if array.type != arrow_type:
            array = array.cast(arrow_type)
        if chunked and n > 1 and draw(st.booleans()):
            cut = draw(st.integers(1, n - 1))
            out[name] = pa.chunked_array([array.slice(0, cut), array.slice(cut)], type=arrow_type)
        else:
            out[name] = pa.chunked_array([array], type=arrow_type)
    return pa.table(out)


def to_polars(array: pa.Array | pa.ChunkedArray, name: str = "x") -> Any:
    """Return the column as a polars Series (chunks kept where polars keeps them)."""
    import polars as pl

    return pl.Series(name, array)


def to_pandas_arrow(array: pa.Array | pa.ChunkedArray, name: str = "x") -> Any:
    """Return the column as a pandas Series with ``pd.ArrowDtype`` (zero-copy wrapper)."""
    import pandas as pd

    return pd.Series(pd.arrays.ArrowExtensionArray(array), name=name)


def to_pandas_masked(array: pa.Array | pa.ChunkedArray, name: str = "x") -> Any:
    """Return the column as a nullable-masked pandas Series (`Int64`, `Float64`, `boolean`)."""
    import pandas as pd

    return pd.Series(array.to_pandas(types_mapper=_masked), name=name)


def _masked(arrow_type: pa.DataType) -> Any:
    import pandas as pd

    mapping = {
        pa.int8(): pd.Int8Dtype(),
        pa.int16(): pd.Int16Dtype(),
        pa.int32(): pd.Int32Dtype(),
        pa.int64(): pd.Int64Dtype(),
        pa.uint8(): pd.UInt8Dtype(),
        pa.uint16(): pd.UInt16Dtype(),
        pa.uint32(): pd.UInt32Dtype(),
        pa.uint64(): pd.UInt64Dtype(),
        pa.float32(): pd.Float32Dtype(),
        pa.float64(): pd.Float64Dtype(),
        pa.bool_(): pd.BooleanDtype(),
    }
    return mapping.get(arrow_type)


def to_pandas_numpy(array: pa.Array | pa.ChunkedArray, name: str = "x") -> Any:
    """Return the column as a NumPy-backed pandas Series (only for arrays without nulls)."""
    import pandas as pd

    if array.null_count:
        msg = "a NumPy-backed pandas Series cannot hold nulls; use `to_pandas_masked`"
        raise ValueError(msg)
    values = (
        array.to_numpy()
        if isinstance(array, pa.ChunkedArray)
        else array.to_numpy(zero_copy_only=False)
    )
    return pd.Series(values, name=name)
