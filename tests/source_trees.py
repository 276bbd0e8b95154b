"""The package's modules parsed once per test run, for the tests that read nbrunner's source
(layers, configuration, the write path): each would otherwise parse all of it again."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import nbrunner

PACKAGE = Path(nbrunner.__file__).parent


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The syntax tree of the file ``path`` (shared: read it, never change it)."""
    return ast.parse(path.read_text(), str(path))
