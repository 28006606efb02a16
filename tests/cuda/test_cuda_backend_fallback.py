"""Without a usable GPU: detection, the fallback policy and clean failures, all for real.

This machine has CuPy but no CUDA driver, so "CuPy present, no device" is the
real situation here. "CuPy absent" is produced for real in a subprocess that
sets ``sys.modules['cupy'] = None`` before importing colbridge, which makes
``import cupy`` raise ImportError.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.backends import cuda
from colbridge.backends.common import RunStats
from colbridge.backends.device import gpu_status, resolve_device
from colbridge.memory.cuda import to_device

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(gpu_status()[0], reason="these tests need a machine without a GPU")


def _frame() -> pl.DataFrame:
    return pl.DataFrame({"a": [1.0, None, 4.0], "b": [2, 3, 4]})


def test_cuda_with_raise_names_the_cause() -> None:
    q = _frame().gpu.with_columns(z=cb.col("a").sqrt() * cb.col("b"))
    # the driver's own error is named, not a bare "no GPU"
    with pytest.raises(cb.DeviceError, match=r"no usable GPU for device='cuda': CuPy found no "
                       r"usable CUDA device: .*\(CUDARuntimeError: cudaError\w+: "):  # fmt: skip
        q.compute(device="cuda", fallback="raise")
    with pytest.raises(cb.DeviceError, match="no usable GPU for device='cuda:1'"):
        q.compute(device="cuda:1", fallback="raise")


def test_cuda_with_cpu_fallback_warns_and_returns_the_cpu_answer() -> None:
    q = _frame().gpu.with_columns(z=cb.col("a").sqrt() * cb.col("b"))
    with pytest.warns(cb.DeviceFallbackWarning, match="fell back to cpu"):
        out = q.compute(device="cuda", fallback="cpu")
    assert out["z"].to_list() == [2.0, None, 8.0]
    assert out.equals(q.compute(device="cpu"))
    assert q.last_report is not None
    assert q.last_report.device is not None
    assert q.last_report.device.target == "cpu"


def test_auto_picks_cpu_and_says_why() -> None:
    choice = resolve_device("auto")
    assert choice.target == "cpu"
    assert "no usable GPU" in choice.note


def test_backend_itself_raises_device_error_without_a_device() -> None:
    table = pa.table({"a": [1.0, 2.0]})
    lf = cb.lazy(table).with_columns(z=cb.col("a") + 1)
    from colbridge.plan.planner import plan_segments, type_segment
    from colbridge.plan.typecheck import ColumnType
    from colbridge.types import DType

    spec = plan_segments(lf.steps, ["a"])[0]
    segment = type_segment(spec, {"a": ColumnType("a", DType.FLOAT64, pa.float64())})
    with pytest.raises(cb.DeviceError, match=r"the CUDA backend failed on cuda:0: .*cudaError\w+"):
        cuda.run_segment(segment, {"a": table.column("a").chunk(0)}, 2, RunStats())


def test_placements_need_a_device() -> None:
    with pytest.raises(cb.DeviceError, match=r"could not place data on cuda:0: .*cudaError\w+"):
        to_device(np.arange(4.0), placement="managed")
    with pytest.raises(cb.DeviceError, match="unknown placement 'pinned'"):
        to_device(np.arange(4.0), placement="pinned")


def test_options_are_validated() -> None:
    with pytest.raises(cb.DeviceError, match="unknown placement"), cuda.options(placement="x"):
        pass
    with pytest.raises(cb.DeviceError, match="memory_fraction"), cuda.options(memory_fraction=0):
        pass
    with cuda.options(placement="host-mapped", device=0) as opts:
        assert cuda.current_options() is opts


_NO_CUPY = textwrap.dedent("""
    import sys, time, json, warnings
    sys.modules["cupy"] = None          # `import cupy` now raises ImportError
    import colbridge as cb
    import polars as pl
    from colbridge.backends.device import gpu_status
    start = time.perf_counter()
    usable, reason = gpu_status()
    took = time.perf_counter() - start
    try:
        import cupy  # noqa: F401
        blocked = False
    except ImportError:
        blocked = True
    q = pl.DataFrame({"a": [1.0, 4.0]}).gpu.with_columns(z=cb.col("a").sqrt())
    try:
        q.compute(device="cuda", fallback="raise")
        raised = ""
    except cb.DeviceError as exc:
        raised = str(exc)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = q.compute(device="cuda", fallback="cpu")
    print(json.dumps({"usable": usable, "reason": reason, "took": took, "blocked": blocked,
                      "raised": raised, "z": out["z"].to_list(),
                      "warned": [str(w.category.__name__) for w in caught]}))
""")


def test_cupy_absent_is_detected_cleanly() -> None:
    proc = subprocess.run([sys.executable, "-c", _NO_CUPY], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["blocked"] is True
    assert result["usable"] is False
    assert "CuPy is not installed" in result["reason"]
    assert "CuPy is not installed" in result["raised"]
    assert result["z"] == [1.0, 2.0]
    assert result["warned"] == ["DeviceFallbackWarning"]


def test_importing_colbridge_does_not_import_cupy() -> None:
    code = "import sys, colbridge, colbridge.backends.cuda, colbridge.memory.cuda; " \
           "print('cupy' in sys.modules)"  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=True)  # fmt: skip
    assert proc.stdout.strip() == "False"


def test_gpu_check_script_fails_cleanly_without_a_gpu(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--out", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no usable GPU" in proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["status"] == "no-gpu"


_DRIVER_PROBE = """
import json, sys
import colbridge.backends.device as device
device._DRIVER_NODES = tuple(sys.argv[1:])
auto = device.resolve_device("auto")
imported = "cupy" in sys.modules
try:
    cuda = device.resolve_device("cuda", fallback="raise").note
except Exception as exc:
    cuda = str(exc)
print(json.dumps({"target": auto.target, "note": auto.note, "cupy": imported, "cuda": cuda}))
"""


def _probe_with_nodes(*nodes: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _DRIVER_PROBE, *nodes], capture_output=True,
                         text=True, check=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.skipif(sys.platform != "linux", reason="the driver-node check is Linux only")
def test_auto_without_a_driver_node_does_not_import_cupy(tmp_path: Path) -> None:
    absent = _probe_with_nodes(str(tmp_path / "no-such-node"))
    assert absent["target"] == "cpu"
    assert "no NVIDIA driver is loaded on this machine" in str(absent["note"])
    assert absent["cupy"] is False  # the 60 ms import is skipped
    # an explicit device="cuda" still asks CuPy, whose error names the driver's cause
    assert "CuPy" in str(absent["cuda"])
    # with a driver node present, auto asks CuPy as before
    node = tmp_path / "nvidiactl"
    node.touch()
    present = _probe_with_nodes(str(node))
    assert present["target"] == "cuda" or "CuPy" in str(present["note"])
    assert "no NVIDIA driver is loaded on this machine (none of" not in str(present["note"])
