from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from colbridge.cli import main
from tests.jobs.interrupt import resume, start_paused_run

N = 40_000
Z = "z = (a - mean(a)) / std(a)"
W = "w = b * 2 + a"
FILTER = "b > 10"


def make_table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "a": pa.array(rng.normal(5.0, 2.0, n), mask=rng.random(n) < 0.1),
            "b": rng.integers(0, 100, n).astype(np.int32),
        }
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cli") / "in.parquet"
    pq.write_table(make_table(N), path, row_group_size=8_000)
    return str(path)


def expected(path: str) -> pl.DataFrame:
    df = pl.read_parquet(path)
    a = pl.col("a")
    return df.with_columns(z=(a - a.mean()) / a.std(), w=pl.col("b") * 2 + a).filter(
        pl.col("b") > 10
    )


def check(out, path: str) -> None:
    got = pl.read_parquet(out) if str(out).endswith(".parquet") else pl.read_ipc(out)
    exp = expected(path)
    assert got.columns == exp.columns
    assert got["b"].to_list() == exp["b"].to_list()
    for name in ("z", "w"):
        np.testing.assert_allclose(got[name].to_numpy(), exp[name].to_numpy(), rtol=1e-12,
                                   atol=1e-13, equal_nan=True)  # fmt: skip


def test_run_with_filter_matches_polars(data: str, tmp_path, capsys) -> None:
    out = tmp_path / "out.parquet"
    rc = main(["run", data, "-o", str(out), "--with", Z, "--with", W, "--filter", FILTER,
               "--batch-rows", "6000"])  # fmt: skip
    assert rc == 0
    check(out, data)
    err = capsys.readouterr().err
    assert "wrote" in err
    assert "\x1b[" not in err  # no progress bar when stderr is not a terminal


def test_spec_file_and_ipc_output(data: str, tmp_path) -> None:
    spec = tmp_path / "pipeline.toml"
    out = tmp_path / "out.arrow"
    spec.write_text(
        f'input = "{data}"\noutput = "{out}"\ndevice = "cpu"\nbatch_rows = 7000\n'
        f'with = ["{Z}", "{W}"]\nfilter = "{FILTER}"\n'
    )
    assert main(["run", "--spec", str(spec), "--quiet"]) == 0
    check(out, data)


def test_unknown_spec_key_is_a_usage_error(data: str, tmp_path, capsys) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(f'input = "{data}"\nouptut = "x.parquet"\n')
    assert main(["run", "--spec", str(spec)]) == 2
    assert "'ouptut'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--with", "z = a +"], "cannot parse"),
        (["--with", "z = __import__('os')"], "unknown function"),
        (["--with", "z = nope * 2"], "nope"),
        (["--filter", "a + 1"], "not boolean"),
    ],
)
def test_bad_expressions_exit_2_and_write_nothing(data, tmp_path, capsys, args, needle) -> None:
    out = tmp_path / "out.parquet"
    assert main(["run", data, "-o", str(out), *args]) == 2
    assert needle in capsys.readouterr().err
    assert not out.exists()


def test_input_and_output_problems(data: str, tmp_path, capsys) -> None:
    out = tmp_path / "out.parquet"
    assert main(["run", str(tmp_path / "missing.parquet"), "-o", str(out), "--with", W]) == 2
    assert "does not exist" in capsys.readouterr().err
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 this is not parquet")
    assert main(["run", str(corrupt), "-o", str(out), "--with", W]) == 1
    assert "failed" in capsys.readouterr().err
    assert main(["run", data, "-o", str(tmp_path / "no" / "dir.parquet"), "--with", W]) == 2
    assert "does not exist" in capsys.readouterr().err
    # /proc accepts no new files, even for root: a runtime failure.
    assert main(["run", data, "-o", "/proc/colbridge-out.parquet", "--with", W, "-q"]) == 1
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["corrupt.parquet"]


def test_failing_batch_exits_1_without_partial_file(tmp_path, capsys) -> None:
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": np.r_[np.zeros(20_000), np.full(5_000, 1e4)]}), src,
                   row_group_size=5_000)  # fmt: skip
    out = tmp_path / "out.parquet"
    assert main(["run", str(src), "-o", str(out), "--with", 'y = cast(x, "int8")',
                 "--batch-rows", "5000"]) == 1  # fmt: skip
    assert "no output was written" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["in.parquet"]


def test_explain_prints_plan_and_writes_nothing(data: str, tmp_path, capsys) -> None:
    out = tmp_path / "out.parquet"
    assert main(["run", data, "-o", str(out), "--with", Z, "--filter", "z > 0", "--explain"]) == 0
    text = capsys.readouterr().out
    assert "1 statistics pass(es)" in text
    assert 'col("a").mean()' in text
    assert not out.exists()


def test_usage_errors_from_argparse(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "x.parquet", "--device", "tpu"])
    assert exc.value.code == 2
    assert main(["run", "--quiet"]) == 2
    assert "no input" in capsys.readouterr().err


def test_fuse_command_with_saved_stats(data: str, tmp_path) -> None:
    stats = tmp_path / "stats.json"
    first, second = tmp_path / "f1.parquet", tmp_path / "f2.parquet"
    base = ["fuse", data, "--columns", "a,b", "--zscore", "a", "--fill-null", "a=0",
            "--clip", "a=-3:3", "--minmax", "b", "-q"]  # fmt: skip
    assert main([*base, "-o", str(first), "--save-stats", str(stats)]) == 0
    assert json.loads(stats.read_text())["columns"]["a"]["std"] > 0
    assert main([*base, "-o", str(second), "--stats", str(stats)]) == 0
    assert pq.read_table(first).equals(pq.read_table(second))
    assert main([*base, "-o", str(second), "--clip", "a=x"]) == 2


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.getcwd() + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_subprocess_run_and_exit_codes(data: str, tmp_path) -> None:
    out = tmp_path / "out.parquet"
    ok = subprocess.run(
        [sys.executable, "-m", "colbridge.cli", "run", data, "-o", str(out), "--with", Z,
         "--with", W, "--filter", FILTER],
        capture_output=True, text=True, env=_env(), timeout=120,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    check(out, data)
    bad = subprocess.run(
        [sys.executable, "-m", "colbridge.cli", "run", data, "-o", str(out), "--with", "z = ("],
        capture_output=True, text=True, env=_env(), timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2
    assert "cannot parse" in bad.stderr


def test_a_parquet_job_never_imports_pandas(data: str, tmp_path) -> None:
    # a third of a second of the job's wall time on a 336k-row file went to importing
    # pandas, which a job from Parquet to Parquet never uses (pyarrow imports it for
    # `Schema.empty_table()` and `pa.array([])`): the run is checked from inside
    out = tmp_path / "out.parquet"
    code = textwrap.dedent(f"""
        import sys
        from colbridge.cli import main
        code = main(["run", {data!r}, "-o", {str(out)!r}, "--with", {Z!r}, "--with", {W!r},
                     "--filter", {FILTER!r}, "--quiet"])
        print(code, "pandas" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(), timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "False"], done.stdout
    check(out, data)


def test_sigint_leaves_no_partial_output(tmp_path) -> None:
    src = tmp_path / "big.parquet"
    pq.write_table(make_table(20_000, seed=3), src, row_group_size=10_000)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "out.parquet"
    run = start_paused_run(
        ["run", str(src), "-o", str(out), "--with", W, "--batch-rows", "2000", "-q"],
        tmp_path / "control", _env(),
    )  # fmt: skip
    # the job has started: its first batch is in the temporary file beside the output
    assert os.path.dirname(run.partial) == str(out_dir)
    assert os.path.exists(run.partial)
    run.proc.send_signal(signal.SIGINT)
    resume(run)
    _, err = run.proc.communicate(timeout=120)
    assert run.proc.returncode == 130, err
    assert "interrupted" in err
    assert os.listdir(out_dir) == []


MEMORY_SCRIPT = textwrap.dedent(
    """
    import json, resource, sys
    import pyarrow as pa, pyarrow.parquet as pq
    from colbridge.io import pipeline
    src, small, out, limit = sys.argv[1:5]
    # load the kernels and bring the pools, the reader and the writer to their steady
    # size on a tenth of the rows, laid out alike: what grows after that grows with the
    # rows. With a memory limit, as below, so the same (compiled) tier loads.
    pipeline(small, out, with_="w = b * 2 + a", memory_limit=limit)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = pipeline(src, out, with_="w = b * 2 + a", memory_limit=limit)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"growth": (after - before) * 1024, "batch_rows": res.batch_rows,
                      "rows": res.rows_out}))
    """
)


def test_memory_limit_bounds_peak_rss(tmp_path) -> None:
    n = 2_000_000
    rng = np.random.default_rng(5)
    big = pa.table({"a": rng.random(n), "b": rng.random(n), "c": rng.random(n), "d": rng.random(n)})
    decoded = big.nbytes  # 64 MB
    src, small = tmp_path / "big.parquet", tmp_path / "small.parquet"
    pq.write_table(big, src, row_group_size=20_000, compression="none")
    pq.write_table(big.slice(0, n // 10), small, row_group_size=20_000, compression="none")
    del big
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT, str(src), str(small), str(tmp_path / "o.parquet"),
         "8MB"],
        capture_output=True, text=True, env=_env(), timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["rows"] == n
    assert report["batch_rows"] < 50_000
    # The whole dataset decoded is 64 MB; the run must stay far below that (it grew
    # 3-7 MB in runs on a 2-core machine).
    assert report["growth"] < decoded / 6, report


def test_fuse_list_flags_add_up_when_repeated(data: str, tmp_path) -> None:
    # `--zscore a --zscore b` is `--zscore a,b` (argparse alone keeps the last one)
    once, twice = tmp_path / "once.parquet", tmp_path / "twice.parquet"
    assert main(["fuse", data, "--columns", "a,b", "--zscore", "a,b", "-q", "-o", str(once)]) == 0
    assert main(["fuse", data, "--columns", "a", "--columns", "b", "--zscore", "a",
                 "--zscore", "b", "-q", "-o", str(twice)]) == 0  # fmt: skip
    assert pq.read_table(once).equals(pq.read_table(twice))
    matrix = np.array(pq.read_table(once).column(0).to_pylist())
    np.testing.assert_allclose(np.nanmean(matrix, axis=0), 0.0, atol=1e-5)


def test_a_spec_files_with_list_runs_in_order_as_repeated_flags(data: str, tmp_path) -> None:
    # `with = [...]` is the repeated `--with` flags: an item sees the columns before it
    # (it ran as one step: `w = a + 1` read the input's `a`, and `v = w * 2` failed)
    statements = ["a = a * 100", "w = a + 1", "v = w * 2"]
    spec, by_spec, by_flags = (tmp_path / n for n in ("s.toml", "spec.parquet", "flags.parquet"))
    listed = ", ".join(f'"{s}"' for s in statements)
    spec.write_text(f'input = "{data}"\noutput = "{by_spec}"\nwith = [{listed}]\n')
    assert main(["run", "--spec", str(spec), "--quiet"]) == 0
    flags = [part for s in statements for part in ("--with", s)]
    assert main(["run", data, "-o", str(by_flags), *flags, "--quiet"]) == 0
    got, want = pl.read_parquet(by_spec), pl.read_parquet(by_flags)
    assert got.equals(want)
    source = pl.read_parquet(data)
    assert got["w"].to_list() == (source["a"] * 100 + 1).to_list()


def test_an_output_named_for_another_format_is_refused(data: str, tmp_path, capsys) -> None:
    # `-o out.csv` wrote Parquet bytes under that name
    out = tmp_path / "out.csv"
    assert main(["run", data, "-o", str(out), "--with", "z = a * 2", "--quiet"]) == 2
    assert "writes Parquet (.parquet) or Arrow IPC" in capsys.readouterr().err
    assert not out.exists()
    assert main(["run", data, "-o", str(out), "--output-format", "ipc", "--with", "z = a * 2",
                 "--quiet"]) == 0  # fmt: skip
    assert pa.ipc.open_file(str(out)).read_all().num_rows == pl.read_parquet(data).height


@pytest.mark.parametrize("suffix", [".arrow", ".parquet"])
def test_polars_categoricals_and_enums_pass_through_a_job(tmp_path, suffix: str) -> None:
    # polars' categoricals are dictionaries of string views, which pyarrow's Parquet writer
    # failed to cast; a passed-through Enum came back a Categorical (its field's metadata,
    # which polars reads it by, was dropped)
    frame = pl.DataFrame({
        "c": pl.Series(["x", "y", None], dtype=pl.Categorical),
        "en": pl.Series(["lo", "hi", "lo"], dtype=pl.Enum(["lo", "hi"])), "u": [1, 2, 3],
    })  # fmt: skip
    source = tmp_path / f"in{suffix}"
    frame.write_ipc(source) if suffix == ".arrow" else frame.write_parquet(source)
    out = tmp_path / "out.parquet"
    assert main(["run", str(source), "-o", str(out), "--with", "z = u * 2", "--quiet"]) == 0
    got = pl.read_parquet(out)
    assert got.schema["en"] == pl.Enum(["lo", "hi"])
    assert got.select(pl.col("c", "en").cast(pl.String), "u").equals(
        frame.select(pl.col("c", "en").cast(pl.String), "u"))  # fmt: skip
    assert got["z"].to_list() == [2, 4, 6]


@pytest.mark.parametrize("suffix", [".arrow", ".parquet"])
def test_computed_enums_read_back_as_polars_enums(tmp_path, suffix: str) -> None:
    # an ordered dictionary read back as a Categorical: polars reads an Enum by its field's
    # metadata, which only passed-through columns carried
    frame = pl.DataFrame({"x": [1.0, 5.0, None, 10.0, -3.5]})
    source = tmp_path / "in.parquet"
    frame.write_parquet(source)
    out = tmp_path / f"out{suffix}"
    assert main(["run", str(source), "-o", str(out), "--with", "c = x.cut([2, 6])", "--with",
                 "d = bin_intervals(x, [0, 10], labels=['lo', 'mid', 'é;hi'])",
                 "--quiet"]) == 0  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # polars 2 deprecates `cut`
        cut = pl.col("x").cut([2, 6])
    want = frame.with_columns(
        c=cut,
        d=pl.col("x").bin_intervals([0, 10], labels=["lo", "mid", "é;hi"]),
    )  # fmt: skip
    written = tmp_path / f"polars{suffix}"
    want.write_ipc(written) if suffix == ".arrow" else want.write_parquet(written)
    read = pl.read_ipc if suffix == ".arrow" else pl.read_parquet
    got = read(out)
    assert got.schema == read(written).schema  # Enum(...) both, polars' own file the oracle
    assert got.equals(want)
