from __future__ import annotations

import math

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings

from colbridge.columns import as_tensor, default_matrix_dtype, matrix, to_tensor
from colbridge.errors import (
    ColumnNotFoundError,
    NullValuesError,
    ShapeError,
    UnsupportedTypeError,
)
from colbridge.testing.data import NUMERIC_TYPES, frames


def oracle(table: pa.Table, dtype) -> tuple[np.ndarray, np.ndarray]:
    """np.column_stack of polars' own NumPy conversion, nulls as 0, plus validity."""
    df = pl.from_arrow(table)
    cols, valid = [], []
    for name in table.column_names:
        s = df.get_column(name)
        valid.append(s.is_not_null().to_numpy())
        cols.append(
            s.cast(pl.Float64).fill_null(0).to_numpy()
            if s.dtype == pl.Boolean
            else s.fill_null(0).to_numpy()
        )
    n = table.num_rows
    if not cols:
        return np.empty((n, 0), dtype), np.empty((n, 0), bool)
    return np.column_stack(cols).astype(dtype), np.column_stack(valid)


# A few dtypes keep the number of distinct compiled kernels (one per dtype
# mix) small; the per-dtype sweep below covers every numeric type.
@settings(max_examples=150, deadline=None)
@given(frames(max_rows=40, dtypes=[pa.float64(), pa.int32(), pa.bool_()]))
def test_property_matches_column_stack_oracle(table):
    m = to_tensor(table)
    dtype = default_matrix_dtype([np.dtype(t.to_pandas_dtype()) for t in table.schema.types])
    expected, valid = oracle(table, dtype)
    assert m.shape == (table.num_rows, 3)
    assert m.dtype == dtype
    np.testing.assert_array_equal(m.numpy(), expected)
    if any(c.null_count for c in table.columns):
        np.testing.assert_array_equal(m.validity, valid)
    else:
        assert m.validity is None


@settings(max_examples=60, deadline=None)
@given(frames(max_rows=30, dtypes=[pa.float64(), pa.int32()]))
def test_property_fill_and_order(table):
    m = to_tensor(table, dtype="float64", order="F", nulls=-7.0)
    expected, valid = oracle(table, np.float64)
    expected[~valid] = -7.0
    assert m.numpy().flags.f_contiguous
    np.testing.assert_array_equal(m.numpy(), expected)
    assert m.validity is None


@pytest.mark.parametrize(
    "arrow_type", [*NUMERIC_TYPES, pa.bool_(), pa.date32(), pa.timestamp("ms")], ids=str
)
def test_every_dtype_with_nulls_and_offsets(arrow_type):
    storage = (
        pa.int32()
        if arrow_type == pa.date32()
        else pa.int64()
        if arrow_type == pa.timestamp("ms")
        else arrow_type
    )
    values = np.arange(40) % 7
    values = (
        values.astype(bool) if storage == pa.bool_() else values.astype(storage.to_pandas_dtype())
    )
    arr = pa.array(values, mask=np.arange(40) % 5 == 0).cast(arrow_type).slice(3, 29)
    table = pa.table({"x": arr})
    m = to_tensor(table, dtype="float64")
    expected, valid = oracle(
        pa.table({"x": arr.cast(storage) if arrow_type != storage else arr}), np.float64
    )
    np.testing.assert_array_equal(m.numpy(), expected)
    np.testing.assert_array_equal(m.validity, valid)


@pytest.mark.parametrize("kind", ["pyarrow", "polars", "pandas", "dict"])
def test_sources_with_offsets_and_chunks(kind):
    a = pa.chunked_array([pa.array(np.arange(20.0)).slice(3, 9), pa.array([None, 1.5, 2.5])])
    b = pa.chunked_array([pa.array(np.arange(30, dtype=np.int16)).slice(5, 12)])
    table = pa.table({"a": a, "b": b})
    frame = {
        "pyarrow": table,
        "polars": pl.from_arrow(table, rechunk=False),
        "pandas": table.to_pandas(types_mapper=pd.ArrowDtype),
        "dict": {"a": a, "b": b},
    }[kind]
    m = to_tensor(frame, ["b", "a"], dtype="float32")
    expected, valid = oracle(table.select(["b", "a"]), np.float32)
    np.testing.assert_array_equal(m.numpy(), expected)
    np.testing.assert_array_equal(m.validity, valid)
    assert m.columns == ["b", "a"]
    assert m.copied


def test_large_input_uses_row_blocks_and_matches():
    n = 300_000
    rng = np.random.default_rng(0)
    cols = {f"c{i}": rng.normal(size=n) for i in range(3)}
    cols["d"] = pa.array(rng.integers(0, 9, n), mask=rng.random(n) < 0.1)
    m = to_tensor(pa.table(cols))
    df = pl.DataFrame(pa.table(cols))
    np.testing.assert_array_equal(m.numpy(), df.fill_null(0).to_numpy(order="c"))
    assert m.numpy().flags.writeable


def test_empty_frames():
    m = to_tensor(pa.table({"a": pa.array([], pa.float32()), "b": pa.array([], pa.int8())}))
    assert m.shape == (0, 2)
    assert m.dtype == np.float32
    assert to_tensor(pl.DataFrame({"a": [1.0]}), []).shape == (0, 0)


def test_default_dtype():
    assert to_tensor({"a": pa.array([1], pa.int8())}).dtype == np.float32
    assert to_tensor({"a": pa.array([1], pa.int64())}).dtype == np.float64
    assert to_tensor({"a": pa.array([True])}, dtype="uint8").numpy().tolist() == [[1]]


def test_single_fixed_size_list_is_zero_copy():
    values = pa.array(np.arange(12, dtype=np.float32))
    arr = pa.FixedSizeListArray.from_arrays(values, 3)
    m = to_tensor(pa.table({"emb": arr}))
    assert not m.copied
    assert m.data_address == values.buffers()[1].address
    assert m.shape == (4, 3)
    cast = to_tensor(pa.table({"emb": arr}), dtype="float64")
    assert cast.copied
    np.testing.assert_array_equal(cast.numpy(), np.arange(12.0).reshape(4, 3))
    tensor = pa.FixedShapeTensorArray.from_numpy_ndarray(np.ones((2, 2, 2), np.float64))
    assert not to_tensor({"t": tensor}).copied


def test_errors():
    t = pa.table({"a": [1.0, None], "s": ["x", "y"]})
    with pytest.raises(ColumnNotFoundError, match=r"(?s)column `aa` not found.*did you mean"):
        to_tensor(t, ["aa"])
    with pytest.raises(UnsupportedTypeError, match=r"column `s` has type `string`"):
        to_tensor(t)
    with pytest.raises(NullValuesError, match=r"column `a` of type `double` has 1 null"):
        to_tensor(t, ["a"], nulls="raise")
    with pytest.raises(ValueError, match=r"`order` must be 'C' or 'F'"):
        to_tensor(t, ["a"], order="K")
    with pytest.raises(ValueError, match=r"`nulls` must be"):
        to_tensor(t, ["a"], nulls="zero")
    fsl = pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0]), 1)
    with pytest.raises(UnsupportedTypeError, match=r"column `f`.*cannot be mixed"):
        to_tensor({"a": pa.array([1.0, 2.0]), "f": fsl})
    with pytest.raises(ShapeError, match=r"column `b` has 1 rows, but column `a` has 2"):
        to_tensor({"a": pa.array([1.0, 2.0]), "b": pa.array([1.0])})


def _frames(n: int, dtypes: list[str]) -> dict[str, object]:
    rng = np.random.default_rng(n)
    cols = {f"c{i}": (rng.normal(size=n) * 50).astype(d) for i, d in enumerate(dtypes)}
    return {
        "polars": pl.DataFrame(cols),
        "dict-numpy": cols,
        "dict-pandas": {k: pd.Series(v) for k, v in cols.items()},
        "pyarrow": pa.table(cols),
    }


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("n", [1, 100, 5_000, 70_000])
@pytest.mark.parametrize("dtypes", [["float64"] * 4, ["float32", "int64", "int16", "uint8"]])
def test_fast_paths_match_column_stack(order, n, dtypes):
    """Null-free single-chunk columns: small, kernel-sized and thread-split inputs."""
    for kind, frame in _frames(n, dtypes).items():
        m = to_tensor(frame, order=order)
        expected = np.column_stack([np.asarray(frame[c]) for c in ["c0", "c1", "c2", "c3"]])
        dtype = default_matrix_dtype([np.dtype(d) for d in dtypes])
        assert m.dtype == dtype, kind
        np.testing.assert_array_equal(m.numpy(), expected.astype(dtype), err_msg=kind)
        flags = m.numpy().flags
        assert flags.c_contiguous if order == "C" else flags.f_contiguous
        assert m.numpy().flags.writeable
        assert m.validity is None
        assert m.copied
        assert m.copy_reason == f"wrote 4 column(s) into a new {order}-order {dtype} matrix"
        assert m.columns == ["c0", "c1", "c2", "c3"]


@pytest.mark.parametrize("order", ["C", "F"])
def test_fast_paths_cast_and_select(order):
    n = 3_000
    frame = pl.DataFrame({"a": np.arange(n, dtype=np.int64), "b": np.linspace(0, 1, n)})
    m = to_tensor(frame, ["b", "a"], dtype="int32", order=order)
    expected = np.column_stack([np.linspace(0, 1, n), np.arange(n)]).astype(np.int32)
    np.testing.assert_array_equal(m.numpy(), expected)
    half = to_tensor(frame, dtype="float16", order=order)
    np.testing.assert_array_equal(
        half.numpy(), np.column_stack([np.arange(n), np.linspace(0, 1, n)]).astype(np.float16)
    )
    flags = {"x": np.array([True, False, True]), "y": np.array([1.5, 2.5, 3.5])}
    m = to_tensor(flags, order=order)
    assert m.numpy().tolist() == [[1.0, 1.5], [0.0, 2.5], [1.0, 3.5]]
    assert "unpacked bool bits" in m.copy_reason


def test_fast_path_errors_match_the_arrow_path():
    frame = pl.DataFrame({"a": [1.0, 2.0]})
    with pytest.raises(ColumnNotFoundError, match=r"column `b` not found"):
        to_tensor(frame, ["a", "b"])
    with pytest.raises(ShapeError, match=r"column `b` has 1 rows, but column `a` has 2"):
        to_tensor({"a": np.array([1.0, 2.0]), "b": np.array([1.0])})
    with pytest.raises(ColumnNotFoundError):
        to_tensor({"a": np.array([1.0])}, ["z"])
    assert to_tensor({"a": np.array([], dtype=np.float64)}).shape == (0, 1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_mixed_dtype_row_major_pack_matches_numpy(dtype):
    """Six columns of five dtypes, sliced (Arrow offsets), row-major: NumPy's unsafe cast."""
    n = 150_000
    rng = np.random.default_rng(4)
    full = pl.DataFrame({
        "a": rng.integers(-1000, 1000, n), "b": rng.integers(-9, 9, n).astype(np.int32),
        "c": rng.integers(0, 300, n).astype(np.int16), "d": rng.normal(size=n) * 100,
        "e": rng.normal(size=n).astype(np.float32), "f": rng.integers(0, 200, n).astype(np.uint8),
    })  # fmt: skip
    frame = full.slice(17, n - 40)
    m = to_tensor(frame, dtype=dtype)
    expected = np.column_stack([frame[c].to_numpy() for c in frame.columns]).astype(dtype)
    assert m.numpy().flags.c_contiguous
    np.testing.assert_array_equal(m.numpy(), expected)


@pytest.mark.parametrize("nulls", [False, True])
@pytest.mark.parametrize("order", ["C", "F"])
def test_dictionary_chunks_with_their_own_dictionaries_are_unified(order, nulls):
    """Each chunk's codes index its own dictionary: the matrix holds codes of one."""
    c1 = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, None if nulls else 0, 1], pa.int32()), pa.array(["a", "b"])
    )
    c2 = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2], pa.int32()), pa.array(["b", "a", "c"]))
    col = pa.chunked_array([c1, c2])
    table = pa.table({"k": col, "x": np.arange(7.0)})
    unified = as_tensor(col, allow_copy=True)  # pyarrow's unify_dictionaries
    labels = unified.dictionary.to_pylist()
    m = to_tensor(table, order=order)
    valid = np.ones(7, bool) if m.validity is None else m.validity[:, 0]
    decoded = [labels[int(c)] if ok else None for c, ok in zip(m.numpy()[:, 0], valid, strict=True)]
    assert decoded == col.to_pylist()
    np.testing.assert_array_equal(m.numpy()[valid, 0], unified.numpy()[valid])
    simple = to_tensor(pa.table({"k": pa.chunked_array([c1, c1])}))  # one dictionary: as it is
    assert (
        simple.numpy()[:, 0].tolist()
        == pc.fill_null(pa.chunked_array([c1.indices, c1.indices]), 0).to_pylist()
    )


@pytest.mark.parametrize("kind", ["polars", "pyarrow", "pandas", "dict"])
def test_a_string_is_one_column_name(kind):
    data = {"a": [1.0, 2.0], "b": [3.0, 4.0], "ab": [5.0, 6.0]}
    make = {
        "polars": pl.DataFrame,
        "pyarrow": pa.table,
        "pandas": pd.DataFrame,
        "dict": lambda d: {k: np.array(v) for k, v in d.items()},
    }[kind]
    m = to_tensor(make(data), "ab")
    assert m.columns == ["ab"]
    np.testing.assert_array_equal(m.numpy(), pl.DataFrame(data).select("ab").to_numpy())
    without = {"a": [1.0, 2.0], "b": [3.0, 4.0]}
    with pytest.raises(pl.exceptions.ColumnNotFoundError):
        pl.DataFrame(without).select("ab")  # polars: one (missing) column, not a and b
    with pytest.raises(ColumnNotFoundError, match=r"column `ab` not found"):
        to_tensor(make(without), "ab")


def test_single_fixed_size_list_follows_order_f():
    values = pa.array(np.arange(12, dtype=np.float32))
    arr = pa.FixedSizeListArray.from_arrays(values, 3)
    expected = np.arange(12, dtype=np.float32).reshape(4, 3)
    m = to_tensor({"emb": arr}, order="F")
    assert m.numpy().flags.f_contiguous
    assert m.copied
    np.testing.assert_array_equal(m.numpy(), expected)
    cast = to_tensor({"emb": arr}, order="F", dtype="float64")
    assert cast.numpy().flags.f_contiguous
    np.testing.assert_array_equal(cast.numpy(), expected.astype(np.float64))
    data = np.arange(24.0).reshape(2, 3, 4)
    tensor = pa.FixedShapeTensorArray.from_numpy_ndarray(data)
    t = to_tensor({"t": tensor}, order="F")
    assert t.numpy().flags.f_contiguous
    np.testing.assert_array_equal(t.numpy(), data)
    with_nulls = pa.array([[1, 2], None, [5, 6]], pa.list_(pa.float64(), 2))
    kept = to_tensor({"v": with_nulls}, order="F")
    assert kept.numpy().flags.f_contiguous
    assert kept.validity[:, 0].tolist() == [True, False, True]
    c = to_tensor({"emb": arr}, order="C")  # row-major: still the zero-copy view
    assert not c.copied
    assert c.data_address == values.buffers()[1].address


# -- float to unsigned integer casts: one rule on every path ---------------------------------
FLOAT_EDGES = [
    -1.0, -300.5, 300.7, 70000.0, 5e9, -(2.0**31) - 5, 2.0**32 + 7, 2.0**63, 2.0**64 - 2048,
    -(2.0**63), 1e20, -1e20, 2.0**64, float("nan"), float("inf"), float("-inf"), 3.7, -0.5, 0.0,
    255.0, 256.0, 65535.9,
]  # fmt: skip


def _unsigned(x: float, bits: int) -> int:
    """The documented rule, in Python integers: truncate, wrap modulo 2**bits; else 0."""
    if not math.isfinite(x) or not -(2**63) <= math.trunc(x) < 2**64:
        return 0
    return math.trunc(x) % 2**bits


@pytest.mark.parametrize("dtype", ["uint8", "uint32", "uint64"])
def test_float_to_unsigned_casts_agree_on_every_path(dtype, monkeypatch):
    """Orders C/F, with and without nulls, tiny, kernel-sized and thread-split frames."""
    assert matrix._THREADS_MIN_ELEMENTS <= 600_000 * 2  # the largest frame runs on threads
    monkeypatch.setattr(matrix, "_WORKERS", 3)  # row ranges split even on a small machine
    bits = np.dtype(dtype).itemsize * 8
    edges = np.array(FLOAT_EDGES)
    edges32 = edges[::-1].astype(np.float32)
    rule = np.column_stack([
        np.array([_unsigned(float(x), bits) for x in edges], dtype=dtype),
        np.array([_unsigned(float(x), bits) for x in edges32], dtype=dtype),
    ])  # fmt: skip
    for n in (len(edges), 3_000, 600_000):
        rows = np.arange(n) % len(edges)
        a, b, want = edges[rows], edges32[rows], rule[rows]
        in_range = np.isfinite(a) & (a > -1) & (a < 2**bits)
        with np.errstate(invalid="ignore"):  # in range, the rule is NumPy's cast
            np.testing.assert_array_equal(want[in_range, 0], a[in_range].astype(dtype))
        mask = np.arange(n) % 7 == 3
        sources = {
            "pyarrow": pa.table({"a": a, "b": b}),
            "numpy": {"a": a, "b": b},
            "polars": pl.DataFrame({"a": a, "b": b}),
            "nulls": pa.table({"a": pa.array(a, mask=mask), "b": b}),
            "chunks": pa.table({"a": pa.chunked_array([a[: n // 3], a[n // 3 :]]), "b": b}),
        }
        for order in ("C", "F"):
            for kind, frame in sources.items():
                m = to_tensor(frame, dtype=dtype, order=order)
                expected = want.copy()
                if kind == "nulls":
                    expected[mask, 0] = 0
                    np.testing.assert_array_equal(m.validity[:, 0], ~mask)
                assert m.dtype == dtype
                assert m.numpy().flags[f"{order}_CONTIGUOUS"]
                np.testing.assert_array_equal(m.numpy(), expected, err_msg=f"{kind} {order} {n}")
                if kind == "nulls":
                    filled = to_tensor(frame, dtype=dtype, order=order, nulls=7)
                    expected[mask, 0] = 7
                    np.testing.assert_array_equal(filled.numpy(), expected)
    fsl = pa.FixedSizeListArray.from_arrays(pa.array(edges), len(edges))
    for order in ("C", "F"):
        m = to_tensor({"f": fsl}, dtype=dtype, order=order)
        assert m.numpy().tolist() == [[_unsigned(float(x), bits) for x in edges]]
