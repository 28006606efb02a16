"""The bridge tells the truth about copies, and follows one rule for pandas NaN (issue 14,
items 4, 5 and 10).

* For every ingest path, `.copied` is true exactly when the view's address range
  lies outside the source's buffers, with the addresses taken from the source
  library itself (pyarrow buffers, NumPy's array interface, pandas' arrays,
  polars' physical column), never from colbridge.
* Categorical columns (pandas `category` with int or string categories, polars
  Categorical and Enum, Arrow dictionary) give their codes without a copy.
* `explain()` reports the copy of a pandas column that had to be made contiguous.
* NaN in a NumPy-backed pandas float column is a null in `as_tensor`, `to_tensor`,
  `df.gpu` and (through Parquet) `fuse`; everywhere else NaN is a value.
* polars Int128/UInt128 columns give an `UnsupportedTypeError` naming the column.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.io import FeatureSpec, iter_features

Ranges = list[tuple[int, int]]


def arrow_ranges(array: pa.Array | pa.ChunkedArray) -> Ranges:
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    out: Ranges = []

    def walk(a: pa.Array) -> None:
        for buf in a.buffers():
            if buf is not None:
                out.append((buf.address, buf.address + buf.size))
        if pa.types.is_dictionary(a.type):
            walk(a.indices)

    for chunk in chunks:
        walk(chunk)
    return out


def numpy_ranges(array: np.ndarray) -> Ranges:
    base = array
    while isinstance(base.base, np.ndarray):
        base = base.base
    start = base.__array_interface__["data"][0]
    return [(start, start + base.nbytes)]


class Capsule:
    """A minimal object speaking only the Arrow PyCapsule interface."""

    def __init__(self, array: pa.Array) -> None:
        self.array = array

    def __arrow_c_array__(self, requested_schema: Any = None) -> Any:
        return self.array.__arrow_c_array__(requested_schema)


class StreamCapsule:
    def __init__(self, array: pa.ChunkedArray) -> None:
        self.array = array

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.array.__arrow_c_stream__(requested_schema)


VALUES = np.arange(40, dtype=np.float64)
STRIDED_FRAME = pd.DataFrame({"a": np.arange(80.0), "i": np.arange(80)})[::2]
WIDE = np.arange(60.0).reshape(20, 3)


def cases() -> dict[str, tuple[Callable[[], Any], Callable[[Any], Ranges]]]:
    """Each ingest path: (make the source, its buffers as the source library reports them)."""
    return {
        "pyarrow": (lambda: pa.array(VALUES), arrow_ranges),
        "pyarrow-sliced": (lambda: pa.array(VALUES).slice(3, 11), arrow_ranges),
        "pyarrow-nulls": (lambda: pa.array([1.0, None, 3.0]), arrow_ranges),
        "pyarrow-2-chunks": (lambda: pa.chunked_array([VALUES[:7], VALUES[7:]]), arrow_ranges),
        "pyarrow-bool": (lambda: pa.array([True, False, True]), arrow_ranges),
        "pyarrow-dictionary": (lambda: pa.array(["x", "y", "x"]).dictionary_encode(),
                               arrow_ranges),
        "pyarrow-fixed-size-list": (
            lambda: pa.FixedSizeListArray.from_arrays(pa.array(VALUES), 4), arrow_ranges),
        "pyarrow-timestamp": (lambda: pa.array(np.arange(5).astype("datetime64[ms]")),
                              arrow_ranges),
        "polars": (lambda: pl.Series("x", VALUES), lambda s: arrow_ranges(s.to_arrow())),
        "polars-nulls": (lambda: pl.Series("x", [1, None, 3]),
                         lambda s: arrow_ranges(s.to_arrow())),
        "polars-int16": (lambda: pl.Series("x", [1, 2, 3], dtype=pl.Int16),
                         lambda s: arrow_ranges(s.to_arrow())),
        "polars-bool": (lambda: pl.Series("x", [True, False]),
                        lambda s: arrow_ranges(s.to_arrow())),
        "polars-2-chunks": (lambda: pl.concat([pl.Series("x", [1.0]), pl.Series("x", [2.0])],
                                              rechunk=False), lambda s: arrow_ranges(s.to_arrow())),
        "polars-categorical": (lambda: pl.Series("x", ["a", "b", None, "a"], dtype=pl.Categorical),
                               lambda s: arrow_ranges(s.to_physical().to_arrow())),
        "polars-enum": (lambda: pl.Series("x", ["a", "b", "a"], dtype=pl.Enum(["a", "b"])),
                        lambda s: arrow_ranges(s.to_physical().to_arrow())),
        "pandas-numpy": (lambda: pd.Series(VALUES), lambda s: numpy_ranges(s.to_numpy())),
        "pandas-int": (lambda: pd.Series(np.arange(9)), lambda s: numpy_ranges(s.to_numpy())),
        "pandas-bool": (lambda: pd.Series([True, False]), lambda s: numpy_ranges(s.to_numpy())),
        "pandas-strided-frame": (lambda: STRIDED_FRAME["a"], lambda s: numpy_ranges(s.to_numpy())),
        "pandas-strided-int": (lambda: STRIDED_FRAME["i"], lambda s: numpy_ranges(s.to_numpy())),
        "pandas-nullable": (lambda: pd.Series([1.0, None, 3.0], dtype="Float64"),
                            lambda s: numpy_ranges(s.array._data)),
        "pandas-nullable-int": (lambda: pd.Series([1, None, 3], dtype="Int32"),
                                lambda s: numpy_ranges(s.array._data)),
        "pandas-nullable-bool": (lambda: pd.Series([True, None], dtype="boolean"),
                                 lambda s: numpy_ranges(s.array._data)),
        "pandas-arrow": (lambda: pd.Series(VALUES, dtype=pd.ArrowDtype(pa.float64())),
                         lambda s: arrow_ranges(s.array._pa_array)),
        "pandas-datetime": (lambda: pd.Series(pd.date_range("2024-01-01", periods=5)),
                            lambda s: numpy_ranges(s.array._ndarray)),
        "pandas-category-int": (lambda: pd.Series([10, 20, 10, None], dtype="category"),
                                lambda s: numpy_ranges(s.array.codes)),
        "pandas-category-str": (lambda: pd.Series(["x", "y", None, "x"], dtype="category"),
                                lambda s: numpy_ranges(s.array.codes)),
        "numpy": (lambda: VALUES.copy(), numpy_ranges),
        "numpy-strided": (lambda: np.arange(20.0)[::2], numpy_ranges),
        "numpy-column-of-2d": (lambda: WIDE[:, 1], numpy_ranges),
        "numpy-reversed": (lambda: np.arange(20.0)[::-1], numpy_ranges),
        "numpy-big-endian": (lambda: np.arange(6, dtype=">f8"), numpy_ranges),
        "numpy-bool": (lambda: np.array([True, False]), numpy_ranges),
        "capsule-array": (lambda: Capsule(pa.array(VALUES)), lambda s: arrow_ranges(s.array)),
        "capsule-stream": (lambda: StreamCapsule(pa.chunked_array([VALUES])),
                           lambda s: arrow_ranges(s.array)),
    }  # fmt: skip


def lies_inside(view: cb.TensorView, ranges: Ranges) -> bool:
    lo = view.data_address
    hi = lo + max(view.nbytes, 1)
    return any(start <= lo and hi <= end for start, end in ranges)


CASES = cases()


@pytest.mark.parametrize("kind", list(CASES))
def test_copied_tells_the_truth_on_every_ingest_path(kind: str) -> None:
    make, ranges = CASES[kind]
    source = make()
    view = cb.as_tensor(source, allow_copy=True)
    inside = lies_inside(view, ranges(source))
    assert view.copied is (not inside), (view, view.copy_reason)
    assert bool(view.copy_reason) is view.copied
    # a fresh source: polars' `to_arrow` (in `ranges`) rechunks a Series in place
    if not view.copied:  # and without allow_copy nothing changes
        assert not cb.as_tensor(make()).copied
    else:  # a copy the caller did not allow is refused
        with pytest.raises(cb.CopyNotAllowedError, match="allow_copy=True"):
            cb.as_tensor(make())


def test_strided_and_categorical_sources_are_zero_copy() -> None:
    # the cases: strided NumPy, df[::2] columns and categoricals are views
    for kind in ("numpy-strided", "pandas-strided-frame", "pandas-category-int",
                 "pandas-category-str", "polars-categorical", "polars-enum"):  # fmt: skip
        make, ranges = CASES[kind]
        source = make()
        view = cb.as_tensor(source)
        assert not view.copied, kind
        assert lies_inside(view, ranges(source)), kind


@pytest.mark.parametrize(
    ("source", "codes", "labels"),
    [
        (pd.Series([10, 20, 10, None], dtype="category"), [0, 1, 0, None], [10, 20]),
        (pd.Series(["x", "y", None, "x"], dtype="category"), [0, 1, None, 0], ["x", "y"]),
        (pd.Series(pd.Categorical(["b", "a"], categories=["a", "b"], ordered=True)), [1, 0],
         ["a", "b"]),
        (pl.Series(["a", "b", None, "a"], dtype=pl.Enum(["a", "b"])), [0, 1, None, 0],
         ["a", "b"]),
        (pa.array(["u", "v", "u"]).dictionary_encode(), [0, 1, 0], ["u", "v"]),
    ],
)  # fmt: skip
def test_categoricals_give_codes_and_their_labels(source: Any, codes: list, labels: list) -> None:
    view = cb.as_tensor(source)
    valid = view.validity.to_numpy() if view.validity is not None else np.ones(len(view), bool)
    got = [int(c) if ok else None for c, ok in zip(view.numpy(), valid, strict=True)]
    assert got == codes
    assert view.dictionary.to_pylist() == labels


def test_polars_categorical_codes_decode_to_the_labels() -> None:
    pl.Series(["unrelated", "labels"], dtype=pl.Categorical)  # the shared mapping grows
    s = pl.Series("c", ["b", "a", None, "b", "c"], dtype=pl.Categorical)
    view = cb.as_tensor(s)
    labels = view.dictionary.to_pylist()
    valid = view.validity.to_numpy()
    decoded = [labels[int(c)] if ok else None for c, ok in zip(view.numpy(), valid, strict=True)]
    assert decoded == s.to_list()


def test_explain_reports_the_copy_of_a_strided_pandas_column() -> None:
    frame = STRIDED_FRAME.copy(deep=False)
    q = frame.gpu.with_columns(z=cb.col("a") * 2)
    text = q.explain()
    assert "column `a`: a strided NumPy column (stride 16 bytes) made contiguous (a copy)" in text
    out = q.compute()
    assert out["z"].tolist() == (STRIDED_FRAME["a"] * 2).tolist()
    contiguous = pd.DataFrame({"a": np.arange(5.0)})
    assert "copies: none" in contiguous.gpu.with_columns(z=cb.col("a") * 2).explain()


# -- item 4: one rule for pandas NaN ------------------------------------------------------
NAN_FRAME = pd.DataFrame({"a": [1.0, np.nan, 3.0, np.nan], "b": [1, 2, 3, 4]})


def test_as_tensor_reads_pandas_nan_as_null() -> None:
    view = cb.as_tensor(NAN_FRAME["a"])
    assert not view.copied
    assert view.data_address == NAN_FRAME["a"].to_numpy().ctypes.data
    assert view.null_count == 2
    assert view.validity.to_numpy().tolist() == [True, False, True, False]
    assert view.arrow().to_pylist() == [1.0, None, 3.0, None]
    with pytest.raises(cb.NullValuesError, match="2 null value"):
        cb.as_tensor(NAN_FRAME["a"], nulls="raise")
    with pytest.raises(cb.CopyNotAllowedError):
        cb.as_tensor(NAN_FRAME["a"], nulls=0.0)
    filled = cb.as_tensor(NAN_FRAME["a"], nulls=0.0, allow_copy=True)
    assert filled.numpy().tolist() == [1.0, 0.0, 3.0, 0.0]
    assert filled.copied


def test_to_tensor_reads_pandas_nan_as_null() -> None:
    with pytest.raises(cb.NullValuesError, match="column `a`"):
        cb.to_tensor(NAN_FRAME, nulls="raise")
    filled = cb.to_tensor(NAN_FRAME, nulls=-1.0)
    assert filled.numpy()[:, 0].tolist() == [1.0, -1.0, 3.0, -1.0]
    kept = cb.to_tensor(NAN_FRAME)
    assert kept.validity[:, 0].tolist() == [True, False, True, False]
    assert kept.numpy()[:, 0].tolist() == [1.0, 0.0, 3.0, 0.0]
    as_dict = cb.to_tensor({"a": NAN_FRAME["a"]}, nulls=5.0)
    assert as_dict.numpy()[:, 0].tolist() == [1.0, 5.0, 3.0, 5.0]
    assert NAN_FRAME.gpu.to_tensor(["a"], nulls=0.0).numpy().ravel().tolist() == [1, 0, 3, 0]


def test_df_gpu_reads_pandas_nan_as_null() -> None:
    out = NAN_FRAME.gpu.select(n=cb.col("a").is_null(), f=cb.col("a").fill_null(0.0)).compute()
    assert out["n"].tolist() == [False, True, False, True]
    assert out["f"].tolist() == [1.0, 0.0, 3.0, 0.0]


def test_fuse_sees_pandas_nan_as_null_through_parquet(tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    NAN_FRAME.to_parquet(path)  # pandas writes its NaN as nulls
    spec = FeatureSpec.from_dict({"columns": {"a": {"fill_null": 7.0}}})
    (batch,) = list(iter_features(str(path), spec))
    assert batch.features[:, 0].tolist() == [1.0, 7.0, 3.0, 7.0]


@pytest.mark.parametrize(
    "source",
    [
        pa.array([1.0, np.nan]),
        pl.Series([1.0, np.nan]),
        np.array([1.0, np.nan]),
        # pandas' nullable and Arrow-backed floats hold NaN apart from NA (built explicitly:
        # their constructors turn a NaN into NA)
        pd.Series(pd.arrays.FloatingArray(np.array([1.0, np.nan]), np.zeros(2, dtype=bool))),
        pd.Series(pd.arrays.ArrowExtensionArray(pa.array([1.0, np.nan]))),
    ],
    ids=["pyarrow", "polars", "numpy", "pandas-nullable", "pandas-arrow"],
)
def test_nan_stays_a_value_everywhere_else(source: Any) -> None:
    view = cb.as_tensor(source)
    assert view.null_count == 0
    assert np.isnan(view.numpy()[1])
    assert not np.isnan(cb.as_tensor(source, nulls="raise").numpy()[0])  # no null: no error
    matrix = cb.to_tensor({"x": source}, nulls="raise")
    assert np.isnan(matrix.numpy()[1, 0])


# -- item 10 ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [pl.Int128, pl.UInt128])
def test_128_bit_polars_columns_are_refused_by_name(dtype: Any) -> None:
    df = pl.DataFrame({"wide": pl.Series([1, 2], dtype=dtype), "x": [1.0, 2.0]})
    match = rf"column `wide` has polars type {dtype}.*cast it first"
    with pytest.raises(cb.UnsupportedTypeError, match=match):
        df.gpu.with_columns(z=cb.col("wide") + 1).compute()
    with pytest.raises(cb.UnsupportedTypeError, match=match):
        cb.as_tensor(df["wide"])
    with pytest.raises(cb.UnsupportedTypeError, match=match):
        cb.to_tensor(df, ["wide", "x"])
    # untouched, it passes through, as polars keeps it
    out = df.gpu.with_columns(z=cb.col("x") * 2).filter(cb.col("x") > 1).compute()
    assert out.schema["wide"] == dtype
    assert out.to_dict(as_series=False) == {"wide": [2], "x": [2.0], "z": [4.0]}


def test_expressions_read_a_numeric_category_as_its_values_like_polars() -> None:
    frame = pd.DataFrame({"c": pd.Series([1, 2, None, 1], dtype="category"), "x": [1.0] * 4})
    q = frame.gpu.with_columns(z=cb.col("c") + 1)
    want = pl.from_pandas(frame).select(z=pl.col("c") + 1)["z"].to_list()
    assert [None if v is pd.NA else v for v in q.compute()["z"].tolist()] == want
    # the decoding is a copy, and explain() says so
    assert "column `c`: decoded a pandas category column into its int64 values (a copy)" in (
        q.explain()
    )
    # tensors take the codes: as_tensor and to_tensor agree
    codes = cb.as_tensor(frame["c"])
    assert not codes.copied
    matrix = cb.to_tensor(frame, ["c"])
    assert matrix.numpy()[:, 0].tolist() == [0.0, 1.0, 0.0, 0.0]
    assert matrix.validity[:, 0].tolist() == [True, True, False, True]


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
def test_a_category_of_zoned_nanosecond_datetimes_keeps_its_unit(zone: str) -> None:
    # its NumPy form is Python Timestamps (microseconds): read from the index instead
    stamps = pd.to_datetime([1_700_000_000_123_456_789, None, 1_600_000_000_000_000_001],
                            unit="ns", utc=True).tz_convert(zone)  # fmt: skip
    frame = pd.DataFrame({"x": pd.Series(stamps).astype("category")})
    got = frame.gpu.select(n=cb.col("x").dt.nanosecond(), h=cb.col("x").dt.hour(),
                           f=cb.col("x").cast(pl.Int64)).compute()  # fmt: skip
    want = pl.from_pandas(frame).select(n=pl.col("x").dt.nanosecond(), h=pl.col("x").dt.hour(),
                                        f=pl.col("x").cast(pl.Int64))  # fmt: skip
    assert pl.from_pandas(got).equals(want)
