"""A job's output notebook is written only while the attempt that writes it owns the job directory
(:mod:`nbrunner.execution.attempt_output`), by papermill's saves as by the failure note."""
from __future__ import annotations

import json

import nbformat
from papermill.iorw import papermill_io, write_ipynb

from nbrunner.execution.attempt_output import MARK, claim, fenced_path, owner, write
from nbrunner.execution.execute import mark_failure


def _nb(text: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(text)]
    return nb


def test_the_claiming_attempt_writes_and_an_earlier_one_is_refused(tmp_path, capsys):
    out = tmp_path / "output.ipynb"
    claim(tmp_path, 1)
    assert write(out, "one", 1) and out.read_text() == "one"
    claim(tmp_path, 2)
    assert owner(tmp_path) == "2"
    assert not write(out, "stale", 1)
    assert out.read_text() == "one"
    assert "output.ipynb not written: attempt 1 is stale" in capsys.readouterr().err
    assert write(out, "two", 2) and out.read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == [MARK, "output.ipynb"]  # no temporary left


def test_papermill_saves_go_through_the_fence(tmp_path):
    out = tmp_path / "output.ipynb"
    claim(tmp_path, 5)
    url = fenced_path(out, 5)
    assert papermill_io.pretty_path(url) == str(out)
    write_ipynb(_nb("print('attempt 5')"), url)
    assert "attempt 5" in out.read_text()
    claim(tmp_path, 6)
    write_ipynb(_nb("print('attempt 5 again')"), url)
    assert "again" not in out.read_text()
    assert "".join(json.loads(papermill_io.read(url))["cells"][0]["source"]) == "print('attempt 5')"
    assert fenced_path(out, None) == str(out)  # no attempt: papermill's own file handler


def test_a_stale_failure_note_is_refused(tmp_path):
    out = tmp_path / "output.ipynb"
    nbformat.write(_nb("1/0"), str(out))
    claim(tmp_path, 3)
    mark_failure(out, "ZeroDivisionError", attempt=2)
    assert "nbrunner" not in nbformat.read(str(out), as_version=4).metadata
    mark_failure(out, "ZeroDivisionError", attempt=3)
    assert nbformat.read(str(out), as_version=4).metadata["nbrunner"]["error"] == "ZeroDivisionError"


def test_a_directory_not_made_yet_is_not_claimed(tmp_path):
    claim(tmp_path / "missing", 1)
    assert not (tmp_path / "missing").exists()
