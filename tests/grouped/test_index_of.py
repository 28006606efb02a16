"""``index_of`` against polars: the first position of a value (UInt32), null if none.

Generated columns of numbers (NaN, ``-0.0``), strings and dates with nulls; values
present, absent and null; whole columns, ``group_by`` and ``over``.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import polars as pl
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import assert_same_as_polars

POOLS: dict[str, tuple[pa.DataType, list[Any]]] = {
    "f64": (pa.float64(), [0.0, -0.0, 1.5, math.nan, -2.0]),
    "i32": (pa.int32(), [0, 1, -7, 300]),
    "str": (pa.string(), ["", "UA", "AA"]),
    "date": (pa.date32(), [dt.date(2020, 1, 1), dt.date(1969, 12, 31)]),
}


@settings(max_examples=60, deadline=None)
@given(data=st.data(), kind=st.sampled_from(sorted(POOLS)), n=st.integers(0, 20))
def test_equal_polars(data: Any, kind: str, n: int) -> None:
    t, pool = POOLS[kind]
    values = data.draw(st.lists(st.sampled_from([None, *pool]), min_size=n, max_size=n))
    keys = data.draw(st.lists(st.sampled_from(["u", "v"]), min_size=n, max_size=n))
    table = pa.table({"x": pa.array(values, type=t), "g": pa.array(keys, pa.string())})
    wanted = data.draw(st.sampled_from([None, *pool]))

    def found(m: Any) -> dict[str, Any]:
        return {"i": m.col("x").index_of(wanted), "m": m.col("x").index_of(m.col("x").max())}

    assert_same_as_polars(table, lambda m, q: q.select(**found(m)))
    assert_same_as_polars(table, lambda m, q: q.group_by("g", maintain_order=True).agg(
        **found(m)))  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.select(
        **{k: v.over("g") for k, v in found(m).items()}))  # fmt: skip


def test_polars_example_and_the_string_language() -> None:
    df = pl.DataFrame({"a": [1, None, 17]})
    exprs = lambda m: [m.col("a").index_of(17).alias("seventeen"),  # noqa: E731
                       m.col("a").index_of(None).alias("null"),
                       m.col("a").index_of(55).alias("fiftyfive")]
    assert df.gpu.select(exprs(cb)).compute().equals(df.select(exprs(pl)))
    got = cb.lazy(pa.table({"s": ["x", "y", "y"]})).eval("i = index_of(s, 'y')").compute()
    assert got.column("i").to_pylist() == [1, 1, 1]
