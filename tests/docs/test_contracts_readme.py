"""Every `colbridge ...` command of the README's shell blocks runs as written (issue 14, item 8).

The commands run through a real shell (so `data/*.parquet` is expanded by it, as
for a user), in a folder holding data with the columns the examples name; their
results are checked against polars. Shell lines that are not `colbridge`
commands (`make`, `pip`) are listed, so that a new command cannot be skipped
silently. The README's Python blocks are run by `tests/docs/test_docs.py`.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
#: Shell lines of the README that are not colbridge commands, and are not run here.
NOT_COLBRIDGE = {"make demo", "make test", 'pip install "colbridge[gpu]"'}


def shell_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for lang, body in _FENCE.findall(text):
        if lang not in ("bash", "sh", "shell", "console"):
            continue
        joined = re.sub(r"\\\n\s*", " ", body)  # continuation lines
        for line in joined.splitlines():
            line = line.strip()
            if line.startswith("#") or not line:
                continue
            command = line.split(" #")[0].strip()  # a trailing comment
            commands.append(command)
    return commands


COMMANDS = shell_commands()
COLBRIDGE = [c for c in COMMANDS if c.startswith("colbridge ")]


def test_every_shell_line_is_either_run_or_known() -> None:
    assert len(COLBRIDGE) >= 2
    assert {c for c in COMMANDS if c not in COLBRIDGE} == NOT_COLBRIDGE


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    here = tmp_path_factory.mktemp("readme")
    rng = np.random.default_rng(8)
    (here / "data").mkdir()
    for i in range(3):  # several files: the shell expands data/*.parquet into three inputs
        n = 2_000
        pq.write_table(
            pa.table(
                {
                    "a": pa.array(rng.normal(5, 2, n), mask=rng.random(n) < 0.05),
                    "b": rng.random(n) * 10,
                    "c": rng.random(n),
                }
            ),
            here / "data" / f"part-{i}.parquet",
        )
    n = 3_000
    pq.write_table(
        pa.table(
            {
                "age": rng.integers(18, 90, n).astype(np.int32),
                "income": pa.array(rng.lognormal(10, 1, n), mask=rng.random(n) < 0.1),
                "city": pa.array(rng.choice(["Lyon", "Oslo", "Quito"], n)),
                "label": rng.integers(0, 2, n).astype(np.int8),
            }
        ),
        here / "train.parquet",
    )
    return here


@pytest.mark.parametrize("command", COLBRIDGE, ids=lambda c: " ".join(c.split()[:2]))
def test_readme_command_runs(command: str, folder: Path) -> None:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    proc = subprocess.run(
        ["bash", "-c", command], cwd=folder, capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, f"{command}\n{proc.stderr}"
    words = shlex.split(command)
    output = folder / words[words.index("-o") + 1]
    assert output.exists()
    if words[1] == "run":
        check_run(folder, output)
    else:
        check_fuse(folder, output)


def check_run(folder: Path, output: Path) -> None:
    data = pl.read_parquet(folder / "data" / "*.parquet")
    a = pl.col("a")
    want = (
        data.with_columns(z=(a - a.mean()) / a.std(), w=(a * pl.col("b") + pl.col("c")).sqrt())
        .filter(pl.col("z") > 0)
        .select("a", "z", "w")
    )
    got = pl.read_parquet(output)
    assert got.columns == want.columns
    assert got.height == want.height > 0
    for name in want.columns:
        # the stream sums in another order than polars: last-bit differences, near 0 too
        np.testing.assert_allclose(got[name].to_numpy(), want[name].to_numpy(), rtol=1e-12,
                                   atol=1e-12)  # fmt: skip


def check_fuse(folder: Path, output: Path) -> None:
    got = pl.read_parquet(output)
    train = pl.read_parquet(folder / "train.parquet")
    assert got["label"].to_list() == train["label"].to_list()
    features = np.stack(got["features"].to_numpy())
    assert features.shape == (train.height, 2 + 3)  # age, income and three cities
    stats = (folder / "stats.json").read_text()
    assert '"Lyon"' in stats
    income = train["income"].fill_null(0)
    np.testing.assert_allclose(
        features[:, 1], ((income - income.mean()) / income.std(ddof=0)).to_numpy(), rtol=1e-5
    )
