"""The feature-matrix pack: six columns of five dtypes into one float32 matrix.

Run: python benchmarks/pack.py [--sizes 1e5,336776,1e6,1e7] [--repeats 7]
                               [--json benchmarks/results/pack.json]

The columns are int64, int32, int16, float64, float32 and float64, no nulls, in a
polars DataFrame (the case measured in the feature-matrix issue). Contenders, in
one run with the rounds interleaved (`fused_cpu.time_all`):

* ``cb.to_tensor(df, dtype="float32")`` in C (row-major) and F (column-major) order;
* polars: ``df.select(pl.all().cast(pl.Float32)).to_numpy()``;
* hand-written numba kernels, ``prange`` over the rows, the six columns written
  by name into a preallocated matrix (C and F): the roofline. They do not allocate
  the matrix; colbridge and polars do.

Ratios: polars time ÷ colbridge time (> 1: colbridge faster), and hand time ÷
colbridge time (colbridge's speed as a fraction of the roofline's). The issue's
goals: at least 1.5x polars from 1e5 to 1e7 rows, at least 0.9x the hand kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

import numpy as np
import polars as pl
from fused_cpu import machine, time_all
from numba import njit, prange

import colbridge as cb


@njit(parallel=True, cache=True)
def hand_c(a, b, c, d, e, f, out):  # type: ignore[no-untyped-def]
    for i in prange(a.shape[0]):
        out[i, 0] = a[i]
        out[i, 1] = b[i]
        out[i, 2] = c[i]
        out[i, 3] = d[i]
        out[i, 4] = e[i]
        out[i, 5] = f[i]


@njit(parallel=True, cache=True)
def hand_f(a, b, c, d, e, f, out):  # type: ignore[no-untyped-def]
    n = a.shape[0]
    for i in prange(n):
        out[i, 0] = a[i]
    for i in prange(n):
        out[i, 1] = b[i]
    for i in prange(n):
        out[i, 2] = c[i]
    for i in prange(n):
        out[i, 3] = d[i]
    for i in prange(n):
        out[i, 4] = e[i]
    for i in prange(n):
        out[i, 5] = f[i]


def frame(n: int) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    return pl.DataFrame({
        "a": rng.integers(0, 1000, n), "b": rng.integers(0, 1000, n).astype(np.int32),
        "c": rng.integers(0, 1000, n).astype(np.int16), "d": rng.random(n),
        "e": rng.random(n).astype(np.float32), "f": rng.random(n),
    })  # fmt: skip


def run(n: int, repeats: int) -> dict[str, float]:
    df = frame(n)
    cols = [df[c].to_numpy() for c in df.columns]
    out_c = np.empty((n, 6), np.float32)
    out_f = np.empty((n, 6), np.float32, order="F")
    expected = np.column_stack(cols).astype(np.float32)
    fns: dict[str, Callable[[], object]] = {
        "colbridge C": lambda: cb.to_tensor(df, dtype="float32").numpy(),
        "colbridge F": lambda: cb.to_tensor(df, dtype="float32", order="F").numpy(),
        "polars": lambda: df.select(pl.all().cast(pl.Float32)).to_numpy(),
        "hand C": lambda: (hand_c(*cols, out_c), out_c)[1],
        "hand F": lambda: (hand_f(*cols, out_f), out_f)[1],
    }

    def check(name: str, result: object) -> None:
        assert np.array_equal(np.asarray(result), expected), name

    return time_all(fns, repeats, check)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e5,336776,1e6,1e7")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", default=None, help="write results here (and .md beside it)")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    results = {n: run(n, args.repeats) for n in sizes}
    info = machine()
    lines = [
        "# Feature-matrix pack: 6 columns (int64, int32, int16, float64, float32, float64) "
        "→ float32",
        "",
        f"Machine: {info['cpu']}; {info['cores']}; {info['numba']}. {info['software']}.",
        f"Command: `python benchmarks/pack.py {' '.join(sys.argv[1:])}`; medians of "
        f"{args.repeats} interleaved rounds. Ratios > 1: colbridge faster.",
        "",
        "| rows | colbridge C | colbridge F | polars | hand C | hand F | "
        "C vs polars | F vs polars | C ÷ hand C | F ÷ hand F |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, t in results.items():
        ms = {k: v * 1e3 for k, v in t.items()}
        lines.append(
            f"| {n:,} | {ms['colbridge C']:.3f} ms | {ms['colbridge F']:.3f} ms | "
            f"{ms['polars']:.3f} ms | {ms['hand C']:.3f} ms | {ms['hand F']:.3f} ms | "
            f"{t['polars'] / t['colbridge C']:.2f} | {t['polars'] / t['colbridge F']:.2f} | "
            f"{t['hand C'] / t['colbridge C']:.2f} | {t['hand F'] / t['colbridge F']:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"machine": info, "seconds": {str(k): v for k, v in results.items()}},
                      fh, indent=2)  # fmt: skip
        with open(os.path.splitext(args.json)[0] + ".md", "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
