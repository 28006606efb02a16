"""``ewm_sum`` against polars.

``s = x`` at the first non-null value, then ``s * (1 - alpha) + x``; a null row after
it decays ``s`` unless ``ignore_nulls``; a null row is null, and so is every row before
``min_samples`` values. Generated columns of numbers and booleans with nulls, NaN and
infinities, offsets and chunks; every decay parameter; whole frames and ``over``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import JobSpecError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.ordered.ordered_data import cut_table

DECAYS: list[dict[str, Any]] = [{"alpha": 0.3}, {"alpha": 1.0}, {"com": 2.0}, {"span": 5.0},
                                {"half_life": 1.5}]  # fmt: skip


def _table(n: int, seed: int, nulls: float, offset: int, chunks: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    x = np.round(rng.normal(0, 10, total), 1)
    x[rng.random(total) < 0.02] = np.nan
    x[rng.random(total) < 0.01] = np.inf
    return cut_table(pa.table({
        "x": pa.array(x, mask=mask()),
        "f": pa.array(x.astype(np.float32), mask=mask()),
        "i": pa.array(rng.integers(-5, 6, total), mask=mask()),
        "b": pa.array(rng.random(total) < 0.5, mask=mask()),
        "g": pa.array(rng.integers(0, 3, total)),
    }), offset, n, chunks)  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.sampled_from([0, 1, 5, 60]), seed=st.integers(0, 2**31 - 1),
       nulls=st.sampled_from([0.0, 0.3, 0.8]), offset=st.sampled_from([0, 3]),
       chunks=st.sampled_from([1, 2]), decay=st.sampled_from(range(len(DECAYS))),
       min_samples=st.sampled_from([0, 1, 3]), ignore_nulls=st.booleans())  # fmt: skip
def test_equal_polars(n: int, seed: int, nulls: float, offset: int, chunks: int, decay: int,
                      min_samples: int, ignore_nulls: bool) -> None:  # fmt: skip
    table = _table(n, seed, nulls, offset, chunks)
    kw = {**DECAYS[decay], "min_samples": min_samples, "ignore_nulls": ignore_nulls}
    assert_same_as_polars(table, lambda m, q: q.select(
        **{c: m.col(c).ewm_sum(**kw) for c in ("x", "f", "i", "b")},
        g=m.col("x").ewm_sum(**kw).over("g"), e=m.col("i").ewm_sum(**kw) * 2 - 1,
    ), kinds=("polars", "pyarrow"))  # fmt: skip


def test_polars_examples_every_tier_and_the_cuda_code_path(tier: str) -> None:
    df = pl.DataFrame({"a": [None, None, 5.0, 7.0, None, 2.0, 1.0, 4.0]})
    for ignore_nulls, want in ((True, [None, None, 5.0, 9.5, None, 6.75, 4.375, 6.1875]),
                               (False, [None, None, 5.0, 9.5, None, 4.375, 3.1875, 5.59375])):
        got = df.gpu.select(cb.col("a").ewm_sum(alpha=0.5, ignore_nulls=ignore_nulls))
        assert got.compute()["a"].to_list() == want  # polars' own tests' values
    table = _table(500, 4, 0.2, 0, 1)
    steps = lambda m, q: q.select(m.col("f").ewm_sum(span=4.0).over("g"))  # noqa: E731
    assert_same_as_polars(table, steps)
    assert_frame_equal(pl.from_arrow(compute_on_host(steps(cb, cb.lazy(table)))),
                       steps(pl, pl.from_arrow(table)))  # fmt: skip


def test_refusals(tmp_path: Any) -> None:
    import pyarrow.parquet as pq

    with pytest.raises(cb.ColbridgeError, match=r"exactly one of"):
        cb.col("x").ewm_sum()
    strings = pl.DataFrame({"s": ["a"]})
    with pytest.raises(cb.ColbridgeError, match=r"`ewm_sum` takes numbers and booleans"):
        strings.gpu.select(cb.col("s").ewm_sum(alpha=0.5)).compute()
    got = cb.lazy(pa.table({"x": [1.0, 2.0, 3.0]})).eval("s = ewm_sum(x, alpha=0.5)").compute()
    assert got.column("s").to_pylist() == [1.0, 2.5, 4.25]
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"x": [1.0, math.nan, 3.0]}), path)
    with pytest.raises(JobSpecError, match=r"not supported in a streamed job"):
        pl.scan_parquet(path).gpu.with_columns(s=cb.col("x").ewm_sum(alpha=0.5)).compute()
