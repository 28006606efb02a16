"""Hypothesis profiles for the whole suite.

``ci`` (the default) derandomizes: every run draws the same examples, so a red
build is reproducible and never depends on the day's seed. ``explore`` draws
fresh examples each run; use it to hunt for new bugs
(``COLBRIDGE_HYPOTHESIS_PROFILE=explore pytest tests/reliability``) and turn
each one found into a regression test.
"""

from __future__ import annotations

import os

try:
    from hypothesis import settings
except ImportError:  # a bare GPU machine runs tests/test_gpu_real.py without hypothesis
    settings = None

# The suite checks the compiled CPU kernels by default; the NumPy tier (`auto` on
# small inputs) is compared with them and with polars by tests that choose it.
os.environ.setdefault("COLBRIDGE_CPU_TIER", "compiled")

if settings is not None:
    settings.register_profile("ci", derandomize=True, print_blob=True)
    settings.register_profile("explore", derandomize=False, print_blob=True)
    settings.load_profile(os.environ.get("COLBRIDGE_HYPOTHESIS_PROFILE", "ci"))
