"""A job's kind (its owner's runs of its notebook with one training set-up) lends the job the
throughput earlier runs measured: the scheduler keeps each kind's points in Redis and the goodput
policy sizes a job that has measured one size from the sizes its kind ran."""
from __future__ import annotations

import msgspec
import pytest

import nbrunner
from nbrunner.control.kinds import KIND_TTL_S, KindLedger, kind_key
from nbrunner.core.kinds import kind_of

from support import GRANT_FOLLOWER, make_notebook, no_slot_ever_held_twice, wait_for

from .test_scheduler import gpus

pytestmark = pytest.mark.slow

# Follows its grants like an elastic job and reports samples/s (BASE + SLOPE * learners) with its
# trainer's set-up: at the sizes listed in upfront.json first (if there is one), then at every size
# it is granted.
KIND_REPORTER = GRANT_FOLLOWER.replace("client.declare(MIN, MAX)\n", """client.declare(MIN, MAX)
import json
from nbrunner.control import runtime
def report(n):
    runtime.report(metrics={"samples_per_s": BASE + SLOPE * n, "learners": n, "setup": SETUP})
upfront = pathlib.Path(UPFRONT)
for n in json.loads(upfront.read_text()) if upfront.exists() else []:
    report(n)
""") + """    if slots:
        report(len(slots))
"""
PARAMS = "MIN = 1\nMAX = 4\nSTOP = 'stop'\nBASE = 0.0\nSLOPE = 100.0\nSETUP = 'scales'\nUPFRONT = 'none'"


def test_a_run_of_a_known_kind_is_sized_from_the_points_its_kind_measured(workspace):
    make_notebook(workspace / "flat.ipynb", KIND_REPORTER, parameters=PARAMS)
    make_notebook(workspace / "scales.ipynb", KIND_REPORTER, parameters=PARAMS)
    # no faster on more learners; the same parameters for both runs of it (one kind)
    flat = {"BASE": 100.0, "SLOPE": 0.0, "SETUP": "flat-v1", "STOP": "stop-flat", "UPFRONT": "upfront.json"}
    with nbrunner.setup_cluster(gpus=4, workers=2, workspace=workspace, policy="goodput") as cluster:
        r = cluster.store.r
        (workspace / "upfront.json").write_text("[1, 2, 3, 4]")
        first = cluster.submit("flat.ipynb", flat, min_gpus=1, max_gpus=4)
        key = kind_key(kind_of(first.record.owner, "flat.ipynb", first.record.parameters, "flat-v1"))
        wait_for(lambda: len(r.hgetall(key)) == 4, 60, what="the scheduler to keep the flat kind's 4 points")
        assert {k: float(v) for k, v in r.hgetall(key).items()} == {"1": 100.0, "2": 100.0, "3": 100.0, "4": 100.0}
        assert 0 < r.ttl(key) <= KIND_TTL_S
        (workspace / "stop-flat").touch()
        assert first.wait(60).record.status == "completed", first.record.error
        (workspace / "stop-flat").unlink()
        (workspace / "upfront.json").unlink()

        # 150, 200, 250, 300 samples/s on 1 to 4 learners
        (workspace / "upfront-s.json").write_text("[1, 2]")
        scaling = cluster.submit("scales.ipynb", {"STOP": "stop-s", "BASE": 100.0, "SLOPE": 50.0,
                                                  "UPFRONT": "upfront-s.json"}, min_gpus=1, max_gpus=4)
        wait_for(lambda: gpus(scaling) == 4 and len(scaling.record.throughput) >= 2, 60,
                 what="the scaling job to hold all 4 slots, measured")
        again = cluster.submit("flat.ipynb", flat, min_gpus=1, max_gpus=4)
        # it measures only the size it is given; its kind says more learners add nothing, so the
        # scaling job gets them back (measured at that one size alone, modelled as scaling linearly
        # from there, it would keep its fair 2)
        wait_for(lambda: gpus(again) == 1 and gpus(scaling) == 3 and again.refresh().record.throughput, 90,
                 what="1 for the flat kind's new run, 3 for the scaling job")
        assert set(again.record.throughput) <= {"1", "2"} and again.record.setup == "flat-v1"
        assert "setup" not in again.record.metrics

        # a scheduler that takes over reads the kind back; another owner's run of that notebook, a run
        # with other parameters, or a run that has measured nothing yet, is lent nothing
        ledger = KindLedger(r)
        mine = ledger.throughputs([again.record])[again.id]
        assert mine == {"1": 100.0, "2": 100.0, "3": 100.0, "4": 100.0, **again.record.throughput}
        other = msgspec.structs.replace(again.record, id="other", owner="someone-else")
        tuned = msgspec.structs.replace(again.record, id="tuned", parameters={**flat, "BASE": 90.0})
        fresh = msgspec.structs.replace(again.record, id="fresh", throughput={})
        own = again.record.throughput
        assert KindLedger(r).throughputs([other, tuned, fresh]) == {"other": own, "tuned": own}
        for name, job in (("stop-s", scaling), ("stop-flat", again)):
            (workspace / name).touch()
            assert job.wait(60).record.status == "completed", job.record.error
        no_slot_ever_held_twice(r)


def test_a_kinds_stored_points_that_are_not_throughput_are_ignored(cluster):
    r = cluster.store.r
    rec = msgspec.structs.replace(cluster.submit("hello.ipynb").record, setup="s1", throughput={"2": 50.0})
    key = kind_key(kind_of(rec.owner, rec.notebook, rec.parameters, "s1"))
    r.hset(key, mapping={"1": "40.5", "x": "1", "3": "nan", "4": "-2", "0": "9"})
    ledger = KindLedger(r)
    assert ledger.throughputs([rec]) == {rec.id: {"1": 40.5, "2": 50.0}}
    assert r.hget(key, "2") == "50.0"  # its own new point is added to its kind
    r.delete(key)
    assert ledger.throughputs([rec]) == {rec.id: {"1": 40.5, "2": 50.0}}  # kept while a job of the kind is live
