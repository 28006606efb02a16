from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

PRODUCER = textwrap.dedent(
    """
    import sys
    import numpy as np, pyarrow as pa
    import colbridge as cb
    from colbridge.io import write_ipc
    n = 4_000_000
    t = pa.table({"a": np.arange(n, dtype=np.float64)})
    out = cb.lazy(t).with_columns(y=cb.col("a") * 2 + 1).compute("cpu")
    write_ipc(out.select(["y"]), sys.argv[1])
    print(int(np.asarray(out["y"]).sum()))
    """
)

CONSUMER = textwrap.dedent(
    """
    import json, sys
    import numpy as np, pyarrow as pa
    from colbridge.io import map_ipc
    before = pa.total_allocated_bytes()
    mapped = map_ipc(sys.argv[1])
    column = mapped.table["y"]
    buffers = [b for chunk in column.chunks for b in chunk.buffers() if b is not None]
    values = np.asarray(column.chunk(0))
    print(json.dumps({
        "pid": __import__("os").getpid(),
        "inside": all(mapped.contains(b) for b in buffers),
        "numpy_inside": 0 <= values.ctypes.data - mapped.base_address < mapped.size,
        "column_bytes": sum(b.size for b in buffers),
        "allocated": pa.total_allocated_bytes() - before,
        "sum": int(values.sum()),
    }))
    """
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.getcwd() + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_second_process_reads_column_in_place(tmp_path) -> None:
    folder = (
        "/dev/shm"
        if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK)
        else str(tmp_path)
    )
    path = os.path.join(folder, f"colbridge-test-{os.getpid()}.arrow")
    try:
        prod = subprocess.run([sys.executable, "-c", PRODUCER, path], capture_output=True,
                              text=True, env=_env(), timeout=120)  # fmt: skip
        assert prod.returncode == 0, prod.stderr
        cons = subprocess.run([sys.executable, "-c", CONSUMER, path], capture_output=True,
                              text=True, env=_env(), timeout=120)  # fmt: skip
        assert cons.returncode == 0, cons.stderr
        report = json.loads(cons.stdout)
        assert report["pid"] != os.getpid()
        assert report["sum"] == int(prod.stdout)
        assert report["column_bytes"] >= 4_000_000 * 8
        assert report["inside"]
        assert report["numpy_inside"]
        assert report["allocated"] < report["column_bytes"] // 100
    finally:
        if os.path.exists(path):
            os.unlink(path)
