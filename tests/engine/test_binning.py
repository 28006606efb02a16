"""Binning by breakpoints (``bin_intervals``, ``cut``), by quantiles of the data
(``bin_quantiles``) and by position in sorted order (``bin_ranks``) against polars."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import warnings
from collections.abc import Iterator
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
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from colbridge.testing.data import ENGINE_TYPES, limit_values, make_column


@contextlib.contextmanager
def _numpy_tier() -> Iterator[None]:
    """Generated cases on the NumPy tier: each set of breaks is a new kernel to compile.

    The compiled tier runs the written cases below (the `tier` fixture).
    """
    before = os.environ.get("COLBRIDGE_CPU_TIER")
    os.environ["COLBRIDGE_CPU_TIER"] = "numpy"
    try:
        yield
    finally:
        os.environ["COLBRIDGE_CPU_TIER"] = before or "compiled"


def _same(df: pl.DataFrame, build: Any) -> None:
    got = df.gpu.select(**build(cb)).compute()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # polars 2 deprecates `cut`
        want = df.select(**build(pl))
    assert_frame_equal(got, want)


def _breaks(draw: st.DrawFn, column: pa.Array, floats: bool) -> list[Any]:
    """Breakpoints from the column's own values and its type's limits (ties and extremes)."""
    pool = [v for v in column.to_pylist() if v is not None]
    pool += [v.item() for v in limit_values(column.type)]
    if floats:
        pool = [float(v) for v in pool] + [0.5, -1.5, float("inf"), float("nan")]
    else:
        pool = [int(v) for v in pool if not isinstance(v, float) or np.isfinite(v)]
        pool += [-(2**63), 2**64 - 1, -1, 300]
    chosen = draw(st.lists(st.sampled_from(pool), max_size=6)) if pool else []
    if any(isinstance(v, int) and v >= 2**63 for v in chosen):
        chosen = [v for v in chosen if v >= 0]  # a polars Series of them is UInt64
    return sorted(chosen, key=lambda v: (isinstance(v, float) and np.isnan(v), v))


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_bin_intervals_of_numbers_as_polars(data: st.DataObject) -> None:
    arrow_type = data.draw(st.sampled_from(ENGINE_TYPES), label="type")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    n = data.draw(st.sampled_from([0, 1, 9, 40]), label="rows")
    column = make_column(rng, arrow_type, n, nulls=data.draw(st.sampled_from([0.0, 0.3])))
    floats = pa.types.is_floating(arrow_type) or data.draw(st.booleans(), label="float breaks")
    breaks = _breaks(data.draw, column, floats)
    right_closed = data.draw(st.booleans(), label="right_closed")
    labels = [f"b{k}" for k in range(len(breaks) + 1)]
    df = pl.DataFrame({"x": pl.from_arrow(column)})
    with _numpy_tier():
        _same(df, lambda m: {
            "i": m.col("x").bin_intervals(breaks, labels=False, right_closed=right_closed),
            "e": m.col("x").bin_intervals(breaks, labels=labels, right_closed=right_closed),
        })  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_cut_of_numbers_as_polars(data: st.DataObject) -> None:
    arrow_type = data.draw(st.sampled_from(ENGINE_TYPES), label="type")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    column = make_column(rng, arrow_type, 40, nulls=0.2)
    values = [float(v) for v in column.to_pylist() if v is not None and np.isfinite(v)]
    extra = [0.1, 1 / 3, -0.0, 1e-7, 2.5e-5, 1e16, 1e20, 123456.789, -1e300]
    breaks = data.draw(st.lists(st.sampled_from(values + extra), max_size=5, unique=True))
    left_closed = data.draw(st.booleans(), label="left_closed")
    df = pl.DataFrame({"x": pl.from_arrow(column)})
    with _numpy_tier():
        _same(df, lambda m: {"c": m.col("x").cut(breaks, left_closed=left_closed)})


#: a number of bins, or fractions in [0, 1] (ties and both ends included)
_BINS = st.one_of(
    st.integers(1, 12),
    st.lists(st.sampled_from([0.0, 0.1, 0.25, 1 / 3, 0.5, 0.7, 1.0]), max_size=4).map(sorted),
)


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_bin_quantiles_as_polars(data: st.DataObject) -> None:
    # breakpoints are the data's sorted values (NaN the largest) at floor(q * (len - 1)),
    # per window with `over`; an integer k is k bins at i * (len - 1) // k exactly
    arrow_type = data.draw(st.sampled_from(ENGINE_TYPES), label="type")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    n = data.draw(st.sampled_from([0, 1, 2, 9, 40]), label="rows")
    column = make_column(rng, arrow_type, n, nulls=data.draw(st.sampled_from([0.0, 0.3])))
    quantiles = data.draw(_BINS, label="quantiles")  # fmt: skip
    bins = quantiles if isinstance(quantiles, int) else len(quantiles) + 1
    right_closed = data.draw(st.booleans(), label="right_closed")
    groups = pl.Series(rng.integers(0, 3, n), dtype=pl.Int64)
    df = pl.DataFrame({"x": pl.from_arrow(column), "g": groups})

    def build(m: Any) -> dict[str, Any]:
        x = m.col("x")
        return {
            "i": x.bin_quantiles(quantiles, labels=False, right_closed=right_closed),
            "e": x.bin_quantiles(quantiles, labels=[f"q{k}" for k in range(bins)],
                                 right_closed=right_closed),
            "w": x.bin_quantiles(quantiles, labels=False, right_closed=right_closed).over("g"),
        }  # fmt: skip

    with _numpy_tier():
        _same(df, build)


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_bin_ranks_as_polars(data: st.DataObject) -> None:
    # positions in sorted order (ties in frame order): cumulative sizes floor(f * len + 0.5),
    # or k bins of len // k with the remainder to the first ones; per window with `over`
    arrow_type = data.draw(st.sampled_from([*ENGINE_TYPES, pa.string()]), label="type")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    n = data.draw(st.sampled_from([0, 1, 2, 7, 40]), label="rows")
    if pa.types.is_string(arrow_type):
        column = pa.array([None if rng.random() < 0.2 else str(v) for v in rng.integers(0, 4, n)],
                          pa.string())  # fmt: skip
    else:
        column = make_column(rng, arrow_type, n, nulls=data.draw(st.sampled_from([0.0, 0.3])))
    ranks = data.draw(_BINS, label="ranks")  # fmt: skip
    bins = ranks if isinstance(ranks, int) else len(ranks) + 1
    df = pl.DataFrame({"x": pl.from_arrow(column),
                       "g": pl.Series(rng.integers(0, 3, n), dtype=pl.Int64)})  # fmt: skip

    def build(m: Any) -> dict[str, Any]:
        x = m.col("x")
        return {"i": x.bin_ranks(ranks, labels=False),
                "e": x.bin_ranks(ranks, labels=[f"r{k}" for k in range(bins)]),
                "w": x.bin_ranks(ranks, labels=False).over("g")}  # fmt: skip

    with _numpy_tier():
        _same(df, build)


def test_bin_quantiles_refuses_as_polars_and_by_name() -> None:
    df = pl.DataFrame({"x": [1.0, 2.0]})
    for build, match in ((lambda m: m.col("x").bin_quantiles(0, labels=False), "bin"),
                         (lambda m: m.col("x").bin_quantiles([0.5, 0.2], labels=False),
                          "non-decreasing"),
                         (lambda m: m.col("x").bin_quantiles([1.5], labels=False), "between"),
                         (lambda m: m.col("x").bin_quantiles(2, labels=["a"]), "2 bins")):
        with pytest.raises(pl.exceptions.PolarsError):
            df.select(build(pl))
        with pytest.raises(cb.ColbridgeError, match=match):
            df.gpu.select(build(cb)).compute()
    with pytest.raises(cb.UnsupportedOperationError, match="struct"):
        cb.col("x").bin_quantiles(2, labels=False, include_intervals=True)
    # per group of `group_by` too, named after the column
    grouped = pl.DataFrame({"x": [1.0, 5.0, 2.0, None, 8.0, 3.0], "g": [1, 1, 1, 2, 2, 2]})
    for build in (lambda m: m.col("x").bin_quantiles(2, labels=False).max(),
                  lambda m: m.col("x").bin_quantiles([0.5], labels=["a", "b"]).min()):
        assert_frame_equal(grouped.gpu.group_by("g").agg(build(cb)).compute().sort("g"),
                           grouped.group_by("g").agg(build(pl)).sort("g"))  # fmt: skip
    got = df.gpu.eval("q = bin_quantiles(x, 2, labels=['lo', 'hi']); r = bin_ranks(x, [0.5], "
                      "labels=False)")  # fmt: skip
    assert_frame_equal(got, df.with_columns(q=pl.col("x").bin_quantiles(2, labels=["lo", "hi"]),
                                            r=pl.col("x").bin_ranks([0.5], labels=False)))
    for build in (lambda m: m.col("x").bin_ranks(0, labels=False),
                  lambda m: m.col("x").bin_ranks([0.9, 0.1], labels=False)):
        with pytest.raises(pl.exceptions.PolarsError):
            df.select(build(pl))
        with pytest.raises(cb.ColbridgeError, match=r"bin|non-decreasing"):
            df.gpu.select(build(cb)).compute()


def test_cut_names_bins_and_nulls_nan_as_polars(tier: str) -> None:
    df = pl.DataFrame({"x": [-1.0, 1.0, 1.5, 2.0, float("nan"), None, 5.0, float("inf")],
                       "i": [-1, 1, 1, 2, 3, None, 5, 9]})  # fmt: skip
    _same(df, lambda m: {
        "a": m.col("x").cut([2, 1]),  # sorted
        "b": m.col("x").cut([1, 2], left_closed=True),
        "c": m.col("i").cut([1, 2.5]),
        "d": m.col("x").cut([1, 2], labels=["lo", "mid", "hi"]),
        "e": m.col("x").cut([]),
        "f": m.col("x").cut([-0.0, 1e-7, 1e300]),
    })  # fmt: skip


def test_bin_intervals_nan_lands_in_the_last_bin(tier: str) -> None:
    f = pl.Series([float("nan"), 0.1, 2.0, None], dtype=pl.Float32)
    df = pl.DataFrame({"x": [float("nan"), 1.0, -float("inf"), None], "f": f})
    _same(df, lambda m: {
        "a": m.col("x").bin_intervals([0.0, 1.0], labels=False),
        "b": m.col("x").bin_intervals([1.0, float("nan")], labels=False, right_closed=True),
        "c": m.col("x").bin_intervals([], labels=False),
        "d": m.col("f").bin_intervals([0.1], labels=False),  # 0.1 is not a float32
        "e": m.col("f").bin_intervals([0.1], labels=["lo", "hi"], right_closed=True),
    })  # fmt: skip


def test_bin_intervals_of_temporal_and_string_values(tier: str) -> None:
    day = dt.date(2020, 1, 1)
    df = pl.DataFrame({
        "d": [day, day + dt.timedelta(400), None, day - dt.timedelta(1)],
        "t": [dt.datetime(2020, 1, 1, 5), dt.datetime(2021, 6, 1), dt.datetime(2019, 1, 1), None],
        "u": [dt.timedelta(hours=1), dt.timedelta(0), None, dt.timedelta(days=2)],
        "s": ["apple", "kiwi", None, "fig"],
        "b": [True, False, None, True],
    })  # fmt: skip
    df = df.with_columns(e=pl.col("s").cast(pl.Enum(["kiwi", "fig", "apple"])))
    _same(df, lambda m: {
        "d": m.col("d").bin_intervals([day, dt.date(2021, 1, 1)], labels=False),
        "t": m.col("t").bin_intervals([dt.datetime(2020, 1, 1, 5)], labels=["a", "b"]),
        "u": m.col("u").bin_intervals([dt.timedelta(hours=1)], labels=False, right_closed=True),
        "s": m.col("s").bin_intervals(["b", "g"], labels=False),
        "b": m.col("b").bin_intervals([False], labels=False),
    })  # fmt: skip


def test_nanosecond_values_are_binned_in_nanoseconds(tier: str) -> None:
    # the breaks (microseconds, as Python writes them) were compared as a comparison with a
    # literal is, the column floored to microseconds: 1 ns after a break fell below it
    ns = pa.table({
        "ts": pa.array([1, 500, -1, -1500, None], pa.timestamp("ns")),
        "tz": pa.array([1, 500, -1, -1500, 0], pa.timestamp("ns", "Europe/Paris")),
        "du": pa.array([1, 500, -1, -1500, 0], pa.duration("ns")),
    })  # fmt: skip
    epoch, zero = dt.datetime(1970, 1, 1), dt.timedelta(0)
    _same(pl.from_arrow(ns), lambda m: {
        "a": m.col("ts").bin_intervals([epoch], labels=False, right_closed=True),
        "b": m.col("ts").bin_intervals([epoch, epoch + dt.timedelta(microseconds=1)],
                                       labels=["lo", "mid", "hi"]),
        "c": m.col("tz").bin_intervals([epoch.replace(tzinfo=dt.timezone.utc)], labels=False),
        "d": m.col("du").bin_intervals([zero], labels=False),
        "e": m.col("du").bin_intervals([-dt.timedelta(microseconds=1), zero], labels=False,
                                       right_closed=True),
    })  # fmt: skip


def test_bins_compose_with_windows_groups_and_filters(tier: str) -> None:
    rng = np.random.default_rng(3)
    df = pl.DataFrame({"g": rng.integers(0, 4, 300), "x": rng.normal(0, 2, 300)})
    bins = [-1.0, 0.0, 1.5]
    _same(df, lambda m: {
        "n": m.col("x").bin_intervals(bins, labels=False).cast(pl.Int64).sum().over("g"),
        "lab": m.col("x").cut(bins, labels=["a", "b", "c", "d"]),
    })  # fmt: skip
    got = df.gpu.group_by(b=cb.col("x").bin_intervals(bins, labels=["a", "b", "c", "d"])) \
        .agg(cb.col("x").mean()).compute().sort("b")  # fmt: skip
    want = df.group_by(b=pl.col("x").bin_intervals(bins, labels=["a", "b", "c", "d"])) \
        .agg(pl.col("x").mean()).sort("b")  # fmt: skip
    assert_frame_equal(got, want)
    kept = df.gpu.filter(cb.col("x").bin_intervals(bins, labels=False) == 2).compute()
    assert_frame_equal(kept, df.filter(pl.col("x").bin_intervals(bins, labels=False) == 2))


def test_bins_in_pandas_and_streams() -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(0, 1, 50)
    x[::7] = np.nan  # missing in a NumPy float column
    pdf = pd.DataFrame({"x": x})
    got = pdf.gpu.select(b=cb.col("x").bin_intervals([0.0], labels=False)).compute()
    want = pl.from_pandas(pdf).select(b=pl.col("x").bin_intervals([0.0], labels=False))
    assert pl.from_pandas(got)["b"].to_list() == want["b"].to_list()  # NaN is null: null bin
    table = pa.table({"x": pa.array(rng.normal(0, 1, 100))})
    streamed = cb.lazy(pa.RecordBatchReader.from_batches(table.schema, table.to_batches(7)),
                       batch_rows=7).with_columns(
        b=cb.col("x").cut([-0.5, 0.5], labels=["lo", "mid", "hi"])).compute()  # fmt: skip
    whole = cb.lazy(table).with_columns(
        b=cb.col("x").cut([-0.5, 0.5], labels=["lo", "mid", "hi"])).compute()  # fmt: skip
    assert pl.from_arrow(streamed)["b"].to_list() == pl.from_arrow(whole)["b"].to_list()


@pytest.mark.parametrize(("build", "error", "match"), [
    (lambda m: m.col("x").bin_intervals([2, 1], labels=False), "ComputeError",
     "non-decreasing"),
    (lambda m: m.col("x").bin_intervals([1, None], labels=False), "ComputeError", "null"),
    (lambda m: m.col("x").bin_intervals([1, 2], labels=["a"]), "ShapeError", "3 bins but got 1"),
    (lambda m: m.col("x").bin_intervals([1], labels=["a", "a"]), "ComputeError", "'a'"),
    (lambda m: m.col("x").cut([1, 1]), "DuplicateError", "not unique"),
    (lambda m: m.col("x").cut([1, float("nan")]), "ComputeError", "NaN"),
    (lambda m: m.col("x").cut([-float("inf"), 0]), "ComputeError", "inf"),
    (lambda m: m.col("x").cut([0, float("inf")]), "ComputeError", "inf"),
    (lambda m: m.col("x").cut([1], labels=["a"]), "ShapeError", "labels"),
])  # fmt: skip
def test_bad_breakpoints_and_labels_fail_as_in_polars(build: Any, error: str, match: str) -> None:
    df = pl.DataFrame({"x": [1.0, 2.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(getattr(pl.exceptions, error), match=match):
            df.select(build(pl))
    with pytest.raises(cb.ColbridgeError, match=match):
        df.gpu.select(build(cb)).compute()


def test_what_colbridge_does_not_bin_is_refused_by_name() -> None:
    with pytest.raises(cb.UnsupportedOperationError, match="equal-width bins"):
        cb.col("x").bin_intervals(3, labels=False)
    with pytest.raises(cb.UnsupportedOperationError, match="struct"):
        cb.col("x").bin_intervals([1], labels=False, include_intervals=True)
    with pytest.raises(cb.SchemaError, match="mix float and int"):
        cb.col("x").bin_intervals([1, 2.5], labels=False)


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_bins_on_every_kernel_target(tier: str) -> None:
    # the comparisons are the shared lowering's: the CUDA text run on the host too
    x = [-1.0, 1.0, 1.5, 2.0, float("nan"), None, 5.0, float("-inf")]
    table = pa.table({"x": x, "i": pa.array([-1, 1, 1, 2, 3, None, 5, 9], pa.int8())})

    def build(m: Any) -> dict[str, Any]:
        return {"a": m.col("x").bin_intervals([1, 2], labels=False),
                "b": m.col("x").cut([1, 2], labels=["lo", "mid", "hi"]),
                "c": m.col("i").bin_intervals([-200, 1, 300], labels=False, right_closed=True),
                "q": m.col("x").bin_quantiles(3, labels=False, right_closed=True),
                "r": m.col("i").bin_ranks([0.25, 0.5], labels=False)}

    result = compute_on_tier(cb.lazy(table).select(**build(cb)), tier)
    # Arrow has no Enum: the labels are an ordered dictionary, in the labels' order
    labels = result.column("b").combine_chunks()
    assert labels.type.ordered
    assert labels.dictionary.to_pylist() == ["lo", "mid", "hi"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = pl.from_arrow(table).select(**build(pl))
    got = pl.from_arrow(result).with_columns(pl.col("b").cast(pl.String))
    assert_frame_equal(got, want.with_columns(pl.col("b").cast(pl.String)))


def test_bins_in_the_string_language() -> None:
    df = pl.DataFrame({"x": [0.5, 1.5, 3.0, None]})
    got = df.gpu.eval('a = x.bin_intervals([1, 2], labels=False); '
                      'b = cut(x, [2, 1], labels=["lo", "mid", "hi"], left_closed=True)')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = df.with_columns(a=pl.col("x").bin_intervals([1, 2], labels=False),
                               b=pl.col("x").cut([2, 1], labels=["lo", "mid", "hi"],
                                                 left_closed=True))  # fmt: skip
    assert_frame_equal(got, want)
    with pytest.raises(cb.ExpressionSyntaxError, match="needs `labels`"):
        df.gpu.eval("a = bin_intervals(x, [1, 2])")
