"""nbrunner service authenticates every request with the hub: no credentials 401, refused ones 403
(forged, expired, another service's, a token made for another service), both JSON, and nothing is
created or changed; a browser logs in through the hub (OAuth cookie, XSRF on changes)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from urllib.parse import urlsplit

import pytest
import requests

from harness import request
from support import assert_one_line_error, wait_for

pytestmark = pytest.mark.slow

SPEC = {"parameters": {"N": [1, 2]}, "objective": {"metric": "accuracy", "mode": "max"}}

HELLO = {"notebook": "hello.ipynb"}
CHANGES = [  # (method, path, body): everything that would create something
    ("POST", "jobs", HELLO),
    ("POST", "schedules", {**HELLO, "every": 60}),
    ("POST", "sweeps", {**HELLO, "spec": SPEC}),
]


def state(cluster) -> tuple:
    """What a refused request must leave as it was: jobs, job directories, schedules and sweeps."""
    from nbrunner.control.schedules import list_schedules
    from nbrunner.control.sweeps import sweep_ids

    storage = cluster.settings.storage
    dirs = sorted(p.name for p in storage.iterdir()) if storage.exists() else []
    return (sorted(cluster.store.ids()), dirs, [s.id for s in list_schedules(cluster.store)],
            sorted(sweep_ids(cluster.store)))


def refused_everywhere(hub, cluster, token, status: int, words: str, victim: str) -> None:
    """Every route, changes included, answers ``status`` with a JSON message, and nothing changes."""
    before = state(cluster)
    calls = [*CHANGES, ("GET", "jobs", None), ("GET", f"jobs/{victim}", None), ("DELETE", f"jobs/{victim}", None),
             ("PATCH", f"jobs/{victim}", {"priority": 1}), ("POST", f"jobs/{victim}/rerun", None),
             ("GET", "openapi.json", None), ("GET", "cluster", None)]
    for method, path, body in calls:
        code, payload, headers = request(method, f"{hub.service_api}/{path}", token, body)
        assert code == status, (method, path, code, payload)
        assert set(payload) == {"message"} and words in payload["message"], payload
        assert headers["Content-Type"].startswith("application/json")
    assert state(cluster) == before


@pytest.fixture(scope="module")
def victim(as_user):
    """A job of alice's that refused requests try to change."""
    code, job = as_user("alice")("POST", "jobs", body=HELLO)
    assert code == 201
    return job


def test_a_request_without_credentials_gets_401(hub, hub_cluster, victim):
    refused_everywhere(hub, hub_cluster, None, 401, "authentication required", victim["id"])
    _, _, headers = request("GET", hub.service_api + "/jobs")
    assert headers["WWW-Authenticate"].startswith("token")


def test_a_forged_token_gets_403(hub, hub_cluster, victim):
    refused_everywhere(hub, hub_cluster, "f0rged" * 8, 403, "does not accept these credentials", victim["id"])


def test_an_expired_token_gets_403(hub, hub_cluster, victim):
    token = hub.token("alice", expires_in=1)
    time.sleep(2.5)  # never presented while it was valid: the service has no answer of the hub's cached
    refused_everywhere(hub, hub_cluster, token, 403, "does not accept these credentials", victim["id"])


def test_another_services_token_gets_403(hub, hub_cluster, victim):
    refused_everywhere(hub, hub_cluster, hub.other_token, 403, "hub service other may not use", victim["id"])


def test_a_users_token_made_for_another_service_gets_403(hub, hub_cluster, victim):
    token = hub.token("erin", scopes=["access:services!service=other"])  # as a login to "other" gives her
    refused_everywhere(hub, hub_cluster, token, 403, "hub user erin may not use this service", victim["id"])


def test_a_token_scoped_to_the_service_alone_is_enough(hub, victim):
    token = hub.token("alice", scopes=["access:services!service=nbrunner"])
    code, got, _ = request("GET", f"{hub.service_api}/jobs/{victim['id']}", token)
    assert code == 200 and got["owner"] == "alice"


def test_a_browser_without_a_cookie_is_sent_to_the_hubs_login(hub):
    code, _, headers = request("GET", hub.service_api + "/jobs", headers={"Accept": "text/html,*/*"})
    assert code == 302
    target = urlsplit(headers["Location"])
    assert target.path == "/hub/api/oauth2/authorize" and "client_id=service-nbrunner" in target.query
    assert "service-nbrunner-oauth-state" in headers["Set-Cookie"]


def test_a_browser_logs_in_through_the_hub_and_changes_need_the_xsrf_token(hub, hub_cluster):
    browser = requests.Session()
    page = browser.get(f"{hub.url}/hub/login")
    assert page.status_code == 200
    browser.post(f"{hub.url}/hub/login", data={"username": "alice", "password": "any",
                                               "_xsrf": browser.cookies.get("_xsrf", path="/hub/")})
    got = browser.get(hub.service_api + "/jobs", headers={"Accept": "text/html,*/*"})  # OAuth, back with a cookie
    assert got.status_code == 200 and got.url == hub.service_api + "/jobs", got.text[:300]
    assert all(j["owner"] == "alice" for j in got.json()["jobs"])

    before = state(hub_cluster)
    forged = browser.post(hub.service_api + "/jobs", json=HELLO)  # a cross-site form could send the cookie
    assert forged.status_code == 403 and "XSRF" in forged.json()["message"]
    assert state(hub_cluster) == before
    xsrf = browser.cookies.get("_xsrf", path="/services/nbrunner/")
    made = browser.post(hub.service_api + "/jobs", json=HELLO, headers={"X-XSRFToken": xsrf})
    assert made.status_code == 201 and made.json()["owner"] == "alice"


def test_the_service_root_leads_to_the_jobs(hub, tokens):
    code, _, headers = request("GET", f"{hub.url}/services/nbrunner/", tokens["bob"])
    assert code == 302 and headers["Location"] == "/services/nbrunner/api/jobs"


def test_outside_a_hub_the_service_refuses_to_start():
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTERHUB_")}
    p = subprocess.run([sys.executable, "-m", "nbrunner", "service", "--port", "10999"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert_one_line_error(p, 2, "JUPYTERHUB_API_TOKEN", "c.JupyterHub.services")


def test_the_hub_runs_the_service_as_the_repository_config_says(hub):
    """The service process is `nbrunner service --port P --admin-group nbrunner-admins` from the
    repository's config (and the accounts file the tests add), with the cluster's variables passed
    on by it."""
    import psutil

    hub_proc = psutil.Process(hub.proc.pid)
    service = wait_for(lambda: next((p for p in hub_proc.children() if "hub_service" in " ".join(p.cmdline())), None),
                       30, what="the service process")
    args = service.cmdline()[-6:]
    assert args[:4] == ["--port", str(hub.service_port), "--admin-group", "nbrunner-admins"]
    assert args[4] == "--accounts" and args[5].endswith("accounts.yaml")
    env = service.environ()
    assert env["NBRUNNER_REDIS_URL"] == hub.cluster_env["NBRUNNER_REDIS_URL"]
    assert env["JUPYTERHUB_SERVICE_PREFIX"] == "/services/nbrunner/"


def test_the_openapi_document_is_the_extensions_at_the_services_url(as_user):
    from nbrunner.server.openapi import document

    code, doc = as_user("bob")("GET", "openapi.json")
    assert code == 200 and doc == document("/services/nbrunner/api")
