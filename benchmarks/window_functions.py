"""Polars' window and bit functions in colbridge, against polars and pandas.

Run: python benchmarks/window_functions.py [--size 1e6] [--repeats 5]

One float64 column with 10% nulls, a sorted integer ``t`` and an integer column:
``rolling_skew``/``rolling_kurtosis``/``rolling_rank`` of 20 rows, ``ewm_sum``,
``ewm_mean_by``, ``interpolate_by``, ``bitwise_count_ones``, ``peak_max``,
``round_sig_figs(3)`` and ``rolling_cov``/``rolling_corr`` of ``x`` and ``y``, each
alone in a ``select`` on a polars frame (the handle reused, so compile time is not
counted), against polars' eager engine and, where pandas has the operation, pandas
(``rolling(20).skew()/kurt()/rank()/cov()/corr()``, ``ewm(alpha).sum()``). Medians
of the repeats, run back to back; every answer is checked against polars' first
(values within 1e-9 relative for the rolling moments and pairs, exact otherwise). Ratios are the
other library's time over colbridge's (> 1: colbridge faster); the last column is
colbridge's speed as a fraction of a hand-written numba kernel's (the roofline,
1.00 = at it) reading the Arrow buffers in place: flat ``prange`` loops where the
rows are independent (bit counts, peaks, each window's moments), one sequential
pass where polars' recurrence is sequential (``ewm_sum``, ``ewm_mean_by``), two
passes for ``interpolate_by`` over the sorted ``t``, each window's sums afresh for
the rolling pairs, polars' formula per row for ``round_sig_figs``; its answers are checked
against polars' too. ``rolling_rank`` has no hand kernel.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
from numba import prange
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.codegen.numba_intrinsics import popcount
from colbridge.plan.typecheck import sig_figs_table

sys.path.insert(0, str(Path(__file__).parent))
from hand_kernels import validity, values

Build = Callable[[Any], Any]
CASES: dict[str, tuple[Build, Callable[[pd.DataFrame], Any] | None]] = {
    "rolling_skew(20)": (lambda m: m.col("x").rolling_skew(20),
                         lambda p: p["x"].rolling(20).skew()),
    "rolling_kurtosis(20)": (lambda m: m.col("x").rolling_kurtosis(20),
                             lambda p: p["x"].rolling(20).kurt()),
    "rolling_rank(20)": (lambda m: m.col("x").rolling_rank(20),
                         lambda p: p["x"].rolling(20).rank()),
    "ewm_sum(alpha=0.1)": (lambda m: m.col("x").ewm_sum(alpha=0.1),
                           lambda p: p["x"].ewm(alpha=0.1).sum()),
    "ewm_mean_by(t, '50i')": (lambda m: m.col("x").ewm_mean_by("t", half_life="50i"), None),
    "interpolate_by(t)": (lambda m: m.col("x").interpolate_by("t"), None),
    "bitwise_count_ones": (lambda m: m.col("i").bitwise_count_ones(), None),
    "peak_max": (lambda m: m.col("x").peak_max(), None),
    "round_sig_figs(3)": (lambda m: m.col("x").round_sig_figs(3), None),
    "rolling_cov(x, y, 20)": (lambda m: m.rolling_cov("x", "y", window_size=20),
                              lambda p: p["x"].rolling(20).cov(p["y"])),
    "rolling_corr(x, y, 20)": (lambda m: m.rolling_corr("x", "y", window_size=20),
                               lambda p: p["x"].rolling(20).corr(p["y"])),
}  # fmt: skip
#: the cases compared within 1e-9 relative (the rest bit for bit)
CLOSE = ("rolling_skew", "rolling_kurtosis", "rolling_cov", "rolling_corr")


# -- hand-written kernels (the roofline) ----------------------------------------------
@numba.njit(inline="always")
def _valid(v, i):  # type: ignore[no-untyped-def]
    return v is None or ((v[i >> 3] >> (i & 7)) & 1) == 1


@numba.njit(inline="always")
def _above(a, b):  # type: ignore[no-untyped-def]
    return a > b or (a != a and b == b)  # polars' order: NaN above every number


@numba.njit(parallel=True, cache=True)
def _k_count_ones(x, out):  # type: ignore[no-untyped-def]
    for i in prange(x.shape[0]):
        out[i] = popcount(x[i])


@numba.njit(inline="always")
def _bit(v, i):  # type: ignore[no-untyped-def]
    return (np.int64(v[i >> 3]) >> (i & 7)) & 1


@numba.njit(parallel=True, cache=True)
def _k_peak_max(x, v, out, out_valid):  # type: ignore[no-untyped-def]
    # branch-free (random nulls made the branchy form 5x slower): each side is known (a
    # value, or 0 past the edge) and x[i] above it or not; Kleene and of the two
    n = x.shape[0]
    for i in prange(n):
        lo, hi = max(i - 1, 0), min(i + 1, n - 1)
        first, last = np.int64(i == 0), np.int64(i == n - 1)
        left = 0.0 if first else x[lo]  # 0 past the edges (a select, no branch)
        right = 0.0 if last else x[hi]
        known_l, known_r = first | _bit(v, lo), last | _bit(v, hi)
        nan = np.int64(x[i] != x[i])
        above_l = np.int64(x[i] > left) | (nan & np.int64(left == left))
        above_r = np.int64(x[i] > right) | (nan & np.int64(right == right))
        false_side = (known_l & (1 - above_l)) | (known_r & (1 - above_r))
        out[i] = false_side == 0
        out_valid[i] = (_bit(v, i) & (false_side | (known_l & known_r))) == 1


@numba.njit(cache=True)
def _k_ewm_sum(x, v, alpha, out, out_valid):  # type: ignore[no-untyped-def]
    total, seen = 0.0, False
    for i in range(x.shape[0]):
        if _valid(v, i):
            total = x[i] if not seen else total * (1.0 - alpha) + x[i]
            seen = True
            out[i], out_valid[i] = total, True
        else:
            if seen:
                total *= 1.0 - alpha
            out_valid[i] = False


@numba.njit(cache=True)
def _k_ewm_mean_by(x, v, t, half_life, half, out, out_valid):  # type: ignore[no-untyped-def]
    prev, prev_t, seen = 0.0, 0, False
    for i in range(x.shape[0]):
        if not _valid(v, i):
            out_valid[i] = False
            continue
        if not seen:
            prev, seen = x[i], True
        elif x[i] != prev:
            keep = half ** (float(t[i] - prev_t) / float(half_life))
            prev = (1.0 - keep) * x[i] + keep * prev
        prev_t = t[i]
        out[i], out_valid[i] = prev, True


@numba.njit(cache=True)
def _k_interpolate_by(x, v, t, out, out_valid):  # type: ignore[no-untyped-def]
    n = x.shape[0]
    after = np.empty(n, dtype=np.int64)  # the next row with a value (n: none)
    nxt = n
    for i in range(n - 1, -1, -1):
        after[i] = nxt
        if _valid(v, i):
            nxt = i
    before = -1
    for i in range(n):
        if _valid(v, i):
            out[i], out_valid[i] = x[i], True
            before = i
        elif before >= 0 and after[i] < n:
            j = after[i]
            slope = (x[j] - x[before]) / float(t[j] - t[before])
            out[i], out_valid[i] = x[before] + float(t[i] - t[before]) * slope, True
        else:
            out_valid[i] = False


@numba.njit(parallel=True, cache=True)
def _k_moment(x, v, window, kurtosis, out, out_valid):  # type: ignore[no-untyped-def]
    eps = np.finfo(np.float64).eps
    for i in prange(x.shape[0]):
        lo = max(i - window + 1, 0)
        n, total, anchor = 0, 0.0, 0.0
        for j in range(lo, i + 1):
            if _valid(v, j):
                if n == 0:
                    anchor = x[j]
                n += 1
                total += x[j] - anchor
        if n < window:
            out_valid[i] = False
            continue
        shift = total / n
        s2, s3, s4 = 0.0, 0.0, 0.0
        for j in range(lo, i + 1):
            if _valid(v, j):
                d = (x[j] - anchor) - shift
                s2 += d * d
                s3 += d * d * d
                s4 += d * d * d * d
        m2 = s2 / n
        scaled = eps * (anchor + shift)
        if m2 <= scaled * scaled:
            out[i] = math.nan
        elif kurtosis:
            out[i] = (s4 / n) / (m2 * m2) - 3.0
        else:
            out[i] = (s3 / n) / m2**1.5
        out_valid[i] = True


@numba.njit(inline="always")
def _half_away(v):  # type: ignore[no-untyped-def]
    # Rust's f64::round: `a - floor(a)` is exact, so the tie test is (`floor(a + 0.5)` is
    # not: 0.49999999999999994 + 0.5 rounds to 1.0)
    a = abs(v)
    whole = math.floor(a)
    return math.copysign(whole + 1.0 if a - whole >= 0.5 else whole, v)


@numba.njit(parallel=True, cache=True)
def _k_round_sig_figs(x, v, pow5, scale, unscale, out, out_valid):  # type: ignore[no-untyped-def]
    # polars' formula with its three factors looked up by floor(log10(|x|)) (as colbridge)
    for i in prange(x.shape[0]):
        out_valid[i] = _valid(v, i)
        a = abs(x[i])
        if not (a > 0.0 and a < math.inf):
            out[i] = x[i]
            continue
        k = math.floor(math.log10(a)) + 324
        back = _half_away(x[i] * scale[k] * pow5[k]) / pow5[k] * unscale[k]
        out[i] = back if abs(back) < math.inf else x[i]


@numba.njit(parallel=True, cache=True)
def _k_rolling_pair(x, xv, y, yv, window, corr, out, out_valid):  # type: ignore[no-untyped-def]
    # each window afresh, over the rows where both sides have a value: polars' formula
    for i in prange(x.shape[0]):
        lo = max(i - window + 1, 0)
        n, sx, sy, sxy = 0, 0.0, 0.0, 0.0
        for j in range(lo, i + 1):
            if _valid(xv, j) and _valid(yv, j):
                n += 1
                sx += x[j]
                sy += y[j]
                sxy += x[j] * y[j]
        if n < window:
            out_valid[i] = False
            continue
        mx, my = sx / n, sy / n
        cov = (sxy / n - mx * my) * (n / (n - 1.0))
        if corr:
            qx, qy = 0.0, 0.0
            for j in range(lo, i + 1):
                if _valid(xv, j) and _valid(yv, j):
                    qx += (x[j] - mx) * (x[j] - mx)
                    qy += (y[j] - my) * (y[j] - my)
            cov = cov / math.sqrt(qx / (n - 1.0) * (qy / (n - 1.0)))
        out[i], out_valid[i] = cov, True


Result = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None]


def _hand(name: str, df: pl.DataFrame) -> Callable[[], Result] | None:
    """The hand kernel of case ``name`` over ``df``'s Arrow buffers, or None.

    It returns its values and validity flags as NumPy arrays: the time of building
    an Arrow array from them is left out, which makes it a lower bound.
    """
    x_arr, t_arr, i_arr, y_arr = (df[c].to_arrow() for c in ("x", "t", "i", "y"))
    x, xv, t = values(x_arr, np.float64), validity(x_arr), values(t_arr, np.int64)
    y, yv = values(y_arr, np.float64), validity(y_arr)
    tables = [np.array(sig_figs_table(3, kind)) for kind in ("pow5", "scale", "unscale")]
    n = len(x)

    def floats(kernel: Callable[..., None], *args: Any) -> Callable[[], Result]:
        def run() -> Result:
            out, ok = np.empty(n), np.empty(n, dtype=np.bool_)
            kernel(x, xv, *args, out, ok)
            return out, ok

        return run

    def count() -> Result:
        out = np.empty(n, dtype=np.uint32)
        _k_count_ones(values(i_arr, np.int64), out)
        return out, None

    def peaks() -> Result:
        out, ok = np.empty(n, dtype=np.bool_), np.empty(n, dtype=np.bool_)
        _k_peak_max(x, xv, out, ok)
        return out, ok

    kernels: dict[str, Callable[[], Result]] = {
        "rolling_skew(20)": floats(_k_moment, 20, False),
        "rolling_kurtosis(20)": floats(_k_moment, 20, True),
        "ewm_sum(alpha=0.1)": floats(_k_ewm_sum, 0.1),
        # 0.5 passed in, not a constant: LLVM turns pow(0.5, r) into exp2(-r), whose
        # last bit is not polars'
        "ewm_mean_by(t, '50i')": floats(_k_ewm_mean_by, t, 50, 0.5),
        "interpolate_by(t)": floats(_k_interpolate_by, t),
        "bitwise_count_ones": count,
        "peak_max": peaks,
        "round_sig_figs(3)": floats(_k_round_sig_figs, *tables),
        "rolling_cov(x, y, 20)": floats(_k_rolling_pair, y, yv, 20, False),
        "rolling_corr(x, y, 20)": floats(_k_rolling_pair, y, yv, 20, True),
    }
    return kernels.get(name)


def _median_ms(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=1e6, help="rows (default 1e6)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n = int(args.size)
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, n)
    x[rng.random(n) < 0.1] = np.nan
    y = 0.5 * x + rng.normal(0, 1, n)
    y[rng.random(n) < 0.1] = np.nan
    df = pl.DataFrame({"x": pl.Series(x).fill_nan(None), "t": np.cumsum(rng.integers(1, 100, n)),
                       "i": rng.integers(0, 2**31, n),
                       "y": pl.Series(y).fill_nan(None)})  # fmt: skip
    frame = df.to_pandas()
    print(f"{n:,} rows, medians of {args.repeats}; ratio = other / colbridge (> 1: colbridge "
          "faster)")  # fmt: skip
    print("| function | colbridge | polars | ÷ | pandas | ÷ | hand kernel | ÷ hand |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, (build, in_pandas) in CASES.items():
        query = df.gpu.select(build(cb))
        want = df.select(build(pl))
        close: dict[str, Any] = {"rel_tol": 1e-9, "abs_tol": 1e-12, "check_exact": False} \
            if name.startswith(CLOSE) else {"check_exact": True}  # fmt: skip
        assert_frame_equal(query.compute(), want, **close)
        ours = _median_ms(query.compute, args.repeats)
        theirs = _median_ms(lambda b=build: df.select(b(pl)), args.repeats)
        row = f"| `{name}` | {ours:.2f} ms | {theirs:.2f} ms | {theirs / ours:.2f}x |"
        if in_pandas is None:
            row += " — | — |"
        else:
            slow = _median_ms(lambda f=in_pandas: f(frame), args.repeats)
            row += f" {slow:.2f} ms | {slow / ours:.2f}x |"
        hand = _hand(name, df)
        if hand is None:
            row += " — | — |"
        else:
            out, ok = hand()
            mine = pl.DataFrame({want.columns[0]: pa.array(out, mask=None if ok is None else ~ok)})
            assert_frame_equal(mine, want, check_dtypes=False, **close)
            roof = _median_ms(hand, args.repeats)
            row += f" {roof:.2f} ms | {roof / ours:.2f} |"
        print(row)


if __name__ == "__main__":
    main()
