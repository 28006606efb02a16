from __future__ import annotations

import gc
from decimal import Decimal

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from colbridge.columns import TensorView, as_tensor, column_to_arrow, to_tensor
from colbridge.errors import (
    CopyNotAllowedError,
    InvalidOperationError,
    NullValuesError,
    UnsupportedTypeError,
)
from colbridge.testing.data import (
    NUMERIC_TYPES,
    TEMPORAL_TYPES,
    arrays,
    chunked_arrays,
    to_pandas_arrow,
    to_pandas_masked,
    to_polars,
)

ZERO_COPY_TYPES = (*NUMERIC_TYPES, *TEMPORAL_TYPES)


def make(arrow_type: pa.DataType, n: int, offset: int, nulls: bool) -> pa.Array:
    rng = np.random.default_rng(n + offset)
    total = n + offset + 2
    if pa.types.is_floating(arrow_type):
        values = rng.normal(size=total).astype(arrow_type.to_pandas_dtype())
    else:
        storage = pa.int32() if pa.types.is_date32(arrow_type) else arrow_type
        if pa.types.is_temporal(storage):
            storage = pa.int64()
        values = rng.integers(0, 100, size=total).astype(storage.to_pandas_dtype())
    mask = (np.arange(total) % 3 == 1) if nulls else None
    arr = pa.array(values, mask=mask)
    if arr.type != arrow_type:
        arr = arr.cast(arrow_type)
    return arr.slice(offset, n)


def polars_held(series: pl.Series) -> pa.ChunkedArray:
    """The Arrow chunks a polars Series holds, as polars exports them (its C stream)."""
    return pa.chunked_array(series)


def address_of(arr: pa.Array, itemsize: int) -> int:
    return arr.buffers()[1].address + arr.offset * itemsize


def expected_values(arr: pa.Array) -> np.ndarray:
    """The oracle: pyarrow's own NumPy conversion, nulls as zero, temporal as integers."""
    storage = arr
    if pa.types.is_temporal(arr.type):
        int_type = (
            pa.int32()
            if pa.types.is_date32(arr.type) or pa.types.is_time32(arr.type)
            else pa.int64()
        )
        storage = pa.Array.from_buffers(int_type, len(arr), arr.buffers(), offset=arr.offset)
    zero = pa.scalar(False) if pa.types.is_boolean(arr.type) else pa.scalar(0, storage.type)
    filled = storage.fill_null(zero) if storage.null_count else storage
    return filled.to_numpy(zero_copy_only=False)


SOURCES = {
    "pyarrow": lambda a: a,
    "pyarrow-chunked": lambda a: pa.chunked_array([a], type=a.type),
    "polars": lambda a: to_polars(a),
    "pandas-arrow": lambda a: to_pandas_arrow(a),
    "capsule": lambda a: Capsule(a),
}


class Capsule:
    def __init__(self, arr):
        self.arr = arr

    def __arrow_c_array__(self, requested_schema=None):
        return self.arr.__arrow_c_array__(requested_schema)


def polars_ok(arrow_type: pa.DataType) -> bool:
    # polars has no date64: it converts it to Datetime (a copy) on import.
    return not pa.types.is_date64(arrow_type)


SOURCE_TYPE = [
    pytest.param(source, t, id=f"{source}-{t}")
    for source in SOURCES
    for t in ZERO_COPY_TYPES
    if source != "polars" or polars_ok(t)
]


@pytest.mark.parametrize(("source", "arrow_type"), SOURCE_TYPE)
@pytest.mark.parametrize(("n", "offset"), [(0, 0), (0, 3), (1, 0), (13, 0), (13, 5), (100, 11)])
def test_data_pointer_is_arrow_buffer_plus_offset(source, arrow_type, n, offset):
    arr = make(arrow_type, n, offset, nulls=n > 2)
    col = SOURCES[source](arr)
    # The Arrow data the source itself holds (polars: its own buffers, as polars exports them)
    held = polars_held(col).chunk(0) if source == "polars" else arr
    view = as_tensor(col)
    itemsize = view.dtype.itemsize
    assert view.__array_interface__["data"] == (address_of(held, itemsize), True)
    assert view.shape == (n,)
    assert not view.copied
    assert view.copy_reason == ""
    assert view.placement == "host"
    np.testing.assert_array_equal(
        np.where(np.asarray(arr.is_valid()), view.numpy(), 0), expected_values(arr)
    )
    assert view.null_count == arr.null_count
    if arr.null_count:
        np.testing.assert_array_equal(view.validity.to_numpy(), np.asarray(arr.is_valid()))
        if source != "polars":  # polars re-exports its bitmap on each export
            assert view.validity.offset == held.offset
            assert view.validity.address == held.buffers()[0].address
    else:
        assert view.validity is None


@pytest.mark.parametrize("arrow_type", [t for t in NUMERIC_TYPES if t != pa.float16()], ids=str)
@pytest.mark.parametrize("offset", [0, 5])
def test_pandas_masked_and_numpy_backed_are_zero_copy(arrow_type, offset):
    arr = make(arrow_type, 21, offset, nulls=True)
    masked = to_pandas_masked(arr)
    view = as_tensor(masked)
    assert view.data_address == masked.array._data.ctypes.data
    assert view.null_count == arr.null_count
    dense = pd.Series(make(arrow_type, 21, offset, nulls=False).to_numpy())
    view = as_tensor(dense)
    assert view.data_address == dense.to_numpy(copy=False).ctypes.data
    values = np.arange(40, dtype=arrow_type.to_pandas_dtype())[offset:]
    assert as_tensor(values).data_address == values.ctypes.data


def test_numpy_bool_is_viewed_directly():
    x = np.array([True, False, True])
    view = as_tensor(x)
    assert view.data_address == x.ctypes.data
    assert not view.copied
    assert view.arrow().to_pylist() == [True, False, True]
    s = pd.Series([False, True])
    assert as_tensor(s).numpy().tolist() == [False, True]


def test_read_only():
    view = as_tensor(pa.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="read-only"):
        view.numpy()[0] = 5.0
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(view)[0] = 5.0
    assert view.__array_interface__["data"][1] is True


def test_lifetime_owner_kept_alive():
    df = pl.DataFrame({"a": np.arange(100_000, dtype=np.float64)})
    view = as_tensor(df.get_column("a"))
    arr = view.numpy()
    sliced = arr[10:20]
    del df, view
    gc.collect()
    junk = [np.full(100_000, -1.0) for _ in range(10)]
    assert arr[99_999] == 99_999.0
    assert sliced.tolist() == list(map(float, range(10, 20)))
    del junk


def test_lifetime_pyarrow_table():
    table = pa.table({"x": pa.array(np.arange(50_000, dtype=np.int64)).slice(7)})
    view = as_tensor(table.column("x"))
    del table
    gc.collect()
    assert view.numpy()[0] == 7
    assert int(view.numpy().sum()) == sum(range(7, 50_000))


def test_temporal_metadata():
    ts = pa.array([1, 2, None], pa.timestamp("ns", tz="UTC"))
    view = as_tensor(ts, name="t")
    assert (view.unit, view.tz, view.dtype) == ("ns", "UTC", np.dtype("int64"))
    assert "unit='ns'" in repr(view)
    assert as_tensor(pa.array([0, 1], pa.date32())).unit == "D"
    assert as_tensor(pa.array([0, 1], pa.date64())).unit == "ms"
    assert as_tensor(pa.array([5], pa.duration("s"))).numpy().tolist() == [5]


def test_dictionary_indices_zero_copy():
    arr = pa.array(["b", "a", None, "b", "c", "a"]).dictionary_encode().slice(1)
    view = as_tensor(arr)
    assert view.data_address == address_of(arr.indices, 4)
    assert view.dictionary.to_pylist() == ["b", "a", "c"]
    assert view.numpy()[[0, 2, 3, 4]].tolist() == [1, 0, 2, 1]
    assert view.validity.to_numpy().tolist() == [True, False, True, True, True]


def test_dictionary_chunks_unified_with_copy():
    chunked = pa.chunked_array(
        [pa.array(["x", "y"]).dictionary_encode(), pa.array(["y", "z"]).dictionary_encode()]
    )
    view = as_tensor(chunked, allow_copy=True)
    decoded = [view.dictionary[i].as_py() for i in view.numpy()]
    assert decoded == ["x", "y", "y", "z"]
    assert view.copied


@pytest.mark.parametrize("offset", [0, 3])
def test_fixed_size_list_2d_zero_copy(offset):
    values = pa.array(np.arange(60, dtype=np.float32))
    arr = pa.FixedSizeListArray.from_arrays(values, 4).slice(offset, 9)
    view = as_tensor(arr)
    assert view.shape == (9, 4)
    assert view.data_address == values.buffers()[1].address + offset * 4 * 4
    np.testing.assert_array_equal(
        view.numpy(), np.arange(60, dtype=np.float32).reshape(15, 4)[offset : offset + 9]
    )


def test_nested_fixed_size_list_and_sliced_child():
    child = pa.array(np.arange(100, dtype=np.int16)).slice(4, 48)
    inner = pa.FixedSizeListArray.from_arrays(child, 2)
    outer = pa.FixedSizeListArray.from_arrays(inner, 3).slice(1, 5)
    view = as_tensor(outer)
    assert view.shape == (5, 3, 2)
    assert view.data_address == child.buffers()[1].address + (4 + 6) * 2
    assert view.numpy()[0, 0, 0] == 10


def test_fixed_size_list_nulls():
    values = pa.array(np.arange(6, dtype=np.float64))
    arr = pa.FixedSizeListArray.from_arrays(values, 2, mask=pa.array([False, True, False]))
    view = as_tensor(arr)
    assert view.validity.to_numpy().tolist() == [True, False, True]
    with pytest.raises(NullValuesError, match=r"has 1 null value"):
        as_tensor(arr, nulls="raise")
    filled = as_tensor(arr, nulls=-1.0, allow_copy=True)
    assert filled.numpy().tolist() == [[0.0, 1.0], [-1.0, -1.0], [4.0, 5.0]]
    inner = pa.FixedSizeListArray.from_arrays(pa.array([1.0, None, 3.0, 4.0]), 2)
    with pytest.raises(NullValuesError, match=r"1 null element\(s\) inside its rows"):
        as_tensor(inner, name="v")
    assert as_tensor(inner, nulls=0.0, allow_copy=True).numpy().tolist() == [[1.0, 0.0], [3.0, 4.0]]


def test_fixed_shape_tensor_views():
    data = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    arr = pa.FixedShapeTensorArray.from_numpy_ndarray(data)
    view = as_tensor(arr.slice(1))
    np.testing.assert_array_equal(view.numpy(), data[1:])
    assert view.data_address == arr.storage.values.buffers()[1].address + 6 * 4
    perm_type = pa.fixed_shape_tensor(pa.float32(), [2, 3], permutation=[1, 0])
    perm = pa.ExtensionArray.from_storage(perm_type, arr.storage)
    np.testing.assert_array_equal(as_tensor(perm).numpy(), perm.to_numpy_ndarray())


def test_bool_needs_copy():
    arr = pa.array([True, None, False, True] * 5).slice(3)
    with pytest.raises(CopyNotAllowedError, match=r"column `flag` is `bool`.*allow_copy=True"):
        as_tensor(arr, name="flag")
    view = as_tensor(arr, allow_copy=True)
    assert view.copied
    assert "unpacked bool" in view.copy_reason
    valid = np.asarray(arr.is_valid())
    assert view.numpy()[valid].tolist() == [v for v in arr.to_pylist() if v is not None]


def test_multi_chunk():
    chunked = pa.chunked_array([[1, 2], [3], [4, 5]])
    with pytest.raises(CopyNotAllowedError, match=r"column `m` has 3 chunks.*allow_copy=True"):
        as_tensor(chunked, name="m")
    view = as_tensor(chunked, allow_copy=True)
    assert view.copied
    assert "combined 3 chunks" in view.copy_reason
    assert view.numpy().tolist() == [1, 2, 3, 4, 5]
    # Empty chunks around a single real chunk cost nothing.
    one = pa.array([7, 8])
    assert as_tensor(pa.chunked_array([pa.array([], pa.int64()), one])).data_address == address_of(
        one, 8
    )
    assert as_tensor(pa.chunked_array([], pa.int64())).shape == (0,)


def test_null_modes():
    arr = pa.array([1.0, None, 3.0])
    with pytest.raises(NullValuesError, match=r"column `z` of type `double` has 1 null value"):
        as_tensor(arr, nulls="raise", name="z")
    with pytest.raises(CopyNotAllowedError, match=r"filling 1 null\(s\) of column `z`"):
        as_tensor(arr, nulls=0.0, name="z")
    filled = as_tensor(arr, nulls=-2.0, allow_copy=True)
    assert filled.numpy().tolist() == [1.0, -2.0, 3.0]
    assert filled.validity is None
    assert filled.null_count == 0
    assert filled.arrow().to_pylist() == [1.0, -2.0, 3.0]
    clean = pa.array([1.0, 2.0])
    assert not as_tensor(clean, nulls=0.0).copied
    assert not as_tensor(clean, nulls="raise").copied
    with pytest.raises(ValueError, match=r"`nulls` must be 'keep', 'raise' or a fill value"):
        as_tensor(clean, nulls="drop")
    with pytest.raises(
        InvalidOperationError, match=r"fill value 1.5 cannot be stored exactly as int64"
    ):
        as_tensor(pa.array([1, None]), nulls=1.5, allow_copy=True)
    with pytest.raises(InvalidOperationError, match=r"fill value 300 cannot be stored exactly"):
        as_tensor(pa.array([1, None], pa.int8()), nulls=300, allow_copy=True)


def test_unsupported_types_and_objects():
    with pytest.raises(
        UnsupportedTypeError, match=r"column `s` has type `string_view`.*dictionary_encode"
    ):
        as_tensor(pl.Series("s", ["a", "b"]))
    with pytest.raises(UnsupportedTypeError, match=r"column `s` has type `large_string`|`string`"):
        as_tensor(pd.Series(["a", "b"], name="s"))
    with pytest.raises(UnsupportedTypeError, match=r"column `o` has pandas dtype `object`"):
        as_tensor(pd.Series([{}, []], name="o", dtype=object))
    with pytest.raises(UnsupportedTypeError, match=r"`struct<x: int64>`.*arr.field"):
        as_tensor(pa.array([{"x": 1}]), name="st")
    with pytest.raises(UnsupportedTypeError, match=r"`decimal128\(5, 2\)`.*float64"):
        as_tensor(pa.array([Decimal("1.25")], pa.decimal128(5, 2)), name="d")
    with pytest.raises(UnsupportedTypeError, match=r"`null`.*cast"):
        as_tensor(pa.nulls(3), name="n")


def test_arrow_round_trip_and_repr():
    arr = pa.array([1, None, 3], pa.int32()).slice(1)
    view = as_tensor(arr, name="k")
    back = pa.array(view)
    assert back.equals(arr)
    assert pa.Array._import_from_c_capsule(*view.__arrow_c_array__()).equals(arr)
    text = repr(view)
    assert "TensorView('k', shape=(2,), dtype=int32" in text
    assert "zero-copy" in text
    assert len(view) == 2
    assert as_tensor(view) is view
    assert isinstance(view, TensorView)


def test_array_protocol_copy_semantics():
    view = as_tensor(pa.array([1, 2, 3], pa.int16()))
    same = np.asarray(view)
    assert same.ctypes.data == view.data_address
    fresh = np.array(view, copy=True)
    assert fresh.flags.writeable
    assert fresh.ctypes.data != view.data_address
    assert view.__array__(np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="copy not allowed"):
        view.__array__(np.float64, copy=False)
    assert np.asarray(view, copy=False).ctypes.data == view.data_address


@settings(max_examples=200, deadline=None)
@given(arrays())
def test_property_values_and_validity_match_arrow(arr):
    view = as_tensor(arr, allow_copy=True)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    expected = expected_values(arr)
    if pa.types.is_floating(arr.type):
        np.testing.assert_array_equal(view.numpy()[valid], expected[valid])
    else:
        assert view.numpy()[valid].tolist() == expected[valid].tolist()
    assert view.null_count == arr.null_count
    if arr.null_count:
        assert view.validity.to_numpy().tolist() == valid.tolist()
    if not pa.types.is_boolean(arr.type):
        assert view.data_address == address_of(arr, view.dtype.itemsize)


@settings(max_examples=100, deadline=None)
@given(chunked_arrays(), st.sampled_from(["pyarrow", "polars", "pandas-arrow"]))
def test_property_chunked_sources(chunked, source):
    if source == "polars" and not polars_ok(chunked.type):
        chunked = chunked.cast(pa.int64()) if pa.types.is_date64(chunked.type) else chunked
    col = {
        "pyarrow": chunked,
        "polars": to_polars(chunked),
        "pandas-arrow": to_pandas_arrow(chunked),
    }[source]
    held = polars_held(col) if source == "polars" else column_to_arrow(col)
    view = as_tensor(col, allow_copy=True, nulls="keep")
    combined = held.combine_chunks() if held.num_chunks else pa.array([], held.type)
    valid = np.asarray(combined.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    expected = expected_values(combined)
    np.testing.assert_array_equal(view.numpy()[valid], expected[valid])
    assert view.null_count == combined.null_count
    nonempty = [c for c in held.chunks if len(c)]
    assert view.copied == (len(nonempty) > 1 or pa.types.is_boolean(held.type))
    filled = as_tensor(col, allow_copy=True, nulls=0)
    assert filled.validity is None
    np.testing.assert_array_equal(filled.numpy()[~valid], np.zeros((~valid).sum(), filled.dtype))


def test_view_is_described_before_it_is_built():
    """Shape, dtype, address and the array interface need no ndarray; numpy() builds one, once."""
    arr = pa.array(np.arange(1_000, dtype=np.float64)).slice(10)
    before = pa.total_allocated_bytes()
    view = as_tensor(arr)
    assert pa.total_allocated_bytes() == before
    interface = view.__array_interface__
    assert interface["data"] == (address_of(arr, 8), True)
    assert interface["shape"] == (990,)
    assert np.dtype(interface["typestr"]) == np.float64
    assert (view.shape, view.ndim, view.nbytes, len(view)) == ((990,), 1, 990 * 8, 990)
    first = view.numpy()
    assert first is view.numpy()
    assert first.ctypes.data == view.data_address
    assert not first.flags.writeable


def test_lazy_view_keeps_the_buffer_alive_through_the_interface():
    arr = pa.array(np.arange(50_000, dtype=np.int64)).slice(3)
    view = as_tensor(arr)
    del arr
    gc.collect()
    out = np.asarray(view)  # through __array_interface__; its base is the view
    del view
    gc.collect()
    junk = [np.full(50_000, -1) for _ in range(10)]
    assert out[0] == 3
    assert out[-1] == 49_999
    del junk


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("offset", [0, 7])
def test_polars_numeric_series_is_viewed_in_place(dtype, offset):
    s = pl.Series("v", np.arange(40).astype(dtype)).slice(offset)
    held = polars_held(s).chunk(0)
    view = as_tensor(s)
    assert view.data_address == address_of(held, view.dtype.itemsize)
    # a second witness: polars' own NumPy view of the same memory
    assert view.data_address == s.to_numpy(allow_copy=False).ctypes.data
    assert view.name == "v"
    assert not view.copied
    assert view.validity is None
    assert view.arrow_type == held.type
    assert view.arrow().equals(held)
    assert view.numpy().tolist() == list(range(offset, 40))


def test_polars_with_nulls_or_chunks_goes_through_arrow():
    s = pl.Series("v", [1.0, None, 3.0])
    view = as_tensor(s)
    assert view.null_count == 1
    assert view.validity.to_numpy().tolist() == [True, False, True]
    chunked = pl.concat([pl.Series("c", [1, 2]), pl.Series("c", [3])], rechunk=False)
    with pytest.raises(CopyNotAllowedError, match="has 2 chunks"):
        as_tensor(chunked)
    assert as_tensor(chunked, allow_copy=True).numpy().tolist() == [1, 2, 3]


def test_numpy_backed_sources_export_arrow_without_copying():
    x = np.arange(10, dtype=np.float32)
    view = as_tensor(x)
    assert view.arrow_type == pa.float32()
    back = view.arrow()
    assert back.buffers()[1].address == x.ctypes.data
    assert back.to_pylist() == x.tolist()
    s = pd.Series(np.arange(5, dtype=np.int16), name=3)
    view = as_tensor(s)
    assert view.name == "3"
    assert view.arrow().to_pylist() == [0, 1, 2, 3, 4]
    assert pa.array(view).type == pa.int16()


def test_numpy_sources_needing_arrow_keep_their_behaviour():
    strided = np.arange(20, dtype=np.int64)[::2]
    view = as_tensor(strided)
    assert view.numpy().tolist() == list(range(0, 20, 2))
    with pytest.raises(CopyNotAllowedError, match="byte-swapped"):
        as_tensor(np.arange(4, dtype=">i4"))  # swapping to native order is a copy
    assert as_tensor(np.arange(4, dtype=">i4"), allow_copy=True).numpy().tolist() == [0, 1, 2, 3]
    with pytest.raises(UnsupportedTypeError, match="2-D NumPy array"):
        as_tensor(np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"`nulls` must be 'keep', 'raise' or a fill value"):
        as_tensor(np.arange(3), nulls="drop")
    assert not as_tensor(np.arange(3.0), nulls="raise").copied
    with pytest.raises(UnsupportedTypeError):  # the type is checked before `nulls`
        as_tensor(pa.array(["a"]), nulls="drop")


def _filled_rows(rows: list, fill: float) -> list:
    """pyarrow's nested ``to_pylist`` rows with every null (row, list or value) as ``fill``."""

    def fill_in(value, shape):
        if not shape:
            return fill if value is None else value
        items = [None] * shape[0] if value is None else value
        return [fill_in(v, shape[1:]) for v in items]

    depth, probe = [], next(r for r in rows if r is not None)
    while isinstance(probe, list):
        depth.append(len(probe))
        probe = next((p for p in probe if p is not None), probe[0])
    return [fill_in(r, depth) for r in rows]


def test_nested_fixed_size_list_with_an_offset_inner_level():
    """The inner level's own offset counts: nulls there are found, none are invented."""
    leaf = pa.array([None if i == 37 else float(i) for i in range(40)])
    outer = pa.FixedSizeListArray.from_arrays(
        pa.FixedSizeListArray.from_arrays(leaf, 2).slice(1, 18), 2
    )
    rows = outer.to_pylist()  # pyarrow's reading of the offsets
    assert any(None in pair for row in rows for pair in row)
    with pytest.raises(NullValuesError, match=r"1 null element\(s\) inside its rows"):
        as_tensor(outer, name="o")
    with pytest.raises(NullValuesError, match=r"1 null element\(s\) inside its rows"):
        as_tensor(outer, nulls="raise")
    filled = as_tensor(outer, nulls=-1.0, allow_copy=True)
    assert filled.numpy().tolist() == _filled_rows(rows, -1.0)
    with pytest.raises(NullValuesError, match=r"column `o`.*null element"):
        to_tensor({"o": outer})
    assert to_tensor({"o": outer}, nulls=-1.0).numpy().tolist() == _filled_rows(rows, -1.0)
    # a null outside the column's range (before the inner slice) is not one of its nulls
    clean_leaf = pa.array([None if i == 1 else float(i) for i in range(40)])
    clean = pa.FixedSizeListArray.from_arrays(
        pa.FixedSizeListArray.from_arrays(clean_leaf, 2).slice(1, 18), 2
    )
    view = as_tensor(clean)
    assert view.null_count == 0
    assert not view.copied
    assert view.data_address == clean_leaf.buffers()[1].address + 2 * 8
    assert view.numpy().tolist() == clean.to_pylist()


def test_nested_nulls_under_null_rows_and_null_lists():
    arr = pa.array(
        [[[1.0, 2.0], [3.0, 4.0]], None, [[5.0, None], None]],
        pa.list_(pa.list_(pa.float64(), 2), 2),
    )
    # inside valid rows: one null value and one null list; the null row is a row null
    with pytest.raises(NullValuesError, match=r"2 null element\(s\) inside its rows"):
        as_tensor(arr)
    filled = as_tensor(arr, nulls=-1.0, allow_copy=True)
    assert filled.numpy().tolist() == _filled_rows(arr.to_pylist(), -1.0)


FIXED_SIZE_LISTS_WITH_A_NULL_ROW = {
    "pyarrow": lambda: pa.array([[1, 2], None, [5, 6]], pa.list_(pa.float64(), 2)),
    "polars": lambda: pl.Series("v", [[1.0, 2.0], None, [5.0, 6.0]], dtype=pl.Array(pl.Float64, 2)),
    "pyarrow-sliced": lambda: pa.array(
        [[0, 0], [1, 2], None, [5, 6], None], pa.list_(pa.float64(), 2)
    ).slice(1, 3),
}


@pytest.mark.parametrize("kind", list(FIXED_SIZE_LISTS_WITH_A_NULL_ROW))
def test_a_null_row_of_a_fixed_size_list_is_a_row_null(kind):
    """The child slots under a null row are not nulls inside the rows (docs/types.md)."""
    column = FIXED_SIZE_LISTS_WITH_A_NULL_ROW[kind]()
    rows = column.to_list() if isinstance(column, pl.Series) else column.to_pylist()
    valid = [r is not None for r in rows]
    view = as_tensor(column)
    assert not view.copied
    assert view.null_count == rows.count(None)
    assert view.validity.to_numpy().tolist() == valid
    assert view.numpy()[np.array(valid)].tolist() == [r for r in rows if r is not None]
    with pytest.raises(NullValuesError, match=r"has 1 null value\(s\)"):
        as_tensor(column, nulls="raise")
    filled = as_tensor(column, nulls=-1.0, allow_copy=True)
    assert filled.numpy().tolist() == [r if r is not None else [-1.0, -1.0] for r in rows]
    m = to_tensor({"v": column})
    np.testing.assert_array_equal(m.validity, np.repeat(np.array(valid)[:, None], 2, axis=1))


def test_numpy_masked_array_mask_is_the_validity():
    data = np.arange(6, dtype=np.int32)
    masked = np.ma.array(data, mask=[0, 1, 0, 0, 1, 0])
    oracle = pa.array(masked)  # pyarrow reads a masked element as null
    view = as_tensor(masked)
    assert not view.copied
    assert view.data_address == data.ctypes.data
    assert view.null_count == oracle.null_count == 2
    assert view.validity.to_numpy().tolist() == oracle.is_valid().to_pylist()
    assert view.arrow().equals(oracle)
    assert not view.copied
    with pytest.raises(NullValuesError, match=r"has 2 null value"):
        as_tensor(masked, nulls="raise")
    with pytest.raises(CopyNotAllowedError, match="filling 2 null"):
        as_tensor(masked, nulls=-1)
    filled = as_tensor(masked, nulls=-1, allow_copy=True)
    assert filled.numpy().tolist() == pc.fill_null(oracle, -1).to_pylist()
    m = to_tensor({"x": masked, "y": np.arange(6.0)})
    assert m.numpy()[:, 0].tolist() == pc.fill_null(oracle, 0).to_pylist()
    assert m.validity[:, 0].tolist() == oracle.is_valid().to_pylist()
    # strided: the values viewed with their stride, the mask still the validity
    strided = np.ma.array(np.arange(12.0)[::2], mask=[1, 0, 0, 1, 0, 0])
    view = as_tensor(strided)
    assert view.data_address == strided.data.ctypes.data
    assert view.validity.to_numpy().tolist() == pa.array(strided).is_valid().to_pylist()
    assert view.arrow().equals(pa.array(strided))
    # nothing masked: the plain array
    plain = np.ma.array(np.arange(3.0), mask=False)
    view = as_tensor(plain)
    assert view.validity is None
    assert view.data_address == plain.data.ctypes.data


@pytest.mark.parametrize(
    "make",
    [
        lambda: pd.DataFrame({"a": [1.0], "b": [2.0]}),
        lambda: pl.DataFrame({"a": [1.0], "b": [2.0]}),
        lambda: pa.table({"a": [1.0], "b": [2.0]}),
    ],
    ids=["pandas", "polars", "pyarrow"],
)
def test_a_frame_is_refused_as_a_column(make):
    with pytest.raises(
        UnsupportedTypeError, match=r"expected one column, got a \w+ \w+.*`frame\['a'\]`.*to_tensor"
    ):
        as_tensor(make())
    with pytest.raises(UnsupportedTypeError, match=r"got a \w+ \w+"):
        column_to_arrow(make())


def test_a_lazy_frame_is_refused_as_a_column():
    with pytest.raises(UnsupportedTypeError, match=r"LazyFrame, which has no data yet.*collect"):
        as_tensor(pl.LazyFrame({"a": [1.0]}))


@pytest.mark.parametrize("dtype", [">f8", ">f4", ">i4", ">u2"])
def test_big_endian_pandas_series_is_swapped_as_numpy_is(dtype):
    values = np.array([1, 2, 3, 4], dtype=dtype)
    series = pd.Series(values, name="be")
    with pytest.raises(CopyNotAllowedError, match=r"column `be` is byte-swapped.*allow_copy=True"):
        as_tensor(series)
    view = as_tensor(series, allow_copy=True)
    assert view.copied
    assert "byte-swapped" in view.copy_reason
    assert view.dtype == values.dtype.newbyteorder("=")
    np.testing.assert_array_equal(view.numpy(), values)
    np.testing.assert_array_equal(as_tensor(values, allow_copy=True).numpy(), view.numpy())
    np.testing.assert_array_equal(to_tensor(pd.DataFrame({"be": series})).numpy()[:, 0], values)


def test_big_endian_pandas_float_nan_is_a_null():
    series = pd.Series(np.array([1.0, np.nan, 3.0], dtype=">f8"), name="be")
    view = as_tensor(series, allow_copy=True)
    assert view.validity.to_numpy().tolist() == [True, False, True]
    with pytest.raises(NullValuesError, match=r"column `be`.*1 null value"):
        as_tensor(series, nulls="raise", allow_copy=True)
    filled = as_tensor(series, nulls=0.0, allow_copy=True)
    assert filled.numpy().tolist() == [1.0, 0.0, 3.0]


@pytest.mark.parametrize("fill", [-1, 2, 5])
def test_dictionary_fill_outside_its_codes_is_refused(fill):
    arr = pa.array(["a", None, "b"]).dictionary_encode()
    assert len(arr.dictionary) == 2
    with pytest.raises(
        InvalidOperationError,
        match=rf"fill value {fill} is not a code of column `k`.*2 value\(s\), so codes 0 to 1",
    ):
        as_tensor(arr, nulls=fill, allow_copy=True, name="k")
    filled = as_tensor(arr, nulls=1, allow_copy=True)
    assert filled.numpy().tolist() == pc.fill_null(arr.indices, 1).to_pylist()


def test_strided_pandas_float_column_without_nan_is_viewed_for_raise():
    frame = pd.DataFrame({"a": [1.0, 2, 3, 4], "b": 1.0})
    series = frame["a"][::2]
    values = series.to_numpy(copy=False)
    assert not values.flags.c_contiguous
    for nulls in ("raise", 0.0):
        view = as_tensor(series, nulls=nulls)
        assert not view.copied
        assert view.data_address == values.ctypes.data
        assert view.numpy().tolist() == values.tolist()
    with_nan = pd.DataFrame({"a": [np.nan, 2, 3, 4], "b": 1.0})["a"][::2]
    with pytest.raises(NullValuesError, match=r"column `a` of type `double` has 1 null value"):
        as_tensor(with_nan, nulls="raise")


def test_arrow_of_a_strided_view_reports_its_copy():
    x = np.arange(20, dtype=np.int64)[::2]
    view = as_tensor(x)
    assert not view.copied
    assert view.arrow().equals(pa.array(x))
    assert view.copied
    assert view.copy_reason.startswith("`.arrow()`: a strided NumPy column (stride 16 bytes)")
    assert view.data_address == x.ctypes.data  # the tensor itself still views the source
    contiguous = as_tensor(np.arange(5.0))
    contiguous.arrow()
    assert not contiguous.copied
    # a strided pandas float column: its NaN rows are found without a copy
    series = pd.DataFrame({"a": [1.0, 2, np.nan, 4], "b": 1.0})["a"][::2]
    view = as_tensor(series)
    assert view.null_count == 1
    assert not view.copied
    assert view.arrow().to_pylist() == [1.0, None]
    assert view.copied
    assert "`.arrow()`: a strided NumPy column" in view.copy_reason
