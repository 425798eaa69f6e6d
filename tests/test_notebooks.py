"""The committed notebooks are what `notebooks/build.py` writes, executed, and show their figures;
executed again here, top to bottom, they still run and show them.

The first test reads the saved .ipynb files only (no kernel, well under a second). The second
executes each notebook in a fresh kernel on small data slices (``EMBEDKIT_QUICK=1``, unless the
environment sets it otherwise), so they never rot: it fails when a cell raises, when a cell
tagged ``figure`` shows no ``image/png`` output, a cell tagged ``table`` no HTML table, or when
an output carries a warning, stderr text or a machine path. The executed copies are not
written; `python notebooks/build.py` re-writes the committed ones.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"

_spec = importlib.util.spec_from_file_location("notebook_build", NOTEBOOKS / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)


@pytest.mark.parametrize("name", list(build.NOTEBOOKS))
def test_saved_notebook_matches_build_py_and_shows_its_figures(name):
    saved = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    fresh = build.notebook(name)
    assert [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in saved.cells] == [
        (c.cell_type, c.source, c.metadata.get("tags", [])) for c in fresh.cells], (
        f"notebooks/{name}.ipynb differs from notebooks/build.py: run `python notebooks/build.py {name[:2]}`")
    code = [c for c in saved.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "saved without executing every cell"
    assert build.problems(saved) == []
    assert any(c.metadata.get("tags") == [build.FIGURE] for c in code), "a course notebook without a figure"


@pytest.mark.parametrize("name", list(build.NOTEBOOKS))
def test_notebook_runs_and_shows_its_figures(name, monkeypatch):
    monkeypatch.setenv("EMBEDKIT_QUICK", os.environ.get("EMBEDKIT_QUICK", "1"))  # read by the kernel
    assert build.problems(build.execute(build.notebook(name))) == []


def test_the_check_finds_a_missing_figure_a_warning_and_a_machine_path():
    """`problems` is what fails CI's notebook run: it must see each kind of fault."""
    import sys

    nb = nbformat.v4.new_notebook()
    drawn = nbformat.v4.new_code_cell("fig", metadata={"tags": [build.FIGURE]})
    drawn.outputs = [nbformat.v4.new_output("execute_result",
                                            {"text/plain": "<Figure size 600x400 with 1 Axes>"},
                                            execution_count=1)]
    warned = nbformat.v4.new_code_cell("import tqdm.auto")
    warned.outputs = [nbformat.v4.new_output(
        "stream", name="stderr",
        text=f"{sys.prefix}/lib/python3.11/site-packages/tqdm/auto.py:21: TqdmWarning: IProgress not found.")]
    table = nbformat.v4.new_code_cell("df", metadata={"tags": [build.TABLE]})
    table.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "   a\n0  1"},
                                            execution_count=2)]
    nb.cells = [drawn, warned, table]
    found = "\n".join(build.problems(nb))
    assert "cell 0 ('fig') draws a figure but shows no image/png output" in found
    assert "shows '<Figure size 600x400 with 1 Axes>' instead of the figure" in found
    assert "cell 1 ('import tqdm.auto') wrote to stderr" in found
    assert "shows a warning" in found and f"machine path {sys.prefix!r}" in found
    assert "cell 2 ('df') should show a table" in found
