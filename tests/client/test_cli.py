"""The command line against a real cluster: exit codes, one-line errors, JSON output, `up`."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import psutil
import pytest

from support import assert_one_line_error, make_notebook, short_tmpdir, wait_for


def run(*args: str, cwd=None, env=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nbrunner", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, timeout=timeout)


@pytest.fixture(scope="module")
def ws(cluster, shared_workspace):
    return shared_workspace


@pytest.mark.slow
def test_no_cluster_says_how_to_start_one():
    empty = short_tmpdir()
    for args in (["jobs"], ["submit", "x.ipynb"], ["cluster", "--json"], ["show", "abc"]):
        p = run(*args, "--dir", str(empty), env={"NBRUNNER_REDIS_URL": ""})
        assert_one_line_error(p, 2, "nbrunner up")


@pytest.mark.parametrize("args, words", [
    (["bogus"], ["No such command"]),
    (["submit"], ["Missing argument"]),
    (["submit", "hello.ipynb", "--min-gpus", "x"], ["--min-gpus"]),
    (["submit", "hello.ipynb", "-p", "A"], ["-p needs a name and a value"]),
    (["submit", "hello.ipynb", "-p", "N", "9" * 5000], ["-p N", "5000 digits", "too long"]),
    (["jobs", "--status", "done"], ["--status"]),
    (["worker", "--gpus", "many"], ["--gpus"]),
])
@pytest.mark.slow
def test_bad_arguments_one_line_nonzero(ws, args, words):
    p = run(*args[:1], "--dir", str(ws), *args[1:]) if args[0] != "bogus" else run(*args)
    assert_one_line_error(p, 2, *words)


def test_a_too_long_integer_parameter_is_named_in_one_line():
    import typer

    from nbrunner.client.cli.app import typed_parameters

    with pytest.raises(typer.BadParameter, match=r"^-p N: an integer of 5000 digits is too long \(at most \d+\)$"):
        typed_parameters(["N=" + "9" * 5000])
    with pytest.raises(typer.BadParameter, match="5000 digits"):
        typed_parameters(["N=-" + "1" * 5000])
    assert typed_parameters(["N=" + "9" * 4000, "X=1e5000"]) == {"N": int("9" * 4000), "X": "1e5000"}


@pytest.mark.slow
def test_bad_requests_one_line(ws):
    assert_one_line_error(run("submit", "nope.ipynb", "--dir", str(ws)), 1, "notebook not found")
    assert_one_line_error(run("submit", "hello.ipynb", "--min-gpus", "2", "--max-gpus", "1", "--dir", str(ws)), 1,
                          "min_gpus (2) is greater than max_gpus (1)")
    assert_one_line_error(run("submit", "hello.ipynb", "--priority", "0", "--dir", str(ws)), 1, "priority")
    assert_one_line_error(run("show", "nosuchjob", "--dir", str(ws)), 1, "no job 'nosuchjob'")
    assert_one_line_error(run("priority", "nosuchjob", "7", "--dir", str(ws)), 1, "no job")


@pytest.mark.slow
def test_submit_wait_json_and_typed_parameters(ws):
    make_notebook(ws / "types.ipynb", "print(repr(I), repr(F), repr(B), repr(N), repr(S), repr(Y))",
                  parameters="I = 0\nF = 0.0\nB = False\nN = 1\nS = ''\nY = None")
    (ws / "params.yaml").write_text("Y: [1, 2]\nS: from-yaml\n")
    p = run("submit", "types.ipynb", "-p", "I", "7", "-p", "F", "2.5", "-p", "B", "True", "-p", "N", "None",
            "-p", "S", "text", "-f", "params.yaml", "--wait", "--json", "--name", "typed", cwd=ws)
    assert p.returncode == 0, p.stderr
    rec = json.loads(p.stdout)
    assert rec["status"] == "completed" and rec["name"] == "typed"
    assert rec["parameters"] == {"I": 7, "F": 2.5, "B": True, "N": None, "S": "text", "Y": [1, 2]}
    log = run("logs", rec["id"], cwd=ws)
    assert "7 2.5 True None 'text' [1, 2]" in log.stdout
    shown = json.loads(run("show", rec["id"], "--json", cwd=ws).stdout)
    assert shown["id"] == rec["id"] and shown["status"] == "completed"
    # Without --json: one line per field, values in one column, the history on one line.
    lines = run("show", rec["id"], cwd=ws).stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == list(shown)
    column = lines[0].index(rec["id"])
    assert lines[0] == "id".ljust(column) + rec["id"] and f"{'status':<{column}}completed" in lines
    assert f"{'parameters':<{column}}{shown['parameters']}" in lines and f"{'error':<{column}}".rstrip() in lines
    history = next(line for line in lines if line.startswith("history "))
    assert history[column:].startswith("queued ") and history.endswith(" -> completed " + shown["finished_at"])
    listed = json.loads(run("jobs", "--json", "--status", "completed", cwd=ws).stdout)
    assert rec["id"] in [j["id"] for j in listed["jobs"]]
    assert all(j["status"] == "completed" for j in listed["jobs"])


@pytest.mark.slow
def test_jobs_lists_the_newest_first_as_it_says(ws):
    """`nbrunner jobs` says it shows the newest jobs: it lists them newest first, in the order of
    `jobs --json` (GET /jobs), and `--limit N` keeps the newest N."""
    make_notebook(ws / "order.ipynb", "print('order')")
    ids = [run("submit", "order.ipynb", "--name", f"order{i}", cwd=ws).stdout.strip() for i in range(3)]
    listed = [j["id"] for j in json.loads(run("jobs", "--json", cwd=ws).stdout)["jobs"]]
    assert [i for i in listed if i in ids] == ids[::-1]
    rows = [line.split()[0] for line in run("jobs", cwd=ws).stdout.splitlines()[1:-1]]
    assert rows == listed[:len(rows)] and [i for i in rows if i in ids] == ids[::-1]
    limited = run("jobs", "--limit", "2", cwd=ws).stdout.splitlines()
    assert [line.split()[0] for line in limited[1:-1]] == [ids[2], ids[1]]
    total = len(json.loads(run("jobs", "--all", "--json", cwd=ws).stdout)["jobs"])
    assert limited[-1].endswith(f"(the newest 2 of {total}; --all lists them all)")


@pytest.mark.slow
def test_wait_exits_nonzero_when_the_job_fails(ws):
    make_notebook(ws / "bad.ipynb", "raise RuntimeError('nope')")
    p = run("submit", "bad.ipynb", "--wait", cwd=ws)
    assert p.returncode == 1 and "RuntimeError: nope" in p.stdout


@pytest.mark.slow
def test_logs_follow_cancel_priority_and_cluster(ws):
    make_notebook(ws / "ticker.ipynb", "import time\nfor i in range(200):\n    print('tick', i, flush=True)\n    time.sleep(0.1)")
    job_id = run("submit", "ticker.ipynb", cwd=ws).stdout.strip()
    assert run("priority", job_id, "9000", cwd=ws).stdout.strip() == f"{job_id} priority 9000"
    follow = subprocess.Popen([sys.executable, "-m", "nbrunner", "logs", job_id, "--follow"], cwd=ws,
                              stdout=subprocess.PIPE, text=True)
    first = follow.stdout.readline()
    assert first.startswith("tick")
    assert run("cancel", job_id, cwd=ws).stdout.strip() == f"{job_id} cancelled"
    follow.wait(30)
    assert follow.returncode == 0
    assert_one_line_error(run("cancel", job_id, cwd=ws), 1, "already cancelled")
    status = json.loads(run("cluster", "--json", cwd=ws).stdout)
    assert set(status) >= {"policy", "gpus_total", "gpus_free", "hosts"} and status["policy"] == "goodput"
    table = run("jobs", cwd=ws).stdout.splitlines()
    column = table[0].index("status")
    row = next(line for line in table if line.startswith(job_id + " "))
    assert table[0].startswith("id ") and row[column:].startswith("cancelled ") and "\x1b" not in row
    assert table[-1].startswith(f"{len(table) - 2} job")  # header, one row per job, the totals line
    slots = run("cluster", cwd=ws).stdout.splitlines()
    assert slots[0] == f"policy goodput: {status['gpus_free']} of {status['gpus_total']} GPUs free"
    assert slots[1].split() == ["host", "slot", "job"] and len(slots) == 2 + status["gpus_total"]


@pytest.mark.slow
def test_jobs_on_a_terminal_is_coloured_and_cut_to_its_width(ws):
    """On a terminal (a pty 40 columns wide) `jobs` colours statuses and cuts lines to the width;
    with NO_COLOR set, no colour."""
    import fcntl
    import pty
    import re
    import struct
    import termios

    make_notebook(ws / "long_error.ipynb", "raise ValueError('x' * 200)")
    assert run("submit", "long_error.ipynb", "--wait", cwd=ws).returncode == 1

    def on_terminal(env: dict) -> list[str]:
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
        proc = subprocess.Popen([sys.executable, "-m", "nbrunner", "jobs"], cwd=ws, stdin=follower, stdout=follower,
                                stderr=subprocess.PIPE, env={**os.environ, **env})
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other side closed
                break
            if not chunk:
                break
            out += chunk
        os.close(leader)
        assert proc.wait(30) == 0, proc.stderr.read()
        return out.decode().replace("\r\n", "\n").splitlines()

    lines = on_terminal({})
    plain = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in lines]
    assert lines[0].startswith("\x1b[1mid\x1b[0m") and any("\x1b[31mfailed\x1b[0m" in line for line in lines)
    table = plain[:-1]  # the totals line follows the table
    assert all(len(line) <= 40 for line in table) and any(len(line) == 40 for line in table[1:]), plain
    assert "\x1b" not in "".join(on_terminal({"NO_COLOR": "1"})[:-1])


@pytest.mark.slow
def test_jobs_watch_shows_each_change_as_it_happens_until_ctrl_c(ws):
    """`jobs --watch` into a pipe: the table, then a line per change of a job (from the event
    stream: no polling), until SIGINT (exit 130)."""
    import selectors

    make_notebook(ws / "quick.ipynb", "print('quick')")
    watch = subprocess.Popen([sys.executable, "-m", "nbrunner", "jobs", "--watch", "--limit", "5"], cwd=ws,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: list[str] = []
    sel = selectors.DefaultSelector()
    sel.register(watch.stdout, selectors.EVENT_READ)
    pending = b""

    def read_until(pred, timeout: float = 90) -> None:
        nonlocal pending
        deadline = time.monotonic() + timeout
        while not pred():
            assert time.monotonic() < deadline and watch.poll() is None, (lines, watch.stderr.read() if watch.poll() else "")
            if sel.select(timeout=1):
                pending += os.read(watch.stdout.fileno(), 65536)
                *done, pending = pending.split(b"\n")
                lines.extend(line.decode() for line in done)

    try:
        read_until(lambda: any("(live; Ctrl-C to stop)" in line for line in lines))
        job_id = run("submit", "quick.ipynb", "--name", "watched", cwd=ws).stdout.strip()
        read_until(lambda: any(job_id in line and " completed " in f"{line} " for line in lines))
        changes = [line for line in lines if job_id in line]
        assert changes[0].split()[1:4] == [job_id, "watched", "queued"]  # time, id, name, status
        assert all(re.match(r"\d\d:\d\d:\d\d  ", line) for line in changes)
    finally:
        watch.send_signal(signal.SIGINT)
        assert watch.wait(20) == 130, watch.stderr.read()
    assert_one_line_error(run("jobs", "--watch", "--json", cwd=ws), 2, "--watch")


@pytest.mark.slow
def test_up_runs_everything_until_ctrl_c_and_leaves_nothing(tmp_path):
    ws = short_tmpdir()
    make_notebook(ws / "hi.ipynb", "print('hi from up')")
    env = {**os.environ, "NBRUNNER_REDIS_URL": ""}
    env.pop("NBRUNNER_WORKSPACE", None)
    up = subprocess.Popen([sys.executable, "-m", "nbrunner", "up", "--dir", str(ws), "--no-lab", "--gpus", "2",
                           "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        wait_for(lambda: run("cluster", "--json", "--dir", str(ws), env={"NBRUNNER_REDIS_URL": ""}).returncode == 0,
                 60, 0.5, "the cluster to answer")
        wait_for(lambda: json.loads(run("cluster", "--json", "--dir", str(ws), env={"NBRUNNER_REDIS_URL": ""}).stdout)
                 ["gpus_total"] == 2, 60, 0.5, "workers to register")
        status = json.loads(run("cluster", "--json", "--dir", str(ws), env={"NBRUNNER_REDIS_URL": ""}).stdout)
        assert status["policy"] == "goodput"  # the default without --policy
        p = run("submit", "hi.ipynb", "--wait", "--dir", str(ws), env={"NBRUNNER_REDIS_URL": ""})
        assert p.returncode == 0, p.stdout + p.stderr
        family = psutil.Process(up.pid).children(recursive=True)
        assert len(family) >= 4  # redis, scheduler, 2 workers
    finally:
        up.send_signal(signal.SIGINT)
        out, _ = up.communicate(timeout=60)
    assert up.returncode == 0, out
    time.sleep(0.5)
    alive = [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert alive == [], [p.cmdline() for p in alive]
    assert not (ws / ".nbrunner" / "redis.sock").exists()


@pytest.mark.slow
def test_up_starts_jupyterlab_with_the_nbrunner_api_and_stops_it(tmp_path):
    """`nbrunner up` without --no-lab: JupyterLab (started as nbrunner.execution.lab) serves the
    lab and nbrunner's REST API with the given token, runs a job submitted through it, and is
    stopped with the rest on Ctrl-C."""
    import socket
    import urllib.error
    import urllib.request

    ws = short_tmpdir()
    make_notebook(ws / "hi.ipynb", "print('hi from the lab')")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = "t" * 48
    env = {**os.environ, "NBRUNNER_REDIS_URL": "", "NBRUNNER_LAB_TOKEN": token}
    env.pop("NBRUNNER_WORKSPACE", None)

    def api(method: str, path: str, body=None) -> tuple[int, dict | str]:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                text = resp.read().decode()
                return resp.status, json.loads(text) if "json" in resp.headers.get("Content-Type", "") else text
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def answers() -> bool:
        try:
            return api("GET", "nbrunner/api/cluster")[0] == 200
        except (urllib.error.URLError, ConnectionError):
            return False

    up = subprocess.Popen([sys.executable, "-m", "nbrunner", "up", "--dir", str(ws), "--gpus", "1", "--workers", "1",
                           "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        wait_for(answers, 120, 0.5, "JupyterLab's nbrunner API to answer")
        lab = [p for p in psutil.Process(up.pid).children(recursive=True) if "nbrunner.execution.lab" in p.cmdline()]
        assert len(lab) == 1 and f"--ServerApp.root_dir={ws}" in lab[0].cmdline()
        code, page = api("GET", "lab")
        assert code == 200 and "nbrunner" in page  # the lab page lists the nbrunner labextension
        assert api("GET", "nbrunner/api/cluster")[0] == 200 and api("GET", "api/status")[0] == 200
        with pytest.raises(urllib.error.HTTPError) as refused:  # without the token
            urllib.request.urlopen(f"http://127.0.0.1:{port}/nbrunner/api/cluster", timeout=10)
        assert refused.value.code == 403
        code, created = api("POST", "nbrunner/api/jobs", {"notebook": "hi.ipynb"})
        assert code == 201, created
        wait_for(lambda: api("GET", f"nbrunner/api/jobs/{created['id']}")[1]["status"] == "completed", 120, 0.5,
                 "the job to complete")
        family = psutil.Process(up.pid).children(recursive=True)
    finally:
        up.send_signal(signal.SIGINT)
        out, _ = up.communicate(timeout=60)
    assert up.returncode == 0, out
    assert f"JupyterLab: http://127.0.0.1:{port}/lab?token={token}" in out
    time.sleep(0.5)
    alive = [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert alive == [], [p.cmdline() for p in alive]
    assert not answers()


def typer_params(argv: list[str]) -> dict:
    """The arguments typer itself would call the command of ``argv`` with."""
    import copy
    import functools

    import typer

    from nbrunner.client.cli import app

    info = next(c for c in app.registered_commands if (c.name or c.callback.__name__) == argv[0])
    seen: dict = {}

    @functools.wraps(info.callback)  # the same signature and annotations
    def record(**kwargs):
        seen.update(kwargs)

    one = typer.Typer()
    one.registered_commands = [copy.copy(info)]
    one.registered_commands[0].callback = record
    one(args=list(argv[1:]), standalone_mode=False)
    return seen


@pytest.mark.parametrize("argv", [
    ["jobs"], ["jobs", "--json", "--status", "failed", "--limit", "7"], ["jobs", "--all", "--schedule", "s1", "--dir", "/tmp"],
    ["jobs", "--watch", "--status", "running"],
    ["show", "abc", "--json"], ["show", "--dir", "ws", "abc"], ["logs", "-f", "abc"], ["logs", "abc", "--follow"],
    ["cluster", "--json", "--dir", "."], ["list"], ["list", "--json"],
    ["submit", "x.ipynb"], ["submit", "x.ipynb", "-p", "a=1", "--parameter", "b=two", "-p", "c=", "-p", "d=-1", "--wait", "--json"],
    ["submit", "--dir", "ws", "x.ipynb", "-f", "p.yaml", "--name", "n", "--min-gpus", "1", "--max-gpus", "2",
     "--priority", "3", "--kernel", "k"],
])
def test_common_commands_bind_plain_arguments_as_typer_does(argv):
    from nbrunner.client.cli.fast import plain_call

    call = plain_call(argv)
    assert call is not None and call.keywords == typer_params(argv)


@pytest.mark.parametrize("argv", [
    ["jobs", "--help"], ["jobs", "--limit", "007"], ["jobs", "--limit", "-1"], ["jobs", "--limit=5"],
    ["jobs", "--json", "--json"], ["jobs", "--status"], ["jobs", "extra"], ["show"], ["show", "a", "b"],
    ["show", "--", "a"], ["logs", "-x", "a"], ["cluster", "--dir", ""], ["submit", "x.ipynb", "--timeout", "3"],
    ["submit", "x.ipynb", "--name", "a", "--name", "b"], ["submit", "x.ipynb", "-p", "-a=1"], ["submit", "--help"],
    ["submit", "x.ipynb", "--priority", "-1"], ["bogus"], [],
])
def test_anything_else_goes_through_typer(argv):
    from nbrunner.client.cli.fast import plain_call

    assert plain_call(argv) is None
