"""Numbers inside reductions and ``clip`` bounds are kernel arguments, as other literals are.

``x.filter(y > 2).sum()`` and ``x.filter(y > 3).sum()`` (whole, ``group_by(...).agg``
and ``.over(keys)``), ``x.clip(0, 1)`` and ``x.clip(0, 5)`` are plans of one shape: the
second compiles nothing and reads its own numbers. A kernel made for one plan names that
plan's reductions, so each check runs a kernel made for other numbers and compares
every value with polars: a number written into a shared kernel, or a result filed under
the other plan's reduction, fails here. Numbers equal in one plan and not in another
make plans of different shapes (the equal ones share accumulators).
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
from colbridge.runtime.pieces import fold_reductions
from colbridge.testing.asserts import Tolerance, assert_same_as_polars
from colbridge.testing.cuda_host import HostRuntime, compute_on_host
from tests.ordered.ordered_data import cut_table

#: float sums and means differ from polars' in their last bits (the order of additions)
_SUMS = Tolerance(rtol=1e-12, atol=1e-12)


def _table(n: int, seed: int, *, nulls: float = 0.2, offset: int = 3, chunks: int = 2) -> pa.Table:
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    table = pa.table({
        "g": pa.array(rng.integers(0, 4, total), mask=rng.random(total) < 0.1),
        "x": pa.array(rng.normal(size=total) * 3, mask=mask()),
        "i": pa.array(rng.integers(-9, 10, total), mask=mask()),
        "s": pa.array(rng.integers(-100, 100, total).astype(np.int8), mask=mask()),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


def _whole(t: int | float) -> Callable[[Any, Any], Any]:
    """Reductions reading a number: a filter's, an operand's, clip bounds, a second level."""

    def steps(m: Any, q: Any) -> Any:
        x, i, s = m.col("x"), m.col("i"), m.col("s")
        return q.select(
            a=x.filter(i > t).sum(), b=x.clip(-t, t).mean(), c=(i * t).max(),
            d=x.filter(i < t).std(), e=s.clip(-t, 2 * t).min(), f=i.filter(x > t).len(),
            # the mean is a result of an earlier pass read by the next one
            h=(x - x.filter(i > t).mean()).abs().max(),
        )  # fmt: skip

    return steps


def _grouped(t: int | float) -> Callable[[Any, Any], Any]:
    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("x"), m.col("i")
        return q.group_by("g", maintain_order=True).agg(
            a=x.filter(i > t).sum(), b=(x + t).max(), c=i.clip(-t, t).sum(),
            d=(x * t).sum().over("g").first(), e=x.filter(i < t).mean() * t,
        )  # fmt: skip

    return steps


def _windows(t: int | float) -> Callable[[Any, Any], Any]:
    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("x"), m.col("i")
        return q.select(
            "g", a=x.filter(i > t).max().over("g"), b=(i - t).sum().over("g"),
            c=x - x.filter(i < t).mean(), d=x.clip(-t, t),
        )  # fmt: skip

    return steps


_QUERIES = {"whole": _whole, "grouped": _grouped, "windows": _windows}


def _built(compute: Callable[[], Any]) -> tuple[Any, int]:
    """``compute()``'s result, and how many kernels it built (compiled or NumPy-tier modules).

    The kernel cache counts every kernel made, on either tier; `RunStats.compiled`
    counts compiled ones only, so it could not tell on the NumPy tier.
    """
    before = cb.cache_info().misses
    result = compute()
    return result, cb.cache_info().misses - before
_NUMBERS = [1, 2, -3, 7]  # of one type: the literals' types are in the plan's shape
_TOLERANCE = {"a": _SUMS, "b": _SUMS, "d": _SUMS, "e": _SUMS, "h": _SUMS, "c": _SUMS}


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
@pytest.mark.parametrize("query", sorted(_QUERIES))
def test_other_numbers_compile_nothing_and_read_their_own(
    query: str, tier: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    table = _table(300, seed=11)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    compiled = []
    for t in _NUMBERS:
        steps = _QUERIES[query](t)
        q = steps(cb, cb.lazy(frame))
        got, built = _built(q.compute)
        want = steps(pl, frame.lazy()).collect()
        assert_frame_equal(got, want, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)
        compiled.append(built)
    assert compiled[1:] == [0] * (len(_NUMBERS) - 1)


@pytest.mark.parametrize("query", sorted(_QUERIES))
def test_the_cuda_code_path_shares_its_kernels_too(query: str) -> None:
    table = _table(200, seed=12)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    runtime = HostRuntime()
    compiled = []
    for t in _NUMBERS[:3]:
        steps = _QUERIES[query](t)
        q = steps(cb, cb.lazy(frame))
        got, built = _built(lambda q=q: compute_on_host(q, runtime))
        want = steps(pl, frame.lazy()).collect()
        assert_frame_equal(got, want, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)
        compiled.append(built)
    assert compiled[1:] == [0, 0]


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_numbers_equal_in_one_plan_and_not_in_another(
    tier: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # with equal numbers, a sum and a mean of one filtered column share accumulators (a
    # plan of another shape); each shape's kernel then serves its own numbers
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    frame = pl.from_arrow(_table(250, seed=13))
    assert isinstance(frame, pl.DataFrame)
    compiled = {}
    for a, b in [(2, 2), (2, 3), (4, 4), (5, 1), (3, 3)]:
        def steps(m: Any, q: Any, a: int = a, b: int = b) -> Any:
            x, i = m.col("x"), m.col("i")
            return q.select(s=x.filter(i > a).sum(), m=x.filter(i > b).mean(),
                            n=i.filter(i > b).count())  # fmt: skip

        got, built = _built(steps(cb, cb.lazy(frame)).compute)
        assert_frame_equal(got, steps(pl, frame.lazy()).collect(), check_exact=False,
                           rel_tol=1e-12)  # fmt: skip
        compiled[(a, b)] = built
    assert compiled[(4, 4)] == compiled[(5, 1)] == compiled[(3, 3)] == 0


def test_streamed_and_partitioned_partials_file_results_under_their_own_reductions() -> None:
    # the pieces of a job fold partial rows by reduction: a kernel made for other numbers
    # names the running plan's reductions
    table = _table(240, seed=14, offset=0, chunks=1)
    pieces = [table.slice(0, 70), table.slice(70, 100), table.slice(170)]
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    before = cb.cache_info().compiles
    for k, t in enumerate([1, 4, -2]):
        x, i = cb.col("x"), cb.col("i")
        aggs = [x.filter(i > t).sum().node, (i * t).max().node, x.clip(-t, t).mean().node]
        values = fold_reductions((), aggs, pieces, table.slice(0, 0), "cpu")
        px, pi = pl.col("x"), pl.col("i")
        want = frame.select(a=px.filter(pi > t).sum(), b=(pi * t).max(),
                            c=px.clip(-t, t).mean()).row(0)  # fmt: skip
        got = [values[agg].value for agg in aggs]  # type: ignore[attr-defined]
        assert got == pytest.approx(list(want), rel=1e-12), t
        if k == 0:
            before = cb.cache_info().compiles
    assert cb.cache_info().compiles == before


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    t=st.integers(-12, 12),
    n=st.sampled_from([0, 1, 9, 130]),
    seed=st.integers(0, 2**31 - 1),
    nulls=st.sampled_from([0.0, 0.3]),
    offset=st.sampled_from([0, 5]),
    chunks=st.sampled_from([1, 3]),
)
def test_drawn_numbers_as_polars(t: int, n: int, seed: int, nulls: float, offset: int,
                                 chunks: int) -> None:  # fmt: skip
    # numbers drawn per example: the kernels are shared, so they compile once per shape
    table = _table(n, seed, nulls=nulls, offset=offset, chunks=chunks)
    for query in (_whole, _grouped, _windows):
        assert_same_as_polars(table, query(t), kinds=("polars", "pyarrow"), tolerance=_TOLERANCE)


def test_float_numbers_and_clip_bounds_of_each_type() -> None:
    # a bound is cast to the column's type (an int8 column's bound is an int8 argument)
    frame = pl.from_arrow(_table(150, seed=15))
    assert isinstance(frame, pl.DataFrame)
    compiled = []
    for lo, hi in [(-1.5, 2.25), (-7.0, 0.5), (-0.0, 9.75)]:
        def steps(m: Any, q: Any, lo: float = lo, hi: float = hi) -> Any:
            x, s = m.col("x"), m.col("s")
            return q.select(a=x.clip(lo, hi).sum(), b=s.clip(lo, hi).max(),
                            c=x.filter(x > hi).min(), d=s.clip(lo, hi))  # fmt: skip

        got, built = _built(steps(cb, cb.lazy(frame)).compute)
        assert_frame_equal(got, steps(pl, frame.lazy()).collect(), check_exact=False,
                           rel_tol=1e-12)  # fmt: skip
        compiled.append(built)
    assert compiled[1:] == [0, 0]


def test_an_empty_frame_checks_its_one_value_outputs_with_a_shared_kernel() -> None:
    # with no rows, one-value outputs are evaluated once (a strict cast there raises as
    # in polars); the plans differ only in the table `find` reads and in a number
    empty = pl.DataFrame({"s": pl.Series([], dtype=pl.String), "x": pl.Series([], dtype=pl.Int64)})
    for pattern, t in [("a", 1), ("b", 2), ("c", 3)]:
        def steps(m: Any, q: Any, pattern: str = pattern, t: int = t) -> Any:
            s, x = m.col("s"), m.col("x")
            return q.select(s.str.find(pattern), x + t, f=s.str.find(pattern).is_null().sum(),
                            g=x.filter(x > t).sum() * t)  # fmt: skip

        got = steps(cb, cb.lazy(empty)).compute()
        assert_frame_equal(got, steps(pl, empty.lazy()).collect())
