"""``dot``, ``has_nulls`` and ``is_empty`` against polars: whole columns, groups, windows.

Each is polars' own composition (``(x * y).sum()``, ``null_count() > 0``,
``len() == 0``), so the types, the wrapping of integer products and the names follow
from those; polars, run at test time, is the oracle.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import assert_same_as_polars

_TYPES = {"i8": pa.int8(), "i64": pa.int64(), "u32": pa.uint32(), "f32": pa.float32(),
          "f64": pa.float64(), "bool": pa.bool_()}  # fmt: skip
_POOLS: dict[str, list[Any]] = {
    "i8": [0, 1, -1, 100, 127, -128], "i64": [0, 1, -3, 2**40, 2**62],
    "u32": [0, 1, 7, 2**31, 2**32 - 1], "f32": [0.0, 1.5, -2.25, 1e30, math.nan],
    "f64": [0.0, 0.1, -7.5, 1e300, math.inf, math.nan], "bool": [True, False],
}  # fmt: skip


def _column(kind: str, n: int, data: Any) -> pa.Array:
    values = data.draw(st.lists(st.sampled_from([None, *_POOLS[kind]]), min_size=n, max_size=n))
    return pa.array(values, type=_TYPES[kind])


@settings(max_examples=25, deadline=None)
@given(data=st.data(), n=st.integers(0, 30),
       kinds=st.tuples(st.sampled_from(sorted(_TYPES)), st.sampled_from(sorted(_TYPES))))
def test_equal_polars(data: Any, n: int, kinds: tuple[str, str]) -> None:
    table = pa.table({"x": _column(kinds[0], n, data), "y": _column(kinds[1], n, data),
                      "g": data.draw(st.lists(st.sampled_from(["a", "b", "c"]),
                                              min_size=n, max_size=n))})  # fmt: skip
    # two boolean columns: polars refuses their product, and colbridge must refuse it too
    assert_same_as_polars(table, lambda m, q: q.select(
        d=m.col("x").dot("y"), h=m.col("x").has_nulls(), e=m.col("x").is_empty(),
        f=m.col("y").filter(m.col("y").is_null()).is_empty()))  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.with_columns(
        d=m.col("x").dot(m.col("y")).over("g"), h=m.col("y").has_nulls().over("g")))  # fmt: skip
    if kinds == ("bool", "bool"):
        return  # polars' group_by plans the refused product without raising on no rows
    assert_same_as_polars(table, lambda m, q: q.group_by("g", maintain_order=True).agg(
        d=m.col("x").dot("y"), h=m.col("x").has_nulls(),
        e=m.col("x").filter(m.col("y").is_not_null()).is_empty()))  # fmt: skip


def test_the_string_language() -> None:
    table = pa.table({"x": [1, 2, None, 4], "y": [2, None, 3, 5]})
    got = cb.lazy(table).eval("d = dot(x, y)\nh = x.has_nulls()\ne = is_empty(x)").compute()
    assert got.select(["d", "h", "e"]).to_pylist() == [{"d": 22, "h": True, "e": False}] * 4


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    import numpy as np

    from colbridge.testing.cuda_host import compute_on_host

    rng = np.random.default_rng(3)
    n = 200
    table = pa.table({"x": pa.array(rng.integers(-50, 50, n), mask=rng.random(n) < 0.2),
                      "y": pa.array(rng.integers(-9, 9, n).astype(np.int16)),
                      "g": rng.integers(0, 4, n)})  # fmt: skip
    x = cb.col("x")
    whole = cb.lazy(table).select(d=x.dot("y"), h=x.has_nulls(), e=x.is_empty(),
                                  f=x.filter(x > 100).is_empty())  # fmt: skip
    grouped = cb.lazy(table).group_by("g", maintain_order=True).agg(
        d=x.dot("y"), h=x.has_nulls(), e=x.filter(x > 45).is_empty())  # fmt: skip
    for q in (whole, grouped):
        assert compute_on_host(q).equals(q.compute(device="cpu"))
