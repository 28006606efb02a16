"""``x.get(index, null_on_oob=...)``: one value by position, against polars.

Of the whole column, of each group in ``group_by(...).agg`` and of each window of
``over``; positions from either end, nulls counted, past the rows (an error naming the
expression where polars raises, null with ``null_on_oob``); floats, integers and
strings with nulls, null keys, sliced and chunked columns, empty frames; the string
language.
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
from colbridge.errors import InvalidOperationError, UnsupportedOperationError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from tests.ordered.ordered_data import cut_table


def _table(n: int, seed: int, *, groups: int, offset: int, chunks: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    total = n + offset
    table = pa.table({
        "g": pa.array(rng.integers(0, groups, total), mask=rng.random(total) < 0.1),
        "x": pa.array(rng.normal(size=total), mask=rng.random(total) < 0.2),
        "i": pa.array(rng.integers(-9, 9, total), mask=rng.random(total) < 0.2),
        "s": pa.array([f"s{v}" for v in rng.integers(0, 5, total)], mask=rng.random(total) < 0.2),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.sampled_from([0, 1, 3, 8, 40]), seed=st.integers(0, 2**31 - 1),
       groups=st.sampled_from([1, 3, 12]), offset=st.sampled_from([0, 3]),
       chunks=st.sampled_from([1, 2]), index=st.integers(-9, 9), oob=st.booleans(),
       context=st.sampled_from(["select", "agg", "over"]))  # fmt: skip
def test_equal_polars(n: int, seed: int, groups: int, offset: int, chunks: int, index: int,
                      oob: bool, context: str) -> None:  # fmt: skip
    """Where polars raises (a position past a group's rows), colbridge raises too."""
    table = _table(n, seed, groups=groups, offset=offset, chunks=chunks)

    def steps(m: Any, q: Any) -> Any:
        outputs = [m.col(c).get(index, null_on_oob=oob) for c in ("x", "i", "s")]
        if context == "agg":
            return q.group_by("g", maintain_order=True).agg(outputs)
        if context == "over":
            windows = zip(outputs, "xis", strict=True)
            return q.select([o.over("g").alias(f"{c}_o") for o, c in windows])
        return q.select([*outputs, (m.col("i").get(index, null_on_oob=True) * 2
                                    + m.col("i").sum()).alias("mixed")])  # fmt: skip

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_positions_from_either_end_and_past_them() -> None:
    df = pl.DataFrame({"g": [1, 1, 2], "x": [None, 2.0, 3.0]})
    got = df.gpu.select(a=cb.col("x").get(0), b=cb.col("x").get(-1), c=cb.col("x").get(-3),
                        d=cb.col("x").get(3, null_on_oob=True)).compute()  # fmt: skip
    assert got.rows() == [(None, 3.0, None, None)]
    with pytest.raises(InvalidOperationError, match=r"`col\(\"x\"\)\.get\(3\)`: the index is out"):
        df.gpu.select(cb.col("x").get(3)).compute()
    with pytest.raises(InvalidOperationError, match=r"null_on_oob=True"):
        df.gpu.group_by("g").agg(cb.col("x").get(-2)).compute()
    with pytest.raises(UnsupportedOperationError, match="not an expression"):
        cb.col("x").get(cb.col("g"))  # type: ignore[arg-type]


def test_the_string_language() -> None:
    df = pl.DataFrame({"g": [1, 1, 2], "x": [None, 2.0, 3.0]})
    got = cb.lazy(df).eval("y = x.get(-1); z = get(x, 1, null_on_oob=True).over(g)").compute()
    assert got["y"].to_list() == [3.0, 3.0, 3.0]
    assert got["z"].to_list() == [2.0, 2.0, None]


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    """The position's value and its bounds check (a kernel check) on the NumPy, compiled
    and CUDA (run on the host) kernels."""
    frame = pl.DataFrame({"g": [1, 2, 1, 3, 3, 3] * 500,
                          "x": [None, 2.0, 3.0, 4.0, 5.0, 6.0] * 500})

    def outputs(m: Any) -> list[Any]:
        x = m.col("x")
        return [x.get(-1).alias("a"), x.get(2, null_on_oob=True).alias("b")]

    q = cb.lazy(frame).group_by("g", maintain_order=True).agg(outputs(cb))
    want = frame.group_by("g", maintain_order=True).agg(outputs(pl))
    assert_frame_equal(compute_on_tier(q, tier), want)
    assert_frame_equal(compute_on_tier(cb.lazy(frame).select(outputs(cb)), tier),
                       frame.select(outputs(pl)))  # fmt: skip
    too_far = cb.lazy(frame).select(cb.col("x").get(700).over("g"))  # group 2 has 500 rows
    with pytest.raises(InvalidOperationError, match=r"get\(700\)`: the index is out"):
        compute_on_tier(too_far, tier)
