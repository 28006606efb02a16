"""Show that the test suite catches each mutant of tests/mutants/mutants.toml.

Usage (from the repository root)::

    .venv/bin/python benchmarks/mutants.py                 # every mutant
    .venv/bin/python benchmarks/mutants.py --only ID ...   # some of them (merged into the file)
    make mutants

The working tree (tracked and untracked files git does not ignore) is copied
to a temporary folder once. The tests the mutants name are first run there
unchanged and must pass. Then, for each mutant, its edits are applied to the
copy (each ``old`` text must occur exactly once, or the mutant is reported
stale: re-point it), its tests run with ``-x``, and the file is restored. A
mutant is *caught* when its tests fail, *survived* when they pass; anything
else (a collection error, a timeout) is an *error*. The results go to
``benchmarks/results/mutants.json`` (the reliability report turns them into a
table in docs/reliability.md). Exit status 1 when any mutant survived or
erred.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "tests" / "mutants" / "mutants.toml"
RESULTS = ROOT / "benchmarks" / "results" / "mutants.json"
TIMEOUT_S = 1200


def load(path: Path = MUTANTS) -> list[dict[str, Any]]:
    """The mutants of the TOML file, in file order."""
    with open(path, "rb") as fh:
        return list(tomllib.load(fh)["mutant"])


def copy_tree(dest: Path) -> None:
    """Copy the files git tracks or would track (not the ignored ones) into ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
        capture_output=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


def apply(tree: Path, mutant: dict[str, Any]) -> str:
    """Apply the mutant's edits in ``tree``; returns the original text of its file."""
    path = tree / mutant["file"]
    original = path.read_text()
    text = original
    for edit in mutant["edit"]:
        count = text.count(edit["old"])
        if count != 1:
            msg = (
                f"mutant {mutant['id']}: {edit['old']!r} occurs {count} times in "
                f"{mutant['file']} (must be once): re-point the mutant"
            )
            raise ValueError(msg)
        text = text.replace(edit["old"], edit["new"])
    path.write_text(text)
    return original


def run_tests(tree: Path, tests: list[str]) -> tuple[int, str]:
    """Run ``tests`` in the copy; returns (pytest exit status, output).

    The kernel cache is the usual one: kernels are cached by their source text, so a
    mutated generator's kernels never meet the unmutated ones.
    """
    env = {**os.environ, "PYTHONPATH": str(tree)}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
            cwd=tree, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        return -1, f"timed out after {TIMEOUT_S} s: {exc}"
    return proc.returncode, proc.stdout + proc.stderr


def first_failure(output: str) -> str:
    """The id of the first failed test in pytest's summary, or ''."""
    # an id may hold spaces (`test[2-a plan by name]`); pytest ends it before " - why"
    found = re.search(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", output, re.M)
    return found.group(1) if found else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="mutant ids to run")
    parser.add_argument("--results", type=Path, default=RESULTS, help="JSON file to write")
    args = parser.parse_args(argv)
    mutants = load()
    if args.only:
        unknown = set(args.only) - {m["id"] for m in mutants}
        if unknown:
            print(f"unknown mutant ids: {sorted(unknown)}", file=sys.stderr)
            return 2
        mutants = [m for m in mutants if m["id"] in args.only]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="colbridge-mutants-") as tmp:
        tree = Path(tmp) / "repo"
        copy_tree(tree)
        for mutant in mutants:  # stale mutants are reported before anything runs
            apply(tree, mutant)
            (tree / mutant["file"]).write_text((ROOT / mutant["file"]).read_text())
        everything = sorted({t for m in mutants for t in m["tests"]})
        status, output = run_tests(tree, everything)
        if status != 0:
            print(f"the tests fail without any mutant (exit {status}):\n{output[-4000:]}",
                  file=sys.stderr)  # fmt: skip
            return 2
        for mutant in mutants:
            start = time.monotonic()
            original = apply(tree, mutant)
            try:
                status, output = run_tests(tree, mutant["tests"])
            finally:
                (tree / mutant["file"]).write_text(original)
            outcome = {0: "survived", 1: "caught"}.get(status, "error")
            if outcome == "survived" and re.search(r"\d+ skipped", output):
                outcome = "error"  # a skipped catcher proves nothing
            result = {
                "id": mutant["id"], "family": mutant["family"], "why": mutant["why"],
                "file": mutant["file"], "tests": mutant["tests"], "outcome": outcome,
                "caught_by": first_failure(output) if outcome == "caught" else "",
                "seconds": round(time.monotonic() - start, 1),
            }  # fmt: skip
            if outcome == "error":
                result["output"] = output[-3000:]
            results.append(result)
            print(f"{outcome:9} {mutant['id']:40} {result['caught_by']}", flush=True)
    if args.only and args.results.exists():
        # a partial run replaces its mutants' entries and keeps the others, in file order
        fresh = {r["id"]: r for r in results}
        kept = {r["id"]: r for r in json.loads(args.results.read_text())}
        order = [m["id"] for m in load()]
        merged = {**kept, **fresh}
        results = [merged[i] for i in order if i in merged]
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    bad = [r["id"] for r in results if r["outcome"] != "caught"]
    print(f"{len(results) - len(bad)} of {len(results)} mutants caught"
          + (f"; not caught: {bad}" if bad else ""))  # fmt: skip
    return 1 if bad else 0


def markdown(results: list[dict[str, Any]]) -> str:
    """The results as a Markdown table (docs/reliability.md)."""
    lines = ["| mutant | family | what it breaks | outcome | caught by |",
             "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in results:
        by = f"`{r['caught_by']}`" if r["caught_by"] else ""
        lines.append(f"| {r['id']} | {r['family']} | {r['why']} | {r['outcome']} | {by} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
