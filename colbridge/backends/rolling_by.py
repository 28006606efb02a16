"""Polars' time-based rolling windows (``rolling_*_by``), computed on the host.

Stage: backends. The executor hands over the values and the ``by`` column with the
rows already in ascending ``by`` order (a stable sort, nulls first: the rows of
``over(order_by=...)``, `colbridge.backends.scans.rows_in_order`), and the group ids
in that order. Here each row's window start is computed (`minus_duration`: the
``by`` value less the window, with polars' calendar arithmetic), the window bounds
by two pointers per group, and the aggregation by a compiled kernel
(`colbridge.backends._rolling_by_kernels`), groups on every core. With keys, each
group's rows are first taken side by side (values, ``by``, window starts), and the
results put back at their rows.

As polars does: ``by`` is read as a datetime (a date as microseconds, an integer as
nanoseconds, so ``"2i"`` is 2); a row whose ``by`` is null is null and in no
window; a UInt64 ``by`` beyond Int64 is refused (polars' cast raises).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.backends.groups import GroupIds, in_group_order, raw_values, to_frame_order
from colbridge.backends.scans import segment_tasks
from colbridge.errors import ComputeError
from colbridge.expr.nodes import QUANTILE_METHODS, ROLLING_CLOSED, rolling_by_params
from colbridge.memory.host import empty_array, one_array
from colbridge.types import DType
from colbridge.types.durations import fixed_span, minus_duration, parse_duration

__all__ = ["ewm_mean_by", "rolling_by"]

_MICROS_PER_DAY = 86_400_000_000


def _kernels() -> Any:
    """The compiled kernels (numba is imported, and they compile or load, on first use)."""
    from colbridge.backends import _rolling_by_kernels

    return _rolling_by_kernels


def _flags(array: pa.Array) -> np.ndarray[Any, Any]:
    """One validity flag per row."""
    if not array.null_count:
        return np.ones(len(array), dtype=np.bool_)
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)


def _numbers(array: pa.Array, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """The values of ``array`` as ``dtype`` (temporal values as their integers).

    In place where the type is already ``dtype``: a null row's value is whatever its
    slot holds (the kernels read a row's value only where it is valid).
    """
    t = array.type
    if pa.types.is_temporal(t):
        array = array.view(pa.int64() if t.bit_width == 64 else pa.int32())
    if pa.types.is_boolean(t):
        array = array.cast(pa.uint8())
    values = raw_values(array) if pa.types.is_primitive(array.type) else \
        np.asarray(array.fill_null(0).to_numpy(zero_copy_only=False))  # fmt: skip
    return values.astype(dtype, copy=False)


def _by_values(by: pa.Array, kind: str, func: str) -> np.ndarray[Any, Any]:
    """``by`` as int64 in its datetime unit (a date's days as microseconds)."""
    if pa.types.is_uint64(by.type):
        raw = np.asarray(by.fill_null(0).to_numpy(zero_copy_only=False))
        if (raw > np.iinfo(np.int64).max).any():
            msg = (
                f"`{func}`: a `by` value is beyond Int64's range (polars casts `by` to "
                "Int64 and fails); keep `by` below 2**63"
            )
            raise ComputeError(msg)
    values = _numbers(by, np.dtype(np.int64))
    if kind == "date":
        values = values * _MICROS_PER_DAY
    return values


#: rows per chunk of a segment without keys: long against the work a chunk repeats (its
#: first window, summed afresh), short enough to keep every core busy
_CHUNK_ROWS = 1 << 16


def _chunks(by: np.ndarray[Any, Any], by_valid: np.ndarray[Any, Any],
            lower: np.ndarray[Any, Any], n: int) -> np.ndarray[Any, Any]:  # fmt: skip
    """Tasks ``(0, n, c0, c1)`` for the rows in ``by`` order: chunks on every core.

    Each cut is where a run of equal ``by`` starts (those rows share one window). One
    task where the rows are few, where null ``by`` are not all first, or where the
    windows' lower bounds (``lower``; empty: ``by`` less a fixed span, which rise with
    it) go down somewhere (a zone's clocks turned back): there the walk's start carries
    what a chunk could not find by itself (`window_bounds`).
    """
    whole = np.array([[0, n, 0, n]], dtype=np.int64)
    if n < 2 * _CHUNK_ROWS:
        return whole
    first = n - int(np.count_nonzero(by_valid))  # the null rows, all first if in order
    values, bounds = by[first:], lower[first:]
    if not by_valid[first:].all() or (len(lower) and not (bounds[1:] >= bounds[:-1]).all()):
        return whole
    cuts = np.arange(first + _CHUNK_ROWS, n, _CHUNK_ROWS, dtype=np.int64)
    cuts = np.unique(first + np.searchsorted(values, by[cuts], side="left"))  # run starts
    edges = np.concatenate([[0], cuts[cuts > 0], [n]]).astype(np.int64)
    tasks = np.zeros((len(edges) - 1, 4), dtype=np.int64)
    tasks[:, 1] = n
    tasks[:, 2], tasks[:, 3] = edges[:-1], edges[1:]
    return tasks


def rolling_by(func: str, options: tuple[Any, ...], array: pa.Array | pa.ChunkedArray,
               by: pa.Array | pa.ChunkedArray, groups: GroupIds | None,
               result: DType) -> pa.Array:  # fmt: skip
    """Polars' ``func`` (a ``rolling_*_by``) of ``array`` by ``by``, rows in ``by`` order.

    ``options`` are the typed scan's (`rolling_by_params`); ``groups`` the group ids
    in the same order (None: one group); ``result`` the scan's type, which typing has
    cast the values to (min and max keep theirs: booleans come back as booleans).
    """
    params = rolling_by_params(func, options)
    data, by_data = one_array(array), one_array(by)
    n = len(data)
    kind, unit, tz = params["by_spec"]
    by_valid = _flags(by_data)
    by_int = _by_values(by_data, kind, func)
    duration = parse_duration(params["window"])
    every = bool(by_valid.all())
    # each row's lower end: `by` less a fixed span, computed in the kernel; or, with
    # calendar arithmetic, an array of them (`lower`, empty where the span is fixed)
    span = fixed_span(duration, unit, tz)
    lower = np.zeros(0 if every or span is not None else n, dtype=np.int64)
    if span is None and by_valid.any():
        try:
            if every:  # no rows to pick: the starts of all, without copies
                lower = minus_duration(by_int, duration, unit, tz)
            else:
                lower[by_valid] = minus_duration(by_int[by_valid], duration, unit, tz)
        except ComputeError as exc:  # as polars: a window start the zone's clocks make unclear
            msg = (
                f"`{func}` with window {params['window']!r}: {exc} (polars raises too); "
                "use a fixed window (hours: `\"24h\"`) or convert `by` to a zone without "
                "that clock change (`dt.convert_time_zone(\"UTC\")`)"
            )
            raise ComputeError(msg) from None
    kernels = _kernels()
    boolean = result is DType.BOOL
    target = np.dtype(np.uint8) if boolean else np.dtype(result.numpy)
    compute = target if target.kind == "f" else \
        np.dtype(np.uint64) if target == np.uint64 else np.dtype(np.int64)  # fmt: skip
    values = _numbers(data, compute)
    valid = _flags(data)
    # with keys: the rows by group, then put back
    order, tasks = segment_tasks(groups, n, split=False)
    if order is not None:
        # each group's rows side by side, once: the walks below read each row several
        # times, and a row of a group among a thousand groups' rows is a cache miss
        by_int, values, lower = in_group_order(order, by_int, values, lower)
        # flags of a column without nulls are all true in any order
        if by_data.null_count:
            by_valid = in_group_order(order, by_valid)[0]
        if data.null_count:
            valid = in_group_order(order, valid)[0]
    else:  # no keys: chunks of the frame on every core
        tasks = _chunks(by_int, by_valid, lower, n)
    # the windows' bounds and the outputs from the memory pool: pages already touched
    begins = empty_array(n, np.int64)
    ends = empty_array(n, np.int64)
    kernels.window_bounds(by_int, by_valid, lower, np.int64(span or 0), tasks,
                          ROLLING_CLOSED.index(params["closed"]), begins, ends)  # fmt: skip
    out = empty_array(n, compute)
    out[:] = 0  # (a null row's slot: written by no kernel)
    out_valid = empty_array(n, np.bool_)  # every kernel writes each row's flag
    min_samples = int(params["min_samples"])
    base = func[len("rolling_"):-len("_by")]
    if base in ("sum", "mean"):
        floating = compute.kind == "f"
        # polars sums floats in their own type, means in float64 (then rounded back)
        acc = np.float64(0) if base == "mean" else compute.type(0)
        specials = np.array([np.inf, -np.inf, np.nan] if floating else [0, 0, 0], dtype=compute)
        kernels.rolling_sum_by(values, valid, tasks, begins, ends, min_samples,
                               base == "mean", floating, acc, specials, out, out_valid)  # fmt: skip
    elif base in ("var", "std"):
        kernels.rolling_var_by(values, valid, tasks, begins, ends, min_samples,
                               int(params["ddof"]), base == "std", out, out_valid)  # fmt: skip
    elif base in ("min", "max"):
        nan = compute.type(np.nan) if compute.kind == "f" else compute.type(0)
        kernels.rolling_extreme_by(values, valid, tasks, begins, ends, min_samples,
                                   base == "max", nan, out, out_valid)  # fmt: skip
    else:
        kernels.rolling_quantile_by(values, valid, tasks, begins, ends, min_samples,
                                    float(params["quantile"]),
                                    QUANTILE_METHODS.index(params["interpolation"]),
                                    compute.type(0.5), out, out_valid)  # fmt: skip
    if order is not None:
        out, out_valid = to_frame_order(order, out, out_valid)
    mask = None if out_valid.all() else ~out_valid
    if boolean:
        return pa.array(out.astype(np.bool_), type=pa.bool_(), mask=mask)
    return pa.array(out.astype(target, copy=False), mask=mask)


def ewm_mean_by(func: str, options: tuple[Any, ...], array: pa.Array | pa.ChunkedArray,
                by: pa.Array | pa.ChunkedArray, groups: GroupIds | None,
                result: DType) -> pa.Array:  # fmt: skip
    """Polars' ``ewm_mean_by`` of ``array`` by ``by``, the rows in ``by`` order.

    ``options`` are the typed scan's: the half-life in nanoseconds and how ``by`` is
    read. As polars, ``by`` is taken in its own unit (a date as milliseconds, as
    polars casts it to a Datetime[ms]; an integer as it is) and the half-life
    truncated to that unit; ``groups`` are the group ids in the same order.
    """
    half_life_ns, (kind, unit, _) = options
    data, by_data = one_array(array), one_array(by)
    n = len(data)
    by_valid = _flags(by_data)
    by_int = _by_values(by_data, kind, func)
    if kind == "date":  # microseconds here (`_by_values`), milliseconds in polars
        by_int = by_int // 1_000
        per_unit = 1_000_000
    else:
        per_unit = 1 if kind == "int" else {"ns": 1, "us": 1_000, "ms": 1_000_000}[unit]
    compute = np.dtype(result.numpy)
    values, valid = _numbers(data, compute), _flags(data)
    order, tasks = segment_tasks(groups, n, split=False)  # with keys: rows by group
    if order is not None:  # each group's rows side by side, put back after
        by_int, values, by_valid, valid = in_group_order(order, by_int, values, by_valid, valid)
    out = empty_array(n, compute)
    out_valid = empty_array(n, np.bool_)
    _kernels().ewm_mean_by(values, valid, by_int, by_valid, tasks,
                           np.int64(half_life_ns // per_unit), compute.type(0.5), out,
                           out_valid)  # fmt: skip
    if order is not None:
        out, out_valid = to_frame_order(order, out, out_valid)
    return pa.array(out, mask=None if out_valid.all() else ~out_valid)
