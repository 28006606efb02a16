"""polars' top-level shorthands (``cb.sum("a", "b")``, ``cb.first()``, ``cb.nth(0, -1)``).

Each is ``cb.col(names).<reduction>()`` or a selection of columns by place, named and
typed as polars names and types them; polars is the oracle, on a frame with nulls,
in ``select``, ``with_columns``, ``group_by`` (where places count the keys too) and
``over``, on every frame kind.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.errors import ColumnNotFoundError, DuplicateColumnError, SchemaError
from colbridge.testing.asserts import assert_same_as_polars

TABLE = pa.table({
    "k": ["x", "y", "x", "y", "x"],
    "a": pa.array([1, 2, None, 4, 5], pa.int64()),
    "b": [True, None, False, True, True],
    "c": pa.array([1.5, None, -3.0, 2.25, 0.5], pa.float64()),
})  # fmt: skip

#: name -> the shorthand's call, on the pl or cb module
CALLS: dict[str, Any] = {
    "sum": lambda m: m.sum("a", "c"),
    "mean": lambda m: m.mean(["a", "c"]),
    "median": lambda m: m.median("c"),
    "min": lambda m: m.min("a", "c"),
    "max": lambda m: m.max("a", "b", "c"),
    "n_unique": lambda m: m.n_unique("a", "b"),
    "count": lambda m: m.count("a", "b", "c"),
    "std": lambda m: m.std("c", 0),
    "var": lambda m: m.var("a"),
    "quantile": lambda m: m.quantile("c", 0.5),
    "first": lambda m: m.first("a", "c"),
    "last": lambda m: m.last("b"),
    "any": lambda m: m.any("b"),
    "all": lambda m: m.all("b", ignore_nulls=False),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_reductions_equal_polars(name: str) -> None:
    call = CALLS[name]
    assert_same_as_polars(TABLE, lambda m, q: q.select(call(m)), rtol=1e-12)
    assert_same_as_polars(TABLE, lambda m, q: q.group_by("k", maintain_order=True).agg(
        call(m)), rtol=1e-12)  # fmt: skip
    assert_same_as_polars(TABLE, lambda m, q: q.select(call(m).over("k")), rtol=1e-12)


@pytest.mark.parametrize("name", ["cum_sum", "cum_count"])
def test_running_values_equal_polars(name: str) -> None:
    assert_same_as_polars(TABLE, lambda m, q: q.select(getattr(m, name)("a", "c")))
    assert_same_as_polars(TABLE, lambda m, q: q.with_columns(
        getattr(m, name)("a").over("k").name.suffix("_run")))  # fmt: skip
    assert_same_as_polars(TABLE, lambda m, q: q.select(m.cum_count("b", reverse=True)))


@pytest.mark.parametrize("places", [(0,), (-1,), (1, 3), (0, -1), ([2],), ([1, 0],)])
def test_columns_by_place(places: tuple[Any, ...]) -> None:
    assert_same_as_polars(TABLE, lambda m, q: q.select(m.nth(*places)))
    assert_same_as_polars(TABLE, lambda m, q: q.with_columns(
        m.nth(*places).name.suffix("_2")))  # fmt: skip


def test_first_and_last_columns() -> None:
    assert_same_as_polars(TABLE, lambda m, q: q.select(m.first(), m.last() * 2))
    assert_same_as_polars(TABLE, lambda m, q: q.select(m.first().name.suffix("_f"),
                                                       m.last().sum()))  # fmt: skip


def test_places_count_the_keys_in_group_by() -> None:
    # polars: places index every column, the keys too (`nth(0)` is the key `k` here)
    assert_same_as_polars(TABLE, lambda m, q: q.group_by("k", maintain_order=True).agg(
        m.nth(1).sum(), m.nth(-1).max()))  # fmt: skip
    assert_same_as_polars(TABLE, lambda m, q: q.group_by("a", maintain_order=True).agg(
        m.last().sum()))  # fmt: skip
    with pytest.raises(DuplicateColumnError, match=r"`k` appears more than once"):
        cb.lazy(TABLE).group_by("k").agg(cb.first()).compute()


def test_bad_calls_are_refused() -> None:
    with pytest.raises(SchemaError, match=r"`cb\.sum\(\)` takes one or more column names"):
        cb.sum()
    with pytest.raises(SchemaError, match=r"count rows with `cb\.len\(\)`"):
        cb.count()
    with pytest.raises(SchemaError, match=r"`nth` takes one or more column positions"):
        cb.nth("a")  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match=r"column positions"):
        cb.nth()
    with pytest.raises(ColumnNotFoundError, match=r"`nth\(4\)`: the frame has 4 column\(s\)"):
        cb.lazy(TABLE).select(cb.nth(4)).compute()
    with pytest.raises(ColumnNotFoundError, match=r"from -4 to 3"):
        cb.lazy(TABLE).select(cb.nth(-5)).compute()
    # polars keeps `ddof` in a byte and refuses what does not fit (an OverflowError)
    for ddof in (-1, 256):
        with pytest.raises(SchemaError, match=r"`std\(ddof=-?\d+\)`: `ddof` must be"):
            cb.std("c", ddof)
        with pytest.raises(SchemaError, match=r"`var\(ddof=-?\d+\)`: `ddof` must be"):
            cb.col("c").var(ddof)


def test_all_without_names_still_selects_every_column() -> None:
    got = cb.lazy(TABLE).select(cb.all().null_count()).compute()
    assert got.column_names == ["k", "a", "b", "c"]
    assert got.to_pylist() == [{"k": 0, "a": 1, "b": 1, "c": 1}]
