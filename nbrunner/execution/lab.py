"""``python -m nbrunner.execution.lab ARGS``: JupyterLab, as ``python -m jupyterlab ARGS`` starts
it, but without jsonschema's IRI format checker, which `nbrunner up` would otherwise wait for.

jupyter-server imports jupyter-events, which imports jsonschema, whose ``_format`` module imports
``rfc3987_syntax``: that package compiles a Lark grammar at import, about 1.3 s of the server's
start (see ``nbrunner.core.notebooks``).  Only the ``iri`` and ``iri-reference`` formats use it,
and no event schema of Jupyter's uses them (jupyter-events' meta-schema checks ``uri``, which
``rfc3986_validator`` still backs here), so JupyterLab started this way validates events as
before.  Every other format checker is kept.
"""
from __future__ import annotations

import sys


def main() -> None:
    from ..core.notebooks import import_jsonschema_without

    import_jsonschema_without(("rfc3987_syntax",))
    from jupyterlab.labapp import main as lab_main

    sys.exit(lab_main())


if __name__ == "__main__":
    main()
