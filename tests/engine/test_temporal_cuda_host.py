"""The CUDA kernels of temporal and string expressions, run on the host, against the CPU and polars.

The generated CUDA C (zone searches, lookup-table gathers, civil-date arithmetic)
is compiled with g++ and run by `HostRuntime` with small blocks and grids, so the
grid-stride loops wrap; its answer must equal the CPU backend's bit for bit and
polars'.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.backends.cuda import compile_nvrtc
from colbridge.testing.cuda_host import HEADER, compute_on_host
from tests.engine.temporal_data import temporal_tables

# Running the kernels on the host needs g++ and a host header that stands in for the warp
# primitives the kernels use (`__ballot_sync`); compiling them with NVRTC needs neither.
host_run = pytest.mark.skipif(
    __import__("shutil").which("g++") is None or "__ballot_sync" not in HEADER.read_text(),
    reason="g++ and a host header with warp primitives run the CUDA kernels on the host",
)
SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    database=None)  # fmt: skip


def _three_way(table: pa.Table, build: Any) -> None:
    host = pl.from_arrow(compute_on_host(build(cb, cb.lazy(table))))
    cpu = pl.from_arrow(build(cb, cb.lazy(table)).compute(device="cpu"))
    want = build(pl, pl.from_arrow(table).lazy()).collect()
    assert_frame_equal(host, cpu, check_exact=True)
    assert_frame_equal(host, want, check_exact=True)


def _temporal(m: Any, q: Any) -> Any:
    a, z, d, du = m.col("a"), m.col("z"), m.col("d"), m.col("du")
    return q.with_columns(
        y=a.dt.year(), mo=a.dt.month(), day=a.dt.day(), h=a.dt.hour(), wd=a.dt.weekday(),
        wk=a.dt.week(), od=a.dt.ordinal_day(), us=a.dt.microsecond(), date=a.dt.date(),
        zh=z.dt.hour(), zm=z.dt.minute(), zd=z.dt.date(), zy=z.dt.year(),
        dy=d.dt.year(), dq=d.dt.quarter(), since=a - a.min(), later=a + du,
        dlater=d + du, cmp=a > dt.datetime(2001, 2, 3), tr=a.dt.truncate("1mo"),
        secs=du.dt.total_seconds(),
    )  # fmt: skip


@host_run
@SETTINGS
@given(data=st.data())
def test_temporal_kernels_on_the_cuda_target(data: st.DataObject) -> None:
    types = [pa.timestamp("us"), pa.timestamp("ms", "Australia/Lord_Howe"), pa.date32(),
             pa.duration("us")]  # fmt: skip
    table = data.draw(temporal_tables(types, names=("a", "z", "d", "du")))
    _three_way(table, _temporal)


def _strings(m: Any, q: Any) -> Any:
    s, t = m.col("s"), m.col("t")
    return q.with_columns(
        eq=s == "UA", lt=s < t, isin=s.is_in(["AA", "é"]), n=s.str.len_chars(),
        sw=s.str.starts_with("a"), num=s.cast(pl.Int64, strict=False),
        w=m.when(s == "UA").then(m.lit("x")).otherwise(t), f=s.fill_null("?"),
        cnt=(s == "a").sum(),
    )  # fmt: skip


@host_run
@SETTINGS
@given(data=st.data())
def test_string_kernels_on_the_cuda_target(data: st.DataObject) -> None:
    table = data.draw(temporal_tables([], names=(), strings=("s", "t")))
    _three_way(table, _strings)
    _three_way(table, lambda m, q: q.filter(m.col("s").is_in(["UA", "a", ""])))


def _nvrtc_table() -> pa.Table:
    return pa.table({
        "a": pa.array([1_000_000_000_000_000, None, -5], pa.timestamp("us")),
        "z": pa.array([1, 2, None], pa.timestamp("ms", "Australia/Lord_Howe")),
        "d": pa.array([1, None, -700_000], pa.date32()),
        "du": pa.array([-1, 5, None], pa.duration("us")),
        "s": ["UA", None, "é"], "t": ["a", "b", None],
    })  # fmt: skip


@pytest.mark.parametrize(
    ("build", "zoned"),
    [(_temporal, True), (_strings, False),
     (lambda m, q: q.filter(m.col("s").is_in(["UA"])), False),
     (lambda m, q: q.select(n=(m.col("s") == "UA").sum(), h=m.col("z").dt.hour().max()), True)],
    ids=["temporal", "strings", "filter", "reductions"],
)  # fmt: skip
def test_cuda_kernels_compile_with_nvrtc(build: Any, zoned: bool) -> None:
    pytest.importorskip("nvidia.cuda_nvrtc")
    report = build(cb, cb.lazy(_nvrtc_table())).report(source=True, target="cuda")
    sources = [src for section in report.sections for _, src in section.sources]
    assert sources
    text = "\n".join(sources)
    # zone offsets come from a binary search of the transitions, strings through tables
    assert ("cb_search(lut" in text) == zoned
    assert "lutn0" in text
    for source in sources:
        compile_nvrtc(source, "sm_90")
