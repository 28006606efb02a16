"""A column divided by one value is polars' multiplication by the reciprocal, to the bit.

(``//`` and ``%`` by one value too: ``floor(x * (1 / c))``, ``x - c * floor(x * (1 / c))``.)

polars computes ``x / c`` for a single value ``c`` (a literal, a whole-column
reduction, ``first()``) as ``x * (1 / c)`` in the result's float type, whose last
bit differs from ``x / c`` on about half the rows; a column divided by a column
(a window's per-group value included) is a true division. These pin both,
compared exactly: float64, float32 and integer columns, nulls, NaN, infinities,
zeros and subnormals as divisors, both CPU tiers and the CUDA code path. (polars'
lazy engine divides frames of up to three rows truly, its eager one a frame of one
row: there the last bit may differ.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n) * 100
    x[rng.random(n) < 0.05] = np.nan
    x[rng.random(n) < 0.05] = np.inf
    return pa.table({
        "x": pa.array(x, mask=rng.random(n) < 0.1),
        "f": pa.array(rng.normal(size=n).astype(np.float32), mask=rng.random(n) < 0.1),
        "i": pa.array(rng.integers(-1000, 1000, n), mask=rng.random(n) < 0.1),
        # whole numbers: their sum is exact in any order, so the divisor is polars' own
        "y": pa.array(rng.integers(-50, 60, n).astype(np.float64)),
        "g": pa.array(rng.integers(0, 5, n)),
    })  # fmt: skip


DIVISORS = [7.3, 3, 0.1, -2.5, 0.0, -0.0, float("inf"), float("nan"), 5e-324, 1e-310, 1e300]


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.sampled_from([0, 1, 2, 9, 500]),
       c=st.sampled_from(DIVISORS))  # fmt: skip
def test_a_column_by_one_value(tier: str, seed: int, n: int, c: float) -> None:
    table = _table(n, seed)

    def steps(m: Any, q: Any) -> Any:
        x, f, i, y = m.col("x"), m.col("f"), m.col("i"), m.col("y")
        divided = {"lit": x / c, "f_lit": f / c, "i_lit": i / c, "i_int": i / 7,
                   "sum_": x / y.sum(), "centred": (x - y.mean()) / y.max(),
                   "share": i / i.sum(), "first": x / y.first(),
                   "nested": (x + 1) / (y.max() * 2), "f_red": f / f.max(),
                   "count": i / i.count()}  # fmt: skip
        if n > 3:  # (polars' true division of tiny frames moves these by a whole unit)
            # `//` and `%` by one value: floor(x * (1 / c)) and x - c * floor(x * (1 / c))
            divided.update(fdiv=x // c, f_fdiv=f // c, i_fdiv=i // (c + 0.5), mod=x % c,
                           f_mod=f % c, i_mod=i % (c + 0.5), mod_red=x % y.max(),
                           f_mod_red=f % f.min())  # fmt: skip
        return q.select(**divided)

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLBRIDGE_CPU_TIER", tier)
        # polars' lazy engine divides frames of up to three rows truly: a last bit apart
        assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"), ulps=1 if n <= 3 else 0)


def test_a_tenth_as_polars_takes_it() -> None:
    # 0.3 / 0.1 is 2.9999999999999996, 0.3 * (1 / 0.1) is 3.0000000000000004: polars'
    # 0.3 // 0.1 is 3.0 and 0.3 % 0.1 is -5.55e-17 (by a column: 2.0 and 0.09999999999999998)
    table = pa.table({"x": [0.3, 0.7, -0.3, 1e10], "c": [0.1] * 4})
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("x") // 0.1, b=m.col("x") % 0.1, c=m.col("x") // m.col("c"),
        d=m.col("x") % m.col("c"), e=m.col("x") % m.lit(0.1, dtype=pl.Float32)),
        kinds=("polars",))  # fmt: skip
    got = cb.lazy(table).select(a=cb.col("x") // 0.1, b=cb.col("x") % 0.1).compute()
    assert got.column("a").to_pylist()[0] == 3.0
    assert got.column("b").to_pylist()[0] < 0


def test_a_column_by_a_column_is_a_true_division() -> None:
    table = _table(2_000, 4)

    def steps(m: Any, q: Any) -> Any:
        x, y, i = m.col("x"), m.col("y"), m.col("i")
        return q.select(cols=x / y, window=x / y.sum().over("g"), ints=i / m.col("g"),
                        scalar_by_column=3.3 / y, one_by_one=y.sum() / y.count())  # fmt: skip

    assert_same_as_polars(table, steps)
    got = pl.from_arrow(cb.lazy(table).select(c=cb.col("x") / cb.col("y")).compute())
    x, y = table.column("x").to_numpy(zero_copy_only=False), table.column("y").to_numpy()
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got["c"].to_numpy(), x / y)


def test_the_cuda_code_path_divides_the_same_way() -> None:
    table = _table(3_000, 9)
    q = cb.lazy(table).select(a=cb.col("x") / 7.3, z=(cb.col("y") - cb.col("y").mean())
                              / cb.col("y").std(), f=cb.col("f") / cb.col("f").sum(),
                              m=cb.col("x") % 0.1, d=cb.col("f") // 0.3)  # fmt: skip
    want = pl.from_arrow(table).select(a=pl.col("x") / 7.3, z=(pl.col("y") - pl.col("y").mean())
                                       / pl.col("y").std(), f=pl.col("f") / pl.col("f").sum(),
                                       m=pl.col("x") % 0.1, d=pl.col("f") // 0.3)  # fmt: skip
    on_host = pl.from_arrow(compute_on_host(q))
    assert on_host["a"].equals(want["a"])
    assert on_host["m"].equals(want["m"])
    assert on_host["d"].equals(want["d"])
    # the mean, deviation and sum are summed in another order than polars: the
    # reciprocal is of another value, so only the division's own rounding is compared
    y = table.column("y").to_numpy()
    mean, std = float(np.mean(y)), float(np.std(y, ddof=1))
    np.testing.assert_allclose(on_host["z"].to_numpy(), (y - mean) * (1 / std), rtol=1e-12)
    assert on_host["f"].dtype == pl.Float32


def test_zeros_of_both_signs_are_kept_apart() -> None:
    # 0.0 == -0.0 in Python; a plan (or kernel) cached for one must not answer for the
    # other: x / 0.0 and x / -0.0 are infinities of opposite signs
    table = pa.table({"x": [-0.5, 2.0], "f": pa.array([-0.5, 2.0], pa.float32())})
    q = cb.lazy(table)
    for zero in (0.0, -0.0, 0.0, np.float32(-0.0)):
        assert_same_as_polars(table, lambda m, q, z=zero: q.select(
            a=m.col("x") / z, b=m.col("f") / z, c=1 / m.col("x").shift(1, fill_value=z),
            d=m.when(m.col("x") > 0).then(z).otherwise(1.0).pow(-1)), kinds=("pyarrow",))
        got = q.select(a=cb.col("x") / zero).compute().column("a").to_pylist()
        assert got == ([np.inf, -np.inf] if np.signbit(zero) else [-np.inf, np.inf])
