"""``min`` and ``max`` of floats: NaN never competes, and is the answer only when all are.

Values drawn from NaN of both signs, the infinities, signed zeros, ordinary numbers and
nulls, in runs long enough to cross the kernels' lanes, words and blocks: whole-column,
per group and over groups, on every frame kind, against polars.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from colbridge.testing.asserts import assert_same_as_polars

SPECIAL = [math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 1.5, -2.25, None]


def _steps(m: Any, q: Any) -> Any:
    x = m.col("x")
    return q.select(lo=x.min(), hi=x.max(), lo32=x.cast(m.Float32 if hasattr(m, "Float32")
                    else "float32").min())  # fmt: skip


def _grouped(m: Any, q: Any) -> Any:
    x = m.col("x")
    return q.group_by("g", maintain_order=True).agg(lo=x.min(), hi=x.max())


def _over(m: Any, q: Any) -> Any:
    x = m.col("x")
    return q.with_columns(lo=x.min().over("g"), hi=x.max().over("g"))


def _table(values: list[float | None], seed: int) -> pa.Table:
    groups = np.random.default_rng(seed).integers(0, 3, len(values))
    return pa.table({"x": pa.array(values, pa.float64()), "g": pa.array(groups, pa.int32())})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.sampled_from(SPECIAL), max_size=150), seed=st.integers(0, 99))
def test_generated_runs_of_special_values(values: list[float | None], seed: int) -> None:
    table = _table(values, seed)
    for steps in (_steps, _grouped, _over):
        assert_same_as_polars(table, steps, kinds=("pyarrow",))


@pytest.mark.parametrize("fill", [math.nan, -math.nan, None])
@pytest.mark.parametrize("number_at", [None, 0, 63, 64, 16383, 16384, 40_000])
def test_a_number_among_many_nans_or_nulls(fill: float | None, number_at: int | None) -> None:
    # every value NaN (or null) but one, placed on lane, word and block edges
    values: list[float | None] = [fill] * 40_001
    if number_at is not None:
        values[number_at] = -7.5
    assert_same_as_polars(_table(values, number_at or 0), _steps)
    assert_same_as_polars(_table(values, 1), _grouped, kinds=("pyarrow",))
