"""Backends: where fused kernels run. ``cpu`` always; ``cuda`` when CuPy finds a device.

Every backend module offers the same entry point::

    run_segment(segment, columns, num_rows, stats) -> (new columns, filter mask or None)

taking Arrow arrays in and giving Arrow arrays out, so the lazy handle never
depends on which backend ran.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["get_backend"]

_BACKENDS = {"cpu": "colbridge.backends.cpu", "cuda": "colbridge.backends.cuda"}


def get_backend(target: str) -> ModuleType:
    """The backend module for ``target`` (``"cpu"`` or ``"cuda"``), imported on first use."""
    return importlib.import_module(_BACKENDS[target])
