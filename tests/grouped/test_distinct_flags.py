"""``is_duplicated``, ``is_unique``, ``is_first_distinct``, ``is_last_distinct`` against polars.

Every key type the grouping knows (numbers with NaN and ``-0.0``, booleans,
strings, categoricals, dates, datetimes, durations), nulls as values, plain and
``over``, inside filters (the usual de-duplication) and other expressions, slices,
chunks, empty frames, the three frame kinds, the string language; streams refuse
them; the CUDA code path (on the host) agrees.
"""

from __future__ import annotations

from typing import Any

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

FLAGS = ("is_duplicated", "is_unique", "is_first_distinct", "is_last_distinct")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(KEY_KINDS),
    n=st.sampled_from([0, 1, 2, 9, 200]),
    seed=st.integers(0, 2**31 - 1),
    groups=st.sampled_from([1, 3, 30]),
    nulls=st.sampled_from([0.0, 0.3]),
    offset=st.sampled_from([0, 3]),
    chunks=st.sampled_from([1, 3]),
)
def test_flags_equal_polars(kind: str, n: int, seed: int, groups: int, nulls: float,
                            offset: int, chunks: int) -> None:  # fmt: skip
    # h: the values flagged (of `kind`), g: the groups of `over`; no rows of categories
    # would be a column of the null type (grouped_data encodes no type for them)
    assume(n > 0 or kind != "categorical")
    table = frame(n, seed, ("int8", kind), groups=groups, key_nulls=nulls, offset=offset,
                  chunks=chunks)  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        h = m.col("h")
        out = {f: getattr(h, f)() for f in FLAGS}
        out.update({f"{f}_o": getattr(h, f)().over("g") for f in FLAGS})
        return q.select(**out)

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_de_duplication_and_every_frame_kind(tier: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    table = frame(400, 5, ("int64", "string"), groups=20, key_nulls=0.1)
    assert_same_as_polars(table, lambda m, q: q.filter(m.col("h").is_first_distinct()))
    assert_same_as_polars(table, lambda m, q: q.filter(
        m.col("x").is_unique().over("g") & (m.col("i") > 0)).with_columns(
        d=(m.col("i") * 2).is_duplicated(), n=m.col("h").is_last_distinct().cast(m.Int8
                                                                                 if m is pl
                                                                                 else "int8")))


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 1, 2, 2], "x": [3.0, 3.0, None, None]})
    got = cb.lazy(table).eval("a = is_duplicated(x)\nb = x.is_first_distinct().over(g)")
    want = pl.from_arrow(table).with_columns(
        a=pl.col("x").is_duplicated(), b=pl.col("x").is_first_distinct().over("g"))
    assert pl.from_arrow(got.compute()).equals(want)


def test_a_stream_refuses_them(tmp_path: Any) -> None:
    import pyarrow.parquet as pq

    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"x": [1.0, 1.0, 3.0]}), path)
    with pytest.raises(JobSpecError, match=r"is_unique\(\)`: .* not supported in a streamed job"):
        pl.scan_parquet(path).gpu.with_columns(u=cb.col("x").is_unique()).compute()


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = frame(2_000, 9, ("int64", "float64"), groups=40, key_nulls=0.2)
    q = cb.lazy(table).select("g", a=cb.col("h").is_duplicated().over("g"),
                              b=cb.col("h").is_first_distinct() & (cb.col("i") > 0))  # fmt: skip
    on_host = pl.from_arrow(compute_on_host(q))
    assert_frame_equal(on_host, pl.from_arrow(q.compute(device="cpu")))
    want = pl.from_arrow(table).select("g", a=pl.col("h").is_duplicated().over("g"),
                                       b=pl.col("h").is_first_distinct() & (pl.col("i") > 0))
    assert_frame_equal(on_host, want)
    assert "flagged on the host CPU from its whole column" in q.explain(device="cpu")
