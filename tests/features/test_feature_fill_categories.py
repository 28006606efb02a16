"""`fill_null="most_frequent"` on categorical columns, against scikit-learn pipelines.

The oracle is ``make_pipeline(SimpleImputer(strategy="most_frequent"), encoder)`` on an
object array holding NaN for each null: the nulls become the most frequent category
(the smallest among ties), and the encoder (``OneHotEncoder``, ``OrdinalEncoder``,
``TargetEncoder``) is fitted on and applied to the filled column, so no null reaches it.
Inputs are strings, large strings, Arrow dictionaries, pandas categories and strings,
polars Categorical and String columns, fitted in batches and over Parquet row groups
whose dictionaries give the categories other codes.
"""

from __future__ import annotations

import json
import pickle
import warnings
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.impute import SimpleImputer
from sklearn.model_selection import PredefinedSplit
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, TargetEncoder

from colbridge.cli import main
from colbridge.errors import InvalidOperationError, JobSpecError, UnsupportedTypeError
from colbridge.io.encoders import NULL_ID, RARE_ID, folds_of, id_vocabulary
from colbridge.io.fuse import (
    FeatureSpec,
    FeatureStats,
    explain_fuse,
    fit_stats,
    iter_features,
    transform_batch,
)
from colbridge.ml import FeatureFusion
from tests.features.data import make_table, objects, sklearn_names

TRAIN = make_table(4_000, seed=31, null_rate=0.1)
# serving data: other nulls, and a category the fit never saw
TEST = make_table(1_200, seed=32, null_rate=0.1)
TEST = TEST.set_column(
    0, "c", pa.concat_arrays([TEST["c"].combine_chunks().slice(0, 1_190), pa.array(["new"] * 10)])
)


def _objects(column: Any) -> np.ndarray:
    """SimpleImputer's input: NaN, its default ``missing_values``, for a null."""
    return objects(column, np.nan)


def _quiet(step: Any, values: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # sklearn warns about unknown values
        return np.asarray(step.transform(values))


def _dictionary(values: list[Any], dictionary: list[Any], index: pa.DataType) -> pa.Array:
    """``values`` as an Arrow dictionary array whose dictionary is ``dictionary``, in that order."""
    idx = [None if v is None else dictionary.index(v) for v in values]
    return pa.DictionaryArray.from_arrays(pa.array(idx, index), pa.array(dictionary, pa.string()))


def _as_kind(column: pa.Array, kind: str) -> Any:
    """A one-column frame (or Arrow table) of ``kind`` holding ``column``'s values."""
    values = column.to_pylist()
    if kind == "string":
        return pa.table({"c": column})
    if kind == "large_string":
        return pa.table({"c": column.cast(pa.large_string())})
    if kind == "dictionary":
        return pa.table({"c": column.dictionary_encode()})
    if kind == "chunked_dictionary":
        # chunks whose dictionaries order the categories differently
        n = len(column)
        first = column.slice(0, n // 2).dictionary_encode()
        rest = column.slice(n // 2)
        order = sorted({v for v in rest.to_pylist() if v is not None}, reverse=True)
        second = _dictionary(rest.to_pylist(), order, pa.int32())
        assert first.dictionary.to_pylist() != second.dictionary.to_pylist()
        return pa.table({"c": pa.chunked_array([first, second])})
    if kind == "pandas_object":
        return pd.DataFrame({"c": pd.Series(values, dtype=object)})
    if kind == "pandas_category":
        return pd.DataFrame({"c": pd.Categorical(values)})
    if kind == "pandas_string":
        return pd.DataFrame({"c": pd.array(values, dtype="string")})
    if kind == "polars_string":
        return pl.DataFrame({"c": values}, schema={"c": pl.String})
    if kind == "polars_categorical":
        return pl.DataFrame({"c": values}, schema={"c": pl.Categorical})
    raise AssertionError(kind)


KINDS = [
    "string",
    "large_string",
    "dictionary",
    "chunked_dictionary",
    "pandas_object",
    "pandas_category",
    "pandas_string",
    "polars_string",
    "polars_categorical",
]

ONE_HOT_CASES = [
    {},
    {"min_frequency": 300},
    {"min_frequency": 0.05},
    {"max_categories": 4},
    {"min_frequency": 400, "handle_unknown": "infrequent_if_exist"},
]


#: a one-hot column filled with its most frequent category
ONE_HOT = {"columns": {"c": {"one_hot": True, "fill_null": "most_frequent"}}}


def _pipeline(encoder: Any) -> Any:
    return make_pipeline(SimpleImputer(strategy="most_frequent"), encoder)


# -- one-hot -------------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", ONE_HOT_CASES, ids=lambda c: str(c) or "plain")
@pytest.mark.parametrize("kind", KINDS)
def test_one_hot_after_the_fill_matches_the_pipeline(kind: str, cfg: dict) -> None:
    handle = cfg.get("handle_unknown", "ignore")
    ff = FeatureFusion(
        ["c"],
        fill_null={"c": "most_frequent"},
        one_hot=["c"],
        min_frequency=cfg.get("min_frequency"),
        max_categories=cfg.get("max_categories"),
        handle_unknown=handle,
        dtype="float64",
    )
    got_train = ff.fit_transform(_as_kind(TRAIN["c"].combine_chunks(), kind))
    got_test = ff.transform(_as_kind(TEST["c"].combine_chunks(), kind))
    pipe = _pipeline(OneHotEncoder(sparse_output=False, **{**cfg, "handle_unknown": handle}))
    pipe.fit(_objects(TRAIN["c"]))
    imputer, ohe = pipe[0], pipe[-1]
    assert ff.stats_.columns["c"]["fill_value"] == imputer.statistics_[0] == "k00"
    np.testing.assert_array_equal(got_train, _quiet(pipe, _objects(TRAIN["c"])))
    np.testing.assert_array_equal(got_test, _quiet(pipe, _objects(TEST["c"])))
    # no null category: the encoder never saw a null
    assert list(ff.get_feature_names_out()) == sklearn_names(ohe)
    assert "c=<null>" not in ff.get_feature_names_out()
    # the fitted counts are those of the filled column (the nulls count as k00)
    filled = pipe[0].transform(_objects(TRAIN["c"]))[:, 0]
    cats, counts = np.unique(filled, return_counts=True)
    s = ff.stats_.columns["c"]
    assert s["categories"] == cats.tolist()
    assert s["counts"] == counts.tolist()
    assert s["rows"] == TRAIN.num_rows


def test_a_null_row_is_the_one_hot_of_the_most_frequent_category() -> None:
    spec = FeatureSpec.from_dict(
        {
            "columns": {"c": {"one_hot": True, "fill_null": "most_frequent", "indicator": True}},
            "dtype": "float64",
            "validity": True,
        }
    )
    stats = fit_stats(TRAIN, spec, batch_rows=500)
    fb = transform_batch(TEST, spec, stats)
    nulls = np.asarray(TEST["c"].is_null())
    k00 = fb.names.index("c=k00")
    assert nulls.any()
    np.testing.assert_array_equal(fb.features[nulls, k00], 1.0)
    assert (fb.features[nulls, : len(fb.names) - 1].sum(axis=1) == 1).all()
    assert fb.validity is not None
    assert fb.validity[nulls].all()
    # the indicator marks the rows that were null, as SimpleImputer(add_indicator=True)
    added = SimpleImputer(strategy="most_frequent", add_indicator=True).fit(_objects(TRAIN["c"]))
    np.testing.assert_array_equal(
        fb.features[:, -1], added.transform(_objects(TEST["c"]))[:, 1].astype(float)
    )
    assert fb.names[-1] == "c_missing"


def test_handle_unknown_error_is_not_raised_by_a_filled_null() -> None:
    ff = FeatureFusion(
        ["c"],
        fill_null={"c": "most_frequent"},
        one_hot=["c"],
        handle_unknown="error",
        dtype="float64",
    )
    ff.fit(TRAIN)
    serving = TEST.slice(0, 1_190)  # nulls, but no unseen category
    assert serving["c"].null_count
    pipe = _pipeline(OneHotEncoder(sparse_output=False, handle_unknown="error"))
    pipe.fit(_objects(TRAIN["c"]))
    np.testing.assert_array_equal(ff.transform(serving), pipe.transform(_objects(serving["c"])))
    with pytest.raises(ValueError, match=r"column `c` has categories not seen when fitting: 'new'"):
        ff.transform(TEST)


def test_listed_categories_are_filled_in_one_pass() -> None:
    # no counts to fit: the fill value is fitted in the single pass
    spec = FeatureSpec.from_dict(
        {
            "columns": {
                "c": {
                    "one_hot": True,
                    "categories": ["k00", "k01", "k02"],
                    "fill_null": "most_frequent",
                }
            },
            "dtype": "float64",
        }
    )
    stats = fit_stats(TRAIN, spec)
    pipe = _pipeline(
        OneHotEncoder(
            sparse_output=False, categories=[["k00", "k01", "k02"]], handle_unknown="ignore"
        )
    ).fit(_objects(TRAIN["c"]))
    got = transform_batch(TEST, spec, stats).features
    np.testing.assert_array_equal(got, _quiet(pipe, _objects(TEST["c"])))


# -- ties ----------------------------------------------------------------------------------------

TIES = [
    (["b", "a", None, "b", "a", "c"], "a"),
    (["z", "é", None, "é", "z", "Z", "Z", None], "Z"),  # code-point order: Z < z < é
    (["ab", "b", "a", "b", "ab", "a", None], "a"),
    (["x"] * 3 + [None] * 5 + ["w"] * 3, "w"),
]


@pytest.mark.parametrize("dictionary", [False, True])
@pytest.mark.parametrize(("values", "winner"), TIES)
def test_ties_take_the_smallest_category(values: list, winner: str, dictionary: bool) -> None:
    column = pa.array(values)
    table = pa.table({"c": column.dictionary_encode() if dictionary else column})
    spec = FeatureSpec.from_dict(ONE_HOT)
    for batch_rows in (1, 2, 3, len(values)):
        assert fit_stats(table, spec, batch_rows=batch_rows).columns["c"]["fill_value"] == winner
    assert SimpleImputer(strategy="most_frequent").fit(_objects(column)).statistics_[0] == winner


def test_integer_categories() -> None:
    values = [7, 3, None, 3, 7, 12, None, 12, 1]  # 3, 7 and 12 twice each
    table = pa.table({"c": pa.array(values, pa.int16())})
    ff = FeatureFusion(["c"], fill_null={"c": "most_frequent"}, one_hot=["c"], dtype="float64")
    got = ff.fit_transform(table)
    fill = ff.stats_.columns["c"]["fill_value"]
    assert fill == 3
    assert isinstance(fill, int)  # a category, not a float
    x = np.array([np.nan if v is None else v for v in values], dtype=np.float64)[:, None]
    pipe = _pipeline(OneHotEncoder(sparse_output=False)).fit(x)
    assert pipe[0].statistics_[0] == 3.0
    np.testing.assert_array_equal(got, pipe.transform(x))
    assert list(ff.get_feature_names_out()) == ["c=1", "c=3", "c=7", "c=12"]


# -- batches and Parquet row groups whose dictionaries differ ------------------------------------

# per row group: (values, dictionary order); "a" never wins a row group (b, c, d do) but
# wins overall: 9 rows, and its count becomes 12 with the 3 nulls it fills
ROW_GROUPS = [
    (["b", "b", "b", "b", "a", None, "a", "a"], ["b", "a"]),
    (["c", "a", "c", "c", "a", "c", "a"], ["c", "a"]),
    ([None, "d", "a", "d", "d", "d", "a", "a", "c", None], ["d", "c", "a"]),
    (["b", "b", "c", "c"], ["c", "b"]),
]


def _row_groups(path: Any) -> pa.Table:
    tables = [pa.table({"c": _dictionary(v, d, pa.int32())}) for v, d in ROW_GROUPS]
    with pq.ParquetWriter(path, tables[0].schema) as writer:
        for table in tables:
            writer.write_table(table)
    return pa.concat_tables([t.cast(pa.schema({"c": pa.string()})) for t in tables])


def test_parquet_row_groups_with_other_codes(tmp_path) -> None:
    path = tmp_path / "groups.parquet"
    whole = _row_groups(path)
    f = pq.ParquetFile(path)
    assert f.metadata.num_row_groups == len(ROW_GROUPS)
    dictionaries = [
        f.read_row_group(i)["c"].chunk(0).dictionary.to_pylist()
        for i in range(f.metadata.num_row_groups)
    ]
    assert dictionaries == [d for _, d in ROW_GROUPS]  # "a" has codes 1, 1, 2 and none
    assert pa.types.is_dictionary(f.schema_arrow.field("c").type)
    pipe = _pipeline(OneHotEncoder(sparse_output=False)).fit(_objects(whole["c"]))
    want = pipe.transform(_objects(whole["c"]))
    assert pipe[0].statistics_[0] == "a"
    spec = FeatureSpec.from_dict(
        {"columns": {"c": {"one_hot": True, "fill_null": "most_frequent"}}, "dtype": "float64"}
    )
    for batch_rows in (3, 7, 8, 100):  # batches within, across and over the row groups
        stats = fit_stats(str(path), spec, batch_rows=batch_rows)
        assert stats.columns["c"]["fill_value"] == "a"
        assert stats.columns["c"]["categories"] == ["a", "b", "c", "d"]
        assert stats.columns["c"]["counts"] == [12, 6, 7, 4]
        got = np.concatenate(
            [b.features for b in iter_features(str(path), spec, batch_rows=batch_rows)]
        )
        np.testing.assert_array_equal(got, want)


def test_a_tie_decided_only_by_summing_the_batches(tmp_path) -> None:
    # "b" wins the first row group, "c" the second; summed they tie, and "b" is smaller
    groups = [(["b", "b", "b", "c", None], ["c", "b"]), (["c", "c", "c", "b", None], ["b", "c"])]
    path = tmp_path / "tie.parquet"
    tables = [pa.table({"c": _dictionary(v, d, pa.int8())}) for v, d in groups]
    with pq.ParquetWriter(path, tables[0].schema) as writer:
        for table in tables:
            writer.write_table(table)
    values = [v for vs, _ in groups for v in vs]
    spec = FeatureSpec.from_dict({"columns": {"c": {"ids": True, "fill_null": "most_frequent"}}})
    stats = fit_stats(str(path), spec, batch_rows=5)
    assert stats.columns["c"]["fill_value"] == "b"
    assert SimpleImputer(strategy="most_frequent").fit(_objects(values)).statistics_[0] == "b"
    # the filled nulls count for "b": it gets the first id
    assert stats.columns["c"]["counts"] == [6, 4]


def test_dictionary_with_a_null_entry_and_a_full_index_type() -> None:
    # a row pointing at a null dictionary entry is null too; 128 entries fill int8 indices,
    # so the appended fill category needs a wider index
    dictionary = pa.array([f"v{i:03d}" for i in range(127)] + [None])
    indices = pa.array([0, 0, 127, None, 5, 0, 127, 126], pa.int8())
    column = pa.DictionaryArray.from_arrays(indices, dictionary)
    table = pa.table({"c": column})
    spec = FeatureSpec.from_dict(
        {"columns": {"c": {"one_hot": True, "fill_null": "most_frequent"}}, "dtype": "float64"}
    )
    stats = fit_stats(table, spec)
    values = _objects(column.dictionary_decode())
    pipe = _pipeline(OneHotEncoder(sparse_output=False)).fit(values)
    assert stats.columns["c"]["fill_value"] == "v000"
    np.testing.assert_array_equal(
        transform_batch(table, spec, stats).features, pipe.transform(values)
    )


# -- ids, hashed ids, target encoding ------------------------------------------------------------


@pytest.mark.parametrize(
    "cfg", [{}, {"min_frequency": 300}, {"max_categories": 5}], ids=lambda c: str(c) or "plain"
)
@pytest.mark.parametrize("kind", ["string", "dictionary", "polars_categorical", "pandas_category"])
def test_ids_after_the_fill_match_the_ordinal_encoder(kind: str, cfg: dict) -> None:
    ff = FeatureFusion(["c"], fill_null={"c": "most_frequent"}, ids=["c"], dtype="int64", **cfg)
    ff.fit(_as_kind(TRAIN["c"].combine_chunks(), kind))
    got = ff.transform(_as_kind(TEST["c"].combine_chunks(), kind))[:, 0]
    assert not (got == NULL_ID).any()  # no null reaches the encoder
    pipe = _pipeline(OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1))
    pipe.fit(_objects(TRAIN["c"]))
    ordinal = _quiet(pipe, _objects(TEST["c"]))[:, 0].astype(int)
    categories = pipe[-1].categories_[0]
    # the id vocabulary is that of the filled column: by falling count, ties ascending
    filled = pipe[0].transform(_objects(TRAIN["c"]))[:, 0]
    cats, counts = np.unique(filled, return_counts=True)
    vocab = id_vocabulary(
        list(cats), list(counts), len(filled), cfg.get("min_frequency"), cfg.get("max_categories")
    )
    assert vocab[0] == "k00"
    # each row's id names the category the ordinal code names (or the rare/unseen id)
    named = np.array([vocab[i - 2] if i >= 2 else None for i in got], dtype=object)
    want = np.array([categories[i] if i >= 0 else None for i in ordinal], dtype=object)
    in_vocab = np.isin(want.astype(str), np.array(vocab, dtype=str))
    np.testing.assert_array_equal(named[in_vocab], want[in_vocab])
    np.testing.assert_array_equal(got[~in_vocab], RARE_ID)


def test_hashed_ids_hash_the_fill_category() -> None:
    spec = FeatureSpec.from_dict(
        {"columns": {"c": {"hash_buckets": 64, "fill_null": "most_frequent"}}, "dtype": "int64"}
    )
    stats = fit_stats(TRAIN, spec)
    got = transform_batch(TEST, spec, stats).features[:, 0]
    # as if the value had been present: the hashed ids of the column SimpleImputer fills
    imputer = SimpleImputer(strategy="most_frequent").fit(_objects(TRAIN["c"]))
    filled = pa.table({"c": pa.array(imputer.transform(_objects(TEST["c"]))[:, 0].tolist())})
    plain = FeatureSpec.from_dict({"columns": {"c": {"hash_buckets": 64}}, "dtype": "int64"})
    want = transform_batch(filled, plain, FeatureStats()).features[:, 0]
    np.testing.assert_array_equal(got, want)
    assert not (got == NULL_ID).any()


@pytest.mark.parametrize("smoothing", ["auto", 3.0])
@pytest.mark.parametrize("kind", ["string", "dictionary", "polars_categorical", "pandas_object"])
def test_target_encoding_after_the_fill_matches_the_pipeline(kind: str, smoothing: Any) -> None:
    y = TRAIN["y"].to_numpy()
    ff = FeatureFusion(
        ["c"],
        fill_null={"c": "most_frequent"},
        target_encode=["c"],
        folds=4,
        seed=3,
        smoothing=smoothing,
        dtype="float64",
    )
    oof = ff.fit_transform(_as_kind(TRAIN["c"].combine_chunks(), kind), y)
    te = TargetEncoder(
        cv=PredefinedSplit(folds_of(0, len(y), 4, 3)), smooth=smoothing, target_type="continuous"
    )
    imputer = SimpleImputer(strategy="most_frequent").fit(_objects(TRAIN["c"]))
    want = te.fit_transform(imputer.transform(_objects(TRAIN["c"])), y)[:, 0]
    assert "k00" in list(te.categories_[0])
    assert not any(v is None or v != v for v in te.categories_[0])
    np.testing.assert_allclose(oof[:, 0], want, rtol=1e-9)
    served = ff.transform(_as_kind(TEST["c"].combine_chunks(), kind))[:, 0]
    np.testing.assert_allclose(
        served, te.transform(imputer.transform(_objects(TEST["c"])))[:, 0], rtol=1e-9
    )
    assert None not in ff.stats_.columns["c"]["categories"]


# -- the statistics file, the command line, FeatureFusion ----------------------------------------


def _parquet(table: pa.Table, path: Any, rows: int) -> str:
    pq.write_table(table, path, row_group_size=rows)
    assert pq.ParquetFile(path).metadata.num_row_groups > 2
    return str(path)


def test_cli_saved_statistics_serve_new_data(tmp_path) -> None:
    train = TRAIN.append_column("d", TRAIN["c"].combine_chunks().dictionary_encode())
    test = TEST.append_column("d", TEST["c"].combine_chunks().dictionary_encode())
    train_path = _parquet(train, tmp_path / "train.parquet", 900)
    test_path = _parquet(test, tmp_path / "test.parquet", 300)
    flags = [
        "--columns",
        "c,d",
        "--one-hot",
        "c",
        "--min-frequency",
        "150",
        "--fill-null",
        "c=most_frequent",
        "--ids",
        "d",
        "--fill-null",
        "d=most_frequent",
        "--dtype",
        "float64",
        "--batch-rows",
        "700",
        "-q",
    ]
    out, stats = tmp_path / "f.parquet", tmp_path / "stats.json"
    assert main(["fuse", train_path, "-o", str(out), *flags, "--save-stats", str(stats)]) == 0
    data = json.loads(stats.read_text())
    assert data["version"] == 4
    for name in ("c", "d"):
        assert data["columns"][name]["fill_value"] == "k00"
        assert data["columns"][name]["fill_strategy"] == "most_frequent"
        assert None not in data["columns"][name]["categories"]
    served = tmp_path / "served.parquet"
    assert main(["fuse", test_path, "-o", str(served), *flags, "--stats", str(stats)]) == 0
    cli = pq.read_table(served).column("features").combine_chunks().to_numpy_ndarray()
    pipe = _pipeline(
        OneHotEncoder(sparse_output=False, min_frequency=150, handle_unknown="ignore")
    ).fit(_objects(train["c"]))
    width = len(pipe[-1].get_feature_names_out())
    np.testing.assert_array_equal(cli[:, :width], _quiet(pipe, _objects(test["c"])))
    # the same statistics read back in Python and by FeatureFusion apply the same fill
    ff = FeatureFusion(
        ["c", "d"],
        one_hot=["c"],
        ids=["d"],
        min_frequency=150,
        fill_null={"c": "most_frequent", "d": "most_frequent"},
        dtype="float64",
    )
    from_file = FeatureFusion(**{**ff.get_params(), "stats": str(stats)}).fit(test)
    np.testing.assert_array_equal(from_file.transform(test), cli)
    loaded = FeatureStats.load(stats)
    np.testing.assert_array_equal(ff.fit(train).transform(test), cli)
    np.testing.assert_array_equal(transform_batch(test, from_file.spec_, loaded).features, cli)
    # the id of a null is that of k00 (2: the most frequent), never the null id
    nulls = np.asarray(test["d"].is_null())
    np.testing.assert_array_equal(cli[nulls, -1], 2.0)
    # the training matrix is the pipeline's too
    fitted = pq.read_table(out).column("features").combine_chunks().to_numpy_ndarray()
    np.testing.assert_array_equal(fitted[:, :width], pipe.transform(_objects(train["c"])))


def test_feature_fusion_round_trips_pickles_and_stats(tmp_path) -> None:
    ff = FeatureFusion(
        ["c", "x"],
        fill_null={"c": "most_frequent", "x": "median"},
        one_hot=["c"],
        zscore=["x"],
        dtype="float64",
    )
    want = ff.fit(pl.from_arrow(TRAIN)).transform(pl.from_arrow(TEST))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(ff)).transform(TEST), want)
    ff.save_stats(tmp_path / "s.json")
    served = FeatureFusion(**{**ff.get_params(), "stats": str(tmp_path / "s.json")}).fit(TEST)
    np.testing.assert_array_equal(served.transform(TEST.to_pandas()), want)
    assert served.stats_.columns["c"]["fill_value"] == "k00"


def test_explain_names_the_category_fill() -> None:
    spec = FeatureSpec.from_dict(ONE_HOT)
    text = explain_fuse(TRAIN, spec)
    assert "c: nulls filled with the fitted most frequent 'k00', before its encoding" in text
    assert "null: filled with 'k00' first" in text


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "encoding", [{"one_hot": True}, {"ids": True}, {"hash_buckets": 8}, {"target_encode": True}]
)
def test_an_all_null_column_is_refused_naming_it(encoding: dict) -> None:
    for column in (
        pa.nulls(5, pa.string()),
        pa.nulls(5, pa.string()).dictionary_encode(),
        pa.array([], pa.string()),
    ):
        table = pa.table({"c": column, "y": pa.array([1.0] * len(column))})
        spec = FeatureSpec.from_dict(
            {"columns": {"c": {"fill_null": "most_frequent", **encoding}}, "target": "y"}
        )
        want = r"column `c` has no category to fit `fill_null='most_frequent'` on"
        with pytest.raises(InvalidOperationError, match=want):
            fit_stats(table, spec)


def test_refusals() -> None:
    # a number or mean/median still does not fill a categorical column
    for fill in ("mean", "median"):
        want = r"fills numeric columns only; a categorical column is filled with its most frequent"
        with pytest.raises(JobSpecError, match=want):
            FeatureSpec.from_dict({"columns": {"c": {"fill_null": fill, "one_hot": True}}})
    with pytest.raises(JobSpecError, match=r"cannot also be scaled, clipped, filled with a number"):
        FeatureSpec.from_dict({"columns": {"c": {"fill_null": 0, "ids": True}}})
    # a string column with no encoding has no number to be filled as
    spec = FeatureSpec.from_dict({"columns": {"c": {"fill_null": "most_frequent"}}})
    want = (
        r"column `c` of type `string` cannot be filled with its most frequent value as a "
        r"number: a categorical column needs an encoding"
    )
    with pytest.raises(UnsupportedTypeError, match=want):
        fit_stats(TRAIN, spec)
    # a file without the fill value, or with one of another type
    ohe = FeatureSpec.from_dict(ONE_HOT)
    data = fit_stats(TRAIN, ohe).to_dict()
    del data["columns"]["c"]["fill_value"]
    with pytest.raises(JobSpecError, match=r"has no `fill_value` for column `c`"):
        transform_batch(TEST, ohe, FeatureStats.from_dict(data))
    data["columns"]["c"]["fill_value"] = "k00"
    ints = pa.table({"c": pa.array([1, None, 2])})
    want = r"column `c` of type `int64` cannot be filled with its fitted most frequent category"
    with pytest.raises(JobSpecError, match=want):
        transform_batch(ints, ohe, FeatureStats.from_dict(data))


# -- property: any column, any batches -----------------------------------------------------------

cells = st.one_of(st.none(), st.sampled_from(["a", "b", "B", "ab", "é", ""]))


@settings(max_examples=60, deadline=None)
@given(
    train=st.lists(cells, min_size=1, max_size=40),
    test=st.lists(cells, max_size=15),
    batch_rows=st.integers(1, 13),
    kind=st.sampled_from(["string", "large_string", "dictionary"]),
)
def test_property_matches_the_pipeline(train: list, test: list, batch_rows: int, kind: str) -> None:
    assume(any(v is not None for v in train))  # an all-null column is refused (tested above)

    def table(values: list) -> pa.Table:
        column = pa.array(values, pa.string())
        if kind == "large_string":
            column = column.cast(pa.large_string())
        if kind == "dictionary":
            # per batch: its own dictionary, in reverse order of first appearance
            chunks = []
            for i in range(0, len(values), batch_rows):
                part = values[i : i + batch_rows]
                seen = list(dict.fromkeys(v for v in part if v is not None))[::-1]
                chunks.append(_dictionary(part, seen, pa.int32()))
            return pa.table({"c": pa.chunked_array(chunks, pa.dictionary(pa.int32(), pa.string()))})
        return pa.table({"c": column})

    spec = FeatureSpec.from_dict(
        {"columns": {"c": {"one_hot": True, "fill_null": "most_frequent"}}, "dtype": "float64"}
    )
    stats = fit_stats(table(train), spec, batch_rows=batch_rows)
    pipe = _pipeline(OneHotEncoder(sparse_output=False, handle_unknown="ignore"))
    pipe.fit(_objects(train))
    assert stats.columns["c"]["fill_value"] == pipe[0].statistics_[0]
    got = transform_batch(table(test), spec, stats)
    assert got.names == sklearn_names(pipe[-1])
    if test:
        np.testing.assert_array_equal(got.features, _quiet(pipe, _objects(test)))
