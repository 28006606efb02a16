"""Benchmark: cost of as_tensor per source kind, and to_tensor against polars and NumPy.

Run ``python benchmarks/bridge.py`` (``--max-rows`` adds 5e7, ``--json PATH``
saves the numbers). For each row count it prints the median cost of
``as_tensor`` on pyarrow, polars and pandas columns with the bytes allocated
while it ran (Arrow pool delta and tracemalloc peak), and ``to_tensor`` of 8
float64 columns next to ``polars.DataFrame.to_numpy()`` and
``numpy.column_stack``, measured side by side in the same run.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import timeit
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from colbridge.columns import as_tensor, to_tensor


def _median_us(fn, number: int, repeat: int) -> float:
    times = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def _alloc(fn) -> tuple[int, int]:
    gc.collect()
    before = pa.total_allocated_bytes()
    tracemalloc.start()
    view = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    delta = pa.total_allocated_bytes() - before
    del view
    return delta, peak


def _median_s(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        del out
    return statistics.median(times)


def bench_as_tensor(n: int) -> list[dict[str, object]]:
    values = np.random.default_rng(0).normal(size=n)
    sources = {
        "pyarrow": pa.array(values),
        "polars": pl.Series("x", values),
        "pandas": pd.Series(values),
    }
    rows = []
    for kind, col in sources.items():
        as_tensor(col)  # warm
        us = _median_us(lambda col=col: as_tensor(col), number=200, repeat=7)
        arrow_bytes, py_peak = _alloc(lambda col=col: as_tensor(col))
        view = as_tensor(col)
        rows.append(
            {
                "rows": n,
                "source": kind,
                "as_tensor_us": round(us, 2),
                "arrow_bytes_allocated": arrow_bytes,
                "tracemalloc_peak_bytes": py_peak,
                "copied": view.copied,
            }
        )
    return rows


def bench_to_tensor(n: int, repeat: int) -> dict[str, object]:
    rng = np.random.default_rng(1)
    df = pl.DataFrame({f"c{i}": rng.normal(size=n) for i in range(8)})
    cols = [df.get_column(c).to_numpy() for c in df.columns]
    to_tensor(df.head(1000))  # compile or load the kernel
    to_tensor(df.head(1000), order="F")
    out = {
        "rows": n,
        "to_tensor_C_s": _median_s(lambda: to_tensor(df), repeat),
        "to_tensor_F_s": _median_s(lambda: to_tensor(df, order="F"), repeat),
        "polars_to_numpy_s": _median_s(lambda: df.to_numpy(), repeat),
        "polars_to_numpy_C_s": _median_s(lambda: df.to_numpy(order="c"), repeat),
        "numpy_column_stack_s": _median_s(lambda: np.column_stack(cols), repeat),
    }
    assert np.array_equal(to_tensor(df).numpy(), np.column_stack(cols))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="1e3,1e4,1e5,1e6,1e7", help="comma-separated row counts"
    )
    parser.add_argument("--max-rows", action="store_true", help="also run 5e7 rows")
    parser.add_argument("--repeat", type=int, default=5, help="repeats for to_tensor timings")
    parser.add_argument("--json", type=Path, help="save results as JSON here")
    args = parser.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    if args.max_rows:
        sizes.append(50_000_000)

    single, matrix = [], []
    for n in sizes:
        single.extend(bench_as_tensor(n))
        matrix.append(bench_to_tensor(n, args.repeat))

    print("## as_tensor (one float64 column, median of 7x200 calls)\n")
    print("| rows | source | µs per call | Arrow bytes allocated | tracemalloc peak | copied |")
    print("| ---: | --- | ---: | ---: | ---: | --- |")
    for r in single:
        print(
            f"| {r['rows']:,} | {r['source']} | {r['as_tensor_us']:.1f} | "
            f"{r['arrow_bytes_allocated']} | {r['tracemalloc_peak_bytes']} | {r['copied']} |"
        )
    print(f"\n## to_tensor, 8 float64 columns (median of {args.repeat})\n")
    print(
        "| rows | to_tensor C (ms) | to_tensor F (ms) | polars to_numpy (F, ms) "
        "| polars to_numpy(order='c') (ms) | np.column_stack (ms) "
        "| polars F / ours C | polars C / ours C | column_stack / ours C |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for m in matrix:
        c, f = m["to_tensor_C_s"], m["to_tensor_F_s"]
        p, pc_, ns = m["polars_to_numpy_s"], m["polars_to_numpy_C_s"], m["numpy_column_stack_s"]
        print(
            f"| {m['rows']:,} | {c * 1e3:.2f} | {f * 1e3:.2f} | {p * 1e3:.2f} | {pc_ * 1e3:.2f} "
            f"| {ns * 1e3:.2f} | {p / c:.2f}x | {pc_ / c:.2f}x | {ns / c:.2f}x |"
        )
    if args.json:
        args.json.write_text(json.dumps({"as_tensor": single, "to_tensor": matrix}, indent=2))


if __name__ == "__main__":
    main()
