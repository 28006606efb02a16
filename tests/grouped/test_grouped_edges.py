"""Grouped work at the edges of polars' semantics: key and value types, against polars."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb


def _same(df: pl.DataFrame, steps: Any) -> None:
    import colbridge as cb

    for got, want in zip(steps(cb, df.gpu), steps(pl, df), strict=True):
        assert_frame_equal(got.compute(), want)


def test_first_and_last_of_times(tier: str) -> None:
    # a time per group is gathered by its integers (the kernels read Python times before)
    df = pl.DataFrame({"g": [1, 1, 2, 2], "t": [dt.time(1), None, dt.time(2, 0, 0, 5), None]})
    df = df.with_columns(n=pl.Series([5, 7, None, 9], dtype=pl.Int64).cast(pl.Time))

    def steps(m: Any, q: Any) -> list[Any]:
        t, n = m.col("t"), m.col("n")
        return [
            q.with_columns(f=t.first().over("g"), lt=t.last().over("g"), fn=n.last().over("g")),
            q.select(f=t.first(), lt=t.last(), fn=n.first()),
            q.group_by("g", maintain_order=True).agg(f=t.first(), lt=t.last(), fn=n.last()),
        ]

    _same(df, steps)


@pytest.mark.parametrize("n", [7, 150_000])  # NumPy's factorization, then the hashing one
def test_binary_keys(n: int, tier: str) -> None:
    rng = np.random.default_rng(n)
    keys = [None if v == 5 else bytes([int(v), 0]) for v in rng.integers(0, 6, n)]
    df = pl.DataFrame({"k": keys, "v": np.arange(n)})

    def steps(m: Any, q: Any) -> list[Any]:
        v = m.col("v")
        return [
            q.group_by("k", maintain_order=True).agg(m.len(), s=v.sum(), f=v.first()),
            q.with_columns(c=m.len().over("k"), d=v.is_first_distinct().over("k"),
                           r=v.cum_sum().over("k")),
        ]  # fmt: skip

    _same(df, steps)


def test_a_polars_lazyframe_keeps_its_enums() -> None:
    # a LazyFrame streams: the batches' Arrow dictionaries come back as polars Enums
    enum = pl.Enum(["b", "a"])
    df = pl.DataFrame({"e": pl.Series(["a", "b", "a"], dtype=enum), "x": [1.0, 2.0, 3.0]})

    def steps(m: Any, q: Any) -> list[Any]:
        x = m.col("x")
        return [
            q.with_columns(y=x * 2, f=m.col("e").shift(1)),
            q.with_columns(y=x.sum().over("e")),
            q.group_by("e", maintain_order=True).agg(y=x.sum()),
            q.filter(x > 10).with_columns(y=x * 2),
        ]

    import colbridge as cb

    for got, want in zip(steps(cb, df.lazy().gpu), steps(pl, df.lazy()), strict=True):
        assert_frame_equal(got.compute(), want.collect())


@pytest.mark.parametrize("func", ["sum", "product", "count", "null_count", "std", "var", "len",
                                  "mean", "max", "n_unique"])  # fmt: skip
def test_a_reduction_of_reductions_sees_one_value_per_group(func: str, tier: str) -> None:
    # `x.mean().sum().over(g)`: polars sums the group's one mean, not one copy per row
    df = pl.DataFrame({"x": [1, 2, None, 4, 10], "g": [0, 0, 1, 1, 1],
                       "n": [None, None, None, None, 1]})  # fmt: skip

    def build(m: Any) -> dict[str, Any]:
        return {"a": getattr(m.col("x").mean(), func)(), "b": getattr(m.col("n").max(), func)(),
                "c": getattr(m.col("x").sum() * 2 + m.col("n").min(), func)(),
                "d": getattr(m.lit(None, dtype=pl.Int64), func)()}  # fmt: skip

    assert_frame_equal(df.gpu.select(**build(cb)).compute(), df.select(**build(pl)))
    got = df.gpu.with_columns(**{k: v.over("g") for k, v in build(cb).items()}).compute()
    assert_frame_equal(got, df.with_columns(**{k: v.over("g") for k, v in build(pl).items()}))
    got = df.gpu.group_by("g", maintain_order=True).agg(**build(cb)).compute()
    assert_frame_equal(got, df.group_by("g", maintain_order=True).agg(**build(pl)))


@pytest.mark.parametrize("build", [
    lambda x: x.sum().cum_sum(), lambda x: x.sum().shift(1), lambda x: x.mean().rank(),
    lambda x: x.max().is_first_distinct(), lambda x: (x.sum() * 2).rolling_mean(2),
])  # fmt: skip
def test_an_ordered_operation_of_one_value_per_group_is_refused(build: Any) -> None:
    # it ran over one copy of the value per row (`x.sum().cum_sum().over(g)` gave a running
    # sum of the group's sum; polars sees one value)
    df = pl.DataFrame({"x": [1, 2, None, 4, 10], "g": [0, 0, 1, 1, 1]})
    with pytest.raises(cb.SchemaError, match="not one value per group"):
        df.gpu.with_columns(m=build(cb.col("x")).over("g")).compute()
