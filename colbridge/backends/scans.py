"""The scan pass: ordered operations (shift, cumulative, rolling, ewm, fill) over whole columns.

Stage: backends. A `colbridge.expr.nodes.Scan` needs every row of its segment in
frame order, so planning computes its argument as a whole column first (the
segment's ``pre``) and the runtime calls `run_scan` between that and the segment's
elementwise pass, which reads the result as an input column. With keys (``.over``),
rows are ordered by group id with a stable counting sort and each group is
scanned on its own (`colbridge.backends._scan_kernels`).

The kernels compute in int64, uint64, float32 or float64: narrower integers and
booleans are widened on the way in and narrowed on the way out, which gives the
same wrapped sums as computing in the narrow type (arithmetic modulo 2**bits).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.backends.groups import (
    GroupIds,
    factorize,
    in_group_order,
    integer_values,
    take,
    thread_count,
    to_frame_order,
)
from colbridge.errors import ComputeError, NullValuesError
from colbridge.expr.nodes import (
    PERMUTATIONS,
    STRING_COMPARISONS,
    Column,
    Scan,
    deep_walk,
    looks_ahead,
    rolling_weights,
)
from colbridge.memory import empty_array, one_array, read_only
from colbridge.types import DType
from colbridge.types.formatting import format_as_strings, join_strings

__all__ = [
    "Carry",
    "ScanStreams",
    "StringRanks",
    "by_key_method",
    "check_weighted",
    "distinct_flags",
    "host_scan",
    "interpolate",
    "lag_text",
    "new_carry",
    "permuted",
    "rank",
    "run_carried",
    "run_scan",
    "segment_tasks",
    "shifted_in_place",
    "weights_for",
    "with_dictionary",
]

_CUMULATIVE = {"cum_sum": 0, "cum_prod": 1, "cum_min": 2, "cum_max": 3, "cum_count": 4}
#: exponentially weighted variance and deviation, by whether the kernel takes the root
_EWM_VAR = {"ewm_var": False, "ewm_std": True}
#: scans whose result is null exactly where their argument is (it shares the bitmap)
_NULLS_KEPT = frozenset({"cum_sum", "cum_prod", "cum_min", "cum_max"})
#: rows per task when one long segment is split for the threads (shifts and windows)
_CHUNK_ROWS = 1 << 14
#: `shift` per group splits its rows into chunks from this many rows, where each chunk's
#: rings hold at most one slot per this many rows (`_shift_parts_by_key`)
_SHIFT_SPLIT_ROWS = 1 << 17
_SHIFT_ROWS_PER_SLOT = 16
_SHIFT_CHUNKS_PER_THREAD = 4
#: a segment's `ewm_mean`/`ewm_var` runs in parallel parts from this many rows (`_ewm_parts`)
_EWM_SPLIT_ROWS = 1 << 17
#: the most state entries (groups x ring length) a scan by key keeps in tables
_CARRY_MAX_STATE = 1 << 22
#: the same for a ring of more than one row (a window, a shift by more than one): each
#: row reads its group's ring at random, which past the caches the sort's gathered runs
#: beat (1e7 rows, `rolling_mean(20)` over keys, 2-core AMD EPYC with 2 MiB of L2:
#: carried 108 / sorted 113 ms at 10,000 groups, 125 / 114 at 30,000, 475 / 122 at
#: 100,000; running scans, whose ring is one row, stay faster carried at 1,000,000)
_CARRY_MAX_WINDOW_STATE = 1 << 18
#: how scans by key run: "auto", or "carry" / "sort" where both can (tests and benchmarks
#: compare them; `COLBRIDGE_SCAN_BY_KEY` sets it)
_BY_KEY_CHOICES = ("auto", "carry", "sort")
#: weighted window operations, by kernel code (`_scan_kernels.W_SUM`...)
_WEIGHTED = {"rolling_sum": 0, "rolling_mean": 1, "rolling_var": 2, "rolling_std": 3,
             "rolling_min": 4, "rolling_max": 5}  # fmt: skip


def weights_for(func: str, options: tuple[Any, ...],
                compute: np.dtype[Any]) -> np.ndarray[Any, Any]:  # fmt: skip
    """A weighted window's weights in the compute type, as polars' kernels take them.

    Rounded to the values' float type; for a variance (and deviation) divided by their
    sum, added one by one in that type (polars' normalisation; `check_weighted` has
    refused a sum of 0).
    """
    weights = rolling_weights(func, options)
    assert weights is not None
    out = np.array(weights, dtype=compute)
    if func in ("rolling_var", "rolling_std"):
        total = compute.type(0)
        for w in out:
            total = compute.type(total + w)
        if total != 0:  # else no row is scanned (`check_weighted`)
            out = (out / total).astype(compute)
    return out


def check_weighted(scan: Scan, arg: pa.Array, result: DType,
                   kept: pa.Array | None = None) -> None:  # fmt: skip
    """Refuse what polars refuses of a weighted window over ``arg`` (its argument's rows).

    Nulls (polars has no weighted window over them) and, for a variance, weights that
    sum to 0; no rows is fine, as in polars. ``kept``: the scan is of the rows a
    filter keeps (``x.filter(p)``, true in ``kept``); only their nulls count.
    """
    weights = rolling_weights(scan.func, scan.options)
    if weights is None:
        return
    nulls = arg.null_count
    rows = len(arg)
    if kept is not None:
        mask = np.asarray(kept.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.bool_)
        rows = int(mask.sum())
        nulls = int((~_validity(arg) & mask).sum()) if nulls else 0
    if rows == 0:
        return
    names = sorted({n.name for n in deep_walk(scan.arg) if isinstance(n, Column)})
    column = f" (of column `{names[0]}`)" if len(names) == 1 else ""
    if nulls:
        msg = (
            f"`{scan!r}`: `{scan.func}(weights=...)` over {nulls} null value(s)"
            f"{column}: weighted windows over nulls are not defined (polars refuses them "
            "too); fill the nulls first, e.g. `fill_null(0)` or "
            "`fill_null(strategy='forward')`, or filter them out"
        )
        raise NullValuesError(msg)
    compute = np.dtype(result.numpy)
    if scan.func in ("rolling_var", "rolling_std"):
        total = compute.type(0)
        for w in np.array(weights, dtype=compute):
            total = compute.type(total + w)
        if total == 0:
            msg = (
                f"`{scan!r}`: the weights sum to 0, and a weighted variance divides by their "
                "sum; give weights with a non-zero sum"
            )
            raise ComputeError(msg)


def _kernel_call(func: str, options: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """The kernel a scan runs on, and its options (``shift_in_range`` is a plain shift)."""
    if func == "shift_in_range":
        return "shift", (options[0], None)
    return func, options


def _inputs(func: str, arg: pa.Array,
            compute: np.dtype[Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The values and validity a scan kernel reads for ``func`` over ``arg``.

    The values are always read-only (`colbridge.memory.read_only`: one compile per type).
    """
    n = len(arg)
    if func == "cum_count":  # counts validity only: the values are never read
        return read_only(np.zeros(n, dtype=compute)), _validity(arg)
    if func == "shift_in_range":  # every row present: the shift says which exist
        return read_only(np.zeros(n, dtype=compute)), np.ones(n, dtype=np.bool_)
    values, valid = _values(arg, compute)
    return read_only(values), valid


def _outputs(func: str, n: int, compute: np.dtype[Any]) -> tuple[np.ndarray[Any, Any],
                                                                 np.ndarray[Any, Any]]:  # fmt: skip
    """Empty result arrays for ``func``: values and validity."""
    dtype = np.dtype(np.uint32) if func == "cum_count" else compute
    return empty_array(n, dtype), empty_array(n, np.bool_)


def _result(func: str, out: np.ndarray[Any, Any], out_valid: np.ndarray[Any, Any],
            result: DType, arg: pa.Array | None = None,
            valid: np.ndarray[Any, Any] | None = None) -> pa.Array:  # fmt: skip
    """The kernel's output as the Arrow result (``shift_in_range``: its validity, as values).

    Given the scan's argument ``arg`` and its flags ``valid``, a running sum, product,
    min or max (null exactly where its argument is) shares the argument's validity
    bitmap; `cumulative` leaves their ``out_valid`` unwritten.
    """
    if func == "shift_in_range":
        return _arrow(out_valid, np.ones(len(out_valid), dtype=np.bool_), DType.BOOL)
    if func in _NULLS_KEPT and arg is not None and valid is not None:
        return _arrow(out, valid, result, bitmap_of=arg)
    return _arrow(out, out_valid, result)


def _ring(func: str, options: tuple[Any, ...]) -> int | None:
    """The rows of each group a carried scan keeps (1: a running value); None: no carry.

    Scans that look ahead (reversed, backward, negative shifts, centred windows) run
    reversed in memory, but cannot carry across batches (see `Scan.looks_ahead`).
    """
    if func in _CUMULATIVE or func in ("ewm_mean", "forward_fill", "backward_fill") \
            or func in _EWM_VAR:  # fmt: skip
        return 1
    if func in ("shift", "shift_in_range"):
        return abs(options[0]) or None  # a shift by 0 is the column itself
    if func.startswith("rolling_") and not options[2] and options[0] > 0:
        return int(options[0])  # a trailing window of at least one row
    return None


def by_key_method(func: str, options: tuple[Any, ...], groups: int) -> str:
    """How a scan per group runs: ``"carry"`` or ``"sort"``.

    *carry*: one pass over the rows in frame order (reversed for backward scans), each
    group's state in tables indexed by group id; no sort, and the values are read in
    order. It needs a state of ``groups x ring`` entries (the ring: ``|n|`` rows for a
    shift, the window for a trailing rolling window; 1 for running values).
    *sort*: a stable counting sort by group id, then each group's rows scanned as one
    contiguous run, groups in parallel; every scan can run this way. ``auto`` (the
    default) takes *carry* where it applies and its state is small (for a ring of
    more than one row, small enough for the caches: `_CARRY_MAX_WINDOW_STATE`).
    """
    ring = _ring(func, options)
    wanted = os.environ.get("COLBRIDGE_SCAN_BY_KEY", "auto")
    if wanted not in _BY_KEY_CHOICES:
        msg = f"COLBRIDGE_SCAN_BY_KEY={wanted!r}: use one of {', '.join(_BY_KEY_CHOICES)}"
        raise ValueError(msg)
    if ring is None or wanted == "sort":
        return "sort"
    if wanted == "carry":
        return "carry"
    # a ring's min/max is read whole per row: the sort's monotonic queue is faster
    # (a weighted window is read whole per row either way)
    unweighted_extreme = func in ("rolling_min", "rolling_max") \
        and rolling_weights(func, options) is None  # fmt: skip
    most = _CARRY_MAX_STATE if ring == 1 else _CARRY_MAX_WINDOW_STATE
    if unweighted_extreme or groups * ring > most:
        return "sort"
    return "carry"


@dataclass
class Carry:
    """The running state of one scan per group: tables indexed by group (or slot) id.

    Made by `new_carry` for ``count`` groups; `grow` makes room for more groups (a
    stream meets new keys batch after batch) with each new group's starting state.
    """

    func: str
    options: tuple[Any, ...]
    compute: np.dtype[Any]
    tables: list[np.ndarray[Any, Any]]
    starts: list[Any]  # each table's starting value for a new group

    @property
    def count(self) -> int:
        """Groups the tables have room for."""
        return len(self.tables[0]) if self.tables else 0

    def grow(self, count: int) -> None:
        """Room for ``count`` groups: new rows of each table take their starting value."""
        if count <= self.count:
            return
        size = max(count, 2 * self.count)
        grown = []
        for table, start in zip(self.tables, self.starts, strict=True):
            bigger = np.empty((size, *table.shape[1:]), dtype=table.dtype)
            bigger[: len(table)] = table
            bigger[len(table):] = start
            grown.append(bigger)
        self.tables = grown


def new_carry(func: str, options: tuple[Any, ...], count: int, compute: np.dtype[Any]) -> Carry:
    """The starting state of a carried scan (see `_ring`) for ``count`` groups."""
    zero, one = compute.type(0), compute.type(1)
    ring = _ring(func, options)
    assert ring is not None
    if func in _CUMULATIVE:
        starts: list[Any] = [one if func == "cum_prod" else zero, False, 0]
        dtypes: list[Any] = [compute, np.bool_, np.int64]
        shapes: list[tuple[int, ...]] = [(), (), ()]
    elif func == "ewm_mean":
        starts, dtypes, shapes = [zero, zero, 0], [compute, compute, np.int64], [(), (), ()]
    elif func in _EWM_VAR:  # weight, mean, cov, weight sum, bias denominator, count
        starts, dtypes, shapes = [zero], [compute], [(6,)]
    elif func in ("forward_fill", "backward_fill"):
        starts, dtypes, shapes = [zero, -1, 0], [compute, np.int64, np.int64], [(), (), ()]
    else:  # shifts and trailing windows: a ring of rows, its flags, (next slot, rows held)
        starts, dtypes, shapes = [zero, False, 0], [compute, np.bool_, np.int64], \
            [(ring,), (ring,), (2,)]  # fmt: skip
        if func in ("rolling_sum", "rolling_mean") and rolling_weights(func, options) is None:
            # sums, compensations; tallies; counts
            total = np.float64(0) if func == "rolling_mean" else zero
            starts += [total, 0, 0]
            dtypes += [np.dtype(type(total)), np.int64, np.int64]
            shapes += [(3,), (3,), ()]
        elif func in ("rolling_var", "rolling_std") and rolling_weights(func, options) is None:
            # the suffix sums of the last full block, (s, q, n) per slot; the block so
            # far, (n, s, q, its first value), the suffix's value and
            # polars' block start (`rolling_var_by_key`)
            starts += [0.0, 0.0]
            dtypes += [np.float64, np.float64]
            shapes += [(ring + 1, 3), (6,)]
    carry = Carry(func, options, compute, [np.empty((0, *shape), dtype=dt)
                                           for shape, dt in zip(shapes, dtypes, strict=True)],
                  starts)  # fmt: skip
    carry.grow(count)
    return carry


def _specials(dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """+inf, -inf and NaN in ``dtype`` (zeros for integers, whose sums never have them)."""
    if dtype.kind == "f":
        return np.array([np.inf, -np.inf, np.nan], dtype=dtype)
    return np.zeros(3, dtype=dtype)


def _kernels() -> Any:
    """The compiled scans (numba is imported, and they compile or load, on first use)."""
    from colbridge.backends import _scan_kernels

    return _scan_kernels


def _compute_type(dtype: DType, func: str) -> np.dtype[Any]:
    """The type scan ``func`` over a column of ``dtype`` computes in.

    A running sum of Float32 adds in float64, each row's total rounded to float32, as
    polars' ``cum_sum`` does (its products, windows and fills stay in float32).
    """
    if dtype is DType.FLOAT32 and func == "cum_sum":
        return np.dtype(np.float64)
    if dtype in (DType.FLOAT32, DType.FLOAT64):
        return np.dtype(dtype.numpy)
    if dtype is DType.UINT64:
        return np.dtype(np.uint64)
    return np.dtype(np.int64)


def _validity(array: pa.Array) -> np.ndarray[Any, Any]:
    """One flag per row, unpacked from the validity bitmap (all true without one)."""
    n = len(array)
    bitmap = array.buffers()[0]
    if not array.null_count or bitmap is None:
        return np.ones(n, dtype=np.bool_)
    off = array.offset
    packed = np.frombuffer(bitmap, dtype=np.uint8, count=(off + n + 7) // 8)
    bits = np.unpackbits(packed, count=off + n, bitorder="little")
    return bits[off:].view(np.bool_)


def _values(array: pa.Array, compute: np.dtype[Any]) -> tuple[np.ndarray[Any, Any],
                                                                np.ndarray[Any, Any]]:  # fmt: skip
    """The array's values in the compute type, in place where they are of it; validity."""
    n = len(array)
    valid = _validity(array)
    t = array.type
    if pa.types.is_boolean(t):
        values = np.asarray(array.fill_null(False).to_numpy(zero_copy_only=False))
        return values.astype(compute), valid
    if pa.types.is_temporal(t):
        array = array.view(pa.int64() if t.bit_width == 64 else pa.int32())
    dtype = np.dtype(array.type.to_pandas_dtype())
    data = array.buffers()[1]
    if data is None or n == 0:
        return np.zeros(n, dtype=compute), valid
    raw: np.ndarray[Any, Any] = np.frombuffer(data, dtype=dtype, count=n,
                                              offset=array.offset * dtype.itemsize)  # fmt: skip
    return (raw if raw.dtype == compute else raw.astype(compute)), valid


def segment_tasks(groups: GroupIds | None, n: int, split: bool,
           halo: int = 0) -> tuple[np.ndarray[Any, Any] | None, np.ndarray[Any, Any]]:  # fmt: skip
    """Row order (None: frame order) and tasks ``(a, b, c0, c1)``.

    One segment for the whole frame (split into chunks when ``split``: each chunk
    then reads ``halo`` rows before it again), or one per group in frame order.
    """
    if groups is not None and groups.ids is not None:
        order, starts = groups.rows_by_group()
        bounds = np.stack([starts[:-1], starts[1:]], axis=1)
        return order, np.ascontiguousarray(np.concatenate([bounds, bounds], axis=1))
    if n == 0:
        return None, np.zeros((0, 4), np.int64)
    # chunks are worth their halo only when they are much longer than it
    if not split or n < 2 * _CHUNK_ROWS or halo * 8 > _CHUNK_ROWS:
        return None, np.array([[0, n, 0, n]], dtype=np.int64)
    cuts = np.arange(0, n, _CHUNK_ROWS, dtype=np.int64)
    ends = np.minimum(cuts + _CHUNK_ROWS, n)
    tasks = np.stack([np.zeros_like(cuts), np.full_like(cuts, n), cuts, ends], axis=1)
    return None, np.ascontiguousarray(tasks)


def _ewm_warm_rows(alpha: float) -> int:
    """Rows an `ewm_mean` (`ewm_var`) part starts early so that its state meets the true one.

    The old state's share of the mean shrinks by ``1 - alpha`` a row: after this many
    rows it is below 2**-64 of the new, so the two round to the same bits (else the
    part is run again: `ewm_mean_split`).
    """
    return math.ceil(64 * math.log(2) / -math.log1p(-min(alpha, 0.5))) + 64


def _ewm_parts(n: int, alpha: float) -> np.ndarray[Any, Any] | None:
    """First rows of the parts one segment's ewm runs in, in parallel (None: one).

    Worth it where each part is long against the rows it repeats to warm up.
    """
    parts = thread_count()
    if parts < 2 or n < _EWM_SPLIT_ROWS or _ewm_warm_rows(alpha) * 16 * parts > n:
        return None
    return np.linspace(0, n, parts + 1).astype(np.int64)


def _arrow(values: np.ndarray[Any, Any], valid: np.ndarray[Any, Any], dtype: DType,
           bitmap_of: pa.Array | None = None) -> pa.Array:  # fmt: skip
    """Kernel output as an Arrow array of ``dtype`` (no validity buffer when none is null).

    ``bitmap_of``: an array of as many rows whose validity is ``valid``; its bitmap is
    shared where its rows start on a byte (else ``valid`` is packed anew).
    """
    n = len(values)
    if bitmap_of is not None and not bitmap_of.null_count:
        bitmap = None
    elif bitmap_of is not None and bitmap_of.offset % 8 == 0 \
            and bitmap_of.buffers()[0] is not None:  # fmt: skip
        bitmap = bitmap_of.buffers()[0].slice(bitmap_of.offset // 8, (n + 7) // 8)
    else:
        bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    if dtype is DType.BOOL:
        data = pa.py_buffer(np.packbits(values != 0, bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(values.astype(dtype.numpy, copy=False)))
    arrow_type = pa.from_numpy_dtype(np.dtype(dtype.numpy)) if dtype is not DType.BOOL \
        else pa.bool_()  # fmt: skip
    return pa.Array.from_buffers(arrow_type, n, [bitmap, data])


def run_carried(carry: Carry, values: np.ndarray[Any, Any], valid: np.ndarray[Any, Any],
                ids: np.ndarray[Any, Any], out: np.ndarray[Any, Any],
                out_valid: np.ndarray[Any, Any]) -> None:  # fmt: skip
    """One pass of a carried scan over rows whose groups are ``ids`` (< ``carry.count``).

    The carry's tables hold each group's state before the rows and after them. A running
    sum, product, min or max leaves ``out_valid`` unwritten (its nulls are ``valid``).
    """
    k = _kernels()
    func, options, compute, t = carry.func, carry.options, carry.compute, carry.tables
    zero = compute.type(0)
    # threads that share the groups of the kernels that split them (`_scan_kernels`)
    parts = max(1, min(thread_count(), carry.count))
    if rolling_weights(func, options) is not None:  # trailing weighted windows
        k.rolling_weighted_by_key(values, ids, parts, _WEIGHTED[func],
                                  weights_for(func, options, compute), options[1], zero, *t,
                                  out, out_valid)  # fmt: skip
    elif func in _CUMULATIVE:
        k.cumulative_by_key(values, valid, ids, _CUMULATIVE[func], options[0], *t, out,
                            out_valid)  # fmt: skip
    elif func == "ewm_mean":
        alpha, adjust, min_samples, ignore_nulls = options
        k.ewm_mean_by_key(values, valid, ids, compute.type(alpha), adjust, min_samples,
                          ignore_nulls, *t, out, out_valid)  # fmt: skip
    elif func in _EWM_VAR:
        alpha, adjust, bias, min_samples, ignore_nulls = options
        k.ewm_var_by_key(values, valid, ids, compute.type(alpha), adjust, bias, min_samples,
                         ignore_nulls, _EWM_VAR[func], *t, out, out_valid)  # fmt: skip
    elif func in ("forward_fill", "backward_fill"):
        limit = -1 if options[0] is None else options[0]
        k.fill_by_key(values, valid, ids, func == "backward_fill", limit, *t, out, out_valid)
    elif func == "shift":
        steps, fill = options
        fill_value = compute.type(0 if fill is None else fill)
        k.shift_by_key(values, valid, ids, steps, _shift_parts_by_key(len(values), carry),
                       fill is not None, fill_value, *t, out, out_valid)  # fmt: skip
    elif func in ("rolling_sum", "rolling_mean"):
        min_samples = options[1]
        mean = func == "rolling_mean"
        total = np.dtype(np.float64) if mean else compute
        k.rolling_sum_by_key(values, valid, ids, mean, compute.kind == "f",
                             min_samples, total.type(0), _specials(total), *t, out,
                             out_valid)  # fmt: skip
    elif func in ("rolling_var", "rolling_std"):  # trailing
        _, min_samples, _, ddof = options[:4]
        k.rolling_var_by_key(values, valid, ids, parts, func == "rolling_std", min_samples,
                             ddof, *t, out, out_valid)  # fmt: skip
    else:  # trailing rolling min, max
        min_samples = options[1]
        k.rolling_extreme_by_key(values, valid, ids, parts, func == "rolling_max",
                                 min_samples, zero, *t, out, out_valid)  # fmt: skip


def _shift_parts_by_key(rows: int, carry: Carry) -> int:
    """Chunks of rows `shift_by_key` runs in parallel (1: one pass, on one thread).

    Each chunk keeps rings of its own (``groups x |n|`` rows) and mends its first rows
    of each group from them afterwards: worth it where the rows are many and the
    rings few beside them. Four chunks per thread, measured faster than one (1e7 rows,
    1,000 groups, 2 threads: 26 ms in one pass, 21 ms in two chunks, 14.5 ms in four,
    14.2 ms in eight; why four beat two was not found).
    """
    threads = thread_count()
    parts = _SHIFT_CHUNKS_PER_THREAD * threads
    state = carry.count * carry.tables[0].shape[1]
    if threads < 2 or rows < _SHIFT_SPLIT_ROWS or state * parts * _SHIFT_ROWS_PER_SLOT > rows:
        return 1
    return parts


def window_within(window: int, center: bool, n: int) -> int:
    """A rolling window cut to the rows a window of an ``n``-row frame can cover.

    Any longer window covers the same rows of every group: all rows up to its own
    (``n`` rows back, trailing), or every row (``2n + 1`` rows, centred); the kernels
    hold a window's rows, so a window of 2**31 rows would not fit in memory.
    ``min_samples`` stays as asked (by default the window given).
    """
    return min(window, 2 * n + 1 if center else max(n, 1))


def run_scan(
    func: str,
    options: tuple[Any, ...],
    arg: pa.Array,
    arg_type: DType,
    result: DType,
    groups: GroupIds | None,
) -> pa.Array:
    """``func`` (a `SCAN_FUNCS` name other than diff/pct_change) over ``arg``.

    ``arg`` is the argument as its kernel made it, already of the type the scan
    computes in (typing casts it: `colbridge.plan.ordered_typing`); ``result`` is the
    output type (``cum_count`` counts into UInt32 whatever the argument).
    """
    if func == "shift" and (groups is None or groups.ids is None):
        moved = _shift_whole(arg, options, result)
        if moved is not None:
            return moved
    n = len(arg)
    k = _kernels()
    compute = _compute_type(arg_type, func)
    zero = compute.type(0)
    values, valid = _inputs(func, arg, compute)
    arg_valid = valid
    out, out_valid = _outputs(func, n, compute)
    named, func, options = func, *_kernel_call(func, options)
    if func.startswith("rolling_") and rolling_weights(func, options) is None:
        options = (window_within(options[0], options[2], n), *options[1:])
    method = None if groups is None or groups.ids is None \
        else by_key_method(func, options, groups.count)  # fmt: skip
    by_key: np.ndarray[Any, Any] | None = None  # the counting sort's row order
    runs = np.zeros((0, 4), dtype=np.int64)
    if method == "sort" and func.startswith("rolling_"):
        # a window reads each row twice or more (entering, leaving): each group's rows
        # side by side first, in the counting sort's order, so that the kernels read
        # them in place, not through the order (a cache miss per read among many
        # groups); the results are put back at the rows' places below. A running scan
        # or a shift reads each row once: through the order, as it is (measured faster)
        by_key, runs = segment_tasks(groups, n, split=False)
        assert by_key is not None
        taken, valid = in_group_order(by_key, values, valid)
        values = read_only(taken)  # as `_inputs` gives them: one compile per type

    def segments(split: bool, halo: int = 0) -> tuple[np.ndarray[Any, Any] | None,
                                                      np.ndarray[Any, Any]]:  # fmt: skip
        """The row order the kernels read (None: as the arrays hold them) and tasks."""
        return (None, runs) if by_key is not None else segment_tasks(groups, n, split, halo)

    if method == "carry":
        assert groups is not None
        assert groups.ids is not None
        carry = new_carry(func, options, groups.count, compute)
        run_carried(carry, values, valid, groups.ids, out, out_valid)
    elif func == "shift":
        steps, fill = options
        order, tasks = segments(True, abs(steps))
        fill_value = compute.type(0 if fill is None else fill)
        k.shift(values, valid, order, tasks, steps, fill is not None, fill_value,
                out, out_valid)  # fmt: skip
    elif func in _CUMULATIVE:
        (reverse,) = options
        order, tasks = segments(False)
        start = compute.type(1) if func == "cum_prod" else zero
        k.cumulative(values, valid, order, tasks, _CUMULATIVE[func], reverse, start,
                     out, out_valid)  # fmt: skip
    elif func.startswith("rolling_"):
        window, min_samples, center, ddof = options[:4]
        offset = window // 2 if center else window - 1
        order, tasks = segments(True, window)
        args = (values, valid, order, tasks)
        if rolling_weights(func, options) is not None:  # no row is null: `check_weighted`
            k.rolling_weighted(values, order, tasks, _WEIGHTED[func],
                               weights_for(func, options, compute), min_samples, offset, zero,
                               out, out_valid)  # fmt: skip
        elif func in ("rolling_sum", "rolling_mean"):
            mean = func == "rolling_mean"
            total = np.dtype(np.float64) if mean else compute
            k.rolling_sum(*args, mean, compute.kind == "f", window, min_samples, offset,
                          total.type(0), _specials(total), out, out_valid)  # fmt: skip
        elif func in ("rolling_var", "rolling_std"):
            k.rolling_var(*args, func == "rolling_std", window, min_samples, offset, ddof, out,
                          out_valid)  # fmt: skip
        else:
            k.rolling_extreme(*args, func == "rolling_max", window, min_samples, offset, zero,
                              out, out_valid)  # fmt: skip
    elif func == "ewm_mean":
        alpha, adjust, min_samples, ignore_nulls = options
        starts = _ewm_parts(n, alpha) if groups is None or groups.ids is None else None
        if starts is not None:
            k.ewm_mean_split(values, valid, starts, _ewm_warm_rows(alpha), compute.type(alpha),
                             adjust, min_samples, ignore_nulls, out, out_valid)  # fmt: skip
        else:
            order, tasks = segments(False)
            k.ewm_mean(values, valid, order, tasks, compute.type(alpha), adjust,
                       min_samples, ignore_nulls, out, out_valid)  # fmt: skip
    elif func in _EWM_VAR:
        alpha, adjust, bias, min_samples, ignore_nulls = options
        starts = _ewm_parts(n, alpha) if groups is None or groups.ids is None else None
        if starts is not None:
            k.ewm_var_split(values, valid, starts, _ewm_warm_rows(alpha), compute.type(alpha),
                            adjust, bias, min_samples, ignore_nulls, _EWM_VAR[func], out,
                            out_valid)  # fmt: skip
        else:
            order, tasks = segments(False)
            k.ewm_var(values, valid, order, tasks, compute.type(alpha), adjust, bias,
                      min_samples, ignore_nulls, _EWM_VAR[func], out, out_valid)  # fmt: skip
    elif func in ("forward_fill", "backward_fill"):
        (limit,) = options
        order, tasks = segments(False)
        k.fill(values, valid, order, tasks, func == "backward_fill",
               -1 if limit is None else limit, zero, out, out_valid)  # fmt: skip
    else:  # pragma: no cover - typing lowers every other ordered function
        msg = f"no scan kernel for `{func}`"
        raise AssertionError(msg)
    if by_key is not None:
        out, out_valid = to_frame_order(by_key, out, out_valid)
    return _result(named, out, out_valid, result, arg, arg_valid)


def rank(array: pa.Array | pa.ChunkedArray, options: tuple[Any, ...],
         groups: GroupIds | None) -> pa.Array:  # fmt: skip
    """Polars' ``rank`` of ``array`` (per group of ``groups``), on the host; nulls stay null.

    The non-null values become integer sort keys (`_rank_keys`: NaN after every number
    and equal to every NaN, ``-0.0`` as ``0.0``, strings by their UTF-8 bytes); NumPy
    sorts the keys, a counting sort by group keeps that order within each group, and
    the method reads each value's rank off its run of equal keys in its group: its own
    position (``ordinal``: equal values in row order), its run's first or last
    (``min``, ``max``) or their mean (``average``, Float64), or the run's number
    (``dense``). Sort, regroup and ranking compiled (`_group_kernels`), ranking on
    every core.
    """
    method, descending = options
    data = one_array(array)
    n = len(data)
    valid = _validity(data)
    present = np.flatnonzero(valid)
    keys = _rank_keys(data)
    if descending:
        keys = ~keys  # reverses the order of every int64, the smallest included
    ids = None if groups is None else groups.ids
    owners = None if ids is None else ids[present]
    count = 1 if groups is None or ids is None else groups.count
    kernels = _group_kernels()
    code = _RANK_METHODS.index(method)
    ranked = np.empty(len(present), dtype=np.float64 if method == "average" else np.uint32)
    packed = _packed(keys, owners, count)
    if packed is not None:  # (group, key, position) in one word: one plain sort
        words, row_bits, key_bits = packed
        kernels.rank_packed(np.sort(words), row_bits, key_bits, code, ranked)
    else:  # keys too wide to share a word: sort them, then group, then order ties
        order = np.argsort(keys)  # NumPy's (vectorised) quicksort: equal keys in any order
        if owners is None:
            rows, starts = order, np.array([0, len(order)], dtype=np.int64)
        else:  # regrouped, value order kept within each group (a stable counting sort)
            places, starts = _kernels().counting_order(
                owners[order], count, empty_array(len(order), np.int64))
            rows = order[places]
        kernels.rank_runs(rows, starts, keys, code, ranked)
    out = np.zeros(n, dtype=ranked.dtype)
    out[present] = ranked
    return pa.array(out, mask=None if valid.all() else ~valid)


_RANK_METHODS = ("ordinal", "min", "max", "average", "dense")  # `_put_rank`'s codes


def permuted(func: str, array: pa.Array | pa.ChunkedArray, options: tuple[Any, ...],
             groups: GroupIds | None,
             by: list[pa.Array | pa.ChunkedArray] | None = None) -> pa.Array:  # fmt: skip
    """Polars' ``sort``, ``sort_by``, ``reverse`` or ``arg_sort`` of ``array`` (per group).

    The rows in their new order: `rows_in_order` of the values (of ``by`` for
    ``sort_by``: a stable sort, nulls first unless ``nulls_last``, values ordered as
    polars sorts them) or backwards. With groups, both that order and frame order
    are regrouped by a stable counting sort, so the k-th row of a group in frame
    order takes the group's k-th row in the new order (``sort``, ``sort_by``,
    ``reverse``) or that row's place in its group (``arg_sort``, UInt32). Strings
    come back with a dictionary, as the passes read them.
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    data = one_array(array)
    n = len(data)
    order: np.ndarray[Any, Any] | None
    if func == "reverse":
        order = np.arange(n - 1, -1, -1, dtype=np.int64)
    else:
        descending, nulls_last = options
        order = rows_in_order([data] if by is None else by, descending, nulls_last)
        if order is None:  # already in that order
            order = np.arange(n, dtype=np.int64)
    if groups is not None and groups.ids is not None:  # both orders regrouped, aligned
        kernels, ids = _kernels(), groups.ids
        at, _ = kernels.counting_order(ids[order], groups.count, empty_array(n, np.int64))
        order = order[at]
        frame_rows, starts = groups.rows_by_group()
        if func == "arg_sort":  # each row's place in its group, then as the k-th row takes it
            place = np.empty(n, dtype=np.int64)
            place[frame_rows] = np.arange(n) - np.repeat(starts[:-1], np.diff(starts))
            index = np.empty(n, dtype=np.uint32)
            index[frame_rows] = place[order]
            return pa.array(index)
        rows = np.empty(n, dtype=np.int64)
        rows[frame_rows] = order
        order = rows
    elif func == "arg_sort":
        return pa.array(order.astype(np.uint32))
    moved = take(data, order)
    if pa.types.is_string(moved.type) or pa.types.is_large_string(moved.type):
        moved = pc.dictionary_encode(moved)  # the passes read strings as int32 codes
    elif pa.types.is_dictionary(moved.type) and moved.type.index_type != pa.int32():
        moved = moved.cast(pa.dictionary(pa.int32(), moved.type.value_type,
                                         moved.type.ordered))  # an Enum's narrower codes
    return moved


def _packed(keys: np.ndarray[Any, Any], owners: np.ndarray[Any, Any] | None,
            count: int) -> tuple[np.ndarray[Any, Any], int, int] | None:
    """One int64 word per key: ``owner``, ``key - min`` and position in bit fields.

    Returns the words and the widths of the position and key fields where the three
    fit in 63 bits, ``None`` where they do not (most float columns). Sorting the words
    orders by group, key, then position.
    """
    m = len(keys)
    if m == 0:
        return None
    lo = int(keys.min())
    row_bits = (m - 1).bit_length()
    key_bits = (int(keys.max()) - lo).bit_length()
    group_bits = (count - 1).bit_length()
    if row_bits + key_bits + group_bits > 63:
        return None
    words = (keys - np.int64(lo)) << np.int64(row_bits)
    words |= np.arange(m, dtype=np.int64)
    if owners is not None and group_bits:
        words |= owners.astype(np.int64) << np.int64(key_bits + row_bits)
    return words, row_bits, key_bits


def rows_in_order(arrays: list[pa.Array | pa.ChunkedArray], descending: bool | tuple[bool, ...],
                  nulls_last: bool | tuple[bool, ...]) -> np.ndarray[Any, Any] | None:  # fmt: skip
    """The rows sorted by ``arrays`` as polars' ``over(order_by=...)`` sorts them (int64).

    Stable (rows of equal keys stay in frame order), by the first array, then the
    next; each ascending unless ``descending``, its nulls first unless ``nulls_last``
    (wherever the values go; each flag one for all arrays or one per array, as
    ``sort_by`` takes them); values ranked as polars sorts them (`_rank_keys`: NaN
    after every number, ``-0.0`` equal to ``0.0``, strings by their UTF-8 bytes,
    categoricals by their text), an Enum by the order of its categories. None where
    the rows already stand in that order (a time series sorted by its time): no sort,
    and the caller takes no copy of its columns.
    """
    columns: list[np.ndarray[Any, Any]] = []  # the most significant first
    downward = descending if isinstance(descending, tuple) else (descending,) * len(arrays)
    last = nulls_last if isinstance(nulls_last, tuple) else (nulls_last,) * len(arrays)
    for array, down, nulls_after in zip(arrays, downward, last, strict=True):
        valid, keys = value_keys(array)
        if down:
            keys = ~keys  # reverses the order of every int64, the smallest included
        if not valid.all():  # (a column without nulls orders nothing by its validity)
            columns.append(valid if not nulls_after else ~valid)  # False sorts first
        columns.append(keys)
    if _in_order(columns):
        return None
    return np.lexsort(columns[::-1]).astype(np.int64)  # np.lexsort: the last key first


def _in_order(columns: list[np.ndarray[Any, Any]]) -> bool:
    """Whether each row's keys (``columns``, most significant first) are >= the row before's."""
    if not columns or len(columns[0]) < 2:
        return True
    ahead: np.ndarray[Any, Any] | None = None  # pairs a more significant key orders already
    for k, keys in enumerate(columns):
        before, after = keys[:-1], keys[1:]
        fine = before <= after
        if ahead is not None:
            fine |= ahead
        if not fine.all():
            return False
        if k == len(columns) - 1:
            break
        step = before < after
        ahead = step if ahead is None else ahead | step
        if ahead.all():
            break
    return True


def value_keys(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray[Any, Any],
                                                           np.ndarray[Any, Any]]:
    """Each row's validity, and an int64 key per row ordered as polars sorts the values.

    Keys as `_rank_keys` makes them (0 at a null row); an Enum by its categories' order;
    a Null-typed column all null (every key equal).
    Read only: an int64 column without nulls gives its own buffer.
    """
    data = one_array(array)
    if pa.types.is_null(data.type):  # every row null (and no bitmap to say so): keys all equal
        return np.zeros(len(data), dtype=np.bool_), np.zeros(len(data), dtype=np.int64)
    valid = _validity(data)
    if pa.types.is_dictionary(data.type) and data.type.ordered:  # an Enum
        indices = data.indices.fill_null(0).to_numpy(zero_copy_only=False)
        return valid, np.asarray(indices).astype(np.int64)
    if len(data) and not data.null_count:
        return valid, _rank_keys(data)
    keys = np.zeros(len(data), dtype=np.int64)
    if valid.any():
        keys[valid] = _rank_keys(data)
    return valid, keys


def _rank_keys(data: pa.Array) -> np.ndarray[Any, Any]:
    """int64 keys ordered as polars ranks the non-null values of ``data``, one per value.

    Floats by their bits, flipped so integer order is float order (one NaN above
    ``+inf``, ``-0.0`` read as ``0.0``); unsigned 64-bit integers with the top bit
    flipped; strings and categories by the dense rank of their text.
    """
    import pyarrow.compute as pc  # on first use: its import is slow

    if pa.types.is_dictionary(data.type):
        data = data.dictionary_decode()  # categories by their text, as polars ranks them
    if pa.types.is_string_view(data.type):
        data = data.cast(pa.large_string())  # a string layout pyarrow ranks
    elif pa.types.is_binary_view(data.type):
        data = data.cast(pa.large_binary())
    if pa.types.is_temporal(data.type) or pa.types.is_boolean(data.type):
        data = integer_values(data)
    if data.null_count:
        data = data.drop_null()
    if not pa.types.is_integer(data.type) and not pa.types.is_floating(data.type):
        ranked = pc.rank(data, sort_keys="ascending", tiebreaker="dense")
        return np.asarray(ranked.to_numpy(zero_copy_only=False)).astype(np.int64)
    values = np.asarray(data.to_numpy(zero_copy_only=False))
    if values.dtype == np.uint64:
        return (values ^ np.uint64(1 << 63)).view(np.int64)
    if values.dtype.kind in "iu":
        return values.astype(np.int64, copy=False)
    floats = values.astype(np.float64)  # float16/32 widen exactly
    floats = np.where(np.isnan(floats), np.nan, floats) + 0.0  # one NaN; -0.0 + 0.0 is 0.0
    bits = floats.view(np.int64)
    return bits ^ ((bits >> 63) & np.int64(0x7FFF_FFFF_FFFF_FFFF))


def _group_kernels() -> Any:
    """The compiled group helpers (numba is imported, and they compile or load, on first use)."""
    from colbridge.backends import _group_kernels as kernels

    return kernels


def host_scan(func: str, options: tuple[Any, ...], array: pa.Array | pa.ChunkedArray,
              groups: GroupIds | None,
              dictionary: Callable[[tuple[Any, ...]], pa.Array] | None = None,
              ) -> pa.Array:  # fmt: skip
    """A scan of `HOST_SCANS` (rank, interpolate, rolling quantiles, flags) of ``array``.

    ``to_string`` and ``concat_str`` read each row alone (groups change nothing) and
    make a dictionary array; ``concat_str``'s keys index the strings of its arguments'
    dictionary specs, which ``dictionary`` builds (the segment's `TableBuilder`).
    """
    if func == "to_string":
        return format_as_strings(array, *options)
    if func == "concat_str":
        assert dictionary is not None
        separator, ignore_nulls, specs = options
        return join_strings(array, [dictionary(s) for s in specs], separator, ignore_nulls)
    if func == "rank":
        return rank(array, options, groups)
    if func in PERMUTATIONS:
        return permuted(func, array, options, groups)
    if func == "interpolate":
        return interpolate(array, options, groups)
    if func == "rolling_quantile":
        return rolling_quantile(array, options, groups)
    if func in ("rolling_skew", "rolling_kurtosis"):
        return rolling_moment(func, array, options, groups)
    if func == "rolling_rank":
        return rolling_rank(array, options, groups)
    if func == "ewm_sum":
        return ewm_sum(array, options, groups)
    return distinct_flags(func, array, groups)


def ewm_sum(array: pa.Array | pa.ChunkedArray, options: tuple[Any, ...],
            groups: GroupIds | None) -> pa.Array:  # fmt: skip
    """Polars' ``ewm_sum`` of ``array`` (Float64 or Float32: typing casts it), per group."""
    alpha, min_samples, ignore_nulls = options
    data = one_array(array)
    n = len(data)
    compute = np.dtype(data.type.to_pandas_dtype())
    values, valid = _inputs("ewm_sum", data, compute)
    out, out_valid = _outputs("ewm_sum", n, compute)
    order, tasks = segment_tasks(groups, n, split=False)
    _kernels().ewm_sum(values, valid, order, tasks, compute.type(alpha), min_samples,
                       ignore_nulls, out, out_valid)  # fmt: skip
    return pa.array(out, mask=None if out_valid.all() else ~out_valid)


def rolling_rank(array: pa.Array | pa.ChunkedArray, options: tuple[Any, ...],
                 groups: GroupIds | None) -> pa.Array:  # fmt: skip
    """Polars' ``rolling_rank`` of ``array`` (typing made it Int64, UInt64 or a float).

    The compiled kernel (`_scan_kernels.rolling_sorted`) keeps each window's values
    sorted, as `rolling_quantile`; Float64 for ``"average"``, UInt32 otherwise.
    """
    window, min_samples, center, method = options
    codes = {"average": 0, "min": 1, "max": 2, "dense": 3}

    def rank(values: Any, valid: Any, order: Any, tasks: Any, width: int, offset: int,
             out: Any, out_valid: Any) -> None:  # fmt: skip
        _kernels().rolling_sorted(values, valid, order, tasks, width, min_samples, offset,
                                  0.5, 0, codes[method], np.float64(0.5), out,
                                  out_valid)  # fmt: skip

    out, out_valid = _host_window(array, groups, window, center, np.dtype(np.float64), rank)
    ranks = out if method == "average" else out.astype(np.uint32)
    return pa.array(ranks, mask=None if out_valid.all() else ~out_valid)


_Window = Callable[[Any, Any, Any, Any, int, int, Any, Any], None]


def _host_window(array: pa.Array | pa.ChunkedArray, groups: GroupIds | None, window: int,
                 center: bool, out_dtype: np.dtype[Any] | None, kernel: _Window
                 ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:  # fmt: skip
    """A trailing (or centred) window kernel of the host scans, and its results in frame order.

    ``kernel(values, valid, order, tasks, window, offset, out, out_valid)`` runs over
    chunks of the frame (each reading the window before it again) or over the groups,
    each group's rows first taken side by side; ``out_dtype`` None: the values' type.
    """
    data = one_array(array)
    n = len(data)
    window = window_within(window, center, n)
    compute = np.dtype(data.type.to_pandas_dtype())
    values, valid = _inputs("rolling", data, compute)
    out, out_valid = _outputs("rolling", n, compute if out_dtype is None else out_dtype)
    order, tasks = segment_tasks(groups, n, split=True, halo=window)
    by_key = order
    if by_key is not None:  # each group's rows side by side, as `run_scan` reads them
        taken, valid = in_group_order(by_key, values, valid)
        values, order = read_only(taken), None
    kernel(values, valid, order, tasks, window, window // 2 if center else window - 1, out,
           out_valid)  # fmt: skip
    if by_key is not None:
        out, out_valid = to_frame_order(by_key, out, out_valid)
    return out, out_valid


def rolling_moment(func: str, array: pa.Array | pa.ChunkedArray, options: tuple[Any, ...],
                   groups: GroupIds | None) -> pa.Array:  # fmt: skip
    """Polars' ``rolling_skew``/``rolling_kurtosis`` of ``array`` (Float64 or Float32).

    The compiled kernel (`_scan_kernels.rolling_moment`) takes each window exactly;
    chunks of the frame (each reading the window before it again) or groups run on
    every core.
    """
    window, min_samples, center, *flags = options
    kurtosis = func == "rolling_kurtosis"
    fisher, bias = (flags[0], flags[1]) if kurtosis else (True, flags[0])

    def moment(values: Any, valid: Any, order: Any, tasks: Any, width: int, offset: int,
               out: Any, out_valid: Any) -> None:  # fmt: skip
        _kernels().rolling_moment(values, valid, order, tasks, width, min_samples, offset,
                                  kurtosis, bias, fisher, out, out_valid)  # fmt: skip

    out, out_valid = _host_window(array, groups, window, center, None, moment)
    return pa.array(out, mask=None if out_valid.all() else ~out_valid)


def rolling_quantile(array: pa.Array | pa.ChunkedArray, options: tuple[Any, ...],
                     groups: GroupIds | None) -> pa.Array:  # fmt: skip
    """Polars' ``rolling_quantile`` of ``array`` (Float64 or Float32, typing casts it).

    The compiled kernel (`_scan_kernels.rolling_sorted`) keeps each window's values
    sorted; chunks of the frame (each reading the window before it again) or groups
    run on every core.
    """
    from colbridge.expr.nodes import QUANTILE_METHODS

    window, min_samples, center, quantile, method = options
    half = np.dtype(one_array(array).type.to_pandas_dtype()).type(0.5)

    def quantiles(values: Any, valid: Any, order: Any, tasks: Any, width: int, offset: int,
                  out: Any, out_valid: Any) -> None:  # fmt: skip
        _kernels().rolling_sorted(values, valid, order, tasks, width, min_samples, offset,
                                  quantile, QUANTILE_METHODS.index(method), -1, half, out,
                                  out_valid)  # fmt: skip

    out, out_valid = _host_window(array, groups, window, center, None, quantiles)
    return pa.array(out, mask=None if out_valid.all() else ~out_valid)


def distinct_flags(func: str, array: pa.Array | pa.ChunkedArray,
                   groups: GroupIds | None) -> pa.Array:  # fmt: skip
    """Polars' ``is_duplicated``/``is_unique``/``is_first_distinct``/``is_last_distinct``.

    The values (per group of ``groups``) are factorized as group keys are (null and NaN
    each one value, ``-0.0`` as ``0.0``, strings by their text); each row's flag reads
    its value's count, first row or last row. Never null.
    """
    data = one_array(array)
    if pa.types.is_string_view(data.type):
        data = data.cast(pa.large_string())  # the layout pyarrow's hash table reads
    n = len(data)
    keys = [data] if groups is None or groups.ids is None else [pa.array(groups.ids), data]
    values = factorize(keys, n)
    ids = values.ids if values.ids is not None else np.zeros(n, dtype=np.int32)
    at = np.arange(n, dtype=np.int64)
    if func in ("is_duplicated", "is_unique"):
        counts = np.bincount(ids, minlength=values.count)[ids]
        flags = counts > 1 if func == "is_duplicated" else counts == 1
    elif func == "is_first_distinct":
        flags = values.first_rows[ids] == at
    else:
        flags = values.last_rows()[ids] == at
    return pa.array(flags, type=pa.bool_())


def interpolate(array: pa.Array | pa.ChunkedArray, options: tuple[Any, ...],
                groups: GroupIds | None) -> pa.Array:  # fmt: skip
    """Polars' ``interpolate`` of ``array`` (per group of ``groups``), on the host.

    Each null between two non-null values of its group takes, ``k`` rows past the
    value before (``low``) and ``steps`` rows before the value after (``high``):
    ``low + k * ((high - low) / steps)`` (``linear``: floats in their type, integers in
    Float64, temporal values in their integers with the step truncated toward zero,
    as polars' integer arithmetic), or ``low`` for ``k < ceil(steps / 2)`` and ``high``
    from there (``nearest``, in the column's type). Others stay null. Temporal values
    come back as their integers (the kernels' form).
    """
    (method,) = options
    data = one_array(array)
    temporal = pa.types.is_temporal(data.type)
    if temporal:
        data = integer_values(data)
    n = len(data)
    valid = _validity(data)
    values = np.asarray(data.fill_null(0).to_numpy(zero_copy_only=False))
    if method == "linear" and not temporal and values.dtype.kind != "f":
        values = values.astype(np.float64)  # polars casts integers to Float64 first
    # the rows of each group together, in frame order (a stable counting sort by group);
    # positions in that order
    if groups is None or groups.ids is None:
        order = np.arange(n)
    else:
        order, _ = groups.rows_by_group()
    owner = np.zeros(n, dtype=np.int64) if groups is None or groups.ids is None \
        else groups.ids[order].astype(np.int64)  # fmt: skip
    ok = valid[order]
    at = np.arange(n, dtype=np.int64)
    start = np.ones(n, dtype=np.bool_)
    start[1:] = owner[1:] != owner[:-1]
    first = np.maximum.accumulate(np.where(start, at, 0)) if n else at  # the group's first
    before = np.maximum.accumulate(np.where(ok, at, -1)) if n else at
    end = np.ones(n, dtype=np.bool_)
    end[:-1] = start[1:]
    last = np.minimum.accumulate(np.where(end, at, n)[::-1])[::-1] if n else at
    after = np.minimum.accumulate(np.where(ok, at, n)[::-1])[::-1] if n else at
    gap = ~ok & (before >= first) & (after <= last)  # a null with a value on both sides
    low_at, high_at = order[before[gap]], order[after[gap]]
    low, high = values[low_at], values[high_at]
    steps, k = after[gap] - before[gap], at[gap] - before[gap]
    out = values.copy()
    if method == "nearest":
        filled = np.where(k < (steps + 1) // 2, low, high)
    elif temporal:  # integer arithmetic: the step truncated toward zero (Rust's `/`)
        wide_low = low.astype(np.int64)
        delta = high.astype(np.int64) - wide_low
        slope = np.where(delta >= 0, delta // steps, -((-delta) // steps))
        filled = (wide_low + k * slope).astype(values.dtype)
    else:
        t = values.dtype.type
        with np.errstate(invalid="ignore", over="ignore"):
            slope = (high - low) / steps.astype(values.dtype)
            filled = low + k.astype(values.dtype) * slope
        filled = filled.astype(t)
    rows = order[gap]
    out[rows] = filled
    now_valid = valid.copy()
    now_valid[rows] = True
    return pa.array(out, mask=None if now_valid.all() else ~now_valid)


def _shift_whole(arg: pa.Array, options: tuple[Any, ...], result: DType) -> pa.Array | None:
    """A shift of the whole frame as Arrow moves it: the rows that stay, then the edge.

    One copy of the values and the bitmap (``concat_arrays``), with no validity to unpack
    or pack; None where the argument is not already of the result's physical type (the
    kernel then converts it).
    """
    parts = _shift_parts(arg, options, result)
    return None if parts is None else pa.concat_arrays(parts)


def shifted_in_place(arg: pa.Array, options: tuple[Any, ...], result: DType) -> pa.ChunkedArray:
    """A shift of the whole frame without a copy: the edge, then a slice of ``arg``, as chunks.

    What polars' ``shift`` gives too (two chunks). For a shift the kernels read in place
    (`colbridge.plan.planner.Segment.lagged`) whose result is also wanted as a column.
    """
    parts = _shift_parts(arg, options, result)
    if parts is None:  # not of the result's physical type: converted by the kernel
        made = run_scan("shift", options, arg, result, result, None)  # no fill: one type
        return pa.chunked_array([made], made.type)
    return pa.chunked_array(parts, parts[0].type)


def lag_text(scan: Scan) -> str:
    """How the passes read a shift they read in place (`explain()`, the compute's report)."""
    steps, fill = scan.options
    column = scan.arg.name if isinstance(scan.arg, Column) else repr(scan.arg)
    filled = "" if fill is None else f", {fill!r} on the rows shifted in"
    return (f"the passes read `{column}` {abs(steps)} row(s) "
            f"{'back' if steps > 0 else 'ahead'}{filled}")  # fmt: skip


def _shift_parts(arg: pa.Array, options: tuple[Any, ...], result: DType) -> list[pa.Array] | None:
    """The edge and the rows that stay of a whole-frame shift, in order (None: see above)."""
    steps, fill = options
    physical = pa.bool_() if result is DType.BOOL else pa.from_numpy_dtype(np.dtype(result.numpy))
    if pa.types.is_temporal(arg.type) and arg.type.bit_width == physical.bit_width:
        arg = arg.view(physical)  # dates and times move as their integers
    if arg.type != physical:
        return None
    n = len(arg)
    edge_rows = min(abs(steps), n)
    edge = pa.nulls(edge_rows, physical) if fill is None \
        else pa.repeat(pa.scalar(fill, physical), edge_rows)  # fmt: skip
    kept = arg.slice(0, n - edge_rows) if steps >= 0 else arg.slice(edge_rows)
    return [edge, kept] if steps >= 0 else [kept, edge]


@dataclass(frozen=True)
class StringRanks:
    """The order of a dictionary's strings, for the scans that compare them.

    A string column's codes are numbered by first appearance, not by value, so
    ``cum_min``/``cum_max`` of strings run over each code's rank instead (equal
    strings, in entries of their own, rank alike) and map the ranks back to codes.
    Strings compare by their UTF-8 bytes, as polars compares them.
    """

    #: per code (dictionary entry), its dense rank among the strings
    rank: np.ndarray[Any, Any]
    #: per rank, a code of that string
    code: np.ndarray[Any, Any]

    @classmethod
    def of(cls, dictionary: pa.Array) -> StringRanks:
        """The ranks of ``dictionary``'s entries (a null entry ranks last: no row reads it)."""
        import pyarrow.compute as pc

        if not len(dictionary):  # every row null: code 0 is read under them only
            return cls(np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
        ranked = pc.rank(dictionary, sort_keys="ascending", tiebreaker="dense")
        rank = np.asarray(ranked.to_numpy(zero_copy_only=False), dtype=np.int64) - 1
        code = np.zeros(int(rank.max()) + 1, dtype=np.int64)
        code[rank] = np.arange(len(rank))
        return cls(rank, code)

    def ranks_of(self, codes: pa.Array) -> pa.Array:
        """Each row's rank where it has a code (its validity kept), in the codes' type."""
        return self._mapped(codes, self.rank)

    def codes_of(self, ranks: pa.Array) -> pa.Array:
        """Each row's code where it has a rank (its validity kept)."""
        return self._mapped(ranks, self.code)

    @staticmethod
    def _mapped(array: pa.Array, table: np.ndarray[Any, Any]) -> pa.Array:
        valid = _validity(array)
        values = np.asarray(array.fill_null(0).to_numpy(zero_copy_only=False))
        mapped = table[np.where(valid, values, 0)].astype(values.dtype, copy=False)
        return pa.array(mapped, type=array.type, mask=None if valid.all() else ~valid)


def with_dictionary(codes: pa.Array, dictionary: pa.Array) -> pa.Array:
    """The codes a scan moved, with the dictionary they index (a string scan's result).

    No row is checked: the codes are the scan's own, each one in range or under a null.
    """
    return pa.DictionaryArray.from_arrays(codes, dictionary, safe=False)


class ScanStreams:
    """Scans carried across the pieces of one pass over a stream (record batches in order).

    Each scan of the plan keeps its `Carry` here from batch to batch, with its groups
    numbered by key value (a stream's batches number their groups each their own way),
    so that batch after batch gives what one scan over the whole data gives. Only
    scans that never look ahead can be carried (`Scan.looks_ahead`); the job checks
    that before it reads any data.

    A scan that moves strings (a shift, a fill of a string or categorical column)
    runs over codes, and each batch numbers its strings its own way, so a code held
    in the carry would mean nothing in the next batch. Such a scan carries the
    strings themselves: the values its carry still holds (a shift's last rows, a
    fill's last value per group), whose codes in the carry are their positions among
    them. A batch is scanned against the carried strings followed by its own
    dictionary (its codes offset by the number carried), its result has that
    dictionary, and the strings its carry then holds are kept for the next batch.
    """

    def __init__(self) -> None:
        self._carries: dict[Any, Carry] = {}
        self._slots: dict[Any, dict[tuple[Any, ...], int]] = {}
        #: of scans that move strings: the strings their carry's codes index
        self._strings: dict[Any, pa.Array] = {}
        self._saved: tuple[dict[Any, Carry], dict[Any, dict[tuple[Any, ...], int]],
                           dict[Any, pa.Array]] = ({}, {}, {})  # fmt: skip

    def checkpoint(self) -> None:
        """Remember the state before a batch, to `rewind` to if the batch runs again.

        A batch that fails on the GPU runs again on the CPU: it must start from the
        state the batch before it left, not from what the failed run made of it.
        """
        self._saved = (
            {w: Carry(c.func, c.options, c.compute, [t.copy() for t in c.tables], c.starts)
             for w, c in self._carries.items()},
            {w: dict(s) for w, s in self._slots.items()},
            dict(self._strings),  # Arrow arrays never change: kept as they are
        )  # fmt: skip

    def rewind(self) -> None:
        """Go back to the state of the last `checkpoint`."""
        carries, slots, strings = self._saved
        self._carries = {w: Carry(c.func, c.options, c.compute, [t.copy() for t in c.tables],
                                  c.starts) for w, c in carries.items()}  # fmt: skip
        self._slots = {w: dict(s) for w, s in slots.items()}
        self._strings = dict(strings)

    def run(self, where: Any, func: str, options: tuple[Any, ...], arg: pa.Array,
            arg_type: DType, result: DType, groups: GroupIds | None,
            keys: list[pa.Array], dictionary: pa.Array | None = None) -> pa.Array:  # fmt: skip
        """The scan over this batch's rows, going on from the batches before it.

        ``where`` names the scan within the plan; ``groups`` and ``keys`` (the key
        columns, empty without keys) are this batch's grouping. ``dictionary``: the
        scan moves strings, ``arg`` holds their codes into it (this batch's), and the
        result is a dictionary array (see the class docstring).
        """
        if _ring(func, options) is None:  # a shift by 0, a window of 0 rows: no state
            out = run_scan(func, options, arg, arg_type, result, groups)
            return out if dictionary is None else with_dictionary(out, dictionary)
        if looks_ahead(func, options):  # pragma: no cover - refused when the job starts
            msg = f"`{func}` looks ahead and cannot be carried across batches"
            raise AssertionError(msg)
        n = len(arg)
        compute = _compute_type(arg_type, func)
        values, valid = _inputs(func, arg, compute)
        combined = None
        if dictionary is not None:
            carried = self._strings.get(where)
            if carried is not None and len(carried):
                # this batch's codes come after the carried strings
                values = read_only(values + compute.type(len(carried)))
                combined = pa.concat_arrays([carried, dictionary.cast(carried.type)])
            else:
                combined = dictionary
        out, out_valid = _outputs(func, n, compute)
        ids = self._slot_ids(where, groups, keys, n)
        carry = self._carries.get(where)
        if carry is None:
            carry = self._carries[where] = new_carry(*_kernel_call(func, options), 0, compute)
        carry.grow(int(ids.max()) + 1 if n else 0)
        ranks = None
        if combined is not None and func in STRING_COMPARISONS:
            # compared by rank among this batch's strings (the carried ones among them)
            ranks = StringRanks.of(combined)
            values = read_only(ranks.rank[np.where(valid, values, 0)].astype(compute))
            _recode(carry, ranks.rank)
        run_carried(carry, values, valid, ids, out, out_valid)
        if func in _NULLS_KEPT:  # the kernel leaves their flags unwritten: the argument's
            out_valid = valid
        if ranks is not None:
            out = ranks.code[np.where(out_valid, out, 0)].astype(compute, copy=False)
            _recode(carry, ranks.code)
        scanned = _result(func, out, out_valid, result)
        if combined is None:
            return scanned
        self._strings[where] = _keep_strings(carry, combined)
        return with_dictionary(scanned, combined)

    def _slot_ids(self, where: Any, groups: GroupIds | None, keys: list[pa.Array],
                  n: int) -> np.ndarray[Any, Any]:  # fmt: skip
        """Each row's group as a slot numbered across batches, by the group's key values."""
        if groups is None or groups.ids is None or not keys:
            return np.zeros(n, dtype=np.int32)
        slots = self._slots.setdefault(where, {})
        first = groups.first_rows
        columns = [k.take(pa.array(first)).to_pylist() if len(first) else [] for k in keys]
        local = np.empty(groups.count, dtype=np.int32)
        for g, values in enumerate(zip(*columns, strict=True)):
            key = tuple(_key_value(v) for v in values)
            local[g] = slots.setdefault(key, len(slots))
        ids: np.ndarray[Any, Any] = local[groups.ids]
        return ids


def _held(carry: Carry) -> np.ndarray[Any, Any]:
    """Which entries of a carry's first table hold a value a later row may read.

    That table holds the values (a shift's ring, a fill's last value, a running
    minimum); a shift's ring flags its rows that were not null, a fill has a value
    once its group had one, a running minimum once its group saw a value.
    """
    if carry.func in ("forward_fill", "backward_fill"):
        held: np.ndarray[Any, Any] = carry.tables[1] >= 0
        return held
    if carry.func in ("shift", "cum_min", "cum_max"):
        flags: np.ndarray[Any, Any] = carry.tables[1]
        return flags
    msg = f"`{carry.func}` does not move values"  # pragma: no cover - typing allows none
    raise AssertionError(msg)


def _recode(carry: Carry, table: np.ndarray[Any, Any]) -> None:
    """Map the values ``carry`` holds through ``table`` (codes to ranks, or back)."""
    codes = carry.tables[0]
    held = _held(carry)
    codes[held] = table[codes[held]]


def _keep_strings(carry: Carry, dictionary: pa.Array) -> pa.Array:
    """The strings ``carry`` holds the codes of (into ``dictionary``), each once.

    The carry's codes become their positions among them, the numbering the next batch
    puts first. Entries that hold nothing are set to 0 (no row reads them as a value).
    """
    codes = carry.tables[0]
    held = _held(carry)
    kept, positions = np.unique(codes[held], return_inverse=True)
    codes[~held] = 0
    codes[held] = positions.reshape(-1)
    return dictionary.take(pa.array(kept.astype(np.int64, copy=False)))


def _key_value(value: Any) -> Any:
    """A key value as a dictionary key: NaN is one key, -0.0 is 0.0 (as the grouping has it)."""
    if isinstance(value, float):
        if value != value:
            return ("nan",)
        if value == 0.0:
            return 0.0
    return value
