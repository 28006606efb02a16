"""Suite-wide fixtures: hypothesis profiles, the frame kinds, and the fuzz seeds in the header.

Hypothesis: ``ci`` (the default) derandomizes: every run draws the same
examples, so a red build is reproducible and never depends on the day's seed.
``explore`` draws fresh examples each run; use it to hunt for new bugs
(``COLBRIDGE_HYPOTHESIS_PROFILE=explore pytest tests/reliability``) and turn
each one found into a regression test.

``constructor``: one fixture over the frame kinds colbridge ingests (pyarrow,
polars, pandas NumPy-backed, pandas nullable, pandas ArrowDtype); a test that
asks for it runs once per kind and builds its frame with
``constructor(table)`` from a pyarrow table.

``tier``: both CPU evaluators (the NumPy one and the compiled kernels, one IR): a
test that asks for it runs once under each ``COLBRIDGE_CPU_TIER``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

# The suite checks the compiled CPU kernels by default; the NumPy tier (`auto` on
# small inputs) is compared with them and with polars by tests that choose it.
os.environ.setdefault("COLBRIDGE_CPU_TIER", "compiled")
# Kernels run on the CUDA code path (the CuPy double and the g++ shim) are built by
# NVRTC as PTX, the front half of a cubin's build (no `ptxas`), over a suite that
# builds some 1,500 kernels. Cubins for sm_90 are built and checked by
# tests/cuda/test_cuda_codegen.py and test_scan_cuda_host.py, and by tests that ask.
os.environ.setdefault("COLBRIDGE_CUDA_BINARY", "ptx")

try:
    from hypothesis import settings
except ImportError:  # a bare GPU machine runs tests/cuda/test_gpu_real.py without hypothesis
    settings = None
if settings is not None:
    settings.register_profile("ci", derandomize=True, print_blob=True)
    settings.register_profile("explore", derandomize=False, print_blob=True)
    settings.load_profile(os.environ.get("COLBRIDGE_HYPOTHESIS_PROFILE", "ci"))

from colbridge.testing.asserts import ALL_FRAME_KINDS, to_kind

Constructor = Callable[[pa.Table], Any]


@pytest.fixture(params=ALL_FRAME_KINDS)
def constructor(request: pytest.FixtureRequest) -> Constructor:
    """Build a frame of one kind from a pyarrow table (the test runs once per kind)."""
    kind = request.param

    def build(table: pa.Table) -> Any:
        return to_kind(table, kind)

    build.kind = kind  # type: ignore[attr-defined]
    return build


@pytest.fixture(params=["numpy", "compiled"])
def tier(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test under one CPU tier (its name is the fixture's value)."""
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", request.param)
    return str(request.param)


def pytest_report_header(config: pytest.Config) -> list[str]:
    from tests.reliability.fuzzing import FIXED_SEEDS, daily_seed, seeds

    day = daily_seed()
    extra = f", today's {day} (replay with COLBRIDGE_FUZZ_SEED={day})" if day in seeds() \
        and day not in FIXED_SEEDS else " (COLBRIDGE_FUZZ_DAILY=1 adds the day's)"  # fmt: skip
    return [
        f"colbridge fuzz seeds: fixed {list(FIXED_SEEDS)}{extra}"
    ]
