"""``head``, ``tail``, ``slice`` and ``gather_every`` as the input of a reduction, against polars.

Rows by position in frame order, nulls included: of the whole column, of each group in
``group_by(...).agg`` and of each window of ``.over(keys)``; counts past the rows, zero,
negative offsets before the first row (``slice(-7, 3)`` of 5 rows is the first one),
with nulls, sliced and chunked columns, 1 to 30 groups with null keys. Integers compare
exactly, float sums within a few ulps (the order of the additions differs). Outside a
reduction each is refused by name, as are negative counts (polars fails there too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import InvalidOperationError, SchemaError
from colbridge.testing.asserts import Tolerance, assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.ordered.ordered_data import cut_table


def _table(n: int, seed: int, *, groups: int, nulls: float, offset: int, chunks: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    table = pa.table({
        "g": pa.array(rng.integers(0, groups, total), mask=rng.random(total) < 0.1),
        "x": pa.array(rng.normal(size=total), mask=mask()),
        "i": pa.array(rng.integers(-1000, 1000, total), mask=mask()),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


def _reductions(m: Any) -> list[dict[str, Any]]:
    """Each method, with counts and offsets at their edges, under reductions that read rows
    differently (sums, ends, counts, extremes), in two queries.

    Two queries: one holding all of them nests deep enough for the planner to raise the
    recursion limit inside an example.
    """
    x, i = m.col("x"), m.col("i")
    return [{
        "h0": i.head(0).sum(), "h3": i.head(3).sum(), "h_mean": x.head(4).mean(),
        "h_last": i.head(2).last(), "h50": i.head(50).len(), "h_default": x.head().count(),
        "t0": i.tail(0).len(), "t2": i.tail(2).sum(), "t_first": x.tail(3).first(),
        "t50": i.tail(50).max(),
    }, {
        "s_before": i.slice(-70, 68).sum(), "s_end": x.slice(-4).count(),
        "s_mid": i.slice(2, 3).min(), "s_none": i.slice(40, 0).len(),
        "s_past": x.slice(40, 100).max(),
        "g1": i.gather_every(1).sum(), "g3": i.gather_every(3, 1).sum(),
        "g_first": x.gather_every(7, 5).first(),
    }]  # fmt: skip


#: a mean of a few values near 0 differs in its last bits where the order of additions does
_FLOAT_SUMS = Tolerance(rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 7, 60, 300]),
    seed=st.integers(0, 2**31 - 1),
    groups=st.sampled_from([1, 3, 30]),
    nulls=st.sampled_from([0.0, 0.3]),
    offset=st.sampled_from([0, 5]),
    chunks=st.sampled_from([1, 3]),
)
def test_row_slices_equal_polars(n: int, seed: int, groups: int, nulls: float, offset: int,
                                 chunks: int) -> None:  # fmt: skip
    table = _table(n, seed, groups=groups, nulls=nulls, offset=offset, chunks=chunks)
    tolerance = {"h_mean": _FLOAT_SUMS}

    def whole(part: int) -> Callable[[Any, Any], Any]:
        return lambda m, q: q.select(**_reductions(m)[part])

    def grouped(part: int) -> Callable[[Any, Any], Any]:
        return lambda m, q: q.group_by("g", maintain_order=True).agg(**_reductions(m)[part])

    def windows(part: int) -> Callable[[Any, Any], Any]:
        return lambda m, q: q.select("g", **{name: e.over("g")
                                             for name, e in _reductions(m)[part].items()})

    for part in (0, 1):
        for steps in (whole(part), grouped(part), windows(part)):
            assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"), tolerance=tolerance)


def test_the_slice_before_the_first_row_is_shortened() -> None:
    frame = pl.DataFrame({"x": [1, 2, 3, 4, 5]})
    for start, length, want in ((-7, 3, [1]), (-7, 1, []), (-5, 2, [1, 2]), (-2, None, [4, 5]),
                                (6, 2, []), (-1, 5, [5])):  # fmt: skip
        got = frame.gpu.select(s=cb.col("x").slice(start, length).sum(),
                               n=cb.col("x").slice(start, length).len()).compute()  # fmt: skip
        assert got.row(0) == (sum(want), len(want)), (start, length)


def test_every_frame_kind_the_string_language_and_the_cuda_code_path() -> None:
    table = _table(200, 3, groups=4, nulls=0.2, offset=0, chunks=1)
    steps = lambda m, q: q.group_by("g", maintain_order=True).agg(  # noqa: E731
        a=m.col("i").head(3).sum(), b=m.col("i").tail(2).max(), c=m.col("i").slice(-4, 2).min(),
        d=m.col("i").gather_every(3, 1).sum())
    assert_same_as_polars(table, steps)
    want = steps(pl, pl.from_arrow(table))
    assert_frame_equal(pl.from_arrow(compute_on_host(steps(cb, cb.lazy(table)))), want)
    parsed = cb.lazy(table).eval(
        "a = sum(head(i, 3)).over(g)\nb = i.tail(2).max().over(g)\nc = i.slice(-4, 2).min()\n"
        "d = sum(gather_every(i, 3, 1))").compute()
    flat = pl.from_arrow(table)
    assert pl.from_arrow(parsed).equals(flat.with_columns(
        a=pl.col("i").head(3).sum().over("g"), b=pl.col("i").tail(2).max().over("g"),
        c=pl.col("i").slice(-4, 2).min(), d=pl.col("i").gather_every(3, 1).sum()))


@pytest.mark.parametrize(("build", "error", "match"), [
    (lambda: cb.col("x").head(3), SchemaError,
     r'`col\("x"\)\.head\(3\)`: `head\(3\)` inside' r" an expression would change the number of "
     r"rows; use it as an output of `select` \(outputs of one filter together\), as the "
     r"input of a reduction \(`x\.head\(3\)\.sum\(\)`\)"),
    (lambda: cb.col("x").slice(-2) * 2, SchemaError, r"`slice\(-2, None\)` inside an expression"),
    (lambda: cb.col("x").head(-2).sum(), SchemaError, r"`head\(n=-2\)`: `n` must be >= 0"),
    (lambda: cb.col("x").gather_every(0).sum(), InvalidOperationError, r"`n` is at least 1"),
    (lambda: cb.col("x").slice(1, -1).sum(), SchemaError, r"`slice\(length=-1\)`"),
])  # fmt: skip
def test_refusals_name_the_method(build: Any, error: type, match: str) -> None:
    frame = pl.DataFrame({"x": [1.0, 2.0, 3.0]})
    with pytest.raises(error, match=match):  # a column of the frame's rows: refused
        frame.gpu.with_columns(y=build()).compute()
