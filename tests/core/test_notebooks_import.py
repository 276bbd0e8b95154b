"""core.notebooks.load_nbformat: nbformat without jsonschema's optional format checkers, nothing else changed."""
from __future__ import annotations

import pytest

import subprocess
import sys
import textwrap

pytestmark = pytest.mark.slow


def test_load_nbformat_skips_the_format_checkers_and_still_validates_notebooks():
    code = textwrap.dedent("""
        import sys
        from nbrunner.core.notebooks import load_nbformat, _FORMAT_CHECKER_PACKAGES
        nbformat = load_nbformat()
        loaded = [m for m in _FORMAT_CHECKER_PACKAGES + ("arrow", "lark") if m in sys.modules]
        assert loaded == [], f"format-checker packages were imported: {loaded}"
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
        nbformat.validate(nb)
        bad = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
        bad.cells[0]["execution_count"] = "not a number"
        try:
            nbformat.validate(bad)
        except nbformat.ValidationError:
            pass
        else:
            raise AssertionError("an invalid notebook validated")
        import rfc3987_syntax, idna, isoduration  # still importable afterwards: only jsonschema's first import skipped them
        assert idna.encode("example.org") == b"example.org"
        print("ok")
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr


def test_load_nbformat_leaves_an_already_loaded_jsonschema_alone():
    code = ("import sys, jsonschema\nfrom nbrunner.core.notebooks import load_nbformat\nload_nbformat()\n"
            "assert 'rfc3987_syntax' in sys.modules\nprint('ok')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr


def test_the_jupyterlab_nbrunner_starts_skips_only_the_iri_checker_and_still_validates_events():
    code = textwrap.dedent("""
        import sys
        from nbrunner.core.notebooks import import_jsonschema_without
        import_jsonschema_without(("rfc3987_syntax",))
        import jupyter_server.serverapp  # imports jupyter_events and jsonschema, as the server does
        import jsonschema
        from jupyter_events import EventLogger
        assert "rfc3987_syntax" not in sys.modules and "lark" not in sys.modules
        checks = jsonschema.draft7_format_checker.checkers
        assert "iri" not in checks and "uri" in checks and "date-time" in checks, sorted(checks)
        logger = EventLogger()
        schema = {"$id": "https://events.example.org/nbrunner/test", "version": "1", "title": "t",
                  "type": "object", "properties": {"where": {"type": "string", "format": "uri"}}}
        logger.register_event_schema(schema)
        try:  # the meta-schema's `uri` check still refuses an id that is no URI
            logger.register_event_schema({**schema, "$id": "not a uri"})
        except jsonschema.ValidationError:
            pass
        else:
            raise AssertionError("a schema whose $id is not a URI registered")
        import rfc3987_syntax  # still importable afterwards
        print("ok")
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr
    versions = [subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=120)
                for module in ("jupyterlab", "nbrunner.execution.lab")]
    assert versions[0].returncode == versions[1].returncode == 0 and versions[0].stdout == versions[1].stdout != ""
