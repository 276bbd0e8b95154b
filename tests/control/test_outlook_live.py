"""Why a job waits and when it should start and end, on a real cluster (Redis, scheduler, rq workers, kernels)."""
from __future__ import annotations

import pytest

import nbrunner
from nbrunner.core.keys import EVENTS
from nbrunner.core.models import parse_time

from support import make_notebook, wait_for

SLEEPER = "import time\ntime.sleep(SECONDS)"


def seconds(iso: str) -> float:
    return parse_time(iso).timestamp()


@pytest.mark.slow
def test_a_job_behind_runs_of_a_known_notebook_knows_why_it_waits_and_when_it_starts_and_ends(workspace):
    make_notebook(workspace / "nap.ipynb", SLEEPER, parameters="SECONDS = 6")
    with nbrunner.setup_cluster(gpus=1, workers=1, workspace=workspace) as cluster:
        first = cluster.submit("nap.ipynb", max_gpus=1)
        first.wait(120)
        assert first.record.status == "completed", first.record.error
        a = cluster.submit("nap.ipynb", max_gpus=1)
        wait_for(lambda: a.refresh().record.status == "running", 60, what="A running")
        b = cluster.submit("nap.ipynb", max_gpus=1)
        rec = wait_for(lambda: (r := b.refresh().record).expected_start and r.expected_end and r.waiting and r,
                       30, what="B's outlook")
        assert rec.status == "queued"
        assert rec.waiting == {"code": "gpus_busy", "message": "needs 1 GPU; 1 of the 1 go to the 1 job ahead of it"}
        a_end = wait_for(lambda: a.refresh().record.expected_end, 30, what="A's expected end")
        expected_start, expected_end = seconds(rec.expected_start), seconds(rec.expected_end)
        a.wait(120)
        b.wait(120)
        assert a.record.status == b.record.status == "completed"
        assert abs(seconds(a_end) - seconds(a.record.finished_at)) <= 10
        assert abs(expected_start - seconds(b.record.started_at)) <= 10
        assert abs(expected_end - seconds(b.record.finished_at)) <= 10
        # started: no reason any more, and no expected start
        assert b.record.waiting is None and b.record.expected_start is None and b.record.queue_position is None
        # the change was pushed like every change (an entry on the event stream), once per change, not each pass
        kinds = [e[1] for e in cluster.store.r.xrange(EVENTS) if e[1].get("job") == b.id]
        assert 1 <= sum(k.get("type") == "waiting" for k in kinds) <= 6

        # a job no live worker can ever place says so, with the numbers
        big = cluster.submit("nap.ipynb", min_gpus=3, max_gpus=3)
        got = wait_for(lambda: big.refresh().record.waiting, 30, what="the big job's reason")
        assert got == {"code": "capacity", "message": "needs 3 GPUs; the live workers have 1"}
        assert big.record.expected_start is None  # never made up
        big.cancel()
