"""A recurring compute runs the passes chosen before, and answers as the first did.

A plan of one segment of plain passes (whole-column reductions and an elementwise
pass: `Segment.plain_passes`) keeps the passes (kernels) its compute chose once
they are settled; a compute of the same plan again binds its columns and calls them
(`colbridge.backends.cpu.run_recurring`). Whatever picks a pass must pick
another here too: inputs that now hold nulls, NaN that means null (pandas), the
tier asked for, threads above `PARALLEL_MIN_ROWS`, a cleared kernel cache. Each
answer is compared with polars' (the oracle), and each report with the first.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.backends import common, cpu


def _steps(ns: Any, q: Any) -> Any:
    a, b, c = ns.col("a"), ns.col("b"), ns.col("c")
    return q.with_columns(z=(a * b + c).abs().sqrt() * 2 - a / c,
                          w=ns.when(a > b).then(a).otherwise(b) * c,
                          k=(c * 3).cast(pl.Int64) // 2)  # fmt: skip


def _frame(n: int, seed: int, nulls: float) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    cols = {}
    for name in "abc":
        values = rng.normal(size=n) * 10
        mask = rng.random(n) < nulls if nulls else None
        cols[name] = pa.array(values, mask=mask)
    return pl.from_arrow(pa.table(cols))  # type: ignore[return-value]


def _want(df: pl.DataFrame) -> pl.DataFrame:
    return _steps(pl, df.lazy()).collect()


def _settled(q: Any) -> Any:
    """``q`` computed until its pass is kept: compiled in the background, then chosen."""
    q.compute(device="cpu")
    q.compute(device="cpu")
    cpu.wait_for_background_compiles()
    return q.compute(device="cpu")


@pytest.fixture(autouse=True)
def _auto_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "auto")


def test_a_recurring_compute_reports_and_answers_as_the_first() -> None:
    df = _frame(1_000, seed=1, nulls=0.1)
    q = _steps(cb, df.gpu)
    first = _settled(q)
    assert q.last_report is not None
    kernels = list(q.last_report.stats.kernels)
    assert kernels == ["elementwise[z, w, k] over 3 input(s) (compiled)"]
    hits = cb.cache_info().hits
    again = q.compute(device="cpu")
    assert q.last_report is not None
    assert q.last_report.stats.kernels == kernels
    assert q.last_report.stats.cache_hits == 1
    assert q.last_report.stats.compiled == 0
    assert cb.cache_info().hits == hits + 1
    assert_frame_equal(again, first)
    assert_frame_equal(again, _want(df))
    # the input columns are still the frame's own, the results fresh Arrow buffers
    assert _address(again["a"]) == _address(df["a"])
    assert _address(again["z"]) != _address(first["z"])


def _address(series: pl.Series) -> int:
    return int(pa.chunked_array(series).chunk(0).buffers()[1].address)


def test_another_frame_with_nulls_where_the_first_had_none_reads_its_bitmaps() -> None:
    clean = _frame(2_000, seed=2, nulls=0.0)
    _settled(_steps(cb, clean.gpu))  # the kept pass reads no validity
    for seed, nulls in ((3, 0.2), (4, 0.0), (5, 1.0), (6, 0.5)):
        df = _frame(2_000, seed=seed, nulls=nulls)
        got = _steps(cb, df.gpu).compute(device="cpu")
        assert_frame_equal(got, _want(df))
    sliced = _frame(3_000, seed=7, nulls=0.3)[37:2_037]  # bitmaps at a bit offset
    assert_frame_equal(_steps(cb, sliced.gpu).compute(device="cpu"), _want(sliced))


def test_pandas_nan_means_null_in_a_recurring_compute_too() -> None:
    arrow = _frame(500, seed=8, nulls=0.0).to_arrow()
    backed = arrow.to_pandas(types_mapper=pd.ArrowDtype)  # NaN is a value there
    q = _steps(cb, backed.gpu)
    _settled(q)
    numpy_backed = arrow.to_pandas()
    numpy_backed.loc[::7, "a"] = np.nan  # NaN in a NumPy float column: missing
    got = pl.from_pandas(_steps(cb, numpy_backed.gpu).compute(device="cpu"))
    assert_frame_equal(got, _want(pl.from_pandas(numpy_backed)))
    assert got["z"].null_count() > 0


def test_the_tier_and_threads_asked_for_pick_their_own_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    df = _frame(800, seed=9, nulls=0.1)
    q = _steps(cb, df.gpu)
    _settled(q)
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "numpy")
    got = q.compute(device="cpu")
    assert q.last_report is not None
    assert q.last_report.stats.kernels == ["elementwise[z, w, k] over 3 input(s) (numpy)"]
    assert_frame_equal(got, _want(df))
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "compiled")
    big = _frame(cpu.PARALLEL_MIN_ROWS + 10, seed=10, nulls=0.1)
    assert_frame_equal(_steps(cb, big.gpu).compute(device="cpu"), _want(big))
    assert_frame_equal(q.compute(device="cpu"), _want(df))


def test_a_cleared_kernel_cache_is_not_bypassed() -> None:
    df = _frame(300, seed=11, nulls=0.1)
    q = _steps(cb, df.gpu)
    _settled(q)
    cb.clear_cache()
    got = q.compute(device="cpu")
    info = cb.cache_info()
    assert info.misses >= 1
    assert info.hits == 0
    assert_frame_equal(got, _want(df))


def test_recurring_computes_from_threads_answer_each_their_frame() -> None:
    frames = [_frame(1_000, seed=20 + k, nulls=0.1 * (k % 3)) for k in range(6)]
    _settled(_steps(cb, frames[0].gpu))
    handles = [_steps(cb, df.gpu) for df in frames]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda q: q.compute(device="cpu"), handles * 5))
    for k, got in enumerate(results):
        assert_frame_equal(got, _want(frames[k % len(frames)]))


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 300), min_size=2, max_size=5),
    nulls=st.lists(st.sampled_from([0.0, 0.05, 0.5, 1.0]), min_size=5, max_size=5),
    start=st.integers(0, 40),
    seed=st.integers(0, 2**16),
)
def test_computes_of_one_plan_over_varied_frames_equal_polars(
    sizes: list[int], nulls: list[float], start: int, seed: int
) -> None:
    # frames of one schema in turn (empty, sliced, with and without nulls), each through
    # a pass kept by an earlier one when there is one
    for k, n in enumerate(sizes):
        df = _frame(n + start, seed=seed + k, nulls=nulls[k])[start:]
        got = _steps(cb, df.gpu).compute(device="cpu")
        assert_frame_equal(got, _want(df))


_TYPE_ROTATION = [pl.Int64, pl.Float64, pl.Int8, pl.Float32, pl.UInt8, pl.Int32, pl.Int64]


@pytest.mark.parametrize(
    "steps",
    [
        lambda m, q: q.filter(m.col("k") > 0).select(r=m.col("x").shift(1), c=m.col("x").cum_sum()),
        lambda m, q: q.filter(m.col("k") > 0).select(s=m.col("x").sum(), a=m.col("x").abs()),
        lambda m, q: q.filter(m.col("k") > 0).group_by("g").agg(m.col("x").sum()),
        lambda m, q: q.with_columns(y=m.col("x")).filter(m.col("k") > 0)
        .select(r=m.col("y").rolling_max(2)),
    ],
    ids=["filter-scan", "filter-reduction", "filter-group-by", "renamed-then-filter"],
)  # fmt: skip
def test_the_same_steps_on_frames_whose_columns_change_type(steps: Any) -> None:
    """A plan is typed again for a frame whose column a later segment reads has a new type.

    After a filter the next segment reads the frame's columns itself: a frame whose
    ``x`` is Float64 after one whose ``x`` was Int64 must not reuse the Int64 typing
    (it read the float's bits as integers, or past the end of an Int8 buffer).
    """
    for dtype in _TYPE_ROTATION:
        df = pl.DataFrame({"x": pl.Series([10, 20, 30, 40, 50], dtype=dtype),
                           "k": [0, 1, 2, 0, 4], "g": [1, 2, 1, 2, 1]})  # fmt: skip
        if dtype.is_float():
            df = df.with_columns(pl.col("x") + 0.5)
        want = steps(pl, df)
        assert_frame_equal(steps(cb, df.gpu).compute(), want, check_row_order="g" not in want)
        got = pl.from_arrow(steps(cb, cb.lazy(df.to_arrow())).compute())
        assert_frame_equal(got, want, check_row_order="g" not in want)


# -- plain passes: whole-column reductions, then (or instead of) an elementwise pass ----
_PLAIN = {
    "reductions-as-outputs": lambda m, q: q.select(
        s=m.col("a").sum(), mx=m.col("b").max(), n=m.col("c").null_count(), mu=m.col("a").mean()
    ),
    "z-score": lambda m, q: q.with_columns(
        z=(m.col("a") - m.col("a").mean()) / m.col("a").std()
    ),
    "one-row-arithmetic": lambda m, q: q.select(r=(m.col("a") * 2).sum() + m.col("b").min()),
    "two-levels": lambda m, q: q.with_columns(
        d=m.col("a") - (m.col("a") - m.col("a").mean()).abs().mean()
    ),
}


@pytest.mark.parametrize("shape", list(_PLAIN))
def test_reduction_passes_recur_as_they_were_chosen(
    shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = _PLAIN[shape]
    df = _frame(1_000, seed=30, nulls=0.1)
    q = steps(cb, df.gpu)
    first = _settled(q)
    assert q.last_report is not None
    kernels = list(q.last_report.stats.kernels)
    assert all(k.endswith("(compiled)") for k in kernels), kernels

    def chosen_again(*args: object, **kwargs: object) -> None:
        msg = "the passes were chosen again, not run as they were kept"
        raise AssertionError(msg)

    monkeypatch.setattr(cpu, "run_segment", chosen_again)
    hits = cb.cache_info().hits
    again = q.compute(device="cpu")
    assert q.last_report is not None
    assert q.last_report.stats.kernels == kernels
    assert q.last_report.stats.compiled == 0
    assert q.last_report.stats.cache_hits == len(kernels)
    assert cb.cache_info().hits == hits + len(kernels)
    assert_frame_equal(again, first)
    assert_frame_equal(again, steps(pl, df.lazy()).collect())


@pytest.mark.parametrize("shape", list(_PLAIN))
def test_reduction_passes_of_another_variant_are_chosen_anew(shape: str) -> None:
    steps = _PLAIN[shape]
    _settled(steps(cb, _frame(1_000, seed=31, nulls=0.0).gpu))
    frames = [_frame(1_000, seed=32, nulls=0.2), _frame(1_000, seed=33, nulls=1.0),
              _frame(3_000, seed=34, nulls=0.3)[37:2_037],
              _frame(cpu.PARALLEL_MIN_ROWS + 10, seed=35, nulls=0.0)]  # fmt: skip
    for df in frames:
        assert_frame_equal(steps(cb, df.gpu).compute(device="cpu"), steps(pl, df.lazy()).collect())
    numpy_backed = _frame(500, seed=36, nulls=0.0).to_pandas()
    numpy_backed.loc[::7, "a"] = np.nan  # NaN in a NumPy float column: missing
    got = pl.from_pandas(steps(cb, numpy_backed.gpu).compute(device="cpu"))
    assert_frame_equal(got, steps(pl, pl.from_pandas(numpy_backed).lazy()).collect())


def test_an_empty_frame_still_checks_its_one_value_outputs() -> None:
    # polars (eager, as `check_scalar_outputs` follows it) evaluates `count - 1` once even
    # over no rows: 0 - 1 wraps and the cast fails
    def steps(m: Any, q: Any) -> Any:
        return q.with_columns(z=(m.col("a").count() - 1).cast(pl.UInt8), m=m.col("b").mean())

    _settled(steps(cb, _frame(200, seed=37, nulls=0.0).gpu))
    empty = _frame(0, seed=38, nulls=0.0)
    with pytest.raises(pl.exceptions.InvalidOperationError):
        steps(pl, empty)
    with pytest.raises(cb.InvalidOperationError, match="strict cast to uint8"):
        steps(cb, empty.gpu).compute(device="cpu")
    for shape in _PLAIN.values():
        assert_frame_equal(shape(cb, empty.gpu).compute(device="cpu"),
                           shape(pl, empty.lazy()).collect())  # fmt: skip


@pytest.mark.parametrize(
    "steps",
    [
        lambda m, q: q.filter(m.col("a") > 0).with_columns(z=m.col("a") * 2,
                                                           s=m.col("b").sum()),
        # a strict cast can fail on rows the filter drops: the pass runs over every row
        # and gives its mask to the segment loop
        lambda m, q: q.with_columns(k=(m.col("a") * 10).cast(pl.Int32)).filter(m.col("b") > 0),
    ],
    ids=["filter-first", "filter-after-a-cast"],
)  # fmt: skip
def test_a_filtered_segment_computed_again_answers_as_polars(
    steps: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a filter's mask is applied by the segment loop, which the plain passes' recurring
    # compute skips; the compacting filter keeps what it chose by its own key (the
    # carried columns' types and nulls in it)
    df = _frame(2_000, seed=39, nulls=0.1)
    q = steps(cb, df.gpu)
    _settled(q)
    assert_frame_equal(q.compute(device="cpu"), steps(pl, df.lazy()).collect())
    for other in (_frame(2_000, seed=40, nulls=0.0), _frame(2_000, seed=41, nulls=0.6),
                  _frame(3_000, seed=42, nulls=0.2)[11:2_011]):  # fmt: skip
        assert_frame_equal(steps(cb, other.gpu).compute(device="cpu"),
                           steps(pl, other.lazy()).collect())  # fmt: skip
    # (compiled: `auto` would evaluate with NumPy again after the clearing, filter or not)
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "compiled")
    assert_frame_equal(q.compute(device="cpu"), steps(pl, df.lazy()).collect())
    cb.clear_cache()
    assert_frame_equal(q.compute(device="cpu"), steps(pl, df.lazy()).collect())
    assert cb.cache_info().hits == 0


def test_passes_kept_in_a_job_are_keyed_by_the_nullability_they_were_made_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Inside a job, an input another piece saw nulls in stays nullable for the job's later
    # pieces (`input_nullability`); Dask runs pieces on threads, so another piece can
    # compute while one runs. Made certain here: right after the first piece's run took
    # its nullability, the other piece (with nulls) computes, whole, on the same thread.
    original = cpu._Run.__init__
    interleaved: list[pl.DataFrame] = []
    started: list[bool] = []

    def steps(m: Any, q: Any) -> Any:
        return q.with_columns(z=m.col("a") - m.col("a").mean(), w=m.col("a") * 2)

    clean = pl.DataFrame({"a": [1.0, 2.0, 3.0, 4.0]})
    holey = pl.DataFrame({"a": [1.0, None, 5.0, None]})

    def another_piece_meanwhile(run: Any, *args: Any) -> None:
        original(run, *args)
        if not started:
            started.append(True)
            interleaved.append(steps(cb, holey.gpu).compute(device="cpu"))

    monkeypatch.setattr(cpu._Run, "__init__", another_piece_meanwhile)
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "compiled")  # passes are kept once compiled
    with common.piece_of_job():
        first = steps(cb, clean.gpu).compute(device="cpu")
        again = steps(cb, holey.gpu).compute(device="cpu")  # the plan (and segment) is shared
    assert_frame_equal(first, steps(pl, clean.lazy()).collect())
    assert_frame_equal(interleaved[0], steps(pl, holey.lazy()).collect())
    assert_frame_equal(again, steps(pl, holey.lazy()).collect())
