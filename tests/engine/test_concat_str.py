"""``concat_str(args, separator, ignore_nulls)`` against polars.

The kernel combines each row's codes into one key; the distinct keys' strings are
joined once on the host (`colbridge.types.formatting.join_strings`). Generated frames
of strings, categoricals, numbers, dates and booleans with nulls, offsets and chunks;
literal strings, numbers and nulls among the arguments; the result computed on further
(measured, compared, grouped by); streams, Dask, the string language, every kernel tier,
and the refusal where the combinations outgrow an int64 key.
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
from colbridge.errors import ComputeError, SchemaError
from colbridge.testing.asserts import assert_same_as_polars, assert_stream_and_dask_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from tests.ordered.ordered_data import cut_table

#: argument kinds: a column of the frame, or a literal
ARGUMENTS = ["s", "t", "c", "i", "f", "d", "b", "lit_str", "lit_int", "lit_none"]


def _table(seed: int, n: int, offset: int, chunks: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    rows = offset + n

    def nulls(values: Any, arrow_type: pa.DataType) -> pa.Array:
        return pa.array(values, arrow_type, mask=rng.random(rows) < 0.25)

    words = np.array(["a", "bc", "", "é", "a-b", "xyz"])
    table = pa.table({
        "s": nulls(words[rng.integers(0, len(words), rows)], pa.string()),
        "t": nulls(words[rng.integers(0, 3, rows)], pa.large_string()),
        "c": nulls(words[rng.integers(0, len(words), rows)], pa.string()).dictionary_encode(),
        "i": nulls(rng.integers(-5, 5, rows), pa.int64()),
        "f": nulls(rng.integers(0, 8, rows) / 4, pa.float64()),
        "d": nulls(rng.integers(19_000, 19_010, rows).astype(np.int32), pa.int32())
        .cast(pa.date32()),
        "b": nulls(rng.random(rows) < 0.5, pa.bool_()),
        "g": pa.array(rng.integers(0, 3, rows)),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


def _argument(m: Any, kind: str) -> Any:
    if kind == "lit_str":
        return m.lit("=")
    if kind == "lit_int":
        return m.lit(7)
    if kind == "lit_none":
        return m.lit(None)
    return m.col(kind)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 40), offset=st.integers(0, 9),
       chunks=st.integers(1, 3),
       kinds=st.lists(st.sampled_from(ARGUMENTS), min_size=1, max_size=4),
       separator=st.sampled_from(["", "-", "||", "é"]), ignore_nulls=st.booleans())  # fmt: skip
def test_equal_polars(seed: int, n: int, offset: int, chunks: int, kinds: list[str],
                      separator: str, ignore_nulls: bool) -> None:  # fmt: skip
    table = _table(seed, n, offset, chunks)

    def steps(m: Any, f: Any) -> Any:
        joined = m.concat_str([_argument(m, k) for k in kinds], separator=separator,
                              ignore_nulls=ignore_nulls)  # fmt: skip
        return f.select(j=joined, n=joined.str.len_chars(), e=joined == "a-bc",
                        u=joined.n_unique(), first=joined.first().over("g"))  # fmt: skip

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_as_a_grouping_key_and_after_a_filter() -> None:
    table = _table(5, 400, 3, 3)

    def grouped(m: Any, f: Any) -> Any:
        key = m.concat_str("s", "i", "d", separator="/")
        return f.filter(m.col("g") > 0).group_by(key.alias("k"), maintain_order=True).agg(
            rows=m.len(), f=m.col("f").sum())  # fmt: skip

    assert_same_as_polars(table, grouped, kinds=("polars", "pyarrow"))


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    frame = pl.DataFrame({"a": [f"k{k % 13}" if k % 7 else None for k in range(3_000)],
                          "n": [k % 5 for k in range(3_000)]})  # fmt: skip

    def steps(m: Any) -> dict[str, Any]:
        joined = m.concat_str("a", "n", separator="_", ignore_nulls=True)
        return {"j": joined, "l": joined.str.len_bytes(), "p": joined.str.starts_with("k1")}

    got = compute_on_tier(cb.lazy(frame).select(**steps(cb)), tier)
    assert_frame_equal(got, frame.select(**steps(pl)))


def test_literals_fold_and_the_string_language() -> None:
    frame = pl.DataFrame({"a": ["x", None], "n": [1, 2]})
    exprs = {"l": lambda m: m.concat_str(m.lit("p"), m.lit(1), separator=":"),
             "one": lambda m: m.concat_str("n"),
             "none": lambda m: m.concat_str(m.lit(None), m.lit(None), ignore_nulls=True)}
    want = frame.select(**{k: e(pl) for k, e in exprs.items()})
    assert_frame_equal(frame.gpu.select(**{k: e(cb) for k, e in exprs.items()}).compute(), want)
    got = cb.lazy(frame).eval('k = concat_str(a, n, separator="-", ignore_nulls=True)').compute()
    assert got["k"].to_list() == ["x-1", "2"]


def test_arguments_of_the_wrong_kind_are_refused_by_name() -> None:
    with pytest.raises(SchemaError, match="takes a string separator, got 1"):
        cb.concat_str("a", "b", separator=1)  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match=r"concat_str\(ignore_nulls='yes'\)"):
        cb.concat_str("a", "b", ignore_nulls="yes")  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="needs at least one expression"):
        cb.concat_str()


def test_combinations_past_an_int64_key_are_refused() -> None:
    n = 60_000  # (60,001)**4 > 2**63: four columns of 60,000 distinct values
    frame = pl.DataFrame({name: [f"{name}{k}" for k in range(n)] for name in "abcd"})
    with pytest.raises(ComputeError, match=r"60000, 60000, 60000, 60000 distinct values"):
        frame.gpu.select(cb.concat_str("a", "b", "c", "d")).compute()
    got = frame.head(3).gpu.select(cb.concat_str("a", "b", "c", "d")).compute()
    assert got.to_series().to_list() == ["a0b0c0d0", "a1b1c1d1", "a2b2c2d2"]


def test_a_stream_and_dask(tmp_path: Any) -> None:
    table = pa.table({"s": pa.array([f"u{k % 9}" if k % 5 else None for k in range(200)]),
                      "d": pa.array([dt.date(2024, 1, 1 + k % 28) for k in range(200)])})
    assert_stream_and_dask_as_polars(table, lambda m: {
        "k": m.concat_str("s", "d", separator="@", ignore_nulls=True),
        "n": m.concat_str("d", "s")}, tmp_path)  # fmt: skip
