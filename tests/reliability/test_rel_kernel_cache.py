"""The on-disk kernel cache: private to the user, and corrupted or truncated files are rebuilt.

Each check runs colbridge in a fresh subprocess with ``COLBRIDGE_CACHE_DIR``
pointing at a temporary folder, so the real files are written, damaged and
read again, with no mocks.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.reliability.fuzzing import FIGURES

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = r"""
import json, polars as pl, colbridge as cb
df = pl.DataFrame({"a": [1.0, 4.0, None, 9.0], "b": [2, 3, 4, 5]})
q = df.gpu.with_columns(z=(cb.col("a").sqrt() * cb.col("b")).fill_null(-1.0))
first = q.compute()
again = q.compute()  # the same plan again: the kernel comes from the in-process cache
for out in (first, again):
    assert out["z"].to_list() == [2.0, 6.0, -1.0, 15.0], out["z"].to_list()
info = cb.cache_info()
print("OK", json.dumps({"compiles": info.compiles, "hits": info.hits, "misses": info.misses}))
"""


def _counts(proc: subprocess.CompletedProcess[str]) -> dict[str, int]:
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("OK "), proc.stdout + proc.stderr
    return json.loads(line[3:])  # type: ignore[no-any-return]


def _run(cache: Path, code: str = PROGRAM) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLBRIDGE_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


def test_cache_is_private_and_damaged_files_are_rebuilt(tmp_path: Path) -> None:
    cache = tmp_path / "kernels"
    first = _run(cache)
    assert first.returncode == 0, first.stderr
    # one kernel: built once (a miss), then found in memory (a hit)
    assert _counts(first) == {"compiles": 1, "hits": 1, "misses": 1}
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    files = sorted(cache.glob("cbk_*.py"))
    assert files, "no generated kernel files"
    originals = {f: f.read_text() for f in files}
    damaged = 0
    for how in ("truncate", "garbage", "syntax"):
        for f, text in originals.items():
            if how == "truncate":
                f.write_text(text[: len(text) // 2])
            elif how == "garbage":
                f.write_bytes(b"\xff\xfe\x00garbage" * 10)
            else:
                f.write_text(text.replace("def ", "def def ", 1))
            damaged += 1
        rerun = _run(cache)
        assert rerun.returncode == 0, f"{how}: {rerun.stderr[-2000:]}"
        assert _counts(rerun) == {"compiles": 1, "hits": 1, "misses": 1}, how
        for f, text in originals.items():
            assert f.read_text() == text, f"{how}: {f.name} was not rewritten"
    FIGURES["cache_damaged_files_rebuilt"] = damaged
