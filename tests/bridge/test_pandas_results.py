"""pandas results whatever the plan's shape, checked against pandas' own operations.

A filter followed by work that starts a new segment of the plan (a reduction, a
running sum) keeps the kept rows' index labels and the input's columns as they
were (a NumPy float with NaN, a nullable Int64), as a one-segment plan keeps them;
the group ids kept for a recompute are not reused after the frame was written in
place; column labels that read as one name are refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import UnsupportedTypeError


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "a": pd.array([5, None, 7, 2, 9], dtype="Int64"),
            "f": [1.5, np.nan, 2.5, 3.5, -1.0],
            "g": [1, 1, 2, 2, 3],
            "s": pd.array(["x", "y", None, "z", "x"], dtype="string[pyarrow]"),
        },
        index=[10, 20, 30, 40, 50],
    )


PLANS: dict[str, Callable[[Any], Any]] = {
    "filter, elementwise": lambda q: q.filter(cb.col("g") > 1).with_columns(z=cb.col("g") * 2),
    "filter, running sum": lambda q: q.filter(cb.col("g") > 1).with_columns(
        z=cb.col("g").cum_sum()
    ),
    "filter, centred": lambda q: q.filter(cb.col("g") > 1).with_columns(
        z=cb.col("f") - cb.col("f").mean()
    ),
    "filter, select with a reduction": lambda q: q.filter(cb.col("g") > 1).select(
        "f", m=cb.col("a").max()
    ),
    "running sum, filter": lambda q: q.with_columns(z=cb.col("g").cum_sum()).filter(
        cb.col("z") > 1
    ),
    "two filters": lambda q: (
        q.filter(cb.col("g") > 1)
        .with_columns(z=cb.col("f").mean())
        .filter(cb.col("a") > 4)
        .with_columns(w=cb.col("f").sum())
    ),
}


@pytest.mark.parametrize("name", list(PLANS))
def test_rows_keep_their_labels_and_columns_their_dtypes(tier: str, name: str) -> None:
    pdf = _frame()
    out = PLANS[name](pdf.gpu).compute()
    # the kept rows' labels, in order; the input's own columns as pandas selects them
    for column in ("a", "f", "g", "s"):
        if column in out.columns:
            pd.testing.assert_series_equal(out[column], pdf.loc[out.index, column])
    # and the values: polars over the same data
    want = PLANS[name](cb.lazy(pl.from_pandas(pdf))).compute()
    got = pl.from_pandas(out.reset_index(drop=True))
    assert_frame_equal(got, want, check_dtypes=False)


def test_group_ids_are_not_reused_after_an_in_place_write(tier: str) -> None:
    pdf = pd.DataFrame({"g": np.array([1, 2, 1, 2]), "x": [1.0, 2.0, 3.0, 4.0]})
    grouped = pdf.gpu.group_by("g").agg(s=cb.col("x").sum())
    window = pdf.gpu.with_columns(s=cb.col("x").sum().over("g"))
    grouped.compute()
    window.compute()
    pdf.loc[0, "g"] = 2  # written in place: the same buffer, other values
    pdf.loc[3, "g"] = 3
    frame = pl.from_pandas(pdf)
    want = frame.group_by("g", maintain_order=True).agg(s=pl.col("x").sum())
    assert_frame_equal(pl.from_pandas(grouped.compute()), want)
    assert window.compute()["s"].tolist() == [3.0, 3.0, 3.0, 4.0]


def test_labels_that_read_as_one_name_are_refused() -> None:
    pdf = pd.DataFrame({1: [1, 2], "1": [30, 40], "x": [0.5, 0.25]})
    with pytest.raises(UnsupportedTypeError, match=r"column labels 1 and '1'"):
        pdf.gpu.filter(cb.col("x") > 0.3).compute()


# -- polars Enum columns of no rows ----------------------------------------------------------------
ENUM_PLANS: dict[str, Callable[[Any, Any], Any]] = {
    "filter of every row, group_by": lambda q, m: (
        q.filter(m.col("x") > 10).group_by("en").agg(m.len())
    ),
    "group_by, filter of every group": lambda q, m: (
        q.group_by("en").agg(m.len()).filter(m.col("len") > 10)
    ),
    "filter of every row, max": lambda q, m: q.filter(m.col("x") > 10).select(m.col("en").max()),
    "filter of every row, running sum": lambda q, m: q.filter(m.col("x") > 10).with_columns(
        c=m.col("x").cum_sum()
    ),
}


@pytest.mark.parametrize("name", list(ENUM_PLANS))
def test_an_enum_of_no_rows_keeps_its_categories(tier: str, name: str) -> None:
    frame = pl.DataFrame(
        {"en": pl.Series(["lo", "hi"], dtype=pl.Enum(["lo", "mid", "hi"])), "x": [1, 2]}
    )
    plan = ENUM_PLANS[name]
    want = plan(frame.lazy(), pl).collect()
    assert_frame_equal(plan(cb.lazy(frame), cb).compute(), want)
