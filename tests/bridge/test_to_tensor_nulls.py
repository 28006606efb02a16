"""`to_tensor` with nulls: the masked pack kernels against a NumPy oracle built from pyarrow."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from colbridge.columns import matrix, to_tensor
from colbridge.errors import NullValuesError


def _storage(arr: pa.Array) -> pa.Array:
    """The integers or floats a column contributes (nulls filled with 0), as pyarrow."""
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.indices
    elif pa.types.is_date32(t):
        arr = arr.view(pa.int32())
    elif pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t):
        arr = arr.view(pa.int64())
    if pa.types.is_boolean(arr.type):
        return pc.fill_null(arr, False)
    return pc.fill_null(arr, pa.scalar(0, arr.type))


def oracle(columns: list[pa.ChunkedArray], dtype: object) -> tuple[np.ndarray, np.ndarray]:
    """NumPy's ``column_stack(...).astype(dtype)`` of the filled values, and the validity."""
    n = len(columns[0]) if columns else 0
    if not columns:
        return np.empty((n, 0), dtype), np.empty((n, 0), bool)
    values, valid = [], []
    for col in columns:
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        filled = _storage(arr).to_numpy(zero_copy_only=False)
        values.append(filled.astype(np.float32) if filled.dtype == np.float16 else filled)
        valid.append(np.asarray(arr.is_valid()))
    return np.column_stack(values).astype(dtype), np.column_stack(valid)


def check(table: pa.Table, dtype: object, order: str) -> None:
    """Fill and keep, in ``order``, against the oracle."""
    columns = list(table.columns)
    expected, valid = oracle(columns, dtype)
    kept = to_tensor(table, dtype=dtype, order=order)
    np.testing.assert_array_equal(kept.numpy(), expected)
    assert kept.numpy().flags[f"{order}_CONTIGUOUS"] or 0 in kept.shape
    if valid.all():
        assert kept.validity is None
    else:
        assert kept.validity is not None
        np.testing.assert_array_equal(kept.validity, valid)
        assert kept.validity.flags[f"{order}_CONTIGUOUS"]
    fill = 1 if expected.dtype == np.bool_ else 7  # a value the matrix's type holds exactly
    filled = to_tensor(table, dtype=dtype, order=order, nulls=fill)
    want = expected.copy()
    want[~valid] = fill
    np.testing.assert_array_equal(filled.numpy(), want)
    assert filled.validity is None


def _column(arrow_type: pa.DataType, n: int, nulls: np.ndarray, offset: int = 0) -> pa.Array:
    """``n`` values of ``arrow_type`` (nulls where ``nulls``), sliced at ``offset``."""
    total = n + offset + 5
    rng = np.random.default_rng(n + offset)
    mask = np.zeros(total, bool)
    mask[offset : offset + n] = nulls
    raw = rng.integers(-100, 100, total)
    if pa.types.is_boolean(arrow_type):
        arr = pa.array(raw > 0, mask=mask)
    elif pa.types.is_dictionary(arrow_type):
        arr = pa.array(np.array(["x", "y", "z"])[raw % 3], mask=mask).dictionary_encode()
    elif pa.types.is_date32(arrow_type):
        arr = pa.array(raw.astype(np.int32), mask=mask).view(arrow_type)
    elif pa.types.is_timestamp(arrow_type) or pa.types.is_date64(arrow_type):
        arr = pa.array(raw, mask=mask).view(arrow_type)
    elif pa.types.is_unsigned_integer(arrow_type):
        arr = pa.array(np.abs(raw).astype(arrow_type.to_pandas_dtype()), mask=mask)
    else:
        arr = pa.array(raw.astype(arrow_type.to_pandas_dtype()) / 1, mask=mask).cast(arrow_type)
    return arr.slice(offset, n)


ALL_TYPES = [
    *(pa.int8(), pa.int16(), pa.int32(), pa.int64()),
    *(pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()),
    *(pa.float16(), pa.float32(), pa.float64()),
    pa.bool_(),
    pa.date32(),
    pa.date64(),
    pa.timestamp("us"),
    pa.dictionary(pa.int32(), pa.string()),
]


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("arrow_type", ALL_TYPES, ids=str)
def test_every_dtype_nulls_first_last_and_bit_offsets(arrow_type, order):
    n = 45
    nulls = np.zeros(n, bool)
    nulls[[0, 8, 9, 30, n - 1]] = True
    table = pa.table({
        "x": _column(arrow_type, n, nulls, offset=5),
        "y": _column(pa.float64(), n, np.roll(nulls, 3), offset=13),
        "z": _column(arrow_type, n, np.zeros(n, bool), offset=0),
    })  # fmt: skip
    check(table, "float64", order)
    check(table, "float32", order)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", ["int32", "bool", "float16", "int64"])
def test_other_matrix_dtypes(dtype, order):
    n = 30
    nulls = np.arange(n) % 4 == 1
    table = pa.table({
        "a": _column(pa.int16(), n, nulls, offset=3),
        "b": _column(pa.bool_(), n, ~nulls, offset=1),
        "c": _column(pa.float32(), n, np.zeros(n, bool)),
    })  # fmt: skip
    check(table, dtype, order)


def test_large_int64_casts_directly_to_float32():
    # int64 -> float32 rounds once, as NumPy's astype (not through float64).
    big = np.array([2**53 + 1 + 2**29, -(2**62) - 3, 2**24 + 1, 5], dtype=np.int64)
    table = pa.table({"a": pa.array(big, mask=np.array([False, False, False, True]))})
    check(table, "float32", "C")
    check(table, "float32", "F")


@pytest.mark.parametrize("order", ["C", "F"])
def test_chunks_that_do_not_line_up(order):
    a = pa.chunked_array([
        _column(pa.int64(), 10, np.arange(10) % 3 == 0, 3),
        _column(pa.int64(), 1, np.array([True])),
        _column(pa.int64(), 0, np.zeros(0, bool)),
        _column(pa.int64(), 21, np.arange(21) % 5 == 0, 11),
    ])  # fmt: skip
    b = pa.chunked_array([
        _column(pa.float32(), 7, np.arange(7) % 2 == 0, 1),
        _column(pa.float32(), 25, np.arange(25) == 24, 6),
    ])  # fmt: skip
    c = pa.chunked_array([_column(pa.bool_(), 32, np.arange(32) == 0, 2)])
    check(pa.table({"a": a, "b": b, "c": c}), "float64", order)


@pytest.mark.parametrize("order", ["C", "F"])
def test_empty_and_one_row(order):
    empty = pa.table({"a": pa.array([], pa.int32()), "b": pa.array([], pa.float64())})
    m = to_tensor(empty, order=order)
    assert m.shape == (0, 2)
    assert m.validity is None
    one = pa.table({"a": pa.array([None], pa.int32()), "b": pa.array([1.5])})
    check(one, "float64", order)
    all_null = pa.table({"a": pa.array([None, None, None], pa.int16())})
    check(all_null, "float32", order)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("fill", ["keep", 0])
def test_large_inputs_split_between_threads(order, fill, monkeypatch):
    n = 70_001  # 70,001 x 4 elements: above the threshold that splits rows over threads
    assert n * 4 >= matrix._PARALLEL_MIN_ELEMENTS
    monkeypatch.setattr(matrix, "_WORKERS", 3)  # uneven ranges even on a small machine
    rng = np.random.default_rng(5)
    table = pa.table({
        "a": _column(pa.int64(), n, rng.random(n) < 0.1, 3),
        "b": _column(pa.float32(), n, rng.random(n) < 0.5, 0),
        "c": _column(pa.int16(), n, np.zeros(n, bool), 0),
        "d": pa.chunked_array([
            _column(pa.float64(), 40_000, rng.random(40_000) < 0.1, 7),
            _column(pa.float64(), n - 40_000, rng.random(n - 40_000) < 0.1, 1),
        ]),
    })  # fmt: skip
    expected, valid = oracle(list(table.columns), np.float32)
    m = to_tensor(table, dtype="float32", order=order, nulls=fill)
    np.testing.assert_array_equal(m.numpy(), expected)
    if fill == "keep":
        np.testing.assert_array_equal(m.validity, valid)
    # polars agrees (an independent oracle)
    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    polars = df.select(pl.all().cast(pl.Float32).fill_null(0)).to_numpy()
    np.testing.assert_array_equal(m.numpy(), polars)


def test_polars_sliced_frame_matches_polars():
    n = 1_000
    rng = np.random.default_rng(2)
    df = pl.DataFrame({
        "a": pl.Series(rng.integers(0, 9, n)).scatter(np.flatnonzero(rng.random(n) < 0.2), None),
        "b": pl.Series(rng.random(n)).scatter([0, n - 1], None),
    }).slice(5, n - 11)  # fmt: skip
    m = to_tensor(df, dtype="float32")
    np.testing.assert_array_equal(
        m.numpy(), df.select(pl.all().cast(pl.Float32).fill_null(0)).to_numpy()
    )
    np.testing.assert_array_equal(m.validity, df.select(pl.all().is_not_null()).to_numpy())


def test_pandas_nan_counts_as_null_in_the_kernel_path():
    frame = pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": np.array([1, 2, 3], dtype=np.int8)})
    m = to_tensor(frame, dtype="float32")
    np.testing.assert_array_equal(m.numpy(), [[1, 1], [0, 2], [3, 3]])
    np.testing.assert_array_equal(m.validity, [[True, True], [False, True], [True, True]])
    with pytest.raises(NullValuesError, match=r"column `a` of type `double` has 1 null"):
        to_tensor(frame, nulls="raise")


@st.composite
def _tables(draw: st.DrawFn) -> pa.Table:
    n = draw(st.integers(0, 70))
    columns = {}
    # one dtype per column: the property is about chunks, offsets and nulls (every dtype
    # has its own test above), and each dtype tuple compiles a kernel of its own
    for name, arrow_type in zip("abc", [pa.int64(), pa.float32(), pa.bool_()], strict=True):
        sizes = draw(st.lists(st.integers(0, n), max_size=3))
        cuts = sorted({0, n, *sizes})
        chunks = []
        for lo, hi in itertools.pairwise(cuts):
            nulls = np.array(draw(st.lists(st.booleans(), min_size=hi - lo, max_size=hi - lo)))
            offset = draw(st.integers(0, 17))
            chunks.append(_column(arrow_type, hi - lo, nulls.astype(bool), offset))
        columns[name] = (
            pa.chunked_array(chunks, type=chunks[0].type)
            if chunks
            else pa.chunked_array([], arrow_type)
        )
    return pa.table(columns)


@settings(max_examples=120, deadline=None)
@given(table=_tables(), order=st.sampled_from(["C", "F"]))
def test_property_chunks_offsets_and_nulls_match_numpy(table, order):
    check(table, "float64", order)
