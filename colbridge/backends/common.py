"""Helpers every backend shares: run statistics, kernel failure counts, reductions, results.

Stage: backends. Nothing here knows a target: the per-block partials of a
reduction pass are laid out by `colbridge.codegen.kernel.AggSlot` whatever
produced them, and results are Arrow arrays over filled buffers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.codegen.kernel import AggSlot, KernelSource, OutputSpec
from colbridge.errors import InvalidOperationError
from colbridge.plan.nullability import Nullability
from colbridge.plan.planner import Segment
from colbridge.types import DType

__all__ = [
    "RunStats",
    "SegmentResult",
    "finalize_reduction",
    "kernel_sources",
    "raise_kernel_errors",
    "wrap_outputs",
]


@dataclass
class SegmentResult:
    """What a backend gives back for one segment.

    ``columns``: the new columns by name; ``mask``: the rows the segment's filter keeps
    (None without a filter). When ``compacted``, the backend applied the filter itself:
    ``columns`` (outputs, and the carried columns it was given) hold the kept rows only,
    and ``mask`` is left for the columns it was not given.
    """

    columns: dict[str, pa.Array]
    mask: pa.BooleanArray | None = None
    compacted: bool = False


@dataclass
class RunStats:
    """What running one segment did, for `explain()`."""

    kernels: list[str] = field(default_factory=list)
    cache_hits: int = 0
    compiled: int = 0
    sources: list[str] = field(default_factory=list)


def raise_kernel_errors(src: KernelSource, err: np.ndarray) -> None:
    """Turn a kernel's per-block failure counts into the error its source describes."""
    if not src.uses_err:
        return
    counts = err.sum(axis=1)
    for kind, count in enumerate(counts):
        if count:
            message = src.err_messages.get(kind, "kernel reported a failure")
            msg = f"{message} ({int(count)} value{'s' if count != 1 else ''})"
            raise InvalidOperationError(msg)


def wrap_outputs(
    outputs: list[OutputSpec], buffers: list[tuple[pa.Buffer, pa.Buffer | None]], n: int
) -> tuple[dict[str, pa.Array], pa.BooleanArray | None]:
    """Wrap filled output buffers as Arrow arrays (no copy); split off the filter mask."""
    results: dict[str, pa.Array] = {}
    mask = None
    for out, (data_buf, valid_buf) in zip(outputs, buffers, strict=True):
        array = pa.Array.from_buffers(out.dtype.arrow, n, [valid_buf, data_buf], null_count=-1)
        if out.name == "__mask__":
            mask = array
        else:
            results[out.name] = array
    return results, mask


def finalize_reduction(
    slot: AggSlot, pf: np.ndarray, pi: np.ndarray, pu: np.ndarray, num_rows: int
) -> tuple[Any, bool]:
    """Combine per-block partials into one value (and whether it is valid)."""
    # inf - inf and the like are values here (NaN), not warnings.
    with np.errstate(all="ignore"):
        return _combine(slot, pf, pi, pu, num_rows)


def _combine(
    slot: AggSlot, pf: np.ndarray, pi: np.ndarray, pu: np.ndarray, num_rows: int
) -> tuple[Any, bool]:
    func = slot.agg.func
    res: DType = slot.result_dtype
    counts = pi[:, slot.i["count"]]
    count = int(counts.sum())
    if func == "count":
        return np.uint32(count), True
    if func == "null_count":
        return np.uint32(num_rows - count), True
    if func == "mean" and ("sum_hi" in slot.i or "sum_hi" in slot.u):
        if count == 0:
            return None, False
        roles, parts = (slot.i, pi) if "sum_hi" in slot.i else (slot.u, pu)
        hi = sum(int(v) for v in parts[:, roles["sum_hi"]])
        lo = sum(int(v) for v in parts[:, roles["sum_lo"]])
        return res.numpy.type((hi * 2**32 + lo) / count), True
    if func == "mean" and "sum" not in slot.f:
        if count == 0:
            return None, False
        parts, role = (pu, slot.u["sum"]) if "sum" in slot.u else (pi, slot.i["sum"])
        return res.numpy.type(sum(int(v) for v in parts[:, role]) / count), True
    if func in ("sum", "mean"):
        if "sum" in slot.f:
            total: Any = float(pf[:, slot.f["sum"]].sum())
        elif "sum" in slot.u:
            total = pu[:, slot.u["sum"]].sum(dtype=np.uint64)
        else:
            total = pi[:, slot.i["sum"]].sum(dtype=np.int64)
        if func == "sum":
            return np.asarray(total).astype(res.numpy)[()], True
        if count == 0:
            return None, False
        return res.numpy.type(total / count), True
    if func in ("min", "max"):
        pick = np.min if func == "min" else np.max
        if slot.arg_dtype.is_float:
            non_nan = pi[:, slot.i["non_nan"]]
            if non_nan.sum() == 0:
                if pi[:, slot.i["any_nan"]].sum() > 0:
                    return res.numpy.type(math.nan), True
                return None, False
            best = pf[non_nan > 0, slot.f["best"]]
            return res.numpy.type(pick(best)), True
        if count == 0:
            return None, False
        source = pu[:, slot.u["best"]] if "best" in slot.u else pi[:, slot.i["best"]]
        value = pick(source[counts > 0])
        if res.is_bool:
            return bool(value), True
        return np.asarray(value).astype(res.numpy)[()], True
    # std / var, combined with Chan et al.'s parallel formula
    ddof = slot.agg.ddof
    if count - ddof <= 0:
        return None, False
    means = pf[:, slot.f["mean"]]
    m2 = pf[:, slot.f["m2"]]
    mean = float((counts * means).sum() / count)
    total_m2 = float(m2.sum() + (counts * (means - mean) ** 2).sum())
    var = total_m2 / (count - ddof)
    if var < 0.0:  # rounding can push a variance below zero; polars clamps (NaN passes)
        var = 0.0
    value = math.sqrt(var) if func == "std" else var
    return res.numpy.type(value), True


def kernel_sources(
    generator: Any,
    target: str,
    segment: Segment,
    nulls: Nullability,
    *,
    num_rows: int,
    parallel_from: int,
) -> list[tuple[str, str]]:
    """(title, source) of the kernels a codegen target module makes for ``segment``.

    One per reduction pass, then the elementwise kernel; a pass over at least
    ``parallel_from`` rows gets the multi-threaded variant.
    """
    out = []
    parallel = num_rows >= parallel_from
    for aggs in segment.agg_levels:
        src = generator.generate_reduce(aggs, segment.types, nulls, parallel=parallel,
                                        plan_text=segment.text)  # fmt: skip
        out.append((f"reduction kernel source ({target})", src.source))
    if segment.outputs or segment.mask is not None:
        # the kernel takes the segment's literals as arguments
        parallel = (1 if segment.one_row else num_rows) >= parallel_from
        src = generator.generate_elementwise(
            segment.outputs, segment.mask, segment.types, nulls, parallel=parallel,
            plan_text=segment.kernel_text, literals=segment.params,
        )  # fmt: skip
        out.append((f"elementwise kernel source ({target})", src.source))
    return out
