"""The CPU backend: compiles generated numba kernels and runs a segment over Arrow columns.

Inputs are read straight from the Arrow buffers (values at their offset,
validity bitmaps with their bit offset); outputs are written into buffers from
Arrow's memory pool and wrapped as Arrow arrays without a copy.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.backends.common import (
    RunStats,
    finalize_reduction,
    raise_kernel_errors,
    wrap_outputs,
)
from colbridge.backends.kernel_cache import kernel_cache, load_module_from_source
from colbridge.codegen.kernel import N_ERR_KINDS, InputSpec, KernelSource, ScalarSpec
from colbridge.codegen.numba_cpu import BLOCK, generate_elementwise, generate_reduce
from colbridge.errors import ComputeError, InvalidOperationError, KernelCompileError
from colbridge.expr.nodes import Agg
from colbridge.plan.nullability import Nullability
from colbridge.plan.planner import Segment
from colbridge.plan.typecheck import is_scalar

# numba's OpenMP workers spin after each parallel kernel; on a small machine that
# spinning steals the cores from whatever runs next (polars, pandas, the next
# kernel), measured here at 10x at 1e5 rows. Let them sleep instead, unless the
# user chose otherwise. Read by the OpenMP runtime when the first parallel kernel
# loads it, which happens after this import.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__all__ = ["PARALLEL_MIN_ROWS", "check_scalar_outputs", "run_segment"]

# Below this many rows a serial kernel is used: it compiles ~4x faster and
# threads would not pay for themselves.
PARALLEL_MIN_ROWS = 200_000

_COMPILE_LOCK = threading.Lock()
# Passed as `err` to kernels that cannot fail: they never write to it.
_NO_ERRORS = np.zeros((N_ERR_KINDS, 1), dtype=np.int64)


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
        bound: list[Any] = [_readonly(values), np.uint64(offset)]
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
        bound += [_readonly(bits), np.uint64(offset)]
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


def _alloc_bits(n: int) -> tuple[pa.Buffer, np.ndarray]:
    """A bitmap for ``n`` rows, as whole 64-bit words (kernels store a word at a time)."""
    buf = pa.allocate_buffer(((n + 63) // 64) * 8)
    return buf, np.frombuffer(buf, dtype=np.uint64)


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

    key = ("elementwise", "cpu", parallel, segment.signature, nullable, nan_null, input_types)
    compiled = _kernel(
        key,
        lambda: generate_elementwise(
            segment.outputs, segment.mask, segment.types, nulls, parallel=parallel,
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
    for out in src.outputs:
        if out.dtype.is_bool:
            data_buf, data = _alloc_bits(n)
        else:
            data_buf, raw = _alloc(n * out.dtype.numpy.itemsize)
            data = raw.view(out.dtype.numpy)
        args.append(data)
        valid_buf = None
        if out.nullable:
            valid_buf, valid = _alloc_bits(n)
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
        args.append(np.zeros(1, dtype=np.uint64 if out.dtype.is_bool else out.dtype.numpy))
        if out.nullable:
            args.append(np.zeros(1, dtype=np.uint64))
    err = np.zeros((N_ERR_KINDS, 1), dtype=np.int64) if src.uses_err else _NO_ERRORS
    args.append(err)
    _call(compiled, args)
    raise_kernel_errors(src, err)
