"""The admin checklist "a JupyterHub on one GPU server, with Unix accounts"
(docs/admin/jupyterhub.md), followed as written on this machine, as root: its ``checklist`` blocks
run in one bash script (Unix accounts made, Redis configured, systemd units and the hub's config
written), then each unit's ``ExecStart`` is started as the unit says (no systemd as PID 1 here);
a user logs in with their Unix password (PAM), their JupyterLab runs as them, they submit through
the service and see their job, also through their own server.

What it stands in for (the page says so too): the apt step (the packages must be there), the
pip/npm downloads of step 2 (the environment is made from the test's own packages, with a Python
every user can execute), and ``systemctl``. Paths, ports and names are the page's with a scratch
prefix, so nothing of a real installation is touched; everything made is removed after.
"""
from __future__ import annotations

import configparser
import os
import pwd
import re
import secrets
import shlex
import shutil
import signal
import site
import socket
import subprocess
import sys
import tempfile
import time
from importlib.metadata import entry_points
from pathlib import Path

import psutil
import pytest
import requests

from pages import DOCS, REPO, script

pytestmark = pytest.mark.slow

PAGE = DOCS / "admin" / "jupyterhub.md"
SCRIPTS = ("nbrunner", "jupyterhub", "jupyterhub-singleuser", "jupyter", "jupyter-server", "jupyter-lab")
UNITS = ("nbrunner-redis", "nbrunner-scheduler", "nbrunner-worker", "jupyterhub")
NOTEBOOK = {"cells": [{"cell_type": "code", "execution_count": None, "id": "p", "metadata": {"tags": ["parameters"]},
                       "outputs": [], "source": "N = 1"},
                      {"cell_type": "code", "execution_count": None, "id": "c", "metadata": {}, "outputs": [],
                       "source": "import nbrunner\nnbrunner.record('n', N)\nprint('ran', N)"}],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _system_python() -> str:
    """A Python every user can execute, of this Python's version (the environment reuses its packages)."""
    for candidate in (f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}", "/usr/bin/python3"):
        if os.access(candidate, os.X_OK):
            done = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                                  capture_output=True, text=True)
            if done.stdout.strip() == str(tuple(sys.version_info[:2])):
                return candidate
    raise AssertionError(f"no system Python {sys.version_info[0]}.{sys.version_info[1]} that every user can execute")


def make_environment(prefix: Path) -> None:
    """Step 2 without downloads: a venv of the system Python at ``prefix`` that sees this test's
    packages (read-only), with the console scripts the checklist runs and npm's proxy."""
    subprocess.run([_system_python(), "-m", "venv", "--without-pip", str(prefix)], check=True)
    purelib = next(prefix.glob("lib/python3*/site-packages"))
    ours = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (purelib / "zz_test_packages.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in ours))
    # what pip would add for the system Python's own version (redis-py wants async-timeout before 3.11.3)
    done = subprocess.run([str(prefix / "bin" / "python"), "-c", "import redis.asyncio"], capture_output=True)
    if done.returncode:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(purelib),
                        "async-timeout>=4.0.3"], check=True)
    found = {ep.name: ep for ep in entry_points(group="console_scripts") if ep.name in SCRIPTS}
    assert set(found) == set(SCRIPTS), set(SCRIPTS) - set(found)
    for name, ep in found.items():
        module, _, attr = ep.value.partition(":")
        path = prefix / "bin" / name
        path.write_text(f"#!{prefix}/bin/python\nimport sys\nfrom {module} import {attr.split('.')[0]} as _main\n"
                        f"sys.exit(_main{('.' + attr.split('.', 1)[1]) if '.' in attr else ''}())\n")
        path.chmod(0o755)
    for sub in ("etc/jupyter", "share/jupyter", "share/jupyterhub"):  # the server and Lab extensions, the hub's pages
        (prefix / sub).parent.mkdir(parents=True, exist_ok=True)
        (prefix / sub).symlink_to(Path(sys.prefix) / sub)
    chp = REPO / ".cache" / "chp"
    if not (chp / "node_modules" / ".bin" / "configurable-http-proxy").exists():
        line = next(l for l in script(PAGE, "checklist-install").splitlines() if l.startswith("npm install"))
        subprocess.run(shlex.split(line.replace("/opt/nbrunner/chp", str(chp))), check=True)
    (prefix / "chp").mkdir()
    (prefix / "chp" / "node_modules").symlink_to(chp / "node_modules")


def redis_binary() -> str:
    if os.access("/usr/bin/redis-server", os.X_OK):
        return "/usr/bin/redis-server"
    from nbrunner.execution.redis_server import server_binary

    return str(server_binary())


class Checklist:
    """The page's commands with this run's names, paths and ports; the processes its units start."""

    def __init__(self, root: Path):
        tag = secrets.token_hex(3)
        self.root = root
        self.users = {"alice": f"nbck{tag}a", "bob": f"nbck{tag}b"}
        self.service_user = f"nbck{tag}s"
        self.port, self.service_port = _free_port(), _free_port()
        self.paths = {"/etc/systemd/system": root / "units", "/etc/nbrunner": root / "etc",
                      "/srv/nbrunner": root / "srv", "/srv/jupyterhub": root / "hub", "/opt/nbrunner": root / "opt"}
        self.procs: list[subprocess.Popen] = []

    def text(self, cls: str) -> str:
        text = script(PAGE, cls)
        for old, new in self.paths.items():
            text = text.replace(old, str(new))
        text = text.replace("/usr/bin/redis-server", redis_binary())
        text = text.replace('"http://:8000"', f'"http://127.0.0.1:{self.port}"')
        text = text.replace("127.0.0.1:8000", f"127.0.0.1:{self.port}").replace("10101", str(self.service_port))
        for old, new in self.users.items():
            text = re.sub(rf"\b{old}\b", new, text)
        account = self.service_user
        for old, new in (("groupadd --system nbrunner", f"groupadd --system {account}"),
                         ("--gid nbrunner ", f"--gid {account} "), ("nologin nbrunner", f"nologin {account}"),
                         ("chown -R nbrunner:nbrunner", f"chown -R {account}:{account}"),
                         ("root:nbrunner ", f"root:{account} "), ("User=nbrunner", f"User={account}"),
                         ('"user": "nbrunner"', f'"user": "{account}"')):
            assert old in text, f"the page no longer says {old!r}"
            text = text.replace(old, new)
        return text

    def start_unit(self, name: str) -> subprocess.Popen:
        """What ``systemctl start NAME`` would run: ExecStart as User, with EnvironmentFile,
        Environment and WorkingDirectory."""
        unit = configparser.ConfigParser(interpolation=None, strict=False)
        unit.optionxform = str
        unit.read(self.paths["/etc/systemd/system"] / f"{name}.service")
        service = unit["Service"]
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        if "EnvironmentFile" in service:
            env.update(line.split("=", 1) for line in Path(service["EnvironmentFile"]).read_text().splitlines()
                       if "=" in line)
        if "Environment" in service:
            env.update(item.split("=", 1) for item in shlex.split(service["Environment"]))
        user = pwd.getpwnam(service.get("User", "root"))
        env.update(HOME=user.pw_dir, USER=user.pw_name, LOGNAME=user.pw_name)
        log = open(self.root / f"{name}.log", "ab")
        proc = subprocess.Popen(shlex.split(service["ExecStart"]), env=env, cwd=service.get("WorkingDirectory", "/"),
                                user=user.pw_uid, group=user.pw_gid, extra_groups=[] if user.pw_uid else None,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        """The end of a unit's log, without the proxy's lines (it logs every request it cannot pass on)."""
        path = self.root / f"{name}.log"
        if not path.exists():
            return "(no log)"
        lines = [line for line in path.read_text(errors="replace").splitlines()
                 if "[ConfigProxy]" not in line and not line.startswith((" ", "}", "[I "))]
        return "\n".join(lines)[-4000:]

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        mine = set(self.users.values()) | {self.service_user}
        for p in psutil.process_iter(["username"]):  # users' servers and kernels the hub started
            if p.info["username"] in mine:
                try:
                    p.kill()
                except psutil.Error:
                    pass


def wait_for(check, what: str, timeout: float, log=lambda: "") -> None:
    """Wait until ``check()``; on timeout fail with ``what`` and ``log()`` (the unit's log then)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}\n{log()}"
        time.sleep(0.25)


def _answers(url: str, status: int) -> bool:
    try:
        return requests.get(url, timeout=5, allow_redirects=False).status_code == status
    except requests.RequestException:
        return False


def login(hub: str, name: str, password: str) -> dict | None:
    """Log in at the hub's login form as a browser does; an API token of the user's as a header,
    or None if the hub refused the password."""
    web = requests.Session()
    web.get(f"{hub}/hub/login", timeout=30)
    answer = web.post(f"{hub}/hub/login", data={"username": name, "password": password,
                                                "_xsrf": web.cookies.get("_xsrf", "")},
                      allow_redirects=False, timeout=30)
    if answer.status_code != 302:
        return None
    made = web.post(f"{hub}/hub/api/users/{name}/tokens", json={"note": "checklist"},
                    headers={"X-XSRFToken": web.cookies.get("_xsrf", "")}, timeout=30)
    assert made.status_code in (200, 201), made.text
    return {"Authorization": f"token {made.json()['token']}"}


@pytest.fixture
def checklist():
    assert os.geteuid() == 0, "the checklist runs as root (CI does)"
    root = Path(tempfile.mkdtemp(prefix="nbck", dir="/tmp"))
    root.chmod(0o755)
    run = Checklist(root)
    try:
        yield run
    finally:
        run.stop()
        for name in (*run.users.values(), run.service_user):
            subprocess.run(["userdel", "-f", "-r", name], capture_output=True)
        subprocess.run(["groupdel", run.service_user], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def test_a_user_logs_in_submits_through_the_service_and_sees_the_job(checklist):
    run = checklist
    for d in ("units",):
        (run.root / d).mkdir()
    make_environment(run.paths["/opt/nbrunner"])
    done = subprocess.run(["bash", "-c", run.text("checklist")], cwd=run.root, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    alice, bob = run.users["alice"], run.users["bob"]
    assert pwd.getpwnam(alice).pw_dir == f"/home/{alice}"
    env_file = run.paths["/etc/nbrunner"] / "env"
    assert oct(env_file.stat().st_mode & 0o777) == "0o640"  # the Redis password: root and the service group

    config = run.paths["/etc/nbrunner"] / "jupyterhub_config.py"  # the hub's own ports: free ones on a shared machine
    config.write_text(config.read_text() + f"\nc.JupyterHub.hub_port = {_free_port()}\n"
                      f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{_free_port()}'\n")
    redis = run.start_unit("nbrunner-redis")
    socket_path = run.paths["/srv/nbrunner"] / "redis" / "redis.sock"
    wait_for(socket_path.exists, "Redis did not start", 30, lambda: run.log("nbrunner-redis"))
    run.start_unit("nbrunner-scheduler")
    run.start_unit("nbrunner-worker")
    run.start_unit("jupyterhub")
    hub = f"http://127.0.0.1:{run.port}"
    wait_for(lambda: _answers(f"{hub}/services/nbrunner/api/jobs", 401), "the hub's nbrunner service did not answer",
             90, lambda: run.log("jupyterhub"))
    assert redis.poll() is None

    # alice logs in with her Unix password (PAM), as a browser does, and makes an API token
    auth = login(hub, alice, f"password-of-{alice}")
    assert login(hub, alice, "wrong") is None, "PAM let a wrong password in"

    # her JupyterLab starts, as her
    started = requests.post(f"{hub}/hub/api/users/{alice}/server", headers=auth, timeout=60)
    assert started.status_code in (201, 202), started.text

    def ready() -> bool:
        user = requests.get(f"{hub}/hub/api/users/{alice}", headers=auth, timeout=30).json()
        return bool(user.get("servers", {}).get("", {}).get("ready"))

    wait_for(ready, "alice's server did not start", 90, lambda: run.log("jupyterhub"))
    servers = [p for p in psutil.process_iter(["username", "cmdline"])
               if any("jupyterhub-singleuser" in part for part in p.info["cmdline"] or [])]
    assert servers and {p.info["username"] for p in servers} == {alice}

    # she submits through the service and sees her job, there and through her own server
    api = f"{hub}/services/nbrunner/api"
    sent = requests.post(f"{api}/jobs", headers=auth, timeout=60,
                         json={"notebook": "check.ipynb", "content": NOTEBOOK, "parameters": {"N": 7}})
    assert sent.status_code == 201, sent.text
    job = sent.json()
    assert job["owner"] == alice

    def finished() -> bool:
        return requests.get(f"{api}/jobs/{job['id']}", headers=auth, timeout=30).json()["status"] in (
            "completed", "failed", "cancelled")

    wait_for(finished, "the job did not end", 90, lambda: run.log("nbrunner-worker"))
    record = requests.get(f"{api}/jobs/{job['id']}", headers=auth, timeout=30).json()
    assert record["status"] == "completed", (record, run.log("nbrunner-worker"))
    assert record["metrics"]["n"] == 7
    listed = requests.get(f"{api}/jobs", headers=auth, timeout=30).json()["jobs"]
    assert [j["id"] for j in listed] == [job["id"]]
    through_lab = requests.get(f"{hub}/user/{alice}/nbrunner/api/jobs", headers=auth, timeout=60)
    assert through_lab.status_code == 200, through_lab.text[:500]
    assert [j["id"] for j in through_lab.json()["jobs"]] == [job["id"]]
    log = requests.get(f"{api}/jobs/{job['id']}/log", headers=auth, timeout=30).json()["text"]
    assert "ran 7" in log

    bob_auth = login(hub, bob, f"password-of-{bob}")  # bob's own view: none of alice's jobs
    assert requests.get(f"{api}/jobs", headers=bob_auth, timeout=30).json()["jobs"] == []
