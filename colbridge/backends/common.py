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

from colbridge.backends.groups import GroupIds
from colbridge.codegen.kernel import AggSlot, KernelSource, OutputSpec
from colbridge.errors import InvalidOperationError
from colbridge.expr.nodes import Agg, GroupAgg, KeySet, Reduction
from colbridge.plan.nullability import Nullability
from colbridge.plan.planner import Segment
from colbridge.types import DType

__all__ = [
    "RunStats",
    "finalize_grouped",
    "finalize_reduction",
    "grouped_array",
    "grouped_operand",
    "kernel_sources",
    "per_group_level",
    "raise_kernel_errors",
    "split_level",
    "wrap_outputs",
]

#: Per-group results as kernels read them: values, and validity (None: every group valid).
GroupedValues = tuple[np.ndarray, np.ndarray | None]


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
        if "rows" in slot.i:  # rows where a filter holds, not the whole frame
            num_rows = int(pi[:, slot.i["rows"]].sum())
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


def split_level(level: list[Reduction]) -> tuple[list[Agg], dict[KeySet, list[GroupAgg]]]:
    """A pass's whole-column reductions, and its grouped ones by key set (one kernel each).

    Per-group expressions (``func="each"``) are left out: see `per_group_level`.
    """
    aggs = [a for a in level if isinstance(a, Agg)]
    by_keys: dict[KeySet, list[GroupAgg]] = {}
    for a in level:
        if isinstance(a, GroupAgg) and a.func != "each":
            by_keys.setdefault(a.keys, []).append(a)
    return aggs, by_keys


def per_group_level(level: list[Reduction]) -> dict[KeySet, list[GroupAgg]]:
    """A pass's expressions evaluated once per group (a small pass over the groups)."""
    out: dict[KeySet, list[GroupAgg]] = {}
    for a in level:
        if isinstance(a, GroupAgg) and a.func == "each":
            out.setdefault(a.keys, []).append(a)
    return out


def _exact_ratio(total_hi: np.ndarray, total_lo: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``(hi * 2**32 + lo) / counts`` correctly rounded, per group (float64)."""
    hi = total_hi.astype(np.float64)
    lo = total_lo.astype(np.float64)
    out: np.ndarray = (hi * 2.0**32 + lo) / np.maximum(counts, 1)
    # exact in float64 while both parts are: Python integers for the other groups
    wide = np.flatnonzero((np.abs(hi) >= 2.0**20) | (np.abs(lo) >= 2.0**52))
    for g in wide:
        total = int(total_hi[g]) * 2**32 + int(total_lo[g])
        out[g] = total / max(int(counts[g]), 1)
    return out


def finalize_grouped(
    slot: AggSlot, tf: np.ndarray, ti: np.ndarray, tu: np.ndarray, groups: GroupIds
) -> GroupedValues:
    """Merge per-chunk partial tables ``(chunks, groups, columns)`` into one value per group.

    The vectorised form of `finalize_reduction`, with the same rules per group.
    """
    with np.errstate(all="ignore"):
        return _combine_grouped(slot, tf, ti, tu, groups)


def _combine_grouped(
    slot: AggSlot, tf: np.ndarray, ti: np.ndarray, tu: np.ndarray, groups: GroupIds
) -> GroupedValues:
    func = slot.agg.func
    res: DType = slot.result_dtype
    counts = ti[:, :, slot.i["count"]].sum(axis=0, dtype=np.int64)
    some = counts > 0
    if func == "count":
        return counts.astype(np.uint32), None
    if func == "null_count":
        rows = ti[:, :, slot.i["rows"]].sum(axis=0) if "rows" in slot.i else groups.sizes()
        return (rows - counts).astype(np.uint32), None
    if func == "mean" and ("sum_hi" in slot.i or "sum_hi" in slot.u):
        roles, parts = (slot.i, ti) if "sum_hi" in slot.i else (slot.u, tu)
        hi = parts[:, :, roles["sum_hi"]].sum(axis=0)
        lo = parts[:, :, roles["sum_lo"]].sum(axis=0)
        return _exact_ratio(hi, lo, counts).astype(res.numpy), _valid(some)
    if func in ("sum", "mean"):
        if "sum" in slot.f:
            total: np.ndarray = tf[:, :, slot.f["sum"]].sum(axis=0)
        elif "sum" in slot.u:
            total = tu[:, :, slot.u["sum"]].sum(axis=0, dtype=np.uint64)
        else:
            total = ti[:, :, slot.i["sum"]].sum(axis=0, dtype=np.int64)
        if func == "sum":
            return total.astype(res.numpy), None
        if "sum" in slot.f:
            return (total / np.maximum(counts, 1)).astype(res.numpy), _valid(some)
        zeros = np.zeros_like(total)
        return _exact_ratio(zeros, total, counts).astype(res.numpy), _valid(some)
    if func in ("min", "max"):
        pick = np.min if func == "min" else np.max
        if slot.arg_dtype.is_float:
            non_nan = ti[:, :, slot.i["non_nan"]].sum(axis=0)
            any_nan = ti[:, :, slot.i["any_nan"]].max(axis=0) > 0
            best = pick(tf[:, :, slot.f["best"]], axis=0)
            value = np.where(non_nan > 0, best, np.where(any_nan, np.nan, 0.0))
            return value.astype(res.numpy), _valid((non_nan > 0) | any_nan)
        source = tu[:, :, slot.u["best"]] if "best" in slot.u else ti[:, :, slot.i["best"]]
        value = pick(source, axis=0)
        return value.astype(res.numpy), _valid(some)
    msg = f"grouped `{func}` has no partial layout (std/var are rewritten before)"
    raise AssertionError(msg)


def _valid(mask: np.ndarray[Any, Any]) -> np.ndarray[Any, Any] | None:
    return None if bool(mask.all()) else mask


def grouped_array(values: GroupedValues, dtype: DType) -> pa.Array:
    """Per-group results as an Arrow array (a row per group)."""
    data, valid = values
    if dtype.is_bool:
        return pa.array(data.astype(np.bool_), mask=None if valid is None else ~valid)
    return pa.array(data, type=dtype.arrow, mask=None if valid is None else ~valid)


def grouped_operand(array: pa.Array, dtype: DType) -> GroupedValues:
    """A per-group Arrow result as kernels gather it: values of ``dtype``, validity."""
    valid = None
    if array.null_count:
        valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
    filled = array.fill_null(False if dtype.is_bool else 0) if array.null_count else array
    values = np.asarray(filled.to_numpy(zero_copy_only=False)).astype(dtype.numpy, copy=False)
    return values, valid


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
    if segment.pre is not None:
        out += kernel_sources(generator, target, segment.pre, nulls, num_rows=num_rows,
                              parallel_from=parallel_from)  # fmt: skip
    for level in segment.agg_levels:
        aggs, by_keys = split_level(level)
        if aggs:
            src = generator.generate_reduce(aggs, segment.types, nulls, parallel=parallel,
                                            plan_text=segment.text)  # fmt: skip
            out.append((f"reduction kernel source ({target})", src.source))
        for grouped in by_keys.values():
            src = generator.generate_grouped_reduce(grouped, segment.types, nulls,
                                                    parallel=parallel, plan_text=segment.text)
            out.append((f"grouped reduction kernel source ({target})", src.source))
        for each in per_group_level(level).values():
            outputs = [(f"__each{k}__", node.arg) for k, node in enumerate(each)]
            src = generator.generate_elementwise(outputs, None, segment.types, nulls,
                                                 parallel=False, plan_text=segment.text)
            out.append((f"per-group kernel source ({target})", src.source))
    if segment.group_by is not None:
        # the aggregations are computed over the groups (row g reads group g)
        outputs = [(name, node) for name, node in segment.outputs if node not in segment.opaque]
        if outputs:
            src = generator.generate_elementwise(outputs, None, segment.types, nulls,
                                                 parallel=False, plan_text=segment.text)
            out.append((f"over-the-groups kernel source ({target})", src.source))
        return out
    if segment.outputs or segment.mask is not None:
        # the kernel takes the segment's literals as arguments
        parallel = (1 if segment.one_row else num_rows) >= parallel_from
        src = generator.generate_elementwise(
            segment.outputs, segment.mask, segment.types, nulls, parallel=parallel,
            plan_text=segment.kernel_text, literals=segment.params,
        )  # fmt: skip
        out.append((f"elementwise kernel source ({target})", src.source))
    return out
