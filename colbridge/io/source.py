"""Jobs layer: reading a job's input as a stream of record batches.

The input is a Parquet file, a folder of Parquet or Arrow IPC files, a glob, or
an Arrow IPC (Feather v2) file. Parquet files are opened by their footers (schema
and row counts); a `pyarrow.dataset.Dataset` is opened only where one is needed
(IPC, files of another schema, row-group listing). The input is read in batches
of at most ``batch_rows`` rows with no read-ahead (Parquet: each file's own batch
reader; IPC: the dataset's scanner), so memory stays bounded by the batch size,
not the dataset size.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import re
import signal
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from colbridge.errors import JobSpecError

if TYPE_CHECKING:
    import pyarrow.dataset as ds

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "Source",
    "Terminated",
    "check_interrupt",
    "detect_format",
    "interrupt_between_batches",
    "open_source",
    "parse_memory",
    "rows_for_memory",
]

#: Rows per batch when neither ``batch_rows`` nor a memory limit says otherwise.
DEFAULT_BATCH_ROWS = 1 << 19
#: Working copies of a batch alive at once: the decoded input, the computed
#: columns, and what the writer holds. polars' Parquet writer (`colbridge.io.sink`)
#: takes up to about ten batches of output into its pipeline (the row group it
#: gathers, the pages it encodes in parallel): measured 10 batches of 1 and 4 MB.
_COPIES_PER_BATCH = 16

_PARQUET_EXT = (".parquet", ".pq", ".parq")
_IPC_EXT = (".arrow", ".ipc", ".feather", ".arrows")
_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "kib": 2**10,
    "m": 10**6, "mb": 10**6, "mib": 2**20,
    "g": 10**9, "gb": 10**9, "gib": 2**30,
    "t": 10**12, "tb": 10**12, "tib": 2**40,
}  # fmt: skip


def parse_memory(value: str | int) -> int:
    """Bytes from ``"512MB"``, ``"1GiB"``, ``"300m"`` or an int."""
    if isinstance(value, int):
        if value <= 0:
            msg = f"memory limit must be positive, got {value}"
            raise JobSpecError(msg)
        return value
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", str(value))
    if m is None or m.group(2).lower() not in _UNITS:
        msg = f"cannot read memory limit {value!r}; write e.g. '512MB', '2GiB' or a byte count"
        raise JobSpecError(msg)
    size = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if size <= 0:
        msg = f"memory limit must be positive, got {value!r}"
        raise JobSpecError(msg)
    return size


def detect_format(path: str | os.PathLike[str]) -> str:
    """``"parquet"`` or ``"ipc"``, from the extension, else the file's magic bytes."""
    p = str(path).lower()
    if p.endswith(_PARQUET_EXT):
        return "parquet"
    if p.endswith(_IPC_EXT):
        return "ipc"
    try:
        with open(path, "rb") as fh:
            head = fh.read(6)
    except OSError:
        return "parquet"
    if head.startswith(b"ARROW1"):
        return "ipc"
    return "parquet"


def _files(spec: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    if isinstance(spec, (list, tuple)):
        out: list[str] = []
        for s in spec:
            out.extend(_files(s))
        return out
    text = os.fspath(spec)  # type: ignore[arg-type]
    if any(ch in text for ch in "*?["):
        matches = sorted(p for p in glob.glob(text, recursive=True) if os.path.isfile(p))
        if not matches:
            msg = f"input glob {text!r} matches no file; check the pattern and the folder"
            raise JobSpecError(msg)
        return matches
    path = Path(text)
    if path.is_dir():
        found = sorted(
            str(p) for p in path.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))
        )
        if not found:
            msg = f"input folder {text!r} holds no data files"
            raise JobSpecError(msg)
        return found
    if not path.exists():
        msg = f"input file {text!r} does not exist; check the path"
        raise JobSpecError(msg)
    return [text]


@dataclass
class Source:
    """An opened input: its files, format, schema and a batch scanner.

    ``given`` is a dataset the caller opened (`open_input` of a `pyarrow.dataset.Dataset`);
    without one, a dataset over ``files`` is opened when first needed.
    """

    files: list[str]
    format: str
    given: ds.Dataset | None = None

    @functools.cached_property
    def dataset(self) -> ds.Dataset:
        """The input as a `pyarrow.dataset.Dataset`."""
        if self.given is not None:
            return self.given
        import pyarrow.dataset as ds

        return ds.dataset(self.files, format="parquet" if self.format == "parquet" else "ipc")

    @functools.cached_property
    def schema(self) -> pa.Schema:
        """The input's Arrow schema: the first file's, as a dataset takes it."""
        if self.given is None and self.format == "parquet":
            return pq.read_schema(self.files[0])
        return self.dataset.schema

    def count_rows(self) -> int:
        """Rows in the whole input (from metadata where the format has it)."""
        return self._rows

    @functools.cached_property
    def _rows(self) -> int:
        # read once per opened input: a job asks for it when it plans, sizes its
        # output writer and reports, and each would reread every file's footer
        if self.given is None and self.format == "parquet":
            return sum(pq.read_metadata(f).num_rows for f in self.files)
        return int(self.dataset.count_rows())

    def nbytes(self) -> int:
        """Total size of the input files on disk."""
        return sum(os.path.getsize(f) for f in self.files)

    def row_bytes(self) -> float:
        """Estimated bytes per decoded row (fixed-width types exact, others from the files)."""
        fixed = 0
        variable = False
        for field in self.schema:
            try:
                width = field.type.bit_width
            except ValueError:  # variable width (strings, lists, ...)
                width = 0
            if width > 0:
                fixed += max(1, width // 8) + 1
            else:
                variable = True
        if not variable:
            return float(max(fixed, 1))
        rows = max(self.count_rows(), 1)
        return max(float(fixed), 4.0 * self.nbytes() / rows)

    def batches(
        self, batch_rows: int, columns: Sequence[str] | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Yield batches of at most ``batch_rows`` rows, in file order."""
        names = list(columns) if columns is not None else None
        for batch in self._read(batch_rows, names):
            check_interrupt()
            if batch.num_rows > batch_rows:  # a format that ignores batch_size
                for start in range(0, batch.num_rows, batch_rows):
                    yield batch.slice(start, batch_rows)
            elif batch.num_rows or batch.num_columns == 0:
                yield batch

    def _read(self, batch_rows: int, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
        """Decoded batches: Parquet file by file, the rest with the dataset's scanner.

        A Parquet file whose schema is the dataset's is read with its own batch
        reader: it decodes a batch only when asked (its columns in parallel), so
        the data held is about one batch. The dataset's scanner reads row groups
        ahead of the consumer: with batches of 0.64 MB it held 60 MB of decoded
        data, and it was no faster (benchmarks/etl_io.py). Files of another schema
        go through the scanner, which casts them to the dataset's schema.
        """
        if self.format != "parquet":
            yield from _scan(self.dataset, batch_rows, columns)
            return
        for path in self.files:
            with pq.ParquetFile(path, pre_buffer=False) as file:
                if file.schema_arrow.equals(self.schema, check_metadata=False):
                    for group in range(file.num_row_groups):  # batches never span row groups
                        yield from file.iter_batches(
                            batch_rows, row_groups=[group], columns=columns, use_threads=True
                        )
                    continue
            import pyarrow.dataset as ds

            single = ds.dataset(path, schema=self.schema, format="parquet")
            yield from _scan(single, batch_rows, columns)


def _scan(
    dataset: ds.Dataset, batch_rows: int, columns: list[str] | None
) -> Iterator[pa.RecordBatch]:
    """Batches from pyarrow's dataset scanner, one batch and one file read ahead."""
    scanner = dataset.scanner(
        columns=columns,
        batch_size=batch_rows,
        batch_readahead=1,
        fragment_readahead=1,
        use_threads=True,
    )
    yield from scanner.to_batches()


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``) stopped the job; handled like Ctrl-C, exit status 143."""


_INTERRUPTED = threading.Event()
_SIGNALS: list[int] = []


def _stop() -> KeyboardInterrupt:
    if _SIGNALS and _SIGNALS[0] == signal.SIGTERM:
        return Terminated()
    return KeyboardInterrupt()


def check_interrupt() -> None:
    """Raise the stop `interrupt_between_batches` holds back, if a signal came."""
    if _INTERRUPTED.is_set():
        raise _stop()


@contextlib.contextmanager
def interrupt_between_batches() -> Iterator[None]:
    """Turn Ctrl-C and SIGTERM into a stop at the next batch boundary while the block runs.

    Python's own handler raises `KeyboardInterrupt` wherever the main thread is,
    and an interrupt that lands inside a native callback (a kernel compile, say)
    is printed and dropped; a flag checked between batches is never lost. SIGTERM
    (``kill``, ``timeout``) would otherwise end the process with no clean-up: it
    stops the job the same way (raising `Terminated`), so partial output is removed.
    A second signal interrupts at once.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum: int, frame: object) -> None:
        if _INTERRUPTED.is_set():
            raise _stop()
        _SIGNALS.append(signum)
        _INTERRUPTED.set()

    _INTERRUPTED.clear()
    _SIGNALS.clear()
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield  # a signal after the last batch lets the finished job stand
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _INTERRUPTED.clear()
        _SIGNALS.clear()


class _RowSized(Protocol):
    def row_bytes(self) -> float: ...


def rows_for_memory(source: _RowSized, memory_limit: int, requested: int | None) -> int:
    """Rows per batch that keep the working set under ``memory_limit`` bytes."""
    fitting = int(memory_limit // (source.row_bytes() * _COPIES_PER_BATCH))
    if fitting < 1024:
        msg = (
            f"memory limit of {memory_limit} bytes is too small for rows of about "
            f"{source.row_bytes():.0f} bytes; raise `--memory-limit` or read fewer columns"
        )
        raise JobSpecError(msg)
    return min(fitting, requested) if requested else fitting


def open_source(
    spec: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], format: str | None = None
) -> Source:
    """Open a job's input: a Parquet/IPC file, a folder, a glob, or a list of files."""
    files = _files(spec)
    fmt = format or detect_format(files[0])
    if fmt not in ("parquet", "ipc"):
        msg = f"unknown input format {fmt!r}; use 'parquet' or 'ipc'"
        raise JobSpecError(msg)
    source = Source(files, fmt)
    source.schema  # noqa: B018 -- an unreadable first file fails here, before any work
    return source

