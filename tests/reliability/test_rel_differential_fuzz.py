"""Differential fuzzing against polars: random expression trees over random frames.

Every operation family (arithmetic with ``//``, ``%``, ``**``; comparisons;
Kleene ``&``/``|``/``^``/``~``; unary math; strict and non-strict casts; nested
``when``; ``fill_null``/``fill_nan``/``coalesce``/``clip``; reductions inside
elementwise expressions; filters) over every engine dtype, with null densities
none/some/all, NaN and ±inf next to nulls, offsets that are not multiples of 8,
several chunks, and 0 or 1 rows; on polars, pyarrow and pandas inputs; on the
CPU backend, and some frames through the CUDA kernel text run on the host.

A tree compiles once and is then checked on many frames. ``-m slow`` runs
more than 100,000 cases.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.reliability.fuzzing import (
    STATS,
    Tree,
    boolean,
    column_types,
    frame_specs,
    numeric,
    run_tree,
)

TREES = int(os.environ.get("COLBRIDGE_REL_FUZZ_TREES", "14"))
FRAMES = int(os.environ.get("COLBRIDGE_REL_FUZZ_FRAMES", "40"))
SLOW_TREES = int(os.environ.get("COLBRIDGE_REL_FUZZ_SLOW_TREES", "220"))
SLOW_FRAMES = int(os.environ.get("COLBRIDGE_REL_FUZZ_SLOW_FRAMES", "160"))


def _maybe_keep(draw: Any) -> Tree | None:
    return draw(st.one_of(st.none(), boolean(1)))


@settings(
    max_examples=TREES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    report_multiple_bugs=False,
    database=None,
    phases=[Phase.explicit, Phase.generate],
)
@given(
    tree=numeric(3),
    types=column_types(),
    data=st.data(),
)
def test_random_trees_agree_with_polars_on_every_frame_kind(
    tree: Tree, types: Any, data: st.DataObject
) -> None:
    keep = data.draw(st.one_of(st.none(), boolean(1)), label="filter")
    specs = data.draw(st.lists(frame_specs(), min_size=FRAMES, max_size=FRAMES), label="frames")
    run_tree(tree, keep, types, specs, cuda_every=8)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    report_multiple_bugs=False,
    database=None,
    phases=[Phase.explicit, Phase.generate],
)
@given(tree=boolean(3), types=column_types(), data=st.data())
def test_random_boolean_trees_agree_with_polars(
    tree: Tree, types: Any, data: st.DataObject
) -> None:
    specs = data.draw(st.lists(frame_specs(), min_size=FRAMES, max_size=FRAMES), label="frames")
    run_tree(tree, None, types, specs, cuda_every=10)


def test_fuzz_counted_cases() -> None:
    # runs after the fuzz tests above in file order: the counters prove work was done
    if STATS.trees == 0:
        pytest.skip("fuzz tests were deselected")
    assert STATS.cases >= STATS.trees * 3
    assert not STATS.mismatches, STATS.mismatches[:3]


@pytest.mark.slow
@settings(
    max_examples=SLOW_TREES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    report_multiple_bugs=False,
    database=None,
    phases=[Phase.explicit, Phase.generate],
)
@given(tree=numeric(4), types=column_types(), data=st.data())
def test_random_trees_agree_with_polars_slow(tree: Tree, types: Any, data: st.DataObject) -> None:
    keep = data.draw(st.one_of(st.none(), boolean(2)), label="filter")
    specs = data.draw(
        st.lists(frame_specs(max_rows=300), min_size=SLOW_FRAMES, max_size=SLOW_FRAMES),
        label="frames",
    )
    run_tree(tree, keep, types, specs, cuda_every=40)
