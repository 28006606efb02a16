"""The wheel ships every package of the source tree (a missing one breaks `import colbridge`)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed_in_pyproject() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11 (CI runs 3.11)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    packages = (ROOT / "colbridge").rglob("__init__.py")
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in packages}
    assert on_disk - listed == set()
    assert "colbridge.accessors" in listed  # shipped from the top-level `accessors/` folder
