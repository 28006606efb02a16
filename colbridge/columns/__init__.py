"""Columns: ingest from pyarrow/polars/pandas/PyCapsule, and zero-copy tensor views of columns."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from colbridge.columns.frames import FrameAdapter, adapt_frame
    from colbridge.columns.ingest import column_to_arrow, source_kind
    from colbridge.columns.matrix import FeatureMatrix, default_matrix_dtype, to_tensor
    from colbridge.columns.tensor import TensorView, Validity, as_tensor
    from colbridge.columns.torch_bridge import to_torch
    from colbridge.columns.views import ArrayProtocols

# Each name is loaded from its module on first use (PEP 562), so `import colbridge`,
# which reads frames, does not load the tensor and matrix modules.
_HOMES = {
    "ArrayProtocols": "views",
    "FeatureMatrix": "matrix",
    "FrameAdapter": "frames",
    "TensorView": "tensor",
    "Validity": "tensor",
    "adapt_frame": "frames",
    "as_tensor": "tensor",
    "column_to_arrow": "ingest",
    "default_matrix_dtype": "matrix",
    "source_kind": "ingest",
    "to_tensor": "matrix",
    "to_torch": "torch_bridge",
}

__all__ = [
    "ArrayProtocols",
    "FeatureMatrix",
    "FrameAdapter",
    "TensorView",
    "Validity",
    "adapt_frame",
    "as_tensor",
    "column_to_arrow",
    "default_matrix_dtype",
    "source_kind",
    "to_tensor",
    "to_torch",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        msg = f"module 'colbridge.columns' has no attribute {name!r}"
        raise AttributeError(msg)
    # kept here once loaded: the next use is a plain attribute read
    value = globals()[name] = getattr(importlib.import_module(f"colbridge.columns.{home}"), name)
    return value
