"""Requests that carry the notebook's ``content`` (what a user's server or a remote client sends):
jobs, sweeps and schedules run that content, ``notebook`` names it as given, and bad content is
refused in one line like a bad file, with nothing created."""
from __future__ import annotations

import json
import os

import nbformat
import pytest

from nbrunner.core.config import MAX_NOTEBOOK_BYTES
from nbrunner.core.errors import InvalidRequest
from nbrunner.core.identity import local_caller

from support import make_notebook, short_tmpdir, wait_for

pytestmark = pytest.mark.slow

ME = local_caller("alice")


def notebook_text(*cells: str, parameters: str | None = None) -> str:
    path = make_notebook(short_tmpdir("nbc") / "x.ipynb", *cells, parameters=parameters)
    return path.read_text()


@pytest.fixture(scope="module")
def api(cluster):
    return cluster.backend.api


def finished(api, job_id: str, timeout: float = 90):
    return wait_for(lambda: (lambda r: r if r.finished else None)(api.job(ME, job_id)), timeout, 0.2, f"job {job_id}")


def test_a_job_runs_the_content_it_came_with(api, cluster):
    text = notebook_text("print('from content', N)", parameters="N = 0")
    assert not (cluster.settings.workspace / "home" / "given.ipynb").exists()
    for content in (text, json.loads(text)):  # the notebook's text, or its JSON object
        rec = api.submit(ME, {"notebook": "home/given.ipynb", "parameters": {"N": 4}, "content": content})
        assert rec.notebook == "home/given.ipynb" and rec.name == "given" and rec.owner == "alice"
        snapshot = cluster.settings.job_dir(rec.id) / "input.ipynb"
        assert nbformat.reads(snapshot.read_text(), as_version=4).cells[-1].source == "print('from content', N)"
        done = finished(api, rec.id)
        assert done.status == "completed", done.error
        assert "from content 4" in api.log(ME, rec.id)[0]
        again = finished(api, api.rerun(ME, rec.id, {"N": 5}).id)  # from the same snapshot
        assert again.notebook == "home/given.ipynb" and "from content 5" in api.log(ME, again.id)[0]


@pytest.mark.parametrize("notebook, content, words", [
    ("a.ipynb", "{not json", "not a notebook (invalid JSON): a.ipynb"),
    ("a.ipynb", '{"cells": []}', "no nbformat version"),
    ("a.ipynb", '{"nbformat": 4, "nbformat_minor": 5, "cells": 3, "metadata": {}}', "invalid notebook format"),
    ("a.ipynb", ["a", "list"], "content must be the notebook"),
    ("a.ipynb", "x" * (MAX_NOTEBOOK_BYTES + 1), "larger than 50 MiB"),
    ("a.ipynb", "\ud800", "not valid UTF-8"),
    ("/etc/a.ipynb", None, "must be relative"),
    ("../a.ipynb", None, "must be relative"),
    ("a/../../b.ipynb", None, "must be relative"),
    ("notes.txt", None, "not a notebook (expected a .ipynb file)"),
])
def test_bad_content_is_refused_in_one_line_and_nothing_is_made(api, cluster, notebook, content, words):
    good = notebook_text("print(1)")
    before, runs = cluster.store.count(), set(os.listdir(cluster.settings.storage))
    with pytest.raises(InvalidRequest) as err:
        api.submit(ME, {"notebook": notebook, "content": good if content is None else content})
    assert words in str(err.value) and "\n" not in str(err.value)
    assert cluster.store.count() == before and set(os.listdir(cluster.settings.storage)) == runs


def test_content_is_checked_like_a_file(api, cluster):
    nb = json.loads(notebook_text("print(1)"))
    nb["metadata"]["kernelspec"]["name"] = "no-such-kernel"
    with pytest.raises(InvalidRequest, match="unknown kernel 'no-such-kernel' named in the metadata of k.ipynb"):
        api.submit(ME, {"notebook": "k.ipynb", "content": nb})
    with pytest.raises(InvalidRequest, match="priority"):
        api.submit(ME, {"notebook": "k.ipynb", "content": notebook_text("print(1)"), "priority": 0})


def test_a_sweep_runs_its_content_in_every_trial(api, cluster):
    text = notebook_text("import nbrunner\nnbrunner.record('score', X * 2)", parameters="X = 0")
    spec = {"parameters": {"X": [1, 2]}, "objective": {"metric": "score", "mode": "max"}}
    with pytest.raises(InvalidRequest, match="parameter 'Y' is not in the parameters cell of lab/sw.ipynb"):
        api.create_sweep(ME, "lab/sw.ipynb", {**spec, "parameters": {"Y": [1]}}, content=text)
    sweep = api.create_sweep(ME, "lab/sw.ipynb", spec, content=text)
    assert [j["notebook"] for j in sweep["jobs"]] == ["lab/sw.ipynb"] * 2
    for trial in sweep["jobs"]:
        assert finished(api, trial["id"]).status == "completed"
    board = api.sweep(ME, sweep["id"])["leaderboard"]
    assert [row["objective"] for row in board] == [4, 2]


def test_a_schedule_runs_its_content_at_every_fire_time(api, cluster):
    from nbrunner.control.schedules import snapshot_path

    first = notebook_text("print('version one')")
    rec = api.create_schedule(ME, {"notebook": "clock/tick.ipynb", "every": 1, "content": first})
    snapshot = nbformat.reads(snapshot_path(cluster.settings, rec.id).read_text(), as_version=4)
    assert rec.notebook == "clock/tick.ipynb" and snapshot.cells[-1].source == "print('version one')"
    run = wait_for(lambda: api.jobs(ME, schedule=rec.id)[0], 30, 0.2, "a run")[0]
    assert run.notebook == "clock/tick.ipynb" and "version one" in api.log(ME, finished(api, run.id).id)[0]
    with pytest.raises(InvalidRequest, match="content comes with the notebook"):
        api.update_schedule(ME, rec.id, {"content": first})
    second = notebook_text("print('version two')")
    api.update_schedule(ME, rec.id, {"notebook": "clock/tock.ipynb", "content": second})

    def second_version():
        runs = [r for r in api.jobs(ME, schedule=rec.id)[0] if r.notebook == "clock/tock.ipynb"]
        return runs[-1] if runs else None

    later = finished(api, wait_for(second_version, 30, 0.2, "a run of the new content").id)
    assert "version two" in api.log(ME, later.id)[0]
    api.delete_schedule(ME, rec.id)
    assert not snapshot_path(cluster.settings, rec.id).parent.exists()
