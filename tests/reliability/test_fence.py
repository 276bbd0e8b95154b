"""The attempt fence on a real cluster: a worker cut off (frozen with SIGSTOP: it, its work horse
and its kernel stop talking, as behind a dead link) loses its job to the other worker; when the
old attempt's kernel and work horse run again, their writes (metrics, slot releases, the saves of
``output.ipynb``) change nothing, and the job ends once, by its new attempt."""
from __future__ import annotations

import psutil
import pytest

from nbrunner.control import grants
from nbrunner.core.config import OUTPUT_AUTOSAVE_S

from support import make_notebook, own_cluster, short_tmpdir, wait_for

pytestmark = pytest.mark.slow

# attempt 1 beats for minutes (it is the one cut off); later attempts end soon
BEAT = """import os, time, pathlib
import nbrunner
attempt = int(os.environ["NBRUNNER_ATTEMPT"])
for i in range(3000 if attempt == 1 else 40):
    nbrunner.record(f"from_attempt_{attempt}", i)
    print(f"attempt {attempt} beat {i}", flush=True)
    with open(pathlib.Path(TRIES), "a") as f:
        f.write(f"{attempt} {i}\\n")
    time.sleep(0.1)
"""


def _tries(path, attempt: int) -> int:
    try:
        return sum(1 for line in path.read_text().splitlines() if line.split()[0] == str(attempt))
    except OSError:
        return 0


def test_a_cut_off_attempt_cannot_write_to_the_job_run_again_elsewhere(monkeypatch):
    monkeypatch.setenv("NBRUNNER_WORKER_TTL", "4")
    ws = short_tmpdir()
    tries = ws / "tries.log"
    make_notebook(ws / "beat.ipynb", BEAT, parameters=f"TRIES = {str(tries)!r}")
    with own_cluster(ws, gpus=2, workers=2) as cluster:
        cluster.wait_ready(2, timeout=90)
        job = cluster.submit("beat.ipynb", min_gpus=1, max_gpus=1)
        wait_for(lambda: _tries(tries, 1) > 5, 120, 0.1, "attempt 1 to beat")
        first = job.refresh().record
        assert first.attempt == 1 and first.status == "running"
        worker = psutil.Process(int(first.worker.rsplit(".", 1)[1]))
        frozen = [worker, *worker.children(recursive=True)]
        kernel = next(p for p in frozen if "ipykernel" in " ".join(p.cmdline()))
        for p in frozen:  # the cut: nothing of the worker talks any more
            p.suspend()
        try:
            wait_for(lambda: job.refresh().record.attempt == 2 and job.record.status == "running"
                     and _tries(tries, 2) > 3, 120, 0.1, "attempt 2 to run on the other worker")
            assert job.record.worker != first.worker
            held_then = job.record.metrics.get("from_attempt_1")
            for p in frozen[1:]:  # the old attempt's horse (papermill) and kernel talk again, its worker still cut off
                p.resume()
            seen = _tries(tries, 1)
            wait_for(lambda: _tries(tries, 1) > seen + 10, 60, 0.1, "the stale kernel to write again")
            slots = grants.held_by(cluster.store.r, job.id)
            assert slots, "attempt 2 holds its slot"
            assert grants.release(cluster.store.r, job.id, slots, attempt=1) == []  # a stale release: refused
            assert grants.held_by(cluster.store.r, job.id) == slots
            assert job.refresh().record.metrics.get("from_attempt_1") == held_then, "a stale write landed"
            job.wait(180)
            # the stale papermill saves output.ipynb as its kernel prints (every OUTPUT_AUTOSAVE_S):
            # let the stale kernel beat for three of those periods after the job ended
            seen = _tries(tries, 1)
            wait_for(lambda: _tries(tries, 1) > seen + 30 * OUTPUT_AUTOSAVE_S, 240, 0.2, "the stale attempt to go on")
            output = (ws / "runs" / job.id / "output.ipynb").read_text()
            assert "attempt 2 beat 39" in output
            assert "attempt 1 beat" not in output, "the stale attempt overwrote output.ipynb"
        finally:
            for p in frozen:
                try:
                    p.resume()
                except psutil.Error:
                    pass
        rec = job.record
        assert rec.status == "completed", rec.error
        assert rec.attempt == 2 and rec.metrics.get("from_attempt_1") == held_then
        assert [h["status"] for h in rec.history].count("completed") == 1
        assert rec.history[-1]["status"] == "completed"
