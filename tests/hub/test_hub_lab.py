"""nbrunner for a JupyterHub's users, end to end: Unix accounts made here, a hub spawning each
user's JupyterLab as that account (LocalProcessSpawner), the users' servers forwarding to
``nbrunner service``, workers that run each job as its owner.

alice submits from the Run-as-job dialog in her own JupyterLab (a real browser) and the job runs
as her Unix account; bob's Jobs panel never shows it, his REST calls on it answer 404 and his
``nbrunner cancel`` fails in one line; an admin sees and cancels both users' jobs; no user's
server, environment or files hold the cluster's Redis URL or password, and bob cannot read
alice's job directory; a job outlives its owner's server and is listed when she comes back."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from playwright.sync_api import expect, sync_playwright

from harness import Hub, request
from nbrunner.client.cluster import Cluster
from nbrunner.core.config import PASSWORD_FILE, Settings
from nbrunner.control.store import reachable
from nbrunner.execution.supervisor import Supervisor
from support import REPO, assert_one_line_error, make_notebook, short_tmpdir, unix_accounts, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))  # the browser tests' helpers

from labserver import CHROMIUM  # noqa: E402

pytestmark = pytest.mark.slow

TAG = secrets.token_hex(3)
ALICE, BOB, SERVICE = f"nbla{TAG}", f"nblb{TAG}", f"nbls{TAG}"  # unique: other test runs may share the machine
FINAL = ("completed", "failed", "cancelled")
WHO = "import os, pwd\nprint('uid', os.getuid(), 'user', pwd.getpwuid(os.getuid()).pw_name)"
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
WAIT = "import pathlib, time\nwhile not pathlib.Path(STOP).exists():\n    time.sleep(0.2)\nprint('done waiting')"


@pytest.fixture(scope="module")
def people():
    with unix_accounts(ALICE, BOB, service=SERVICE) as made:
        for name in (ALICE, BOB):
            home = Path(made[name].pw_dir)
            make_notebook(home / "who.ipynb", WHO)
            make_notebook(home / "wait.ipynb", WAIT, parameters="STOP = 'never'")
            for path in (home / "who.ipynb", home / "wait.ipynb"):
                os.chown(path, made[name].pw_uid, made[name].pw_gid)
        yield made


@pytest.fixture(scope="module")
def owners_cluster(people):
    """A cluster whose workers run each job as its owner (embedded Redis behind a password)."""
    ws = short_tmpdir("nbhl")
    os.chmod(ws, 0o711)
    (ws / "runs").mkdir()
    os.chown(ws / "runs", 0, people[SERVICE].pw_gid)
    os.chmod(ws / "runs", 0o751)
    saved = {k: os.environ.pop(k) for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE") if k in os.environ}
    settings = Settings.load(ws)
    sup = Supervisor(settings, gpus=0, workers=2, run_as_owner=True).start()
    try:
        cluster = Cluster(settings, reachable(settings), sup)
        cluster.wait_ready(2, timeout=90)
        yield cluster
    finally:
        sup.stop()
        os.environ.update(saved)
        subprocess.run(["rm", "-rf", str(ws)], check=False)


@pytest.fixture(scope="module")
def lab_hub(owners_cluster, people):
    """A hub spawning each user's JupyterLab as their Unix account, its users' tokens."""
    singleuser = str(Path(sys.executable).with_name("jupyterhub-singleuser"))
    extra = f"""
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
c.Spawner.args = ["--LabApp.news_url=None"]
"""
    with Hub(owners_cluster.settings.env(), admins=["hubadmin"], spawner="localprocess", extra_config=extra) as hub:
        for name in (ALICE, BOB, "hubadmin"):
            hub.add_user(name)
        yield hub, {name: hub.token(name) for name in (ALICE, BOB, "hubadmin")}


def service(hub: Hub, token: str, method: str, *path: str, body=None) -> tuple[int, dict]:
    code, payload, _ = request(method, "/".join([hub.service_api, *path]), token, body)
    return code, payload


def own_server(hub: Hub, token: str, name: str) -> str:
    """Start ``name``'s server through the hub (if not running); its nbrunner API URL."""
    api = f"{hub.url}/user/{name}/nbrunner/api"
    if request("GET", f"{api}/cluster", token)[0] != 200:
        request("POST", f"{hub.url}/hub/api/users/{name}/server", hub.harness_token)
        wait_for(lambda: request("GET", f"{api}/cluster", token)[0] == 200, 180, 0.5, f"{name}'s server")
    return api


def finished(hub: Hub, token: str, job_id: str, timeout: float = 180) -> dict:
    def done():
        code, rec = service(hub, token, "GET", "jobs", job_id)
        return rec if code == 200 and rec["status"] in FINAL else None
    return wait_for(done, timeout, 0.3, f"job {job_id}")


def test_users_servers_hold_no_redis_secret_and_bob_cannot_read_alices_job(lab_hub, owners_cluster, people):
    hub, tokens = lab_hub
    api = own_server(hub, tokens[ALICE], ALICE)
    own_server(hub, tokens[BOB], BOB)
    password = (owners_cluster.settings.state_dir / PASSWORD_FILE).read_text().strip()
    assert password
    servers = [p for p in psutil.process_iter(["username", "cmdline"])
               if p.info["username"] in (ALICE, BOB) and any("singleuser" in a for a in p.info["cmdline"] or [])]
    assert {p.info["username"] for p in servers} == {ALICE, BOB}  # each server runs as its user
    for server in servers:
        environ = server.environ()
        assert "NBRUNNER_REDIS_URL" not in environ and environ["NBRUNNER_SERVICE_URL"].endswith("/services/nbrunner/")
        assert not any(password in v or "redis://" in v or "redis.sock" in v for v in environ.values())
    for name in (ALICE, BOB):  # nor does anything in their homes (their servers wrote config and runtime files)
        for path in Path(people[name].pw_dir).rglob("*"):
            if path.is_file() and path.stat().st_size < 5_000_000:
                assert password.encode() not in path.read_bytes(), path
    code, job, _ = request("POST", f"{api}/jobs", tokens[ALICE], {"notebook": "who.ipynb"})
    assert code == 201, job
    rec = finished(hub, tokens[ALICE], job["id"])
    assert rec["status"] == "completed" and rec["owner"] == ALICE, rec
    job_dir = owners_cluster.settings.job_dir(job["id"])
    probe = "import os, sys\ntry:\n    os.listdir(sys.argv[1])\nexcept PermissionError:\n    sys.exit(3)"
    for user, allowed in ((ALICE, 0), (BOB, 3)):
        p = subprocess.run([RUNUSER, "-u", user, "--", sys.executable, "-c", probe, str(job_dir)],
                           capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
                           cwd="/", timeout=60)
        assert p.returncode == allowed, (user, p.returncode, p.stderr)


def test_a_job_outlives_its_owners_server(lab_hub, people):
    hub, tokens = lab_hub
    api = own_server(hub, tokens[ALICE], ALICE)
    stop = Path(people[ALICE].pw_dir) / "stop-outlive"
    code, job, _ = request("POST", f"{api}/jobs", tokens[ALICE],
                           {"notebook": "wait.ipynb", "parameters": {"STOP": str(stop)}})
    assert code == 201, job
    wait_for(lambda: service(hub, tokens[ALICE], "GET", "jobs", job["id"])[1]["status"] == "running", 120, 0.3,
             "the job to run")
    request("DELETE", f"{hub.url}/hub/api/users/{ALICE}/server", hub.harness_token)  # her server stops (or is culled)
    wait_for(lambda: request("GET", f"{api}/cluster", tokens[ALICE])[0] != 200, 60, 0.5, "alice's server to stop")
    stop.touch()
    assert finished(hub, tokens[ALICE], job["id"])["status"] == "completed"  # it ran on, without her server
    api = own_server(hub, tokens[ALICE], ALICE)  # she comes back
    code, page, _ = request("GET", f"{api}/jobs", tokens[ALICE])
    listed = {j["id"]: j for j in page["jobs"]}
    assert code == 200 and listed[job["id"]]["status"] == "completed"
    code, log, _ = request("GET", f"{api}/jobs/{job['id']}/log", tokens[ALICE])
    assert code == 200 and "done waiting" in log["text"]


# In the page, as the Lab does (its XSRF token with its cookie): read the push channel's messages
# into window.heard; the status of the response.
LISTEN = """async url => {
    window.heard = [];
    const xsrf = decodeURIComponent((document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || '');
    const response = await fetch(url, {headers: {'X-XSRFToken': xsrf}});
    const reader = response.body.getReader(), decoder = new TextDecoder();
    let text = '';
    (async () => {
        for (let got = await reader.read(); !got.done; got = await reader.read()) {
            text += decoder.decode(got.value, {stream: true});
            for (let end = text.indexOf('\\n\\n'); end >= 0; end = text.indexOf('\\n\\n')) {
                const data = text.slice(0, end).split('\\n').filter(l => l.startsWith('data:'));
                text = text.slice(end + 2);
                if (data.length) window.heard.push(data.map(l => l.slice(5)).join('\\n'));
            }
        }
    })();
    return response.status;
}"""


def login(browser, hub: Hub, name: str):
    """A browser context logged in to the hub as ``name`` (any password: the dummy authenticator),
    on its JupyterLab."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(f"{hub.url}/hub/login")
    page.locator("#username_input").fill(name)
    page.locator("#password_input").fill("any")
    page.locator("#login_submit").click()
    page.wait_for_url(f"**/user/{name}/lab**", timeout=180_000)
    expect(page.locator("#jupyterlab-splash")).to_have_count(0, timeout=120_000)
    return context, page


def test_alice_runs_a_job_from_her_lab_as_herself_and_bob_never_sees_it(lab_hub, people):
    hub, tokens = lab_hub
    from test_jupyterlab import job_row, jobs_panel, submit_and_get_job, submit_dialog  # noqa: E402

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            context, page = login(browser, hub, ALICE)
            page.goto(f"{hub.url}/user/{ALICE}/lab/tree/who.ipynb")
            expect(page.get_by_test_id("nbrunner-run-as-job")).to_be_visible(timeout=120_000)
            page.get_by_test_id("nbrunner-run-as-job").click()
            submit_dialog(page)
            job = submit_and_get_job(page)
            assert job["owner"] == ALICE and job["notebook"] == "who.ipynb", job
            rec = finished(hub, tokens[ALICE], job["id"])
            assert rec["status"] == "completed", rec
            code, log = service(hub, tokens[ALICE], "GET", "jobs", job["id"], "log")
            assert f"uid {people[ALICE].pw_uid} user {ALICE}" in log["text"], log
            jobs_panel(page)
            expect(job_row(page, job["id"])).to_be_visible(timeout=30_000)
            context.close()

            context, page = login(browser, hub, BOB)
            panel = jobs_panel(page)
            expect(panel).to_be_visible()
            # the panel is live: its push channel streams through the hub's proxy and bob's server
            expect(panel.get_by_test_id("nbrunner-live-status")).to_have_attribute("data-mode", "live",
                                                                                   timeout=30_000)
            expect(job_row(page, job["id"])).to_have_count(0)
            # what bob's channel carries while both submit: his job's changes, none of alice's
            opened = page.evaluate(LISTEN, f"{hub.url}/user/{BOB}/nbrunner/api/events")
            assert opened == 200, opened
            page.wait_for_timeout(1000)
            code, theirs = service(hub, tokens[ALICE], "POST", "jobs", body={
                "notebook": "who.ipynb", "content": json.loads((Path(people[ALICE].pw_dir) / "who.ipynb").read_text())})
            assert code == 201, theirs
            code, mine = service(hub, tokens[BOB], "POST", "jobs", body={
                "notebook": "who.ipynb", "content": json.loads((Path(people[BOB].pw_dir) / "who.ipynb").read_text())})
            assert code == 201, mine
            expect(job_row(page, mine["id"])).to_be_visible(timeout=30_000)
            wait_for(lambda: any('"completed"' in m and mine["id"] in m for m in page.evaluate("window.heard")),
                     180, 0.5, "bob's job to finish on his channel")
            heard = page.evaluate("window.heard")
            assert not any(theirs["id"] in m or f'"owner":"{ALICE}"' in m.replace(" ", "") for m in heard), heard
            expect(job_row(page, theirs["id"])).to_have_count(0)
            context.close()
        finally:
            browser.close()

    bob = tokens[BOB]
    for method, path in (("GET", ()), ("GET", ("log",)), ("GET", ("output",)), ("GET", ("metrics",)),
                         ("GET", ("download",)), ("PATCH", ()), ("DELETE", ()), ("POST", ("rerun",))):
        body = {"priority": 7} if method == "PATCH" else ({} if method == "POST" else None)
        code, answer = service(hub, bob, method, "jobs", job["id"], *path, body=body)
        assert code == 404, (method, path, code, answer)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "NBRUNNER_SERVICE_URL": f"{hub.url}/services/nbrunner/",
           "JUPYTERHUB_API_TOKEN": bob, "HOME": people[BOB].pw_dir}
    p = subprocess.run([RUNUSER, "-u", BOB, "--", sys.executable, "-m", "nbrunner", "cancel", job["id"]],
                       capture_output=True, text=True, env=env, cwd="/", timeout=120)
    assert_one_line_error(p, 1, f"no job '{job['id']}'")
    # an admin sees both users' jobs and cancels them
    stop = Path("/nonexistent")
    made = {}
    for name in (ALICE, BOB):
        code, made[name] = service(hub, tokens[name], "POST", "jobs",
                                   body={"notebook": "wait.ipynb", "parameters": {"STOP": str(stop)},
                                         "content": json.loads((Path(people[name].pw_dir) / "wait.ipynb").read_text())})
        assert code == 201, made[name]
    admin = tokens["hubadmin"]
    code, page_ = service(hub, admin, "GET", "jobs")
    assert {made[ALICE]["id"], made[BOB]["id"]} <= {j["id"] for j in page_["jobs"]}
    for name in (ALICE, BOB):
        code, rec = service(hub, admin, "DELETE", "jobs", made[name]["id"])
        assert code == 200 and rec["status"] == "cancelled", rec
