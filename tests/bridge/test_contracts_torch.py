"""torch never writes into a source frame silently (issue 14, item 6), and
`FeatureBatches.to_torch()` keeps the `keep` columns (item 12). With the real torch.

torch ignores DLPack's read-only flag, so `torch.from_dlpack` of a zero-copy view
gives a writable tensor over the frame's memory: colbridge flags that export with a
`WritableAliasWarning`, and `cb.to_torch` copies unless `writable_alias=True`.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import colbridge as cb
from colbridge.io import FeatureSpec, iter_features

torch = pytest.importorskip("torch")

VALUES = [1.5, 2.5, 3.5, 4.5]


def sources() -> dict[str, Any]:
    """The same float64 column from every ingest path, and how to read it back."""
    arrow = pa.array(VALUES)
    return {
        "pyarrow": arrow,
        "pyarrow-chunked-1": pa.chunked_array([arrow]),
        "polars": pl.Series("x", VALUES),
        "pandas-numpy": pd.Series(VALUES),
        "pandas-nullable": pd.Series(VALUES, dtype="Float64"),
        "pandas-arrow": pd.Series(VALUES, dtype=pd.ArrowDtype(pa.float64())),
        "numpy": np.array(VALUES),
    }


def read_back(source: Any) -> list[float]:
    if isinstance(source, np.ndarray):
        return [float(v) for v in source]
    if isinstance(source, (pa.Array, pa.ChunkedArray)):
        return [float(v) for v in source.to_pylist()]
    return [float(v) for v in source.to_list()]


@pytest.mark.parametrize("kind", list(sources()))
def test_torch_from_dlpack_of_a_zero_copy_view_is_flagged(kind: str) -> None:
    source = sources()[kind]
    view = cb.as_tensor(source)
    assert not view.copied
    with pytest.warns(cb.WritableAliasWarning, match="writing to it changes the source"):
        tensor = torch.from_dlpack(view)
    # the flag is about a real risk: the tensor is the frame's memory
    assert tensor.data_ptr() == view.data_address
    tensor[0] = -1.0
    assert read_back(source)[0] == -1.0


@pytest.mark.parametrize("entry", ["as_tensor", "asarray"])
def test_every_torch_entry_point_over_dlpack_is_flagged(entry: str) -> None:
    view = cb.as_tensor(pl.Series("x", VALUES))
    with pytest.warns(cb.WritableAliasWarning):
        getattr(torch, entry)(view)


@pytest.mark.parametrize("kind", list(sources()))
def test_to_torch_copies_so_the_source_stays_unchanged(kind: str) -> None:
    source = sources()[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: nothing is shared
        tensor = cb.to_torch(source)
    assert tensor.dtype == torch.float64
    assert tensor.tolist() == VALUES
    assert tensor.data_ptr() != cb.as_tensor(source).data_address
    tensor[0] = -1.0
    assert read_back(source) == VALUES


@pytest.mark.parametrize("kind", list(sources()))
def test_to_torch_writable_alias_shares_when_asked(kind: str) -> None:
    source = sources()[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # asked for: no warning
        tensor = cb.to_torch(source, writable_alias=True)
    assert tensor.data_ptr() == cb.as_tensor(source).data_address


def test_fresh_results_are_shared_without_a_warning() -> None:
    df = pl.DataFrame({"a": [1.0, 2.0], "b": [3, 4]})
    matrix = cb.to_tensor(df, dtype="float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shared = torch.from_dlpack(matrix)
        also = cb.to_torch(matrix)
    assert shared.data_ptr() == also.data_ptr() == matrix.data_address
    also[0, 0] = 9.0  # the matrix is colbridge's own copy: the frame is untouched
    assert df["a"].to_list() == [1.0, 2.0]


def test_to_torch_refuses_nulls_unless_told() -> None:
    col = pl.Series("x", [1.0, None, 3.0])
    with pytest.raises(cb.NullValuesError, match="1 null value"):
        cb.to_torch(col)
    assert cb.to_torch(col, nulls=0.0).tolist() == [1.0, 0.0, 3.0]
    # other types take the same path as `as_tensor`
    assert cb.to_torch(pl.Series("b", [True, False])).tolist() == [True, False]
    assert cb.to_torch(pl.Series("i", [1, 2], dtype=pl.Int16)).dtype == torch.int16


def test_the_issue_example_no_longer_changes_the_frame_silently() -> None:
    df = pl.DataFrame({"distance": [100.0, 200.0]})
    with pytest.warns(cb.WritableAliasWarning):
        torch.from_dlpack(cb.as_tensor(df["distance"]))[0] = -1
    # flagged; and the helper keeps the frame intact
    df = pl.DataFrame({"distance": [100.0, 200.0]})
    cb.to_torch(df["distance"])[0] = -1
    assert df["distance"].to_list() == [100.0, 200.0]


# -- item 12 --------------------------------------------------------------------------------
@pytest.fixture
def dataset(tmp_path: Path) -> tuple[str, pa.Table]:
    rng = np.random.default_rng(0)
    n = 1_000
    table = pa.table(
        {
            "age": pa.array(rng.normal(40, 10, n), mask=rng.random(n) < 0.1),
            "city": pa.array(rng.choice(["a", "b", "c"], n)).dictionary_encode(),
            "label": pa.array(rng.integers(0, 2, n).astype(np.int8)),
            "score": pa.array(rng.random(n), mask=rng.random(n) < 0.2),
            "id": pa.array([f"row{i}" for i in range(n)]),
        }
    )
    path = tmp_path / "d.parquet"
    pq.write_table(table, path, row_group_size=300)
    return str(path), table


def test_feature_batches_to_torch_keep_the_kept_columns(dataset: tuple[str, pa.Table]) -> None:
    path, table = dataset
    spec = FeatureSpec.from_dict(
        {"columns": {"age": {"scale": "zscore", "fill_null": 0}, "city": {"one_hot": True}},
         "keep": ["label", "score", "id"]}
    )  # fmt: skip
    batches = iter_features(path, spec, batch_rows=256)
    loader = torch.utils.data.DataLoader(batches.to_torch(), batch_size=None)
    labels, scores, valid, ids, rows = [], [], [], [], 0
    for item in loader:
        assert set(item) >= {"features", "label", "score", "score_validity", "id"}
        assert item["label"].dtype == torch.int8
        assert len(item["label"]) == item["features"].shape[0] == len(item["id"])
        labels += item["label"].tolist()
        scores += item["score"].tolist()
        valid += item["score_validity"].tolist()
        ids += item["id"]
        rows += item["features"].shape[0]
    assert rows == table.num_rows
    assert labels == table.column("label").to_pylist()
    assert ids == table.column("id").to_pylist()
    assert valid == table.column("score").is_valid().to_pylist()
    want = table.column("score").to_pylist()
    present = [s for s, v in zip(scores, valid, strict=True) if v]
    assert present == [w for w in want if w is not None]
