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
    _cached_binary,
    _Session,
    _typed_args,
    in_session,
)
from colbridge.backends.groups import GroupIds
from colbridge.backends.kernel_cache import kernel_cache
from colbridge.backends.scans import run_scan
from colbridge.codegen.cuda import CudaKernelSource
from colbridge.codegen.cuda_scans import MAX_BLOCK, STATE_BYTES, ScanProgram, generate_scan
from colbridge.expr.nodes import rolling_weights
from colbridge.memory import empty_array
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
    groups: GroupIds | None = None,
    *,
    chunk_rows: int | None = None,
) -> tuple[pa.Array, str]:
    """``func`` over ``arg`` on the GPU, as `colbridge.backends.scans.run_scan` computes it.

    ``groups``: scan each group on its own (``.over``), rows in frame order; the rows
    are ordered by group on the host (a stable counting sort, as the CPU scan does)
    and the kernels walk that order. Returns the result and where it ran, for the
    report (`ON_DEVICE` with its launches and chunks; an ``ewm_mean`` over NaN or
    infinities runs on the host). ``chunk_rows`` fixes a running scan's chunk length
    (tests cut small inputs into many chunks);
    by default `chunk_rows_for`. Raises `DeviceError` when CUDA fails.
    """
    def work(session: _Session) -> tuple[pa.Array, str]:
        return _run(session, func, options, arg, arg_type, result, stats, chunk_rows, groups)

    ran: tuple[pa.Array, str] = in_session(work, "the CUDA scan failed")
    return ran


#: the phrase the report gives a scan the device ran
ON_DEVICE = "generated CUDA scan on the device"
#: why an `ewm_mean` over NaN or infinite values stays on the host
EWM_NONFINITE = ("on the host CPU (`ewm_mean` over NaN or infinite values follows polars' "
                 "recurrence there)")  # fmt: skip


#: running scans whose chunks reassociate floating-point arithmetic
_SUMS_AND_PRODUCTS = frozenset({"cum_sum", "cum_prod"})
#: why a running float sum or product that met an infinity or NaN was redone on the host
CUM_NONFINITE = ("on the host CPU (a float running sum or product that meets an infinity "
                 "or NaN is redone in the rows' order, as polars adds them)")  # fmt: skip


def _run(s: _Session, func: str, options: tuple[Any, ...], arg: pa.Array, arg_type: DType,
         result: DType, stats: RunStats, chunk_rows: int | None,
         groups: GroupIds | None) -> tuple[pa.Array, str]:  # fmt: skip
    n = len(arg)
    compute = scans._compute_type(arg_type, func)
    values, valid = scans._inputs(func, arg, compute)
    out, out_valid = scans._outputs(func, n, compute)
    if n == 0:
        return scans._result(func, out, out_valid, result), f"{ON_DEVICE} (no rows)"
    if func == "ewm_mean" and not np.isfinite(values[valid]).all():
        # the parallel form composes affine maps, in which an infinite mean does not
        # turn into NaN at the next value as polars' recurrence does
        return run_scan(func, options, arg, arg_type, result, groups), EWM_NONFINITE
    nullable = func != "shift_in_range" and not bool(valid.all())
    keyed = groups is not None and groups.ids is not None
    programs = [generate_scan(f, options, compute, nullable, keyed)
                for f in (("ewm_weight", "ewm_mean") if func == "ewm_mean" else (func,))]
    loaded = [_load(s, program, stats) for program in programs]
    geo = s.geometry
    block = min(geo.block, MAX_BLOCK)
    chunk = chunk_rows or chunk_rows_for(n, block, geo.max_reduce_blocks)
    chunks = -(-n // chunk)
    state_bytes = STATE_BYTES * chunks
    wanted = values.nbytes + n + 2 * out.nbytes + n + state_bytes + 12 * n * keyed \
        + 8 * len(rolling_weights(func, options) or ())  # fmt: skip
    s.budget(wanted, wanted)
    slot = s.slot(0)
    args: list[Any] = [n]
    with slot.stream:
        if programs[-1].reads_values:
            args.append(_upload(s, slot, "x", values))
        if nullable:
            args.append(_upload(s, slot, "xv", valid.view(np.uint8)))
        sort = ""
        if keyed:
            assert groups is not None
            ids = groups.ids
            assert ids is not None
            order, _ = scans._kernels().counting_order(ids, groups.count,
                                                       empty_array(len(ids), np.int64))
            args.append(_upload(s, slot, "order", order.astype(np.int64, copy=False)))
            args.append(_upload(s, slot, "gid", ids[order].astype(np.int32, copy=False)))
            sort = f"{groups.count} group(s) in rows ordered by group (a stable sort on the host), "
        dev_out = s.device_buffer(slot, ("scan", "out"), out.nbytes)
        dev_valid = s.device_buffer(slot, ("scan", "ov"), n)
        launches = 0
        if programs[0].running:
            tu = s.device_buffer(slot, ("scan", "tu"), state_bytes)
            grid = max(1, min(chunks, geo.max_blocks))
            tail: list[Any] = []
            if func in ("forward_fill", "backward_fill"):
                tail.append(-1 if options[0] is None else int(options[0]))
            inputs = list(args)
            if func == "ewm_mean":  # the weights first, into a buffer the means read
                weights = s.device_buffer(slot, ("scan", "wt"), out.nbytes)
                weight_inputs = [n, *args[2:]]  # all but the values
                _running(loaded[0], weight_inputs, [weights, dev_valid], tu, grid, block, chunk)
                inputs.append(weights)
                launches += 3
            _running(loaded[-1], inputs, [dev_out, dev_valid], tu, grid, block, chunk, tail)
            launches += 3
            how = f"{chunks} chunk(s) of {chunk} rows, carries scanned, then fixed up"
        else:
            (kernel,) = programs[0].kernels
            grid = max(1, min(-(-n // block), geo.max_blocks))
            if func in ("shift", "shift_in_range"):
                steps = int(options[0])
                fill = options[1] if func == "shift" else None
                fill_value = compute.type(0 if fill is None else fill)
                rest: list[Any] = [steps, fill_value, int(fill is not None)]
            else:
                window, min_samples, center, ddof = options[:4]
                offset = window // 2 if center else window - 1
                rest = [int(window), int(min_samples), int(offset)]
                if rolling_weights(func, options) is not None:  # the weights, as the CPU's
                    args.append(_upload(s, slot, "wts", scans.weights_for(func, options,
                                                                          compute)))  # fmt: skip
                elif func in ("rolling_var", "rolling_std"):
                    rest.append(int(ddof))
            _launch(loaded[0], kernel, grid, block, [*args, dev_out, dev_valid, *rest])
            launches = 1
            how = "one row per thread"
        host_out, buf_out = s.host_result(out.nbytes)
        host_valid, buf_valid = s.host_result(n)
        s.rt.memcpyAsync(host_out, dev_out, out.nbytes, s.rt.memcpyDeviceToHost, slot.stream.ptr)
        s.rt.memcpyAsync(host_valid, dev_valid, n, s.rt.memcpyDeviceToHost, slot.stream.ptr)
    s.finish()
    got = np.frombuffer(buf_out, dtype=out.dtype, count=n).copy()
    got_valid = np.frombuffer(buf_valid, dtype=np.uint8, count=n).view(np.bool_).copy()
    if func in _SUMS_AND_PRODUCTS and out.dtype.kind == "f" and not np.isfinite(got[valid]).all():
        # the chunks' totals meet in another order than the rows': a sum or product that
        # overflows (or meets NaN) in one order gives inf, NaN or a finite value in another
        # (1e308 + 1e308 - 1e308), where polars' running total stays infinite
        return run_scan(func, options, arg, arg_type, result, groups), CUM_NONFINITE
    array = scans._result(func, got, got_valid, result)
    return array, f"{ON_DEVICE} ({sort}{launches} launch(es), {how})"


def _running(loaded: _Loaded, inputs: list[Any], outputs: list[Any], tu: int, grid: int,
             block: int, chunk: int, tail: list[Any] | None = None) -> None:  # fmt: skip
    """The three launches of a running scan: chunk carries, their scan, the fix-up."""
    reduce, carry, fix = loaded.program.kernels
    _launch(loaded, reduce, grid, block, [*inputs, tu, chunk])
    _launch(loaded, carry, 1, 32, [inputs[0], tu, chunk])
    _launch(loaded, fix, grid, block, [*inputs, *outputs, tu, chunk, *(tail or [])])


def _upload(s: _Session, slot: Any, name: str, host: np.ndarray[Any, Any]) -> int:
    dev = s.device_buffer(slot, ("scan", name), host.nbytes)
    if host.nbytes:
        s.stager.upload(np.ascontiguousarray(host), dev, slot.stream)
    return dev


def _launch(loaded: _Loaded, kernel: CudaKernelSource, grid: int, block: int,
            args: list[Any]) -> None:  # fmt: skip
    loaded.handles[kernel.name]((grid,), (block,), _typed_args(kernel, args))
