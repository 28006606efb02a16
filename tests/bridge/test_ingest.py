from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from colbridge.columns import column_to_arrow, source_kind
from colbridge.errors import UnsupportedTypeError


def test_pyarrow_array_and_chunked_are_kept():
    arr = pa.array([1, 2, 3])
    out = column_to_arrow(arr)
    assert out.num_chunks == 1
    assert out.chunk(0).buffers()[1].address == arr.buffers()[1].address
    chunked = pa.chunked_array([[1], [2]])
    assert column_to_arrow(chunked) is chunked


def test_polars_chunks_are_kept_zero_copy():
    s = pl.concat([pl.Series("x", [1.0, 2.0]), pl.Series("x", [3.0])], rechunk=False)
    out = column_to_arrow(s)
    assert out.num_chunks == 2
    assert out.to_pylist() == [1.0, 2.0, 3.0]


def test_numpy_and_pandas_numpy_backed_are_zero_copy():
    x = np.arange(5, dtype=np.int32)
    assert column_to_arrow(x).chunk(0).buffers()[1].address == x.ctypes.data
    s = pd.Series(np.arange(4.0))
    assert column_to_arrow(s).chunk(0).buffers()[1].address == s.to_numpy(copy=False).ctypes.data


def test_pandas_masked_keeps_values_buffer():
    s = pd.Series([1, None, 3], dtype="Int64")
    out = column_to_arrow(s).chunk(0)
    assert out.null_count == 1
    assert out.buffers()[1].address == s.array._data.ctypes.data


def test_capsule_objects():
    class Holder:
        def __init__(self, arr):
            self.arr = arr

        def __arrow_c_array__(self, requested_schema=None):
            return self.arr.__arrow_c_array__(requested_schema)

    class Stream:
        def __arrow_c_stream__(self, requested_schema=None):
            return pa.chunked_array([[1, 2], [3]]).__arrow_c_stream__(requested_schema)

    assert column_to_arrow(Holder(pa.array([1.5]))).to_pylist() == [1.5]
    assert column_to_arrow(Stream()).num_chunks == 2
    assert source_kind(Stream()) == "arrow-capsule"


def test_errors():
    with pytest.raises(UnsupportedTypeError, match=r"column `o` has pandas dtype `object`.*astype"):
        column_to_arrow(pd.Series([object()], dtype=object), "o")
    with pytest.raises(UnsupportedTypeError, match=r"NumPy dtype `object`"):
        column_to_arrow(np.array([1, "a"], dtype=object), "o")
    with pytest.raises(UnsupportedTypeError, match=r"2-D NumPy array.*FixedSizeList"):
        column_to_arrow(np.zeros((2, 2)), "m")
    with pytest.raises(
        UnsupportedTypeError, match=r"column `l` is a builtins.list, which is not a column"
    ):
        column_to_arrow([1, 2], "l")
