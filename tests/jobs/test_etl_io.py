"""Reading and writing of the streaming ETL job: results equal polars', files as documented.

polars' own ``scan_parquet(...).with_columns(...).collect()`` is the oracle for
the values; pyarrow reads back the written files for their types and metadata.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from colbridge.io import AtomicWriter, pipeline
from tests.jobs.interrupt import resume, start_paused_run
from tests.jobs.test_pipeline import assert_frames_close

N = 25_000
ROW_GROUP = 10_000
BATCH = 3_000  # batch boundaries fall inside row groups
WITH = "t = a * 2 + b; z = (t - mean(t)) / std(t); v = where(c > 0.5, a, c)"


def _polars_with(frame: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
    a, b, c = pl.col("a"), pl.col("b"), pl.col("c")
    t = a * 2 + b
    lazy = frame.lazy().with_columns(t=t).with_columns(
        z=(pl.col("t") - pl.col("t").mean()) / pl.col("t").std(),
        v=pl.when(c > 0.5).then(a).otherwise(c),
    )
    return lazy.collect()


def numeric_table(n: int = N, seed: int = 0) -> pa.Table:
    """Columns polars' writer takes: floats and integers with nulls."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "a": pa.array(rng.normal(5.0, 2.0, n), mask=rng.random(n) < 0.1),
            "b": pa.array(rng.integers(0, 100, n).astype(np.int32), mask=rng.random(n) < 0.05),
            "c": rng.random(n),
            "k": rng.integers(0, 50, n),
        }
    )


def mixed_table(n: int = N, seed: int = 1) -> pa.Table:
    """Numeric columns beside strings, a dictionary, bools, dates and zoned timestamps."""
    rng = np.random.default_rng(seed)
    words = rng.choice(["x", "yy", "zzz"], n)
    nulls = rng.random(n) < 0.1
    stamps = (1_600_000_000_000_000 + rng.integers(0, 10**12, n)).astype("datetime64[us]")
    return numeric_table(n, seed).append_column(
        "s", pa.array(words, mask=nulls)
    ).append_column("ls", pa.array(words, pa.large_string())).append_column(
        "cat", pa.array(words).dictionary_encode()
    ).append_column("flag", pa.array(rng.random(n) < 0.5, mask=nulls)).append_column(
        "day", pa.array(np.datetime64("2020-01-01") + rng.integers(0, 900, n)).cast(pa.date32())
    ).append_column("ts", pa.array(stamps, pa.timestamp("us", "Europe/Paris"), mask=nulls))


def _write_input(table: pa.Table, path: os.PathLike[str] | str) -> str:
    pq.write_table(table, path, row_group_size=ROW_GROUP, compression="zstd")
    return str(path)


def _created_by(path: os.PathLike[str] | str) -> str:
    return str(pq.ParquetFile(path).metadata.created_by)


@pytest.mark.parametrize("make", [numeric_table, mixed_table], ids=["numeric", "mixed"])
def test_output_equals_polars_and_keeps_input_types(make, tmp_path) -> None:  # type: ignore[no-untyped-def]
    table = make()
    src = _write_input(table, tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    result = pipeline(src, out, with_=WITH, batch_rows=BATCH, device="cpu")
    assert result.rows_out == N
    meta = pq.read_metadata(src)  # batches never span a row group
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert result.batches == sum(-(-rows // BATCH) for rows in groups)
    got = pl.read_parquet(out)
    assert_frames_close(got, _polars_with(pl.scan_parquet(src)))
    schema = pq.read_schema(out)
    for field in pq.read_schema(src):  # input columns come back with their exact Arrow types
        assert schema.field(field.name).type == field.type, field.name
    assert [schema.field(n).type for n in ("t", "z", "v")] == [pa.float64()] * 3


def test_numeric_output_is_written_by_polars_the_rest_by_pyarrow(tmp_path) -> None:
    for make, engine in ((numeric_table, "Polars"), (mixed_table, "parquet-cpp-arrow")):
        src = _write_input(make(), tmp_path / "in.parquet")
        pipeline(src, tmp_path / "out.parquet", with_=WITH, batch_rows=BATCH)
        assert _created_by(tmp_path / "out.parquet").startswith(engine), make.__name__


@pytest.mark.parametrize("make", [numeric_table, mixed_table], ids=["numeric", "mixed"])
def test_parquet_file_as_documented(make, tmp_path) -> None:  # type: ignore[no-untyped-def]
    src = _write_input(make(), tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    pipeline(src, out, with_=WITH, batch_rows=BATCH)
    meta = pq.ParquetFile(out).metadata
    assert meta.num_rows == N
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        assert group.num_rows <= BATCH  # row groups of at most one batch
        for i in range(meta.num_columns):
            column = group.column(i)
            name = meta.schema.column(i).name
            assert column.compression == "ZSTD", name
            assert column.is_stats_set, name
            assert column.statistics.null_count is not None, name
            if name not in ("a", "z", "v", "t") or group.num_rows > column.statistics.null_count:
                assert column.statistics.has_min_max, name
            if name in ("a", "c", "t", "z", "v"):  # floats: plain, no dictionary attempt
                assert "RLE_DICTIONARY" not in column.encodings, name
            elif name in ("b", "k", "s", "ls", "cat"):  # few distinct integers and strings
                assert "RLE_DICTIONARY" in column.encodings, (name, column.encodings)


def test_projection_and_a_filter_that_keeps_nothing(tmp_path) -> None:
    src = _write_input(numeric_table(), tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    pipeline(src, out, with_=WITH, select="a,z", batch_rows=BATCH)
    exp = _polars_with(pl.scan_parquet(src)).select("a", "z")
    assert_frames_close(pl.read_parquet(out), exp)
    assert pq.read_schema(out).names == ["a", "z"]
    pipeline(src, out, with_=WITH, filter="c > 2", batch_rows=BATCH)
    got = pq.read_table(out)
    assert got.num_rows == 0
    assert got.column_names == ["a", "b", "c", "k", "t", "z", "v"]


@pytest.mark.parametrize("make", [numeric_table, mixed_table], ids=["numeric", "mixed"])
def test_empty_input_writes_an_empty_file_with_columns(make, tmp_path) -> None:  # type: ignore[no-untyped-def]
    table = make().slice(0, 0)
    src = _write_input(table, tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    result = pipeline(src, out, with_="w = b * 2 + a")
    assert result.rows_out == 0
    got = pq.read_table(out)
    assert got.num_rows == 0
    assert got.schema.names == [*table.column_names, "w"]
    for field in table.schema:
        assert got.schema.field(field.name).type == field.type


POLARS_TYPES = {
    "int8": pa.array([1, None, -3], pa.int8()),
    "uint64": pa.array([1, 2**63, None], pa.uint64()),
    "float32": pa.array([1.5, None, float("nan")], pa.float32()),
    "float64": pa.array([float("inf"), None, -0.0]),
    "bool": pa.array([True, None, False]),
    "large_string": pa.array(["x", None, ""], pa.large_string()),
    "string_view": pa.array(["x", None, "a longer string than twelve"], pa.string_view()),
    "date32": pa.array([dt.date(2020, 1, 1), None, dt.date(1960, 5, 5)]),
    "timestamp_us_tz": pa.array([1, None, 3], pa.timestamp("us", "Asia/Kolkata")),
    "timestamp_ns": pa.array([1, None, 3], pa.timestamp("ns")),
    "timestamp_ms_utc": pa.array([1, None, 3], pa.timestamp("ms", "UTC")),
    "duration_us": pa.array([1, None, -3], pa.duration("us")),
    "time64_ns": pa.array([1, None, 3], pa.time64("ns")),
    "decimal": pa.array(
        [decimal.Decimal("1.2"), None, decimal.Decimal("-4.5")], pa.decimal128(9, 2)
    ),
    "null": pa.array([None, None, None]),
}
PYARROW_TYPES = {
    "string": pa.array(["x", None, "yy"]),
    "dictionary": pa.array(["x", None, "x"]).dictionary_encode(),
    "list": pa.array([[1, 2], None, []], pa.list_(pa.int64())),
    "struct": pa.array([{"x": 1}, None, {"x": 3}]),
    "binary": pa.array([b"a", None, b"c"]),
}


@pytest.mark.parametrize(
    ("name", "engine"),
    [(n, "Polars") for n in POLARS_TYPES] + [(n, "parquet-cpp-arrow") for n in PYARROW_TYPES],
)
def test_every_type_reads_back_as_written(name: str, engine: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    column = {**POLARS_TYPES, **PYARROW_TYPES}[name]
    table = pa.table({name: column, "n": pa.array([1.0, 2.0, 3.0])})
    out = tmp_path / "out.parquet"
    with AtomicWriter(out, metadata={b"origin": b"test"}) as writer:
        writer.write(table)
        writer.write(table.slice(1))
    assert _created_by(out).startswith(engine)
    got = pq.read_table(out)
    assert got.schema.remove_metadata().equals(table.schema)
    assert got.schema.metadata[b"origin"] == b"test"
    expected = pa.concat_tables([table, table.slice(1)])
    assert got.column(name).to_pylist() == expected.column(name).to_pylist() or name.startswith(
        "float"
    )
    assert pl.read_parquet(out).equals(pl.from_arrow(expected))  # NaN equals NaN here


def test_failure_or_ctrl_c_inside_the_block_leaves_no_file_and_keeps_the_old(tmp_path) -> None:
    out = tmp_path / "out.parquet"
    out.write_bytes(b"old")
    table = numeric_table(10_000)

    def run(stop: BaseException | None, last: pa.Table) -> None:
        with AtomicWriter(out, row_group_rows=2_000) as writer:
            for start in range(0, 10_000, 2_000):
                writer.write(table.slice(start, 2_000))
            writer.write(last)  # a batch that cannot join the first one's schema fails here
            if stop is not None:
                raise stop

    for stop in (ValueError("bad batch"), KeyboardInterrupt()):
        with pytest.raises(type(stop)):
            run(stop, table.slice(0, 10))
        assert out.read_bytes() == b"old"
        assert os.listdir(tmp_path) == ["out.parquet"]
    with pytest.raises((ValueError, pa.ArrowInvalid)):
        run(None, pa.table({"a": ["not a number"]}))
    assert out.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.parquet"]


def test_polars_writes_into_the_locked_temporary_file(tmp_path) -> None:
    out = tmp_path / "out.parquet"
    with AtomicWriter(out) as writer:
        assert writer._tmp is not None
        inode = os.stat(writer._tmp).st_ino
        writer.write(numeric_table(5_000))
    # the same file (the one whose lock marks a live run) is renamed into place
    assert os.stat(out).st_ino == inode
    assert _created_by(out).startswith("Polars")


WRITER_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np, pyarrow as pa, pyarrow.parquet as pq
    from colbridge.io import AtomicWriter, pipeline
    src, out, how = sys.argv[1], sys.argv[2], sys.argv[3]
    if how == "job":
        pipeline(src, out, with_="w = a * 2 + b")
    else:  # a writer told to expect 40 million rows as wide as the first table's
        table = pq.read_table(src)
        with AtomicWriter(out, expected_rows=40_000_000) as writer:
            writer.write(table)
    print("polars" in sys.modules)
    """
)


@pytest.mark.parametrize(("how", "writer", "polars_imported"), [
    ("job", "parquet-cpp-arrow", "False"), ("expected", "Polars", "True"),
])  # fmt: skip
def test_polars_writes_only_where_its_speed_repays_its_import(
    how: str, writer: str, polars_imported: str, tmp_path
) -> None:
    # a fresh process that has not imported polars: a small job's output goes through
    # pyarrow's writer (importing polars would cost more than its faster encoding
    # saves); an output expected to be large (1.1 GB) through polars'
    table = numeric_table(5_000)
    src = _write_input(table, tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    done = subprocess.run(
        [sys.executable, "-c", WRITER_SCRIPT, src, str(out), how],
        capture_output=True, text=True, env=_env(), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [polars_imported]
    assert _created_by(out).startswith(writer)
    got = pq.read_table(out)
    assert got.select(table.column_names).equals(table)
    if how == "job":
        want = pc.add(pc.multiply(table["a"], 2), table["b"])
        assert got.column("w").equals(want)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.getcwd() + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_while_polars_writes_leaves_no_output(sig: int, code: int, tmp_path) -> None:
    src = _write_input(numeric_table(20_000), tmp_path / "in.parquet")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "out.parquet"
    run = start_paused_run(
        ["run", src, "-o", str(out), "--with", WITH, "--batch-rows", "2000", "-q"],
        tmp_path / "control", _env(), preload=["polars"],
    )  # fmt: skip
    assert os.path.exists(run.partial)
    run.proc.send_signal(sig)
    resume(run)
    _, err = run.proc.communicate(timeout=120)
    assert run.proc.returncode == code, err
    assert os.listdir(out_dir) == []


MEMORY_SCRIPT = textwrap.dedent(
    """
    import json, resource, sys
    import pyarrow as pa
    from colbridge.io import pipeline
    src, small, out, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    job = dict(with_="w = b * 2 + a; z = (c - mean(c)) / std(c)", batch_rows=rows)
    pipeline(small, out, **job)  # kernels, thread pools and polars' engine warmed
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = pipeline(src, out, **job)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"growth": (after - before) * 1024, "rows": res.rows_out,
                      "arrow_peak": pa.default_memory_pool().max_memory(),
                      "writer": pa.parquet.ParquetFile(out).metadata.created_by}))
    """
)


@pytest.mark.parametrize(("preload", "writer"), [
    ("import polars\n", "Polars"),  # polars imported: its writer, which holds up to ten batches
    ("", "parquet-cpp-arrow"),  # a 64 MB output without polars: pyarrow's
])  # fmt: skip
def test_peak_memory_is_bounded_by_the_batch_not_the_data(
    preload: str, writer: str, tmp_path
) -> None:
    n, rows = 2_000_000, 20_000
    rng = np.random.default_rng(5)
    big = pa.table({name: rng.random(n) for name in "abcd"})
    decoded = big.nbytes  # 64 MB; a batch of input is 0.64 MB
    src, small = tmp_path / "big.parquet", tmp_path / "small.parquet"
    pq.write_table(big, src, row_group_size=rows, compression="none")
    pq.write_table(big.slice(0, 10 * rows), small, row_group_size=rows)
    del big
    proc = subprocess.run(
        [sys.executable, "-c", "import pyarrow.parquet\n" + preload + MEMORY_SCRIPT, str(src),
         str(small), str(tmp_path / "o.parquet"), str(rows)],
        capture_output=True, text=True, env=_env(), timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["rows"] == n
    assert report["writer"].startswith(writer)
    # Decoded Arrow data held at once (reader and writer): some batches, not the file's 100.
    # polars' streaming writer keeps a varying number in flight: 7-10 MB here, 17 MB once
    # on a loaded 2-core machine; holding the file would be 64 MB or more.
    assert report["arrow_peak"] < decoded / 2, report
    assert report["growth"] < decoded, report


def test_files_of_another_schema_are_cast_to_the_first_files(tmp_path) -> None:
    import pyarrow.dataset as ds

    first = numeric_table(7_000, seed=2)
    other = numeric_table(5_000, seed=3)
    other = other.set_column(1, "b", other.column("b").cast(pa.int64()))  # int32 in the first
    parts = (("p1", first), ("p2", first), ("p3", other))
    files = [_write_input(t, tmp_path / f"{name}.parquet") for name, t in parts]
    out = tmp_path / "out.parquet"
    pipeline(files, out, with_=WITH, batch_rows=BATCH)
    whole = ds.dataset(files).to_table()  # pyarrow's own reading of the three as one dataset
    assert whole.schema.field("b").type == pa.int32()
    assert pq.read_schema(out).field("b").type == pa.int32()
    assert_frames_close(pl.read_parquet(out), _polars_with(pl.from_arrow(whole)))


def test_ipc_input_and_output(tmp_path) -> None:
    table = mixed_table(8_000)
    src = tmp_path / "in.arrow"
    with pa.OSFile(str(src), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=2_500):
            writer.write_batch(batch)
    expected = _polars_with(pl.from_arrow(table))
    for out in (tmp_path / "out.parquet", tmp_path / "out.arrow"):
        result = pipeline(src, out, with_=WITH, batch_rows=BATCH)
        assert result.rows_out == 8_000
        got = pl.read_parquet(out) if out.suffix == ".parquet" else pl.read_ipc(out)
        assert_frames_close(got, expected)


def test_source_batches_zero_columns_and_projection_order(tmp_path) -> None:
    from colbridge.io.source import open_source

    table = mixed_table(N)
    source = open_source(_write_input(table, tmp_path / "in.parquet"))
    empty = list(source.batches(BATCH, []))
    assert sum(b.num_rows for b in empty) == N
    assert all(b.num_columns == 0 and b.num_rows <= BATCH for b in empty)
    picked = pa.Table.from_batches(list(source.batches(BATCH, ["ts", "a", "cat"])))
    assert picked.column_names == ["ts", "a", "cat"]
    assert picked.equals(pq.read_table(tmp_path / "in.parquet", columns=["ts", "a", "cat"]))


def test_parquet_source_from_footers_agrees_with_a_pyarrow_dataset(tmp_path: Path) -> None:
    # schema and row count come from the footers; a dataset opens only where one is needed
    import pyarrow.dataset as ds

    from colbridge.io.source import open_source

    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"a": [1, 2, 3], "b": ["x", None, "z"]}), folder / "p0.parquet")
    pq.write_table(pa.table({"a": [4, None]}), folder / "p1.parquet")  # another schema
    pq.write_table(pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.string())}),
                   folder / "p2.parquet")  # fmt: skip
    source = open_source(str(folder))
    files = sorted(str(p) for p in folder.iterdir())
    want = ds.dataset(files, format="parquet")
    assert "dataset" not in vars(source)  # nothing opened yet
    assert source.schema.equals(want.schema, check_metadata=True)
    assert source.count_rows() == want.count_rows() == 5
    read = pa.Table.from_batches(list(source.batches(2)), schema=source.schema)
    assert read.equals(want.to_table())  # the other file's missing column is null
