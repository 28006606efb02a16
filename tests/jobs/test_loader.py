"""The training loader: every row once per epoch, seeded shuffles, workers, streams, tensors.

The oracle for the feature values is polars computing the same transform on the
whole file; rows are matched by an ``id`` column served alongside.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from colbridge.io import JobSpecError, loader

torch = pytest.importorskip("torch")

N = 5_000
ROW_GROUP = 700


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, pl.DataFrame]:
    rng = np.random.default_rng(11)
    x = rng.normal(3.0, 2.0, N)
    table = pa.table({
        "id": np.arange(N, dtype=np.int64),
        "x": pa.array(x, mask=rng.random(N) < 0.1),
        "k": rng.integers(0, 50, N).astype(np.int32),
        "y": rng.integers(0, 2, N).astype(np.int8),
    })  # fmt: skip
    path = str(tmp_path_factory.mktemp("loader") / "train.parquet")
    pq.write_table(table, path, row_group_size=ROW_GROUP)
    return path, pl.from_arrow(table)


def expected_features(df: pl.DataFrame) -> np.ndarray:
    x = pl.col("x").fill_null(0.0)
    k = pl.col("k").cast(pl.Float64)
    out = df.select(
        ((x - x.mean()) / x.std(ddof=0)).cast(pl.Float32),
        ((k - k.min()) / (k.max() - k.min())).cast(pl.Float32),
    )
    return out.to_numpy()


def _load(path: str, **options: Any) -> Any:
    base = {"columns": ["x", "k"], "zscore": ["x"], "minmax": ["k"], "fill_null": {"x": 0.0},
            "label": "y", "keep": ["id"], "batch_size": 256}  # fmt: skip
    base.update(options)
    return loader(path, **base)


def _gather(batches: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    feats, ids, ys, sizes = [], [], [], []
    for b in batches:
        feats.append(np.asarray(b["features"]))
        ids.append(np.asarray(b["id"]))
        ys.append(np.asarray(b["y"]))
        sizes.append(len(ids[-1]))
    return np.concatenate(feats), np.concatenate(ids), np.concatenate(ys), sizes


@pytest.mark.parametrize("shuffle", [False, True])
def test_every_row_once_with_the_right_features(data, shuffle: bool) -> None:
    path, df = data
    feats, ids, ys, sizes = _gather(_load(path, shuffle=shuffle, seed=3))
    assert sorted(ids.tolist()) == list(range(N))  # each row exactly once
    if not shuffle:
        assert ids.tolist() == list(range(N))  # file order
    assert sizes[:-1] == [256] * (len(sizes) - 1)
    assert sizes[-1] == N - 256 * (len(sizes) - 1)
    want = expected_features(df)
    np.testing.assert_allclose(feats, want[ids], rtol=2e-7, atol=1e-6)
    assert np.array_equal(ys, df["y"].to_numpy()[ids])


def test_shuffle_is_seeded_and_changes_with_the_epoch(data) -> None:
    path, _ = data
    first = _gather(_load(path, seed=5))[1]
    again = _gather(_load(path, seed=5))[1]
    other = _gather(_load(path, seed=6))[1]
    assert first.tolist() == again.tolist()
    assert first.tolist() != other.tolist()
    assert first.tolist() != list(range(N))
    epochs = _load(path, seed=5)
    epochs.set_epoch(1)
    assert _gather(epochs)[1].tolist() != first.tolist()
    # rows leave their row group: the first batch mixes several of them
    assert len({int(i) // ROW_GROUP for i in first[:256]}) > 2


def test_drop_last_and_types(data) -> None:
    path, _ = data
    batches = list(_load(path, drop_last=True, shuffle=False, dtypes={"y": "int64"}))
    assert [len(b["id"]) for b in batches] == [256] * (N // 256)
    b = batches[0]
    assert b["features"].dtype == torch.float32
    assert b["features"].shape == (256, 2)
    assert b["y"].dtype == torch.int64
    assert b["id"].dtype == torch.int64
    numpy_batch = next(iter(_load(path, output="numpy", shuffle=False)))
    assert isinstance(numpy_batch["features"], np.ndarray)


def test_data_loader_workers_split_the_row_groups(data) -> None:
    path, df = data
    dl = _load(path, shuffle=True, seed=1).data_loader(num_workers=2)
    feats, ids, _, _ = _gather(dl)
    assert sorted(ids.tolist()) == list(range(N))
    np.testing.assert_allclose(feats, expected_features(df)[ids], rtol=2e-7, atol=1e-6)


def test_data_loader_workers_started_by_spawn(data) -> None:
    # the dataset is a class of the module, which a spawned worker finds by name (a class
    # made inside `to_torch` could not be pickled)
    path, df = data
    dl = _load(path, shuffle=True, seed=3).data_loader(num_workers=1,
                                                       multiprocessing_context="spawn")
    feats, ids, _, _ = _gather(dl)
    assert sorted(ids.tolist()) == list(range(N))
    np.testing.assert_allclose(feats, expected_features(df)[ids], rtol=2e-7, atol=1e-6)


def test_data_loader_workers_read_a_polars_frame_without_polars(data) -> None:
    # a polars DataFrame is read through its Arrow columns: a worker forked from a process
    # whose polars threads ran hung in polars; a polars query is refused by name
    _, df = data
    df.select(pl.col("id").sum())  # polars' threads are running in this process
    feats, ids, _, _ = _gather(_load(df, shuffle=False, read_rows=1000).data_loader(
        num_workers=2))  # fmt: skip
    assert sorted(ids.tolist()) == list(range(N))
    np.testing.assert_allclose(feats, expected_features(df)[ids], rtol=2e-7, atol=1e-6)
    with pytest.raises(JobSpecError, match="LazyFrame cannot be read in DataLoader workers"):
        _load(df.lazy()).data_loader(num_workers=2)


def test_streams_feed_the_loader_for_several_epochs(data) -> None:
    path, df = data
    lf = pl.scan_parquet(path)
    ids = _gather(_load(lf, shuffle=False, read_rows=1000))[1]
    assert ids.tolist() == list(range(N))
    reader = pa.RecordBatchReader.from_batches(
        df.to_arrow().schema, df.to_arrow().to_batches(max_chunksize=900))
    one_shot = _load(reader, seed=2)  # fitted on the first read, spooled for the epochs
    for epoch in range(2):
        one_shot.set_epoch(epoch)
        feats, ids, _, _ = _gather(one_shot)
        assert sorted(ids.tolist()) == list(range(N))
        np.testing.assert_allclose(feats, expected_features(df)[ids], rtol=2e-7, atol=1e-6)


def test_jax_arrays_through_dlpack(data) -> None:
    jax = pytest.importorskip("jax")
    path, df = data
    batch = next(iter(_load(path, output="jax", shuffle=False)))
    assert isinstance(batch["features"], jax.Array)
    np.testing.assert_allclose(np.asarray(batch["features"]), expected_features(df)[:256],
                               rtol=2e-7, atol=1e-6)  # fmt: skip


def test_loader_errors(data, tmp_path) -> None:
    path, _ = data
    with pytest.raises(JobSpecError, match=r"label column\(s\) \['x'\] are also features"):
        _load(path, label="x")
    with pytest.raises(JobSpecError, match=r"label column\(s\) \['nope'\] not found"):
        _load(path, label="nope")
    with pytest.raises(JobSpecError, match=r"\['k'\] are target encoded: a training loader"):
        _load(path, target_encode=["k"], minmax=[])
    with pytest.raises(JobSpecError, match=r"unknown output 'tf'"):
        _load(path, output="tf")
    nulls = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"x": [1.0, 2.0], "y": [1, None], "id": [0, 1]}), nulls)
    batches = _load(str(nulls), columns=["x"], minmax=[], prefetch=2)
    with pytest.raises(JobSpecError, match=r"column `y` has 1 null\(s\)"):
        list(batches)  # raised on the background thread, re-raised here


def test_a_statistics_file_of_feature_fusion_serves_the_same_matrix(data, tmp_path) -> None:
    pytest.importorskip("sklearn")
    from colbridge.ml import FeatureFusion

    path, df = data
    features = {"columns": ["x", "k"], "zscore": ["x"], "minmax": ["k"], "fill_null": {"x": 0.0}}
    ff = FeatureFusion(**features).fit(df.head(3_000))  # fitted on part of the rows
    stats = tmp_path / "stats.json"  # a pathlib.Path, as `save_stats` takes
    ff.save_stats(stats)
    served = _gather(_load(path, **features, stats=stats, shuffle=False, output="numpy"))
    assert served[1].tolist() == list(range(N))
    assert np.array_equal(served[0], ff.transform(df))


def _species(rng: np.random.Generator, n: int) -> np.ndarray:
    # unicode, an empty string and a rare class, in no sorted order of first appearance
    names = np.array(["Gentoo", "Adélie", "", "chinstrap", "Chinstrap", "Ωmega"])
    return names[rng.choice(len(names), n, p=[0.3, 0.3, 0.1, 0.15, 0.149, 0.001])]


@pytest.mark.parametrize("kind", ["string", "large_string", "dictionary"])
def test_string_labels_are_served_as_sorted_class_ids(tmp_path, kind: str) -> None:
    rng = np.random.default_rng(5)
    labels = _species(rng, N)
    column = {"string": pa.array(labels, pa.string()),
              "large_string": pa.array(labels, pa.large_string()),
              "dictionary": pa.array(labels).dictionary_encode()}[kind]  # fmt: skip
    table = pa.table({"id": np.arange(N), "x": rng.random(N), "sp": column})
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path, row_group_size=ROW_GROUP)
    # the oracle: NumPy's sorted unique values and each row's index among them
    classes, inverse = np.unique(labels, return_inverse=True)

    batches = loader(path, columns=["x"], minmax=["x"], label="sp", keep=["id"],
                     batch_size=300, seed=4)  # fmt: skip
    assert batches.label_classes == {"sp": classes.tolist()}
    served = [(b["id"].numpy(), b["sp"]) for b in batches]
    assert all(sp.dtype == torch.int64 for _, sp in served)
    ids = np.concatenate([i for i, _ in served])
    sp = np.concatenate([s.numpy() for _, s in served])
    assert sorted(ids.tolist()) == list(range(N))
    assert np.array_equal(sp, inverse[ids])

    # the classes travel in the statistics file; another file is served with them
    stats_path = tmp_path / "stats.json"
    batches.stats.save(stats_path)
    part = pa.table({"id": np.arange(3), "x": [0.5, 0.1, 0.9],
                     "sp": pa.array(["chinstrap", "Gentoo", "chinstrap"])})  # fmt: skip
    part_path = str(tmp_path / "part.parquet")
    pq.write_table(part, part_path)
    again = loader(part_path, columns=["x"], minmax=["x"], label="sp", stats=stats_path,
                   dtypes={"sp": "int32"}, output="numpy", shuffle=False)  # fmt: skip
    (batch,) = list(again)
    want = [classes.tolist().index(v) for v in ["chinstrap", "Gentoo", "chinstrap"]]
    assert batch["sp"].tolist() == want
    assert batch["sp"].dtype == np.int32


def test_string_label_classes_from_fit_stats_and_streams() -> None:
    from colbridge.io.fuse import FeatureSpec, fit_stats

    rng = np.random.default_rng(8)
    labels = _species(rng, 2_000)
    df = pl.DataFrame({"x": rng.random(2_000), "sp": labels})
    spec = FeatureSpec.from_dict({"columns": {"x": {"scale": "zscore"}}})
    stats = fit_stats(df.lazy(), spec, labels=["sp"], batch_rows=300)
    assert stats.columns["sp"] == {"classes": np.unique(labels).tolist()}
    served = list(loader(df.lazy(), spec=spec, label="sp", stats=stats, batch_size=500,
                         output="numpy", shuffle=False, read_rows=300))  # fmt: skip
    got = np.concatenate([b["sp"] for b in served])
    assert np.array_equal(got, np.unique(labels, return_inverse=True)[1])


def test_string_label_errors(tmp_path) -> None:
    from colbridge.io.fuse import FeatureSpec, fit_stats

    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"x": [1.0, 2.0, 3.0], "sp": ["a", "b", "a"]}), path)
    spec = FeatureSpec.from_dict({"columns": {"x": {"scale": "minmax"}}})
    without = fit_stats(path, spec)  # no labels asked for: no classes
    with pytest.raises(JobSpecError, match=r"no `classes` for label column `sp`.*labels=\['sp'\]"):
        loader(path, spec=spec, label="sp", stats=without)
    stats = fit_stats(path, spec, labels=["sp"])
    other = str(tmp_path / "other.parquet")
    pq.write_table(pa.table({"x": [1.0, 2.0], "sp": ["a", "zebra"]}), other)
    served = loader(other, spec=spec, label="sp", stats=stats, output="numpy", prefetch=0)
    with pytest.raises(JobSpecError, match=r"label column `sp` holds 1 value\(s\) the "
                       r"statistics' classes lack \('zebra'\).*\['a', 'b'\]"):  # fmt: skip
        list(served)
    with pytest.raises(JobSpecError, match=r"label column\(s\) \['x'\] are also features"):
        fit_stats(path, spec, labels=["x"])
    with pytest.raises(JobSpecError, match=r"label column\(s\) \['nope'\] not found"):
        fit_stats(path, spec, labels=["nope"])
