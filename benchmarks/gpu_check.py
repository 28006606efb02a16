"""Check the CUDA backend on a real GPU, then measure it; always ends with its report.

Usage::

    python benchmarks/gpu_check.py [--out DIR] [--rows 1e8] [--e2e-rows 1e6,1e7]
                                   [--budget-s 480] [--no-tests]

Runs as it is from a plain checkout on a machine with Python 3.10+, NumPy,
pandas, pyarrow, numba and CuPy, and nothing else (no polars, no hypothesis,
no network, no install). Writes ``gpu_check.json`` and ``gpu_check.md`` into
``--out`` (default ``$OUT``, else ``benchmarks/results``) after every step, so
a run cut short still leaves its report. Exits 0 when every check passed, 1
when one failed, 2 (with the reason, in the report too) without a usable GPU.

Steps, each within the time budget (``--budget-s``):

1. the machine: GPU, driver, CuPy runtime, NVRTC, what the device supports;
2. correctness: every expression group of `colbridge.testing.gpu_cases`, both
   null patterns, sliced inputs, under every placement the device supports,
   against the CPU backend; nested reductions with a filter; chunked runs;
3. the fused kernel of ``z = (a*b + c).sqrt()*2 - a/c`` over float64 columns at
   ``--rows`` rows, launched exactly as the backend launches it, timed with
   CUDA events against a device-to-device copy of as many bytes (the
   bandwidth roofline) and against CuPy eager (one kernel per operation);
4. end to end from a pandas frame with each placement (warm, median of 3);
5. ``compute_async`` overlap: four computes at once against one after another;
6. scans: each generated CUDA scan (cumulative, fills, shifts, rolling
   windows, ewm_mean) over ``--scan-rows`` rows against the CPU scan kernels, both timed;
7. ``pytest -m gpu`` of ``tests/cuda/test_gpu_real.py`` and
   ``tests/cuda/test_scan_gpu_real.py`` when pytest is installed;
8. leaks: host registrations and memory held after everything.

Memory: every allocation is checked against the free device memory first and
sizes shrink to fit; managed memory stays within a few GB.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a plain checkout: colbridge comes from the source tree

EXPRESSION = "z = (a*b + c).sqrt()*2 - a/c"
#: the most managed memory one step may use, whatever the device has
MANAGED_CAP = 4 << 30


class Budget:
    """Wall-clock time left for the checks."""

    def __init__(self, seconds: float) -> None:
        self.start = time.perf_counter()
        self.seconds = seconds

    def left(self) -> float:
        return self.seconds - (time.perf_counter() - self.start)


# -- the report ---------------------------------------------------------------


def _out_dir(arg: str | None) -> Path:
    folder = Path(arg or os.environ.get("OUT") or ROOT / "benchmarks" / "results")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> list[str]:
    lines = ["| " + " | ".join(title for title, _ in columns) + " |",
             "| " + " | ".join("---" for _ in columns) + " |"]  # fmt: skip
    for row in rows:
        cells = []
        for _, key in columns:
            value = row.get(key, "")
            if isinstance(value, float):
                value = f"{value:.4g}"
            cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def render(report: dict[str, Any]) -> str:
    """The report as Markdown."""
    lines = ["# colbridge GPU check", "", f"status: **{report['status']}**", ""]
    if report.get("reason"):
        lines += [f"reason: {report['reason']}", ""]
    env = report.get("environment")
    if env:
        lines += ["## machine", ""] + [f"- {k}: {v}" for k, v in env.items()] + [""]
    checks = report.get("correctness")
    if checks:
        failed = [c for c in checks if not c["ok"]]
        lines += ["## correctness against the CPU backend", "",
                  f"{len(checks) - len(failed)} of {len(checks)} checks passed.", ""]  # fmt: skip
        summary: dict[str, list[int]] = {}
        for c in checks:
            summary.setdefault(c["placement"], [0, 0])[0 if c["ok"] else 1] += 1
        lines += _table([{"placement": p, "passed": ok, "failed": bad}
                         for p, (ok, bad) in summary.items()],
                        [("placement", "placement"), ("passed", "passed"),
                         ("failed", "failed")])  # fmt: skip
        if failed:
            lines += ["failures:", ""] + [f"- {c['placement']} / {c['check']}: {c['error']}"
                                          for c in failed[:40]] + [""]  # fmt: skip
    if report.get("kernel"):
        lines += [f"## fused kernel ({EXPRESSION}, float64) vs roofline vs CuPy eager", "",
                  "CUDA events, median of 10 warm runs; bytes moved = 32 per row.", ""]  # fmt: skip
        lines += _table(report["kernel"], [
            ("rows", "rows"), ("fused ms", "fused_ms"), ("d2d copy ms", "copy_ms"),
            ("fused / copy", "fused_over_copy"), ("eager ms", "eager_ms"),
            ("eager / fused", "eager_over_fused"), ("fused GB/s", "fused_gbs"),
            ("copy GB/s", "copy_gbs"), ("grid x block", "launch"),
            ("max abs diff vs eager", "max_abs_diff"),
        ])  # fmt: skip
    if report.get("end_to_end"):
        lines += ["## end to end from a pandas frame (warm compute, median of 3)", ""]
        lines += _table(report["end_to_end"], [
            ("rows", "rows"), ("placement", "placement"), ("seconds", "seconds"),
            ("GB/s (in+out)", "gbs"), ("matches cpu", "matches_cpu"), ("kernels", "kernels"),
        ])  # fmt: skip
    if report.get("async"):
        lines += ["## compute_async overlap", ""]
        lines += _table([report["async"]], [
            ("rows", "rows"), ("placement", "placement"), ("4 one after another s",
                                                           "sequential_s"),
            ("4 at once s", "concurrent_s"), ("speed-up", "speedup"),
        ])  # fmt: skip
    if report.get("scans"):
        lines += ["## scans on the device vs the CPU scan kernels (warm, median of 3)", ""]
        lines += _table(report["scans"], [
            ("scan", "scan"), ("rows", "rows"), ("device s", "device_s"), ("cpu s", "cpu_s"),
            ("matches cpu", "matches_cpu"), ("how", "how"),
        ])  # fmt: skip
    if report.get("tests"):
        t = report["tests"]
        lines += ["## pytest -m gpu", "", f"exit code {t['returncode']}: {t['summary']}", ""]
    if report.get("leaks"):
        lines += ["## after everything", ""] + [f"- {k}: {v}" for k, v in
                                                report["leaks"].items()] + [""]  # fmt: skip
    if report.get("errors"):
        lines += ["## errors", ""] + [f"- {e}" for e in report["errors"]] + [""]
    lines += [f"took {report.get('seconds', 0):.1f} s", ""]
    return "\n".join(lines)


def write(out: Path, report: dict[str, Any]) -> None:
    (out / "gpu_check.json").write_text(json.dumps(report, indent=2, default=str))
    (out / "gpu_check.md").write_text(render(report))


# -- steps --------------------------------------------------------------------


def environment(cp: Any) -> dict[str, Any]:
    import numba
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from colbridge.backends.cuda import Geometry, _arch
    from colbridge.memory.cuda import device_info

    info = device_info(cp, 0)
    rt = cp.cuda.runtime
    env: dict[str, Any] = {
        "gpu": info.name, "compute capability": info.compute_capability,
        "SMs": info.sm_count, "memory GiB": round(info.total_memory / 2**30, 1),
        "free GiB": round(rt.memGetInfo()[0] / 2**30, 1),
        "driver CUDA": rt.driverGetVersion(), "CuPy runtime CUDA": rt.runtimeGetVersion(),
        "pageable memory access (HMM)": info.pageable_memory_access,
        "concurrent managed access": info.concurrent_managed_access,
        "host register read-only": info.host_register_read_only,
        "host pointer for registered memory": info.host_pointer_for_registered,
        "launch geometry": Geometry.for_device(info),
        "python": platform.python_version(), "cupy": cp.__version__, "numpy": np.__version__,
        "pandas": pd.__version__, "pyarrow": pa.__version__, "numba": numba.__version__,
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }  # fmt: skip
    try:
        env["nvrtc"] = cp.cuda.nvrtc.getVersion()
        env["kernel arch"] = _arch(info)
    except Exception as exc:  # reported; compiling will fail with the same cause
        env["nvrtc"] = f"unavailable: {type(exc).__name__}: {exc}"
    return env


def placements(cp: Any) -> list[str]:
    from colbridge.backends import cuda
    from colbridge.memory.cuda import device_info

    pageable = device_info(cp, 0).pageable_memory_access
    return [p for p in cuda.PLACEMENTS if p != "pageable" or pageable]


def correctness(
    cp: Any, budget: Budget, n: int = 100_003, big: int = 1_000_003, chunked_rows: int = 500_001,
    chunk_rows: int = 32768,
) -> list[dict[str, Any]]:
    import numpy as np
    import pyarrow as pa

    import colbridge as cb
    from colbridge.backends import cuda
    from colbridge.testing.gpu_cases import (
        CB,
        GROUPS,
        NULL_PATTERNS,
        Group,
        assert_arrays_match,
        make_column,
    )

    ulps = {"float64": 4, "float32": 6}

    def table(types: tuple[Any, ...], pattern: tuple[bool, ...], rows: int) -> Any:
        rng = np.random.default_rng(3)
        cols = {name: make_column(rng, t, rows + 5, nulls)
                for name, t, nulls in zip("abc", types, pattern, strict=True)}  # fmt: skip
        return pa.table(cols).slice(5, rows)

    def compare(got: Any, want: Any, loose: bool, rtol: float = 0.0) -> None:
        assert got.column_names == want.column_names, (got.column_names, want.column_names)
        for name in got.column_names:
            kind = str(got.column(name).type).replace("double", "float64")
            kind = kind.replace("float", "float32") if kind == "float" else kind
            assert_arrays_match(got.column(name), want.column(name), what=name, rtol=rtol,
                                ulps=ulps.get(kind, 0) if loose else 0)  # fmt: skip

    cases: list[tuple[str, Any, Callable[[Any], Any], bool, float, dict[str, Any]]] = []
    for group in GROUPS:
        for pattern in NULL_PATTERNS:
            data = table(group.types, pattern, n)
            cases.append((f"{group.name} nulls={pattern}", data,
                          lambda q, g=group: q.with_columns(**g.exprs(CB)),
                          bool(group.ulps), 0.0, {}))  # fmt: skip
    red = Group("r", (pa.float64(), pa.int64(), pa.int64()), lambda m: {})

    def nested(q: Any) -> Any:
        a, b = cb.col("a").fill_nan(0.0).clip(-1e6, 1e6), cb.col("b")
        return q.with_columns(z=(a - a.mean()) / a.std(), s=b.sum(), mx=b.max(), mn=a.min(),
                              v=a.var()).filter(cb.col("z") > 0)  # fmt: skip

    big_table = table(red.types, (True, True, False), big)
    cases.append(("nested reductions + filter", big_table, nested, False, 1e-9, {}))
    cases.append((f"nested reductions + filter, chunks of {2 * chunk_rows}", big_table, nested,
                  False, 1e-9, {"max_chunk_rows": 2 * chunk_rows}))  # fmt: skip
    exact = GROUPS[0]
    chunked = table(exact.types, (True, False, True), chunked_rows)
    cases.append((f"float64 group, chunks of {chunk_rows}", chunked,
                  lambda q: q.with_columns(**exact.exprs(CB)), False, 0.0,
                  {"max_chunk_rows": chunk_rows}))  # fmt: skip

    results = []
    for name, data, build, loose, rtol, opts in cases:
        if budget.left() < 30:
            results.append({"placement": "-", "check": name, "ok": False,
                            "error": "skipped: time budget spent"})  # fmt: skip
            continue
        want = build(cb.lazy(data)).compute(device="cpu")
        for placement in placements(cp):
            row: dict[str, Any] = {"placement": placement, "check": name}
            try:
                with cuda.options(placement=placement, **opts):
                    lf = build(cb.lazy(data))
                    got = lf.compute(device="cuda", fallback="raise")
                compare(got, want, loose, rtol)
                row.update(ok=True, kernels=lf.last_report.stats.kernels[-1])
            except Exception as exc:
                row.update(ok=False, error=f"{type(exc).__name__}: {str(exc)[:400]}")
            results.append(row)
    return results


def _timed(cp: Any, fn: Callable[[], Any], repeat: int = 10) -> float:
    fn()
    cp.cuda.get_current_stream().synchronize()
    times = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return float(statistics.median(times))


def _fused_kernel(cp: Any) -> tuple[Any, Any, Any, list[Any]]:
    """The backend's own kernel for EXPRESSION, compiled and loaded as the backend does."""
    import pyarrow as pa

    import colbridge as cb
    from colbridge.backends.cuda import Geometry, _arch, _cached_binary
    from colbridge.codegen.cuda import generate_elementwise
    from colbridge.memory.cuda import device_info
    from colbridge.plan.nullability import Nullability
    from colbridge.plan.planner import plan_segments, type_segment
    from colbridge.plan.typecheck import ColumnType
    from colbridge.types import DType

    a, b, c = cb.col("a"), cb.col("b"), cb.col("c")
    lf = cb.lazy(pa.table({"a": [1.0], "b": [1.0], "c": [1.0]}))
    lf = lf.with_columns(z=(a * b + c).sqrt() * 2 - a / c)
    spec = plan_segments(lf.steps, ["a", "b", "c"])[0]
    schema = {n: ColumnType(n, DType.FLOAT64, pa.float64()) for n in "abc"}
    seg = type_segment(spec, schema)
    src = generate_elementwise(seg.outputs, seg.mask, seg.types,
                               Nullability(seg.types, frozenset()),
                               plan_text=seg.kernel_text, literals=seg.params)  # fmt: skip
    info = device_info(cp, 0)
    path = _cached_binary(src.source, _arch(info))
    kernel = cp.RawModule(path=str(path)).get_function(src.name)
    return src, kernel, Geometry.for_device(info), list(seg.param_values)


def fused_launcher(
    cp: Any, n: int, a: Any, b: Any, c: Any, z: Any
) -> tuple[Callable[[], None], str]:
    """A launch of the backend's kernel for EXPRESSION over device arrays, as the backend does."""
    from colbridge.backends.cuda import _typed_args, launch_config

    src, kernel, geo, literals = _fused_kernel(cp)
    err = cp.zeros(2, dtype=cp.uint64)
    grid, block = launch_config(src.threads_for(n), geo.block, geo.max_blocks)
    params = [n, a.data.ptr, b.data.ptr, c.data.ptr, *literals, z.data.ptr, err.data.ptr]
    args = _typed_args(src, params)

    def fused() -> None:
        kernel((grid,), (block,), args)

    fused.keep = (a, b, c, z, err)  # type: ignore[attr-defined]
    return fused, f"{grid} x {block}"


def kernel_bench(cp: Any, rows: int) -> list[dict[str, Any]]:
    free = cp.cuda.runtime.memGetInfo()[0]
    n = rows
    while 64 * n > free * 0.6 and n > 1_000_000:  # 4 columns of 8n + a 2 x 16n copy pair
        n //= 2
    row = _kernel_bench(cp, n)  # its arrays are gone when it returns
    cp.get_default_memory_pool().free_all_blocks()
    return [row]


def _kernel_bench(cp: Any, n: int) -> dict[str, Any]:
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        rng = cp.random.default_rng(0)
        a, b, c = (rng.random(n) + 0.5 for _ in range(3))
        z = cp.empty(n)
        fused, launch = fused_launcher(cp, n, a, b, c, z)
        pair = cp.empty(2 * n), cp.empty(2 * n)

        def copy() -> None:  # 16n bytes read + 16n written: the fused kernel's 32n bytes
            cp.cuda.runtime.memcpyAsync(pair[1].data.ptr, pair[0].data.ptr, 16 * n,
                                        cp.cuda.runtime.memcpyDeviceToDevice,
                                        stream.ptr)  # fmt: skip

        def eager() -> Any:
            return cp.sqrt(a * b + c) * 2 - a / c

        fused_ms, copy_ms, eager_ms = _timed(cp, fused), _timed(cp, copy), _timed(cp, eager)
        reference = eager()
        diff = float(cp.max(cp.abs(z - reference)))
        exact = bool(cp.all(z == reference))
        stream.synchronize()
    traffic = 32 * n / 1e9
    return {
        "rows": n, "fused_ms": fused_ms, "copy_ms": copy_ms, "eager_ms": eager_ms,
        "fused_over_copy": fused_ms / copy_ms, "eager_over_fused": eager_ms / fused_ms,
        "fused_gbs": traffic / (fused_ms / 1e3), "copy_gbs": traffic / (copy_ms / 1e3),
        "launch": launch, "max_abs_diff": diff, "bitwise_equal_to_eager": exact,
    }  # fmt: skip


def end_to_end(cp: Any, sizes: list[int], budget: Budget) -> list[dict[str, Any]]:
    import numpy as np
    import pandas as pd

    import colbridge as cb
    from colbridge.backends import cuda

    rows = []
    for n in sizes:
        free = cp.cuda.runtime.memGetInfo()[0]
        if 48 * n > min(free * 0.5, MANAGED_CAP) or budget.left() < 60:
            rows.append({"rows": n, "placement": "-", "matches_cpu": "skipped (memory or time)"})
            continue
        rng = np.random.default_rng(1)
        df = pd.DataFrame({k: rng.random(n) + 0.5 for k in "abc"})
        a, b, c = cb.col("a"), cb.col("b"), cb.col("c")
        q = df.gpu.with_columns(z=(a * b + c).sqrt() * 2 - a / c)
        want = q.compute(device="cpu")["z"].to_numpy()
        for placement in placements(cp):
            row: dict[str, Any] = {"rows": n, "placement": placement}
            try:
                with cuda.options(placement=placement, memory_fraction=0.3):
                    q.compute(device="cuda", fallback="raise")  # compile and warm up
                    times = []
                    for _ in range(3):
                        start = time.perf_counter()
                        got = q.compute(device="cuda", fallback="raise")
                        times.append(time.perf_counter() - start)
                seconds = statistics.median(times)
                row.update(seconds=seconds, gbs=32 * n / 1e9 / seconds,
                           matches_cpu=bool(np.array_equal(got["z"].to_numpy(), want)),
                           kernels=q.last_report.stats.kernels[-1])  # fmt: skip
                got = None  # let the result's buffers go before the next placement
            except Exception as exc:
                row.update(matches_cpu=f"error: {type(exc).__name__}: {str(exc)[:300]}")
            rows.append(row)
            gc.collect()
    return rows


def async_overlap(cp: Any, n: int) -> dict[str, Any]:
    import numpy as np
    import pandas as pd

    import colbridge as cb

    df = pd.DataFrame({k: np.random.default_rng(2).random(n) + 0.5 for k in "abc"})
    q = df.gpu.with_columns(z=(cb.col("a") * cb.col("b") + cb.col("c")).sqrt())
    want = q.compute(device="cpu")["z"].to_numpy()
    q.compute(device="cuda", fallback="raise")
    start = time.perf_counter()
    for _ in range(4):
        q.compute(device="cuda", fallback="raise")
    sequential = time.perf_counter() - start
    start = time.perf_counter()
    futures = [q.compute_async(device="cuda", fallback="raise") for _ in range(4)]
    results = [f.result() for f in futures]
    concurrent = time.perf_counter() - start
    same = all(np.array_equal(r["z"].to_numpy(), want) for r in results)
    return {"rows": n, "placement": "device", "sequential_s": sequential,
            "concurrent_s": concurrent, "speedup": sequential / concurrent,
            "matches_cpu": same}  # fmt: skip


#: the scans `scan_check` runs: (function, options), rolling options (window, min_samples,
#: center, ddof)
SCANS: list[tuple[str, tuple[Any, ...]]] = [
    ("cum_sum", (False,)), ("cum_max", (True,)), ("cum_count", (False,)),
    ("forward_fill", (None,)), ("shift", (1, None)), ("rolling_mean", (20, 1, False, 1)),
    ("rolling_std", (20, 2, True, 1)), ("rolling_min", (20, 1, False, 1)),
    ("ewm_mean", (0.1, True, 1, False)),
]  # fmt: skip


def scan_check(cp: Any, n: int, budget: Budget) -> list[dict[str, Any]]:
    """Each of `SCANS` over ``n`` float64 rows with nulls on the device and on the CPU."""
    import numpy as np
    import pyarrow as pa

    from colbridge.backends.common import RunStats
    from colbridge.backends.cuda_scans import run_device_scan
    from colbridge.backends.scans import run_scan
    from colbridge.types import DType

    rng = np.random.default_rng(5)
    values = pa.array(rng.normal(size=n), mask=rng.random(n) < 0.1)
    scale = float(np.abs(values.fill_null(0).to_numpy(zero_copy_only=False)).sum())
    rows = []
    for func, options in SCANS:
        if budget.left() < 30:
            rows.append({"scan": func, "rows": n, "matches_cpu": False,
                         "how": "skipped: time budget spent"})  # fmt: skip
            continue
        result = DType.UINT32 if func == "cum_count" else DType.FLOAT64
        times: dict[str, list[float]] = {"device": [], "cpu": []}
        got = want = None
        how = ""
        for _ in range(4):  # the first of each compiles
            start = time.perf_counter()
            got, how = run_device_scan(func, options, values, DType.FLOAT64, result, RunStats())
            times["device"].append(time.perf_counter() - start)
            start = time.perf_counter()
            want = run_scan(func, options, values, DType.FLOAT64, result, None)
            times["cpu"].append(time.perf_counter() - start)
        assert got is not None
        assert want is not None
        g = got.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64)
        w = want.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64)
        # a float sum in another order: within n * eps of the magnitudes (docs/ordered.md)
        tol = 4 * n * np.finfo(np.float64).eps * scale if func == "cum_sum" else 1e-9
        same = bool(got.is_valid().equals(want.is_valid())) and \
            bool(np.allclose(g, w, rtol=1e-9, atol=tol, equal_nan=True))  # fmt: skip
        rows.append({"scan": f"{func}{options}", "rows": n,
                     "device_s": statistics.median(times["device"][1:]),
                     "cpu_s": statistics.median(times["cpu"][1:]), "matches_cpu": same,
                     "how": how})  # fmt: skip
    return rows


def run_tests(budget_s: float) -> dict[str, Any]:
    if importlib.util.find_spec("pytest") is None:
        return {"returncode": None, "summary": "pytest is not installed: skipped (the checks "
                "above cover the placements)"}  # fmt: skip
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
           str(ROOT / "tests" / "cuda" / "test_gpu_real.py"),
           str(ROOT / "tests" / "cuda" / "test_scan_gpu_real.py")]  # fmt: skip
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                              timeout=max(budget_s, 10), check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"returncode": -1, "summary": f"timed out after {budget_s:.0f} s"}
    tail = proc.stdout.strip().splitlines()
    return {"returncode": proc.returncode, "summary": tail[-1] if tail else "",
            "output": proc.stdout[-6000:] + proc.stderr[-2000:]}  # fmt: skip


def leaks(cp: Any) -> dict[str, Any]:
    from colbridge.memory.cuda import host_registry

    gc.collect()
    pool = cp.get_default_memory_pool()
    return {"host registrations left": len(host_registry.registered(cp)),
            "device pool in use bytes": pool.used_bytes(),
            "device pool cached bytes": pool.free_bytes()}  # fmt: skip


# -- main ---------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", default=None, help="report folder (default: $OUT)")
    parser.add_argument("--rows", default="1e8", help="rows of the fused kernel timing")
    parser.add_argument("--e2e-rows", default="1e6,1e7", help="rows of the end-to-end runs")
    parser.add_argument("--scan-rows", default="1e7", help="rows of the scan checks")
    parser.add_argument("--budget-s", type=float, default=480.0, help="time for all steps")
    parser.add_argument("--no-tests", action="store_true", help="skip `pytest -m gpu`")
    args = parser.parse_args(argv)
    out = _out_dir(args.out)
    budget = Budget(args.budget_s)
    report: dict[str, Any] = {"status": "running", "errors": [], "argv": sys.argv[1:]}
    code = 1
    try:
        from colbridge.backends.device import gpu_status

        usable, reason = gpu_status()
        if not usable:
            report.update(status="no-gpu", reason=f"no usable GPU: {reason}")
            code = 2
            return code
        from colbridge.memory.cuda import cupy_module

        cp = cupy_module()  # CuPy (or a stand-in installed with colbridge.memory.cuda.use_cupy)
        report["environment"] = environment(cp)
        write(out, report)
        steps: list[tuple[str, Callable[[], Any], float]] = [
            ("correctness", lambda: correctness(cp, budget), 60),
            ("kernel", lambda: kernel_bench(cp, int(float(args.rows))), 30),
            ("end_to_end", lambda: end_to_end(
                cp, [int(float(s)) for s in args.e2e_rows.split(",") if s], budget), 60),
            ("async", lambda: async_overlap(cp, 10_000_000), 30),
            ("scans", lambda: scan_check(cp, int(float(args.scan_rows)), budget), 30),
        ]  # fmt: skip
        if not args.no_tests:
            steps.append(("tests", lambda: run_tests(budget.left() - 20), 60))
        steps.append(("leaks", lambda: leaks(cp), 0))
        for name, step, needs in steps:
            if budget.left() < needs:
                report["errors"].append(f"{name}: skipped, time budget spent")
                continue
            try:
                report[name] = step()
            except Exception as exc:  # report it and measure what still can be
                report["errors"].append(f"{name}: {type(exc).__name__}: {exc}")
                report["errors"].append(traceback.format_exc(limit=6))
            report["seconds"] = time.perf_counter() - budget.start
            write(out, report)
        failed = [c for c in report.get("correctness", []) if not c["ok"]]
        bad_e2e = [r for r in report.get("end_to_end", []) + report.get("scans", [])
                   if r.get("matches_cpu") is False]
        tests = report.get("tests", {}).get("returncode")
        ok = not failed and not bad_e2e and not report["errors"] and tests in (None, 0)
        report["status"] = "ok" if ok else "failed"
        code = 0 if ok else 1
        return code
    except BaseException as exc:  # whatever happens, the report says it
        report["status"] = "failed"
        report["errors"].append(f"{type(exc).__name__}: {exc}")
        report["errors"].append(traceback.format_exc(limit=8))
        return 1
    finally:
        report["seconds"] = time.perf_counter() - budget.start
        with contextlib.suppress(Exception):
            write(out, report)
        print(render(report))
        if code == 2:
            print(f"gpu_check: {report.get('reason')}; nothing was measured (report in {out})",
                  file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
