"""Math functions give polars' own bits on every CPU tier (the C library's functions).

NumPy's vectorised exp, tanh, pow... differ from the C library's in the last bit on a
few rows in a hundred; the NumPy tier used them, so a plan's result changed when its
compiled kernel took over (the third compute of a small frame under ``auto``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb

FUNCTIONS: dict[str, Any] = {
    "exp": lambda m, c: m.col(c).exp(),
    "log": lambda m, c: m.col(c).log(),
    "log1p": lambda m, c: m.col(c).log1p(),
    "log10": lambda m, c: m.col(c).log10(),
    "pow": lambda m, c: m.col(c).abs() ** 1.7,
    "pow_column": lambda m, c: m.col(c) ** m.col("u"),
    "sin": lambda m, c: m.col(c).sin(),
    "cos": lambda m, c: m.col(c).cos(),
    "tan": lambda m, c: m.col(c).tan(),
    "arcsin": lambda m, c: m.col("u").arcsin(),
    "arccos": lambda m, c: m.col("u").arccos(),
    "arctan": lambda m, c: m.col(c).arctan(),
    "sinh": lambda m, c: m.col(c).sinh(),
    "cosh": lambda m, c: m.col(c).cosh(),
    "tanh": lambda m, c: m.col(c).tanh(),
    "arcsinh": lambda m, c: m.col(c).arcsinh(),
    "arccosh": lambda m, c: m.col(c).abs().arccosh(),
    "arctanh": lambda m, c: m.col("u").arctanh(),
    "arctan2": lambda m, c: m.arctan2(m.col(c), m.col("u")),
    "erf": lambda m, c: m.col(c).erf(),  # Float32: computed in Float64, as polars
    "erfc": lambda m, c: m.col(c).erfc(),
}


def _frame(dtype: Any) -> pl.DataFrame:
    rng = np.random.default_rng(7)
    x = rng.uniform(-8, 8, 5000)
    x[:9] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e6, -1e6, 710.0, 1e-310]
    u = rng.uniform(-1.2, 1.2, 5000)
    u[:4] = [1.0, -1.0, 0.0, np.nan]
    frame = pl.DataFrame({"x": x, "u": u}).with_columns(pl.all().cast(dtype))
    return frame.with_columns(pl.when(pl.int_range(pl.len()) % 50 == 7).then(None)
                              .otherwise(pl.col("x")).alias("x"))  # fmt: skip


@pytest.mark.parametrize("dtype", [pl.Float64, pl.Float32])
def test_every_tier_gives_polars_bits(dtype: Any, tier: str) -> None:
    df = _frame(dtype)
    got = df.gpu.select(**{k: f(cb, "x") for k, f in FUNCTIONS.items()}).compute()
    want = df.select(**{k: f(pl, "x") for k, f in FUNCTIONS.items()})
    assert_frame_equal(got, want, check_exact=True)


def test_cbrt_is_the_same_on_every_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    # the C library's cbrt on both tiers (polars' own differs from it in the last bit)
    df = _frame(pl.Float64)
    results = []
    for tier in ("numpy", "compiled"):
        monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
        results.append(df.gpu.select(y=cb.col("x").cbrt()).compute())
    assert_frame_equal(*results, check_exact=True)
    assert_frame_equal(results[0], df.select(y=pl.col("x").cbrt()), rel_tol=1e-15)


def test_erf_of_integers_and_booleans(tier: str) -> None:
    # polars: Float64 of integers and booleans
    df = pl.DataFrame({"i": [-3, 0, 1, None, 2], "b": [True, False, None, True, False]},
                      schema={"i": pl.Int16, "b": pl.Boolean})  # fmt: skip
    exprs = lambda m: [m.col("i").erf(), m.col("b").erfc()]  # noqa: E731
    assert_frame_equal(df.gpu.select(exprs(cb)).compute(), df.select(exprs(pl)),
                       check_exact=True)  # fmt: skip
    got = cb.lazy(df).eval("e = erf(i)\nc = i.erfc()").compute()
    assert_frame_equal(pl.DataFrame(got).select("e", "c"),
                       df.select(e=pl.col("i").erf(), c=pl.col("i").erfc()), check_exact=True)


def test_erf_on_the_cuda_code_path() -> None:
    import pyarrow as pa

    from colbridge.testing.cuda_host import compute_on_host

    df = _frame(pl.Float64).with_columns(f=pl.col("x").cast(pl.Float32))
    q = cb.lazy(pa.table(df.to_arrow())).select(cb.col("x").erf(), cb.col("f").erfc())
    # the host shim calls glibc's erf, polars' bits (a GPU's math library has its own)
    assert_frame_equal(pl.from_arrow(compute_on_host(q)),
                       df.select(pl.col("x").erf(), pl.col("f").erfc()), check_exact=True)
