"""Testing: bad inputs of the contracts work (issue 14), appended to the catalogue.

`colbridge.testing.bad_inputs` builds its `BadInput` cases from `contract_cases`:
each tuple is ``(id, category, what, make, action, error, problem, remedy)`` as
there. They are kept apart so that the catalogue module does not grow a second
author's section; this module imports nothing from it (no import cycle).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

import colbridge as cb
from colbridge import errors as E

__all__ = ["contract_cases"]

Case = tuple[str, str, str, Callable[[Path], Any], Callable[[Any], Any], Any, str, str]


def _frame(_: Path) -> pl.DataFrame:
    return pl.DataFrame({"price": [1.0, 2.0, None], "qty": [1, 2, 3], "ok": [True, False, None]})


def _compute(build: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda frame: build(cb.lazy(frame)).compute(device="cpu")


def _cli_main(argv: list[str]) -> int:
    from colbridge.cli import main

    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def _stats_files(tmp: Path) -> dict[str, Any]:
    data = tmp / "in.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0, 3.0], "hour": [1, 2, 3]}), data)
    stats = tmp / "stats.json"
    content = {"format": "colbridge-feature-stats", "version": 1, "ddof": 0,
               "columns": {"a": {"mean": 2.0, "std": 1.0, "min": 1.0, "max": 3.0}}}  # fmt: skip
    stats.write_text(json.dumps(content))
    return {"dir": str(tmp), "paths": [str(data), str(stats)], "input": str(data)}


def _fuse_with_stats(files: dict[str, Any]) -> int:
    out = str(Path(files["dir"]) / "f.parquet")
    stats = str(Path(files["dir"]) / "stats.json")
    return _cli_main(["fuse", files["input"], "-o", out, "--columns", "a,hour",
                      "--zscore", "a,hour", "--stats", stats, "-q"])  # fmt: skip


def _wide(_: Path) -> dict[str, pl.DataFrame]:
    # in a dict: the catalogue's fingerprint reads frames through Arrow, which has no int128
    return {"frame": pl.DataFrame({"wide": pl.Series([1, 2], dtype=pl.Int128), "x": [1.0, 2.0]})}


def _strings(_: Path) -> pl.DataFrame:
    return pl.DataFrame({"carrier": ["UA", None, "AA"], "qty": [1, 2, 3]})


F, m = _frame, _compute


def contract_cases() -> list[Case]:
    """The catalogue entries for the errors added with issue 14."""
    return [
        ("string-comparison", "strings", "comparing a string column with a number "
         "(`carrier == 1`)", _strings,
         m(lambda q: q.with_columns(z=cb.parse_expr("carrier == 1"))), E.SchemaError,
         r"`eq` is not defined for string and a number", r"compare values of the same kind"),
        ("unknown-method", "strings", "an unknown method in a string expression", F,
         lambda f: cb.parse_expr("price.foo()"), E.ExpressionSyntaxError,
         r"unknown method `foo`", r"methods: .*cast"),
        ("argument-twice", "strings", "an argument given by position and by keyword", F,
         lambda f: cb.parse_expr("clip(price, 1, lower_bound=2)"), E.ExpressionSyntaxError,
         r"got `lower_bound` twice", r"\^"),
        ("missing-argument", "strings", "`cast` without a type in a string expression", F,
         lambda f: cb.parse_expr("cast(price)"), E.ExpressionSyntaxError,
         r"`cast` needs `dtype`", r"cast\(x, \"int8\", strict=False\)"),
        ("keyword-value-kind", "strings", "`strict=1` where True or False is expected", F,
         lambda f: cb.parse_expr("price.cast('int8', strict=1)"), E.ExpressionSyntaxError,
         r"`strict` must be True or False", r"\^"),
        ("star-arguments", "strings", "`*` arguments in a string call", F,
         lambda f: cb.parse_expr("coalesce(*price)"), E.ExpressionSyntaxError,
         r"`\*` arguments are not allowed", r"\^"),
        ("null-exponent", "types", "`x ** lit(None)` (a null of no type as exponent)", F,
         m(lambda q: q.with_columns(z=cb.col("price") ** cb.lit(None))), E.SchemaError,
         r"`\*\*` is not defined for a null exponent", r"lit\(None, dtype='float64'\)"),
        ("bool-floordiv-float", "types", "a boolean `//` a Python float", F,
         m(lambda q: q.with_columns(z=cb.col("ok") // 2.5)), E.SchemaError,
         r"`//` is not defined for a boolean and a Python float", r"cast"),
        ("int128-column", "types", "a polars Int128 column", _wide,
         lambda d: cb.lazy(d["frame"]).with_columns(z=cb.col("wide") + 1).compute(device="cpu"),
         E.UnsupportedTypeError,
         r"column `wide` has polars type Int128", r"cast it first, e\.g\. `s\.cast\(pl\.Int64\)`"),
        ("is-in-kind", "operations", "`is_in` of an integer column with float values", F,
         m(lambda q: q.with_columns(z=cb.col("qty").is_in([1.5]))), E.SchemaError,
         r"cannot look for int64 values in a list of float values", r"cast the column first"),
        ("is-in-mixed", "operations", "`is_in` with a list mixing ints and floats", F,
         m(lambda q: q.with_columns(z=cb.col("price").is_in([1, 2.5]))), E.SchemaError,
         r"the list mixes float and int values", r"values of one kind"),
        ("is-in-expression", "operations", "`is_in` of a column instead of a list", F,
         lambda f: cb.col("qty").is_in(cb.col("price")), E.UnsupportedOperationError,
         r"`is_in` takes a list of values, got Expr", r"is_in\(\[1, 2, 3\]\)"),
        ("is-in-strings", "operations", "`is_in` of a number column with string values", F,
         m(lambda q: q.with_columns(z=cb.col("price").is_in(["UA"]))), E.SchemaError,
         r"cannot look for float64 values in a list of str values", r"cast the column first"),
        ("is-in-too-many", "operations", "`is_in` with 1,000 values", F,
         lambda f: cb.col("qty").is_in(list(range(1000))), E.UnsupportedOperationError,
         r"`is_in` with 1000 values", r"join"),
        ("is-between-closed", "operations", "`is_between(closed='middle')`", F,
         lambda f: cb.col("price").is_between(0, 1, closed="middle"),
         E.UnsupportedOperationError, r"closed='middle'", r"'both', 'left', 'right', 'none'"),
        ("truncate-decimals", "operations", "`truncate(-1)`", F,
         lambda f: cb.col("price").truncate(-1), E.UnsupportedOperationError,
         r"decimals must be a whole number >= 0", r"x\.truncate\(2\)"),
        ("clip-bound-overflow", "overflow", "a `clip` bound column that does not fit the type",
         lambda _: pl.DataFrame({"i": pl.Series([1, 2], dtype=pl.Int8), "hi": [300, 1]}),
         m(lambda q: q.with_columns(z=cb.col("i").clip(upper_bound=cb.col("hi")))),
         E.InvalidOperationError, r"strict cast to int8 failed", r"strict=False"),
        ("byte-swapped-no-copy", "copies", "`as_tensor` of a big-endian NumPy array",
         lambda _: np.arange(4, dtype=">f8"), lambda a: cb.as_tensor(a),
         E.CopyNotAllowedError, r"byte-swapped to native order", r"allow_copy=True"),
        ("cli-fuse-stats-missing", "cli", "`fuse --stats` whose file lacks a scaled column",
         _stats_files, _fuse_with_stats, 2, r"has no `mean` for column `hour`, which `zscore` "
         r"needs", r"--save-stats|leave out `--stats`"),
    ]  # fmt: skip
