"""Ordered operations in jobs: a stream carries them from batch to batch; Dask refuses them.

Streamed results (`colbridge.io.pipeline`, `colbridge run`) must equal polars over the
whole file, whatever the batch size: batches cut windows, runs of nulls and groups,
filters come before and after, reductions and windows read ordered results, and keys
(floats with NaN and -0.0, strings, several keys) meet new groups batch after batch.
Shifts and forward fills of strings and categoricals carry the strings themselves,
through batches that share no string, empty, one-row and all-null batches.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.backends.groups import factorize
from colbridge.backends.scans import ScanStreams
from colbridge.errors import JobSpecError
from colbridge.io import pipeline
from colbridge.testing.asserts import as_polars
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
    cb.col("x").cum_sum(reverse=True), cb.col("x").fill_null(strategy="backward"),
], ids=["reverse", "backward"])  # fmt: skip
def test_stream_refuses_what_reads_every_later_row(
    parquet: tuple[pa.Table, Path], tmp_path: Path, expr: cb.Expr
) -> None:
    table, path = parquet
    out = tmp_path / "out.parquet"
    with pytest.raises(JobSpecError, match="read every row after each row") as info:
        pipeline(path, out, steps=cb.lazy(table).with_columns(y=expr), batch_rows=100)
    assert "in memory" in str(info.value)
    assert not out.exists()


def _ahead(m: Any, q: Any) -> Any:
    x, i = m.col("x"), m.col("i")
    return q.with_columns(
        lead=x.shift(-1),
        lead_fill=i.shift(-3, fill_value=0),
        d=i.diff(-2),
        p=x.pct_change(-1),
        c=x.rolling_mean(5, center=True, min_samples=1),
        cs=i.rolling_sum(4, center=True),
        b=x.fill_null(strategy="backward", limit=2),
        both=(x - x.shift(-2)).rolling_max(3),
        med=x.rolling_median(4),
        q=i.rolling_quantile(0.3, window_size=5, center=True),
        sk=x.rolling_skew(6),
        lag=x.shift(2) - x.shift(-2),
        centred=i - i.mean(),  # (x holds NaN: its mean is NaN however it is summed)
    )


@pytest.mark.parametrize("batch_rows", [1, 3, 37, 333, 10_000])
def test_stream_reads_rows_ahead_from_the_next_batches(
    parquet: tuple[pa.Table, Path], tmp_path: Path, batch_rows: int
) -> None:
    # negative shifts, centred windows, backward fills with a limit and windows computed
    # from whole columns (rolling quantiles, skews) run over each batch with its halos:
    # batches shorter than the halo (1, 3 rows) take it from several batches around them
    table, path = parquet
    if batch_rows < 10:
        table = table.slice(0, 200)
        path = tmp_path / "short.parquet"
        pq.write_table(table, path, row_group_size=50)
    out = tmp_path / "out.parquet"
    result = pipeline(path, out, steps=_ahead(cb, cb.lazy(table)), batch_rows=batch_rows)
    want = _ahead(pl, pl.from_arrow(table).lazy()).collect()
    assert_frame_equal(pl.read_parquet(out), want, rel_tol=1e-9, abs_tol=1e-12)
    assert result.rows_in == result.rows_out == table.num_rows
    streamed = cb.lazy(pl.scan_parquet(path), batch_rows=batch_rows)
    picked = ("lead", "c", "med")
    got = _ahead(cb, streamed).select(*picked, m=cb.col("lead_fill").sum()).compute()
    assert_frame_equal(as_polars(got), want.select(*picked, m=pl.col("lead_fill").sum()),
                       rel_tol=1e-9)  # fmt: skip


def test_stream_reads_rows_ahead_after_a_select_and_before_a_filter(
    parquet: tuple[pa.Table, Path], tmp_path: Path
) -> None:
    table, path = parquet

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x")
        return q.select("i", lead=x.shift(-2), s=m.col("s")).filter(
            m.col("lead") > 0).with_columns(total=m.col("lead").sum())  # fmt: skip

    out = tmp_path / "out.parquet"
    pipeline(path, out, steps=steps(cb, cb.lazy(table)), batch_rows=41)
    want = steps(pl, pl.from_arrow(table).lazy()).collect()
    assert_frame_equal(pl.read_parquet(out), want, rel_tol=1e-12)
    one_row = tmp_path / "row.parquet"  # every output a reduction: one row
    pipeline(path, one_row, steps=cb.lazy(table).select(
        n=cb.col("x").shift(-1).count(), m=cb.col("x").rolling_max(3, center=True).max()),
        batch_rows=41)  # fmt: skip
    x = pl.col("x")
    assert_frame_equal(pl.read_parquet(one_row), pl.from_arrow(table).select(
        n=x.shift(-1).count(), m=x.rolling_max(3, center=True).max()))  # fmt: skip


@pytest.mark.parametrize(("expr", "match"), [
    (cb.col("x").shift(-1).over("s"), r'per key are not supported in a streamed job '
     r'.* together with `col\("x"\)\.shift\(-1, None\)`'),
    (cb.col("x").shift(-1) + cb.col("x").cum_sum(), r'`col\("x"\)\.cum_sum\(False\)`: '
     r'ordered operations that read every row before .* bounded reach and no key'),
    (cb.col("x").shift(-1) + cb.col("x").sum().over("s"), r"together with windows"),
    (cb.col("x").filter(cb.col("i") > 0).shift(-1).sum(), r"over filtered rows"),
], ids=["keyed", "unbounded", "window", "filtered"])  # fmt: skip
def test_stream_refuses_what_halos_cannot_do_beside_rows_ahead(
    parquet: tuple[pa.Table, Path], tmp_path: Path, expr: cb.Expr, match: str
) -> None:
    # a stream carries these from batch to batch, but not beside an operation that reads
    # rows ahead, which runs over each batch with its halos
    table, path = parquet
    out = tmp_path / "out.parquet"
    with pytest.raises(JobSpecError, match=match):
        pipeline(path, out, steps=cb.lazy(table).with_columns(y=expr), batch_rows=100)
    assert not out.exists()


def test_cli_run_carries_ordered_operations(parquet: tuple[pa.Table, Path],
                                            tmp_path: Path) -> None:  # fmt: skip
    table, path = parquet
    out = tmp_path / "cli.parquet"
    code = cb_cli_main(["run", str(path), "-o", str(out), "-q", "--batch-rows", "100",
                        "--with", "d = diff(i); r = x.rolling_mean(3, min_samples=1); "
                        "k = over(cum_sum(i), s); t = over(shift(s, 2), g)"])  # fmt: skip
    assert code == 0
    x, i = pl.col("x"), pl.col("i")
    want = pl.from_arrow(table).with_columns(
        d=i.diff(), r=x.rolling_mean(3, min_samples=1), k=i.cum_sum().over("s"),
        t=pl.col("s").shift(2).over("g"))  # fmt: skip
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


# -- strings and categoricals moved from batch to batch -------------------------------------
# Each batch dictionary-encodes its strings its own way, so a shift or a forward fill
# of a string or categorical column carries the strings themselves, not their codes
# (and a running minimum or maximum of strings, the string it holds).

_CATEGORICAL = pa.dictionary(pa.uint32(), pa.large_string())  # polars' Categorical


def _strings_table(n: int, seed: int) -> pa.Table:
    """Strings whose vocabulary changes every 40 rows (batches that share no string),
    nulls at random, leading, trailing and in a run of 150 rows (one that spans many
    batches and leaves some batches all null), and a categorical column beside them."""
    rng = np.random.default_rng(seed)
    rows = np.arange(n)
    words = np.array([f"r{r // 40}w{j}" for r, j in zip(rows, rng.integers(0, 4, n),
                                                          strict=True)])  # fmt: skip
    words[rng.random(n) < 0.1] = ""  # the empty string is a value, not a null
    s_null = rng.random(n) < 0.25
    s_null[:3] = True
    s_null[-1] = True
    s_null[100:250] = True
    c_null = rng.random(n) < 0.3
    c_null[170:230] = True
    cats = rng.choice(np.array(["x", "y", "zz", "w"]), n)
    cats[rows >= 300] = "late"  # a category no earlier batch has
    return pa.table({
        "s": pa.array(words, pa.large_string(), mask=s_null),
        "c": pa.array(cats, pa.large_string(), mask=c_null).cast(_CATEGORICAL),
        "k": pa.array(rng.choice(np.array(["k0", "k1", "k2"]), n), mask=rng.random(n) < 0.1),
        "keep": pa.array((rows < 60) | (rows >= 90)),  # a filter that empties batches
    })  # fmt: skip


def _write_row_groups(table: pa.Table, path: Path, sizes: list[int]) -> None:
    """``table`` as a Parquet file whose row groups have ``sizes`` rows, then the rest."""
    with pq.ParquetWriter(path, table.schema) as writer:
        start = 0
        for size in [*sizes, len(table)]:
            part = table.slice(start, size)
            if part.num_rows:
                writer.write_table(part)
            start += part.num_rows


def _moves(m: Any, q: Any) -> Any:
    s, c = m.col("s"), m.col("c")
    return q.with_columns(
        s1=s.shift(1), s9=s.shift(9), sf=s.shift(4, fill_value="edge"),
        ff=s.fill_null(strategy="forward"), f2=s.fill_null(strategy="forward", limit=2),
        gs=s.shift(3).over("k"), gsf=s.shift(2, fill_value="none").over("k"),
        gf=s.fill_null(strategy="forward", limit=4).over("k"),
        c1=c.shift(2), cf=c.fill_null(strategy="forward"), cz=c.shift(3, fill_value="z"),
        gc=c.shift(1).over("k"), gcf=c.fill_null(strategy="forward", limit=1).over("k"),
        up=s.str.to_uppercase().shift(1),  # the codes of `s`, an uppercased dictionary
        twice=s.shift(2).fill_null(strategy="forward").over("k"),
        same=s.shift(1) == s, n=s.shift(1).is_null(),
        # compared, not only moved: the carried strings rank among each batch's own
        mn=s.cum_min(), mx=s.cum_max(), gmx=s.cum_max().over("k"),
        umn=s.str.to_uppercase().cum_min(),
    )


@pytest.fixture(scope="module")
def strings(tmp_path_factory: pytest.TempPathFactory) -> tuple[pa.Table, Path]:
    table = _strings_table(400, seed=5)
    path = tmp_path_factory.mktemp("strings") / "in.parquet"
    # one-row row groups, and groups that cut the vocabulary regions and the null run
    _write_row_groups(table, path, [1, 1, 1, 7, 40, 1, 33, 60, 3, 97])
    return table, path


@pytest.mark.parametrize("filtered", [False, True], ids=["all", "filtered"])
@pytest.mark.parametrize("batch_rows", [1, 2, 13, 10_000])
def test_strings_moved_across_batches_equal_polars(strings: tuple[pa.Table, Path],
                                                   tmp_path: Path, batch_rows: int,
                                                   filtered: bool) -> None:  # fmt: skip
    table, path = strings

    def steps(m: Any, q: Any) -> Any:
        return _moves(m, q.filter(m.col("keep")) if filtered else q)

    want = steps(pl, pl.from_arrow(table).lazy()).collect()
    assert want.schema["cf"] == want.schema["cz"] == pl.Categorical
    out = tmp_path / "out.parquet"
    pipeline(path, out, steps=steps(cb, cb.lazy(table)), batch_rows=batch_rows, device="cpu")
    got = pl.read_parquet(out)
    assert got.schema == want.schema
    assert_frame_equal(got, want)
    # and the in-memory compute, which the stream must equal
    assert_frame_equal(pl.from_arrow(steps(cb, cb.lazy(table)).compute(device="cpu")), want)


def test_strings_moved_in_a_polars_stream_and_an_arrow_stream(
    strings: tuple[pa.Table, Path]
) -> None:
    table, path = strings
    lf = pl.scan_parquet(path)
    want = _moves(pl, lf).collect()
    got = _moves(cb, cb.lazy(lf, batch_rows=7)).compute(device="cpu")
    assert isinstance(got, pl.DataFrame)
    assert_frame_equal(got, want)
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=11))
    got = pl.from_arrow(_moves(cb, cb.lazy(reader, batch_rows=5)).compute(device="cpu"))
    assert_frame_equal(got, want)
    text = _moves(cb, cb.lazy(lf, batch_rows=7)).explain(device="cpu")
    assert 'scan pass: col("s").shift(9, None) over the rows in frame order' in text
    assert "it moves string codes: a stream carries the strings themselves" in text


def test_string_scan_carries_only_the_strings_it_holds() -> None:
    # a shift by 2 holds its last 2 rows: the next batch's dictionary is those strings,
    # then its own (bounded by the carry, not growing with the stream)
    streams = ScanStreams()

    def batch(values: list[str | None]) -> pa.Array:
        encoded = pa.array(values, pa.large_string()).dictionary_encode()
        return streams.run("w", "shift", (2, None), encoded.indices, DType.INT32, DType.INT32,
                           None, [], encoded.dictionary)  # fmt: skip

    first = batch(["a", "b", None, "c"])
    assert first.dictionary_decode().to_pylist() == [None, None, "a", "b"]
    second = batch(["x", "x"])  # shares no string with the batch before
    assert second.dictionary.to_pylist() == ["c", "x"]  # `None` is not a string held
    assert second.dictionary_decode().to_pylist() == [None, "c"]
    streams.checkpoint()
    third = batch(["y"])
    assert third.dictionary.to_pylist() == ["x", "y"]
    assert third.dictionary_decode().to_pylist() == ["x"]
    streams.rewind()  # a batch run again (after a GPU failure) starts from the strings held
    assert batch(["y"]).dictionary_decode().to_pylist() == ["x"]
    assert batch([]).dictionary_decode().to_pylist() == []  # an empty batch keeps the carry
    assert batch([None, None, "z"]).dictionary_decode().to_pylist() == ["x", "y", None]


_WORDS = st.sampled_from(["", "a", "b", "cc", "dd", "é", "a b", "zz"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(st.none() | _WORDS, min_size=0, max_size=60),
    keys=st.lists(st.sampled_from(["p", "q", None]), min_size=60, max_size=60),
    cuts=st.lists(st.integers(0, 9), max_size=12),
    batch_rows=st.integers(1, 12),
    n=st.integers(1, 8),
    limit=st.none() | st.integers(0, 4),
    categorical=st.booleans(),
)
def test_streamed_string_moves_equal_polars(values: list[str | None], keys: list[str | None],
                                            cuts: list[int], batch_rows: int, n: int,
                                            limit: int | None,
                                            categorical: bool) -> None:  # fmt: skip
    column = pa.array(values, pa.large_string())
    table = pa.table({"s": column.cast(_CATEGORICAL) if categorical else column,
                      "k": pa.array(keys[: len(values)], pa.large_string())})  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        s = m.col("s")
        return q.with_columns(a=s.shift(n), b=s.shift(n, fill_value="fill"),
                              f=s.fill_null(strategy="forward", limit=limit),
                              g=s.shift(n).over("k"),
                              h=s.fill_null(strategy="forward", limit=limit).over("k"))  # fmt: skip

    want = steps(pl, pl.from_arrow(table).lazy()).collect()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.parquet"
        _write_row_groups(table, path, cuts)  # row groups of random sizes, then batches
        pipeline(path, Path(tmp) / "out.parquet", steps=steps(cb, cb.lazy(table)),
                 batch_rows=batch_rows, device="cpu")  # fmt: skip
        got = pl.read_parquet(Path(tmp) / "out.parquet")
    assert_frame_equal(got, want)
