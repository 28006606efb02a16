"""``rolling_cov`` and ``rolling_corr`` against polars.

polars 2.1 composed them from rolling means, a rolling count and rolling variances
over the rows where both sides are non-null; colbridge builds that composition, with
polars 2.2's NaN (a window holding an infinite or NaN value, or no more pairs than
``ddof``). polars 2.2 takes each window's co-moment with Welford states: the two are
compared within the ordered tests' float tolerance (Float32 pairs compute in
Float32, as polars).
Generated pairs of every numeric type with nulls, NaN and infinities, offsets and
chunks; windows, ``min_samples`` and ``ddof`` edges; ``over``; every kernel tier.
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
from colbridge.errors import InvalidOperationError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from tests.ordered.ordered_data import (
    F32_TOL,
    F64_TOL,
    NULL_PATTERNS,
    cut_table,
    null_mask,
    numeric_values,
)

KINDS = ("float64", "float32", "int32", "int64", "uint8", "int8", "bool")


def _table(n: int, seed: int, kinds: tuple[str, str], nulls: tuple[str, str], *,
           offset: int, chunks: int) -> pa.Table:  # fmt: skip
    rng = np.random.default_rng(seed)
    total = n + offset
    columns = {}
    for name, kind, pattern in zip(("a", "b"), kinds, nulls, strict=True):
        values = numeric_values(kind, total, rng)
        columns[name] = pa.array(values, mask=null_mask(pattern, total, rng),
                                 type=getattr(pa, "bool_" if kind == "bool" else kind)())
    columns["g"] = pa.array(rng.integers(0, 3, total))
    return cut_table(pa.table(columns), offset, n, chunks)


def _pairs(m: Any, window: int, min_samples: int | None, ddof: int) -> dict[str, Any]:
    opts = {"window_size": window, "min_samples": min_samples}
    return {"c": m.rolling_cov("a", "b", ddof=ddof, **opts),
            "r": m.rolling_corr("a", "b", **opts),
            "o": m.rolling_cov(m.col("a"), m.col("b"), ddof=ddof, **opts).over("g")}  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(0, 80), seed=st.integers(0, 2**31 - 1),
       kinds=st.tuples(st.sampled_from(KINDS), st.sampled_from(KINDS)),
       nulls=st.tuples(st.sampled_from(NULL_PATTERNS), st.sampled_from(NULL_PATTERNS)),
       window=st.integers(1, 12), low=st.integers(0, 12), ddof=st.integers(0, 3),
       offset=st.integers(0, 4), chunks=st.integers(1, 3))  # fmt: skip
def test_equal_polars(n: int, seed: int, kinds: tuple[str, str], nulls: tuple[str, str],
                      window: int, low: int, ddof: int, offset: int, chunks: int) -> None:
    table = _table(n, seed, kinds, nulls, offset=offset, chunks=chunks)
    min_samples = None if low == 0 else min(low, window)
    schema = pl.DataFrame(schema={"a": pl.from_arrow(table.column("a")).dtype,  # type: ignore[union-attr]
                                  "b": pl.from_arrow(table.column("b")).dtype})  # type: ignore[union-attr]
    result = schema.select(pl.rolling_cov("a", "b", window_size=window)).dtypes[0]
    tolerance = F32_TOL if result == pl.Float32 else F64_TOL
    assert_same_as_polars(table, lambda m, f: f.select(**_pairs(m, window, min_samples, ddof)),
                          tolerance=tolerance)  # fmt: skip


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    table = _table(500, 4, ("float64", "int32"), ("random", "runs"), offset=1, chunks=2)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    want = frame.select(**_pairs(pl, 7, 3, 1))
    got = compute_on_tier(cb.lazy(frame).select(**_pairs(cb, 7, 3, 1)), tier)
    assert_frame_equal(got, want, rel_tol=1e-9, abs_tol=1e-9)


def test_polars_example_names_and_refusals() -> None:
    frame = pl.DataFrame({"a": [1.0, 2.0, 4.0, 7.0], "b": [2.0, 4.0, 5.0, 9.0],
                          "s": ["x", "y", "z", "w"]})  # fmt: skip
    want = frame.select(pl.rolling_cov("a", "b", window_size=2),
                        pl.rolling_corr("b", "a", window_size=3))  # fmt: skip
    got = frame.gpu.select(cb.rolling_cov("a", "b", window_size=2),
                           cb.rolling_corr("b", "a", window_size=3)).compute()  # fmt: skip
    assert got.columns == ["a", "b"]
    assert_frame_equal(got, want, rel_tol=1e-12)
    with pytest.raises(InvalidOperationError, match=r'`rolling_cov` of `col\("s"\)`, which is'):
        frame.gpu.select(cb.rolling_cov("a", "s", window_size=2)).compute()
    with pytest.raises(cb.SchemaError, match=r"`rolling_cov`: `min_samples` \(3\) must be <="):
        cb.rolling_cov("a", "b", window_size=2, min_samples=3)
    with pytest.raises(cb.ColbridgeError, match=r"`rolling_corr\(window_size=...\)` takes an"):
        cb.rolling_corr("a", "b", window_size=True)


def test_the_string_language_a_stream_and_dask(tmp_path: Any) -> None:
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow.parquet as pq

    table = _table(120, 8, ("float64", "float64"), ("random", "none"), offset=0, chunks=1)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    want = frame.with_columns(c=pl.rolling_cov("a", "b", window_size=6, ddof=0),
                              r=pl.rolling_corr("a", "b", window_size=5, min_samples=2))
    text = "c = rolling_cov(a, b, window_size=6, ddof=0)\nr = rolling_corr(a, b, 5, min_samples=2)"
    assert_frame_equal(cb.lazy(frame).eval(text).compute(), want, rel_tol=1e-9, abs_tol=1e-9)
    path = tmp_path / "p.parquet"
    pq.write_table(table, path)  # streamed in batches that cut windows
    streamed = cb.lazy(pl.scan_parquet(path), batch_rows=23).eval(text).compute()
    assert_frame_equal(streamed, want, rel_tol=1e-9, abs_tol=1e-9)
    pdf = table.to_pandas(types_mapper=pd.ArrowDtype)  # nulls apart from NaN
    got = cb.dask.apply(cb.lazy(pdf).eval(text), dd.from_pandas(pdf, npartitions=3)).compute()
    assert_frame_equal(pl.from_pandas(got.reset_index(drop=True)), want, rel_tol=1e-9,
                       abs_tol=1e-9)  # fmt: skip
