"""Check the CUDA backend on a real GPU: run the `gpu` tests, then time fused kernels.

Usage: ``python benchmarks/gpu_check.py [--out DIR] [--sizes 1e6,1e7,1e8] [--no-tests]``

Writes ``gpu_check.json`` and ``gpu_check.md`` into ``--out`` (default: ``$OUT``,
else ``benchmarks/results``). Needs no network; polars is optional. Exits 2 with a
clear message (and a report saying so) when no GPU is usable.

Measured, for ``z = (a*b + c).sqrt()*2 - a/c`` over float64 columns:
* the fused kernel vs a device-to-device copy of the same bytes (bandwidth roofline)
  vs CuPy eager (one kernel per operation);
* end to end from a host pandas frame with the ``device``, ``managed`` and
  ``host-mapped`` placements;
* ``compute_async`` overlap: four computes at once vs one after another.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _out_dir(arg: str | None) -> Path:
    folder = Path(arg or os.environ.get("OUT") or ROOT / "benchmarks" / "results")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _write(out: Path, report: dict[str, Any]) -> None:
    (out / "gpu_check.json").write_text(json.dumps(report, indent=2, default=str))
    lines = ["# colbridge GPU check", "", f"status: **{report['status']}**", ""]
    if "reason" in report:
        lines += [f"reason: {report['reason']}", ""]
    if "device" in report:
        lines += [f"device: {report['device']}", ""]
    if "tests" in report:
        t = report["tests"]
        lines += ["## gpu tests", "", f"exit code {t['returncode']}: {t['summary']}", ""]
    if report.get("kernel"):
        header = ("| rows | fused ms | fused GB/s | d2d copy ms | copy GB/s | eager ms "
                  "| max abs diff |")  # fmt: skip
        lines += ["## fused kernel vs roofline vs CuPy eager", "", header,
                  "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
        for r in report["kernel"]:
            lines.append(f"| {r['rows']:.0e} | {r['fused_ms']:.3f} | {r['fused_gbs']:.0f} | "
                         f"{r['copy_ms']:.3f} | {r['copy_gbs']:.0f} | {r['eager_ms']:.3f} | "
                         f"{r['max_abs_diff']:.3g} |")  # fmt: skip
        lines.append("")
    if report.get("end_to_end"):
        lines += ["## end to end from a pandas frame (compute, warm)", "",
                  "| rows | placement | seconds | matches cpu |",
                  "| --- | --- | --- | --- |"]  # fmt: skip
        for r in report["end_to_end"]:
            lines.append(f"| {r['rows']:.0e} | {r['placement']} | {r['seconds']:.4f} | "
                         f"{r['matches_cpu']} |")  # fmt: skip
        lines.append("")
    if report.get("async"):
        a = report["async"]
        timing = f"4 sequential: {a['sequential_s']:.3f} s; 4 concurrent: {a['concurrent_s']:.3f} s"
        lines += ["## compute_async overlap", "", timing, ""]
    if report.get("errors"):
        lines += ["## errors", ""] + [f"- {e}" for e in report["errors"]]
    (out / "gpu_check.md").write_text("\n".join(lines) + "\n")


def _run_tests(budget_s: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
           str(ROOT / "tests" / "test_gpu_real.py")]  # fmt: skip
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=budget_s,
                              check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"returncode": -1, "summary": f"timed out after {budget_s} s", "output": ""}
    tail = proc.stdout.strip().splitlines()
    return {"returncode": proc.returncode, "summary": tail[-1] if tail else "",
            "output": proc.stdout[-6000:] + proc.stderr[-2000:]}  # fmt: skip


def _timed(cp: Any, fn: Any, repeat: int = 10) -> float:
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def _fused_kernel(cp: Any) -> Any:
    import pyarrow as pa

    import colbridge as cb
    from colbridge.backends.cuda import _cached_binary
    from colbridge.codegen.cuda import generate_elementwise
    from colbridge.plan.nullability import Nullability
    from colbridge.plan.planner import plan_segments, type_segment
    from colbridge.plan.typecheck import ColumnType
    from colbridge.types import DType

    a, b, c = cb.col("a"), cb.col("b"), cb.col("c")
    lf = cb.lazy(pa.table({"a": [1.0], "b": [1.0], "c": [1.0]}))
    lf = lf.with_columns(z=(a * b + c).sqrt() * 2 - a / c)
    spec = plan_segments(lf._steps, ["a", "b", "c"])[0]
    schema = {n: ColumnType(n, DType.FLOAT64, pa.float64()) for n in "abc"}
    seg = type_segment(spec, schema)
    src = generate_elementwise(
        seg.outputs, seg.mask, seg.types, Nullability(seg.types, frozenset())
    )
    cc = cp.cuda.Device().compute_capability
    path = _cached_binary(src.source, f"sm_{cc}")
    return cp.RawModule(path=str(path)).get_function("elementwise")


def _kernel_bench(cp: Any, sizes: list[int]) -> list[dict[str, Any]]:
    kernel = _fused_kernel(cp)
    rows = []
    for n in sizes:
        free = cp.cuda.runtime.memGetInfo()[0]
        if 6 * 8 * n > free * 0.5:
            continue
        rng = cp.random.default_rng(0)
        a, b, c = (rng.random(n) + 0.5 for _ in range(3))
        out = cp.empty(n)
        err = cp.zeros(2, dtype=cp.uint64)
        nbytes = (n + 7) // 8
        grid = min((nbytes + 255) // 256, 4096)

        def fused(a: Any = a, b: Any = b, c: Any = c, out: Any = out, err: Any = err,
                  n: int = n, grid: int = grid) -> None:  # fmt: skip
            kernel((grid,), (256,), (cp.int64(n), a, b, c, out, err))

        src = cp.empty(2 * n)
        dst = cp.empty(2 * n)

        def copy(src: Any = src, dst: Any = dst) -> None:
            dst[...] = src  # 16n bytes read + 16n written = the fused kernel's 32n bytes

        def eager(a: Any = a, b: Any = b, c: Any = c) -> Any:
            return cp.sqrt(a * b + c) * 2 - a / c

        fused_ms, copy_ms, eager_ms = _timed(cp, fused), _timed(cp, copy), _timed(cp, eager)
        diff = float(cp.max(cp.abs(out - eager())))
        traffic = 32 * n / 1e9
        rows.append({"rows": n, "fused_ms": fused_ms, "copy_ms": copy_ms, "eager_ms": eager_ms,
                     "fused_gbs": traffic / (fused_ms / 1e3), "copy_gbs": traffic / (copy_ms / 1e3),
                     "max_abs_diff": diff})  # fmt: skip
        del a, b, c, out, src, dst
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def _end_to_end(sizes: list[int]) -> list[dict[str, Any]]:
    import numpy as np
    import pandas as pd

    import colbridge as cb
    from colbridge.backends import cuda

    rows = []
    for n in sizes:
        rng = np.random.default_rng(1)
        df = pd.DataFrame({k: rng.random(n) + 0.5 for k in "abc"})
        a, b, c = cb.col("a"), cb.col("b"), cb.col("c")
        q = df.gpu.with_columns(z=(a * b + c).sqrt() * 2 - a / c)
        want = q.compute(device="cpu")["z"].to_numpy()
        for placement in cuda.PLACEMENTS:
            with cuda.options(placement=placement, memory_fraction=0.3):
                q.compute(device="cuda", fallback="raise")  # compile and warm up
                start = time.perf_counter()
                got = q.compute(device="cuda", fallback="raise")
                seconds = time.perf_counter() - start
            ok = bool(np.array_equal(got["z"].to_numpy(), want))
            rows.append({"rows": n, "placement": placement, "seconds": seconds, "matches_cpu": ok})
    return rows


def _async_overlap(n: int) -> dict[str, Any]:
    import numpy as np
    import pandas as pd

    import colbridge as cb

    df = pd.DataFrame({k: np.random.default_rng(2).random(n) + 0.5 for k in "abc"})
    q = df.gpu.with_columns(z=(cb.col("a") * cb.col("b") + cb.col("c")).sqrt())
    q.compute(device="cuda", fallback="raise")
    start = time.perf_counter()
    for _ in range(4):
        q.compute(device="cuda", fallback="raise")
    sequential = time.perf_counter() - start
    start = time.perf_counter()
    futures = [q.compute_async(device="cuda", fallback="raise") for _ in range(4)]
    for f in futures:
        f.result()
    concurrent = time.perf_counter() - start
    return {"rows": n, "sequential_s": sequential, "concurrent_s": concurrent}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="report folder (default: $OUT)")
    parser.add_argument("--sizes", default="1e6,1e7,1e8", help="row counts for the kernel timing")
    parser.add_argument("--no-tests", action="store_true", help="skip `pytest -m gpu`")
    args = parser.parse_args(argv)
    out = _out_dir(args.out)
    sizes = [int(float(s)) for s in args.sizes.split(",") if s]

    from colbridge.backends.device import gpu_status

    usable, reason = gpu_status()
    if not usable:
        _write(out, {"status": "no-gpu", "reason": reason})
        print(f"gpu_check: no usable GPU: {reason}; nothing was measured "
              f"(report in {out})", file=sys.stderr)  # fmt: skip
        return 2
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(0)
    report: dict[str, Any] = {"status": "ok", "device": props["name"].decode(), "errors": []}
    started = time.perf_counter()
    if not args.no_tests:
        report["tests"] = _run_tests(budget_s=240)
        if report["tests"]["returncode"] != 0:
            report["status"] = "tests-failed"
    steps = [
        ("kernel", lambda: _kernel_bench(cp, sizes)),
        ("end_to_end", lambda: _end_to_end([s for s in sizes if s <= 10_000_000])),
        ("async", lambda: _async_overlap(min(sizes[-1], 10_000_000))),
    ]
    for name, step in steps:
        if time.perf_counter() - started > 420:
            report["errors"].append(f"{name}: skipped, time budget spent")
            continue
        try:
            report[name] = step()
        except Exception as exc:  # report and keep measuring what still can be
            report["errors"].append(f"{name}: {type(exc).__name__}: {exc}")
            report["status"] = "errors"
        _write(out, report)
    report["seconds"] = time.perf_counter() - started
    _write(out, report)
    print((out / "gpu_check.md").read_text())
    return 0 if report["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
