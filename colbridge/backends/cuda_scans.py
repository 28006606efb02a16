"""The scan pass on the GPU: generated CUDA scans (`colbridge.codegen.cuda_scans`) launched.

Stage: backends. `colbridge.backends.cuda.run_scan` calls `run_device_scan` for a
scan the device takes (`colbridge.codegen.cuda_scans.device_scan_reason`). The
argument is prepared as the CPU scan prepares it (values in the compute type,
validity one byte per row: `colbridge.backends.scans`), uploaded once; every
launch of the scan (a running scan's chunk carries, their scan and the fix-up, or
one row-wise kernel) reads and writes device buffers, with no host step between
them; the result comes back once into pinned memory and becomes an Arrow array
as the CPU scan's does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.backends import scans
from colbridge.backends.common import RunStats
from colbridge.backends.cuda import (
    _RUNTIME,
    _cached_binary,
    _legacy_cupy,
    _Session,
    _typed_args,
    current_options,
)
from colbridge.backends.kernel_cache import kernel_cache
from colbridge.codegen.cuda import CudaKernelSource
from colbridge.codegen.cuda_scans import MAX_BLOCK, ScanProgram, generate_scan
from colbridge.memory.cuda import cuda_error, cuda_failures, cupy_module
from colbridge.types import DType

__all__ = ["MIN_ROWS_PER_THREAD", "chunk_rows_for", "run_device_scan"]

#: a running scan's chunk gives each thread of its block at least this many rows
MIN_ROWS_PER_THREAD = 16


def chunk_rows_for(n: int, block: int, resident_blocks: int) -> int:
    """Rows per chunk (one block each) of a running scan over ``n`` rows.

    At least `MIN_ROWS_PER_THREAD` rows per thread, and no more chunks than blocks
    resident on the device at once: one wave of blocks, and few carries for the
    one thread that scans them.
    """
    return max(MIN_ROWS_PER_THREAD * block, -(-n // max(resident_blocks, 1)))


@dataclass
class _Loaded:
    program: ScanProgram
    handles: dict[str, Any]


def _load(s: _Session, program: ScanProgram, stats: RunStats) -> _Loaded:
    def build() -> _Loaded:
        path = _cached_binary(program.source, s.arch)
        module = s.cp.RawModule(path=str(path))
        return _Loaded(program, {k.name: module.get_function(k.name) for k in program.kernels})

    loaded, hit = kernel_cache.get_or_build(("cuda scan", s.token, s.arch, program.digest),
                                            build)  # fmt: skip
    if hit:
        stats.cache_hits += 1
    else:
        stats.compiled += 1
    stats.sources.append(program.source)
    return loaded  # type: ignore[no-any-return]


def run_device_scan(
    func: str,
    options: tuple[Any, ...],
    arg: pa.Array,
    arg_type: DType,
    result: DType,
    stats: RunStats,
    *,
    chunk_rows: int | None = None,
) -> tuple[pa.Array, str]:
    """``func`` over ``arg`` on the GPU, as `colbridge.backends.scans.run_scan` computes it.

    Returns the result and a line for the report (launches, chunks). ``chunk_rows``
    fixes a running scan's chunk length (tests cut small inputs into many chunks);
    by default `chunk_rows_for`. Raises `DeviceError` when CUDA fails.
    """
    opts = current_options()
    legacy = _RUNTIME.get()
    cp = _legacy_cupy(legacy) if legacy is not None else cupy_module()
    failures = cuda_failures(cp)
    try:
        with cp.cuda.Device(opts.device):  # the caller's current device comes back after
            session = _Session(cp, opts, legacy)
            try:
                ran = _run(session, func, options, arg, arg_type, result, stats, chunk_rows)
            except BaseException:
                session.close(strict=False)  # the first error is the one to report
                raise
            session.close(strict=True)
            if legacy is not None:
                cp.check()  # host-run tests are held to the contracts too
            return ran
    except failures as exc:
        raise cuda_error(cp, exc, f"the CUDA scan failed on cuda:{opts.device}") from exc


def _run(s: _Session, func: str, options: tuple[Any, ...], arg: pa.Array, arg_type: DType,
         result: DType, stats: RunStats,
         chunk_rows: int | None) -> tuple[pa.Array, str]:  # fmt: skip
    n = len(arg)
    compute = scans._compute_type(arg_type)
    values, valid = scans._inputs(func, arg, compute)
    out, out_valid = scans._outputs(func, n, compute)
    if n == 0:
        return scans._result(func, out, out_valid, result), "no rows"
    nullable = func != "shift_in_range" and not bool(valid.all())
    program = generate_scan(func, options, compute, nullable)
    loaded = _load(s, program, stats)
    geo = s.geometry
    block = min(geo.block, MAX_BLOCK)
    chunk = chunk_rows or chunk_rows_for(n, block, geo.max_reduce_blocks)
    chunks = -(-n // chunk)
    state_bytes = 16 * chunks  # a running scan's state: at most two 8-byte fields
    wanted = values.nbytes + n + out.nbytes + n + state_bytes
    s.budget(wanted, wanted)
    slot = s.slot(0)
    args: list[Any] = [n]
    with slot.stream:
        if program.reads_values:
            args.append(_upload(s, slot, "x", values))
        if program.nullable:
            args.append(_upload(s, slot, "xv", valid.view(np.uint8)))
        dev_out = s.device_buffer(slot, ("scan", "out"), out.nbytes)
        dev_valid = s.device_buffer(slot, ("scan", "ov"), n)
        inputs = list(args)
        launches = 0
        if program.running:
            reduce, carry, fix = program.kernels
            tu = s.device_buffer(slot, ("scan", "tu"), state_bytes)
            grid = max(1, min(chunks, geo.max_blocks))
            _launch(loaded, reduce, grid, block, [*inputs, tu, chunk])
            _launch(loaded, carry, 1, 32, [n, tu, chunk])
            tail: list[Any] = []
            if func in ("forward_fill", "backward_fill"):
                tail.append(-1 if options[0] is None else int(options[0]))
            _launch(loaded, fix, grid, block, [*inputs, dev_out, dev_valid, tu, chunk, *tail])
            launches = 3
            how = f"{chunks} chunk(s) of {chunk} rows, carries scanned, then fixed up"
        else:
            (kernel,) = program.kernels
            grid = max(1, min(-(-n // block), geo.max_blocks))
            if func in ("shift", "shift_in_range"):
                steps = int(options[0])
                fill = options[1] if func == "shift" else None
                fill_value = compute.type(0 if fill is None else fill)
                rest: list[Any] = [steps, fill_value, int(fill is not None)]
            else:
                window, min_samples, center, ddof = options
                offset = window // 2 if center else window - 1
                rest = [int(window), int(min_samples), int(offset)]
                if func in ("rolling_var", "rolling_std"):
                    rest.append(int(ddof))
            _launch(loaded, kernel, grid, block, [*inputs, dev_out, dev_valid, *rest])
            launches = 1
            how = "one row per thread"
        host_out, buf_out = s.host_result(out.nbytes)
        host_valid, buf_valid = s.host_result(n)
        s.rt.memcpyAsync(host_out, dev_out, out.nbytes, s.rt.memcpyDeviceToHost, slot.stream.ptr)
        s.rt.memcpyAsync(host_valid, dev_valid, n, s.rt.memcpyDeviceToHost, slot.stream.ptr)
    s.finish()
    got = np.frombuffer(buf_out, dtype=out.dtype, count=n).copy()
    got_valid = np.frombuffer(buf_valid, dtype=np.uint8, count=n).view(np.bool_).copy()
    array = scans._result(func, got, got_valid, result)
    return array, f"{launches} launch(es), {how}"


def _upload(s: _Session, slot: Any, name: str, host: np.ndarray[Any, Any]) -> int:
    dev = s.device_buffer(slot, ("scan", name), host.nbytes)
    if host.nbytes:
        s.stager.upload(np.ascontiguousarray(host), dev, slot.stream)
    return dev


def _launch(loaded: _Loaded, kernel: CudaKernelSource, grid: int, block: int,
            args: list[Any]) -> None:  # fmt: skip
    loaded.handles[kernel.name]((grid,), (block,), _typed_args(kernel, args))
