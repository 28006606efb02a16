"""Fused CPU kernels end to end vs pandas, pandas.eval, numexpr, pyarrow, polars, NumPy.

Run: python benchmarks/fused_cpu.py [--sizes 1e3,1e5,1e6,1e7,5e7] [--json out.json]

Every contender computes the same expressions on the same data in one run;
the table gives medians and ratios (contender time / colbridge time, so > 1
means colbridge is faster). A STREAM-triad kernel gives the memory roofline:
"eff. GB/s" counts the bytes an ideal fused kernel must move (inputs read
once, outputs written once).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable

import numba
import numexpr as ne
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

import colbridge as cb


@numba.njit(parallel=True, cache=True)
def _triad(a, b, c, s):  # type: ignore[no-untyped-def]
    for i in numba.prange(a.shape[0]):
        a[i] = b[i] + s * c[i]


def _arrow_out(n: int) -> np.ndarray:
    return np.frombuffer(pa.allocate_buffer(n * 8), dtype=np.float64)


def _time_all(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median time of each function; rounds interleave the contenders so that
    machine noise and order effects fall on all of them alike."""
    for fn in fns.values():
        fn()  # warm (compiles, page faults)
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
    return {name: statistics.median(s) for name, s in samples.items()}


def run(n: int, repeats: int) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(0)
    a, b = rng.random(n) + 0.5, rng.random(n) + 0.5
    c = rng.random(n) + 0.5
    pdf = pd.DataFrame({"a": a, "b": b, "c": c})
    pldf = pl.DataFrame({"a": a, "b": b, "c": c})
    table = pldf.to_arrow()
    z_cb = (cb.col("a") * cb.col("b") + cb.col("c")).sqrt() * 2 - cb.col("a") / cb.col("c")
    w_cb = cb.when(cb.col("a") > cb.col("b")).then(cb.col("a")).otherwise(cb.col("b")) * cb.col("c")
    z_pl = (pl.col("a") * pl.col("b") + pl.col("c")).sqrt() * 2 - pl.col("a") / pl.col("c")
    w_pl = pl.when(pl.col("a") > pl.col("b")).then(pl.col("a")).otherwise(pl.col("b")) * pl.col("c")
    q1_pl, q2_pl = pldf.gpu.with_columns(z=z_cb), pldf.gpu.with_columns(z=z_cb, w=w_cb)
    q1_pd, q2_pd = pdf.gpu.with_columns(z=z_cb), pdf.gpu.with_columns(z=z_cb, w=w_cb)
    lazy = pldf.lazy()

    def pandas_eager(two: bool) -> object:
        out = pdf.assign(z=np.sqrt(pdf.a * pdf.b + pdf.c) * 2 - pdf.a / pdf.c)
        if two:
            out = out.assign(w=pdf.a.where(pdf.a > pdf.b, pdf.b) * pdf.c)
        return out

    def pandas_eval(two: bool) -> object:
        text = "z = sqrt(a * b + c) * 2 - a / c"
        out = pdf.eval(text)
        if two:
            out["w"] = np.where(pdf.a > pdf.b, pdf.a, pdf.b) * pdf.c
        return out

    def numexpr_(two: bool) -> object:
        env = {"a": a, "b": b, "c": c}
        z = ne.evaluate("sqrt(a * b + c) * 2 - a / c", local_dict=env)
        if two:
            return z, ne.evaluate("where(a > b, a, b) * c", local_dict=env)
        return z

    def numpy_(two: bool) -> object:
        z = np.sqrt(a * b + c) * 2 - a / c
        if two:
            return z, np.where(a > b, a, b) * c
        return z

    def pyarrow_(two: bool) -> object:
        ta, tb, tc = table["a"], table["b"], table["c"]
        z = pc.subtract(
            pc.multiply(pc.sqrt(pc.add(pc.multiply(ta, tb), tc)), 2), pc.divide(ta, tc)
        )
        if two:
            return z, pc.multiply(pc.if_else(pc.greater(ta, tb), ta, tb), tc)
        return z

    exprs1 = {"z": z_pl}
    exprs2 = {"z": z_pl, "w": w_pl}
    contenders: dict[str, Callable[[bool], object]] = {
        "colbridge (polars)": lambda two: (q2_pl if two else q1_pl).compute(),
        "colbridge (pandas)": lambda two: (q2_pd if two else q1_pd).compute(),
        "polars eager": lambda two: pldf.with_columns(**(exprs2 if two else exprs1)),
        "polars lazy": lambda two: lazy.with_columns(**(exprs2 if two else exprs1)).collect(),
        "polars streaming": lambda two: lazy.with_columns(**(exprs2 if two else exprs1)).collect(
            engine="streaming"
        ),
        "numexpr": numexpr_,
        "pyarrow.compute": pyarrow_,
        "numpy": numpy_,
        "pandas eager": pandas_eager,
        "pandas.eval": pandas_eval,
    }
    results: dict[str, dict[str, float]] = {}
    for outputs, two in (("1 output", False), ("2 outputs", True)):
        fns = {name: (lambda f=f, two=two: f(two)) for name, f in contenders.items()}
        out = _arrow_out(n)
        fns["numba triad"] = lambda out=out: _triad(out, a, b, 3.0)
        row = _time_all(fns, repeats)
        triad = row.pop("numba triad")
        results[outputs] = row
        results.setdefault("triad", {})[outputs] = triad
    # the roofline: the better of the two triad measurements
    results["triad"] = {"numba triad": min(results["triad"].values())}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e3,1e5,1e6,1e7", help="comma-separated row counts")
    parser.add_argument("--json", default=None, help="write raw medians here")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    print(f"# fused CPU benchmark — {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, numba threads {numba.get_num_threads()}")  # fmt: skip
    raw = {}
    for n in sizes:
        repeats = 50 if n <= 1e5 else (15 if n <= 1e6 else 5)
        res = run(n, repeats)
        raw[n] = res
        triad = res["triad"]["numba triad"]
        triad_gbs = 3 * 8 * n / triad / 1e9
        print(f"\n## {n:,} rows (median of {repeats}); triad {triad_gbs:.1f} GB/s\n")
        print("| contender | 1 output | ratio | 2 outputs | ratio |")
        print("|---|---:|---:|---:|---:|")
        base1 = res["1 output"]["colbridge (polars)"]
        base2 = res["2 outputs"]["colbridge (polars)"]
        for name in res["1 output"]:
            t1, t2 = res["1 output"][name], res["2 outputs"][name]
            print(f"| {name} | {t1 * 1e3:.3f} ms | {t1 / base1:.2f}x | {t2 * 1e3:.3f} ms | "
                  f"{t2 / base2:.2f}x |")  # fmt: skip
        eff1 = 4 * 8 * n / base1 / 1e9
        eff2 = 5 * 8 * n / base2 / 1e9
        print(f"\ncolbridge effective bandwidth: {eff1:.1f} GB/s (1 output, "
              f"{eff1 / triad_gbs:.2f} x triad), {eff2:.1f} GB/s (2 outputs, "
              f"{eff2 / triad_gbs:.2f} x triad)")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump({str(k): v for k, v in raw.items()}, f, indent=1)


if __name__ == "__main__":
    main()
