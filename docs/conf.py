"""Sphinx configuration of ndflow's documentation site (`make docs`).

Built offline: no intersphinx, no remote assets; every warning is an error (`-W`, nitpicky).
Pages are Markdown (MyST); the API reference is generated from the package by
`_ext/ndflow_api.py` and rendered from the docstrings by autodoc (numpydoc sections through
napoleon).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))
sys.path.insert(0, os.path.dirname(HERE))        # this checkout's ndflow, not an installed one

import ndflow  # noqa: E402

project = "ndflow"
author = "the ndflow authors"
copyright = "the ndflow authors, Apache License 2.0"
release = version = ndflow.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "ndflow_api",
    "ndflow_docstrings",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "README.md"]
nitpicky = True
# `x` in a docstring is code, as the docstrings (written Markdown-style) mean it
default_role = "code"

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_default_options = {}
autodoc_typehints = "none"          # signatures show defaults; types are in the docstrings
autodoc_member_order = "bysource"
autosummary_generate = False
add_module_names = False
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

html_theme = "pydata_sphinx_theme"
html_title = f"ndflow {release}"
html_static_path = ["_static"]
html_css_files = ["ndflow.css"]
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "icon_links": [],
    "footer_start": ["copyright"],
    "footer_end": [],
    # the benchmark tables need the page's whole width
    "secondary_sidebar_items": {"**": ["page-toc"], "guides/performance": []},
}
html_sidebars = {"index": [], "getting-started": [], "guides/performance": []}

# Offline: no intersphinx, so classes of other packages (bases such as enum.Enum, types in
# signatures) cannot be linked; ndflow's own must all resolve.
nitpick_ignore_regex = [(r"py:class", r"(?!ndflow\.).*")]
