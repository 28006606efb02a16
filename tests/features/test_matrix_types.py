"""The matrix's element type holds every value it is given, or the fit says why not."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.ml import FeatureFusion

CATEGORIES = pa.table({"c": [f"s{i}" for i in range(300)]})


@pytest.mark.parametrize(("options", "dtype"), [
    ({"ids": ["c"]}, "uint8"), ({"ids": ["c"]}, "int8"),
    ({"hash_buckets": {"c": 100_000}}, "float16"), ({"hash_buckets": {"c": 40_000}}, "int16"),
])  # fmt: skip
def test_ids_a_type_cannot_hold_are_refused_by_name(options, dtype) -> None:
    # 300 categories (ids up to 301) in uint8 wrapped to 256 distinct ids
    with pytest.raises(cb.InvalidOperationError, match=r"ids of `c` go up to \d+"):
        FeatureFusion(**options, dtype=dtype).fit_transform(CATEGORIES)


@pytest.mark.parametrize("dtype", ["uint16", "int16", "float32"])
def test_ids_a_type_holds_are_all_distinct(dtype: str) -> None:
    out = FeatureFusion(ids=["c"], dtype=dtype).fit_transform(CATEGORIES)
    assert np.unique(out).size == 300


def test_integers_into_an_integer_matrix_are_exact() -> None:
    big = [2**53 + 1, None, -(2**62) - 1, 7]
    got = FeatureFusion(dtype="int64", fill_null={"n": -1}).fit_transform(pa.table({"n": big}))
    np.testing.assert_array_equal(got[:, 0], [2**53 + 1, -1, -(2**62) - 1, 7])
    clipped = FeatureFusion(dtype="int64", clip={"n": (-3, 2**60)}, fill_null={"n": 0})
    np.testing.assert_array_equal(clipped.fit_transform(pa.table({"n": big}))[:, 0],
                                  [2**53 + 1, 0, -3, 7])  # fmt: skip
