"""``product()`` against polars: whole columns, groups, windows, filters, streams, Dask.

Compared exactly: integers (and booleans) multiply in Int64 and wrap on overflow
(odd factors keep the wrapped products from collapsing to 0), UInt64 stays UInt64,
floats keep their type and multiply in row order, as polars does (NaN, ±inf, ±0 and
overflow to inf included); nulls are left out, a column or group without values
gives 1. Streams and Dask fold the pieces' products (wrapping alike); the CUDA code
path (on the host) agrees; dates and strings are refused.
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
from colbridge.errors import UnsupportedTypeError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.ordered.ordered_data import cut_table

COLUMNS = ("x", "f", "i8", "i", "u", "b")


def _table(n: int, seed: int, *, groups: int, nulls: float, offset: int = 0,
           chunks: int = 1) -> pa.Table:  # fmt: skip
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    pool = np.array([1.5, -0.75, 2.0, 0.5, 1.0, -1.25, 3.0, 0.0, -0.0, np.nan, np.inf, 1e300])
    weights = np.array([8, 8, 8, 8, 8, 8, 8, 1, 1, 1, 1, 2], dtype=float)
    odd = np.array([1, 3, -1, 5, 7, -3, 2**61 + 1, -(2**40) + 1])
    table = pa.table({
        "g": pa.array(rng.integers(0, groups, total), mask=rng.random(total) < 0.1),
        "x": pa.array(rng.choice(pool, total, p=weights / weights.sum()), mask=mask()),
        "f": pa.array(rng.choice(pool[:7], total).astype(np.float32), mask=mask()),
        "i8": pa.array(rng.choice(np.array([1, -1, 3, 5, -7, 127, -128]), total)
                       .astype(np.int8), mask=mask()),
        "i": pa.array(rng.choice(odd, total), mask=mask()),
        "u": pa.array(rng.choice(np.array([1, 3, 2**63 + 1, 2**64 - 1], dtype=np.uint64), total),
                      mask=mask()),
        "b": pa.array(rng.random(total) < 0.9, mask=mask()),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 2, 9, 80, 400]),
    seed=st.integers(0, 2**31 - 1),
    groups=st.sampled_from([1, 3, 30]),
    nulls=st.sampled_from([0.0, 0.2, 0.9]),
    offset=st.sampled_from([0, 5]),
    chunks=st.sampled_from([1, 3]),
)
def test_products_equal_polars(n: int, seed: int, groups: int, nulls: float, offset: int,
                               chunks: int) -> None:  # fmt: skip
    table = _table(n, seed, groups=groups, nulls=nulls, offset=offset, chunks=chunks)

    def whole(m: Any, q: Any) -> Any:
        return q.select(**{c: m.col(c).product() for c in COLUMNS})

    def grouped(m: Any, q: Any) -> Any:
        return q.group_by("g", maintain_order=True).agg(
            **{c: m.col(c).product() for c in COLUMNS},
            fx=m.col("x").filter(m.col("i") > 0).product())

    def windows(m: Any, q: Any) -> Any:
        return q.select("g", a=m.col("i").product().over("g"),
                        b=m.col("f").product().over("g") * 2,
                        c=m.col("i8") - m.col("i8").product())  # fmt: skip

    for steps in (whole, grouped, windows):
        assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_every_frame_kind_and_the_cuda_code_path() -> None:
    table = _table(300, 3, groups=4, nulls=0.1)
    steps = lambda m, q: q.group_by("g", maintain_order=True).agg(  # noqa: E731
        i=m.col("i").product(), x=m.col("x").product())
    assert_same_as_polars(table, steps)
    want = steps(pl, pl.from_arrow(table))
    assert_frame_equal(pl.from_arrow(compute_on_host(steps(cb, cb.lazy(table)))), want)


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 1, 2, 2], "x": [1.5, 2.0, None, 4.0]})
    got = cb.lazy(table).eval("p = product(x)\nq = x.product().over(g)").compute()
    want = pl.from_arrow(table).with_columns(p=pl.col("x").product(),
                                             q=pl.col("x").product().over("g"))  # fmt: skip
    assert_frame_equal(pl.from_arrow(got), want)


def test_streams_and_dask_fold_the_pieces_products(tmp_path: Any) -> None:
    import dask.dataframe as dd
    import pyarrow.parquet as pq

    from colbridge.io import pipeline

    table = _table(3_000, 11, groups=5, nulls=0.1)
    path = tmp_path / "a.parquet"
    pq.write_table(table, path, row_group_size=200)
    frame = pl.read_parquet(path)
    lf = pl.scan_parquet(path)
    whole = {c: pl.col(c).product() for c in ("i", "u", "b", "f")}
    assert_frame_equal(lf.gpu.select(**{c: cb.col(c).product() for c in whole}).compute(),
                       frame.select(**whole))  # fmt: skip
    got = lf.gpu.group_by("g", maintain_order=True).agg(
        **{c: cb.col(c).product() for c in whole}).compute()
    assert_frame_equal(got, frame.group_by("g", maintain_order=True).agg(**whole))
    out = tmp_path / "o.parquet"
    pipeline(str(path), str(out), with_="p = product(i).over(g)", batch_rows=300)
    assert pl.read_parquet(out)["p"].equals(frame.select(p=pl.col("i").product().over("g"))["p"])
    # pandas reads an integer column with nulls as floats: the Int64 product needs none
    pdf = pa.table({"i": table.column("i").fill_null(1)}).to_pandas()
    ddf = dd.from_pandas(pdf, npartitions=3)
    got_dask = cb.dask.apply(cb.lazy(pdf).select(p=cb.col("i").product()), ddf).compute()
    assert int(got_dask["p"].iloc[0]) == frame.select(pl.col("i").product()).item()


@pytest.mark.parametrize("column", ["s", "d"])
def test_dates_and_strings_are_refused(column: str) -> None:
    table = pa.table({"s": ["a", "b"], "d": [dt.date(2020, 1, 1), dt.date(2021, 1, 1)]})
    with pytest.raises(UnsupportedTypeError, match=rf"`{column}`.*product"):
        cb.lazy(table).select(cb.col(column).product()).compute()
