"""Feature fusion at the edges of its data, each against scikit-learn or NumPy.

Constant targets and constant columns (the rounding of a zero spread), NaN and
infinities in scaled columns, NaN in quantile bins, columns that arrive with no
type (pandas' all-None object column), integers beyond Int64, NumPy scalars as
options, float16 matrices, and the errors of specs that cannot mean anything.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, StandardScaler, TargetEncoder

import colbridge as cb
from colbridge.errors import JobSpecError, NullValuesError, UnsupportedTypeError
from colbridge.io.encoders import folds_of
from colbridge.io.fuse import FeatureSpec, FeatureStats, fit_stats, transform_batch
from colbridge.ml import FeatureFusion


def _column(values: list[float]) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).reshape(-1, 1)


# -- target encoding with "auto" smoothing --------------------------------------------
@pytest.mark.parametrize("y", [[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
def test_auto_smoothing_of_a_constant_target_is_its_mean(y: list[float]) -> None:
    X = np.array([["a"], ["b"], ["a"], ["c"]], dtype=object)
    want = TargetEncoder(target_type="continuous").fit(X, y).transform(X)
    got = FeatureFusion(target_encode=["x0"], dtype="float64").fit(X, y).transform(X)
    np.testing.assert_array_equal(got, want)


def test_auto_smoothing_out_of_fold_with_a_constant_fold() -> None:
    # one 1 among 99 zeros: every fold but one has a constant target (variance 0)
    n, folds = 100, 5
    y = np.zeros(n)
    y[3] = 1.0
    cats = np.array(["a", "b", "c", "d"])[np.arange(n) % 4]
    ff = FeatureFusion(target_encode=["c"], folds=folds, dtype="float64")
    got = ff.fit_transform(pd.DataFrame({"c": cats}), y).ravel()
    fold = folds_of(0, n, folds, 0)
    want = np.empty(n)
    for f in range(folds):
        train, held = fold != f, fold == f
        enc = TargetEncoder(target_type="continuous").fit(cats[train, None], y[train])
        want[held] = enc.transform(cats[held, None]).ravel()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


# -- scaling: NaN, infinities, constant columns -----------------------------------------
def test_zscore_and_minmax_leave_nan_out_of_the_fit_as_scikit_learn() -> None:
    x = _column([1.0, 2.0, np.nan, 3.0, 7.5, np.nan])
    for name, scaler in (("zscore", StandardScaler()), ("minmax", MinMaxScaler())):
        got = FeatureFusion(**{name: ["x0"]}, dtype="float64").fit_transform(x)
        np.testing.assert_allclose(got, scaler.fit_transform(x), rtol=1e-12)


def test_infinities_are_left_out_of_the_fit_and_stay_infinite() -> None:
    # scikit-learn refuses infinities; colbridge fits on the finite values, as its
    # quantiles (robust scaling, bins) do, and keeps the infinities in the matrix
    x = _column([1.0, np.inf, 2.0, -np.inf, 3.0, np.nan])
    finite = _column([1.0, 2.0, 3.0])
    for name, scaler in (("zscore", StandardScaler()), ("minmax", MinMaxScaler())):
        got = FeatureFusion(**{name: ["x0"]}, dtype="float64").fit_transform(x).ravel()
        want = scaler.fit(finite).transform(finite).ravel()
        np.testing.assert_allclose(got[[0, 2, 4]], want, rtol=1e-12)
        assert got[1] == np.inf
        assert got[3] == -np.inf
        assert np.isnan(got[5])


@settings(max_examples=60, deadline=None)
@given(
    value=st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False),
    n=st.integers(1, 200),
)
def test_a_constant_column_scales_as_scikit_learn_scales_it(value: float, n: int) -> None:
    # the std of [0.1] * 3 rounds to 1.4e-17, not 0: StandardScaler tests the variance
    # against its rounding and divides by 1 there, so the values go to ~0, not to +-1
    x = _column([value] * n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_z = StandardScaler().fit_transform(x)
        want_m = MinMaxScaler().fit_transform(x)
    got_z = FeatureFusion(zscore=["x0"], dtype="float64").fit_transform(x)
    got_m = FeatureFusion(minmax=["x0"], dtype="float64").fit_transform(x)
    np.testing.assert_allclose(got_z, want_z, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got_m, want_m, rtol=0, atol=1e-9)


def test_a_span_below_ten_ulps_scales_by_one_as_min_max_scaler() -> None:
    x = _column([1.0, 1.0 + 2e-16, 1.0])
    got = FeatureFusion(minmax=["x0"], dtype="float64").fit_transform(x)
    np.testing.assert_array_equal(got, MinMaxScaler().fit_transform(x))


def test_nan_has_no_quantile_bin() -> None:
    spec = FeatureSpec.from_dict(
        {"columns": {"x": {"quantile_bins": 2}}, "dtype": "float64", "validity": True}
    )
    t = pa.table({"x": [1.0, 2.0, 3.0, 4.0, float("nan"), None, float("inf")]})
    out = transform_batch(t, spec, fit_stats(t, spec))
    assert out.validity is not None
    assert out.validity.ravel().tolist() == [True] * 4 + [False, False, True]
    assert out.features.ravel()[[0, 1, 2, 3, 6]].tolist() == [0.0, 0.0, 1.0, 1.0, 1.0]


# -- columns with no type, integers beyond Int64 ----------------------------------------
@pytest.mark.parametrize("encoding", ["one_hot", "ids", "target_encode"])
def test_a_serving_column_of_none_only_encodes_as_nulls(encoding: str) -> None:
    ff = FeatureFusion(**{encoding: ["c"]}, dtype="float64")
    ff.fit(pd.DataFrame({"c": ["a", "b", None, "a"]}), [1.0, 2.0, 3.0, 4.0])
    nulls = ff.transform(pd.DataFrame({"c": pa.array([None, None], pa.string())}))
    got = ff.transform(pd.DataFrame({"c": [None, None]}))  # Arrow type null
    np.testing.assert_array_equal(got, nulls)
    empty = ff.transform(pd.DataFrame({"c": pd.Series([], dtype=object)}))
    assert empty.shape == (0, got.shape[1])


def test_one_hot_of_a_column_of_none_only_as_scikit_learn() -> None:
    fit = np.array([["a"], ["b"], [None]], dtype=object)
    serve = np.array([[None], [None]], dtype=object)
    want = OneHotEncoder(sparse_output=False).fit(fit).transform(serve)
    ff = FeatureFusion(one_hot=["x0"], dtype="float64").fit(pd.DataFrame(fit, columns=["x0"]))
    np.testing.assert_array_equal(ff.transform(pd.DataFrame(serve, columns=["x0"])), want)


def test_fitting_a_column_of_none_only_names_it() -> None:
    with pytest.raises(UnsupportedTypeError, match=r"column `x` has no value to fit on"):
        FeatureFusion(zscore=["x"]).fit(pd.DataFrame({"x": [None, None]}))


@pytest.mark.parametrize("encoding", ["one_hot", "ids", "target_encode"])
def test_uint64_categories_beyond_int64(encoding: str) -> None:
    big = 2**63 + 5
    t = pa.table({"c": pa.array([big, 1, big, None], pa.uint64())})
    y = [1.0, 2.0, 3.0, 4.0]
    ff = FeatureFusion(**{encoding: ["c"]}, dtype="float64").fit(t, y)
    as_int64_range = pa.table({"c": pa.array([7, 1, 7, None], pa.uint64())})
    want = FeatureFusion(**{encoding: ["c"]}, dtype="float64").fit(as_int64_range, y)
    np.testing.assert_array_equal(ff.transform(t), want.transform(as_int64_range))
    nulls = pd.DataFrame({"c": [None, None]})  # Arrow type null: typed as the categories
    np.testing.assert_array_equal(ff.transform(nulls), want.transform(nulls))


# -- options and specs ---------------------------------------------------------------------
def test_numpy_integers_and_floats_are_options_as_python_ones() -> None:
    t = pa.table({"c": ["a", "a", "b", "c", "c", "c"]})
    for value in (np.int64(2), np.float64(0.3)):
        got = FeatureFusion(one_hot=["c"], min_frequency=value).fit(t)
        want = FeatureFusion(one_hot=["c"], min_frequency=value.item()).fit(t)
        assert list(got.get_feature_names_out()) == list(want.get_feature_names_out())
        json.dumps(got.stats_.to_dict())  # written as plain numbers


def test_two_scalings_of_one_column_are_refused() -> None:
    with pytest.raises(JobSpecError, match=r"column `x` is given two scalings"):
        FeatureFusion(["x"], zscore=["x"], minmax=["x"]).fit(pa.table({"x": [1.0, 2.0]}))


def test_clip_bounds_in_the_wrong_order_are_refused() -> None:
    with pytest.raises(JobSpecError, match=r"`clip` bounds \(5, 1\)"):
        FeatureFusion(clip={"x": (5, 1)}).fit(pa.table({"x": [1.0, 2.0]}))


@pytest.mark.parametrize(
    "column",
    [
        pa.array([1.5, 2.5, 1.5]).dictionary_encode(),
        pa.array([True, False, True]).dictionary_encode(),
    ],
)
def test_a_dictionary_of_values_no_encoder_takes_is_refused(column: pa.Array) -> None:
    with pytest.raises(UnsupportedTypeError, match=r"column `c` of type `dictionary"):
        FeatureFusion(one_hot=["c"]).fit(pa.table({"c": column}))


def test_duplicate_feature_names_are_refused() -> None:
    frame = pd.DataFrame({"x": [1.0, None], "x_missing": [1.0, 2.0]})
    with pytest.raises(JobSpecError, match=r"two features would be named `x_missing`"):
        FeatureFusion(["x", "x_missing"], indicator=["x"]).fit(frame)


def test_feature_names_out_checks_the_input_features() -> None:
    ff = FeatureFusion(zscore=["x"]).fit(pd.DataFrame({"x": [1.0, 2.0]}))
    assert list(ff.get_feature_names_out(["x"])) == ["x"]
    with pytest.raises(ValueError, match="input_features"):
        ff.get_feature_names_out(["zzz"])


def test_y_of_two_columns_or_strings_is_refused_by_name() -> None:
    X = pd.DataFrame({"c": ["a", "b"]})
    with pytest.raises(ValueError, match=r"y must be one target column; .* shape \(2, 2\)"):
        FeatureFusion(target_encode=["c"]).fit(X, np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"y has type `string`"):
        FeatureFusion(target_encode=["c"]).fit(X, ["u", "v"])


@pytest.mark.parametrize("version", [True, 4.0, "4"])
def test_a_stats_file_version_must_be_an_integer(version: object, tmp_path: Path) -> None:
    ff = FeatureFusion(zscore=["x"]).fit(pa.table({"x": [1.0, 2.0]}))
    data = ff.stats_.to_dict()
    data["version"] = version
    with pytest.raises(JobSpecError, match="cannot read"):
        FeatureStats.from_dict(json.loads(json.dumps(data)))


# -- float16 matrices --------------------------------------------------------------------
def test_a_float16_matrix_rounds_once_as_numpy() -> None:
    values = np.array([130.81250001, 1.0 / 3.0, 65519.0, -2049.0000001, 0.0999])
    masked = pa.array(values, mask=np.array([0, 0, 0, 1, 0], dtype=bool))
    for table in (pa.table({"a": values}), pa.table({"a": masked})):
        got = cb.to_tensor(table, dtype="float16", nulls=0.0).numpy().ravel()
        want = np.where(np.asarray(table["a"].is_null()), 0.0, values).astype(np.float16)
        np.testing.assert_array_equal(got, want)


def test_an_unknown_matrix_dtype_is_named_by_fit() -> None:
    with pytest.raises(UnsupportedTypeError, match="unknown or unsupported dtype 'string'"):
        FeatureFusion(zscore=["x"], dtype="string").fit(pa.table({"x": [1.0, 2.0]}))


def test_a_missing_value_is_nan_beside_encoders_and_an_error_in_an_integer_matrix() -> None:
    # the pack writes NaN where a numeric feature has no value; encoded columns have
    # none (a null is a category); an integer matrix cannot hold NaN and says which
    table = pa.table({"x": pa.array([1.0, None, 3.0, 5.0]), "c": ["a", "b", None, "a"]})
    got = FeatureFusion(["x", "c"], zscore=["x"], one_hot=["c"]).fit_transform(table)
    assert got.dtype == np.float32
    assert np.isnan(got[:, 0]).tolist() == [False, True, False, False]
    np.testing.assert_allclose(got[[0, 2, 3], 0], [-1.2247449, 0.0, 1.2247449], rtol=1e-6)
    assert not np.isnan(got[:, 1:]).any()
    with pytest.raises(NullValuesError, match=r"\['x'\].*int32"):
        FeatureFusion(["x"], dtype="int32").fit_transform(table)
    filled = FeatureFusion(["x"], dtype="int32", fill_null={"x": 9}).fit_transform(table)
    assert filled.ravel().tolist() == [1, 9, 3, 5]
