"""The statistics file: round trip, versions, missing statistics, and the CLI's flags."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from colbridge.cli import main
from colbridge.errors import JobSpecError
from colbridge.io.fuse import FeatureSpec, FeatureStats, fit_stats, fuse, transform_batch
from colbridge.ml import FeatureFusion
from tests.features.data import make_table

SPEC = {
    "columns": {
        "x": {"scale": "robust", "log1p": False, "indicator": True, "fill_null": 0.0},
        "e": {"quantile_bins": 4},
        "c": {"one_hot": True, "min_frequency": 100, "handle_unknown": "infrequent_if_exist"},
        "c2": {"ids": True, "max_categories": 5},
        "c3": {"target_encode": True},
        "c4": {"hash_buckets": 16},
    },
    "target": "y",
    "smoothing": 2.0,
    "folds": 3,
}


def _table(n: int, seed: int) -> pa.Table:
    t = make_table(n, seed=seed, null_rate=0.05)
    return t.append_column("c2", t["c"]).append_column("c3", t["c"]).append_column("c4", t["c"])


TRAIN = _table(5_000, 1)
TEST = _table(1_000, 2)


def test_round_trip(tmp_path) -> None:
    spec = FeatureSpec.from_dict(SPEC)
    stats = fit_stats(TRAIN, spec, batch_rows=1_000)
    path = tmp_path / "stats.json"
    stats.save(path)
    loaded = FeatureStats.load(path)
    assert loaded.version == 4
    assert json.loads(path.read_text())["version"] == 4
    a = transform_batch(TEST, spec, stats).features
    b = transform_batch(TEST, spec, loaded).features
    np.testing.assert_array_equal(a, b)


def test_unknown_version_is_refused(tmp_path) -> None:
    spec = FeatureSpec.from_dict(SPEC)
    data = fit_stats(TRAIN, spec).to_dict()
    data["version"] = 99
    path = tmp_path / "future.json"
    path.write_text(json.dumps(data))
    with pytest.raises(JobSpecError, match=r"has version 99, which this colbridge cannot read"):
        FeatureStats.load(path)


def test_version_1_file_still_reads(tmp_path) -> None:
    old = {"format": "colbridge-feature-stats", "version": 1, "ddof": 0,
           "columns": {"x": {"mean": 1.0, "std": 2.0, "min": 0.0, "max": 3.0},
                       "c": {"categories": ["k00", "k01"]}}}  # fmt: skip
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(old))
    spec = FeatureSpec.from_dict({"columns": {"x": {"scale": "zscore"}, "c": {"one_hot": True}}})
    fb = transform_batch(TEST, spec, FeatureStats.load(path))
    assert fb.names == ["x", "c=k00", "c=k01"]
    # but a version-1 file has no counts: infrequent categories cannot be worked out
    limited = FeatureSpec.from_dict({"columns": {"c": {"one_hot": True, "min_frequency": 5}}})
    with pytest.raises(JobSpecError, match=r"no `counts` for column `c`, which one-hot with"):
        transform_batch(TEST, limited, FeatureStats.load(path))


@pytest.mark.parametrize(
    ("column", "key"),
    [("x", "median"), ("x", "q75"), ("e", "bin_edges"), ("c", "counts"), ("c2", "rows"),
     ("c3", "fold_sums"), ("c3", "fold_target")],
)  # fmt: skip
def test_missing_statistic_is_named(tmp_path, column: str, key: str) -> None:
    spec = FeatureSpec.from_dict(SPEC)
    data = fit_stats(TRAIN, spec).to_dict()
    del data["columns"][column][key]
    path = tmp_path / "stats.json"
    path.write_text(json.dumps(data))
    with pytest.raises(JobSpecError, match=rf"has no `{key}` for column `{column}`"):
        fuse(TEST, tmp_path / "o.parquet", spec, stats=path)
    assert not (tmp_path / "o.parquet").exists()


def test_folds_mismatch_is_refused() -> None:
    stats = fit_stats(TRAIN, FeatureSpec.from_dict(SPEC))
    other = FeatureSpec.from_dict({**SPEC, "folds": 4})
    with pytest.raises(JobSpecError, match=r"fitted with 3 folds for column `c3`"):
        transform_batch(TEST, other, stats)


CLI_FLAGS = [
    "--columns", "x,e,c,c2,c3,c4", "--robust", "x", "--indicator", "x", "--fill-null", "x=0",
    "--quantile-bins", "e=4", "--one-hot", "c", "--min-frequency", "100",
    "--handle-unknown", "infrequent_if_exist", "--ids", "c2", "--max-categories", "5",
    "--target-encode", "c3", "--target", "y", "--smoothing", "2", "--folds", "3",
    "--hash-buckets", "c4=16", "--log1p", "e", "--seed", "7",
]  # fmt: skip


def _python() -> FeatureFusion:
    return FeatureFusion(
        ["x", "e", "c", "c2", "c3", "c4"], robust=["x"], indicator=["x"], fill_null={"x": 0},
        quantile_bins={"e": 4}, one_hot=["c"], min_frequency=100,
        handle_unknown="infrequent_if_exist", ids=["c2"], max_categories=5,
        target_encode=["c3"], target="y", smoothing=2.0, folds=3, hash_buckets={"c4": 16},
        log1p=["e"], seed=7,
    )  # fmt: skip


def test_cli_flags_give_the_transformers_matrix(tmp_path) -> None:
    train, test = tmp_path / "train.parquet", tmp_path / "test.parquet"
    pq.write_table(TRAIN, train, row_group_size=1_500)
    pq.write_table(TEST, test)
    stats = tmp_path / "stats.json"
    out, served = tmp_path / "f.parquet", tmp_path / "s.parquet"
    args = ["fuse", str(train), "-o", str(out), *CLI_FLAGS, "--save-stats", str(stats), "-q"]
    assert main(args) == 0
    assert (
        main(["fuse", str(test), "-o", str(served), *CLI_FLAGS, "--stats", str(stats), "-q"]) == 0
    )
    ff = _python()
    # fitting (training rows out of fold) and serving agree with the command line
    cli_train = pq.read_table(out).column("features").combine_chunks().to_numpy_ndarray()
    np.testing.assert_allclose(ff.fit_transform(TRAIN), cli_train, rtol=1e-6)
    cli_test = pq.read_table(served).column("features").combine_chunks().to_numpy_ndarray()
    np.testing.assert_array_equal(ff.transform(TEST), cli_test)
    names = json.loads(pq.read_schema(out).metadata[b"colbridge.features"])
    assert list(ff.get_feature_names_out()) == names
    # the transformer reads the file the command line wrote, and the other way round
    from_file = FeatureFusion(**{**_python().get_params(), "stats": str(stats)}).fit(TEST)
    np.testing.assert_array_equal(from_file.transform(TEST), cli_test)
    ff.save_stats(tmp_path / "py.json")
    again = tmp_path / "again.parquet"
    flags = ["fuse", str(test), "-o", str(again), *CLI_FLAGS, "--stats", str(tmp_path / "py.json")]
    assert main([*flags, "-q"]) == 0
    np.testing.assert_allclose(
        pq.read_table(again).column("features").combine_chunks().to_numpy_ndarray(),
        cli_test, rtol=1e-6,
    )  # fmt: skip


def test_cli_flag_errors(tmp_path, capsys) -> None:
    data = tmp_path / "in.parquet"
    pq.write_table(TRAIN, data)
    base = ["fuse", str(data), "-o", str(tmp_path / "o.parquet"), "-q"]
    assert main([*base, "--target-encode", "c"]) == 2
    assert "no target is given" in capsys.readouterr().err
    assert main([*base, "--one-hot", "c", "--min-frequency", "abc"]) == 2
    assert main([*base, "--quantile-bins", "e=x"]) == 2
    assert main([*base, "--one-hot", "c", "--ids", "c"]) == 2
    assert "two encodings" in capsys.readouterr().err
    assert main([*base, "--smoothing", "much", "--target-encode", "c", "--target", "y"]) == 2
    assert main([*base, "--target-encode", "c", "--target", "nope"]) == 2
    assert not (tmp_path / "o.parquet").exists()


def test_explain_lists_the_encoders(tmp_path, capsys) -> None:
    data = tmp_path / "in.parquet"
    pq.write_table(TRAIN, data)
    assert main(["fuse", str(data), *CLI_FLAGS, "--explain"]) == 0
    text = capsys.readouterr().out
    assert "c: one-hot, " in text
    assert "the last for infrequent categories; unseen values: infrequent_if_exist" in text
    assert "c2: ids, a table of 7 rows (0 null, 1 rare or unseen" in text
    assert "c3: target encoding of `y`, smoothing 2.0, out of fold (3 folds, seed 7)" in text
    assert "c4: ids from FNV-1a 64 into 16 buckets" in text
    assert "x_missing: 1 where `x` is null or NaN" in text
