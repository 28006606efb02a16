"""Windows after whole-column statistics, streamed and on Dask, against polars.

A window's per-group statistics pass computes the steps before it piece by piece:
a whole-column reduction among those steps (`filter(x > x.mean())`, a column
`m = x.mean()`) must take the whole data's value there, not each piece's own; so
must a reduction or a window inside a window's keys (`over(x > x.mean())`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

from tests.jobs.oracle import assert_on_dask_as_polars, assert_streamed_as_polars

FRAME = pl.DataFrame({
    "x": [1.0, 2.0, 3.0, None, 4.0, 6.0, 0.5],
    "h": [10, 20, 30, 40, 50, None, 70],
    "g": ["a", "a", "b", "b", "a", "b", None],
})  # fmt: skip

PLANS: dict[str, Callable[[Any, Any], Any]] = {
    "filter by the mean, window": lambda q, m: q.filter(m.col("x") > m.col("x").mean())
    .with_columns(s=m.col("h").sum().over("g")),
    "mean as a column, window of it": lambda q, m: q.with_columns(m=m.col("x").mean())
    .with_columns(z=(m.col("x") - m.col("m")).sum().over("g"),
                  y=(m.col("x") - m.col("m")).max().over("g")),
    "window, mean of it, window": lambda q, m: q.with_columns(w=m.col("h").sum().over("g"))
    .with_columns(c=m.col("w") - m.col("w").mean())
    .with_columns(z=m.col("c").min().over("g")),
    "std in a filter, windows by two keys": lambda q, m: q.filter(
        (m.col("x") - m.col("x").mean()).abs() < m.col("x").std())
    .with_columns(n=m.len().over("g"), s=m.col("h").mean().over("g", m.col("x") > 2)),
    # keys made of many rows: each piece took its own rows' mean (or group means) for them
    "window keyed by a comparison with the mean": lambda q, m: q.with_columns(
        s=m.col("h").sum().over(m.col("x") > m.col("x").mean())),
    "window keyed by a window": lambda q, m: q.with_columns(
        n=m.len().over("g", m.col("h") > m.col("h").mean().over("g"))),
}


@pytest.mark.parametrize("name", list(PLANS))
@pytest.mark.parametrize("batch_rows", [1, 2, 3, 100])
def test_streamed(name: str, batch_rows: int) -> None:
    assert_streamed_as_polars(PLANS[name], FRAME, batch_rows)


@pytest.mark.parametrize("name", list(PLANS))
@pytest.mark.parametrize("npartitions", [2, 3])
def test_on_dask(name: str, npartitions: int) -> None:
    assert_on_dask_as_polars(PLANS[name], FRAME, npartitions)
