"""Plot the fused CPU benchmark: effective bandwidth against row count, per workload.

Run: python benchmarks/plot.py [--input benchmarks/results/fused_cpu.md]
                               [--output benchmarks/results/fused_cpu.png]
                               [--busy] [--contenders NAME,NAME,...]

Reads the Markdown that ``benchmarks/fused_cpu.py`` prints (so the saved
results are the single source of truth) and draws one panel per workload with
every contender the table has: the bytes an ideal fused kernel must move for
that workload (inputs read once, outputs written once, bitmaps included; the
workload's heading gives the figure) divided by the measured median time.
The hand-written kernels are drawn dashed; the STREAM-triad bandwidth of the
same run is drawn per row count (dotted) and, at the largest row count, as
the memory roofline (dashed black). ``--busy`` plots the figures measured with
one core kept busy (``fused_cpu.py --background-load``).

Markdown from the earlier version of ``fused_cpu.py`` (one table per size with
"1 output" and "2 outputs" columns) is read as those two workloads.

``parse``, ``from_runs`` and ``figure`` are importable
(``notebooks/03_performance.ipynb`` uses them on fresh, small runs).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_INPUT = HERE / "results" / "fused_cpu.md"
DEFAULT_OUTPUT = HERE / "results" / "fused_cpu.png"

#: Bytes an ideal fused kernel moves per row in the two workloads of the earlier format.
LEGACY_BYTES_PER_ROW = {"1 output": 4 * 8, "2 outputs": 5 * 8}
#: Bytes per row of a STREAM triad: two float64 reads and one write.
TRIAD_BYTES_PER_ROW = 3 * 8

_SIZE = re.compile(r"^## ([\d,]+) rows \(median of (\d+)\); triad ([\d.]+) GB/s")
_WORKLOAD = re.compile(r"^### (.+?): (.*); ideal ([\d.e+]+) bytes/row$")
_ROW = re.compile(
    r"^\| (.+?) \| ([\d.]+) ms \| [\d.]+x \| [\d.]+ \|(?: ([\d.]+) ms \| [\d.]+x \|)?$"
)
_LEGACY_ROW = re.compile(r"^\| (.+?) \| ([\d.]+) ms \| [\d.]+x \| ([\d.]+) ms \| [\d.]+x \|$")


def _workload(title: str, bytes_per_row: float) -> dict[str, Any]:
    return {"title": title, "bytes_per_row": bytes_per_row, "quiet": {}, "busy": {}}


def parse(text: str) -> dict[str, Any]:
    """Parse the Markdown printed by ``fused_cpu.py``.

    Returns ``{"machine": str, "sizes": {rows: {"repeats", "triad_gbs",
    "workloads": {name: {"title", "bytes_per_row", "quiet": {contender:
    seconds}, "busy": {...}}}}}}`` ("busy" is empty without
    ``--background-load``).
    """
    machine: list[str] = []
    sizes: dict[int, dict[str, Any]] = {}
    size: dict[str, Any] | None = None
    workload: dict[str, Any] | None = None
    for line in text.splitlines():
        if line.startswith("# fused CPU benchmark — "):  # the earlier format's title
            machine.append(line.split(" — ", 1)[1].strip())
        elif line.startswith(("- cpu: ", "- cores: ", "- numba: ")):
            machine.append(line.split(": ", 1)[1].strip())
        elif m := _SIZE.match(line):
            size = {"repeats": int(m.group(2)), "triad_gbs": float(m.group(3)), "workloads": {}}
            sizes[int(m.group(1).replace(",", ""))] = size
            workload = None
        elif size is not None and (m := _WORKLOAD.match(line)):
            workload = _workload(m.group(2), float(m.group(3)))
            size["workloads"][m.group(1)] = workload
        elif workload is not None and (m := _ROW.match(line)):
            workload["quiet"][m.group(1)] = float(m.group(2)) / 1e3
            if m.group(3) is not None:
                workload["busy"][m.group(1)] = float(m.group(3)) / 1e3
        elif size is not None and workload is None and (m := _LEGACY_ROW.match(line)):
            for name, group in (("1 output", 2), ("2 outputs", 3)):
                legacy = size["workloads"].setdefault(
                    name, _workload(name, LEGACY_BYTES_PER_ROW[name])
                )
                legacy["quiet"][m.group(1)] = float(m.group(group)) / 1e3
    return {"machine": ", ".join(machine), "sizes": dict(sorted(sizes.items()))}


def from_runs(runs: Mapping[int, Mapping[str, Any]], machine: str = "") -> dict[str, Any]:
    """Build the ``parse`` structure from ``fused_cpu.run(n, ...)`` results keyed by rows."""
    sizes = {}
    for n, res in sorted(runs.items()):
        sizes[n] = {
            "repeats": res["repeats"],
            "triad_gbs": TRIAD_BYTES_PER_ROW * n / res["triad_s"] / 1e9,
            "workloads": {
                name: {
                    "title": w["title"],
                    "bytes_per_row": w["bytes_per_row"],
                    "quiet": dict(w["quiet"]),
                    "busy": dict(w.get("loaded", {})),
                }
                for name, w in res["workloads"].items()
            },
        }
    return {"machine": machine, "sizes": sizes}


def contenders_of(results: Mapping[str, Any]) -> list[str]:
    """Every contender in the results, in the order the tables list them."""
    names: dict[str, None] = {}
    for size in results["sizes"].values():
        for w in size["workloads"].values():
            names.update(dict.fromkeys(w["quiet"]))
    return list(names)


def workloads_of(results: Mapping[str, Any]) -> list[str]:
    names: dict[str, None] = {}
    for size in results["sizes"].values():
        names.update(dict.fromkeys(size["workloads"]))
    return list(names)


#: Fixed colours, so that a contender looks the same in every panel and every plot;
#: families share a hue (colbridge blue, polars orange/red, pandas pink).
COLORS = {
    "colbridge (polars)": "#1f77b4",
    "colbridge (pandas)": "#9ecae1",
    "polars eager": "#ff7f0e",
    "polars lazy": "#fdae6b",
    "polars streaming": "#d62728",
    "numexpr": "#2ca02c",
    "pyarrow.compute": "#9467bd",
    "numpy": "#8c564b",
    "pandas eager": "#e377c2",
    "pandas.eval": "#f7b6d2",
    "hand kernel (1 thread)": "#17becf",
    "hand kernel (threads)": "#4d4d4d",
}


def _style(name: str, color: Any) -> dict[str, Any]:
    if name.startswith("colbridge"):
        return {"color": color, "linewidth": 2.6, "marker": "o"}
    if name.startswith("hand kernel"):
        return {"color": color, "linewidth": 1.8, "linestyle": "--", "marker": "s"}
    return {"color": color, "linewidth": 1.1, "alpha": 0.85, "marker": "o", "markersize": 4}


def figure(
    results: Mapping[str, Any],
    contenders: Sequence[str] | None = None,
    workloads: Sequence[str] | None = None,
    busy: bool = False,
    title: str | None = None,
) -> Any:
    """One panel per workload: effective GB/s against rows, with the triad roofline.

    ``contenders`` and ``workloads`` default to everything in ``results``; a
    contender keeps its colour in every panel. ``busy`` plots the times measured
    with one core kept busy.
    """
    import matplotlib.pyplot as plt

    sizes = results["sizes"]
    rows = list(sizes)
    names = list(contenders) if contenders is not None else contenders_of(results)
    panels = list(workloads) if workloads is not None else workloads_of(results)
    which = "busy" if busy else "quiet"
    others = iter(plt.get_cmap("Dark2").colors * 4)
    colors = {name: COLORS.get(name) or next(others) for name in names}
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(5.2 * ncols, 3.9 * nrows), squeeze=False, layout="constrained"
    )
    triad = [sizes[n]["triad_gbs"] for n in rows]
    for ax, workload in zip(axes.flat, panels, strict=False):
        for name in names:
            xs = [n for n in rows if name in sizes[n]["workloads"].get(workload, {}).get(which, {})]
            ys = [
                sizes[n]["workloads"][workload]["bytes_per_row"]
                * n
                / sizes[n]["workloads"][workload][which][name]
                / 1e9
                for n in xs
            ]
            if xs:
                ax.plot(xs, ys, label=name, **_style(name, colors[name]))
        ax.plot(rows, triad, linestyle=":", color="black", linewidth=1, label="triad at this size")
        ax.axhline(
            triad[-1],
            linestyle="--",
            color="black",
            linewidth=1.5,
            label=f"roofline: triad at {rows[-1]:,} rows",
        )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows")
        ax.set_title(workload, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("effective GB/s (higher is better)")
    handles: dict[str, Any] = {}
    for ax in axes.flat[: len(panels)]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncols=5, fontsize=8)
    suffix = " (one core kept busy)" if busy else ""
    fig.suptitle((title or results.get("machine") or "fused CPU benchmark") + suffix, fontsize=10)
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", default=str(DEFAULT_INPUT), help="Markdown from fused_cpu.py")
    parser.add_argument("--output", default=str(DEFAULT_OUTPUT), help="PNG to write")
    parser.add_argument("--busy", action="store_true", help="plot the times with one core busy")
    parser.add_argument("--contenders", default=None, help="comma-separated subset to draw")
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    results = parse(Path(args.input).read_text(encoding="utf-8"))
    if not results["sizes"]:
        parser.error(f"no benchmark tables found in {args.input}")
    if args.busy and not any(
        w["busy"] for s in results["sizes"].values() for w in s["workloads"].values()
    ):
        parser.error(f"{args.input} has no busy figures: run fused_cpu.py --background-load")
    names = args.contenders.split(",") if args.contenders else None
    fig = figure(results, names, busy=args.busy)
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
