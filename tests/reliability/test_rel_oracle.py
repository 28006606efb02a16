"""The comparison and the data the other tests rely on: they must be able to fail.

The comparison (`colbridge.testing.asserts`) must tell NaN, +inf and -inf
apart whatever the tolerance, keep float32 exact, and widen only what a
tolerance names; the data (`colbridge.testing.data`) must hold each type's
limits; the fuzzer's known gaps must not match refusals they are not about.
"""

from __future__ import annotations

import datetime
import math

import numpy as np
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.testing.asserts import EXACT, Tolerance, column_mismatch, summation_bound
from colbridge.testing.data import INT_TYPES, limit_values, make_column
from tests.reliability.fuzzing import Case, Step, daily_seed, known_gap

INF, NAN = math.inf, math.nan
HUGE = Tolerance(ulps=10**9, rtol=1.0, atol=math.inf)


@pytest.mark.parametrize("dtype", [pa.float32(), pa.float64()], ids=str)
@pytest.mark.parametrize(
    ("got", "want"),
    [(NAN, INF), (INF, -INF), (1.0, INF), (-INF, NAN), (3.0, NAN)],
    ids=["nan-inf", "inf-neginf", "finite-inf", "neginf-nan", "finite-nan"],
)
def test_non_finite_values_must_match_in_kind_whatever_the_tolerance(dtype, got, want) -> None:  # type: ignore[no-untyped-def]
    g, w = pa.array([got], dtype), pa.array([want], dtype)
    assert column_mismatch(g, w, EXACT) is not None
    assert column_mismatch(g, w, HUGE) is not None
    assert column_mismatch(g, g, EXACT) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_exact_means_bit_for_bit_in_float32_too(dtype) -> None:  # type: ignore[no-untyped-def]
    x = dtype(1.5)
    neighbour = np.nextafter(x, dtype(2))
    g, w = pa.array(np.array([x])), pa.array(np.array([neighbour]))
    assert column_mismatch(g, w, EXACT) is not None
    assert column_mismatch(g, w, Tolerance(ulps=1)) is None
    # -0.0 and 0.0 are equal; NaN equals NaN
    negative = pa.array(np.array([-0.0, NAN], dtype=dtype))
    positive = pa.array(np.array([0.0, NAN], dtype=dtype))
    assert column_mismatch(negative, positive, EXACT) is None


def test_a_relative_tolerance_gives_no_absolute_slack() -> None:
    g, w = pa.array([1e-12]), pa.array([0.0])
    assert column_mismatch(g, w, Tolerance(rtol=1e-9)) is not None
    assert column_mismatch(g, w, Tolerance(atol=1e-11)) is None


def test_types_validity_and_lengths_are_compared() -> None:
    assert column_mismatch(pa.array([1], pa.int32()), pa.array([1], pa.int64())) is not None
    assert column_mismatch(pa.array([1, None]), pa.array([1, 2])) is not None
    assert column_mismatch(pa.array([1]), pa.array([1, 1])) is not None
    assert column_mismatch(pa.array([True, False]), pa.array([True, True])) is not None


def test_summation_bound_grows_with_the_data_not_with_the_result() -> None:
    x = np.array([1e16, 1.0, -1e16])
    assert summation_bound("sum", x, 64) >= 2 * 3 * 2.0**-52 * 2e16
    assert summation_bound("sum", np.array([]), 64) == 0.0


@pytest.mark.parametrize("int_type", INT_TYPES, ids=str)
def test_float_limits_hold_every_integer_bound_and_its_neighbours(int_type) -> None:  # type: ignore[no-untyped-def]
    floats = limit_values(pa.float64())
    info = np.iinfo(int_type.to_pandas_dtype())
    for bound in (int(info.min), int(info.max)):
        for v in (bound - 1, bound, bound + 1):
            f = np.float64(v)
            assert f in floats
            assert np.nextafter(f, np.inf) in floats
            assert np.nextafter(f, -np.inf) in floats
    ints = limit_values(int_type)
    assert {int(info.min), int(info.min) + 1, int(info.max) - 1, int(info.max), 0, 1} <= set(
        ints.tolist()
    )


def test_float_limits_hold_the_special_values() -> None:
    f = limit_values(pa.float64())
    assert np.isnan(f).sum() == 1
    assert {INF, -INF, 1e308, -1e308, 2.0**53 - 1, 2.0**64, 5e-324} <= set(f.tolist())
    assert any(math.copysign(1.0, v) < 0 for v in f.tolist() if v == 0)  # -0.0
    assert (f32 := limit_values(pa.float32())).dtype == np.float32
    assert np.float32(np.finfo(np.float32).smallest_subnormal) in f32


def test_generated_columns_meet_the_limits_and_the_null_density() -> None:
    rng = np.random.default_rng(0)
    column = make_column(rng, pa.int8(), 2000, nulls=0.3)
    values = set(column.drop_null().to_pylist())
    assert {-128, 127, -127, 126} <= values
    assert 400 < column.null_count < 800
    assert make_column(rng, pa.int8(), 5, nulls=0.01).null_count >= 1


def _step() -> Step:
    return Step((("z", ("+", ("col", "a"), ("lit", 1))),), None,
                (("a", pa.int64()), ("b", pa.int32()), ("c", pa.bool_()),
                 ("d", pa.float64())), 0)  # fmt: skip


def test_known_gaps_match_only_their_own_cases() -> None:
    table = pa.table({"a": pa.array([1], pa.int64()), "b": pa.array([1], pa.int32()),
                      "c": [True], "d": [1.0]})  # fmt: skip
    # the message of the int128 gap, but no operation needing int128 in the step
    fake = cb.SchemaError("int64 and uint64 have no common type short of int128")
    assert known_gap(Case(_step(), table, fake)) is None
    # a strict cast message without a failing strict cast
    cast = cb.InvalidOperationError("strict cast to int8 failed: some values do not fit")
    assert known_gap(Case(_step(), table, cast)) is None


def test_the_daily_seed_is_the_date_unless_replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLBRIDGE_FUZZ_SEED", raising=False)
    assert daily_seed(datetime.date(2025, 3, 9)) == 20250309
    monkeypatch.setenv("COLBRIDGE_FUZZ_SEED", "77")
    assert daily_seed(datetime.date(2025, 3, 9)) == 77
