"""Differential fuzzing against polars: seeded random expression trees over random frames.

Every operation of the engine (`fuzzing.ALL_OPS`: arithmetic with ``//``,
``%``, ``**``; the six comparisons; Kleene ``&``/``|``/``^``/``~``; every unary
math function; strict and non-strict casts; ``when`` with one and two
branches; ``fill_null``/``fill_nan``/``coalesce``/``clip``/``round(decimals)``;
every reduction, ``std``/``var`` with ddof 0-2, inside elementwise
expressions; filters) is the root of a tree in every run, over every engine
dtype, with data at the limits of each type, nulls none/some/all, offsets that
are not multiples of 8, several chunks, and 0 or 1 rows; on polars, pyarrow
and pandas inputs; on the CPU backend, and some frames through the CUDA kernel
text run on the host.

Seeds: `fuzzing.FIXED_SEEDS` every run; ``COLBRIDGE_FUZZ_DAILY=1`` adds the
day's seed (printed in the pytest header; ``COLBRIDGE_FUZZ_SEED=<n>`` replays
one). A test id names its seed and step. ``-m slow`` runs more than 100,000 cases from more seeds.
"""

from __future__ import annotations

import math
import os

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_host, compute_on_tier
from tests.reliability.fuzzing import (
    ALL_OPS,
    STATS,
    Step,
    coverage_steps,
    draw_step,
    random_specs,
    run_step,
    seeds,
)

FRAMES = int(os.environ.get("COLBRIDGE_REL_FUZZ_FRAMES", "16"))
SLOW_STEPS = int(os.environ.get("COLBRIDGE_REL_FUZZ_SLOW_STEPS", "220"))
SLOW_FRAMES = int(os.environ.get("COLBRIDGE_REL_FUZZ_SLOW_FRAMES", "160"))

STEPS: list[tuple[str, Step]] = [
    (f"seed{seed}-step{i}", step)
    for seed in seeds()
    for i, step in enumerate(coverage_steps(seed))
]


def test_every_operation_is_the_root_of_a_tree_in_every_run() -> None:
    for seed in seeds():
        rooted = set()
        for step in coverage_steps(seed):
            rooted |= {t[0] if t[0] != "cast" else "" for _, t in step.outputs}
            rooted |= {"filter"} if step.keep is not None else set()
            rooted |= {_root(t) for _, t in step.outputs}
        assert set(ALL_OPS) <= rooted, set(ALL_OPS) - rooted


def _root(tree: tuple) -> str:  # type: ignore[type-arg]
    if tree[0] == "cast":
        return "to_bool" if tree[2] == "bool" else ("cast_strict" if tree[3] else "cast")
    if tree[0] in ("+", "*", "-", "/") and isinstance(tree[2], tuple) and tree[2][0] in (
        "sum", "mean", "min", "max", "std", "var", "count", "null_count"
    ):  # fmt: skip
        return str(tree[2][0])  # a reduction drawn inside an elementwise expression
    return str(tree[0])


#: colbridge converts a float literal to float32 with NumPy, which warns when it overflows
#: to inf (`test_float32_literal_overflow_gives_no_numpy_warning`); the value is right


@pytest.mark.parametrize(("name", "step"), STEPS, ids=[name for name, _ in STEPS])
def test_step_agrees_with_polars_on_every_frame_kind(name: str, step: Step) -> None:
    STATS.seeds[:] = list(seeds())
    cases, on_host, mismatches = STATS.cases, STATS.cuda_host_cases, len(STATS.mismatches)
    run_step(step, random_specs(step.seed, FRAMES), cuda_every=4)
    # the counters prove this step's work was done (checked per step, so that it holds
    # on whichever worker ran it)
    assert STATS.cases - cases >= FRAMES
    assert FRAMES == 0 or STATS.cuda_host_cases > on_host
    assert len(STATS.mismatches) == mismatches, STATS.mismatches[mismatches:][:3]


# -- regressions the strict comparison found ---------------------------------------------------
def test_std_of_values_whose_squares_overflow_is_inf_like_polars() -> None:
    table = pa.table({"a": [-1e308, 1e308, 1e308]})

    def steps(m, q):  # type: ignore[no-untyped-def]
        return q.select(sd=m.col("a").std(), v=m.col("a").var(), v0=m.col("a").var(ddof=0))

    want = steps(pl, pl.from_arrow(table).lazy()).collect().row(0)
    assert want == (np.inf, np.inf, np.inf)
    assert steps(cb, cb.lazy(table)).compute(device="cpu").to_pylist()[0] == dict(
        zip(("sd", "v", "v0"), want, strict=True)
    )


def test_cuda_var_of_large_equal_values_is_zero() -> None:
    table = pa.table({"a": [1e200, 1e200]})
    lf = cb.lazy(table).select(v=cb.col("a").var(), sd=cb.col("a").std())
    assert lf.compute(device="cpu").to_pylist() == [{"v": 0.0, "sd": 0.0}]
    assert compute_on_host(lf).to_pylist() == [{"v": 0.0, "sd": 0.0}]


def test_float32_literal_overflow_gives_no_numpy_warning() -> None:
    import warnings

    table = pa.table({"b": pa.array([1.5, -2.0], pa.float32())})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = cb.lazy(table).with_columns(z=cb.col("b") / 1e300).compute(device="cpu")
    want = pl.from_arrow(table).with_columns(z=pl.col("b") / 1e300)
    assert out.column("z").to_pylist() == want["z"].to_list()


def test_log_of_a_literal_keeps_float32() -> None:
    table = pa.table({"d": pa.array([1.5, None], pa.float32())})
    for fn in ("log", "log10"):
        want = pl.from_arrow(table).lazy().select(z=getattr(pl.lit(2), fn)() * pl.col("d"))
        assert want.collect().schema["z"] == pl.Float32
        got = cb.lazy(table).select(z=getattr(cb.lit(2), fn)() * cb.col("d")).compute()
        assert got.schema.field("z").type == pa.float32(), fn


def test_var_of_one_nan_value_is_nan() -> None:
    table = pa.table({"a": [1.0, math.nan, 3.0]})

    def steps(m, q):  # type: ignore[no-untyped-def]
        return q.select(v=m.col("a").var(ddof=0).var(ddof=0), w=m.lit(math.nan).var(ddof=0))

    want = steps(pl, pl.from_arrow(table).lazy()).collect().row(0)
    got = steps(cb, cb.lazy(table)).compute(device="cpu").to_pylist()[0]
    assert all(math.isnan(v) for v in want)
    assert all(math.isnan(v) for v in got.values())


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_an_exponent_beyond_u32_raises_where_the_base_is_null(tier: str) -> None:
    # polars casts the whole exponent column to u32 first (slow fuzz case 193)
    table = pa.table({"b": pa.array([None, 2], pa.uint64()),
                      "a": pa.array([2**40, 3], pa.uint64())})  # fmt: skip
    with pytest.raises(pl.exceptions.InvalidOperationError):
        pl.from_arrow(table).lazy().select(z=pl.col("b") ** pl.col("a")).collect()
    query = cb.lazy(table).select(z=cb.col("b") ** cb.col("a"))
    with pytest.raises(cb.InvalidOperationError, match="2\\*\\*32-1"):
        compute_on_tier(query, tier)


def test_unsigned_to_a_negative_literal_power_raises_without_values() -> None:
    table = pa.table({"b": pa.array([None, None], pa.uint32())})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        pl.from_arrow(table).lazy().select(z=pl.col("b") ** -5).collect()
    with pytest.raises(cb.InvalidOperationError):
        cb.lazy(table).select(z=cb.col("b") ** -5).compute(device="cpu")


@pytest.mark.slow
@pytest.mark.parametrize("k", range(SLOW_STEPS))
def test_random_steps_agree_with_polars_slow(k: int) -> None:
    seed = seeds()[-1] * 1000 + k
    rng = np.random.default_rng(seed)
    ops = [str(op) for op in rng.choice(ALL_OPS, size=3)]
    step = draw_step(seed, ops, depth=3)
    STATS.seeds[:] = [seeds()[-1]]
    run_step(step, random_specs(seed, SLOW_FRAMES, max_rows=300), cuda_every=40)
