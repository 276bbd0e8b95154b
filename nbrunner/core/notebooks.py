"""``load_nbformat()``: import nbformat without jsonschema's slowest optional format checker.

nbformat imports jsonschema when it is imported, and jsonschema's ``_format`` module imports
the optional ``rfc3987_syntax`` package when it is installed (it comes with
``jsonschema[format-nongpl]``, which jupyter-events asks for).  ``rfc3987_syntax`` (1.1.0, the
latest release) builds a Lark parser for its grammar at import: about 1.1 s of the 1.3 s that
``import nbformat`` costs here, in every ``nbrunner submit``, worker and sweep that reads or
writes a notebook (upstream: python-jsonschema/jsonschema #1392 and #1521).

That package only backs the ``iri`` and ``iri-reference`` formats.  nbformat never uses them:
its schemas use no ``format`` keyword, and it passes no format checker to jsonschema.  So, and ONLY when jsonschema has not been imported yet in this process,
jsonschema is imported once with ``rfc3987_syntax`` hidden (``sys.modules[name] = None`` makes
that one import raise ImportError, which jsonschema catches and then leaves those two format
checkers out).  The entry is removed right after, so any later ``import rfc3987_syntax`` works
as usual.  Where jsonschema is already loaded (a Jupyter server, where jupyter-events imports it
first), nothing is changed: that process keeps every checker it had.

The alternatives were worse: the GPL ``rfc3987`` package (which jsonschema prefers) is
unmaintained since 2018, uninstalling ``rfc3987_syntax`` would break jupyter-events' declared
extra, and no maintained, faster drop-in for it is published.
"""
from __future__ import annotations

import sys
from types import ModuleType

_SLOW_OPTIONAL = "rfc3987_syntax"


def _import_jsonschema_light() -> None:
    if "jsonschema" in sys.modules or _SLOW_OPTIONAL in sys.modules:
        return  # someone loaded them already: leave that process's checkers as they are
    sys.modules[_SLOW_OPTIONAL] = None  # type: ignore[assignment]  # "import rfc3987_syntax" -> ImportError
    try:
        import jsonschema  # noqa: F401  (its _format module is imported with it)
    except ImportError:  # pragma: no cover - nbformat reports a missing jsonschema itself
        pass
    finally:
        if sys.modules.get(_SLOW_OPTIONAL, ModuleType(_SLOW_OPTIONAL)) is None:
            del sys.modules[_SLOW_OPTIONAL]


def load_nbformat() -> ModuleType:
    """The ``nbformat`` module, imported on first use (see the module's docstring)."""
    if "nbformat" not in sys.modules:
        _import_jsonschema_light()
    import nbformat

    return nbformat
