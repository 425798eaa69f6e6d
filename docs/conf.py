"""Sphinx configuration of embedkit's manual (``./run.sh docs`` builds it).

Why Sphinx: scikit-learn, skorch and sentence-transformers build their manuals with it; the
docstrings are numpydoc, whose own Sphinx extension (scikit-learn's) renders them as written;
MyST-NB renders the Markdown pages and the committed notebooks with their figures; autodoc
imports the package, so the reference is generated from what the package exports; and ``-W``
turns every warning into an error. The PyData theme is scikit-learn's, and ships its assets.

Hand-written pages are Markdown (MyST); the API reference, the benchmark pages, the rendered
notebooks and the command-line reference are generated at each build by ``_ext/embedkit_docs.py``
(into ``docs/api/``, ``docs/benchmarks/``, ``docs/notebooks/`` and ``docs/cli.md``, which git
ignores). Nothing here fetches anything: no intersphinx, no CDN, notebooks are not executed.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).parent
sys.path.insert(0, str(DOCS / "_ext"))

import embedkit  # noqa: E402

project = "embedkit"
author = "the embedkit authors"
copyright = "the embedkit authors, MIT licence"
release = version = embedkit.__version__

extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
    "myst_nb",
    "embedkit_docs",
]

root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints", "README.md"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
# `name` in a docstring is a cross-reference when the name is documented, plain code otherwise
default_role = "py:obj"
suppress_warnings: list[str] = []

# -- docstrings -------------------------------------------------------------------------------
autodoc_typehints = "none"  # numpydoc's `param : type` lines say it, in words
autodoc_class_signature = "mixed"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()
# numpydoc loads autosummary, which by default imports every documented object to look for
# autosummary directives in its docstring; the manual has none, so it generates no page
autosummary_generate = False

# -- Markdown and notebooks -------------------------------------------------------------------
nb_execution_mode = "off"  # the notebooks are committed with their outputs: render them as they are
nb_merge_streams = True
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

# -- HTML -------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"embedkit {release}"
html_static_path = ["_static"]
html_css_files = ["embedkit.css"]
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
html_theme_options = {
    "navigation_with_keys": False,
    # the section sidebar lists the current page's neighbours, not every page of the reference
    "collapse_navigation": True,
    "navigation_depth": 2,
    "show_toc_level": 2,
    "navbar_align": "left",
    "header_links_before_dropdown": 7,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": [], "getting-started": []}
# the light theme unless the reader picks another (the theme's "auto" logs a console error on a
# first visit from a file:// URL, where it has no stored choice)
html_context = {"default_mode": "light"}
