"""Plans whose result is one row, streamed and on Dask, against polars.

A filter after the reductions filters their row (it may leave none); filters
before them only choose the rows they read; a select of literals is one row
however many batches or partitions the input has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

from tests.jobs.oracle import assert_on_dask_as_polars, assert_streamed_as_polars

FRAME = pl.DataFrame({"b": [1.0, 2.0, 3.0, 4.0, 5.0, None, 7.0]})

PLANS: dict[str, Callable[[Any, Any], Any]] = {
    "reduction, filter that drops its row": lambda q, m: q.select(m.col("b").mean()).filter(
        m.col("b") > 100
    ),
    "reduction, filter that keeps it": lambda q, m: q.select(m.col("b").mean()).filter(
        m.col("b") > 1
    ),
    "filter, reduction": lambda q, m: q.filter(m.col("b") > 2).select(m.col("b").mean()),
    "filter of every row, reductions": lambda q, m: q.filter(m.col("b") > 200).select(
        m.col("b").mean(), n=m.col("b").count()
    ),
    "filter, reduction, filter": lambda q, m: (
        q.filter(m.col("b") > 2).select(m.col("b").sum()).filter(m.col("b") > 5)
    ),
    "literal": lambda q, m: q.select(m.lit(1)),
    "literals, filter": lambda q, m: q.select(m.lit(1), x=m.lit(2.5)).filter(m.col("x") > 3),
}


@pytest.mark.parametrize("name", list(PLANS))
@pytest.mark.parametrize("batch_rows", [1, 3, 100])
def test_streamed(name: str, batch_rows: int) -> None:
    assert_streamed_as_polars(PLANS[name], FRAME, batch_rows)


@pytest.mark.parametrize("name", list(PLANS))
def test_on_dask(name: str) -> None:
    assert_on_dask_as_polars(PLANS[name], FRAME, 3)
