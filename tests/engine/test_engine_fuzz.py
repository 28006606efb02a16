"""Random expression trees (hypothesis) evaluated by colbridge and by polars, on many frames each.

Each tree compiles once; it is then checked against polars on many generated
frames (nulls, NaN, offsets, chunks, empty), so thousands of cases run with a
bounded number of kernels. ``-m slow`` raises the counts. The trees come from
the reliability fuzzer (`tests/reliability/fuzzing.py`); the frames here are
hypothesis-drawn tables (`tests/engine/engine_data.py`) instead of its seeded ones.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.engine_data import tables
from tests.reliability.fuzzing import Tree, boolean, check_against_polars, numeric, tolerance

TYPES = {"a": pa.float64(), "b": pa.int32(), "c": pa.bool_(), "d": pa.int64()}
TREES = int(os.environ.get("COLBRIDGE_FUZZ_TREES", "30"))
FRAMES_PER_TREE = 25


@settings(
    max_examples=TREES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    report_multiple_bugs=False,
)
@given(tree=numeric(3), keep=boolean(2), data=st.data())
def test_random_trees_match_polars(tree: Tree, keep: Tree, data: st.DataObject) -> None:
    for _ in range(FRAMES_PER_TREE):
        table = data.draw(tables(list(TYPES.values()), names=tuple(TYPES)), label="frame")
        check_against_polars(
            tree, keep, table, "drawn frame", rtol=tolerance(tree, TYPES), kinds=("polars",),
            allow_refusals=False,
        )  # fmt: skip


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(tree=numeric(4), data=st.data())
def test_random_trees_match_polars_slow(tree: Tree, data: st.DataObject) -> None:
    for _ in range(250):
        table = data.draw(tables(list(TYPES.values()), names=tuple(TYPES), max_rows=200))
        check_against_polars(
            tree, None, table, "drawn frame", rtol=tolerance(tree, TYPES), allow_refusals=False
        )
