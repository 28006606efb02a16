"""``cb.duration(...)`` against polars' ``pl.duration``: parts of every numeric type, units.

Compared exactly with polars: parts as columns of signed, unsigned and float types
(nulls, NaN, values whose products wrap or overflow Int64), as Python numbers, as
column names and expressions; each unit, with parts finer and coarser than it; the
constant fold of Python numbers alone; durations added to datetimes and dates;
the three frame kinds, the string language, the CUDA code path; parts polars
refuses are refused by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import InvalidOperationError, SchemaError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from colbridge.types.durations import DURATION_PARTS, constant_duration

PARTS = tuple(DURATION_PARTS)


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)

    def mask() -> np.ndarray:
        return rng.random(n) < 0.15

    floats = rng.choice(np.array([0.5, -1.5, 1e3, -2.25e4, np.nan, 7.0, 1e300, -0.0]), n)
    return pa.table({
        "i": pa.array(rng.integers(-5_000, 5_000, n), mask=mask()),
        "big": pa.array(rng.integers(-(2**62), 2**62, n)),  # products wrap, as in polars
        "i8": pa.array(rng.integers(-100, 100, n).astype(np.int8), mask=mask()),
        "u32": pa.array(rng.integers(0, 4_000_000, n).astype(np.uint32), mask=mask()),
        "f": pa.array(floats * rng.integers(1, 1000, n), mask=mask()),
        "f32": pa.array(rng.normal(0, 500, n).astype(np.float32), mask=mask()),
        "t": pa.array(rng.integers(0, 10**15, n)).cast(pa.timestamp("us")),
    })  # fmt: skip


_PART_VALUES = st.sampled_from(["i", "big", "i8", "u32", "f", "f32", 3, -2, 1.5, 0, -0.25])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 7, 200]),
    seed=st.integers(0, 2**31 - 1),
    parts=st.dictionaries(st.sampled_from(PARTS), _PART_VALUES, min_size=1, max_size=5),
    unit=st.sampled_from([None, "ns", "us", "ms"]),
)
def test_columns_and_numbers_equal_polars(n: int, seed: int, parts: dict[str, Any],
                                          unit: str | None) -> None:  # fmt: skip
    table = _table(n, seed)

    def steps(m: Any, q: Any) -> Any:
        given = {k: m.col(v) if isinstance(v, str) else v for k, v in parts.items()}
        d = m.duration(**given, time_unit=unit)
        return q.select(d=d, plus=m.col("t") + d)

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


_NUMBER = st.one_of(
    st.integers(-(2**63), 2**63 - 1), st.integers(-10**6, 10**6),
    st.floats(allow_nan=True, allow_infinity=True), st.floats(-1e9, 1e9),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(parts=st.dictionaries(st.sampled_from(PARTS), _NUMBER, min_size=1, max_size=8),
       unit=st.sampled_from(["ns", "us", "ms"]))  # fmt: skip
def test_numbers_alone_fold_as_polars_folds_them(parts: dict[str, Any], unit: str) -> None:
    want = pl.select(pl.duration(**parts, time_unit=unit)).to_series().cast(pl.Int64)[0]
    assert constant_duration(parts, unit) == want
    got = pl.DataFrame({"x": [1]}).gpu.select(d=cb.duration(**parts, time_unit=unit)).compute()
    assert got["d"].dtype == pl.Duration(unit)
    assert got["d"].cast(pl.Int64)[0] == want


@settings(max_examples=200, deadline=None)
@given(parts=st.dictionaries(st.sampled_from(PARTS), st.integers(-10**7, 10**7), min_size=1,
                             max_size=8),
       unit=st.sampled_from(["ns", "us", "ms"]))  # fmt: skip
def test_whole_numbers_fold_toward_zero(parts: dict[str, int], unit: str) -> None:
    # the exact sum in nanoseconds, divided toward zero: negative sums off the unit too
    want = pl.select(pl.duration(**parts, time_unit=unit)).to_series().cast(pl.Int64)[0]
    assert constant_duration(parts, unit) == want


@pytest.mark.parametrize(("parts", "unit", "ticks"), [
    ({"nanoseconds": -1500, "microseconds": 5}, "us", 3),
    ({"nanoseconds": -1, "milliseconds": 0}, "ms", 0),
    ({"microseconds": -2_500_001}, "ms", -2500),
    ({"days": 1.5, "nanoseconds": -1}, "us", 129_599_999_999),
    ({"weeks": -3e293}, "ns", -(2**63)),  # saturated, -inf too
    ({"days": float("inf")}, "ms", 2**63 - 1),
    ({"days": float("nan"), "hours": 1}, "us", 0),
])  # fmt: skip
def test_folded_edges(parts: dict[str, Any], unit: str, ticks: int) -> None:
    assert pl.select(pl.duration(**parts, time_unit=unit)).to_series().cast(pl.Int64)[0] == ticks
    assert constant_duration(parts, unit) == ticks


def test_names_expressions_and_dates() -> None:
    table = _table(300, 5).append_column(
        "d", pa.array(np.arange(300, dtype=np.int32)).cast(pa.date32()))  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        return q.select(
            by_name=m.duration(days="i", minutes="i8"),
            of_expressions=m.duration(hours=m.col("i") * 2 + 1, seconds=m.col("f").abs()),
            of_a_reduction=m.duration(days=m.col("i").sum()) + m.duration(hours="i8"),
            per_group=m.duration(days=m.col("i8").max().over("u32")),
            on_dates=m.col("d") + m.duration(days="i8", hours=3),
            # polars' order: a finer part divided toward zero before the coarser one
            finer=m.duration(nanoseconds="i", milliseconds="i8", time_unit="us"),
        )

    assert_same_as_polars(table, steps)


def test_every_frame_kind() -> None:
    table = _table(100, 9).select(["i", "f", "t"])
    assert_same_as_polars(table, lambda m, q: q.with_columns(
        a=m.col("t") - m.duration(weeks="i", seconds="f"), b=m.duration(milliseconds="f")))


def test_the_string_language() -> None:
    df = pl.DataFrame({"n": [1, None, 3], "f": [0.5, 1.0, None]})
    got = cb.lazy(df).eval("a = duration(days=n, hours=1.5)\n"
                           "b = duration(nanoseconds=f, seconds=2)\n"
                           "c = duration(days=3, minutes=-1, time_unit='ms')").compute()
    want = df.with_columns(a=pl.duration(days="n", hours=1.5),
                           b=pl.duration(nanoseconds="f", seconds=2),
                           c=pl.duration(days=3, minutes=-1, time_unit="ms"))  # fmt: skip
    assert got.equals(want)


@pytest.mark.parametrize(("part", "pattern"), [
    (pl.Series([True, False]), r"`duration\(days=col\(\"p\"\)\)`: parts are integers or floats, "
                               r"got bool .* cast the part to a number"),
    (pl.Series(["a", "b"]), r"got string"),
    (pl.Series([1, 2]).cast(pl.Date), r"got date"),
])  # fmt: skip
def test_parts_polars_refuses_are_refused(part: pl.Series, pattern: str) -> None:
    df = pl.DataFrame({"p": part})
    with pytest.raises(InvalidOperationError, match=pattern):
        df.gpu.select(cb.duration(days="p")).compute()
    with pytest.raises(pl.exceptions.InvalidOperationError):
        df.select(pl.duration(days="p"))


def test_an_unsigned_part_past_int64_fails_as_in_polars() -> None:
    df = pl.DataFrame({"p": pl.Series([1, 2**63], dtype=pl.UInt64)})
    with pytest.raises(InvalidOperationError, match=r"strict cast to int64 failed"):
        df.gpu.select(cb.duration(hours="p")).compute()
    with pytest.raises(pl.exceptions.InvalidOperationError):
        df.select(pl.duration(hours="p"))


def test_a_bad_unit_is_refused_when_written() -> None:
    with pytest.raises(SchemaError, match=r"`duration\(time_unit='s'\)`: use 'ns', 'us' or 'ms'"):
        cb.duration(days=1, time_unit="s")


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = _table(500, 3)
    q = cb.lazy(table).select(d=cb.duration(days="i", hours="f", nanoseconds="i8"),
                              t=cb.col("t") + cb.duration(weeks="u32", minutes="f32"))  # fmt: skip
    on_host = compute_on_host(q)
    assert on_host.equals(q.compute(device="cpu"))
    want = pl.from_arrow(table).select(d=pl.duration(days="i", hours="f", nanoseconds="i8"),
                                       t=pl.col("t") + pl.duration(weeks="u32", minutes="f32"))
    assert pl.from_arrow(on_host).equals(want)
