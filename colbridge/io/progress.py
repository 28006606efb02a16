"""Jobs layer: the progress display of a streaming job (rich, on a terminal only)."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

__all__ = ["JobProgress"]


def _human(n: float, unit: str) -> str:
    for prefix in ("", "k", "M", "G", "T"):
        if abs(n) < 1000:
            return f"{n:.1f} {prefix}{unit}"
        n /= 1000
    return f"{n:.1f} P{unit}"


class JobProgress:
    """A rich progress bar per pass with rows/s and bytes/s; does nothing when disabled.

    Enabled only when ``enabled`` is true, the stream is a terminal and rich is
    installed, so logs and pipes never get control sequences.
    """

    def __init__(self, enabled: bool, stream: Any = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(enabled and isatty is not None and isatty())
        self._progress: Any = None
        self._task: Any = None
        self._start = 0.0
        self._bytes = 0
        if self.enabled:
            try:
                import rich.progress  # noqa: F401
            except ImportError:  # pragma: no cover - rich is a declared extra
                self.enabled = False

    def __enter__(self) -> JobProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("rows"),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=False,
            )
            self._progress.__enter__()
        return self

    def start(self, description: str, total_rows: int | None) -> None:
        """Begin a new pass over the rows."""
        self._start = time.perf_counter()
        self._bytes = 0
        if self._progress is not None:
            self._task = self._progress.add_task(description, total=total_rows, rate="")

    def advance(self, rows: int, nbytes: int) -> None:
        """Count a processed batch."""
        self._bytes += nbytes
        if self._progress is not None and self._task is not None:
            task = self._progress.tasks[self._task]
            elapsed = max(time.perf_counter() - self._start, 1e-9)
            done = task.completed + rows
            rate = f"{_human(done / elapsed, 'rows/s')}, {_human(self._bytes / elapsed, 'B/s')}"
            self._progress.update(self._task, advance=rows, rate=rate)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.__exit__(exc_type, exc, tb)
            self._progress = None
