"""``ewm_var`` and ``ewm_std`` against polars.

Every numeric type, booleans, dates and datetimes (their integers), nulls in every
position, NaN and infinities, every decay parameter, ``adjust``, ``bias``,
``min_samples`` and ``ignore_nulls``, plain and ``over``, slices, chunks, empty and
one-row frames, the three frame kinds, the string language, a stream cut into
batches (bit for bit the in-memory result), Dask's refusal, and the CUDA code path
(on the host).

polars' recurrence is followed operation for operation, the denominator of the
unbiased correction ``(sum w)**2 - sum w**2`` kept as polars 2.1 keeps it (updated,
not a difference of sums): results are compared bit for bit, a long gap of nulls
included.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import ColbridgeError, JobSpecError, UnsupportedTypeError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.ordered.ordered_data import NULL_PATTERNS, NUMERIC_DTYPES, frame, pattern_frame

ULPS = 0
DECAYS = ({"alpha": 0.3}, {"com": 2.5}, {"span": 7}, {"half_life": 3.0}, {"alpha": 1.0})


def _both(m: Any, x: Any, **options: Any) -> dict[str, Any]:
    return {"v": x.ewm_var(**options), "s": x.ewm_std(**options)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dtype=st.sampled_from(NUMERIC_DTYPES),
    n=st.sampled_from([0, 1, 2, 7, 150]),
    seed=st.integers(0, 2**31 - 1),
    decay=st.sampled_from(DECAYS),
    adjust=st.booleans(),
    bias=st.booleans(),
    min_samples=st.sampled_from([0, 1, 3]),
    ignore_nulls=st.booleans(),
    offset=st.sampled_from([0, 5]),
    chunks=st.sampled_from([1, 3]),
)
def test_equal_polars(dtype: str, n: int, seed: int, decay: dict[str, float], adjust: bool,
                      bias: bool, min_samples: int, ignore_nulls: bool, offset: int,
                      chunks: int) -> None:  # fmt: skip
    table = pattern_frame(dtype, n, seed, offset=offset, chunks=chunks)
    options = dict(decay, adjust=adjust, bias=bias, min_samples=min_samples,
                   ignore_nulls=ignore_nulls)  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        out: dict[str, Any] = {}
        for pattern in NULL_PATTERNS:
            x = m.col(pattern)
            out.update({f"{k}_{pattern}": e for k, e in _both(m, x, **options).items()})
            out[f"o_{pattern}"] = x.ewm_std(**options).over("g")
        return q.select(**out)

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"), ulps=ULPS)


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_every_frame_kind_composed(tier: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    table = frame(2_000, 3, ("float64", "int32"), specials=0.0, groups=20)

    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("float64"), m.col("int32")
        return q.with_columns(
            z=(x - x.ewm_mean(span=10)) / x.ewm_std(span=10),  # an exponential z-score
            v=i.ewm_var(alpha=0.2, adjust=False).over("g"),
        )

    assert_same_as_polars(table, steps, ulps=ULPS)


def test_dates_and_datetimes_are_their_integers() -> None:
    days = [1, 3, None, 4, 9, 9, 2]
    df = pl.DataFrame({"d": [None if d is None else dt.date(2024, 1, d) for d in days]})
    df = df.with_columns(t=pl.col("d").cast(pl.Datetime("ms")))
    got = df.gpu.select(a=cb.col("d").ewm_var(alpha=0.5), b=cb.col("t").ewm_std(span=3)).compute()
    want = df.select(a=pl.col("d").ewm_var(alpha=0.5), b=pl.col("t").ewm_std(span=3))
    assert_frame_equal(got, want, rel_tol=1e-12)


def test_float32_stays_float32_and_first_values() -> None:
    df = pl.DataFrame({"x": [2.0, None, 4.0, 4.0, float("nan"), 1.0]}, schema={"x": pl.Float32})
    got = df.gpu.select(a=cb.col("x").ewm_var(alpha=0.5),
                        b=cb.col("x").ewm_var(alpha=0.5, bias=True)).compute()  # fmt: skip
    assert got.schema == pl.Schema({"a": pl.Float32, "b": pl.Float32})
    # the first value: no unbiased variance (null), a biased one of 0
    assert got["a"][0] is None
    assert got["b"][0] == 0.0
    want = df.select(a=pl.col("x").ewm_var(alpha=0.5), b=pl.col("x").ewm_var(alpha=0.5, bias=True))
    assert_frame_equal(got, want, rel_tol=1e-6)


@pytest.mark.parametrize("gap", [3, 7, 60])
@pytest.mark.parametrize("dtype", [pl.Float64, pl.Float32])
def test_a_long_gap_of_nulls_keeps_the_unbiased_value(gap: int, dtype: pl.DataType) -> None:
    """Nulls decay the old weights (``ignore_nulls=False``) below the new one's rounding.

    The unbiased correction's denominator is then far below the weights: kept as it
    changes, it stays exact where a difference of two sums would be 0 (a null row)
    or a few digits.
    """
    df = pl.DataFrame({"x": [1.0, 2.0, *[None] * gap, 3.0, None, 5.0]}, schema={"x": dtype})
    for options in ({"alpha": 0.5}, {"alpha": 0.99}, {"alpha": 0.99, "adjust": False}):
        got = df.gpu.select(v=cb.col("x").ewm_var(**options),
                            s=cb.col("x").ewm_std(**options)).compute()  # fmt: skip
        want = df.select(v=pl.col("x").ewm_var(**options), s=pl.col("x").ewm_std(**options))
        assert got["s"][-1] is not None
        assert_frame_equal(got, want, check_exact=True)


def test_refusals() -> None:
    df = pl.DataFrame({"s": ["a", "b"], "du": [dt.timedelta(1), dt.timedelta(2)]})
    with pytest.raises(UnsupportedTypeError, match=r"`ewm_std` is not supported for strings"):
        df.gpu.select(cb.col("s").ewm_std(alpha=0.5)).compute()
    with pytest.raises(UnsupportedTypeError, match=r"no deviation of durations"):
        df.gpu.select(cb.col("du").ewm_var(alpha=0.5)).compute()
    for bad in ({}, {"alpha": 0.5, "span": 3}, {"alpha": 0.0}, {"com": -1.0}):
        with pytest.raises(ColbridgeError, match=r"`ewm_var"):
            cb.col("x").ewm_var(**bad)


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 2, 1, 2, 1], "x": [3.0, None, 1.0, 2.0, 4.0]})
    got = cb.lazy(table).eval("a = ewm_var(x, alpha=0.5, bias=True)\n"
                              "b = x.ewm_std(span=3, min_samples=2).over(g)")  # fmt: skip
    want = pl.from_arrow(table).with_columns(
        a=pl.col("x").ewm_var(alpha=0.5, bias=True),
        b=pl.col("x").ewm_std(span=3, min_samples=2).over("g"))  # fmt: skip
    assert_frame_equal(pl.from_arrow(got.compute()), want, rel_tol=1e-12)


def test_a_stream_carries_the_state_bit_for_bit(tmp_path: Any) -> None:
    import pyarrow.parquet as pq

    rng = np.random.default_rng(8)
    n = 12_000
    table = pa.table({"x": pa.array(rng.normal(size=n), mask=rng.random(n) < 0.2),
                      "g": rng.integers(0, 5, n)})  # fmt: skip
    path = tmp_path / "x.parquet"
    pq.write_table(table, path, row_group_size=1_777)

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x")
        return q.with_columns(v=x.ewm_var(alpha=0.2, adjust=False, ignore_nulls=True),
                              s=x.ewm_std(span=5, min_samples=3).over("g"))  # fmt: skip

    streamed = steps(cb, cb.lazy(pl.scan_parquet(path), batch_rows=37)).compute()
    in_memory = steps(cb, pl.read_parquet(path).gpu).compute()
    assert streamed.equals(in_memory)
    assert_frame_equal(streamed, steps(pl, pl.read_parquet(path)), rel_tol=1e-12)


def test_dask_refuses_it() -> None:
    import dask.dataframe as dd
    import pandas as pd

    pdf = pd.DataFrame({"x": [1.0, 2.0, 4.0, 3.0]})
    q = cb.lazy(pdf).with_columns(v=cb.col("x").ewm_var(alpha=0.5))
    with pytest.raises(JobSpecError, match=r"ewm_var.*ewm_mean/var/std.*not supported in a Dask"):
        cb.dask.apply(q, dd.from_pandas(pdf, npartitions=2))


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = frame(3_000, 5, ("float64",), specials=0.05, groups=30)
    q = cb.lazy(table).select(v=cb.col("float64").ewm_var(span=9).over("g"),
                              s=cb.col("float64").ewm_std(alpha=0.4, bias=True) * 2)  # fmt: skip
    on_host = pl.from_arrow(compute_on_host(q))
    assert any("on the host CPU (`ewm_var` has no CUDA scan yet)" in k
               for k in q.last_report.stats.kernels)  # fmt: skip
    assert_frame_equal(on_host, pl.from_arrow(q.compute(device="cpu")))
