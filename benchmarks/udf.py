"""User functions (`cb.udf`): haversine distance between two coordinate pairs, end to end.

Run: python benchmarks/udf.py [--sizes 1e5,1e6,1e7] [--repeats 5] [--json out.json]

The workload: the great-circle distance in km between (lat1, lon1) and (lat2, lon2),
four float64 columns in degrees (uniform over the globe, no nulls, so that NumPy takes
part), written once as a Python function. Contenders, all in one run with the rounds
interleaved (contender 1, 2, ..., then again) so machine noise falls on all of them
alike; the tables give medians:

* colbridge, **traced** udf: the function over expressions (``.sin()``, ``.sqrt()``,
  ``.arcsin()``), traced once into the IR and fused into one kernel.
* colbridge, **compiled** udf: the same function over floats with ``math``, compiled by
  numba and called per row from inside the fused kernel (``return_dtype="float64"``).
* polars ``map_batches``: the NumPy function over the four columns' NumPy views.
* polars native expressions: the same formula as polars expressions (eager).
* NumPy: the function over the four columns' arrays.
* a hand-written numba kernel: one ``prange`` loop over the four arrays into a
  float64 buffer wrapped as an Arrow array, the roofline.

colbridge runs over a polars frame, one lazy handle reused (plan warmed, background
compiles awaited, as in a loop), on the default CPU tier. Every answer is checked
against NumPy's before timing (``rtol=1e-12``: the contenders' libm differ in the last
bits of ``sin``/``cos``/``arcsin``). The goal: colbridge at least 3x polars
``map_batches``. Ratios are contender time ÷ colbridge (traced) time: > 1 means
colbridge is faster.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from collections.abc import Callable, Mapping
from typing import Any

import numba
import numpy as np
import polars as pl
import pyarrow as pa
from fused_cpu import machine, time_all

import colbridge as cb

R_KM = 6371.0088
RAD = math.pi / 180.0
BASE = "colbridge traced udf"
COMPILED = "colbridge compiled udf"
MAP_BATCHES = "polars map_batches"
HAND = "hand kernel (numba prange)"
GOAL = 3.0


# -- the function, four ways ----------------------------------------------------------------
@cb.udf
def haversine(lat1: Any, lon1: Any, lat2: Any, lon2: Any) -> Any:
    """Traced: the same operators and methods work on expressions."""
    s1 = ((lat2 - lat1) * (RAD / 2)).sin()
    s2 = ((lon2 - lon1) * (RAD / 2)).sin()
    a = s1 * s1 + (lat1 * RAD).cos() * (lat2 * RAD).cos() * s2 * s2
    return a.sqrt().arcsin() * (2 * R_KM)


def haversine_scalar(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """One row, with `math`: compiled by numba."""
    s1 = math.sin((lat2 - lat1) * (RAD / 2))
    s2 = math.sin((lon2 - lon1) * (RAD / 2))
    a = s1 * s1 + math.cos(lat1 * RAD) * math.cos(lat2 * RAD) * s2 * s2
    return math.asin(math.sqrt(a)) * (2 * R_KM)


haversine_compiled = cb.udf(haversine_scalar, return_dtype="float64")


def haversine_numpy(lat1: Any, lon1: Any, lat2: Any, lon2: Any) -> Any:
    s1 = np.sin((lat2 - lat1) * (RAD / 2))
    s2 = np.sin((lon2 - lon1) * (RAD / 2))
    a = s1 * s1 + np.cos(lat1 * RAD) * np.cos(lat2 * RAD) * s2 * s2
    return np.arcsin(np.sqrt(a)) * (2 * R_KM)


def haversine_polars(lat1: pl.Expr, lon1: pl.Expr, lat2: pl.Expr, lon2: pl.Expr) -> pl.Expr:
    s1 = ((lat2 - lat1) * (RAD / 2)).sin()
    s2 = ((lon2 - lon1) * (RAD / 2)).sin()
    a = s1 * s1 + (lat1 * RAD).cos() * (lat2 * RAD).cos() * s2 * s2
    return a.sqrt().arcsin() * (2 * R_KM)


@numba.njit(parallel=True, nogil=True, cache=True)
def _hand(lat1, lon1, lat2, lon2, out):  # type: ignore[no-untyped-def]
    for i in numba.prange(out.shape[0]):
        s1 = math.sin((lat2[i] - lat1[i]) * (RAD / 2))
        s2 = math.sin((lon2[i] - lon1[i]) * (RAD / 2))
        a = s1 * s1 + math.cos(lat1[i] * RAD) * math.cos(lat2[i] * RAD) * s2 * s2
        out[i] = math.asin(math.sqrt(a)) * (2 * R_KM)


COLUMNS = ("lat1", "lon1", "lat2", "lon2")


def make_frame(n: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    lat = lambda: rng.uniform(-90.0, 90.0, n)  # noqa: E731
    lon = lambda: rng.uniform(-180.0, 180.0, n)  # noqa: E731
    return pl.DataFrame({"lat1": lat(), "lon1": lon(), "lat2": lat(), "lon2": lon()})


def contenders(frame: pl.DataFrame) -> dict[str, Callable[[], object]]:
    arrays = [frame[c].to_numpy() for c in COLUMNS]
    traced = cb.lazy(frame).with_columns(d=haversine(*COLUMNS))
    compiled = cb.lazy(frame).with_columns(d=haversine_compiled(*COLUMNS))
    mapped = pl.map_batches(
        list(COLUMNS),
        lambda s: pl.Series(haversine_numpy(*(x.to_numpy() for x in s))),
        return_dtype=pl.Float64,
    )
    native = haversine_polars(*(pl.col(c) for c in COLUMNS))
    n = frame.height

    def hand() -> object:
        buf = pa.allocate_buffer(8 * n)
        _hand(*arrays, np.frombuffer(buf, dtype=np.float64))
        return pa.Array.from_buffers(pa.float64(), n, [None, buf])

    return {
        BASE: lambda: traced.compute(device="cpu"),
        COMPILED: lambda: compiled.compute(device="cpu"),
        MAP_BATCHES: lambda: frame.with_columns(d=mapped),
        "polars expressions": lambda: frame.with_columns(d=native),
        "numpy": lambda: haversine_numpy(*arrays),
        HAND: hand,
    }


def checker(frame: pl.DataFrame) -> Callable[[str, object], None]:
    want = haversine_numpy(*(frame[c].to_numpy() for c in COLUMNS))

    def check(name: str, result: object) -> None:
        if isinstance(result, pl.DataFrame):
            got = result["d"].to_numpy()
        elif isinstance(result, pa.Array):
            got = result.to_numpy(zero_copy_only=False)
        else:
            got = np.asarray(result)
        if not np.allclose(got, want, rtol=1e-12, atol=0.0):
            worst = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-300)))
            msg = f"{name}: answer differs from NumPy's (worst relative error {worst:.3g})"
            raise SystemExit(msg)

    return check


def run(n: int, repeats: int) -> dict[str, float]:
    frame = make_frame(n)
    times = time_all(contenders(frame), repeats, checker(frame))
    print(f"  {n:,} rows done", file=sys.stderr)
    return times


def summary(times: Mapping[str, float]) -> dict[str, Any]:
    """Ratios (> 1: colbridge faster) and whether the goal is met."""
    base, compiled = times[BASE], times[COMPILED]
    return {
        "traced_s": base,
        "compiled_s": compiled,
        "traced_vs_map_batches": times[MAP_BATCHES] / base,
        "compiled_vs_map_batches": times[MAP_BATCHES] / compiled,
        "traced_vs_polars_expressions": times["polars expressions"] / base,
        "traced_vs_numpy": times["numpy"] / base,
        "traced_of_hand": times[HAND] / base,
        "compiled_of_hand": times[HAND] / compiled,
        "goal_met": min(times[MAP_BATCHES] / base, times[MAP_BATCHES] / compiled) >= GOAL,
    }


def markdown(runs: Mapping[int, Mapping[str, float]], meta: Mapping[str, str], repeats: int) -> str:
    lines = ["# user functions benchmark (haversine)", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines += [
        "",
        f"Goal: colbridge (traced and compiled) >= {GOAL}x polars `map_batches`. Times are "
        f"medians of {repeats} interleaved rounds; `÷ traced` = contender time ÷ colbridge "
        "traced time (> 1: colbridge faster). Every answer was checked against NumPy's "
        "before timing.",
    ]
    for n, times in runs.items():
        lines += ["", f"## {n:,} rows", "", "| contender | time | ÷ traced |", "|---|---:|---:|"]
        for name, t in times.items():
            lines.append(f"| {name} | {t * 1e3:.3f} ms | {t / times[BASE]:.2f}x |")
    lines += ["", "## Summary: speed ratios, > 1: colbridge faster", ""]
    lines += [
        "| rows | traced vs map_batches | compiled vs map_batches | traced vs polars exprs "
        "| traced vs NumPy | traced ÷ hand | compiled ÷ hand | goal |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for n, times in runs.items():
        s = summary(times)
        lines.append(
            f"| {n:,} | {s['traced_vs_map_batches']:.2f} | {s['compiled_vs_map_batches']:.2f} | "
            f"{s['traced_vs_polars_expressions']:.2f} | {s['traced_vs_numpy']:.2f} | "
            f"{s['traced_of_hand']:.2f} | {s['compiled_of_hand']:.2f} | "
            f"{'met' if s['goal_met'] else 'missed'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", "--size", default="1e5,1e6,1e7",
                        help="comma-separated row counts (1e7: 10 million)")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", default=None, help="write medians and ratios here")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    runs = {n: run(n, args.repeats) for n in sizes}
    meta = {
        # the interpreter by name, not by its path on this machine
        "command": f"`{shlex.join(['python', *sys.argv])}`",
        **machine(),
        "data": "lat1, lon1, lat2, lon2: float64 degrees, uniform over the globe, no nulls",
    }
    print(markdown(runs, meta, args.repeats))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            out = {"meta": meta, "runs": {str(n): t for n, t in runs.items()}}
            json.dump({**out, "summary": {str(n): summary(t) for n, t in runs.items()}}, f,
                      indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
