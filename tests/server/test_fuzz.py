"""Property-based fuzzing of the REST API and the CLI against a real cluster and Jupyter server.

Whatever a client sends: no 5xx, every error from nbrunner's routes is JSON ``{"message"}``,
a refused request creates no job, and the cluster still runs a normal job afterwards.
Bounded (``max_examples``) so the whole module takes well under a minute of requests.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import socket
import subprocess
import sys
import time
from urllib.parse import quote

import pytest
import requests
from hypothesis import HealthCheck, given, settings, strategies as st

from nbrunner.client import cli
from nbrunner.core.keys import JOBS

from support import make_notebook, short_tmpdir, wait_for

pytestmark = pytest.mark.slow

FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
ROUTE_ID = re.compile(r"^[a-z0-9]{1,32}$")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(cluster, shared_workspace):
    """A real Jupyter server with the nbrunner extension, serving the cluster's workspace."""
    make_notebook(shared_workspace / "params.ipynb", "print(A, B)", parameters="A = 1\nB = 'x'")
    port, token = free_port(), "fuzz-token"
    cfg = short_tmpdir() / "jupyter_server_config.json"
    cfg.write_text(json.dumps({"ServerApp": {"jpserver_extensions": {"nbrunner.server": True}}}))
    env = {**os.environ, "NBRUNNER_WORKSPACE": str(shared_workspace)}
    env.pop("NBRUNNER_REDIS_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", f"--config={cfg}", f"--port={port}", "--ip=127.0.0.1",
         f"--ServerApp.token={token}", f"--ServerApp.root_dir={shared_workspace}", "--no-browser", "--allow-root"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    session = requests.Session()
    session.headers["Authorization"] = f"token {token}"
    base = f"http://127.0.0.1:{port}/nbrunner/api"

    def up():
        try:
            return session.get(f"{base}/cluster", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    try:
        wait_for(up, 60, interval=0.3, what="the Jupyter server")
        yield session, base, cluster
    finally:
        proc.terminate()
        proc.wait(20)


def job_count(cluster) -> int:
    return cluster.store.r.zcard(JOBS)


def check(resp: requests.Response, nbrunner_route: bool = True) -> None:
    assert resp.status_code < 500, (resp.status_code, resp.text[:300])
    if resp.status_code >= 400 and nbrunner_route:
        body = resp.json()
        assert isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"], body
        assert "\n" not in body["message"] and "Traceback" not in body["message"]


def call(server, method: str, path: str, raw: bytes | None = None, params=None, nbrunner_route=True):
    """Send; a request refused (>= 400) must not have created a job. A job created that needs no GPU is
    cancelled at once (to spare the CPU); one that wants GPUs stays queued, so a value that would
    break the scheduler's passes shows in the last test."""
    session, base, cluster = server
    before = job_count(cluster)
    resp = session.request(method, f"{base}/{path}", data=raw, params=params, timeout=30)
    check(resp, nbrunner_route)
    after = job_count(cluster)
    if resp.status_code >= 400:
        assert after == before, (method, path, raw, resp.status_code)
    cancel_new(cluster, before)
    return resp


def cancel_new(cluster, before: int) -> None:
    for jid in cluster.store.r.zrange(JOBS, before, -1) if job_count(cluster) > before else []:
        with contextlib.suppress(Exception):
            job = cluster.job(jid)
            if job.record.max_gpus == 0:
                job.cancel()


# ---- strategies -------------------------------------------------------------------------------

surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
hostile_text = st.one_of(st.text(max_size=20), st.text(surrogates, min_size=1, max_size=3),
                         st.sampled_from(["", " ", "\x00", "../x", "/etc/passwd", "a" * 300, "hello.ipynb"]))
big_ints = st.one_of(st.integers(-10, 20), st.sampled_from([2**31, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30]))
json_scalars = st.one_of(st.none(), st.booleans(), big_ints, st.floats(allow_nan=False), hostile_text)
json_values = st.recursive(json_scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(hostile_text, kids, max_size=3)), max_leaves=8)
names = st.one_of(st.sampled_from(["A", "B", "class", "None", "def", "lambda", "1x", "a b", "_ok"]), hostile_text)


def nested(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


job_bodies = st.fixed_dictionaries({}, optional={
    "notebook": st.one_of(st.sampled_from(["hello.ipynb", "params.ipynb", "nope.ipynb", "../hello.ipynb"]),
                          hostile_text, json_scalars),
    "parameters": st.one_of(st.dictionaries(names, json_values, max_size=3), json_values),
    "name": st.one_of(hostile_text, json_scalars),
    "min_gpus": st.one_of(big_ints, json_scalars), "max_gpus": st.one_of(big_ints, json_scalars),
    "priority": st.one_of(big_ints, json_scalars),
    "timeout": st.one_of(st.sampled_from([0.5, 5, 1e30, 1e308, -1, 2592001]), json_scalars),
    "kernel": st.one_of(st.sampled_from(["python3", "nope"]), hostile_text),
    "language": st.one_of(st.sampled_from(["python", "R", "cobol"]), hostile_text),
    "cwd": st.one_of(st.sampled_from([".", "..", "/", "nowhere"]), hostile_text),
    "report_mode": json_scalars,
    "sweep": hostile_text,
    "bogus": json_scalars,
})

raw_bodies = st.one_of(
    st.sampled_from([
        b"", b"{", b"[]", b"null", b"\xff\xfe", b'{"notebook": "hello.ipynb", "min_gpus": ' + b"9" * 5000 + b"}",
        ('{"notebook": "hello.ipynb", "parameters": {"X": ' + nested(1200) + "}}").encode(),
        ('{"notebook": "hello.ipynb", "parameters": {"X": ' + nested(220) + "}}").encode(),
        b'{"notebook": "\\ud800.ipynb"}', b'{"notebook": "hello.ipynb", "name": "\\udfff"}',
        b'{"notebook": "hello.ipynb", "parameters": {"\\ud800": 1}}',
        b'{"notebook": "hello.ipynb", "timeout": Infinity}', b'{"notebook": "hello.ipynb", "timeout": NaN}',
    ]),
    st.binary(max_size=64),
)

BOMB = ('a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
        'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n')
OBJ = "objective: {metric: accuracy, mode: max}\n"
specs = st.one_of(
    st.sampled_from([BOMB + OBJ, "[" * 5000, "parameters: {A: {randint: [0, 99999999999999999999]}}\n" + OBJ,
                     "parameters: {A: {randint: [0, 9223372036854775807]}}\n" + OBJ, "x: " + "9" * 5000,
                     "parameters: {class: [1, 2]}\n" + OBJ, "parameters: {A: [1, 2]}\nmax_parallel: 1\n" + OBJ,
                     "parameters: {A: {uniform: [0, 1e308]}}\ngenerate: 2\n" + OBJ, "\ud800", ": :", ""]),
    hostile_text, json_values,
    st.fixed_dictionaries({"objective": st.just({"metric": "a", "mode": "max"})},
                          optional={"parameters": st.dictionaries(names, json_values, max_size=2),
                                    "generate": big_ints, "seed": big_ints, "max_parallel": big_ints}),
)


# ---- the properties ---------------------------------------------------------------------------

@FUZZ
@given(body=job_bodies)
def test_post_jobs_bodies(server, body):
    raw = json.dumps(body).encode()
    resp = call(server, "POST", "jobs", raw)
    assert resp.status_code in (201, 400, 404, 409), resp.status_code


@FUZZ
@given(raw=raw_bodies, method=st.sampled_from(["POST", "PATCH"]))
def test_raw_bodies(server, raw, method):
    path = "jobs" if method == "POST" else f"jobs/{server[2].jobs()[0].id}" if server[2].jobs() else "jobs/none"
    resp = call(server, method, path, raw)
    assert resp.status_code in (201, 400, 404, 409) if method == "POST" else resp.status_code < 500


@FUZZ
@given(body=st.one_of(st.fixed_dictionaries({"priority": st.one_of(big_ints, json_values)}), json_values))
def test_patch_bodies(server, body):
    cluster = server[2]
    waiting = getattr(test_patch_bodies, "job", None)
    if waiting is None:  # a job that stays queued (no GPU on this cluster): something to change
        waiting = test_patch_bodies.job = cluster.submit("hello.ipynb", min_gpus=1, max_gpus=1).id
    resp = call(server, "PATCH", f"jobs/{waiting}", json.dumps(body).encode())
    assert resp.status_code in (200, 400), (resp.status_code, resp.text)
    assert cluster.job(waiting).status == "queued"


@FUZZ
@given(job_id=hostile_text, tail=st.sampled_from(["", "/log", "/output"]),
       method=st.sampled_from(["GET", "DELETE", "PATCH"]))
def test_ids(server, job_id, tail, method):
    try:
        job_id.encode("utf-8")
    except UnicodeEncodeError:
        job_id = "x"
    path = f"jobs/{quote(job_id, safe='')}{tail}" if job_id else f"jobs{tail}"
    nbrunner_route = bool(ROUTE_ID.match(job_id)) and (tail == "" or method == "GET")
    resp = call(server, method, path, b"{}" if method == "PATCH" else None, nbrunner_route=nbrunner_route)
    if nbrunner_route:
        assert resp.status_code in (400, 404), resp.status_code


@FUZZ
@given(status=st.one_of(st.none(), hostile_text, st.sampled_from(["queued", "failed"])),
       limit=st.one_of(st.none(), hostile_text, big_ints.map(str)),
       offset=st.one_of(hostile_text, big_ints.map(str), st.sampled_from(["9" * 30, "9" * 5000, "-1", "1e3"])))
def test_query_strings(server, status, limit, offset):
    params = {k: v for k, v in {"status": status, "limit": limit}.items() if v is not None}
    for k in list(params):
        try:
            params[k].encode("utf-8")
        except UnicodeEncodeError:
            params[k] = "x"
    call(server, "GET", "jobs", params=params)
    jobs = server[2].jobs()
    if jobs:
        try:
            offset.encode("utf-8")
        except UnicodeEncodeError:
            offset = "x"
        resp = call(server, "GET", f"jobs/{jobs[0].id}/log", params={"offset": offset})
        assert resp.status_code in (200, 400)


@FUZZ
@given(spec=specs, notebook=st.sampled_from(["params.ipynb", "nope.ipynb", "../x.ipynb"]))
def test_sweep_specs(server, spec, notebook):
    raw = json.dumps({"notebook": notebook, "spec": spec}).encode()
    resp = call(server, "POST", "sweeps", raw)
    assert resp.status_code in (201, 400, 404), resp.status_code
    if resp.status_code == 201:
        server[0].delete(f"{server[1]}/sweeps/{resp.json()['id']}", timeout=30)


SAFE_COMMANDS = ["submit", "jobs", "show", "cancel", "priority", "sweep", "logs", "cluster", "list"]
TOKENS = ["hello.ipynb", "nope.ipynb", "-p", "A", "1", "--timeout", "1e30", "5", "--min-gpus", "9" * 30,
          "--max-gpus", "-1", "--priority", "0", "--json", "-f", "--name", "class", "--dry-run", "list",
          "register", "--status", "queued", "--kernel", "x", "--", "\x00", "a" * 300 + ".ipynb"]


@FUZZ
@given(command=st.sampled_from(SAFE_COMMANDS),
       args=st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=8)), max_size=6))
def test_cli_argv(server, shared_workspace, command, args):
    cluster = server[2]
    files = shared_workspace / "fuzzfiles"
    files.mkdir(exist_ok=True)
    (files / "deep.yaml").write_text("A: " + "[" * 3000)
    (files / "bin.yaml").write_bytes(b"\xff\xfeA\x00:\x00 \x001\x00")
    (files / "huge.yaml").write_text("A: " + "9" * 5000)
    (files / "spec.yaml").write_text(BOMB + OBJ)
    argv = [command, *args]
    if command == "sweep" and "--dry-run" not in argv:
        argv.append("--dry-run")  # a real sweep is covered over REST
    argv = [a.replace("\x00", "") if a.startswith("--") else a for a in argv]
    for i, a in enumerate(argv):
        if a == "-f" and i + 1 < len(argv):
            argv[i + 1] = str(files / ["deep.yaml", "bin.yaml", "huge.yaml", "spec.yaml"][len(argv[i + 1]) % 4])
    argv += ["--dir", str(shared_workspace)] if command != "list" else []
    if "--wait" in argv or "--follow" in argv or "-f" == argv[-1]:
        return
    before = job_count(cluster)
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            cli.main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
    text = err.getvalue()
    assert code in (0, 1, 2), (argv, code, text)
    assert "Traceback" not in text and "unexpected error" not in text, (argv, text)
    assert len(text.strip().splitlines()) <= 1, (argv, text)
    if code != 0:
        assert job_count(cluster) == before, argv
    cancel_new(cluster, before)


def test_corrupt_records_do_not_break_listings_or_cancel(server):
    session, base, cluster = server
    r = cluster.store.r
    deep = "[" * 5000 + "]" * 5000  # deeper than the decoder reads
    r.set("nbrunner:job:zfuzz001", '{"id": "zfuzz001", "name": "x", "notebook": "x", "parameters": {"X": ' + deep + "}}")
    r.zadd(JOBS, {"zfuzz001": time.time()})
    r.set("nbrunner:sweep:zfuzz002", "{broken")
    r.zadd("nbrunner:sweeps", {"zfuzz002": time.time()})
    r.sadd("nbrunner:sweeps:active", "zfuzz002")
    listing = session.get(f"{base}/jobs", timeout=30)
    check(listing)
    assert listing.status_code == 200
    marked = [j for j in listing.json()["jobs"] if j["id"] == "zfuzz001"]
    assert marked and marked[0]["status"] == "failed" and marked[0]["error"].startswith("quarantined")
    cancel = session.delete(f"{base}/jobs/zfuzz001", timeout=30)
    check(cancel)
    assert cancel.status_code == 409
    sweeps = session.get(f"{base}/sweeps", timeout=30)
    assert sweeps.status_code == 200 and "zfuzz002" not in [s["id"] for s in sweeps.json()["sweeps"]]
    one = session.get(f"{base}/sweeps/zfuzz002", timeout=30)
    check(one)
    assert one.status_code == 404 and "cannot be read" in one.json()["message"]


def test_cluster_still_runs_a_normal_job_afterwards(server):
    session, base, cluster = server
    waiting = getattr(test_patch_bodies, "job", None)
    if waiting:
        session.delete(f"{base}/jobs/{waiting}", timeout=30)
    resp = session.post(f"{base}/jobs", data=json.dumps({"notebook": "hello.ipynb", "parameters": {"NAME": "ok"}}),
                        timeout=30)
    assert resp.status_code == 201, resp.text
    job = cluster.job(resp.json()["id"]).wait(180)
    assert job.status == "completed", job.error
    listing = session.get(f"{base}/jobs", timeout=30)
    assert listing.status_code == 200 and any(j["id"] == job.id for j in listing.json()["jobs"])
    for other in cluster.jobs("queued"):  # what the fuzzing left waiting for GPUs
        other.cancel()
