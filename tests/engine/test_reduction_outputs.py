"""A ``select`` of bare whole-column reductions: the reductions are the outputs.

Such a one-row segment makes its outputs from the finished reductions, with no
elementwise kernel after them (`colbridge.backends.common.reduction_outputs`). Every
reduction, on every dtype, with nulls, all-null and empty columns, against polars;
and the kernels that ran, so a regression to a second kernel is seen.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.testing.asserts import assert_same_as_polars

TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64(),
         pa.float32(), pa.float64(), pa.bool_()]  # fmt: skip


def _column(arrow_type: pa.DataType, n: int, nulls: str, seed: int) -> pa.Array:
    rng = np.random.default_rng(seed)
    if pa.types.is_boolean(arrow_type):
        values: Any = rng.random(n) < 0.5
    elif pa.types.is_floating(arrow_type):
        values = rng.standard_normal(n) * 100
    else:
        info = np.iinfo(arrow_type.to_pandas_dtype())
        values = rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True)
    mask = {"none": np.zeros(n, bool), "some": rng.random(n) < 0.2, "all": np.ones(n, bool)}[nulls]
    return pa.array(values, type=arrow_type, mask=mask)


def _reductions(m: Any, q: Any, numeric: bool) -> Any:
    x = m.col("x")
    common = {"lo": x.min(), "hi": x.max(), "n": x.count(), "nulls": x.null_count()}
    if not numeric:
        return q.select(**common)
    return q.select(**common, total=x.sum(), mean=x.mean(), sd=x.std(), var=x.var(ddof=0))


@pytest.mark.parametrize("arrow_type", TYPES, ids=str)
@pytest.mark.parametrize("nulls", ["none", "some", "all"])
@pytest.mark.parametrize("n", [0, 1, 70_000])
def test_bare_reductions_match_polars(arrow_type: pa.DataType, nulls: str, n: int) -> None:
    table = pa.table({"x": _column(arrow_type, n, nulls, seed=n)})
    numeric = not pa.types.is_boolean(arrow_type)
    # float32 sums: colbridge accumulates in float64, polars in float32 (docs/semantics.md)
    rtol = 1e-5 if arrow_type == pa.float32() else 1e-12
    assert_same_as_polars(table, lambda m, q: _reductions(m, q, numeric), rtol=rtol)


def test_strings_and_categories() -> None:
    words = pa.array(["pear", None, "apple", "fig", None, "kiwi"])
    table = pa.table({"s": words, "c": words.dictionary_encode()})
    # (min and max of strings are refused with a clear error: not reductions colbridge has)
    assert_same_as_polars(table, lambda m, q: q.select(
        n=m.col("s").count(), nulls=m.col("s").null_count(), cn=m.col("c").count(),
        cnulls=m.col("c").null_count()))  # fmt: skip


def test_dates_and_sliced_chunked_columns() -> None:
    days = pa.array([dt.date(2020, 1, d) if d % 3 else None for d in range(1, 29)])
    sliced = pa.chunked_array([pa.array(np.arange(40.0)).slice(3, 20), pa.array([None, 7.5])])
    table = pa.table({"d": days.slice(0, 22), "x": sliced})
    assert_same_as_polars(table, lambda m, q: q.select(
        first_day=m.col("d").min(), last_day=m.col("d").max(), total=m.col("x").sum(),
        mean=m.col("x").mean(), n=m.col("x").count()))  # fmt: skip


@pytest.mark.parametrize("kind", ["polars", "pandas", "pyarrow"])
def test_only_the_reduction_kernel_runs(kind: str) -> None:
    rng = np.random.default_rng(0)
    table = pa.table({"a": rng.random(1000), "b": rng.integers(0, 9, 1000)})
    frame: Any = {"polars": lambda: __import__("polars").from_arrow(table),
                  "pandas": table.to_pandas, "pyarrow": lambda: table}[kind]()  # fmt: skip
    q = cb.lazy(frame).select(s=cb.col("a").sum(), m=cb.col("b").max(), c=cb.col("b").count())
    q.compute()
    kernels = q.last_report.stats.kernels  # type: ignore[union-attr]
    assert [k.split("[")[0].split(" ")[0] for k in kernels] == ["reduce"], kernels
    plan = q.explain()
    assert "1 pass(es) over the rows, 1 fused kernel(s)" in plan
    assert "the reductions as they are (no elementwise pass): ['s', 'm', 'c']" in plan
    # an output that computes more than a reduction still takes the elementwise kernel
    q2 = cb.lazy(frame).select(s=cb.col("a").sum() * 2, m=cb.col("b").max())
    out = q2.compute()
    kernels = q2.last_report.stats.kernels  # type: ignore[union-attr]
    assert [k.split("[")[0].split(" ")[0] for k in kernels] == ["reduce", "elementwise"], kernels
    s = out["s"][0] if kind != "pyarrow" else out["s"][0].as_py()
    assert s == pytest.approx(2 * float(np.sum(table["a"].to_numpy())), rel=1e-12)
