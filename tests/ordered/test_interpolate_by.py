"""``interpolate_by`` against polars.

Nulls between two values are filled linearly in ``by``, the rows taken in ``by``'s
order (equal ones in frame order): ``low + (by - by_low) * slope`` in the result's
type. Generated columns with nulls in every position, ``by`` sorted, unsorted, with
ties, of every type polars takes; whole frames and ``over``; the CUDA code path.
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
from colbridge.errors import InvalidOperationError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host

VALUES = {"i32": pa.int32(), "i64": pa.int64(), "u32": pa.uint32(), "u64": pa.uint64(),
          "f32": pa.float32(), "f64": pa.float64()}  # fmt: skip
KEYS = {**VALUES, "date": pa.date32(), "datetime": pa.timestamp("us"),
        "zoned": pa.timestamp("ns", "UTC")}  # fmt: skip


def _table(rng: np.random.Generator, n: int, value: str, key: str, order: str,
           nulls: float) -> pa.Table:  # fmt: skip
    if value[0] == "f":
        y = rng.normal(0, 100, n).round(2)
        y[rng.random(n) < 0.05] = np.nan
    else:
        y = rng.integers(0, 1000, n)
    steps = rng.integers(0, 4 if order == "ties" else 50, n)
    x = np.cumsum(steps) + (0 if key[0] in "uf" or key in ("date",) else -n)
    if order == "unsorted":
        x = rng.permutation(x)
    if key in ("datetime", "zoned"):
        x = x * 3_600_000_000
    keys = pa.array(x).cast(pa.int32() if key == "date" else pa.int64())
    return pa.table({
        "y": pa.array(y, mask=rng.random(n) < nulls).cast(VALUES[value]),
        "x": keys.cast(KEYS[key]),
        "g": pa.array(rng.integers(0, 3, n)),
    })  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.sampled_from(sorted(VALUES)), key=st.sampled_from(sorted(KEYS)),
       order=st.sampled_from(["sorted", "ties", "unsorted"]), n=st.sampled_from([0, 1, 5, 60]),
       nulls=st.sampled_from([0.0, 0.3, 0.8]), seed=st.integers(0, 2**31 - 1))  # fmt: skip
def test_equals_polars(value: str, key: str, order: str, n: int, nulls: float,
                       seed: int) -> None:  # fmt: skip
    table = _table(np.random.default_rng(seed), n, value, key, order, nulls)
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("y").interpolate_by("x"),
        g=m.col("y").interpolate_by("x").over("g"),
        s=m.col("y").interpolate_by(m.col("x")) * 2,
    ), kinds=("polars", "pyarrow"))  # fmt: skip


def test_polars_examples_and_edges() -> None:
    for data in (
        {"a": [1, None, None, 3, None, 10, None], "b": [1, 2, 7, 8, 9, 11, 12]},
        {"a": [1, None, None, 3], "b": [8, 2, 7, 1]},  # unsorted: taken in `b`'s order
        {"a": [1.0, None, 3.0], "b": [1, 1, 1]},  # no spread: 0 * inf, NaN
        {"a": [1.0, 5.0, None, 4.0, None], "b": [4, 2, 2, 1, 3]},  # ties in frame order
        {"a": [1.0, None, float("nan")], "b": [1, 2, 3]},
    ):
        df = pl.DataFrame(data)
        assert_frame_equal(df.gpu.select(cb.col("a").interpolate_by("b")).compute(),
                           df.select(pl.col("a").interpolate_by("b")))  # fmt: skip
    df = pl.DataFrame({"a": [1, None, None, 3], "b": [1, 2, 7, 8]})
    got = df.gpu.select(cb.col("a").interpolate_by("b")).compute()["a"].to_list()
    assert got == [1.0, 1.2857142857142856, 2.7142857142857144, 3.0]  # polars' bits
    # the slope first, then the step times it: 3 * 0.1, not 3 / 10
    df = pl.DataFrame({"a": [0.0, None, 1.0], "b": [0, 3, 10]})
    assert df.select(pl.col("a").interpolate_by("b"))["a"][1] == 0.30000000000000004
    assert df.gpu.select(cb.col("a").interpolate_by("b")).compute()["a"][1] == 0.30000000000000004


def test_every_tier_and_the_cuda_code_path(tier: str) -> None:
    table = _table(np.random.default_rng(3), 400, "f64", "date", "unsorted", 0.3)
    steps = lambda m, q: q.select(m.col("y").interpolate_by("x").over("g"))  # noqa: E731
    assert_same_as_polars(table, steps)
    assert_frame_equal(pl.from_arrow(compute_on_host(steps(cb, cb.lazy(table)))),
                       steps(pl, pl.from_arrow(table)))  # fmt: skip


def test_refusals_name_the_column_and_the_rule() -> None:
    df = pl.DataFrame({"a": [1.0, None, 3.0], "b": [1, None, 3]})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        df.select(pl.col("a").interpolate_by("b"))
    with pytest.raises(InvalidOperationError, match=r"null values in `by`.*fill them"):
        df.gpu.select(cb.col("a").interpolate_by("b")).compute()
    small = pl.DataFrame({"a": [1, None, 3], "b": [1, 2, 3]}, schema={"a": pl.Int8,
                                                                       "b": pl.Int64})
    with pytest.raises(InvalidOperationError, match=r'`col\("a"\)` \(the values\) is int8'):
        small.gpu.select(cb.col("a").interpolate_by("b")).compute()
    times = pl.DataFrame({"a": [1.0, None], "b": [dt.time(1), dt.time(2)]})
    with pytest.raises(InvalidOperationError, match=r"\(`by`\) is time"):
        times.gpu.select(cb.col("a").interpolate_by("b")).compute()


def test_the_string_language() -> None:
    table = pa.table({"a": [1.0, None, 3.0], "b": [1, 2, 3]})
    got = cb.lazy(table).eval("i = interpolate_by(a, b)\nj = a.interpolate_by(b)").compute()
    assert got.column("i").to_pylist() == [1.0, 2.0, 3.0]
    assert got.column("j").to_pylist() == [1.0, 2.0, 3.0]


def test_refused_in_streams(tmp_path: Any) -> None:
    # ordered by another column: a stream's batches cannot be put in that order
    import pyarrow.parquet as pq

    from colbridge.io import pipeline

    table = pa.table({"a": [1.0, None, 3.0] * 10, "b": list(range(30))})
    path = tmp_path / "a.parquet"
    pq.write_table(table, path)
    with pytest.raises(cb.ColbridgeError, match=r"not supported in a streamed job.*in memory"):
        pipeline(str(path), str(tmp_path / "o.parquet"), with_="i = interpolate_by(a, b)",
                 batch_rows=7)  # fmt: skip
