from __future__ import annotations

import json

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from colbridge.errors import ColumnNotFoundError
from colbridge.io import FeatureSpec, FeatureStats, JobSpecError, fuse, iter_features

N = 30_000
SPEC = {
    "columns": {
        "a": {"fill_null": 0, "scale": "zscore", "clip": [-2, 2]},
        "b": {"scale": "minmax"},
        "c": {"one_hot": True},
    },
    "validity": True,
    "keep": ["y"],
}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = np.random.default_rng(1)
    t = pa.table(
        {
            "a": pa.array(rng.normal(3, 2, N), mask=rng.random(N) < 0.1),
            "b": rng.integers(0, 50, N),
            "c": pa.array(
                rng.choice(["x", "y", "z"], N), mask=rng.random(N) < 0.05
            ).dictionary_encode(),
            "y": rng.random(N),
        }
    )
    path = tmp_path_factory.mktemp("fuse") / "in.parquet"
    pq.write_table(t, path, row_group_size=7_000)
    return str(path)


def oracle(path: str) -> tuple[np.ndarray, np.ndarray]:
    df = pl.read_parquet(path)
    a = pl.col("a").fill_null(0.0)
    b = pl.col("b").cast(pl.Float64)
    num = df.select(
        a=((a - a.mean()) / a.std(ddof=0)).clip(-2, 2).cast(pl.Float32),
        b=((b - b.min()) / (b.max() - b.min())).cast(pl.Float32),
    ).to_numpy()
    c = df["c"].cast(pl.String)
    onehot = np.stack([(c == v).fill_null(False).to_numpy() for v in ("x", "y", "z")]
                      + [c.is_null().to_numpy()], axis=1)  # fmt: skip
    return np.hstack([num, onehot.astype(np.float32)]), c.is_not_null().to_numpy()


def test_fuse_writes_fixed_shape_tensor_matching_polars(data: str, tmp_path) -> None:
    out = tmp_path / "feats.parquet"
    res = fuse(data, out, FeatureSpec.from_dict(SPEC), batch_rows=6_000)
    # a null is a category of its own (as scikit-learn's OneHotEncoder has it)
    assert res.names == ["a", "b", "c=x", "c=y", "c=z", "c=<null>"]
    table = pq.read_table(out)
    assert table.schema.field("features").type == pa.fixed_shape_tensor(pa.float32(), [6])
    assert json.loads(table.schema.metadata[b"colbridge.features"]) == res.names
    got = table["features"].combine_chunks().to_numpy_ndarray()
    exp, cat_valid = oracle(data)
    np.testing.assert_allclose(got, exp, rtol=1e-6, atol=1e-6)
    valid = table["validity"].combine_chunks().to_numpy_ndarray().astype(bool)
    assert valid[:, :2].all()  # a is filled, b has no nulls
    assert not cat_valid.all()
    assert valid[:, 2:].all()
    assert table["y"].equals(pq.read_table(data)["y"])


def test_saved_stats_transform_new_data_identically(data: str, tmp_path) -> None:
    spec = FeatureSpec.from_dict(SPEC)
    stats_path = tmp_path / "stats.json"
    fuse(data, tmp_path / "train.parquet", spec, save_stats=stats_path, batch_rows=9_000)
    stats = FeatureStats.load(stats_path)
    assert stats.columns["c"]["categories"] == ["x", "y", "z", None]
    # Serving: one small batch with an unseen category, same statistics.
    serve = pa.table({"a": [None, 3.0], "b": [0, 49], "c": ["y", "w"], "y": [0.0, 1.0]})
    src = tmp_path / "serve.parquet"
    pq.write_table(serve, src)
    batch = next(iter(iter_features(src, spec, stats=stats_path)))
    a0 = (0.0 - stats.columns["a"]["mean"]) / stats.columns["a"]["std"]
    np.testing.assert_allclose(batch.features[0], [max(a0, -2), 0, 0, 1, 0, 0], rtol=1e-6)
    assert batch.features[1, 1] == 1.0
    assert batch.features[1, 2:].tolist() == [0, 0, 0, 0]  # unknown category: all zero
    assert batch.validity is not None
    assert batch.validity[1, 2:].tolist() == [False, False, False, False]


def test_feature_batches_feed_a_torch_dataloader(data: str) -> None:
    torch = pytest.importorskip("torch")
    batches = iter_features(data, FeatureSpec.from_dict(SPEC), batch_rows=10_000)
    loader = torch.utils.data.DataLoader(batches.to_torch(), batch_size=None)
    seen = 0
    for item in loader:
        assert item["features"].dtype == torch.float32
        assert item["features"].shape[1] == 6
        seen += item["features"].shape[0]
    assert seen == N
    fb = next(iter(batches))
    shared = torch.from_dlpack(fb.features)
    assert shared.data_ptr() == fb.features.ctypes.data


def test_spec_errors(data: str, tmp_path) -> None:
    with pytest.raises(JobSpecError, match="unknown scale"):
        FeatureSpec.from_dict({"columns": {"a": {"scale": "quantile"}}})
    with pytest.raises(ColumnNotFoundError, match="nope"):
        fuse(data, tmp_path / "o.parquet", FeatureSpec.from_dict({"columns": ["nope"]}))
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(JobSpecError, match="not a colbridge"):
        FeatureStats.load(bad)
    assert not (tmp_path / "o.parquet").exists()
