"""pandas results whatever the plan's shape, checked against pandas' own operations.

A filter followed by work that starts a new segment of the plan (a reduction, a
running sum) keeps the kept rows' index labels and the input's columns as they
were (a NumPy float with NaN, a nullable Int64), as a one-segment plan keeps them;
the group ids kept for a recompute are not reused after the frame was written in
place; column labels that read as one name are refused.
"""

from __future__ import annotations

import datetime as dt
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


PLAN_SHAPES: dict[str, Callable[[Any], Any]] = {
    "with_columns": lambda q: q.with_columns(y=cb.col("0") * 2),
    "filter": lambda q: q.filter(cb.col("0") > 1),
    "select": lambda q: q.select(cb.col("1"), y=cb.col("0") * 2),
    "segments": lambda q: q.with_columns(y=cb.col("0").cum_sum()).filter(cb.col("y") > 1)
    .with_columns(z=cb.col("y") + 1, **{"0": cb.col("0") + 5}),
}


@pytest.mark.parametrize("shape", PLAN_SHAPES)
def test_column_labels_that_are_not_strings_stay_as_they_were(shape: str) -> None:
    pdf = pd.DataFrame({0: [1, 2, 3], 1: [4, 5, 6]})
    pdf.columns.name = "cols"
    out = PLAN_SHAPES[shape](pdf.gpu).compute()
    assert [c for c in out.columns if not isinstance(c, str)] == [c for c in (0, 1)
                                                                 if c in out.columns]  # fmt: skip
    assert any(c in out.columns for c in (0, 1))
    assert out.columns.name == "cols"
    tuples = pd.DataFrame(np.arange(6).reshape(3, 2),
                          columns=pd.MultiIndex.from_tuples([("x", "a"), ("x", "b")]))  # fmt: skip
    kept = tuples.gpu.filter(cb.col("('x', 'a')") > 0).compute()
    assert list(kept.columns) == [("x", "a"), ("x", "b")]


def test_numpy_output_gives_what_table_to_pandas_gives_where_numpy_has_no_view() -> None:
    pdf = pd.DataFrame({"t": pd.date_range("2020-01-01 10:00", periods=2, tz="Europe/Paris"),
                        "s": ["a", "b"], "c": pd.Categorical(["x", "y"]), "n": [1, 2]})  # fmt: skip
    out = pdf.gpu.with_columns(
        y=cb.col("t").shift(0), u=cb.col("s").str.to_uppercase(), c2=cb.col("c").shift(0),
        d=cb.col("t").dt.date(), m=cb.col("n") * 2, b=cb.col("n") > 1,
    ).compute(numpy_output=True)
    # the zone kept (it was dropped: the times came back naive, an hour off)
    pd.testing.assert_series_equal(out["y"], pdf["t"], check_names=False)
    assert out["u"].tolist() == ["A", "B"]
    assert list(out["c2"].cat.categories) == ["x", "y"]
    assert out["d"].tolist() == [dt.date(2020, 1, 1), dt.date(2020, 1, 2)]
    assert out["m"].dtype == np.int64
    assert out["b"].dtype == np.bool_


def test_categories_arrow_cannot_hold_are_refused_by_name() -> None:
    pdf = pd.DataFrame({"p": pd.Categorical(pd.period_range("2020", periods=2, freq="M")),
                        "x": [1, 2]})  # fmt: skip
    with pytest.raises(UnsupportedTypeError, match="column `p` is a pandas category of period"):
        pdf.gpu.with_columns(n=cb.col("p").is_null()).compute()
    with pytest.raises(UnsupportedTypeError, match="column `p`"):
        cb.as_tensor(pdf["p"])
    assert pdf.gpu.with_columns(n=cb.col("x") + 1).compute()["p"].dtype == "category"
