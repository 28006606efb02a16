"""Helpers every backend shares: run statistics, kernel failure counts, reductions, results.

Stage: backends. Nothing here knows a target: the per-block partials of a
reduction pass are laid out by `colbridge.codegen.kernel.AggSlot` whatever
produced them, and results are Arrow arrays over filled buffers.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.backends.groups import GroupIds, integer_values
from colbridge.codegen.kernel import (
    N_HOST_ERR_KINDS,
    AggSlot,
    KernelSource,
    OutputSpec,
    ScalarSpec,
    collect_tables,
    table_args,
    table_key,
)
from colbridge.errors import InvalidOperationError
from colbridge.expr.nodes import Agg, GroupAgg, KeySet, Reduction, TableRef
from colbridge.plan.nullability import Nullability
from colbridge.plan.planner import LaggedRead, Segment
from colbridge.plan.typecheck import is_scalar
from colbridge.types import DType

__all__ = [
    "RunStats",
    "SegmentResult",
    "bind_groups",
    "bind_scalar",
    "bind_tables",
    "check_scalar_outputs",
    "finalize_grouped",
    "finalize_reduction",
    "finalize_slots",
    "fold_partials",
    "grouped_array",
    "grouped_operand",
    "input_nullability",
    "job_total_rows",
    "kernel_sources",
    "per_group_level",
    "piece_of_job",
    "raise_kernel_errors",
    "reduction_outputs",
    "split_level",
    "wrap_outputs",
]

#: Per-group results as kernels read them: values, and validity (None: every group valid).
GroupedValues = tuple[np.ndarray, np.ndarray | None]


#: Inputs that had nulls in some piece of a job, by segment shape (`input_nullability`).
_JOB_NULLABLE: OrderedDict[tuple[Any, ...], frozenset[str]] = OrderedDict()
_JOB_NULLABLE_MAX = 1024
_JOB_NULLABLE_LOCK = threading.Lock()


@dataclass(frozen=True)
class _Job:
    total_rows: int | None


#: the job whose piece runs now (`piece_of_job`); None outside a job
_JOB: ContextVar[_Job | None] = ContextVar("colbridge_job", default=None)


@contextlib.contextmanager
def piece_of_job(total_rows: int | None = None) -> Iterator[None]:
    """Run the segments inside as one piece (a batch, a partition) of a job.

    ``total_rows``: the rows of all the job's pieces together, None when unknown; it
    picks the CPU tier (`colbridge.backends.cpu`). Kernels inside keep the nullable
    inputs of the job's earlier pieces (`input_nullability`).
    """
    token = _JOB.set(_Job(total_rows))
    try:
        yield
    finally:
        _JOB.reset(token)


def job_total_rows() -> int | None:
    """The rows of the job whose piece runs now (`piece_of_job`); None outside a job or unknown."""
    job = _JOB.get()
    return None if job is None else job.total_rows


def lag_directions(lagged: Mapping[str, LaggedRead]) -> tuple[tuple[str, bool, bool], ...]:
    """The part of a kernel's cache key its lagged inputs make: which read rows back, filled.

    How many rows and the fill value are kernel arguments, so ``x.shift(1)`` shares one
    compiled kernel with ``x.shift(7)``, and ``x.shift(1, fill_value=0)`` with
    ``x.shift(7, fill_value=2)``; reading back or ahead, and whether the rows shifted in
    are filled, is in the source.
    """
    return tuple(sorted((name, read.rows > 0, read.fill is not None)
                        for name, read in lagged.items()))  # fmt: skip


def input_nullability(segment: Segment, columns: Mapping[str, pa.Array],
                      shape: tuple[Any, ...]) -> frozenset[str]:  # fmt: skip
    """The inputs of ``segment`` its kernels read with validity: those with nulls.

    Kernels are generated for one set of nullable inputs, so a new set compiles new
    kernels. In one compute that is one set; across the pieces of a job (a stream's
    batches, a Dask frame's partitions) it changes with every piece whose columns
    happen to have nulls or not, more so the smaller the pieces: a 400-row stream of
    one-row batches compiled 179 kernels. So inside a job (`piece_of_job`) an input
    that had nulls in an earlier piece of the same segment shape (``shape``: the
    segment's signature and input types) stays nullable: a piece without its bitmap
    reads it as all valid, and a job compiles at most one kernel variant more per
    input that turns out to hold nulls.
    """
    found = frozenset(name for name in segment.inputs if columns[name].null_count > 0)
    if _JOB.get() is None:
        return found
    key = (segment.signature, *shape)
    with _JOB_NULLABLE_LOCK:
        seen = _JOB_NULLABLE.get(key, frozenset())
        nullable = seen | found
        _JOB_NULLABLE[key] = nullable
        _JOB_NULLABLE.move_to_end(key)
        while len(_JOB_NULLABLE) > _JOB_NULLABLE_MAX:
            _JOB_NULLABLE.popitem(last=False)
    return nullable


@dataclass
class SegmentResult:
    """What a backend gives back for one segment.

    ``columns``: the new columns by name; ``mask``: the rows the segment's filter keeps
    (None without a filter). When ``compacted``, the backend applied the filter itself:
    ``columns`` (outputs, and the carried columns it was given) hold the kept rows only,
    ``kept`` counts them, and ``mask`` is left for the columns it was not given.
    """

    columns: dict[str, pa.Array]
    mask: pa.BooleanArray | None = None
    compacted: bool = False
    kept: int = 0


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
        if out.is_mask:
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
    if len(pf) == len(pi) == len(pu) == 1:
        # one part (rows within one block) is folded already; a part's row keeps what it
        # holds where it saw no row (a min's start value), which folding and finishing
        # ignore by its count of 0
        return pf, pi, pu
    with np.errstate(all="ignore"):  # inf - inf and the like are values here (NaN)
        # every column adds up first (one call per array, not one per column: a warm
        # compute of a few reductions spent 50 us here); the roles that do not add are
        # then folded over it, slot by slot. Float columns are summed each along its
        # own contiguous row, the same pairwise order as summing each column alone.
        f = np.ascontiguousarray(pf.T).sum(axis=1).reshape(1, -1)
        i = pi.sum(axis=0, dtype=np.int64).reshape(1, -1)
        u = pu.sum(axis=0, dtype=np.uint64).reshape(1, -1)
        for slot in slots:
            if slot.folds_apart:
                _fold_slot(slot, pf, pi, pu, f, i, u)
    return f, i, u


def _fold_slot(
    slot: AggSlot, pf: np.ndarray, pi: np.ndarray, pu: np.ndarray,
    f: np.ndarray, i: np.ndarray, u: np.ndarray,
) -> None:  # fmt: skip
    """The roles of ``slot`` that do not add up: best, exact mean halves, mean and m2."""
    counts = pi[:, slot.i["count"]]
    pick = np.min if slot.agg.func == "min" else np.max
    for parts, roles, out in ((pi, slot.i, i), (pu, slot.u, u)):
        if "best" in roles:
            k = roles["best"]
            seen = counts > 0
            out[0, k] = pick(parts[seen, k]) if seen.any() else 0
        if "sum_hi" in roles:
            hi, lo = roles["sum_hi"], roles["sum_lo"]
            total = sum(int(v) for v in parts[:, hi]) * 2**32 + sum(int(v) for v in parts[:, lo])
            out[0, hi], out[0, lo] = total >> 32, total & 0xFFFFFFFF
    if "best" in slot.f:
        # NaN marks a part without a number (NaN values never compete)
        best = pf[:, slot.f["best"]]
        numbers = best[best == best]
        value = pick(numbers) if numbers.size else math.nan
        if value == 0.0:  # of equal zeros -0.0 is the smaller, as the kernels order them
            minus = np.signbit(numbers[numbers == 0.0])
            value = -0.0 if (minus.any() if slot.agg.func == "min" else minus.all()) else 0.0
        f[0, slot.f["best"]] = value
    if "mean" in slot.f:
        # parts that saw no row (idle GPU threads) take no part: 0 * inf would be NaN
        seen = counts > 0
        part_counts = counts[seen]
        total_count = int(part_counts.sum())
        means, m2 = pf[seen, slot.f["mean"]], pf[seen, slot.f["m2"]]
        mean = float((part_counts * means).sum() / total_count) if total_count else 0.0
        f[0, slot.f["mean"]] = mean
        f[0, slot.f["m2"]] = float(m2.sum() + (part_counts * (means - mean) ** 2).sum())


def finalize_reduction(
    slot: AggSlot, pf: np.ndarray, pi: np.ndarray, pu: np.ndarray, num_rows: int
) -> tuple[Any, bool]:
    """The value of one reduction from its partial rows (and whether it is valid)."""
    f, i, u = fold_partials([slot], pf, pi, pu)
    with np.errstate(all="ignore"):
        return _finish(slot, f[0], i[0], u[0], num_rows)


def finalize_slots(
    slots: list[AggSlot], pf: np.ndarray, pi: np.ndarray, pu: np.ndarray, num_rows: int
) -> dict[Agg, tuple[Any, bool]]:
    """The value (and validity) of every whole-column reduction of a pass, by reduction."""
    f, i, u = fold_partials(slots, pf, pi, pu)  # each slot folds its own columns
    out: dict[Agg, tuple[Any, bool]] = {}
    with np.errstate(all="ignore"):
        for slot in slots:
            assert isinstance(slot.agg, Agg)
            out[slot.agg] = _finish(slot, f[0], i[0], u[0], num_rows)
    return out


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
        if "rows" in slot.i:  # rows where a filter holds, not the whole frame
            num_rows = int(i[slot.i["rows"]])
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


def reduction_outputs(
    segment: Segment, scalar_values: Mapping[Agg, tuple[Any, bool]]
) -> dict[str, pa.Array]:
    """The one-row outputs of a segment whose outputs are its reductions as they are.

    `Segment.outputs_are_reductions` (``select(a.sum(), b.max())``): each finished
    reduction is made into a one-row array, its value taken as `bind_scalar` gives it to
    a kernel; there is no elementwise pass to launch (on the CPU its binding and launch
    were a third of such a compute at 1,000 rows).
    """
    assert segment.outputs_are_reductions
    out: dict[str, pa.Array] = {}
    for name, node in segment.outputs:
        assert isinstance(node, Agg)
        value, valid = scalar_values[node]
        dtype = segment.types[node]
        if dtype.is_bool:  # one bit
            data = np.array([1 if valid and value else 0], dtype=np.uint8)
        else:
            data = np.array([dtype.numpy.type(value if valid else 0)], dtype=dtype.numpy)
        validity = None if valid else pa.py_buffer(np.zeros(1, dtype=np.uint8))
        out[name] = pa.Array.from_buffers(dtype.arrow, 1, [validity, pa.py_buffer(data)],
                                          null_count=0 if valid else 1)  # fmt: skip
    return out


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
        if slot.arg_dtype.is_float:
            # NaN marks a chunk without a number (NaN values never compete), as in
            # `fold_partials`: fmin/fmax skip it; a group whose values were all NaN stays NaN
            nan_skipping = np.fmin if func == "min" else np.fmax
            # `* 1.0` quiets a signaling NaN (a chunk of them only), which NumPy's
            # fmin/fmax let win outside their vector loops
            best = nan_skipping.reduce(tf[:, :, slot.f["best"]] * 1.0, axis=0)
            return best.astype(res.numpy), _valid(some)
        pick = np.min if func == "min" else np.max
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
    """A per-group Arrow result as kernels gather it: values of ``dtype``, validity.

    A temporal result (the first time of each group) is read as its integers.
    """
    if pa.types.is_temporal(array.type):
        array = integer_values(array)
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
                                            plan_text=segment.kernel_text,
                                            tables=segment.tables, literals=segment.params)
            out.append((f"reduction kernel source ({target})", src.source))
        for grouped in by_keys.values():
            src = generator.generate_grouped_reduce(grouped, segment.types, nulls,
                                                    parallel=parallel,
                                                    plan_text=segment.kernel_text,
                                                    tables=segment.tables,
                                                    literals=segment.params)  # fmt: skip
            out.append((f"grouped reduction kernel source ({target})", src.source))
        for each in per_group_level(level).values():
            outputs = [(f"__each{k}__", node.arg) for k, node in enumerate(each)]
            src = generator.generate_elementwise(outputs, None, segment.types, nulls,
                                                 parallel=False, plan_text=segment.text,
                                                 tables=segment.tables)  # fmt: skip
            out.append((f"per-group kernel source ({target})", src.source))
    if segment.group_by is not None:
        # the aggregations are computed over the groups (row g reads group g)
        outputs = [(name, node) for name, node in segment.outputs if node not in segment.opaque]
        if outputs:
            src = generator.generate_elementwise(outputs, None, segment.types, nulls,
                                                 parallel=False, plan_text=segment.text,
                                                 tables=segment.tables)  # fmt: skip
            out.append((f"over-the-groups kernel source ({target})", src.source))
        return out
    if segment.outputs or segment.mask is not None:
        # the kernel takes the segment's literals as arguments
        parallel = (1 if segment.one_row else num_rows) >= parallel_from
        src = generator.generate_elementwise(
            segment.outputs, segment.mask, segment.types, nulls, parallel=parallel,
            plan_text=segment.kernel_text, literals=segment.params,
            gate=segment.gate, tables=segment.tables,
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


def bind_groups(src: KernelSource, values: Mapping[GroupAgg, GroupedValues]) -> list[Any]:
    """Arguments ``g{j}`` (and ``gv{j}``) of the per-group results a kernel gathers."""
    bound: list[Any] = []
    for spec in src.groups:
        data, valid = values[spec.node]
        bound.append(np.ascontiguousarray(data, dtype=spec.dtype.numpy))
        if spec.nullable:
            flags = np.ones(len(data), dtype=np.bool_) if valid is None else valid
            bound.append(np.ascontiguousarray(flags, dtype=np.bool_))
    return bound


def bind_tables(tables: Sequence[TableRef], columns: Mapping[str, Any]) -> list[Any]:
    """Arguments ``lut{k}`` (``lutv{k}``) ``lutn{k}`` of a segment's lookup tables.

    ``columns`` holds each table's values under its `table_key` (the runtime builds
    them per compute); every kernel of a segment takes all of the segment's tables.
    """
    bound: list[Any] = []
    for table in tables:
        bound += table_args(table, columns[table_key(table)])
    return bound


def check_scalar_outputs(
    segment: Segment,
    nulls: Nullability,
    scalar_values: dict[Agg, tuple[Any, bool]],
    stats: RunStats,
    grouped_values: Mapping[GroupAgg, GroupedValues] | None = None,
) -> None:
    """On a frame with no rows, evaluate the one-value outputs once anyway.

    polars evaluates an expression with no column outside a reduction once and
    broadcasts it, so a strict cast that fails there raises even when there are
    no rows to broadcast to. Row kernels over zero rows would never see it. Every
    backend calls this; the one value is evaluated with NumPy (nothing to compile).
    """
    from colbridge.backends.kernel_cache import kernel_cache, load_module_from_source
    from colbridge.codegen import numpy_eval

    # (outputs reading lookup tables are left out: their tables are built from columns)
    outputs = [(name, node) for name, node in segment.outputs
               if is_scalar(node) and not collect_tables([node])]  # fmt: skip
    if not outputs:
        return

    def build() -> tuple[KernelSource, Any]:
        src = numpy_eval.generate_elementwise(outputs, None, segment.types, nulls,
                                              plan_text=segment.kernel_text,
                                              literals=segment.params)  # fmt: skip
        return src, load_module_from_source(src.source, "cbn", bind=src.functions).elementwise

    key = ("numpy", "scalar-check", segment.signature, tuple(name for name, _ in outputs))
    (made, func), _ = kernel_cache.get_or_build(key, build)
    src = made.for_roots([node for _, node in outputs])  # made for other numbers, perhaps
    args: list[Any] = [1]
    for s in src.scalars:
        args += bind_scalar(s, *scalar_values[s.agg])
    args += bind_groups(src, grouped_values or {})
    args += segment.param_values
    for out in src.outputs:
        args.append(np.zeros(1, dtype=np.uint64 if out.dtype.is_bool else out.dtype.numpy))
        if out.nullable:
            args.append(np.zeros(1, dtype=np.uint64))
    err = np.zeros((N_HOST_ERR_KINDS, 1), dtype=np.int64)
    args.append(err)
    func(*args)
    raise_kernel_errors(src, err)
