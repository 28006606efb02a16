"""Notebooks run top to bottom, are committed without outputs; the lazy handle's rich display.

The notebooks are executed with nbclient in a fresh kernel of this interpreter, on
the CPU default, with the repository first on the kernel's ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

import colbridge as cb

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_the_three_notebooks_exist() -> None:
    assert [p.name for p in NOTEBOOKS] == [
        "01_quickstart.ipynb",
        "02_feature_fusion.ipynb",
        "03_performance.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_committed_without_outputs(path: Path) -> None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"{path.name}: strip the outputs before committing"
            assert cell.get("execution_count") is None
            assert "execution" not in cell.get("metadata", {})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # jupyter_core warns about its config paths unless told which convention to use.
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # The kernel imports colbridge from this checkout, and stays on the CPU.
    path_parts = [str(ROOT), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in path_parts if p))
    monkeypatch.setenv("MPLBACKEND", "agg")
    # the performance notebook times its small sizes only: the larger ones run the same code
    monkeypatch.setenv("COLBRIDGE_NOTEBOOK_QUICK", "1")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert not errors


# -- rich display of the lazy handle ---------------------------------------------
class _Checker(HTMLParser):
    """Checks that tags are balanced and collects the text."""

    VOID = frozenset({"br", "hr", "img", "meta", "input", "col"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.text: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack, f"unbalanced </{tag}>"
        assert self.stack[-1] == tag, f"unbalanced </{tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(html: str) -> _Checker:
    checker = _Checker()
    checker.feed(html)
    checker.close()
    assert not checker.stack, f"unclosed tags {checker.stack}"
    return checker


@pytest.fixture
def query() -> cb.LazyFrame:
    df = pl.DataFrame({"a": [1.0, 4.0, None], "b<&>": [1, 2, 3]})
    return df.gpu.with_columns(
        c=(cb.col("a") - cb.col("a").mean()) * cb.col("b<&>"),
    ).filter(cb.col("c") > 0)


def test_repr_html_shows_the_plan(query: cb.LazyFrame) -> None:
    html = query._repr_html_()
    checker = _parse(html)
    text = " ".join(checker.text)
    assert "table" in checker.tags
    for expected in ("device", "cpu", "steps", "segment 1", "reduction pass", "copies"):
        assert expected in text
    assert "over a polars frame of 3 rows" in text
    assert 'col("b<&>")' in text  # shown as written ...
    assert "<&>" not in html  # ... but escaped in the HTML
    assert "&lt;&amp;&gt;" in html
    assert "last compute" not in text
    query.compute()
    assert "last compute" in " ".join(_parse(query._repr_html_()).text)


def test_repr_html_matches_explain(query: cb.LazyFrame) -> None:
    text = " ".join(_parse(query._repr_html_()).text)
    for line in query.explain().splitlines()[1:]:
        label = line.strip().partition(":")[0]
        assert label in text
        if line.startswith(" "):
            assert line.strip() in text  # indented lines appear verbatim


def test_repr_html_escapes_hostile_names() -> None:
    name = '<script>alert("x")</script>'
    df = pl.DataFrame({name: [1.0, 2.0]})
    html = df.gpu.with_columns(**{f"{name}2": cb.col(name) * 2})._repr_html_()
    assert "<script" not in html
    assert "&lt;script&gt;" in html
    _parse(html)


def test_repr_html_does_not_raise_for_a_bad_plan() -> None:
    df = pl.DataFrame({"a": [1.0]})
    html = df.gpu.with_columns(z=cb.col("missing") + 1)._repr_html_()
    text = " ".join(_parse(html).text)
    assert "ColumnNotFoundError" in text
    assert "missing" in text


def test_repr_markdown(query: cb.LazyFrame) -> None:
    md = query._repr_markdown_()
    assert md.startswith("**colbridge.LazyFrame**: over a polars frame of 3 rows")
    assert "- **device**: cpu" in md
    assert "- **copies**: none" in md
    # expressions are code spans, so `*` and `<` are not read as markup
    expr = 'c: float64 = ((col("a") - col("a").mean()) * col("b<&>").cast(float64, strict=False))'
    assert f"    - `{expr}`" in md.splitlines()
    # outside code spans, markup characters are escaped
    assert r"reads \['a', 'b\<\&\>'\]" in md
    for line in md.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("- ") and not stripped.startswith("- **"):
            assert stripped.startswith("- `"), line
            assert stripped.endswith("`"), line


def test_repr_markdown_escapes_markup_outside_code() -> None:
    df = pd.DataFrame({"x": [1.0, 2.0]})
    pieces = pl.concat([pl.DataFrame({"x_*": [1.0]}), pl.DataFrame({"x_*": [2.0]})], rechunk=False)
    md = pieces.gpu.with_columns(y=cb.col("x_*") + 1)._repr_markdown_()
    copies = next(line for line in md.splitlines() if line.startswith("- **copies**"))
    assert r"x\_\*" in copies  # the column name in the copy note, escaped
    assert "2 chunks" in copies
    assert cb.lazy(df)._repr_markdown_().count("- **steps**") == 1


def test_plain_repr_unchanged(query: cb.LazyFrame) -> None:
    assert repr(query).startswith("<colbridge.LazyFrame over DataFrame: with_columns(")
