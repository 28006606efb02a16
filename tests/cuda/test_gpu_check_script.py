"""`benchmarks/gpu_check.py` without a GPU: its steps on the CuPy double, its report, its exits.

The script must work the first time a GPU is lent: every step but the CuPy
eager timing runs here on `colbridge.testing.cupy_double` (the kernel timing's
launch is checked against NumPy), and the script runs from a plain checkout
with polars and hypothesis made unimportable.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from colbridge.memory.cuda import use_cupy
from colbridge.testing.cupy_double import CupyDouble, DeviceSpec

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gpu_check() -> ModuleType:
    return _script()


def test_scan_step_runs_on_the_double(gpu_check: Any) -> None:
    d = CupyDouble(devices=[DeviceSpec(total_memory=1 << 30)])
    with use_cupy(d):
        rows = gpu_check.scan_check(d, 3001, gpu_check.Budget(600))
    assert [r["scan"].split("(")[0] for r in rows] == [f for f, _ in gpu_check.SCANS]
    assert all(r["matches_cpu"] for r in rows), rows
    assert all("launch(es)" in r["how"] for r in rows)
    assert "## scans on the device" in gpu_check.render({"status": "ok", "scans": rows})


def test_every_step_runs_on_the_double(gpu_check: Any) -> None:
    d = CupyDouble(devices=[DeviceSpec(pageable_memory_access=True, total_memory=1 << 30)])
    budget = gpu_check.Budget(600)
    with use_cupy(d):
        # few rows: the host runs every lane of a warp on an OS thread of its own
        checks = gpu_check.correctness(d, budget, n=1003, big=10_003, chunked_rows=5_001,
                                       chunk_rows=2048)  # fmt: skip
        e2e = gpu_check.end_to_end(d, [5000], budget)
        overlap = gpu_check.async_overlap(d, 5000)
        leaks = gpu_check.leaks(d)
    assert len(checks) == (2 * 14 + 3) * 4  # groups x null patterns + 3, on 4 placements
    assert [c for c in checks if not c["ok"]] == []
    assert {c["placement"] for c in checks} == {"device", "managed", "host-mapped", "pageable"}
    assert any(" in 3 chunk(s)" in c["kernels"] for c in checks)  # the chunked cases chunked
    assert [r["matches_cpu"] for r in e2e] == [True] * 4
    assert overlap["matches_cpu"] is True
    assert leaks["host registrations left"] == 0
    assert leaks["device pool in use bytes"] == 0
    d.check()
    report = {"status": "ok", "correctness": checks, "end_to_end": e2e, "async": overlap,
              "leaks": leaks, "seconds": 1.0}  # fmt: skip
    text = gpu_check.render(report)
    assert "124 of 124 checks passed." in text
    assert "| 5000 | host-mapped |" in text


def test_the_timed_kernel_is_the_backends_kernel(gpu_check: Any) -> None:
    d = CupyDouble()
    n = 5000
    rng = np.random.default_rng(0)
    host = [rng.random(n) + 0.5 for _ in range(3)]
    with use_cupy(d):
        a, b, c = (d.asarray(x) for x in host)
        z = d.empty(n)
        launch, shape = gpu_check.fused_launcher(d, n, a, b, c, z)
        launch()
        got = d.asnumpy(z)
    x, y, w = host
    assert got.tobytes() == (np.sqrt(x * y + w) * 2 - x / w).tobytes()  # bit for bit
    assert shape.endswith(" x 256")
    d.check()


def test_no_gpu_exits_2_with_its_report(gpu_check: Any, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    with use_cupy(CupyDouble(init_error=100)):
        code = gpu_check.main(["--out", str(tmp_path)])
    assert code == 2
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["status"] == "no-gpu"
    assert "no CUDA device is visible" in report["reason"]
    out = capsys.readouterr()
    assert "status: **no-gpu**" in out.out
    assert "no usable GPU" in out.err
    assert (tmp_path / "gpu_check.md").read_text().startswith("# colbridge GPU check")


def test_a_run_out_of_time_still_ends_with_its_report(gpu_check: Any, tmp_path: Path) -> None:
    d = CupyDouble()
    with use_cupy(d):
        code = gpu_check.main(["--out", str(tmp_path), "--budget-s", "1", "--no-tests"])
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert code == 1
    assert report["status"] == "failed"
    assert report["environment"]["gpu"] == "colbridge test double"
    assert any("time budget spent" in e for e in report["errors"])
    assert "leaks" in report


_PLAIN = textwrap.dedent("""
    import runpy, sys
    sys.modules["polars"] = None      # import polars / hypothesis now raise ImportError
    sys.modules["hypothesis"] = None
    sys.path.append({site!r})          # the libraries, without the install's path hooks
    sys.argv = ["gpu_check.py", "--out", {out!r}]
    runpy.run_path({script!r}, run_name="__main__")
""")


def test_the_script_runs_from_a_plain_checkout_without_polars_or_hypothesis(
    tmp_path: Path,
) -> None:
    code = _PLAIN.format(site=sysconfig.get_paths()["purelib"], out=str(tmp_path),
                         script=str(ROOT / "benchmarks" / "gpu_check.py"))  # fmt: skip
    # -S: no site processing, so the editable install's finder is not there either
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["status"] == "no-gpu"
    assert "no usable GPU" in proc.stderr
