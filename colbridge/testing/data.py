"""Testing: the one data generator every test shares, with the data at each type's limits.

Values (`make_values`, `make_column`) mix three pools: small values (where
most arithmetic stays exact), values spread over the whole range of the type,
and the limits (`limit_values`): for integers each type's min, min+1, max-1,
max, 0, ±1 and the limits of every narrower integer type ±1 (so integer casts
are tested on both sides of each bound); for floats −0.0, ±0.5/1.5/2.5
(rounding), subnormals, the smallest normal, NaN, ±inf, the largest finite
value and ±1e308, ±2^53±1, ±2^63, ±2^64, and every int8…uint64 bound ±1,
each also one ulp either side (so float→int casts are tested at every bound,
on both sides).

Columns and tables add nulls, offsets that are not a multiple of 8 (values
and validity bitmaps start mid-byte), several chunks and empty frames:
`tables` (hypothesis), `arrays`/`chunked_arrays`/`frames` (hypothesis, one
column or a frame of mixed types), `FrameSpec`/`make_table` (seeded frames the
differential fuzzer replays). Converters give the same column as polars or
pandas (NumPy-backed, nullable-masked, ArrowDtype).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

__all__ = [
    "BOOL_TYPE",
    "ENGINE_TYPES",
    "INT_TYPES",
    "LENGTHS",
    "NUMERIC_TYPES",
    "OFFSETS",
    "TEMPORAL_TYPES",
    "TENSOR_TYPES",
    "FrameSpec",
    "arrays",
    "chunked_arrays",
    "frame_specs",
    "frames",
    "limit_values",
    "make_column",
    "make_table",
    "make_values",
    "tables",
    "to_pandas_arrow",
    "to_pandas_masked",
    "to_pandas_numpy",
    "to_polars",
]

INT_TYPES: tuple[pa.DataType, ...] = (
    pa.int8(), pa.int16(), pa.int32(), pa.int64(),
    pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
)  # fmt: skip
#: every dtype the engine computes on
ENGINE_TYPES: tuple[pa.DataType, ...] = (*INT_TYPES, pa.float32(), pa.float64())
NUMERIC_TYPES: tuple[pa.DataType, ...] = (*INT_TYPES, pa.float16(), pa.float32(), pa.float64())
BOOL_TYPE = pa.bool_()
TEMPORAL_TYPES: tuple[pa.DataType, ...] = (
    pa.date32(),
    pa.date64(),
    pa.timestamp("us"),
    pa.timestamp("ns", tz="UTC"),
    pa.duration("ms"),
)
TENSOR_TYPES: tuple[pa.DataType, ...] = (*NUMERIC_TYPES, BOOL_TYPE, *TEMPORAL_TYPES)

#: Row counts: 0, 1, not multiples of 8, one past a warp, past a small host grid.
LENGTHS: tuple[int, ...] = (0, 1, 2, 7, 9, 17, 33, 40)
#: Slice offsets, mostly not multiples of 8.
OFFSETS: tuple[int, ...] = (0, 0, 3, 5, 13)

#: Share of values drawn from each pool (small, whole range, limits).
_SMALL, _WIDE = 0.5, 0.2


def _storage(arrow_type: pa.DataType) -> pa.DataType:
    """The integer type a temporal type is stored as (the type itself otherwise)."""
    if pa.types.is_date32(arrow_type) or pa.types.is_time32(arrow_type):
        return pa.int32()
    if pa.types.is_temporal(arrow_type):
        return pa.int64()
    return arrow_type


def _int_bounds() -> list[int]:
    """Every integer type's min and max, one either side, and 2^53 ± 1 (float64's exact ints)."""
    out = [0, 1, -1, 2, -2]
    for t in INT_TYPES:
        info = np.iinfo(t.to_pandas_dtype())
        for bound in (int(info.min), int(info.max)):
            out += [bound - 1, bound, bound + 1]
    for p in (53, 63, 64):
        out += [2**p - 1, 2**p, 2**p + 1, -(2**p) - 1, -(2**p), -(2**p) + 1]
    return out


@functools.cache
def _limits(arrow_type: pa.DataType) -> np.ndarray[Any, Any]:
    storage = _storage(arrow_type)
    dtype = np.dtype(storage.to_pandas_dtype())
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = int(info.min), int(info.max)
        picked = {v for v in _int_bounds() if lo <= v <= hi}
        picked |= {lo, lo + 1, hi - 1, hi}
        return np.array(sorted(picked), dtype=dtype)
    finfo = np.finfo(dtype)
    base = [0.0, 0.5, 1.0, 1.5, 2.5, -0.5, -1.5, -2.5, float(finfo.max), 1e308,
            float(finfo.smallest_normal), float(finfo.smallest_subnormal),
            float(finfo.smallest_normal) - float(finfo.smallest_subnormal)]  # fmt: skip
    with np.errstate(over="ignore"):
        values = [np.float64(v).astype(dtype) for v in base]
        for bound in _int_bounds():
            # an integer bound rounded to this float type, and its neighbours
            v = np.float64(bound).astype(dtype)
            values += [v, np.nextafter(v, dtype.type(np.inf)), np.nextafter(v, dtype.type(-np.inf))]
    finite = np.array(values, dtype=dtype)
    finite = finite[np.isfinite(finite)]
    everything = np.concatenate([finite, -finite, np.array([np.nan, np.inf, -np.inf, -0.0],
                                                           dtype=dtype)])  # fmt: skip
    # unique by bit pattern: keeps -0.0 next to 0.0 and one NaN
    bits = everything.view(f"u{dtype.itemsize}")
    _, first = np.unique(bits, return_index=True)
    return everything[np.sort(first)]


def limit_values(arrow_type: pa.DataType) -> np.ndarray[Any, Any]:
    """The values at and around the limits of ``arrow_type`` (see the module docstring).

    Temporal types get the limits of the integer type they are stored as.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from colbridge.testing.data import limit_values
    >>> limit_values(pa.int8()).tolist()
    [-128, -127, -2, -1, 0, 1, 2, 126, 127]
    >>> 128.0 in limit_values(pa.float64()) and 127.99999999999999 in limit_values(pa.float64())
    True
    """
    return _limits(arrow_type).copy()


def make_values(rng: np.random.Generator, arrow_type: pa.DataType, n: int) -> np.ndarray[Any, Any]:
    """``n`` values of the type from the three pools (small, whole range, limits)."""
    storage = _storage(arrow_type)
    if pa.types.is_boolean(storage):
        return rng.integers(0, 2, size=n).astype(bool)
    dtype = np.dtype(storage.to_pandas_dtype())
    which = rng.random(n)
    limits = rng.choice(_limits(arrow_type), size=n)
    if dtype.kind == "f":
        # NaN, ±inf and -0.0 are a few of many limits: give them a fifth of the limit draws
        specials = np.array([np.nan, np.inf, -np.inf, -0.0], dtype=dtype)
        pick = rng.random(n) < 0.2
        limits[pick] = rng.choice(specials, size=int(pick.sum()))
        small = rng.normal(scale=20.0, size=n)
        halves = rng.random(n) < 0.2
        small[halves] = np.round(small[halves] * 2) / 2  # ties for the rounding modes
        top = 300.0 if dtype.itemsize == 8 else 37.0 if dtype.itemsize == 4 else 4.0
        wide = rng.choice([-1.0, 1.0], size=n) * 10.0 ** rng.uniform(-top, top, size=n)
        with np.errstate(over="ignore"):
            small, wide = small.astype(dtype), wide.astype(dtype)
    else:
        info = np.iinfo(dtype)
        small = rng.integers(max(int(info.min), -40), min(int(info.max), 40), size=n,
                             endpoint=True).astype(dtype)  # fmt: skip
        wide = rng.integers(int(info.min), int(info.max), size=n, endpoint=True, dtype=dtype)
    out = np.where(which < _SMALL, small, np.where(which < _SMALL + _WIDE, wide, limits))
    return out.astype(dtype)


def _density(nulls: bool | float) -> float:
    if isinstance(nulls, bool):
        return 0.3 if nulls else 0.0
    return float(nulls)


def make_column(
    rng: np.random.Generator, arrow_type: pa.DataType, n: int, nulls: bool | float = False
) -> pa.Array:
    """A column of ``n`` values (`make_values`) with nulls.

    ``nulls`` is a density (0 to 1) or a bool (True: about 30 % nulls). A
    density above 0 and below 1 always gives at least one null, so the kernel
    with validity handling is the one tested.
    """
    values = make_values(rng, arrow_type, n)
    density = _density(nulls)
    mask = None
    if density > 0 and n:
        mask = rng.random(n) < density
        mask[rng.integers(0, n)] = True
    storage = _storage(arrow_type)
    array = pa.array(values, type=storage, mask=mask)
    return array if storage == arrow_type else array.cast(arrow_type)


# -- hypothesis strategies ------------------------------------------------------------------
@st.composite
def tables(
    draw: st.DrawFn,
    types: Sequence[pa.DataType],
    names: Sequence[str] = ("a", "b", "c"),
    *,
    lengths: Sequence[int] = LENGTHS,
    offsets: Sequence[int] = OFFSETS,
    max_rows: int | None = None,
    null_patterns: Sequence[Sequence[bool | float]] | None = None,
    densities: Sequence[float] = (0.0, 0.0, 0.2, 0.5, 1.0),
    chunks: bool = True,
) -> pa.Table:
    """A table with one column per name (types given per column): nulls, offsets, chunks.

    The row count comes from ``lengths`` and the table is a slice starting at
    one of ``offsets``, so values and bitmaps start mid-byte (``max_rows``
    replaces the longest of ``lengths``). Nulls: either a
    pattern from ``null_patterns`` (per column: whether it has some, or their density,
    as `make_column` takes it) or one density of ``densities`` given to a random subset
    of the columns. A kernel is compiled for each set of columns holding nulls, so a
    test that checks one expression on many tables gives them one pattern. With ``chunks``,
    tables of 3+ rows are often cut into 2 or 3 chunks.
    """
    if max_rows is not None:
        lengths = [*(x for x in lengths if x < max_rows), max_rows]
    n = draw(st.sampled_from(list(lengths)))
    offset = draw(st.sampled_from(list(offsets)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if null_patterns is not None:
        pattern = draw(st.sampled_from([tuple(p) for p in null_patterns]))
        col_nulls: list[bool | float] = list(pattern)
    else:
        density = draw(st.sampled_from(list(densities)))
        col_nulls = [density if draw(st.booleans()) else 0.0 for _ in names]
    columns = {
        name: make_column(rng, arrow_type, n + offset, nulls)
        for name, arrow_type, nulls in zip(names, types, col_nulls, strict=True)
    }
    table = pa.table(columns).slice(offset, n)
    if chunks and n > 2 and draw(st.booleans()):
        count = draw(st.sampled_from([2, 3]))
        cuts = sorted(draw(st.sets(st.integers(1, n - 1), min_size=count - 1,
                                   max_size=count - 1)))  # fmt: skip
        bounds = [0, *cuts, n]
        pieces = [table.slice(lo, hi - lo) for lo, hi in itertools.pairwise(bounds)]
        table = pa.concat_tables(pieces)
    return table


def _mask(draw: st.DrawFn, n: int, pattern: str) -> np.ndarray[Any, Any] | None:
    if pattern == "none":
        return None
    if pattern == "all":
        return np.ones(n, dtype=bool)
    bits = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return np.array(bits, dtype=bool)


def _drawn_values(
    draw: st.DrawFn, arrow_type: pa.DataType, n: int, special: bool
) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = make_values(rng, arrow_type, n)
    if not special and values.dtype.kind == "f":
        values[~np.isfinite(values)] = 0
    return values


def _array(values: np.ndarray[Any, Any], arrow_type: pa.DataType,
           mask: np.ndarray[Any, Any] | None) -> pa.Array:  # fmt: skip
    storage = _storage(arrow_type)
    array = pa.array(values, type=storage, mask=mask)
    return array if storage == arrow_type else array.cast(arrow_type)


#: Lengths of `arrays`: 0, 1, or not multiples of 8, plus a few that are.
_ARRAY_LENGTHS = st.sampled_from([0, 1, 3, 7, 8, 9, 13, 16, 31, 33])


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
    the validity bitmap both start mid-byte. ``special_floats=False`` keeps
    floats finite.
    """
    arrow_type = draw(st.sampled_from(list(types)))
    n = draw(_ARRAY_LENGTHS)
    offset = draw(st.sampled_from([0, 1, 3, 5, 11])) if sliced else 0
    tail = draw(st.integers(0, 3)) if sliced else 0
    total = n + offset + tail
    pattern = draw(st.sampled_from(list(nulls)))
    values = _drawn_values(draw, arrow_type, total, special_floats)
    array = _array(values, arrow_type, _mask(draw, total, pattern))
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
        array = _array(_drawn_values(draw, arrow_type, n, True), arrow_type,
                       _mask(draw, n, pattern))  # fmt: skip
        if chunked and n > 1 and draw(st.booleans()):
            cut = draw(st.integers(1, n - 1))
            out[name] = pa.chunked_array([array.slice(0, cut), array.slice(cut)], type=arrow_type)
        else:
            out[name] = pa.chunked_array([array], type=arrow_type)
    return pa.table(out)


# -- seeded frames (the differential fuzzer replays them from their spec) --------------------
@dataclass(frozen=True)
class FrameSpec:
    """How one random frame is made (printed on failure to replay it with `make_table`)."""

    seed: int
    rows: int
    offset: int
    nulls: str  # "none" | "some" | "all"
    chunks: int


def frame_specs(max_rows: int = 40) -> st.SearchStrategy[FrameSpec]:
    """Row counts 0, 1, odd and not multiples of 8; offsets not multiples of 8; 1-3 chunks."""
    return st.builds(
        FrameSpec,
        seed=st.integers(0, 2**32 - 1),
        rows=st.sampled_from([0, 1, 2, 7, 9, 17, 33, max_rows]),
        offset=st.sampled_from([0, 0, 3, 5, 13]),
        nulls=st.sampled_from(["none", "some", "some", "all"]),
        chunks=st.sampled_from([1, 1, 2, 3]),
    )


def make_table(spec: FrameSpec, types: dict[str, pa.DataType]) -> pa.Table:
    """The frame of ``spec``: every column gets nulls in the same mode (one of two patterns)."""
    rng = np.random.default_rng(spec.seed)
    total = spec.rows + spec.offset
    columns = {}
    for name, arrow_type in types.items():
        values = make_values(rng, arrow_type, total)
        if spec.nulls == "none" or spec.rows == 0:
            mask = None
        elif spec.nulls == "all":
            mask = np.ones(total, dtype=bool)
        else:
            mask = rng.random(total) < 0.3
            mask[spec.offset] = True  # at least one null in the visible rows
        columns[name] = _array(values, arrow_type, mask)
    table = pa.table(columns).slice(spec.offset, spec.rows)
    if spec.chunks > 1 and spec.rows > spec.chunks:
        cuts = sorted(rng.choice(np.arange(1, spec.rows), size=spec.chunks - 1, replace=False))
        bounds = [0, *map(int, cuts), spec.rows]
        table = pa.concat_tables(
            [table.slice(lo, hi - lo) for lo, hi in itertools.pairwise(bounds)]
        )
    return table


# -- the same column as polars or pandas -----------------------------------------------------
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
