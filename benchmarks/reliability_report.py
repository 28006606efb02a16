"""Run the reliability suite and write docs/reliability.md and docs/errors.md.

Usage (from the repository root)::

    .venv/bin/python benchmarks/reliability_report.py            # default suite
    .venv/bin/python benchmarks/reliability_report.py --slow     # also the >= 100,000-case fuzz
    .venv/bin/python benchmarks/reliability_report.py --errors-only

The figures come from the tests themselves (they write counters to the JSON
file named by ``COLBRIDGE_RELIABILITY_STATS``), so the report shows what the
suite measured on this machine, not numbers typed by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KNOWN_BUGS = [
    ("B1", "A strict cast of an out-of-range literal on a frame with no rows",
     "`pl.DataFrame({'a': pl.Series([], dtype=pl.Int8)}).gpu.with_columns("
     "z=cb.lit(-1.25).cast('uint16')).compute()`",
     "`InvalidOperationError` (polars raises for any row count)", "an empty result"),
    ("B2", "`fill_nan` with a float on an integer column keeps the integer type",
     "`pl.DataFrame({'a': pl.Series([1, None, 3], dtype=pl.Int8)}).gpu.with_columns("
     "z=cb.col('a').fill_nan(0.0)).compute()`",
     "`z` is Float64 (polars' supertype)", "`z` is Int8"),
    ("B3", "`colbridge run --batch-rows 0` is accepted",
     "`colbridge run in.parquet -o out.parquet --batch-rows 0 --with 'z = a'`",
     "exit 2, `batch_rows` must be at least 1", "exit 0 with the default batch size "
     "(`args.batch_rows or ...` treats 0 as not given)"),
    ("B4", "An unwritable kernel cache folder gives a raw `OSError`",
     "`COLBRIDGE_CACHE_DIR=<read-only tmpfs or below a file>` then any first `compute()`",
     "`KernelCompileError` naming the folder and `COLBRIDGE_CACHE_DIR` (or an in-memory "
     "fallback)", "`OSError: [Errno 30] Read-only file system` / `[Errno 20] Not a directory`"),
    ("B5", "An operation on an integer literal (`-lit(3)`, `lit(5).abs()`, `lit(5).clip(-2, 3)`) "
     "widens float32 results to float64",
     "`pl.DataFrame({'b': pl.Series([0.5], dtype=pl.Float32)}).gpu.with_columns("
     "z=-cb.lit(3) + cb.col('b')).compute()`",
     "`z` is Float32 (polars keeps such literals dynamic)", "`z` is Float64"),
    ("B6", "A strict cast of a scalar-valued expression on a frame with no rows",
     "`pl.DataFrame({'a': pl.Series([], dtype=pl.UInt16)}).gpu.with_columns("
     "z=(cb.col('a').count() - 5).cast('uint8')).compute()`; also "
     "`cb.coalesce(cb.lit(math.inf), 3).cast('uint64')`",
     "`InvalidOperationError` (polars raises)", "an empty result"),
    ("B7", "Python literals 3, 3.0 and True compared equal as IR nodes, so a memo merged "
     "them and `when(a < 3).then(a).otherwise(3.0)` on an integer column was typed Int32",
     "`pl.DataFrame({'a': pl.Series([1, 5], dtype=pl.Int32)}).gpu.with_columns("
     "z=cb.when(cb.col('a') < 3).then(cb.col('a')).otherwise(3.0)).compute()`",
     "`z` is Float64 (polars)",
     "`z` is Int32 (regression test in tests/engine/test_engine_ops.py)"),
    ("B8", "The CUDA backend did not evaluate one-value outputs on a frame with no rows, so a "
     "failing strict cast of a scalar expression returned an empty result",
     "`cast(floor(log1p(lit(-4))), 'int64')` on a 0-row frame, through the CUDA kernels "
     "(run on the host)",
     "`InvalidOperationError`, as the CPU backend and polars", "an empty result"),
    ("B9", "Expressions of Python numbers other than bare literals were typed on the spot: "
     "`when(c).then(3.0).otherwise(1) * float32` was Float64",
     "`pl.DataFrame({'c': [True], 'd': pl.Series([1.5], dtype=pl.Float32)}).gpu.with_columns("
     "z=cb.when(cb.col('c')).then(3.0).otherwise(1) - cb.col('d')).compute()`",
     "`z` is Float32 (polars keeps such expressions dynamic, then casts them; 85 cases in "
     "tests/engine/test_promotion.py)", "`z` is Float64"),
    ("B10", "A power whose deciding side is a Python number was typed on the spot: "
     "`uint64 ** 3.0 - float32` was Float64 (found by a random slow fuzz run)",
     "`pl.DataFrame({'i': pl.Series([2], dtype=pl.Int8), 'f': pl.Series([0.5], "
     "dtype=pl.Float32)}).gpu.select(z=cb.col('i') ** 2.5 + cb.col('f')).compute()`",
     "`z` is Float32; `2 ** int8` alone is Int32 (polars: the base decides unless the "
     "exponent is a float, and a Python number there keeps the power dynamic)",
     "`z` is Float64; `2 ** int8` was Int8"),
    ("B11", "Signed int64 arithmetic that overflows was compared as if it had not: numba marks "
     "it `nsw`, so LLVM folded `x + 1 > x` to true and took `log(x * x)` for a number "
     "(found by a random slow fuzz run, `tan(a + a) <= log(b * b)`)",
     "`pl.DataFrame({'x': [2**63 - 1]}).gpu.select(z=cb.col('x') + 1 > cb.col('x'))"
     ".compute()`",
     "`z` is false (polars wraps int64 arithmetic)", "`z` is true, in the compiled kernels"),
    ("B12", "A `select` of literals alone after a filter",
     "`pl.DataFrame({'a': [1, 2]}).gpu.filter(cb.col('a') > 5).select(n=cb.lit(3)).compute()`",
     "one row, `n = 3` (polars, whatever the filter keeps)",
     "no row from the compiled kernels; a NumPy broadcast error from the NumPy tier"),
    ("B13", "A column left out by a `select` or a grouping could still be read by a later step",
     "`pl.DataFrame({'a': [1], 'b': [2]}).gpu.select('a').with_columns(c=cb.col('b') * 2)"
     ".compute()`",
     "`ColumnNotFoundError` naming `b` and the columns left (polars raises)",
     "the input frame's `b`, doubled"),
    ("B14", "A column made of one value was inlined where it was reduced, windowed, scanned "
     "or selected (found by the plan fuzzer, `tests/engine/test_plan_fuzz.py`)",
     "`pl.DataFrame({'a': [1, 2, 3]}).gpu.with_columns(x=cb.lit(2)).select(s=cb.col('x')"
     ".sum()).compute()`",
     "`s = 6` (polars broadcasts `x` to the frame's rows)", "`s = 2`; `select('x')` gave one row"),
    ("B15", "A column made by an ordered operation or a window was inlined into a grouping or "
     "a window, so it was computed per group (found by the plan fuzzer)",
     "`df.gpu.with_columns(w=cb.col('b').shift(1)).group_by('k').agg(cb.col('w').sum())`",
     "`w` shifted over the whole frame, then summed per group",
     "`b` shifted within each group"),
    ("B16", "A grouping, or a one-row `select`, no later step reads a column of lost its rows "
     "(found by the plan fuzzer)",
     "`df.gpu.group_by('k').agg(g=cb.col('a').sum()).with_columns(g=cb.lit(0)).select('g')"
     ".compute()`",
     "one row per group", "no rows"),
    ("B17", "An integer exponent beyond 2**32-1 raised only where the base was valid (found by "
     "a random slow fuzz run)",
     "`pa.table({'b': pa.array([None], pa.uint64()), 'a': pa.array([2**40], pa.uint64())})`, "
     "`select(z=cb.col('b') ** cb.col('a'))`",
     "`InvalidOperationError` (polars casts the whole exponent column to u32)", "a null"),
    ("B18", "A filter compacted by the compiled kernels crashed on a polars string column of a "
     "table made by an earlier segment (found by the plan fuzzer on the compiled tier)",
     "`df.gpu.with_columns(x=cb.col('a').sum()).filter(cb.col('x').min() <= cb.col('b'))` "
     "with a string column in `df`",
     "the kept rows", "`ArrowNotImplementedError` (pyarrow filters no string views)"),
]  # fmt: skip


def run_suite(slow: bool) -> tuple[dict[str, Any], float, str]:
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.json"
        env = {**os.environ, "COLBRIDGE_RELIABILITY_STATS": str(stats)}
        marker = "not gpu" if slow else "not gpu and not slow"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "tests/reliability",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            marker,
            "--deselect",
            "tests/reliability/test_rel_bad_inputs.py::test_docs_errors_md_lists_every_case",
        ]
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
        summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
        data = json.loads(stats.read_text()) if stats.exists() else {"fuzz": {}, "figures": {}}
    return data, seconds, summary


def errors_md() -> str:
    from colbridge.testing.bad_inputs import CASES, catalogue_markdown, check_outcome, run_case

    outcomes = {case.id: run_case(case) for case in CASES}
    failing = [c.id for c in CASES if check_outcome(c, outcomes[c.id])]
    head = [
        "# Bad inputs and the errors they give",
        "",
        "Generated by `benchmarks/reliability_report.py` from "
        "`colbridge.testing.bad_inputs.CASES`, the list `tests/reliability/"
        "test_rel_bad_inputs.py` checks; do not edit by hand.",
        "",
        f"{len(CASES)} cases. For each, colbridge raises the error class shown (every one is a "
        "`colbridge.ColbridgeError` and also the builtin it refines, e.g. `ValueError`), or the "
        "`colbridge` command exits with the status shown (2: usage, spec or expression error, "
        "nothing read or written; 1: failure while running, no output; 130: Ctrl-C). The "
        "message names the problem and the remedy, and the input (every buffer of the frame, "
        "the column, or the input files and their folder) is byte-for-byte unchanged: the tests "
        "hash it before and after.",
        "",
        "A plan with several problems reports them all at once: planning types every output "
        "of every step against the frame's schema (the `plans` cases), and where more than one "
        "fails it raises one `PlanProblemsError` listing each, numbered, with its step, output "
        "column, expression, the columns it reads and their types, and the error it gives "
        "alone (with its remedy). An output that fails is unknown from then on: what reads it "
        "is listed once as not checked, never as a problem of its own. The error is also an "
        "instance of the class the first problem raises alone, so `except SchemaError` keeps "
        "working and the command line keeps that class's exit status; a plan with one problem "
        "raises exactly the error in this table. `explain()` lists the same problems without "
        "raising. Checks made before types are known stay immediate: expression syntax, "
        "keyword arguments, duplicate output names, a column outside a reduction in `agg`.",
        "",
        f"Cases not behaving as catalogued on the last run: {', '.join(failing) or 'none'}.",
        "",
    ]
    return "\n".join(head) + "\n" + catalogue_markdown(outcomes) + "\n"


def reliability_md(data: dict[str, Any], seconds: float, summary: str, slow: bool) -> str:
    fuzz, fig = data.get("fuzz", {}), data.get("figures", {})
    rss = fig.get("rss", {})
    marker = "not gpu" if slow else "not gpu and not slow"
    faults = fig.get("faults", {})
    lines = [
        "# Reliability",
        "",
        "Generated by `benchmarks/reliability_report.py` (run it to refresh); the figures are "
        "what `tests/reliability` measured on the machine below.",
        "",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPU cores, Python "
        f"{platform.python_version()}, no GPU (CUDA kernels run on the host with g++)",
        f'- suite: `pytest tests/reliability -m "{marker}"`'
        f" — {summary} ({seconds:.0f} s wall clock, including subprocesses)",
        "",
        "## Differential fuzzing against polars",
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| seeds (fixed, then the day's) | {fuzz.get('seeds', [])} |",
        f"| steps (one `with_columns` of several trees, maybe a filter; one compiled kernel "
        f"set each) | {fuzz.get('steps', 0)} |",
        f"| expression trees | {fuzz.get('trees', 0)} |",
        f"| cases (frame × input kind, plus CUDA-on-host checks) | {fuzz.get('cases', 0)} |",
        f"| of which compared with polars | {fuzz.get('polars_cases', 0)} |",
        f"| of which CUDA kernel text on the host vs the CPU backend | "
        f"{fuzz.get('cuda_host_cases', 0)} |",
        f"| polars raised and colbridge raised too | {fuzz.get('polars_errors_matched', 0)} |",
        f"| operations re-checked on their own (last-bit differences within their tolerance) | "
        f"{sum(fuzz.get('explained', {}).values())} {fuzz.get('explained', {}) or ''} |",
        f"| refusals, each matched to a known gap | "
        f"{sum(fuzz.get('refusals', {}).values())} {fuzz.get('refusals', {}) or ''} |",
        f"| known wrong values met (each pinned by a strict xfail) | "
        f"{sum(fuzz.get('known', {}).values())} {fuzz.get('known', {}) or ''} |",
        f"| **mismatches (wrong value, unknown refusal, missing error, crash)** | "
        f"**{len(fuzz.get('mismatches', []))}** |",
        "",
        f"Input kinds: {fuzz.get('kinds', {})}. Column dtypes drawn: {fuzz.get('dtypes', {})}.",
        "",
        "Operation coverage (tree nodes): "
        + ", ".join(f"`{k}` {v}" for k, v in sorted(fuzz.get("ops", {}).items())),
        "",
        *fuzz_method(),
        "",
        "## Bad-input catalogue",
        "",
        f"{fig.get('catalogue_cases', '?')} cases in {len(fig.get('catalogue_categories', []))} "
        f"categories ({', '.join(fig.get('catalogue_categories', []))}); "
        f"{fig.get('catalogue_passed', 0)} gave the catalogued error with the problem and the "
        "remedy named and the input unchanged. The table is in [errors.md](errors.md).",
        "",
        "## String expressions",
        "",
        f"- hostile corpus: {fig.get('parser_hostile_corpus', '?')} strings, "
        f"{fig.get('parser_hostile_rejected', '?')} rejected (the rest are plain arithmetic on "
        "columns); no sentinel file or global appeared",
        f"- random text: {fig.get('parser_random_cases', '?')} hypothesis cases",
        f"- worst parse: {fig.get('parser_worst_seconds', '?')} s, tracemalloc peak "
        f"{fig.get('parser_worst_peak_mib', '?')} MiB",
        f"- kernel cache: folder mode 0700; {fig.get('cache_damaged_files_rebuilt', '?')} "
        "truncated/garbage/unparsable `cbk_*.py` files detected and rewritten, results correct",
        "",
        "## Concurrency",
        "",
        f"{fig.get('concurrency_calls', '?')} mixed `compute`/`compute_async` calls from 8 threads "
        f"on shared frames: all equal to the serial answers; "
        f"{fig.get('concurrency_distinct_kernels', '?')} distinct kernels compiled exactly once "
        f"each; {fig.get('concurrency_seconds', '?')} s, under a 120 s watchdog.",
        "",
        "## Leaks (RSS from /proc/self/statm, fresh subprocess, after warm-up)",
        "",
        "| loop | RSS before | RSS after | growth |",
        "| --- | --- | --- | --- |",
    ]
    for name, f in rss.items():
        lines.append(f"| 10,000 × {name} | {f['before'] / 2**20:.1f} MiB | "
                     f"{f['after'] / 2**20:.1f} MiB | {f['growth']:+.2%} |")  # fmt: skip
    lines += [
        "",
        "## Injected faults",
        "",
        "| fault | outcome |",
        "| --- | --- |",
    ]
    for name, how in faults.items():
        lines.append(f"| {name} | {how} |")
    lines += [
        f"\n{len(faults)} faults survived (documented error or fallback, no partial output, "
        "rerun succeeded). Out-of-memory gives `MemoryError` (`pyarrow.ArrowMemoryError`), not a "
        "colbridge error: pyarrow 26 has no capped memory pool, so the fault is real — "
        "`RLIMIT_AS` on a subprocess using pyarrow's system allocator.",
        "",
        "## Bugs found",
        "",
        "All eighteen are fixed. Each has a regression test in "
        "`tests/reliability/test_rel_known_bugs.py` (B7 in `tests/engine/test_engine_ops.py`, "
        "B10 in `tests/engine/test_promotion.py`, B11 in "
        "`tests/engine/test_integer_overflow.py`, B12 to B16 and B18 in "
        "`tests/engine/test_plan_scoping.py`, B17 in "
        "`tests/reliability/test_rel_differential_fuzz.py`); "
        '"got" is the behaviour before the fix.',
        "",
        "| id | bug | repro | expected | got |",
        "| --- | --- | --- | --- | --- |",
    ]
    for bug in KNOWN_BUGS:
        lines.append("| " + " | ".join(bug) + " |")
    lines += [
        "",
        "Notes (behaviour documented, not counted as bugs): a same-type cast is planned as a "
        "zero-copy rename of the (immutable) input column, like a passed-through column; "
        '`cast(a, "unknown")` in a string expression raises `UnsupportedTypeError` rather than '
        "`ExpressionSyntaxError`; `lit('x')` names the allowed literal types but no fix.",
        "",
        "O1, in the oracle: polars 2.1's lazy engine types `lit(0.5) / f32_column` as Float64 "
        "when a constant filter such as `lit(0.001).is_infinite()` follows the `with_columns`, "
        "and Float32 without that filter or in its eager engine. colbridge gives Float32. The "
        "comparison helper accepts the eager engine's answer where polars' two engines "
        "disagree (regression test `test_oracle_o1_...`). A random-seed CI run found it.",
        "",
        "Hypothesis runs derandomized by default (profile `ci` in `tests/conftest.py`), so a "
        "build is reproducible; `COLBRIDGE_HYPOTHESIS_PROFILE=explore` draws fresh examples "
        "for bug hunting.",
    ]
    if fuzz.get("mismatches"):
        lines += ["", "## Mismatches of this run", ""]
        lines += [f"```\n{m[:1500]}\n```" for m in fuzz["mismatches"][:10]]
    return "\n".join(lines) + "\n"


def fuzz_method() -> list[str]:
    """How the fuzzer works: seeds, tolerances, known gaps and wrong values, the host shim."""
    from colbridge.testing.asserts import tolerance_table_markdown
    from tests.reliability.fuzzing import (
        ALL_OPS,
        FIXED_SEEDS,
        known_bugs_markdown,
        known_gaps_markdown,
    )

    return [
        "### Plans of several steps",
        "",
        "The expression fuzzer checks one step's trees in depth. "
        "`tests/engine/test_plan_fuzz.py` checks what sits between steps: hypothesis draws "
        "plans of one to four steps (`with_columns` that add or overwrite columns, `select` "
        "that drops them or makes one row of literals, filters, groupings, reductions, "
        "windows and ordered operations read by later steps, and now and then a column an "
        "earlier step left out) over small frames with nulls (and empty ones), builds each "
        "with polars and with colbridge from one description, and requires both to raise or "
        "both to give the same columns, types and values. It runs on the NumPy tier, which "
        "compiles nothing (300 plans in a few seconds), and 40 plans on the compiled "
        "kernels, which compact a filter's rows their own way (it found B18 there); a "
        "companion test checks that the "
        "plans drawn compute rows, raise, and group in useful proportions. It found B14 to "
        "B16 below.",
        "",
        "### Seeds",
        "",
        f"Every run checks the steps drawn from the fixed seeds {list(FIXED_SEEDS)} and from "
        "the day's seed (`YYYYMMDD`), which pytest prints in its header (`colbridge fuzz "
        "seeds: ...`); `COLBRIDGE_FUZZ_SEED=<n> pytest tests/reliability` replays a day. Each "
        f"seed's steps root a tree at every one of the {len(ALL_OPS)} operations "
        "(`fuzzing.ALL_OPS`), a few per step; a test id names its seed and step. Data comes "
        "from `colbridge.testing.data`: every type's limits (min, min+1, max−1, max, 0, ±1, "
        "the narrower types' bounds ±1; for floats ±0.0, subnormals, NaN, ±inf, the largest "
        "finite value, ±1e308, ±2^53±1, ±2^63, ±2^64 and each integer bound ±1 and ± one "
        "ulp) mixed with small and full-range values.",
        "",
        "### Tolerances",
        "",
        "Comparisons are exact unless the operation is listed with a tolerance here "
        "(`colbridge.testing.asserts.TOLERANCES`). When a step differs from polars, each "
        "operation with a tolerance is checked on its own against polars' result of that "
        "operation on the same inputs; then colbridge's values of those operations are put in "
        "polars' trees in their place and the rest must match exactly, so an error never "
        "spreads into a loose comparison of a whole expression.",
        "",
        tolerance_table_markdown(),
        "",
        "### Refusals: known gaps",
        "",
        "Where colbridge raises a clear error and polars computes, the case must match one of "
        "these, checked case by case (error class, message, and the check named in "
        "`fuzzing.KNOWN_GAPS` run on the case's own operations, types and data); anything else "
        "fails the run.",
        "",
        known_gaps_markdown(),
        "",
        "### Known wrong values",
        "",
        "A wrong value found is pinned by a regression test marked `xfail(strict=True)`, "
        "which fails loudly once the bug is fixed, and listed in `fuzzing.KNOWN_BUGS`; the "
        "fuzzer then recognises only that symptom.",
        "",
        known_bugs_markdown(),
        "",
        "### CUDA kernels on the host",
        "",
        "`colbridge.testing.cuda_host` compiles the generated CUDA C with g++ and runs a "
        "launch's blocks one after another, the threads of a block on real OS threads (2 "
        "warps per block, 2 blocks, so grid-stride loops wrap on a few hundred rows). Atomics "
        "are real; `__ballot_sync`, `__shfl_*_sync`, `__syncwarp`, `__syncthreads` and "
        "`__shared__` are emulated, and a lane that leaves while its warp waits for it, "
        "lanes in different primitives, a block that is not whole warps or a deadlock are "
        "reported. Guard bytes around every buffer catch a write past either end after each "
        "launch. The `sanitizer` tests (part of the default run) build stand-alone programs "
        "with AddressSanitizer (any read or write past a buffer) and ThreadSanitizer (a "
        "plain `+=` where `atomicAdd` is needed); `COLBRIDGE_HOST_SANITIZE=address|thread` "
        "runs every host launch that way.",
        "",
        *mutants_section(),
    ]


def mutants_section() -> list[str]:
    """The last `make mutants` results, when there are some."""
    from benchmarks.mutants import RESULTS, markdown

    head = [
        "### Mutants",
        "",
        "`make mutants` (`benchmarks/mutants.py`) applies each mutant of "
        "`tests/mutants/mutants.toml` to a copy of the repository and runs the tests it names; "
        "it exits non-zero when one survives.",
        "",
    ]
    if not RESULTS.exists():
        return [*head, "No results yet: run `make mutants`."]
    results = json.loads(RESULTS.read_text())
    caught = sum(r["outcome"] == "caught" for r in results)
    return [*head, f"Last run: {caught} of {len(results)} caught.", "", markdown(results)]


def slow_section(data: dict[str, Any]) -> str:
    fuzz = data.get("fuzz", {})
    rows = [
        "",
        "## Slow fuzz run",
        "",
        "`COLBRIDGE_RELIABILITY_STATS=stats.json pytest "
        "tests/reliability/test_rel_differential_fuzz.py -m slow` (steps drawn from the day's "
        f"seed, deeper trees, up to 300 rows per frame), pytest exit status "
        f"{data.get('exitstatus')}:",
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| steps | {fuzz.get('steps', 0)} |",
        f"| expression trees | {fuzz.get('trees', 0)} |",
        f"| cases | {fuzz.get('cases', 0)} |",
        f"| compared with polars | {fuzz.get('polars_cases', 0)} |",
        f"| CUDA kernel text on the host vs CPU | {fuzz.get('cuda_host_cases', 0)} |",
        f"| polars raised and colbridge raised too | {fuzz.get('polars_errors_matched', 0)} |",
        f"| refusals, each matched to a known gap | {fuzz.get('refusals', {})} |",
        f"| known wrong values met | {fuzz.get('known', {})} |",
        f"| **mismatches** | **{len(fuzz.get('mismatches', []))}** |",
        "",
        "Every refusal matched one of the known gaps above, case by case.",
    ]
    rows += [f"\n```\n{m[:1500]}\n```" for m in fuzz.get("mismatches", [])[:5]]
    return "\n".join(rows) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slow", action="store_true", help="include the slow-marked tests")
    parser.add_argument("--errors-only", action="store_true", help="only write docs/errors.md")
    parser.add_argument(
        "--slow-stats",
        help="JSON counters of a separate `-m slow` fuzz run (COLBRIDGE_RELIABILITY_STATS), "
        "added as their own section",
    )
    args = parser.parse_args()
    (ROOT / "docs" / "errors.md").write_text(errors_md())
    if args.errors_only:
        return 0
    data, seconds, summary = run_suite(args.slow)
    text = reliability_md(data, seconds, summary, args.slow)
    if args.slow_stats:
        text += slow_section(json.loads(Path(args.slow_stats).read_text()))
    (ROOT / "docs" / "reliability.md").write_text(text)
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
