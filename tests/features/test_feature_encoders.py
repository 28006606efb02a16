"""Each encoder of feature fusion against an independent oracle (scikit-learn or polars)."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from sklearn.model_selection import PredefinedSplit
from sklearn.preprocessing import (
    KBinsDiscretizer,
    MinMaxScaler,
    OneHotEncoder,
    RobustScaler,
    StandardScaler,
    TargetEncoder,
)

from colbridge.errors import InvalidOperationError, JobSpecError
from colbridge.io.encoders import NULL_ID, RARE_ID, fnv1a64, folds_of
from colbridge.io.fuse import FeatureSpec, fit_stats, transform_batch
from tests.features.data import as_type, fitted, make_table, matrix

N = 6_000
TRAIN = make_table(N, seed=1)
TEST = make_table(2_000, seed=2)


def _ohe_spec(**cfg: object) -> FeatureSpec:
    return FeatureSpec.from_dict({"columns": {"c": {"one_hot": True, **cfg}}, "dtype": "float64"})


ONE_HOT_CASES = [
    {},
    {"min_frequency": 300},
    {"min_frequency": 0.05},
    {"max_categories": 4},
    {"max_categories": 6},  # cuts between the tied k04 and k05
    {"max_categories": 1},
    {"min_frequency": 100, "max_categories": 8},
]


@pytest.mark.parametrize("cfg", ONE_HOT_CASES, ids=lambda c: str(c) or "plain")
@pytest.mark.parametrize("kind", ["string", "large_string", "dictionary", "chunked", "sliced"])
def test_one_hot_matches_sklearn(cfg: dict, kind: str) -> None:
    train = TRAIN.set_column(0, "c", as_type(TRAIN.column("c").combine_chunks(), kind))
    got, names = matrix(train, _ohe_spec(**cfg), batch_rows=1_000)
    c = TRAIN.column("c").to_numpy(zero_copy_only=False)[:, None]
    ohe = OneHotEncoder(sparse_output=False, **cfg).fit(c)
    np.testing.assert_array_equal(got, ohe.transform(c))
    want = [n.replace("x0_", "c=").replace("infrequent_sklearn", "<infrequent>")
            for n in ohe.get_feature_names_out()]  # fmt: skip
    assert names == want


def test_one_hot_max_categories_ties_keep_later_sorted() -> None:
    # k04 and k05 have equal weight: sklearn (and colbridge) keep the one that sorts last
    table = pa.table({"c": ["a", "a", "a", "b", "b", "c", "c", "d"]})
    got, names = matrix(table, _ohe_spec(max_categories=3))
    assert names == ["c=a", "c=c", "c=<infrequent>"]
    ohe = OneHotEncoder(sparse_output=False, max_categories=3).fit(
        table.column("c").to_numpy()[:, None]
    )
    np.testing.assert_array_equal(got, ohe.transform(table.column("c").to_numpy()[:, None]))


def test_one_hot_integer_categories() -> None:
    train = TRAIN.set_column(0, "c", as_type(TRAIN.column("c").combine_chunks(), "int"))
    got, names = matrix(train, _ohe_spec(min_frequency=200))
    c = train.column("c").to_numpy()[:, None]
    ohe = OneHotEncoder(sparse_output=False, min_frequency=200).fit(c)
    np.testing.assert_array_equal(got, ohe.transform(c))
    assert names[:2] == ["c=0", "c=1"]


@pytest.mark.parametrize("handle", ["ignore", "infrequent_if_exist"])
def test_one_hot_unseen_categories(handle: str) -> None:
    train = TRAIN.filter(pa.compute.not_equal(TRAIN.column("c"), "k03"))
    cfg = {"min_frequency": 200, "handle_unknown": handle}
    got, _ = fitted(train, _ohe_spec(**cfg), TEST)
    ohe = OneHotEncoder(sparse_output=False, **cfg).fit(
        train.column("c").to_numpy(zero_copy_only=False)[:, None]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # sklearn warns about unknown values
        want = ohe.transform(TEST.column("c").to_numpy(zero_copy_only=False)[:, None])
    np.testing.assert_array_equal(got, want)


def test_one_hot_unseen_error_names_column_and_values() -> None:
    train = TRAIN.filter(pa.compute.not_equal(TRAIN.column("c"), "k03"))
    spec = _ohe_spec(handle_unknown="error")
    with pytest.raises(InvalidOperationError, match=r"column `c` has categories not seen .*'k03'"):
        fitted(train, spec, TEST)


def _ids_oracle(train: pa.Table, test: pa.Table, min_count: int, cap: int | None) -> np.ndarray:
    counts = (
        pl.from_arrow(train).select("c").drop_nulls().group_by("c").len()
        .filter(pl.col("len") >= min_count)
        .sort(["len", "c"], descending=[True, False])
    )  # fmt: skip
    if cap is not None:
        counts = counts.head(cap)
    vocab = counts.with_row_index("id", offset=2).select("c", pl.col("id").cast(pl.Int64))
    out = (
        pl.from_arrow(test).select("c").with_row_index("row")
        .join(vocab, on="c", how="left").sort("row")
        .select(
            pl.when(pl.col("c").is_null()).then(NULL_ID)
            .otherwise(pl.col("id").fill_null(RARE_ID))
        )
    )  # fmt: skip
    return out.to_series().to_numpy()


@pytest.mark.parametrize(("min_count", "cap"), [(1, None), (150, None), (1, 5), (60, 7)])
@pytest.mark.parametrize("kind", ["string", "dictionary", "int", "chunked"])
def test_ids_match_polars(min_count: int, cap: int | None, kind: str) -> None:
    train = make_table(N, seed=4, null_rate=0.05)
    test = make_table(1_500, seed=5, null_rate=0.05).filter(
        pa.compute.invert(pa.compute.equal(make_table(1_500, seed=5, null_rate=0.05)["c"], "k00"))
    )
    train = train.filter(pa.compute.fill_null(pa.compute.not_equal(train["c"], "k02"), True))
    cfg: dict = {"ids": True, "min_frequency": min_count}
    if cap is not None:
        cfg["max_categories"] = cap
    spec = FeatureSpec.from_dict({"columns": {"c": cfg}, "dtype": "int64"})
    conv = {name: as_type(t.column("c").combine_chunks(), kind) for name, t in
            (("train", train), ("test", test))}  # fmt: skip
    got, names = fitted(
        train.set_column(0, "c", conv["train"]), spec, test.set_column(0, "c", conv["test"])
    )
    oracle_train, oracle_test = train, test
    if kind == "int":
        oracle_train = train.set_column(0, "c", conv["train"])
        oracle_test = test.set_column(0, "c", conv["test"])
    want = _ids_oracle(oracle_train, oracle_test, min_count, cap)
    np.testing.assert_array_equal(got[:, 0], want)
    assert names == ["c"]


def test_fnv1a64_reference_values() -> None:
    # published FNV-1a 64-bit test vectors
    got = fnv1a64(pa.array(["", "a", "foobar"]))
    assert [int(v) for v in got] == [0xCBF29CE484222325, 0xAF63DC4C8601EC8C, 0x85944171F73967E8]
    # integers hash as their decimal text; dictionaries and slices as their values
    assert (fnv1a64(pa.array([12, 7])) == fnv1a64(pa.array(["12", "7"]))).all()
    words = pa.array(["x", "foobar", "a", "foobar"])
    assert (fnv1a64(words.dictionary_encode()) == fnv1a64(words)).all()
    assert (fnv1a64(words.slice(1)) == fnv1a64(words)[1:]).all()


def test_hash_buckets() -> None:
    table = make_table(2_000, seed=6, null_rate=0.1)
    spec = FeatureSpec.from_dict({"columns": {"c": {"hash_buckets": 7}}, "dtype": "int64"})
    got, _ = matrix(table, spec, batch_rows=300)
    c = table.column("c").combine_chunks()
    want = (fnv1a64(c) % np.uint64(7)).astype(np.int64) + 2
    want[np.asarray(c.is_null())] = NULL_ID
    np.testing.assert_array_equal(got[:, 0], want)
    assert got[:, 0].min() >= 0
    assert got[:, 0].max() <= 8


def _te_spec(smoothing: object, folds: int = 5, seed: int = 0) -> FeatureSpec:
    return FeatureSpec.from_dict(
        {"columns": {"c": {"target_encode": True}}, "target": "y", "folds": folds,
         "smoothing": smoothing, "seed": seed, "dtype": "float64"}
    )  # fmt: skip


@pytest.mark.parametrize("smoothing", ["auto", 0.0, 4.0])
@pytest.mark.parametrize("folds", [2, 5])
def test_target_encoding_out_of_fold_matches_sklearn(smoothing: object, folds: int) -> None:
    got, _ = matrix(TRAIN, _te_spec(smoothing, folds, seed=3), batch_rows=777)
    c = TRAIN.column("c").to_numpy(zero_copy_only=False)[:, None]
    y = TRAIN.column("y").to_numpy()
    split = PredefinedSplit(folds_of(0, TRAIN.num_rows, folds, 3))
    te = TargetEncoder(smooth=smoothing, cv=split, target_type="continuous")
    np.testing.assert_allclose(got[:, 0], te.fit_transform(c, y)[:, 0], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("smoothing", ["auto", 2.5])
def test_target_encoding_serving_matches_sklearn(smoothing: object) -> None:
    test = make_table(1_000, seed=9)
    train = TRAIN.filter(pa.compute.not_equal(TRAIN.column("c"), "k07"))  # k07 unseen
    got, _ = fitted(train, _te_spec(smoothing), test)
    te = TargetEncoder(smooth=smoothing, target_type="continuous").fit(
        train.column("c").to_numpy(zero_copy_only=False)[:, None], train.column("y").to_numpy()
    )
    want = te.transform(test.column("c").to_numpy(zero_copy_only=False)[:, None])[:, 0]
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-9, atol=1e-9)


def test_target_encoding_folds_depend_on_seed_not_batches() -> None:
    a, _ = matrix(TRAIN, _te_spec("auto", seed=1), batch_rows=500)
    b, _ = matrix(TRAIN, _te_spec("auto", seed=1), batch_rows=4_000)
    c, _ = matrix(TRAIN, _te_spec("auto", seed=2), batch_rows=500)
    # batch sizes change only the order of the floating-point sums
    np.testing.assert_allclose(a, b, rtol=1e-12)
    assert not np.allclose(a, c)


def test_target_encoding_null_category_and_label() -> None:
    table = make_table(3_000, seed=10, null_rate=0.1)
    y = table.column("y").combine_chunks()
    y_masked = pa.array(y.to_numpy(), mask=np.arange(len(y)) % 17 == 0)
    table = table.set_column(3, "y", y_masked)
    stats = fit_stats(table, _te_spec(1.0))
    got = transform_batch(table, _te_spec(1.0), stats).features[:, 0]
    ok = ~np.asarray(y_masked.is_null())
    mean = y.to_numpy()[ok].mean()
    # the oracle sees only the rows whose label is known; a null category is a category
    c = table.column("c").to_numpy(zero_copy_only=False)
    keys = np.array(["<null>" if v is None else v for v in c], dtype=object)
    assert (keys == "<null>").any()
    # a float smoothing blends with the mean of all labelled rows, as colbridge does
    yv = y.to_numpy()
    sums = {k: (yv[ok & (keys == k)].sum(), (ok & (keys == k)).sum()) for k in set(keys)}
    want = np.array([(sums[k][0] + mean) / (sums[k][1] + 1.0) for k in keys])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_target_must_be_numeric() -> None:
    table = TRAIN.append_column("label", TRAIN.column("c"))
    spec = FeatureSpec.from_dict({"columns": {"c": {"target_encode": True}}, "target": "label"})
    with pytest.raises(Exception, match=r"target column `label` has type `string`"):
        fit_stats(table, spec)
    with pytest.raises(JobSpecError, match="no target is given"):
        FeatureSpec.from_dict({"columns": {"c": {"target_encode": True}}})


@pytest.mark.parametrize("batch_rows", [None, 700])
def test_scalers_match_sklearn(batch_rows: int | None) -> None:
    spec = FeatureSpec.from_dict(
        {"columns": {"x": {"scale": "zscore"}, "e": {"scale": "robust"}, "x2": {"scale": "minmax"},
                     "e2": {"scale": "robust", "log1p": True}}, "dtype": "float64"}
    )  # fmt: skip
    table = TRAIN.append_column("x2", TRAIN.column("x")).append_column("e2", TRAIN.column("e"))
    got, _ = matrix(table, spec, batch_rows=batch_rows)
    x = TRAIN.column("x").to_numpy()[:, None]
    e = TRAIN.column("e").to_numpy()[:, None]
    np.testing.assert_allclose(got[:, 0], StandardScaler().fit_transform(x)[:, 0], atol=1e-9)
    np.testing.assert_allclose(got[:, 1], RobustScaler().fit_transform(e)[:, 0], atol=1e-9)
    np.testing.assert_allclose(got[:, 2], MinMaxScaler().fit_transform(x)[:, 0], atol=1e-9)
    want = RobustScaler().fit_transform(np.log1p(e))[:, 0]
    np.testing.assert_allclose(got[:, 3], want, atol=1e-9)


def test_robust_with_nulls_matches_sklearn_nan() -> None:
    table = make_table(4_001, seed=11, null_rate=0.15)
    spec = FeatureSpec.from_dict({"columns": {"x": {"scale": "robust"}}, "dtype": "float64"})
    got, _ = matrix(table, spec, batch_rows=999)
    x = table.column("x").to_numpy(zero_copy_only=False).astype(float)[:, None]
    want = RobustScaler().fit_transform(x)[:, 0]  # NaN is ignored in fit, kept in transform
    nulls = np.isnan(want)
    assert nulls.any()
    np.testing.assert_allclose(got[~nulls, 0], want[~nulls], atol=1e-9)


@pytest.mark.parametrize("bins", [2, 5, 10])
@pytest.mark.parametrize("column", ["e", "x"])
def test_quantile_bins_match_kbins(bins: int, column: str) -> None:
    spec = FeatureSpec.from_dict({"columns": {column: {"quantile_bins": bins}}, "dtype": "float64"})
    got, _ = fitted(TRAIN, spec, TEST)
    kb = KBinsDiscretizer(n_bins=bins, strategy="quantile", encode="ordinal")
    kb.fit(TRAIN.column(column).to_numpy()[:, None])
    want = kb.transform(TEST.column(column).to_numpy()[:, None])[:, 0]
    np.testing.assert_array_equal(got[:, 0], want)


def test_quantile_bins_drop_narrow_bins_like_kbins() -> None:
    values = np.repeat([1.0, 2.0, 3.0], [700, 200, 100])
    table = pa.table({"v": values})
    spec = FeatureSpec.from_dict({"columns": {"v": {"quantile_bins": 5}}, "dtype": "float64"})
    got, _ = matrix(table, spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        kb = KBinsDiscretizer(n_bins=5, strategy="quantile", encode="ordinal")
        want = kb.fit_transform(values[:, None])[:, 0]
    np.testing.assert_array_equal(got[:, 0], want)


def test_log1p_and_indicator() -> None:
    table = make_table(2_000, seed=12, null_rate=0.1)
    spec = FeatureSpec.from_dict(
        {"columns": {"e": {"log1p": True, "indicator": True},
                     "x": {"fill_null": 0.0, "indicator": True},
                     "c": {"one_hot": True, "indicator": True}},
         "dtype": "float64", "validity": True}
    )  # fmt: skip
    got, names = matrix(table, spec, batch_rows=600)
    assert names[:4] == ["e", "e_missing", "x", "x_missing"]
    assert names[-1] == "c_missing"
    np.testing.assert_allclose(got[:, 0], np.log1p(table.column("e").to_numpy()))
    x_null = np.asarray(table.column("x").is_null())
    np.testing.assert_array_equal(got[:, 3], x_null.astype(float))
    np.testing.assert_array_equal(got[x_null, 2], 0.0)
    np.testing.assert_array_equal(got[:, -1], np.asarray(table.column("c").is_null()))


def test_indicator_counts_nan_as_missing() -> None:
    table = pa.table({"v": pa.array([1.0, float("nan"), None, 4.0])})
    spec = FeatureSpec.from_dict({"columns": {"v": {"indicator": True}}, "dtype": "float64"})
    got, _ = matrix(table, spec)
    np.testing.assert_array_equal(got[:, 1], [0, 1, 1, 0])


def test_empty_input_after_fit() -> None:
    spec = FeatureSpec.from_dict(
        {"columns": {"c": {"one_hot": True, "min_frequency": 100}, "x": {"scale": "robust"},
                     "c2": {"ids": True}, "c3": {"target_encode": True}, "e": {"quantile_bins": 4}},
         "target": "y", "dtype": "float32"}
    )  # fmt: skip
    table = TRAIN.append_column("c2", TRAIN["c"]).append_column("c3", TRAIN["c"])
    stats = fit_stats(table, spec)
    fb = transform_batch(table.slice(0, 0), spec, stats)
    assert fb.features.shape == (0, len(fb.names))


def test_fit_on_empty_input() -> None:
    spec = FeatureSpec.from_dict(
        {"columns": {"c": {"one_hot": True}, "x": {"scale": "robust"}, "c2": {"ids": True},
                     "e": {"quantile_bins": 4}}}
    )  # fmt: skip
    table = TRAIN.append_column("c2", TRAIN["c"]).slice(0, 0)
    stats = fit_stats(table, spec)
    assert stats.columns["c"]["categories"] == []
    assert stats.columns["e"]["bin_edges"] == []
    fb = transform_batch(TEST.append_column("c2", TEST["c"]), spec, stats)
    assert fb.names == ["x", "c2", "e"]
    assert (fb.features[:, 1] == RARE_ID).all()


def test_folds_are_splitmix64_of_the_position() -> None:
    def splitmix(start: int, rows: int, folds: int, seed: int) -> np.ndarray:
        x = np.arange(start, start + rows, dtype=np.uint64) + np.uint64((seed & 0xFFFFFFFF) << 32)
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
        return (x % np.uint64(folds)).astype(np.int64)

    for args in [(0, 1_000, 5, 0), (123, 777, 3, 7), (10**9, 100, 4, 2**31)]:
        np.testing.assert_array_equal(folds_of(*args), splitmix(*args))
    # a split at any row gives the same folds as one pass
    np.testing.assert_array_equal(
        np.concatenate([folds_of(0, 300, 5, 1), folds_of(300, 700, 5, 1)]), folds_of(0, 1_000, 5, 1)
    )
    assert np.bincount(folds_of(0, 100_000, 5, 0)).min() > 19_000


def _quantile_data(kind: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    if kind == "normal":
        return rng.normal(size=n)
    if kind == "ties":  # a handful of values: a bucket of one key all through
        return rng.integers(0, 4, n).astype(np.float64)
    if kind == "narrow":  # one top-level bucket holds everything: narrowed digit by digit
        return 100.0 + rng.random(n) * 1e-9
    if kind == "zeros":  # -0.0 and +0.0 among negatives and positives
        return np.where(rng.random(n) < 0.5, -0.0, 0.0) + np.where(rng.random(n) < 0.2,
                                                                  rng.normal(size=n), 0.0)
    return rng.normal(size=n) * 10.0 ** rng.integers(-300, 300, n)  # every exponent


@pytest.mark.parametrize("kind", ["normal", "ties", "narrow", "zeros", "wide"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 10, 101, 4_096, 99_999, 300_000, 600_001])
def test_linear_quantiles_equal_numpy_percentile(kind: str, n: int) -> None:
    from colbridge.io.encoders import linear_quantiles

    values = _quantile_data(kind, n)
    qs = [0.25, 0.5, 0.75, 0.0, 1.0, 0.1, 0.999]
    want = np.quantile(values, qs)  # np.percentile(values, 100 * q) for the quartiles
    got = linear_quantiles(values.copy(), qs)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [1_000, 600_001])  # one chunk; one per thread (2+ threads)
def test_linear_quantiles_leave_out_nan_and_infinities(n: int) -> None:
    from colbridge.io.encoders import linear_quantiles

    rng = np.random.default_rng(n)
    values = rng.normal(size=n)
    odd = rng.random(n)
    values[odd < 0.05] = np.nan
    values[(odd >= 0.05) & (odd < 0.07)] = -np.nan
    values[(odd >= 0.07) & (odd < 0.09)] = np.inf
    values[(odd >= 0.09) & (odd < 0.11)] = -np.inf
    qs = [0.25, 0.5, 0.75, 0.0, 1.0]
    want = np.quantile(values[np.isfinite(values)], qs)
    np.testing.assert_array_equal(linear_quantiles(values, qs), want)
    assert linear_quantiles(np.array([np.nan, np.inf, -np.inf]), [0.5, 0.9]) == [None, None]


def test_linear_quantiles_of_nothing() -> None:
    from colbridge.io.encoders import linear_quantiles

    assert linear_quantiles(np.array([1.0, 2.0]), []) == []
    assert linear_quantiles(np.zeros(0), [0.5]) == [None]


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "int64", "float32", "float64"])
def test_scalers_over_numeric_dtypes(dtype: str) -> None:
    values = np.random.default_rng(3).integers(0, 100, 3_001).astype(dtype)
    table = pa.table({"a": values, "b": values, "c": values, "d": values})
    spec = FeatureSpec.from_dict(
        {"columns": {"a": {"scale": "zscore"}, "b": {"scale": "minmax"},
                     "c": {"scale": "robust"}, "d": {"quantile_bins": 4}}, "dtype": "float64"}
    )  # fmt: skip
    got, _ = matrix(table, spec, batch_rows=1_000)
    x = values.astype(np.float64)[:, None]
    np.testing.assert_allclose(got[:, 0], StandardScaler().fit_transform(x)[:, 0], atol=1e-9)
    np.testing.assert_allclose(got[:, 1], MinMaxScaler().fit_transform(x)[:, 0], atol=1e-12)
    np.testing.assert_allclose(got[:, 2], RobustScaler().fit_transform(x)[:, 0], atol=1e-12)
    kb = KBinsDiscretizer(n_bins=4, strategy="quantile", encode="ordinal")
    np.testing.assert_array_equal(got[:, 3], kb.fit_transform(x)[:, 0])


def test_hash_buckets_give_the_null_id_to_a_null_dictionary_entry() -> None:
    # a row whose index points at a null entry of the dictionary is null, not the text ""
    entries = pa.array(["a", None, "b"])
    column = pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 2, 1]), entries)
    table = pa.table({"c": column})
    spec = FeatureSpec.from_dict({"columns": {"c": {"hash_buckets": 5}}, "dtype": "int64"})
    got, _ = matrix(table, spec, batch_rows=2)
    decoded = column.dictionary_decode()
    want = (fnv1a64(decoded) % np.uint64(5)).astype(np.int64) + 2
    want[np.asarray(decoded.is_null())] = NULL_ID
    assert decoded.null_count == 3
    np.testing.assert_array_equal(got[:, 0], want)


@pytest.mark.parametrize("values", [[None, None], [np.nan, np.inf, -np.inf], []])
def test_robust_fit_of_no_finite_value_is_empty(values: list[float | None]) -> None:
    from colbridge.io.fuse import fit_stats

    spec = FeatureSpec.from_dict({"columns": {"x": {"scale": "robust"}}})
    stats = fit_stats(pa.table({"x": pa.array(values, pa.float64())}), spec)
    assert stats.columns["x"] == {"q25": None, "median": None, "q75": None}


def _encodings_oracle(s, n, q, y, smoothing):  # type: ignore[no-untyped-def]
    # scikit-learn's TargetEncoder formulas, written out with NumPy
    n_y, s_y, q_y = y
    mean = s_y / n_y if n_y else float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        if smoothing == "auto":
            var = max(q_y / n_y - mean * mean, 0.0) if n_y else float("nan")
            cat_mean = s / n
            cat_var = np.maximum(q / n - cat_mean**2, 0.0)
            lam = var * n / (var * n + cat_var)
            enc = np.where(np.isnan(lam), mean, lam * cat_mean + (1 - lam) * mean)
        else:
            enc = (s + smoothing * mean) / (n + smoothing)
    return np.append(np.where(n == 0, mean, enc), mean)


@pytest.mark.parametrize("smoothing", [10.0, 0.0, "auto"])
@pytest.mark.parametrize("seed", range(6))
def test_fold_encodings_match_the_formulas_per_fold(smoothing: object, seed: int) -> None:
    from colbridge.io.encoders import fold_encodings

    rng = np.random.default_rng(seed)
    folds, k = int(rng.integers(1, 6)), int(rng.integers(0, 60))
    counts = rng.integers(0, 4, (folds, k)).astype(np.float64)  # categories absent from folds
    sums = rng.standard_normal((folds, k)) * counts
    sumsq = sums**2 + counts * rng.random((folds, k))
    sumsq[:, : k // 4] = sums[:, : k // 4] ** 2 / np.maximum(counts[:, : k // 4], 1)  # var 0
    ys = np.stack([counts.sum(1) + (seed == 0), sums.sum(1), sumsq.sum(1)], axis=1)
    if seed == 1:
        ys[:] = 0.0  # no target at all: every encoding NaN, as the formulas give
    full, per_fold = fold_encodings(sums, counts, sumsq, ys, smoothing)  # type: ignore[arg-type]
    tot = sums.sum(0), counts.sum(0), sumsq.sum(0)
    np.testing.assert_allclose(full, _encodings_oracle(*tot, tuple(ys.sum(0)), smoothing),
                               rtol=1e-12, atol=1e-12)  # fmt: skip
    for f in range(folds):
        rest = tot[0] - sums[f], tot[1] - counts[f], tot[2] - sumsq[f]
        want = _encodings_oracle(*rest, tuple(ys.sum(0) - ys[f]), smoothing)
        np.testing.assert_allclose(per_fold[f], want, rtol=1e-12, atol=1e-12)
