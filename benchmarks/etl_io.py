"""Parquet readers and writers for the ETL job, batch by batch, on the ETL benchmark's data.

Readers decode the input in batches of ``--batch-rows`` (all columns, then the
one column a statistics pass reads); writers write the job's output (the input
plus three float columns) one batch per row group. Every writer uses the same
settings: zstd level 1, min/max/null-count statistics, 1 MiB data pages, row
groups of one batch, dictionary encoding for the integer column only (polars
chooses it by itself and makes the same choice here). Each candidate runs in its
own subprocess, ``--repeat`` times, interleaved; the table gives the median time,
the peak RSS growth of the run and, for readers, the peak of Arrow's memory pool
(decoded data held at once).

    .venv/bin/python benchmarks/etl_io.py --rows 5000000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

READERS = {
    "pyarrow dataset scanner (pre_buffer)": """
import pyarrow.dataset as ds
it = ds.dataset(SRC).scanner(columns=COLS, batch_size=N, batch_readahead=1,
                             fragment_readahead=1, use_threads=True).to_batches()
""",
    "pyarrow dataset scanner (no pre_buffer)": """
import pyarrow.dataset as ds
opts = ds.ParquetFragmentScanOptions(pre_buffer=False)
it = ds.dataset(SRC).scanner(columns=COLS, batch_size=N, batch_readahead=1, fragment_readahead=1,
                             use_threads=True, fragment_scan_options=opts).to_batches()
""",
    "pyarrow ParquetFile.iter_batches (threads)": """
import pyarrow.parquet as pq
it = pq.ParquetFile(SRC, pre_buffer=False).iter_batches(N, columns=COLS, use_threads=True)
""",
    "pyarrow ParquetFile.iter_batches (1 thread)": """
import pyarrow.parquet as pq
it = pq.ParquetFile(SRC, pre_buffer=False).iter_batches(N, columns=COLS, use_threads=False)
""",
    "polars collect_batches + to_arrow": """
import polars as pl
lf = pl.scan_parquet(SRC)
lf = lf.select(COLS) if COLS else lf
it = (b for df in lf.collect_batches(chunk_size=N) for b in df.to_arrow().to_batches())
""",
}

WRITERS = {
    "pyarrow ParquetWriter": """
import pyarrow.parquet as pq
w = pq.ParquetWriter(OUT, T.schema, compression="zstd", compression_level=1,
                     use_dictionary=["k"], data_page_size=1 << 20)
for b in BATCHES:
    w.write_table(pa.Table.from_batches([b]), row_group_size=b.num_rows)
w.close()
""",
    "pyarrow ParquetWriter, no statistics": """
import pyarrow.parquet as pq
w = pq.ParquetWriter(OUT, T.schema, compression="zstd", compression_level=1,
                     use_dictionary=["k"], data_page_size=1 << 20, write_statistics=False)
for b in BATCHES:
    w.write_table(pa.Table.from_batches([b]), row_group_size=b.num_rows)
w.close()
""",
    "polars sink_parquet from an Arrow stream": """
import polars as pl
reader = pa.RecordBatchReader.from_batches(T.schema, iter(BATCHES))
pl.scan_arrow_c_stream(reader).sink_parquet(OUT, compression="zstd", compression_level=1,
    statistics=True, row_group_size=N, data_page_size=1 << 20, arrow_schema=T.schema)
""",
    "polars sink_parquet, zstd level 3 (polars' default)": """
import polars as pl
reader = pa.RecordBatchReader.from_batches(T.schema, iter(BATCHES))
pl.scan_arrow_c_stream(reader).sink_parquet(OUT, compression="zstd", compression_level=3,
    statistics=True, row_group_size=N, data_page_size=1 << 20, arrow_schema=T.schema)
""",
    "colbridge AtomicWriter (polars inside; also fsync and rename)": """
from colbridge.io import AtomicWriter
with AtomicWriter(OUT, row_group_rows=N) as w:
    for b in BATCHES:
        w.write(b)
""",
}

READ_RUNNER = """
import json, resource, sys, time
import pyarrow as pa
SRC, N, COLS = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
code = sys.stdin.read()
import polars, pyarrow.dataset, pyarrow.parquet  # imports are not timed
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
exec(code)
rows = sum(b.num_rows for b in it)
t = time.perf_counter() - t0
grow = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
print(json.dumps({"seconds": t, "rows": rows, "rss_growth": grow,
                  "arrow_peak": pa.default_memory_pool().max_memory()}))
"""

WRITE_RUNNER = """
import json, os, resource, sys, time
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
SRC, OUT, N = sys.argv[1], sys.argv[2], int(sys.argv[3])
code = sys.stdin.read()
import polars, colbridge.io  # imports are not timed
T = pq.read_table(SRC)
rng = np.random.default_rng(1)
for name in "zwv":
    T = T.append_column(name, pa.array(rng.random(T.num_rows)))
BATCHES = T.combine_chunks().to_batches(max_chunksize=N)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
exec(code)
t = time.perf_counter() - t0
grow = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
meta = pq.ParquetFile(OUT).metadata
col = {meta.schema.column(i).name: meta.row_group(0).column(i) for i in range(meta.num_columns)}
print(json.dumps({"seconds": t, "rss_growth": grow, "bytes": os.path.getsize(OUT),
                  "row_groups": meta.num_row_groups,
                  "stats": all(c.is_stats_set for c in col.values()),
                  "dictionary": sorted(n for n, c in col.items()
                                       if "RLE_DICTIONARY" in c.encodings)}))
"""


def _run(runner: str, code: str, args: list[str]) -> dict[str, object]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.getcwd() + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", runner, *args], input=code, capture_output=True, text=True,
        check=True, env=env,
    )  # fmt: skip
    out: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--batch-rows", type=int, default=1 << 19)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=os.path.join("benchmarks", "results", "etl_io"),
                        help="results path, no extension (.md and .json are written)")  # fmt: skip
    args = parser.parse_args()
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    n, batch = args.rows, args.batch_rows
    runs: dict[str, list[dict[str, object]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.parquet")
        rng = np.random.default_rng(0)
        table = pa.table({"a": rng.random(n), "b": rng.random(n), "c": rng.random(n),
                          "k": rng.integers(0, 1000, n)})  # fmt: skip
        pq.write_table(table, src, row_group_size=512 * 1024, compression="zstd")
        del table
        for _ in range(args.repeat):
            for name, code in READERS.items():
                for cols in (None, ["a"]):
                    label = f"read {'all columns' if cols is None else 'column a'}: {name}"
                    r = _run(READ_RUNNER, code, [src, str(batch), json.dumps(cols)])
                    assert r["rows"] == n, (name, r)
                    runs.setdefault(label, []).append(r)
            for name, code in WRITERS.items():
                out = os.path.join(tmp, "out.parquet")
                runs.setdefault(f"write: {name}", []).append(
                    _run(WRITE_RUNNER, code, [src, out, str(batch)]))  # fmt: skip
            print(f"  round {_ + 1} of {args.repeat} done", file=sys.stderr)
    lines = [
        f"Parquet I/O, batch by batch: {n:,} rows, batches of {batch:,} rows "
        f"(input: 4 columns, zstd; output: 7 columns)",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; median of {args.repeat} interleaved runs",
        "",
        "| candidate | seconds | × first of its kind | peak RSS growth (MiB) "
        "| Arrow pool peak (MiB) | file (MB) | dictionary | statistics |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    summary: dict[str, dict[str, object]] = {}
    firsts: dict[str, float] = {}
    for label, rs in runs.items():
        kind = label.split(":")[0]
        sec = statistics.median(float(r["seconds"]) for r in rs)  # type: ignore[arg-type]
        firsts.setdefault(kind, sec)
        grow = statistics.median(float(r["rss_growth"]) for r in rs)  # type: ignore[arg-type]
        last = rs[-1]
        summary[label] = {"seconds": sec, "runs": [r["seconds"] for r in rs], **last}
        arrow = f"{float(last['arrow_peak']) / 2**20:.0f}" if "arrow_peak" in last else ""  # type: ignore[arg-type]
        size = f"{float(last['bytes']) / 1e6:.1f}" if "bytes" in last else ""  # type: ignore[arg-type]
        lines.append(
            f"| {label} | {sec:.3f} | {sec / firsts[kind]:.2f} | {grow / 2**20:.0f} | {arrow} "
            f"| {size} | {', '.join(last.get('dictionary', [])) if 'bytes' in last else ''} "  # type: ignore[arg-type]
            f"| {last.get('stats', '')} |"
        )
    text = "\n".join(lines)
    print(text)
    with open(args.out + ".md", "w") as fh:
        fh.write(text + "\n")
    with open(args.out + ".json", "w") as fh:
        json.dump({"rows": n, "batch_rows": batch, "results": summary}, fh, indent=1)


if __name__ == "__main__":
    main()
