"""Jobs layer: the ``colbridge`` command line (``colbridge run``, ``colbridge fuse``).

Exit codes: 0 success; 2 usage, spec or expression error (the message names
the problem; nothing is read or written); 1 failure while running (no partial
output is left); 130 interrupted with Ctrl-C, 143 stopped by SIGTERM (no partial
output either). A run killed outright (SIGKILL) leaves its temporary file; the next
run writing the same output removes it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = ["main"]

_RUN_KEYS = {
    "input", "output", "with", "filter", "select", "steps", "device", "batch_rows",
    "memory_limit", "input_format", "output_format", "compression",
}  # fmt: skip
_FUSE_KEYS = {
    "input", "output", "columns", "dtype", "validity", "keep", "stats", "save_stats",
    "device", "batch_rows", "memory_limit", "ddof", "target", "folds", "smoothing", "seed",
    "min_frequency", "max_categories", "handle_unknown",
}  # fmt: skip
_COLUMN_KEYS = {
    "fill_null", "scale", "clip", "one_hot", "categories", "ids", "hash_buckets",
    "target_encode", "min_frequency", "max_categories", "handle_unknown", "log1p", "indicator",
    "quantile_bins", "datetime", "cyclical",
}  # fmt: skip
_INPUT_HELP = (
    "Parquet/IPC files, a folder or a glob; several files are read as one dataset "
    "(as the shell expands `data/*.parquet`)"
)


class _UsageError(Exception):
    """A command-line or spec problem: exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"colbridge: error: {message}\n")


class _Ordered(argparse.Action):
    """Keeps ``--with``, ``--filter`` and ``--select`` in the order given."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        ops = list(getattr(namespace, "ops", None) or [])
        ops.append((self.dest, values))
        namespace.ops = ops


class _CommaList(argparse.Action):
    """A comma-separated list of columns; a repeated flag adds to it (``--zscore a --zscore b``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, f"{given},{values}" if given else values)


def _column_list(p: argparse.ArgumentParser, flag: str, text: str, default: Any = "") -> None:
    p.add_argument(flag, action=_CommaList, default=default,
                   help=f"{text} (comma separated; repeatable)")  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="colbridge", description="Run colbridge jobs on Parquet/Arrow IPC data.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser(
        "run",
        help="stream a dataset through derived columns, a filter and a select",
        description=(
            "Stream Parquet/IPC data through fused kernels. --with, --filter and --select "
            "apply in the order given. Example: colbridge run in.parquet -o out.parquet "
            "--with 'z = (a - mean(a)) / std(a)' --filter 'z > 0'"
        ),
    )
    run.add_argument("input", nargs="*", help=_INPUT_HELP)
    run.add_argument("-o", "--output", help="output .parquet or .arrow/.ipc/.feather file")
    run.add_argument("--with", dest="with", action=_Ordered, metavar="'NAME = EXPR'",
                     help="add or replace a column (repeatable)")  # fmt: skip
    run.add_argument("--filter", dest="filter", action=_Ordered, metavar="EXPR",
                     help="keep rows where EXPR is true (repeatable)")  # fmt: skip
    run.add_argument("--select", dest="select", action=_Ordered, metavar="A,B,...",
                     help="keep these columns")  # fmt: skip
    run.add_argument("--spec", help="pipeline.toml holding the same settings")
    run.add_argument("--input-format", choices=["parquet", "ipc"])
    run.add_argument("--output-format", choices=["parquet", "ipc"])
    _common(run)

    fuse = sub.add_parser(
        "fuse",
        help="turn columns into one feature-matrix column (a fixed-shape tensor)",
        description=(
            "Fuse columns into one float32 (or --dtype) feature matrix per batch, with "
            "per-column transforms in the same pass. Example: colbridge fuse in.parquet "
            "-o feats.parquet --columns a,b,c --zscore a,b --one-hot c --save-stats stats.json"
        ),
    )
    fuse.add_argument("input", nargs="*", help=_INPUT_HELP)
    fuse.add_argument("-o", "--output", help="output .parquet or .arrow file")
    _column_list(fuse, "--columns", "feature columns in matrix order", default=None)
    _column_list(fuse, "--zscore", "columns to standardise")
    _column_list(fuse, "--minmax", "columns to scale to [0, 1]")
    _column_list(fuse, "--robust", "columns to centre on the median, / IQR")
    _column_list(fuse, "--log1p", "columns to take log(1 + x) of first")
    fuse.add_argument("--quantile-bins", action="append", default=[], metavar="COL=N",
                      help="replace a column by its quantile bin (0 .. N-1)")  # fmt: skip
    _column_list(fuse, "--indicator", "columns to add a <col>_missing 0/1 to")
    _column_list(fuse, "--one-hot", "dictionary/string columns to one-hot")
    fuse.add_argument(
        "--min-frequency",
        default=None,
        help="rarer categories are infrequent: a count (5) or a fraction (0.01)",
    )
    fuse.add_argument(
        "--max-categories",
        type=int,
        default=None,
        help="at most this many one-hot columns (infrequent one included) or ids",
    )
    fuse.add_argument(
        "--handle-unknown",
        default=None,
        choices=["ignore", "error", "infrequent_if_exist"],
        help="unseen one-hot categories (default ignore: an all-zero row)",
    )
    _column_list(fuse, "--ids", "categorical columns to integer ids")
    fuse.add_argument(
        "--hash-buckets",
        action="append",
        default=[],
        metavar="COL=N",
        help="ids from a stable hash into N buckets",
    )
    fuse.add_argument(
        "--datetime",
        action="append",
        default=[],
        metavar="COL=PARTS",
        help="date/time parts of a Date/Datetime/Time column, e.g. ts=hour,weekday "
        "(month weekday day ordinal_day hour minute)",
    )
    _column_list(fuse, "--cyclical", "--datetime columns to write as sin/cos pairs")
    _column_list(fuse, "--target-encode", "categorical columns to target-encode")
    fuse.add_argument("--target", default=None, help="label column for --target-encode")
    fuse.add_argument("--folds", type=int, default=None, help="out-of-fold folds (default 5)")
    fuse.add_argument("--smoothing", default=None, help="'auto' (default) or a number")
    fuse.add_argument("--seed", type=int, default=None, help="seed of the fold assignment")
    fuse.add_argument(
        "--fill-null", action="append", default=[], metavar="COL=VALUE",
        help="fill nulls of a numeric column before its other transforms, with a number or "
        "with the column's mean, median or most_frequent value fitted on the data "
        "(scikit-learn's SimpleImputer; scaling is then fitted on the filled values), "
        "e.g. --fill-null income=median; most_frequent also fills a one-hot, ids or "
        "target-encoded column with its most frequent category before the encoder",
    )  # fmt: skip
    fuse.add_argument("--clip", action="append", default=[], metavar="COL=LO:HI")
    fuse.add_argument("--dtype", default=None, help="matrix element type (default float32)")
    fuse.add_argument("--validity", action="store_true", help="also write a validity matrix")
    _column_list(fuse, "--keep", "columns to carry along (e.g. a label)")
    fuse.add_argument("--stats", help="load statistics from this JSON file (no stats pass)")
    fuse.add_argument("--save-stats", help="save the statistics used to this JSON file")
    fuse.add_argument("--spec", help="fuse.toml holding the same settings")
    _common(fuse)
    return parser


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default=None)
    p.add_argument("--batch-rows", type=int, default=None, help="rows per batch")
    p.add_argument("--memory-limit", default=None, help="bound the working set, e.g. 512MB")
    p.add_argument("--explain", action="store_true", help="print the plan and exit")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def _load_spec(path: str, allowed: set[str]) -> dict[str, Any]:
    import tomllib

    try:
        with open(path, "rb") as fh:
            spec = tomllib.load(fh)
    except FileNotFoundError:
        msg = f"spec file {path!r} does not exist"
        raise _UsageError(msg) from None
    except tomllib.TOMLDecodeError as exc:
        msg = f"spec file {path!r} is not valid TOML: {exc}"
        raise _UsageError(msg) from None
    unknown = sorted(set(spec) - allowed)
    if unknown:
        msg = (
            f"unknown key {unknown[0]!r} in spec file {path!r}; "
            f"allowed keys: {', '.join(sorted(allowed))}"
        )
        raise _UsageError(msg)
    return spec


def _spec_ops(spec: dict[str, Any], path: str) -> list[tuple[str, Any]]:
    ops: list[tuple[str, Any]] = []
    if "steps" in spec:
        if any(k in spec for k in ("with", "filter", "select")):
            msg = f"spec file {path!r} has both `steps` and top-level with/filter/select; use one"
            raise _UsageError(msg)
        for i, step in enumerate(spec["steps"]):
            if not isinstance(step, dict) or len(step) != 1:
                msg = f"spec `steps[{i}]` must be a table with one key: with, filter or select"
                raise _UsageError(msg)
            ((kind, value),) = step.items()
            if kind not in ("with", "filter", "select"):
                msg = f"unknown key {kind!r} in spec `steps[{i}]`; use with, filter or select"
                raise _UsageError(msg)
            ops.append((kind, value))
        return ops
    for kind in ("with", "filter", "select"):
        if kind in spec:
            ops.append((kind, spec[kind]))
    return ops


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def _common_options(
    args: argparse.Namespace, spec: dict[str, Any]
) -> tuple[Any, Any, dict[str, Any]]:
    """Input, output and the options both commands share; the command line wins over the spec."""
    inputs = list(args.input or [])
    # one argument keeps its meaning (a file, folder or quoted glob); several are a list
    source: Any = (inputs[0] if len(inputs) == 1 else inputs) if inputs else spec.get("input")
    if source is None:
        msg = "no input given; pass a file, folder or glob (or `input` in the spec)"
        raise _UsageError(msg)
    options: dict[str, Any] = {
        "device": args.device or spec.get("device", "auto"),
        "batch_rows": args.batch_rows if args.batch_rows is not None else spec.get("batch_rows"),
        "memory_limit": args.memory_limit or spec.get("memory_limit"),
    }
    return source, args.output or spec.get("output"), options


def _cmd_run(args: argparse.Namespace) -> int:
    from colbridge.io.pipeline import explain_pipeline, pipeline

    spec = _load_spec(args.spec, _RUN_KEYS) if args.spec else {}
    ops = (_spec_ops(spec, args.spec) if args.spec else []) + list(getattr(args, "ops", []) or [])
    from colbridge.io.steps import build_steps

    steps = build_steps(ops=ops)
    source, output, options = _common_options(args, spec)
    options["input_format"] = args.input_format or spec.get("input_format")
    if args.explain:
        print(explain_pipeline(source, steps=steps, **options))
        return 0
    if output is None:
        msg = "no output given; pass `-o out.parquet` (or `output` in the spec)"
        raise _UsageError(msg)
    result = pipeline(
        source, output, steps=steps, progress=not args.quiet,
        output_format=args.output_format or spec.get("output_format"),
        compression=spec.get("compression", "zstd"), **options,
    )  # fmt: skip
    if not args.quiet:
        print(
            f"wrote {result.rows_out} of {result.rows_in} rows to {result.output} in "
            f"{result.seconds:.2f} s ({result.passes} pass(es), {result.batches} batch(es))",
            file=sys.stderr,
        )
    return 0


def _kv(items: list[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            form = "LO:HI" if what == "--clip" else "VALUE"
            msg = f"cannot read {what} {item!r}; write COLUMN={form}"
            raise _UsageError(msg)
        out[name.strip()] = value.strip()
    return out


def _number(text: str, what: str) -> float | None:
    if text == "":
        return None
    try:
        return float(text)
    except ValueError:
        msg = f"{what}: {text!r} is not a number"
        raise _UsageError(msg) from None


def _fill(text: str, what: str) -> float | str | None:
    from colbridge.io.fuse import FILL_STRATEGIES

    if text in FILL_STRATEGIES:
        return text
    try:
        return _number(text, what)
    except _UsageError:
        choices = ", ".join(FILL_STRATEGIES)
        msg = f"{what}: {text!r} is not a number or one of {choices}"
        raise _UsageError(msg) from None


def _fuse_columns(args: argparse.Namespace, spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    from colbridge.io.fuse import feature_columns

    table = spec.get("columns", {})
    if isinstance(table, list):
        table = {name: {} for name in table}
    if not isinstance(table, dict):
        msg = "spec `columns` must be a list of names or a table of per-column settings"
        raise _UsageError(msg)
    columns: dict[str, dict[str, Any]] = {}
    for name, cfg in table.items():
        unknown = sorted(set(cfg) - _COLUMN_KEYS)
        if unknown:
            allowed = ", ".join(sorted(_COLUMN_KEYS))
            msg = f"unknown key {unknown[0]!r} in spec `columns.{name}`; allowed keys: {allowed}"
            raise _UsageError(msg)
        columns[name] = dict(cfg)
    clips: dict[str, tuple[float | None, float | None]] = {}
    for name, value in _kv(args.clip, "--clip").items():
        lo, sep, hi = value.partition(":")
        if not sep:
            msg = f"cannot read --clip {name}={value!r}; write COLUMN=LO:HI (a side may be empty)"
            raise _UsageError(msg)
        clips[name] = (_number(lo, f"--clip {name}"), _number(hi, f"--clip {name}"))
    min_frequency = spec.get("min_frequency")
    if args.min_frequency is not None:
        min_frequency = _count_or_fraction(args.min_frequency, "--min-frequency")
    columns = feature_columns(
        _split(args.columns or ""),
        zscore=_split(args.zscore), minmax=_split(args.minmax), robust=_split(args.robust),
        one_hot=_split(args.one_hot), ids=_split(args.ids),
        target_encode=_split(args.target_encode), log1p=_split(args.log1p),
        indicator=_split(args.indicator),
        fill_null={
            k: _fill(v, f"--fill-null {k}") for k, v in _kv(args.fill_null, "--fill-null").items()
        },
        clip=clips,
        quantile_bins={
            k: _integer(v, f"--quantile-bins {k}")
            for k, v in _kv(args.quantile_bins, "--quantile-bins").items()
        },
        hash_buckets={
            k: _integer(v, f"--hash-buckets {k}")
            for k, v in _kv(args.hash_buckets, "--hash-buckets").items()
        },
        datetime={k: _split(v) for k, v in _kv(args.datetime, "--datetime").items()},
        cyclical=_split(args.cyclical),
        min_frequency=min_frequency,
        max_categories=args.max_categories or spec.get("max_categories"),
        handle_unknown=args.handle_unknown or spec.get("handle_unknown"),
        base=columns,
    )  # fmt: skip
    if not columns:
        msg = "no feature columns given; pass `--columns a,b,...` (or `columns` in the spec)"
        raise _UsageError(msg)
    return columns


def _count_or_fraction(text: str, what: str) -> float:
    """``"5"`` → 5 (a count), ``"0.01"`` → 0.01 (a fraction), as scikit-learn reads them."""
    try:
        return int(text)
    except ValueError:
        pass
    return _number(text, what)  # type: ignore[return-value]


def _integer(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        msg = f"cannot read {what}={text!r} as a whole number"
        raise _UsageError(msg) from None


def _cmd_fuse(args: argparse.Namespace) -> int:
    from colbridge.io.fuse import FeatureSpec, explain_fuse, fuse

    spec = _load_spec(args.spec, _FUSE_KEYS) if args.spec else {}
    columns = _fuse_columns(args, spec)
    feature_spec = FeatureSpec.from_dict(
        {
            "columns": columns,
            "dtype": args.dtype or spec.get("dtype", "float32"),
            "validity": args.validity or spec.get("validity", False),
            "keep": _split(args.keep) or list(spec.get("keep", [])),
            "ddof": spec.get("ddof", 0),
            "target": args.target or spec.get("target"),
            "folds": args.folds or spec.get("folds", 5),
            "smoothing": args.smoothing or spec.get("smoothing", "auto"),
            "seed": args.seed if args.seed is not None else spec.get("seed", 0),
        }
    )
    source, output, options = _common_options(args, spec)
    options["stats"] = args.stats or spec.get("stats")
    if args.explain:
        print(explain_fuse(source, feature_spec, **options))
        return 0
    if output is None:
        msg = "no output given; pass `-o features.parquet` (or `output` in the spec)"
        raise _UsageError(msg)
    result = fuse(
        source, output, feature_spec, save_stats=args.save_stats or spec.get("save_stats"),
        progress=not args.quiet, **options,
    )  # fmt: skip
    if not args.quiet:
        print(
            f"wrote {result.rows} rows x {result.width} features to {result.output} "
            f"in {result.seconds:.2f} s",
            file=sys.stderr,
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``colbridge`` command; returns the exit status."""
    import pyarrow as pa

    from colbridge.errors import (
        ColbridgeError,
        ColumnNotFoundError,
        DuplicateColumnError,
        ExpressionSyntaxError,
        PlanProblemsError,
        SchemaError,
        UnsupportedTypeError,
    )
    from colbridge.io.steps import JobSpecError

    usage = (
        _UsageError, JobSpecError, ExpressionSyntaxError, ColumnNotFoundError, SchemaError,
        DuplicateColumnError, UnsupportedTypeError,
    )  # fmt: skip
    from colbridge.io.source import Terminated, interrupt_between_batches

    args = _parser().parse_args(argv)
    try:
        with interrupt_between_batches():
            if args.command == "run":
                return _cmd_run(args)
            return _cmd_fuse(args)
    except usage as exc:
        print(f"colbridge: error: {exc}", file=sys.stderr)
        return 2
    except Terminated:
        print("colbridge: terminated (SIGTERM); no output was written", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("colbridge: interrupted; no output was written", file=sys.stderr)
        return 130
    except (ColbridgeError, OSError, pa.ArrowException, MemoryError) as exc:
        if isinstance(exc, PlanProblemsError):  # a numbered list: the note on a line of its own
            print(f"colbridge: failed: {exc}\nno output was written", file=sys.stderr)
        else:
            print(f"colbridge: failed: {exc}; no output was written", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
