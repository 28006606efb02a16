"""Grouped work in jobs: streaming pipelines, the CLI and Dask give what one in-memory run gives.

Windows and ``group_by`` need statistics of whole groups; jobs compute them in
statistics passes (per-batch group tables merged by key) and look them up batch
by batch. Compared with polars on the whole data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.cli import main
from colbridge.io import JobSpecError, explain_pipeline, pipeline

N = 30_000


def make_table(n: int = N, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "g": pa.array(rng.choice(["a", "b", "c", "d"], n), mask=rng.random(n) < 0.05),
        "h": pa.array(rng.integers(0, 6, n), mask=rng.random(n) < 0.05),
        "f": pa.array(rng.choice([0.0, -0.0, np.nan, 2.5], n)),
        "x": pa.array(rng.normal(3.0, 2.0, n), mask=rng.random(n) < 0.1),
        "i": rng.integers(-9, 9, n).astype(np.int32),
    })  # fmt: skip


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("grouped_jobs") / "in.parquet"
    pq.write_table(make_table(), path, row_group_size=4_000)
    return str(path)


WITH = (
    "z = (x - mean(x).over(g)) / std(x).over(g); s = sum(i).over(g, h); "
    "l = last(x).over(f); n = len().over(h); d = x - mean(x); k = i % 3; "
    "r = mean(x).over(k)"
)


def polars_windows(df: pl.DataFrame) -> pl.DataFrame:
    x, i = pl.col("x"), pl.col("i")
    return (
        df.with_columns(z=(x - x.mean().over("g")) / x.std().over("g"))
        .with_columns(s=i.sum().over("g", "h"))
        .with_columns(l=x.last().over("f"))
        .with_columns(n=pl.len().over("h"))
        .with_columns(d=x - x.mean())
        .with_columns(k=i % 3)
        .with_columns(r=x.mean().over("k"))
        .filter(pl.col("z") > -1)
    )


def test_pipeline_windows_equal_one_run(data: str, tmp_path: Any) -> None:
    out = tmp_path / "w.parquet"
    result = pipeline(data, out, with_=WITH, filter="z > -1", batch_rows=3_000)
    assert result.batches > 5  # many batches, one answer
    expected = polars_windows(pl.read_parquet(data))
    assert_frame_equal(pl.read_parquet(out), expected, rel_tol=1e-9)
    # one pass per key set and level, then the streaming pass
    text = explain_pipeline(data, with_=WITH, filter="z > -1", batch_rows=3_000)
    assert f"{result.passes - 1} statistics pass(es)" in text


def test_pipeline_windows_after_filters_and_selects(data: str, tmp_path: Any) -> None:
    out = tmp_path / "s.parquet"
    steps = (
        cb.lazy(make_table(5)).filter(cb.col("i") > 0).select("g", "x", y=cb.col("x") * 2)
        .with_columns(m=cb.col("y").max().over("g"), c=cb.col("x").count().over("g"))
    )  # fmt: skip
    pipeline(data, out, steps=steps, batch_rows=7_000)
    df = pl.read_parquet(data)
    expected = (
        df.filter(pl.col("i") > 0).select("g", "x", y=pl.col("x") * 2)
        .with_columns(m=pl.col("y").max().over("g"), c=pl.col("x").count().over("g"))
    )  # fmt: skip
    assert_frame_equal(pl.read_parquet(out), expected, rel_tol=1e-9)


def test_pipeline_group_by_equals_one_run(data: str, tmp_path: Any) -> None:
    out = tmp_path / "g.parquet"
    x, i = cb.col("x"), cb.col("i")
    steps = (
        cb.lazy(make_table(5)).filter(i > -5)
        .group_by("g", "f").agg(s=x.sum(), m=x.mean(), sd=x.std(), v=x.var(ddof=0), n=cb.len(),
                                fi=i.first(), la=x.last(), mn=x.min(), mx=i.max(),
                                c=x.count(), nc=x.null_count(), r=x.sum() / i.sum(),
                                fs=x.filter(i > 0).sum())
        .filter(cb.col("n") > 10)
    )  # fmt: skip
    result = pipeline(data, out, steps=steps, batch_rows=5_000)
    assert result.passes == 2
    df = pl.read_parquet(data)
    px, pi = pl.col("x"), pl.col("i")
    expected = (
        df.filter(pi > -5)
        .group_by("g", "f", maintain_order=True)
        .agg(s=px.sum(), m=px.mean(), sd=px.std(), v=px.var(ddof=0), n=pl.len(), fi=pi.first(),
             la=px.last(), mn=px.min(), mx=pi.max(), c=px.count(), nc=px.null_count(),
             r=px.sum() / pi.sum(), fs=px.filter(pi > 0).sum())
        .filter(pl.col("n") > 10)
    )  # fmt: skip
    assert_frame_equal(pl.read_parquet(out), expected, rel_tol=1e-9)


def test_cli_with_over_in_the_string_language(data: str, tmp_path: Any) -> None:
    out = tmp_path / "cli.parquet"
    rc = main(["run", data, "-o", str(out), "--with", "m = over(mean(x), g)",
               "--with", "e = x - mean(x).over(g, h)", "--filter", "x > m", "--quiet"])  # fmt: skip
    assert rc == 0
    df = pl.read_parquet(data)
    x = pl.col("x")
    expected = df.with_columns(m=x.mean().over("g")).with_columns(
        e=x - x.mean().over("g", "h")).filter(x > pl.col("m"))  # fmt: skip
    assert_frame_equal(pl.read_parquet(out), expected, rel_tol=1e-9)


def test_n_unique_per_group_is_refused_in_a_stream(data: str, tmp_path: Any) -> None:
    with pytest.raises(JobSpecError, match="n_unique"):
        pipeline(data, tmp_path / "u.parquet", with_="u = n_unique(i).over(g)")


def test_empty_input(tmp_path: Any) -> None:
    path = tmp_path / "empty.parquet"
    pq.write_table(make_table(0), path)
    out = tmp_path / "o.parquet"
    pipeline(path, out, with_="m = mean(x).over(g)")
    assert pl.read_parquet(out).columns == ["g", "h", "f", "x", "i", "m"]
    assert pl.read_parquet(out).height == 0


# -- Dask ---------------------------------------------------------------------------------------


def _dask_frame(pdf: Any, npartitions: int) -> Any:
    dd = pytest.importorskip("dask.dataframe")
    return dd.from_pandas(pdf, npartitions=npartitions)


@pytest.mark.parametrize("scheduler", ["synchronous", "processes"])
def test_dask_windows_equal_one_run(scheduler: str) -> None:
    import dask

    from colbridge.dask import apply

    pdf = make_table(8_000, seed=1).to_pandas(types_mapper=lambda t: None)
    ddf = _dask_frame(pdf, 5)
    x = cb.col("x")
    plan = cb.lazy(pdf.head(3)).with_columns(
        z=((x - x.mean()) / x.std()).over("g"), s=cb.col("i").sum().over("h"), d=x - x.mean())
    with dask.config.set(scheduler=scheduler):
        got = apply(plan, ddf).compute()
    want = cb.lazy(pdf).with_columns(
        z=((x - x.mean()) / x.std()).over("g"), s=cb.col("i").sum().over("h"),
        d=x - x.mean()).compute(device="cpu")  # fmt: skip
    assert_frame_equal(pl.from_pandas(got.reset_index(drop=True)), pl.from_pandas(want),
                       rel_tol=1e-9)  # fmt: skip


def test_dask_group_by_equals_one_run() -> None:
    import dask

    from colbridge.dask import apply

    pdf = make_table(6_000, seed=2).to_pandas(types_mapper=lambda t: None)
    ddf = _dask_frame(pdf, 4)
    x = cb.col("x")
    plan = cb.lazy(pdf.head(3)).group_by("g").agg(m=x.mean(), n=cb.len(), sd=x.std())
    with dask.config.set(scheduler="synchronous"):
        got = apply(plan, ddf).compute()
    # the same steps on the whole frame, in one process
    one = cb.lazy(pdf).group_by("g").agg(m=x.mean(), n=cb.len(), sd=x.std()).compute()
    assert_frame_equal(pl.from_pandas(got.reset_index(drop=True)), pl.from_pandas(one),
                       rel_tol=1e-9, check_dtypes=False)  # fmt: skip

