"""Sphinx configuration of the duff-bench documentation (``make docs``).

The pages are Markdown (MyST) so that the research pages, moved out of README.md, keep
the number markers that ``scripts/readme_numbers.py`` fills and checks; the API reference
is autodoc over the docstrings, which are reStructuredText (``:mod:``, ``:func:``,
````literal````).  ``_ext/duff_docs.py`` writes the generated pages (mechanism catalogue,
config lists, API pages) into ``generated/`` before the sources are read.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS.parent), str(DOCS / "_ext")]

project = "duff-bench"
author = "the duff-bench authors"
copyright = "the duff-bench authors, Apache-2.0"
extensions = ["myst_parser", "sphinx.ext.autodoc", "duff_docs"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "generated/experiments"]  # included by the experiment pages
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": True}
html_theme = "alabaster"
html_title = "duff-bench"
html_theme_options = {
    "description": "A reference benchmark for differentially private medians",
    "fixed_sidebar": True,
    "page_width": "1180px",
    "sidebar_width": "260px",
}
html_show_sourcelink = False
html_copy_source = False
