"""``int_range(len())`` and ``with_row_index`` against polars.

The row number is a running count of the rows (a scan): per group with ``over``
(polars' idiom for a row's place in its group), of the kept rows after a filter, and
carried from one batch of a stream to the next. Generated frames with nulls,
offsets, chunks and groups; every integer type (a range past it is an error, as in
polars' strict cast); polars, pyarrow and pandas inputs; the string language.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import (
    DuplicateColumnError,
    InvalidOperationError,
    JobSpecError,
    SchemaError,
    UnsupportedOperationError,
)
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from tests.ordered.ordered_data import cut_table

DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _table(n: int, seed: int, *, offset: int = 0, chunks: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    total = n + offset
    table = pa.table({
        "x": pa.array(rng.normal(0, 5, total), mask=rng.random(total) < 0.3),
        "g": pa.array(rng.integers(0, 4, total), mask=rng.random(total) < 0.1),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


def _polars_dtype(name: str) -> Any:
    return getattr(pl, name.capitalize().replace("Uint", "UInt"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(0, 200), seed=st.integers(0, 2**31 - 1), offset=st.integers(0, 5),
       chunks=st.integers(1, 3), dtype=st.sampled_from(DTYPES))  # fmt: skip
def test_equal_polars(n: int, seed: int, offset: int, chunks: int, dtype: str) -> None:
    table = _table(n, seed, offset=offset, chunks=chunks)

    def ranges(m: Any) -> dict[str, Any]:
        typed = _polars_dtype(dtype) if m is pl else dtype
        i = m.int_range(m.len())
        return {"i": i, "k": i.over("g"), "t": m.int_range(0, m.len(), dtype=typed),
                "e": i * 2 + m.col("x"), "c": i.cum_sum().over("g"),
                "m": i.max(), "s": i.filter(m.col("x") > 0).sum()}  # fmt: skip

    assert_same_as_polars(table, lambda m, f: f.with_columns(**ranges(m)))
    assert_same_as_polars(table, lambda m, f: f.filter(m.col("x") > 0).select(**ranges(m)))
    assert_same_as_polars(table, lambda m, f: f.group_by("g", maintain_order=True).agg(
        r=m.int_range(m.len()).sum(), q=m.int_range(m.len()).max()))  # fmt: skip
    assert_same_as_polars(table, lambda m, f: f.filter(m.col("x") > 0).with_row_index(
        "i", offset=3))  # fmt: skip


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    frame = pl.from_arrow(_table(3_000, 5, offset=2, chunks=2))
    assert isinstance(frame, pl.DataFrame)
    want = frame.with_columns(i=pl.int_range(pl.len()), k=pl.int_range(pl.len()).over("g"))
    got = compute_on_tier(cb.lazy(frame).with_columns(
        i=cb.int_range(cb.len()), k=cb.int_range(cb.len()).over("g")), tier)  # fmt: skip
    assert_frame_equal(got, want, check_exact=True)


def test_with_row_index_of_every_frame_kind() -> None:
    frame = pl.DataFrame({"a": [5, 6, 7], "b": ["x", None, "z"]})
    want = frame.with_row_index("n", offset=10)
    assert_frame_equal(frame.gpu.with_row_index("n", offset=10).compute(), want)
    got_arrow = cb.lazy(frame.to_arrow()).with_row_index("n", offset=10).compute()
    assert_frame_equal(pl.from_arrow(got_arrow), want)  # type: ignore[arg-type]
    pdf = frame.to_pandas()
    got_pandas = pdf.gpu.with_row_index().compute()
    assert list(got_pandas.columns) == ["index", "a", "b"]
    assert got_pandas["index"].tolist() == [0, 1, 2]
    assert str(got_pandas["index"].dtype) == "uint32[pyarrow]"


def test_a_stream_counts_on_across_batches(tmp_path: Any) -> None:
    import dask.dataframe as dd
    import pyarrow.parquet as pq

    table = _table(100, 3)
    path = tmp_path / "r.parquet"
    pq.write_table(table, path, row_group_size=17)
    got = cb.lazy(pl.scan_parquet(path), batch_rows=37).with_row_index("n").with_columns(
        k=cb.int_range(cb.len()).over("g")).compute()  # fmt: skip
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    want = frame.with_row_index("n").with_columns(k=pl.int_range(pl.len()).over("g"))
    assert_frame_equal(got, want, check_exact=True)
    pdf = table.to_pandas()
    with pytest.raises(JobSpecError, match=r"not supported in a Dask plan"):
        cb.dask.apply(cb.lazy(pdf).with_row_index(), dd.from_pandas(pdf, npartitions=2))


def test_the_string_language_and_refusals() -> None:
    frame = pl.DataFrame({"a": list(range(300)), "g": [k % 3 for k in range(300)]})
    got = cb.lazy(frame).eval("i = int_range(len())\nk = over(int_range(0, len()), g)").compute()
    want = frame.with_columns(i=pl.int_range(pl.len()), k=pl.int_range(0, pl.len()).over("g"))
    assert_frame_equal(got, want, check_exact=True)
    with pytest.raises(pl.exceptions.InvalidOperationError):
        frame.select(pl.int_range(pl.len(), dtype=pl.Int8))
    with pytest.raises(InvalidOperationError, match=r"strict cast to int8 failed"):
        frame.gpu.select(cb.int_range(cb.len(), dtype="int8")).compute()
    for bad in (lambda: cb.int_range(5), lambda: cb.int_range(1, cb.len()),
                lambda: cb.int_range(0, cb.len(), 2)):  # fmt: skip
        with pytest.raises(UnsupportedOperationError, match=r"the range of the frame's rows"):
            bad()
    with pytest.raises(SchemaError, match=r"the range is of integers"):
        cb.int_range(cb.len(), dtype="float64")
    with pytest.raises(DuplicateColumnError, match=r"already has a column `a`"):
        frame.gpu.with_row_index("a")
    with pytest.raises(SchemaError, match=r"the name is a string"):
        frame.gpu.with_row_index(5)  # type: ignore[arg-type]
    with pytest.raises(InvalidOperationError, match=r"offset is a whole number >= 0"):
        frame.gpu.with_row_index(offset=-1)
    with pytest.raises(InvalidOperationError, match=r"strict cast to uint32 failed"):
        frame.gpu.with_row_index(offset=2**32 - 100).compute()
