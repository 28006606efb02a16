"""A null is a category of its own in one-hot and target encoding, as in scikit-learn.

The oracles are scikit-learn's ``OneHotEncoder`` and ``TargetEncoder`` fitted on an
object array holding ``None`` for each null. Statistics files of version 2 keep their
old meaning (a null one-hot value is an all-zero block, a null target-encoded value
the target mean).
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.model_selection import PredefinedSplit
from sklearn.preprocessing import OneHotEncoder, TargetEncoder

from colbridge.cli import main
from colbridge.errors import InvalidOperationError
from colbridge.io.encoders import folds_of
from colbridge.io.fuse import (
    FeatureSpec,
    FeatureStats,
    explain_fuse,
    fit_stats,
    transform_batch,
)
from colbridge.ml import FeatureFusion
from tests.features.data import as_type, make_table, matrix, objects, sklearn_names

TRAIN = make_table(5_000, seed=21, null_rate=0.08)
TEST = make_table(1_500, seed=22, null_rate=0.08)


def _ohe_spec(**cfg: Any) -> FeatureSpec:
    return FeatureSpec.from_dict(
        {"columns": {"c": {"one_hot": True, **cfg}}, "dtype": "float64", "validity": True}
    )


def _sklearn_transform(ohe: OneHotEncoder, values: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # sklearn warns about unknown values
        return np.asarray(ohe.transform(values))


ONE_HOT_CASES = [
    {},
    {"min_frequency": 300},
    {"min_frequency": 0.05},
    {"max_categories": 4},
    {"min_frequency": 500, "handle_unknown": "infrequent_if_exist"},  # null is infrequent
]


@pytest.mark.parametrize("cfg", ONE_HOT_CASES, ids=lambda c: str(c) or "plain")
@pytest.mark.parametrize(
    "kind", ["string", "large_string", "dictionary", "int", "chunked", "sliced"]
)
def test_one_hot_null_category_matches_sklearn(cfg: dict, kind: str) -> None:
    train_c = as_type(TRAIN.column("c").combine_chunks(), kind)
    test_c = as_type(TEST.column("c").combine_chunks(), kind)
    spec = _ohe_spec(**cfg)
    stats = fit_stats(pa.table({"c": train_c}), spec, batch_rows=700)
    fb = transform_batch(pa.table({"c": test_c}), spec, stats)
    ohe = OneHotEncoder(sparse_output=False, **cfg).fit(objects(train_c))
    assert ohe.categories_[0][-1] is None  # the oracle sees the null as a category
    np.testing.assert_array_equal(fb.features, _sklearn_transform(ohe, objects(test_c)))
    assert fb.names == sklearn_names(ohe)
    # every row now has a value: the null ones are valid too
    assert fb.validity is not None
    assert fb.validity.all()
    # fitting in batches gives the same matrix as one pass over the whole column
    whole, _ = matrix(pa.table({"c": train_c}), spec)
    batched, _ = matrix(pa.table({"c": train_c}), spec, batch_rows=333)
    np.testing.assert_array_equal(whole, batched)


def test_null_can_be_an_infrequent_category() -> None:
    table = make_table(3_000, seed=23, null_rate=0.02)  # ~60 nulls
    spec = _ohe_spec(min_frequency=100)
    got, names = matrix(table, spec)
    assert "c=<null>" not in names
    nulls = np.asarray(table.column("c").is_null())
    assert got[nulls, names.index("c=<infrequent>")].all()
    ohe = OneHotEncoder(sparse_output=False, min_frequency=100).fit(objects(table["c"]))
    assert None in list(ohe.infrequent_categories_[0])
    np.testing.assert_array_equal(got, ohe.transform(objects(table["c"])))


@pytest.mark.parametrize("handle", ["ignore", "infrequent_if_exist"])
def test_null_unseen_when_fitting_is_an_unknown_value(handle: str) -> None:
    train = TRAIN.filter(pc.is_valid(TRAIN["c"]))
    spec = _ohe_spec(min_frequency=200, handle_unknown=handle)
    stats = fit_stats(train, spec)
    assert None not in stats.columns["c"]["categories"]
    fb = transform_batch(TEST, spec, stats)
    ohe = OneHotEncoder(sparse_output=False, min_frequency=200, handle_unknown=handle)
    ohe.fit(objects(train["c"]))
    np.testing.assert_array_equal(fb.features, _sklearn_transform(ohe, objects(TEST["c"])))
    nulls = np.asarray(TEST["c"].is_null())
    assert nulls.any()
    if handle == "ignore":  # all-zero, and invalid in the validity matrix
        assert (fb.features[nulls] == 0).all()
        assert fb.validity is not None
        assert not fb.validity[nulls].any()


def test_null_unseen_when_fitting_with_handle_unknown_error() -> None:
    train = TRAIN.filter(pc.is_valid(TRAIN["c"]))
    spec = _ohe_spec(handle_unknown="error")
    stats = fit_stats(train, spec)
    ohe = OneHotEncoder(sparse_output=False, handle_unknown="error").fit(objects(train["c"]))
    with pytest.raises(ValueError, match="unknown categories"):
        ohe.transform(objects(TEST["c"]))
    with pytest.raises(InvalidOperationError, match=r"column `c` has categories not seen .*null"):
        transform_batch(TEST, spec, stats)
    # a batch without nulls passes, as in scikit-learn
    transform_batch(TEST.filter(pc.is_valid(TEST["c"])), spec, stats)


def test_dictionary_with_a_null_entry() -> None:
    # a row pointing at a null dictionary entry is null, like a null index
    dictionary = pa.array(["b", None, "a"])
    indices = pa.array([0, 1, None, 2, 0, 1, 2, 2], type=pa.int32())
    column = pa.DictionaryArray.from_arrays(indices, dictionary)
    table = pa.table({"c": column})
    got, names = matrix(table, _ohe_spec())
    values = objects(column.dictionary_decode())
    ohe = OneHotEncoder(sparse_output=False).fit(values)
    assert names == ["c=a", "c=b", "c=<null>"]
    np.testing.assert_array_equal(got, ohe.transform(values))


def test_listed_categories_may_name_the_null() -> None:
    listed = FeatureSpec.from_dict(
        {"columns": {"c": {"one_hot": True, "categories": ["k00", None]}}, "dtype": "float64"}
    )
    fb = transform_batch(TEST, listed, FeatureStats())
    assert fb.names == ["c=k00", "c=<null>"]
    ohe = OneHotEncoder(sparse_output=False, categories=[["k00", None]], handle_unknown="ignore")
    values = objects(TEST["c"])
    np.testing.assert_array_equal(fb.features, _sklearn_transform(ohe.fit(values), values))


@pytest.mark.parametrize("kind", ["pyarrow", "polars", "pandas"])
def test_feature_fusion_one_hot_null_category(kind: str) -> None:
    frames = {
        "pyarrow": lambda t: t,
        "polars": pl.from_arrow,
        "pandas": lambda t: t.to_pandas(),
    }
    ff = FeatureFusion(["x", "c"], fill_null={"x": 0.0}, one_hot=["c"], min_frequency=100,
                       handle_unknown="infrequent_if_exist", dtype="float64")  # fmt: skip
    got = ff.fit(frames[kind](TRAIN)).transform(frames[kind](TEST))
    ohe = OneHotEncoder(sparse_output=False, min_frequency=100,
                        handle_unknown="infrequent_if_exist").fit(objects(TRAIN["c"]))  # fmt: skip
    np.testing.assert_array_equal(got[:, 1:], _sklearn_transform(ohe, objects(TEST["c"])))
    assert list(ff.get_feature_names_out())[1:] == sklearn_names(ohe)
    assert "c=<null>" in ff.get_feature_names_out()


def test_empty_frames() -> None:
    spec = _ohe_spec()
    empty = TRAIN.slice(0, 0)
    stats = fit_stats(empty, spec)
    assert stats.columns["c"] == {"categories": [], "counts": [], "rows": 0}
    assert transform_batch(empty, spec, fit_stats(TRAIN, spec)).features.shape == (0, 13)
    te = FeatureSpec.from_dict({"columns": {"c": {"target_encode": True}}, "target": "y"})
    assert transform_batch(empty, te, fit_stats(TRAIN, te)).features.shape == (0, 1)


# -- target encoding -----------------------------------------------------------------------------


@pytest.mark.parametrize("smoothing", ["auto", 3.0])
@pytest.mark.parametrize("kind", ["pyarrow", "polars", "pandas", "chunked", "int"])
def test_target_encoding_null_category_matches_sklearn(smoothing: Any, kind: str) -> None:
    X = TRAIN.select(["c"])
    if kind == "chunked":
        X = pa.table({"c": as_type(X["c"].combine_chunks(), "chunked")})
    if kind == "int":
        X = pa.table({"c": as_type(X["c"].combine_chunks(), "int")})
    y = TRAIN["y"].to_numpy()
    frame = {"polars": pl.from_arrow, "pandas": lambda t: t.to_pandas()}.get(kind, lambda t: t)
    ff = FeatureFusion(["c"], target_encode=["c"], folds=4, seed=3, smoothing=smoothing,
                       dtype="float64")  # fmt: skip
    oof = ff.fit_transform(frame(X), y)
    te = TargetEncoder(cv=PredefinedSplit(folds_of(0, len(y), 4, 3)), smooth=smoothing,
                       target_type="continuous")  # fmt: skip
    want = te.fit_transform(objects(X["c"]), y)[:, 0]
    assert te.categories_[0][-1] is None
    np.testing.assert_allclose(oof[:, 0], want, rtol=1e-9)
    test_c = TEST["c"] if kind != "int" else as_type(TEST["c"].combine_chunks(), "int")
    served = ff.transform(frame(pa.table({"c": test_c})))
    np.testing.assert_allclose(served[:, 0], te.transform(objects(test_c))[:, 0], rtol=1e-9)
    # the null rows are encoded with the null's own mean, not the target mean
    nulls = np.asarray(test_c.is_null())
    assert not np.allclose(served[nulls, 0], te.target_mean_)


def test_target_encoding_null_unseen_gets_the_mean() -> None:
    train = TRAIN.filter(pc.is_valid(TRAIN["c"]))
    ff = FeatureFusion(["c"], target_encode=["c"], target="y", dtype="float64").fit(train)
    te = TargetEncoder(target_type="continuous").fit(objects(train["c"]), train["y"].to_numpy())
    got = ff.transform(TEST.select(["c"]))[:, 0]
    np.testing.assert_allclose(got, te.transform(objects(TEST["c"]))[:, 0], rtol=1e-9)
    nulls = np.asarray(TEST["c"].is_null())
    np.testing.assert_allclose(got[nulls], te.target_mean_, rtol=1e-12)


# -- statistics files of version 2 keep their meaning --------------------------------------------

V2_SPEC = {
    "columns": {
        "c": {"one_hot": True, "min_frequency": 100, "handle_unknown": "infrequent_if_exist"},
        "c3": {"target_encode": True},
    },
    "target": "y",
    "folds": 3,
    "smoothing": 2.0,
    "dtype": "float64",
    "validity": True,
}


def _v2_file(tmp_path: Any) -> Any:
    """The statistics an older colbridge wrote: no null among the categories, version 2."""
    train = TRAIN.append_column("c3", TRAIN["c"])
    data = fit_stats(train, FeatureSpec.from_dict(V2_SPEC)).to_dict()
    assert data["version"] == 4  # a fit writes the latest version
    c = data["columns"]["c"]
    assert c["categories"][-1] is None
    c["categories"], c["counts"] = c["categories"][:-1], c["counts"][:-1]
    c3 = data["columns"]["c3"]
    assert c3["categories"][-1] is None
    c3["categories"] = c3["categories"][:-1]
    for key in ("fold_sums", "fold_counts", "fold_sumsq"):
        c3[key] = [row[:-1] for row in c3[key]]
    data["version"] = 2
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(data))
    return path


def test_version_2_file_keeps_the_all_zero_null(tmp_path) -> None:
    path = _v2_file(tmp_path)
    spec = FeatureSpec.from_dict(V2_SPEC)
    stats = FeatureStats.load(path)
    test = TEST.append_column("c3", TEST["c"])
    fb = transform_batch(test, spec, stats)
    nulls = np.asarray(TEST["c"].is_null())
    oh = [i for i, n in enumerate(fb.names) if n.startswith("c=")]
    assert "c=<null>" not in fb.names
    assert "c=<infrequent>" in fb.names
    # the old meaning: a null is all-zero and invalid, not sent to the infrequent column
    assert (fb.features[np.ix_(nulls, oh)] == 0).all()
    assert fb.validity is not None
    assert not fb.validity[np.ix_(nulls, oh)].any()
    # the other rows are as scikit-learn encodes them when fitted without the null rows
    # (min_frequency as a count is unaffected by the rows left out)
    known = TRAIN.filter(pc.is_valid(TRAIN["c"]))
    ohe = OneHotEncoder(sparse_output=False, min_frequency=100,
                        handle_unknown="infrequent_if_exist").fit(objects(known["c"]))  # fmt: skip
    want = _sklearn_transform(ohe, objects(TEST["c"].filter(pc.is_valid(TEST["c"]))))
    np.testing.assert_array_equal(fb.features[np.ix_(~nulls, oh)], want)
    # a null target-encoded value gets the target mean of all labelled rows
    y = TRAIN["y"].to_numpy()
    np.testing.assert_allclose(fb.features[nulls, -1], y.mean(), rtol=1e-12)
    # handle_unknown="error" does not fire on a null with a version-2 file
    strict = FeatureSpec.from_dict({"columns": {"c": {"one_hot": True, "handle_unknown": "error"}}})
    transform_batch(TEST, strict, stats)
    assert "null: all-zero (statistics file of version 1 or 2)" in explain_fuse(
        test, spec, stats=path
    )
    # saved again, the file stays at version 2 (so its meaning does not change)
    stats.save(tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text())["version"] == 2


def test_version_2_file_through_the_command_line(tmp_path) -> None:
    path = _v2_file(tmp_path)
    data = tmp_path / "test.parquet"
    test = TEST.append_column("c3", TEST["c"])
    pq.write_table(test, data)
    out = tmp_path / "f.parquet"
    flags = ["--columns", "c,c3", "--one-hot", "c", "--min-frequency", "100",
             "--handle-unknown", "infrequent_if_exist", "--target-encode", "c3", "--target", "y",
             "--folds", "3", "--smoothing", "2", "--dtype", "float64"]  # fmt: skip
    assert main(["fuse", str(data), "-o", str(out), *flags, "--stats", str(path), "-q"]) == 0
    got = pq.read_table(out).column("features").combine_chunks().to_numpy_ndarray()
    want = transform_batch(test, FeatureSpec.from_dict(V2_SPEC), FeatureStats.load(path))
    np.testing.assert_array_equal(got, want.features)


def test_fitted_file_has_the_null_last(tmp_path) -> None:
    ff = FeatureFusion(["c"], one_hot=["c"]).fit(TRAIN)
    ff.save_stats(tmp_path / "s.json")
    data = json.loads((tmp_path / "s.json").read_text())
    assert data["version"] >= 3  # the null category came with version 3
    cats = data["columns"]["c"]["categories"]
    assert cats[-1] is None
    assert None not in cats[:-1]
    assert data["columns"]["c"]["counts"][-1] == TRAIN["c"].null_count
    # read back (by the command line or `stats=`), it encodes the same
    again = FeatureFusion(["c"], one_hot=["c"], stats=str(tmp_path / "s.json")).fit(TEST)
    np.testing.assert_array_equal(again.transform(TEST), ff.transform(TEST))


# -- a property against scikit-learn ------------------------------------------------------------

values = st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c", "é", ""])),
                  min_size=1, max_size=40)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    train=values,
    test=values,
    min_frequency=st.one_of(st.none(), st.integers(1, 6)),
    max_categories=st.one_of(st.none(), st.integers(1, 5)),
    handle=st.sampled_from(["ignore", "infrequent_if_exist"]),
    dictionary=st.booleans(),
)
def test_one_hot_with_nulls_is_sklearns(
    train: list, test: list, min_frequency: int | None, max_categories: int | None,
    handle: str, dictionary: bool,
) -> None:  # fmt: skip
    cfg = {"min_frequency": min_frequency, "max_categories": max_categories,
           "handle_unknown": handle}  # fmt: skip
    tr = pa.array(train, type=pa.string())
    spec = _ohe_spec(**{k: v for k, v in cfg.items() if v is not None})
    stats = fit_stats(pa.table({"c": tr.dictionary_encode() if dictionary else tr}), spec)
    fb = transform_batch(pa.table({"c": pa.array(test, type=pa.string())}), spec, stats)
    ohe = OneHotEncoder(sparse_output=False, **cfg).fit(objects(tr))
    want = _sklearn_transform(ohe, objects(pa.array(test, type=pa.string())))
    np.testing.assert_array_equal(fb.features, want)
    assert fb.names == sklearn_names(ohe)


def test_pandas_nan_is_a_null() -> None:
    # pandas writes a missing string as NaN (or None): both reach colbridge as a null
    frame = pd.DataFrame({"c": ["a", np.nan, "b", None, "a"]})
    ff = FeatureFusion(["c"], one_hot=["c"], dtype="float64")
    got = ff.fit_transform(frame)
    assert list(ff.get_feature_names_out()) == ["c=a", "c=b", "c=<null>"]
    np.testing.assert_array_equal(got[:, 2], [0, 1, 0, 1, 0])
