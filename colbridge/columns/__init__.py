"""Columns: ingest from pyarrow/polars/pandas/PyCapsule, and zero-copy tensor views of columns."""

from __future__ import annotations

from colbridge.columns.frames import FrameAdapter, adapt_frame
from colbridge.columns.ingest import column_to_arrow, source_kind
from colbridge.columns.matrix import FeatureMatrix, default_matrix_dtype, to_tensor
from colbridge.columns.tensor import TensorView, Validity, as_tensor
from colbridge.columns.torch_bridge import to_torch
from colbridge.columns.views import ArrayProtocols

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
