"""``nan_max``, ``nan_min``, ``drop_nulls`` and ``drop_nans`` against polars.

``nan_max``/``nan_min`` are ``max``/``min`` that give NaN where a value is NaN (a
column of another type than float has none: its ``max``/``min``, booleans, dates and
strings included); the drops are filters, so they are the input of a reduction or an
ordered operation. Whole columns, ``group_by`` and ``over``, on generated columns of
every kind with nulls, NaN, infinities and both zeros; polars is the oracle.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import SchemaError
from colbridge.testing.asserts import assert_same_as_polars

_TYPES = {"i16": pa.int16(), "u64": pa.uint64(), "f32": pa.float32(), "f64": pa.float64(),
          "bool": pa.bool_(), "date": pa.date32(), "str": pa.string()}  # fmt: skip
_POOLS: dict[str, list[Any]] = {
    "i16": [0, 1, -1, 300, -32768], "u64": [0, 7, 2**63, 2**64 - 1],
    "f32": [0.0, -0.0, 1.5, -2.25, math.inf, math.nan],
    "f64": [0.0, -0.0, 0.1, -7.5, 1e300, -math.inf, math.nan],
    "bool": [True, False], "date": [0, 1, -400, 20_000], "str": ["", "a", "B", "é", "zz"],
}  # fmt: skip


def _column(kind: str, n: int, data: Any) -> pa.Array:
    values = data.draw(st.lists(st.sampled_from([None, *_POOLS[kind]]), min_size=n, max_size=n))
    if kind == "date":
        return pa.array(values, pa.int32()).cast(pa.date32())
    return pa.array(values, type=_TYPES[kind])


def _reductions(m: Any, kind: str) -> dict[str, Any]:
    x = m.col("x")
    out = {"hi": x.nan_max(), "lo": x.nan_min(), "kept": x.drop_nulls().len(),
           "first": x.drop_nulls().first()}  # fmt: skip
    if kind in _NUMBERS:  # `drop_nans` of other types: `test_drop_nans_takes_numbers`
        out.update(no_nan=x.drop_nans().len(), last=x.drop_nans().last(),
                   nulls_kept=x.drop_nans().null_count())  # fmt: skip
    return out


_NUMBERS = ("i16", "u64", "f32", "f64")


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n=st.integers(0, 30), kind=st.sampled_from(sorted(_TYPES)))
def test_equal_polars(data: Any, n: int, kind: str) -> None:
    table = pa.table({"x": _column(kind, n, data),
                      "g": data.draw(st.lists(st.sampled_from(["a", "b", "c"]),
                                              min_size=n, max_size=n))})  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.select(**_reductions(m, kind)))
    assert_same_as_polars(table, lambda m, q: q.group_by("g", maintain_order=True).agg(
        **_reductions(m, kind)))  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.with_columns(
        **{k: v.over("g") for k, v in _reductions(m, kind).items()}))  # fmt: skip


@pytest.mark.parametrize("kind", ["bool", "date", "str"])
def test_drop_nans_keeps_every_value_of_other_types(kind: str) -> None:
    # no NaN in a column of booleans, dates or strings: polars 2.2 keeps all its values
    # (on a whole column, per group and per window; a refusal before)
    values = [None, *_POOLS[kind][:2]]
    column = pa.array(values, pa.int32()).cast(pa.date32()) if kind == "date" \
        else pa.array(values, _TYPES[kind])  # fmt: skip
    table = pa.table({"x": column, "g": [1, 1, 2]})
    assert_same_as_polars(table, lambda m, q: q.select(
        n=m.col("x").drop_nans().len(), first=m.col("x").drop_nans().first()))  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.group_by("g", maintain_order=True).agg(
        n=m.col("x").drop_nans().len(), last=m.col("x").drop_nans().last()))  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.select(
        n=m.col("x").drop_nans().len().over("g")))  # fmt: skip
    got = pl.from_arrow(cb.lazy(table).select(n=cb.col("x").drop_nans().len()).compute())
    assert got["n"].to_list() == [3]


def test_a_nan_wins_and_keeps_its_type() -> None:
    table = pa.table({"f": pa.array([1.0, None, math.nan, 5.0], pa.float32()),
                      "g": [1, 1, 2, 2]})  # fmt: skip
    got = pl.from_arrow(cb.lazy(table).group_by("g", maintain_order=True).agg(
        hi=cb.col("f").nan_max(), m=cb.col("f").max()).compute())  # fmt: skip
    assert got.schema["hi"] == pl.Float32
    assert got["hi"].to_list()[0] == 1.0
    assert math.isnan(got["hi"].to_list()[1])
    assert got["m"].to_list() == [1.0, 5.0]  # `max` leaves the NaN out


def test_a_drop_changes_the_length_in_select_and_is_refused_as_a_column() -> None:
    table = pa.table({"x": [1.0, None, math.nan, 3.0]})
    got = cb.lazy(table).select(a=cb.col("x").drop_nulls(), n=cb.col("x").len()).compute()
    assert got.column("a").to_pylist()[::2] == [1.0, 3.0]
    assert math.isnan(got["a"][1].as_py())
    assert got.column("n").to_pylist() == [4, 4, 4]
    assert cb.lazy(table).select(cb.col("x").drop_nans()).compute().column("x").to_pylist() \
        == [1.0, None, 3.0]  # fmt: skip
    with pytest.raises(SchemaError, match=r"filter"):
        cb.lazy(table).with_columns(y=cb.col("x").drop_nulls()).compute()


def test_the_string_language() -> None:
    table = pa.table({"x": [1.0, math.nan, None, 4.0]})
    got = cb.lazy(table).eval(
        "hi = nan_max(x)\nlo = x.nan_min()\nk = drop_nulls(x).len()\nj = x.drop_nans().sum()"
    ).compute()
    row = got.select(["hi", "lo", "k", "j"]).to_pylist()[0]
    assert math.isnan(row["hi"])
    assert math.isnan(row["lo"])
    assert (row["k"], row["j"]) == (3, 5.0)


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    import numpy as np

    from colbridge.testing.cuda_host import compute_on_host

    rng = np.random.default_rng(4)
    n = 200
    x = rng.normal(size=n)
    x[rng.random(n) < 0.05] = np.nan
    table = pa.table({"x": pa.array(x, mask=rng.random(n) < 0.2), "g": rng.integers(0, 5, n)})
    c = cb.col("x")
    whole = cb.lazy(table).select(hi=c.nan_max(), lo=c.nan_min(), k=c.drop_nulls().len())
    grouped = cb.lazy(table).group_by("g", maintain_order=True).agg(
        hi=c.nan_max(), lo=c.nan_min(), j=c.drop_nans().sum())  # fmt: skip
    for q in (whole, grouped):
        # the device sums in another order than the CPU (docs/cuda.md): `j` within 1e-12
        assert_frame_equal(pl.from_arrow(compute_on_host(q)),
                           pl.from_arrow(q.compute(device="cpu")), rel_tol=1e-12)  # fmt: skip
