"""A user's Jupyter server with NBRUNNER_SERVICE_URL forwards the REST API to the nbrunner service.

Two real Jupyter servers with the nbrunner extension: the "service" runs on a real cluster's
workspace (token authentication, as a hub's users' tokens would be checked); the "user's" server
has no Redis anywhere in its environment or root, and forwards ``<base_url>nbrunner/api/...`` to
the service.  Every route is exercised through the forwarder; notebooks travel as content read
from the user's root, which the service never sees.
"""
from __future__ import annotations

import json
import os
import threading
import urllib.request
from pathlib import Path

import pytest

from support import REPO, http_raw, jupyter_server, make_notebook, short_tmpdir, stop_process, wait_for

pytestmark = pytest.mark.slow

SERVICE_TOKEN, USER_TOKEN = "service-token-1", "user-token-2"


class Pair:
    """The two servers: ``svc(...)`` calls the service's API, ``usr(...)`` the user's server's."""

    def __init__(self, service: str, user: str, user_proc, service_proc, user_root: Path, workspace: Path):
        self.service, self.user = service, user
        self.user_proc, self.service_proc = user_proc, service_proc
        self.user_root, self.workspace = user_root, workspace

    def svc(self, method: str, path: str, body=None, **headers):
        return call(self.service, SERVICE_TOKEN, method, path, body, headers)

    def usr(self, method: str, path: str, body=None, **headers):
        return call(self.user, USER_TOKEN, method, path, body, headers)

    def usr_raw(self, method: str, path: str, body=None):
        return http_raw(method, f"{self.user}nbrunner/api/{path}", USER_TOKEN,
                        None if body is None else json.dumps(body).encode())

    def finished(self, job_id: str, timeout: float = 90) -> dict:
        def done():
            code, job = self.usr("GET", f"jobs/{job_id}")
            assert code == 200, job
            return job if job["status"] in ("completed", "failed", "cancelled") else None

        return wait_for(done, timeout, 0.2, f"job {job_id} to finish")


def call(base: str, token: str, method: str, path: str, body, headers: dict) -> tuple[int, dict | None]:
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    code, _, raw = http_raw(method, f"{base}nbrunner/api/{path}", token, data,
                            {k.replace("_", "-"): v for k, v in headers.items()})
    return code, json.loads(raw) if raw else None


@pytest.fixture(scope="module")
def pair(cluster, shared_workspace):
    user_root = short_tmpdir("nbu")
    make_notebook(user_root / "work" / "mine.ipynb",
                  "import os, nbrunner\nprint('mine says', WORD, 'in', os.getcwd())\nnbrunner.record('score', 7)",
                  parameters="WORD = 'hi'")
    make_notebook(user_root / "slow.ipynb", "import time\ntime.sleep(120)")
    outside = short_tmpdir("nbo")
    make_notebook(outside / "secret.ipynb", "print('secret')")
    os.symlink(outside / "secret.ipynb", user_root / "escape.ipynb")
    logs = short_tmpdir("nbl")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("NBRUNNER_", "PYTEST_"))}
    path = os.pathsep.join(filter(None, [str(REPO), str(REPO / "tests" / "server"), os.environ.get("PYTHONPATH")]))
    service_env = {**clean, **cluster.settings.env(), "PYTHONPATH": path}
    with jupyter_server(shared_workspace, SERVICE_TOKEN, service_env, logs / "service.log",
                        extensions=("stream_route",)) as (service, service_proc):
        user_env = {**clean, "PYTHONPATH": path, "NBRUNNER_SERVICE_URL": f"{service}nbrunner/",
                    "NBRUNNER_TOKEN": SERVICE_TOKEN, "NBRUNNER_RUNTIME_DIR": str(short_tmpdir("nbrt"))}
        with jupyter_server(user_root, USER_TOKEN, user_env, logs / "user.log") as (user, user_proc):
            yield Pair(service, user, user_proc, service_proc, user_root, shared_workspace)


def test_the_users_server_holds_no_redis(pair):
    environ = Path(f"/proc/{pair.user_proc.pid}/environ").read_bytes().decode(errors="replace").split("\0")
    names = {e.partition("=")[0] for e in environ}
    assert not names & {"NBRUNNER_REDIS_URL", "NBRUNNER_WORKSPACE", "NBRUNNER_STORAGE"}
    assert not any(word in e for e in environ for word in ("redis://", "rediss://", "redis.sock", "unix://"))
    assert "NBRUNNER_SERVICE_URL" in names
    assert not (pair.user_root / ".nbrunner").exists()
    code, status = pair.usr("GET", "cluster")  # answered by the service: there is no cluster here
    assert code == 200 and status == pair.svc("GET", "cluster")[1] and status["workers"] == 2


def test_a_job_travels_as_content_and_comes_back(pair):
    assert not (pair.workspace / "work" / "mine.ipynb").exists()  # only the user's server has it
    code, job = pair.usr("POST", "jobs", {"notebook": "work/mine.ipynb", "parameters": {"WORD": "forwarded"}})
    assert code == 201, job
    assert job["notebook"] == "work/mine.ipynb" and job["name"] == "mine"
    done = pair.finished(job["id"])
    assert done["status"] == "completed", done["error"]
    assert pair.svc("GET", f"jobs/{job['id']}") == (200, done)
    code, log = pair.usr("GET", f"jobs/{job['id']}/log")
    assert code == 200 and "mine says forwarded" in log["text"]
    code, rest = pair.usr("GET", f"jobs/{job['id']}/log?offset={log['offset'] - 5}")
    assert rest == {"text": log["text"][-5:], "offset": log["offset"]}
    code, nb = pair.usr("GET", f"jobs/{job['id']}/output")
    assert code == 200 and nb == pair.svc("GET", f"jobs/{job['id']}/output")[1] and nb["nbformat"] == 4
    code, metrics = pair.usr("GET", f"jobs/{job['id']}/metrics")
    assert code == 200 and [m["score"] for m in metrics["metrics"]] == [7]
    for fmt, kind in (("ipynb", "application/x-ipynb+json"), ("html", "text/html"), ("zip", "application/zip")):
        code, headers, body = pair.usr_raw("GET", f"jobs/{job['id']}/download?format={fmt}")
        direct = http_raw("GET", f"{pair.service}nbrunner/api/jobs/{job['id']}/download?format={fmt}", SERVICE_TOKEN)
        assert code == 200 and headers["Content-Type"].startswith(kind), headers
        assert headers["Content-Disposition"] == direct[1]["Content-Disposition"] == \
            f'attachment; filename="mine-{job["id"]}.{fmt}"'
        if fmt != "zip":  # a zip records when it was made
            assert body == direct[2]
        else:
            assert body[:2] == b"PK" and abs(len(body) - len(direct[2])) < 200
    code, again = pair.usr("POST", f"jobs/{job['id']}/rerun", {"parameters": {"WORD": "again"}})
    assert code == 201 and again["parameters"] == {"WORD": "again"} and again["notebook"] == "work/mine.ipynb"
    assert "mine says again" in pair.usr("GET", f"jobs/{pair.finished(again['id'])['id']}/log")[1]["text"]
    code, refused = pair.usr("DELETE", f"jobs/{job['id']}")
    assert code == 409 and "already completed" in refused["message"]
    assert pair.usr_raw("DELETE", f"jobs/{again['id']}?purge=true")[0] == 204
    assert pair.usr("GET", f"jobs/{again['id']}")[0] == 404


def test_a_notebook_larger_than_a_plain_request_body_travels(pair):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("x" * (3 * 2**20)),
                                         nbformat.v4.new_code_cell("print('big one ran')")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(pair.user_root / "big.ipynb"))
    code, job = pair.usr("POST", "jobs", {"notebook": "big.ipynb"})
    assert code == 201, job
    assert "big one ran" in pair.usr("GET", f"jobs/{pair.finished(job['id'])['id']}/log")[1]["text"]


def test_priority_cancel_and_listing(pair):
    code, job = pair.usr("POST", "jobs", {"notebook": "slow.ipynb", "min_gpus": 1})  # no GPU here: stays queued
    assert code == 201 and job["status"] == "queued"
    code, changed = pair.usr("PATCH", f"jobs/{job['id']}", {"priority": 9000})
    assert code == 200 and changed["priority"] == 9000
    code, page = pair.usr("GET", "jobs?status=queued&limit=1", Prefer="count=exact")
    assert code == 200 and [j["id"] for j in page["jobs"]] == [job["id"]]
    _, headers, _ = http_raw("GET", f"{pair.user}nbrunner/api/jobs?status=queued&limit=1", USER_TOKEN,
                             headers={"Prefer": "count=exact"})
    assert headers["X-Total-Count"] == "1"
    code, cancelled = pair.usr("DELETE", f"jobs/{job['id']}")
    assert code == 200 and cancelled["status"] == "cancelled"


def test_refusals_come_back_as_the_services_and_paths_stay_inside_the_root(pair):
    assert pair.usr("GET", "jobs/nosuchjob") == (404, {"message": "no job 'nosuchjob'"})
    assert pair.usr("PATCH", "jobs/nosuchjob", {"priority": 3})[0] == 404
    code, bad = pair.usr("GET", "jobs?status=done")
    assert code == 400 and "status must be one of" in bad["message"]
    before = [j["id"] for j in pair.svc("GET", "jobs")[1]["jobs"]]
    for notebook, words in (("../x.ipynb", "inside the server root"), ("/etc/passwd", "inside the server root"),
                            ("escape.ipynb", "outside"), ("nope.ipynb", "notebook not found"),
                            ("hello.ipynb", "notebook not found")):  # hello.ipynb is the service's, not the user's
        code, refused = pair.usr("POST", "jobs", {"notebook": notebook})
        assert code == 400 and words in refused["message"], (notebook, refused)
    code, refused = pair.usr("POST", "jobs", {"notebook": "work/mine.ipynb", "priority": 0})
    assert code == 400 and "priority" in refused["message"]
    assert [j["id"] for j in pair.svc("GET", "jobs")[1]["jobs"]] == before  # nothing was created


def test_parameters_are_read_from_the_users_notebook(pair):
    code, params = pair.usr("GET", "notebook-parameters?path=work/mine.ipynb")
    assert code == 200 and params["parameters"] == [{"name": "WORD", "value": "hi", "type": "str", "help": ""}]
    assert pair.svc("GET", "notebook-parameters?path=work/mine.ipynb")[0] == 400  # the service has no such file


def test_sweeps_and_schedules_travel_as_content(pair):
    spec = "parameters:\n  WORD: [a, b]\nobjective: {metric: score, mode: max}\n"
    code, sweep = pair.usr("POST", "sweeps", {"notebook": "work/mine.ipynb", "spec": spec})
    assert code == 201, sweep
    assert [t["parameters"] for t in sweep["leaderboard"]] == [{"WORD": "a"}, {"WORD": "b"}]
    for trial in sweep["jobs"]:
        assert trial["notebook"] == "work/mine.ipynb" and trial["sweep"] == sweep["id"]
        assert pair.finished(trial["id"])["status"] == "completed"
    code, board = pair.usr("GET", f"sweeps/{sweep['id']}")
    assert code == 200 and {row["objective"] for row in board["leaderboard"]} == {7}
    assert sweep["id"] in [s["id"] for s in pair.usr("GET", "sweeps")[1]["sweeps"]]
    code, schedule = pair.usr("POST", "schedules", {"notebook": "work/mine.ipynb", "every": 1,
                                                    "parameters": {"WORD": "clock"}})
    assert code == 201 and schedule["notebook"] == "work/mine.ipynb"
    runs = wait_for(lambda: pair.usr("GET", f"jobs?schedule={schedule['id']}")[1]["jobs"], 60, 0.3, "a run")
    assert runs[0]["schedule"] == schedule["id"] and runs[0]["notebook"] == "work/mine.ipynb"
    code, paused = pair.usr("PATCH", f"schedules/{schedule['id']}", {"paused": True})
    assert code == 200 and paused["paused"] is True
    assert pair.usr("GET", f"schedules/{schedule['id']}")[1]["paused"] is True
    assert schedule["id"] in [s["id"] for s in pair.usr("GET", "schedules")[1]["schedules"]]
    assert pair.usr_raw("DELETE", f"schedules/{schedule['id']}")[0] == 204
    assert pair.usr("GET", f"schedules/{schedule['id']}")[0] == 404
    assert "mine says clock" in pair.usr("GET", f"jobs/{pair.finished(runs[0]['id'])['id']}/log")[1]["text"]


def test_cluster_timeline_models_and_openapi(pair):
    for path in ("cluster/timeline", "models", "models/serving"):
        code, body = pair.usr("GET", path)
        assert code == 200 and body == pair.svc("GET", path)[1], path
    code, doc = pair.usr("GET", "openapi.json")
    assert code == 200 and "/jobs" in doc["paths"]
    code, refused = pair.usr("POST", "models", {"job": "nosuchjob", "name": "m"})
    assert code == 404 and "nosuchjob" in refused["message"]


def test_a_stream_arrives_chunk_by_chunk(pair, tmp_path):
    """A response the service sends in parts (as a stream of events) reaches the browser in parts."""
    flag = tmp_path / "go"
    req = urllib.request.Request(f"{pair.user}nbrunner/api/test-stream?flag={flag}",
                                 headers={"Authorization": f"token {USER_TOKEN}"})
    timer = threading.Timer(30, flag.touch)  # unblocks the service if the first part never comes
    timer.start()
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            first = resp.readline()
            arrived_before_flag = not flag.exists()
            flag.touch()
            rest = resp.read()
    finally:
        timer.cancel()
    assert first == b"data: first\n" and arrived_before_flag
    assert rest == b"\ndata: second\n\n"


def test_an_unreachable_service_answers_503(pair):
    stop_process(pair.service_proc)  # the last test of the module: the service goes away
    code, refused = pair.usr("GET", "jobs")
    assert code == 503 and "out of reach" in refused["message"] and "\n" not in refused["message"]
    code, refused = pair.usr("POST", "jobs", {"notebook": "work/mine.ipynb"})
    assert code == 503 and "out of reach" in refused["message"]
    code, params = pair.usr("GET", "notebook-parameters?path=work/mine.ipynb")  # still answered here
    assert code == 200 and params["parameters"][0]["name"] == "WORD"
