"""Null-typed columns and results (polars' ``Null`` type) against polars.

A column null in every row (``pl.Series([None] * n, dtype=pl.Null)``, an all-``None``
pandas object column) is typed as ``lit(None)`` is, but it keeps the frame's rows:
``col("n").is_null().sum()`` counts them, as polars does (it answered 1 before). What
polars keeps in the Null type (``col("n").max()``, ``shift``, ``n + n``, ``lit(None)``
itself) is a Null-typed output; what it computes in a type (``sqrt``, ``rolling_mean``,
``is_in``) is a typed null; what it refuses (``cum_sum``, ``abs``) colbridge refuses.
Whole frames, ``with_columns``, ``over`` and ``group_by``; empty, one-row and filtered
frames; polars, pyarrow and Arrow-backed pandas inputs (a pandas object column of Nones
is String, as ``polars.from_pandas`` reads it); streams, Dask, every kernel tier.
"""

from __future__ import annotations

from collections.abc import Callable
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
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from tests.ordered.ordered_data import cut_table

Build = Callable[[Any], Any]


def _cast(m: Any, name: str) -> Any:
    return getattr(pl, name) if m is pl else name.lower()


# each: polars' answer for a null-typed `n` (a type, Null, or an error) is the oracle
CASES: dict[str, Build] = {
    # the frame's rows counted through a null-typed column
    "n.is_null().sum()": lambda m: m.col("n").is_null().sum(),
    "n.is_not_null().sum()": lambda m: m.col("n").is_not_null().sum(),
    "n.is_null().mean()": lambda m: m.col("n").is_null().mean(),
    "n.fill_null(1).sum()": lambda m: m.col("n").fill_null(1).sum(),
    "n.fill_null(1).count()": lambda m: m.col("n").fill_null(1).count(),
    "n.fill_null(1).max()": lambda m: m.col("n").fill_null(1).max(),
    "n.fill_null(1).cum_sum()": lambda m: m.col("n").fill_null(1).cum_sum(),
    "n.is_null().cum_sum()": lambda m: m.col("n").is_null().cum_sum(),
    "n.fill_null(1).shift(1)": lambda m: m.col("n").fill_null(1).shift(1),
    "n.fill_null(1).rolling_sum(2)": lambda m: m.col("n").fill_null(1).rolling_sum(2),
    "n.fill_null(1).filter(a > 1).sum()": lambda m: m.col("n").fill_null(1).filter(
        m.col("a") > 1).sum(),
    "n.cast(Int64).fill_null(2).sum()": lambda m: m.col("n").cast(_cast(m, "Int64")).fill_null(
        2).sum(),
    "n.shift(1).is_null().sum()": lambda m: m.col("n").shift(1).is_null().sum(),
    "n.is_null().sum().over(g)": lambda m: m.col("n").is_null().sum().over("g"),
    "n.fill_null(1).cum_sum().over(g)": lambda m: m.col("n").fill_null(1).cum_sum().over("g"),
    "n.len()": lambda m: m.col("n").len(),
    "n.count()": lambda m: m.col("n").count(),
    "n.null_count()": lambda m: m.col("n").null_count(),
    "n.cum_count()": lambda m: m.col("n").cum_count(),
    "n.is_unique()": lambda m: m.col("n").is_unique(),
    "n.n_unique()": lambda m: m.col("n").n_unique(),
    # kept in the Null type
    "lit(None)": lambda m: m.lit(None),
    "n": lambda m: m.col("n"),
    "n.max()": lambda m: m.col("n").max(),
    "n.min()": lambda m: m.col("n").min(),
    "n.sum()": lambda m: m.col("n").sum(),
    "n.mean()": lambda m: m.col("n").mean(),
    "n.median()": lambda m: m.col("n").median(),
    "n.std()": lambda m: m.col("n").std(),
    "n.var()": lambda m: m.col("n").var(),
    "n.first()": lambda m: m.col("n").first(),
    "n.last()": lambda m: m.col("n").last(),
    "n.filter(a > 1).max()": lambda m: m.col("n").filter(m.col("a") > 1).max(),
    "n.max().over(g)": lambda m: m.col("n").max().over("g"),
    "n.first().over(g)": lambda m: m.col("n").first().over("g"),
    "n.shift(1)": lambda m: m.col("n").shift(1),
    "n.shift(-2).over(g)": lambda m: m.col("n").shift(-2).over("g"),
    "n.diff()": lambda m: m.col("n").diff(),
    "n.forward_fill()": lambda m: m.col("n").fill_null(strategy="forward"),
    "n.fill_null(mean)": lambda m: m.col("n").fill_null(strategy="mean"),
    "n.interpolate()": lambda m: m.col("n").interpolate(),
    "n * n": lambda m: m.col("n") * m.col("n"),
    "n + lit(None)": lambda m: m.col("n") + m.lit(None),
    "n % n": lambda m: m.col("n") % m.col("n"),
    "coalesce(n, n)": lambda m: m.coalesce(m.col("n"), m.col("n")),
    "max_horizontal(n, n)": lambda m: m.max_horizontal(m.col("n"), m.col("n")),
    "sum_horizontal(n)": lambda m: m.sum_horizontal(m.col("n")),
    "when(a > 1).then(None)": lambda m: m.when(m.col("a") > 1).then(None).otherwise(None),
    "when(a > 1).then(n)": lambda m: m.when(m.col("a") > 1).then(m.col("n")),
    # typed by the operation
    "n.max() + a": lambda m: m.col("n").max() + m.col("a"),
    "n.max().is_null()": lambda m: m.col("n").max().is_null(),
    "n / n": lambda m: m.col("n") / m.col("n"),
    "n < n": lambda m: m.col("n") < m.col("n"),
    "n.eq_missing(n)": lambda m: m.col("n").eq_missing(m.col("n")),
    "n.sqrt()": lambda m: m.col("n").sqrt(),
    "n.is_nan()": lambda m: m.col("n").is_nan(),
    "n.is_in([1])": lambda m: m.col("n").is_in([1]),
    "n.is_in([None], nulls_equal)": lambda m: m.col("n").is_in([None], nulls_equal=True),
    "n.is_in([None], nulls_equal).sum()": lambda m: m.col("n").is_in([None],
                                                                     nulls_equal=True).sum(),
    "mean_horizontal(n, n)": lambda m: m.mean_horizontal(m.col("n"), m.col("n")),
    "n.rolling_mean(2)": lambda m: m.col("n").rolling_mean(2),
    "n.rolling_quantile(0.5, 2)": lambda m: m.col("n").rolling_quantile(0.5, window_size=2),
    "n.ewm_mean(0.5)": lambda m: m.col("n").ewm_mean(alpha=0.5),
    "n.pct_change()": lambda m: m.col("n").pct_change(),
    "n.rank()": lambda m: m.col("n").rank(),
    "n.rank(dense)": lambda m: m.col("n").rank("dense"),
    "n.shift(1, fill_value=0)": lambda m: m.col("n").shift(1, fill_value=0),
    "n.cast(Date)": lambda m: m.col("n").cast(_cast(m, "Date")),
    # refused by polars, and so by colbridge (`REFUSED`)
    "n.cum_sum()": lambda m: m.col("n").cum_sum(),
    "n.abs()": lambda m: m.col("n").abs(),
    "n.exp()": lambda m: m.col("n").exp(),
    "n & n": lambda m: m.col("n") & m.col("n"),
    "n // n": lambda m: m.col("n") // m.col("n"),
    "n.product()": lambda m: m.col("n").product(),
}
# the cases that aggregate: each takes `group_by(...).agg` too
AGGREGATING = ["n.is_null().sum()", "n.is_not_null().sum()", "n.is_null().mean()",
               "n.fill_null(1).sum()", "n.fill_null(1).count()", "n.fill_null(1).max()",
               "n.fill_null(1).filter(a > 1).sum()", "n.cast(Int64).fill_null(2).sum()",
               "n.shift(1).is_null().sum()", "n.len()", "n.count()", "n.null_count()",
               "n.n_unique()", "lit(None)", "n.max()", "n.min()", "n.sum()", "n.mean()",
               "n.median()", "n.std()", "n.var()", "n.first()", "n.last()",
               "n.filter(a > 1).max()", "n.product()",
               "n.is_in([None], nulls_equal).sum()"]  # fmt: skip


REFUSED = ["n.cum_sum()", "n.abs()", "n.exp()", "n & n", "n // n", "n.product()"]


def _table(n: int, seed: int, *, offset: int = 0, chunks: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    total = n + offset
    table = pa.table({
        "a": pa.array(rng.integers(0, 4, total)),
        "g": pa.array(rng.integers(0, 3, total)),
        "n": pa.nulls(total),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


@pytest.mark.parametrize(("case", "rows"), [
    (case, rows) for case in CASES for rows in (0, 1, 6)
    # polars refuses only where rows reach the expression (not in an empty frame)
    if rows or case not in REFUSED])  # fmt: skip
def test_null_typed_columns_as_polars(case: str, rows: int) -> None:
    build = CASES[case]
    table = _table(rows, rows)
    assert_same_as_polars(table, lambda m, f: f.select(r=build(m)))
    assert_same_as_polars(table, lambda m, f: f.with_columns(r=build(m)))
    if case in REFUSED:
        return  # polars refuses only where rows reach the expression (none after a filter)
    assert_same_as_polars(table, lambda m, f: f.filter(m.col("a") > 0).with_columns(r=build(m)))
    if case in AGGREGATING:
        assert_same_as_polars(table, lambda m, f: f.group_by("g", maintain_order=True).agg(
            r=build(m)))  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(1, 40), seed=st.integers(0, 2**16), offset=st.integers(0, 9),
       chunks=st.integers(1, 3),
       case=st.sampled_from(sorted(set(CASES) - set(REFUSED))))  # fmt: skip
def test_generated_frames_as_polars(rows: int, seed: int, offset: int, chunks: int,
                                    case: str) -> None:  # fmt: skip
    # (polars types a window over no rows as Null where one over rows is typed: `n / n`)
    table = _table(rows, seed, offset=offset, chunks=chunks)
    build = CASES[case]
    assert_same_as_polars(table, lambda m, f: f.with_columns(r=build(m), s=build(m).over("g")))


def test_a_null_result_is_the_null_type_and_feeds_the_next_step() -> None:
    frame = pl.DataFrame({"a": [1, 2, 3], "n": pl.Series([None] * 3, dtype=pl.Null)})
    got = (frame.gpu.with_columns(m=cb.col("n").max(), s=cb.col("n").shift(1))
           .with_columns(k=cb.col("s").is_null().sum(), t=cb.col("m") + cb.col("a"))
           .compute())  # fmt: skip
    want = (frame.with_columns(m=pl.col("n").max(), s=pl.col("n").shift(1))
            .with_columns(k=pl.col("s").is_null().sum(), t=pl.col("m") + pl.col("a")))
    assert got.schema == want.schema
    assert got.schema["m"] == pl.Null
    assert got.schema["k"] == pl.UInt32
    assert_frame_equal(got, want, check_exact=True)
    # Arrow-backed pandas has the Null type too (`null[pyarrow]`), in and out (an object
    # column of Nones is String, as `polars.from_pandas` reads it)
    pdf = frame.to_pandas(use_pyarrow_extension_array=True)
    out = pdf.gpu.select(k=cb.col("n").is_null().sum(), m=cb.col("n").max()).compute()
    assert out["k"].tolist() == [3]
    assert str(out["m"].dtype) == "null[pyarrow]"
    assert out["m"].isna().all()


def test_every_kernel_tier_streams_and_dask(tmp_path: Any) -> None:
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow.parquet as pq

    table = _table(50, 7)
    frame = pl.from_arrow(table)
    exprs = {"k": lambda m: m.col("n").is_null().sum(), "s": lambda m: m.col("n").shift(1),
             "f": lambda m: m.col("n").fill_null(2).cum_sum(),
             "m": lambda m: m.col("n").max()}  # fmt: skip
    want = frame.with_columns(**{k: e(pl) for k, e in exprs.items()})  # type: ignore[union-attr]
    for tier in KERNEL_TIERS:  # NumPy, compiled, and the CUDA text run on the host
        lazy = cb.lazy(frame).with_columns(**{k: e(cb) for k, e in exprs.items()})
        assert_frame_equal(compute_on_tier(lazy, tier), want, check_exact=True)
    # a stream of record batches: the counts and scans carry across batches
    path = tmp_path / "n.parquet"
    pq.write_table(table, path, row_group_size=16)
    streamed = cb.lazy(pl.scan_parquet(path), batch_rows=37).with_columns(
        s=exprs["s"](cb), f=exprs["f"](cb), m=exprs["m"](cb)).compute()
    assert_frame_equal(pl.from_arrow(streamed) if not isinstance(streamed, pl.DataFrame)
                       else streamed, want.drop("k"), check_exact=True)  # fmt: skip
    # Arrow-backed pandas: `n` is `null[pyarrow]` in every partition (an object column of
    # Nones would be typed from Dask's empty meta partition: String, as polars has it)
    pdf = table.to_pandas(types_mapper=pd.ArrowDtype)
    lazy = cb.lazy(pdf).with_columns(r=cb.col("n").fill_null(1).rolling_sum(3),
                                     k=cb.col("n").is_null().sum())
    got = cb.dask.apply(lazy, dd.from_pandas(pdf, npartitions=3)).compute()
    assert got["r"].isna().tolist() == [True, True] + [False] * (len(pdf) - 2)
    assert got["r"].iloc[2:].tolist() == [3] * (len(pdf) - 2)
    assert got["k"].tolist() == [len(pdf)] * len(pdf)


@pytest.mark.parametrize("rows", [0, 1, 4])
def test_a_dictionary_of_no_values_is_a_null_column(rows: int) -> None:
    """pyarrow dictionary-encodes nulls alone as ``dictionary<values=null>``; polars reads
    that as its Null type, so colbridge does (it refused the column before)."""
    table = pa.table({"h": pa.nulls(rows).dictionary_encode(), "x": pa.array(range(rows))})
    assert table.schema.field("h").type.value_type == pa.null()

    def steps(m: Any, q: Any) -> Any:
        h = m.col("h")
        return q.select(h.is_first_distinct().alias("first"), h.is_null().alias("null"),
                        h.count().alias("count"), (m.col("x") + h).alias("sum"),
                        h.cast(_cast(m, "String")).alias("text"),
                        m.col("x").sum().over("h").alias("over"))  # fmt: skip

    assert_same_as_polars(table, steps, kinds=("pyarrow", "polars"))
