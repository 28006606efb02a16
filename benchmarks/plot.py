"""Plot the fused CPU benchmark: effective bandwidth against row count, with the triad roofline.

Run: python benchmarks/plot.py [--input benchmarks/results/fused_cpu.md]
                               [--output benchmarks/results/fused_cpu.png]

Reads the Markdown that ``benchmarks/fused_cpu.py`` prints (so the saved
results are the single source of truth) and draws, for the 1-output and the
2-output workloads, the effective bandwidth of each contender: the bytes an
ideal fused kernel must move (three float64 inputs read once, each output
written once) divided by the measured median time. The STREAM-triad
bandwidth measured in the same run is drawn per row count (dotted) and, at
the largest row count, as the memory roofline (dashed): no kernel that
reads its inputs from DRAM can sit above it for long.

``parse`` and ``figure`` are importable (``notebooks/03_performance.ipynb``
uses them on fresh, small runs).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_INPUT = HERE / "results" / "fused_cpu.md"
DEFAULT_OUTPUT = HERE / "results" / "fused_cpu.png"

#: Contenders drawn by default (all of them are in the table).
DEFAULT_CONTENDERS = (
    "colbridge (polars)",
    "colbridge (pandas)",
    "polars lazy",
    "numexpr",
    "numpy",
    "pandas eager",
)
#: Bytes an ideal fused kernel moves per row: 3 float64 inputs + 1 or 2 float64 outputs.
BYTES_PER_ROW = {"1 output": 4 * 8, "2 outputs": 5 * 8}

_SIZE = re.compile(r"^## ([\d,]+) rows \(median of (\d+)\); triad ([\d.]+) GB/s")
_ROW = re.compile(r"^\| (.+?) \| ([\d.]+) ms \| [\d.]+x \| ([\d.]+) ms \| [\d.]+x \|$")


def parse(text: str) -> dict[str, Any]:
    """Parse the Markdown printed by ``fused_cpu.py``.

    Returns ``{"machine": str, "sizes": {rows: {"repeats", "triad_gbs",
    "1 output": {contender: seconds}, "2 outputs": {...}}}}``.
    """
    machine = ""
    sizes: dict[int, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        if line.startswith("# "):
            machine = line[2:].strip()
        elif m := _SIZE.match(line):
            current = {
                "repeats": int(m.group(2)),
                "triad_gbs": float(m.group(3)),
                "1 output": {},
                "2 outputs": {},
            }
            sizes[int(m.group(1).replace(",", ""))] = current
        elif current is not None and (m := _ROW.match(line)):
            current["1 output"][m.group(1)] = float(m.group(2)) / 1e3
            current["2 outputs"][m.group(1)] = float(m.group(3)) / 1e3
    return {"machine": machine, "sizes": dict(sorted(sizes.items()))}


def from_runs(
    runs: Mapping[int, Mapping[str, Mapping[str, float]]], machine: str = ""
) -> dict[str, Any]:
    """Build the ``parse`` structure from ``fused_cpu.run(n, repeats)`` results keyed by rows."""
    sizes = {}
    for n, res in sorted(runs.items()):
        triad = res["triad"]["numba triad"]
        sizes[n] = {
            "repeats": 0,
            "triad_gbs": 3 * 8 * n / triad / 1e9,
            "1 output": dict(res["1 output"]),
            "2 outputs": dict(res["2 outputs"]),
        }
    return {"machine": machine, "sizes": sizes}


def figure(
    results: Mapping[str, Any],
    contenders: Sequence[str] = DEFAULT_CONTENDERS,
    title: str | None = None,
) -> Any:
    """Two panels (1 output, 2 outputs): effective GB/s against rows, with the triad roofline."""
    import matplotlib.pyplot as plt

    sizes = results["sizes"]
    rows = list(sizes)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True, layout="constrained")
    for ax, workload in zip(axes, ("1 output", "2 outputs"), strict=True):
        per_row = BYTES_PER_ROW[workload]
        for name in contenders:
            xs = [n for n in rows if name in sizes[n][workload]]
            ys = [per_row * n / sizes[n][workload][name] / 1e9 for n in xs]
            bold = name.startswith("colbridge")
            width, alpha = (2.6, 1.0) if bold else (1.2, 0.8)
            ax.plot(xs, ys, marker="o", linewidth=width, alpha=alpha, label=name)
        triad = [sizes[n]["triad_gbs"] for n in rows]
        ax.plot(rows, triad, linestyle=":", color="black", linewidth=1, label="triad at this size")
        roof = f"roofline: triad at {rows[-1]:,} rows ({triad[-1]:.1f} GB/s)"
        ax.axhline(triad[-1], linestyle="--", color="black", linewidth=1.5, label=roof)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows")
        ax.set_title(f"{workload} ({per_row} bytes moved per row, ideally)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("effective bandwidth (GB/s, higher is better)")
    axes[1].legend(fontsize=8, loc="lower right")
    fig.suptitle(title or results.get("machine") or "fused CPU benchmark", fontsize=10)
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", default=str(DEFAULT_INPUT), help="Markdown from fused_cpu.py")
    parser.add_argument("--output", default=str(DEFAULT_OUTPUT), help="PNG to write")
    parser.add_argument("--all", action="store_true", help="draw every contender")
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    results = parse(Path(args.input).read_text(encoding="utf-8"))
    if not results["sizes"]:
        parser.error(f"no benchmark tables found in {args.input}")
    names = list(next(iter(results["sizes"].values()))["1 output"]) if args.all else None
    fig = figure(results, names or DEFAULT_CONTENDERS)
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
