"""arcsinh, arccosh, arctanh and arctan2 against polars: types exactly, values to libm's ulp.

These four came in with the single emitter: each is its meaning written once
(`colbridge/codegen/lower.py`) plus a spelling per target, so they are checked
on the compiled CPU kernels, the NumPy tier and the CUDA kernel text run on the
host, every numeric dtype, nulls, NaN, ±inf, ±0 and the functions' edges
(±1 for arctanh, 1 for arccosh).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb

PAIRS = [
    (pl.Float64, pl.Float64), (pl.Float32, pl.Float64), (pl.Float32, pl.Int32),
    (pl.Int8, pl.Float32), (pl.Int64, pl.UInt64), (pl.UInt8, pl.Int8),
]  # fmt: skip
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.999999, 1.000001, 2.0, -2.0, 1e300, -1e300,
         float("inf"), float("-inf"), float("nan"), 1e-310, None]  # fmt: skip


def _frame(y_type: type[pl.DataType], x_type: type[pl.DataType]) -> pl.DataFrame:
    rng = np.random.default_rng(3)
    n = 90

    def column(dtype: type[pl.DataType]) -> pl.Series:
        if dtype in (pl.Float32, pl.Float64):
            values = [*EDGES, *rng.normal(scale=3.0, size=n - len(EDGES))]
        elif dtype in (pl.UInt8, pl.UInt64):
            values = [None, 0, 1, 2, *rng.integers(0, 200, size=n - 4)]
        else:
            values = [None, 0, 1, -1, 2, -2, *rng.integers(-100, 100, size=n - 6)]
        return pl.Series(values, dtype=pl.Float64).cast(dtype, strict=False)

    # a slice with an offset that is not a multiple of 8
    return pl.DataFrame({"y": column(y_type), "x": column(x_type)}).slice(5)


def _polars(df: pl.DataFrame) -> pl.DataFrame:
    y, x = pl.col("y"), pl.col("x")
    return df.select(
        a=pl.arctan2(y, x), b=y.arcsinh(), c=y.arccosh(), d=y.arctanh(), e=pl.arctan2(x, y)
    )


def _colbridge(df: pl.DataFrame) -> cb.LazyFrame:
    y, x = cb.col("y"), cb.col("x")
    return df.gpu.select(
        a=cb.arctan2(y, x), b=y.arcsinh(), c=y.arccosh(), d=y.arctanh(), e=cb.arctan2("x", "y")
    )


@pytest.mark.parametrize("tier", ["compiled", "numpy"])
@pytest.mark.parametrize(("y_type", "x_type"), PAIRS, ids=lambda t: str(t))
def test_matches_polars(
    tier: str, y_type: type[pl.DataType], x_type: type[pl.DataType],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    df = _frame(y_type, x_type)
    got = _colbridge(df).compute(device="cpu")
    want = _polars(df)
    assert got.schema == want.schema
    # libm's and Rust's last bits may differ (docs/semantics.md): a few float32 ulp at most
    assert_frame_equal(got, want, check_exact=False, rel_tol=4e-7, abs_tol=0.0)


def test_cuda_kernel_text_matches_the_cpu() -> None:
    from colbridge.testing.cuda_host import HostRuntime, compute_on_host

    df = _frame(pl.Float64, pl.Float32)
    got = compute_on_host(_colbridge(df), HostRuntime())
    want = _colbridge(df).compute(device="cpu")
    assert_frame_equal(got, want, check_exact=False, rel_tol=1e-15, abs_tol=0.0)


def test_string_language_and_types() -> None:
    table = pa.table({"y": pa.array([1.0, None], pa.float32()), "x": pa.array([2, 3], pa.int16())})
    out = cb.lazy(table).eval("t = arctan2(y, x); h = arcsinh(x); k = y.arctanh()").compute()
    assert out.schema.field("t").type == pa.float32()  # y's float type decides
    assert out.schema.field("h").type == pa.float64()  # integers compute in float64
    assert out.column("t").to_pylist()[1] is None
    assert out.column("k").null_count == 1
