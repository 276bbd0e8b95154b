"""The goodput policy in the service serves the least served first: attained service from GPU timelines."""
from __future__ import annotations

import time

import pytest

import nbrunner
from nbrunner.control.attained import AttainedLedger
from nbrunner.control.scheduler import Scheduler
from nbrunner.core.goodput import HOLD_WINDOW_S
from nbrunner.core.models import parse_time

from support import GRANT_FOLLOWER, make_notebook, no_slot_ever_held_twice, wait_for

from .test_scheduler import gpus

pytestmark = pytest.mark.slow


def test_a_newcomer_is_served_before_a_job_past_the_first_queue(workspace, monkeypatch):
    monkeypatch.setenv("NBRUNNER_GOODPUT_QUEUE_S", "6")  # the scheduler's first queue: 6 GPU-seconds
    make_notebook(workspace / "follow.ipynb", GRANT_FOLLOWER, parameters="MIN = 1\nMAX = 3\nSTOP = 'stop'")
    with nbrunner.setup_cluster(gpus=3, workers=2, workspace=workspace, policy="goodput") as cluster:
        a = cluster.submit("follow.ipynb", {"STOP": "stop-a"}, min_gpus=1, max_gpus=3)
        wait_for(lambda: gpus(a) == 3, 60, what="A to hold all 3 slots")
        held_since = time.time()
        ledger = AttainedLedger(cluster.store.r)
        wait_for(lambda: ledger.of([a.refresh().record])[a.id] > 9.0, 30, what="A to receive 9 GPU-seconds")
        served = ledger.of([a.record])[a.id]
        assert served <= 3 * (time.time() - held_since) + 3.0  # 3 GPUs since it got them (and the way there)
        b = cluster.submit("follow.ipynb", {"STOP": "stop-b"}, min_gpus=1, max_gpus=3)
        # fairshare would keep 2 of 3 for A (the earlier job); goodput serves B, which received less
        wait_for(lambda: gpus(b) == 2 and gpus(a) == 1, 60, what="B 2, A 1")
        assert ledger.of([a.refresh().record, b.refresh().record])[a.id] > served
        # the scheduler's other timeline measure: A was resized (3 -> 1), B not; each growth weighed over
        # how long the job's allocation is expected to last (2 arrivals in the hour: at most 1800 s)
        assert ledger.resizes(a.id) >= 1 and ledger.resizes(b.id) == 0
        scheduler, now = Scheduler(cluster.settings), time.time()
        scheduler.attained.of([a.record, b.record], now)
        holds = scheduler.holds([a.record, b.record], now)
        age_a = now - parse_time(a.record.created_at).timestamp()
        assert holds[a.id] == pytest.approx(age_a / (scheduler.attained.resizes(a.id) + 1))
        assert 0 < holds[a.id] <= age_a / 2 and 0 < holds[b.id] <= HOLD_WINDOW_S / 2
        (workspace / "stop-a").touch()
        (workspace / "stop-b").touch()
        for j in (a, b):
            assert j.wait(60).record.status == "completed", j.record.error
        no_slot_ever_held_twice(cluster.store.r)
