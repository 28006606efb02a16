"""Training-loader throughput: one shuffled epoch of feature batches from a Parquet file.

Run: python benchmarks/loader.py [--rows 1e6] [--batch-size 1024] [--repeats 5]
                                 [--json benchmarks/results/loader.json]

The data: ``--rows`` rows of 8 float64 features (10% nulls, filled with 0 and
z-scored) and an int64 label, in a Parquet file of 64k-row row groups. Every
contender serves float32 ``(batch, 8)`` feature tensors and int64 label tensors
for one epoch, rows shuffled, as torch tensors; each is timed from the file:

* ``colbridge loader``: `colbridge.io.loader` (statistics given, as in
  training after a first fit; row groups in a seeded order, then a 64-batch
  shuffle buffer; prefetch on a background thread);
* ``polars to_torch + DataLoader``: ``pl.read_parquet``, the same transform in
  polars, ``DataFrame.to_torch()``, then ``TensorDataset`` and
  ``DataLoader(batch_size, shuffle=True)`` (per-row indexing and collation);
* ``polars to_torch + batch sampler``: the same tensors, but the DataLoader's
  sampler yields whole batches of indices (``BatchSampler``), one gather per
  batch: the fastest way to serve a ``TensorDataset``;
* two hand-written rooflines over the same features already in memory (no
  reading, no transform), made C-contiguous first: ``full shuffle``, a fresh
  permutation of all rows and one ``index_select`` per batch; and ``buffer
  shuffle``, colbridge's own order (64k-row units in a random order, a 64-batch
  buffer permuted, batches sliced from it) in NumPy.

Times are medians of ``--repeats`` epochs with the contenders interleaved.
Ratios are contender time ÷ colbridge time (> 1: colbridge faster). The issue's
goal: the loader at least 2x ``to_torch`` + ``TensorDataset`` at batch 1024.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from fused_cpu import machine, time_all
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

from colbridge.io import FeatureStats, loader

FEATURES = [f"f{j}" for j in range(8)]


def make_file(rows: int, folder: str) -> str:
    rng = np.random.default_rng(0)
    data = {name: pa.array(rng.normal(size=rows), mask=rng.random(rows) < 0.1)
            for name in FEATURES}  # fmt: skip
    data["y"] = pa.array(rng.integers(0, 10, rows))
    path = os.path.join(folder, "train.parquet")
    pq.write_table(pa.table(data), path, row_group_size=1 << 16)
    return path


def polars_tensors(path: str, means: dict[str, float], stds: dict[str, float]
                   ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    df = pl.read_parquet(path)
    feats = df.select(
        ((pl.col(n).fill_null(0.0) - means[n]) / stds[n]).cast(pl.Float32) for n in FEATURES
    )
    return feats.to_torch(), df["y"].to_torch()


def run(rows: int, batch_size: int, repeats: int) -> dict[str, object]:
    folder = tempfile.mkdtemp(prefix="colbridge-loader-")
    path = make_file(rows, folder)
    spec = {"columns": FEATURES, "zscore": FEATURES,
            "fill_null": dict.fromkeys(FEATURES, 0.0)}  # fmt: skip
    fitted = loader(path, label="y", batch_size=batch_size, **spec)  # fits the statistics
    stats: FeatureStats = fitted.stats
    means = {n: stats.columns[n]["mean"] for n in FEATURES}
    stds = {n: stats.columns[n]["std"] for n in FEATURES}
    epoch = [0]

    def colbridge_epoch() -> int:
        batches = loader(path, label="y", batch_size=batch_size, stats=stats, seed=epoch[0],
                         **spec)  # fmt: skip
        epoch[0] += 1
        return sum(len(b["y"]) for b in batches)

    def polars_epoch() -> int:
        x, y = polars_tensors(path, means, stds)
        dl = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True)
        return sum(len(b[1]) for b in dl)

    def polars_batched_epoch() -> int:
        x, y = polars_tensors(path, means, stds)
        dataset = TensorDataset(x, y)
        sampler = BatchSampler(RandomSampler(dataset), batch_size, drop_last=False)
        dl = DataLoader(dataset, sampler=sampler, batch_size=None)
        return sum(len(b[1]) for b in dl)

    x_mem, y_mem = (t.contiguous() for t in polars_tensors(path, means, stds))
    x_np, y_np = x_mem.numpy(), y_mem.numpy()
    unit = 1 << 16
    buffer = 64 * batch_size

    def hand_epoch() -> int:
        perm = torch.randperm(rows)
        n = 0
        for start in range(0, rows, batch_size):
            idx = perm[start:start + batch_size]
            n += len(y_mem.index_select(0, idx))
            x_mem.index_select(0, idx)
        return n

    def hand_buffer_epoch() -> int:
        rng = np.random.default_rng(epoch[0])
        order = rng.permutation((rows + unit - 1) // unit)
        rows_in_order = np.concatenate([np.arange(u * unit, min((u + 1) * unit, rows))
                                        for u in order])  # fmt: skip
        n = 0
        for start in range(0, rows, buffer):
            chunk = rows_in_order[start:start + buffer]
            window = chunk[rng.permutation(len(chunk))]
            xs, ys = x_np[window], y_np[window]
            for b in range(0, len(window), batch_size):
                n += len(torch.from_numpy(ys[b:b + batch_size]))
                torch.from_numpy(xs[b:b + batch_size])
        return n

    fns: dict[str, Callable[[], int]] = {
        "colbridge loader": colbridge_epoch,
        "polars to_torch + DataLoader": polars_epoch,
        "polars to_torch + batch sampler": polars_batched_epoch,
        "hand-written, full shuffle (in memory)": hand_epoch,
        "hand-written, buffer shuffle (in memory)": hand_buffer_epoch,
    }
    def serves_every_row(name: str, served: object) -> None:
        assert served == rows, name

    med = time_all(fns, repeats, serves_every_row)
    nbytes = rows * (4 * len(FEATURES) + 8)
    base = med["colbridge loader"]
    return {
        "rows": rows, "batch_size": batch_size, "repeats": repeats,
        "seconds": med,
        "rows_per_s": {k: rows / v for k, v in med.items()},
        "gb_per_s": {k: nbytes / v / 1e9 for k, v in med.items()},
        "vs_colbridge": {k: v / base for k, v in med.items()},
    }  # fmt: skip


def to_markdown(result: dict[str, object], info: dict[str, str]) -> str:
    lines = [
        f"# Loader throughput: one shuffled epoch, {result['rows']:,} rows, "
        f"batch {result['batch_size']}",
        "",
        f"Machine: {info['cpu']}; {info['cores']}. {info['software']}.",
        f"Command: `python benchmarks/loader.py {' '.join(sys.argv[1:])}`; medians of "
        f"{result['repeats']} epochs, contenders interleaved.",
        "",
        "| contender | epoch (s) | rows/s | GB/s | time ÷ colbridge's |",
        "|---|---:|---:|---:|---:|",
    ]
    seconds = result["seconds"]
    assert isinstance(seconds, dict)
    for name, t in seconds.items():
        lines.append(
            f"| {name} | {t:.3f} | {result['rows_per_s'][name]:,.0f} | "  # type: ignore[index]
            f"{result['gb_per_s'][name]:.3f} | {result['vs_colbridge'][name]:.2f} |"  # type: ignore[index]
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", default=None, help="write results here (and .md beside it)")
    args = parser.parse_args()
    result = run(int(args.rows), args.batch_size, args.repeats)
    info = machine()
    text = to_markdown(result, info)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"machine": info, **result}, fh, indent=2)
        with open(os.path.splitext(args.json)[0] + ".md", "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
