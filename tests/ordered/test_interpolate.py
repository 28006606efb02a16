"""``interpolate`` against polars: both methods, numbers and temporal types, plain and ``over``.

Compared exactly with polars on generated frames: runs of nulls of every length,
nulls before the first and after the last value, NaN and infinities as values,
integers near their limits, slices and chunks, empty and one-row frames, keys with
nulls; inside other expressions; the three frame kinds; the string language; what
polars cannot interpolate (booleans per group or to the nearest value, strings) is
refused; streams and Dask refuse it with errors naming the way out; the CUDA code
path (on the host) agrees.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import JobSpecError, SchemaError, UnsupportedTypeError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.ordered.ordered_data import cut_table


def _table(n: int, seed: int, *, nulls: float, groups: int, offset: int = 0,
           chunks: int = 1) -> pa.Table:  # fmt: skip
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    floats = rng.normal(size=total) * 10
    floats[rng.random(total) < 0.05] = np.nan
    floats[rng.random(total) < 0.03] = np.inf
    table = pa.table({
        "g": pa.array(rng.integers(0, groups, total), mask=rng.random(total) < 0.1),
        "f": pa.array(floats, mask=mask()),
        "f32": pa.array(rng.normal(size=total).astype(np.float32), mask=mask()),
        "i8": pa.array(rng.integers(-128, 128, total).astype(np.int8), mask=mask()),
        "u64": pa.array(rng.integers(0, 2**62, total).astype(np.uint64) * np.uint64(3),
                        mask=mask()),
        "i64": pa.array(rng.integers(-(2**62), 2**62, total), mask=mask()),
        "d": pa.array(rng.integers(-20_000, 20_000, total).astype(np.int32), mask=mask())
        .cast(pa.date32()),
        "t": pa.array(rng.integers(-(10**15), 10**15, total), mask=mask())
        .cast(pa.timestamp("us")),
        "du": pa.array(rng.integers(-(10**12), 10**12, total), mask=mask())
        .cast(pa.duration("ns")),
        "tm": pa.array(rng.integers(0, 86_400 * 10**6, total) * 1000, mask=mask())
        .cast(pa.time64("ns")),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


COLUMNS = ("f", "f32", "i8", "u64", "i64", "d", "t", "du", "tm")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 2, 7, 60, 400]),
    seed=st.integers(0, 2**31 - 1),
    nulls=st.sampled_from([0.0, 0.3, 0.8, 1.0]),
    groups=st.sampled_from([1, 4, 100]),
    offset=st.sampled_from([0, 5]),
    chunks=st.sampled_from([1, 3]),
    method=st.sampled_from(["linear", "nearest"]),
)
def test_interpolation_equals_polars(n: int, seed: int, nulls: float, groups: int, offset: int,
                                     chunks: int, method: str) -> None:  # fmt: skip
    table = _table(n, seed, nulls=nulls, groups=groups, offset=offset, chunks=chunks)

    def steps(m: Any, q: Any) -> Any:
        out = {}
        for c in COLUMNS:
            out[c] = m.col(c).interpolate(method)
            out[f"{c}_o"] = m.col(c).interpolate(method).over("g")
        return q.select(**out)

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_interpolations_inside_expressions_and_of_expressions() -> None:
    table = _table(500, 3, nulls=0.5, groups=6)

    def steps(m: Any, q: Any) -> Any:
        f, i = m.col("f"), m.col("i8")
        return q.with_columns(
            of_sum=(i * 2).interpolate(), gap=(f.interpolate() - f).abs(),
            shifted=f.shift(2).interpolate("nearest").over("g"),
            late=m.col("t").interpolate() - m.col("t").min(),
        )

    assert_same_as_polars(table, steps)


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_every_frame_kind(tier: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    table = _table(300, 4, nulls=0.4, groups=5).select(["g", "f", "i8", "d"])
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("f").interpolate(), b=m.col("i8").interpolate("nearest").over("g"),
        c=m.col("d").interpolate().over("g"), d=m.col("i8").interpolate() * 2))  # fmt: skip


def test_exact_values_of_polars_arithmetic() -> None:
    # the step is (high - low) / steps, then low + k * step: 0.1, 0.3, 0.5, 0.7 exactly as
    # polars writes them; a date's step truncated toward zero; nearest takes the later at
    # a tie
    table = pa.table({
        "x": [0.1, None, None, 0.7, None, 1.0],
        "d": pa.array([0, None, 3, None, None, -1], pa.int32()).cast(pa.date32()),
    })  # fmt: skip
    got = pl.from_arrow(cb.lazy(table).select(
        x=cb.col("x").interpolate(), d=cb.col("d").interpolate(),
        n=cb.col("x").interpolate("nearest")).compute())  # fmt: skip
    assert got["x"].to_list() == [0.1, 0.1 + 1 * ((0.7 - 0.1) / 3), 0.1 + 2 * ((0.7 - 0.1) / 3),
                                  0.7, 0.7 + 1 * ((1.0 - 0.7) / 2), 1.0]  # fmt: skip
    assert got["d"].cast(pl.Int32).to_list() == [0, 1, 3, 2, 1, -1]  # steps 1 and -1
    assert got["n"].to_list() == [0.1, 0.1, 0.7, 0.7, 1.0, 1.0]
    assert_same_as_polars(table, lambda m, q: q.select(
        x=m.col("x").interpolate(), d=m.col("d").interpolate(),
        n=m.col("x").interpolate("nearest")))  # fmt: skip


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 1, 1, 2], "x": [1.0, None, 3.0, None]})
    got = cb.lazy(table).eval('a = interpolate(x)\nb = x.interpolate("nearest").over(g)')
    want = pl.from_arrow(table).with_columns(
        a=pl.col("x").interpolate(), b=pl.col("x").interpolate("nearest").over("g"))
    assert pl.from_arrow(got.compute()).equals(want)


def test_what_polars_cannot_interpolate_is_refused() -> None:
    table = pa.table({"b": [True, None, False], "s": ["a", None, "c"], "g": [1, 1, 2]})
    # a boolean column's linear interpolation is the column itself in polars (nulls kept);
    # to the nearest value or per group polars panics: refused
    got = cb.lazy(table).select(cb.col("b").interpolate()).compute()
    assert pl.from_arrow(got).equals(pl.from_arrow(table).select(pl.col("b").interpolate()))
    for expr in (cb.col("b").interpolate("nearest"), cb.col("b").interpolate().over("g")):
        with pytest.raises(UnsupportedTypeError, match=r"`interpolate` is not supported for "
                           r"booleans .* cast to a number first"):  # fmt: skip
            cb.lazy(table).select(expr).compute()
    with pytest.raises(UnsupportedTypeError, match=r"strings .* `fill_null\(strategy=\.\.\.\)`"):
        cb.lazy(table).select(cb.col("s").interpolate()).compute()
    with pytest.raises(SchemaError, match=r"use 'linear' or 'nearest'"):
        cb.col("x").interpolate("cubic")


def test_streams_and_dask_refuse_it(tmp_path: Any) -> None:
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow.parquet as pq

    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"x": [1.0, None, 3.0]}), path)
    with pytest.raises(JobSpecError, match=r"interpolate\) are not supported in a streamed job"):
        pl.scan_parquet(path).gpu.with_columns(r=cb.col("x").interpolate()).compute()
    pdf = pd.DataFrame({"x": [1.0, None, 3.0, 4.0]})
    q = cb.lazy(pdf).with_columns(r=cb.col("x").interpolate())
    with pytest.raises(JobSpecError, match=r"not supported in a Dask plan .* Run them in memory"):
        cb.dask.apply(q, dd.from_pandas(pdf, npartitions=2)).compute()


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = _table(2_000, 5, nulls=0.5, groups=30)
    q = cb.lazy(table).select("g", a=cb.col("f").interpolate().over("g"),
                              b=cb.col("t").interpolate("nearest"),
                              c=cb.col("i8").interpolate() + 1)  # fmt: skip
    on_host = pl.from_arrow(compute_on_host(q))
    # NaN is a value here (and equal to NaN), as polars' own comparison has it
    assert_frame_equal(on_host, pl.from_arrow(q.compute(device="cpu")), check_exact=True)
    want = pl.from_arrow(table).select("g", a=pl.col("f").interpolate().over("g"),
                                       b=pl.col("t").interpolate("nearest"),
                                       c=pl.col("i8").interpolate() + 1)  # fmt: skip
    assert_frame_equal(on_host, want, check_exact=True)
    assert "interpolated on the host CPU from its whole column" in q.explain(device="cpu")
