"""Ordered operations on the CUDA backend without a GPU: the host runtime runs its kernels.

Scans run as generated CUDA scans (`colbridge.backends.cuda_scans`); ``ewm_mean``
over NaN or infinities runs on the host CPU (`colbridge.backends.scans`);
the CUDA segment runner reads either result as an input column. These tests run
the real CUDA runner with its generated kernels compiled by g++ (`HostRuntime`),
compare with the CPU backend and polars, and check that the report says where the
scans ran.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.testing.cuda_host import compute_on_host


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    x[rng.random(n) < 0.05] = np.nan
    return pa.table({
        "x": pa.array(x, mask=rng.random(n) < 0.2),
        "i": pa.array(rng.integers(-50, 50, n), type=pa.int32(), mask=rng.random(n) < 0.1),
        "g": pa.array(rng.integers(0, 7, n), mask=rng.random(n) < 0.1),
    })  # fmt: skip


def _steps(m: Any, q: Any) -> Any:
    x, i = m.col("x"), m.col("i")
    return q.with_columns(
        s=x.shift(2),
        d=i.diff(),
        c=i.cum_sum(),
        r=x.rolling_mean(4, min_samples=2),
        v=x.rolling_std(3, min_samples=2).over("g"),
        e=x.ewm_mean(alpha=0.3),
        f=x.fill_null(strategy="forward", limit=2).over("g"),
        z=(x - x.shift(1)) / x.rolling_max(5, min_samples=1),
        k=i.cum_max().over("g") + i.rolling_min(3, min_samples=1),
    ).filter(m.col("i").shift(1) > -40)


@pytest.mark.parametrize("n", [0, 1, 150])
def test_cuda_runner_reads_scan_results(n: int) -> None:
    table = _table(n, seed=n)
    q = _steps(cb, cb.lazy(table))
    got = compute_on_host(q)
    want = _steps(pl, pl.from_arrow(table).lazy()).collect()
    assert_frame_equal(pl.from_arrow(got), want, rel_tol=1e-9)
    kernels = q.last_report.stats.kernels
    scans = [k for k in kernels if k.startswith("scan [")]
    assert scans
    keyed = [k for k in scans if ".over(" in k]
    assert len(keyed) == 3
    assert all("group(s): generated CUDA scan on the device (" in k for k in keyed)
    # the data holds NaN: an ewm_mean over it follows polars' recurrence on the host
    ewm = [k for k in scans if "ewm_mean" in k]
    assert len(ewm) == 1
    if n > 1:
        assert ewm[0].endswith(": on the host CPU (`ewm_mean` over NaN or infinite values "
                               "follows polars' recurrence there)")  # fmt: skip
    device = [k for k in scans if k not in keyed and k not in ewm]
    # the four shifts of columns (`s`, `d`, `z`, the filter's) are read in place by the
    # kernels (`tests/ordered/test_fused_shifts.py`): no scan
    assert not [k for k in scans if ".shift(" in k]
    assert len(device) == 4
    assert all(": generated CUDA scan on the device (" in k for k in device)


def test_cuda_explain_names_the_host_scan() -> None:
    x = cb.col("x")
    q = cb.lazy(_table(20, seed=3)).with_columns(y=x.cum_sum().over("g") * 2, s=x.shift(1))
    text = q.explain(device="cpu", target="cuda", source=True)
    assert "scan pass: col(\"x\").cum_sum(False).over(col(\"g\"))" in text
    assert "over each group on its own, rows in frame order; generated CUDA scan on the " \
        "device" in text  # fmt: skip
    assert 'no scan pass for col("x").shift(1, None): the passes read `x` 1 row(s) back' \
        in text  # fmt: skip
    assert "__global__" in text  # the row pass's CUDA source reads the scan's column
    assert 's = col("x").shift(1, None)' in text  # a bare scan result is not copied


def test_cuda_runner_reads_moved_strings() -> None:
    # a shift or fill of strings runs on the device over codes (a running min or max
    # over their ranks); the result keeps a dictionary of its own, which the row
    # pass's tables and the output read
    rng = np.random.default_rng(4)
    n = 60
    words = pa.array(rng.choice(np.array(["a", "bb", "", "c"]), n), pa.large_string(),
                     mask=rng.random(n) < 0.3)  # fmt: skip
    table = _table(n, seed=4).append_column("s", words).append_column(
        "c", words.cast(pa.dictionary(pa.uint32(), pa.large_string())))

    def steps(m: Any, q: Any) -> Any:
        s, c = m.col("s"), m.col("c")
        return q.with_columns(a=s.shift(2), b=s.fill_null(strategy="forward").over("g"),
                              e=s.shift(1) == "bb", f=c.shift(3, fill_value="z"),
                              h=c.fill_null(strategy="forward", limit=1),
                              i=s.cum_min(), j=s.cum_max(reverse=True).over("g"))  # fmt: skip

    q = steps(cb, cb.lazy(table))
    got = compute_on_host(q)
    assert_frame_equal(pl.from_arrow(got), steps(pl, pl.from_arrow(table).lazy()).collect())
    scans = [k for k in q.last_report.stats.kernels if k.startswith("scan [")]
    assert len(scans) == 8  # the fill value: a scan of whether rows exist
    assert all("generated CUDA scan on the device" in k for k in scans)
