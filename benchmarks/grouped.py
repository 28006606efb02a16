"""Grouped work end to end: ``over`` windows and ``group_by().agg()`` vs polars and pandas.

Run: python benchmarks/grouped.py [--rows 1e7] [--groups 10,1e3,1e6] [--keys int,str]
                                  [--repeats 5] [--json out.json]

Every contender computes the same thing on the same data in one run:

* ``demean``: ``x - x.mean().over(g)``
* ``zscore``: ``(x - x.mean().over(g)) / x.std().over(g)``
* ``agg``: ``group_by(g).agg(sum, mean, std, count)`` of ``x``
* ``quantiles``: ``group_by(g).agg(x.median(), x.quantile(0.9, "linear"))``
* ``rank``: ``x.rank().over(g)`` (average ranks within each group)

against polars (eager, lazy and the streaming engine; all keep first-appearance
order), pandas (``groupby().transform`` / ``groupby().agg``, ``sort=False``) and,
as the roofline of one grouped pass, a hand-written numba grouped sum and count
over precomputed int32 group ids. colbridge runs on the CPU with compiled
kernels; each call builds a new lazy handle, so keys are factorized every time
(the ids cache of a handle is measured apart, as ``zscore (same handle)``).
The table gives medians and ratios (contender time / colbridge time: > 1 means
colbridge is faster). Results are machine-dependent: do not commit them.
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
import numpy as np
import pandas as pd
import polars as pl

import colbridge as cb


@numba.njit(parallel=True, cache=True)
def _grouped_sum(ids, x, groups, chunks):  # type: ignore[no-untyped-def]
    total = np.zeros((chunks, groups))
    count = np.zeros((chunks, groups), dtype=np.int64)
    per = (x.shape[0] + chunks - 1) // chunks
    for c in numba.prange(chunks):
        for i in range(c * per, min(x.shape[0], (c + 1) * per)):
            g = ids[i]
            total[c, g] += x[i]
            count[c, g] += 1
    return total.sum(axis=0), count.sum(axis=0)


def _time_all(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median time of each function; rounds interleave the contenders so that machine
    noise falls on all of them alike."""
    for fn in fns.values():
        fn()  # warm (compiles, page faults)
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
    return {name: statistics.median(s) for name, s in samples.items()}


def _data(rows: int, groups: int, key: str) -> tuple[pl.DataFrame, pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(groups)
    codes = rng.integers(0, groups, rows)
    x = rng.normal(size=rows)
    g = codes if key == "int" else np.char.add("k", codes.astype(str)).astype(object)
    df = pl.DataFrame({"g": g, "x": x})
    pdf = pd.DataFrame({"g": g, "x": x})
    if key == "str":
        pdf["g"] = pdf["g"].astype("string[pyarrow]")
    _, ids = np.unique(codes, return_inverse=True)
    return df, pdf, ids.astype(np.int32)


def run(rows: int, groups: int, key: str, repeats: int) -> dict[str, dict[str, float]]:
    df, pdf, ids = _data(rows, groups, key)
    x = cb.col("x")
    px = pl.col("x")
    exprs = {
        "demean": (x - x.mean().over("g"), px - px.mean().over("g")),
        "zscore": ((x - x.mean().over("g")) / x.std().over("g"),
                   (px - px.mean().over("g")) / px.std().over("g")),
    }  # fmt: skip
    out: dict[str, dict[str, float]] = {}
    for name, (ours, theirs) in exprs.items():
        fns: dict[str, Callable[[], object]] = {
            "colbridge": lambda ours=ours: df.gpu.with_columns(z=ours).compute(device="cpu"),
            "polars eager": lambda t=theirs: df.with_columns(z=t),
            "polars lazy": lambda t=theirs: df.lazy().with_columns(z=t).collect(),
            "polars streaming": lambda t=theirs: df.lazy().with_columns(z=t).collect(
                engine="streaming"),
        }  # fmt: skip
        # a new GroupBy per call: pandas keeps its grouping on the object
        if name == "demean":
            fns["pandas"] = lambda: pdf.assign(
                z=pdf["x"] - pdf.groupby("g", sort=False)["x"].transform("mean"))
        else:
            def zscore() -> object:
                by = pdf.groupby("g", sort=False)["x"]
                return pdf.assign(z=(pdf["x"] - by.transform("mean")) / by.transform("std"))

            fns["pandas"] = zscore
        out[name] = _time_all(fns, repeats)
    held = df.gpu.with_columns(z=exprs["zscore"][0])
    out["zscore (same handle)"] = _time_all({"colbridge": lambda: held.compute(device="cpu")},
                                            repeats)  # fmt: skip
    aggs = (x.sum(), x.mean().alias("m"), x.std().alias("s"), x.count().alias("c"))
    paggs = (px.sum(), px.mean().alias("m"), px.std().alias("s"), px.count().alias("c"))
    out["agg"] = _time_all({
        "colbridge": lambda: df.gpu.group_by("g").agg(*aggs).compute(device="cpu"),
        "polars eager": lambda: df.group_by("g", maintain_order=True).agg(*paggs),
        "polars lazy": lambda: df.lazy().group_by("g", maintain_order=True).agg(*paggs).collect(),
        "polars streaming": lambda: df.lazy().group_by("g", maintain_order=True).agg(
            *paggs).collect(engine="streaming"),
        "pandas": lambda: pdf.groupby("g", sort=False)["x"].agg(["sum", "mean", "std", "count"]),
        "numba grouped sum (roofline)": lambda: _grouped_sum(
            ids, df["x"].to_numpy(), groups, numba.get_num_threads()),
    }, repeats)  # fmt: skip
    by = lambda: pdf.groupby("g", sort=False)["x"]  # noqa: E731
    qs = (x.median().alias("med"), x.quantile(0.9, "linear").alias("q9"))
    pqs = (px.median().alias("med"), px.quantile(0.9, "linear").alias("q9"))
    out["quantiles"] = _time_all({
        "colbridge": lambda: df.gpu.group_by("g").agg(*qs).compute(device="cpu"),
        "polars eager": lambda: df.group_by("g", maintain_order=True).agg(*pqs),
        "polars lazy": lambda: df.lazy().group_by("g", maintain_order=True).agg(*pqs).collect(),
        "polars streaming": lambda: df.lazy().group_by("g", maintain_order=True).agg(
            *pqs).collect(engine="streaming"),
        "pandas": lambda: (by().median(), by().quantile(0.9)),
    }, repeats)  # fmt: skip
    out["rank"] = _time_all({
        "colbridge": lambda: df.gpu.with_columns(r=x.rank().over("g")).compute(device="cpu"),
        "polars eager": lambda: df.with_columns(r=px.rank().over("g")),
        "polars lazy": lambda: df.lazy().with_columns(r=px.rank().over("g")).collect(),
        "polars streaming": lambda: df.lazy().with_columns(r=px.rank().over("g")).collect(
            engine="streaming"),
        "pandas": lambda: pdf.assign(r=by().rank()),
    }, repeats)  # fmt: skip
    return out


def _report(results: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = []
    for case, timings in results.items():
        lines.append(f"\n## {case}")
        lines.append(f"{'':32s} {'median s':>10s} {'ratio':>8s}")
        for name, contenders in timings.items():
            base = contenders["colbridge"]
            lines.append(f"{name}")
            for contender, seconds in contenders.items():
                lines.append(f"  {contender:30s} {seconds:10.4f} {seconds / base:8.2f}")
            others = {k: v for k, v in contenders.items() if k.startswith("polars")}
            if others:
                best = min(others, key=lambda k: others[k])
                lines.append(f"  -> polars' best ({best}) / colbridge: {others[best] / base:.2f}x")
            if "pandas" in contenders:
                lines.append(f"  -> pandas / colbridge: {contenders['pandas'] / base:.2f}x")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1e7")
    parser.add_argument("--groups", default="10,1e3,1e6")
    parser.add_argument("--keys", default="int,str")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = int(float(args.rows))
    results: dict[str, dict[str, dict[str, float]]] = {}
    for key in args.keys.split(","):
        for groups in (int(float(g)) for g in args.groups.split(",")):
            results[f"{key} keys, {groups} groups, {rows} rows"] = run(rows, groups, key,
                                                                      args.repeats)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"numba threads {numba.get_num_threads()}, polars {pl.__version__}")  # fmt: skip
    print(_report(results))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
