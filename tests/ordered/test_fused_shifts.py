"""Shifts fused into the passes: ``x.shift(k)`` read ``k`` rows back by the kernels, no scan.

A whole-frame shift of a frame column is row ``i - k`` of the column
(`colbridge.plan.planner.Segment.lagged`): the kernels of every target read the
column itself at that row, its validity word moved ``k`` bits, and the rows the
shift moves in are null, or hold its fill value (a kernel argument) and are valid.
Lags cross 64-row words and 16,384-row blocks, reach past the frame, read ahead
(negative), and feed elementwise outputs,
filters, reductions and both CPU tiers; each answer is polars'. The shift as
an output of its own is the column's rows without a copy, in two chunks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import HostRuntime, compute_on_host
from tests.ordered.ordered_data import column

#: lags at the edges of the kernels' words (64 rows) and blocks (16,384 rows)
EDGE_LAGS = (1, 2, 63, 64, 65, 127, 16383, 16384, 16385)


def _table(n: int, seed: int, *, offset: int = 0, nulls: str = "random") -> pa.Table:
    rng = np.random.default_rng(seed)
    cols = {d: column(d, n + offset, rng, nulls=nulls, specials=0.0)
            for d in ("float64", "int32", "uint8", "bool", "float32")}  # fmt: skip
    cols["y"] = column("float64", n + offset, rng, nulls="none", specials=0.0)
    return pa.table(cols).slice(offset)


def _steps(k: int, j: int, *, bools: bool = True) -> Any:
    """Shifts by ``k`` and ``j`` in every role; ``bools=False`` leaves out the outputs
    whose bits are made row by row (booleans, a validity that depends on the values), so
    the kernel runs its flat row loop, split at the lags."""

    def steps(m: Any, q: Any) -> Any:
        x, i, u, b, f, y = (m.col(c) for c in ("float64", "int32", "uint8", "bool",
                                                "float32", "y"))  # fmt: skip
        outputs = {
            "s": x.shift(k),
            "d": x - x.shift(k),
            "di": i.diff(k),
            "du": u.diff(-j),
            "p": y.pct_change(j),
            "pi": i.pct_change(k),
            "mix": x.shift(k) * y.shift(-j) + f.shift(j),
            # filled: the rows shifted in hold the fill (of the column's own type) and are
            # valid; `y` has no nulls, so its filled shift has no validity at all
            "sf": x.shift(k, fill_value=1.5),
            "if": i.shift(-j, fill_value=-7) - u.shift(k, fill_value=200),
            "yf": y.shift(-k, fill_value=2.0) * f.shift(j, fill_value=0.25) + x.shift(j),
        }
        if bools:  # and a validity that depends on the values (`//` by zero is null)
            outputs |= {"sb": b.shift(-k), "nb": x.shift(k).is_null() | b.shift(j),
                        "q": i.shift(j) // i, "bf": b.shift(k, fill_value=True) & b,
                        "nf": i.shift(-k, fill_value=0).is_null()}
        return q.with_columns(**outputs)

    return steps


@pytest.mark.parametrize("bools", [False, True], ids=["values", "bits"])
@pytest.mark.parametrize("k", EDGE_LAGS)
def test_lags_across_words_and_blocks(k: int, bools: bool, tier: str) -> None:
    # lags past a block only where the frame has the rows (the rest: `_longer_than_the_frame`)
    n = 40_000 if k > 300 or k == 64 else 300
    table = _table(n, seed=k + n, offset=5)
    steps = _steps(k, 64 if k != 64 else 3, bools=bools)
    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"), rtol=1e-12)


def test_lags_over_the_parallel_pass() -> None:
    # past `PARALLEL_MIN_ROWS`: the blocks run on the threads, each reading the block before
    table = _table(210_000, seed=3, offset=3)
    assert_same_as_polars(table, _steps(16385, 1), kinds=("polars",), rtol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_lags_longer_than_the_frame(n: int, tier: str) -> None:
    table = _table(n, seed=n, nulls="none")
    for k, j in [(1, 1), (n, n + 1), (n + 3, 7)]:
        if k == 0 or j == 0:
            continue
        assert_same_as_polars(table, _steps(k, j), kinds=("polars", "pyarrow"), rtol=1e-12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(0, 300),
    offset=st.integers(0, 9),
    k=st.integers(-320, 320).filter(bool),
    j=st.integers(-70, 70).filter(bool),
    nulls=st.sampled_from(["none", "random", "leading", "trailing", "runs", "all"]),
    seed=st.integers(0, 2**16),
    bools=st.booleans(),
)
def test_lags_against_polars(n: int, offset: int, k: int, j: int, nulls: str, seed: int,
                             bools: bool) -> None:  # fmt: skip
    table = _table(n, seed, offset=offset, nulls=nulls)
    assert_same_as_polars(table, _steps(k, j, bools=bools), kinds=("polars", "pyarrow"),
                          rtol=1e-12)  # fmt: skip


@pytest.mark.parametrize("k", [1, -2, 65])
def test_lags_in_filters_and_reductions(k: int, tier: str) -> None:
    table = _table(1000, seed=k % 7, offset=2)

    def filtered(m: Any, q: Any) -> Any:
        x, i = m.col("float64"), m.col("int32")
        return q.with_columns(d=x - x.shift(k)).filter(i.shift(k) > 0)

    def reduced(m: Any, q: Any) -> Any:
        x, i = m.col("float64"), m.col("int32")
        return q.select(a=x.diff(k).sum(), c=i.shift(k).count(), z=(x.shift(k) * x).max(),
                        e=(x - x.mean()).shift(k).sum())  # fmt: skip

    assert_same_as_polars(table, filtered, kinds=("polars", "pyarrow"), rtol=1e-12)
    assert_same_as_polars(table, reduced, kinds=("polars", "pyarrow"), rtol=1e-9)


def test_pandas_nan_nulls_are_read_lagged() -> None:
    # NumPy-backed pandas floats: NaN is null, and the rows the shift moves in are null too
    x = np.array([1.0, np.nan, 3.0, 4.0, np.nan, 6.0])
    pdf = pl.DataFrame({"x": x}, nan_to_null=True).to_pandas()
    # a fill tells a null from a NaN read as a value (the comparison turns NaN into null);
    # a filled shift: the fill on the rows shifted in, NaN moved from a row still null
    got = cb.lazy(pdf).with_columns(d=cb.col("x").diff(2), s=cb.col("x").shift(-1),
                                    f=cb.col("x").shift(1).fill_null(0.0),
                                    g=cb.col("x").shift(-2, fill_value=8.0)).compute()  # fmt: skip
    want = pl.DataFrame({"x": x}, nan_to_null=True).with_columns(
        d=pl.col("x").diff(2), s=pl.col("x").shift(-1), f=pl.col("x").shift(1).fill_null(0.0),
        g=pl.col("x").shift(-2, fill_value=8.0))
    assert_frame_equal(pl.from_pandas(got, nan_to_null=True), want)


def test_no_scan_pass_and_the_shift_is_the_column_itself() -> None:
    table = _table(1000, seed=1, offset=3)
    x = cb.col("float64")
    q = cb.lazy(table).with_columns(s=x.shift(2), d=x.diff(2))
    got = q.compute()
    assert not [k for k in q.last_report.stats.kernels if k.startswith("scan [")]
    text = q.explain()
    assert "no scan pass for col(\"float64\").shift(2, None): the passes read `float64` " \
        "2 row(s) back" in text  # fmt: skip
    assert "shifted without a copy" in text
    assert "scan result(s)" not in text
    # the shift: the nulls moved in, then the column's own first rows, in place
    s = got.column("s")
    assert s.num_chunks == 2
    assert s.chunk(0).null_count == 2
    assert len(s.chunk(0)) == 2
    kept, source = s.chunk(1), table.column("float64").chunk(0)
    assert kept.buffers()[1].address == source.buffers()[1].address
    assert kept.offset == source.offset
    assert len(kept) == len(source) - 2
    assert s.to_pylist() == [None, None, *source.to_pylist()[:-2]]


def test_polars_results_keep_the_two_chunks() -> None:
    df = pl.DataFrame({"x": [1.0, 2.0, None, 4.0]})
    got = cb.lazy(df).with_columns(s=cb.col("x").shift(1)).compute()
    assert got["s"].n_chunks() == 2  # as polars' own shift: no copy to rechunk
    assert got["s"].to_list() == [None, 1.0, 2.0, None]


def test_kernel_sources_read_the_column_rows_back() -> None:
    x = cb.col("x")
    q = cb.lazy(pa.table({"x": pa.array([1.0, None, 3.0])})).with_columns(d=x - x.shift(1))
    cpu = q.explain(source=True, target="cpu")
    assert "li1 = i - lg1" in cpu  # the plain offset for rows past the first
    assert "sw1 = _word(v1, vo1 - lg1, w)" in cpu  # the bitmap moved `lg1` rows
    cuda = q.explain(source=True, device="cpu", target="cuda")
    assert "(r - lg1 >= 0LL && r - lg1 < n)" in cuda


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_every_lag_of_a_direction_shares_one_kernel(
    tier: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # how many rows back is a kernel argument: a new `k` compiles nothing
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    table = _table(300, seed=31)
    x, i = cb.col("float64"), cb.col("int32")
    frame = pl.from_arrow(table)
    compiled = []
    for k, j in [(1, -1), (3, -2), (64, -65), (299, -300), (301, -301)]:
        q = cb.lazy(table).with_columns(d=x - x.shift(k), e=i.shift(j), f=x.diff(k) * 2)
        got = pl.from_arrow(q.compute())
        want = frame.with_columns(d=pl.col("float64") - pl.col("float64").shift(k),
                                  e=pl.col("int32").shift(j), f=pl.col("float64").diff(k) * 2)
        assert_frame_equal(got, want)
        compiled.append(q.last_report.stats.compiled)  # type: ignore[union-attr]
    assert compiled[1:] == [0, 0, 0, 0]
    # shifts back and ahead of one column: the column and two lagged inputs, each its own
    # lag argument
    q = cb.lazy(table).with_columns(d=x - x.shift(2), e=x.shift(-5) + x)
    source = q.explain(source=True, target="cpu")
    assert "(n, x0, v0, vo0, x1, v1, vo1, lg1, x2, v2, vo2, lg2, " in source


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_fills_are_kernel_arguments_too(tier: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # `shift(k, fill_value)` of the column's own type is read in place as well: the rows
    # shifted in hold the fill, an argument like the lag, so neither compiles anything new
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    table = _table(300, seed=37, offset=2)
    x, i = cb.col("float64"), cb.col("int32")
    frame = pl.from_arrow(table)
    px, pi = pl.col("float64"), pl.col("int32")
    compiled = []
    for k, fx, fi in [(1, 0.0, 0), (5, -2.5, 7), (64, float("nan"), -2**31), (301, 1e300, 3)]:
        q = cb.lazy(table).with_columns(d=x - x.shift(k, fill_value=fx),
                                        e=i.shift(-k, fill_value=fi) + i)  # fmt: skip
        got = pl.from_arrow(q.compute())
        want = frame.with_columns(d=px - px.shift(k, fill_value=fx),
                                  e=pi.shift(-k, fill_value=fi) + pi)  # fmt: skip
        assert_frame_equal(got, want)
        assert not [s for s in q.last_report.stats.kernels if s.startswith("scan [")]  # type: ignore[union-attr]
        compiled.append(q.last_report.stats.compiled)  # type: ignore[union-attr]
    assert compiled[1:] == [0, 0, 0]
    text = q.explain()
    assert "the passes read `float64` 301 row(s) back, 1e+300 on the rows shifted in" in text
    source = q.explain(source=True, target="cpu")
    assert "lg1, fl1, " in source  # the fill's argument follows the lag's
    # a fill of another type widens the column first: that shift is scanned (polars' type)
    q = cb.lazy(table).with_columns(w=i.shift(2, fill_value=0.5))
    assert_frame_equal(pl.from_arrow(q.compute()),
                       frame.with_columns(w=pi.shift(2, fill_value=0.5)))  # fmt: skip
    assert "no scan pass" not in q.explain()


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64", "int8", "int64",
                                   "bool"])  # fmt: skip
def test_widening_casts_move_after_the_shift(dtype: str, tier: str) -> None:
    # `diff` of unsigned integers and `pct_change` of integers widen the column first
    # (non-strict); `x.cast(t).shift(n)` is `x.shift(n).cast(t)`, so the column itself
    # is read in place. UInt64 values past Int64 become null either way.
    rng = np.random.default_rng(len(dtype))
    table = pa.table({"x": column(dtype, 500, rng, nulls="random", specials=0.0)})
    x = pl.col("x")
    exprs = {"p": x.pct_change(3), "p2": x.pct_change(-2)}
    if dtype.startswith("uint"):
        exprs |= {"d": x.diff(2), "d2": x.diff(-1)}
    want = pl.from_arrow(table).with_columns(**exprs)
    cx = cb.col("x")
    cexprs = {"p": cx.pct_change(3), "p2": cx.pct_change(-2)}
    if dtype.startswith("uint"):
        cexprs |= {"d": cx.diff(2), "d2": cx.diff(-1)}
    q = cb.lazy(table).with_columns(**cexprs)
    assert_frame_equal(pl.from_arrow(q.compute()), want, rel_tol=1e-12)
    assert not [k for k in q.last_report.stats.kernels if k.startswith("scan [")]  # type: ignore[union-attr]
    assert 'no scan pass for col("x").shift(3, None)' in q.explain()


@pytest.mark.parametrize("n", [0, 1, 70, 300])
def test_cuda_kernels_read_rows_back(n: int) -> None:
    table = _table(n, seed=n + 9, offset=3)
    q = _steps(5 if n != 70 else 64, -3)(cb, cb.lazy(table))
    got = compute_on_host(q)
    want = _steps(5 if n != 70 else 64, -3)(pl, pl.from_arrow(table).lazy()).collect()
    assert_frame_equal(pl.from_arrow(got), want, rel_tol=1e-12)
    # nothing is scanned: the difference of unsigned integers and the pct_change of
    # integers shift the column itself, then widen it
    assert not [k for k in q.last_report.stats.kernels if k.startswith("scan [")]


@pytest.mark.parametrize("chunk", [64, 128])
def test_cuda_row_chunks_read_shifted_columns(chunk: int) -> None:
    # a chunk's kernels see its rows only: the runner makes the shift on the host instead
    from colbridge.backends import cuda

    table = _table(300, seed=chunk, offset=3)
    q = _steps(65, -2)(cb, cb.lazy(table))
    with cuda.options(max_chunk_rows=chunk):
        got = compute_on_host(q)
    want = _steps(65, -2)(pl, pl.from_arrow(table).lazy()).collect()
    assert_frame_equal(pl.from_arrow(got), want, rel_tol=1e-12)
    assert any(" chunk(s)" in k and not k.endswith(" 1 chunk(s)") for k in
               q.last_report.stats.kernels if k.startswith("cuda elementwise"))  # fmt: skip


def test_cuda_passes_over_groups_read_shifted_columns() -> None:
    from colbridge.backends import cuda

    table = _table(300, seed=11, offset=1).append_column(
        "g", pa.array(np.arange(300) % 7))  # fmt: skip
    x, i = cb.col("float64"), cb.col("int32")
    q = cb.lazy(table).with_columns(
        m=(x - x.shift(3)).mean().over("g"), c=i.shift(-2).count().over("g"), d=x.diff(1))
    runtime = HostRuntime()
    with cuda.options(max_chunk_rows=64):  # the group passes' rows in chunks too
        got = compute_on_host(q, runtime)
    assert runtime.launches > 5
    px, pi = pl.col("float64"), pl.col("int32")
    want = pl.from_arrow(table).with_columns(
        m=(px - px.shift(3)).mean().over("g"), c=pi.shift(-2).count().over("g"), d=px.diff(1))
    assert_frame_equal(pl.from_arrow(got), want, rel_tol=1e-12)
    assert_same_as_polars(table, lambda m, q: q.with_columns(
        m=(m.col("float64") - m.col("float64").shift(3)).mean().over("g")), rtol=1e-12)


def test_shifts_wanted_whole(tier: str) -> None:
    # reductions taken from the whole column and keys read the shift as a column of its own
    table = _table(500, seed=21, offset=1)

    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("float64"), m.col("int32")
        return q.select(u=i.shift(2).n_unique(), f=x.shift(-1).first(), la=x.shift(3).last(),
                        s=x.shift(1).sum().over(i.shift(1)),
                        lf=x.shift(-3, fill_value=9.5).last(),
                        uf=i.shift(2, fill_value=-1).n_unique(),
                        sf=x.sum().over(i.shift(1, fill_value=4)))  # fmt: skip

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"), rtol=1e-12)


def test_uint64_past_int64_is_null_in_a_diff_read_in_place(tier: str) -> None:
    # the widening cast of `diff` is non-strict: a UInt64 past Int64 is null, before or
    # after the shift alike (polars: the same nulls)
    big = [2**64 - 1, 5, None, 2**63, 2**63 - 1, 7, 0, 2**63 + 9]
    table = pa.table({"x": pa.array(big, pa.uint64())})
    x = cb.col("x")
    q = cb.lazy(table).with_columns(d=x.diff(1), d2=x.diff(-2), p=x.pct_change(1))
    want = pl.from_arrow(table).with_columns(d=pl.col("x").diff(1), d2=pl.col("x").diff(-2),
                                             p=pl.col("x").pct_change(1))  # fmt: skip
    assert_frame_equal(pl.from_arrow(q.compute()), want)
    assert not [k for k in q.last_report.stats.kernels if k.startswith("scan [")]  # type: ignore[union-attr]
