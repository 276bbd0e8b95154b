"""A killed learner is replaced on its own slot at once (real cluster, real gloo learners).

The trainer's driver is the learner's parent: it sees the exit within its poll and recovers
without it.  The slot of the dead learner stays the job's: were it released, the scheduler
could hand it to the job waiting in the queue and leave the training without any slot until
that job ends (the soak's learner faults took up to 216 s so), and at best the training waits
for a scheduler pass to be granted a slot again."""
from __future__ import annotations

import os
import time

import psutil
import pytest

import nbrunner
from nbrunner.control import grants

from support import elastic_digits_notebook, make_notebook, no_slot_ever_held_twice, short_tmpdir, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# a learner's cold start (torch, the payload, the datasets) takes 10-15 s on a quiet 2-core
# machine and ~50 s when it runs a soak beside (load 13): the bound holds either; what tells the
# old code from the new is the slot log (a release, then a wait for a scheduler pass, or worse)
RECOVERY_BOUND_S = 90.0


@pytest.fixture(scope="module")
def cluster():
    ws = short_tmpdir()
    make_notebook(ws / "train.ipynb", elastic_digits_notebook(max_gpus=1, timeout=10), parameters="EPOCHS = 10")
    make_notebook(ws / "rival.ipynb", "import time\ntime.sleep(600)")
    saved = {k: os.environ.pop(k) for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE") if k in os.environ}
    c = nbrunner.setup_cluster(gpus=1, workers=2, workspace=ws)
    yield c
    c.shutdown()
    os.environ.update(saved)


def progress(job) -> float:
    return job.refresh().record.progress or 0.0


def learners_of(job_id: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if "nbrunner.elastic.learner" in " ".join(p.info["cmdline"] or []) and \
                    p.environ().get("NBRUNNER_JOB_ID") == job_id:
                out.append(p)
        except psutil.Error:
            continue
    return out


def test_killed_learner_is_replaced_on_its_slot(cluster):
    # long enough that a quiet machine is still training when the learner is killed
    job = cluster.submit("train.ipynb", {"EPOCHS": 100}, min_gpus=1, max_gpus=1)
    wait_for(lambda: job.refresh().record.status == "running" and progress(job) > 0.02, 180, 0.2, "training to start")
    rival = cluster.submit("rival.ipynb", min_gpus=1, max_gpus=1)  # waits for the only slot
    wait_for(lambda: rival.refresh().record.status == "queued", 30, 0.1, "the rival to queue")
    wait_for(lambda: len(learners_of(job.id)) == 1, 30, 0.1, "the job's one learner")
    victims = learners_of(job.id)
    assert len(victims) == 1 and job.refresh().record.status == "running"
    before = progress(job)
    held = grants.held_by(cluster.store.r, job.id)
    assert len(held) == 1
    since = cluster.store.r.xrevrange(grants.SLOTLOG, count=1)[0][0]
    t = time.monotonic()
    victims[0].kill()
    # training again: a step by the new learner (from the last checkpoint or the start, so the
    # progress may be below what it was)
    wait_for(lambda: progress(job) != before and any(p.pid != victims[0].pid for p in learners_of(job.id)),
             RECOVERY_BOUND_S, 0.1, "training to go on with a new learner")
    took = time.monotonic() - t
    print(f"\nlearner killed: training again after {took:.1f} s")
    # the slot stayed the training's all along: never released, so never offered to the rival
    moves = [e for _id, e in cluster.store.r.xrange(grants.SLOTLOG, min=f"({since}")]
    assert moves == [], f"the dead learner's slot went back to the cluster: {moves}"
    assert grants.held_by(cluster.store.r, job.id) == held
    assert rival.refresh().record.status == "queued"
    assert job.refresh().record.status == "running"
    rival.cancel()
    job.wait(600)
    assert job.record.status == "completed", job.record.error
    assert len(job.record.history) and job.record.history[-1]["status"] == "completed"
    no_slot_ever_held_twice(cluster.store.r)
