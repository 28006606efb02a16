"""Regression tests for bugs the reliability suite found (all fixed; B7 is in test_engine_ops).

B1: a strict cast of an out-of-range literal (``lit(-1.25).cast("uint16")``) raises
on a frame with rows (as polars does) but returns a result on a frame with no
rows; polars checks the literal itself and raises for any row count.

B2: ``fill_nan`` with a float value on an integer column keeps the integer type;
polars gives the supertype (``Int8.fill_nan(0.0)`` is Float64).

B3: ``colbridge run --batch-rows 0`` is accepted (exit 0, default batch size):
``args.batch_rows or spec.get(...)`` treats 0 as "not given"; ``-5`` is refused
with exit 2 as it should be.

B4: a kernel cache folder that cannot be written (``COLBRIDGE_CACHE_DIR`` on a
read-only filesystem, or below a regular file) surfaces a raw ``OSError``
(Errno 30 / Errno 20) from ``compute()``, not a ``KernelCompileError`` naming
the folder and the remedy, and there is no in-memory fallback.

B5: an operation on an untyped integer literal (``-lit(3)``, ``lit(5).abs()``,
``lit(5).clip(-2, 3)``) gives a typed literal, so ``-cb.lit(3) + float32_column``
(also inside ``when``/``coalesce``) is Float64 in colbridge but Float32 in polars,
which keeps such literals dynamic (``cb.lit(-3) + f32`` is Float32 in both).

B6: B1's fix checks strict casts of bare literals on empty frames, but not of
other scalar-valued expressions: ``(col("a").count() - 5).cast("uint8")`` or
``coalesce(lit(inf), 3).cast("uint64")`` on a frame with no rows returns an empty
result, while polars raises ``InvalidOperationError``.

B8: the CUDA backend did not evaluate one-value outputs on a frame with no rows
(B6's fix was CPU-only), so ``lit(-4).log1p().floor().cast("int64")`` returned an
empty result there while the CPU backend and polars raise.

B9: expressions built only from Python numbers (``when(c).then(3.0).otherwise(1)``,
``lit(3.5).round()``, ``lit(100) + lit(100)``) were typed on the spot, so
``when(c).then(3.0).otherwise(1) - f32.std()`` was Float64; polars keeps them
dynamic until they meet a typed operand (Float32). The full table of cases is
in tests/engine/test_promotion.py.

O1 (in the oracle, not in colbridge): polars 2.1's lazy engine types
``lit(0.5) / f32_column`` as Float64 when a constant filter such as
``lit(0.001).is_infinite()`` follows the ``with_columns``; its eager engine, and
the lazy engine without that filter, give Float32. A random CI fuzz run hit it.
colbridge gives Float32; the comparison helper accepts the eager answer where
polars' two engines disagree.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import colbridge as cb


def test_bug_b1_strict_cast_of_out_of_range_literal_raises_on_an_empty_frame() -> None:
    empty = pl.DataFrame({"a": pl.Series([], dtype=pl.Int8)})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        empty.with_columns(z=pl.lit(-1.25).cast(pl.UInt16))
    with pytest.raises(cb.InvalidOperationError, match="strict cast to uint16 failed"):
        empty.gpu.with_columns(z=cb.lit(-1.25).cast("uint16")).compute()


def test_bug_b2_fill_nan_with_a_float_on_an_integer_column_gives_a_float_like_polars() -> None:
    df = pl.DataFrame({"a": pl.Series([1, None, 3], dtype=pl.Int8)})
    want = df.with_columns(z=pl.col("a").fill_nan(0.0))
    got = df.gpu.with_columns(z=cb.col("a").fill_nan(0.0)).compute()
    assert got.schema["z"] == want.schema["z"] == pl.Float64


def test_bug_b3_cli_batch_rows_zero_is_refused_with_exit_2(tmp_path: Path) -> None:
    from colbridge.cli import main

    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0]}), src)
    out = tmp_path / "out.parquet"
    code = main(["run", str(src), "-o", str(out), "--batch-rows", "0", "-q", "--with", "z = a"])
    assert code == 2
    assert not out.exists()


def test_bug_b4_unwritable_kernel_cache_gives_a_kernel_compile_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code = (
        "import polars as pl, colbridge as cb\n"
        "df = pl.DataFrame({'a': [1.0, 4.0]})\n"
        "try:\n"
        "    q = df.gpu.with_columns(z=cb.col('a').sqrt() + 17.125)\n"
        "    print('OK', q.compute()['z'].to_list())\n"
        "except Exception as exc:\n"
        "    print('ERR', type(exc).__name__, exc)\n"
    )
    env = {**os.environ, "COLBRIDGE_CACHE_DIR": str(blocker / "kernels")}
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = result.stdout.strip()
    assert out.startswith(("OK", "ERR KernelCompileError")), out
    if out.startswith("ERR"):
        assert "COLBRIDGE_CACHE_DIR" in out


def test_bug_b5_negated_integer_literal_keeps_float32_like_polars() -> None:
    df = pl.DataFrame({"b": pl.Series([0.5, 0.25], dtype=pl.Float32), "c": [True, False]})
    want = df.with_columns(
        z=-pl.lit(3) + pl.col("b"), w=pl.when("c").then(-pl.lit(3)).otherwise("b")
    )
    got = df.gpu.with_columns(
        z=-cb.lit(3) + cb.col("b"), w=cb.when(cb.col("c")).then(-cb.lit(3)).otherwise(cb.col("b"))
    ).compute()
    assert want.schema["z"] == want.schema["w"] == pl.Float32
    assert got.schema["z"] == pl.Float32
    assert got.schema["w"] == pl.Float32
    for expr in (lambda m: m.lit(5).abs(), lambda m: m.lit(5).clip(-2, 3)):
        assert df.with_columns(z=pl.col("b") + expr(pl)).schema["z"] == pl.Float32
        out = df.gpu.with_columns(z=cb.col("b") + expr(cb)).compute()
        assert out.schema["z"] == pl.Float32


def test_bug_b6_strict_cast_of_a_scalar_expression_raises_on_an_empty_frame() -> None:
    empty = pl.DataFrame({"a": pl.Series([], dtype=pl.UInt16)})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        empty.with_columns(z=(pl.col("a").count() - 5).cast(pl.UInt8))
    with pytest.raises(pl.exceptions.InvalidOperationError):
        empty.with_columns(z=pl.coalesce(pl.lit(math.inf), pl.lit(3)).cast(pl.UInt64))
    with pytest.raises(cb.InvalidOperationError, match="strict cast to uint8 failed"):
        empty.gpu.with_columns(z=(cb.col("a").count() - 5).cast("uint8")).compute()
    with pytest.raises(cb.InvalidOperationError, match="strict cast to uint64 failed"):
        empty.gpu.with_columns(z=cb.coalesce(cb.lit(math.inf), 3).cast("uint64")).compute()


def test_oracle_o1_polars_lazy_and_eager_disagreement_accepts_the_eager_answer() -> None:
    from colbridge.testing.asserts import assert_same_as_polars

    table = pa.table({"a": pa.array([2.0, 0.0, None], pa.float32())})

    def steps(m: Any, q: Any) -> Any:
        z = (m.lit(0.5) / m.col("a")) ** m.lit(0.001) - m.lit(-5)
        return q.with_columns(z=z).filter(m.lit(0.001).is_infinite())

    source = pl.from_arrow(table)
    assert isinstance(source, pl.DataFrame)
    eager = steps(pl, source)
    got = steps(cb, source.gpu).compute()
    assert got.schema["z"] == eager.schema["z"] == pl.Float32
    assert got.height == eager.height == 0
    assert_same_as_polars(table, steps, rtol=1e-5)  # whatever polars' lazy engine says


def test_bug_b8_cuda_backend_checks_scalar_strict_casts_on_an_empty_frame() -> None:
    from colbridge.testing.cuda_host import HostRuntime, compute_on_host

    empty = pl.DataFrame({"a": pl.Series([], dtype=pl.UInt8), "c": pl.Series([], dtype=pl.Boolean)})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        empty.with_columns(z=pl.lit(-4).log1p().floor().cast(pl.Int64)).filter(pl.col("c"))
    query = empty.gpu.with_columns(z=cb.lit(-4).log1p().floor().cast("int64")).filter(cb.col("c"))
    with pytest.raises(cb.InvalidOperationError, match="strict cast to int64 failed"):
        query.compute(device="cpu")
    with pytest.raises(cb.InvalidOperationError, match="strict cast to int64 failed"):
        compute_on_host(query, HostRuntime())


def test_bug_b9_dynamic_when_branches_keep_float32_like_polars() -> None:
    d = pl.Series([1.5, None, 2.0], dtype=pl.Float32)
    df = pl.DataFrame({"c": [True, False, None], "d": d})
    want = df.with_columns(z=pl.when(pl.col("c")).then(3.0).otherwise(1) - pl.col("d").std())
    got = df.gpu.with_columns(
        z=cb.when(cb.col("c")).then(3.0).otherwise(1) - cb.col("d").std()
    ).compute()
    assert want.schema["z"] == got.schema["z"] == pl.Float32
    assert got["z"].to_list() == want["z"].to_list()
