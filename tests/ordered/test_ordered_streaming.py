"""Ordered expressions in streaming jobs: batch after batch, what one in-memory run gives.

A pipeline reads Parquet row groups in batches; a running scan (``cum_sum``,
``shift(1)``, a trailing window, ``ewm_mean``, forward fill, a shift of strings),
per group or not, must carry its state from one batch to the next; scans that look a
bounded number of rows ahead (negative shifts, centred windows, backward fills with a
limit) run over each batch with rows of the batches around it. Both must give what
polars gives on the whole data, whatever the batch size; scans that read every row
after each row (reversed, backward fill without a limit), and keyed ones beside a
look-ahead, must be refused up front with a `JobSpecError` that says so (never a
silently different result).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

import colbridge as cb
from colbridge.errors import JobSpecError
from colbridge.io import pipeline
from colbridge.testing.asserts import EXACT, column_mismatch
from tests.ordered.ordered_data import F64_TOL, frame

N = 20_000

#: name -> (expression built from a module, summed)
RUNNING = {
    "cs": (lambda m: m.col("float64").cum_sum(), True),
    "ci": (lambda m: m.col("int32").cum_sum(), False),
    "cm": (lambda m: m.col("float64").cum_max(), False),
    "cc": (lambda m: m.col("float64").cum_count(), False),
    "s1": (lambda m: m.col("int32").shift(1), False),
    "s3": (lambda m: m.col("float64").shift(3, fill_value=0.5), False),
    "d": (lambda m: m.col("int32").diff(), False),
    "p": (lambda m: m.col("float64").pct_change(2), True),
    "rs": (lambda m: m.col("float64").rolling_sum(5, min_samples=2), True),
    "rm": (lambda m: m.col("int32").rolling_mean(3), True),
    "rmin": (lambda m: m.col("float64").rolling_min(4, min_samples=1), False),
    "rstd": (lambda m: m.col("float64").rolling_std(6), True),
    "e": (lambda m: m.col("float64").ewm_mean(alpha=0.2), True),
    "ff": (lambda m: m.col("float64").fill_null(strategy="forward", limit=2), False),
    "sg": (lambda m: m.col("g").shift(3), False),  # strings: carried as strings, not codes
    "fg": (lambda m: m.col("g").shift(1).fill_null(strategy="forward", limit=1), False),
    "fwg": (lambda m: m.col("g").shift(1).forward_fill(), False),
    "gcs": (lambda m: m.col("int32").cum_sum().over("g"), False),
    "gs": (lambda m: m.col("float64").shift(2).over("g"), False),
    "grm": (lambda m: m.col("float64").rolling_mean(3, min_samples=1).over("g"), True),
    "ge": (lambda m: m.col("float64").ewm_mean(span=5, adjust=False).over("g"), True),
}
#: read every row after each row, or per key: refused
LOOK_AHEAD = {
    "csr": (lambda m: m.col("float64").cum_sum(reverse=True), True),
    "bf": (lambda m: m.col("float64").fill_null(strategy="backward"), False),
    "gsm": (lambda m: m.col("int32").shift(-2).over("g"), False),
}

#: read a bounded number of rows ahead: computed with halos
BOUNDED_AHEAD = {
    "sm1": (lambda m: m.col("int32").shift(-1), False),
    "rc": (lambda m: m.col("float64").rolling_max(3, center=True), False),
    "bwg": (lambda m: m.col("g").shift(-1).backward_fill(limit=2), False),
    "rq": (lambda m: m.col("float64").rolling_quantile(0.7, window_size=4), False),
    "lead": (lambda m: m.col("float64").shift(-2) - m.col("float64").shift(1), False),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("ordered_jobs") / "in.parquet"
    table = frame(N, seed=41, dtypes=("float64", "int32"), nulls="runs", key="string",
                  groups=5, specials=0.02)  # fmt: skip
    pq.write_table(table, path, row_group_size=3_000)
    return str(path)


def _run(data: str, out: Path, with_: Any, batch_rows: int) -> None:
    pipeline(data, out, with_=with_, batch_rows=batch_rows, device="cpu")


def _compare(got: pl.DataFrame, want: pl.DataFrame, ops: dict[str, Any]) -> None:
    assert got.columns == want.columns
    g, w = got.to_arrow(), want.to_arrow()
    for name in got.columns:
        tol = F64_TOL if ops.get(name, (None, False))[1] else EXACT
        problem = column_mismatch(g.column(name), w.column(name), tol)
        assert problem is None, f"column `{name}`: {problem}"


@pytest.mark.parametrize("batch_rows", [1_000, 7_777, N])
def test_running_scans_carry_across_batches(data: str, batch_rows: int, tmp_path: Path) -> None:
    out = tmp_path / "out.parquet"
    _run(data, out, {k: f(cb) for k, (f, _) in RUNNING.items()}, batch_rows)
    want = pl.read_parquet(data).with_columns(**{k: f(pl) for k, (f, _) in RUNNING.items()})
    _compare(pl.read_parquet(out), want, RUNNING)


@pytest.mark.parametrize("name", list(LOOK_AHEAD))
def test_look_ahead_scans_are_refused_before_reading(data: str, name: str,
                                                     tmp_path: Path) -> None:  # fmt: skip
    out = tmp_path / "out.parquet"
    build, _ = LOOK_AHEAD[name]
    with pytest.raises(JobSpecError, match=r"every row after each row|per key") as info:
        _run(data, out, {name: build(cb)}, 2_500)
    assert "in memory" in str(info.value)
    assert not out.exists()


@pytest.mark.parametrize("batch_rows", [999, 7_777])
def test_bounded_look_ahead_scans_read_the_next_batches(data: str, batch_rows: int,
                                                        tmp_path: Path) -> None:  # fmt: skip
    out = tmp_path / "out.parquet"
    _run(data, out, {k: f(cb) for k, (f, _) in BOUNDED_AHEAD.items()}, batch_rows)
    want = pl.read_parquet(data).with_columns(**{k: f(pl) for k, (f, _) in BOUNDED_AHEAD.items()})
    _compare(pl.read_parquet(out), want, BOUNDED_AHEAD)


def test_eval_strings_in_a_pipeline(data: str, tmp_path: Path) -> None:
    out = tmp_path / "out.parquet"
    text = ("a = shift(int32, 1); b = float64.rolling_mean(3, min_samples=1); "
            "c = cum_sum(int32).over(g)")
    _run(data, out, text, 4_000)
    i, x = pl.col("int32"), pl.col("float64")
    want = pl.read_parquet(data).with_columns(a=i.shift(1)).with_columns(
        b=x.rolling_mean(3, min_samples=1)).with_columns(c=i.cum_sum().over("g"))  # fmt: skip
    _compare(pl.read_parquet(out), want, {"b": (None, True)})



def _scan_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "scan pass:" in line]


def test_explain_of_a_stream_puts_its_scans_on_the_host(data: str) -> None:
    """Scans carried across batches run on the host, whatever device the kernels target."""
    x = cb.col("float64")
    exprs = {"s": x.cum_sum(), "r": x.rolling_mean(3)}
    streamed = cb.lazy(pl.scan_parquet(data), batch_rows=4_000).with_columns(**exprs)
    scans = _scan_lines(streamed.explain(target="cuda"))
    assert len(scans) == 2
    for line in scans:
        assert "on the host CPU (a stream carries its state from batch to batch" in line
        assert "on the device" not in line
    # the same plan over a frame in memory scans on the device
    whole = _scan_lines(cb.lazy(pl.read_parquet(data)).with_columns(**exprs).explain(target="cuda"))
    assert len(whole) == 2
    assert all("generated CUDA scan on the device" in line for line in whole)


@pytest.mark.parametrize("batch_rows", [1, 7, 333])
def test_streamed_floats_equal_the_whole_compute_bit_for_bit(batch_rows: int) -> None:
    # the carries are the state itself, so a stream adds in the same order as one
    # compute (a rolling var cuts the same blocks, from the first row, and sums a
    # window starting on a block's first row as that block's prefix in both)
    rng = np.random.default_rng(1)
    n = 2_000
    df = pl.DataFrame({"x": rng.normal(1e6, 1e3, n), "g": rng.integers(0, 5, n)})
    x = cb.col("x")
    exprs = {
        "rs": x.rolling_sum(20), "rm": x.rolling_mean(20, min_samples=3), "cs": x.cum_sum(),
        "ew": x.ewm_mean(alpha=0.1), "mx": x.rolling_max(9), "d": x.diff(3),
        "rmo": x.rolling_mean(20).over("g"), "rvo": x.rolling_var(5).over("g"),
        "rv": x.rolling_var(20), "rsd": x.rolling_std(7),
    }  # fmt: skip
    whole = cb.lazy(df).select(**exprs).compute()
    streamed = cb.lazy(df.lazy(), batch_rows=batch_rows).select(**exprs).compute()
    for name in exprs:
        want, got = whole[name], streamed[name]
        assert got.is_null().to_list() == want.is_null().to_list(), name
        assert got.to_list() == want.to_list(), name
    # and one group of the frame (`.over` a constant key) sums as the frame does
    keyed = cb.lazy(df.with_columns(k=pl.lit(0))).select(
        rv=x.rolling_var(20).over("k"), rsd=x.rolling_std(7).over("k")
    ).compute()  # fmt: skip
    assert keyed["rv"].to_list() == whole["rv"].to_list()
    assert keyed["rsd"].to_list() == whole["rsd"].to_list()


@pytest.mark.parametrize("batch_rows", [1, 3, 100])
def test_streamed_extremes_keep_the_latest_of_equal_zeros(batch_rows: int) -> None:
    # 0.0 == -0.0: of equal extremes the latest, as polars (2.2) and one compute give it
    # (a stream that read its ring by slot took the zero of the last slot, once wrapped)
    rng = np.random.default_rng(5)
    values = rng.choice([0.0, -0.0, 1.0, -1.0], 300)
    df = pl.DataFrame({"x": values, "g": rng.integers(0, 3, 300)})

    def build(m: Any) -> dict[str, Any]:
        x = m.col("x")
        return {"mx": x.rolling_max(2, min_samples=1), "mn": x.rolling_min(3),
                "mxo": x.rolling_max(4).over("g"), "mno": x.rolling_min(2).over("g")}  # fmt: skip

    want = df.select(**build(pl))
    streamed = cb.lazy(df.lazy(), batch_rows=batch_rows).select(**build(cb)).compute()
    for name in want.columns:
        w, g = want[name].to_numpy(), streamed[name].to_numpy()
        np.testing.assert_array_equal(g, w)
        assert (np.signbit(g) == np.signbit(w)).all(), name


@pytest.mark.parametrize("batch_rows", [1, 4, 100])
def test_streamed_variances_of_overflowing_values_equal_polars(batch_rows: int) -> None:
    # polars' variance of values whose spread overflows hangs on its Welford steps and on
    # where its blocks start (nulls shift them): a stream carries where, so the windows
    # of every batch take polars' steps
    rng = np.random.default_rng(9)
    n = 600
    huge = np.array([1e308, -1e308, 1e200, -3e154, 2e154, 1.0, -0.0, np.nan, np.inf])
    values = np.where(rng.random(n) < 0.4, rng.choice(huge, n), rng.normal(0.0, 1.0, n))
    df = pl.DataFrame({"x": values, "g": rng.integers(0, 3, n)}).with_columns(
        x=pl.when(pl.Series(rng.random(n) < 0.2)).then(None).otherwise(pl.col("x"))
    )  # fmt: skip

    def build(m: Any) -> dict[str, Any]:
        x = m.col("x")
        return {"rv": x.rolling_var(3), "rs": x.rolling_std(5, min_samples=1),
                "rvo": x.rolling_var(4, min_samples=2, ddof=0).over("g"),
                "rso": x.rolling_std(2).over("g")}  # fmt: skip

    want = df.select(**build(pl))
    streamed = cb.lazy(df.lazy(), batch_rows=batch_rows).select(**build(cb)).compute()
    for name in want.columns:
        w, g = want[name], streamed[name]
        assert g.is_null().to_list() == w.is_null().to_list(), name
        wv, gv = w.drop_nulls().to_numpy(), g.drop_nulls().to_numpy()
        assert (np.isinf(wv) == np.isinf(gv)).all(), name
        assert (np.isnan(wv) == np.isnan(gv)).all(), name
        assert ((wv == 0.0) == (gv == 0.0)).all(), name
        np.testing.assert_allclose(gv, wv, rtol=1e-9, err_msg=name)
