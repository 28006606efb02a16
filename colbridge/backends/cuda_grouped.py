"""The CUDA backend's grouped reduction passes: partial tables by group id, filled with atomics.

Stage: backends. Called by `colbridge.backends.cuda` for the grouped reductions of
a pass (one kernel per key set); the kernel comes from
`colbridge.codegen.cuda.generate_grouped_reduce`. Tables are made on the host at
the accumulators' initial values and copied to the device; with few groups each
block updates a table of its own (less contention on the same addresses), with
many the blocks share one. The host merges them as it merges the CPU's per-chunk
tables (`colbridge.backends.common.finalize_grouped`), so both targets finish
grouped reductions with the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from colbridge.backends.common import GroupedValues, RunStats, finalize_grouped
from colbridge.backends.groups import GroupIds
from colbridge.codegen.cuda import CudaKernelSource, generate_grouped_reduce
from colbridge.codegen.kernel import N_ERR_KINDS, GroupedSpec
from colbridge.expr.nodes import GroupAgg
from colbridge.plan.nullability import Nullability
from colbridge.plan.planner import Segment

__all__ = ["PER_BLOCK_TABLE_BYTES", "group_args", "run_grouped"]

#: Most bytes of per-block tables; beyond, the blocks share one table.
PER_BLOCK_TABLE_BYTES = 64 << 20

_KINDS = (("f", np.float64), ("i", np.int64), ("u", np.uint64))


def group_args(runtime: Any, src: CudaKernelSource, values: Mapping[GroupAgg, GroupedValues]
               ) -> list[Any]:  # fmt: skip
    """Device arguments ``g{j}`` (and ``gv{j}``) of the per-group results a kernel gathers."""
    out: list[Any] = []
    spec: GroupedSpec
    for spec in src.groups:
        data, valid = values[spec.node]
        out.append(runtime.input(np.ascontiguousarray(data, dtype=spec.dtype.numpy)))
        if spec.nullable:
            flags = np.ones(len(data), dtype=np.bool_) if valid is None else valid
            out.append(runtime.input(np.ascontiguousarray(flags, dtype=np.bool_)))
    return out


def run_grouped(
    runtime: Any,
    kernel: Callable[[tuple[Any, ...], Callable[[], CudaKernelSource]], Any],
    segment: Segment,
    aggs: list[GroupAgg],
    ids: GroupIds,
    nulls: Nullability,
    bind_rows: Callable[[CudaKernelSource, int, int], list[Any]],
    scalar_args: Callable[[CudaKernelSource], list[Any]],
    grouped_values: dict[GroupAgg, GroupedValues],
    row_chunks: Callable[[CudaKernelSource, int], list[tuple[int, int]]],
    key: tuple[Any, ...],
    stats: RunStats,
) -> None:
    """Run one grouped pass and finish it into ``grouped_values``.

    ``kernel`` compiles (or finds) a kernel by key; ``bind_rows`` gives the
    arguments of a chunk's input columns; ``scalar_args`` those of earlier
    whole-column results; ``row_chunks`` the row ranges that fit the device
    beside tables of the given bytes.
    """
    from colbridge.backends.common import raise_kernel_errors
    from colbridge.backends.cuda import launch_config

    compiled = kernel(key, lambda: generate_grouped_reduce(aggs, segment.types, nulls,
                                                           plan_text=segment.text))  # fmt: skip
    src: CudaKernelSource = compiled.source
    widths = {"f": max(src.n_f, 1), "i": max(src.n_i, 1), "u": max(src.n_u, 1)}
    row_bytes = ids.count * 8 * sum(widths.values())
    grid = runtime.max_reduce_blocks
    per_block = grid > 1 and grid * row_bytes <= PER_BLOCK_TABLE_BYTES
    chunks = row_chunks(src, (grid if per_block else 1) * row_bytes)
    tables = grid if per_block else 1
    host = {
        kind: np.zeros((tables, ids.count, widths[kind]), dtype=dtype) for kind, dtype in _KINDS
    }
    for kind, column, start in src.table_starts:
        host[kind][:, :, column] = start
    device = {kind: runtime.input(host[kind]) for kind, _ in _KINDS}
    err_total = np.zeros((N_ERR_KINDS, 1), dtype=np.int64)
    for start, stop in chunks:
        if stop <= start:
            continue
        grid, block = launch_config(src.threads_for(stop - start), runtime.block,
                                    runtime.max_reduce_blocks)  # fmt: skip
        err = runtime.zeros(N_ERR_KINDS, np.uint64)
        args: list[Any] = [stop - start, *bind_rows(src, start, stop), *scalar_args(src)]
        args += group_args(runtime, src, grouped_values)
        args += [device["f"], device["i"], device["u"], err, ids.count, 1 if per_block else 0]
        runtime.launch(compiled.handle, src, grid, block, args)
        err_total[:, 0] += runtime.to_numpy(err).astype(np.int64)
    raise_kernel_errors(src, err_total)
    out = {
        kind: runtime.to_numpy(device[kind]).view(dtype).reshape(tables, ids.count, widths[kind])
        for kind, dtype in _KINDS
    }
    stats.kernels.append(
        f"cuda grouped reduce[{', '.join(repr(a) for a in aggs)}] into {ids.count} group(s), "
        f"{tables} table(s)"
    )
    for slot in src.slots:
        assert isinstance(slot.agg, GroupAgg)
        grouped_values[slot.agg] = finalize_grouped(slot, out["f"], out["i"], out["u"], ids)

