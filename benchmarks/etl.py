"""ETL benchmark: Parquet → with_columns → Parquet.

colbridge's streaming pipeline vs polars ``scan_parquet(...).with_columns(...).sink_parquet``
vs pandas, and pyarrow reading and writing the same data with no compute (the
I/O floor). Each contender runs in its own subprocess; wall time and peak RSS
are reported, with ratios to the I/O floor and polars' speed (its defaults) over
each contender's (above 1: faster than polars). polars also runs at colbridge's
zstd level (1; polars' default is 3). Results go to ``--out`` (.md, .json).

    .venv/bin/python benchmarks/etl.py --rows 5000000
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
import time

EXPR = "z = sqrt(a * b + c); w = (a - mean(a)) / std(a); v = where(c > 0.5, a, b)"

CONTENDERS = {
    "pyarrow I/O floor": """
import pyarrow as pa, pyarrow.parquet as pq
t = pq.read_table(SRC)
# the same encoding choice as colbridge's writer: no dictionary for float columns
plain = [f.name for f in t.schema if not pa.types.is_floating(f.type)]
pq.write_table(t, OUT, compression="zstd", use_dictionary=plain)
""",
    "colbridge pipeline": """
from colbridge.io import pipeline
pipeline(SRC, OUT, with_=EXPR, device="cpu")
""",
    "polars sink_parquet": """
import polars as pl
a, b, c = pl.col("a"), pl.col("b"), pl.col("c")
(pl.scan_parquet(SRC).with_columns(z=(a * b + c).sqrt(), w=(a - a.mean()) / a.std(),
    v=pl.when(c > 0.5).then(a).otherwise(b)).sink_parquet(OUT, compression="zstd"))
""",
    "polars sink_parquet, zstd level 1": """
import polars as pl
a, b, c = pl.col("a"), pl.col("b"), pl.col("c")
# colbridge's zstd level (pyarrow's default); polars' own default is 3
(pl.scan_parquet(SRC).with_columns(z=(a * b + c).sqrt(), w=(a - a.mean()) / a.std(),
    v=pl.when(c > 0.5).then(a).otherwise(b)).sink_parquet(OUT, compression="zstd",
                                                          compression_level=1))
""",
    "pandas": """
import numpy as np, pandas as pd
df = pd.read_parquet(SRC)
df["z"] = np.sqrt(df.a * df.b + df.c)
df["w"] = (df.a - df.a.mean()) / df.a.std()
df["v"] = np.where(df.c > 0.5, df.a, df.b)
df.to_parquet(OUT, compression="zstd", index=False)
""",
}

RUNNER = """
import json, resource, sys, time
SRC, OUT, EXPR = sys.argv[1], sys.argv[2], sys.argv[3]
code = sys.stdin.read()
{warm}
t0 = time.perf_counter()
exec(code)
t = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"seconds": t, "rss": rss}}))
"""


def run(name: str, code: str, src: str, out: str) -> dict[str, float]:
    warm = ""
    if name.startswith("colbridge"):
        # Compile (or load from the disk cache) the kernels on a small sample first.
        warm = (
            "from colbridge.io import pipeline as _p; import pyarrow.parquet as _pq\n"
            "_pq.write_table(_pq.ParquetFile(SRC).read_row_group(0).slice(0, 300000), OUT)\n"
            "_p(OUT, OUT + '.warm', with_=EXPR, device='cpu')"
        )
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER.format(warm=warm), src, out, EXPR],
        input=code, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the median is shown")
    parser.add_argument("--out", default=os.path.join("benchmarks", "results", "etl_cpu"),
                        help="results path, no extension (.md and .json are written)")  # fmt: skip
    args = parser.parse_args()
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.parquet")
        rng = np.random.default_rng(0)
        n = args.rows
        table = pa.table({"a": rng.random(n), "b": rng.random(n), "c": rng.random(n),
                          "k": rng.integers(0, 1000, n)})  # fmt: skip
        pq.write_table(table, src, row_group_size=512 * 1024, compression="zstd")
        del table
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in CONTENDERS}
        for _ in range(args.repeat):  # rounds interleave the contenders: load hits all alike
            for name, code in CONTENDERS.items():
                t0 = time.perf_counter()
                runs[name].append(run(name, code, src, os.path.join(tmp, "out.parquet")))
                print(f"  {name}: {time.perf_counter() - t0:.1f} s total", file=sys.stderr)
    results = {
        name: {"seconds": statistics.median(r["seconds"] for r in rs),
               "rss": max(r["rss"] for r in rs), "runs": [r["seconds"] for r in rs]}
        for name, rs in runs.items()
    }  # fmt: skip
    floor = results["pyarrow I/O floor"]["seconds"]
    polars = results["polars sink_parquet"]["seconds"]
    lines = [
        f"ETL: {args.rows:,} rows x 4 columns, Parquet (zstd) → 3 derived columns → Parquet",
        f"expressions: `{EXPR}`",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; median of {args.repeat} interleaved rounds",
        "",
        "| contender | seconds | × I/O floor | × polars' speed | Mrows/s | peak RSS (MiB) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['seconds']:.2f} | {r['seconds'] / floor:.2f} | "
            f"{polars / r['seconds']:.2f} | "
            f"{args.rows / r['seconds'] / 1e6:.1f} | {r['rss'] / 2**20:.0f} |"
        )
    print("\n".join(lines))
    with open(args.out + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    with open(args.out + ".json", "w") as fh:
        json.dump({"rows": args.rows, "expressions": EXPR, "results": results}, fh, indent=1)


if __name__ == "__main__":
    main()
