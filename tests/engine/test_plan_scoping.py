"""Which columns and rows a step sees, as polars scopes them.

- A `select` or a grouping keeps only its outputs: a later step that names a column
  it left out raises `ColumnNotFoundError` (polars does), rather than reading the
  frame's column of that name.
- A `select` of literals alone makes one row, whatever a filter before it keeps (zero
  rows included), on every CPU tier.

Each plan runs on polars and on colbridge; they must agree on raising and, where
neither raises, on the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.errors import ColumnNotFoundError
from colbridge.testing.asserts import as_polars, frame_mismatch, to_kind

TABLE = pa.table({"a": pa.array([1, 2, 3, None], pa.int64()),
                  "b": pa.array([1.0, 2.0, None, 4.0]),
                  "k": pa.array(["x", "y", "x", None])})  # fmt: skip

Plan = Callable[[Any, Any], Any]

MISSING: dict[str, Plan] = {
    "with_columns after select": lambda m, q: q.select("a").with_columns(c=m.col("b") * 2),
    "filter after select": lambda m, q: q.select("a").filter(m.col("b") > 1),
    "select after select": lambda m, q: q.select(z=m.col("a") + 1).select(m.col("a")),
    "reduction after select": lambda m, q: q.select("a").select(s=m.col("b").sum()),
    "window after select": lambda m, q: q.select("a").with_columns(s=m.col("a").sum().over("k")),
    "after a grouping": lambda m, q: (
        q.group_by("k").agg(s=m.col("a").sum()).with_columns(z=m.col("b"))
    ),
    "filter after a grouping": lambda m, q: (
        q.group_by("k").agg(s=m.col("a").sum()).filter(m.col("a") > 1)
    ),
    "read only by an output a later select drops": lambda m, q: (
        q.group_by("k").agg(s=m.col("a").sum()).with_columns(s=m.col("a")).select(n=m.lit(3))
    ),
    "after a filter and a select": lambda m, q: (
        q.filter(m.col("a") > 1).select("b").with_columns(z=m.col("a"))
    ),
}

LITERALS: dict[str, Plan] = {
    "after a filter": lambda m, q: q.filter(m.col("a") > 1).select(n=m.lit(3)),
    "after a filter keeping nothing": lambda m, q: q.filter(m.col("a") > 10).select(
        n=m.lit(3), f=m.lit(1.5)
    ),
    "after two filters": lambda m, q: (
        q.filter(m.col("a") > 1).filter(m.col("b") > 0).select(n=m.lit(3))
    ),
    "then a column of it": lambda m, q: (
        q.filter(m.col("a") > 1).select(n=m.lit(3)).with_columns(m=m.col("n") * 2)
    ),
    "arithmetic of literals": lambda m, q: q.filter(m.col("a") > 10).select(n=m.lit(3) * 2 + 1),
    "beside a reduction": lambda m, q: q.filter(m.col("a") > 1).select(
        n=m.lit(3), s=m.col("b").sum()
    ),
    "beside a column": lambda m, q: q.filter(m.col("a") > 1).select(n=m.lit(3), a=m.col("a")),
    "with a filter after": lambda m, q: (
        q.filter(m.col("a") > 1).select(n=m.lit(3)).filter(m.col("n") > 5)
    ),
    "on no rows": lambda m, q: (
        q.filter(m.col("a") > 10).select(n=m.lit(3)).with_columns(z=m.col("n") + m.lit(1))
    ),
}


# a column made by one step is read by a later one as the column it is, not inlined
# as the expression that made it where that would change its meaning
MADE: dict[str, Plan] = {
    # the compiled kernels compact the numbers; the strings (polars' view layout) are
    # filtered by Arrow from the table the reduction's segment made
    "a filter after a reduction, with strings": lambda m, q: q.with_columns(
        x=m.col("a").sum()
    ).filter(m.col("x").min() <= m.col("b") * 10),
    "one value, summed": lambda m, q: q.with_columns(x=m.lit(2)).select(
        s=m.col("x").sum(), c=m.col("x").count()
    ),
    "a reduction, summed": lambda m, q: q.with_columns(x=m.col("a").sum()).select(
        s=m.col("x").sum()
    ),
    "one value, in a window": lambda m, q: q.with_columns(x=m.lit(2)).with_columns(
        s=m.col("x").sum().over("k")
    ),
    "one value, grouped": lambda m, q: (
        q.with_columns(x=m.lit(2))
        .group_by("k", maintain_order=True)
        .agg(s=m.col("x").sum(), c=m.col("x").count())
    ),
    "one value, scanned": lambda m, q: q.with_columns(x=m.lit(2)).with_columns(
        s=m.col("x").cum_sum(), t=m.col("x").shift(1)
    ),
    "one value, selected": lambda m, q: q.with_columns(x=m.lit(2)).select("x"),
    "one value, selected after a filter": lambda m, q: (
        q.filter(m.col("a") > 5).with_columns(n=m.lit(0)).select("n")
    ),
    "a shift, grouped": lambda m, q: (
        q.with_columns(w=m.col("b").shift(1))
        .group_by("k", maintain_order=True)
        .agg(g=m.col("w").sum())
    ),
    "a cumulative sum, in a window": lambda m, q: q.with_columns(
        w=m.col("b").cum_sum()
    ).with_columns(g=m.col("w").max().over("k")),
    "a window, in another window": lambda m, q: q.with_columns(
        w=m.col("b").sum().over("k")
    ).with_columns(g=m.col("w").max().over("a")),
    "a select of one value overwritten": lambda m, q: (
        q.filter(m.col("a") > 100).select(n=m.lit(3)).with_columns(n=m.lit(0) > m.lit(0))
    ),
    "groups no later step reads a column of": lambda m, q: (
        q.group_by("k", maintain_order=True)
        .agg(g=m.col("a").sum())
        .with_columns(g=m.lit(0))
        .select("g")
    ),
    "a grouping after columns and before a filter": lambda m, q: (
        q.with_columns(w=m.col("k"))
        .group_by("k", maintain_order=True)
        .agg(g=m.col("a").sum())
        .filter(m.col("k") == "x")
    ),
}


#: every frame kind, numpy-backed pandas included (its nullable ints become floats)
KINDS = ("polars", "pyarrow", "pandas-arrow", "pandas-numpy")


def _same_data_in_polars(frame: Any) -> pl.DataFrame:
    """The data of ``frame`` as polars holds it (pandas NaN as null, as colbridge reads it)."""
    return as_polars(frame) if not isinstance(frame, pd.DataFrame) else pl.from_pandas(frame)


def _agrees(plan: Plan, tier: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``plan`` gives polars' columns, types and values on every frame kind, bit for bit."""
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    for kind in KINDS:
        frame = to_kind(TABLE, kind)
        want = plan(pl, _same_data_in_polars(frame).lazy()).collect()
        got = as_polars(plan(cb, cb.lazy(frame)).compute())
        problem = frame_mismatch(got, want)
        assert problem is None, f"{kind} input: {problem}"


@pytest.mark.parametrize("name", list(MISSING))
def test_a_column_left_out_by_a_step_is_not_found(name: str) -> None:
    plan = MISSING[name]
    with pytest.raises(pl.exceptions.ColumnNotFoundError):
        plan(pl, pl.from_arrow(TABLE).lazy()).collect()
    for kind in KINDS:
        with pytest.raises(ColumnNotFoundError, match="not found; available columns"):
            plan(cb, cb.lazy(to_kind(TABLE, kind))).compute()


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
@pytest.mark.parametrize("name", list(LITERALS))
def test_literals_alone_make_one_row_after_a_filter(
    name: str, tier: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _agrees(LITERALS[name], tier, monkeypatch)


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
@pytest.mark.parametrize("name", list(MADE))
def test_a_column_made_earlier_keeps_its_meaning(
    name: str, tier: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _agrees(MADE[name], tier, monkeypatch)
