"""Every mutant of tests/mutants/mutants.toml still applies to the code it mutates.

`make mutants` reports a mutant whose ``old`` text is gone as stale only when it
runs (minutes); this check runs with the suite, so a change that moves the code a
mutant edits is seen at once, and the mutant is re-pointed with the change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.mutants import ROOT, load

MUTANTS = load()


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m["id"] for m in MUTANTS])
def test_each_edit_of_a_mutant_matches_its_file_once(mutant: dict[str, object]) -> None:
    source = (ROOT / Path(str(mutant["file"]))).read_text(encoding="utf-8")
    edits = mutant["edit"]
    assert isinstance(edits, list), mutant["id"]
    assert edits, mutant["id"]
    for edit in edits:
        assert source.count(edit["old"]) == 1, (mutant["id"], edit["old"][:80])
        assert edit["new"] != edit["old"], mutant["id"]


def test_mutant_ids_are_unique() -> None:
    ids = [m["id"] for m in MUTANTS]
    assert len(ids) == len(set(ids))
