"""Pipelines through the hub's nbrunner service: alice's CLI sends each step's notebook as content
and the steps pass typed values on; owners hold (bob gets 404 on every route of her pipeline and
never lists it, an admin sees it); a bad file is refused with one line and nothing is made."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness import Hub
from support import assert_one_line_error, make_notebook, short_tmpdir

pytestmark = pytest.mark.slow

PIPELINE = """name: hubflow
steps:
  make: {notebook: make.ipynb, parameters: {n: 4}}
  use:  {notebook: sub/use.ipynb, needs: [make], parameters: {k: "{{ steps.make.outputs.k }}", tag: "k={{ steps.make.outputs.k }}"}}
"""


def nbrunner(hub: Hub, token: str, cwd, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBRUNNER_")}
    env.update(NBRUNNER_SERVICE_URL=f"{hub.url}/services/nbrunner/", NBRUNNER_RUNTIME_DIR=str(short_tmpdir("nbrt")),
               NBRUNNER_TOKEN=token)
    return subprocess.run([sys.executable, "-m", "nbrunner", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def test_a_pipeline_runs_through_the_service_and_owners_hold(hub, tokens, as_user):
    home = short_tmpdir("nbhp")
    make_notebook(home / "make.ipynb", "import nbrunner\nnbrunner.record('k', n * 10)", parameters="n = 0")
    make_notebook(home / "sub" / "use.ipynb", "import nbrunner\nassert type(k) is int, type(k)\n"
                  "nbrunner.record('got', k + 1)\nnbrunner.record('tag', tag)", parameters="k = 0\ntag = ''")
    (home / "flow.pipeline.yaml").write_text(PIPELINE)
    run = nbrunner(hub, tokens["alice"], home, "pipeline", "run", "flow.pipeline.yaml", "-p", "make.n", "5",
                   "--wait", "--json")
    assert run.returncode == 0, run.stderr
    rec = json.loads(run.stdout)
    assert rec["owner"] == "alice" and rec["status"] == "completed", rec
    assert rec["steps"]["make"]["outputs"] == {"k": 50}
    assert rec["steps"]["use"]["outputs"] == {"got": 51, "tag": "k=50"}
    alice, bob, admin = as_user("alice"), as_user("bob"), as_user("hubadmin")
    code, job = alice("GET", "jobs", rec["steps"]["use"]["job"])
    assert code == 200 and job["pipeline"] == rec["id"] and job["step"] == "use" and job["owner"] == "alice"
    assert job["parameters"] == {"k": 50, "tag": "k=50"}

    for method, path, body in (("GET", ["pipelines", rec["id"]], None), ("DELETE", ["pipelines", rec["id"]], None),
                               ("POST", ["pipelines", rec["id"], "rerun"], {"from": "use"})):
        code, answer = bob(method, *path, body=body)
        assert code == 404 and answer == {"message": f"no pipeline '{rec['id']}'"}, (method, path, answer)
    code, listed = bob("GET", "pipelines")
    assert code == 200 and rec["id"] not in [p["id"] for p in listed["pipelines"]]
    code, seen = admin("GET", "pipelines", rec["id"])
    assert code == 200 and seen["owner"] == "alice"
    assert_one_line_error(nbrunner(hub, tokens["bob"], home, "pipeline", "show", rec["id"]), 1,
                          f"no pipeline '{rec['id']}'")

    code, again = alice("POST", "pipelines", rec["id"], "rerun", body={"from": "use"})
    assert code == 201 and again["steps"]["make"]["reused"] and again["steps"]["make"]["job"] == rec["steps"]["make"]["job"]


def test_a_bad_pipeline_is_refused_through_the_service_and_makes_nothing(as_user):
    alice = as_user("alice")
    code, before = alice("GET", "pipelines")
    assert code == 200
    nb = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    for body, message in (
            ({"steps": {"a": {"notebook": "a.ipynb", "content": nb, "needs": ["b"]},
                        "b": {"notebook": "b.ipynb", "content": nb, "needs": ["a"]}}},
             "the steps' needs form a cycle: a -> b -> a"),
            ({"steps": {"a": {"notebook": "a.ipynb", "content": nb},
                        "b": {"notebook": "b.ipynb", "content": nb, "parameters": {"x": "{{ steps.a.outputs.y }}"}}}},
             "step 'b': a template names step 'a', which is not among its needs"),
            ({"steps": {"a": {"notebook": "../a.ipynb", "content": nb}}}, "step 'a': notebook path must be relative")):
        code, answer = alice("POST", "pipelines", body=body)
        assert code == 400 and message in answer["message"] and "\n" not in answer["message"], answer
    assert alice("GET", "pipelines")[1] == before
