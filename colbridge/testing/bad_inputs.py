"""Testing: the bad-input catalogue, one list used by the tests and by ``docs/errors.md``.

Each `BadInput` builds an input (a frame, a column, a string, files for the
CLI), runs colbridge on it, and states what must happen: a colbridge error of
a given class (or, for the command line, an exit status) whose message names
the problem (``problem``, a regular expression) and the remedy (``remedy``,
another one). `run_case` runs one case and reports the outcome, including
whether the input's bytes were the same before and after (`fingerprint`
hashes every buffer of a frame, a column or a file).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import io
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

import colbridge as cb
from colbridge import errors

__all__ = ["CASES", "BadInput", "Outcome", "catalogue_markdown", "fingerprint", "run_case"]


@dataclass(frozen=True)
class BadInput:
    """One bad input and the error it must give."""

    id: str
    category: str
    what: str
    make: Callable[[Path], Any]
    action: Callable[[Any], Any]
    error: type[BaseException] | int
    problem: str
    remedy: str


@dataclass(frozen=True)
class Outcome:
    """What running a case did."""

    raised: str | None
    exit_code: int | None
    message: str
    unchanged: bool


# -- fingerprints ------------------------------------------------------------------------
def _hash_arrow(digest: Any, array: pa.Array | pa.ChunkedArray) -> None:
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    for chunk in chunks:
        digest.update(f"{chunk.type}:{chunk.offset}:{len(chunk)}".encode())
        for buf in chunk.buffers():
            if buf is not None:
                digest.update(buf.to_pybytes())


def fingerprint(obj: Any) -> str:
    """SHA-256 over every byte behind ``obj`` (frames, columns, arrays, files, folders)."""
    digest = hashlib.sha256()
    if isinstance(obj, dict) and "paths" in obj:
        for path in sorted(obj["paths"]):
            digest.update(Path(path).read_bytes() if Path(path).is_file() else b"-")
        # nothing new may appear in the folder (no partial output)
        digest.update("\n".join(sorted(os.listdir(obj["dir"]))).encode())
    elif isinstance(obj, pl.DataFrame):
        for series in obj.get_columns():
            _hash_arrow(digest, series.to_arrow())
    elif isinstance(obj, pl.Series):
        _hash_arrow(digest, obj.to_arrow())
    elif isinstance(obj, pd.DataFrame):
        digest.update(repr(list(obj.columns)).encode())
        for i in range(obj.shape[1]):
            _hash_pandas(digest, obj.iloc[:, i])
    elif isinstance(obj, pd.Series):
        _hash_pandas(digest, obj)
    elif isinstance(obj, pa.Table):
        for column in obj.columns:
            _hash_arrow(digest, column)
    elif isinstance(obj, (pa.Array, pa.ChunkedArray)):
        _hash_arrow(digest, obj)
    elif isinstance(obj, np.ndarray):
        digest.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, (tuple, list)):
        for item in obj:
            digest.update(fingerprint(item).encode())
    else:
        digest.update(repr(obj).encode())
    return digest.hexdigest()


def _hash_pandas(digest: Any, series: pd.Series) -> None:
    if isinstance(series.dtype, pd.ArrowDtype):
        _hash_arrow(digest, series.array._pa_array)
    elif series.dtype == object:
        digest.update(repr(series.tolist()).encode())
    else:
        values = series.to_numpy(copy=False)
        digest.update(np.ascontiguousarray(values).tobytes())


# -- inputs ------------------------------------------------------------------------------
def _frame(_: Path) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "price": [1.0, 2.0, None],
            "qty": [1, 2, 3],
            "name": ["x", "y", "z"],
            "ok": [True, False, None],
        }
    )


class PointType(pa.ExtensionType):  # type: ignore[misc]  # pyarrow has no type stubs
    """A user's extension type (int64 storage): pyarrow gives subclasses of it no hash.

    Examples
    --------
    >>> import pyarrow as pa
    >>> pa.ExtensionArray.from_storage(PointType(), pa.array([1])).type.extension_name
    'colbridge.bad_inputs.point'
    """

    def __init__(self) -> None:
        super().__init__(pa.int64(), "colbridge.bad_inputs.point")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> PointType:
        return cls()


def _points(_: Path) -> pa.Table:
    points = pa.ExtensionArray.from_storage(PointType(), pa.array([1, 2]))
    return pa.table({"p": points, "y": [1.0, 2.0]})


def _many_strings(_: Path) -> pl.DataFrame:
    return pl.DataFrame({name: [f"{name}{k}" for k in range(60_000)] for name in "abcd"})


def _times(_: Path) -> pl.DataFrame:
    return pl.DataFrame({"s": ["09", "17", None]})


def _lazy_frame(_: Path) -> pl.LazyFrame:
    return pl.LazyFrame({"a": [1.0, 2.0, None]})


def _twice(handle: Any) -> None:
    handle.compute()
    handle.compute()


def _compute(build: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda frame: build(cb.lazy(frame)).compute(device="cpu")


def _files(tmp: Path) -> dict[str, Any]:
    data = tmp / "in.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0, 3.0], "b": [1, 2, 3]}), data)
    return {"dir": str(tmp), "paths": [str(data)], "input": str(data)}


def _cli(*argv: str, spec: str | None = None) -> tuple[Callable[[Path], Any], Callable[[Any], Any]]:
    def make(tmp: Path) -> dict[str, Any]:
        files = _files(tmp)
        if spec is not None:
            path = tmp / "job.toml"
            path.write_text(spec.format(input=files["input"], dir=str(tmp)))
            files["paths"].append(str(path))
        return files

    def action(files: dict[str, Any]) -> int:
        args = [a.format(input=files["input"], dir=files["dir"]) for a in argv]
        return cb_cli_main(args)

    return make, action


def cb_cli_main(argv: list[str]) -> int:
    """``colbridge.cli.main`` with argparse's ``SystemExit`` turned into its status."""
    from colbridge.cli import main

    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def _empty_wide(_: Path) -> pl.DataFrame:
    return pl.DataFrame({f"c{i}": pl.Series([], dtype=pl.Float64) for i in range(2000)})


# -- feature fusion ----------------------------------------------------------------------
def _categories(_: Path) -> pa.Table:
    return pa.table({"c": ["a", "b", "a", "z"], "a": [1.0, 2.0, 3.0, 4.0],
                     "label": ["yes", "no", "yes", "no"]})  # fmt: skip


def _enum_strings(_: Path) -> pl.DataFrame:
    return pl.DataFrame({"e": pl.Series(["lo", "hi", None], dtype=pl.Enum(["lo", "mid", "hi"])),
                         "s": ["mid", "top", "x"]})  # fmt: skip


def _dated(_: Path) -> pa.Table:
    return pa.table({"a": [1.0, 2.0], "d": pa.array([19723, None], pa.date32())})


def _fit_ab_transform(table: pa.Table) -> Any:
    from colbridge.io.fuse import FeatureSpec, fit_stats, transform_batch

    spec = FeatureSpec.from_dict({"columns": {"c": {"one_hot": True, "handle_unknown": "error"}}})
    stats = fit_stats(table.slice(0, 3), spec)
    return transform_batch(table, spec, stats)


def _stats_file(version: int, drop: str | None = None) -> Callable[[Path], Any]:
    def make(tmp: Path) -> dict[str, Any]:
        path = tmp / "stats.json"
        columns: dict[str, Any] = {"a": {"median": 2.0, "q25": 1.0, "q75": 3.0}}
        if drop is not None:
            del columns["a"][drop]
        body = {"format": "colbridge-feature-stats", "version": version, "ddof": 0,
                "columns": columns}  # fmt: skip
        path.write_text(json.dumps(body))
        return {"dir": str(tmp), "paths": [str(path)], "input": str(path)}

    return make


def _load_and_apply(files: dict[str, Any]) -> Any:
    from colbridge.io.fuse import FeatureSpec, FeatureStats, transform_batch

    spec = FeatureSpec.from_dict({"columns": {"a": {"scale": "robust"}}})
    stats = FeatureStats.load(files["input"])
    return transform_batch(pa.table({"a": [1.0]}), spec, stats)


def _fit_spec(spec: dict[str, Any]) -> Callable[[pa.Table], Any]:
    def action(table: pa.Table) -> Any:
        from colbridge.io.fuse import FeatureSpec, fit_stats

        return fit_stats(table, FeatureSpec.from_dict(spec))

    return action


_cli_no_target = _cli("fuse", "{input}", "-o", "{dir}/o.parquet", "-q", "--target-encode", "b")


F = _frame
E = errors
_m = _compute


# user functions of the catalogue's cases (`cb.udf`)
def _udf_step(x: float, y: float) -> float:
    if x > y:
        return x - y
    return y


def _udf_ratio(a: int, b: int) -> int:
    return a // b


def _udf_uncompilable(x: float) -> float:
    return {"k": x}["k"] + object()  # type: ignore[operator, no-any-return]


_STEP = cb.udf(_udf_step)

_cli_unknown_key = _cli(
    "run",
    "--spec",
    "{dir}/job.toml",
    "-q",
    spec='input = "{input}"\noutput = "{dir}/o.parquet"\nwiht = "z = a"\n',
)
_cli_bad_toml = _cli("run", "--spec", "{dir}/job.toml", "-q", spec="input = [unclosed\n")
_cli_both = _cli(
    "run",
    "--spec",
    "{dir}/job.toml",
    "-q",
    spec='input = "{input}"\noutput = "{dir}/o.parquet"\nwith = "z = a"\n'
    '[[steps]]\nwith = "y = b"\n',
)
_cli_step_key = _cli(
    "run",
    "--spec",
    "{dir}/job.toml",
    "-q",
    spec='input = "{input}"\noutput = "{dir}/o.parquet"\n[[steps]]\nmap = "z"\n',
)
_cli_fuse_key = _cli(
    "fuse",
    "--spec",
    "{dir}/job.toml",
    "-q",
    spec='input = "{input}"\noutput = "{dir}/o.parquet"\ncolumns = ["a"]\ndtpye = "float32"\n',
)
_cli_missing = _cli("run", "{dir}/nope.parquet", "-o", "{dir}/o.parquet", "-q", "--with", "z = a")
_cli_same = _cli("run", "{input}", "-o", "{input}", "-q", "--with", "z = a")
_cli_folder = _cli("run", "{input}", "-o", "{dir}", "-q", "--with", "z = a")
_cli_expr = _cli("run", "{input}", "-o", "{dir}/o.parquet", "-q", "--with", "z = a +* 2")
_cli_column = _cli("run", "{input}", "-o", "{dir}/o.parquet", "-q", "--filter", "zz > 1")
_cli_rows = _cli(
    "run", "{input}", "-o", "{dir}/o.parquet", "-q", "--batch-rows", "-5", "--with", "z = a"
)
_cli_no_out = _cli("run", "{input}", "-q", "--with", "z = a")
_cli_no_dir = _cli("run", "{input}", "-o", "{dir}/missing/o.parquet", "-q", "--with", "z = a")
_cli_dunder = _cli("run", "{input}", "-o", "{dir}/o.parquet", "-q", "--with", "z = a.__class__")
_cli_ordered = _cli("run", "{input}", "-o", "{dir}/o.parquet", "-q", "--with",
                    "z = cum_sum(a, reverse=True)")
_cli_several = _cli("run", "{input}", "-o", "{dir}/o.parquet", "-q", "--with",
                    "z = a & b; w = z + 1; v = bb + 1", "--filter", "b + 1")

CASES: list[BadInput] = [
    # -- names -------------------------------------------------------------------------
    BadInput("unknown-column", "names", "a misspelt column name", F,
             _m(lambda q: q.with_columns(z=cb.col("prcie") * 2)), E.ColumnNotFoundError,
             r"column `prcie` not found", r"did you mean.*'price'"),
    BadInput("duplicate-outputs", "names", "two outputs with one name", F,
             _m(lambda q: q.select(cb.col("price"), cb.col("qty").alias("price"))),
             E.DuplicateColumnError, r"`price` appears more than once", r"alias|rename"),
    BadInput("pandas-duplicate-columns", "names", "a pandas frame with two columns named `a`",
             lambda _: pd.DataFrame(np.ones((2, 2)), columns=["a", "a"]),
             _m(lambda q: q.with_columns(b=cb.col("a") * 2)), E.UnsupportedTypeError,
             r"duplicate column names \['a'\]", r"rename"),
    BadInput("non-string-column-name", "names", "`col(1)`: a column name that is not a string",
             F, lambda f: cb.col(1), E.ColbridgeError, r"column name", r"str"),  # type: ignore[arg-type]
    BadInput("column-by-data-type", "names",
             "`col(pl.Float64)`: columns selected by data type", F,
             lambda f: cb.col(pl.Float64), E.SchemaError,  # type: ignore[arg-type]
             r"column names are strings", r"not by data type"),
    BadInput("selection-in-a-filter", "names",
             "`filter(col(\"price\", \"qty\") > 1)`: a predicate over several columns", F,
             _m(lambda q: q.filter(cb.col("price", "qty") > 1)), E.SchemaError,
             r"expanded to 2 expressions", r"all_horizontal"),
    BadInput("selections-of-unequal-width", "names",
             "`col(\"price\", \"qty\") + all()`: selections of different widths side by side",
             F, _m(lambda q: q.select(cb.col("price", "qty") + cb.all())),
             E.SchemaError, r"different numbers of columns", r"as many columns"),
    BadInput("empty-frame-unknown-column", "shapes",
             "a 2,000-column frame with no rows and a misspelt column", _empty_wide,
             _m(lambda q: q.with_columns(z=cb.col("c1999x") + 1)), E.ColumnNotFoundError,
             r"column `c1999x` not found", r"did you mean"),
    # -- types -------------------------------------------------------------------------
    BadInput("string-arithmetic", "types", "arithmetic on a string column", F,
             _m(lambda q: q.with_columns(z=cb.col("name") + 1)), E.UnsupportedOperationError,
             r"`add` is not defined for strings", r"compare|is_in|to_integer|cast"),
    BadInput("float-in-logic", "types", "`&` between a float and a bool column", F,
             _m(lambda q: q.with_columns(z=cb.col("price") & cb.col("ok"))), E.SchemaError,
             r"needs booleans", r"compar|cast"),
    BadInput("non-bool-filter", "types", "a filter predicate that is an integer", F,
             _m(lambda q: q.filter(cb.col("qty") + 1)), E.SchemaError,
             r"filter predicate .* is int64, not boolean", r"compar"),
    BadInput("non-bool-when", "types", "a `when` condition that is an integer", F,
             _m(lambda q: q.with_columns(z=cb.when(cb.col("qty")).then(1).otherwise(2))),
             E.SchemaError, r"`when` condition must be boolean", r"compar"),
    BadInput("negate-unsigned", "types", "negating an unsigned column", F,
             _m(lambda q: q.with_columns(z=-cb.col("qty").cast("uint8"))), E.SchemaError,
             r"cannot negate unsigned uint8", r"cast"),
    BadInput("int64-plus-uint64", "types", "int64 + uint64 (polars needs int128)", F,
             _m(lambda q: q.with_columns(z=cb.col("qty") + cb.col("qty").cast("uint64"))),
             E.SchemaError, r"int64 and uint64 have no common type", r"cast"),
    BadInput("float16-compute", "types", "computing in float16", F,
             _m(lambda q: q.with_columns(z=cb.col("price").cast("float16"))),
             E.UnsupportedTypeError, r"float16 is not computed", r"float32"),
    BadInput("unknown-cast-type", "types", "a cast to an unknown type name", F,
             lambda f: cb.col("price").cast("float128"), E.ColbridgeError,
             r"float128", r"float64|use|one of"),
    BadInput("decimal-column", "types", "a decimal column in arithmetic",
             lambda _: pa.table({"d": pa.array([1, 2], pa.decimal128(10, 2))}),
             _m(lambda q: q.with_columns(z=cb.col("d") * 2)), E.UnsupportedTypeError,
             r"column `d` has type decimal", r"cast"),
    BadInput("string-literal", "types", "a string literal in arithmetic", F,
             _m(lambda q: q.with_columns(z=cb.col("price") + "x")), E.UnsupportedOperationError,
             r"`add` is not defined for strings", r"compare|is_in|to_integer|cast"),
    BadInput("tensor-of-strings", "types", "`as_tensor` of a string column",
             lambda _: pa.array(["a", "b"]), lambda a: cb.as_tensor(a),
             E.UnsupportedTypeError, r"string", r"dictionary_encode|encode"),
    BadInput("tensor-of-lists", "types", "`as_tensor` of a ragged list column",
             lambda _: pa.array([[1], [2, 3]]), lambda a: cb.as_tensor(a),
             E.UnsupportedTypeError, r"list", r"to_array|flatten"),
    BadInput("tensor-of-structs", "types", "`as_tensor` of a struct column",
             lambda _: pa.array([{"x": 1}, {"x": 2}]), lambda a: cb.as_tensor(a),
             E.UnsupportedTypeError, r"struct", r"field"),
    BadInput("tensor-of-nulls", "types", "`as_tensor` of a null-typed column",
             lambda _: pa.nulls(3), lambda a: cb.as_tensor(a), E.UnsupportedTypeError,
             r"null", r"cast"),
    BadInput("object-column", "types", "a pandas `object` column in an expression",
             lambda _: pd.DataFrame({"a": [1, "x", None]}, dtype=object),
             _m(lambda q: q.with_columns(b=cb.col("a") * 2)), E.UnsupportedTypeError,
             r"column `a` has pandas dtype `object`", r"astype|convert"),
    BadInput("object-series-tensor", "types", "`as_tensor` of a pandas object Series",
             lambda _: pd.Series([1.5, "x"], dtype=object, name="s"),
             lambda s: cb.as_tensor(s), E.UnsupportedTypeError, r"object", r"astype|convert"),
    BadInput("dict-frame", "types", "a plain dict given as a frame",
             lambda _: {"a": [1]}, lambda d: cb.lazy(d).with_columns(b=cb.col("a")).compute(),
             E.UnsupportedTypeError, r"cannot compute on a builtins.dict",
             r"pandas|polars|pyarrow"),
    BadInput("polars-lazyframe", "types", "`to_tensor` of a polars LazyFrame (no data yet)",
             lambda _: pl.LazyFrame({"a": [1]}), lambda d: cb.to_tensor(d, ["a"]),
             E.UnsupportedTypeError, r"LazyFrame has no data yet", r"collect"),
    BadInput("split-as-an-output", "types",
             "a `str.split` (a list of strings) as an output: colbridge has no list columns", F,
             _m(lambda q: q.select(cb.col("name").str.split(","))),
             E.UnsupportedOperationError, r"`col\(\"name\"\).str.split\(','\)` is a List\(String\)",
             r"take one value of each row's parts \(`.list.get\(i\)`.*or compute it in polars"),
    BadInput("split-get-past-the-end", "types",
             "`list.get(1)` of a split where some strings have one part", F,
             _m(lambda q: q.select(cb.col("name").str.split(",").list.get(1))),
             E.InvalidOperationError, r"index 1 is out of bounds of some lists",
             r"pass `null_on_oob=True` to get nulls there"),
    BadInput("users-extension-type", "types",
             "a column of a user's `pyarrow.ExtensionType` (which has no hash) in an expression",
             _points, lambda t: cb.lazy(t).with_columns(z=cb.col("p") + 1).compute(),
             E.UnsupportedTypeError, r"column `p` has type extension<",
             r"cast it in the source frame, or leave it out"),
    # -- several problems in one plan --------------------------------------------------
    BadInput("several-problems", "plans",
             "three problems in two steps (a number added to a string, `&` of a float, a misspelt "
             "column) and an output that reads a failing one", F,
             _m(lambda q: q.with_columns(z=cb.col("name") + 1, y=cb.col("price") & cb.col("ok"))
                .with_columns(w=cb.col("z") * 2, v=cb.col("prcie") + 1)),
             E.PlanProblemsError,
             r"^3 problems in the plan.*\n1\. step 1 \(with_columns\), output `z`.*\n2\. step 1 "
             r"\(with_columns\), output `y`.*\n3\. step 2 \(with_columns\), output `v`",
             r"compare.*compare first.*did you mean.*'price'.*not checked, as they read an output "
             r"that fails: step 2 output `w` \(reads `z`\)$"),
    BadInput("several-problems-text", "plans",
             "`eval` statements with two problems, the second reading the first's output", F,
             lambda f: f.gpu.lazy().eval("z = qty + 'x'; w = z * 2; v = -qty.cast('uint8')")
             .compute(device="cpu"),
             E.PlanProblemsError,
             r"^2 problems.*\n1\. step 1 \(with_columns\), output `z`.*\n2\. step 3 "
             r"\(with_columns\), output `v`",
             r"to_integer.*cast to a signed type first.*step 2 output `w` \(reads `z`\)"),
    # -- copies and nulls --------------------------------------------------------------
    BadInput("bool-tensor-no-copy", "copies", "`as_tensor` of a bool column (bit-packed)",
             lambda _: pa.array([True, False]), lambda a: cb.as_tensor(a),
             E.CopyNotAllowedError, r"bool|bit", r"allow_copy=True"),
    BadInput("chunked-tensor-no-copy", "copies", "`as_tensor` of a column in two chunks",
             lambda _: pa.chunked_array([[1.0], [2.0]]), lambda a: cb.as_tensor(a),
             E.CopyNotAllowedError, r"chunk", r"allow_copy=True"),
    BadInput("nulls-raise", "nulls", "`as_tensor(nulls='raise')` on a column with nulls",
             lambda _: pa.array([1.0, None]), lambda a: cb.as_tensor(a, nulls="raise"),
             E.NullValuesError, r"null", r"fill|nulls="),
    BadInput("fill-without-copy", "copies", "a null fill value without `allow_copy`",
             lambda _: pa.array([1.0, None]), lambda a: cb.as_tensor(a, nulls=0.0),
             E.CopyNotAllowedError, r"fill|null", r"allow_copy=True"),
    BadInput("to-tensor-unknown-column", "names", "`to_tensor` with a misspelt column", F,
             lambda f: cb.to_tensor(f, ["price", "qtty"]), E.ColumnNotFoundError,
             r"qtty", r"did you mean|available|columns"),
    # -- shapes ------------------------------------------------------------------------
    BadInput("tensor-2d-numpy", "shapes", "`as_tensor` of a 2-D NumPy array",
             lambda _: np.ones((3, 2)), lambda a: cb.as_tensor(a), E.ColbridgeError,
             r"2-D|2 dimensions|one-dimensional|1-D", r"to_tensor|column|ravel|slice"),
    BadInput("filter-without-predicate", "shapes", "`filter()` with no predicate", F,
             lambda f: f.gpu.lazy().filter(), E.SchemaError, r"at least one predicate",
             r"predicate"),
    # -- strings -----------------------------------------------------------------------
    BadInput("syntax-error", "strings", "a string expression that does not parse", F,
             lambda f: f.gpu.lazy().eval("z = price +* 2"), E.ExpressionSyntaxError,
             r"cannot parse", r"\^"),
    BadInput("attribute-access", "strings", "attribute access in a string expression", F,
             lambda f: f.gpu.lazy().eval("z = price.__class__"), E.ExpressionSyntaxError,
             r"attribute access is not allowed", r"call functions by name"),
    BadInput("unknown-function", "strings", "an unknown function in a string expression", F,
             lambda f: f.gpu.lazy().eval("z = open(price)"), E.ExpressionSyntaxError,
             r"unknown function `open`", r"allowed: "),
    BadInput("string-literal-in-text", "strings", "a string literal in arithmetic, as text", F,
             lambda f: f.gpu.lazy().eval("z = price + 'x'").compute(),
             E.UnsupportedOperationError, r"`add` is not defined for strings",
             r"compare|is_in|to_integer|cast"),
    BadInput("strftime-field-it-lacks", "strings", "`dt.strftime('%H:%M')` of a Date", F,
             lambda f: f.gpu.with_columns(
                 z=cb.col("qty").cast(pl.Date).dt.strftime("%H:%M")).compute(),
             E.ComputeError, r"cannot format Date with format '%H:%M'.*a time of day",
             r"cast it to a Datetime first"),
    BadInput("duration-format-not-its-forms", "strings",
             "`dt.to_string('%H')` of a Duration", F,
             lambda f: f.gpu.with_columns(
                 z=(cb.col("qty") * cb.lit(dt.timedelta(hours=1))).dt.to_string("%H")).compute(),
             E.InvalidOperationError, r"format '%H' is not supported for a Duration",
             r"use \"iso\".*or \"polars\""),
    BadInput("concat-str-past-int64", "strings",
             "`concat_str` of four columns of 60,000 distinct strings each", _many_strings,
             lambda f: f.gpu.with_columns(z=cb.concat_str("a", "b", "c", "d")).compute(),
             E.ComputeError, r"combinations outnumber an int64 key",
             r"join fewer columns at once"),
    BadInput("too-long", "strings", "a 20,000-character expression", F,
             lambda f: f.gpu.lazy().eval("z = " + "+".join(["price"] * 3400)),
             E.ExpressionSyntaxError, r"characters long", r"limit is 10000"),
    BadInput("too-deep", "strings", "an expression nested 200 levels deep", F,
             lambda f: f.gpu.lazy().eval("z = " + "(" * 200 + "price" + ")" * 200 + "+" +
                                         "abs(" * 100 + "qty" + ")" * 100),
             E.ExpressionSyntaxError, r"nested", r"deeper than|levels|too deeply"),
    BadInput("not-an-assignment", "strings", "`eval` text without `name = ...`", F,
             lambda f: f.gpu.lazy().eval("price * 2"), E.ExpressionSyntaxError,
             r"expected `name = expression`", r"name = expression"),
    BadInput("expression-not-text", "strings", "`parse_expr` given bytes", F,
             lambda f: cb.parse_expr(b"price * 2"),  # type: ignore[arg-type]
             E.ExpressionSyntaxError, r"must be a string, got bytes", r"string"),
    BadInput("wrong-arity", "strings", "`sqrt` with two arguments", F,
             lambda f: cb.parse_expr("sqrt(price, qty)"), E.ExpressionSyntaxError,
             r"`sqrt` takes 1 argument", r"got 2"),
    BadInput("keyword-args", "strings", "an unknown keyword argument in a string call", F,
             lambda f: cb.parse_expr("clip(price, lo=1, hi=2)"), E.ExpressionSyntaxError,
             r"no keyword argument `lo`", r"lower_bound, upper_bound"),
    # -- encodings ---------------------------------------------------------------------
    BadInput("lone-surrogate", "encodings", "a lone UTF-16 surrogate in the text", F,
             lambda f: cb.parse_expr("price + \udcff"), E.ExpressionSyntaxError,
             r"cannot parse|not allowed|invalid", r"\^|character"),
    BadInput("nul-byte", "encodings", "a NUL byte in the text", F,
             lambda f: cb.parse_expr("price\x00 + 1"), E.ExpressionSyntaxError,
             r"cannot parse", r"null|NUL|byte|\^"),
    BadInput("fullwidth-operator", "encodings", "a full-width plus sign (U+FF0B)", F,
             lambda f: cb.parse_expr("price \uff0b 1"), E.ExpressionSyntaxError,
             r"cannot parse", r"\^|character"),
    # -- huge literals and overflow ----------------------------------------------------
    BadInput("huge-literal", "literals", "a literal of 2**70", F,
             _m(lambda q: q.with_columns(z=cb.col("qty") * cb.lit(2**70))), E.SchemaError,
             r"does not fit in (u?int)?64|128-bit", r"float|cast"),
    BadInput("huge-literal-text", "literals", "a 25-digit integer in a string expression", F,
             lambda f: cb.parse_expr("qty * 1000000000000000000000000"),
             E.ExpressionSyntaxError, r"does not fit in 64 bits", r"float|1e|\^"),
    BadInput("clip-bound-range", "literals", "a clip bound outside the column's type", F,
             _m(lambda q: q.with_columns(z=cb.col("qty").cast("uint8").clip(-3, 5))),
             E.SchemaError, r"bound -3 does not fit", r"cast|uint8"),
    BadInput("strict-cast-overflow", "overflow", "a strict cast that overflows int8", F,
             _m(lambda q: q.with_columns(z=(cb.col("qty") * 1000).cast("int8"))),
             E.InvalidOperationError, r"strict cast to int8 failed", r"strict=False"),
    BadInput("negative-int-power", "overflow", "an integer raised to a negative integer", F,
             _m(lambda q: q.with_columns(z=cb.col("qty") ** (cb.col("qty") - 5))),
             E.InvalidOperationError, r"negative integer power", r"float|cast"),
    BadInput("enum-string-order", "operations",
             "`e < s` where `s` holds a string that is not a category of the Enum `e`",
             _enum_strings, _m(lambda q: q.with_columns(z=cb.col("e") < cb.col("s"))),
             E.InvalidOperationError,
             r"casts the strings to the enum.*not categories: \['top', 'x'\]",
             r"\.filter\(.*is_in|\.cast\(pl\.String\)"),
    BadInput("round-mode", "operations", "`round(2, mode='bankers')` (an unknown tie rule)", F,
             lambda f: cb.col("price").round(2, mode="bankers"), E.UnsupportedOperationError,
             r"round\(mode='bankers'\)", r"half_to_even"),
    # -- devices -----------------------------------------------------------------------
    BadInput("unknown-device", "devices", "`compute(device='tpu')`", F,
             lambda f: f.gpu.with_columns(b=cb.col("qty")).compute(device="tpu"),
             E.DeviceError, r"unknown device 'tpu'", r"'auto'|'cpu'|'cuda'"),
    BadInput("unknown-fallback", "devices", "`compute(fallback='maybe')`", F,
             lambda f: f.gpu.with_columns(b=cb.col("qty")).compute(fallback="maybe"),
             E.DeviceError, r"unknown fallback policy", r"'cpu'|'raise'"),
    BadInput("cuda-without-gpu", "devices", "`device='cuda', fallback='raise'` with no GPU", F,
             lambda f: f.gpu.with_columns(b=cb.col("qty")).compute(device="cuda",
                                                                  fallback="raise"),
             E.DeviceError, r"cuda|GPU|device", r"cpu|fallback|auto"),
    # -- ordered operations ------------------------------------------------------------
    BadInput("ewm-no-decay", "ordered", "`ewm_mean()` without `alpha`, `span`, `com` or "
             "`half_life`", F, _m(lambda q: q.with_columns(e=cb.col("price").ewm_mean())),
             E.SchemaError, r"exactly one of `com`, `span`, `half_life`, `alpha`", r"got none"),
    BadInput("rolling-min-samples", "ordered", "`rolling_mean(3, min_samples=5)`", F,
             _m(lambda q: q.with_columns(r=cb.col("price").rolling_mean(3, min_samples=5))),
             E.SchemaError, r"`min_samples` \(5\) must be <= `window_size` \(3\)",
             r"lower `min_samples` or widen the window"),
    BadInput("rolling-weights", "ordered", "`rolling_sum(2, weights=[...])` over a column "
             "with nulls", F,
             _m(lambda q: q.with_columns(r=cb.col("price").rolling_sum(2, weights=[1, 2]))),
             E.NullValuesError, r"weights=.*over 1 null value.*column `price`",
             r"fill the nulls first"),
    BadInput("fill-null-strategy", "ordered", "`fill_null(strategy='previous')`", F,
             _m(lambda q: q.with_columns(f=cb.col("qty").fill_null(strategy="previous"))),
             E.SchemaError, r"unknown `fill_null` strategy 'previous'", r"'forward', 'backward'"),
    BadInput("ordered-string", "ordered", "`cum_sum` of a string column", F,
             _m(lambda q: q.with_columns(s=cb.col("name").cum_sum())), E.UnsupportedTypeError,
             r"column `name` has type .*string.*`cum_sum` is not supported for strings",
             r"cast to a number first, or use `shift` and the fills"),
    BadInput("duration-part-type", "types", "`cb.duration(days='name')`: a string part", F,
             _m(lambda q: q.with_columns(d=cb.duration(days="name"))),
             E.InvalidOperationError, r"`duration\(days=col\(\"name\"\)\)`: parts are "
             r"integers or floats, got string", r"cast the part to a number"),
    BadInput("date-invalid-parts", "types", "`cb.date(2023, 2, 'qty')`: February 29th of a "
             "common year, and later days", F,
             _m(lambda q: q.with_columns(d=cb.date(2023, 2, cb.col("qty") + 28))),
             E.InvalidOperationError, r"`datetime\(lit\(2023\), lit\(2\), \(col\(\"qty\"\) \+ "
             r"lit\(28\)\).*`: invalid date or time components",
             r"check the parts, or null them where they are invalid"),
    BadInput("dst-offset-naive", "types", "`dt.dst_offset()` of a date (no time zone)", F,
             _m(lambda q: q.with_columns(o=cb.lit(dt.date(2024, 7, 1)).dt.dst_offset())),
             E.InvalidOperationError, r"`lit\(datetime\.date\(2024, 7, 1\)\)\.dt\."
             r"dst_offset\(\)` needs a time-zone-aware Datetime, got date", r"replace_time_zone"),
    BadInput("date-diff-days-of-times", "types", "`date_diff(t1, t2, 'day')` of two Times",
             F, _m(lambda q: q.with_columns(d=cb.date_diff(cb.lit(dt.time(1)), cb.lit(dt.time(2)),
                                                           "day"))),
             E.InvalidOperationError, r"unit 'day' is not supported for Time",
             r"count hours or finer units"),
    BadInput("date-diff-unknown-unit", "types", "`date_diff(a, b, 'days')`: a unit polars "
             "does not name", F, _m(lambda q: q.with_columns(d=cb.date_diff("a", "b", "days"))),
             E.InvalidOperationError, r"`date_diff\(unit='days'\)`",
             r"the unit is one of 'year', 'quarter', 'month'"),
    BadInput("from-code-point-of-floats", "types", "`price.str.from_code_point()` of floats", F,
             _m(lambda q: q.with_columns(c=cb.col("price").str.from_code_point())),
             E.InvalidOperationError, r"expects an integer code point, got float64",
             r"cast to an integer first"),
    BadInput("from-code-point-negative", "strings", "`(qty - 5).str.from_code_point()`: "
             "negative code points", F,
             _m(lambda q: q.with_columns(c=(cb.col("qty") - 5).str.from_code_point())),
             E.InvalidOperationError, r"invalid Unicode code point \(0 to 1114111",
             r"null such values first"),
    BadInput("time-format-without-minutes", "strings", "`str.to_time('%H')`: a format "
             "without minutes", _times, _m(lambda q: q.with_columns(t=cb.col("s").str.to_time(
                 "%H"))), E.InvalidOperationError,
             r"strict conversion of strings to time failed in .*the format '%H' says no hour "
             r"and minute", r"`%H`, or `%I` with `%p`, and `%M`"),
    BadInput("head-outside-a-reduction", "shapes", "`qty.head(3)` as a column (not reduced)",
             F, _m(lambda q: q.with_columns(h=cb.col("qty").head(3))), E.SchemaError,
             r"`head\(3\)` inside an expression would change the number of rows",
             r"as the input of a reduction \(`x\.head\(3\)\.sum\(\)`\)"),
    BadInput("select-two-filters", "shapes", "`select(qty.drop_nulls(), price.drop_nulls())`: "
             "outputs of two filters", F,
             _m(lambda q: q.select(cb.col("qty").drop_nulls(), cb.col("price").drop_nulls())),
             E.ShapeError, r"`select` outputs filtered by different predicates",
             r"filter the frame with `\.filter\(\.\.\.\)` first"),
    BadInput("sort-by-flags", "ordered", "`sort_by('qty', 'price', descending=[True])`: one "
             "flag for two keys", F,
             _m(lambda q: q.with_columns(s=cb.col("name").sort_by("qty", "price",
                                                                 descending=[True]))),
             E.SchemaError, r"`sort_by\(descending=\[True\]\)`: 1 flag\(s\) for 2 key\(s\)",
             r"give one flag, or one per key"),
    BadInput("sort-by-in-ordered-window", "ordered",
             "`sort_by('qty').over('name', order_by='price')`", F,
             _m(lambda q: q.with_columns(s=cb.col("price").sort_by("qty").over(
                 "name", order_by="price"))),
             E.UnsupportedOperationError,
             r"`col\(\"price\"\)\.sort_by\(col\(\"qty\"\)\)` inside `over\(\.\.\., order_by",
             r"sort the frame by that order first and drop `order_by`"),
    BadInput("cli-ordered-look-ahead", "cli",
             "`colbridge run --with 'z = cum_sum(a, reverse=True)'` (reads every later row)",
             *_cli_ordered, 2, r"read every row after each row .* not supported in a streamed "
             r"job", r"in memory"),
    # -- streamed inputs ---------------------------------------------------------------
    BadInput("stream-look-ahead", "streams",
             "`lf.gpu` with `shift(-1)` beside `cum_sum()` (a look-ahead beside an unbounded one)",
             _lazy_frame, lambda lf: lf.gpu.with_columns(
                 n=cb.col("a").shift(-1) + cb.col("a").cum_sum()).compute(),
             E.JobSpecError, r"not supported in a streamed job .* together with .*shift\(-1",
             r"in memory"),
    BadInput("stream-first", "streams", "`lf.gpu.select(a.first())` (not foldable by batch)",
             _lazy_frame, lambda lf: lf.gpu.select(f=cb.col("a").first()).compute(),
             E.JobSpecError,
             r"whole-column reductions taken from all the rows at once \(`first`, `last`, "
             r"`n_unique`, `median`, `quantile`, `any`, `all`, `arg_min`, `arg_max`\) are "
             r"not supported",
             r"in memory|group_by"),
    BadInput("stream-read-twice", "streams", "a one-shot RecordBatchReader computed twice",
             lambda _: pa.RecordBatchReader.from_batches(
                 pa.schema([("a", pa.float64())]), iter([pa.record_batch({"a": [1.0, 2.0]})])),
             lambda r: _twice(cb.lazy(r).with_columns(b=cb.col("a") * 2)),
             E.JobSpecError, r"already read; a one-shot stream can be read once",
             r"new reader|read again"),
    # -- user functions ----------------------------------------------------------------
    BadInput("udf-arity", "udf", "a two-argument `cb.udf` called with one argument", F,
             _m(lambda q: q.with_columns(z=_STEP("price"))), E.UserFunctionError,
             r"user function `_udf_step\(x, y\)` called with 1 argument",
             r"one expression, column name or number per parameter"),
    BadInput("udf-traced-returns-tuple", "udf", "a traced function that returns a tuple", F,
             _m(lambda q: q.with_columns(z=cb.udf(lambda x: (x, x))("price"))), E.UserFunctionError,
             r"`<lambda>` returned a tuple", r"must return an expression or a number"),
    BadInput("udf-not-compilable", "udf", "a compiled function numba cannot compile", F,
             _m(lambda q: q.with_columns(z=cb.udf(_udf_uncompilable, return_dtype="float64")(
                 "price"))), E.UserFunctionError,
             r"`_udf_uncompilable` cannot be compiled by numba for arguments \(float64\): \S",
             r"numba's subset of Python|traced"),
    BadInput("udf-return-dtype", "udf", "`cb.udf(f, return_dtype='string')`", F,
             lambda q: cb.udf(_udf_step, return_dtype="string"), E.UnsupportedTypeError,
             r"`return_dtype='string'` of user function `_udf_step` is not a type",
             r"use bool or one of"),
    BadInput("udf-string-argument", "udf", "a string column passed to a compiled function", F,
             _m(lambda q: q.with_columns(z=_STEP("name", "price"))), E.UnsupportedTypeError,
             r"argument 1 `col\(\"name\"\)` is of type string", r"traced|pyarrow"),
    BadInput("udf-division-by-zero", "udf", "integer division by zero inside a compiled function",
             F, _m(lambda q: q.with_columns(z=cb.udf(_udf_ratio, compiled=True)("qty", 0))),
             E.InvalidOperationError, r"compiled user function `_udf_ratio` raised an exception",
             r"guard the case inside the function"),
    # -- feature fusion ----------------------------------------------------------------
    BadInput("one-hot-unseen-error", "features",
             "`handle_unknown='error'` and a category not seen when fitting", _categories,
             _fit_ab_transform, E.InvalidOperationError,
             r"column `c` has categories not seen when fitting: 'z'",
             r"handle_unknown='ignore'"),
    BadInput("stats-unknown-version", "features", "a statistics file of a newer version",
             _stats_file(99), _load_and_apply, E.JobSpecError,
             r"has version 99, which this colbridge cannot read", r"refit|upgrade"),
    BadInput("stats-missing-statistic", "features",
             "a statistics file without the `q75` that `robust` reads",
             _stats_file(2, drop="q75"), _load_and_apply, E.JobSpecError,
             r"has no `q75` for column `a`, which `robust` needs",
             r"fit statistics that include the column"),
    BadInput("target-encode-no-target", "features", "`target_encode` without a `target`",
             _categories, _fit_spec({"columns": {"c": {"target_encode": True}}}),
             E.JobSpecError, r"column `c` is target encoded but no target is given",
             r"pass `target=`"),
    BadInput("target-not-numeric", "features", "a string label for target encoding",
             _categories,
             _fit_spec({"columns": {"c": {"target_encode": True}}, "target": "label"}),
             E.UnsupportedTypeError, r"target column `label` has type `string`",
             r"encode class labels as 0/1"),
    BadInput("two-encodings", "features", "one column both one-hot and ids encoded",
             _categories, _fit_spec({"columns": {"c": {"one_hot": True, "ids": True}}}),
             E.JobSpecError, r"column `c` is given two encodings \(one_hot, ids\)",
             r"choose one per column"),
    BadInput("date-parts-of-a-number", "features", "`datetime=` parts asked of a numeric column",
             _dated, _fit_spec({"columns": {"a": {"datetime": ["hour"]}}}),
             E.UnsupportedTypeError, r"column `a` of type `double` has no date parts",
             r"convert it first"),
    BadInput("hour-of-a-date", "features", "`hour` asked of a Date column (no time of day)",
             _dated, _fit_spec({"columns": {"d": {"datetime": ["hour"]}}}),
             E.UnsupportedTypeError, r"column `d` of type `date32\[day\]` has no `hour`",
             r"ask only for month, weekday|use a Datetime column"),
    BadInput("cli-fuse-no-target", "cli", "`colbridge fuse --target-encode b` without `--target`",
             *_cli_no_target, 2, r"no target is given", r"--target"),
    # -- command line ------------------------------------------------------------------
    BadInput("cli-unknown-spec-key", "cli", "a spec file with a misspelt key (`wiht`)",
             *_cli_unknown_key, 2, r"unknown key 'wiht'", r"allowed keys: .*with"),
    BadInput("cli-bad-toml", "cli", "a spec file that is not valid TOML", *_cli_bad_toml, 2,
             r"not valid TOML", r"line|column|\("),
    BadInput("cli-steps-and-with", "cli", "a spec with both `steps` and `with`", *_cli_both, 2,
             r"both `steps` and top-level", r"use one"),
    BadInput("cli-unknown-step-key", "cli", "a spec step with an unknown key (`map`)",
             *_cli_step_key, 2, r"unknown key 'map'", r"with, filter or select"),
    BadInput("cli-fuse-unknown-key", "cli", "a fuse spec with a misspelt key (`dtpye`)",
             *_cli_fuse_key, 2, r"unknown key 'dtpye'", r"allowed keys: .*dtype"),
    BadInput("cli-missing-input", "cli", "an input file that does not exist", *_cli_missing, 2,
             r"nope.parquet", r"does not exist|no such|not found|check"),
    BadInput("cli-output-is-input", "cli", "the output path is the input file", *_cli_same, 2,
             r"is also an input file", r"another path"),
    BadInput("cli-output-is-folder", "cli", "the output path is a folder", *_cli_folder, 2,
             r"is a folder", r"give a file name"),
    BadInput("cli-output-folder-missing", "cli", "the output's folder does not exist",
             *_cli_no_dir, 2, r"does not exist", r"create it first"),
    BadInput("cli-bad-expression", "cli", "`--with` that does not parse", *_cli_expr, 2,
             r"cannot parse", r"\^"),
    BadInput("cli-dunder-expression", "cli", "`--with` with attribute access", *_cli_dunder, 2,
             r"attribute access is not allowed", r"call functions by name"),
    BadInput("cli-several-problems", "cli",
             "`--with` and `--filter` with three problems: all printed, numbered", *_cli_several,
             2, r"3 problems in the plan.*\n1\. step 1 .*\n2\. step 3 .*\n3\. step 4 \(filter\)",
             r"compare first.*did you mean.*'b'.*compare it"),
    BadInput("window-as-an-aggregation", "grouping",
             "`group_by(ok).agg(price.sum().over(qty))`: a window as an aggregation", F,
             _m(lambda q: q.group_by("ok").agg(cb.col("price").sum().over("qty"))),
             E.SchemaError, r"gives each group a list", r"reduce it to one value per group"),
    BadInput("date-format-not-inferred", "strings",
             "`name.str.to_date()` of strings no date pattern reads", F,
             _m(lambda q: q.with_columns(d=cb.col("name").str.to_date())),
             E.InvalidOperationError, r"could not find an appropriate format",
             r"give a format"),
    BadInput("integer-and-boolean-literal", "types", "`qty & True`: bitwise and of a boolean",
             F, _m(lambda q: q.with_columns(b=cb.col("qty") & True)), E.SchemaError,
             r"got int64 and a boolean literal", r"compare first|integer mask"),
    BadInput("fill-nan-of-booleans", "types", "`ok.fill_nan(0)`: NaN of a boolean column", F,
             _m(lambda q: q.with_columns(b=cb.col("ok").fill_nan(0))), E.SchemaError,
             r"not defined for bool", r"leave the `fill_nan` out|fill_null"),
    BadInput("is-in-another-temporal-kind", "types",
             "`is_in` of a date against datetimes", F,
             _m(lambda q: q.with_columns(
                 d=cb.lit(dt.date(2020, 1, 1)).is_in([dt.datetime(2020, 1, 1)]))),
             E.SchemaError, r"cannot look for date values in a list of datetime values",
             r"give dates"),
    BadInput("is-close-of-strings", "types", "`name.is_close(price)`: closeness of strings",
             F, _m(lambda q: q.with_columns(c=cb.col("name").is_close("price"))),
             E.InvalidOperationError, r'`is_close` compares numbers, and `col\("name"\)` is string',
             r"compare other types with `==`|cast to a number"),
    BadInput("is-close-negative-tolerance", "operations", "`is_close(qty, abs_tol=-1)`", F,
             _m(lambda q: q.with_columns(c=cb.col("price").is_close("qty", abs_tol=-1))),
             E.InvalidOperationError, r"`abs_tol` must be a non-negative number, got -1",
             r"give 0 or more"),
    BadInput("normalize-unknown-form", "operations", "`str.normalize('NFX')`", F,
             _m(lambda q: q.with_columns(c=cb.col("name").str.normalize("NFX"))),
             E.SchemaError, r"form 'NFX' is not a Unicode normal form",
             r"use 'NFC', 'NFKC', 'NFD' or 'NFKD'"),
    BadInput("cov-of-strings", "types", "`cb.cov('name', 'price')`: covariance of strings", F,
             _m(lambda q: q.with_columns(c=cb.cov("name", "price"))),
             E.InvalidOperationError, r'`cov` of `col\("name"\)(\.first\(\))?`, which is string',
             r"cast it to a number first"),
    BadInput("corr-unknown-method", "operations", "`cb.corr(a, b, method='kendall')`", F,
             _m(lambda q: q.with_columns(c=cb.corr("price", "qty", method="kendall"))),
             E.SchemaError, r"`corr\(method='kendall'\)`: unknown method",
             r"'pearson', 'spearman'"),
    BadInput("nth-out-of-range", "names", "`cb.nth(9)` on a frame of fewer columns", F,
             _m(lambda q: q.with_columns(c=cb.nth(9))),
             E.ColumnNotFoundError, r"`nth\(9\)`: the frame has \d+ column\(s\)",
             r"give a position from -\d+ to \d+"),
    BadInput("entropy-of-strings", "types", "`name.entropy()`: entropy of strings", F,
             _m(lambda q: q.with_columns(c=cb.col("name").entropy())),
             E.InvalidOperationError, r"entropy takes numbers", r"cast it to a number first"),
    BadInput("std-negative-ddof", "operations", "`price.std(ddof=-1)`", F,
             _m(lambda q: q.with_columns(c=cb.col("price").std(-1))),
             E.SchemaError, r"`std\(ddof=-1\)`: `ddof` must be >= 0", r">= 0"),
    BadInput("bit-count-of-floats", "types", "`price.bitwise_count_ones()` of a float", F,
             _m(lambda q: q.with_columns(c=cb.col("price").bitwise_count_ones())),
             E.SchemaError, r'`col\("price"\)\.bitwise_count_ones\(\)` is not defined for '
             r"float64", r"cast it first, e\.g\. `\.cast\(pl\.Int64\)`"),
    BadInput("bitwise-or-of-floats", "types", "`price.bitwise_or()` per group of a float", F,
             _m(lambda q: q.group_by("name").agg(c=cb.col("price").bitwise_or())),
             E.SchemaError, r"bitwise_or\(\).*` is not defined for float64",
             r"an integer or boolean column"),
    BadInput("cli-unknown-column", "cli", "`--filter` on a column that does not exist",
             *_cli_column, 2, r"column `zz` not found", r"available|did you mean|columns"),
    BadInput("cli-negative-batch-rows", "cli", "`--batch-rows -5`", *_cli_rows, 2,
             r"`batch_rows` must be at least 1", r"got -5"),
    BadInput("cli-no-output", "cli", "`run` without `-o`", *_cli_no_out, 2,
             r"no output given", r"-o out.parquet"),
]  # fmt: skip

# the contracts' cases (issue 14) live in their own module, built into BadInput here
from colbridge.testing.bad_inputs_contracts import contract_cases  # noqa: E402

CASES += [BadInput(*fields) for fields in contract_cases()]


def run_case(case: BadInput, tmp: Path | None = None) -> Outcome:
    """Run one case: what was raised (or the exit status), the message, and input unchanged."""
    if tmp is None:
        with tempfile.TemporaryDirectory(prefix="cb_bad_") as folder:
            return run_case(case, Path(folder))
    subject = case.make(tmp)
    before = fingerprint(subject)
    raised: str | None = None
    code: int | None = None
    stderr = io.StringIO()
    message = ""
    try:
        with contextlib.redirect_stderr(stderr):
            result = case.action(subject)
        if isinstance(case.error, int):
            code = int(result)
            message = stderr.getvalue()
    except BaseException as exc:
        raised = type(exc).__name__
        message = str(exc)
        if not isinstance(case.error, int) and isinstance(exc, case.error):
            raised = case.error.__name__ if type(exc) is case.error else type(exc).__name__
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
    return Outcome(raised, code, message, fingerprint(subject) == before)


def check_outcome(case: BadInput, outcome: Outcome) -> list[str]:
    """Problems with an outcome (empty when the case behaves as catalogued)."""
    problems = []
    if isinstance(case.error, int):
        if outcome.exit_code != case.error:
            problems.append(f"exit status {outcome.exit_code} (raised {outcome.raised}), "
                            f"want {case.error}")  # fmt: skip
    elif outcome.raised is None:
        problems.append(f"nothing raised, want {case.error.__name__}")
    else:
        cls = getattr(errors, outcome.raised, None)
        if cls is None or not issubclass(cls, case.error):
            problems.append(f"raised {outcome.raised}, want {case.error.__name__}")
    if not re.search(case.problem, outcome.message, re.S):
        problems.append(f"message does not name the problem /{case.problem}/")
    if not re.search(case.remedy, outcome.message, re.S):
        problems.append(f"message does not name the remedy /{case.remedy}/")
    if not outcome.unchanged:
        problems.append("the input changed")
    return problems


def catalogue_markdown(outcomes: dict[str, Outcome] | None = None) -> str:
    """The catalogue as a Markdown table (``docs/errors.md``), with the messages seen."""
    lines = [
        "| # | case | category | input | error (or exit status) | message |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for i, case in enumerate(CASES, 1):
        err = f"exit {case.error}" if isinstance(case.error, int) else f"`{case.error.__name__}`"
        message = ""
        if outcomes is not None and case.id in outcomes:
            first = outcomes[case.id].message.strip().replace("colbridge: error: ", "")
            first = " ".join(first.split())
            # the case's temporary folder changes on every run: not part of the message
            first = re.sub(re.escape(tempfile.gettempdir()) + r"/cb_bad_[^/'\s]*", "<tmp>", first)
            message = first[:160] + ("…" if len(first) > 160 else "")
            message = message.replace("|", "\\|").replace("`", "'")
        lines.append(f"| {i} | `{case.id}` | {case.category} | {case.what} | {err} | {message} |")
    return "\n".join(lines)
