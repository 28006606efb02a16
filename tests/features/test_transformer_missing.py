"""A missing value in the transformer's matrix is NaN, as scikit-learn's scalers leave it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from sklearn.preprocessing import MinMaxScaler, RobustScaler, StandardScaler

import colbridge as cb
from colbridge.ml import FeatureFusion

X = [1.0, None, 3.0, 10.0, 4.0]


@pytest.mark.parametrize(("option", "scaler"), [
    ("zscore", StandardScaler()), ("minmax", MinMaxScaler()), ("robust", RobustScaler()),
])  # fmt: skip
@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow"])
def test_a_missing_value_stays_missing_through_the_scalers(option, scaler, kind) -> None:
    frame = {"pandas": pd.DataFrame({"x": [np.nan if v is None else v for v in X]}),
             "polars": pl.DataFrame({"x": X}), "arrow": pa.table({"x": X})}[kind]  # fmt: skip
    ff = FeatureFusion(**{option: ["x"]}, dtype="float64")
    want = scaler.fit_transform(np.array([[np.nan if v is None else v] for v in X]))
    np.testing.assert_allclose(ff.fit_transform(frame), want, rtol=1e-12)
    np.testing.assert_allclose(ff.transform(frame), want, rtol=1e-12)


def test_passthrough_dates_and_encoders_around_a_missing_value() -> None:
    table = pa.table({"x": X, "c": ["a", None, "b", "z", "a"]})
    ff = FeatureFusion(["x", "c"], indicator=["x"], one_hot=["c"], dtype="float32")
    got = ff.fit_transform(table)
    assert got.dtype == np.float32
    # x is NaN where null, its indicator 1; the null category is a column of its own
    np.testing.assert_array_equal(got[:, 0], np.array([1, np.nan, 3, 10, 4], np.float32))
    np.testing.assert_array_equal(got[:, 1], [0, 1, 0, 0, 0])
    assert not np.isnan(got[:, 2:]).any()
    serve = ff.transform(pa.table({"x": [None], "c": ["unseen"]}))  # unseen: all zeros
    np.testing.assert_array_equal(serve[0, 2:], np.zeros(serve.shape[1] - 2))
    assert np.isnan(serve[0, 0])
    assert serve[0, 1] == 1


def test_an_integer_matrix_refuses_a_missing_value_by_name() -> None:
    table = pa.table({"x": X, "n": [1, 2, 3, 4, 5]})
    with pytest.raises(cb.NullValuesError, match=r"\['x'\].*fill_null"):
        FeatureFusion(dtype="int64").fit_transform(table)
    out = FeatureFusion(fill_null={"x": -1}, dtype="int64").fit_transform(table)
    np.testing.assert_array_equal(out[:, 0], [1, -1, 3, 10, 4])
