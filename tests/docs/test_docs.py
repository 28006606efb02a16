"""The documentation is executable: docstring examples, README code blocks, docs/*.md examples.

* every ``>>>`` example in a docstring of a ``colbridge`` module runs under doctest;
* every ```` ```python ```` block of README.md runs (each in a fresh namespace and
  a temporary working directory), so the README cannot rot;
* every ```` ```pycon ```` block of ``docs/*.md`` runs under doctest;
* the public API's functions and classes keep their examples (a ratchet: the
  ones still without are listed below, and the list may only shrink).
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from typing import Any

import pytest

import colbridge

ROOT = Path(__file__).resolve().parents[2]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

#: Docstring examples known to be wrong, reported to their modules' owners.
#: Remove an entry when its docstring is fixed.
KNOWN_BROKEN_DOCTESTS = {
    # the repr of a comparison gained outer parentheses: `((col("a") * col("b")).sqrt() > lit(1))`
}


def _modules() -> list[str]:
    names = ["colbridge", "colbridge.accessors"]
    names += [m.name for m in pkgutil.walk_packages(colbridge.__path__, "colbridge.")]
    return sorted(set(names))


def _doctests() -> list[Any]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    params = []
    for name in _modules():
        module = importlib.import_module(name)
        for test in finder.find(module, name):
            if not test.examples:
                continue
            marks = []
            if test.name in KNOWN_BROKEN_DOCTESTS:
                marks.append(pytest.mark.xfail(reason="known wrong docstring", strict=False))
            params.append(pytest.param(test, id=test.name, marks=marks))
    return params


def _run(test: doctest.DocTest, *, clear_globs: bool = True) -> None:
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    lines: list[str] = []
    runner.run(test, out=lines.append, clear_globs=clear_globs)
    if runner.failures:
        pytest.fail("".join(lines), pytrace=False)


@pytest.mark.parametrize("test", _doctests())
def test_docstring_examples(test: doctest.DocTest) -> None:
    _run(test)


def test_doctests_were_found() -> None:
    names = {p.id for p in _doctests()}
    for expected in ("colbridge.lazy.LazyFrame", "colbridge.columns.tensor.as_tensor"):
        assert expected in names


# -- README --------------------------------------------------------------------
_FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)


def _blocks(path: Path, language: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [body for lang, body in _FENCE.findall(text) if lang == language]


README_BLOCKS = _blocks(ROOT / "README.md", "python")


def test_readme_has_examples() -> None:
    assert len(README_BLOCKS) >= 2  # pandas and polars at least


@pytest.mark.parametrize("index", range(len(README_BLOCKS)), ids=lambda i: f"block{i}")
def test_readme_python_blocks_run(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = compile(README_BLOCKS[index], f"README.md python block {index}", "exec")
    exec(code, {"__name__": "__readme__"})


def test_readme_quick_start_is_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    bash = _FENCE.findall(section)
    commands = [line.split("#")[0].strip() for _, body in bash for line in body.splitlines()]
    assert [c for c in commands if c] == ["make demo", "make test"]


# -- docs/*.md -------------------------------------------------------------------
DOC_PAGES = [p for p in sorted((ROOT / "docs").glob("*.md")) if _blocks(p, "pycon")]


@pytest.mark.parametrize("path", DOC_PAGES, ids=lambda p: p.name)
def test_docs_pycon_examples(path: Path) -> None:
    # One namespace per page: later blocks build on earlier ones.
    globs: dict[str, Any] = {"__name__": "__docs__"}
    parser = doctest.DocTestParser()
    for index, body in enumerate(_blocks(path, "pycon")):
        test = parser.get_doctest(body, globs, f"{path.name}[{index}]", str(path), 0)
        _run(test, clear_globs=False)
        globs.update(test.globs)  # a DocTest runs on a copy of the namespace


def test_docs_links_resolve() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            if not (page.parent / target).exists() and Path(target).name != "errors.md":
                missing.append(f"{page.name} -> {target}")
    # docs/errors.md (the error catalogue) is linked before it lands; every other link resolves.
    assert not missing


# -- public API keeps examples ------------------------------------------------------
#: Public functions and classes still without a ``>>>`` example (to be given one).
KNOWN_WITHOUT_EXAMPLES = {
    "colbridge.CacheInfo",
    "colbridge.DType",
    "colbridge.TensorView",
    "colbridge.dask.apply",
    "colbridge.dask.resolve",
    "colbridge.io.AtomicWriter",
    "colbridge.io.ColumnTransform",
    "colbridge.io.FeatureBatch",
    "colbridge.io.FeatureBatches",
    "colbridge.io.FeatureSpec",
    "colbridge.io.FeatureStats",
    "colbridge.io.FuseResult",
    "colbridge.io.MappedTable",
    "colbridge.io.PipelineResult",
    "colbridge.io.Source",
    "colbridge.io.build_steps",
    "colbridge.io.explain_pipeline",
    "colbridge.io.fit_stats",
    "colbridge.io.fuse",
    "colbridge.io.iter_features",
    "colbridge.io.map_ipc",
    "colbridge.io.open_source",
    "colbridge.io.parse_memory",
    "colbridge.io.resolve_aggregates",
    "colbridge.io.steps_of",
    "colbridge.io.transform_batch",
    "colbridge.io.write_ipc",
    "colbridge.types.DType",
    "colbridge.types.TensorSpec",
    "colbridge.types.TypeEntry",
    "colbridge.types.dtype_from_arrow",
    "colbridge.types.unsupported_type_error",
}


def _public_api() -> dict[str, Any]:
    import colbridge.dask
    import colbridge.io
    import colbridge.types

    items: dict[str, Any] = {}
    exported = [
        (colbridge, [*colbridge.__all__, "as_tensor", "to_tensor", "TensorView"]),
        (colbridge.io, colbridge.io.__all__),
        (colbridge.dask, colbridge.dask.__all__),
        (colbridge.types, colbridge.types.__all__),
    ]
    for module, names in exported:
        for name in names:
            obj = getattr(module, name)
            if inspect.isclass(obj) and issubclass(obj, BaseException):
                continue  # the error catalogue documents the errors
            if inspect.isfunction(obj) or inspect.isclass(obj):
                items[f"{module.__name__}.{name}"] = obj
    for name, obj in vars(colbridge.LazyFrame).items():
        if not name.startswith("_") and inspect.isfunction(obj):
            items[f"LazyFrame.{name}"] = obj
    return items


def test_public_api_has_examples() -> None:
    missing = {k for k, obj in _public_api().items() if ">>>" not in (inspect.getdoc(obj) or "")}
    new = sorted(missing - KNOWN_WITHOUT_EXAMPLES)
    assert not new, f"public functions/classes without a `>>>` example: {new}"
