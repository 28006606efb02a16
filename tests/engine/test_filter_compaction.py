"""Filters compacted inside the pass: the kept rows of outputs and carried columns.

A kept row has every validity bitmap the filter reads valid, so a column null only
through those bitmaps comes out without a validity buffer; a column the filter does
not read, or one the filter keeps nulls of (Kleene ``|``, ``is_null``, ``fill_null``),
keeps its own. Either way the result is polars' (values, nulls and types), on frames
sliced to start mid-byte, on one thread and on several.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge as cb
import colbridge.backends.cpu as cpu

Mask = Callable[[Any], Any]

#: (filter, columns that cannot hold a null after it)
MASKS: dict[str, tuple[Mask, set[str]]] = {
    "w>1": (lambda m: m.col("w") > 1, {"a", "b", "w"}),
    "a>0.5": (lambda m: m.col("a") > 0.5, {"a"}),
    "a>0.5|c>0.5": (lambda m: (m.col("a") > 0.5) | (m.col("c") > 0.5), set()),
    "is_null(a)": (lambda m: m.col("a").is_null(), set()),
    "fill_null(a,1)>0.5": (lambda m: m.col("a").fill_null(1.0) > 0.5, set()),
}


def _frame(n: int, offset: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    total = n + offset
    cols = {
        k: pa.array(rng.random(total), mask=rng.random(total) < share)
        for k, share in (("a", 0.2), ("b", 0.1), ("c", 0.3))
    }
    cols["i"] = pa.array(rng.integers(-5, 5, total), mask=rng.random(total) < 0.1)
    return pa.table(cols).slice(offset, n)


def _check(table: pa.Table, name: str) -> None:
    mask, never_null = MASKS[name]

    def query(frame: Any, m: Any) -> Any:
        return frame.with_columns(w=m.col("a") * 2 + m.col("b")).filter(mask(m))

    want = query(pl.from_arrow(table), pl)
    got = query(cb.lazy(table), cb).compute()
    assert pl.from_arrow(got).equals(want), name
    kernels = query(cb.lazy(table), cb)
    kernels.compute()
    assert any(k.startswith("filter[") for k in kernels.last_report.stats.kernels)  # type: ignore[union-attr]
    for column in got.column_names:
        chunks = got.column(column).chunks
        if column in never_null:
            assert all(c.buffers()[0] is None for c in chunks), (name, column)
        assert got.column(column).null_count == want[column].null_count(), (name, column)


@pytest.mark.parametrize("name", list(MASKS))
@pytest.mark.parametrize("offset", [0, 3])
def test_kept_rows_and_their_nulls_equal_polars(name: str, offset: int) -> None:
    _check(_frame(1000, offset, seed=offset), name)


@pytest.mark.parametrize("name", ["w>1", "a>0.5|c>0.5"])
def test_the_threaded_kernels_too(name: str) -> None:
    # blocks on several threads, each packing its kept rows at its own offset
    _check(_frame(cpu.PARALLEL_MIN_ROWS + 77, 5, seed=11), name)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(0, 300), offset=st.integers(0, 9), seed=st.integers(0, 2**16),
       name=st.sampled_from(list(MASKS)))  # fmt: skip
def test_generated_frames(rows: int, offset: int, seed: int, name: str) -> None:
    _check(_frame(rows, offset, seed), name)
