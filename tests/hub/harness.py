"""A real JupyterHub with ``nbrunner service``, started and stopped by tests and benchmarks.

The hub runs the repository's ``docker/jupyterhub/jupyterhub_config.py`` (so the deployment's
settings are the tested ones), plus what a test needs on top: its state (database, cookie
secret, proxy pid file) in a scratch directory, free ports for the public proxy, the hub and
the proxy's API, JupyterHub's own proxy (``configurable-http-proxy`` from npm, which
``scripts/test.sh`` installs under ``.cache/chp``: it streams responses, as the push channel
needs; the Python re-implementation of the same name, used when it is missing, holds each
response back until it is whole), DummyAuthenticator (any password) with
the admins given, a spawner of the caller's choice (``simple``: SimpleLocalProcessSpawner), and
two services of its own: ``harness`` (its token manages users, groups, tokens and servers through
the hub's REST API) and ``other`` (a service that is not nbrunner, for "another service's token";
members of the group ``other-service-users`` may use it).
The nbrunner service runs on the cluster whose variables (``Settings.env()``) are given.

    with Hub(cluster.settings.env(), admins=["hubadmin"]) as hub:
        hub.add_user("alice", groups=["ml-team"])
        token = hub.token("alice")
        status, body, headers = request("GET", hub.service_api + "/jobs", token)
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from email.message import Message
from pathlib import Path
from typing import Any, Iterable

import psutil

REPO = Path(__file__).resolve().parents[2]
HUB_CONFIG = REPO / "docker" / "jupyterhub" / "jupyterhub_config.py"
NPM_PROXY = REPO / ".cache" / "chp" / "node_modules" / ".bin" / "configurable-http-proxy"
SERVICE = "nbrunner"
ADMIN_GROUP = "nbrunner-admins"  # the repository config's --admin-group
OTHER_USERS = "other-service-users"  # a group whose members may use the service "other" too
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 20.0  # the hub takes ~5 s to stop its services on SIGTERM


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def request(method: str, url: str, token: str | None = None, body: Any = None,
            headers: dict[str, str] | None = None, timeout: float = 60) -> tuple[int, Any, Message]:
    """One HTTP request, redirects not followed: (status, the JSON body or the raw bytes, the
    headers: ``headers["Name"]`` in any case)."""
    data = json.dumps(body).encode() if body is not None else (b"{}" if method in ("POST", "PATCH") else None)
    hdrs = {"Content-Type": "application/json", **(headers or {})}
    if token is not None:
        hdrs["Authorization"] = f"token {token}"
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            status, raw, got = resp.status, resp.read(), resp.headers
    except urllib.error.HTTPError as exc:
        status, raw, got = exc.code, exc.read(), exc.headers
    try:
        payload = json.loads(raw) if raw else None
    except ValueError:
        payload = raw
    return status, payload, got


class Hub:
    """One JupyterHub process (and the proxy and services it starts); a context manager."""

    def __init__(self, cluster_env: dict[str, str], admins: Iterable[str] = ("hubadmin",),
                 spawner: str = "simple", extra_config: str = "", scratch: Path | None = None):
        self.cluster_env = dict(cluster_env)
        self.admins = sorted(admins)
        self.spawner = spawner
        self.extra_config = extra_config
        self.dir = scratch or Path(tempfile.mkdtemp(prefix="nbhub", dir="/tmp"))
        self.port, self.hub_port, self.proxy_api_port, self.service_port = (free_port() for _ in range(4))
        self.harness_token, self.other_token = secrets.token_hex(24), secrets.token_hex(24)
        self.proc: subprocess.Popen | None = None
        self._children: list[psutil.Process] = []

    @property
    def url(self) -> str:
        """The hub's public URL (its proxy)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def service_api(self) -> str:
        """The nbrunner API through the proxy: ``<hub>/services/nbrunner/api``."""
        return f"{self.url}/services/{SERVICE}/api"

    @property
    def log_path(self) -> Path:
        return self.dir / "jupyterhub.log"

    def config(self) -> str:
        """The config file the hub runs: the repository's, then the test's settings."""
        return f'''
c = get_config()
load_subconfig({str(HUB_CONFIG)!r})
c.JupyterHub.bind_url = {self.url!r}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {self.hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{self.proxy_api_port}"
c.ConfigurableHTTPProxy.pid_file = {str(self.dir / "proxy.pid")!r}
{f"c.ConfigurableHTTPProxy.command = [{str(NPM_PROXY)!r}]" if NPM_PROXY.exists() else ""}
c.JupyterHub.db_url = {"sqlite:///" + str(self.dir / "jupyterhub.sqlite")!r}
c.JupyterHub.cookie_secret_file = {str(self.dir / "cookie_secret")!r}
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.Authenticator.admin_users = set({self.admins!r})
c.JupyterHub.spawner_class = {self.spawner!r}
service = next(s for s in c.JupyterHub.services if s["name"] == {SERVICE!r})
service["url"] = "http://127.0.0.1:{self.service_port}"
command = service["command"]
command[command.index("--port") + 1] = "{self.service_port}"
c.Spawner.environment["NBRUNNER_SERVICE_URL"] = "http://127.0.0.1:{self.service_port}/services/{SERVICE}/"
c.JupyterHub.services += [{{"name": "harness", "api_token": {self.harness_token!r}}},
                          {{"name": "other", "api_token": {self.other_token!r}}}]
c.JupyterHub.load_roles += [{{"name": "harness", "services": ["harness"],
                              "scopes": ["admin:users", "admin:groups", "tokens", "admin:servers", "access:servers"]}},
                             {{"name": {OTHER_USERS!r}, "groups": [{OTHER_USERS!r}],
                              "scopes": ["access:services!service=other"]}}]
c.JupyterHub.load_groups[{OTHER_USERS!r}] = {{"users": []}}
{self.extra_config}
'''

    def start(self) -> Hub:
        """Start the hub and wait until the nbrunner service answers through the proxy."""
        config = self.dir / "jupyterhub_config.py"
        config.write_text(self.config())
        env = {**os.environ, **self.cluster_env,
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(config)], cwd=self.dir,
                                         env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        # the proxy and the services run in sessions of their own: remember them to stop them for sure
        self._children = psutil.Process(self.proc.pid).children(recursive=True)
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"the hub exited ({self.proc.returncode}):\n{self.log_tail()}")
            try:
                status, _, _ = request("GET", self.service_api + "/jobs", timeout=5)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                status = None
            if status == 401:  # the service itself answered (the proxy says 503 or 404 before)
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the nbrunner service did not answer through the hub:\n{self.log_tail()}")
            time.sleep(0.25)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM the hub (it stops its services and proxy), then kill whatever of its process group
        and of the processes it started is left."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:  # the service may have been restarted by the hub since start()
                self._children += psutil.Process(self.proc.pid).children(recursive=True)
            except psutil.Error:
                pass
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        for child in self._children:
            try:
                child.kill()  # psutil checks the process is still the one it saw (pid reuse)
            except psutil.Error:
                pass
        psutil.wait_procs(self._children, timeout=10)
        self.proc = None

    def __enter__(self) -> Hub:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ---- the hub's REST API, as the harness service ------------------------------------------------
    def hub_api(self, method: str, path: str, body: Any = None) -> Any:
        """``<hub>/hub/api/<path>`` with the harness's token; the JSON answer (AssertionError unless 2xx)."""
        status, payload, _ = request(method, f"{self.url}/hub/api/{path.lstrip('/')}", self.harness_token, body)
        assert 200 <= status < 300, (method, path, status, payload)
        return payload

    def add_user(self, name: str, groups: Iterable[str] = ()) -> None:
        """Create hub user ``name`` (if new) and add them to ``groups`` (created if new)."""
        status, _, _ = request("GET", f"{self.url}/hub/api/users/{name}", self.harness_token)
        if status == 404:
            self.hub_api("POST", f"users/{name}")
        for group in groups:
            status, _, _ = request("GET", f"{self.url}/hub/api/groups/{group}", self.harness_token)
            if status == 404:
                self.hub_api("POST", f"groups/{group}")
            self.hub_api("POST", f"groups/{group}/users", {"users": [name]})

    def token(self, name: str, **options: Any) -> str:
        """A new API token of user ``name`` (``expires_in``, ``scopes``, ``note``: the hub's options);
        without scopes it has the user's roles."""
        return self.hub_api("POST", f"users/{name}/tokens", {"note": "test", **options})["token"]
