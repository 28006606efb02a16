"""Jobs layer: streaming Parquet/IPC pipelines, feature fusion and cross-process Arrow IPC.

Everything here runs on the lazy handle (`colbridge.lazy.LazyFrame`): a plan is
built once and applied to each record batch of a dataset.
"""

from __future__ import annotations

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
from colbridge.io.pipeline import PipelineResult, explain_pipeline, pipeline
from colbridge.io.reductions import resolve_aggregates
from colbridge.io.sink import AtomicWriter
from colbridge.io.source import Source, open_source, parse_memory
from colbridge.io.steps import JobSpecError, build_steps, steps_of

__all__ = [
    "AtomicWriter",
    "ColumnTransform",
    "FeatureBatch",
    "FeatureBatches",
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
    "map_ipc",
    "open_source",
    "parse_memory",
    "pipeline",
    "resolve_aggregates",
    "steps_of",
    "transform_batch",
    "write_ipc",
]
