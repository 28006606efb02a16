"""Ordered expressions against polars: every numeric type, nulls in every position, every shape.

``shift``, ``diff``, ``pct_change``, the ``cum_*`` scans, the ``rolling_*``
windows, ``ewm_mean`` and ``fill_null(strategy=...)`` run through colbridge and
polars (the oracle) on generated frames: each numeric type with no nulls,
random nulls, leading and trailing nulls, runs, alternating and all-null
columns; NaN, ±inf and ±0.0 in floats; empty and one-row frames; sliced and
multi-chunk inputs; every frame kind; both CPU tiers. Output types are compared
too. Float sums, means, variances, products, ``ewm_mean`` and ``pct_change``
are compared within `F64_TOL` / `F32_TOL` (another summation order than
polars'); everything else bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from colbridge.testing.asserts import ALL_FRAME_KINDS, assert_same_as_polars
from tests.ordered.ordered_data import (
    NULL_PATTERNS,
    NUMERIC_DTYPES,
    catalogue,
    op_steps,
    pattern_frame,
)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
def test_every_op_every_dtype_every_null_pattern(dtype: str, tier: str) -> None:
    table = pattern_frame(dtype, 41, seed=NUMERIC_DTYPES.index(dtype), offset=3)
    steps, tolerance = op_steps(dtype, NULL_PATTERNS)
    # pandas inputs: `test_every_frame_kind` and the shapes below
    assert_same_as_polars(table, steps, tolerance=tolerance, kinds=("polars", "pyarrow"))


@pytest.mark.parametrize("dtype", ["int8", "uint64", "float32", "float64", "bool"])
@pytest.mark.parametrize("n", [0, 1, 2, 5], ids=lambda n: f"rows{n}")
def test_tiny_frames(dtype: str, n: int, tier: str) -> None:
    # windows and shifts longer than the frame; the empty frame keeps every output type
    table = pattern_frame(dtype, n, seed=n + 100)
    steps, tolerance = op_steps(dtype, ("none", "random", "all"))
    assert_same_as_polars(table, steps, tolerance=tolerance)


@pytest.mark.parametrize("dtype", ["int32", "uint16", "float64", "bool"])
@pytest.mark.parametrize(("offset", "chunks"), [(5, 1), (16, 1), (0, 3), (13, 4), (7, 37)],
                         ids=["sliced", "sliced-on-a-byte", "chunks", "sliced-chunks",
                              "chunk-per-row"])  # fmt: skip
def test_sliced_and_chunked_inputs(dtype: str, offset: int, chunks: int) -> None:
    # scans and windows must carry their state across chunk boundaries; a slice starting
    # on a byte of the validity bitmap is read (and shared by running results) in place
    table = pattern_frame(dtype, 37, seed=offset * 10 + chunks, offset=offset, chunks=chunks)
    assert table.column("runs").num_chunks == (chunks if chunks > 1 else 1)
    steps, tolerance = op_steps(dtype, ("random", "runs", "leading"))
    assert_same_as_polars(table, steps, tolerance=tolerance)


@pytest.mark.parametrize("dtype", ["int64", "uint8", "float64", "bool"])
def test_every_frame_kind(dtype: str) -> None:
    # no nulls and no NaN in the input: pandas' NumPy-backed frames cannot hold them apart;
    # the NumPy-backed kind only for floats (its integer columns cannot take shift's nulls)
    table = pattern_frame(dtype, 30, seed=4, specials=0.0)
    table = table.set_column(0, "g", pa.array(np.arange(30) % 4))  # keys without nulls
    steps, tolerance = op_steps(dtype, ("none",))
    kinds = [k for k in ALL_FRAME_KINDS if k != "pandas-numpy" or dtype == "float64"]
    assert_same_as_polars(table, steps, tolerance=tolerance, kinds=kinds)


def test_output_types_of_an_empty_frame_of_every_dtype(tier: str) -> None:
    # every op, every numeric type, zero rows: only the types are left to compare
    for dtype in NUMERIC_DTYPES:
        table = pattern_frame(dtype, 0, seed=0)
        steps, tolerance = op_steps(dtype, ("random",))
        assert_same_as_polars(table, steps, tolerance=tolerance, kinds=("pyarrow",))


def test_float_specials_in_every_window(tier: str) -> None:
    # NaN and ±inf entering and leaving windows and scans; ±0.0 in products and minima
    values = [1.0, np.inf, 2.0, 3.0, np.nan, 4.0, 5.0, 6.0, -np.inf, 1.0, 2.0, 3.0, -0.0, 0.0,
              None, np.inf, -np.inf, None, 7.0, np.nan, np.nan, 8.0, None, None, 9.0]  # fmt: skip
    for dtype in ("float64", "float32"):
        x = pa.array(values, type=pa.float64()).cast(dtype)
        table = pa.table({"g": pa.array([1] * len(values)), "random": x, "p_random": x})
        steps, tolerance = op_steps(dtype, ("random",))
        assert_same_as_polars(table, steps, tolerance=tolerance)


@pytest.mark.parametrize("dtype", ["int8", "float64"])
def test_every_op_alone(dtype: str) -> None:
    # one op per query: nothing fuses with a neighbour, each kernel stands alone
    table = pattern_frame(dtype, 23, seed=9, offset=1)
    for op in catalogue(dtype):
        steps, tolerance = op_steps(dtype, ("runs",), [op])
        assert_same_as_polars(table, steps, tolerance=tolerance, kinds=("pyarrow",))


def test_with_columns_keeps_the_inputs(tier: str) -> None:
    table = pattern_frame("float64", 20, seed=3, offset=2, chunks=2)

    def steps(m: Any, q: Any) -> Any:
        x = m.col("random")
        return q.with_columns(y=x.shift(1), random=x.cum_sum(), z=x.rolling_mean(3))

    assert_same_as_polars(table, steps, rtol=1e-9)


def test_wide_integers_stay_exact(tier: str) -> None:
    # beyond float64's 2**53: sums and scans of 64-bit integers must not pass through floats
    big = [2**62 + 1, None, 3, 2**60 + 7, 2**61 - 1, 5, None, 2**53 + 1, 1, 2**59]
    table = pa.table({
        "g": pa.array([1, 2, 1, 2, 1, 2, 1, 2, 1, 2]),
        "u": pa.array(big, type=pa.uint64()),
        "i": pa.array([None if v is None else -v if k % 3 == 0 else v
                       for k, v in enumerate(big)], type=pa.int64()),
        "top": pa.array([2**64 - 1, 2**63, None, 2**63 + 5, 1, 2**64 - 2, None, 0, 7, 2**63 - 1],
                        type=pa.uint64()),
    })  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        u, i, top = m.col("u"), m.col("i"), m.col("top")
        return q.select(
            us=u.cum_sum(), usr=u.cum_sum(reverse=True), urs=u.rolling_sum(2, min_samples=1),
            ug=u.cum_sum().over("g"), isum=i.cum_sum(), ir=i.rolling_sum(3, min_samples=1),
            idf=i.diff(), ts=top.shift(1), tmin=top.cum_min(), tmax=top.cum_max(reverse=True),
            trmin=top.rolling_min(2, min_samples=1), trmax=top.rolling_max(3, center=True),
            tf=top.fill_null(strategy="forward"), tb=top.fill_null(strategy="backward"),
        )

    assert_same_as_polars(table, steps)


def test_float32_running_sums_add_in_float64(tier: str, tmp_path: Any) -> None:
    # polars' `cum_sum` of Float32 adds in float64 and rounds each total to float32 (its
    # `cum_prod` and windows stay in float32): the same bits here, forward, reversed and
    # per group, in memory, streamed batch after batch, and on the CUDA runner (host)
    import polars as pl
    import pyarrow.parquet as pq
    from polars.testing import assert_frame_equal

    import colbridge as cb
    from colbridge.io import pipeline
    from colbridge.testing.cuda_host import compute_on_host

    rng = np.random.default_rng(32)
    n = 20_000
    x = (rng.normal(size=n) * 1000 + 3).astype(np.float32)
    table = pa.table({"x": pa.array(x, mask=rng.random(n) < 0.1),
                      "g": pa.array(rng.integers(0, 4, n))})  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x")
        return q.select(s=x.cum_sum(), r=x.cum_sum(reverse=True), gs=x.cum_sum().over("g"),
                        gr=x.cum_sum(reverse=True).over("g"),
                        p=(x * 0.0002 + 1).cum_prod())  # fmt: skip

    # bit for bit (polars' lazy engine restarts the float64 sum at each morsel (10,000 rows
    # here) from the float32 total before it; its eager engine, which colbridge matches, does
    # not: `assert_same_as_polars` accepts either where the two engines disagree)
    assert_same_as_polars(table, steps)
    want = steps(pl, pl.from_arrow(table))
    # a float32 running sum gives other bits (the check can tell)
    sequential = np.cumsum(np.where(np.isnan(want["s"].to_numpy()), 0, x), dtype=np.float32)
    assert not np.array_equal(sequential[~want["s"].is_null().to_numpy()],
                              want["s"].drop_nulls().to_numpy())  # fmt: skip
    got = compute_on_host(steps(cb, cb.lazy(table)))
    assert_frame_equal(pl.from_arrow(got), want)
    path, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table, path, row_group_size=3_000)
    pipeline(str(path), out, with_={"s": cb.col("x").cum_sum(),
                                    "gs": cb.col("x").cum_sum().over("g")},
             batch_rows=2_500, device="cpu")  # fmt: skip
    streamed = pl.read_parquet(out)
    assert_frame_equal(streamed.select("s", "gs"), want.select("s", "gs"))
