"""Rows that read or make validity bits one at a time, on one thread and on several.

Every expression here reads a validity bit per row (``when``, ``fill_null``, Kleene
logic, ``coalesce``) or makes one (comparisons, ``is_null``, integer division by a
column, a non-strict cast), over frames that end mid-word and mid-block, sliced so
that bitmaps start mid-byte, and filtered (the filter's counting pass packs its bits
too), in the kernels of both sizes (`PARALLEL_MIN_ROWS`). One expression set per
test: the data varies, not the kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge.backends.cpu as cpu
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.data import make_column, tables

BLOCK = 16384
# ends mid-word, on a word, mid-block, on a block, past a block
LENGTHS = (0, 1, 63, 64, 65, 130, 1000, BLOCK - 1, BLOCK, BLOCK + 65)


@pytest.fixture(params=["parallel", "one thread"])
def variant(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The kernel variant of either size, whatever the frame's size."""
    parallel = request.param == "parallel"
    monkeypatch.setattr(cpu, "PARALLEL_MIN_ROWS", 0 if parallel else 1 << 62)
    return str(request.param)


def _steps(m: Any, q: Any) -> Any:
    a, b, c = m.col("a"), m.col("b"), m.col("c")
    return q.with_columns(
        gt=a > b,
        w=m.when(a > 0).then(a).otherwise(b),
        k=(a > 0) & c,
        o=(a < 0) | c,
        f=a.fill_null(b),
        co=m.coalesce(a, b),
        nn=a.is_null(),
        dz=b // (b % 5),
        nc=(a * 100).cast(getattr(m, "Int8", "int8"), strict=False),  # polars: pl.Int8
    )


def _filtered(m: Any, q: Any) -> Any:
    a, b, c = m.col("a"), m.col("b"), m.col("c")
    return q.with_columns(d=b // (b % 3), e=a > 0).filter((a > b) | c)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_generated_frames(variant: str, data: st.DataObject) -> None:
    table = data.draw(tables([pa.float64(), pa.int64(), pa.bool_()], lengths=LENGTHS,
                             densities=(0.0, 0.1, 0.5, 1.0)))  # fmt: skip
    assert_same_as_polars(table, _steps, kinds=("polars",))
    assert_same_as_polars(table, _filtered, kinds=("polars",))


@pytest.mark.parametrize("offset", [0, 5])
def test_several_blocks_with_nulls(variant: str, offset: int) -> None:
    rng = np.random.default_rng(offset)
    n = 3 * BLOCK + 1001  # several blocks, the last one partial
    table = pa.table({
        "a": make_column(rng, pa.float64(), n + offset, 0.2),
        "b": make_column(rng, pa.int64(), n + offset, 0.1),
        "c": make_column(rng, pa.bool_(), n + offset, 0.3),
    }).slice(offset)  # fmt: skip
    assert_same_as_polars(table, _steps, kinds=("polars", "pyarrow"))
    assert_same_as_polars(table, _filtered, kinds=("polars",))
