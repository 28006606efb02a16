"""``rank`` against polars: every method both ways, every rankable type, plain and ``over``.

Compared exactly with polars on generated frames: ties (NaN with NaN, ``-0.0``
with ``0.0``, repeated strings), nulls, slices and chunks, empty and one-row
frames, keys with nulls; ranks inside other expressions and of expressions; the
three frame kinds; the string language; streams and Dask refuse it with errors
naming the way out; the CUDA code path (run on the host) gives the same answers.
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
from colbridge.errors import SchemaError, UnsupportedOperationError
from colbridge.expr.nodes import RANK_METHODS
from colbridge.testing.asserts import assert_same_as_polars
from tests.ordered.ordered_data import SORTABLE_COLUMNS as COLUMNS
from tests.ordered.ordered_data import (
    SORTABLE_SHAPES,
    assert_cuda_code_path_agrees,
    assert_streams_and_dask_refuse,
)
from tests.ordered.ordered_data import sortable_table as _table


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    **SORTABLE_SHAPES,
    method=st.sampled_from(RANK_METHODS),
    descending=st.booleans(),
)
def test_ranks_equal_polars(n: int, seed: int, nulls: float, offset: int, chunks: int,
                            groups: int, method: str, descending: bool) -> None:  # fmt: skip
    table = _table(n, seed, nulls=nulls, offset=offset, chunks=chunks, groups=groups)

    def steps(m: Any, q: Any) -> Any:
        out = {}
        for c in COLUMNS:
            out[f"r_{c}"] = m.col(c).rank(method, descending=descending)
            out[f"o_{c}"] = m.col(c).rank(method, descending=descending).over("g")
        return q.select(**out)

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


@pytest.mark.parametrize("method", RANK_METHODS)
def test_long_runs_of_ties_in_large_groups(method: str) -> None:
    # both sorts: integers of a narrow range share one word with their group and row
    # (one plain sort); floats of every magnitude do not (sort, regroup, order the ties)
    rng = np.random.default_rng(11)
    n = 30_000
    table = pa.table({
        "g": rng.integers(0, 6, n),
        "i": pa.array(rng.integers(-40, 40, n), mask=rng.random(n) < 0.1),
        "w": rng.integers(-(2**62), 2**62, n),
        "f": pa.array(np.round(rng.standard_normal(n) * 1e6, -4), mask=rng.random(n) < 0.1),
    })  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        out = {}
        for c in ("i", "w", "f"):
            for descending in (False, True):
                out[f"r_{c}_{descending}"] = m.col(c).rank(method, descending=descending)
                out[f"o_{c}_{descending}"] = m.col(c).rank(method, descending=descending) \
                    .over("g")  # fmt: skip
        return q.select(**out)

    assert_same_as_polars(table, steps, kinds=("polars",))


def test_ranks_inside_expressions_and_of_expressions() -> None:
    table = _table(500, 3, nulls=0.2, groups=7)

    def steps(m: Any, q: Any) -> Any:
        f, i = m.col("f"), m.col("i8")
        return q.with_columns(
            pct=f.rank() * 100.0 - f.count(),
            of_sum=(i * 2 + 1).rank("dense"),
            lower=m.col("s").str.to_lowercase().rank("min", descending=True),
            shifted=i.shift(1).rank("max").over("g"),
            of_rank=i.rank("ordinal").rank("average", descending=True),
            mixed=(f.rank("min") + i.rank("max")).over("g"),
        )

    assert_same_as_polars(table, steps)


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_every_frame_kind(tier: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    table = _table(200, 8, nulls=0.2).select(["g", "f", "i8", "s", "d"])
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("f").rank(), b=m.col("i8").rank("dense", descending=True).over("g"),
        c=m.col("s").rank("ordinal"), d=m.col("d").rank("min").over("g") + 1))  # fmt: skip


def test_pandas_nan_is_a_null_there() -> None:
    import pandas as pd

    pdf = pd.DataFrame({"x": [1.0, np.nan, 0.5, 1.0]})
    got = cb.lazy(pdf).select(r=cb.col("x").rank("min")).compute()
    assert got["r"].tolist() == [2, pd.NA, 1, 2]


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 1, 2, 2], "x": [3.0, None, 2.0, 2.0]})
    got = cb.lazy(table).eval('r = rank(x, "min")\nq = x.rank(descending=True).over(g)')
    want = pl.from_arrow(table).with_columns(
        r=pl.col("x").rank("min"), q=pl.col("x").rank(descending=True).over("g"))
    assert pl.from_arrow(got.compute()).equals(want)


@pytest.mark.parametrize(("build", "error", "pattern"), [
    (lambda: cb.col("x").rank("random"), UnsupportedOperationError, r"random tie-breaking"),
    (lambda: cb.col("x").rank(seed=3), UnsupportedOperationError, r"use 'ordinal'"),
    (lambda: cb.col("x").rank("first"), SchemaError, r"unknown method; use one of 'average'"),
    (lambda: cb.col("x").rank(descending="no"), SchemaError, r"expected True or False"),
])  # fmt: skip
def test_bad_arguments_are_refused_when_written(build: Any, error: type, pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        build()


def test_an_enum_is_refused_naming_both_ways_out() -> None:
    df = pl.DataFrame({"e": pl.Series(["b", "a"], dtype=pl.Enum(["b", "a"]))})
    with pytest.raises(cb.ColbridgeError, match=r"enums .* `\.to_physical\(\)\.rank\(\)`.*"
                       r"`\.cast\(pl\.String\)\.rank\(\)`"):  # fmt: skip
        df.gpu.select(cb.col("e").rank()).compute()


def test_streams_and_dask_refuse_it(tmp_path: Any) -> None:
    # no "reverse the data" at the end: that does not help a rank
    assert_streams_and_dask_refuse(
        tmp_path, lambda x: x.rank(),
        r"`col\(\"x\"\).rank\(.*windows, rank, interpolate\) are not "
        r"supported in a streamed job.*`pl\.read_parquet\(\.\.\.\)`\)$")


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    q = assert_cuda_code_path_agrees(_table(2_000, 5, nulls=0.2, groups=30), lambda m: {
        "a": m.col("f").rank("average").over("g"), "b": m.col("i8").rank("dense") * 2,
        "c": m.col("s").rank("max", descending=True),
    })
    assert "ranked on the host CPU from its whole column" in q.explain(device="cpu")
