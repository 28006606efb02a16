"""``is_close`` against polars: every numeric type, nulls, NaN, infinities, tolerances.

polars converts both sides to Float64 (Float32 too) and mirrors ``math.isclose``;
colbridge lowers it to elementwise nodes at typing, so the CPU kernels, the NumPy
tier and the CUDA text all compute it; polars, run at test time, is the oracle.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import InvalidOperationError
from colbridge.testing.asserts import assert_same_as_polars

#: values where closeness turns: equal, one ulp apart, signed zeros, extremes, NaN, inf
_FLOATS = [0.0, -0.0, 1.0, 1.0 + 2**-52, 1.0 + 1e-9, 1.0 - 1e-10, -1.0, 1e-300, 5e-324,
           1e308, -1e308, math.inf, -math.inf, math.nan, 2.5, 2.6, 3.0, 1e9, 1e9 + 1.0]
_INTS = [0, 1, -1, 2, 3, 1000, 1001, 2**62, 2**62 + 1, -(2**62)]
_TOLERANCES = [0.0, 1e-9, 1e-3, 0.05, 0.5, 2.0, math.inf]
_TYPES = {"f64": pa.float64(), "f32": pa.float32(), "i64": pa.int64(), "i32": pa.int32(),
          "i8": pa.int8(), "u64": pa.uint64()}  # fmt: skip


def _values(kind: str, n: int, data: Any) -> pa.Array:
    pool: list[Any]
    if kind.startswith("f"):
        pool = _FLOATS
    elif kind == "i8":
        pool = [0, 1, -1, 2, 3, 100, 101, -128, 127]
    elif kind == "u64":
        pool = [0, 1, 2, 3, 1000, 2**63, 2**64 - 1, 2**64 - 2]
    else:
        pool = _INTS if kind == "i64" else [0, 1, -1, 2, 3, 1000, 1001, 2**31 - 1, -(2**31)]
    picked = data.draw(st.lists(st.sampled_from([None, *pool]), min_size=n, max_size=n))
    return pa.array(picked, type=_TYPES[kind])


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    n=st.integers(0, 40),
    kinds=st.tuples(st.sampled_from(sorted(_TYPES)), st.sampled_from(sorted(_TYPES))),
    abs_tol=st.sampled_from(_TOLERANCES),
    rel_tol=st.sampled_from(_TOLERANCES),
    nans_equal=st.booleans(),
)
def test_columns_equal_polars(data: Any, n: int, kinds: tuple[str, str], abs_tol: float,
                              rel_tol: float, nans_equal: bool) -> None:  # fmt: skip
    table = pa.table({"x": _values(kinds[0], n, data), "y": _values(kinds[1], n, data)})
    options = {"abs_tol": abs_tol, "rel_tol": rel_tol, "nans_equal": nans_equal}
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("x").is_close(m.col("y"), **options),
        b=m.col("y").is_close("x", **options),
        c=m.col("x").is_close(2.5, **options),
        d=m.col("x").is_close(m.col("x") + 1, **options)))  # fmt: skip


def test_the_cases_math_isclose_names() -> None:
    x = [1.0, math.inf, math.inf, -math.inf, math.nan, math.nan, 1.0, None, 0.0, 1e308, 0.0,
         None, math.inf]
    y = [1.0 + 1e-10, math.inf, -math.inf, -math.inf, math.nan, 1.0, math.nan, 1.0, 1e-300,
         math.inf, 0.0, math.nan, None]
    table = pa.table({"x": pa.array(x, pa.float64()), "y": pa.array(y, pa.float64())})
    for options in ({}, {"nans_equal": True}, {"abs_tol": math.inf}, {"rel_tol": math.inf}):
        assert_same_as_polars(table, lambda m, q, o=options: q.select(
            c=m.col("x").is_close("y", **o)))  # fmt: skip
    got = cb.lazy(table).select(c=cb.col("x").is_close("y")).compute()["c"].to_pylist()
    # within 1e-9 is close, opposite infinities and NaN are not, a null side is null
    # (also beside a NaN or an infinity, where Kleene logic would answer false)
    assert got == [True, True, False, True, False, False, False, None, False, False, True,
                   None, None]


def test_float32_is_compared_as_float64() -> None:
    # 1.0000001 is a float32 apart from 1.0 by 1.19e-7: not within 1e-9 of it in Float64
    table = pa.table({"x": pa.array([1.0, 16777216.0], pa.float32()),
                      "y": pa.array([1.0000001, 16777217.0], pa.float32())})  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("x").is_close("y"), b=m.col("x").is_close(1.0000001),
        c=m.col("x").is_close("y", rel_tol=1e-7)))  # fmt: skip


def test_the_string_language() -> None:
    table = pa.table({"a": [1.0, 2.0, None, math.nan], "b": [1.05, 2.5, 1.0, math.nan]})
    got = cb.lazy(table).eval(
        "c = a.is_close(b, abs_tol=0.1)\n"
        "d = is_close(a, 2, rel_tol=0.5)\n"
        "e = is_close(a, b, nans_equal=True)"
    ).compute()
    assert got.column("c").to_pylist() == [True, False, None, False]
    assert got.column("d").to_pylist() == [True, True, None, False]
    assert got.column("e").to_pylist() == [False, False, None, True]


@pytest.mark.parametrize("column", ["s", "flag", "day"])
def test_other_types_are_refused_by_name(column: str) -> None:
    import datetime as dt

    table = pa.table({"s": ["a"], "flag": [True], "day": [dt.date(2024, 1, 1)], "x": [1.0]})
    with pytest.raises(InvalidOperationError, match=rf'is_close.*col\("{column}"\)'):
        cb.lazy(table).select(cb.col(column).is_close("x")).compute()
    with pytest.raises(InvalidOperationError, match=rf'is_close.*col\("{column}"\)'):
        cb.lazy(table).select(cb.col("x").is_close(column)).compute()


@pytest.mark.parametrize("bad", [{"abs_tol": -1.0}, {"rel_tol": -1e-9},
                                 {"rel_tol": math.nan}, {"abs_tol": "0.1"}])  # fmt: skip
def test_bad_tolerances_are_refused_when_written(bad: dict[str, Any]) -> None:
    name = next(iter(bad))
    with pytest.raises(InvalidOperationError, match=f"`{name}` must be a non-negative number"):
        cb.col("x").is_close("y", **bad)


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    from colbridge.testing.cuda_host import compute_on_host

    rng = np.random.default_rng(5)
    x = rng.choice(np.array(_FLOATS), 300)
    y = np.where(rng.random(300) < 0.5, x * (1 + rng.choice([0.0, 1e-10, 1e-6], 300)),
                 rng.choice(np.array(_FLOATS), 300))  # fmt: skip
    table = pa.table({"x": pa.array(x, mask=rng.random(300) < 0.1), "y": y,
                      "i": rng.integers(-5, 5, 300)})  # fmt: skip
    q = cb.lazy(table).select(a=cb.col("x").is_close("y"),
                              b=cb.col("x").is_close("y", abs_tol=1e-3, nans_equal=True),
                              c=cb.col("i").is_close("x", rel_tol=0.5))  # fmt: skip
    assert compute_on_host(q).equals(q.compute(device="cpu"))
