"""``rolling_rank`` against polars.

Each row's value ranked among its window's non-null values (NaN above every number
and equal to NaN, ``-0.0`` equal to ``0.0``): ``average`` (Float64), ``min``,
``max``, ``dense`` (UInt32); a null row or a window below ``min_samples`` is null.
Generated columns of every type polars ranks, with nulls, ties, offsets and chunks;
whole frames and ``over``; every tier, the CUDA code path, streams and Dask.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import SchemaError, UnsupportedOperationError
from colbridge.testing.asserts import as_polars, assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.ordered.ordered_data import cut_table

METHODS = ("average", "min", "max", "dense")


def _table(n: int, seed: int, *, nulls: float, groups: int, offset: int = 0,
           chunks: int = 1) -> pa.Table:  # fmt: skip
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    x = rng.choice(np.array([0.0, -0.0, 1.5, -2.0, 3.0, np.nan, np.inf]), total)
    return cut_table(pa.table({
        "x": pa.array(x, mask=mask()),
        "i": pa.array(rng.integers(-3, 4, total), mask=mask()),
        "u": pa.array(rng.choice(np.array([0, 2**64 - 1, 5], dtype=np.uint64), total),
                      mask=mask()),
        "b": pa.array(rng.random(total) < 0.5, mask=mask()),
        "d": pa.array(rng.integers(0, 4, total).astype(np.int32), mask=mask()).cast(
            pa.date32()),
        "g": pa.array(rng.integers(0, groups, total)),
    }), offset, n, chunks)  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.sampled_from([0, 1, 5, 40, 200]), seed=st.integers(0, 2**31 - 1),
       nulls=st.sampled_from([0.0, 0.2, 0.6]), groups=st.sampled_from([1, 3]),
       window=st.integers(1, 7), min_samples=st.sampled_from([None, 1, 2]),
       center=st.booleans(), method=st.sampled_from(METHODS),
       offset=st.sampled_from([0, 3]), chunks=st.sampled_from([1, 2]))  # fmt: skip
def test_equal_polars(n: int, seed: int, nulls: float, groups: int, window: int,
                      min_samples: int | None, center: bool, method: str, offset: int,
                      chunks: int) -> None:  # fmt: skip
    ms = None if min_samples is None else min(min_samples, window)
    table = _table(n, seed, nulls=nulls, groups=groups, offset=offset, chunks=chunks)

    def steps(m: Any, q: Any) -> Any:
        def rank(c: str) -> Any:
            return m.col(c).rolling_rank(window, method, min_samples=ms, center=center)

        return q.select(x=rank("x"), i=rank("i"), u=rank("u"), b=rank("b"), d=rank("d"),
                        g=rank("x").over("g"), e=rank("i") * 2)  # fmt: skip

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_polars_example_and_long_columns(tier: str) -> None:
    df = pl.DataFrame({"a": [1, 4, 4, 1, 9]})
    assert df.gpu.select(cb.col("a").rolling_rank(3)).compute()["a"].to_list() == \
        [None, None, 2.5, 1.0, 3.0]
    # past two chunks of the scan pass: each chunk reads the window before it again
    table = _table(300_000, 4, nulls=0.1, groups=7)
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("x").rolling_rank(30, "min", min_samples=1),
        b=m.col("i").rolling_rank(9, "dense", center=True).over("g"),
    ), kinds=("polars",))  # fmt: skip


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = _table(2_000, 5, nulls=0.3, groups=30)
    q = cb.lazy(table).select(a=cb.col("x").rolling_rank(5).over("g"),
                              b=cb.col("d").rolling_rank(4, "max") + 1)  # fmt: skip
    assert_frame_equal(pl.from_arrow(compute_on_host(q)), pl.from_arrow(q.compute(device="cpu")),
                       check_exact=True)  # fmt: skip


def test_refusals() -> None:
    with pytest.raises(UnsupportedOperationError, match=r"random tie-breaking"):
        cb.col("x").rolling_rank(3, "random")
    with pytest.raises(UnsupportedOperationError, match=r"random tie-breaking"):
        cb.col("x").rolling_rank(3, seed=1)
    with pytest.raises(SchemaError, match=r"unknown method.*'dense'"):
        cb.col("x").rolling_rank(3, "ordinal")
    strings = pl.DataFrame({"s": ["b", "a"]})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        strings.select(pl.col("s").rolling_rank(2))
    with pytest.raises(cb.ColbridgeError, match=r"`rolling_rank` is not supported for strings"):
        strings.gpu.select(cb.col("s").rolling_rank(2)).compute()


def test_the_string_language_streams_and_dask(tmp_path: Any) -> None:
    import dask.dataframe as dd
    import pyarrow.parquet as pq

    table = pa.table({"x": [1.0, 4.0, 4.0, 1.0, 9.0], "t": [dt.date(2020, 1, d) for d in
                                                            (3, 1, 2, 5, 4)]})  # fmt: skip
    got = cb.lazy(table).eval('r = rolling_rank(x, 3)\ns = t.rolling_rank(2, "min")').compute()
    want = pl.from_arrow(table).with_columns(  # type: ignore[union-attr]
        r=pl.col("x").rolling_rank(3), s=pl.col("t").rolling_rank(2, "min"))
    assert_frame_equal(pl.from_arrow(got), want)
    path = tmp_path / "a.parquet"
    pq.write_table(table, path)
    streamed = cb.lazy(pl.scan_parquet(path), batch_rows=2).with_columns(
        r=cb.col("x").rolling_rank(2)).compute()  # fmt: skip
    assert_frame_equal(as_polars(streamed), pl.read_parquet(path).with_columns(
        r=pl.col("x").rolling_rank(2)))  # fmt: skip
    pdf = pd.DataFrame({"x": np.round(np.random.default_rng(1).normal(size=400), 1)})
    for center in (False, True):
        q = cb.lazy(pdf).with_columns(r=cb.col("x").rolling_rank(9, "dense", center=center))
        got_dask = cb.dask.apply(q, dd.from_pandas(pdf, npartitions=4)).compute()
        np.testing.assert_array_equal(got_dask["r"].to_numpy(), q.compute()["r"].to_numpy())
