"""Interrupting a real ``colbridge`` CLI run at a known point, with no race against the clock.

`start_paused_run` runs the CLI in a subprocess whose output writer pauses
after writing its first batch into the temporary output file, and returns once
that has happened: the job has provably started and cannot finish before the
test's signal arrives. `resume` lets it go on (it then meets the interrupt at
the next batch boundary). The writer is the real one; the pause only holds it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["PausedRun", "resume", "start_paused_run"]

PAUSE = textwrap.dedent(
    """
    import importlib, os, sys, time
    from colbridge.io import sink

    started, go, preload = sys.argv[1], sys.argv[2], sys.argv[3]
    for name in filter(None, preload.split(",")):  # as a caller that imported them would
        importlib.import_module(name)
    real_write = sink.AtomicWriter.write

    def write(self, data):
        real_write(self, data)
        if not os.path.exists(started):
            # the first batch is in the temporary output file: say so (written whole, then
            # renamed: the test reads the file as soon as it exists), then hold the job
            with open(started + ".part", "w") as fh:
                fh.write(self._tmp or "")
            os.replace(started + ".part", started)
            deadline = time.monotonic() + 120
            while not os.path.exists(go) and time.monotonic() < deadline:
                time.sleep(0.01)

    sink.AtomicWriter.write = write
    from colbridge.cli import main
    sys.exit(main(sys.argv[4:]))
    """
)


class PausedRun:
    """A CLI subprocess held after its first written batch."""

    def __init__(self, proc: subprocess.Popen[str], go: Path, partial: str) -> None:
        self.proc = proc
        self.go = go
        #: the temporary output file the job was writing when it paused
        self.partial = partial


def start_paused_run(
    args: list[str], control: Path, env: dict[str, str], preload: Sequence[str] = ()
) -> PausedRun:
    """Start ``colbridge <args>`` and return once its first batch is written (or fail).

    ``preload``: modules the process imports first (``polars``: its Parquet writer is
    then the one a job uses, see `colbridge.io.sink.polars_repays`).
    """
    control.mkdir(parents=True, exist_ok=True)
    started, go = control / "started", control / "go"
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSE, str(started), str(go), ",".join(preload), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not started.exists():
        if proc.poll() is not None:
            _, err = proc.communicate()
            msg = f"the run ended (exit {proc.returncode}) before writing a batch: {err}"
            raise AssertionError(msg)
        if time.monotonic() > deadline:
            proc.kill()
            msg = "the run wrote no batch within 120 s"
            raise AssertionError(msg)
        time.sleep(0.01)
    partial = started.read_text()
    return PausedRun(proc, go, partial)


def resume(run: PausedRun) -> None:
    """Let the held writer go on."""
    run.go.write_text("")
    os.sync()
