"""Jobs layer: handing columns between processes without copying, through Arrow IPC files.

A producer writes a table as an uncompressed Arrow IPC file (on a RAM-backed
folder such as ``/dev/shm`` this is shared memory); a consumer in another
process memory-maps it, and its columns' buffers point straight into the
mapping: no bytes go through pickle or a pipe, and nothing is allocated from
the consumer's Arrow memory pool for the data.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa

from colbridge.io.sink import AtomicWriter

__all__ = ["MappedTable", "map_ipc", "write_ipc"]


def write_ipc(table: pa.Table | pa.RecordBatch, path: str | os.PathLike[str]) -> str:
    """Write ``table`` as an uncompressed Arrow IPC file (atomically); returns the path."""
    with AtomicWriter(path, format="ipc", compression=None) as writer:
        writer.write(table)
    return os.path.abspath(os.fspath(path))


@dataclass
class MappedTable:
    """A table whose buffers live in a memory-mapped file, and that mapping's extent."""

    table: pa.Table
    base_address: int
    size: int
    mapping: pa.MemoryMappedFile

    def contains(self, buffer: pa.Buffer) -> bool:
        """Tell whether ``buffer``'s bytes lie inside the mapping (it was not copied)."""
        start = int(buffer.address)
        return self.base_address <= start and start + buffer.size <= self.base_address + self.size


def map_ipc(path: str | os.PathLike[str]) -> MappedTable:
    """Memory-map an Arrow IPC file and read it without copying column data."""
    mapping = pa.memory_map(os.fspath(path), "r")
    whole = mapping.read_buffer()  # a zero-copy view of the whole mapping
    mapping.seek(0)
    table = pa.ipc.open_file(mapping).read_all()
    return MappedTable(table, whole.address, whole.size, mapping)
