"""Every docstring example of the package runs: each docstring with ``>>>`` lines is one test,
its printed results compared as written (``...`` matches anything, whitespace is normalised).

The examples are found by reading the source (no import at collection time), then run with the
standard library's doctest runner in a temporary folder, so an example that writes a file
(``score_chart(results, "results.png")``) leaves nothing in the checkout. An example may be
marked ``# doctest: +SKIP`` only where running it would be too slow for the suite.
"""

from __future__ import annotations

import ast
import doctest
import functools
import importlib
from pathlib import Path

import pytest

import embedkit

PACKAGE = Path(embedkit.__file__).parent
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _examples() -> list[str]:
    """The doctest names (``module.Class.method``) of every docstring that holds an example."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def visit(node, prefix):
            doc = ast.get_docstring(node, clean=False) if not isinstance(node, ast.Module) else None
            if doc and ">>>" in doc:
                names.append(prefix)
            for child in node.body:
                if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) \
                        and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    visit(child, f"{prefix}.{child.name}")

        if ">>>" in (ast.get_docstring(tree, clean=False) or ""):
            names.append(module)
        visit(tree, module)
    return names


@functools.cache
def _tests_of(module: str) -> dict[str, doctest.DocTest]:
    found = doctest.DocTestFinder().find(importlib.import_module(module), module)
    return {test.name: test for test in found if test.examples}


def _module_of(name: str) -> str:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        candidate = ".".join(parts[:cut])
        if (PACKAGE.parent / Path(*parts[:cut])).with_suffix(".py").exists() \
                or (PACKAGE.parent / Path(*parts[:cut]) / "__init__.py").exists():
            return candidate
    raise LookupError(name)


EXAMPLES = _examples()


def test_the_examples_are_found():
    assert {"embedkit.plots._results.score_chart", "embedkit.representations.glove.GloveEmbedder",
            "embedkit.vectors.WordVectors.most_similar"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_docstring_example_runs(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tests = _tests_of(_module_of(name))
    assert name in tests, f"doctest cannot see {name}'s example (found: {sorted(tests)})"
    report = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    result = runner.run(tests[name], out=report.append, clear_globs=False)
    assert result.failed == 0, "".join(report)
