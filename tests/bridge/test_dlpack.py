from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
import pytest

from colbridge.columns import as_tensor, to_tensor
from colbridge.errors import WritableAliasWarning
from colbridge.testing.data import NUMERIC_TYPES

DLPACK_TYPES = [t for t in NUMERIC_TYPES]


@pytest.mark.parametrize("arrow_type", DLPACK_TYPES, ids=str)
@pytest.mark.parametrize("offset", [0, 5])
def test_numpy_from_dlpack_is_zero_copy_and_read_only(arrow_type, offset):
    values = pa.array(np.arange(30).astype(arrow_type.to_pandas_dtype()))
    arr = values.slice(offset, 17)
    view = as_tensor(arr)
    out = np.from_dlpack(view)
    assert out.ctypes.data == values.buffers()[1].address + offset * view.dtype.itemsize
    assert not out.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        out[0] = 1
    np.testing.assert_array_equal(out, arr.to_numpy())


def test_versioned_and_legacy_capsules():
    view = as_tensor(pa.array([1.0, 2.0]))
    versioned = view.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)
    legacy = view.__dlpack__()
    assert '"dltensor"' in repr(legacy)
    with pytest.raises(BufferError, match=r"unversioned DLPack capsule.*max_version=\(1, 0\)"):
        view.__dlpack__(copy=False)
    assert view.__dlpack_device__() == (1, 0)


def test_dlpack_of_2d_and_dictionary():
    fsl = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(12, dtype=np.float64)), 3)
    out = np.from_dlpack(as_tensor(fsl))
    assert out.shape == (4, 3)
    idx = np.from_dlpack(as_tensor(pa.array(["a", "b", "a"]).dictionary_encode()))
    assert idx.tolist() == [0, 1, 0]
    m = to_tensor({"a": pa.array([1.0, 2.0]), "b": pa.array([3, 4])})
    assert np.from_dlpack(m).tolist() == [[1.0, 3.0], [2.0, 4.0]]


def test_dlpack_keeps_owner_alive():
    table = pa.table({"x": np.arange(10_000, dtype=np.int64)})
    out = np.from_dlpack(as_tensor(table.column("x")))
    del table
    gc.collect()
    assert int(out[-1]) == 9_999


def test_torch_from_dlpack():
    torch = pytest.importorskip("torch")
    values = pa.array(np.arange(10, dtype=np.float32)).slice(3)
    view = as_tensor(values)
    with pytest.warns(WritableAliasWarning, match="torch ignores DLPack's read-only flag"):
        t = torch.from_dlpack(view)  # zero-copy, and flagged: torch tensors are writable
    assert t.data_ptr() == values.buffers()[1].address + 3 * 4
    assert t.tolist() == list(map(float, range(3, 10)))
    m = to_tensor({"a": pa.array([1.0, 2.0]), "b": pa.array([3.0, 4.0])}, dtype="float32")
    tm = torch.from_dlpack(m)
    assert tuple(tm.shape) == (2, 2)
    assert tm.dtype == torch.float32
