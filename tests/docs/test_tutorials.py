"""Every block a tutorial marks ``tested`` runs, in order, against a real cluster started as the
tutorial says (``nbrunner up --dir notebooks --gpus 2``, without JupyterLab), in a copy of the
repository's notebooks: an example that stops working fails here."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pages import DOCS, REPO, script

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def tutorial_dir(tmp_path_factory):
    """A directory holding a copy of notebooks/, with `nbrunner up --dir notebooks --gpus 2` running."""
    where = tmp_path_factory.mktemp("tutorial")
    shutil.copytree(REPO / "notebooks", where / "notebooks")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    for name in ("NBRUNNER_WORKSPACE", "NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE", "NBRUNNER_SERVICE_URL"):
        env.pop(name, None)
    log = open(where / "up.log", "wb")
    up = subprocess.Popen([str(BIN / "nbrunner"), "up", "--dir", "notebooks", "--gpus", "2", "--no-lab"],
                          cwd=where, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while subprocess.run([str(BIN / "nbrunner"), "cluster", "--json"], cwd=where, env=env,
                             capture_output=True).returncode != 0:
            assert up.poll() is None, (where / "up.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the cluster did not start"
            time.sleep(0.5)
        yield where, env
    finally:
        up.send_signal(signal.SIGINT)
        try:
            up.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
            up.wait()
        log.close()


@pytest.mark.parametrize("page", ["first-job", "sweep-to-model", "elastic-training", "pipeline"])
def test_tutorial_runs_as_written(tutorial_dir, page):
    where, env = tutorial_dir
    text = script(DOCS / "tutorials" / f"{page}.md").replace("8765", str(_free_port()))
    done = subprocess.run(["bash", "-c", text], cwd=where, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{page}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    if page == "first-job":
        assert "hello Python #2" in done.stdout or "said hello 2 times to Python" in done.stdout, done.stdout
        assert (where / "hello.html").is_file()
    if page == "sweep-to-model":
        assert "best trial: " in done.stdout and '"predictions"' not in done.stderr
        assert "rank" in done.stdout and "objective" in done.stdout  # the leaderboard was printed
    if page == "elastic-training":
        assert "completed" in done.stdout
    if page == "pipeline":
        assert "completed 400" in done.stdout and done.stdout.count("completed") >= 4, done.stdout
