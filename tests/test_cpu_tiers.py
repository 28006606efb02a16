"""The CPU backend's two tiers: NumPy evaluation and compiled numba kernels, and the choice.

The NumPy tier is generated from the same lowering as the compiled kernels; here
both run the reliability fuzzer's random trees on generated frames (nulls, NaN,
±inf, extremes, offsets, chunks, empty) and must agree: exactly, or within the
fuzzer's tolerance where only the summation order differs (float sums, means,
std/var). Errors must agree too (a strict cast failing in one tier fails in both).
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
import colbridge.backends.cpu as cpu
from tests.reliability.fuzzing import (
    Tree,
    boolean,
    build,
    column_types,
    frame_specs,
    make_table,
    numeric,
    tolerance,
)


def _run(tree: Tree, keep: Tree, table: pa.Table, tier: str, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    import polars as pl

    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    q = cb.lazy(pl.from_arrow(table, rechunk=False)).with_columns(z=build(tree, cb))
    q = q.filter(build(keep, cb))
    try:
        out = q.compute(device="cpu")
    except cb.ColbridgeError as exc:
        return type(exc)
    assert all(k.endswith(f"({tier})") for k in q.last_report.stats.kernels)  # type: ignore[union-attr]
    return out


COMPARED: list[int] = []


@pytest.fixture(scope="module", autouse=True)
def _comparisons_happened():  # type: ignore[no-untyped-def]
    # guards the property test below against passing vacuously (every case an error)
    yield
    if COMPARED:
        assert len(COMPARED) > 100, COMPARED
        assert sum(COMPARED) > 300, sum(COMPARED)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(tree=numeric(3), keep=boolean(2), types=column_types(), data=st.data())
def test_numpy_tier_matches_compiled_kernels(tree: Tree, keep: Tree, types, data) -> None:  # type: ignore[no-untyped-def]
    with pytest.MonkeyPatch.context() as mp:
        for _ in range(6):
            table = make_table(data.draw(frame_specs()), types)
            evaluated = _run(tree, keep, table, "numpy", mp)
            compiled = _run(tree, keep, table, "compiled", mp)
            if isinstance(compiled, type) or isinstance(evaluated, type):
                assert evaluated == compiled, f"{tree!r}: {evaluated!r} vs {compiled!r}"
                continue
            rtol = tolerance(tree, types)
            COMPARED.append(evaluated.height)
            assert_frame_equal(evaluated, compiled, check_exact=False, rel_tol=rtol, abs_tol=0.0)


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

