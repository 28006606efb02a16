"""``x_log_y`` against polars: ``x * log(y, base)``, 0 where ``x`` is 0 unless ``y`` is NaN.

Generated pairs of every numeric type and booleans with nulls, NaN, zeros and
infinities, offsets and chunks; Python numbers on either side; every kernel tier;
the string language; refusals.
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

import colbridge as cb
from colbridge.errors import InvalidOperationError, SchemaError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from tests.ordered.ordered_data import cut_table

TYPES = {"f64": pa.float64(), "f32": pa.float32(), "i8": pa.int8(), "i64": pa.int64(),
         "u8": pa.uint8(), "u32": pa.uint32(), "b": pa.bool_()}  # fmt: skip
SPECIAL = [0.0, -0.0, 1.0, math.nan, math.inf, -math.inf, -1.0]


def _column(kind: str, n: int, rng: np.random.Generator, nulls: float) -> pa.Array:
    mask = rng.random(n) < nulls
    if kind == "b":
        return pa.array(rng.random(n) < 0.5, mask=mask)
    if kind.startswith("f"):
        values = np.where(rng.random(n) < 0.4, rng.choice(SPECIAL, n),
                          rng.normal(0, 1, n) * 10.0 ** rng.integers(-3, 4, n))
        return pa.array(values.astype(TYPES[kind].to_pandas_dtype()), mask=mask)
    info = np.iinfo(TYPES[kind].to_pandas_dtype())
    values = np.where(rng.random(n) < 0.3, 0, rng.integers(info.min, info.max, n,
                                                           dtype=info.dtype, endpoint=True))
    return pa.array(values.astype(info.dtype), mask=mask)


def _table(kinds: tuple[str, str], n: int, seed: int, *, nulls: float, offset: int,
           chunks: int) -> pa.Table:  # fmt: skip
    rng = np.random.default_rng(seed)
    total = n + offset
    table = pa.table({"x": _column(kinds[0], total, rng, nulls),
                      "y": _column(kinds[1], total, rng, nulls),
                      "g": rng.integers(0, 3, total)})  # fmt: skip
    return cut_table(table, offset, n, chunks)


def _steps(m: Any) -> dict[str, Any]:
    x = m.col("x")
    return {"e": x.x_log_y("y"), "two": x.x_log_y(m.col("y"), base=2),
            "lit_y": x.x_log_y(3), "lit_x": m.lit(2).x_log_y("y", base=10),
            "over": x.x_log_y("y").sum().over("g")}  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(kinds=st.tuples(st.sampled_from(list(TYPES)), st.sampled_from(list(TYPES))),
       n=st.integers(0, 40), seed=st.integers(0, 2**31 - 1), nulls=st.sampled_from([0, 0.2]),
       offset=st.integers(0, 3), chunks=st.integers(1, 3))  # fmt: skip
def test_equal_polars(kinds: tuple[str, str], n: int, seed: int, nulls: float, offset: int,
                      chunks: int) -> None:  # fmt: skip
    table = _table(kinds, n, seed, nulls=nulls, offset=offset, chunks=chunks)
    # the sum over each group adds in another order than polars: its last bits
    assert_same_as_polars(table, lambda m, q: q.select(**_steps(m)),
                          tolerance={"over": cb.testing.asserts.Tolerance(rtol=1e-12)})


def test_zero_times_the_log_of_anything_but_nan_is_zero() -> None:
    nan, inf = math.nan, math.inf
    df = pl.DataFrame({"x": [0.0, 0.0, 0.0, -0.0, 1.0, nan, None, 0.0, 2.0],
                       "y": [0.0, nan, -1.0, inf, 0.0, 1.0, 2.0, None, None]})  # fmt: skip
    got = df.gpu.select(x=cb.col("x").x_log_y("y")).compute()["x"].to_list()
    want = df.select(x=pl.col("x").x_log_y("y"))["x"].to_list()
    # (as text: NaN is not equal to itself)
    assert str(got) == str(want) == str([0.0, nan, 0.0, 0.0, -inf, nan, None, None, None])


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    table = _table(("f32", "i8"), 300, 3, nulls=0.1, offset=1, chunks=2)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    steps = {k: v for k, v in _steps(cb).items() if k != "over"}
    got = compute_on_tier(cb.lazy(frame).select(**steps), tier)
    want = frame.select(**{k: v for k, v in _steps(pl).items() if k != "over"})
    assert got.equals(want)


def test_the_string_language_and_refusals() -> None:
    df = pl.DataFrame({"x": [0, 1, 2, 3], "y": [0, 2, 4, 8], "s": ["a", "b", "c", "d"]})
    got = cb.lazy(df).eval("z = x.x_log_y(y, base=2)\nw = x_log_y(x, y)").compute()
    assert got.select("z", "w").equals(df.select(z=pl.col("x").x_log_y("y", base=2),
                                                 w=pl.col("x").x_log_y("y")))  # fmt: skip
    with pytest.raises(InvalidOperationError, match=r'`x_log_y` of `col\("s"\)`, which is '
                       r"string: .*cast it to a number first"):  # fmt: skip
        df.gpu.select(cb.col("s").x_log_y("y")).compute()
    with pytest.raises(SchemaError, match=r"the base is a number"):
        cb.col("x").x_log_y("y", base="2")  # type: ignore[arg-type]
