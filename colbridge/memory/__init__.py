"""Memory: buffers, placements and lifetimes (host memory now; GPU placements later)."""

from __future__ import annotations

from colbridge.memory.host import (
    PLACEMENTS,
    HostBuffer,
    Placement,
    allocate_host,
    empty_array,
    host_view,
    one_array,
    read_only,
    writable_view,
)

__all__ = [
    "PLACEMENTS",
    "HostBuffer",
    "Placement",
    "allocate_host",
    "empty_array",
    "host_view",
    "one_array",
    "read_only",
    "writable_view",
]
