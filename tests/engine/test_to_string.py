"""``cast(pl.String)`` of numbers, booleans, dates, datetimes and times, and
``dt.to_string`` of durations, against polars.

The values are written as polars writes them (`colbridge.types.formatting`), once per
distinct value on the host between passes, and the result is a string column with a
dictionary of its own: it is computed on further (joined to text, compared, measured,
grouped by, counted, filtered on, scanned). Generated columns of every such type with
nulls, offsets and chunks; floats of any bit pattern (float64 and float32); datetimes in
every unit, with and without a time zone, over centuries past 2037 (where zone rules,
not the zone file, give the offsets); every kernel tier, a stream, Dask, the string
language.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import ColbridgeError
from colbridge.testing.asserts import assert_same_as_polars, assert_stream_and_dask_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from colbridge.types.formatting import float_text, format_as_strings
from tests.ordered.ordered_data import cut_table

_PER_SECOND = {"ms": 10**3, "us": 10**6, "ns": 10**9}
#: Arrow types cast, with a generator of their values (a NumPy random generator, a count)
TYPES: dict[str, tuple[pa.DataType, Any]] = {
    "int8": (pa.int8(), lambda r, n: r.integers(-128, 128, n)),
    "int64": (pa.int64(), lambda r, n: r.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)),
    "uint64": (pa.uint64(), lambda r, n: r.integers(0, 2**64 - 1, n, dtype=np.uint64)),
    "uint16": (pa.uint16(), lambda r, n: r.integers(0, 2**16, n)),
    "float64": (pa.float64(), lambda r, n: _float_bits(r, n, 64)),
    "float32": (pa.float32(), lambda r, n: _float_bits(r, n, 32)),
    "bool": (pa.bool_(), lambda r, n: r.random(n) < 0.5),
    "date": (pa.date32(), lambda r, n: r.integers(-800_000, 3_000_000, n).astype(np.int32)),
    "datetime_ms": (pa.timestamp("ms"), lambda r, n: r.integers(-8 * 10**15, 8 * 10**15, n)),
    "datetime_us": (pa.timestamp("us"), lambda r, n: r.integers(-(10**17), 10**17, n)),
    "datetime_ns": (pa.timestamp("ns"), lambda r, n: r.integers(-(2**62), 2**62, n)),
    "zoned_ms": (pa.timestamp("ms", "America/New_York"), lambda r, n: _instants(r, n, "ms")),
    "zoned_us": (pa.timestamp("us", "Asia/Kolkata"), lambda r, n: _instants(r, n, "us")),
    "zoned_ns": (pa.timestamp("ns", "Europe/Dublin"), lambda r, n: _instants(r, n, "ns")),
    "time": (pa.time64("ns"), lambda r, n: r.integers(0, 86_400 * 10**9, n)),
}  # fmt: skip


def _float_bits(rng: np.random.Generator, n: int, bits: int) -> np.ndarray:
    """Floats of any bit pattern (subnormals, NaNs, infinities), and some round ones."""
    if bits == 64:
        out = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64).view(np.float64)
    else:
        out = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    round_ones = np.round(10.0 ** rng.uniform(-8, 18, n), 2).astype(out.dtype)
    return np.where(rng.random(n) < 0.5, out, round_ones)


def _instants(rng: np.random.Generator, n: int, unit: str) -> np.ndarray:
    """Instants from 1875 to 2125: zone files' transitions, then their rules' (past 2037)."""
    seconds = rng.integers(-3 * 10**9, 5 * 10**9, n)
    return seconds * _PER_SECOND[unit] + rng.integers(0, _PER_SECOND[unit], n)


def _column(kind: str, rng: np.random.Generator, n: int, nulls: float) -> pa.Array:
    arrow_type, make = TYPES[kind]
    return pa.array(make(rng, n), mask=rng.random(n) < nulls).cast(arrow_type)


def _frame(kind: str, seed: int, n: int, offset: int, chunks: int, nulls: float) -> pa.Table:
    rng = np.random.default_rng(seed)
    # repeated values: one distinct value written once, many rows
    values = _column(kind, rng, max(n // 3, 1), nulls)
    x = values.take(pa.array(rng.integers(0, len(values), offset + n), pa.int64()))
    table = pa.table({"x": x, "g": pa.array(rng.integers(0, 3, offset + n))})
    return cut_table(table, offset, n, chunks)


def _computed(m: Any, f: Any) -> Any:
    s = m.col("x").cast(pl.String)
    return f.select(s=s, joined=s + "|", eq=s == "1", n=s.str.len_chars(),
                    u=s.str.to_uppercase(), first=s.first().over("g"),
                    distinct=s.n_unique(), low=s.min(), top=s.max())  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(TYPES)), seed=st.integers(0, 2**32 - 1),
       n=st.integers(0, 40), offset=st.integers(0, 9), chunks=st.integers(1, 3),
       nulls=st.sampled_from([0.0, 0.3, 1.0]))  # fmt: skip
def test_equal_polars(kind: str, seed: int, n: int, offset: int, chunks: int,
                      nulls: float) -> None:  # fmt: skip
    table = _frame(kind, seed, n, offset, chunks, nulls)
    assert_same_as_polars(table, _computed, kinds=("polars", "pyarrow"))


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_every_type_as_a_grouping_key_and_a_filter(kind: str) -> None:
    table = _frame(kind, 7, 300, 5, 3, 0.2)

    def grouped(m: Any, f: Any) -> Any:
        return f.with_columns(k=m.col("x").cast(pl.String)).group_by(
            "k", maintain_order=True).agg(rows=m.len(), g=m.col("g").sum())  # fmt: skip

    def kept(m: Any, f: Any) -> Any:
        s = m.col("x").cast(pl.String)
        return f.filter(s.str.len_chars() > 4).select(s=s, c=s.cum_max())

    assert_same_as_polars(table, grouped, kinds=("polars", "pyarrow"))
    assert_same_as_polars(table, kept, kinds=("polars", "pyarrow"))


@pytest.mark.parametrize("bits", [64, 32])
def test_floats_of_every_bit_pattern(bits: int) -> None:
    values = _float_bits(np.random.default_rng(bits), 40_000, bits)
    series = pl.Series(values)
    want = series.cast(pl.String).to_list()
    assert format_as_strings(series.to_arrow()).cast(pa.string()).to_pylist() == want
    assert [float_text(float(v), bits) for v in values[:200]] == want[:200]
    # NaNs of other bits are one NaN: one text, one code, one group
    nans = np.array([0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000001, 1 << 62],
                    np.uint64).view(np.float64)  # fmt: skip
    if bits == 32:
        nans = np.array([0x7FC00001, 0xFFC00000, 0x7F800001, 0x40000000],
                        np.uint32).view(np.float32)  # fmt: skip
    written = format_as_strings(pa.array(nans))
    assert written.dictionary.to_pylist() == ["NaN", "2.0"]
    assert written.indices.to_pylist() == [0, 0, 0, 1]


def test_float_layout_at_each_exponent() -> None:
    # the exponents where polars switches between positional and scientific writing
    for dtype in (pl.Float64, pl.Float32):
        powers = 10.0 ** np.arange(-40, 40)
        values = [s * m * p for p in powers for m in (1.0, 1.25, 9.999) for s in (1, -1)]
        # the floats either side of each power of ten (a rounded log10 may misplace them)
        values += np.nextafter(powers, 0).tolist() + np.nextafter(powers, np.inf).tolist()
        if dtype == pl.Float32:
            tiny = np.float32(10.0) ** np.arange(-38, 38, dtype=np.float32)
            values += np.nextafter(tiny, np.float32(0)).tolist()
            values += np.nextafter(tiny, np.float32(np.inf)).tolist()
        frame = pl.DataFrame({"x": pl.Series(values, dtype=dtype)})
        got = frame.gpu.select(s=cb.col("x").cast(pl.String)).compute()
        assert_frame_equal(got, frame.select(s=pl.col("x").cast(pl.String)))


def test_pandas_frames_and_expressions_of_columns() -> None:
    import pandas as pd

    pdf = pd.DataFrame({"a": [1.5, np.nan, -2.0, 1e20], "b": [1, 2, 3, 4]})
    got = pdf.gpu.with_columns(s=(cb.col("a") * cb.col("b")).cast(pl.String),
                               t=(cb.col("b") > 2).cast(pl.String)).compute()  # fmt: skip
    # pandas NaN is null (as polars reads pandas)
    want = pl.from_pandas(pdf).with_columns(s=(pl.col("a") * pl.col("b")).cast(pl.String),
                                            t=(pl.col("b") > 2).cast(pl.String))  # fmt: skip
    assert got["s"].tolist()[:1] + got["s"].tolist()[2:] == ["1.5", "-6.0", "4e+20"]
    assert pd.isna(got["s"][1])
    assert got["t"].tolist() == want["t"].to_list()


def test_literals_are_written_at_once() -> None:
    frame = pl.DataFrame({"x": [1, 2]})
    exprs = {
        "i": lambda m: m.lit(5).cast(pl.String),
        "f": lambda m: m.lit(2.5).cast(pl.String),
        "t": lambda m: m.lit(True).cast(pl.String),
        "d": lambda m: m.lit(dt.date(2024, 2, 29)).cast(pl.String),
        "z": lambda m: m.lit(dt.datetime(2024, 1, 2, 3, 4, 5)).cast(pl.String),
        "c": lambda m: m.col("x").cast(pl.String) + m.lit(7).cast(pl.String),
    }
    want = frame.select(**{k: e(pl) for k, e in exprs.items()})
    got = frame.gpu.select(**{k: e(cb) for k, e in exprs.items()}).compute()
    assert_frame_equal(got, want)


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    frame = pl.DataFrame({"x": [k % 37 * 0.5 if k % 5 else None for k in range(3_000)],
                          "d": pl.date_range(dt.date(2020, 1, 1), dt.date(2028, 3, 18),
                                             eager=True)})  # fmt: skip

    def steps(m: Any) -> dict[str, Any]:
        s = m.col("x").cast(pl.String)
        return {"s": s, "n": s.str.len_chars() * 2, "m": m.col("d").cast(pl.String) < "2024",
                "y": m.col("d").dt.year().cast(pl.String) + "-",
                "w": m.col("d").dt.strftime("%a %V").str.ends_with("1")}  # fmt: skip

    got = compute_on_tier(cb.lazy(frame).select(**steps(cb)), tier)
    assert_frame_equal(got, frame.select(**steps(pl)))


def test_durations_are_refused_as_polars_refuses_them() -> None:
    frame = pl.DataFrame({"t": [dt.timedelta(seconds=5)]})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        frame.select(pl.col("t").cast(pl.String))
    with pytest.raises(ColbridgeError, match=r"Duration to String is not supported"):
        frame.gpu.select(cb.col("t").cast(pl.String)).compute()


def test_the_string_language() -> None:
    frame = pl.DataFrame({"x": [3, None, 12]})
    got = cb.lazy(frame).eval('s = cast(x, "string") + "kg"').compute()
    assert got["s"].to_list() == ["3kg", None, "12kg"]


def test_a_stream_and_dask(tmp_path: Any) -> None:
    table = pa.table({"x": pa.array([k % 11 * 1.25 if k % 7 else None for k in range(200)]),
                      "d": pa.array([dt.date(2024, 1, 1 + k % 28) for k in range(200)])})
    assert_stream_and_dask_as_polars(table, lambda m: {
        "s": m.col("x").cast(pl.String) + "/", "k": m.col("d").cast(pl.String).str.slice(5),
        "m": m.col("d").dt.strftime("%b %-d")}, tmp_path)  # fmt: skip


# -- dt.to_string(format) / dt.strftime: chrono's specifiers -------------------------------------
SPECIFIERS = [
    "%Y", "%C", "%y", "%m", "%b", "%B", "%h", "%d", "%e", "%a", "%A", "%w", "%u", "%U", "%W",
    "%G", "%g", "%V", "%j", "%q", "%D", "%x", "%F", "%v", "%H", "%k", "%I", "%l", "%P", "%p",
    "%M", "%S", "%f", "%.f", "%.3f", "%.6f", "%.9f", "%3f", "%6f", "%9f", "%R", "%T", "%X",
    "%r", "%c", "%s", "%z", "%:z", "%::z", "%:::z", "%Z", "%+", "%%", "%t", "%n", "%-d",
    "%_m", "%0e", "%-j", "%_Y", "%-H", "%-I", "%_y", " ", "-", "at", "é",
]  # fmt: skip
TEMPORAL = ["date", "datetime_ms", "datetime_us", "datetime_ns", "zoned_ms", "zoned_us",
            "zoned_ns", "time"]  # fmt: skip


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(TEMPORAL), seed=st.integers(0, 2**32 - 1),
       parts=st.lists(st.sampled_from(SPECIFIERS), min_size=1, max_size=6),
       offset=st.integers(0, 5), chunks=st.integers(1, 3))  # fmt: skip
def test_strftime_equal_polars(kind: str, seed: int, parts: list[str], offset: int,
                               chunks: int) -> None:  # fmt: skip
    table = _frame(kind, seed, 30, offset, chunks, 0.2)
    fmt = "".join(parts)
    # polars panics (no error) writing a datetime past chrono's years: keep those out
    if kind == "datetime_ms":
        table = table.set_column(0, "x", pc_clip(table.column("x")))

    def written(m: Any, f: Any) -> Any:
        s = m.col("x").dt.to_string(fmt)
        return f.select(s=s, n=s.str.len_bytes(), k=s.n_unique())

    assert_same_as_polars(table, written, kinds=("polars", "pyarrow"))


def pc_clip(column: Any) -> Any:
    """Datetimes within chrono's years (about ±262,000)."""
    import pyarrow.compute as pc

    ticks = column.cast(pa.int64())
    limit = 8 * 10**15
    return pc.max_element_wise(pc.min_element_wise(ticks, limit), -limit).cast(column.type)


@pytest.mark.parametrize("kind", TEMPORAL)
@pytest.mark.parametrize("fmt", [None, "iso", "iso:strict"])
def test_iso_forms(kind: str, fmt: str | None) -> None:
    table = _frame(kind, 3, 50, 1, 2, 0.2)
    if kind == "datetime_ms":
        table = table.set_column(0, "x", pc_clip(table.column("x")))
    assert_same_as_polars(table, lambda m, f: f.select(s=m.col("x").dt.to_string(fmt),
                                                       t=m.col("x").dt.strftime("%%|%F")),
                          kinds=("polars", "pyarrow"))  # fmt: skip


def test_months_as_grouping_keys_and_literals() -> None:
    days = pl.date_range(dt.date(2023, 11, 20), dt.date(2024, 3, 5), eager=True)
    frame = pl.DataFrame({"d": days, "v": range(len(days))})

    def steps(m: Any, f: Any) -> Any:
        month = m.col("d").dt.to_string("%Y-%m")
        return f.group_by(month.alias("month"), maintain_order=True).agg(
            total=m.col("v").sum(), first=m.col("d").dt.strftime("%a %e").first(),
            c=m.lit(dt.date(2024, 2, 29)).dt.to_string("%j").first())  # fmt: skip

    assert_same_as_polars(frame.to_arrow(), steps)
    got = cb.lazy(frame).eval('m = d.dt.strftime("%b"); y = d.dt.to_string()').compute()
    assert got["m"].to_list() == frame["d"].dt.strftime("%b").to_list()
    assert got["y"].to_list() == frame["d"].dt.to_string().to_list()


def test_strftime_refusals_name_the_format() -> None:
    frame = pl.DataFrame({"d": [dt.date(2024, 1, 2)], "t": [dt.timedelta(seconds=3)]})
    for fmt, what in (("%H", "a time of day"), ("%Q", "does not write the specifier %Q"),
                      ("%", "does not write the specifier %"), ("%z", "a time zone")):
        with pytest.raises(pl.exceptions.ComputeError):
            frame.select(pl.col("d").dt.to_string(fmt))
        with pytest.raises(ColbridgeError, match=what):
            frame.gpu.select(cb.col("d").dt.to_string(fmt)).compute()
    with pytest.raises(ColbridgeError, match=r"takes a format string .* got 5"):
        cb.col("d").dt.to_string(5)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", TEMPORAL)
def test_each_specifier_alone(kind: str) -> None:
    # every day of several years (week numbers, ISO years at their edges), then the kind's
    # own generated values
    table = _frame(kind, 11, 200, 0, 1, 0.1)
    if kind == "datetime_ms":
        table = table.set_column(0, "x", pc_clip(table.column("x")))
    if kind == "date":
        days = pa.array(np.arange(17_000, 19_000, dtype=np.int32)).cast(pa.date32())
        table = pa.table({"x": pa.concat_arrays([table.column("x").combine_chunks(), days])})
    frame = pl.DataFrame(pl.from_arrow(table.select(["x"])))
    for spec in SPECIFIERS:
        try:
            want = frame.select(s=pl.col("x").dt.to_string(spec))
        except pl.exceptions.ComputeError:
            with pytest.raises(ColbridgeError):
                frame.gpu.select(s=cb.col("x").dt.to_string(spec)).compute()
            continue
        assert_frame_equal(frame.gpu.select(s=cb.col("x").dt.to_string(spec)).compute(), want)


# -- durations: polars' "iso" and "polars" forms --------------------------------------------
def _durations(rng: np.random.Generator, n: int) -> np.ndarray:
    """Ticks of every size: whole days, hours, seconds, fractions, both signs, the extremes."""
    scale = 10 ** rng.integers(0, 19, n)
    ticks = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64) // scale
    ticks[rng.random(n) < 0.1] = 0
    ticks[:2] = [-(2**63), 2**63 - 1][: min(n, 2)]
    return ticks


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unit=st.sampled_from(["ms", "us", "ns"]), seed=st.integers(0, 2**32 - 1),
       n=st.integers(0, 40), offset=st.integers(0, 5), chunks=st.integers(1, 3),
       fmt=st.sampled_from([None, "iso", "iso:strict", "polars"]))  # fmt: skip
def test_durations_in_both_forms_equal_polars(unit: str, seed: int, n: int, offset: int,
                                              chunks: int, fmt: str | None) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)
    ticks = pa.array(_durations(rng, offset + n), mask=rng.random(offset + n) < 0.2)
    table = cut_table(pa.table({"x": ticks.cast(pa.duration(unit)),
                                "g": pa.array(rng.integers(0, 3, offset + n))}),
                      offset, n, chunks)  # fmt: skip

    def written(m: Any, f: Any) -> Any:
        s = m.col("x").dt.to_string(fmt)
        # the duration of a difference: computed first, then written
        half = (m.col("x") // 2).dt.to_string(fmt)
        return f.select(s=s, half=half, n=s.str.len_chars(), first=s.first().over("g"),
                        low=s.min())  # fmt: skip

    assert_same_as_polars(table, written, kinds=("polars", "pyarrow"))


def test_duration_forms_of_every_part() -> None:
    # each part alone and together, a fraction in each unit's digits, signs
    parts = [0, 1, 999, 1_000, 1_000_000, 10**9, 60 * 10**9, 3_600 * 10**9, 86_400 * 10**9]
    ticks = [sign * sum(p * k for p, k in zip(parts, keep, strict=True))
             for sign in (1, -1) for keep in np.ndindex(*(2,) * len(parts))]  # fmt: skip
    for unit in ("ms", "us", "ns"):
        frame = pl.DataFrame({"x": pl.Series(ticks, dtype=pl.Int64).cast(pl.Duration(unit))})
        for fmt in ("iso", "polars"):
            got = frame.gpu.select(cb.col("x").dt.to_string(fmt)).compute()
            assert_frame_equal(got, frame.select(pl.col("x").dt.to_string(fmt)))


def test_duration_literals_streams_and_the_string_language(tmp_path: Any) -> None:
    frame = pl.DataFrame({"d": [dt.timedelta(days=2, microseconds=5), None] * 40})
    steps = {"a": cb.lit(dt.timedelta(hours=3, milliseconds=1)).dt.to_string("polars"),
             "b": (cb.col("d") - cb.lit(dt.timedelta(days=3))).dt.to_string()}  # fmt: skip
    want = frame.select(a=pl.lit(dt.timedelta(hours=3, milliseconds=1)).dt.to_string("polars"),
                        b=(pl.col("d") - pl.lit(dt.timedelta(days=3))).dt.to_string())  # fmt: skip
    assert_frame_equal(frame.gpu.select(**steps).compute(), want)
    got = cb.lazy(frame).eval('s = d.dt.to_string("polars")').compute()
    assert got["s"].to_list() == frame["d"].dt.to_string("polars").to_list()
    assert_stream_and_dask_as_polars(frame.to_arrow(), lambda m: {
        "s": m.col("d").dt.to_string("polars") + "!", "i": m.col("d").dt.to_string("iso")},
        tmp_path)  # fmt: skip


def test_a_duration_format_other_than_its_forms_is_refused() -> None:
    frame = pl.DataFrame({"t": [dt.timedelta(seconds=3)]})
    for fmt in ("%H", "%Y-%m", "ISO"):
        with pytest.raises(pl.exceptions.InvalidOperationError):
            frame.select(pl.col("t").dt.to_string(fmt))
        with pytest.raises(ColbridgeError, match=f"format '{fmt}' is not supported for a "
                                                 "Duration.*use \"iso\""):  # fmt: skip
            frame.gpu.select(cb.col("t").dt.to_string(fmt)).compute()
