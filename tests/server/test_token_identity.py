"""A request with the server's token in its header, on a server that does not tell users apart:
authenticated once per server (server.token_identity), and nothing else about auth changes."""
from __future__ import annotations

import json

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from support import server_fixtures

pytestmark = pytest.mark.slow

pytest_plugins = ["pytest_jupyter.jupyter_server"]


root, jp_root_dir, jp_server_config = server_fixtures({"hello.ipynb": "print('hi')"}, multi_user=False, gpus=0, workers=1)


@pytest.fixture
def raw(jp_fetch, jp_http_port, jp_base_url, jp_serverapp):  # jp_fetch: the server listens
    """``await raw(method, path, headers, body)`` -> (code, headers, JSON body), no header added."""
    async def fetch(method: str, path: str, headers: dict, body: dict | None = None):
        url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}nbrunner/api/{path}"
        try:
            resp = await AsyncHTTPClient().fetch(url, method=method, headers=headers, raise_error=True,
                                                 body=json.dumps(body) if body is not None else None)
        except HTTPClientError as exc:
            assert exc.response is not None, exc
            resp = exc.response
        return resp.code, resp.headers, json.loads(resp.body or b"null")
    return fetch


async def test_the_servers_token_in_the_header_is_accepted_without_a_cookie(raw, jp_serverapp):
    token = jp_serverapp.identity_provider.token
    for _ in range(2):
        code, headers, got = await raw("GET", "jobs", {"Authorization": f"token {token}"})
        assert code == 200 and "jobs" in got
        assert "Set-Cookie" not in headers  # no anonymous user signed into a cookie per request
    code, _, job = await raw("POST", "jobs", {"Authorization": f"Bearer {token}"}, {"notebook": "hello.ipynb"})
    assert code == 201 and job["notebook"] == "hello.ipynb"  # a token request needs no XSRF token


async def test_anything_else_is_still_refused(raw, jp_serverapp, root):
    token = jp_serverapp.identity_provider.token
    before = sorted(p.name for p in (root / "runs").iterdir()) if (root / "runs").exists() else []
    for headers in ({}, {"Authorization": f"token {token}x"}, {"Authorization": f"token {token[:-1]}"},
                    {"Authorization": "token "}, {"Authorization": token}):
        for method, body in (("GET", None), ("POST", {"notebook": "hello.ipynb"})):
            code, _, got = await raw(method, "jobs", headers, body)
            assert code == 403, (headers, method, code, got)
    after = sorted(p.name for p in (root / "runs").iterdir()) if (root / "runs").exists() else []
    assert after == before


async def test_other_ways_in_go_to_jupyters_provider(raw, jp_serverapp):
    token = jp_serverapp.identity_provider.token
    code, headers, _ = await raw("GET", f"jobs?token={token}", {})
    assert code == 200 and "Set-Cookie" in headers  # Jupyter's own path: it signs the login cookie
    cookie = headers["Set-Cookie"].split(";")[0]
    code, _, _ = await raw("GET", "jobs", {"Cookie": cookie})
    assert code == 200
    code, _, got = await raw("POST", "jobs", {"Cookie": cookie}, {"notebook": "hello.ipynb"})
    assert code == 403 and "_xsrf" in got["message"]  # a cookie's POST still needs its XSRF token
