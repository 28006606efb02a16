"""An Enum compared with a String by ``< <= > >=``, against polars 2.1.

polars casts the strings to the enum and compares in category order, either
side. A string that is not a category is looked up row by row, only where both
sides are valid: on a row where the enum is set it fails
(``InvalidOperationError``); on a row where the enum is null it is never looked
up. By ``==``/``!=`` such a string is just unequal. colbridge casts through the
same remap to category positions as two enums use, and counts the failures in
the kernel, on every target.

The oracle is polars' in-memory engine: its streaming engine (what
``collect()`` picks) splits a small frame into morsels by thread count, and a
morsel of one row takes polars' scalar path, which casts that row's string even
where the enum is null, so whether it raises there depends on the machine. A
frame of one row does the same in both engines (polars raises where the enum is
null and the string is not a category; colbridge gives null), so the generated
frames here have two rows or more.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import as_arrow, to_kind
from tests.engine.test_string_categorical_mix import RUNNERS, run_with

KINDS = ("pyarrow", "polars", "pandas-nullable", "pandas-arrow")
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne,
}  # fmt: skip
ORDERS = ("lt", "le", "gt", "ge")
SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
LABELS = st.text("abzé日 ", max_size=3)


def _table(categories: list[str], e: list[str | None], s: list[str | None]) -> pa.Table:
    return pl.DataFrame({
        "e": pl.Series(e, dtype=pl.Enum(categories)),
        "s": pl.Series(s, dtype=pl.String),
    }).to_arrow()  # fmt: skip


def _compare(ops: tuple[str, ...]) -> Callable[[Any], dict[str, Any]]:
    def build(m: Any) -> dict[str, Any]:
        e, s = m.col("e"), m.col("s")
        return {**{f"e_{op}_s": OPS[op](e, s) for op in ops},
                **{f"s_{op}_e": OPS[op](s, e) for op in ops}}  # fmt: skip

    return build


def _polars(table: pa.Table, build: Callable[[Any], dict[str, Any]]) -> pl.DataFrame:
    return pl.from_arrow(table).lazy().select(**build(pl)).collect(engine="in-memory")


def _check_same(result: Any, want: pl.DataFrame) -> None:
    got = as_arrow(result)
    assert got.column_names == want.columns
    for name in want.columns:
        assert got.column(name).to_pylist() == want[name].to_list(), name


@st.composite
def _frames(draw: st.DrawFn, *, others: bool) -> pa.Table:
    """Random categories; an Enum and a String column (with strings that are not
    categories when ``others``), nulls on both sides, two rows or more."""
    categories = draw(st.lists(LABELS, min_size=1, max_size=6, unique=True))
    labels = categories
    if others:
        extra = draw(st.lists(LABELS.filter(lambda v: v not in categories), min_size=1,
                              max_size=3, unique=True))  # fmt: skip
        labels = categories + extra
    n = draw(st.integers(2, 24))
    e = draw(st.lists(st.none() | st.sampled_from(categories), min_size=n, max_size=n))
    s = draw(st.lists(st.none() | st.sampled_from(labels), min_size=n, max_size=n))
    return _table(categories, e, s)


@pytest.mark.parametrize("runner", RUNNERS)
@SETTINGS
@given(frame=_frames(others=False), kind=st.sampled_from(KINDS), data=st.data())
def test_enum_and_strings_compare_in_category_order(
    runner: str, frame: pa.Table, kind: str, data: st.DataObject,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    table = frame.slice(data.draw(st.integers(0, 1)))
    build = _compare(tuple(OPS))
    want = _polars(table, build)
    _check_same(run_with(runner, cb.lazy(to_kind(table, kind)).select(**build(cb)), monkeypatch),
                want)  # fmt: skip


@pytest.mark.parametrize("runner", RUNNERS)
@SETTINGS
@given(frame=_frames(others=True), kind=st.sampled_from(KINDS))
def test_strings_that_are_not_categories_do_what_polars_does(
    runner: str, frame: pa.Table, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:  # fmt: skip
    table = frame
    lazy = cb.lazy(to_kind(table, kind))
    # by == and != a string that is not a category is unequal, never an error
    equal = _compare(("eq", "ne"))
    _check_same(run_with(runner, lazy.select(**equal(cb)), monkeypatch), _polars(table, equal))
    order = _compare(ORDERS)
    want, failed = _polars_or_error(table, order)
    if failed is not None:
        event("polars raises")
        with pytest.raises(cb.InvalidOperationError) as caught:
            run_with(runner, lazy.select(**order(cb)), monkeypatch)
        # polars names the first string it meets; colbridge names every one of them
        assert repr(failed) in str(caught.value)
        return
    event("polars answers")
    assert want is not None
    _check_same(run_with(runner, lazy.select(**order(cb)), monkeypatch), want)


def _polars_or_error(table: pa.Table, build: Callable[[Any], dict[str, Any]]
                     ) -> tuple[pl.DataFrame | None, str | None]:  # fmt: skip
    """polars' result, or the string it names where the cast to the enum fails."""
    try:
        return _polars(table, build), None
    except pl.exceptions.InvalidOperationError as exc:
        found = re.search(r'failed for value "([^"]*)"', str(exc))
        if found is None:
            raise
        return None, found.group(1)


CATEGORIES = ["lo", "mid", "hi"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("runner", RUNNERS)
def test_a_string_that_is_not_a_category_fails_naming_it(
    runner: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:  # fmt: skip
    table = _table(CATEGORIES, ["hi", None, "lo", "mid"], ["mid", "x", "top", None])
    with pytest.raises(pl.exceptions.InvalidOperationError, match='failed for value "top"'):
        _polars(table, lambda m: {"x": m.col("s") > m.col("e")})
    lazy = cb.lazy(to_kind(table, kind)).select(x=cb.col("s") > cb.col("e"))
    with pytest.raises(cb.InvalidOperationError) as caught:
        run_with(runner, lazy, monkeypatch)
    text = str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert '`(col("s") > col("e"))`' in text  # the expression
    assert 'casts the strings to the enum' in text
    assert '`col("s")` holds a string that is not a category of `col("e")`' in text
    assert ".filter(" in text  # what to do instead
    assert ".cast(pl.String)" in text
    # the strings that are not categories ("x" is one too: its row's enum is null)
    assert "not categories: ['x', 'top'] (the categories: ['lo', 'mid', 'hi'])" in text


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("runner", RUNNERS)
def test_only_rows_where_the_enum_is_set_are_cast(
    runner: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:  # fmt: skip
    table = _table(CATEGORIES, ["hi", None, "lo", None, "mid"], ["mid", "x", "hi", None, "mid"])
    build = _compare(tuple(OPS))
    want = _polars(table, build)
    assert want["e_lt_s"].to_list() == [False, None, True, None, False]
    _check_same(run_with(runner, cb.lazy(to_kind(table, kind)).select(**build(cb)), monkeypatch),
                want)  # fmt: skip


@pytest.mark.parametrize("runner", RUNNERS)
def test_empty_frames_and_null_sides(runner: str, monkeypatch: pytest.MonkeyPatch) -> None:
    build = _compare(tuple(OPS))
    for e, s in (([], []), ([None, None], ["x", "lo"]), (["lo", "hi"], [None, None])):
        table = _table(CATEGORIES, e, s)
        want = _polars(table, build)
        _check_same(run_with(runner, cb.lazy(table).select(**build(cb)), monkeypatch), want)


def _filtered_first(m: Any, q: Any) -> Any:
    return q.filter(m.col("s").is_in(CATEGORIES)).with_columns(x=m.col("e") <= m.col("s"))


def _filtered_after(m: Any, q: Any) -> Any:
    return q.with_columns(x=m.col("e") <= m.col("s")).filter(m.col("s").is_in(CATEGORIES))


def _made_null(m: Any, q: Any) -> Any:
    known = m.when(m.col("s").is_in(CATEGORIES)).then(m.col("s"))
    return q.with_columns(x=m.col("e") <= known)


def _as_strings(m: Any, q: Any) -> Any:
    return q.with_columns(x=m.col("e").cast(pl.String) <= m.col("s"))


@pytest.mark.parametrize("steps", [_filtered_first, _filtered_after, _made_null, _as_strings])
@pytest.mark.parametrize("kind", KINDS)
def test_the_ways_out_the_error_names(steps: Callable[[Any, Any], Any], kind: str) -> None:
    # polars filters before it computes the outputs a filter follows: no row fails there
    table = _table(CATEGORIES, ["hi", "mid", "lo", None], ["mid", "x", "hi", "lo"])
    want = steps(pl, pl.from_arrow(table).lazy()).collect(engine="in-memory")
    got = as_arrow(steps(cb, cb.lazy(to_kind(table, kind))).compute())
    assert got.column("x").to_pylist() == want["x"].to_list()
    assert got.column("s").to_pylist() == want["s"].to_list()


def test_in_the_string_language() -> None:
    table = _table(CATEGORIES, ["hi", None, "lo", "mid"], ["mid", "lo", "hi", None])
    got = cb.lazy(table).eval("x = e < s; y = s >= e; z = 'mid' > e").compute()
    want = pl.from_arrow(table).select(
        x=pl.col("e") < pl.col("s"), y=pl.col("s") >= pl.col("e"), z=pl.lit("mid") > pl.col("e")
    )  # fmt: skip
    for name in ("x", "y", "z"):
        assert got.column(name).to_pylist() == want[name].to_list(), name
