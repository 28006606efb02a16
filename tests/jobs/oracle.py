"""A plan run streamed and on Dask, against polars on the whole frame.

``plan(q, m)`` builds the same plan over a query ``q`` with the namespace ``m``
(``cb`` or ``pl``); the answers must be polars' on the whole frame.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask.dataframe as dd
import pandas as pd
import polars as pl
from polars.testing import assert_frame_equal

import colbridge as cb
import colbridge.dask as cb_dask

Plan = Callable[[Any, Any], Any]


def assert_streamed_as_polars(plan: Plan, frame: pl.DataFrame, batch_rows: int) -> None:
    """``plan`` over ``frame`` in batches of ``batch_rows`` rows equals polars' answer."""
    want = plan(frame.lazy(), pl).collect()
    got = plan(cb.lazy(frame.lazy(), batch_rows=batch_rows), cb).compute()
    assert_frame_equal(got, want, check_dtypes=False)


def assert_on_dask_as_polars(plan: Plan, frame: pl.DataFrame, npartitions: int) -> None:
    """``plan`` over ``frame`` in ``npartitions`` Dask partitions equals polars' answer."""
    pdf = frame.to_pandas()
    want = plan(frame.lazy(), pl).collect()
    partitions = dd.from_pandas(pdf, npartitions=npartitions)
    got = cb_dask.apply(plan(cb.lazy(pdf.head(2)), cb), partitions)
    result = pl.from_pandas(pd.DataFrame(got.compute()).reset_index(drop=True))
    assert_frame_equal(result, want, check_dtypes=False)
