"""Every problem of a plan at once: `PlanProblemsError`, `explain()` and the command line."""

from __future__ import annotations

import pickle
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import colbridge as cb
from colbridge.cli import main
from colbridge.errors import (
    ColumnNotFoundError,
    PlanProblemsError,
    SchemaError,
    UnsupportedOperationError,
    UnsupportedTypeError,
)
from colbridge.io.pipeline import pipeline

DATA = {"price": [1.0, 2.0, None], "qty": [1, 2, 3], "name": ["x", "y", "z"],
        "ok": [True, False, None]}  # fmt: skip
FRAMES = {
    # nullable booleans (an object column is a problem of its own in pandas)
    "pandas": lambda: pd.DataFrame(DATA).astype({"ok": "boolean"}),
    "polars": lambda: pl.DataFrame(DATA),
    "pyarrow": lambda: pa.table(DATA),
}
# how each kind of frame holds the string column, as the problems name it
STRING = {"pandas": "large_string", "polars": "string_view", "pyarrow": "string"}


@pytest.fixture(params=list(FRAMES))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def raised(q: cb.LazyFrame) -> Any:
    with pytest.raises(cb.ColbridgeError) as info:
        q.compute(device="cpu")
    return info.value


def located(exc: Any) -> list[tuple[int, str, type, tuple[tuple[str, str], ...]]]:
    return [(p.step, p.column, type(p.error), p.inputs) for p in exc.problems]


def four_problems(frame: Any) -> cb.LazyFrame:
    col = cb.col
    return (
        cb.lazy(frame)
        .with_columns(z=col("name") + 1, y=col("price") & col("ok"), k=col("qty") * 2)
        .with_columns(w=col("z") * 2, v=col("prcie") + col("k"))
        .filter(col("qty") + 1)
    )


def test_problems_across_outputs_and_steps(kind: str) -> None:
    exc = raised(four_problems(FRAMES[kind]()))
    assert isinstance(exc, PlanProblemsError)
    # typing meets `z` first: the error is also what a plan with `z` alone raises
    assert isinstance(exc, UnsupportedOperationError)
    assert located(exc) == [
        (1, "z", UnsupportedOperationError, (("name", STRING[kind]),)),
        (1, "y", SchemaError, (("price", "float64"), ("ok", "bool"))),
        (2, "v", ColumnNotFoundError, (("prcie", "not found"), ("k", "int64"))),
        (3, "", SchemaError, (("qty", "int64"),)),
    ]
    # `w` reads the failing `z`: not checked, not reported again
    assert exc.unchecked == ("step 2 output `w` (reads `z`)",)
    assert [p.node for p in exc.problems] == ["", "", 'col("prcie")', ""]
    assert exc.errors == tuple(p.error for p in exc.problems)
    text = str(exc)
    assert text.startswith("4 problems in the plan; fix each of them, then compute again:\n")
    numbered = [line for line in text.splitlines() if line[:1].isdigit() and line[1] == "."]
    assert numbered == [
        '1. step 1 (with_columns), output `z`: `(col("name") + lit(1))`',
        '2. step 1 (with_columns), output `y`: `(col("price") & col("ok"))`',
        '3. step 2 (with_columns), output `v`: `(col("prcie") + col("k"))`',
        '4. step 3 (filter), predicate: `(col("qty") + lit(1))`',
    ]
    # each entry carries its error's message: the remedy and the did-you-mean hint
    assert "did you mean one of these: ['price']?" in text
    assert "compare it, e.g." in text
    assert f"reads: `name` ({STRING[kind]})" in text


def test_each_problem_is_what_it_raises_alone(kind: str) -> None:
    frame = FRAMES[kind]()
    exc = raised(four_problems(frame))
    alone = [
        cb.lazy(frame).with_columns(z=cb.col("name") + 1),
        cb.lazy(frame).with_columns(y=cb.col("price") & cb.col("ok")),
        cb.lazy(frame)
        .with_columns(k=cb.col("qty") * 2)
        .with_columns(v=cb.col("prcie") + cb.col("k")),
        cb.lazy(frame).filter(cb.col("qty") + 1),
    ]
    for problem, q in zip(exc.problems, alone, strict=True):
        single = raised(q)
        assert type(single) is type(problem.error)
        assert str(single) == str(problem.error)


def test_first_class_follows_what_typing_meets_first() -> None:
    frame = pl.DataFrame(DATA)
    q = cb.lazy(frame).with_columns(a=cb.col("nope") * 2, b=cb.col("name") + 1)
    exc = raised(q)
    assert isinstance(exc, PlanProblemsError)
    assert isinstance(exc, ColumnNotFoundError)
    assert isinstance(exc, KeyError)  # the builtin the first class refines
    assert not isinstance(exc, UnsupportedOperationError)
    with pytest.raises(ColumnNotFoundError):
        q.compute(device="cpu")
    # a KeyError's quotes are not added around the list
    assert str(exc).startswith("2 problems in the plan")


def test_one_problem_is_raised_as_before(kind: str) -> None:
    q = cb.lazy(FRAMES[kind]()).with_columns(z=cb.col("prcie") * 2)
    exc = raised(q)
    assert type(exc) is ColumnNotFoundError
    assert str(exc) == (
        "column `prcie` not found; available columns: ['price', 'qty', 'name', 'ok']"
        "\n\nHint: did you mean one of these: ['price']?"
    )
    assert located(exc) == [(1, "z", ColumnNotFoundError, (("prcie", "not found"),))]


def test_cascades_are_one_problem() -> None:
    # everything after `a` reads it: one problem, raised as a plan with it alone raises it
    q = (
        cb.lazy(pl.DataFrame(DATA))
        .with_columns(a=cb.col("name") * 2)
        .with_columns(b=cb.col("a") + 1)
        .filter(cb.col("b") > 0)
        .select(c=cb.col("b").sum(), d=cb.col("qty").sum())
    )
    exc = raised(q)
    assert type(exc) is UnsupportedOperationError
    assert located(exc) == [(1, "a", UnsupportedOperationError, (("name", "string_view"),))]


def test_replaced_column_is_known_again() -> None:
    # `z` fails in step 1, is made anew in step 2: step 3 reads the new one and is checked
    q = (
        cb.lazy(pa.table(DATA))
        .with_columns(z=cb.col("name") + 1)
        .with_columns(z=cb.col("qty") * 1.5)
        .with_columns(u=cb.col("z") & cb.col("ok"), v=cb.col("z").cast("uint8").clip(-3, 5))
    )
    exc = raised(q)
    assert located(exc) == [
        (1, "z", UnsupportedOperationError, (("name", "string"),)),
        (3, "u", SchemaError, (("z", "float64"), ("ok", "bool"))),
        (3, "v", SchemaError, (("z", "float64"),)),
    ]
    assert exc.unchecked == ()
    assert [p.node for p in exc.problems] == ["", "", ""]  # each fails as a whole


def test_string_statements_are_checked_together(kind: str) -> None:
    q = cb.lazy(FRAMES[kind]()).eval(
        "z = name + 1; w = z * 2; v = qty & price; t = sqrt(price) + qtty"
    )
    exc = raised(q)
    assert located(exc) == [
        (1, "z", UnsupportedOperationError, (("name", STRING[kind]),)),
        (3, "v", SchemaError, (("qty", "int64"), ("price", "float64"))),
        (4, "t", ColumnNotFoundError, (("price", "float64"), ("qtty", "not found"))),
    ]
    assert exc.unchecked == ("step 2 output `w` (reads `z`)",)


def test_grouping_keys_and_aggregations() -> None:
    col = cb.col
    q = (
        cb.lazy(pl.DataFrame(DATA))
        .group_by("nme", "qty")
        .agg(
            s=col("price").sum(),
            m=col("name").cum_sum().last(),
            t=(col("qty") + col("qty").cast("uint64")).sum(),
        )
        .with_columns(r=col("m") * 2, u=col("s") * 2, bad=col("qty") ** -1)
    )
    exc = raised(q)
    assert isinstance(exc, PlanProblemsError)
    assert located(exc) == [
        (1, "nme", ColumnNotFoundError, (("nme", "not found"),)),
        (1, "m", UnsupportedTypeError, (("name", "string_view"),)),
        (1, "t", SchemaError, (("qty", "int64"),)),
        (2, "bad", cb.errors.InvalidOperationError, (("qty", "int64"),)),
    ]
    # a grouped form of what was written (`cum_sum` per group) is not shown as the failing part
    assert [p.node for p in exc.problems] == ["", "", '(col("qty") + col("qty").cast(uint64))', ""]
    assert exc.unchecked == ("step 2 output `r` (reads `m`)",)


def test_select_keeps_only_its_failures() -> None:
    col = cb.col
    q = (
        cb.lazy(pl.DataFrame(DATA))
        .with_columns(z=col("name") - 1)
        .select(a=col("z") + 1, b=col("qty"), c=-col("qty").cast("uint8"))
        .filter(col("c") > 0)
        .with_columns(d=col("b") * col("bb"), e=col("b") * 2)
    )
    exc = raised(q)
    # `c` fails, so the filter is not checked; what the select keeps is known
    assert located(exc) == [
        (1, "z", UnsupportedOperationError, (("name", "string_view"),)),
        (2, "c", SchemaError, (("qty", "int64"),)),
        (4, "d", ColumnNotFoundError, (("b", "int64"), ("bb", "not found"))),
    ]

    assert exc.unchecked == ("step 2 output `a` (reads `z`)", "step 3 filter (reads `c`)")


def test_explain_lists_the_problems_without_raising(kind: str) -> None:
    q = four_problems(FRAMES[kind]())
    report = q.report()
    exc = raised(q)
    assert [(p.step, p.column, p.inputs) for p in report.problems] == \
        [(p.step, p.column, p.inputs) for p in exc.problems]  # fmt: skip
    assert [str(p.error) for p in report.problems] == [str(e) for e in exc.errors]
    text = q.explain()
    lines = text.splitlines()
    assert "problems: 4; the plan does not run" in lines
    assert [line.strip() for line in lines if line.strip()[:3] in ("1. ", "2. ", "3. ", "4. ")] == [
        '1. with_columns(z=(col("name") + lit(1)), y=(col("price") & col("ok")), '
        'k=(col("qty") * lit(2)))',
        '2. with_columns(w=(col("z") * lit(2)), v=(col("prcie") + col("k")))',
        '3. filter((col("qty") + lit(1)))',
        '1. step 1 (with_columns), output `z`: `(col("name") + lit(1))`',
        '2. step 1 (with_columns), output `y`: `(col("price") & col("ok"))`',
        '3. step 2 (with_columns), output `v`: `(col("prcie") + col("k"))`',
        '4. step 3 (filter), predicate: `(col("qty") + lit(1))`',
    ]
    assert "  not checked, as they read an output that fails: step 2 output `w` (reads `z`)" \
        in lines  # fmt: skip
    html = q._repr_html_()
    assert ("<li style=\"margin-left:0em\"><code>3. step 2 (with_columns), output `v`: "
            "`(col(&quot;prcie&quot;) + col(&quot;k&quot;))`</code></li>") in html
    assert "step 2 (with_columns), output `v`" in q._repr_markdown_()


def test_explain_of_one_problem_does_not_raise() -> None:
    q = cb.lazy(pl.DataFrame(DATA)).filter(cb.col("qty") + 1)
    report = q.report()
    assert [(p.step, p.column, type(p.error)) for p in report.problems] == [(1, "", SchemaError)]
    assert "problems: 1; the plan does not run" in q.explain()


def test_happy_path_collects_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import colbridge.runtime.problems as problems

    def fail(*args: Any) -> None:
        msg = "collected on the happy path"
        raise AssertionError(msg)

    monkeypatch.setattr(problems, "collect", fail)
    out = cb.lazy(pa.table(DATA)).with_columns(z=cb.col("qty") * 2).compute(device="cpu")
    assert out.column("z").to_pylist() == [2, 4, 6]


def test_pickles_with_its_class() -> None:
    exc = raised(four_problems(pl.DataFrame(DATA)))
    again = pickle.loads(pickle.dumps(exc))
    assert isinstance(again, PlanProblemsError)
    assert isinstance(again, UnsupportedOperationError)
    assert str(again) == str(exc)
    assert again.unchecked == exc.unchecked


@pytest.fixture
def parquet(tmp_path: Any) -> str:
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0], "b": [1, 2], "s": ["x", "y"]}), path)
    return str(path)


def test_pipeline_checks_every_step_before_reading(parquet: str, tmp_path: Any) -> None:
    out = tmp_path / "out.parquet"
    with pytest.raises(PlanProblemsError) as info:
        pipeline(parquet, out, with_="z = a & b; w = z + 1; v = bb + 1", filter="b + 1")
    assert [(p.step, p.column, type(p.error), p.inputs) for p in info.value.problems] == [
        (1, "z", SchemaError, (("a", "float64"), ("b", "int64"))),
        (3, "v", ColumnNotFoundError, (("bb", "not found"),)),
        (4, "", SchemaError, (("b", "int64"),)),
    ]
    assert not out.exists()


def test_cli_prints_the_numbered_list(parquet: str, tmp_path: Any, capsys: Any) -> None:
    out = tmp_path / "out.parquet"
    code = main(["run", parquet, "-o", str(out), "-q", "--with", "z = a & b; w = z + 1",
                 "--with", "v = bb + 1", "--filter", "b + 1"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2  # the first problem is a SchemaError: a usage error, as alone
    lines = err.splitlines()
    assert lines[0] == "colbridge: error: 3 problems in the plan; fix each of them, then " \
        "compute again:"  # fmt: skip
    assert [line for line in lines if line[:2] in ("1.", "2.", "3.")] == [
        '1. step 1 (with_columns), output `z`: `(col("a") & col("b"))`',
        '2. step 3 (with_columns), output `v`: `(col("bb") + lit(1))`',
        '3. step 4 (filter), predicate: `(col("b") + lit(1))`',
    ]
    assert "   Hint: did you mean one of these: ['b']?" in lines
    assert lines[-1] == "not checked, as they read an output that fails: step 2 output `w` " \
        "(reads `z`)"  # fmt: skip
    assert not out.exists()


def test_cli_failure_status_keeps_the_list(parquet: str, tmp_path: Any, capsys: Any) -> None:
    out = tmp_path / "out.parquet"
    code = main(["run", parquet, "-o", str(out), "-q", "--with", "z = s + 1; v = a & b"])
    err = capsys.readouterr().err
    assert code == 1  # an unsupported operation first: the status it has alone
    lines = err.splitlines()
    assert lines[0].startswith("colbridge: failed: 2 problems in the plan")
    assert lines[-1] == "no output was written"
    assert [line for line in lines if line[:2] in ("1.", "2.")] == [
        '1. step 1 (with_columns), output `z`: `(col("s") + lit(1))`',
        '2. step 2 (with_columns), output `v`: `(col("a") & col("b"))`',
    ]


def test_unsupported_types_are_problems_with_their_type() -> None:
    t = pa.table({"d": pa.array([1, 2], pa.decimal128(10, 2)), "s": ["a", "b"], "x": [1.0, 2.0]})
    q = cb.lazy(t).with_columns(
        a=cb.col("d") * 2,
        b=cb.col("s").cum_sum(),
        c=cb.col("x").cast("float16") + 1,
        e=cb.col("x").rolling_mean(2),
    )
    exc = raised(q)
    assert isinstance(exc, UnsupportedTypeError)
    assert located(exc) == [
        (1, "a", UnsupportedTypeError, (("d", "decimal128(10, 2)"),)),
        (1, "b", UnsupportedTypeError, (("s", "string"),)),
        (1, "c", UnsupportedTypeError, (("x", "float64"),)),
    ]


def test_a_pandas_object_column_is_named_as_unreadable() -> None:
    frame = pd.DataFrame({"o": pd.Series([1, "x"], dtype=object), "q": [1, 2]})
    q = cb.lazy(frame).with_columns(a=cb.col("o") * 2, b=cb.col("q") & 1.5)
    exc = raised(q)
    assert located(exc) == [
        (1, "a", UnsupportedTypeError, (("o", "a type colbridge cannot read"),)),
        (1, "b", SchemaError, (("q", "int64"),)),
    ]
    assert "column `o` has pandas dtype `object`" in str(exc)


def test_class_is_the_error_raised_before_collecting_not_entry_one() -> None:
    # typing takes a segment's outputs before its filter: `z` is met first
    q = cb.lazy(pl.DataFrame(DATA)).filter(cb.col("qty") + 1).with_columns(z=cb.col("nme"))
    exc = raised(q)
    assert located(exc) == [
        (1, "", SchemaError, (("qty", "int64"),)),
        (2, "z", ColumnNotFoundError, (("nme", "not found"),)),
    ]
    assert isinstance(exc, ColumnNotFoundError)
    assert not isinstance(exc, SchemaError)
