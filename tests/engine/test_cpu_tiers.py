"""The CPU backend's two tiers: NumPy evaluation and compiled numba kernels, and the choice.

The NumPy tier is generated from the same lowering as the compiled kernels; here
both run the reliability fuzzer's random trees on generated frames (nulls, NaN,
±inf, extremes, offsets, chunks, empty) and must agree: exactly, or within the
fuzzer's tolerance where only the summation order differs (float sums, means,
std/var). Errors must agree too (a strict cast failing in one tier fails in both).
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pytest

import colbridge as cb
import colbridge.backends.cpu as cpu
from tests.reliability.fuzzing import (
    check_against_cpu,
    coverage_steps,
    make_table,
    random_specs,
    seeds,
)


def _numpy_tier(lazy: cb.LazyFrame) -> pa.Table:
    before = os.environ.get("COLBRIDGE_CPU_TIER")
    os.environ["COLBRIDGE_CPU_TIER"] = "numpy"
    try:
        out = lazy.compute(device="cpu")
    finally:
        os.environ["COLBRIDGE_CPU_TIER"] = before or "compiled"
    assert all(k.endswith("(numpy)") for k in lazy.last_report.stats.kernels)  # type: ignore[union-attr]
    return out  # type: ignore[no-any-return]


@pytest.mark.parametrize("seed", seeds())
def test_numpy_tier_matches_compiled_kernels(seed: int) -> None:
    # steps rooted at every operation of the engine, each on several generated frames: the
    # steps and the first frames of the differential fuzz (`test_rel_differential_fuzz`),
    # so the compiled kernels compared with are the ones it compiles too (one compile,
    # shared through the kernel cache)
    for step in coverage_steps(seed):
        for spec in random_specs(step.seed, 4):
            check_against_cpu(step, make_table(spec, step.type_map()), spec, _numpy_tier,
                              "numpy-tier")  # fmt: skip


def test_auto_evaluates_small_inputs_then_compiles_a_recurring_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "auto")
    table = pa.table({"a": [1.0, 2.0, None], "b_tiers_auto": [3.0, 4.0, 5.0]})
    q = cb.lazy(table).with_columns(z=cb.col("a") * 7.25 - cb.col("b_tiers_auto"))
    first = q.compute()
    assert q.last_report.stats.kernels[-1].endswith("(numpy)")  # type: ignore[union-attr]
    assert q.last_report.stats.compiled == 0  # type: ignore[union-attr]
    q.compute()  # the plan recurs: compiled behind, for the computes after it
    cpu.wait_for_background_compiles()
    third = q.compute()
    assert q.last_report.stats.kernels[-1].endswith("(compiled)")  # type: ignore[union-attr]
    assert first.equals(third)
    assert third.column("z").to_pylist() == [4.25, 10.5, None]


@pytest.mark.parametrize("kind", ["pyarrow", "polars"])
def test_auto_compiles_a_recurring_filter_into_its_compacting_kernels(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    # a small filter is evaluated by NumPy and the frame applies the mask; once the plan
    # recurs, the kernels that filter inside the pass compile, and the computes after it
    # run them: the same rows, columns and types as polars at every step
    import polars as pl

    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "auto")
    # names of this test's own: a kernel compiled by another test would be found ready
    na, nb = f"a_tiers_filter_{kind}", f"b_tiers_filter_{kind}"
    data = {na: [1.5, None, -2.0, 4.0, 0.5], nb: [1, 2, 3, None, 5],
            "s": ["x", "y", None, "w", "v"]}  # fmt: skip
    frame = pa.table(data) if kind == "pyarrow" else pl.DataFrame(data)
    a, b = cb.col(na), cb.col(nb)
    lazy = cb.lazy(frame) if kind == "pyarrow" else frame.gpu
    q = lazy.with_columns(w=a * 2 + b).filter(cb.col("w") > 1)
    expected = pl.DataFrame(data).with_columns(w=pl.col(na) * 2 + pl.col(nb)).filter(
        pl.col("w") > 1
    )

    def check(out: Any) -> list[str]:
        got = pl.from_arrow(out) if kind == "pyarrow" else out
        assert got.equals(expected), (got, expected)
        return q.last_report.stats.kernels  # type: ignore[union-attr,no-any-return]

    first = check(q.compute())
    assert all(k.endswith("(numpy)") for k in first), first
    check(q.compute())  # the plan recurs: the filter kernels compile behind
    cpu.wait_for_background_compiles()
    kernels = check(q.compute())
    assert len(kernels) == 1, kernels
    assert kernels[0].startswith("filter[w; carried 2]"), kernels
    assert kernels[0].endswith(f"{expected.height} of 5 rows kept (compiled)"), kernels


def test_auto_compiles_large_inputs_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "auto")
    monkeypatch.setattr(cpu, "NUMPY_MAX_ROWS", 2)
    table = pa.table({"a_tiers_large": [1.0, 2.0, 3.0]})
    q = cb.lazy(table).with_columns(z=cb.col("a_tiers_large").sqrt())
    q.compute()
    assert q.last_report.stats.kernels[-1].endswith("(compiled)")  # type: ignore[union-attr]


def test_zero_rows_check_scalar_outputs_without_compiling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from colbridge.codegen import numba_cpu

    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "compiled")
    generated: list[str] = []
    real = numba_cpu.generate_elementwise

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        generated.append("elementwise")
        return real(*args, **kwargs)

    monkeypatch.setattr(numba_cpu, "generate_elementwise", recording)
    empty = pa.table({"a_tiers_empty": pa.array([], pa.float64())})
    count = cb.col("a_tiers_empty").count()
    with pytest.raises(cb.InvalidOperationError, match="strict cast"):
        cb.lazy(empty).with_columns(z=(count + 300).cast("int8")).compute()
    assert generated == []  # the one value was checked by the NumPy tier, nothing compiled


def test_unknown_tier_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "fast")
    with pytest.raises(cb.ComputeError, match=r"COLBRIDGE_CPU_TIER='fast'.*auto, compiled, numpy"):
        cb.lazy(pa.table({"a": [1]})).with_columns(b=cb.col("a") + 1).compute()



def _recorded_generators(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which generator built each kernel of the computes that follow."""
    from colbridge.codegen import numba_cpu, numpy_eval

    built: list[str] = []
    for module, tier in ((numba_cpu, "compiled"), (numpy_eval, "numpy")):
        real = module.generate_elementwise

        def recording(*args, _real=real, _tier=tier, **kwargs):  # type: ignore[no-untyped-def]
            built.append(_tier)
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, "generate_elementwise", recording)
    return built


@pytest.mark.parametrize(("job_max", "limit", "expected"), [
    (1_000, None, "numpy"),
    (5, None, "compiled"),
    # a memory limit sized the batches for the compiled kernels' working set: they run
    (1_000, "1GB", "compiled"),
])  # fmt: skip
def test_auto_tiers_a_job_by_its_total_rows(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: os.PathLike[str],
    job_max: int,
    limit: str | None,
    expected: str,
) -> None:
    import polars as pl
    import pyarrow.parquet as pq

    from colbridge.io import pipeline

    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "auto")
    monkeypatch.setattr(cpu, "NUMPY_MAX_ROWS", 1)  # every batch is "large" on its own
    monkeypatch.setattr(cpu, "JOB_NUMPY_MAX_ROWS", job_max)
    src, out = os.path.join(tmp_path, "in.parquet"), os.path.join(tmp_path, "out.parquet")
    values = [0.5, None, 2.0, -3.0, 4.0, 5.5, None, 8.0]
    pq.write_table(pa.table({"x_tiers_job": values}), src)
    built = _recorded_generators(monkeypatch)
    # an expression shape no other test (or case) runs, so no kernel of it is cached
    # (literals are kernel arguments: a new constant would reuse a kernel)
    def shape(x: Any) -> Any:
        x = x * 3.0625
        x = x.abs() if limit else x
        return -x - 1 if job_max < 10 else x - 1

    expr = shape(cb.col("x_tiers_job"))
    pipeline(src, out, with_={"y": expr}, batch_rows=3, memory_limit=limit)
    cpu.wait_for_background_compiles()
    # a job of 8 rows: under the limit, NumPy from the first batch to the last and
    # nothing compiled behind; over it, each batch of more than NUMPY_MAX_ROWS compiles
    assert set(built) == {expected}
    want = pl.read_parquet(src).with_columns(y=shape(pl.col("x_tiers_job")))
    assert pl.read_parquet(out).equals(want)
