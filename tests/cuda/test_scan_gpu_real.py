"""On a real GPU: the generated CUDA scans against the CPU scans and polars' semantics.

Marked ``gpu``: deselected by default (``pytest -m gpu`` runs them), and skipped
where no CUDA device is usable. The same comparisons as
``tests/cuda/test_scan_cuda_host.py`` (which runs the kernels through the host
shim), at sizes where the device's default chunking makes many chunks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.backends import cuda_scans as runner
from colbridge.backends.common import RunStats
from colbridge.backends.device import gpu_status
from colbridge.backends.scans import run_scan
from colbridge.types import DType

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_status()[0], reason=f"no usable GPU: {gpu_status()[1]}"),
]

CASES = [
    ("cum_sum", (False,)), ("cum_sum", (True,)), ("cum_min", (False,)), ("cum_max", (True,)),
    ("cum_count", (False,)), ("cum_prod", (False,)), ("forward_fill", (3,)),
    ("backward_fill", (None,)), ("shift", (5, 0)), ("shift", (-7, None)),
    ("rolling_sum", (20, 5, False, 1)), ("rolling_mean", (20, 1, True, 1)),
    ("rolling_var", (9, 2, False, 1)), ("rolling_std", (9, 9, True, 0)),
    ("rolling_min", (33, 1, False, 1)), ("rolling_max", (33, 10, True, 1)),
    ("ewm_mean", (0.1, True, 1, False)), ("ewm_mean", (0.5, False, 3, True)),
]  # fmt: skip


def _values(kind: str, n: int, func: str) -> pa.Array:
    rng = np.random.default_rng(11)
    if kind == "int64":
        values: np.ndarray[Any, Any] = rng.integers(-1000, 1000, n)
    elif func == "cum_prod":
        values = rng.uniform(0.999, 1.001, n)
    elif func == "ewm_mean":  # finite: NaN sends it to the host
        values = rng.normal(size=n)
    else:
        values = rng.normal(size=n)
        values[rng.random(n) < 0.001] = np.nan
    return pa.array(values, mask=rng.random(n) < 0.2)


MATRIX = [(f, o, k) for f, o in CASES for k in ("int64", "float64")
          if f != "ewm_mean" or k == "float64"]  # fmt: skip


@pytest.mark.parametrize(("func", "options", "kind"), MATRIX,
                         ids=[f"{k}-{f}{o}" for f, o, k in MATRIX])  # fmt: skip
def test_device_scan_matches_cpu(func: str, options: tuple[Any, ...], kind: str) -> None:
    n = 3_000_017
    values = _values(kind, n, func)
    dtype = DType.INT64 if kind == "int64" else DType.FLOAT64
    result = DType.UINT32 if func == "cum_count" else dtype
    want = run_scan(func, options, values, dtype, result, None)
    got, how = runner.run_device_scan(func, options, values, dtype, result, RunStats())
    assert how.startswith(runner.ON_DEVICE), how
    assert got.is_valid().equals(want.is_valid()), how
    g = got.fill_null(0).to_numpy(zero_copy_only=False)
    w = want.fill_null(0).to_numpy(zero_copy_only=False)
    if kind == "int64" or func in ("cum_min", "cum_max", "rolling_min", "rolling_max", "shift",
                                   "forward_fill", "backward_fill", "cum_count"):  # fmt: skip
        np.testing.assert_array_equal(g, w, err_msg=how)
    elif func == "cum_sum":
        x = np.abs(np.nan_to_num(values.fill_null(0).to_numpy(zero_copy_only=False)))
        assert np.array_equal(np.isnan(g), np.isnan(w))
        fin = np.isfinite(w)
        assert (np.abs(g[fin] - w[fin]) <= 4 * n * np.finfo(np.float64).eps * x.sum()).all()
    else:
        scale = float(np.nanmax(np.abs(values.fill_null(0).to_numpy(zero_copy_only=False))))
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9 * scale, err_msg=how)


@pytest.mark.parametrize(("func", "options"), [("cum_sum", (False,)), ("cum_max", (True,)),
                                              ("rolling_mean", (7, 2, True, 1)),
                                              ("shift", (2, None)),
                                              ("forward_fill", (2,))])  # fmt: skip
def test_device_scan_per_group_matches_cpu(func: str, options: tuple[Any, ...]) -> None:
    from colbridge.backends.groups import factorize

    n = 2_000_003
    values = _values("int64", n, func)
    keys = factorize([pa.array(np.random.default_rng(4).integers(0, 1000, n))], n)
    dtype = DType.FLOAT64 if func == "rolling_mean" else DType.INT64  # typing casts so
    want = run_scan(func, options, values, dtype, dtype, keys)
    got, how = runner.run_device_scan(func, options, values, dtype, dtype, RunStats(), keys)
    assert how.startswith(runner.ON_DEVICE), how
    assert got.is_valid().equals(want.is_valid()), how
    np.testing.assert_allclose(got.fill_null(0).to_numpy(zero_copy_only=False),
                               want.fill_null(0).to_numpy(zero_copy_only=False), rtol=1e-12)


def test_plan_with_scans_on_gpu() -> None:
    n = 1_000_003
    rng = np.random.default_rng(2)
    table = pa.table({"x": pa.array(rng.normal(size=n), mask=rng.random(n) < 0.1)})
    x = cb.col("x")
    q = cb.lazy(table).with_columns(d=x.diff(), c=x.cum_sum(), r=x.rolling_std(50),
                                    f=x.fill_null(strategy="forward"),
                                    e=x.ewm_mean(span=20))  # fmt: skip
    got = q.compute(device="cuda", fallback="raise")
    scans = [k for k in q.last_report.stats.kernels if k.startswith("scan [")]
    assert scans
    assert all(": generated CUDA scan on the device" in k for k in scans)
    want = q.compute(device="cpu")
    for name in ("d", "f"):
        assert got.column(name).equals(want.column(name))
    for name in ("c", "r", "e"):
        g = got.column(name).to_numpy(zero_copy_only=False)
        w = want.column(name).to_numpy(zero_copy_only=False)
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-4 if name == "c" else 1e-9)
