"""Generated CUDA kernels, compiled with g++ and run on the CPU, against the CPU backend and polars.

Three answers per example: the CUDA backend's code path with its kernels run
by `colbridge.testing.cuda_host.HostRuntime` (real threads, small grids, so the
grid-stride loops wrap), colbridge's own CPU backend, and polars as the
oracle. Data: lengths that are not multiples of 8, slices whose offsets are
not multiples of 8, nulls, NaN, ±inf, ±0 and integer extremes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.cuda_host import HostRuntime, compute_on_host
from tests.cuda.cuda_corpus import CB, GROUPS, PL, Group, assert_arrays_match, make_column, tables

SETTINGS = settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)

COMPARISONS = {"count": 0}


def _three_way(
    table: pa.Table,
    build: Any,
    *,
    ulps: int = 0,
    reduce_rtol: float = 0.0,
    runtime: HostRuntime | None = None,
    polars_rtol: float = 1e-12,
) -> None:
    """CUDA-on-host == CPU (bit for bit, or within ``ulps``), and both agree with polars."""
    got = compute_on_host(build(CB, cb.lazy(table)), runtime)
    cpu = build(CB, cb.lazy(table)).compute(device="cpu")
    want = build(PL, pl.from_arrow(table).lazy()).collect().to_arrow()
    assert got.column_names == cpu.column_names == want.column_names
    for name in got.column_names:
        g, c, w = got.column(name), cpu.column(name), want.column(name)
        loose = reduce_rtol > 0
        assert_arrays_match(g, c, what=f"cuda-host vs cpu `{name}`", ulps=ulps, rtol=reduce_rtol,
                            loose_nonfinite=loose)  # fmt: skip
        f32 = pa.types.is_float32(g.type)
        assert_arrays_match(g, w, what=f"cuda-host vs polars `{name}`",
                            rtol=1e-5 if f32 else polars_rtol, loose_nonfinite=loose)  # fmt: skip
        COMPARISONS["count"] += 1


def _with(group: Group) -> Any:
    return lambda m, q: q.with_columns(**group.exprs(m))


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: g.name)
@SETTINGS
@given(data=st.data())
def test_elementwise_groups(group: Group, data: st.DataObject) -> None:
    table = data.draw(tables(group))
    tolerance = 1e-5 if group.types[0] == pa.float32() else 1e-12
    _three_way(table, _with(group), ulps=group.ulps, polars_rtol=tolerance)


def _reductions(m: Any, q: Any) -> Any:
    a, b = m.col("a"), m.col("b")
    return q.select(
        s=a.sum(), mean=a.mean(), mn=a.min(), mx=a.max(), sd=a.std(), var=a.var(ddof=0),
        cnt=a.count(), nc=a.null_count(), bs=b.sum(), bmin=b.min(), bmax=b.max(),
    )  # fmt: skip


@pytest.mark.parametrize("types", [(pa.float64(), pa.int64()), (pa.float32(), pa.uint8()),
                                   (pa.int32(), pa.int8())], ids=str)  # fmt: skip
@SETTINGS
@given(data=st.data())
def test_reductions(types: tuple[pa.DataType, pa.DataType], data: st.DataObject) -> None:
    group = Group("r", (*types, pa.int64()), lambda m: {})
    table = data.draw(tables(group))
    # per-thread partials sum in another order than the CPU's per-block partials
    _three_way(table, _reductions, reduce_rtol=1e-9 if types[0] != pa.float32() else 1e-5,
               polars_rtol=1e-9)  # fmt: skip


def _standardise(m: Any, q: Any) -> Any:
    # clipped: near float64's max, whether mean/std overflow depends on the summation order
    a, b = m.col("a").clip(-1e6, 1e6), m.col("b")
    return q.with_columns(
        z=(a - a.mean()) / a.std(), share=b / b.sum(), above=a > a.mean(),
        centred=(a - (a - a.mean()).abs().mean()),
    ).filter(m.col("z").is_not_null() & (b > -20))  # fmt: skip


@SETTINGS
@given(data=st.data())
def test_nested_reductions_and_filter(data: st.DataObject) -> None:
    group = Group("z", (pa.float64(), pa.int64(), pa.int64()), lambda m: {})
    table = data.draw(tables(group))
    _three_way(table, _standardise, reduce_rtol=1e-9, polars_rtol=1e-9)


@pytest.mark.parametrize("budget", [3000, 8000])
def test_chunked_processing_matches_one_pass(budget: int) -> None:
    # a tiny memory budget forces many chunks (row ranges, multiples of 8 long)
    rng = np.random.default_rng(7)
    n, offset = 1003, 5
    table = pa.table({
        "a": make_column(rng, pa.float64(), n + offset, True),
        "b": make_column(rng, pa.int64(), n + offset, True),
        "c": make_column(rng, pa.bool_(), n + offset, True),
    }).slice(offset, n)  # fmt: skip

    def build(m: Any, q: Any) -> Any:
        a, b, c = m.col("a"), m.col("b"), m.col("c")
        return q.with_columns(x=a * 2 + b, y=b // 3, k=c & (a > 0), s=a.sum(), mx=b.max())

    runtime = HostRuntime(block=32, max_blocks=2, budget=budget)
    _three_way(table, build, reduce_rtol=1e-12, runtime=runtime)
    kernels = " ".join(compute_report(table, build, runtime))
    assert "chunk(s)" in kernels
    assert " in 1 chunk(s)" not in kernels


def compute_report(table: pa.Table, build: Any, runtime: HostRuntime) -> list[str]:
    lf = build(CB, cb.lazy(table))
    compute_on_host(lf, runtime)
    return list(lf.last_report.stats.kernels)


def test_strict_cast_failure_raises_like_the_cpu() -> None:
    table = pa.table({"a": pa.array([1.0, 300.0, None, 5.5]), "b": pa.array([1, 2, 3, 4])})
    lf = cb.lazy(table).with_columns(x=cb.col("a").cast("int8"))
    with pytest.raises(cb.InvalidOperationError, match=r"strict cast to int8 failed.*\(1 value\)"):
        compute_on_host(lf)
    with pytest.raises(cb.InvalidOperationError, match=r"strict cast to int8 failed"):
        lf.compute(device="cpu")
    with pytest.raises(pl.exceptions.InvalidOperationError):
        pl.from_arrow(table).with_columns(x=pl.col("a").cast(pl.Int8))


def test_negative_integer_exponent_is_an_error_on_every_backend() -> None:
    table = pa.table({"a": pa.array([2, 3, 4], pa.int64()), "b": pa.array([1, -1, None])})
    lf = cb.lazy(table).with_columns(p=cb.col("a") ** cb.col("b"))
    with pytest.raises(cb.InvalidOperationError, match="negative integer power"):
        compute_on_host(lf)
    with pytest.raises(cb.InvalidOperationError, match="negative integer power"):
        lf.compute(device="cpu")


def test_unwritten_output_bytes_would_be_caught() -> None:
    # outputs start poisoned; a 9-row bool output must come back with every bit decided
    table = pa.table({"a": pa.array([1.0, None, 3.0, -4.0, 5.0, 6.0, None, 8.0, 9.0])})
    out = compute_on_host(cb.lazy(table).with_columns(p=cb.col("a") > 2))
    assert out.column("p").to_pylist() == [False, None, True, False, True, True, None, True, True]


def test_comparisons_were_made() -> None:
    # runs last in this module: the differential tests above really compared columns
    assert COMPARISONS["count"] > 500
    print(f"\n{COMPARISONS['count']} host-executed columns compared with the CPU and polars")
