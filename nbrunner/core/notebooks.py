"""``load_nbformat()``: import nbformat without jsonschema's optional format checkers; and a
notebook file checked (``notebook_file()``) and read (``read_notebook_text()``: as a request's
``content``).

nbformat imports jsonschema when it is imported, and jsonschema's ``_format`` module imports
every optional format-checker package that is installed (``jsonschema[format-nongpl]``, which
jupyter-events asks for, brings them: rfc3987_syntax, rfc3986_validator, rfc3339_validator,
isoduration with arrow, fqdn, idna, webcolors, jsonpointer, uri_template).  ``rfc3987_syntax``
(1.1.0, the latest release) builds a Lark parser for its grammar at import: about 1.1 s of the
1.3 s that ``import nbformat`` took here (upstream: python-jsonschema/jsonschema #1392 and
#1521); the others cost about 0.05 s more, in every ``nbrunner submit``, worker and sweep that
reads or writes a notebook.

Those packages only back jsonschema's ``format`` checks.  nbformat never uses them: its schemas
use no ``format`` keyword, and it passes no format checker to jsonschema.  So, and ONLY when
jsonschema has not been imported yet in this process, jsonschema is imported once with those
packages hidden (``sys.modules[name] = None`` makes that one import raise ImportError, which
jsonschema catches and then leaves those format checkers out).  The entries are removed right
after, so any later ``import idna`` (say) works as usual; a package some other code already
imported is not hidden.  Where jsonschema is already loaded (a Jupyter server, where
jupyter-events imports it first), nothing is changed: that process keeps every checker it had.
The JupyterLab that `nbrunner up` starts hides only ``rfc3987_syntax`` (see
``nbrunner.execution.lab``).

The alternatives were worse: the GPL ``rfc3987`` package (which jsonschema prefers) is
unmaintained since 2018, uninstalling the optional packages would break jupyter-events' declared
extra, and no maintained, faster drop-in for them is published.
"""
from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

from .config import MAX_NOTEBOOK_BYTES
from .errors import InvalidRequest

_FORMAT_CHECKER_PACKAGES = ("rfc3987_syntax", "rfc3987", "rfc3986_validator", "rfc3339_validator", "isoduration",
                            "fqdn", "idna", "webcolors", "jsonpointer", "uri_template")


def import_jsonschema_without(packages: tuple[str, ...] = _FORMAT_CHECKER_PACKAGES) -> None:
    """Import jsonschema with the format-checker ``packages`` hidden from it (see above); nothing
    if jsonschema or rfc3987_syntax is loaded already."""
    if "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
        return  # someone loaded them already: leave that process's checkers as they are
    hidden = [name for name in packages if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # "import name" -> ImportError
    try:
        import jsonschema  # noqa: F401  (its _format module is imported with it)
    except ImportError:  # pragma: no cover - nbformat reports a missing jsonschema itself
        pass
    finally:
        for name in hidden:
            if sys.modules.get(name, ModuleType(name)) is None:
                del sys.modules[name]


def load_nbformat() -> ModuleType:
    """The ``nbformat`` module, imported on first use (see the module's docstring)."""
    if "nbformat" not in sys.modules:
        import_jsonschema_without()
    import nbformat

    return nbformat


