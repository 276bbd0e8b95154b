"""core.notebooks.load_nbformat: nbformat without jsonschema's slow optional IRI checker, nothing else changed."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_load_nbformat_skips_the_iri_checker_and_still_validates_notebooks():
    code = textwrap.dedent("""
        import sys
        from nbrunner.core.notebooks import load_nbformat
        nbformat = load_nbformat()
        assert "rfc3987_syntax" not in sys.modules, "the slow checker was imported"
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
        import rfc3987_syntax  # still importable afterwards: only jsonschema's first import skipped it
        import jsonschema
        assert jsonschema.FormatChecker().conforms("http://example.org/a", "uri")
        print("ok")
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr


def test_load_nbformat_leaves_an_already_loaded_jsonschema_alone():
    code = ("import sys, jsonschema\nfrom nbrunner.core.notebooks import load_nbformat\nload_nbformat()\n"
            "assert 'rfc3987_syntax' in sys.modules\nprint('ok')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr
