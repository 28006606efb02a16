"""Options a fit cannot honour are refused by name, as scikit-learn refuses them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.errors import JobSpecError
from colbridge.ml import FeatureFusion

TABLE = pa.table({"c": ["a", "b", "a", "b"], "x": [1.0, 2.0, 3.0, 4.0]})
Y = [1, 0, 1, 0]


@pytest.mark.parametrize(("options", "match"), [
    ({"target_encode": ["c"], "folds": 2.9}, "`folds` must be a whole number"),  # ran 2 folds
    ({"hash_buckets": {"c": 2.5}}, "`hash_buckets` must be a whole number"),
    ({"ids": ["c"], "seed": 1.7}, "`seed` must be a whole number"),
    ({"quantile_bins": {"x": 1}}, "`quantile_bins` must be >= 2"),  # one bin: a constant
    ({"quantile_bins": {"x": 2.5}}, "`quantile_bins` must be a whole number"),
    ({"one_hot": ["c"], "max_categories": 1.5}, "`max_categories` must be a whole number"),
])  # fmt: skip
def test_counts_that_are_not_whole_numbers_are_refused(options: dict[str, Any], match: str):
    with pytest.raises(JobSpecError, match=match):
        FeatureFusion(**options).fit(TABLE, Y)


def test_a_numpy_integer_is_a_count() -> None:
    out = FeatureFusion(target_encode=["c"], folds=np.int64(2)).fit_transform(TABLE, Y)
    assert out.shape == (4, 2)


def test_target_encoding_without_any_label_is_refused_by_name() -> None:
    with pytest.raises(cb.InvalidOperationError, match="target encoding of `c`: no fitting row"):
        FeatureFusion(target_encode=["c"], folds=2).fit(pa.table({"c": ["a", "b"]}),
                                                        [np.nan, np.nan])  # fmt: skip


@pytest.mark.parametrize("options", [{"one_hot": ["c"]}, {"ids": ["c"]},
                                     {"target_encode": ["c"], "folds": 2}])  # fmt: skip
def test_a_column_served_as_another_kind_is_refused_by_name(options: dict[str, Any]) -> None:
    # integers fitted, strings served: "1" was matched to the category 1 (and the other
    # way round Arrow failed casting "a" to an integer)
    y = [1.0, 0.0, 1.0, 0.0]
    ff = FeatureFusion(**options).fit(pa.table({"c": [1, 2, 1, 2]}), y)
    with pytest.raises(cb.UnsupportedTypeError, match=r"column `c`: .* fitted on number"):
        ff.transform(pa.table({"c": ["1", "2"]}))
    ff = FeatureFusion(**options).fit(pa.table({"c": ["a", "b", "a", "b"]}), y)
    with pytest.raises(cb.UnsupportedTypeError, match=r"column `c`: .* fitted on text"):
        ff.transform(pa.table({"c": [1, 2]}))


def test_integer_categories_outside_a_narrower_column_match_no_row() -> None:
    # fitted on int64 [-1, 5], served uint8 [5, 200]: Arrow failed casting -1 to uint8
    fit = pa.table({"c": pa.array([-1, 5, 5], pa.int64())})
    serve = pa.table({"c": pa.array([5, 200, None], pa.uint8())})
    hot = FeatureFusion(one_hot=["c"], handle_unknown="ignore").fit(fit).transform(serve)
    np.testing.assert_array_equal(hot, [[0, 1], [0, 0], [0, 0]])
    ids = FeatureFusion(ids=["c"]).fit(fit).transform(serve)
    want = FeatureFusion(ids=["c"]).fit(fit).transform(pa.table({"c": [5, 200, None]}))
    np.testing.assert_array_equal(ids, want)


@pytest.mark.parametrize("column", [pa.array(["a", "b", "a", "b"]),
                                    pa.array(["a", "b", "a", "b"]).dictionary_encode(),
                                    pa.array([b"a", b"b", b"a", b"b"])])  # fmt: skip
def test_text_as_a_plain_feature_is_refused_naming_the_encoders(column: pa.Array) -> None:
    # every column is a plain number by default: a string column failed inside a cast,
    # whose message asked for `strict=False`
    table = pa.table({"c": column, "x": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(cb.UnsupportedTypeError, match=r"column `c` .* is not a number: encode "
                                                      r"it \(one_hot=\['c'\]"):  # fmt: skip
        FeatureFusion().fit(table)
    if not pa.types.is_binary(column.type):  # encoded as it asks, it is taken
        assert FeatureFusion(one_hot=["c"]).fit_transform(table).shape == (4, 3)
