"""Whole-column min/max of temporal columns, streamed and on Dask, against polars.

The host takes each piece's extreme; the pieces' extremes fold as the values'
integers and come back cast to the column's type (unit, zone and nanoseconds kept).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import dask.dataframe as dd
import pandas as pd
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb
import colbridge.dask as cb_dask

FRAME = pl.DataFrame({
    "t": [dt.datetime(2024, 1, 2), None, dt.datetime(2023, 5, 1, 0, 0, 0, 5), None,
          dt.datetime(1969, 12, 31, 23, 59)],
    "d": [dt.date(2020, 1, 1), dt.date(2019, 1, 1), None, dt.date(1900, 3, 1), None],
    "u": [dt.timedelta(1), dt.timedelta(-3), None, dt.timedelta(microseconds=1), None],
}).with_columns(
    z=(pl.col("t").dt.replace_time_zone("Europe/Paris").dt.cast_time_unit("ns")
       + pl.duration(nanoseconds=7)),
    h=pl.col("t").dt.time(),
)  # fmt: skip

PLANS: dict[str, Callable[[Any, Any], Any]] = {
    "extremes": lambda q, m: q.select(a=m.col("t").min(), b=m.col("d").max(),
                                      c=m.col("u").max(), e=m.col("z").max(),
                                      f=m.col("h").min(), g=m.col("z").min()),
    "against the extremes": lambda q, m: q.with_columns(
        since=m.col("t") - m.col("t").min(), late=m.col("z") == m.col("z").max()
    ).filter(m.col("d") < m.col("d").max()),
}  # fmt: skip


@pytest.mark.parametrize("name", list(PLANS))
@pytest.mark.parametrize("batch_rows", [1, 2, 100])
def test_streamed(name: str, batch_rows: int) -> None:
    plan = PLANS[name]
    want = plan(FRAME.lazy(), pl).collect()
    assert_frame_equal(plan(cb.lazy(FRAME.lazy(), batch_rows=batch_rows), cb).compute(), want)


def test_on_dask() -> None:
    frame = FRAME.select("t", "u")
    pdf = frame.to_pandas()
    plan = lambda q, m: q.select(a=m.col("t").min(), c=m.col("u").max())  # noqa: E731
    got = cb_dask.apply(plan(cb.lazy(pdf.head(2)), cb), dd.from_pandas(pdf, npartitions=3))
    result = pl.from_pandas(pd.DataFrame(got.compute()).reset_index(drop=True))
    assert_frame_equal(result, plan(frame.lazy(), pl).collect(), check_dtypes=False)


def test_string_extremes_are_refused_by_name_in_a_stream() -> None:
    frame = pl.DataFrame({"s": ["b", "a", None]})
    with pytest.raises(cb.UnsupportedOperationError, match=r'`col\("s"\).min\(\)` of a column'):
        cb.lazy(frame.lazy(), batch_rows=1).select(cb.col("s").min()).compute()
