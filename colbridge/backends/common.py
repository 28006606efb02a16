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

from colbridge.codegen.kernel import N_ERR_KINDS, AggSlot, KernelSource, OutputSpec, ScalarSpec
from colbridge.errors import InvalidOperationError
from colbridge.expr.nodes import Agg
from colbridge.plan.nullability import Nullability
from colbridge.plan.planner import Segment
from colbridge.plan.typecheck import is_scalar
from colbridge.types import DType

__all__ = [
    "RunStats",
    "SegmentResult",
    "bind_scalar",
    "check_scalar_outputs",
    "finalize_reduction",
    "fold_partials",
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


def fold_partials(
    slots: list[AggSlot], pf: np.ndarray, pi: np.ndarray, pu: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fold partial rows (blocks, threads, chunks or batches) into ONE row of the same layout.

    The one place that knows how each role of `AggSlot` combines: counts, sums and
    NaN counts add up (integers wrap as the engine's fixed-width sums do), the 32-bit
    halves of an exact 64-bit mean add up exactly, a min/max keeps the best of the rows
    that saw a value, means and squared deviations combine by Chan et al.'s formula.
    Folding folded rows again gives the same row, so pieces can be folded as they come.
    """
    f = np.zeros((1, pf.shape[1]), dtype=np.float64)
    i = np.zeros((1, pi.shape[1]), dtype=np.int64)
    u = np.zeros((1, pu.shape[1]), dtype=np.uint64)
    with np.errstate(all="ignore"):  # inf - inf and the like are values here (NaN)
        for slot in slots:
            _fold_slot(slot, pf, pi, pu, f, i, u)
    return f, i, u


def _fold_slot(
    slot: AggSlot, pf: np.ndarray, pi: np.ndarray, pu: np.ndarray,
    f: np.ndarray, i: np.ndarray, u: np.ndarray,
) -> None:  # fmt: skip
    counts = pi[:, slot.i["count"]]
    pick = np.min if slot.agg.func == "min" else np.max
    for parts, roles, out, dtype in ((pi, slot.i, i, np.int64), (pu, slot.u, u, np.uint64)):
        for role, k in roles.items():
            if role in ("count", "sum"):
                out[0, k] = parts[:, k].sum(dtype=dtype)
            elif role == "best":
                seen = counts > 0
                out[0, k] = pick(parts[seen, k]) if seen.any() else 0
        if "sum_hi" in roles:
            hi, lo = roles["sum_hi"], roles["sum_lo"]
            total = sum(int(v) for v in parts[:, hi]) * 2**32 + sum(int(v) for v in parts[:, lo])
            out[0, hi], out[0, lo] = total >> 32, total & 0xFFFFFFFF
    if "sum" in slot.f:
        f[0, slot.f["sum"]] = pf[:, slot.f["sum"]].sum()
    if "best" in slot.f:
        # NaN marks a part without a number (NaN values never compete)
        best = pf[:, slot.f["best"]]
        numbers = best[best == best]
        f[0, slot.f["best"]] = pick(numbers) if numbers.size else math.nan
    if "mean" in slot.f:
        total_count = int(counts.sum())
        means, m2 = pf[:, slot.f["mean"]], pf[:, slot.f["m2"]]
        mean = float((counts * means).sum() / total_count) if total_count else 0.0
        f[0, slot.f["mean"]] = mean
        f[0, slot.f["m2"]] = float(m2.sum() + (counts * (means - mean) ** 2).sum())


def finalize_reduction(
    slot: AggSlot, pf: np.ndarray, pi: np.ndarray, pu: np.ndarray, num_rows: int
) -> tuple[Any, bool]:
    """The value of one reduction from its partial rows (and whether it is valid)."""
    f, i, u = fold_partials([slot], pf, pi, pu)
    with np.errstate(all="ignore"):
        return _finish(slot, f[0], i[0], u[0], num_rows)


def _finish(
    slot: AggSlot, f: np.ndarray, i: np.ndarray, u: np.ndarray, num_rows: int
) -> tuple[Any, bool]:
    """The value of one reduction from its one folded partial row."""
    func = slot.agg.func
    res: DType = slot.result_dtype
    count = int(i[slot.i["count"]])
    if func == "count":
        return np.uint32(count), True
    if func == "null_count":
        return np.uint32(num_rows - count), True
    if func in ("mean", "std", "var", "min", "max") and count == 0:
        return None, False
    if func == "mean" and ("sum_hi" in slot.i or "sum_hi" in slot.u):
        row, roles = (i, slot.i) if "sum_hi" in slot.i else (u, slot.u)
        total = int(row[roles["sum_hi"]]) * 2**32 + int(row[roles["sum_lo"]])
        return res.numpy.type(total / count), True
    if func in ("sum", "mean"):
        if "sum" in slot.f:
            total_: Any = float(f[slot.f["sum"]])
        elif "sum" in slot.u:
            total_ = u[slot.u["sum"]]
        else:
            total_ = i[slot.i["sum"]]
        if func == "sum":
            return np.asarray(total_).astype(res.numpy)[()], True
        if "sum" not in slot.f:  # an exact integer mean
            return res.numpy.type(int(total_) / count), True
        return res.numpy.type(total_ / count), True
    if func in ("min", "max"):
        if slot.arg_dtype.is_float:
            # NaN when every valid value was NaN (polars); no valid value was null above
            return res.numpy.type(f[slot.f["best"]]), True
        best = u[slot.u["best"]] if "best" in slot.u else i[slot.i["best"]]
        if res.is_bool:
            return bool(best), True
        return np.asarray(best).astype(res.numpy)[()], True
    # std / var from the folded mean and squared deviations
    ddof = slot.agg.ddof
    if count - ddof <= 0:
        return None, False
    var = float(f[slot.f["m2"]]) / (count - ddof)
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


def bind_scalar(spec: ScalarSpec, value: Any, valid: bool) -> list[Any]:
    """Kernel arguments of one reduction result of an earlier pass: value (and validity)."""
    if spec.dtype.is_bool:
        bound: list[Any] = [bool(value) if valid else False]
    else:
        bound = [spec.dtype.numpy.type(value if valid else 0)]
    if spec.nullable:
        bound.append(bool(valid))
    return bound


def check_scalar_outputs(
    segment: Segment,
    nulls: Nullability,
    scalar_values: dict[Agg, tuple[Any, bool]],
    stats: RunStats,
) -> None:
    """On a frame with no rows, evaluate the one-value outputs once anyway.

    polars evaluates an expression with no column outside a reduction once and
    broadcasts it, so a strict cast that fails there raises even when there are
    no rows to broadcast to. Row kernels over zero rows would never see it. Every
    backend calls this; the one value is evaluated with NumPy (nothing to compile).
    """
    from colbridge.backends.kernel_cache import kernel_cache, load_module_from_source
    from colbridge.codegen import numpy_eval

    outputs = [(name, node) for name, node in segment.outputs if is_scalar(node)]
    if not outputs:
        return

    def build() -> tuple[KernelSource, Any]:
        src = numpy_eval.generate_elementwise(outputs, None, segment.types, nulls,
                                              plan_text=segment.kernel_text,
                                              literals=segment.params)  # fmt: skip
        return src, load_module_from_source(src.source, "cbn").elementwise

    key = ("numpy", "scalar-check", segment.signature, tuple(name for name, _ in outputs))
    (src, func), _ = kernel_cache.get_or_build(key, build)
    args: list[Any] = [1]
    for s in src.scalars:
        args += bind_scalar(s, *scalar_values[s.agg])
    args += segment.param_values
    for out in src.outputs:
        args.append(np.zeros(1, dtype=np.uint64 if out.dtype.is_bool else out.dtype.numpy))
        if out.nullable:
            args.append(np.zeros(1, dtype=np.uint64))
    err = np.zeros((N_ERR_KINDS, 1), dtype=np.int64)
    args.append(err)
    func(*args)
    raise_kernel_errors(src, err)
