"""One user cannot stall the cluster: corrupt or unplaceable records are quarantined, a job's
timeout is its wall time, and papermill's options and errors reach the job record."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import nbformat
import pytest

from nbrunner.control import submit
from nbrunner.core.errors import Conflict
from nbrunner.core.models import JobRecord
from nbrunner.control.quarantine import quarantine_key
from nbrunner.core.keys import ACTIVE, EVENTS, JOBS, job_key

from support import make_notebook, wait_for

pytestmark = pytest.mark.slow


def plant(store, job_id: str, raw: str) -> None:
    """Write a record straight into Redis, as an older version or a hand edit could have."""
    store.r.set(job_key(job_id), raw)
    store.r.zadd(JOBS, {job_id: time.time()})
    store.r.sadd(ACTIVE, job_id)
    store.r.xadd(EVENTS, {"type": "submitted", "job": job_id})


def test_corrupt_and_unplaceable_records_are_quarantined_and_others_run(cluster, shared_workspace):
    store = cluster.store
    good = json.loads(JobRecord(id="zdeep001", name="deep", notebook="hello.ipynb", owner="mallory").to_json())
    good["status"], good["priority"] = "exploded", {"X": [[[1]]]}  # JSON, but not a record: cannot be read
    plant(store, "zdeep001", json.dumps(good))
    plant(store, "zjunk001", "{not json at all")
    huge = json.loads(JobRecord(id="zhuge001", name="huge", notebook="hello.ipynb").to_json())
    huge["min_gpus"] = huge["max_gpus"] = 2**63  # every allocator pass would refuse it
    plant(store, "zhuge001", json.dumps(huge))
    endless = JobRecord(id="zlong001", name="long", notebook="hello.ipynb", timeout=1e30)
    plant(store, "zlong001", endless.to_json())
    service_dir = cluster.settings.job_dir("zlong001")
    service_dir.mkdir(parents=True, exist_ok=True)
    (service_dir / "input.ipynb").write_bytes((shared_workspace / "hello.ipynb").read_bytes())

    listed = {r.id: r for r in store.all()}  # a listing never fails
    for jid in ("zdeep001", "zjunk001"):
        assert listed[jid].status == "failed" and listed[jid].error.startswith("quarantined: the job record could not")
        assert "\n" not in listed[jid].error
        assert store.r.get(quarantine_key(jid))  # the original kept for an administrator
    assert listed["zdeep001"].owner == "mallory" and listed["zdeep001"].name == "deep"
    with pytest.raises(Conflict, match="already failed"):  # cancel answers like for any ended job
        submit.cancel(store, "zdeep001")

    job = cluster.submit("hello.ipynb", {"NAME": "after"})  # the cluster still schedules everyone else
    assert job.wait(120).status == "completed", job.error
    huge_rec = wait_for(lambda: store.get("zhuge001").finished and store.get("zhuge001"), 30, what="quarantine")
    assert huge_rec.status == "failed" and huge_rec.error.startswith("quarantined: the job could not be placed")
    assert "min_gpus" in huge_rec.error
    long_rec = wait_for(lambda: store.get("zlong001").finished and store.get("zlong001"), 120, what="the long job")
    assert long_rec.status == "completed" and long_rec.attempt == 1, long_rec.error
    assert store.r.sismember(ACTIVE, "zdeep001") == 0 or wait_for(
        lambda: not store.r.sismember(ACTIVE, "zdeep001"), 20, what="the scheduler to drop it")


def test_timeout_is_the_wall_time_of_the_whole_job(cluster, shared_workspace):
    make_notebook(shared_workspace / "three.ipynb", "import time\ntime.sleep(3)\nprint('one')",
                  "time.sleep(3)\nprint('two')", "time.sleep(3)\nprint('three')")
    job = cluster.submit("three.ipynb", timeout=5)
    rec = job.wait(120).record
    assert rec.status == "failed" and rec.error == "timeout: the job ran longer than its 5 s limit"
    took = rec.duration()
    assert 4.5 <= took <= 9, took  # not 3 cells x 3 s
    nb = nbformat.read(str(job.dir / "output.ipynb"), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    text = json.dumps([c.get("outputs", []) for c in code])
    assert "one" in text and "three" not in text  # output.ipynb shows where it stopped
    assert nb.metadata["nbrunner"]["error"] == rec.error


def test_a_failed_magic_records_its_real_error(cluster, shared_workspace):
    make_notebook(shared_workspace / "magic.ipynb", "print('before')", "%foo 3", "print('after')")
    rec = cluster.submit("magic.ipynb").wait(120).record
    assert rec.status == "failed"
    assert rec.error.startswith("UsageError: Line magic function `%foo` not found"), rec.error


def test_language_cwd_and_report_mode_like_papermill(cluster, shared_workspace):
    (shared_workspace / "data").mkdir(exist_ok=True)
    (shared_workspace / "data" / "input.txt").write_text("from the data directory")
    make_notebook(shared_workspace / "where.ipynb", "print(open('input.txt').read(), GREETING)",
                  parameters="GREETING = 'x'")
    job = cluster.submit("where.ipynb", {"GREETING": "hi"}, language="python", cwd="data", report_mode=True)
    rec = job.wait(120).record
    assert rec.status == "completed", rec.error
    assert "from the data directory hi" in job.logs()
    nb = nbformat.read(str(job.dir / "output.ipynb"), as_version=4)
    assert all(c.metadata.get("jupyter", {}).get("source_hidden") for c in nb.cells if c.cell_type == "code")


def nbrunner_cli(*args: str, cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NBRUNNER_REDIS_URL"}
    return subprocess.run([sys.executable, "-m", "nbrunner", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)


def test_cli_help_without_a_command_is_not_a_crash(shared_workspace):
    for args in ([], ["model"]):
        p = nbrunner_cli(*args, cwd=shared_workspace)
        assert p.returncode == 0 and "Usage" in p.stdout and "Traceback" not in p.stderr, (args, p.stderr)


def test_cli_poison_inputs_get_one_line_errors(cluster, shared_workspace):
    files = shared_workspace / "cli-poison"
    files.mkdir(exist_ok=True)
    (files / "binary.yaml").write_bytes(bytes(range(256)))
    (files / "utf16.yaml").write_text("A: 1\n", encoding="utf-16")
    (files / "huge.yaml").write_text("A: " + "9" * 5000 + "\n")
    (files / "deep.yaml").write_text("A: " + "[" * 5000 + "\n")
    (files / "bomb.yaml").write_text('a: &a ["x","x"]\nb: [*a,*a]\n')
    cases = [
        (["-f", str(files / "binary.yaml")], 1, "not UTF-8"),
        (["-f", str(files / "utf16.yaml")], 1, "not UTF-8"),
        (["-f", str(files / "huge.yaml")], 1, "more than 4300 digits"),
        (["-f", str(files / "deep.yaml")], 1, "nested more than 64 levels"),
        (["-f", str(files / "bomb.yaml")], 1, "aliases"),
        (["-p", "A", "--timeout", "5"], 2, "-p A needs a value before --timeout"),
        (["--timeout", "1e30"], 1, "at most 2592000 s"),
        (["--min-gpus", str(2**63), "--max-gpus", str(2**63)], 1, "at most 2**63-1"),
        (["-p", "class", "1"], 1, "is a Python keyword"),
    ]
    before = len(cluster.jobs())
    for extra, code, words in cases:
        p = nbrunner_cli("submit", "hello.ipynb", *extra, cwd=shared_workspace)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == code and len(lines) == 1 and words in lines[0], (extra, p.returncode, p.stderr)
        assert "unexpected error" not in p.stderr
    long = nbrunner_cli("submit", "n" * 300 + ".ipynb", cwd=shared_workspace)
    assert long.returncode == 1 and "unexpected error" not in long.stderr and len(long.stderr.splitlines()) == 1
    assert len(cluster.jobs()) == before  # nothing was queued
