"""Inputs and notifications through a real hub's nbrunner service: the CLI with a user's token
sends the job's input files as content (the service never reads the user's files), the job reads
them and its zip has them, past the limit a one-line 413; notification settings are each user's
own, and a target the allow list does not admit is refused in one line."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile

import pytest

from harness import Hub
from support import assert_one_line_error, make_notebook, short_tmpdir

pytestmark = pytest.mark.slow


def nbrunner(hub: Hub, token: str, cwd, *args: str, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBRUNNER_")}
    env.update(NBRUNNER_SERVICE_URL=f"{hub.url}/services/nbrunner/", NBRUNNER_RUNTIME_DIR=str(short_tmpdir("nbrt")),
               NBRUNNER_TOKEN=token, **extra)
    return subprocess.run([sys.executable, "-m", "nbrunner", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=180)


def test_inputs_travel_with_the_job_through_the_service(hub, tokens, as_user):
    home = short_tmpdir("nbin")
    make_notebook(home / "proj" / "read.ipynb", "print('got:', open('data/rows.csv').read())")
    (home / "proj" / "data").mkdir()
    (home / "proj" / "data" / "rows.csv").write_text("alice-only-rows")
    done = nbrunner(hub, tokens["alice"], home, "submit", "proj/read.ipynb", "--input", "data", "--wait", "--json")
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)
    assert job["status"] == "completed" and job["inputs"] == ["data"] and job["owner"] == "alice"
    assert "got: alice-only-rows" in nbrunner(hub, tokens["alice"], home, "logs", job["id"]).stdout
    out = home / "job.zip"
    got = nbrunner(hub, tokens["alice"], home, "download", job["id"], "--format", "zip", "-o", str(out))
    assert got.returncode == 0, got.stderr
    assert zipfile.ZipFile(io.BytesIO(out.read_bytes())).read("work/data/rows.csv") == b"alice-only-rows"
    big = nbrunner(hub, tokens["alice"], home, "submit", "proj/read.ipynb", "--input", "data",
                   NBRUNNER_MAX_INPUT_BYTES="4")  # refused before anything is sent
    assert_one_line_error(big, 1, "larger than the limit of 4 bytes")
    status, body = as_user("alice")("POST", "jobs", body={
        "notebook": "proj/read.ipynb", "content": (home / "proj" / "read.ipynb").read_text(), "inputs": ["../x"]})
    assert status == 400 and "leaves the notebook's directory" in body["message"]


def test_notification_settings_are_each_users_own_through_the_service(as_user):
    alice, bob = as_user("alice"), as_user("bob")
    status, kept = alice("PUT", "me/notifications", body={"targets": ["mailto:alice@example.org"],
                                                           "on": ["failed"]})
    assert status == 200 and kept == {"targets": ["mailto:alice@example.org"], "on": ["failed"]}
    assert alice("GET", "me/notifications") == (200, kept)
    status, theirs = bob("GET", "me/notifications")
    assert status == 200 and theirs["targets"] == []
    status, refused = bob("PUT", "me/notifications", body={"targets": ["json://10.1.2.3/hook"]})
    assert status == 400 and "is not allowed on this cluster" in refused["message"]
    assert "\n" not in refused["message"]
    assert bob("GET", "me/notifications/log") == (200, {"log": []})
