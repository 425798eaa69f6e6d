"""Execute every notebook as `build.py` writes it and check what it shows.

`./run.sh test` runs this with ``EMBEDKIT_QUICK=1`` (small data slices): a notebook fails when a
cell raises, when a cell tagged ``figure`` shows no ``image/png`` output, a cell tagged
``table`` no HTML table, or when an output carries a warning, stderr text or a machine path.
The executed copies are not written; `python notebooks/build.py` re-writes the committed ones.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("notebook_build", Path(__file__).with_name("build.py"))
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)


@pytest.mark.parametrize("name", list(build.NOTEBOOKS))
def test_notebook_runs_and_shows_its_figures(name):
    nb = build.execute(build.notebook(name))
    assert build.problems(nb) == []
