"""``str.join`` per group of ``group_by(...).agg`` and of a whole column, against polars.

Strings with nulls (left out, or the group's result null with ``ignore_nulls=False``),
numbers and computed strings (written as ``cast(pl.String)`` writes them), filtered,
sorted and sliced values, empty groups and frames, null keys, sliced and chunked
columns, the string language; the strings then computed on by a later expression of
the same ``agg``; a one-row ``select`` beside other reductions, on the CPU and on the
CUDA path run on the host. Where colbridge does not compute it (``with_columns``,
``over``, inside an expression of a ``select``, a stream, Dask) it refuses by name.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import JobSpecError, UnsupportedOperationError
from colbridge.testing.asserts import assert_same_as_polars
from tests.ordered.ordered_data import cut_table


def _table(n: int, seed: int, *, groups: int, offset: int, chunks: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    total = n + offset
    words = np.array(["", "a", "ß", "日本", "x y", "b,c"])
    table = pa.table({
        "g": pa.array(rng.integers(0, groups, total), mask=rng.random(total) < 0.1),
        "s": pa.array(words[rng.integers(0, len(words), total)], mask=rng.random(total) < 0.2),
        "i": pa.array(rng.integers(-5, 50, total), mask=rng.random(total) < 0.2),
        "x": pa.array(rng.normal(size=total).round(2), mask=rng.random(total) < 0.2),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.sampled_from([0, 1, 3, 8, 40]), seed=st.integers(0, 2**31 - 1),
       groups=st.sampled_from([1, 3, 12]), offset=st.sampled_from([0, 3]),
       chunks=st.sampled_from([1, 2]), delimiter=st.sampled_from(["", ",", " | ", "ß"]),
       ignore_nulls=st.booleans(), categorical=st.booleans(), whole=st.booleans())  # fmt: skip
def test_equal_polars(n: int, seed: int, groups: int, offset: int, chunks: int,
                      delimiter: str, ignore_nulls: bool, categorical: bool,
                      whole: bool) -> None:  # fmt: skip
    table = _table(n, seed, groups=groups, offset=offset, chunks=chunks)
    if categorical:
        table = table.set_column(1, "s", table.column("s").dictionary_encode())

    def steps(m: Any, q: Any) -> Any:
        def joined(e: Any) -> Any:
            return e.str.join(delimiter, ignore_nulls=ignore_nulls)

        outputs = [
            joined(m.col("s")).alias("s"), joined(m.col("i")).alias("i"),
            joined(m.col("s").cast(pl.String).str.to_uppercase()).alias("upper"),
            joined(m.col("s").filter(m.col("i") > 10)).alias("kept"),
            joined(m.col("s").sort_by("i", nulls_last=True)).alias("sorted"),
            joined(m.col("x").head(2)).alias("head"),
        ]  # fmt: skip
        if whole:  # one row, beside another reduction
            return q.select(*outputs, m.col("i").sum().alias("total"))
        return q.group_by("g", maintain_order=True).agg(
            *outputs, joined(m.col("s")).str.len_chars().alias("chars"))  # fmt: skip

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow", "pandas"))


def test_nulls_and_empty_groups() -> None:
    df = pl.DataFrame({"g": [1, 1, 2, 2, 3], "s": ["a", None, "b", "c", None]})
    got = df.gpu.group_by("g", maintain_order=True).agg(
        cb.col("s").str.join("-"), n=cb.col("s").str.join("-", ignore_nulls=False),
        e=cb.col("s").filter(cb.col("s") == "zz").str.join(","),
    ).compute()  # fmt: skip
    assert got.rows() == [(1, "a", None, ""), (2, "b-c", "b-c", ""), (3, "", None, "")]
    whole = df.gpu.select(cb.col("s").str.join(","), n=cb.len()).compute()
    assert whole.rows() == [("a,b,c", 5)]
    none = df.gpu.filter(cb.col("g") > 5).select(cb.col("s").str.join(",")).compute()
    assert none.rows() == [("",)]  # polars: one row of "" for no rows


def test_on_the_cuda_path_through_the_host_shim() -> None:
    from colbridge.testing.cuda_host import compute_on_host

    df = pl.DataFrame({"g": [1, 1, 2], "s": ["a", "b", None], "i": [1, 2, 3]})
    for steps in (lambda m, q: q.select(m.col("s").str.join("-"), m.col("i").sum()),
                  lambda m, q: q.group_by("g", maintain_order=True).agg(
                      m.col("s").str.join("-"), m.col("i").str.join())):  # fmt: skip
        assert_frame_equal(compute_on_host(steps(cb, df.gpu)), steps(pl, df.lazy()).collect())


def test_the_string_language() -> None:
    df = pl.DataFrame({"g": [1, 1, 2], "s": ["a", "b", None]})
    parsed = cb.parse_expr("s.str.join('-', ignore_nulls=False)")
    got = cb.lazy(df).group_by("g", maintain_order=True).agg(j=parsed).compute()
    assert got["j"].to_list() == ["a-b", None]


def test_where_it_is_not_computed_it_is_refused_by_name(tmp_path: Any) -> None:
    df = pl.DataFrame({"g": [1, 1, 2], "s": ["a", "b", None]})
    for build in (lambda: df.gpu.with_columns(cb.col("s").str.join(",")),
                  lambda: df.gpu.select(cb.col("s").str.join(",").over("g")),
                  lambda: df.gpu.select(cb.col("s").str.join(",").str.len_chars())):  # fmt: skip
        refusal = r"`str\.join` is computed per group of `group_by\(\.\.\.\)\.agg.*not in"
        with pytest.raises(UnsupportedOperationError, match=refusal):
            build().compute()
    path = os.path.join(str(tmp_path), "s.parquet")
    df.write_parquet(path)
    stream = cb.lazy(pl.scan_parquet(path), batch_rows=2).group_by("g").agg(
        cb.col("s").str.join(","))  # fmt: skip
    with pytest.raises(JobSpecError, match=r"`str\.join` per group cannot be merged from the "
                                           r"pieces"):  # fmt: skip
        stream.compute()
    with pytest.raises(cb.ColbridgeError, match=r"delimiter is a string"):
        cb.col("s").str.join(1)  # type: ignore[arg-type]


def test_a_long_group() -> None:
    rng = np.random.default_rng(3)
    df = pl.DataFrame({"g": rng.integers(0, 50, 20_000),
                       "s": [f"w{v}" for v in rng.integers(0, 1000, 20_000)]})  # fmt: skip
    got = df.gpu.group_by("g", maintain_order=True).agg(cb.col("s").str.join(" ")).compute()
    assert_frame_equal(got, df.group_by("g", maintain_order=True).agg(pl.col("s").str.join(" ")))
