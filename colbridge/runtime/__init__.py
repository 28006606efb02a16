"""Runtime: running a plan over a frame (`execute`) and describing it (`report`).

Stage: between the backends and the lazy handle. `colbridge.lazy.LazyFrame`
queues steps and calls into here; the jobs layer (streams, Dask) drives
`colbridge.runtime.execute` directly with a plan prepared once.
"""

from __future__ import annotations

from colbridge.runtime.execute import (
    ComputeReport,
    PreparedPlan,
    TypedPlan,
    execute,
    prepare,
)
from colbridge.runtime.report import PlanReport, build_report, describe

__all__ = [
    "ComputeReport",
    "PlanReport",
    "PreparedPlan",
    "TypedPlan",
    "build_report",
    "describe",
    "execute",
    "prepare",
]
