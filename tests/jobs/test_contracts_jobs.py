"""The jobs layer keeps its contracts (issue 14, items 2, 7, 8 and 9).

* `fuse` with statistics that miss what a transform reads is an error naming the
  column and the statistic (no silent raw values: training/serving skew);
* `fuse --one-hot` with nothing scaled works (CLI, `fit_stats`, `iter_features`);
* SIGTERM is handled like Ctrl-C (no partial output, exit 143); a later run
  removes the temporary file a SIGKILLed run left, and only such files;
* the CLI takes several inputs (the shell's expansion of `data/*.parquet`).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from colbridge.cli import main
from colbridge.io import FeatureSpec, FeatureStats, fit_stats, iter_features, transform_batch
from colbridge.io.sink import AtomicWriter, remove_stale_partials
from colbridge.io.steps import JobSpecError

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    return env


@pytest.fixture
def flights(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    n = 500
    table = pa.table(
        {
            "dep_delay": pa.array(rng.normal(10, 30, n), mask=rng.random(n) < 0.1),
            "hour": pa.array(rng.integers(0, 24, n).astype(np.int32)),
            "carrier": pa.array(rng.choice(["UA", "AA", "DL", None], n)),
            "label": pa.array(rng.integers(0, 2, n).astype(np.int8)),
        }
    )
    path = tmp_path / "flights.parquet"
    pq.write_table(table, path, row_group_size=128)
    return path


# -- item 2: statistics that miss a transform's inputs are an error -------------------------
def _stats_file(path: Path, columns: dict[str, dict[str, object]]) -> Path:
    stats = {"format": "colbridge-feature-stats", "version": 1, "ddof": 0, "columns": columns}
    path.write_text(json.dumps(stats))
    return path


@pytest.mark.parametrize(
    ("flag", "entry", "missing"),
    [
        ("--zscore", None, "mean"),
        ("--zscore", {"mean": 1.0}, "std"),
        ("--minmax", {"mean": 1.0, "std": 2.0}, "min"),
        ("--minmax", {"min": 0.0}, "max"),
    ],
)
def test_fuse_with_stats_missing_a_transforms_statistic_fails(
    flights: Path, capsys: pytest.CaptureFixture[str], flag: str, entry: object, missing: str
) -> None:
    columns: dict[str, dict[str, object]] = {"dep_delay": {"mean": 0, "std": 1, "min": 0, "max": 1}}
    if entry is not None:
        columns["hour"] = entry  # type: ignore[assignment]
    stats = _stats_file(flights.parent / "stats.json", columns)
    out = flights.parent / "f.parquet"
    rc = main(["fuse", str(flights), "-o", str(out), "--columns", "dep_delay,hour",
               flag, "hour", "--stats", str(stats), "-q"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"has no `{missing}` for column `hour`" in err
    assert "--save-stats" in err
    assert not out.exists()
    assert sorted(p.name for p in flights.parent.iterdir()) == ["flights.parquet", "stats.json"]


def test_python_api_checks_the_statistics_too(flights: Path) -> None:
    spec = FeatureSpec.from_dict(
        {"columns": {"hour": {"scale": "zscore"}, "carrier": {"one_hot": True}}}
    )
    partial = FeatureStats(columns={"hour": {"mean": 1.0, "std": 2.0}})
    with pytest.raises(JobSpecError, match="no `categories` for one-hot column `carrier`"):
        iter_features(str(flights), spec, stats=partial)
    batch = pq.read_table(flights)
    with pytest.raises(JobSpecError, match="no `mean` for column `hour`"):
        transform_batch(batch, spec, FeatureStats(columns={"carrier": {"categories": ["UA"]}}))
    # statistics that are present but null (the fit saw no value) are accepted
    null_stats = FeatureStats(columns={"hour": {"mean": None, "std": None},
                                       "carrier": {"categories": ["UA"]}})  # fmt: skip
    assert transform_batch(batch, spec, null_stats).features.shape == (batch.num_rows, 2)


# -- item 9: one-hot with nothing scaled -------------------------------------------------
def test_fuse_one_hot_with_nothing_scaled(
    flights: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = flights.parent / "f.parquet"
    stats_path = flights.parent / "stats.json"
    rc = main(["fuse", str(flights), "-o", str(out), "--columns", "dep_delay,carrier",
               "--one-hot", "carrier", "--save-stats", str(stats_path), "-q"])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    source = pl.read_parquet(flights)
    cats = sorted(c for c in source["carrier"].unique().to_list() if c is not None)
    # a null carrier is a category of its own, last
    assert json.loads(stats_path.read_text())["columns"]["carrier"]["categories"] == [*cats, None]
    features = np.stack(pl.read_parquet(out)["features"].to_numpy())
    want = np.column_stack(
        [source["dep_delay"].fill_null(0).to_numpy()]
        + [(source["carrier"] == c).fill_null(False).to_numpy() for c in cats]
        + [source["carrier"].is_null().to_numpy()]
    ).astype(np.float32)
    np.testing.assert_array_equal(features, want)


def test_fit_stats_with_only_one_hot_columns(flights: Path) -> None:
    spec = FeatureSpec.from_dict({"columns": {"hour": {}, "carrier": {"one_hot": True}}})
    stats = fit_stats(str(flights), spec, batch_rows=100)
    # with their counts and the rows fitted (statistics file version 2: infrequent categories;
    # version 3: the null carriers are a category of their own, last)
    assert stats.columns == {
        "carrier": {
            "categories": ["AA", "DL", "UA", None],
            "counts": [124, 122, 142, 112],
            "rows": 500,
        }
    }
    empty = flights.parent / "empty.parquet"
    pq.write_table(pq.read_table(flights).slice(0, 0), empty)
    empty_stats = fit_stats(str(empty), spec).columns
    assert empty_stats == {"carrier": {"categories": [], "counts": [], "rows": 0}}


# -- item 8: several inputs ---------------------------------------------------------------------
def test_run_takes_several_inputs(tmp_path: Path) -> None:
    parts = []
    for i in range(3):
        t = pa.table({"a": np.arange(i * 10, i * 10 + 10, dtype=np.float64)})
        pq.write_table(t, tmp_path / f"p{i}.parquet")
        parts.append(pl.from_arrow(t))
    out = tmp_path / "out.parquet"
    files = [str(tmp_path / f"p{i}.parquet") for i in range(3)]
    assert main(["run", *files, "-o", str(out), "--with", "z = a * 2", "-q"]) == 0
    want = pl.concat(parts).with_columns(z=pl.col("a") * 2)
    assert_frame_equal(pl.read_parquet(out), want)
    # through a shell, as the README writes it
    shell_out = tmp_path / "shell.parquet"
    bindir = Path(sys.executable).parent
    proc = subprocess.run(
        f"{bindir}/colbridge run {tmp_path}/p*.parquet -o {shell_out} --with 'z = a * 2' -q",
        shell=True, capture_output=True, text=True, env=_env(), timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert_frame_equal(pl.read_parquet(shell_out), want)
    # and fuse too
    feats = tmp_path / "f.parquet"
    assert main(["fuse", *files, "-o", str(feats), "--columns", "a", "-q"]) == 0
    assert pl.read_parquet(feats).height == 30


# -- item 7: SIGTERM and SIGKILL ---------------------------------------------------------
def _big_input(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    n = 1_500_000
    src = tmp_path / "big.parquet"
    pq.write_table(pa.table({"a": rng.normal(size=n), "b": rng.integers(0, 100, n)}), src,
                   row_group_size=10_000)  # fmt: skip
    return src


def _start_run(src: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "colbridge.cli", "run", str(src), "-o", str(out),
         "--with", "w = b * 2 + a", "--batch-rows", "2000", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip


def _wait_for_partial(proc: subprocess.Popen[str], folder: Path) -> list[Path]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        found = list(folder.glob(".out.parquet.*.partial"))
        if found and found[0].stat().st_size > 0:
            return found
        time.sleep(0.02)
    pytest.fail("the run finished (or stalled) before it could be signalled")


def test_sigterm_is_handled_like_ctrl_c(tmp_path: Path) -> None:
    src = _big_input(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = _start_run(src, out_dir / "out.parquet")
    _wait_for_partial(proc, out_dir)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "terminated" in err
    assert os.listdir(out_dir) == []


def test_a_later_run_removes_what_a_killed_run_left(tmp_path: Path) -> None:
    src = _big_input(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "out.parquet"
    proc = _start_run(src, out)
    left = _wait_for_partial(proc, out_dir)
    proc.kill()  # SIGKILL: no clean-up is possible
    proc.communicate(timeout=60)
    assert [p for p in left if p.exists()], "SIGKILL should leave the temporary file"
    assert str(proc.pid) in left[0].name
    # unrelated files next to it, which must survive
    keep = [out_dir / ".out.parquet.keep", out_dir / ".other.parquet.1.abcdefgh.partial",
            out_dir / "out.parquet.partial", out_dir / ".out.parquet.abcdefgh.partial"]  # fmt: skip
    for path in keep:
        path.write_bytes(b"x")
    small = tmp_path / "small.parquet"
    pq.write_table(pq.read_table(src).slice(0, 1000), small)
    assert main(["run", str(small), "-o", str(out), "--with", "w = b * 2 + a", "-q"]) == 0
    assert not [p for p in left if p.exists()]
    assert all(p.exists() for p in keep)
    assert pl.read_parquet(out).height == 1000


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_leftovers_of_live_runs_are_kept(tmp_path: Path) -> None:
    dead = _dead_pid()
    alive = os.getpid()
    stale = tmp_path / f".out.parquet.{dead}.aaaaaaaa.partial"
    live_pid = tmp_path / f".out.parquet.{alive}.bbbbbbbb.partial"
    locked = tmp_path / f".out.parquet.{dead}.cccccccc.partial"
    for path in (stale, live_pid, locked):
        path.write_bytes(b"partial")
    # a writer in another PID namespace would look dead here, but holds its lock
    holder = os.open(locked, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        removed = remove_stale_partials(str(tmp_path), "out.parquet")
    finally:
        os.close(holder)
    assert removed == [str(stale)]
    assert not stale.exists()
    assert live_pid.exists()
    assert locked.exists()


def test_the_writer_holds_its_lock_until_it_is_done(tmp_path: Path) -> None:
    out = tmp_path / "o.parquet"
    with AtomicWriter(out) as writer:
        writer.write(pa.table({"a": [1]}))
        (tmp_file,) = tmp_path.glob(".o.parquet.*.partial")
        fd = os.open(tmp_file, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        # our own live run is never taken for a leftover
        assert remove_stale_partials(str(tmp_path), "o.parquet") == []
    assert pl.read_parquet(out)["a"].to_list() == [1]
    assert [p.name for p in tmp_path.iterdir()] == ["o.parquet"]
