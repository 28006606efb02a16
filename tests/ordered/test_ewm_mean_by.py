"""``ewm_mean_by`` against polars.

The rows in ``by``'s order: the first row with a value is that value, each later one
``alpha * x + (1 - alpha) * prev`` with ``1 - alpha = 0.5 ** (dt / half_life)`` in the
values' type; a row whose value or ``by`` is null is null and changes nothing.
Generated values with nulls and NaN, ``by`` of every type polars takes (sorted,
unsorted, with ties and nulls), half-lives in every unit; whole frames and ``over``;
the CUDA code path; refusals.
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
from colbridge.errors import InvalidOperationError, JobSpecError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host

BY = {"i32": pa.int32(), "i64": pa.int64(), "u32": pa.uint32(), "date": pa.date32(),
      "us": pa.timestamp("us"), "ns": pa.timestamp("ns"), "ms": pa.timestamp("ms"),
      "utc": pa.timestamp("us", "UTC")}  # fmt: skip
VALUES = {"f64": pa.float64(), "f32": pa.float32(), "i64": pa.int64(), "u32": pa.uint32()}
HALF_LIVES = {"int": ["1i", "3i", "0i"], "time": ["1d", "90m", "36h", "1500us", "0d"]}


def _table(rng: np.random.Generator, n: int, value: str, by: str, order: str,
           nulls: float) -> pa.Table:  # fmt: skip
    steps = rng.integers(0, 3 if order == "ties" else 40, n)
    t = np.cumsum(steps)
    if order == "unsorted":
        t = rng.permutation(t)
    if by in ("us", "ns", "ms", "utc"):
        t = t * {"us": 3_600_000_000, "ns": 3_600_000_000_000, "ms": 3_600_000,
                 "utc": 3_600_000_000}[by]  # fmt: skip
    times = pa.array(t, mask=rng.random(n) < nulls / 2).cast(
        pa.int32() if by in ("i32", "date") else pa.int64()).cast(BY[by])
    x = np.round(rng.normal(0, 10, n), 1)
    if value[0] == "f":
        x[rng.random(n) < 0.03] = np.nan
    else:
        x = np.abs(x).astype(np.int64)
    return pa.table({"x": pa.array(x, mask=rng.random(n) < nulls).cast(VALUES[value]),
                     "t": times, "g": pa.array(rng.integers(0, 3, n))})  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.sampled_from(sorted(VALUES)), by=st.sampled_from(sorted(BY)),
       order=st.sampled_from(["sorted", "ties", "unsorted"]), n=st.sampled_from([0, 1, 6, 80]),
       nulls=st.sampled_from([0.0, 0.3]), seed=st.integers(0, 2**31 - 1),
       pick=st.integers(0, 4))  # fmt: skip
def test_equals_polars(value: str, by: str, order: str, n: int, nulls: float, seed: int,
                       pick: int) -> None:  # fmt: skip
    table = _table(np.random.default_rng(seed), n, value, by, order, nulls)
    lives = HALF_LIVES["int" if by[0] in "iu" else "time"]
    half_life = lives[pick % len(lives)]
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("x").ewm_mean_by("t", half_life=half_life),
        g=m.col("x").ewm_mean_by("t", half_life=half_life).over("g"),
        e=m.col("x").ewm_mean_by(m.col("t"), half_life=half_life) * 2,
    ), kinds=("polars", "pyarrow"))  # fmt: skip


def test_polars_example_and_timedelta() -> None:
    df = pl.DataFrame({"v": [0, 1, 2, None, 4],
                       "t": [dt.date(2020, 1, d) for d in (1, 3, 10, 15, 17)]})  # fmt: skip
    got = df.gpu.select(cb.col("v").ewm_mean_by("t", half_life="4d")).compute()
    assert got["v"].to_list() == [0.0, 0.2928932188134524, 1.4924741174358913, None,
                                  3.2545080948503213]  # polars' bits
    by_delta = df.gpu.select(cb.col("v").ewm_mean_by("t", half_life=dt.timedelta(days=4)))
    assert_frame_equal(by_delta.compute(), got)


def test_every_tier_and_the_cuda_code_path(tier: str) -> None:
    table = _table(np.random.default_rng(3), 500, "f64", "date", "unsorted", 0.2)
    steps = lambda m, q: q.select(m.col("x").ewm_mean_by("t", half_life="3d").over("g"))  # noqa: E731
    assert_same_as_polars(table, steps)
    assert_frame_equal(pl.from_arrow(compute_on_host(steps(cb, cb.lazy(table)))),
                       steps(pl, pl.from_arrow(table)))  # fmt: skip


@pytest.mark.parametrize(("half_life", "pattern"), [
    ("1mo", r"constant duration, not months"),
    ("-1d", r"half_life cannot be negative"),
])  # fmt: skip
def test_bad_half_lives_are_refused_when_written(half_life: str, pattern: str) -> None:
    with pytest.raises(InvalidOperationError, match=pattern):
        cb.col("x").ewm_mean_by("t", half_life=half_life)


def test_refusals_name_the_type() -> None:
    times = [dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 2)]
    zoned = pl.DataFrame({"v": [1.0, 2.0], "t": times}).with_columns(
        pl.col("t").dt.replace_time_zone("Europe/Paris"))
    with pytest.raises(InvalidOperationError, match=r"a day of time zone 'Europe/Paris'.*hours"):
        zoned.gpu.select(cb.col("v").ewm_mean_by("t", half_life="1d")).compute()
    small = pl.DataFrame({"v": [1], "t": [1], "u": [2]},
                         schema={"v": pl.Int8, "t": pl.Int16, "u": pl.Int64})  # fmt: skip
    with pytest.raises(cb.ColbridgeError, match=r"not supported for int8 values"):
        small.gpu.select(cb.col("v").ewm_mean_by("u", half_life="1i")).compute()
    with pytest.raises(InvalidOperationError, match=r"`by` of type int16 is not supported"):
        small.gpu.select(cb.col("u").ewm_mean_by("t", half_life="1i")).compute()


def test_the_string_language_streams_and_dask(tmp_path: Any) -> None:
    import dask.dataframe as dd
    import pyarrow.parquet as pq

    table = pa.table({"x": [1.0, 5.0, 2.0], "t": [1, 2, 4]})
    got = cb.lazy(table).eval('e = ewm_mean_by(x, t, half_life="2i")').compute()
    want = pl.from_arrow(table).with_columns(  # type: ignore[union-attr]
        e=pl.col("x").ewm_mean_by("t", half_life="2i"))
    assert_frame_equal(pl.from_arrow(got), want)
    path = tmp_path / "a.parquet"
    pq.write_table(table, path)
    with pytest.raises(JobSpecError, match=r"not supported in a streamed job"):
        pl.scan_parquet(path).gpu.with_columns(
            e=cb.col("x").ewm_mean_by("t", half_life="2i")).compute()
    pdf = table.to_pandas()
    with pytest.raises(JobSpecError, match=r"not supported in a Dask plan"):
        cb.dask.apply(cb.lazy(pdf).with_columns(e=cb.col("x").ewm_mean_by("t", half_life="2i")),
                      dd.from_pandas(pdf, npartitions=2))  # fmt: skip
