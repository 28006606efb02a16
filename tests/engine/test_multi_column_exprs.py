"""Expressions over several columns (``col("a", "b")``, ``all()``, ``exclude``, ``^...$``
patterns) and ``expr.name``: expanded and named as polars expands and names them.

Every case runs the same steps on colbridge and on polars and compares the frames
(names, types, values), on polars, pyarrow and pandas inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import ColumnNotFoundError, DuplicateColumnError, SchemaError

FRAME = pl.DataFrame(
    {
        "a": [1, 2, None, 4],
        "b": [3.0, None, 5.0, 6.5],
        "x_1": [5, 6, 7, 8],
        "x_2": [7, None, 9, 1],
        "g": ["p", "q", "p", "q"],
    }
)

Case = Callable[[Any, Any], Any]

CASES: dict[str, Case] = {
    "several names": lambda m, df: df.select(m.col("a", "b") * 2),
    "a list of names": lambda m, df: df.select(m.col(["a", "b"]).sum()),
    "suffix": lambda m, df: df.select(m.col("a", "b").sum().name.suffix("_s")),
    "prefix in with_columns": lambda m, df: df.with_columns(m.col("a", "b").name.prefix("p_")),
    "suffix after an alias": lambda m, df: df.select(m.col("a").alias("z").name.suffix("_s")),
    "keep undoes an alias": lambda m, df: df.select(m.col("a").alias("z").name.keep()),
    "names chained": lambda m, df: df.select(m.col("b").name.suffix("_1").name.suffix("_2")),
    "a name inside arithmetic": lambda m, df: df.with_columns(m.col("a").name.suffix("_s") * 2),
    "map": lambda m, df: df.select(m.all().name.map(lambda s: s.upper() + "!")),
    "to_uppercase": lambda m, df: df.select(m.col("a", "b").name.to_uppercase()),
    "strip_prefix": lambda m, df: df.select(m.all().name.strip_prefix("x_")),
    "strip_suffix": lambda m, df: df.select(m.all().name.strip_suffix("_1").name.strip_suffix("")),
    "replace a regex": lambda m, df: df.select(m.all().name.replace(r"^x_(\d)$", "v$1")),
    "replace every match": lambda m, df: df.select(m.col("x_1", "x_2").name.replace("_|x", "-")),
    "replace literally": lambda m, df: df.select(m.all().name.replace("x_.", "_", literal=True),
                                                  m.col("a").alias("x_.").name.replace(
                                                      "x_.", "y", literal=True)),
    "side by side": lambda m, df: df.select(m.col("a", "b") + m.col("x_1", "x_2")),
    "one with many": lambda m, df: df.select(m.col("a", "b") + m.col("x_1")),
    "a pattern": lambda m, df: df.select(m.col("^x_.*$")),
    "a pattern matching nothing": lambda m, df: df.select(m.col("^zz.*$")),
    "a name twice": lambda m, df: df.select(m.col("a", "a")),
    "all, exclude": lambda m, df: df.select(m.all().exclude("a", "g")),
    "exclude a pattern": lambda m, df: df.select(m.exclude("^x_.*$", "g")),
    "col(...).exclude": lambda m, df: df.select(m.col("a", "b", "x_1").exclude("a")),
    "reductions of all": lambda m, df: df.select(m.exclude("g").mean()),
    "null counts": lambda m, df: df.select(m.all().null_count()),
    "lags of all": lambda m, df: df.with_columns(m.exclude("g").shift(1).name.suffix("_lag")),
    "windows per group": lambda m, df: df.with_columns(
        m.col("a", "b").fill_null(0).cum_sum().over("g")
    ),
    "group_by all()": lambda m, df: df.group_by("g", maintain_order=True).agg(m.all().sum()),
    "group_by suffix": lambda m, df: df.group_by("g", maintain_order=True).agg(
        m.col("b", "x_1").max().name.suffix("_max")
    ),
    "group_by keys": lambda m, df: df.group_by(m.col("g", "x_1"), maintain_order=True).agg(
        m.col("b").sum()
    ),
    "horizontal of names": lambda m, df: df.select(m.max_horizontal(m.col("a", "b"))),
    "horizontal of all": lambda m, df: df.select(m.sum_horizontal(m.exclude("g"))),
    "fill_null from columns": lambda m, df: df.select(m.col("a", "x_2").fill_null(m.col("x_1"))),
}


def _run(case: Case, frame: Any) -> pl.DataFrame:
    out = case(cb, frame.gpu if not isinstance(frame, pa.Table) else cb.lazy(frame)).compute()
    if isinstance(out, pa.Table):
        return pl.from_arrow(out)  # type: ignore[return-value]
    if isinstance(out, pd.DataFrame):
        return pl.from_pandas(out)
    return out


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("kind", ["polars", "pyarrow", "pandas"])
def test_expands_and_names_as_polars(name: str, kind: str) -> None:
    case = CASES[name]
    want = case(pl, FRAME)
    frame: Any = {"polars": FRAME, "pyarrow": FRAME.to_arrow(),
                  "pandas": FRAME.to_pandas(use_pyarrow_extension_array=True)}[kind]  # fmt: skip
    got = _run(case, frame)
    if kind == "pandas" and not want.columns:  # a pandas frame keeps its index: 4 rows, no column
        assert got.columns == []
        return
    assert_frame_equal(got, want)


def test_all_sees_the_columns_of_the_step_before() -> None:
    got = FRAME.gpu.with_columns(c=cb.col("a") * 2).select(cb.exclude("g").max()).compute()
    want = FRAME.with_columns(c=pl.col("a") * 2).select(pl.exclude("g").max())
    assert_frame_equal(got, want)
    assert got.columns == ["a", "b", "x_1", "x_2", "c"]


def test_refusals_name_what_to_do() -> None:
    with pytest.raises(SchemaError, match="expanded to 2 expressions"):
        FRAME.gpu.filter(cb.col("a", "b") > 1)
    with pytest.raises(SchemaError, match="different numbers of columns"):
        FRAME.gpu.select(cb.col("a", "b") + cb.col("x_1", "x_2", "b"))
    with pytest.raises(DuplicateColumnError, match="`z` appears more than once"):
        FRAME.gpu.select(cb.col("a", "b").alias("z")).compute()
    with pytest.raises(DuplicateColumnError, match="`s` appears more than once"):
        FRAME.gpu.select(s=cb.col("a", "b").sum()).compute()
    with pytest.raises(ColumnNotFoundError, match="`zz` not found"):
        FRAME.gpu.select(cb.col("a", "zz")).compute()
    with pytest.raises(SchemaError, match="not by data type"):
        cb.col(pl.Float64)  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="not a valid regular expression"):
        FRAME.gpu.select(cb.col("^x_($"))
    with pytest.raises(SchemaError, match="takes columns out of a selection"):
        cb.col("a").exclude("b")
    with pytest.raises(SchemaError, match="give the keys one by one"):
        cb.col("a").sum().over(cb.col("g", "x_1"))
    with pytest.raises(SchemaError, match="name the columns there"):
        FRAME.gpu.select(cb.coalesce(cb.all()))
    with pytest.raises(SchemaError, match="takes a string"):
        cb.col("a").name.suffix(1)  # type: ignore[arg-type]


def test_a_single_name_is_a_plain_column() -> None:
    assert repr(cb.col("a")) == '<Expr col("a")>'
    assert repr(cb.col(["a"])) == '<Expr col("a")>'
    assert repr(cb.col("a", "b").name.suffix("_s")) == "<Expr col('a', 'b').name.suffix('_s')>"


def test_streamed_inputs_select_from_their_schema() -> None:
    lazy = FRAME.lazy()
    got = lazy.gpu.select(cb.exclude("g").max().name.suffix("_max")).compute()
    assert_frame_equal(got, FRAME.select(pl.exclude("g").max().name.suffix("_max")))
    reader = FRAME.to_arrow().to_reader(max_chunksize=3)
    got = pl.from_arrow(cb.lazy(reader).with_columns(cb.col("^x_.*$") * 2).compute())
    assert_frame_equal(got, FRAME.with_columns(pl.col("^x_.*$") * 2))  # type: ignore[arg-type]


def test_job_steps_expand_named_columns_and_refuse_what_needs_the_schema() -> None:
    from colbridge.io.steps import build_steps

    (step,) = build_steps(select=[cb.col("a", "b") * 2])
    assert [name for name, _ in step.items] == ["a", "b"]
    with pytest.raises(SchemaError, match="needs the frame's columns"):
        build_steps(with_="z = col('^x_.*$') * 2")
    with pytest.raises(SchemaError, match="needs the frame's columns"):
        build_steps(select=[cb.all()])
    with pytest.raises(SchemaError, match="expanded to 2 expressions"):
        build_steps(with_={"z": cb.col("a", "b")})
    with pytest.raises(SchemaError, match="expanded to 2 expressions"):
        build_steps(filter=cb.col("a", "b") > 1)


NAMED_BY_POLARS = [
    ("with_columns", lambda m: [m.when(m.col("c") > 10).then(m.col("a")).otherwise(0)]),
    ("with_columns", lambda m: [m.when(m.col("c") > 10).then(5)]),
    ("with_columns", lambda m: [m.when(m.col("k") > 0).then(m.col("x")).otherwise(0)
                                .name.keep()]),
    ("with_columns", lambda m: [m.when(m.col("k") > 0).then(m.col("x")).name.suffix("_w")]),
    ("with_columns", lambda m: [m.when(m.col("c") > 10).then(m.col("a", "x"))]),
    ("with_columns", lambda m: [m.any_horizontal(m.all() > 5)]),
    ("select", lambda m: [m.all_horizontal(m.all() > 0).alias("k")]),
    ("filter", lambda m: [m.all_horizontal(m.all() > 0)]),
    ("select", lambda m: [m.any_horizontal(m.exclude("a") > 4)]),
    ("select", lambda m: [m.col("^c$", "^a$"), m.col(["k", "^x$"]).name.suffix("_2")]),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(NAMED_BY_POLARS)))
def test_outputs_are_named_and_ordered_as_polars_names_them(case: int) -> None:
    # a `when` took its condition's name (overwriting that column in with_columns);
    # any/all_horizontal made one column per selected one; a pattern selects in frame order
    df = pl.DataFrame({"a": [1, 2], "c": [10, 20], "k": [0, 5], "x": [1.5, 2.5]})
    step, build = NAMED_BY_POLARS[case]
    got = getattr(df.gpu, step)(*build(cb)).compute()
    assert_frame_equal(got, getattr(df, step)(*build(pl)))
