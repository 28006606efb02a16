"""``max_by``, ``min_by`` and ``entropy`` against polars.

``x.max_by(by)`` is ``x`` on the first row where ``by`` is largest (NaN counting only
where every value is, as ``max``), null where ``by`` has no value; ``entropy`` is
``-sum(p * log(p, base))``, ``p`` divided by its sum first with ``normalize``, 0.0 for
one row. Whole columns, ``group_by`` and ``over``, on generated columns with nulls,
NaN, zeros and negatives; polars is the oracle.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import InvalidOperationError, SchemaError
from colbridge.testing.asserts import assert_same_as_polars

_TYPES = {"i16": pa.int16(), "u64": pa.uint64(), "f32": pa.float32(), "f64": pa.float64(),
          "date": pa.date32(), "str": pa.string(), "bool": pa.bool_()}  # fmt: skip
_POOLS: dict[str, list[Any]] = {
    "i16": [0, 1, -1, 7, -32768], "u64": [0, 3, 2**63, 2**64 - 1],
    "f32": [0.0, -0.0, 0.25, 2.5, -1.5, math.nan, math.inf],
    "f64": [0.0, 0.125, 3.0, -7.5, 1e300, math.nan, -math.inf],
    "date": [0, 1, -400, 20_000], "str": ["", "a", "B", "zz"], "bool": [True, False],
}  # fmt: skip
_NUMBERS = ("i16", "u64", "f32", "f64")


def _column(kind: str, n: int, data: Any) -> pa.Array:
    values = data.draw(st.lists(st.sampled_from([None, *_POOLS[kind]]), min_size=n, max_size=n))
    if kind == "date":
        return pa.array(values, pa.int32()).cast(pa.date32())
    return pa.array(values, type=_TYPES[kind])


def _by(m: Any) -> dict[str, Any]:
    x = m.col("x")
    return {"hi": x.max_by("b"), "lo": x.min_by("b"), "hi2": m.col("b").max_by(x * 1)}


def _entropy(m: Any) -> dict[str, Any]:
    p = m.col("p")
    return {"e": p.entropy(), "e2": p.entropy(base=2), "raw": p.entropy(normalize=False)}


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n=st.integers(0, 20), kind=st.sampled_from(sorted(_TYPES)),
       by_kind=st.sampled_from(["i16", "f64", "str", "date"]))  # fmt: skip
def test_max_by_min_by_equal_polars(data: Any, n: int, kind: str, by_kind: str) -> None:
    if kind in ("str", "bool", "date"):  # `x * 1` in `hi2` is numeric
        kind = "f64"
    keys = data.draw(st.lists(st.sampled_from(["u", "v", "w"]), min_size=n, max_size=n))
    table = pa.table({"x": _column(kind, n, data), "b": _column(by_kind, n, data),
                      "g": pa.array(keys, pa.string())})  # fmt: skip
    if by_kind != "str":  # `test_max_by_a_string_takes_the_first_largest_row`
        assert_same_as_polars(table, lambda m, q: q.select(**_by(m)))
    assert_same_as_polars(table, lambda m, q: q.group_by("g", maintain_order=True).agg(
        **_by(m)))  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.with_columns(
        **{k: v.over("g") for k, v in _by(m).items()}))  # fmt: skip


def test_max_by_a_string_takes_the_first_largest_row() -> None:
    # polars 2.1 takes the first row of the largest `by` for numbers, and in `group_by`
    # and `over` for strings too, but the last one for a string `by` over a whole
    # column; colbridge takes the first everywhere
    df = pl.DataFrame({"x": [9, 1, 2, 0, 4], "b": ["", "zz", None, "a", "zz"],
                       "g": [1] * 5})  # fmt: skip
    e = pl.col("x").max_by("b")
    assert df.select(e).item() == 4  # polars: the last "zz"
    assert df.group_by("g").agg(e)["x"].item() == 1  # polars: the first "zz"
    assert df.select(e.over("g"))["x"].to_list() == [1] * 5
    c = cb.col("x").max_by("b")
    assert df.gpu.select(c).compute().item() == 1
    assert df.gpu.group_by("g").agg(c).compute()["x"].item() == 1
    assert df.gpu.select(c.over("g")).compute()["x"].to_list() == [1] * 5


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n=st.integers(0, 20), kind=st.sampled_from(_NUMBERS),
       positive=st.booleans())  # fmt: skip
def test_entropy_equal_polars(data: Any, n: int, kind: str, positive: bool) -> None:
    column = _column(kind, n, data)
    if positive:  # the usual input, probabilities or counts: finite results
        pool = [None, 1, 2, 3, 10] if kind[0] != "f" else [None, 0.5, 0.25, 2.0, 0.125]
        column = pa.array(data.draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)),
                          _TYPES[kind])  # fmt: skip
    keys = data.draw(st.lists(st.sampled_from(["u", "v"]), min_size=n, max_size=n))
    table = pa.table({"p": column, "g": pa.array(keys, pa.string())})
    # polars sums the products pairwise (Float32 in Float32), colbridge in one pass in
    # float64: the last bits may differ (docs/semantics.md, "Floating-point sums")
    tolerance = 1e-5 if kind == "f32" else 1e-12
    assert_same_as_polars(table, lambda m, q: q.select(**_entropy(m)), rtol=tolerance)
    assert_same_as_polars(table, lambda m, q: q.group_by("g", maintain_order=True).agg(
        **_entropy(m)), rtol=tolerance)  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.with_columns(
        **{k: v.over("g") for k, v in _entropy(m).items()}), rtol=tolerance)  # fmt: skip


def test_entropy_edges() -> None:
    for values, dtype in (([1.0, 2.0, 0.0, None, 3.0], pl.Float64), ([], pl.Float64),
                          ([None], pl.Float64), ([None, None], pl.Float64), ([5.0], pl.Float64),
                          ([1, 2, 3], pl.Int64), ([1, 2, 3], pl.Float32),
                          ([0.5, 0.5], pl.Float64), ([0.0, 0.0], pl.Float64),
                          ([0.0, None, 2.0], pl.Float64), ([1.5], pl.Float64)):  # fmt: skip
        df = pl.DataFrame({"p": values}, schema={"p": dtype})
        got = df.gpu.select(**_entropy(cb)).compute()
        # the sign of a zero included (one row: -0.0); a sum of several terms to its
        # last bits only, as the kernels add them in their own order
        assert_frame_equal(got, df.select(**_entropy(pl)), check_exact=False, rel_tol=1e-15,
                           abs_tol=0.0)
        assert [math.copysign(1, v) for v in got.row(0) if v == 0] == \
            [math.copysign(1, v) for v in df.select(**_entropy(pl)).row(0) if v == 0]


def test_other_types_are_refused() -> None:
    table = pa.table({"s": ["a", "b"], "d": pa.array([1, 2], pa.int32()).cast(pa.date32()),
                      "f": [True, False]})  # fmt: skip
    for name in ("s", "d", "f"):
        with pytest.raises(InvalidOperationError, match=r"entropy takes numbers.*cast"):
            cb.lazy(table).select(cb.col(name).entropy()).compute()
    with pytest.raises(SchemaError, match=r"the base is a number"):
        cb.col("p").entropy(base="2")  # type: ignore[arg-type]


def test_the_string_language() -> None:
    table = pa.table({"a": [0.5, 0.25, 0.25], "b": [3, 9, 9], "s": ["x", "y", "z"]})
    got = cb.lazy(table).eval(
        "m = max_by(s, b)\nn = s.min_by(b)\ne = entropy(a, base=2)\nf = a.entropy(normalize=False)"
    ).compute().slice(0, 1).to_pylist()[0]
    assert (got["m"], got["n"], got["e"]) == ("y", "x", 1.5)
    assert got["f"] == pytest.approx(-(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25)))


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    from colbridge.testing.cuda_host import compute_on_host

    rng = np.random.default_rng(5)
    n = 300
    table = pa.table({"x": pa.array(rng.normal(size=n), mask=rng.random(n) < 0.1),
                      "b": rng.integers(0, 50, n), "p": rng.random(n),
                      "g": rng.integers(0, 4, n)})  # fmt: skip
    stats = {"hi": cb.col("x").max_by("b"), "lo": cb.col("x").min_by("b"),
             "e": cb.col("p").entropy()}  # fmt: skip
    for q in (cb.lazy(table).select(**stats),
              cb.lazy(table).group_by("g", maintain_order=True).agg(**stats)):  # fmt: skip
        # the device sums in another order than the CPU (docs/cuda.md)
        assert_frame_equal(pl.from_arrow(compute_on_host(q)),
                           pl.from_arrow(q.compute(device="cpu")), rel_tol=1e-12)  # fmt: skip
