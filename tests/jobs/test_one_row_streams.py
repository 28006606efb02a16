"""Plans whose result is one row, streamed and on Dask, against polars.

A filter after the reductions filters their row (it may leave none); filters
before them only choose the rows they read; a select of literals is one row
however many batches or partitions the input has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask.dataframe as dd
import pandas as pd
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb
import colbridge.dask as cb_dask

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
    plan = PLANS[name]
    want = plan(FRAME.lazy(), pl).collect()
    got = plan(cb.lazy(FRAME.lazy(), batch_rows=batch_rows), cb).compute()
    assert_frame_equal(got, want, check_dtypes=False)


@pytest.mark.parametrize("name", list(PLANS))
def test_on_dask(name: str) -> None:
    plan = PLANS[name]
    pdf = FRAME.to_pandas()
    want = plan(FRAME.lazy(), pl).collect()
    got = cb_dask.apply(plan(cb.lazy(pdf.head(2)), cb), dd.from_pandas(pdf, npartitions=3))
    frame = pl.from_pandas(pd.DataFrame(got.compute()).reset_index(drop=True))
    assert_frame_equal(frame, want, check_dtypes=False)
