from __future__ import annotations

import itertools
import math
import os

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import ColumnNotFoundError, ExpressionSyntaxError, InvalidOperationError
from colbridge.io import JobSpecError, pipeline
from colbridge.plan.logical import Step
from colbridge.plan.streaming import resolve_aggregates
from colbridge.runtime.pieces import fold_reductions

N = 60_000
WITH = "z = (a - mean(a)) / std(a); w = b * 2 + a"
FILTER = "b > 10"


def make_table(n: int = N, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    a = rng.normal(5.0, 2.0, n)
    return pa.table(
        {
            "a": pa.array(a, mask=rng.random(n) < 0.1),
            "b": rng.integers(0, 100, n).astype(np.int32),
            "s": pa.array(rng.choice(["x", "y"], n)),
        }
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("pipe") / "in.parquet"
    pq.write_table(make_table(), path, row_group_size=10_000)
    return str(path)


def polars_expected(df: pl.DataFrame) -> pl.DataFrame:
    a = pl.col("a")
    return df.with_columns(z=(a - a.mean()) / a.std(), w=pl.col("b") * 2 + a).filter(
        pl.col("b") > 10
    )


def assert_frames_close(got: pl.DataFrame, exp: pl.DataFrame) -> None:
    assert got.columns == exp.columns
    assert got.height == exp.height
    for name in got.columns:
        g, e = got[name], exp[name]
        assert g.null_count() == e.null_count(), name
        if g.dtype.is_float():
            np.testing.assert_allclose(
                g.to_numpy(), e.to_numpy(), rtol=1e-12, atol=1e-12, equal_nan=True
            )
        else:
            assert g.to_list() == e.to_list(), name


def test_zscore_and_filter_match_polars_on_whole_data(data: str, tmp_path) -> None:
    out = tmp_path / "out.parquet"
    result = pipeline(data, out, with_=WITH, filter=FILTER, batch_rows=7_000)
    assert result.batches >= 9
    assert result.passes == 2  # one statistics pass + the streaming pass
    got = pl.read_parquet(out)
    assert_frames_close(got, polars_expected(pl.read_parquet(data)))


def test_streaming_equals_single_process_run(data: str, tmp_path) -> None:
    out = tmp_path / "out.arrow"
    pipeline(data, out, with_=WITH, filter=FILTER, batch_rows=7_000)
    whole = cb.lazy(pq.read_table(data)).eval(WITH).filter(cb.col("b") > 10).compute()
    with pa.memory_map(str(out)) as src:
        got = pa.ipc.open_file(src).read_all()
    assert got.schema == whole.schema
    np.testing.assert_allclose(got["z"].to_numpy(), whole["z"].to_numpy(), rtol=1e-12, atol=1e-13)
    assert got["w"].equals(whole["w"])


def test_nested_reductions_resolve_level_by_level(data: str, tmp_path) -> None:
    out = tmp_path / "nested.parquet"
    result = pipeline(
        data, out, with_={"d": cb.col("b") - (cb.col("b") - cb.col("b").mean()).abs().max()},
        batch_rows=9_000,
    )  # fmt: skip
    assert result.passes == 3
    df = pl.read_parquet(data)
    b = pl.col("b")
    exp = df.with_columns(d=b - (b - b.mean()).abs().max())
    np.testing.assert_allclose(pl.read_parquet(out)["d"].to_numpy(), exp["d"].to_numpy())


def test_folder_glob_and_lazyframe_steps(tmp_path) -> None:
    folder = tmp_path / "parts"
    folder.mkdir()
    tables = [make_table(5_000, seed) for seed in range(3)]
    for i, t in enumerate(tables):
        pq.write_table(t, folder / f"part-{i}.parquet")
    plan = cb.lazy(tables[0]).eval(WITH).filter(cb.col("b") > 10)
    whole = pl.from_arrow(pa.concat_tables(tables))
    for source in (folder, str(folder / "*.parquet")):
        out = tmp_path / "out.parquet"
        pipeline(source, out, steps=plan, batch_rows=4_000)
        assert_frames_close(pl.read_parquet(out), polars_expected(whole))


def test_one_row_result_of_reductions(data: str, tmp_path) -> None:
    out = tmp_path / "agg.parquet"
    pipeline(data, out, select=[cb.col("a").mean().alias("m"), cb.col("b").sum().alias("s")],
             batch_rows=8_000)  # fmt: skip
    got = pl.read_parquet(out)
    df = pl.read_parquet(data)
    assert got.height == 1
    assert got["s"][0] == df["b"].sum()
    assert math.isclose(got["m"][0], df["a"].mean(), rel_tol=1e-13)


def test_filter_removing_everything_writes_an_empty_file_with_columns(data: str, tmp_path) -> None:
    out = tmp_path / "empty.parquet"
    result = pipeline(data, out, with_=WITH, filter="b > 1000", batch_rows=20_000)
    assert result.rows_out == 0
    got = pq.read_table(out)
    assert got.num_rows == 0
    assert got.column_names == ["a", "b", "s", "z", "w"]


def test_bad_batch_leaves_no_output_and_keeps_old_file(tmp_path) -> None:
    t = pa.table({"x": np.concatenate([np.zeros(30_000), np.full(10_000, 1000.0)])})
    src = tmp_path / "in.parquet"
    pq.write_table(t, src, row_group_size=10_000)
    out = tmp_path / "out.parquet"
    out.write_bytes(b"previous output")
    with pytest.raises(InvalidOperationError):
        pipeline(src, out, with_='y = cast(x, "int8")', batch_rows=10_000)
    assert out.read_bytes() == b"previous output"
    assert sorted(os.listdir(tmp_path)) == ["in.parquet", "out.parquet"]


def test_errors_before_reading_data(data: str, tmp_path) -> None:
    out = tmp_path / "o.parquet"
    with pytest.raises(ColumnNotFoundError, match="nope"):
        pipeline(data, out, with_="z = nope + 1")
    with pytest.raises(ExpressionSyntaxError):
        pipeline(data, out, with_="z = a +")
    with pytest.raises(JobSpecError, match="does not exist"):
        pipeline(tmp_path / "missing.parquet", out, with_=WITH)
    with pytest.raises(JobSpecError, match="also an input"):
        pipeline(data, data, with_=WITH)
    assert not out.exists()


def test_memory_limit_sets_batch_rows(data: str, tmp_path) -> None:
    result = pipeline(data, tmp_path / "o.parquet", with_=WITH, memory_limit="1MB")
    assert 1024 <= result.batch_rows < 50_000
    # batches never span a row group: count them from the file's own metadata
    meta = pq.read_metadata(data)
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert result.batches == sum(math.ceil(rows / result.batch_rows) for rows in groups)
    assert result.batches > 1
    with pytest.raises(JobSpecError, match="memory limit"):
        pipeline(data, tmp_path / "o.parquet", with_=WITH, memory_limit="lots")


@pytest.mark.parametrize("splits", [[1], [3, 5], [0, 2, 2, 9]])
def test_folded_partials_equal_whole_column_statistics(splits: list[int]) -> None:
    rng = np.random.default_rng(len(splits))
    x = rng.normal(3.0, 4.0, 200)
    x[rng.random(200) < 0.1] = np.nan
    table = pa.table({"x": pa.array(x, from_pandas=True), "i": rng.integers(-9, 9, 200)})
    cuts = np.cumsum([0, *splits, 200 - sum(splits)])
    a, i = cb.col("x"), cb.col("i")
    exprs = [a.mean(), a.std(), a.var(0), a.min(), a.max(), a.sum(), a.count(), a.null_count(),
             i.sum(), i.mean()]  # fmt: skip
    aggs = [e.node for e in exprs]
    pieces = [table.slice(lo, hi - lo) for lo, hi in itertools.pairwise(cuts)]
    values = fold_reductions((), aggs, pieces, table.slice(0, 0), "cpu")
    valid = x[~np.isnan(x)]
    ints = table.column("i").to_numpy()
    want = [valid.mean(), valid.std(ddof=1), valid.var(ddof=0), valid.min(), valid.max(),
            valid.sum(), len(valid), 200 - len(valid), ints.sum(), ints.mean()]  # fmt: skip
    for agg, expected in zip(aggs, want, strict=True):
        got = values[agg].value
        assert math.isclose(got, expected, rel_tol=1e-12), (agg, got, expected)


def test_resolve_aggregates_substitutes_typed_literals() -> None:
    t = pa.table({"f": pa.array([1.0, 2.0, 3.0, 6.0], pa.float32())})
    steps = (Step("with_columns", (("g", (cb.col("f") - cb.col("f").mean()).node),)),)

    def reduce(prefix, aggs):  # type: ignore[no-untyped-def]
        return fold_reductions(prefix, aggs, [t.slice(0, 1), t.slice(1, 3)], t.slice(0, 0))

    resolved, passes = resolve_aggregates(steps, reduce)
    assert passes == 1
    assert "lit(3.0, dtype=float32)" in repr(resolved[0].items[0][1])
    got = cb.LazyFrame(t, resolved).compute("cpu")
    assert got["g"].type == pa.float32()
    assert got["g"].to_pylist() == [-2.0, -1.0, 0.0, 3.0]


def test_parquet_output_dictionary_encodes_all_but_float_columns(data: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out.parquet"
    pipeline(data, out, with_=WITH, filter=FILTER)
    meta = pq.ParquetFile(out).metadata
    encodings = {
        meta.schema.column(i).name: meta.row_group(0).column(i).encodings
        for i in range(meta.num_columns)
    }
    assert set(encodings) == {"a", "b", "s", "z", "w"}
    for name in ("a", "z", "w"):  # floats: plain encoding (no dictionary attempt)
        assert "RLE_DICTIONARY" not in encodings[name], (name, encodings[name])
    for name in ("b", "s"):  # integers and strings keep their dictionary
        assert "RLE_DICTIONARY" in encodings[name], (name, encodings[name])
    got = pl.read_parquet(out)
    assert_frames_close(got, polars_expected(pl.read_parquet(data)))


def test_batches_differing_in_which_columns_hold_nulls_share_kernels(tmp_path) -> None:
    # Kernels are made per set of inputs with nulls. Row i holds nulls in the columns
    # of the bits of i % 32, so one-row batches bring every one of the 32 subsets of
    # five columns; within the job a column stays nullable once it had a null, which
    # takes the sets {}, {c0}, {c0, c1}, ... : at most six variants, not 32.
    n, width = 64, 5
    rng = np.random.default_rng(3)
    table = pa.table({
        f"c{j}": pa.array(rng.normal(size=n), mask=(np.arange(n) % 32 >> j) & 1 == 1)
        for j in range(width)
    })
    path = tmp_path / "in.parquet"
    pq.write_table(table, path, row_group_size=1)
    c = [cb.col(f"c{j}") for j in range(width)]
    plan = cb.lazy(table).with_columns(
        total=c[0] + c[1] + c[2] + c[3] + c[4], scaled=c[4] * 2.5, spread=c[0] - c[3])
    before = cb.cache_info().compiles
    pipeline(path, tmp_path / "out.parquet", steps=plan, batch_rows=1, device="cpu")
    compiled = cb.cache_info().compiles - before
    assert 1 <= compiled <= width + 1, compiled
    p = [pl.col(f"c{j}") for j in range(width)]
    want = pl.from_arrow(table).with_columns(
        total=p[0] + p[1] + p[2] + p[3] + p[4], scaled=p[4] * 2.5, spread=p[0] - p[3])
    assert_frame_equal(pl.read_parquet(tmp_path / "out.parquet"), want)
    # outside a job a compute reads validity only where its columns have nulls
    clean = table.slice(0, 1)  # row 0: no nulls at all
    got = cb.lazy(clean).with_columns(total=c[0] + c[1] + c[2] + c[3] + c[4]).compute()
    assert got["total"].chunk(0).buffers()[0] is None


@pytest.mark.parametrize("batch_rows", [1, 2, 100])
def test_ipc_output_of_dictionaries_that_differ(tmp_path, batch_rows: int) -> None:
    # an IPC file cannot replace a dictionary: each batch's new values are added to it
    def dictionary(values: list[str | None], labels: list[str | None]) -> pa.Array:
        indices = pa.array([None if v is None else labels.index(v) for v in values], pa.int8())
        return pa.DictionaryArray.from_arrays(indices, pa.array(labels))

    first = pa.Table.from_batches([
        pa.record_batch({"g": dictionary(["a", "b", None], ["a", "b"]), "x": [1, 2, 3]}),
        pa.record_batch({"g": dictionary(["c", None], ["c"]), "x": [4, 5]}),
    ])  # fmt: skip
    second = pa.table({"g": dictionary(["d", "a", "b", "d"], ["d", "b", "a"]), "x": [6, 7, 8, 9]})
    pq.write_table(first, tmp_path / "p0.parquet", row_group_size=3)
    pq.write_table(second, tmp_path / "p1.parquet", row_group_size=2)
    out = tmp_path / "out.arrow"
    pipeline([str(tmp_path / "p0.parquet"), str(tmp_path / "p1.parquet")], out,
             with_={"y": cb.col("x") * 2}, batch_rows=batch_rows)  # fmt: skip
    with pa.memory_map(str(out)) as src:
        got = pa.ipc.open_file(src).read_all()
    assert pa.types.is_dictionary(got.schema.field("g").type)
    assert got["g"].to_pylist() == ["a", "b", None, "c", None, "d", "a", "b", "d"]
    assert got["y"].to_pylist() == [2, 4, 6, 8, 10, 12, 14, 16, 18]
