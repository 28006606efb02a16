"""Ordered expressions (shift, diff, cum_sum, rolling, ewm; plain and ``over``) end to end.

Run: python benchmarks/ordered.py [--sizes 1e7] [--groups 1e3] [--workloads NAME,...]
                                  [--repeats 5] [--json out.json]

(``--size`` is the same as ``--sizes``.) The data: a float64 column ``x``
(standard normal, about 10% nulls) and an int64 key ``g`` with ``--groups``
groups (1,000 by default) in random order. Workloads, with polars' names and
semantics (``rolling_*`` need all 20 values of the window; ``ewm_mean`` is
``adjust=True``, nulls not ignored):

* ``rolling_mean(20)``, ``rolling_std(20)``, ``rolling_median(20)`` (no hand kernel),
  ``cum_sum()``, ``shift(1)`` and
  ``diff(1)`` (two outputs), ``x - x.shift(1, fill_value=0.0)`` (``shift fill``),
  ``ewm_mean(alpha=0.1)``, and the fused ``(x - x.shift(1)) / x.rolling_std(20)``;
* ``rolling_mean``, ``cum_sum``, ``shift & diff`` and the fused one again with
  ``.over("g")`` (the whole expression over the key), and ``rolling_min(20)`` (a hand
  kernel keeping a monotonic queue per group) and ``rolling_median(20)`` over it (no
  hand kernel);
* the time-based ``x.rolling_mean_by("t", "2d")``, plain and ``.over("g")``, where
  ``t`` is a sorted datetime column (microseconds, distinct seconds over 3 years, so
  about 9,000 rows a day at 1e7 rows; no ties, whose windows pandas takes row by
  row where polars gives tied rows one window): pandas' ``rolling("2D", on="t")`` (per group:
  ``groupby(g).rolling``, put back in row order); the hand kernel walks two pointers
  over ``t``, and per group one pass in frame order with each row linked to its
  group's next one, the group's oldest row in its window kept per group.

Contenders, all in one run with the rounds interleaved (contender 1, 2, ...,
then again), so that machine noise falls on all of them alike; the tables give
medians:

* colbridge on the CPU over a polars frame. The plain workloads reuse one lazy
  handle (plans warmed, background compiles awaited, as in a loop); the ``over``
  ones build a new handle per call, so the keys are factorized every time, as
  polars and pandas do.
* polars eager, lazy and streaming; "vs polars" is against the fastest of them.
* pandas over NumPy float64 with NaN for the nulls (its fastest path):
  ``Series.rolling(20).mean()``, ``.shift``, ``.diff``, ``.cumsum``,
  ``.ewm(alpha=0.1).mean()``; keyed, ``groupby(g, sort=False)`` then
  ``.shift``, ``.diff``, ``.cumsum`` and ``.rolling(20)`` (whose result is put
  back in row order).
* a hand-written numba kernel, ``@njit`` and one sequential loop, reading the
  Arrow buffers in place and writing values and validity bitmaps as Arrow
  arrays (an output whose nulls are the input's shares the input's bitmap):
  the roofline for the plain workloads. For the ``over`` workloads it keeps
  per-group state (running sums, a ring of the last 20 values, the previous
  value) indexed by precomputed int32 group ids; the ids are not timed, so it
  is a roofline of the ordered work alone. Its ``shift & diff`` without keys
  makes the shift without a copy (the column's rows behind a chunk of one null,
  as polars and colbridge give it) and the difference in one flat loop.

Every answer is checked against polars eager's before timing, and the run stops
on any difference: floats with ``np.allclose(rtol=1e-9, atol=1e-8,
equal_nan=True)``, nulls as NaN (the absolute tolerance is for ``cum_sum``, whose
running total crosses zero, where the order of the additions shows); colbridge's
null rows must also be polars' exactly. pandas keeps the last mean on the null
rows of an ``ewm`` where polars gives null; there it is compared on polars'
non-null rows.

The issue's goals: colbridge at least 1.5x polars without keys, at least 1.0x
polars with ``over``, at least 5x pandas. Ratios are contender time ÷ colbridge
time (> 1: colbridge faster); "÷ hand kernel" is hand kernel time ÷ colbridge
time, colbridge's speed as a fraction of the roofline's. Results depend on the
machine: the committed ones (benchmarks/results/ordered.md) name theirs.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import hand_kernels as hk
import numba
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
from fused_cpu import machine, time_all

import colbridge as cb

BASE = "colbridge"
SORTED = "colbridge, sort by key"
HAND = "hand kernel"
PANDAS = "pandas"
NULL_FRACTION = 0.1
WINDOW = 20
ALPHA = 0.1
#: the issue's goals: colbridge's speed over polars' best (plain, keyed) and over pandas
GOAL_POLARS, GOAL_POLARS_OVER, GOAL_PANDAS = 1.5, 1.0, 5.0

Contenders = dict[str, Callable[[], object]]


# -- hand kernels: one sequential loop each ------------------------------------------
# ``v`` is the input's validity bitmap (bytes), ``vout``/``vs``/``vd`` the outputs'.
# A window of ``w`` values is complete only after ``w`` valid rows in a row
# (``run``), so a null resets the running sums: they never drift further than one
# run of valid values.
@numba.njit(inline="always")
def _bit(v, i):  # type: ignore[no-untyped-def]
    return (v[i >> 3] >> (i & 7)) & 1


@numba.njit(inline="always")
def _put(vout, i, byte, ok):  # type: ignore[no-untyped-def]
    """Add row i's bit to the byte being built; store it when full. Returns the byte."""
    byte |= ok << (i & 7)
    if (i & 7) == 7:
        vout[i >> 3] = byte
        return 0
    return byte


@numba.njit(inline="always")
def _flush(vout, n, byte):  # type: ignore[no-untyped-def]
    if n & 7:
        vout[n >> 3] = byte


@numba.njit(cache=True)
def _k_rolling_mean(x, v, w, out, vout):  # type: ignore[no-untyped-def]
    n = x.shape[0]
    s = 0.0
    run = 0
    byte = 0
    for i in range(n):
        if _bit(v, i):
            s += x[i]
            run += 1
            if run > w:
                s -= x[i - w]
        else:
            s = 0.0
            run = 0
        out[i] = s / w
        byte = _put(vout, i, byte, np.int64(run >= w))
    _flush(vout, n, byte)


@numba.njit(cache=True)
def _k_rolling_std(x, v, w, out, vout):  # type: ignore[no-untyped-def]
    n = x.shape[0]
    s = 0.0
    sq = 0.0
    run = 0
    byte = 0
    for i in range(n):
        if _bit(v, i):
            xi = x[i]
            s += xi
            sq += xi * xi
            run += 1
            if run > w:
                old = x[i - w]
                s -= old
                sq -= old * old
        else:
            s = 0.0
            sq = 0.0
            run = 0
        out[i] = np.sqrt(max((sq - s * s / w) / (w - 1), 0.0))
        byte = _put(vout, i, byte, np.int64(run >= w))
    _flush(vout, n, byte)


@numba.njit(cache=True)
def _k_cum_sum(x, v, out):  # type: ignore[no-untyped-def]
    s = 0.0
    for i in range(x.shape[0]):
        if _bit(v, i):
            s += x[i]
        out[i] = s


@numba.njit(cache=True)
def _k_diff(x, v, diff, vd):  # type: ignore[no-untyped-def]
    # values in one flat loop, row 0's a placeholder under its null; the bitmap a byte at a
    # time: valid where the row and the row before are
    n = x.shape[0]
    if n == 0:
        return
    diff[0] = 0.0
    for i in range(1, n):
        diff[i] = x[i] - x[i - 1]
    carry = 0
    for b in range((n + 7) // 8):
        byte = np.int64(v[b])
        vd[b] = np.uint8(byte & (((byte << 1) | carry) & 0xFF))
        carry = byte >> 7


@numba.njit(cache=True)
def _k_diff_fill(x, v, diff, vd):  # type: ignore[no-untyped-def]
    # x - x.shift(1, fill_value=0.0): `_k_diff` with row 0 as x[0] - 0.0, valid where x[0] is
    n = x.shape[0]
    if n == 0:
        return
    diff[0] = x[0]
    for i in range(1, n):
        diff[i] = x[i] - x[i - 1]
    carry = 1  # the row before row 0 is the fill: valid
    for b in range((n + 7) // 8):
        byte = np.int64(v[b])
        vd[b] = np.uint8(byte & (((byte << 1) | carry) & 0xFF))
        carry = byte >> 7


@numba.njit(cache=True)
def _k_ewm_mean(x, v, alpha, out):  # type: ignore[no-untyped-def]
    # adjust=True: weights (1 - alpha)**age over every row, null or not
    beta = 1.0 - alpha
    num = 0.0
    den = 0.0
    for i in range(x.shape[0]):
        num *= beta
        den *= beta
        if _bit(v, i):
            num += x[i]
            den += 1.0
        out[i] = num / den if den > 0.0 else 0.0


@numba.njit(cache=True)
def _k_fused(x, v, w, out, vout):  # type: ignore[no-untyped-def]
    # (x - x.shift(1)) / x.rolling_std(w): valid where the window is complete (w >= 2)
    n = x.shape[0]
    s = 0.0
    sq = 0.0
    run = 0
    byte = 0
    for i in range(n):
        if _bit(v, i):
            xi = x[i]
            s += xi
            sq += xi * xi
            run += 1
            if run > w:
                old = x[i - w]
                s -= old
                sq -= old * old
        else:
            s = 0.0
            sq = 0.0
            run = 0
        ok = run >= w
        if ok:
            out[i] = (x[i] - x[i - 1]) / np.sqrt(max((sq - s * s / w) / (w - 1), 0.0))
        else:
            out[i] = 0.0
        byte = _put(vout, i, byte, np.int64(ok))
    _flush(vout, n, byte)


# per-group state: ``ring[g]`` holds the group's last w valid values, ``at[g]`` where
# the next one goes; ``run[g]`` counts its valid rows since its last null
@numba.njit(cache=True)
def _k_over_rolling_mean(x, v, ids, groups, w, out, vout):  # type: ignore[no-untyped-def]
    n = x.shape[0]
    ring = np.empty((groups, w))
    at = np.zeros(groups, np.int64)
    run = np.zeros(groups, np.int64)
    s = np.zeros(groups)
    byte = 0
    for i in range(n):
        g = ids[i]
        if _bit(v, i):
            xi = x[i]
            k = at[g]
            if run[g] >= w:
                s[g] -= ring[g, k]
            ring[g, k] = xi
            at[g] = k + 1 if k + 1 < w else 0
            s[g] += xi
            run[g] += 1
        else:
            s[g] = 0.0
            run[g] = 0
        out[i] = s[g] / w
        byte = _put(vout, i, byte, np.int64(run[g] >= w))
    _flush(vout, n, byte)


@numba.njit(cache=True)
def _k_over_rolling_min(x, v, ids, groups, w, out, vout):  # type: ignore[no-untyped-def]
    """Per group, in frame order: a monotonic queue of the run's last ``w`` values.

    With ``min_samples`` = ``w`` a window is valid only when its ``w`` rows are all
    non-null, so a null empties the group's queue and restarts its run (as
    `_k_over_rolling_mean`); of equal values the queue keeps the earliest in front.
    """
    n = x.shape[0]
    vals = np.empty((groups, w))
    pos = np.empty((groups, w), np.int64)
    head = np.zeros(groups, np.int64)
    size = np.zeros(groups, np.int64)
    run = np.zeros(groups, np.int64)
    byte = 0
    for i in range(n):
        g = ids[i]
        if _bit(v, i):
            xi = x[i]
            r = run[g] + 1
            run[g] = r
            h = head[g]
            k = size[g]
            if k and pos[g, h] <= r - w:  # the front left the window
                h = h + 1 if h + 1 < w else 0
                k -= 1
            while k:  # larger values behind the new one never become the minimum
                b = h + k - 1
                b = b - w if b >= w else b
                if vals[g, b] <= xi:
                    break
                k -= 1
            b = h + k
            b = b - w if b >= w else b
            vals[g, b] = xi
            pos[g, b] = r
            head[g] = h
            size[g] = k + 1
            out[i] = vals[g, h]
        else:
            run[g] = 0
            size[g] = 0
            out[i] = 0.0
        byte = _put(vout, i, byte, np.int64(run[g] >= w))
    _flush(vout, n, byte)


@numba.njit(cache=True)
def _k_rolling_mean_by(x, v, t, w, out, vout):  # type: ignore[no-untyped-def]
    """Mean of the non-null values with ``t`` in ``(t[i] - w, t[i]]``; equal ``t`` share it."""
    n = x.shape[0]
    s = 0.0
    count = 0
    lo = 0
    hi = 0
    byte = 0
    for i in range(n):
        while hi < n and t[hi] <= t[i]:  # rows up to t, ties after i included
            if _bit(v, hi):
                s += x[hi]
                count += 1
            hi += 1
        while t[lo] <= t[i] - w:
            if _bit(v, lo):
                s -= x[lo]
                count -= 1
            lo += 1
        out[i] = s / count if count else 0.0
        byte = _put(vout, i, byte, np.int64(count > 0))
    _flush(vout, n, byte)


# per group, rows are linked to the group's next row (``nxt``), and ``lo[g]`` is the
# group's oldest row still in its window: the rows leaving are 2 days back (in cache)
@numba.njit(cache=True)
def _k_over_rolling_mean_by(x, v, ids, groups, t, w, out, vout):  # type: ignore[no-untyped-def]
    n = x.shape[0]
    nxt = np.empty(n, np.int64)
    last = np.full(groups, -1, np.int64)
    for i in range(n):
        g = ids[i]
        if last[g] >= 0:
            nxt[last[g]] = i
        last[g] = i
    lo = np.full(groups, -1, np.int64)
    s = np.zeros(groups)
    count = np.zeros(groups, np.int64)
    byte = 0
    for i in range(n):
        g = ids[i]
        if lo[g] < 0:
            lo[g] = i
        if _bit(v, i):
            s[g] += x[i]
            count[g] += 1
        j = lo[g]
        while t[j] <= t[i] - w:
            if _bit(v, j):
                s[g] -= x[j]
                count[g] -= 1
            j = nxt[j]
        lo[g] = j
        out[i] = s[g] / count[g] if count[g] else 0.0
        byte = _put(vout, i, byte, np.int64(count[g] > 0))
    _flush(vout, n, byte)


@numba.njit(cache=True)
def _k_over_cum_sum(x, v, ids, groups, out):  # type: ignore[no-untyped-def]
    s = np.zeros(groups)
    for i in range(x.shape[0]):
        g = ids[i]
        if _bit(v, i):
            s[g] += x[i]
        out[i] = s[g]


@numba.njit(cache=True)
def _k_over_shift_diff(x, v, ids, groups, shifted, diff, vs, vd):  # type: ignore[no-untyped-def]
    n = x.shape[0]
    prev = np.zeros(groups)
    prev_ok = np.zeros(groups, np.int64)
    bs = 0
    bd = 0
    for i in range(n):
        g = ids[i]
        xi = x[i]
        ok = np.int64(_bit(v, i))
        p = prev[g]
        pok = prev_ok[g]
        shifted[i] = p
        diff[i] = xi - p
        bs = _put(vs, i, bs, pok)
        bd = _put(vd, i, bd, pok & ok)
        prev[g] = xi
        prev_ok[g] = ok
    _flush(vs, n, bs)
    _flush(vd, n, bd)


@numba.njit(cache=True)
def _k_over_fused(x, v, ids, groups, w, out, vout):  # type: ignore[no-untyped-def]
    n = x.shape[0]
    ring = np.empty((groups, w))
    at = np.zeros(groups, np.int64)
    run = np.zeros(groups, np.int64)
    s = np.zeros(groups)
    sq = np.zeros(groups)
    byte = 0
    for i in range(n):
        g = ids[i]
        ok = False
        if _bit(v, i):
            xi = x[i]
            k = at[g]
            prev = ring[g, k - 1 if k > 0 else w - 1]  # the group's previous row when run >= 1
            if run[g] >= w:
                old = ring[g, k]
                s[g] -= old
                sq[g] -= old * old
            ring[g, k] = xi
            at[g] = k + 1 if k + 1 < w else 0
            s[g] += xi
            sq[g] += xi * xi
            run[g] += 1
            ok = run[g] >= w
            if ok:
                var = (sq[g] - s[g] * s[g] / w) / (w - 1)
                out[i] = (xi - prev) / np.sqrt(max(var, 0.0))
        else:
            s[g] = 0.0
            sq[g] = 0.0
            run[g] = 0
        if not ok:
            out[i] = 0.0
        byte = _put(vout, i, byte, np.int64(ok))
    _flush(vout, n, byte)


# -- data ---------------------------------------------------------------------------
@dataclass
class Data:
    """``x`` (float64, nulls) and ``g`` (int64 key) as a polars frame, a pandas frame
    (NaN for the nulls) and the Arrow buffers the hand kernels read in place."""

    polars: pl.DataFrame
    pandas: pd.DataFrame
    x: np.ndarray  # values of x (a view of the Arrow buffer)
    valid: np.ndarray  # x's validity bitmap, bytes
    valid_buffer: pa.Buffer
    ids: np.ndarray  # int32 group ids 0..groups-1
    groups: int
    t: np.ndarray  # the sorted datetime column `t`, as int64 microseconds

    @property
    def rows(self) -> int:
        return self.polars.height


def make_data(n: int, groups: int, seed: int = 0) -> Data:
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(n)
    mask = rng.random(n) < NULL_FRACTION
    codes = rng.integers(0, groups, n)
    span = max(3 * 365 * 86_400, 2 * n)  # seconds; distinct times (pandas splits ties)
    seconds = np.sort(rng.integers(0, span - n, n)) + np.arange(n)
    t = (np.datetime64("2020-01-01", "us") + seconds.astype("timedelta64[s]")).astype(
        "datetime64[us]")  # fmt: skip
    df = pl.DataFrame({"x": pa.array(values, mask=mask), "g": codes, "t": t}).rechunk()
    arr = df["x"].to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    valid = hk.validity(arr)
    if valid is None:
        msg = "the data must have nulls"
        raise ValueError(msg)
    pdf = pd.DataFrame({"x": np.where(mask, np.nan, values), "g": codes, "t": t})
    _, ids = np.unique(codes, return_inverse=True)
    return Data(
        polars=df,
        pandas=pdf,
        x=hk.values(arr, np.float64),
        valid=valid,
        valid_buffer=arr.buffers()[0],
        ids=ids.astype(np.int32),
        groups=int(ids.max()) + 1,
        t=t.view(np.int64),
    )


# -- workloads ------------------------------------------------------------------------
@dataclass
class Workload:
    """One workload: the expressions (``exprs(ns)`` for ``ns`` polars or colbridge),
    the other contenders, and whether it runs over the key."""

    title: str
    exprs: Callable[[Any], dict[str, Any]]
    pandas: Callable[[pd.DataFrame], dict[str, pd.Series]]
    hand: Callable[[Data], Callable[[], dict[str, pa.Array]]] | None
    over: bool = False
    #: outputs compared with polars only on polars' non-null rows (for pandas)
    pandas_fills_nulls: bool = False

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(self.exprs(pl))


def _f64(n: int, buf: pa.Buffer, validity: pa.Buffer | None) -> pa.Array:
    return hk.arrow(pa.float64(), n, buf, validity)


def _hand_one(kernel: Callable[..., None], *args: Any) -> Callable[[Data], Callable[[], Any]]:
    """A hand contender writing ``y`` and its own bitmap: ``kernel(x, v, *args, out, vout)``."""

    def make(data: Data) -> Callable[[], dict[str, pa.Array]]:
        n = data.rows

        def run() -> dict[str, pa.Array]:
            buf, out = hk.alloc(n, np.float64)
            vbuf, vout = hk.alloc_bitmap(n)
            kernel(data.x, data.valid, *args, out, vout)
            return {"y": _f64(n, buf, vbuf)}

        return run

    return make


def _hand_same_nulls(kernel: Callable[..., None], *args: Any) -> Callable[[Data], Any]:
    """A hand contender whose output ``y`` has the input's nulls: it shares the bitmap."""

    def make(data: Data) -> Callable[[], dict[str, pa.Array]]:
        n = data.rows

        def run() -> dict[str, pa.Array]:
            buf, out = hk.alloc(n, np.float64)
            kernel(data.x, data.valid, *args, out)
            return {"y": _f64(n, buf, data.valid_buffer)}

        return run

    return make


def _hand_shift_diff(over: bool) -> Callable[[Data], Any]:
    """Hand ``shift``/``diff``; without keys the shift is no work at all, as polars does it.

    The shift is the column's rows after a chunk of one null (no copy), the difference
    one flat loop (`_k_diff`); per group, one loop writes both (`_k_over_shift_diff`).
    """

    def make(data: Data) -> Callable[[], dict[str, pa.Array]]:
        n = data.rows
        column = data.polars["x"].to_arrow()

        def plain() -> dict[str, Any]:
            (dbuf, d), (vdbuf, vd) = hk.alloc(n, np.float64), hk.alloc_bitmap(n)
            _k_diff(data.x, data.valid, d, vd)
            moved = min(n, 1)
            s = pa.chunked_array([pa.nulls(moved, pa.float64()), column.slice(0, n - moved)])
            return {"s": s, "d": _f64(n, dbuf, vdbuf)}

        if not over:
            return plain

        def run() -> dict[str, pa.Array]:
            (sbuf, s), (dbuf, d) = hk.alloc(n, np.float64), hk.alloc(n, np.float64)
            (vsbuf, vs), (vdbuf, vd) = hk.alloc_bitmap(n), hk.alloc_bitmap(n)
            _k_over_shift_diff(data.x, data.valid, data.ids, data.groups, s, d, vs, vd)
            return {"s": _f64(n, sbuf, vsbuf), "d": _f64(n, dbuf, vdbuf)}

        return run

    return make


def _hand_over(kernel: Callable[..., None], same_nulls: bool, *args: Any) -> Any:
    """A per-group hand contender: ``kernel(x, v, ids, groups, *args, out[, vout])``."""

    def make(data: Data) -> Callable[[], dict[str, pa.Array]]:
        keyed = (data.ids, data.groups, *args)
        inner = (_hand_same_nulls if same_nulls else _hand_one)(kernel, *keyed)
        return inner(data)

    return make


def _fused(ns: Any) -> Any:
    x = ns.col("x")
    return (x - x.shift(1)) / x.rolling_std(WINDOW)


def _pd_fused(pdf: pd.DataFrame) -> pd.Series:
    x = pdf["x"]
    return (x - x.shift(1)) / x.rolling(WINDOW).std()


def _pd_group_rolling(pdf: pd.DataFrame, stat: str) -> pd.Series:
    """``groupby(g).rolling(20).<stat>()`` back in row order (a new GroupBy per call)."""
    rolled = getattr(pdf.groupby("g", sort=False)["x"].rolling(WINDOW), stat)()
    return rolled.droplevel(0).sort_index()


def _pd_over_fused(pdf: pd.DataFrame) -> pd.Series:
    by = pdf.groupby("g", sort=False)["x"]
    return (pdf["x"] - by.shift(1)) / _pd_group_rolling(pdf, "std")


def _over(exprs: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
    return lambda ns: {k: e.over("g") for k, e in exprs(ns).items()}


_ROLLING_MEAN = lambda ns: {"y": ns.col("x").rolling_mean(WINDOW)}  # noqa: E731
_CUM_SUM = lambda ns: {"y": ns.col("x").cum_sum()}  # noqa: E731
_SHIFT_DIFF = lambda ns: {"s": ns.col("x").shift(1), "d": ns.col("x").diff(1)}  # noqa: E731
_FUSED = lambda ns: {"y": _fused(ns)}  # noqa: E731
_SHIFT_FILL = lambda ns: {"y": ns.col("x") - ns.col("x").shift(1, fill_value=0.0)}  # noqa: E731
_BY_WINDOW = "2d"
_ROLLING_BY = lambda ns: {"y": ns.col("x").rolling_mean_by("t", _BY_WINDOW)}  # noqa: E731
_TWO_DAYS_US = 2 * 86_400 * 1_000_000


def _hand_rolling_by(data: Data) -> Callable[[], dict[str, pa.Array]]:
    return _hand_one(_k_rolling_mean_by, data.t, _TWO_DAYS_US)(data)


def _hand_over_rolling_by(data: Data) -> Callable[[], dict[str, pa.Array]]:
    return _hand_one(_k_over_rolling_mean_by, data.ids, data.groups, data.t,
                     _TWO_DAYS_US)(data)  # fmt: skip


def _pd_group_rolling_by(pdf: pd.DataFrame) -> pd.Series:
    """``groupby(g).rolling("2D", on="t")`` means, back in row order (rows by their ``t``)."""
    rolled = pdf.groupby("g", sort=False).rolling("2D", on="t")["x"].mean()
    return pd.Series(rolled.droplevel(0).sort_index().to_numpy(), index=pdf.index)

#: Every workload by name.
WORKLOADS: dict[str, Workload] = {
    "rolling_mean": Workload(
        f"`x.rolling_mean({WINDOW})`",
        _ROLLING_MEAN,
        lambda pdf: {"y": pdf["x"].rolling(WINDOW).mean()},
        _hand_one(_k_rolling_mean, WINDOW),
    ),
    "rolling_std": Workload(
        f"`x.rolling_std({WINDOW})`",
        lambda ns: {"y": ns.col("x").rolling_std(WINDOW)},
        lambda pdf: {"y": pdf["x"].rolling(WINDOW).std()},
        _hand_one(_k_rolling_std, WINDOW),
    ),
    "rolling_median": Workload(
        f"`x.rolling_median({WINDOW})`",
        lambda ns: {"y": ns.col("x").rolling_median(WINDOW)},
        lambda pdf: {"y": pdf["x"].rolling(WINDOW).median()},
        None,
    ),
    "cum_sum": Workload(
        "`x.cum_sum()`",
        _CUM_SUM,
        lambda pdf: {"y": pdf["x"].cumsum()},
        _hand_same_nulls(_k_cum_sum),
    ),
    "shift & diff": Workload(
        "`s = x.shift(1)`, `d = x.diff(1)`",
        _SHIFT_DIFF,
        lambda pdf: {"s": pdf["x"].shift(1), "d": pdf["x"].diff(1)},
        _hand_shift_diff(over=False),
    ),
    "shift fill": Workload(
        "`x - x.shift(1, fill_value=0.0)`",
        _SHIFT_FILL,
        lambda pdf: {"y": pdf["x"] - pdf["x"].shift(1, fill_value=0.0)},
        _hand_one(_k_diff_fill),
    ),
    "ewm_mean": Workload(
        f"`x.ewm_mean(alpha={ALPHA})`",
        lambda ns: {"y": ns.col("x").ewm_mean(alpha=ALPHA)},
        lambda pdf: {"y": pdf["x"].ewm(alpha=ALPHA).mean()},
        _hand_same_nulls(_k_ewm_mean, ALPHA),
        pandas_fills_nulls=True,
    ),
    "fused": Workload(
        f"`(x - x.shift(1)) / x.rolling_std({WINDOW})`",
        _FUSED,
        lambda pdf: {"y": _pd_fused(pdf)},
        _hand_one(_k_fused, WINDOW),
    ),
    "rolling_mean over": Workload(
        f"`x.rolling_mean({WINDOW}).over(g)`",
        _over(_ROLLING_MEAN),
        lambda pdf: {"y": _pd_group_rolling(pdf, "mean")},
        _hand_over(_k_over_rolling_mean, False, WINDOW),
        over=True,
    ),
    "rolling_min over": Workload(
        f"`x.rolling_min({WINDOW}).over(g)`",
        _over(lambda ns: {"y": ns.col("x").rolling_min(WINDOW)}),
        lambda pdf: {"y": _pd_group_rolling(pdf, "min")},
        _hand_over(_k_over_rolling_min, False, WINDOW),
        over=True,
    ),
    "rolling_median over": Workload(
        f"`x.rolling_median({WINDOW}).over(g)`",
        _over(lambda ns: {"y": ns.col("x").rolling_median(WINDOW)}),
        lambda pdf: {"y": _pd_group_rolling(pdf, "median")},
        None,
        over=True,
    ),
    "cum_sum over": Workload(
        "`x.cum_sum().over(g)`",
        _over(_CUM_SUM),
        lambda pdf: {"y": pdf.groupby("g", sort=False)["x"].cumsum()},
        _hand_over(_k_over_cum_sum, True),
        over=True,
    ),
    "shift & diff over": Workload(
        "`s = x.shift(1).over(g)`, `d = x.diff(1).over(g)`",
        _over(_SHIFT_DIFF),
        lambda pdf: {
            "s": pdf.groupby("g", sort=False)["x"].shift(1),
            "d": pdf.groupby("g", sort=False)["x"].diff(1),
        },
        _hand_shift_diff(over=True),
        over=True,
    ),
    "fused over": Workload(
        f"`((x - x.shift(1)) / x.rolling_std({WINDOW})).over(g)`",
        _over(_FUSED),
        lambda pdf: {"y": _pd_over_fused(pdf)},
        _hand_over(_k_over_fused, False, WINDOW),
        over=True,
    ),
    "rolling_mean_by": Workload(
        f'`x.rolling_mean_by("t", "{_BY_WINDOW}")`',
        _ROLLING_BY,
        lambda pdf: {"y": pdf.rolling("2D", on="t")["x"].mean()},
        _hand_rolling_by,
    ),
    "rolling_mean_by over": Workload(
        f'`x.rolling_mean_by("t", "{_BY_WINDOW}").over(g)`',
        _over(_ROLLING_BY),
        lambda pdf: {"y": _pd_group_rolling_by(pdf)},
        _hand_over_rolling_by,
        over=True,
    ),
}


def colbridge_contenders(data: Data, workload: Workload) -> Contenders:
    """colbridge on the CPU: one held handle for plain workloads, a new one per call
    with ``over`` (so the keys are factorized every time).

    With ``over``, colbridge runs twice: as it chooses (per-group carries here) and
    with the stable counting sort forced (``COLBRIDGE_SCAN_BY_KEY=sort``), so the two
    ways of scanning by key are compared in one run.
    """
    exprs = workload.exprs(cb)
    if workload.over:

        def by_sort() -> Any:
            os.environ["COLBRIDGE_SCAN_BY_KEY"] = "sort"
            try:
                return data.polars.gpu.with_columns(**exprs).compute(device="cpu")
            finally:
                del os.environ["COLBRIDGE_SCAN_BY_KEY"]

        return {BASE: lambda: data.polars.gpu.with_columns(**exprs).compute(device="cpu"),
                SORTED: by_sort}  # fmt: skip
    held = cb.lazy(data.polars).with_columns(**exprs)
    return {BASE: lambda: held.compute(device="cpu")}


def contenders(data: Data, workload: Workload) -> Contenders:
    df, pdf = data.polars, data.pandas
    exprs = workload.exprs(pl)
    lazy = df.lazy().with_columns(**exprs)
    fns: Contenders = {
        **colbridge_contenders(data, workload),
        "polars eager": lambda: df.with_columns(**exprs),
        "polars lazy": lazy.collect,
        "polars streaming": lambda: lazy.collect(engine="streaming"),
        PANDAS: lambda: pdf.assign(**workload.pandas(pdf)),
    }
    if workload.hand is not None:
        fns[HAND] = workload.hand(data)
    return fns


# -- checking answers against polars ---------------------------------------------------
def _floats(col: Any) -> tuple[np.ndarray, np.ndarray]:
    """Values as float64 with NaN for nulls, and the null mask."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if isinstance(col, pa.Array):
        col = pl.Series(col)
    if isinstance(col, pl.Series):
        return col.cast(pl.Float64).to_numpy(), col.is_null().to_numpy()
    arr = np.asarray(col, dtype=np.float64)
    return arr, np.isnan(arr)


def checker(name: str, workload: Workload, data: Data) -> Callable[[str, object], None]:
    """Compare each contender's answer with polars eager's; raise on any difference."""
    want_frame = data.polars.with_columns(**workload.exprs(pl))
    expected = {k: _floats(want_frame[k]) for k in workload.outputs}

    def check(contender: str, result: Any) -> None:
        for col, (want, want_null) in expected.items():
            got, got_null = _floats(result[col])
            problem = None
            if got.shape != want.shape:
                problem = f"{got.shape[0]} rows instead of {want.shape[0]}"
            elif contender in (BASE, SORTED) and not np.array_equal(got_null, want_null):
                problem = f"nulls differ in {int((got_null != want_null).sum())} rows"
            else:
                rows = slice(None)
                if contender == PANDAS and workload.pandas_fills_nulls:
                    rows = ~want_null
                ok = np.isclose(got[rows], want[rows], rtol=1e-9, atol=1e-8, equal_nan=True)
                if not ok.all():
                    bad = int(np.flatnonzero(~ok)[0])
                    problem = (
                        f"values differ in {int((~ok).sum())} rows, first at {bad}: "
                        f"{got[rows][bad]!r} instead of {want[rows][bad]!r}"
                    )
            if problem is not None:
                msg = f"{contender} disagrees with polars on `{col}` in {name!r}: {problem}"
                raise RuntimeError(msg)

    return check


def run(n: int, groups: int, repeats: int, workloads: list[str]) -> dict[str, Any]:
    """Time the workloads at n rows: ``{workload: {contender: median seconds}}``."""
    data = make_data(n, groups)
    out: dict[str, Any] = {}
    for name in workloads:
        workload = WORKLOADS[name]
        fns = contenders(data, workload)
        out[name] = time_all(fns, repeats, checker(name, workload, data))
        print(f"  {n:,} rows: {name} done", file=sys.stderr)
    return out


# -- reporting ------------------------------------------------------------------------
def summary(times: Mapping[str, float], over: bool) -> dict[str, Any]:
    """Speed ratios of colbridge (> 1: colbridge faster) and whether the goals are met."""
    base = times[BASE]
    polars = {k: v for k, v in times.items() if k.startswith("polars")}
    best = min(polars, key=polars.__getitem__)
    out: dict[str, Any] = {
        "colbridge_s": base,
        "vs_hand": times[HAND] / base if HAND in times else None,
        "best_polars": best,
        "vs_polars": polars[best] / base,
        "vs_pandas": times[PANDAS] / base,
        # per-group carries (colbridge's choice) against the counting sort
        "vs_sort": times[SORTED] / base if SORTED in times else None,
    }
    goal = GOAL_POLARS_OVER if over else GOAL_POLARS
    out["goals_met"] = out["vs_polars"] >= goal and out["vs_pandas"] >= GOAL_PANDAS
    return out


def markdown(runs: Mapping[int, Mapping[str, Any]], meta: Mapping[str, str], repeats: int) -> str:
    lines = ["# ordered expressions benchmark", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines += [
        "",
        f"Goals: colbridge >= {GOAL_POLARS}x polars' best without keys, >= "
        f"{GOAL_POLARS_OVER}x with `over`, >= {GOAL_PANDAS}x pandas. Times are medians "
        f"of {repeats} interleaved rounds; `÷ colbridge` = contender time ÷ colbridge time "
        "(> 1: colbridge faster); on the hand kernel row it is colbridge's speed as a "
        "fraction of the roofline's. Every answer was checked against polars' before timing.",
    ]
    for n, res in runs.items():
        lines += ["", f"## {n:,} rows"]
        for name, times in res.items():
            lines += ["", f"### {name}: {WORKLOADS[name].title}", ""]
            lines += ["| contender | time | ÷ colbridge |", "|---|---:|---:|"]
            for c, t in times.items():
                lines.append(f"| {c} | {t * 1e3:.3f} ms | {t / times[BASE]:.2f}x |")
    lines += ["", "## Summary: speed ratios of colbridge, > 1: colbridge faster", ""]
    lines += [
        "| rows | workload | colbridge | ÷ hand kernel | vs polars (best) | vs pandas "
        "| vs sort by key | goals |",
        "|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for n, res in runs.items():
        for name, times in res.items():
            s = summary(times, WORKLOADS[name].over)
            hand = "-" if s["vs_hand"] is None else f"{s['vs_hand']:.2f}"
            by_sort = "-" if s["vs_sort"] is None else f"{s['vs_sort']:.2f}"
            lines.append(
                f"| {n:,} | {name} | {s['colbridge_s'] * 1e3:.3f} ms | {hand} | "
                f"{s['vs_polars']:.2f} ({s['best_polars']}) | {s['vs_pandas']:.2f} | "
                f"{by_sort} | {'met' if s['goals_met'] else 'missed'} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", "--size", default="1e7", help="comma-separated row counts (1e7: 10 million)"
    )
    parser.add_argument("--groups", default="1e3", help="groups of the key in the `over` runs")
    parser.add_argument(
        "--workloads", default=",".join(WORKLOADS), help=f"subset of: {'; '.join(WORKLOADS)}"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", default=None, help="write medians and ratios here")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    groups = int(float(args.groups))
    chosen = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in chosen if w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {list(WORKLOADS)}")
    runs = {n: run(n, groups, args.repeats, chosen) for n in sizes}
    meta = {
        "command": f"`{shlex.join(sys.orig_argv)}`",
        **machine(),
        "data": f"x float64 N(0, 1), {NULL_FRACTION:.0%} nulls; g int64, {groups:,} groups; "
                "t datetime[us], sorted, distinct seconds over 3 years",
    }
    print(markdown(runs, meta, args.repeats))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            summaries = {
                str(n): {name: summary(t, WORKLOADS[name].over) for name, t in res.items()}
                for n, res in runs.items()
            }
            out = {"meta": meta, "runs": {str(k): v for k, v in runs.items()}}
            json.dump({**out, "summary": summaries}, f, indent=1)


if __name__ == "__main__":
    main()
