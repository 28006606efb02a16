"""Nulls of views and matrices handed on: to torch, and filled in a matrix.

A view made with ``nulls="keep"`` holds whatever bytes sit under its nulls; a fill
value that a cast would change (-1 in uint8) would put another value in their place.
Both are refused, or filled, by name, never passed through.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import colbridge as cb

torch = pytest.importorskip("torch")


def _column() -> pa.Array:
    # the slot under the null holds 2.0: it must never reach the tensor
    values = pa.py_buffer(np.array([1.0, 2.0, 3.0, 4.0]))
    bitmap = pa.py_buffer(np.packbits([1, 0, 1, 1], bitorder="little"))
    return pa.Array.from_buffers(pa.float64(), 4, [bitmap, values], null_count=1)


def test_a_view_with_nulls_is_refused_or_filled_for_torch() -> None:
    view = cb.as_tensor(_column(), nulls="keep")
    with pytest.raises(cb.NullValuesError, match="1 null value"):
        cb.to_torch(view)
    filled = cb.to_torch(view, nulls=-1.0)
    assert filled.tolist() == [1.0, -1.0, 3.0, 4.0]
    assert view.numpy().tolist() == [1.0, 2.0, 3.0, 4.0]  # the view is unchanged
    assert cb.to_torch(view, nulls="keep").tolist() == [1.0, 2.0, 3.0, 4.0]  # as asked
    with pytest.raises(cb.InvalidOperationError, match="cannot be stored exactly"):
        cb.to_torch(cb.as_tensor(pa.array([1, None], pa.int32()), nulls="keep"), nulls=2.5)


def test_a_matrix_with_validity_is_refused_or_filled_for_torch() -> None:
    matrix = cb.to_tensor(pa.table({"a": _column(), "b": [1.0, 2.0, None, 4.0]}))
    assert matrix.validity is not None
    with pytest.raises(cb.NullValuesError, match="2 null value"):
        cb.to_torch(matrix)
    filled = cb.to_torch(matrix, nulls=0.0).numpy()
    want = np.array([[1, 1], [0, 2], [3, 0], [4, 4]], dtype=filled.dtype)
    np.testing.assert_array_equal(filled, want)


def test_views_without_nulls_are_shared_or_copied_as_before() -> None:
    view = cb.as_tensor(pa.array([1.0, 2.0]))
    assert cb.to_torch(view).tolist() == [1.0, 2.0]
    matrix = cb.to_tensor(pa.table({"a": [1.0, 2.0]}))
    assert cb.to_torch(matrix).data_ptr() == matrix.numpy().ctypes.data  # shared


@pytest.mark.parametrize(("dtype", "fill"), [("uint8", -1), ("int32", np.nan), ("int16", 2.7),
                                             ("int8", 300), ("bool", 7)])  # fmt: skip
def test_a_matrix_fill_that_a_cast_would_change_is_refused(dtype: str, fill: float) -> None:
    table = pa.table({"a": pa.array([1, None, 1], pa.int64())})
    with pytest.raises(cb.InvalidOperationError, match=f"fill value .* as {dtype}"):
        cb.to_tensor(table, dtype=dtype, nulls=fill)
    # without nulls the fill is never read: no error
    assert cb.to_tensor(table.slice(0, 1), dtype=dtype, nulls=fill).shape == (1, 1)


def test_a_pandas_sparse_column_is_a_copy_with_its_nan_as_null() -> None:
    pd = pytest.importorskip("pandas")
    sparse = pd.Series(pd.arrays.SparseArray([0, 1.0, np.nan, 0, 5.0]))
    with pytest.raises(cb.CopyNotAllowedError, match=r"densified from pandas `Sparse"):
        cb.as_tensor(sparse)
    view = cb.as_tensor(sparse, allow_copy=True)
    assert view.copied
    assert view.null_count == 1  # pandas' missing value
    np.testing.assert_array_equal(view.numpy()[[0, 1, 3, 4]], [0.0, 1.0, 0.0, 5.0])


@pytest.mark.parametrize("make", [
    lambda np_, pd_: np_.array([1 + 2j]),
    lambda np_, pd_: np_.array([1.0], dtype=np_.longdouble),
    lambda np_, pd_: pd_.Series([1 + 2j]),
    lambda np_, pd_: np_.zeros(2, dtype=[("a", "i4")]),
])  # fmt: skip
def test_numpy_dtypes_without_an_arrow_type_are_refused_by_name(make: object) -> None:
    pd = pytest.importorskip("pandas")
    column = make(np, pd)  # type: ignore[operator]
    if getattr(column, "dtype", None) == np.longdouble and np.dtype(np.longdouble).itemsize == 8:
        pytest.skip("long double is float64 on this platform")
    with pytest.raises(cb.UnsupportedTypeError, match="has no Arrow column type"):
        cb.as_tensor(column)
    with pytest.raises(cb.UnsupportedTypeError, match="has no Arrow column type"):
        cb.to_tensor({"a": column})
