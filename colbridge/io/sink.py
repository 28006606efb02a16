"""Jobs layer: writing a job's output atomically.

Batches go to a temporary file in the output's own folder (so the final
`os.replace` is a rename on one filesystem); only a run that finishes renames
it into place. A failure, a bad batch, Ctrl-C or SIGTERM removes the temporary
file and leaves any existing output untouched.

Parquet is encoded by polars' writer where it keeps every Arrow type exactly
(`polars_writes`) and its speed repays importing polars (`polars_repays`): it
encodes columns in parallel and writes the same file (same codec and level,
statistics, page and row-group sizes, dictionary only where pyarrow's writer
would use one) about 1.4x faster than ``pyarrow.parquet.ParquetWriter`` when a
second core is free (benchmarks/etl_io.py). Other schemas (``string``,
dictionary, nested columns, ...), small outputs in a process without polars, and
Arrow IPC go through pyarrow.

A process killed outright (SIGKILL, a power cut) cannot clean up. Its temporary
file is named ``.<output name>.<pid>.<random>.partial`` and locked (``flock``)
while it is written; the next writer of the same output removes such files
whose process is gone and whose lock is free, and nothing else.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from colbridge.errors import ColbridgeError, ComputeError, JobSpecError
from colbridge.io.source import _IPC_EXT, _PARQUET_EXT, detect_format

__all__ = [
    "AtomicWriter", "dictionary_columns", "polars_repays", "polars_writes", "remove_stale_partials",
]  # fmt: skip

#: Bytes per Parquet data page, the same for both writers (pyarrow's and polars' default).
DATA_PAGE_SIZE = 1 << 20
#: zstd level of both writers: pyarrow's default, kept when polars writes (its own is 3).
ZSTD_LEVEL = 1
#: Output bytes (in memory) from which polars' writer is worth importing polars for:
#: it saved 0.14 s on 5e6 rows of 7 columns (280 MB; benchmarks/etl_io.py), and
#: importing polars takes 0.2-0.3 s on the 2-core machines.
POLARS_WRITER_MIN_BYTES = 512 << 20
_POLARS_CODECS = {None: "uncompressed", "none": "uncompressed", "uncompressed": "uncompressed",
                  "zstd": "zstd", "snappy": "snappy"}


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class GrowingDictionaries:
    """The dictionary columns of an IPC file, each one dictionary that only grows.

    Batches of different files or row groups carry different dictionaries, and the
    IPC file format lets a dictionary grow (a delta) but not be replaced: each
    batch's new values are appended to those written and its indices renumbered.
    """

    def __init__(self) -> None:
        self._written: dict[str, pa.Array] = {}

    def grown(self, table: pa.Table) -> pa.Table:
        """``table`` with every dictionary column over the file's dictionary so far."""
        if not any(pa.types.is_dictionary(t) for t in table.schema.types):
            return table
        table = table.unify_dictionaries()
        columns = []
        for name, column in zip(table.column_names, table.columns, strict=True):
            if pa.types.is_dictionary(column.type):
                column = pa.chunked_array([self._grown(name, c) for c in column.chunks],
                                          column.type)  # fmt: skip
            columns.append(column)
        return pa.Table.from_arrays(columns, schema=table.schema)

    def _grown(self, name: str, chunk: pa.DictionaryArray) -> pa.DictionaryArray:
        import pyarrow.compute as pc  # on first use: its import is slow

        held = self._written.get(name)
        if held is None or chunk.dictionary.equals(held):
            self._written.setdefault(name, chunk.dictionary)
            return chunk
        position = pc.index_in(chunk.dictionary, value_set=held, skip_nulls=False)
        new = np.asarray(position.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        grown = pa.concat_arrays([held, chunk.dictionary.filter(pa.array(new))])
        renumber = np.asarray(position.fill_null(0).to_numpy(zero_copy_only=False),
                              dtype=np.int64)  # fmt: skip
        renumber[new] = len(held) + np.arange(int(new.sum()))
        indices = pa.array(renumber).take(chunk.indices).cast(chunk.indices.type)
        self._written[name] = grown
        return pa.DictionaryArray.from_arrays(indices, grown)


def _without_view_dictionaries(schema: pa.Schema) -> pa.Schema:
    """``schema`` with dictionaries of string (binary) views as dictionaries of large ones.

    polars' categoricals arrive as dictionaries of views, which pyarrow's Parquet writer
    cannot write (it fails casting them); the rows are cast to the schema it returns.
    """
    fields = []
    for field in schema:
        t = field.type
        if pa.types.is_dictionary(t) and (
            pa.types.is_string_view(t.value_type) or pa.types.is_binary_view(t.value_type)
        ):
            large = pa.large_string() if pa.types.is_string_view(t.value_type) \
                else pa.large_binary()  # fmt: skip
            field = field.with_type(pa.dictionary(t.index_type, large, t.ordered))
        fields.append(field)
    return pa.schema(fields, metadata=schema.metadata)


class AtomicWriter:
    """Write record batches to Parquet or Arrow IPC; the file appears only on success.

    Use as a context manager; `write` takes tables or batches of one schema
    (the first one written). Leaving the block with an exception discards
    everything written.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        format: str | None = None,
        compression: str | None = "zstd",
        metadata: dict[bytes, bytes] | None = None,
        row_group_rows: int | None = None,
        expected_rows: int | None = None,
    ) -> None:
        self.path = os.path.abspath(os.fspath(path))
        extension = os.path.splitext(self.path)[1].lower()
        if format is None and extension and not extension.endswith(_PARQUET_EXT + _IPC_EXT):
            msg = (
                f"output `{os.fspath(path)}`: colbridge writes Parquet (.parquet) or Arrow IPC "
                "(.arrow, .ipc, .feather), not the format its extension names; rename it, "
                "or name the format (`output_format=`, `--output-format`)"
            )
            raise JobSpecError(msg)
        self.format = format or detect_format(self.path)
        if self.format not in ("parquet", "ipc"):
            msg = f"unknown output format {self.format!r}; use 'parquet' or 'ipc'"
            raise JobSpecError(msg)
        self.compression = compression
        self.metadata = metadata
        #: rows per Parquet row group when polars writes (a job passes its batch size:
        #: one batch per row group, as pyarrow's writer makes them); None: the first
        #: table's rows
        self.row_group_rows = row_group_rows
        #: rows the output will have, about (a job passes its input's), when known: with
        #: the first table's bytes per row it sizes the output (`polars_repays`)
        self.expected_rows = expected_rows
        self.rows = 0
        self._tmp: str | None = None
        self._lock_fd: int | None = None
        self._writer: Any = None
        self._sink: Any = None
        self._schema: pa.Schema | None = None
        self._dictionaries: GrowingDictionaries | None = None

    def __enter__(self) -> AtomicWriter:
        folder = os.path.dirname(self.path) or "."
        name = os.path.basename(self.path)
        remove_stale_partials(folder, name)
        fd, self._tmp = tempfile.mkstemp(
            dir=folder, prefix=f".{name}.{os.getpid()}.", suffix=".partial"
        )
        # held until the file is renamed or removed: a lock the kernel drops when the
        # process dies, however it dies, so a later run can tell a leftover from a live run
        _lock(fd)
        self._lock_fd = fd
        return self

    def _open(self, schema: pa.Schema, rows: int = 0, nbytes: int = 0) -> None:
        assert self._tmp is not None
        if self.metadata:
            schema = schema.with_metadata({**(schema.metadata or {}), **self.metadata})
        self._schema = schema
        expected = nbytes / rows * max(self.expected_rows or 0, rows) if rows else 0
        if (
            self.format == "parquet" and rows
            and polars_writes(schema, self.compression) and polars_repays(expected)
        ):  # fmt: skip
            # row groups of a batch, as pyarrow's writer below makes them (one per table)
            group = self.row_group_rows or rows
            self._writer = _PolarsParquetWriter(self._tmp, schema, self.compression, group)
        elif self.format == "parquet":
            schema = self._schema = _without_view_dictionaries(schema)
            self._writer = pq.ParquetWriter(
                self._tmp,
                schema,
                compression=self.compression,
                compression_level=ZSTD_LEVEL if self.compression == "zstd" else None,
                use_dictionary=dictionary_columns(schema),
                data_page_size=DATA_PAGE_SIZE,
            )
        else:
            self._sink = pa.OSFile(self._tmp, "wb")
            # a dictionary may grow in an IPC file (a delta), not be replaced
            options = pa.ipc.IpcWriteOptions(emit_dictionary_deltas=True)
            self._writer = pa.ipc.new_file(self._sink, schema, options=options)
            self._dictionaries = GrowingDictionaries()

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        """Append rows; later data is cast to the first schema when types differ only in detail."""
        if self._tmp is None:
            msg = "use AtomicWriter as a context manager (`with AtomicWriter(path) as w:`)"
            raise RuntimeError(msg)
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if self._writer is None:
            self._open(table.schema, table.num_rows, table.nbytes)
        assert self._schema is not None
        if not table.schema.equals(self._schema, check_metadata=False):
            table = table.cast(self._schema)
        if isinstance(self._writer, pq.ParquetWriter):
            self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
        elif self._dictionaries is not None:
            self._writer.write_table(self._dictionaries.grown(table))
        else:
            self._writer.write_table(table)
        self.rows += table.num_rows

    def ensure_schema(self, schema: pa.Schema) -> None:
        """Open the file with ``schema`` if nothing was written (an empty result keeps columns)."""
        if self._writer is None:
            self._open(schema)

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._sink is not None:
            self._sink.close()
            self._sink = None

    def _abandon(self) -> None:
        """Stop writing after a failure; the file is removed next, so it need not be valid."""
        if isinstance(self._writer, _PolarsParquetWriter):
            writer, self._writer = self._writer, None
            writer.abandon()
        self._close()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        tmp, self._tmp = self._tmp, None
        assert tmp is not None
        try:
            if exc_type is None:
                try:
                    self._close()
                    with open(tmp, "rb+") as fh:
                        os.fsync(fh.fileno())
                    os.chmod(tmp, 0o666 & ~_umask())
                    os.replace(tmp, self.path)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
                    raise
                return
            with contextlib.suppress(Exception):
                self._abandon()
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        finally:
            fd, self._lock_fd = self._lock_fd, None
            if fd is not None:
                os.close(fd)  # releases the lock


def _lock(fd: int) -> bool:
    """Take an exclusive ``flock`` on ``fd`` without waiting; False when another holds it."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): the process check alone decides
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    except OSError:
        return True  # cannot tell: keep the file
    return True


def remove_stale_partials(folder: str, name: str) -> list[str]:
    """Remove temporary files of killed runs that wrote ``name`` in ``folder``; return them.

    Only files of the writer's own pattern (``.<name>.<pid>.<random>.partial``) are
    considered, and one is removed only when its process is gone and no one holds
    its lock (so a live run, even in another PID namespace, keeps its file).
    """
    pattern = re.compile(rf"^\.{re.escape(name)}\.(\d+)\.[A-Za-z0-9_]+\.partial$")
    removed: list[str] = []
    try:
        entries = os.listdir(folder)
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry)
        if match is None or _process_alive(int(match.group(1))):
            continue
        path = os.path.join(folder, entry)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue  # gone already, or not ours to read
        try:
            if _lock(fd):
                os.unlink(path)
                removed.append(path)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def dictionary_columns(schema: pa.Schema) -> list[str]:
    """The columns worth dictionary-encoding in Parquet: all but floats and nested types.

    Measured on this project's ETL benchmark: a dictionary attempt on
    high-cardinality floats, batch after batch, made writing 5x slower and the
    file 25% larger than plain encoding (pyarrow falls back to plain only after
    filling a dictionary page per row group).
    """
    return [
        field.name
        for field in schema
        if not (pa.types.is_floating(field.type) or pa.types.is_nested(field.type)
                or isinstance(field.type, pa.ExtensionType))
    ]  # fmt: skip


def _polars_keeps(t: pa.DataType) -> bool:
    """Tell whether polars' Parquet writer keeps ``t``: pyarrow reads it back as written.

    Checked type by type in tests/jobs/test_etl_io.py. ``string`` (polars has only
    large and view strings), dictionaries, nested types, binary and second-unit
    times are refused by polars or come back as another type.
    """
    if isinstance(t, pa.ExtensionType):
        return False
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return t.unit in ("ms", "us", "ns")
    return bool(
        pa.types.is_integer(t) or pa.types.is_float32(t) or pa.types.is_float64(t)
        or pa.types.is_boolean(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
        or pa.types.is_date32(t) or pa.types.is_time64(t) or pa.types.is_decimal128(t)
        or pa.types.is_null(t)
    )  # fmt: skip


def polars_writes(schema: pa.Schema, compression: str | None) -> bool:
    """Tell whether polars' Parquet writer takes a file of ``schema``: same types, same codec."""
    return (
        len(schema) > 0
        and compression in _POLARS_CODECS
        and all(_polars_keeps(f.type) and f.nullable and not f.metadata for f in schema)
    )


def polars_repays(expected_bytes: float) -> bool:
    """Tell whether polars' faster Parquet encoding repays importing polars.

    Always once polars is imported (a polars input or caller); otherwise for an
    output of ``expected_bytes`` (in memory) from `POLARS_WRITER_MIN_BYTES` up.
    """
    return "polars" in sys.modules or expected_bytes >= POLARS_WRITER_MIN_BYTES


_END = object()
_ABANDON = object()


class _Abandoned(Exception):
    """Raised into polars' writer when the job failed: it stops without finishing the file."""


def _writer_error(exc: BaseException) -> BaseException:
    """Translate an error of polars' writer into what the jobs' callers handle.

    polars reports a failed write (a full disk, a lost mount) as a ``ComputeError``
    holding the OS error's text; it becomes the `OSError` pyarrow's writer would
    raise, and any other polars error a colbridge `ComputeError`.
    """
    if isinstance(exc, (OSError, ColbridgeError)) or not type(exc).__module__.startswith(
        "polars"
    ):
        return exc
    found = re.search(r"os error (\d+)", str(exc))
    if found is not None:
        errno = int(found.group(1))
        error: BaseException = OSError(errno, f"{os.strerror(errno)} (writing Parquet: {exc})")
    else:
        error = ComputeError(f"polars' Parquet writer failed: {exc}")
    error.__cause__ = exc
    return error


class _PolarsParquetWriter:
    """polars' streaming Parquet writer fed table by table from another thread.

    ``sink_parquet`` pulls batches through an Arrow C stream whose source is a
    queue of one table, so at most one table waits while another is encoded and
    memory stays bounded by the batch size; it runs on its own thread, leaving
    the caller's thread free to compute the next batch and to see Ctrl-C.
    """

    def __init__(self, path: str, schema: pa.Schema, compression: str | None, rows: int) -> None:
        import polars as pl

        codec = _POLARS_CODECS[compression]
        self._queue: queue.Queue[object] = queue.Queue(maxsize=1)
        self._error: BaseException | None = None
        reader = pa.RecordBatchReader.from_batches(schema, self._batches())
        frame = pl.scan_arrow_c_stream(reader)
        options: dict[str, Any] = {
            "compression": codec,
            "compression_level": ZSTD_LEVEL if codec == "zstd" else None,
            "statistics": True,
            "row_group_size": rows,
            "data_page_size": DATA_PAGE_SIZE,
            "arrow_schema": schema,  # keeps the Arrow types and the schema's metadata
        }
        self._thread = threading.Thread(
            target=self._run, args=(frame, path, options), name="colbridge-parquet", daemon=True
        )
        self._thread.start()

    def _batches(self) -> Iterator[pa.RecordBatch]:
        while True:
            item = self._queue.get()
            if item is _END:
                return
            if item is _ABANDON:
                msg = "the job failed; the output is discarded"
                raise _Abandoned(msg)
            assert isinstance(item, pa.Table)
            yield from item.combine_chunks().to_batches()

    def _run(self, frame: Any, path: str, options: dict[str, Any]) -> None:
        try:
            frame.sink_parquet(path, **options)
        except BaseException as exc:  # handed to the caller's thread by `write` and `close`
            self._error = _writer_error(exc)

    def _put(self, item: object) -> None:
        while True:
            if self._error is not None:
                raise self._error
            if not self._thread.is_alive():
                msg = "the Parquet writer stopped before the end of the data"
                raise RuntimeError(msg)
            try:
                self._queue.put(item, timeout=0.05)
                return
            except queue.Full:
                continue

    def write_table(self, table: pa.Table) -> None:
        """Queue ``table`` for writing; waits while the previous one is still queued."""
        self._put(table)

    def close(self) -> None:
        """Finish the file (footer and all) and wait for the writer; re-raise its error."""
        self._put(_END)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def abandon(self) -> None:
        """Stop the writer without finishing the file and wait for it."""
        with contextlib.suppress(queue.Empty):
            self._queue.get_nowait()  # a table not yet taken will not be written
        with contextlib.suppress(BaseException):
            self._put(_ABANDON)
        self._thread.join()
