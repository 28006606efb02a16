"""``truncdiv``, ``peak_max`` and ``peak_min`` against polars.

``a.truncdiv(b)`` rounds the quotient toward zero in the type ``//`` gives (an
integer by 0 is null, ``MIN`` by -1 wraps; a float by one value is ``a * (1 / b)``
truncated, as polars). ``peak_max``/``peak_min`` compare each value with both
neighbours, 0 of the type standing in past the edges, with Kleene ``&``. Generated
columns of every integer and float type with nulls, edges, offsets and chunks; whole
columns and ``over``; both CPU tiers and the CUDA code path on the host.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import InvalidOperationError, SchemaError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.ordered.ordered_data import cut_table

INTS = {"i8": pa.int8(), "u8": pa.uint8(), "i16": pa.int16(), "i32": pa.int32(),
        "i64": pa.int64(), "u32": pa.uint32(), "u64": pa.uint64()}  # fmt: skip
FLOATS = {"f32": pa.float32(), "f64": pa.float64()}


def _values(rng: np.random.Generator, t: pa.DataType, n: int, *, divisor: bool) -> Any:
    if pa.types.is_floating(t):
        edges = np.array([0.0, -0.0, 0.3, -0.3, 0.1, 1.0, -1.0, 2.5, np.nan, np.inf, -np.inf,
                          3e38, -7.0])  # fmt: skip
        uniform = rng.normal(0, 10, n)
        return np.where(rng.random(n) < 0.4, rng.choice(edges, n), uniform).astype(
            t.to_pandas_dtype())
    info = np.iinfo(t.to_pandas_dtype())
    pool = [0, 1, 2, 3, 7, info.max] + ([-1, -2, -3, -7, info.min] if info.min < 0 else [])
    if divisor:  # small divisors most of the time: remainders of both signs
        uniform = rng.integers(max(info.min, -9), 10, n).astype(info.dtype)
    else:
        uniform = rng.integers(info.min, info.max, n, endpoint=True, dtype=info.dtype)
    return np.where(rng.random(n) < 0.3, rng.choice(np.array(pool, dtype=info.dtype), n),
                    uniform)  # fmt: skip


def _table(kind: str, n: int, seed: int, *, nulls: float, offset: int, chunks: int) -> pa.Table:
    t = {**INTS, **FLOATS}[kind]
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    table = pa.table({
        "a": pa.array(_values(rng, t, total, divisor=False), type=t, mask=mask()),
        "b": pa.array(_values(rng, t, total, divisor=True), type=t, mask=mask()),
        "g": pa.array(rng.integers(0, 3, total)),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


def _divisions(m: Any, kind: str) -> dict[str, Any]:
    a, b = m.col("a"), m.col("b")
    out = {
        "col": a.truncdiv(b), "by3": a.truncdiv(3), "by0": a.truncdiv(0),
        "by_float": a.truncdiv(0.1), "reflected": m.lit(-7).truncdiv(b),
        "mixed": a.truncdiv(2) + m.lit(7).truncdiv(-2), "floor_too": a // b - a.truncdiv(b),
    }
    if kind[0] != "u":
        out["by_minus_one"] = a.truncdiv(-1)
    return out


_CASES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_CASES
@given(kind=st.sampled_from(sorted({**INTS, **FLOATS})), n=st.sampled_from([0, 1, 7, 60, 300]),
       seed=st.integers(0, 2**31 - 1), nulls=st.sampled_from([0.0, 0.2]),
       offset=st.sampled_from([0, 3]), chunks=st.sampled_from([1, 2]))  # fmt: skip
def test_truncdiv_equals_polars(kind: str, n: int, seed: int, nulls: float, offset: int,
                                chunks: int) -> None:  # fmt: skip
    table = _table(kind, n, seed, nulls=nulls, offset=offset, chunks=chunks)

    def steps(m: Any, q: Any) -> Any:
        exprs = _divisions(m, kind)
        if n <= 3:
            # polars divides frames of up to three rows by one float value truly, not by
            # its reciprocal (docs/semantics.md): a quotient near a whole number may then
            # truncate to the next one (0.3 by 0.1: 2.0 there, 3.0 in larger frames)
            exprs.pop("by_float")
            if kind[0] == "f":
                exprs.pop("by3")
        return q.select(**exprs)

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_truncdiv_on_every_tier_and_the_cuda_code_path(tier: str) -> None:
    for kind in ("i8", "i64", "u64", "f32", "f64"):
        table = _table(kind, 400, 2, nulls=0.1, offset=0, chunks=1)
        assert_same_as_polars(table, lambda m, q: q.select(**_divisions(m, kind)))  # noqa: B023
        got = compute_on_host(cb.lazy(table).select(**_divisions(cb, kind)))
        assert_frame_equal(pl.from_arrow(got),
                           pl.from_arrow(table).select(**_divisions(pl, kind)))  # fmt: skip


def test_truncdiv_polars_example_and_refusals() -> None:
    df = pl.DataFrame({"x": [-5, -4, 4, 5]})
    assert df.gpu.select(cb.col("x").truncdiv(2)).compute()["x"].to_list() == [-2, -2, 2, 2]
    # a quotient below zero keeps the sign of zero, as polars
    f = pl.DataFrame({"a": [-1.0, 1.0]}, schema={"a": pl.Float32})
    got = f.gpu.select(cb.col("a").truncdiv(3)).compute()
    assert_frame_equal(got, f.select(pl.col("a").truncdiv(3)))
    assert [math.copysign(1, v) for v in got["a"]] == [-1.0, 1.0]
    flags = pl.DataFrame({"a": [True, False]})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        flags.select(pl.col("a").truncdiv(pl.col("a")))
    with pytest.raises(SchemaError, match=r"truncdiv.*two booleans"):
        flags.gpu.select(cb.col("a").truncdiv(cb.col("a"))).compute()
    got = cb.lazy(pa.table({"a": [7, -7], "b": [2, 2]})).eval(
        "t = truncdiv(a, b)\nu = a.truncdiv(-2)").compute()
    assert got.column("t").to_pylist() == [3, -3]
    assert got.column("u").to_pylist() == [-3, 3]


_POOLS: dict[str, tuple[pa.DataType, list[Any]]] = {
    "i16": (pa.int16(), [0, 1, -1, 3, 3, -32768, 32767]),
    "u8": (pa.uint8(), [0, 1, 2, 2, 255]),
    "f64": (pa.float64(), [0.0, -0.0, 1.5, -2.0, 1.5, math.nan, math.inf, -math.inf]),
    "f32": (pa.float32(), [0.0, 0.5, -0.5, math.nan]),
    "bool": (pa.bool_(), [True, False]),
    "date": (pa.date32(), [dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(2020, 5, 1)]),
    "duration": (pa.duration("us"), [dt.timedelta(0), dt.timedelta(1), dt.timedelta(-2)]),
}


def _peaks(m: Any) -> dict[str, Any]:
    x = m.col("x")
    return {"mx": x.peak_max(), "mn": x.peak_min(), "gmx": x.peak_max().over("g"),
            "gmn": x.peak_min().over("g")}  # fmt: skip


@_CASES
@given(data=st.data(), kind=st.sampled_from(sorted(_POOLS)), n=st.integers(0, 25))
def test_peaks_equal_polars(data: Any, kind: str, n: int) -> None:
    t, pool = _POOLS[kind]
    values = data.draw(st.lists(st.sampled_from([None, *pool]), min_size=n, max_size=n))
    keys = data.draw(st.lists(st.sampled_from(["u", "v"]), min_size=n, max_size=n))
    table = pa.table({"x": pa.array(values, type=t), "g": pa.array(keys, pa.string())})
    assert_same_as_polars(table, lambda m, q: q.select(**_peaks(m)))


def test_peaks_on_every_tier_and_the_cuda_code_path(tier: str) -> None:
    rng = np.random.default_rng(4)
    x = rng.integers(-3, 4, 500).astype(np.float64)
    x[rng.random(500) < 0.05] = np.nan
    table = pa.table({"x": pa.array(x, mask=rng.random(500) < 0.1),
                      "g": pa.array(rng.integers(0, 4, 500))})  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.select(**_peaks(m)))
    got = compute_on_host(cb.lazy(table).select(mx=cb.col("x").peak_max(),
                                                mn=cb.col("x").peak_min()))  # fmt: skip
    want = pl.from_arrow(table).select(mx=pl.col("x").peak_max(),  # type: ignore[union-attr]
                                       mn=pl.col("x").peak_min())  # fmt: skip
    assert_frame_equal(pl.from_arrow(got), want)


def test_peaks_edges_and_refusals() -> None:
    # the rows past the edges count as 0: the last of a rise is a peak, a negative first
    # row is a low one
    df = pl.DataFrame({"a": [-5, -4, -3]})
    got = df.gpu.select(mx=cb.col("a").peak_max(), mn=cb.col("a").peak_min()).compute()
    assert got["mx"].to_list() == [False, False, False]
    assert got["mn"].to_list() == [True, False, False]
    assert pl.DataFrame({"a": [3]}).gpu.select(cb.col("a").peak_max()).compute().item() is True
    with pytest.raises(InvalidOperationError, match=r"`peak_max` takes numbers.*string"):
        pl.DataFrame({"s": ["a"]}).gpu.select(cb.col("s").peak_max()).compute()
    got = cb.lazy(pa.table({"a": [1, 3, 1]})).eval("p = peak_max(a)\nq = a.peak_min()").compute()
    assert got.column("p").to_pylist() == [False, True, False]
    assert got.column("q").to_pylist() == [False, False, False]
