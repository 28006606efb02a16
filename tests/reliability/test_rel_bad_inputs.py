"""The bad-input catalogue (`colbridge.testing.bad_inputs.CASES`, documented in docs/errors.md).

Every case must raise its colbridge error (or give its CLI exit status) with a
message naming the problem and the remedy, and leave its input byte-for-byte
unchanged (no partial output next to CLI inputs either).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import colbridge as cb
from colbridge.testing.bad_inputs import CASES, BadInput, check_outcome, fingerprint, run_case
from tests.reliability.fuzzing import FIGURES


def test_catalogue_is_large_and_ids_are_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) >= 40
    assert len(set(ids)) == len(ids)
    FIGURES["catalogue_cases"] = len(ids)
    FIGURES["catalogue_categories"] = sorted({c.category for c in CASES})


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_gives_a_clear_error_and_leaves_input_alone(
    case: BadInput, tmp_path: Path
) -> None:
    outcome = run_case(case, tmp_path)
    problems = check_outcome(case, outcome)
    assert not problems, f"{case.id}: {problems}; message: {outcome.message!r}"
    FIGURES["catalogue_passed"] = FIGURES.get("catalogue_passed", 0) + 1


def test_fingerprint_sees_a_one_byte_change() -> None:
    # the unchanged-input check can fail: flipping one value changes the fingerprint
    values = np.arange(5.0)
    frame = pd.DataFrame({"a": values.copy()})
    before = fingerprint(frame)
    frame.iloc[2, 0] = 99.0
    assert fingerprint(frame) != before


def test_docs_errors_md_lists_every_case() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "errors.md").read_text()
    for case in CASES:
        assert f"`{case.id}`" in text, f"docs/errors.md misses {case.id}; rerun the report"


def test_strided_numpy_backed_pandas_columns_compute_correctly_and_stay_unchanged() -> None:
    base = np.arange(60, dtype=np.float64).reshape(12, 5)
    frame = pd.DataFrame({"a": base[:, 1], "b": base[:, 4]}, copy=False)
    before = fingerprint(frame)
    out = frame.gpu.with_columns(s=cb.col("a") * 2 + cb.col("b")).compute()
    assert out["s"].tolist() == (base[:, 1] * 2 + base[:, 4]).tolist()
    assert fingerprint(frame) == before
