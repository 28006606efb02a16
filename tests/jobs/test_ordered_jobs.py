"""Ordered operations in jobs: a stream carries them from batch to batch; Dask refuses them.

Streamed results (`colbridge.io.pipeline`, `colbridge run`) must equal polars over the
whole file, whatever the batch size: batches cut windows, runs of nulls and groups,
filters come before and after, reductions and windows read ordered results, and keys
(floats with NaN and -0.0, strings, several keys) meet new groups batch after batch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.backends.groups import factorize
from colbridge.backends.scans import ScanStreams
from colbridge.errors import JobSpecError
from colbridge.io import pipeline
from colbridge.testing.bad_inputs import cb_cli_main
from colbridge.types import DType

pytestmark = pytest.mark.filterwarnings("ignore::colbridge.DeviceFallbackWarning")


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    x[rng.random(n) < 0.03] = np.nan
    g = rng.choice(np.array([0.0, -0.0, 1.5, np.nan, 7.0]), n)
    return pa.table({
        "x": pa.array(x, mask=rng.random(n) < 0.15),
        "i": pa.array(rng.integers(-9, 9, n), type=pa.int32(), mask=rng.random(n) < 0.1),
        "g": pa.array(g, mask=rng.random(n) < 0.05),
        "s": pa.array(rng.choice(["a", "b", "c", "d"], n)),
    })  # fmt: skip


def _steps(m: Any, q: Any) -> Any:
    x, i = m.col("x"), m.col("i")
    return q.filter(i > -7).with_columns(
        s1=x.shift(2),
        sf=i.shift(3, fill_value=0).over("s"),
        d=i.diff(),
        p=x.pct_change(2),
        c=i.cum_sum(),
        cm=x.cum_max().over("g"),
        cc=x.cum_count().over("s"),
        r=x.rolling_mean(5, min_samples=2),
        rs=i.rolling_sum(4),
        v=x.rolling_std(4, min_samples=2).over("g"),
        mx=i.rolling_max(3).over("s"),
        e=x.ewm_mean(alpha=0.3, ignore_nulls=True).over("s"),
        e2=x.ewm_mean(span=4, adjust=False),
        f=x.fill_null(strategy="forward", limit=2).over("g"),
        cs=x.cum_sum().over("g", "s"),
        z=(x - x.shift(1)) / x.rolling_std(3, min_samples=2),
        w=x.mean().over("s") - x.shift(1),
    ).filter(m.col("c") > -40)


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> tuple[pa.Table, Path]:
    table = _table(3000, seed=7)
    path = tmp_path_factory.mktemp("ordered") / "in.parquet"
    pq.write_table(table, path, row_group_size=500)
    return table, path


@pytest.mark.parametrize("batch_rows", [37, 333, 10_000])
def test_stream_equals_polars_over_the_whole_file(
    parquet: tuple[pa.Table, Path], tmp_path: Path, batch_rows: int
) -> None:
    table, path = parquet
    want = _steps(pl, pl.from_arrow(table).lazy()).collect()
    out = tmp_path / "out.parquet"
    result = pipeline(path, out, steps=_steps(cb, cb.lazy(table)), batch_rows=batch_rows,
                      device="cpu")  # fmt: skip
    assert result.batches >= len(table) // min(batch_rows, 500)  # row groups cut batches too
    assert_frame_equal(pl.read_parquet(out), want, rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.parametrize("method", ["carry", "sort"])
def test_stream_equals_in_memory_compute(
    parquet: tuple[pa.Table, Path], tmp_path: Path, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # in memory, scans by key run by carries or by the sort; the stream always carries
    monkeypatch.setenv("COLBRIDGE_SCAN_BY_KEY", method)
    table, path = parquet
    lazy = _steps(cb, cb.lazy(table))
    out = tmp_path / "out.parquet"
    pipeline(path, out, steps=lazy, batch_rows=64, device="cpu")
    in_memory = pl.from_arrow(lazy.compute(device="cpu"))
    assert_frame_equal(pl.read_parquet(out), in_memory, rel_tol=1e-12, abs_tol=1e-12)


def test_reductions_and_windows_of_ordered_results_in_a_stream(
    parquet: tuple[pa.Table, Path], tmp_path: Path
) -> None:
    # a reduction over an ordered result needs a pass of its own, which carries too
    table, path = parquet

    def steps(m: Any, q: Any) -> Any:
        x, i = m.col("x"), m.col("i")
        return q.with_columns(d=x.diff()).with_columns(
            dz=(m.col("d") - m.col("d").mean()) / m.col("d").std(),
            top=i.cum_sum().max(),
            gm=m.col("d").abs().mean().over("s"),
        )

    want = steps(pl, pl.from_arrow(table).lazy()).collect()
    out = tmp_path / "out.parquet"
    result = pipeline(path, out, steps=steps(cb, cb.lazy(table)), batch_rows=250, device="cpu")
    assert result.passes > 1
    assert_frame_equal(pl.read_parquet(out), want, rel_tol=1e-9)

    def total(m: Any, q: Any) -> Any:
        return q.select(a=m.col("x").diff().abs().sum(), b=m.col("i").cum_sum().min())

    pipeline(path, out, steps=total(cb, cb.lazy(table)), batch_rows=250, device="cpu")
    want = total(pl, pl.from_arrow(table).lazy()).collect()
    assert_frame_equal(pl.read_parquet(out), want, rel_tol=1e-12)


@pytest.mark.parametrize("expr", [
    cb.col("x").cum_sum(reverse=True), cb.col("x").shift(-1), cb.col("x").diff(-2),
    cb.col("x").fill_null(strategy="backward"), cb.col("x").rolling_mean(3, center=True),
], ids=["reverse", "shift-negative", "diff-negative", "backward", "centred"])  # fmt: skip
def test_stream_refuses_what_reads_later_rows(
    parquet: tuple[pa.Table, Path], tmp_path: Path, expr: cb.Expr
) -> None:
    table, path = parquet
    out = tmp_path / "out.parquet"
    with pytest.raises(JobSpecError, match="read the rows after each row") as info:
        pipeline(path, out, steps=cb.lazy(table).with_columns(y=expr), batch_rows=100)
    assert "in memory" in str(info.value)
    assert not out.exists()


def test_cli_run_carries_ordered_operations(parquet: tuple[pa.Table, Path],
                                            tmp_path: Path) -> None:  # fmt: skip
    table, path = parquet
    out = tmp_path / "cli.parquet"
    code = cb_cli_main(["run", str(path), "-o", str(out), "-q", "--batch-rows", "100",
                        "--with", "d = diff(i); r = x.rolling_mean(3, min_samples=1); "
                        "k = over(cum_sum(i), s)"])  # fmt: skip
    assert code == 0
    x, i = pl.col("x"), pl.col("i")
    want = pl.from_arrow(table).with_columns(
        d=i.diff(), r=x.rolling_mean(3, min_samples=1), k=i.cum_sum().over("s"))
    assert_frame_equal(pl.read_parquet(out), want, rel_tol=1e-12)


def test_scan_streams_rewind_to_the_batch_start() -> None:
    # a batch that fails on the GPU runs again on the CPU from the same state
    keys = pa.array([1, 2, 1, 1, 2])
    values = pa.array([1.0, 2.0, None, 4.0, 5.0])
    streams = ScanStreams()

    def batch() -> list[Any]:
        groups = factorize([keys], len(keys))
        return streams.run("w", "cum_sum", (False,), values, DType.FLOAT64, DType.FLOAT64,
                           groups, [keys]).to_pylist()  # fmt: skip

    assert batch() == [1.0, 2.0, None, 5.0, 7.0]
    streams.checkpoint()
    first = batch()
    streams.rewind()
    assert batch() == first == [6.0, 9.0, None, 10.0, 14.0]


def test_dask_refuses_ordered_operations() -> None:
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    from colbridge.dask import apply

    ddf = dd.from_pandas(pd.DataFrame({"a": np.arange(10.0)}), npartitions=2)
    with pytest.raises(JobSpecError, match=r"cum_sum.*not supported in a Dask plan"):
        apply(cb.lazy(pd.DataFrame({"a": [1.0]})).with_columns(c=cb.col("a").cum_sum()), ddf)


def test_a_piece_run_again_after_a_gpu_attempt_starts_from_the_same_state() -> None:
    from colbridge.runtime.pieces import _before_attempt

    keys = pa.array([1, 1])
    values = pa.array([1.0, 2.0])
    streams = ScanStreams()

    def run() -> list[Any]:
        groups = factorize([keys], len(keys))
        return streams.run("w", "cum_sum", (False,), values, DType.FLOAT64, DType.FLOAT64,
                           groups, [keys]).to_pylist()  # fmt: skip

    saved: list[bool] = []
    _before_attempt(streams, "cuda", saved)  # the GPU attempt: state saved first
    assert saved == [True]
    assert run() == [1.0, 3.0]  # ... and it "fails" after its scans ran
    _before_attempt(streams, "cpu", saved)  # the CPU run: back to the saved state
    assert run() == [1.0, 3.0]
    cpu_only: list[bool] = []
    _before_attempt(streams, "cpu", cpu_only)  # a CPU-only piece: nothing saved or rewound
    assert cpu_only == []
    assert run() == [4.0, 6.0]
