"""Polars' window and bit functions in colbridge, against polars and pandas.

Run: python benchmarks/window_functions.py [--size 1e6] [--repeats 5]

One float64 column with 10% nulls, a sorted integer ``t`` and an integer column:
``rolling_skew``/``rolling_kurtosis``/``rolling_rank`` of 20 rows, ``ewm_sum``,
``ewm_mean_by``, ``interpolate_by``, ``bitwise_count_ones`` and ``peak_max``, each
alone in a ``select`` on a polars frame (the handle reused, so compile time is not
counted), against polars' eager engine and, where pandas has the operation, pandas
(``rolling(20).skew()/kurt()/rank()``, ``ewm(alpha).sum()``). Medians of the
repeats, run back to back; every answer is checked against polars' first (values
within 1e-9 relative for the rolling moments, exact otherwise). Ratios are the
other library's time over colbridge's (> 1: colbridge faster).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
from polars.testing import assert_frame_equal

import colbridge as cb

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
}  # fmt: skip


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
    df = pl.DataFrame({"x": pl.Series(x).fill_nan(None), "t": np.cumsum(rng.integers(1, 100, n)),
                       "i": rng.integers(0, 2**31, n)})  # fmt: skip
    frame = df.to_pandas()
    print(f"{n:,} rows, medians of {args.repeats}; ratio = other / colbridge (> 1: colbridge "
          "faster)")  # fmt: skip
    print("| function | colbridge | polars | ÷ | pandas | ÷ |\n|---|---:|---:|---:|---:|---:|")
    for name, (build, in_pandas) in CASES.items():
        query = df.gpu.select(build(cb))
        want = df.select(build(pl))
        moments = name.startswith("rolling_skew") or name.startswith("rolling_kurtosis")
        assert_frame_equal(query.compute(), want, rel_tol=1e-9 if moments else 0.0,
                           check_exact=not moments)  # fmt: skip
        ours = _median_ms(query.compute, args.repeats)
        theirs = _median_ms(lambda b=build: df.select(b(pl)), args.repeats)
        row = f"| `{name}` | {ours:.2f} ms | {theirs:.2f} ms | {theirs / ours:.2f}x |"
        if in_pandas is None:
            row += " — | — |"
        else:
            slow = _median_ms(lambda f=in_pandas: f(frame), args.repeats)
            row += f" {slow:.2f} ms | {slow / ours:.2f}x |"
        print(row)


if __name__ == "__main__":
    main()
