"""``min`` and ``max`` of floats: NaN never competes, and is the answer only when all are.

Values drawn from NaN of both signs, the infinities, signed zeros, ordinary numbers and
nulls, in runs long enough to cross the kernels' lanes, words and blocks: whole-column,
per group and over groups, on every frame kind, against polars.
"""

from __future__ import annotations

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
from colbridge.testing.asserts import assert_same_as_polars

SPECIAL = [math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 1.5, -2.25, None]


def _steps(m: Any, q: Any) -> Any:
    x = m.col("x")
    return q.select(lo=x.min(), hi=x.max(), lo32=x.cast(m.Float32 if hasattr(m, "Float32")
                    else "float32").min())  # fmt: skip


def _grouped(m: Any, q: Any) -> Any:
    x = m.col("x")
    return q.group_by("g", maintain_order=True).agg(lo=x.min(), hi=x.max())


def _over(m: Any, q: Any) -> Any:
    x = m.col("x")
    return q.with_columns(lo=x.min().over("g"), hi=x.max().over("g"))


def _table(values: list[float | None], seed: int) -> pa.Table:
    groups = np.random.default_rng(seed).integers(0, 3, len(values))
    return pa.table({"x": pa.array(values, pa.float64()), "g": pa.array(groups, pa.int32())})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.sampled_from(SPECIAL), max_size=150), seed=st.integers(0, 99))
def test_generated_runs_of_special_values(values: list[float | None], seed: int) -> None:
    table = _table(values, seed)
    for steps in (_steps, _grouped, _over):
        assert_same_as_polars(table, steps, kinds=("pyarrow",))


@pytest.mark.parametrize("fill", [math.nan, -math.nan, None])
@pytest.mark.parametrize("number_at", [None, 0, 63, 64, 16383, 16384, 40_000])
def test_a_number_among_many_nans_or_nulls(fill: float | None, number_at: int | None) -> None:
    # every value NaN (or null) but one, placed on lane, word and block edges
    values: list[float | None] = [fill] * 40_001
    if number_at is not None:
        values[number_at] = -7.5
    assert_same_as_polars(_table(values, number_at or 0), _steps)
    assert_same_as_polars(_table(values, 1), _grouped, kinds=("pyarrow",))


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
@pytest.mark.parametrize("dtype", [pl.Float32, pl.Float64])
def test_powers_and_logs_round_as_polars(tier: str, dtype: pl.DataType,
                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """polars' formulas, bit for bit; libm's functions within their documented ULPs.

    ``x ** k`` for a scalar whole ``k`` in [2, 10) is polars' repeated product (Float32:
    each product rounded, not pow's one rounding), ``x ** 1`` is x; every logarithm
    is ``ln(x) / ln(base)`` with the base in x's type (``log10()`` too, and a Float32
    ``log()`` divides by the logarithm of e rounded to Float32). A column of
    exponents, a fraction or a larger power is libm's pow. Exact in the compiled
    kernels; the NumPy tier's logarithms and powers are NumPy's, within 4 ULPs
    (docs/reliability.md).
    """
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    rng = np.random.default_rng(5)
    x = rng.uniform(0.5, 20.0, 3_000)
    x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, -3.5]
    df = pl.DataFrame({"x": x, "k": rng.integers(-3, 12, 3_000).astype(np.int8)}).with_columns(
        pl.col("x").cast(dtype))  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x")
        return q.select(p1=x.pow(1), p3=x.pow(3), p5=x**5.0, p9=x.pow(9), half=x.pow(0.5),
                        ln=x.log(), lg10=x.log10(), lg2=x.log(2), lgf=x.log(10.0),
                        p10=x.pow(10), frac=x.pow(2.5), neg=x.pow(-2), col=x.pow(m.col("k")),
                        e=x.exp())  # fmt: skip

    got, want = steps(cb, df.gpu).compute(), steps(pl, df)
    assert got.schema == want.schema
    libm = ("ln", "lg10", "lg2", "lgf", "p10", "frac", "neg", "col", "e")
    exact = [c for c in want.columns if tier == "compiled" or c not in libm]
    assert_frame_equal(got.select(exact), want.select(exact), check_exact=True)
    bits = np.int32 if dtype == pl.Float32 else np.int64
    for c in set(want.columns) - set(exact):
        a, b = got[c].to_numpy(), want[c].to_numpy()
        assert np.array_equal(np.isnan(a), np.isnan(b))
        ok = ~np.isnan(a)
        apart = a[ok].view(bits).astype(np.int64) - b[ok].view(bits).astype(np.int64)
        assert np.abs(apart).max() <= 4, c


#: a signaling NaN (quiet bit clear), as Arrow or binary data can hold one
SIGNALING_NAN = float(np.array([0x7FF0000000000001], np.uint64).view(np.float64)[0])


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
@pytest.mark.parametrize("rows", [3, 65, 300_000])
def test_signaling_nan_never_competes(tier: str, rows: int,
                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """NumPy's fmin/fmax let a signaling NaN win outside their vector loops; it must not."""
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    x = np.full(rows, SIGNALING_NAN)
    x[-3:] = [1.0, 5.0, -2.0]
    x[0] = SIGNALING_NAN
    df = pl.DataFrame({"g": np.arange(rows) % 2, "x": x})

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x")
        return q.select(lo=x.min(), hi=x.max(), flo=x.filter(m.col("g") >= 0).min())

    assert_frame_equal(steps(cb, df.gpu).compute(), steps(pl, df))
    x = cb.col("x")
    grouped = df.gpu.group_by("g", maintain_order=True).agg(lo=x.min(), hi=x.max()).compute()
    assert_frame_equal(grouped, df.group_by("g", maintain_order=True).agg(
        lo=pl.col("x").min(), hi=pl.col("x").max()))  # fmt: skip
    over = df.gpu.with_columns(hi=cb.col("x").max().over("g")).compute()
    assert_frame_equal(over, df.with_columns(hi=pl.col("x").max().over("g")))
