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


def test_the_second_pass_reads_only_what_the_moments_need() -> None:
    """std/var take a second pass over each word; other reductions' rows are not read again."""
    from colbridge.codegen.numba_cpu import _feeding

    a, b, c = cb.col("a"), cb.col("b"), cb.col("c")
    table = pa.table({"a": pa.array([1.5, None, 4.0]), "b": pa.array([1.0, 2.0, None]),
                      "c": pa.array([2, None, 3])})  # fmt: skip
    plan = cb.lazy(table).select(s=a.sum(), hi=(c * 2).max(), sd=(b + 1).std())
    text = plan.explain(source=True, target="cpu")
    source = text.split("--- reduction kernel source (cpu) ---")[1]
    loads = {name: len(re.findall(rf"= {name}\[i\d\]", source)) for name in ("x0", "x1", "x2")}
    # each column is read by its LANES lanes and the word's last rows: 5 places; the std's
    # argument once more in the second pass
    assert sorted(loads.values()) == [5, 5, 10], loads
    # what decides: a statement is kept when the uses read it, directly or through others
    lines = ["c1 = x0[i]", "c2 = x1[i]", "t3 = c2 + p0", "t4 = c1 * t3", "t5 = t3 * t3"]
    assert _feeding(lines, ["wd += t3"]) == ["c2 = x1[i]", "t3 = c2 + p0"]
    assert _feeding(lines, ["wd += t5 + c1"]) == ["c1 = x0[i]", "c2 = x1[i]", "t3 = c2 + p0",
                                                  "t5 = t3 * t3"]  # fmt: skip
    assert _feeding(lines, ["wd += 1.0"]) == []
    # a statement that is not a plain assignment stays, with everything it reads
    assert _feeding([*lines, "nerr1 += t4 > 2"], ["wd += 1.0"]) == [
        "c1 = x0[i]", "c2 = x1[i]", "t3 = c2 + p0", "t4 = c1 * t3", "nerr1 += t4 > 2"]


def _reductions(m: Any, q: Any) -> Any:
    b = m.col("b")
    out: dict[str, Any] = {"bs": b.sum(), "bmu": b.mean(), "bnn": b.null_count(), "bsd": b.std()}
    for name in ("a", "c"):  # int64 (an exact mean), float32
        x = m.col(name)
        kept = x.filter(b > 0)
        out |= {f"{name}_{k}": v for k, v in {
            "s": x.sum(), "mu": x.mean(), "sd": x.std(), "v": x.var(), "v0": x.var(ddof=0),
            "n": x.count(), "nn": x.null_count(), "lo": x.min(), "hi": x.max(),
            "ks": kept.sum(), "kmu": kept.mean(), "kv": kept.var(), "ksd": kept.std(ddof=0),
            "kn": kept.count(), "knn": kept.null_count(), "klo": kept.min(),
        }.items()}  # fmt: skip
    return q.select(**out)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.sampled_from([1, 2, 7, 64, 65, 300]),
       offset=st.sampled_from([0, 3]))  # fmt: skip
def test_shared_reductions_equal_polars(seed: int, n: int, offset: int) -> None:
    rng = np.random.default_rng(seed)
    # every column holds nulls (the first row at least): one kernel for every example
    nulls = [rng.random(n + offset) < density for density in (0.3, 0.2, 0.3)]
    for mask in nulls:
        mask[offset] = True
    values = rng.integers(-50, 50, n + offset)
    table = pa.table({
        "a": pa.array(values, mask=nulls[0], type=pa.int64()),
        "b": pa.array(rng.integers(-3, 4, n + offset), mask=nulls[1], type=pa.int32()),
        # quarters are exact in binary: sums are exact, in any order
        "c": pa.array((values / 4).astype(np.float32), mask=nulls[2]),
    }).slice(offset)
    # means, variances and deviations within a few rounding steps
    assert_same_as_polars(table, _reductions, kinds=("pyarrow",), rtol=1e-12)
