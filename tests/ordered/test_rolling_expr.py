"""``expr.rolling(index_column, period=..., closed=...)``: reductions per time window, vs polars.

Each reduction of the expression (``sum``, ``mean``, ``min``, ``max``, ``std``,
``var``, ``median``, ``quantile``, ``count``, ``len``) over the rows whose index lies in the
row's window, combined row by row; sorted integer and datetime indexes with repeated
values, columns with nulls, every ``closed``, empty frames, several chunks; an index
that is not sorted is an error naming the expression, as polars raises; what is not
taken per window is refused by name; the string language.
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
from colbridge.errors import InvalidOperationError, UnsupportedOperationError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.ordered.ordered_data import cut_table


def _table(n: int, seed: int, *, offset: int, chunks: int, dates: bool) -> pa.Table:
    rng = np.random.default_rng(seed)
    total = n + offset
    steps = np.sort(rng.integers(0, 3 * max(total, 1), total))  # sorted, repeats
    index = (pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(hours=int(h)) for h in steps])
             if dates else pa.array(steps, pa.int64()))  # fmt: skip
    table = pa.table({
        "t": index,
        "x": pa.array(rng.normal(size=total).round(3), mask=rng.random(total) < 0.2),
        "i": pa.array(rng.integers(-5, 6, total), mask=rng.random(total) < 0.2),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.sampled_from([0, 1, 3, 8, 40]), seed=st.integers(0, 2**31 - 1),
       offset=st.sampled_from([0, 3]), chunks=st.sampled_from([1, 2]), dates=st.booleans(),
       closed=st.sampled_from(["right", "left", "both", "none"]),
       length=st.integers(1, 9))  # fmt: skip
def test_equal_polars(n: int, seed: int, offset: int, chunks: int, dates: bool, closed: str,
                      length: int) -> None:  # fmt: skip
    table = _table(n, seed, offset=offset, chunks=chunks, dates=dates)
    period = f"{length}h" if dates else f"{length}i"

    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("x"), m.col("i")
        reductions = [x.sum(), x.mean(), i.min(), i.max(), x.std(), x.var(ddof=2), x.median(),
                      x.quantile(0.3, "linear"), x.count(), x.sum() / x.count(),
                      i.sum() * 2 - x.max(), (x * 2 + i).mean(), m.len(), x.len()]  # fmt: skip
        return q.select(m.col("t"), *[e.rolling("t", period=period, closed=closed).alias(f"r{k}")
                                      for k, e in enumerate(reductions)])  # fmt: skip

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"), rtol=1e-9)


def test_windows_of_a_datetime_index() -> None:
    df = pl.DataFrame({"t": [dt.datetime(2024, 1, 1, h) for h in (0, 1, 1, 5, 9)],
                       "x": [1, 2, None, 4, 8]})  # fmt: skip

    def outputs(m: Any) -> list[Any]:
        x = m.col("x")
        return [x.sum().rolling("t", period="2h").alias("s"),
                x.count().rolling("t", period="4h", closed="both").alias("n"),
                (x.max() - x.min()).rolling("t", period="5h").alias("spread")]  # fmt: skip

    got = df.gpu.with_columns(outputs(cb)).compute()
    assert_frame_equal(got, df.with_columns(outputs(pl)))
    assert got["s"].to_list() == [1, 3, 3, 4, 8]
    assert_frame_equal(compute_on_host(df.gpu.with_columns(outputs(cb))),
                       df.with_columns(outputs(pl)))  # fmt: skip


def test_an_index_that_is_not_sorted_is_an_error() -> None:
    df = pl.DataFrame({"t": [3, 1, 2], "x": [1.0, 2.0, 3.0]})
    with pytest.raises(pl.exceptions.InvalidOperationError, match="not sorted"):
        df.select(pl.col("x").sum().rolling("t", period="2i"))
    message = r"`col\(\"x\"\)\.sum\(\)\.rolling\('t', period='2i'\)`: the index column is not"
    with pytest.raises(InvalidOperationError, match=message):
        df.gpu.select(cb.col("x").sum().rolling("t", period="2i")).compute()


@pytest.mark.parametrize(("build", "match"), [
    (lambda x: x.first().rolling("t", period="2i"), r"`first` per window is not supported"),
    (lambda x: (x - x.mean()).sum().rolling("t", period="2i"), r"a reduction of reductions"),
    (lambda x: x.filter(x > 0).sum().rolling("t", period="2i"), r"not a filter"),
    (lambda x: x.sum().rolling("t", period="2i", offset="-1i"), r"an `offset` other than"),
])  # fmt: skip
def test_what_is_not_taken_per_window_is_refused(build: Any, match: str) -> None:
    with pytest.raises(UnsupportedOperationError, match=match):
        build(cb.col("x"))


@pytest.mark.parametrize("build", [
    lambda m: m.col("x").rolling("t", period="2i"),
    lambda m: (m.col("x").sum() + m.col("x")).rolling("t", period="2i"),
])  # fmt: skip
def test_a_value_outside_a_reduction_is_refused(build: Any) -> None:
    # polars gives each row the list of its window's values there (a list column)
    df = pl.DataFrame({"t": [1, 2, 4], "x": [1.0, 2.0, 3.0]})
    assert isinstance(df.select(build(pl)).dtypes[0], pl.List)
    message = r'`col\("x"\)` in `\.rolling\(\'t\', period=\'2i\'\)` is outside a reduction'
    with pytest.raises(UnsupportedOperationError, match=message):
        build(cb)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"period": 5}, r"`rolling\(period=\.\.\.\)` takes a duration string"),
    ({"period": "-2i"}, r"`period` must be strictly positive"),
    ({"period": "2i", "closed": "bad"}, r"`rolling\(closed='bad'\)`: use one of"),
])  # fmt: skip
def test_bad_windows_are_refused_naming_rolling(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(cb.ColbridgeError, match=match):
        cb.col("x").sum().rolling("t", **kwargs)


def test_the_string_language() -> None:
    df = pl.DataFrame({"t": [1, 2, 4, 7], "x": [1, 2, 3, 4]})
    text = "s = sum(x).rolling(t, period='2i')\nm = x.mean().rolling(t, period='3i', closed='both')"
    got = cb.lazy(df).eval(text).compute()
    x = pl.col("x")
    want = df.with_columns(s=x.sum().rolling("t", period="2i"),
                           m=x.mean().rolling("t", period="3i", closed="both"))
    assert_frame_equal(got, want)


def test_a_rolling_frame() -> None:
    df = pl.DataFrame({"t": [dt.date(2024, 1, d) for d in (1, 2, 2, 5, 6)],
                       "x": [1.0, None, 3.0, 4.0, 8.0], "i": [1, 2, 3, 4, 5]})  # fmt: skip

    def aggs(m: Any) -> list[Any]:
        return [m.col("x").sum(), m.col("i").max().alias("top"),
                (m.col("x").mean() * 2).alias("twice")]  # fmt: skip

    got = df.gpu.rolling("t", period="2d").agg(*aggs(cb), n=cb.col("x").count()).compute()
    want = df.rolling("t", period="2d").agg(*aggs(pl), n=pl.col("x").count())
    assert_frame_equal(got, want)
    closed = cb.lazy(df).rolling("t", period="3d", closed="both").agg(cb.col("x").sum())
    want_closed = df.rolling("t", period="3d", closed="both").agg(pl.col("x").sum())
    assert_frame_equal(closed.compute(), want_closed)
    with pytest.raises(UnsupportedOperationError, match=r"windows per group of a `rolling` "
                                                        r"frame are not supported"):  # fmt: skip
        df.gpu.rolling("t", period="2d", group_by="i")
