"""The CPU backend: compiles generated numba kernels and runs a segment over Arrow columns.

Inputs are read straight from the Arrow buffers (values at their offset,
validity bitmaps with their bit offset); outputs are written into buffers from
Arrow's memory pool and wrapped as Arrow arrays without a copy.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.backends.kernel_cache import kernel_cache, load_module_from_source
from colbridge.codegen.numba_cpu import (
    BLOCK,
    N_ERR_KINDS,
    AggSlot,
    InputSpec,
    KernelSource,
    OutputSpec,
    ScalarSpec,
    generate_elementwise,
    generate_reduce,
)
from colbridge.errors import ComputeError, InvalidOperationError, KernelCompileError
from colbridge.expr.nodes import Agg
from colbridge.plan.nullability import Nullability
from colbridge.plan.planner import Segment
from colbridge.plan.typecheck import is_scalar
from colbridge.types import DType

# numba's OpenMP workers spin after each parallel kernel; on a small machine that
# spinning steals the cores from whatever runs next (polars, pandas, the next
# kernel), measured here at 10x at 1e5 rows. Let them sleep instead, unless the
# user chose otherwise. Read by the OpenMP runtime when the first parallel kernel
# loads it, which happens after this import.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__all__ = [
    "PARALLEL_MIN_ROWS",
    "RunStats",
    "finalize_reduction",
    "raise_kernel_errors",
    "run_segment",
    "wrap_outputs",
]

# Below this many rows a serial kernel is used: it compiles ~4x faster and
# threads would not pay for themselves.
PARALLEL_MIN_ROWS = 200_000

_COMPILE_LOCK = threading.Lock()
# Passed as `err` to kernels that cannot fail: they never write to it.
_NO_ERRORS = np.zeros((N_ERR_KINDS, 1), dtype=np.int64)


@dataclass
class RunStats:
    """What running one segment did, for `explain()`."""

    kernels: list[str] = field(default_factory=list)
    cache_hits: int = 0
    compiled: int = 0
    sources: list[str] = field(default_factory=list)


@dataclass
class _Compiled:
    source: KernelSource
    func: Any
    warmed: bool = False


def _kernel(
    key: tuple[Any, ...], generate: Any, stats: RunStats
) -> _Compiled:
    def build() -> _Compiled:
        src = generate()
        module = load_module_from_source(src.source)
        return _Compiled(src, getattr(module, src.kind))

    compiled, hit = kernel_cache.get_or_build(key, build)
    if hit:
        stats.cache_hits += 1
    else:
        stats.compiled += 1
    stats.sources.append(compiled.source.source)
    return compiled  # type: ignore[no-any-return]


def _call(compiled: _Compiled, args: list[Any]) -> None:
    try:
        if compiled.warmed:
            compiled.func(*args)
            return
        # numba compiles on the first call; one thread compiles, others wait.
        with _COMPILE_LOCK:
            compiled.func(*args)
            compiled.warmed = True
    except Exception as exc:
        from numba.core.errors import NumbaError

        if isinstance(exc, NumbaError):
            numbered = "\n".join(
                f"{i + 1:4d}  {line}" for i, line in enumerate(compiled.source.source.splitlines())
            )
            msg = f"generated CPU kernel failed to compile: {exc}\n{numbered}"
            raise KernelCompileError(msg) from exc
        raise


def _readonly(array: np.ndarray) -> np.ndarray:
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


def _bind_input(spec: InputSpec, array: pa.Array) -> list[Any]:
    buffers = array.buffers()
    offset = array.offset
    n = len(array)
    if spec.dtype.is_bool:
        data = buffers[1]
        values = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(1, np.uint8)
        bound: list[Any] = [_readonly(values), offset]
    else:
        dt = spec.dtype.numpy
        data = buffers[1]
        if data is None or n == 0:
            values = np.zeros(0, dtype=dt)
        else:
            values = np.frombuffer(data, dtype=dt, count=n, offset=offset * dt.itemsize)
        bound = [_readonly(values)]
    if spec.nullable:
        validity = buffers[0]
        bits = np.frombuffer(validity, dtype=np.uint8) if validity is not None else None
        if bits is None:  # no bitmap although planned nullable: all valid
            bits = np.full((offset + n + 7) // 8 + 1, 0xFF, dtype=np.uint8)
        bound += [_readonly(bits), offset]
    return bound


def _bind_scalar(spec: ScalarSpec, value: Any, valid: bool) -> list[Any]:
    if spec.dtype.is_bool:
        bound: list[Any] = [bool(value) if valid else False]
    else:
        bound = [spec.dtype.numpy.type(value if valid else 0)]
    if spec.nullable:
        bound.append(bool(valid))
    return bound


def _alloc(nbytes: int) -> tuple[pa.Buffer, np.ndarray]:
    buf = pa.allocate_buffer(max(nbytes, 0))
    return buf, np.frombuffer(buf, dtype=np.uint8)


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


def _input_key(specs: list[InputSpec]) -> tuple[Any, ...]:
    return tuple((s.name, s.dtype, s.nullable) for s in specs)


def run_segment(
    segment: Segment,
    columns: Mapping[str, pa.Array],
    num_rows: int,
    stats: RunStats,
    nan_null: frozenset[str] = frozenset(),
) -> tuple[dict[str, pa.Array], pa.BooleanArray | None]:
    """Run one segment: its reduction passes, then its fused elementwise pass.

    ``nan_null`` names float columns in which NaN means null (pandas NumPy floats).
    """
    nullable = frozenset(name for name in segment.inputs if columns[name].null_count > 0)
    nan_null = nan_null & frozenset(segment.inputs)
    nulls = Nullability(segment.types, nullable, nan_null)
    n = 1 if segment.one_row else num_rows
    parallel = num_rows >= PARALLEL_MIN_ROWS
    scalar_values: dict[Agg, tuple[Any, bool]] = {}

    input_types = tuple((c, columns[c].type) for c in segment.inputs)
    key: tuple[Any, ...]
    for index, level in enumerate(segment.agg_levels):
        key = ("reduce", "cpu", parallel, segment.signature, index, nullable, nan_null, input_types)
        compiled = _kernel(
            key,
            lambda level=level: generate_reduce(
                level, segment.types, nulls, parallel=parallel, plan_text=segment.text
            ),
            stats,
        )
        src = compiled.source
        nblocks = (num_rows + BLOCK - 1) // BLOCK
        pf = np.zeros((nblocks, max(src.n_f, 1)), dtype=np.float64)
        pi = np.zeros((nblocks, max(src.n_i, 1)), dtype=np.int64)
        pu = np.zeros((nblocks, max(src.n_u, 1)), dtype=np.uint64)
        err = np.zeros((N_ERR_KINDS, max(nblocks, 1)), dtype=np.int64) if src.uses_err \
            else _NO_ERRORS  # fmt: skip
        args: list[Any] = [num_rows]
        for spec in src.inputs:
            args += _bind_input(spec, columns[spec.name])
        for s in src.scalars:
            args += _bind_scalar(s, *scalar_values[s.agg])
        args += [pf, pi, pu, err]
        _call(compiled, args)
        raise_kernel_errors(src, err)
        stats.kernels.append(f"reduce[{', '.join(repr(a) for a in level)}]")
        for slot in src.slots:
            scalar_values[slot.agg] = finalize_reduction(slot, pf, pi, pu, num_rows)

    if not segment.outputs and segment.mask is None:
        return {}, None
    if num_rows == 0 and not segment.one_row:
        check_scalar_outputs(segment, nulls, scalar_values, stats)

    # Inputs of a block or more get the vectorising form of bit-packed outputs.
    vector_bits = n >= BLOCK
    key = (
        "elementwise", "cpu", parallel, vector_bits, segment.signature, nullable, nan_null,
        input_types,
    )  # fmt: skip
    compiled = _kernel(
        key,
        lambda: generate_elementwise(
            segment.outputs, segment.mask, segment.types, nulls, parallel=parallel,
            vector_bits=vector_bits,
            plan_text=segment.kernel_text,
            literals=segment.params,
        ),
        stats,
    )
    src = compiled.source
    nblocks = (n + BLOCK - 1) // BLOCK
    args = [n]
    for spec in src.inputs:
        args += _bind_input(spec, columns[spec.name])
    for s in src.scalars:
        args += _bind_scalar(s, *scalar_values[s.agg])
    args += segment.param_values
    out_buffers: list[tuple[pa.Buffer, pa.Buffer | None]] = []
    nbits = (n + 7) // 8
    for out in src.outputs:
        if out.dtype.is_bool:
            data_buf, data = _alloc(nbits)
        else:
            data_buf, raw = _alloc(n * out.dtype.numpy.itemsize)
            data = raw.view(out.dtype.numpy)
        args.append(data)
        valid_buf = None
        if out.nullable:
            valid_buf, valid = _alloc(nbits)
            args.append(valid)
        out_buffers.append((data_buf, valid_buf))
    err = np.zeros((N_ERR_KINDS, max(nblocks, 1)), dtype=np.int64) if src.uses_err else _NO_ERRORS
    args.append(err)
    try:
        _call(compiled, args)
    except (KernelCompileError, InvalidOperationError):
        raise
    except Exception as exc:  # pragma: no cover - a kernel crash is a bug worth a clear report
        msg = f"CPU kernel failed: {exc}"
        raise ComputeError(msg) from exc
    raise_kernel_errors(src, err)
    stats.kernels.append(
        f"elementwise[{', '.join(s.name for s in src.outputs)}] over {len(src.inputs)} input(s)"
    )
    return wrap_outputs(src.outputs, out_buffers, n)


def check_scalar_outputs(
    segment: Segment,
    nulls: Nullability,
    scalar_values: dict[Agg, tuple[Any, bool]],
    stats: RunStats,
) -> None:
    """On a frame with no rows, evaluate the one-value outputs once anyway.

    polars evaluates an expression with no column outside a reduction once and
    broadcasts it, so a strict cast that fails there raises even when there are
    no rows to broadcast to. Row kernels over zero rows would never see it.
    The CUDA backend calls this too: one value is checked on the host.
    """
    outputs = [(name, node) for name, node in segment.outputs if is_scalar(node)]
    if not outputs:
        return
    key = ("scalar-check", "cpu", segment.signature, tuple(name for name, _ in outputs))
    compiled = _kernel(
        key,
        lambda: generate_elementwise(
            outputs, None, segment.types, nulls, parallel=False,
            plan_text=segment.kernel_text, literals=segment.params,
        ),
        stats,
    )
    src = compiled.source
    args: list[Any] = [1]
    for s in src.scalars:
        args += _bind_scalar(s, *scalar_values[s.agg])
    args += segment.param_values
    for out in src.outputs:
        args.append(np.zeros(8, dtype=np.uint8 if out.dtype.is_bool else out.dtype.numpy))
        if out.nullable:
            args.append(np.zeros(1, dtype=np.uint8))
    err = np.zeros((N_ERR_KINDS, 1), dtype=np.int64) if src.uses_err else _NO_ERRORS
    args.append(err)
    _call(compiled, args)
    raise_kernel_errors(src, err)


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
    value = math.sqrt(var) if func == "std" else var
    return res.numpy.type(value), True
