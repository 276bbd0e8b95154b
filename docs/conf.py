"""Sphinx configuration of nbrunner's documentation site (MyST Markdown, the PyData theme).

Build: ``.venv/bin/python -m sphinx -W --keep-going -b html docs docs/_build/html`` (the
``docs`` extra installs what it needs; ``tests/test_docs.py`` builds it so in CI).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "nbrunner"
author = "the nbrunner authors"
copyright = "the nbrunner authors, Apache License 2.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinxcontrib.mermaid",
    "nbrunner_reference",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "reference/_generated", "**/.ipynb_checkpoints"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
myst_fence_as_directive = ["mermaid"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}
napoleon_google_docstring = True

html_theme = "pydata_sphinx_theme"
html_title = "nbrunner"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path: list = []
