"""Jobs layer: streaming Parquet/IPC pipelines, feature fusion and cross-process Arrow IPC.

A plan is built once and run on each record batch of a dataset through the
runtime (`colbridge.runtime.pieces`).
"""

from __future__ import annotations

from colbridge.errors import JobSpecError
from colbridge.io.fuse import (
    ColumnTransform,
    FeatureBatch,
    FeatureBatches,
    FeatureSpec,
    FeatureStats,
    FuseResult,
    fit_stats,
    fuse,
    iter_features,
    transform_batch,
)
from colbridge.io.ipc import MappedTable, map_ipc, write_ipc
from colbridge.io.loader import FeatureLoader, loader
from colbridge.io.pipeline import PipelineResult, explain_pipeline, pipeline
from colbridge.io.sink import AtomicWriter
from colbridge.io.source import Source, open_source, parse_memory
from colbridge.io.steps import build_steps, steps_of
from colbridge.plan.streaming import resolve_aggregates

__all__ = [
    "AtomicWriter",
    "ColumnTransform",
    "FeatureBatch",
    "FeatureBatches",
    "FeatureLoader",
    "FeatureSpec",
    "FeatureStats",
    "FuseResult",
    "JobSpecError",
    "MappedTable",
    "PipelineResult",
    "Source",
    "build_steps",
    "explain_pipeline",
    "fit_stats",
    "fuse",
    "iter_features",
    "loader",
    "map_ipc",
    "open_source",
    "parse_memory",
    "pipeline",
    "resolve_aggregates",
    "steps_of",
    "transform_batch",
    "write_ipc",
]
