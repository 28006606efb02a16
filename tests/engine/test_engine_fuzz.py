"""Random expression trees evaluated by colbridge and by polars, on hypothesis-drawn frames.

The trees and the comparison are the reliability fuzzer's
(`tests/reliability/fuzzing.py`: one operation at a time, known gaps only);
the frames here are hypothesis-drawn tables (`colbridge.testing.data.tables`)
of fixed column types instead of its seeded ones, so hypothesis shrinks a
failing frame. Each step compiles once and is checked on many frames.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from colbridge.testing.data import tables
from tests.reliability.fuzzing import ALL_OPS, check_step, draw_step

TYPES = {"a": pa.float64(), "b": pa.int32(), "c": pa.bool_(), "d": pa.int64()}
TREES = int(os.environ.get("COLBRIDGE_FUZZ_TREES", "20"))
FRAMES_PER_TREE = 20


@settings(
    max_examples=TREES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    report_multiple_bugs=False,
)
@given(seed=st.integers(0, 2**32 - 1), ops=st.lists(st.sampled_from(ALL_OPS), min_size=2,
                                                    max_size=3), data=st.data())  # fmt: skip
def test_random_trees_match_polars(seed: int, ops: list[str], data: st.DataObject) -> None:
    step = draw_step(seed, [*ops, "filter"], depth=2, types=TYPES)
    # one null density per column for the tree's frames: a kernel is compiled for each set
    # of columns holding nulls, and the frames vary rows, offsets and chunks under it
    pattern = data.draw(st.tuples(*(st.sampled_from([0.0, 0.2, 0.5, 1.0]) for _ in TYPES)),
                        label="nulls")  # fmt: skip
    for _ in range(FRAMES_PER_TREE):
        table = data.draw(tables(list(TYPES.values()), names=tuple(TYPES),
                                 null_patterns=[pattern]), label="frame")  # fmt: skip
        check_step(step, table, "drawn frame", kinds=("polars",))


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), data=st.data())
def test_random_trees_match_polars_slow(seed: int, data: st.DataObject) -> None:
    step = draw_step(seed, ["+", "filter"], depth=4, types=TYPES)
    for _ in range(250):
        table = data.draw(tables(list(TYPES.values()), names=tuple(TYPES), max_rows=200))
        check_step(step, table, "drawn frame")
