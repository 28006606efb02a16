"""First-compute benchmark: import time, compile waits, small warm computes and the CLI.

Run: python benchmarks/first_compute.py [--repeats 5] [--cold-numba] [--json out.json]

What a new user waits for, each figure measured in fresh Python processes
whose kernel cache is empty (``COLBRIDGE_CACHE_DIR`` set to a new temporary
folder; ``--cold-numba`` also points ``NUMBA_CACHE_DIR`` there, so that the
helpers numba caches inside the installed package compile again, as right
after installing):

1. ``import colbridge``: the time inside the process and the whole process's
   wall time, medians over fresh processes; then ``python -X importtime``
   summed per top-level package (one process), the largest contributors.
2. The first ``compute()`` of a new expression shape (two outputs over three
   float64 columns with 10% nulls, on a polars frame) at 1,000 and 100,000
   rows, on the ``auto`` and ``compiled`` tiers (``COLBRIDGE_CPU_TIER``); then
   the same in a second new process that finds the first one's disk cache.
3. The warm compute at 1,000 rows on a polars and on a pandas frame, timed
   interleaved with the other contenders of ``fused_cpu.py``'s "1 output"
   workload (polars, pandas, NumPy, ...), and back to back (the same handle
   alone, over and over); then against the small-compute roofline, a minimal
   round trip through each frame (`fused_cpu.frame_round_trips`).
4. ``colbridge run`` on a flights-like Parquet file of 336,776 rows (int and
   float columns with nulls, three string columns): 8 derived features and a
   filter, against the same work as a polars script run with ``python -c``;
   wall time of each whole process, with an empty and with a warm kernel
   cache. Both outputs are compared before the table is printed.

The goals from the issue are printed next to each figure as a reference;
nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FLIGHTS_ROWS = 336_776

# -- code run in the fresh processes (fixed text, arguments on the command line) ---------
IMPORT_CODE = """
import json, time
t0 = time.perf_counter()
import colbridge
print(json.dumps({"import_s": time.perf_counter() - t0}))
"""

FIRST_COMPUTE_CODE = """
import json, sys, time
import numpy as np, polars as pl, pyarrow as pa
import colbridge as cb
n = int(sys.argv[1])
rng = np.random.default_rng(0)
df = pl.DataFrame({k: pa.array(rng.random(n) + 0.5, mask=rng.random(n) < 0.1) for k in "abc"})
a, b, c = cb.col("a"), cb.col("b"), cb.col("c")
t0 = time.perf_counter()
out = df.gpu.with_columns(
    z=(a * b + c).sqrt() * 2 - a / c, w=cb.when(a > b).then(a).otherwise(b) * c
).compute()
first = time.perf_counter() - t0
print(json.dumps({"first_s": first, "rows": out.height}))
"""

WARM_CODE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import fused_cpu
repeats = int(sys.argv[2])
name = "1 output"
workload = fused_cpu.WORKLOADS[name](1000)
interleaved = fused_cpu.time_all(workload.contenders, repeats, fused_cpu.checker(name, workload))
alone = {k: fused_cpu.time_all({k: workload.contenders[k]}, repeats)[k]
         for k in ("colbridge (polars)", "colbridge (pandas)")}
trips = fused_cpu.frame_round_trips(1000)
for kind in ("polars", "pandas"):
    ours = workload.contenders[f"colbridge ({kind})"]().get_column("z") if kind == "polars" \
        else workload.contenders[f"colbridge ({kind})"]()["z"]
    theirs = trips[f"frame round trip ({kind})"]()
    theirs = theirs.get_column("z") if kind == "polars" else theirs["z"]
    assert list(ours) == list(theirs), kind
floor = {k: fused_cpu.time_all({k: f}, repeats)[k] for k, f in trips.items()}
# Python function calls per compute (cProfile's count, libraries' own included): what the
# timings above spend, counted exactly, whatever the machine's noise
import cProfile, pstats
calls = {}
for k, f in {**{k: workload.contenders[k] for k in alone}, **trips}.items():
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(100):
        f()
    profile.disable()
    calls[k] = pstats.Stats(profile).total_calls / 100
print(json.dumps({"interleaved": interleaved, "alone": alone, "floor": floor, "calls": calls}))
"""

#: The 8 derived features and the filter, as `colbridge run` arguments ...
FEATURES = {
    "gain": "dep_delay - arr_delay",
    "speed": "distance / air_time * 60",
    "dep_hour": "dep_time // 100",
    "dep_minute": "dep_time % 100",
    "late": "arr_delay > 15",
    "log_distance": "log1p(distance)",
    "delay_z": "(dep_delay - mean(dep_delay)) / std(dep_delay)",
    "total_delay": "fill_null(dep_delay, 0) + fill_null(arr_delay, 0)",
}
FILTER = "air_time > 30"

#: ... and the same work as a polars script.
POLARS_CODE = """
import sys
import polars as pl
c = pl.col
(
    pl.scan_parquet(sys.argv[1])
    .with_columns(
        gain=c("dep_delay") - c("arr_delay"),
        speed=c("distance") / c("air_time") * 60,
        dep_hour=c("dep_time") // 100,
        dep_minute=c("dep_time") % 100,
        late=c("arr_delay") > 15,
        log_distance=c("distance").log1p(),
        delay_z=(c("dep_delay") - c("dep_delay").mean()) / c("dep_delay").std(),
        total_delay=c("dep_delay").fill_null(0) + c("arr_delay").fill_null(0),
    )
    .filter(c("air_time") > 30)
    .sink_parquet(sys.argv[2], compression="zstd")
)
"""


# -- running fresh processes -----------------------------------------------------------
@contextmanager
def empty_cache(cold_numba: bool) -> Iterator[dict[str, str]]:
    """An environment whose kernel cache is a new, empty folder (removed afterwards)."""
    folder = tempfile.mkdtemp(prefix="colbridge-first-")
    env = {**os.environ, "COLBRIDGE_CACHE_DIR": folder}
    if cold_numba:
        env["NUMBA_CACHE_DIR"] = folder
    try:
        yield env
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(argv: Sequence[str], env: Mapping[str, str]) -> tuple[str, float]:
    """Run a command to completion; its stdout and its wall time."""
    t0 = time.perf_counter()
    proc = subprocess.run(list(argv), env=dict(env), capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        msg = f"`{shlex.join(argv[:4])} ...` failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
        raise RuntimeError(msg)
    return proc.stdout, seconds


def python_json(code: str, args: Sequence[str], env: Mapping[str, str]) -> dict[str, Any]:
    """Run code in a new interpreter; the JSON object it printed last."""
    stdout, _ = run([sys.executable, "-c", code, *args], env)
    return json.loads(stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


# -- 1. import ------------------------------------------------------------------------------
def import_time(repeats: int, cold_numba: bool) -> dict[str, Any]:
    inside, wall = [], []
    for _ in range(repeats):
        with empty_cache(cold_numba) as env:
            stdout, seconds = run([sys.executable, "-c", IMPORT_CODE], env)
        inside.append(json.loads(stdout)["import_s"])
        wall.append(seconds)
    return {"import_s": inside, "process_s": wall, "top": import_contributors(cold_numba)}


_IMPORTTIME = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def import_contributors(cold_numba: bool, top: int = 12) -> dict[str, Any]:
    """``python -X importtime -c 'import colbridge'``: self time summed per top-level
    package (so that the parts add up to the whole), largest first, with module counts,
    and the total over every module."""
    with empty_cache(cold_numba) as env:
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import colbridge"],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
    self_us: dict[str, int] = defaultdict(int)
    modules: dict[str, int] = defaultdict(int)
    for line in proc.stderr.splitlines():
        m = _IMPORTTIME.match(line)
        if m:
            package = m.group(4).split(".")[0]
            self_us[package] += int(m.group(1))
            modules[package] += 1
    ranked = sorted(self_us.items(), key=lambda kv: -kv[1])[:top]
    return {
        "total_ms": sum(self_us.values()) / 1e3,
        "modules": sum(modules.values()),
        "top": [(name, us / 1e3, modules[name]) for name, us in ranked],
    }


# -- 2. first compute -------------------------------------------------------------------------
def first_compute(repeats: int, cold_numba: bool) -> list[dict[str, Any]]:
    rows = []
    for tier in ("auto", "compiled"):
        for n in (1_000, 100_000):
            empty, warm = [], []
            for _ in range(repeats):
                with empty_cache(cold_numba) as env:
                    env["COLBRIDGE_CPU_TIER"] = tier
                    empty.append(python_json(FIRST_COMPUTE_CODE, [str(n)], env)["first_s"])
                    # a second new process finds the first one's disk cache
                    warm.append(python_json(FIRST_COMPUTE_CODE, [str(n)], env)["first_s"])
            rows.append({"tier": tier, "rows": n, "empty_cache_s": empty, "warm_cache_s": warm})
    return rows


# -- 3. warm compute at 1,000 rows -------------------------------------------------------------
def warm_small(repeats: int, cold_numba: bool) -> dict[str, Any]:
    with empty_cache(cold_numba) as env:
        return python_json(WARM_CODE, [str(HERE), str(repeats)], env)


# -- 4. colbridge run against a polars script -------------------------------------------------
def write_flights(path: Path, n: int = FLIGHTS_ROWS) -> None:
    """A Parquet file shaped like nycflights13's flights table (generated, seeded)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(13)
    cancelled = rng.random(n) < 0.025  # no departure, no arrival, no air time
    diverted = cancelled | (rng.random(n) < 0.003)  # departed, never arrived

    def ints(lo: int, hi: int) -> np.ndarray:
        return rng.integers(lo, hi, n)

    sched_dep = ints(5, 24) * 100 + ints(0, 60)
    dep_delay = np.round(rng.gamma(0.6, 25.0, n) - 8.0)
    dep_time = (sched_dep // 100 * 60 + sched_dep % 100 + dep_delay.astype(np.int64)) % 1440
    distance = np.round(rng.lognormal(6.7, 0.6, n)).clip(17, 4983)
    air_time = np.round(distance / rng.normal(7.0, 0.6, n) + rng.normal(0, 5, n)).clip(20, None)
    arr_delay = np.round(dep_delay + rng.normal(-5, 12, n))
    carriers = np.array(["UA", "B6", "EV", "DL", "AA", "MQ", "US", "9E", "WN", "VX"])
    airports = np.array(["EWR", "JFK", "LGA"])
    table = pa.table(
        {
            "year": pa.array(np.full(n, 2013, dtype=np.int32)),
            "month": pa.array(ints(1, 13).astype(np.int32)),
            "day": pa.array(ints(1, 29).astype(np.int32)),
            "dep_time": pa.array(dep_time // 60 * 100 + dep_time % 60, mask=cancelled),
            "sched_dep_time": pa.array(sched_dep),
            "dep_delay": pa.array(dep_delay, mask=cancelled),
            "arr_delay": pa.array(arr_delay, mask=diverted),
            "carrier": pa.array(carriers[ints(0, len(carriers))]),
            "flight": pa.array(ints(1, 8500)),
            "origin": pa.array(airports[ints(0, 3)]),
            "dest": pa.array(np.char.add("D", ints(0, 105).astype(str))),
            "air_time": pa.array(air_time, mask=diverted),
            "distance": pa.array(distance),
        }
    )
    pq.write_table(table, path, compression="zstd")


def cli_args(src: Path, out: Path) -> list[str]:
    exe = shutil.which("colbridge", path=str(Path(sys.executable).parent))
    argv = [exe] if exe else [sys.executable, "-m", "colbridge.cli"]
    argv += ["run", str(src), "-o", str(out), "--quiet"]
    for name, expr in FEATURES.items():
        argv += ["--with", f"{name} = {expr}"]
    return [*argv, "--filter", FILTER]


def compare_outputs(ours: Path, theirs: Path) -> None:
    """Both tools wrote the same table (floats within 1e-9)."""
    import polars as pl
    from polars.testing import assert_frame_equal

    assert_frame_equal(
        pl.read_parquet(ours), pl.read_parquet(theirs), check_exact=False, rel_tol=1e-9
    )


def cli(repeats: int, cold_numba: bool) -> dict[str, Any]:
    times: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="colbridge-flights-") as tmp:
        src, ours, theirs = (Path(tmp, name) for name in ("in.parquet", "cb.parquet", "pl.parquet"))
        write_flights(src)
        colbridge_run = cli_args(src, ours)
        polars_script = [sys.executable, "-c", POLARS_CODE, str(src), str(theirs)]
        for _ in range(repeats):
            with empty_cache(cold_numba) as env:
                # the first run compiles into the empty cache, the second finds it there
                times["colbridge run, empty kernel cache"].append(run(colbridge_run, env)[1])
                times["colbridge run, warm kernel cache"].append(run(colbridge_run, env)[1])
                times["polars script"].append(run(polars_script, env)[1])
            with empty_cache(cold_numba) as env:
                # what the NumPy tier of a short job saves: the same job compiled
                forced = {**env, "COLBRIDGE_CPU_TIER": "compiled"}
                times["colbridge run, compiled tier forced, empty kernel cache"].append(
                    run(colbridge_run, forced)[1])
        compare_outputs(ours, theirs)
    # as a reader would type it: no path of this machine in the results
    argv = cli_args(Path("flights.parquet"), Path("out.parquet"))
    argv = ["colbridge" if Path(argv[0]).name == "colbridge" else "python", *argv[1:]]
    return {"argv": argv, "times": dict(times)}


# -- report -----------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ms(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1e3:.1f} ms"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs"


def _spread(xs: Sequence[float], unit: Any = _ms) -> str:
    return f"{unit(_median(xs))} ({unit(min(xs))}–{unit(max(xs))})"


def markdown(res: Mapping[str, Any], meta: Mapping[str, str], repeats: int) -> str:
    lines = ["# first compute, import and CLI benchmark", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines += ["", "Medians over fresh processes, (min–max) after them.", ""]

    imp = res["import"]
    lines += [
        f"## `import colbridge` (fresh processes: {len(imp['import_s'])})",
        "",
        "| measure | median (min–max) | goal |",
        "|---|---:|---:|",
        f"| `import colbridge`, inside the process | {_spread(imp['import_s'])} | ≤ 200 ms |",
        f"| whole process, `python -c 'import colbridge'` | {_spread(imp['process_s'])} | |",
        "",
        "Largest contributors (`python -X importtime`, one process; self time summed per "
        "top-level package):",
        "",
        "| package | self time | modules |",
        "|---|---:|---:|",
    ]
    top = imp["top"]
    lines += [f"| {name} | {ms:.1f} ms | {count} |" for name, ms, count in top["top"]]
    lines.append(f"| all {top['modules']} modules | {top['total_ms']:.1f} ms | |")

    lines += [
        "",
        f"## First `compute()` of a new expression shape (fresh processes: {repeats} each)",
        "",
        "`with_columns(z=sqrt(a*b + c)*2 - a/c, w=when(a > b).then(a).otherwise(b)*c)` on a "
        "polars frame, three float64 columns with 10% nulls; the handle built and computed. "
        "On `auto` a first compute of at most 100,000 rows is evaluated with NumPy and "
        "compiles nothing, so a second process finds no kernel on disk either.",
        "",
        "| tier | rows | empty kernel cache | warm disk cache, new process | goal |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in res["first_compute"]:
        lines.append(
            f"| {row['tier']} | {row['rows']:,} | {_spread(row['empty_cache_s'])} | "
            f"{_spread(row['warm_cache_s'])} | ≤ 100 ms |"
        )

    warm = res["warm"]
    inter, alone = warm["interleaved"], warm["alone"]
    lines += [
        "",
        "## Warm `compute()` at 1,000 rows (one fresh process, after warming)",
        "",
        "Interleaved: timed in rounds with every contender of `fused_cpu.py`'s `1 output` "
        "workload (`z = sqrt(a*b + c)*2 - a/c`); back to back: the same handle alone.",
        "",
        "| contender | interleaved | back to back | goal |",
        "|---|---:|---:|---:|",
    ]
    goals = {"colbridge (polars)": "≤ 50 µs", "colbridge (pandas)": "≤ 100 µs"}
    for name, t in inter.items():
        back = _us(alone[name]) if name in alone else ""
        lines.append(f"| {name} | {_us(t)} | {back} | {goals.get(name, '')} |")
    floor = warm.get("floor")
    if floor:
        lines += [
            "",
            "The small-compute roofline (`fused_cpu.frame_round_trips`): the same `z` by a "
            "minimal round trip through the frame, back to back: the three columns' "
            "buffers read in place, the hand kernel on one thread, `z` added to a new frame "
            "of the input's kind (polars `hstack`; pandas `copy(deep=False)` and "
            "`insert`), with no plan, type check or null handling. Its answers equal "
            "colbridge's.",
            "",
            "Python calls: function calls per compute as cProfile counts them (the "
            "frame libraries' own included), exact where the times are noisy.",
            "",
            "| frame | round trip, back to back | colbridge back to back | ÷ round trip "
            "| Python calls: round trip / colbridge |",
            "|---|---:|---:|---:|---:|",
        ]
        calls = warm.get("calls", {})
        for kind in ("polars", "pandas"):
            trip_name, ours_name = f"frame round trip ({kind})", f"colbridge ({kind})"
            trip, ours = floor[trip_name], alone[ours_name]
            counted = (f"{calls[trip_name]:.0f} / {calls[ours_name]:.0f}"
                       if trip_name in calls else "")  # fmt: skip
            lines.append(f"| {kind} | {_us(trip)} | {_us(ours)} | {ours / trip:.2f} | {counted} |")

    run = res["cli"]
    polars_s = _median(run["times"]["polars script"])
    lines += [
        "",
        f"## `colbridge run` on a flights-like Parquet file ({FLIGHTS_ROWS:,} rows)",
        "",
        "Generated like nycflights13's flights (int and float columns with nulls, three "
        "string columns); 8 derived features and a filter, written to Parquet (zstd). "
        "Wall time of the whole process. Both outputs were compared and agree. A job of "
        "at most 10,000,000 rows runs on the NumPy tier and compiles nothing "
        "(`JOB_NUMPY_MAX_ROWS`); the last colbridge row forces the compiled kernels "
        "(`COLBRIDGE_CPU_TIER=compiled`) into an empty cache, to show the compile it avoids.",
        "",
        f"colbridge: `{shlex.join(['colbridge', *run['argv'][1:]])}`",
        "",
        "polars: the same expressions, `pl.scan_parquet(...).with_columns(...).filter(...)"
        ".sink_parquet(...)`, run with `python -c`.",
        "",
        "| contender | wall, median (min–max) | ÷ polars script | goal |",
        "|---|---:|---:|---:|",
    ]
    for name, xs in run["times"].items():
        goal = "≤ 2.00" if name.startswith("colbridge") else ""
        lines.append(f"| {name} | {_spread(xs)} | {_median(xs) / polars_s:.2f} | {goal} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per figure")
    parser.add_argument("--warm-repeats", type=int, default=200, help="rounds of the warm timing")
    parser.add_argument(
        "--cold-numba", action="store_true",
        help="also start numba's own cache empty (NUMBA_CACHE_DIR), as right after installing",
    )  # fmt: skip
    parser.add_argument("--json", default=None, help="write the raw times here")
    args = parser.parse_args()
    steps = {
        "import": lambda: import_time(args.repeats, args.cold_numba),
        "first_compute": lambda: first_compute(args.repeats, args.cold_numba),
        "warm": lambda: warm_small(args.warm_repeats, args.cold_numba),
        "cli": lambda: cli(args.repeats, args.cold_numba),
    }
    res: dict[str, Any] = {}
    for name, step in steps.items():
        t0 = time.perf_counter()
        res[name] = step()
        print(f"  {name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    import numba

    meta = {
        "command": f"`{shlex.join(sys.orig_argv)}`",
        "cpu": _cpu_model(),
        "cores": f"{os.cpu_count()} logical CPUs, numba {numba.__version__} "
        f"({numba.config.NUMBA_NUM_THREADS} threads)",
        "python": f"Python {platform.python_version()}",
        "kernel cache": "a new empty COLBRIDGE_CACHE_DIR per fresh process pair"
        + (" (and NUMBA_CACHE_DIR)" if args.cold_numba else ""),
    }
    print(markdown(res, meta, args.repeats))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"meta": meta, **res}, f, indent=1)


if __name__ == "__main__":
    main()
