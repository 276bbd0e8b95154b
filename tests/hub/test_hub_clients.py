"""Clients of the hub's nbrunner service without Redis: the CLI with a user's token
(``NBRUNNER_SERVICE_URL`` = the service's URL through the hub's proxy), and a user's own server
whose nbrunner extension forwards the REST API to the service with the server's
``JUPYTERHUB_API_TOKEN``.  Owners hold either way: bob's commands on alice's job fail in one line."""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

import psutil
import pytest

from harness import Hub, request
from support import assert_one_line_error, make_notebook, short_tmpdir, wait_for

pytestmark = pytest.mark.slow


def nbrunner(hub: Hub, token: str | None, cwd, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBRUNNER_")}
    env.update(NBRUNNER_SERVICE_URL=f"{hub.url}/services/nbrunner/", NBRUNNER_RUNTIME_DIR=str(short_tmpdir("nbrt")))
    if token is not None:
        env["NBRUNNER_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "nbrunner", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)


def test_the_cli_speaks_to_the_hub_service_with_each_users_token(hub, tokens):
    home = short_tmpdir("nbah")
    make_notebook(home / "mine.ipynb", "print('alice was here')")
    submitted = nbrunner(hub, tokens["alice"], home, "submit", "mine.ipynb", "--wait", "--json")
    assert submitted.returncode == 0, submitted.stderr
    job = json.loads(submitted.stdout)
    assert job["owner"] == "alice" and job["notebook"] == "mine.ipynb" and job["status"] == "completed"
    assert "alice was here" in nbrunner(hub, tokens["alice"], home, "logs", job["id"]).stdout
    for args in (["cancel", job["id"]], ["show", job["id"]], ["logs", job["id"]], ["delete", job["id"]],
                 ["priority", job["id"], "7"], ["rerun", job["id"]]):
        assert_one_line_error(nbrunner(hub, tokens["bob"], home, *args), 1, f"no job '{job['id']}'")
    listed = json.loads(nbrunner(hub, tokens["bob"], home, "jobs", "--json", "--all").stdout)["jobs"]
    assert job["id"] not in [j["id"] for j in listed] and all(j["owner"] == "bob" for j in listed)
    admin = json.loads(nbrunner(hub, tokens["hubadmin"], home, "show", job["id"], "--json").stdout)
    assert admin["id"] == job["id"]
    assert_one_line_error(nbrunner(hub, "forged", home, "jobs"), 1, "refused the request (403)")
    assert_one_line_error(nbrunner(hub, None, home, "jobs"), 1, "refused the request (401)")


def test_jobs_watch_follows_the_services_push_channel_with_only_the_users_jobs(hub, tokens):
    """bob's `nbrunner jobs --watch` through the service: a line per change of his jobs, as they
    happen, none of alice's; Ctrl-C ends it (exit 130)."""
    home = short_tmpdir("nbaw")
    make_notebook(home / "w.ipynb", "print('watched')")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBRUNNER_")}
    env.update(NBRUNNER_SERVICE_URL=f"{hub.url}/services/nbrunner/", NBRUNNER_TOKEN=tokens["bob"],
               NBRUNNER_RUNTIME_DIR=str(short_tmpdir("nbrt")))
    wait_for(lambda: nbrunner(hub, tokens["bob"], home, "jobs").returncode == 0, 60, 0.5, "the service")
    watch = subprocess.Popen([sys.executable, "-m", "nbrunner", "jobs", "--watch", "--limit", "5"], cwd=home,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: list[str] = []
    pending = b""

    def read_until(pred, timeout: float = 120) -> None:
        nonlocal pending
        deadline = time.monotonic() + timeout
        while not pred():
            assert time.monotonic() < deadline and watch.poll() is None, (lines, watch.stderr.read() if watch.poll() else "", hub.log_tail())
            if select.select([watch.stdout], [], [], 1)[0]:
                pending += os.read(watch.stdout.fileno(), 65536)
                *done, pending = pending.split(b"\n")
                lines.extend(line.decode() for line in done)

    try:
        read_until(lambda: any("(live; Ctrl-C to stop)" in line for line in lines))
        theirs = json.loads(nbrunner(hub, tokens["alice"], home, "submit", "w.ipynb", "--json").stdout)["id"]
        mine = json.loads(nbrunner(hub, tokens["bob"], home, "submit", "w.ipynb", "--json").stdout)["id"]
        read_until(lambda: any(mine in line and " completed " in f"{line} " for line in lines))
        assert [line.split()[1:4] for line in lines if mine in line][0] == [mine, "w", "queued"]
        assert not any(theirs in line for line in lines)
    finally:
        watch.send_signal(signal.SIGINT)
        assert watch.wait(20) == 130, watch.stderr.read()


def test_a_users_server_forwards_to_the_service(hub_cluster):
    """alice's own server (spawned by the hub) holds no Redis: what her JupyterLab asks goes through
    it to the service, as alice, with her notebook as content.  Its token may call the service."""
    homes = short_tmpdir("nbhh")
    hub = Hub(hub_cluster.settings.env(), admins=["hubadmin"])
    hub.extra_config = f"""
import os
c.SimpleLocalProcessSpawner.home_dir_template = {str(homes)!r} + "/{{username}}"
c.Spawner.args = ["--allow-root"] if os.geteuid() == 0 else []
c.Spawner.environment = {{"NBRUNNER_SERVICE_URL": "{hub.url}/services/nbrunner/"}}
c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server", "access:services!service=nbrunner"]
"""
    with hub:
        hub.add_user("alice")
        token = hub.token("alice")
        make_notebook(homes / "alice" / "lab" / "own.ipynb", "print('from alice server')")
        hub.hub_api("POST", "users/alice/server")
        api = f"{hub.url}/user/alice/nbrunner/api"
        wait_for(lambda: request("GET", f"{api}/cluster", token)[0] == 200, 120, 0.5, "alice's server")
        servers = [p for p in psutil.Process(hub.proc.pid).children(recursive=True)
                   if any("singleuser" in part for part in p.cmdline())]
        assert servers, "no single-user server among the hub's processes"
        for server in servers:
            environ = server.environ()
            assert environ.get("JUPYTERHUB_USER") == "alice" and "NBRUNNER_REDIS_URL" not in environ
            assert not any(word in v for v in environ.values() for word in ("redis://", "redis.sock"))
        code, job, _ = request("POST", f"{api}/jobs", token, {"notebook": "lab/own.ipynb"})
        assert code == 201 and job["owner"] == "alice" and job["notebook"] == "lab/own.ipynb", job

        def done():
            code, rec, _ = request("GET", f"{api}/jobs/{job['id']}", token)
            return rec if code == 200 and rec["status"] in ("completed", "failed", "cancelled") else None

        assert wait_for(done, 120, 0.3, "alice's job")["status"] == "completed"
        code, log, _ = request("GET", f"{api}/jobs/{job['id']}/log", token)
        assert code == 200 and "from alice server" in log["text"]
        code, mine, _ = request("GET", f"{api}/jobs", token)
        assert code == 200 and {j["owner"] for j in mine["jobs"]} == {"alice"}
