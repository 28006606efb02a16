"""Streamed inputs and outputs: polars LazyFrames and scans, Arrow streams, DuckDB.

Every result is checked against polars' own ``collect()`` of the same query (or
the in-memory colbridge compute where polars has no such input), on data with
nulls, several row groups and batches that cut them.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import colbridge as cb
from colbridge.io import JobSpecError, pipeline
from colbridge.io.stream_frame import StreamFrame
from colbridge.testing.asserts import EXACT, Tolerance, as_polars, frame_mismatch

N = 20_000
BATCH = 3_000  # cuts the 7,000-row row groups and the frame into many batches
# sums folded batch by batch differ from one pass in the last bits (values near 0 after
# `a - mean(a)` show it as a relative error)
CLOSE = Tolerance(ulps=0, rtol=1e-12, atol=1e-12)


def make_table(n: int = N, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    a = rng.normal(5.0, 2.0, n)
    return pa.table(
        {
            "a": pa.array(a, mask=rng.random(n) < 0.1),
            "b": pa.array(rng.integers(-50, 100, n), mask=rng.random(n) < 0.05),
            "g": pa.array(rng.choice(["x", "y", "z"], n), mask=rng.random(n) < 0.02),
            "k": rng.integers(0, 40, n).astype(np.int32),
        }
    )


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return make_table()


@pytest.fixture(scope="module")
def files(table: pa.Table, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("streams")
    paths = {
        "parquet": str(folder / "in.parquet"),
        "csv": str(folder / "in.csv"),
        "ipc": str(folder / "in.arrow"),
    }
    pq.write_table(table, paths["parquet"], row_group_size=7_000)
    pl.from_arrow(table).write_csv(paths["csv"])
    pl.from_arrow(table).write_ipc(paths["ipc"])
    return paths


def scan(kind: str, files: dict[str, str]) -> pl.LazyFrame:
    if kind == "parquet":
        return pl.scan_parquet(files["parquet"])
    if kind == "csv":
        return pl.scan_csv(files["csv"], schema_overrides={"k": pl.Int32})
    return pl.scan_ipc(files["ipc"])


Steps = Callable[[Any, Any], Any]


def _zscore(m: Any, q: Any) -> Any:
    a = m.col("a")
    return q.with_columns(z=(a - a.mean()) / a.std(), w=m.col("b") * 2 + a)


def _filtered(m: Any, q: Any) -> Any:
    return q.filter(m.col("b") > 10).with_columns(r=m.col("a").sqrt() - m.col("k"))


def _select(m: Any, q: Any) -> Any:
    return q.select("g", d=m.col("a") - m.col("a").min(), n=m.col("k") % 7)


def _window(m: Any, q: Any) -> Any:
    return q.with_columns(gm=m.col("a").mean().over("g"), c=m.col("b").count().over("k"))


def _grouped(m: Any, q: Any) -> Any:
    a = m.col("a")
    return q.group_by("g").agg(s=a.sum(), mx=m.col("b").max(), n=m.len(), m=a.mean())


def _ordered(m: Any, q: Any) -> Any:
    a = m.col("a")
    return q.with_columns(d=a.diff(), cs=m.col("b").cum_sum(), r=a.rolling_mean(5),
                          sk=a.shift(2).over("k"))  # fmt: skip


def _strings(m: Any, q: Any) -> Any:
    # strings moved across batches: each batch numbers its strings its own way
    g = m.col("g")
    c = g.cast(pl.Categorical)
    return q.with_columns(s=g.shift(3), f=g.fill_null(strategy="forward", limit=1),
                          sk=g.shift(2, fill_value="none").over("k"),
                          fk=c.fill_null(strategy="forward").over("k"))  # fmt: skip


def _aggregated(m: Any, q: Any) -> Any:
    return q.select(s=m.col("a").sum(), v=m.col("b").var(), n=m.col("g").count(),
                    z=m.col("g").null_count())


STEPS: dict[str, Steps] = {
    "zscore": _zscore, "filtered": _filtered, "select": _select, "window": _window,
    "grouped": _grouped, "ordered": _ordered, "aggregated": _aggregated, "strings": _strings,
}  # fmt: skip


def _check(got: Any, expected: pl.DataFrame, tolerance: Tolerance = CLOSE, sort: bool = False
           ) -> None:  # fmt: skip
    got = got if isinstance(got, pl.DataFrame) else pl.from_arrow(got)
    if sort:
        got, expected = got.sort("g", nulls_last=True), expected.sort("g", nulls_last=True)
    mismatch = frame_mismatch(got, expected, tolerance)
    assert mismatch is None, f"{mismatch}\ncolbridge:\n{got}\npolars:\n{expected}"


@pytest.mark.parametrize("kind", ["parquet", "csv", "ipc"])
@pytest.mark.parametrize("name", sorted(STEPS))
def test_polars_scan_equals_polars_collect(kind: str, name: str, files: dict[str, str]) -> None:
    steps = STEPS[name]
    lf = scan(kind, files)
    expected = steps(pl, lf).collect()
    q = steps(cb, cb.lazy(lf, batch_rows=BATCH))
    got = q.compute(device="cpu")
    assert isinstance(got, pl.DataFrame)  # the caller's kind: polars
    _check(got, expected, sort=name == "grouped")


def test_accessor_on_a_lazyframe_is_a_stream(files: dict[str, str]) -> None:
    lf = scan("parquet", files).filter(pl.col("k") < 20)
    q = lf.gpu.with_columns(w=cb.col("a") * 2)
    assert isinstance(q, StreamFrame)
    assert isinstance(q.with_columns(v=cb.col("w") + 1), StreamFrame)  # steps keep the kind
    _check(q.compute(), lf.with_columns(w=pl.col("a") * 2).collect(), EXACT)


def test_explain_says_how_the_input_is_read(files: dict[str, str]) -> None:
    lf = scan("parquet", files)
    plain = cb.lazy(lf, batch_rows=BATCH).with_columns(w=cb.col("a") * 2).explain(device="cpu")
    lines = plain.splitlines()
    assert lines[0] == "colbridge plan over a polars LazyFrame (streamed)"
    assert lines[1].startswith("input: a polars LazyFrame, run on polars' streaming engine")
    assert lines[2].strip() == f"batches of up to {BATCH} rows"
    assert lines[3].strip() == "1 streaming pass: nothing is held whole"
    two = _zscore(cb, cb.lazy(lf)).explain(device="cpu").splitlines()
    assert two[3].strip() == "1 statistics pass(es) over the input, then 1 streaming pass"


def _reader(table: pa.Table, pulled: list[int] | None = None, chunk: int = 1_000
            ) -> pa.RecordBatchReader:  # fmt: skip
    """A one-shot reader over ``table``; ``pulled`` counts the batches read from it."""

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in table.to_batches(max_chunksize=chunk):
            if pulled is not None:
                pulled.append(batch.num_rows)
            yield batch

    return pa.RecordBatchReader.from_batches(table.schema, batches())


@pytest.mark.parametrize("name", ["filtered", "zscore", "window", "grouped", "ordered",
                                  "strings"])  # fmt: skip
def test_record_batch_reader_equals_in_memory(name: str, table: pa.Table) -> None:
    steps = STEPS[name]
    expected = steps(pl, pl.from_arrow(table).lazy()).collect()
    got = steps(cb, cb.lazy(_reader(table), batch_rows=BATCH)).compute(device="cpu")
    assert isinstance(got, pa.Table)
    _check(got, expected, sort=name == "grouped")


def test_one_shot_stream_spools_for_a_second_pass_and_cleans_up(
    table: pa.Table, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    single = cb.lazy(_reader(table), batch_rows=BATCH).with_columns(w=cb.col("a") * 2)
    assert "read once" in single.explain(device="cpu").splitlines()[1]
    single.compute()
    assert glob.glob(str(tmp_path / "colbridge-spool-*")) == []  # one pass: nothing spooled
    q = _zscore(cb, cb.lazy(_reader(table), batch_rows=BATCH))
    assert "temporary Arrow IPC file" in q.explain(device="cpu").splitlines()[1]
    got = q.compute(device="cpu")
    _check(got, _zscore(pl, pl.from_arrow(table).lazy()).collect())
    q._source.close()  # what garbage collection does when the handle goes
    assert glob.glob(str(tmp_path / "colbridge-spool-*")) == []
    with pytest.raises(JobSpecError, match=r"already read; a one-shot stream can be read once"):
        single.compute()


def test_duckdb_relation_in(table: pa.Table) -> None:
    con = duckdb.connect()
    con.register("t", table)
    rel = con.sql("select a, b, k from t where k < 30")
    q = _zscore(cb, cb.lazy(rel, batch_rows=BATCH))
    assert "DuckDB relation, read again for each pass" in q.explain(device="cpu")
    expected = _zscore(pl, pl.from_arrow(rel.to_arrow_table()).lazy()).collect()
    _check(q.compute(device="cpu"), expected)


def test_duckdb_and_polars_read_the_result_as_a_stream(files: dict[str, str]) -> None:
    lf = scan("parquet", files)
    q = lf.gpu.with_columns(w=cb.col("a") * 2 + cb.col("k"))
    expected = lf.with_columns(w=pl.col("a") * 2 + pl.col("k")).collect()
    got = duckdb.sql("select count(*), sum(w), count(w) from q").fetchall()[0]
    assert got[0] == expected.height
    assert got[2] == expected["w"].count()
    assert got[1] == pytest.approx(expected["w"].sum(), rel=1e-12)
    _check(pl.DataFrame(q), expected, EXACT)  # polars reads `__arrow_c_stream__`


def test_the_result_is_computed_batch_by_batch_as_read(table: pa.Table) -> None:
    pulled: list[int] = []
    q = cb.lazy(_reader(table, pulled), batch_rows=BATCH).with_columns(w=cb.col("a") + 1)
    reader = pa.RecordBatchReader.from_stream(q)
    first = reader.read_next_batch()
    assert 0 < first.num_rows <= BATCH
    assert sum(pulled) <= BATCH  # only what the first result needed was read
    rest = reader.read_all()
    assert first.num_rows + rest.num_rows == table.num_rows
    assert sum(pulled) == table.num_rows
    whole = pa.Table.from_batches([first, *rest.to_batches()])
    want = pc_add_one(table["a"])
    assert whole["w"].combine_chunks().equals(want)


def pc_add_one(column: pa.ChunkedArray) -> pa.Array:
    import pyarrow.compute as pc

    return pc.add(column, 1.0).combine_chunks()


def test_in_memory_handles_export_a_stream_too() -> None:
    df = pl.DataFrame({"a": [1.0, None, 3.0], "b": [1, 2, 3]})
    q = df.gpu.with_columns(c=cb.col("a") * cb.col("b"))  # noqa: F841 (DuckDB reads `q` by name)
    assert duckdb.sql("select c from q").fetchall() == [(1.0,), (None,), (9.0,)]
    import pandas as pd

    pdf = pd.DataFrame({"a": [1.0, 2.0]}, index=[7, 8])
    got = pa.RecordBatchReader.from_stream(pdf.gpu.with_columns(b=cb.col("a") + 1)).read_all()
    assert got.column_names == ["a", "b"]  # the index is not a column
    assert got["b"].to_pylist() == [2.0, 3.0]


def test_pyarrow_dataset_input(files: dict[str, str], table: pa.Table) -> None:
    dataset = ds.dataset(files["parquet"])
    q = _filtered(cb, cb.lazy(dataset, batch_rows=BATCH))
    _check(q.compute(device="cpu"), _filtered(pl, pl.from_arrow(table).lazy()).collect())


def test_empty_streams(files: dict[str, str], table: pa.Table) -> None:
    lf = scan("parquet", files).filter(pl.col("k") > 1000)
    _check(_zscore(cb, lf.gpu).compute(), _zscore(pl, lf).collect())
    _check(_grouped(cb, lf.gpu).compute(), _grouped(pl, lf).collect())
    empty = _reader(table.slice(0, 0))
    got = cb.lazy(empty).with_columns(w=cb.col("a") * 2).compute()
    assert got.num_rows == 0
    assert got.schema.field("w").type == pa.float64()


def test_streams_refuse_what_reads_later_rows(files: dict[str, str]) -> None:
    q = scan("parquet", files).gpu.with_columns(n=cb.col("a").cum_sum(reverse=True))
    with pytest.raises(JobSpecError, match=r"cum_sum\(True\)`: ordered operations that read"):
        q.compute()
    # a bounded look-ahead reads the next batches
    got = scan("parquet", files).gpu.with_columns(n=cb.col("a").shift(-1)).compute()
    want = scan("parquet", files).with_columns(n=pl.col("a").shift(-1)).collect()
    assert frame_mismatch(as_polars(got), want) is None
    q = scan("parquet", files).gpu.select(n=cb.col("g").n_unique(), f=cb.col("a").first())
    listed = re.escape('`col("g").n_unique()`, `col("a").first()`: whole-column reductions')
    with pytest.raises(JobSpecError, match=listed):
        q.compute()
    with pytest.raises(cb.SchemaError, match=r"`batch_rows` applies to streamed inputs"):
        cb.lazy(pa.table({"a": [1]}), batch_rows=10)


def test_whole_frame_statistics_and_fills_of_a_stream(files: dict[str, str]) -> None:
    # the types come from the stream's schema (no rows read); every batch folds into one row
    for build in (lambda q: q.sum(), lambda q: q.mean(), lambda q: q.std(),
                  lambda q: q.fill_null(0), lambda q: q.shift(-1), lambda q: q.fill_nan(0)):
        got = build(scan("parquet", files).gpu.lazy()).compute()
        want = build(scan("parquet", files)).collect()
        assert frame_mismatch(as_polars(got), want, Tolerance(rtol=1e-12)) is None


def test_pipeline_and_sink_take_streams(files: dict[str, str], tmp_path: Any) -> None:
    lf = scan("csv", files)
    expected = _zscore(pl, lf).collect()
    out = tmp_path / "out.parquet"
    res = pipeline(lf, out, with_="z = (a - mean(a)) / std(a); w = b * 2 + a", batch_rows=BATCH)
    assert res.rows_out == expected.height
    assert res.passes == 2
    _check(pl.read_parquet(out), expected)
    reader = _reader(lf.collect().to_arrow())
    res2 = _zscore(cb, cb.lazy(reader, batch_rows=BATCH)).sink(tmp_path / "o2.arrow")
    assert res2.rows_out == expected.height
    _check(pl.read_ipc(tmp_path / "o2.arrow"), expected)


def test_fuse_takes_a_lazyframe(files: dict[str, str], table: pa.Table) -> None:
    from colbridge.io import FeatureSpec, iter_features

    spec = FeatureSpec.from_dict({"columns": {"a": {"scale": "zscore", "fill_null": 0.0},
                                              "k": {}}, "dtype": "float64"})  # fmt: skip
    lf = scan("parquet", files)
    got = np.concatenate([fb.features for fb in iter_features(lf, spec, batch_rows=BATCH)])
    want = iter_features(files["parquet"], spec, batch_rows=BATCH)
    # the mean and std are folded over other batch boundaries: equal to the last bits
    want_matrix = np.concatenate([fb.features for fb in want])
    np.testing.assert_allclose(got, want_matrix, rtol=1e-12, atol=1e-12)
    assert got.shape == (table.num_rows, 2)


MEMORY_SCRIPT = textwrap.dedent(
    """
    import json, resource, sys
    import polars as pl
    import pyarrow as pa
    import colbridge as cb
    src, small = sys.argv[1:3]
    a = cb.col("a")
    def run(path, rows):
        q = cb.lazy(pl.scan_parquet(path), batch_rows=rows).with_columns(
            z=(a - a.mean()) * cb.col("b"))
        return sum(batch.num_rows for batch in pa.RecordBatchReader.from_stream(q))
    run(small, 1000)  # kernels compiled, pools warm
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rows = run(src, 50_000)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"growth": (after - before) * 1024, "rows": rows}))
    """
)


def test_streamed_lazyframe_memory_is_bounded_by_the_batch(tmp_path: Any) -> None:
    n = 2_000_000
    rng = np.random.default_rng(5)
    big = pa.table({"a": rng.random(n), "b": rng.random(n), "c": rng.random(n), "d": rng.random(n)})
    decoded = big.nbytes  # 64 MB
    src, small = tmp_path / "big.parquet", tmp_path / "small.parquet"
    pq.write_table(big, src, row_group_size=50_000, compression="none")
    pq.write_table(big.slice(0, 5_000), small)
    del big
    env = dict(os.environ)
    env["PYTHONPATH"] = os.getcwd() + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, str(src), str(small)],
                          capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["rows"] == n
    # Two passes over 64 MB of decoded data; the run must hold far less than it.
    assert report["growth"] < decoded / 3, report


def test_explain_lists_every_problem_of_a_streamed_plan(files: dict[str, str]) -> None:
    q = scan("parquet", files).gpu.with_columns(x=cb.col("nope") + 1, y=cb.col("g") * 2)
    text = q.explain(device="cpu")
    assert "problems: 2" in text
    assert "`nope` not found" in text
    with pytest.raises(cb.PlanProblemsError):
        q.compute()


def test_reductions_the_host_computes_fold_across_batches() -> None:
    """Counts of strings and dates and row counts are folded batch by batch."""
    import datetime as dt

    rng = np.random.default_rng(8)
    n = 10_000
    days = rng.integers(0, 20_000, n)
    table = pa.table({
        "t": pa.array([dt.date(1970, 1, 1) + dt.timedelta(days=int(d)) for d in days],
                      mask=rng.random(n) < 0.2),
        "s": pa.array(rng.choice(["p", "q"], n), mask=rng.random(n) < 0.3),
        "x": rng.random(n),
    })  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        return q.filter(m.col("x") > 0.1).select(
            nt=m.col("t").count(), zs=m.col("s").null_count(), ns=m.col("s").count(),
            rows=m.len(),
        )  # fmt: skip

    expected = steps(pl, pl.from_arrow(table).lazy()).collect()
    got = steps(cb, cb.lazy(_reader(table, chunk=700), batch_rows=BATCH)).compute(device="cpu")
    _check(got, expected, EXACT)
    # the dates' extremes fold as their integers (`Partials.logical`)
    dates = cb.lazy(_reader(table, chunk=700), batch_rows=BATCH).select(
        lo=cb.col("t").min(), hi=cb.col("t").max())
    want = pl.from_arrow(table).select(lo=pl.col("t").min(), hi=pl.col("t").max())
    assert pl.from_arrow(dates.compute(device="cpu")).equals(want)


def test_a_one_shot_reader_whose_batches_have_their_own_dictionaries_spools() -> None:
    # a plan reading the stream twice spools it; each batch keeps its own dictionary
    b1 = pa.record_batch({"k": [1, 2, 1], "c": pa.array(["a", "b", None]).dictionary_encode()})
    b2 = pa.record_batch({"k": [1, 2, 3], "c": pa.array(["z", "a", "q"]).dictionary_encode()})
    reader = pa.RecordBatchReader.from_batches(b1.schema, [b1, b2])
    got = cb.lazy(reader).group_by("k").agg(f=cb.col("c").first(), m=cb.col("c").max(),
                                             n=cb.col("c").count()).compute()  # fmt: skip
    want = pl.from_arrow(pa.Table.from_batches([b1, b2])).group_by("k").agg(
        f=pl.col("c").first(), m=pl.col("c").max(), n=pl.col("c").count())  # fmt: skip
    assert pl.from_arrow(got).sort("k").equals(want.sort("k"))


def test_parsing_without_a_format_is_refused_in_streams_and_dask() -> None:
    # polars infers the format from the whole column's first value it can read; each
    # batch or partition would infer its own (here the second batch would read "20240105")
    import dask.dataframe as dd
    import pandas as pd

    texts = ["2024-01-05", "x", "20240105", "2024-01-06"]
    lf = pl.LazyFrame({"s": texts})
    for build in (lambda m: m.col("s").str.to_date(strict=False),
                  lambda m: m.col("s").str.to_datetime(strict=False),
                  lambda m: m.col("s").str.strptime(pl.Date, strict=False)):  # fmt: skip
        with pytest.raises(JobSpecError, match="infers one from the first value"):
            cb.lazy(lf, batch_rows=2).with_columns(d=build(cb)).compute()
        pdf = pd.DataFrame({"s": texts})
        with pytest.raises(JobSpecError, match="a Dask plan"):
            cb.dask.apply(cb.lazy(pdf).with_columns(d=build(cb)),
                          dd.from_pandas(pdf, npartitions=2))  # fmt: skip
    # with a format, batches agree with polars
    got = cb.lazy(lf, batch_rows=2).with_columns(
        d=cb.col("s").str.to_date("%Y-%m-%d", strict=False)).compute()  # fmt: skip
    want = lf.with_columns(d=pl.col("s").str.to_date("%Y-%m-%d", strict=False)).collect()
    assert frame_mismatch(got, want, EXACT) is None
