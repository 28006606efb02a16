"""Benchmark: cost of as_tensor per source kind, and to_tensor against polars and NumPy.

Run ``python benchmarks/bridge.py`` (``--max-rows`` adds 5e7 rows for
``as_tensor``, ``--json PATH`` saves the numbers, ``--markdown PATH`` the
tables). Everything compared is measured side by side: each repeat runs every
candidate once, in turn, so a noisy neighbour slows all of them alike, and the
figures are medians over the repeats.

* ``as_tensor``: median cost per call on pyarrow, polars, pandas and NumPy
  columns of float64, the bytes allocated while it ran (Arrow pool delta and
  tracemalloc peak), whether the view's data pointer is the source's own
  buffer, and the cost at each size relative to the smallest size.
* ``to_tensor`` of 8 float64 columns of a polars DataFrame, in C and F order,
  next to ``polars.DataFrame.to_numpy()`` (F order), ``to_numpy(order="c")``
  and ``numpy.column_stack`` (C order). Small sizes time a batch of calls per
  repeat so the timer's resolution does not matter.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from colbridge.columns import as_tensor, to_tensor


def _alloc(fn: Callable[[], Any]) -> tuple[int, int]:
    gc.collect()
    before = pa.total_allocated_bytes()
    tracemalloc.start()
    view = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    delta = pa.total_allocated_bytes() - before
    del view
    return delta, peak


def _side_by_side(
    fns: dict[str, Callable[[], Any]], repeat: int, number: dict[str, int]
) -> dict[str, float]:
    """Median seconds per call of each candidate; each repeat runs all of them in turn."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        gc.collect()
        for key, fn in fns.items():
            k = number[key]
            t0 = time.perf_counter()
            for _ in range(k):
                out = fn()
                del out
            times[key].append((time.perf_counter() - t0) / k)
    return {k: statistics.median(v) for k, v in times.items()}


def _source_address(kind: str, col: Any) -> int:
    if kind == "pyarrow":
        return int(col.buffers()[1].address)
    if kind == "polars":
        return int(col.to_numpy().ctypes.data)  # zero-copy for one chunk without nulls
    if kind == "pandas":
        return int(col.to_numpy(copy=False).ctypes.data)
    return int(col.ctypes.data)


def bench_as_tensor(n: int, repeat: int, number: int) -> list[dict[str, object]]:
    """Rows of the as_tensor table for one row count."""
    values = np.random.default_rng(0).normal(size=n)
    sources: dict[str, Any] = {
        "pyarrow": pa.array(values),
        "polars": pl.Series("x", values),
        "pandas": pd.Series(values),
        "numpy": values,
    }
    fns = {k: (lambda col=col: as_tensor(col)) for k, col in sources.items()}
    for fn in fns.values():
        fn()  # warm
    med = _side_by_side(fns, repeat, dict.fromkeys(fns, number))
    rows = []
    for kind, col in sources.items():
        arrow_bytes, py_peak = _alloc(fns[kind])
        view = as_tensor(col)
        rows.append(
            {
                "rows": n,
                "source": kind,
                "as_tensor_us": round(med[kind] * 1e6, 2),
                "arrow_bytes_allocated": arrow_bytes,
                "tracemalloc_peak_bytes": py_peak,
                "copied": view.copied,
                "same_address": view.data_address == _source_address(kind, col),
            }
        )
    return rows


def bench_to_tensor(n: int, repeat: int) -> dict[str, object]:
    """One row of the to_tensor table (seconds per call of each candidate)."""
    rng = np.random.default_rng(1)
    df = pl.DataFrame({f"c{i}": rng.normal(size=n) for i in range(8)})
    cols = [df.get_column(c).to_numpy() for c in df.columns]
    expected = np.column_stack(cols)
    assert np.array_equal(to_tensor(df).numpy(), expected)  # also compiles or loads kernels
    assert np.array_equal(to_tensor(df, order="F").numpy(), expected)
    fns: dict[str, Callable[[], Any]] = {
        "to_tensor_C_s": lambda: to_tensor(df),
        "to_tensor_F_s": lambda: to_tensor(df, order="F"),
        "polars_to_numpy_s": lambda: df.to_numpy(),
        "polars_to_numpy_C_s": lambda: df.to_numpy(order="c"),
        "numpy_column_stack_s": lambda: np.column_stack(cols),
    }
    # About 20 ms of calls per candidate and repeat at small sizes, one call at large ones.
    first = _side_by_side(fns, 1, dict.fromkeys(fns, 1))
    number = {k: max(1, min(1000, int(0.02 / max(t, 1e-7)))) for k, t in first.items()}
    med = _side_by_side(fns, repeat, number)
    return {"rows": n, **med, "calls_per_repeat": number}


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}, "
        f"NumPy {np.__version__}, pyarrow {pa.__version__}, polars {pl.__version__}, "
        f"pandas {pd.__version__}"
    )


def render(single: list[dict[str, Any]], matrix: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The results as markdown tables."""
    lines = [
        "# Bridge benchmark (CPU)",
        "",
        f"Machine: {meta['machine']}. Command: `{meta['command']}`.",
        "Shared machine: other jobs ran at the same time, so absolute figures are noisy; "
        "every comparison is measured side by side (each repeat runs all candidates in "
        "turn) and reported as medians.",
        "",
        f"## as_tensor (one float64 column, median of {meta['repeat_as_tensor']} repeats "
        f"x {meta['number_as_tensor']} calls)",
        "",
        "| rows | source | µs per call | vs 1,000 rows | Arrow bytes allocated "
        "| tracemalloc peak | copied | data pointer = source buffer |",
        "| ---: | --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    smallest = min(r["rows"] for r in single)
    base = {r["source"]: r["as_tensor_us"] for r in single if r["rows"] == smallest}
    for r in single:
        lines.append(
            f"| {r['rows']:,} | {r['source']} | {r['as_tensor_us']:.2f} | "
            f"{r['as_tensor_us'] / base[r['source']]:.2f} | {r['arrow_bytes_allocated']} | "
            f"{r['tracemalloc_peak_bytes']} | {r['copied']} | {r['same_address']} |"
        )
    lines += [
        "",
        f"## to_tensor, 8 float64 columns of a polars DataFrame (median of "
        f"{meta['repeat_to_tensor']} repeats)",
        "",
        "Ratios above 1 mean to_tensor is faster.",
        "",
        "| rows | to_tensor C (ms) | to_tensor F (ms) | polars to_numpy() (F, ms) "
        "| polars to_numpy(order='c') (ms) | np.column_stack (ms) "
        "| polars F / ours F | polars F / ours C | polars C / ours C | column_stack / ours C |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for m in matrix:
        c, f = m["to_tensor_C_s"], m["to_tensor_F_s"]
        p, pc_, ns = m["polars_to_numpy_s"], m["polars_to_numpy_C_s"], m["numpy_column_stack_s"]
        lines.append(
            f"| {m['rows']:,} | {c * 1e3:.3f} | {f * 1e3:.3f} | {p * 1e3:.3f} | {pc_ * 1e3:.3f} "
            f"| {ns * 1e3:.3f} | {p / f:.2f}x | {p / c:.2f}x | {pc_ / c:.2f}x | {ns / c:.2f}x |"
        )
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print (and optionally save) the tables."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1e3,1e4,1e5,1e6,1e7", help="comma-separated row counts")
    parser.add_argument("--max-rows", action="store_true", help="also run as_tensor at 5e7 rows")
    parser.add_argument("--repeat", type=int, default=15, help="repeats for to_tensor timings")
    parser.add_argument("--repeat-as-tensor", type=int, default=15, help="repeats for as_tensor")
    parser.add_argument("--number", type=int, default=500, help="as_tensor calls per repeat")
    parser.add_argument("--json", type=Path, help="save results as JSON here")
    parser.add_argument("--markdown", type=Path, help="save the tables as markdown here")
    args = parser.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    single: list[dict[str, Any]] = []
    matrix: list[dict[str, Any]] = []
    for n in sizes:
        single.extend(bench_as_tensor(n, args.repeat_as_tensor, args.number))
        matrix.append(bench_to_tensor(n, args.repeat))
    if args.max_rows:
        single.extend(bench_as_tensor(50_000_000, args.repeat_as_tensor, args.number))
    meta = {
        "machine": _machine(),
        "command": "python benchmarks/bridge.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "repeat_as_tensor": args.repeat_as_tensor,
        "number_as_tensor": args.number,
        "repeat_to_tensor": args.repeat,
    }
    text = render(single, matrix, meta)
    print(text)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(
            json.dumps({"meta": meta, "as_tensor": single, "to_tensor": matrix}, indent=2)
        )


if __name__ == "__main__":
    main()
