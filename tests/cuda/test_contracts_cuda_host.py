"""The functions added for issue 14 give the same answer on the CUDA target.

They are lowered to existing IR nodes when typed, so the CUDA code generator
sees nothing new; this checks it: the generated CUDA C, compiled with g++ and run
on the host (`colbridge.testing.cuda_host`), equals the CPU backend bit for bit
(within a few ulps for logarithms and tangents), on data with nulls, NaN, ±inf, a
slice whose offset is not a multiple of 8, and a length that is not one of 8.
"""

from __future__ import annotations

import shutil
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.testing.cuda_host import compute_on_host

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def table(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = 173
    x = rng.normal(scale=20, size=n + 5)
    x[rng.random(n + 5) < 0.1] = np.nan
    x[rng.random(n + 5) < 0.05] = np.inf
    f = x.astype(np.float32)
    i = rng.integers(-50, 50, n + 5).astype(np.int16)
    u = rng.integers(0, 300, n + 5).astype(np.uint16)
    b = rng.random(n + 5) < 0.5

    def mask() -> np.ndarray:
        return rng.random(n + 5) < 0.15

    return pa.table(
        {
            "x": pa.array(x, mask=mask()),
            "f": pa.array(f, mask=mask()),
            "i": pa.array(i, mask=mask()),
            "u": pa.array(u, mask=mask()),
            "b": pa.array(b, mask=mask()),
        }
    ).slice(5)


def exact(q: Any) -> Any:
    x, f, i, u, b = (cb.col(n) for n in "xfiub")
    return q.select(
        deg=x.degrees(), rad=f.radians(), tr=x.truncate(2), tr_f=f.truncate(),
        between=x.is_between(i, 10, closed="left"), isin=i.is_in([1, -3, 40, None]),
        isin_f=x.is_in([0.5, float("nan")], nulls_equal=True),
        mx=cb.max_horizontal(x, i, 3), mn=cb.min_horizontal(f, u),
        sm=cb.sum_horizontal(i, u, b), sm_strict=cb.sum_horizontal(x, f, ignore_nulls=False),
        mean=cb.mean_horizontal(i, u, f), clip=x.clip(i, u), clip_lo=f.clip(i),
        all_=cb.all_horizontal(b, x > 0, i < 5), any_=b.or_(x > 0, i < 5),
        any_num=cb.any_horizontal(i, u), all_num=cb.all_horizontal(x, f),  # cast to Boolean
        co=cb.coalesce("x", "i"), b_arith=f + 1e-30 * (f == 0), np_scalar=i * np.int64(3),
    )  # fmt: skip


def transcendental(q: Any) -> Any:
    x, f, i = cb.col("x"), cb.col("f"), cb.col("i")
    return q.select(
        logb=x.log(i), log2=f.log(2), log_i=i.log(2.0), cot=x.cot(), ratio=f / cb.lit(2).log()
    )


def compare(got: pa.Table, cpu: pa.Table, ulps: int) -> None:
    assert got.schema == cpu.schema
    for name in cpu.column_names:
        g, c = got.column(name), cpu.column(name)
        assert g.is_valid().to_pylist() == c.is_valid().to_pylist(), name
        valid = c.is_valid().to_numpy(zero_copy_only=False)
        gv = g.to_numpy(zero_copy_only=False)[valid]
        cv = c.to_numpy(zero_copy_only=False)[valid]
        if np.issubdtype(cv.dtype, np.floating):
            with np.errstate(invalid="ignore"):
                close = np.abs(gv - cv) <= ulps * np.spacing(np.abs(cv).astype(cv.dtype))
            same = (gv == cv) | (np.isnan(gv) & np.isnan(cv)) | close
            assert same.all(), (name, gv[~same][:5], cv[~same][:5])
        else:
            assert gv.tolist() == cv.tolist(), name


@pytest.mark.parametrize("seed", [0, 1])
def test_new_functions_match_the_cpu_backend_on_the_cuda_target(seed: int) -> None:
    data = table(seed)
    compare(compute_on_host(exact(cb.lazy(data))), exact(cb.lazy(data)).compute(device="cpu"), 0)
    compare(
        compute_on_host(transcendental(cb.lazy(data))),
        transcendental(cb.lazy(data)).compute(device="cpu"),
        4,
    )
