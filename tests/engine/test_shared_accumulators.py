"""Reductions of one argument that keep the same accumulators share them.

``sum`` and ``mean``, ``std`` and ``var`` (any ``ddof``), ``count`` and
``null_count``: a reduction pass keeps one set of accumulators for each argument
and family (`colbridge.codegen.lower.ReductionLowering`), and every reduction is
finished from it. The values are checked against polars with the near misses that
must not share: a filtered argument, the exact 64-bit integer mean, a filtered
``null_count`` (which also counts the rows the filter keeps), ``min`` beside
``max``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import assert_same_as_polars

MOMENTS = re.compile(r"\bcw_frac\b\s*=")  # one moment combine per kept std/var state


def _moments_in(text: str) -> list[int]:
    """How many moment states each reduction kernel in an explain text combines."""
    kernels = re.split(r"--- \w+ kernel source \(\w+\) ---", text)[1:]
    heads = re.findall(r"--- (\w+) kernel source", text)
    return [len(MOMENTS.findall(k)) for h, k in zip(heads, kernels, strict=True)
            if h == "reduction"]  # fmt: skip


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_std_and_every_var_keep_one_moment_state(target: str) -> None:
    a = cb.col("a")
    table = pa.table({"a": pa.array([1.5, None, 4.0, 2.0]), "b": pa.array([1, 2, 3, 4])})
    plan = cb.lazy(table).select(s=a.std(), v=a.var(), v0=a.var(ddof=0), v3=a.var(ddof=3),
                                 other=cb.col("b").std())  # fmt: skip
    assert _moments_in(plan.explain(source=True, target=target)) == [2]
    # a filtered argument keeps its own
    plan = cb.lazy(table).select(s=a.std(), f=a.filter(cb.col("b") > 1).std())
    assert _moments_in(plan.explain(source=True, target=target)) == [2]


def _reductions(m: Any, q: Any) -> Any:
    a, b = m.col("a"), m.col("b")
    kept = a.filter(b > 0)
    return q.select(
        s=a.sum(), mu=a.mean(), sd=a.std(), v=a.var(), v0=a.var(ddof=0), n=a.count(),
        nn=a.null_count(), lo=a.min(), hi=a.max(),
        ks=kept.sum(), kmu=kept.mean(), kv=kept.var(), ksd=kept.std(ddof=0), kn=kept.count(),
        knn=kept.null_count(), klo=kept.min(),
        bs=b.sum(), bmu=b.mean(), bnn=b.null_count(), bsd=b.std(),
    )


@pytest.mark.parametrize("dtype", [pa.int64(), pa.float32()], ids=str)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.sampled_from([0, 1, 2, 7, 64, 65, 300]),
       offset=st.sampled_from([0, 3]))  # fmt: skip
def test_shared_reductions_equal_polars(dtype: pa.DataType, seed: int, n: int,
                                        offset: int) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)
    values = rng.integers(-50, 50, n + offset)
    if pa.types.is_floating(dtype):
        values = values / 4  # exact in binary: sums are exact, in any order
    # both columns hold nulls whenever there are rows (one kernel variant per dtype)
    a_null, b_null = rng.random(n + offset) < 0.3, rng.random(n + offset) < 0.2
    a_null[offset:offset + 1] = b_null[offset:offset + 1] = True
    a = pa.array(values, mask=a_null).cast(dtype)
    b = pa.array(rng.integers(-3, 4, n + offset), mask=b_null, type=pa.int32())
    table = pa.table({"a": a, "b": b}).slice(offset)
    # every sum is exact; means, variances and deviations within a few rounding steps
    assert_same_as_polars(table, _reductions, kinds=("pyarrow",), rtol=1e-12)
