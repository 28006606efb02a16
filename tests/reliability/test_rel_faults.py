"""Injected faults, real where possible: each ends in the documented error or fallback.

- out of memory while allocating outputs (a subprocess under ``RLIMIT_AS`` with
  pyarrow's system allocator): ``MemoryError`` (``pyarrow.ArrowMemoryError``),
  input unchanged, and the next compute in the same process succeeds;
- CuPy that cannot be imported (``sys.modules["cupy"] = None``): ``auto`` runs on
  the CPU, ``cuda`` falls back with a `DeviceFallbackWarning` or raises
  `DeviceError` under ``fallback="raise"``;
- a Dask worker killed mid-job: the scheduler reruns its tasks on a new worker
  and ``colbridge.dask.apply`` returns the serial answer;
- SIGINT to a ``python -m colbridge.cli run`` process: exit 130, no output and no
  temporary file left, and a rerun succeeds;
- a full disk (a 64 KiB tmpfs): exit 1, no partial output, and a rerun to a
  roomy folder succeeds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import colbridge as cb
from tests.jobs.interrupt import resume, start_paused_run
from tests.reliability.fuzzing import FIGURES

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _survived(name: str, how: str) -> None:
    FIGURES.setdefault("faults", {})[name] = how


def _py(code: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip


OOM = r"""
import hashlib, resource, numpy as np, pyarrow as pa
pa.set_memory_pool(pa.system_memory_pool())
import colbridge as cb
t = pa.table({"a": np.arange(20_000_000, dtype=np.float64)})
digest = lambda: hashlib.sha256(t.column(0).chunk(0).buffers()[1]).hexdigest()
before = digest()
cb.lazy(t.slice(0, 8)).with_columns(z=cb.col("a") * 2.5 + 1).compute(device="cpu")
with open("/proc/self/statm") as fh:
    vm = int(fh.read().split()[0]) * 4096
resource.setrlimit(resource.RLIMIT_AS, (vm + 100 * 2**20, resource.RLIM_INFINITY))
try:
    cb.lazy(t).with_columns(z=cb.col("a") * 2.5 + 1).compute(device="cpu")
    print("NOERROR")
except MemoryError as exc:
    print("MEMORYERROR", type(exc).__name__, exc)
assert digest() == before
out = cb.lazy(t.slice(0, 4)).with_columns(z=cb.col("a") * 2.5 + 1).compute(device="cpu")
assert out["z"].to_pylist() == [1.0, 3.5, 6.0, 8.5]
print("RECOVERED")
"""


def test_out_of_memory_while_allocating_outputs() -> None:
    result = _py(OOM)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.split("\n")
    assert lines[0].startswith("MEMORYERROR"), result.stdout
    assert "RECOVERED" in result.stdout
    _survived("cpu output allocation out of memory", lines[0].split(" ", 1)[1][:120])


NO_CUPY = r"""
import sys, warnings
sys.modules["cupy"] = None
import polars as pl, colbridge as cb
df = pl.DataFrame({"a": [1.0, 4.0, None]})
q = df.gpu.with_columns(z=cb.col("a").sqrt())
assert q.compute(device="auto")["z"].to_list() == [1.0, 2.0, None]
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    assert q.compute(device="cuda")["z"].to_list() == [1.0, 2.0, None]
assert any(issubclass(w.category, cb.DeviceFallbackWarning) for w in seen), seen
try:
    q.compute(device="cuda", fallback="raise")
    print("NOERROR")
except cb.DeviceError as exc:
    print("DEVICEERROR", exc)
"""


def test_cupy_import_failure_falls_back_or_raises_device_error() -> None:
    result = _py(NO_CUPY)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("DEVICEERROR"), result.stdout
    _survived("cupy import failure", "auto/cuda ran on cpu (warning); fallback='raise' gave "
              "DeviceError")  # fmt: skip


DASK = r"""
import os, signal, sys, threading, time, numpy as np, pandas as pd
import dask, dask.dataframe as dd
from distributed import Client, LocalCluster
import colbridge as cb
import colbridge.dask as cbd

def held(pdf, control):
    # a partition task says which worker runs it, then waits for the test to let it go:
    # no task can finish before the worker is killed
    open(os.path.join(control, f"started-{os.getpid()}"), "w").close()
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(control, "go")) and time.monotonic() < deadline:
        time.sleep(0.01)
    return pdf

if __name__ == "__main__":
    control = sys.argv[1]
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=50)
    client = Client(cluster)
    pdf = pd.DataFrame({"a": np.arange(4000, dtype=np.float64), "b": np.arange(4000) % 13})
    ddf = dd.from_pandas(pdf, npartitions=24).map_partitions(held, control, meta=pdf.head(0))
    plan = cb.lazy(pdf.head()).with_columns(z=cb.col("a") * cb.col("b") - cb.col("a").mean())
    serial = cb.lazy(pdf).with_columns(z=cb.col("a") * cb.col("b") - cb.col("a").mean())
    serial = serial.compute(device="cpu")
    pids = list(client.run(os.getpid).values())
    killed = threading.Event()
    def killer():
        marker = os.path.join(control, f"started-{pids[0]}")
        deadline = time.monotonic() + 120
        while not os.path.exists(marker) and time.monotonic() < deadline:
            time.sleep(0.01)
        if os.path.exists(marker):  # a task is running on that worker: the job has started
            os.kill(pids[0], signal.SIGKILL)
            killed.set()
        open(os.path.join(control, "go"), "w").close()
    threading.Thread(target=killer, daemon=True).start()
    got = cbd.apply(plan, ddf).compute()
    assert killed.is_set(), "no task started on the worker to kill"
    same = np.array_equal(got["z"].to_numpy(dtype=float), serial["z"].to_numpy(dtype=float))
    alive = len(client.scheduler_info()["workers"])
    print("RESULT", same, "workers_after", alive)
    client.close(); cluster.close()
"""


def test_dask_worker_killed_mid_job(tmp_path: Path) -> None:
    script = tmp_path / "dask_kill.py"
    script.write_text(DASK)
    control = tmp_path / "control"
    control.mkdir()
    result = subprocess.run([sys.executable, str(script), str(control)], env=ENV,
                            capture_output=True, text=True, timeout=240, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    line = [x for x in result.stdout.splitlines() if x.startswith("RESULT")][-1]
    assert line.startswith("RESULT True"), result.stdout + result.stderr[-2000:]
    _survived("dask worker killed mid-job", "tasks rerun by the scheduler; result equals serial")


def _big_parquet(path: Path, rows: int = 300_000) -> None:
    rng = np.random.default_rng(0)
    pq.write_table(pa.table({"a": rng.normal(size=rows), "b": rng.integers(0, 100, rows)}), path,
                   row_group_size=100_000)  # fmt: skip


def test_sigint_during_cli_run_leaves_no_output_and_rerun_succeeds(tmp_path: Path) -> None:
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    _big_parquet(src)
    args = ["run", str(src), "-o", str(out), "-q", "--batch-rows", "50000",
            "--with", "z = sqrt(abs(a)) * b"]  # fmt: skip
    # the run pauses after writing its first batch, so the signal lands mid-job, every time
    run = start_paused_run(args, tmp_path / "control", ENV)
    assert Path(run.partial).name.startswith(".out.parquet.")
    assert Path(run.partial).exists()
    run.proc.send_signal(signal.SIGINT)
    resume(run)
    _, err = run.proc.communicate(timeout=120)
    assert run.proc.returncode == 130, err
    assert "no output was written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["control", "in.parquet"]
    cmd = [sys.executable, "-m", "colbridge.cli", *args]
    rerun = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=300, check=False)
    assert rerun.returncode == 0, rerun.stderr
    assert pq.read_metadata(out).num_rows == 300_000
    _survived("SIGINT during `colbridge run`", "exit 130, no output or temp file; rerun succeeded")


def test_disk_full_output_leaves_nothing_and_rerun_succeeds(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tiny tmpfs needs root")
    full = tmp_path / "full"
    full.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)],
                             capture_output=True, text=True, check=False)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        src = tmp_path / "in.parquet"
        pq.write_table(pa.table({"a": np.random.default_rng(1).normal(size=200_000)}), src)
        cmd = [sys.executable, "-m", "colbridge.cli", "run", str(src), "-q", "--with",
               "z = a * 2", "-o"]  # fmt: skip
        result = subprocess.run([*cmd, str(full / "out.parquet")], env=ENV, capture_output=True,
                                text=True, timeout=120, check=False)  # fmt: skip
        assert result.returncode == 1, result.stderr
        assert "no output was written" in result.stderr
        assert "No space left on device" in result.stderr or "space" in result.stderr.lower()
        assert os.listdir(full) == []
        rerun = subprocess.run(
            [*cmd, str(tmp_path / "out.parquet")],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert rerun.returncode == 0, rerun.stderr
        assert pq.read_table(tmp_path / "out.parquet")["z"].to_pylist()[:2] == [
            v * 2 for v in pq.read_table(src)["a"].to_pylist()[:2]
        ]
    finally:
        subprocess.run(["umount", str(full)], check=False)
    _survived("disk full while writing", "exit 1, no partial output; rerun elsewhere succeeded")


def test_pandas_input_is_untouched_by_a_failed_compute() -> None:
    frame = pd.DataFrame({"a": np.arange(10, dtype=np.int64)})
    before = frame.copy(deep=True)
    with pytest.raises(cb.InvalidOperationError):
        frame.gpu.with_columns(z=(cb.col("a") * 1000).cast("int8")).compute()
    pd.testing.assert_frame_equal(frame, before)
