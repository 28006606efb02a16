"""Fitted fills (`fill_null="mean" | "median" | "most_frequent"`) against scikit-learn.

Numeric columns here; categorical ones (most_frequent before an encoder) are in
test_feature_fill_categories.py.

The oracle is ``SimpleImputer`` alone, and composed with the scalers and the binning in
scikit-learn pipelines: the fill comes first, so the scaling statistics are fitted on
the filled column.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    KBinsDiscretizer,
    MinMaxScaler,
    RobustScaler,
    StandardScaler,
)

from colbridge.cli import main
from colbridge.errors import InvalidOperationError, JobSpecError, UnsupportedTypeError
from colbridge.io.fuse import (
    FeatureSpec,
    FeatureStats,
    explain_fuse,
    fit_stats,
    fuse,
    iter_features,
    transform_batch,
)
from colbridge.ml import FeatureFusion

STRATEGIES = ["mean", "median", "most_frequent"]


def _column(n: int, seed: int, null_rate: float = 0.2, where: str = "scattered") -> pa.Array:
    """Values on a coarse grid (so the most frequent value is decided, with ties), nulls."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.exponential(3.0, n), 1)
    if where == "scattered":
        mask = rng.random(n) < null_rate
    elif where == "leading":
        mask = np.arange(n) < n // 4
    elif where == "trailing":
        mask = np.arange(n) >= n - n // 4
    elif where == "alternate":
        mask = np.arange(n) % 2 == 0
    else:  # a single null
        mask = np.arange(n) == n // 2
    return pa.array(x, mask=mask)


def _nan(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The column as float64 with NaN for null: what scikit-learn is given."""
    values = column.to_numpy(zero_copy_only=False)
    return np.asarray(values, dtype=np.float64)[:, None]


TRAIN = pa.table({"x": _column(3_001, 1), "y": _column(3_001, 2, null_rate=0.05)})
TEST = pa.table({"x": _column(997, 3), "y": _column(997, 4)})


def _fit(spec: dict, batch_rows: int = 700) -> np.ndarray:
    """Fit on TRAIN in batches, transform TEST (the serving path)."""
    fs = FeatureSpec.from_dict({"dtype": "float64", **spec})
    stats = fit_stats(TRAIN, fs, batch_rows=batch_rows)
    return transform_batch(TEST, fs, stats).features


@pytest.mark.parametrize("where", ["scattered", "leading", "trailing", "alternate", "single"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_fill_alone_matches_simple_imputer(strategy: str, where: str) -> None:
    train = pa.table({"x": _column(2_003, 5, where=where)})
    test = pa.table({"x": _column(501, 6, where=where)})
    spec = FeatureSpec.from_dict({"columns": {"x": {"fill_null": strategy}}, "dtype": "float64"})
    stats = fit_stats(train, spec, batch_rows=400)
    imputer = SimpleImputer(strategy=strategy).fit(_nan(train["x"]))
    np.testing.assert_allclose(stats.columns["x"]["fill_value"], imputer.statistics_[0],
                               rtol=1e-13)  # fmt: skip
    got = transform_batch(test, spec, stats).features[:, 0]
    np.testing.assert_allclose(got, imputer.transform(_nan(test["x"]))[:, 0], rtol=1e-13)


def test_most_frequent_tie_takes_the_smallest() -> None:
    values = [5.0, 2.0, None, 5.0, 2.0, 7.0, None, -1.0, 7.0]  # 2, 5 and 7 twice each
    table = pa.table({"x": pa.array(values)})
    spec = FeatureSpec.from_dict({"columns": {"x": {"fill_null": "most_frequent"}}})
    stats = fit_stats(table, spec, batch_rows=2)
    want = SimpleImputer(strategy="most_frequent").fit(_nan(table["x"])).statistics_[0]
    assert stats.columns["x"]["fill_value"] == want == 2.0


def test_integer_and_boolean_columns() -> None:
    table = pa.table({"i": pa.array([3, None, 1, 3, 8, None], pa.int16()),
                      "b": pa.array([True, None, False, True, None, True])})  # fmt: skip
    for strategy in STRATEGIES:
        spec = FeatureSpec.from_dict(
            {"columns": {"i": {"fill_null": strategy}, "b": {"fill_null": strategy}},
             "dtype": "float64"}
        )  # fmt: skip
        got = transform_batch(table, spec, fit_stats(table, spec)).features
        X = np.stack([_nan(table["i"])[:, 0], _nan(table["b"])[:, 0]], axis=1)
        np.testing.assert_allclose(got, SimpleImputer(strategy=strategy).fit_transform(X))


# (colbridge's transform of the column, the scikit-learn step after SimpleImputer)
COMPOSED = {
    "zscore": ({"scale": "zscore"}, StandardScaler),
    "minmax": ({"scale": "minmax"}, MinMaxScaler),
    "robust": ({"scale": "robust"}, RobustScaler),
    "quantile_bins": (
        {"quantile_bins": 5},
        lambda: KBinsDiscretizer(n_bins=5, strategy="quantile", encode="ordinal"),
    ),
    "log1p": ({"log1p": True}, lambda: FunctionTransformer(np.log1p)),
    "log1p_zscore": (
        {"log1p": True, "scale": "zscore"},
        lambda: make_pipeline(FunctionTransformer(np.log1p), StandardScaler()),
    ),
    "robust_clip": (
        {"scale": "robust", "clip": [-1.0, 1.0]},
        lambda: make_pipeline(RobustScaler(), FunctionTransformer(lambda v: np.clip(v, -1, 1))),
    ),
}


# a fill value repeated at every null can make a quantile bin too narrow: both drop it
NARROW_BINS = "ignore:Bins whose width are too small:UserWarning"


@pytest.mark.filterwarnings(NARROW_BINS)
@pytest.mark.parametrize("transform", list(COMPOSED))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_fill_then_transform_matches_the_pipeline(strategy: str, transform: str) -> None:
    options, step = COMPOSED[transform]
    got = _fit({"columns": {"x": {"fill_null": strategy, **options}}})[:, 0]
    pipe = make_pipeline(SimpleImputer(strategy=strategy), step()).fit(_nan(TRAIN["x"]))
    want = pipe.transform(_nan(TEST["x"]))[:, 0]
    if transform == "quantile_bins":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_scaling_is_fitted_on_the_filled_values() -> None:
    # the statistics file shows it: the mean of a mean-filled column is the fill value,
    # and its std shrinks (the nulls sit at the mean)
    fs = FeatureSpec.from_dict({"columns": {"x": {"fill_null": "mean", "scale": "zscore"}}})
    s = fit_stats(TRAIN, fs, batch_rows=500).columns["x"]
    filled = SimpleImputer(strategy="mean").fit_transform(_nan(TRAIN["x"]))[:, 0]
    np.testing.assert_allclose([s["mean"], s["std"]], [filled.mean(), filled.std()], rtol=1e-12)
    assert s["std"] < np.nanstd(_nan(TRAIN["x"]))


def test_constant_and_fitted_fills_side_by_side() -> None:
    spec = {"columns": {"x": {"fill_null": "median", "scale": "minmax"},
                        "y": {"fill_null": -1.0, "scale": "zscore"}}}  # fmt: skip
    got = _fit(spec)
    x = make_pipeline(SimpleImputer(strategy="median"), MinMaxScaler()).fit(_nan(TRAIN["x"]))
    y = make_pipeline(SimpleImputer(strategy="constant", fill_value=-1.0), StandardScaler())
    y.fit(_nan(TRAIN["y"]))
    np.testing.assert_allclose(got[:, 0], x.transform(_nan(TEST["x"]))[:, 0], rtol=1e-12)
    np.testing.assert_allclose(got[:, 1], y.transform(_nan(TEST["y"]))[:, 0], rtol=1e-12)


@pytest.mark.parametrize("kind", ["pyarrow", "polars", "pandas"])
def test_feature_fusion_on_each_frame_kind(kind: str) -> None:
    frames = {"pyarrow": lambda t: t, "polars": pl.from_arrow, "pandas": lambda t: t.to_pandas()}
    train, test = frames[kind](TRAIN), frames[kind](TEST)
    if kind == "pandas":  # pandas writes a missing float as NaN: it is a null here
        assert train["x"].isna().any()
    ff = FeatureFusion(["x", "y"], fill_null={"x": "median", "y": "most_frequent"},
                       robust=["x"], indicator=["x"], dtype="float64")  # fmt: skip
    got = ff.fit_transform(train)
    assert list(ff.get_feature_names_out()) == ["x", "x_missing", "y"]
    ref_x = make_pipeline(SimpleImputer(strategy="median"), RobustScaler())
    ref_x.fit(_nan(TRAIN["x"]))
    ref_y = SimpleImputer(strategy="most_frequent").fit(_nan(TRAIN["y"]))
    want_train = np.column_stack([
        ref_x.transform(_nan(TRAIN["x"]))[:, 0],
        np.isnan(_nan(TRAIN["x"])[:, 0]),
        ref_y.transform(_nan(TRAIN["y"]))[:, 0],
    ])  # fmt: skip
    np.testing.assert_allclose(got, want_train, rtol=1e-12, atol=1e-12)
    want_test = np.column_stack([
        ref_x.transform(_nan(TEST["x"]))[:, 0],
        np.isnan(_nan(TEST["x"])[:, 0]),
        ref_y.transform(_nan(TEST["y"]))[:, 0],
    ])  # fmt: skip
    np.testing.assert_allclose(ff.transform(test), want_test, rtol=1e-12, atol=1e-12)
    # the indicator matches SimpleImputer(add_indicator=True) over the same column
    added = SimpleImputer(strategy="median", add_indicator=True).fit(_nan(TRAIN["x"]))
    np.testing.assert_array_equal(got[:, 1], added.transform(_nan(TRAIN["x"]))[:, 1])


def test_polars_nan_is_a_value_and_left_out_of_the_fit() -> None:
    # a NaN of a polars or Arrow float column is a value, not a null (fill_null leaves
    # it, as polars' does); the fit leaves it out, as SimpleImputer leaves NaN out
    frame = pl.DataFrame({"x": [1.0, None, float("nan"), 4.0, 10.0, None]})
    ff = FeatureFusion(["x"], fill_null={"x": "mean"}, dtype="float64")
    got = ff.fit_transform(frame)[:, 0]
    assert ff.stats_.columns["x"]["fill_value"] == 5.0
    np.testing.assert_array_equal(got, [1.0, 5.0, np.nan, 4.0, 10.0, 5.0])
    # pandas' NaN is its missing value: filled
    got = ff.fit_transform(pd.DataFrame({"x": [1.0, None, np.nan, 4.0, 10.0, None]}))[:, 0]
    np.testing.assert_array_equal(got, [1.0, 5.0, 5.0, 4.0, 10.0, 5.0])


def test_feature_fusion_pickles_and_round_trips_its_stats(tmp_path) -> None:
    ff = FeatureFusion(["x", "y"], fill_null={"x": "mean", "y": "median"}, zscore=["x"],
                       quantile_bins={"y": 4}, dtype="float64")  # fmt: skip
    want = ff.fit(TRAIN).transform(TEST)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(ff)).transform(TEST), want)
    np.testing.assert_allclose(ff.fit_transform(TRAIN), ff.transform(TRAIN))
    ff.save_stats(tmp_path / "s.json")
    data = json.loads((tmp_path / "s.json").read_text())
    assert data["version"] == 4
    assert data["columns"]["x"]["fill_strategy"] == "mean"
    assert data["columns"]["y"]["fill_value"] == float(np.nanmedian(_nan(TRAIN["y"])))
    served = FeatureFusion(**{**ff.get_params(), "stats": str(tmp_path / "s.json")}).fit(TEST)
    np.testing.assert_array_equal(served.transform(TEST), want)


def _parquet(table: pa.Table, path, rows: int) -> str:
    pq.write_table(table, path, row_group_size=rows)
    assert pq.ParquetFile(path).metadata.num_row_groups > 2
    return str(path)


@pytest.mark.filterwarnings(NARROW_BINS)
def test_cli_parquet_job_equals_in_memory(tmp_path) -> None:
    train = _parquet(TRAIN, tmp_path / "train.parquet", 700)
    test = _parquet(TEST, tmp_path / "test.parquet", 300)
    flags = ["--columns", "x,y", "--fill-null", "x=mean", "--zscore", "x",
             "--fill-null", "y=most_frequent", "--quantile-bins", "y=4", "--dtype", "float64",
             "--batch-rows", "500", "-q"]  # fmt: skip
    out, stats = tmp_path / "f.parquet", tmp_path / "stats.json"
    assert main(["fuse", train, "-o", str(out), *flags, "--save-stats", str(stats)]) == 0
    cli = pq.read_table(out).column("features").combine_chunks().to_numpy_ndarray()
    ff = FeatureFusion(["x", "y"], fill_null={"x": "mean", "y": "most_frequent"},
                       zscore=["x"], quantile_bins={"y": 4}, dtype="float64")  # fmt: skip
    np.testing.assert_allclose(cli, ff.fit_transform(TRAIN), rtol=1e-12, atol=1e-12)
    x = make_pipeline(SimpleImputer(strategy="mean"), StandardScaler()).fit(_nan(TRAIN["x"]))
    np.testing.assert_allclose(cli[:, 0], x.transform(_nan(TRAIN["x"]))[:, 0], atol=1e-12)
    y = make_pipeline(SimpleImputer(strategy="most_frequent"),
                      KBinsDiscretizer(n_bins=4, strategy="quantile", encode="ordinal"))
    np.testing.assert_array_equal(cli[:, 1], y.fit_transform(_nan(TRAIN["y"]))[:, 0])
    # serving from the saved file, on the command line and in Python
    served = tmp_path / "s.parquet"
    assert main(["fuse", test, "-o", str(served), *flags, "--stats", str(stats)]) == 0
    cli_test = pq.read_table(served).column("features").combine_chunks().to_numpy_ndarray()
    np.testing.assert_allclose(cli_test, ff.transform(TEST), rtol=1e-12, atol=1e-12)
    from_file = FeatureFusion(**{**ff.get_params(), "stats": str(stats)}).fit(TEST)
    np.testing.assert_array_equal(from_file.transform(TEST), cli_test)


def test_one_shot_stream_is_read_for_both_fitting_passes(tmp_path) -> None:
    # fill values, then the scaling of the filled column, then the features: a one-shot
    # reader is spooled on its first read
    spec = FeatureSpec.from_dict(
        {"columns": {"x": {"fill_null": "median", "scale": "robust"}}, "dtype": "float64"}
    )
    reader = pa.RecordBatchReader.from_batches(TRAIN.schema, TRAIN.to_batches(max_chunksize=400))
    got = np.concatenate([b.features for b in iter_features(reader, spec, batch_rows=400)])
    lazy = np.concatenate(
        [b.features for b in iter_features(pl.from_arrow(TRAIN).lazy(), spec, batch_rows=400)]
    )
    pipe = make_pipeline(SimpleImputer(strategy="median"), RobustScaler())
    want = pipe.fit_transform(_nan(TRAIN["x"]))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(lazy, got)
    out = tmp_path / "o.parquet"
    reader = pa.RecordBatchReader.from_batches(TRAIN.schema, TRAIN.to_batches(max_chunksize=400))
    fuse(reader, out, spec, batch_rows=400)
    written = pq.read_table(out).column("features").combine_chunks().to_numpy_ndarray()
    np.testing.assert_array_equal(written, got)


def test_loader_takes_a_fitted_fill(tmp_path) -> None:
    from colbridge.io import loader

    path = _parquet(TRAIN, tmp_path / "t.parquet", 1_000)
    batches = loader(path, columns=["x"], fill_null={"x": "median"}, minmax=["x"],
                     dtype="float64", batch_size=1_000, shuffle=False, output="numpy")  # fmt: skip
    got = np.concatenate([b["features"] for b in batches])
    pipe = make_pipeline(SimpleImputer(strategy="median"), MinMaxScaler())
    np.testing.assert_allclose(got, pipe.fit_transform(_nan(TRAIN["x"])), atol=1e-12)


def test_explain_names_the_fitted_fill() -> None:
    spec = FeatureSpec.from_dict({"columns": {"x": {"fill_null": "median", "scale": "zscore"}}})
    text = explain_fuse(TRAIN, spec)
    median = float(np.nanmedian(_nan(TRAIN["x"])))
    assert f"x: nulls filled with the fitted median {median!r}, before its other" in text


SPEC = {"columns": {"x": {"fill_null": "mean", "scale": "zscore"}}}


def test_stats_file_round_trip(tmp_path) -> None:
    spec = FeatureSpec.from_dict(SPEC)
    stats = fit_stats(TRAIN, spec)
    stats.save(tmp_path / "s.json")
    loaded = FeatureStats.load(tmp_path / "s.json")
    assert loaded.version == 4
    assert loaded.columns["x"]["fill_value"] == stats.columns["x"]["fill_value"]
    np.testing.assert_array_equal(
        transform_batch(TEST, spec, loaded).features, transform_batch(TEST, spec, stats).features
    )


def test_a_version_3_file_has_no_fill_value(tmp_path) -> None:
    data = fit_stats(TRAIN, FeatureSpec.from_dict(SPEC)).to_dict()
    del data["columns"]["x"]["fill_value"], data["columns"]["x"]["fill_strategy"]
    data["version"] = 3
    path = tmp_path / "v3.json"
    path.write_text(json.dumps(data))
    with pytest.raises(JobSpecError, match=r"has no `fill_value` for column `x`, which "
                                           r"`fill_null='mean'` needs"):  # fmt: skip
        fuse(TEST, tmp_path / "o.parquet", FeatureSpec.from_dict(SPEC), stats=path)
    assert not (tmp_path / "o.parquet").exists()
    # the same file still serves a constant fill, which needs no fill value
    constant = FeatureSpec.from_dict({"columns": {"x": {"fill_null": 0.0, "scale": "zscore"}}})
    assert transform_batch(TEST, constant, FeatureStats.load(path)).features.shape == (997, 1)
    # and on the command line: exit status 2, the statistic named
    test = _parquet(TEST, tmp_path / "t.parquet", 300)
    args = ["fuse", test, "-o", str(tmp_path / "o.parquet"), "--fill-null", "x=mean",
            "--zscore", "x", "--stats", str(path), "-q"]  # fmt: skip
    assert main(args) == 2


def test_missing_or_other_fill_statistic_is_refused(tmp_path) -> None:
    data = fit_stats(TRAIN, FeatureSpec.from_dict(SPEC)).to_dict()
    del data["columns"]["x"]["fill_value"]
    with pytest.raises(JobSpecError, match=r"has no `fill_value` for column `x`"):
        transform_batch(TEST, FeatureSpec.from_dict(SPEC), FeatureStats.from_dict(data))
    data = fit_stats(TRAIN, FeatureSpec.from_dict(SPEC)).to_dict()
    median = FeatureSpec.from_dict({"columns": {"x": {"fill_null": "median", "scale": "zscore"}}})
    with pytest.raises(JobSpecError, match=r"holds the `fill_null='mean'` value of column `x` but "
                                           r"the spec asks for 'median'"):  # fmt: skip
        transform_batch(TEST, median, FeatureStats.from_dict(data))


def test_errors() -> None:
    empty = pa.table({"x": pa.array([None, None, float("nan")], pa.float64())})
    spec = FeatureSpec.from_dict({"columns": {"x": {"fill_null": "median"}}})
    with pytest.raises(InvalidOperationError, match=r"column `x` has no value to fit "
                                                    r"`fill_null='median'` on"):  # fmt: skip
        fit_stats(empty, spec)
    with pytest.raises(ValueError, match=r"column `x` has no value to fit"):
        FeatureFusion(["x"], fill_null={"x": "mean"}, zscore=["x"]).fit(empty)
    with pytest.raises(JobSpecError, match=r"unknown `fill_null` strategy 'avg'"):
        FeatureSpec.from_dict({"columns": {"x": {"fill_null": "avg"}}})
    # a categorical column takes most_frequent (tests/features/test_feature_fill_categories.py)
    with pytest.raises(JobSpecError, match=r"encoded as one_hot: `fill_null='median'` "
                                           r"fills numeric columns only"):  # fmt: skip
        FeatureSpec.from_dict({"columns": {"c": {"fill_null": "median", "one_hot": True}}})
    with pytest.raises(JobSpecError, match=r"encoded as hash_buckets"):
        FeatureSpec.from_dict({"columns": {"c": {"fill_null": "mean", "hash_buckets": 4}}})
    with pytest.raises(JobSpecError, match=r"date parts, which are filled with a number only"):
        FeatureSpec.from_dict({"columns": {"t": {"fill_null": "median", "datetime": ["hour"]}}})
    strings = pa.table({"c": ["a", None, "a"]})
    spec = FeatureSpec.from_dict({"columns": {"c": {"fill_null": "most_frequent"}}})
    want = r"column `c` of type `string` cannot be filled with its most frequent value"
    with pytest.raises(UnsupportedTypeError, match=want):
        fit_stats(strings, spec)


def test_cli_fill_errors(tmp_path, capsys) -> None:
    data = _parquet(TRAIN, tmp_path / "in.parquet", 1_000)
    base = ["fuse", data, "-o", str(tmp_path / "o.parquet"), "-q"]
    assert main([*base, "--fill-null", "x=avg"]) == 2
    err = capsys.readouterr().err
    assert "--fill-null x: 'avg' is not a number or one of mean, median, most_frequent" in err
    assert main([*base, "--columns", "x", "--one-hot", "x", "--fill-null", "x=median"]) == 2
    assert "fills numeric columns only" in capsys.readouterr().err
    assert not (tmp_path / "o.parquet").exists()


# Generated columns: a few distinct values (ties for most_frequent), NaN and nulls anywhere.
cells = st.one_of(
    st.none(),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0]),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.just(float("nan")),
)


@settings(max_examples=80, deadline=None)
@given(
    train=st.lists(cells, min_size=1, max_size=50),
    test=st.lists(cells, max_size=20),
    strategy=st.sampled_from(STRATEGIES),
    batch_rows=st.integers(1, 17),
)
def test_fill_value_property(train: list, test: list, strategy: str, batch_rows: int) -> None:
    x = np.array([np.nan if v is None else v for v in train], dtype=np.float64)
    assume(not np.isnan(x).all())  # SimpleImputer drops a column with no value; we refuse it
    spec = FeatureSpec.from_dict({"columns": {"x": {"fill_null": strategy}}, "dtype": "float64"})
    stats = fit_stats(pa.table({"x": pa.array(train, pa.float64())}), spec, batch_rows=batch_rows)
    got = stats.columns["x"]["fill_value"]
    want = SimpleImputer(strategy=strategy).fit(x[:, None]).statistics_[0]
    if strategy == "mean":
        scale = np.nanmax(np.abs(x))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * scale)
    else:
        assert got == want  # NumPy's median, the smallest most frequent value: exactly
    # nulls get the fill value; a NaN (a value of an Arrow column) stays NaN
    out = transform_batch(pa.table({"x": pa.array(test, pa.float64())}), spec, stats)
    expected = [got if v is None else v for v in test]
    np.testing.assert_array_equal(out.features[:, 0], np.asarray(expected, dtype=np.float64))
