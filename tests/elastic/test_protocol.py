"""Both ends of the driver <-> learner protocol over one store: the driver's Rendezvous and a
learner's DriverLink (on torch's in-memory HashStore: the same store API as the TCPStore
they use in a run, without a connection)."""
from __future__ import annotations

import time

import pytest
import torch.distributed as dist

from nbrunner.elastic.protocol import DriverLink, GenerationAbandoned, Plan, Rendezvous, abort_key, log_key, post


@pytest.fixture
def store():
    return dist.HashStore()


def test_a_learner_reads_the_plans_the_driver_publishes(store):
    rdv = Rendezvous(store, port=29500)
    link = DriverLink(store, "L2")
    first = Plan(gen=1, members=["L1", "L2"], source="L1", mode="restart", reason="start", threads={"L1": 2, "L2": 2})
    rdv.publish(first)
    assert link.newest_plan() == first and link.checked == 1
    for g in (2, 3):
        rdv.publish(Plan(gen=g, members=["L1"], source="L1", mode="live", prev_world=2, reason="grant"))
    newest = link.newest_plan()                  # plan 2 is skipped: 3 is the newest
    assert newest.gen == 3 and newest.members == ["L1"] and link.checked == 3
    assert link.take_plan(2).gen == 2 and link.checked == 3


def test_publishing_out_of_order_is_refused(store):
    rdv = Rendezvous(store, port=29500)
    with pytest.raises(AssertionError):
        rdv.publish(Plan(gen=2, members=["L1"], source="L1", mode="live"))


def test_the_barrier_passes_once_all_arrived_and_fails_when_abandoned(store):
    rdv = Rendezvous(store, port=29500)
    rdv.publish(Plan(gen=1, members=["L1"], source="L1", mode="restart"))
    DriverLink(store, "L1").barrier(Plan(gen=1, members=["L1"], source="L1", mode="restart"), timeout=5)

    two = Plan(gen=2, members=["L1", "L2"], source="L1", mode="live")
    rdv.publish(two)
    link = DriverLink(store, "L1")
    with pytest.raises(GenerationAbandoned, match="not all learners arrived"):
        link.barrier(two, timeout=0.3)           # L2 never arrives
    rdv.abort(2)
    assert store.check([abort_key(2)]) and link.aborted(2)
    with pytest.raises(GenerationAbandoned, match="generation 2 abandoned"):
        link.barrier(two, timeout=5)
    rdv.publish(Plan(gen=3, members=["L1", "L2"], source="L1", mode="live"))
    with pytest.raises(GenerationAbandoned, match="abandoned"):  # a newer plan supersedes it
        DriverLink(store, "L1").barrier(Plan(gen=2, members=["L1", "L2"], source="L1", mode="live"), timeout=5)


def test_learner_messages_reach_the_driver_once_in_order(store):
    rdv = Rendezvous(store, port=29500)
    link = DriverLink(store, "L1")
    link.ready(n_train=100, n_test=10, steps_per_epoch=3)
    link.report_fail(4, step=17, snap_step=15, t_last_step=12.5, err="x" * 3000)
    post(store, [{"type": "step", "step": 18}, {"type": "step", "step": 19}])
    link.busy("checkpoint")
    recs = list(rdv.records())
    assert [r["type"] for r in recs] == ["ready", "fail", "step", "step", "busy"]
    assert recs[0]["lid"] == "L1" and recs[0]["steps_per_epoch"] == 3 and recs[0]["n_train"] == 100
    fail = recs[1]
    assert (fail["gen"], fail["step"], fail["snap_step"], fail["t_last_step"]) == (4, 17, 15, 12.5)
    assert len(fail["error"]) == 2000            # the tail of a long error
    assert link.failed
    link.joined()
    assert not link.failed
    assert list(rdv.records()) == []             # read once: the keys are gone
    assert not store.check([log_key(1)])


def test_a_message_whose_writer_died_is_skipped_after_a_while(store):
    rdv = Rendezvous(store, port=29500)
    store.add("log/n", 1)                        # a writer that died between its two store calls
    post(store, [{"type": "step", "step": 1}])
    assert list(rdv.records()) == []             # the gap may still be filled
    time.sleep(2.1)
    assert list(rdv.records()) == [{"type": "step", "step": 1}]


def test_a_standby_learner_gets_the_slot_the_driver_assigns(store):
    rdv = Rendezvous(store, port=29500)
    rdv.assign("L3", {"host": "h", "index": 1, "gpu": None})
    assert DriverLink(store, "L3").wait_assignment() == {"host": "h", "index": 1, "gpu": None}
    (standby,) = list(rdv.records())
    assert standby["type"] == "standby" and standby["lid"] == "L3"


def test_the_final_state_and_closing(store):
    rdv = Rendezvous(store, port=29500)
    DriverLink(store, "L1").set_final(b"state")
    assert rdv.final_state() == b"state"
    rdv.close()
    assert rdv.store is None
