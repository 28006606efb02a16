"""Generated CUDA scans without a GPU: run through the host shim, compiled by NVRTC.

Each generated scan (`colbridge.codegen.cuda_scans`) runs on `HostRuntime` (the
very same text compiled with g++) through the CUDA backend's own scan runner
(`colbridge.backends.cuda_scans`), and is compared with the CPU scan kernels
(`colbridge.backends.scans`, numba) on data with nulls in every position, NaN and
infinities, small chunks (so carries cross many chunk boundaries and windows read
rows of the chunks before them), empty and one-row inputs, windows longer than the
input and every ``min_samples`` edge, with and without keys (``.over``: groups
scattered through the frame); whole plans are compared with polars for every
numeric dtype. Every scan kernel variant also compiles with NVRTC.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.backends import cuda_scans as runner
from colbridge.backends.common import RunStats
from colbridge.backends.cuda import compile_nvrtc_with_ptx, use_runtime
from colbridge.backends.groups import factorize
from colbridge.backends.scans import run_scan
from colbridge.codegen.cuda_scans import DEVICE_SCANS, generate_scan
from colbridge.testing.cuda_host import HostRuntime, compute_on_host
from colbridge.types import DType

#: compute types of the scan kernels, and the DType a column of each scans as
COMPUTE = {"int64": DType.INT64, "uint64": DType.UINT64, "float32": DType.FLOAT32,
           "float64": DType.FLOAT64}  # fmt: skip
#: the tolerances docs/ordered.md states: float sums and products in another order
EPS = {"float32": float(np.finfo(np.float32).eps), "float64": float(np.finfo(np.float64).eps)}
RTOL = {"float32": 1e-5, "float64": 1e-9}

#: (function, options) cases; rolling options are (window, min_samples, center, ddof)
RUNNING = [
    ("cum_sum", (False,)), ("cum_sum", (True,)), ("cum_prod", (False,)), ("cum_prod", (True,)),
    ("cum_min", (False,)), ("cum_min", (True,)), ("cum_max", (False,)), ("cum_max", (True,)),
    ("cum_count", (False,)), ("cum_count", (True,)),
    ("forward_fill", (None,)), ("forward_fill", (2,)), ("forward_fill", (0,)),
    ("backward_fill", (None,)), ("backward_fill", (1,)),
]  # fmt: skip
WINDOWS = [(1, 1, False, 1), (3, 1, False, 1), (3, 3, True, 1), (4, 2, True, 0),
           (7, 4, False, 1), (2, 2, False, 1), (500, 1, False, 1), (500, 3, True, 1)]  # fmt: skip
ROLLING = [(f, w) for f in ("rolling_sum", "rolling_mean", "rolling_var", "rolling_std",
                            "rolling_min", "rolling_max") for w in WINDOWS]  # fmt: skip
SHIFTS = [("shift", (2, None)), ("shift", (-3, 7)), ("shift", (0, None)), ("shift", (40, 1)),
          ("shift", (-500, None)), ("shift_in_range", (5,)), ("shift_in_range", (-1,))]  # fmt: skip
#: (alpha, adjust, min_samples, ignore_nulls)
EWM = [("ewm_mean", (0.3, True, 1, False)), ("ewm_mean", (0.3, False, 2, True)),
       ("ewm_mean", (0.05, True, 3, True)), ("ewm_mean", (0.9, False, 1, False)),
       ("ewm_mean", (1.0, True, 1, False))]  # fmt: skip
CASES = RUNNING + ROLLING + SHIFTS + EWM
#: the running scans: chunks and carries (the others are row-wise)
RUNNING_FUNCS = frozenset(f for f, _ in RUNNING + EWM)
#: scans whose argument typing casts to a float (their result type): never run on integers
FLOAT_ONLY = frozenset({"ewm_mean", "rolling_mean", "rolling_var", "rolling_std"})
#: every case with every compute type it is typed in
MATRIX = [(f, o, k) for f, o in CASES for k in COMPUTE if f not in FLOAT_ONLY or k[0] == "f"]

#: lengths: empty, one row, around a warp and a block (64 on the host), past two chunks
LENGTHS = (0, 1, 2, 65, 333)
#: chunk lengths: shorter than a block (idle threads), not a multiple of it, and long
CHUNKS = (5, 40, 1024)


@pytest.fixture
def host() -> Iterator[HostRuntime]:
    runtime = HostRuntime(block=64, max_blocks=2, max_reduce_blocks=2)
    with use_runtime(runtime):
        yield runtime


def _column(kind: str, n: int, seed: int, func: str, nulls: str = "random") -> pa.Array:
    """Values of ``kind`` with nulls in every position (``nulls``), NaN and infinities."""
    rng = np.random.default_rng(seed)
    if kind == "int64":
        values: np.ndarray[Any, Any] = rng.integers(-1000, 1000, n)
        if func == "cum_prod":  # products wrap: big factors reach 2**64 quickly
            values = rng.integers(-(1 << 20), 1 << 20, n)
        if func in ("cum_sum", "rolling_sum") and n:
            values[rng.random(n) < 0.1] = np.iinfo(np.int64).max  # sums wrap
    elif kind == "uint64":
        values = rng.integers(0, 1000, n).astype(np.uint64)
        if func in ("cum_sum", "rolling_sum", "cum_prod") and n:
            values[rng.random(n) < 0.1] = np.iinfo(np.uint64).max - np.uint64(3)
    else:
        dtype = np.float32 if kind == "float32" else np.float64
        values = rng.normal(size=n).astype(dtype)
        if func == "cum_prod":  # near 1, so products neither vanish nor overflow
            values = (rng.uniform(0.9, 1.1, n) * rng.choice([-1, 1], n)).astype(dtype)
        special = rng.random(n)
        if func in ("ewm_mean", "cum_sum", "cum_prod"):
            special[:] = 1.0  # non-finite values send them to the host (tested apart)
        values[special < 0.03] = np.nan
        values[(special >= 0.03) & (special < 0.05)] = np.inf
        values[(special >= 0.05) & (special < 0.06)] = -np.inf
        values[(special >= 0.06) & (special < 0.08)] = -0.0
    if nulls == "none":
        mask = np.zeros(n, dtype=bool)
    elif nulls == "all":
        mask = np.ones(n, dtype=bool)
    elif nulls == "edges":  # the first and last rows, and both sides of every chunk cut
        mask = np.zeros(n, dtype=bool)
        for cut in range(0, n, 5):
            mask[max(cut - 1, 0):cut + 1] = True
        mask[-1:] = True
    else:
        mask = rng.random(n) < 0.3
        if n > 2:
            mask[0] = mask[-1] = True
    return pa.array(values, mask=mask)


def _match(got: pa.Array, want: pa.Array, func: str, kind: str, values: pa.Array,
           what: str) -> None:  # fmt: skip
    """The device's result equals the CPU's: exactly, or within the documented tolerance."""
    assert got.type == want.type, what
    gv, wv = got.is_valid().to_numpy(zero_copy_only=False), \
        want.is_valid().to_numpy(zero_copy_only=False)  # fmt: skip
    assert (gv == wv).all(), f"{what}: validity differs at rows {np.flatnonzero(gv != wv)[:10]}"
    zero = False if pa.types.is_boolean(got.type) else 0
    g = np.asarray(got.fill_null(zero).to_numpy(zero_copy_only=False))[wv]
    w = np.asarray(want.fill_null(zero).to_numpy(zero_copy_only=False))[wv]
    if g.dtype.kind != "f":
        assert (g == w).all(), f"{what}: rows {np.flatnonzero(wv)[np.flatnonzero(g != w)][:10]}"
        return
    assert (np.isnan(g) == np.isnan(w)).all(), f"{what}: NaN differs"
    assert (np.isinf(g) == np.isinf(w)).all(), f"{what}: infinities differ"
    assert (g[np.isinf(g)] == w[np.isinf(w)]).all(), f"{what}: infinities' signs differ"
    fin = np.isfinite(w)
    g, w = g[fin].astype(np.float64), w[fin].astype(np.float64)
    exact = func in ("cum_min", "cum_max", "rolling_min", "rolling_max", "shift",
                     "forward_fill", "backward_fill")  # fmt: skip
    if exact:
        assert (g == w).all(), f"{what}: {g[g != w][:5]} != {w[g != w][:5]}"
        return
    x = np.asarray(values.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64)
    x = np.abs(x[np.isfinite(x)])
    n = max(len(values), 1)
    if func == "cum_sum":
        # a sum in another order: within n * eps of the sum of the magnitudes
        bound = 4 * n * EPS[kind] * float(x.sum()) + 1e-300
        err = np.abs(g - w)
        assert (err <= bound).all(), f"{what}: error {err.max()} over {bound}"
    elif func == "cum_prod":
        err = np.abs(g - w)
        assert (err <= 4 * n * EPS[kind] * np.abs(w) + 1e-300).all(), f"{what}: {err.max()}"
    else:  # rolling sums, means, variances: summed afresh per window, the CPU slides
        # a sum that cancels is as close as the values' magnitude allows, not its own
        scale = float(x.max()) if len(x) else 1.0
        atol = RTOL[kind] * scale * (scale if func == "rolling_var" else 1.0)
        np.testing.assert_allclose(g, w, rtol=RTOL[kind], atol=atol, err_msg=what)


def _result_type(func: str, kind: str) -> DType:
    if func == "cum_count":
        return DType.UINT32
    if func == "shift_in_range":
        return DType.BOOL
    return COMPUTE[kind]


def _check(func: str, options: tuple[Any, ...], kind: str, n: int, chunk: int, seed: int,
           nulls: str = "random", groups: int = 0) -> None:  # fmt: skip
    values = _column(kind, n, seed, func, nulls)
    arg_type, result = COMPUTE[kind], _result_type(func, kind)
    keys = None
    if groups:  # group ids in a random order, so each group's rows are scattered
        keys = factorize([pa.array(np.random.default_rng(seed).integers(0, groups, n))], n)
    want = run_scan(func, options, values, arg_type, result, keys)
    got, how = runner.run_device_scan(func, options, values, arg_type, result, RunStats(),
                                      keys, chunk_rows=chunk)  # fmt: skip
    assert how.startswith(runner.ON_DEVICE), how
    what = f"{func}{options} {kind} n={n} chunk={chunk} nulls={nulls} groups={groups} ({how})"
    _match(got, want, func, kind, values, what)


@pytest.mark.parametrize(("func", "options", "kind"), MATRIX,
                         ids=[f"{k}-{f}{o}" for f, o, k in MATRIX])  # fmt: skip
def test_scan_kernels_match_the_cpu_scans(host: HostRuntime, func: str, options: tuple[Any, ...],
                                          kind: str) -> None:  # fmt: skip
    launches = host.launches
    for n in LENGTHS:
        for chunk in CHUNKS if func in RUNNING_FUNCS else (CHUNKS[0],):
            _check(func, options, kind, n, chunk, seed=7 * n + chunk)
    assert host.launches > launches  # the kernels ran on the shim


@pytest.mark.parametrize("nulls", ["none", "all", "edges"])
@pytest.mark.parametrize(("func", "options"), [
    ("cum_sum", (False,)), ("cum_max", (True,)), ("cum_count", (False,)),
    ("forward_fill", (1,)), ("backward_fill", (None,)), ("shift", (1, None)),
    ("rolling_sum", (3, 2, False, 1)), ("rolling_std", (4, 2, True, 1)),
    ("rolling_min", (3, 1, True, 1)),
])  # fmt: skip
def test_null_patterns(host: HostRuntime, func: str, options: tuple[Any, ...],
                       nulls: str) -> None:  # fmt: skip
    for kind in ("int64", "float64") if func not in FLOAT_ONLY else ("float64",):
        for n in (1, 64, 203):
            _check(func, options, kind, n, 5, seed=n, nulls=nulls)


KEYED = [(f, o, k) for f, o in CASES for k in ("int64", "float64")
         if f not in FLOAT_ONLY or k == "float64"]  # fmt: skip


@pytest.mark.parametrize(("func", "options", "kind"), KEYED,
                         ids=[f"{k}-{f}{o}" for f, o, k in KEYED])  # fmt: skip
def test_scan_kernels_per_group_match_the_cpu_scans(host: HostRuntime, func: str,
                                                    options: tuple[Any, ...],
                                                    kind: str) -> None:  # fmt: skip
    """``.over(keys)``: segmented scans over the rows ordered by group, against the CPU's."""
    for n in (1, 65, 333):
        for groups in (1, 3, 40):
            for chunk in (5, 64) if func in RUNNING_FUNCS else (5,):
                _check(func, options, kind, n, chunk, seed=n + groups, groups=groups)


def test_ewm_over_nonfinite_values_runs_on_the_host(host: HostRuntime) -> None:
    values = pa.array([1.0, None, np.inf, 2.0, np.nan, 3.0])
    options = (0.5, True, 1, False)
    launches = host.launches
    got, where = runner.run_device_scan("ewm_mean", options, values, DType.FLOAT64,
                                        DType.FLOAT64, RunStats())  # fmt: skip
    assert where == runner.EWM_NONFINITE
    assert host.launches == launches
    want = run_scan("ewm_mean", options, values, DType.FLOAT64, DType.FLOAT64, None)
    assert got.is_valid().equals(want.is_valid())
    np.testing.assert_array_equal(got.to_numpy(zero_copy_only=False),
                                  want.to_numpy(zero_copy_only=False))  # fmt: skip
    assert got[2].as_py() == np.inf
    assert np.isnan(got[3].as_py())  # polars: an infinite mean turns NaN at the next value


def test_many_chunks_many_blocks(host: HostRuntime) -> None:
    """More chunks than blocks (grid-stride over chunks), threads with runs of several rows."""
    for func, options in RUNNING[::2]:
        _check(func, options, "float64", 2000, 150, seed=1)
        _check(func, options, "int64", 2000, 150, seed=2)


def test_default_chunking_and_report(host: HostRuntime) -> None:
    values = _column("float64", 3000, 5, "cum_sum")
    got, how = runner.run_device_scan("cum_sum", (False,), values, DType.FLOAT64, DType.FLOAT64,
                                      RunStats())  # fmt: skip
    chunk = runner.chunk_rows_for(3000, 64, 2)
    assert chunk == 1500
    assert how == (f"generated CUDA scan on the device (3 launch(es), 2 chunk(s) of {chunk} "
                   "rows, carries scanned, then fixed up)")
    want = run_scan("cum_sum", (False,), values, DType.FLOAT64, DType.FLOAT64, None)
    _match(got, want, "cum_sum", "float64", values, "default chunks")
    assert runner.chunk_rows_for(10, 256, 1000) == 16 * 256


# -- whole plans against polars, every numeric dtype -----------------------------------

DTYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(),
          pa.uint64(), pa.float32(), pa.float64()]  # fmt: skip


def _frame(dtype: pa.DataType, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    if pa.types.is_floating(dtype):
        values = rng.normal(size=n) * 10
    elif pa.types.is_signed_integer(dtype):
        values = rng.integers(-100, 100, n)
    else:
        values = rng.integers(0, 100, n)
    mask = rng.random(n) < 0.25
    return pa.table({"a": pa.array(values, mask=mask).cast(dtype),
                     "g": pa.array(rng.integers(0, 3, n))})  # fmt: skip


def _ordered(m: Any, q: Any, floats: bool) -> Any:
    a = m.col("a")
    out = {
        "s": a.shift(3), "sf": a.shift(-2, fill_value=9), "d": a.diff(),
        "cs": a.cum_sum(), "cp": a.cum_prod(reverse=True), "cn": a.cum_min(),
        "cx": a.cum_max(reverse=True), "cc": a.cum_count(), "ff": a.fill_null(strategy="forward"),
        "fb": a.fill_null(strategy="backward", limit=1),
        "rs": a.rolling_sum(4, min_samples=2), "rm": a.rolling_mean(5, min_samples=1, center=True),
        "rv": a.rolling_var(3, min_samples=2), "rd": a.rolling_std(6, min_samples=3),
        "rn": a.rolling_min(3, min_samples=1, center=True), "rx": a.rolling_max(2),
        "big": a.rolling_sum(999, min_samples=1), "k": a.cum_sum().over("g"),
        "e": a.ewm_mean(alpha=0.3, min_samples=2), "e2": a.ewm_mean(span=4, adjust=False,
                                                                 ignore_nulls=True),
    }
    if not floats:  # products of 16-bit and wider integers wrap; polars' too, but keep it small
        del out["cp"]
    return q.with_columns(**out)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [0, 1, 77])
def test_plans_match_polars(monkeypatch: pytest.MonkeyPatch, dtype: pa.DataType, n: int) -> None:
    # chunks of 16 rows: every scan of 77 rows crosses several chunk carries
    monkeypatch.setattr(runner, "chunk_rows_for", lambda rows, block, resident: 16)
    table = _frame(dtype, n, seed=n)
    floats = pa.types.is_floating(dtype)
    q = _ordered(cb, cb.lazy(table), floats)
    got = pl.from_arrow(compute_on_host(q, HostRuntime(block=32, max_blocks=2)))
    want = _ordered(pl, pl.from_arrow(table).lazy(), floats).collect()
    tol = 1e-5 if dtype == pa.float32() else 1e-9
    # floats in another order: close relative to the values' magnitude (docs/ordered.md)
    scale = max((abs(float(v)) for v in table["a"].to_pylist() if v is not None), default=1.0)
    assert_frame_equal(got, want, rel_tol=tol, abs_tol=tol * scale)
    scans = [k for k in q.last_report.stats.kernels if k.startswith("scan [")]
    on_device = [k for k in scans if ": generated CUDA scan on the device" in k]
    assert len(on_device) == len(scans)
    assert any(" over 3 group(s): generated CUDA scan on the device (3 group(s) in rows " in k
               for k in scans) == (n > 2)  # fmt: skip


def test_explain_names_device_and_host_scans() -> None:
    x = cb.col("x")
    q = cb.lazy(pa.table({"x": [1.0, None, 3.0], "g": [1, 1, 2]})).with_columns(
        a=x.cum_sum(), b=x.rolling_mean(2).over("g"), e=x.ewm_mean(alpha=0.5))
    text = q.explain(device="cpu", target="cuda")
    assert 'scan pass: col("x").cum_sum(False) over the rows in frame order; generated CUDA ' \
        "scan on the device" in text  # fmt: skip
    assert 'scan pass: col("x").rolling_mean(2, 2, False, 1).over(col("g")) over each group ' \
        "on its own, rows in frame order; generated CUDA scan on the device" in text  # fmt: skip
    assert 'scan pass: col("x").ewm_mean(0.5, True, 1, False) over the rows in frame order; ' \
        "generated CUDA scan on the device (on the host CPU where the column holds NaN or an " \
        "infinity)" in text  # fmt: skip
    cpu = q.explain(device="cpu")
    assert "generated CUDA" not in cpu
    assert "compiled scan on the host CPU (its result" in cpu


def test_scans_in_another_order_run_on_the_host_under_cuda() -> None:
    # `over(..., order_by=...)`: the rows are put in order on the host, where the scan runs;
    # the kernels before and after it are CUDA text (here on the host shim)
    table = pa.table({"x": [1.0, None, 3.0, 4.0, 2.5, -1.0], "g": [1, 1, 2, 1, 2, 2],
                      "t": [3, 1, None, 2, 0, 5]})  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x") * 2
        return q.with_columns(a=x.cum_sum().over("g", order_by="t"),
                              b=(x - x.shift(1)).over(order_by="t", descending=True),
                              c=x.first().over("g", order_by="t", nulls_last=True))  # fmt: skip

    q = steps(cb, cb.lazy(table))
    got = pl.from_arrow(compute_on_host(q, HostRuntime(block=32, max_blocks=2)))
    assert_frame_equal(got, steps(pl, pl.from_arrow(table).lazy()).collect())
    ran = [k for k in q.last_report.stats.kernels if k.startswith("scan [")]
    assert len(ran) == 2  # the cum_sum and the shift (`first` is taken from the groups)
    assert all(k.endswith("on the host CPU (rows put in order on the host)") for k in ran)
    text = q.explain(device="cpu", target="cuda")
    assert 'rows in the order of col("t"); compiled scan on the host CPU (rows put in order ' \
        "on the host)" in text  # fmt: skip


# -- NVRTC ------------------------------------------------------------------------------


# -- weighted windows: polars' arithmetic in the same order, so the very same bits ---------

#: (window, min_samples, center, ddof, weights): cut windows, centred odd and even, longer
#: than the input
WEIGHTINGS = [(1, 1, False, 1, (2.5,)), (3, 1, False, 1, (0.25, -1.0, 2.0)),
              (4, 2, True, 1, (1.0, 10.0, 100.0, 1000.0)), (3, 3, True, 1, (1.0, 0.0, 3.0)),
              (500, 1, True, 1, tuple(np.linspace(-1.0, 2.0, 500)))]  # fmt: skip
WEIGHTED = [(f, o) for f in ("rolling_sum", "rolling_mean", "rolling_var", "rolling_std",
                             "rolling_min", "rolling_max") for o in WEIGHTINGS]  # fmt: skip


@pytest.mark.parametrize(("func", "options"), WEIGHTED,
                         ids=[f"{f}-{o[:4]}" for f, o in WEIGHTED])  # fmt: skip
def test_weighted_windows_match_the_cpu_bit_for_bit(host: HostRuntime, func: str,
                                                    options: tuple[Any, ...]) -> None:  # fmt: skip
    """Weighted windows, with and without keys: equal to the CPU's, NaN and ±0.0 included."""
    launches = host.launches
    for kind in ("float32", "float64"):
        for n in LENGTHS:
            for groups in (0, 3, 40):
                values = _column(kind, n, 3 * n + groups, func, nulls="none")
                keys = factorize([pa.array(np.random.default_rng(n).integers(0, groups, n))],
                                 n) if groups else None  # fmt: skip
                want = run_scan(func, options, values, COMPUTE[kind], COMPUTE[kind], keys)
                got, how = runner.run_device_scan(func, options, values, COMPUTE[kind],
                                                  COMPUTE[kind], RunStats(), keys)  # fmt: skip
                assert how.startswith(runner.ON_DEVICE), how
                what = f"{func}{options[:4]} {kind} n={n} groups={groups}"
                assert got.type == want.type, what
                assert got.is_valid().equals(want.is_valid()), what
                g = np.asarray(got.fill_null(0).to_numpy(zero_copy_only=False))
                w = np.asarray(want.fill_null(0).to_numpy(zero_copy_only=False))
                same = ((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))
                assert same.all(), f"{what}: rows {np.flatnonzero(~same)[:5]}"
    assert host.launches > launches


def test_weighted_plans_match_polars() -> None:
    rng = np.random.default_rng(4)
    n = 90
    table = pa.table({"x": rng.normal(size=n) * 10, "f": rng.normal(size=n).astype(np.float32),
                      "i": rng.integers(-50, 50, n).astype(np.int16),
                      "g": pa.array(rng.integers(0, 4, n), mask=rng.random(n) < 0.2)})  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        x, f, i = m.col("x"), m.col("f"), m.col("i")
        return q.with_columns(
            a=x.rolling_sum(3, [1.0, -2.0, 0.5]), b=f.rolling_mean(4, [1, 2, 3, 4], center=True),
            c=i.rolling_std(5, [1, 1, 2, 2, 3], min_samples=1).over("g"),
            d=x.rolling_max(2, [1, -1]).over("g") - x.rolling_min(6, [1, 2, 3, 4, 5, 6]),
            e=f.rolling_var(3, [3, 2, 1], min_samples=2, center=True).over("g"),
        )

    got = compute_on_host(steps(cb, cb.lazy(table)), HostRuntime(block=32, max_blocks=2))
    want = steps(pl, pl.from_arrow(table).lazy()).collect()
    assert_frame_equal(pl.from_arrow(got), want, check_exact=True)


def _variants() -> list[tuple[str, tuple[Any, ...], str, bool, bool]]:
    out = []
    for func, options in WEIGHTED[::2]:
        for kind in ("float32", "float64"):
            for keyed in (False, True):
                out.append((func, options, kind, False, keyed))
    for func, options in [*CASES, ("ewm_weight", EWM[0][1])]:
        for kind in COMPUTE:
            for nullable in (False, True):
                for keyed in (False, True):
                    out.append((func, options, kind, nullable, keyed))
    return out


def _programs() -> dict[str, Any]:
    """Every generated scan text (functions x types x nullability x keys), by digest."""
    sources = {}
    for func, options, kind, nullable, keyed in _variants():
        program = generate_scan(func, options, np.dtype(kind), nullable, keyed)
        sources[program.digest] = program
    return sources


def test_the_nvrtc_check_covers_every_device_scan() -> None:
    assert {p.func for p in _programs().values()} == DEVICE_SCANS | {"ewm_weight"}


# one test per function, so that the compiles (about 0.2 s each) spread over the workers
@pytest.mark.parametrize("func", sorted(DEVICE_SCANS | {"ewm_weight"}))
def test_every_scan_kernel_compiles_with_nvrtc(func: str) -> None:
    """Each of ``func``'s scan texts compiles for sm_90, its PTX without fused multiply-add."""
    sources = {d: p for d, p in _programs().items() if p.func == func}
    assert sources
    for program in sources.values():
        cubin, ptx = compile_nvrtc_with_ptx(program.source, "sm_90")
        assert cubin.startswith(b"\x7fELF"), program.func
        assert ".target sm_90" in ptx
        for kernel in program.kernels:
            assert f".entry {kernel.name}(" in ptx, (program.func, kernel.name)
        assert "fma.rn" not in ptx  # --fmad=false: + and * round as on the CPU
    print(f"\nNVRTC compiled {len(sources)} {func} scan programs for sm_90")


@pytest.mark.parametrize(
    ("func", "options"),
    [
        ("cum_min", (False,)), ("cum_max", (False,)), ("cum_max", (True,)),
        ("rolling_min", (3, 1, False, 1)), ("rolling_max", (2, 1, False, 1)),
        ("rolling_max", (4, 1, True, 1)),
    ],
)  # fmt: skip
def test_equal_extremes_on_the_host_are_the_cpus(host: HostRuntime, func: str,
                                                 options: tuple[Any, ...]) -> None:  # fmt: skip
    # of 0.0 and -0.0 (equal), the one polars gives: the sign bits are compared, which
    # an equality of values cannot see
    rng = np.random.default_rng(4)
    values = pa.array(rng.choice([0.0, -0.0, 1.0, -1.0], 300), mask=rng.random(300) < 0.1)
    got, _ = runner.run_device_scan(func, options, values, DType.FLOAT64, DType.FLOAT64,
                                    RunStats())  # fmt: skip
    want = run_scan(func, options, values, DType.FLOAT64, DType.FLOAT64, None)
    assert got.is_valid().equals(want.is_valid())
    g, w = (np.asarray(a.to_numpy(zero_copy_only=False)) for a in (got, want))
    valid = np.asarray(want.is_valid())
    np.testing.assert_array_equal(np.signbit(g[valid]), np.signbit(w[valid]))
    np.testing.assert_array_equal(g[valid], w[valid])


def test_rolling_variance_of_overflowing_squares_on_the_host(host: HostRuntime) -> None:
    values = pa.array([1e200, -1e200, 3.0, 1e-300, np.inf, 2.0, 1e155, -1e155])
    options = (2, 2, False, 1)
    got, _ = runner.run_device_scan("rolling_var", options, values, DType.FLOAT64,
                                    DType.FLOAT64, RunStats())  # fmt: skip
    want = run_scan("rolling_var", options, values, DType.FLOAT64, DType.FLOAT64, None)
    assert got.to_pylist()[1:3] == [np.inf, np.inf]  # polars: finite values, infinite variance
    np.testing.assert_array_equal(got.to_numpy(zero_copy_only=False),
                                  want.to_numpy(zero_copy_only=False))  # fmt: skip


#: finite values whose differences or squares overflow, beside NaN, infinities and zeros
HUGE = [1e308, -1e308, 1.7e308, 1e200, -3e154, 2e154, 1.0, -0.0, 0.0, np.nan, np.inf, -np.inf]


@pytest.mark.parametrize("seed", range(6))
def test_rolling_variance_of_overflowing_values_equals_polars_on_the_host(seed: int) -> None:
    # polars' variance of such a window is what its Welford updates make of the
    # infinities they meet (0 for [1e308, -1e308], inf or NaN elsewhere); the generated
    # text takes its steps too, from the blocks polars' stacks hold (nulls shift them)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    values = [None if rng.random() < 0.2 else float(rng.choice(HUGE)) for _ in range(n)]
    table = pa.table({"x": pa.array(values, pa.float64()), "g": pa.array(rng.integers(0, 2, n))})

    def build(m: Any) -> dict[str, Any]:
        x = m.col("x")
        return {"v2": x.rolling_var(2), "v3": x.rolling_var(3, min_samples=1, ddof=0),
                "s4": x.rolling_std(4, min_samples=2, center=True),
                "v5": x.rolling_var(5, min_samples=1, center=True),
                "vo": x.rolling_var(3, min_samples=1).over("g"),
                "so": x.rolling_std(4, min_samples=2, center=True).over("g")}  # fmt: skip

    q = cb.lazy(table).select(**build(cb))
    got = pl.from_arrow(compute_on_host(q, HostRuntime(block=32, max_blocks=2)))
    scans = [k for k in q.last_report.stats.kernels if k.startswith("scan [")]
    assert scans
    assert all(": generated CUDA scan on the device" in k for k in scans), scans
    want = pl.from_arrow(table).select(**build(pl))
    assert_frame_equal(got, want, rel_tol=1e-9, abs_tol=0.0)
    for name in want.columns:  # zeros apart from tiny values, as polars' [1e308, -1e308]
        w, g = want[name].drop_nulls().to_numpy(), got[name].drop_nulls().to_numpy()
        assert ((w == 0.0) == (g == 0.0)).all(), name


@pytest.mark.parametrize(("func", "values"), [
    # overflow, then cancelling: the chunks' totals meet another way than the rows' sum
    ("cum_sum", [1e308, 1e308] + [1.0] * 300 + [-1e308, -1e308] + [1.0] * 100),
    ("cum_prod", [1e200, 1e200] + [1.0] * 300 + [1e-200, 1e-200] + [1.0] * 100),
    ("cum_sum", [1.0, None, np.inf, 2.0] + [1.0] * 200 + [-np.inf, 5.0]),
    ("cum_sum", [1.0, np.nan] + [2.0] * 300),
])  # fmt: skip
def test_running_float_totals_that_meet_infinities_are_redone_on_the_host(
        host: HostRuntime, func: str, values: list[Any]) -> None:  # fmt: skip
    # the device's cum_sum of [1e308, 1e308, ..., -1e308, -1e308, ...] was NaN where
    # polars' running total stays inf (and its cum_prod likewise)
    array = pa.array(values, pa.float64())
    got, where = runner.run_device_scan(func, (False,), array, DType.FLOAT64, DType.FLOAT64,
                                        RunStats(), chunk_rows=16)  # fmt: skip
    assert where == runner.CUM_NONFINITE
    want = pl.Series(values, dtype=pl.Float64)
    want = want.cum_sum() if func == "cum_sum" else want.cum_prod()
    assert pl.Series(got).to_list() == want.to_list() or all(
        (a is None and b is None) or a == b or (a != a and b != b)
        for a, b in zip(pl.Series(got).to_list(), want.to_list(), strict=True))  # fmt: skip


@pytest.mark.parametrize("n", [2, 3, 40, 1000])
@pytest.mark.parametrize("dtype", [pa.float32(), pa.float64()])
def test_whole_column_extremes_of_both_zeros_on_the_host(monkeypatch: pytest.MonkeyPatch,
                                                        n: int, dtype: pa.DataType) -> None:
    # 0.0 == -0.0: of the two, min gives -0.0 and max 0.0, as the compiled CPU kernels
    # order them (polars' pick hangs on its kernel's lanes); each thread of the device
    # and the merge of their partials kept whichever zero came first
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "compiled")
    rng = np.random.default_rng(n)
    for layout in range(4):
        x = rng.choice([0.0, -0.0], n) if layout < 2 else np.full(n, 0.0 if layout == 2 else -0.0)
        if layout >= 2:
            x[rng.integers(0, n)] = -x[0]  # one zero of the other sign, anywhere
        if layout == 1:
            x[rng.random(n) < 0.3] = rng.choice([1.0, -1.0, np.nan])
        mask = rng.random(n) < 0.2
        table = pa.table({"x": pa.array(x, dtype, mask=mask)})

        def build(m: Any) -> Any:
            return [m.col("x").min().alias("mn"), m.col("x").max().alias("mx")]

        host = HostRuntime(block=32, max_blocks=2)
        got = pl.from_arrow(compute_on_host(cb.lazy(table).select(build(cb)), host)).row(0)
        cpu = pl.from_arrow(cb.lazy(table).select(build(cb)).compute()).row(0)
        want = pl.from_arrow(table).select(build(pl)).row(0)
        kept = x[~mask]
        numbers = kept[~np.isnan(kept)]
        for g, c, w, pick in zip(got, cpu, want, (np.min, np.max), strict=True):
            if w is None:
                assert g is None
                continue
            if w != w:  # every value NaN
                assert g != g
                continue
            assert g == w  # the value is polars' (its zero's sign aside)
            if numbers.size and pick(numbers) == 0.0:
                zeros = np.signbit(numbers[numbers == 0.0])
                minus = zeros.any() if pick is np.min else zeros.all()
                assert bool(np.signbit(g)) == bool(minus), (layout, pick.__name__, kept)
                assert bool(np.signbit(g)) == bool(np.signbit(c))


def test_rolling_extremes_keep_the_latest_of_equal_zeros_on_the_host() -> None:
    # of 0.0 and -0.0 in one window the CUDA text keeps the latest, as polars 2.2 (and
    # the CPU's queue): the sign of the zero shows which; per group too
    rng = np.random.default_rng(9)
    values = [None if v == 9 else float(v) for v in rng.choice([0.0, -0.0, 1.0, 9], 60)]
    df = pl.DataFrame({"x": pl.Series(values, dtype=pl.Float64), "g": rng.integers(0, 2, 60)})

    def build(m: Any) -> dict[str, Any]:
        x = m.col("x")
        return {"mx": x.rolling_max(3, min_samples=1), "mn": x.rolling_min(2, min_samples=1),
                "c": x.rolling_min(4, min_samples=1, center=True),
                "o": x.rolling_max(2, min_samples=1).over("g")}  # fmt: skip

    got = compute_on_host(df.gpu.select(**build(cb)))
    want = df.select(**build(pl))
    assert_frame_equal(got, want)
    for name in want.columns:
        g, w = got[name].to_numpy(), want[name].to_numpy()
        assert (np.signbit(g) == np.signbit(w)).all(), name
