"""Reliability suite: the run's counters go to ``$COLBRIDGE_RELIABILITY_STATS`` (JSON)."""

from __future__ import annotations

import json
import os
from typing import Any


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    path = os.environ.get("COLBRIDGE_RELIABILITY_STATS")
    if not path:
        return
    from tests.reliability.fuzzing import FIGURES, STATS

    data = {"fuzz": STATS.as_dict(), "figures": FIGURES, "exitstatus": int(exitstatus)}
    with open(path, "w") as fh:
        json.dump(data, fh, indent=2, default=str)
