"""``rle_id``, ``eq_missing`` and ``ne_missing`` against polars.

Every key type the grouping knows (numbers with NaN and ``-0.0``, booleans,
strings, categoricals, dates, datetimes, durations), nulls in runs, plain and
``over``, slices, chunks, empty and one-row frames, both CPU tiers, the three
frame kinds, the string language, a stream cut inside runs, Dask's refusal, and
the CUDA code path (on the host).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import JobSpecError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.grouped.grouped_data import KEY_KINDS, frame


def _steps(m: Any, q: Any) -> Any:
    h, k = m.col("h"), m.col("k")
    return q.select(
        r=h.rle_id(), ro=h.rle_id().over("g"), e=h.eq_missing(k), ne=h.ne_missing(k),
        en=h.eq_missing(None), nn=h.ne_missing(None),
        # inside other work: the first row of each run, and runs counted per group
        first=h.rle_id() != h.rle_id().shift(1, fill_value=-1),
        runs=h.rle_id().max().over("g"),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(KEY_KINDS),
    n=st.sampled_from([0, 1, 2, 9, 200]),
    seed=st.integers(0, 2**31 - 1),
    distinct=st.sampled_from([1, 2, 30]),
    nulls=st.sampled_from([0.0, 0.3, 0.9]),
    offset=st.sampled_from([0, 3, 16]),
    chunks=st.sampled_from([1, 3]),
)
def test_equal_polars(kind: str, n: int, seed: int, distinct: int, nulls: float, offset: int,
                      chunks: int) -> None:  # fmt: skip
    # h and k: two columns of `kind` with `distinct` values (few: long runs, many equal
    # pairs); g: int8 groups.
    table = frame(n, seed, ("int8", kind, kind), groups=distinct, key_nulls=nulls,
                  offset=offset, chunks=chunks)  # fmt: skip
    # categories of which no row holds one are typed null by the helper (no category type)
    assume(not any(pa.types.is_null(getattr(table.schema.field(c).type, "value_type", pa.int8()))
                   for c in ("h", "k")))  # fmt: skip
    assert_same_as_polars(table, _steps, kinds=("polars", "pyarrow"))


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_every_frame_kind_and_tier(tier: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    table = frame(3_000, 7, ("int8", "int64", "int64"), groups=3, key_nulls=0.2)
    assert_same_as_polars(table, _steps)


def test_floats_compare_as_polars_equality() -> None:
    # NaN is one run with NaN, -0.0 one with 0.0, null one with null; inf apart
    nan, inf = float("nan"), float("inf")
    x = [nan, nan, -0.0, 0.0, None, None, inf, -inf, -inf, 1.0, nan, None]
    y = [nan, 1.0, 0.0, -0.0, None, 2.0, inf, inf, None, 1.0, None, nan]
    table = pa.table({"x": pa.array(x, pa.float64()), "y": pa.array(y, pa.float64())})
    for dtype in (pl.Float64, pl.Float32):
        df = pl.from_arrow(table).cast(dtype)
        got = df.gpu.select(r=cb.col("x").rle_id(), e=cb.col("x").eq_missing(cb.col("y")),
                            n=cb.col("x").ne_missing(cb.col("y"))).compute()  # fmt: skip
        want = df.select(r=pl.col("x").rle_id(), e=pl.col("x").eq_missing(pl.col("y")),
                         n=pl.col("x").ne_missing(pl.col("y")))  # fmt: skip
        assert_frame_equal(got, want)
    assert got["r"].to_list() == [0, 0, 1, 1, 2, 2, 3, 4, 4, 5, 6, 7]


def test_scalars_and_strings() -> None:
    df = pl.DataFrame({"s": ["a", "a", None, None, "b", "a"],
                       "c": ["a", "b", None, "b", "b", None]})  # fmt: skip
    df = df.with_columns(cat=pl.col("s").cast(pl.Categorical))
    got = df.gpu.select(
        a=cb.col("s").eq_missing("a"), b=cb.col("s").ne_missing(cb.col("c")),
        c=cb.col("cat").rle_id(), d=cb.col("s").eq_missing(None),
    ).compute()  # fmt: skip
    want = df.select(
        a=pl.col("s").eq_missing("a"), b=pl.col("s").ne_missing(pl.col("c")),
        c=pl.col("cat").rle_id(), d=pl.col("s").eq_missing(None),
    )  # fmt: skip
    assert_frame_equal(got, want)


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 2, 1, 2, 1], "x": [3.0, None, 3.0, None, 4.0]})
    got = cb.lazy(table).eval("a = rle_id(x)\nb = x.rle_id().over(g)\nc = eq_missing(x, 3.0)\n"
                              "d = ne_missing(x, None)")  # fmt: skip
    want = pl.from_arrow(table).with_columns(
        a=pl.col("x").rle_id(), b=pl.col("x").rle_id().over("g"),
        c=pl.col("x").eq_missing(3.0), d=pl.col("x").ne_missing(None))  # fmt: skip
    assert pl.from_arrow(got.compute()).equals(want)


def test_a_stream_carries_runs_across_batches(tmp_path: Any) -> None:
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    n = 20_000
    values = rng.integers(0, 2, n).astype(np.float64)
    table = pa.table({"x": pa.array(values, mask=rng.random(n) < 0.3),
                      "g": rng.integers(0, 4, n)})  # fmt: skip
    path = tmp_path / "runs.parquet"
    pq.write_table(table, path, row_group_size=1_777)  # batches cut runs and groups
    got = cb.lazy(pl.scan_parquet(path), batch_rows=37).with_columns(
        r=cb.col("x").rle_id(), o=cb.col("x").rle_id().over("g"),
        e=cb.col("x").eq_missing(cb.col("x").shift(1))).compute()  # fmt: skip
    want = pl.read_parquet(path).with_columns(
        r=pl.col("x").rle_id(), o=pl.col("x").rle_id().over("g"),
        e=pl.col("x").eq_missing(pl.col("x").shift(1)))  # fmt: skip
    assert_frame_equal(got, want)


def test_dask_refuses_rle_id_naming_the_running_count() -> None:
    import dask.dataframe as dd
    import pandas as pd

    pdf = pd.DataFrame({"x": [1.0, 1.0, 2.0, 2.0]})
    q = cb.lazy(pdf).with_columns(r=cb.col("x").rle_id())
    with pytest.raises(JobSpecError, match=r"cum_sum.*not supported in a Dask plan"):
        cb.dask.apply(q, dd.from_pandas(pdf, npartitions=2))
    e = cb.lazy(pdf).with_columns(e=cb.col("x").eq_missing(2.0))
    got = cb.dask.apply(e, dd.from_pandas(pdf, npartitions=2)).compute()
    assert got["e"].tolist() == [False, False, True, True]


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = frame(2_000, 9, ("int64", "float64", "float64"), groups=3, key_nulls=0.3)
    lazy = _steps(cb, cb.lazy(table))
    on_host = pl.from_arrow(compute_on_host(lazy))
    assert_frame_equal(on_host, pl.from_arrow(lazy.compute(device="cpu")))
    assert_frame_equal(on_host, _steps(pl, pl.from_arrow(table)))
