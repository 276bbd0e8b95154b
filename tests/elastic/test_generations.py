"""The driver's parts that decide which learners run: the pool of learner processes, the
generation planner and the recovery, over an in-memory store (torch's HashStore) and a
launcher whose learners are stand-ins (no process is started: each handle is told when its
learner exits)."""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
import torch.distributed as dist

from nbrunner.elastic.generations import GenerationPlanner
from nbrunner.elastic.options import TrainOptions
from nbrunner.core.config import LEARNER_KILL_AFTER_S as KILL_AFTER_S, LEARNER_LEAVE_GRACE_S as LEAVE_GRACE_S
from nbrunner.elastic.pool import LearnerPool
from nbrunner.elastic.protocol import DriverLink, Rendezvous, abort_key
from nbrunner.elastic.recovery import Recovery
from nbrunner.elastic.slots import ScriptedSlots


class StandIn:
    """A learner's handle: running until it is stopped or the test ends it with ``exit``."""

    def __init__(self, pid: int, obeys: bool = True):
        self.pid, self.obeys = pid, obeys
        self.rc = None
        self.signals: list[str] = []

    def exit(self, rc: int) -> None:
        self.rc = rc

    def poll(self):
        return self.rc

    def terminate(self):
        self.signals.append("term")
        if self.obeys and self.rc is None:
            self.rc = -15

    def kill(self):
        self.signals.append("kill")
        if self.rc is None:
            self.rc = -9

    def wait(self, timeout=None):
        return self.rc


class StandInLauncher:
    master_addr = "127.0.0.1"

    def __init__(self, standby: bool = False, fails_on: tuple = (), obeys: bool = True):
        self.supports_standby, self.fails_on, self.obeys = standby, fails_on, obeys
        self.specs: list = []
        self.handles: dict = {}

    def launch(self, spec):
        if spec.slot is not None and spec.slot.index in self.fails_on:
            raise RuntimeError("the slot's host does not answer")
        self.specs.append(spec)
        self.handles[spec.learner_id] = StandIn(1000 + len(self.specs), self.obeys)
        return self.handles[spec.learner_id]


class ReleasingSlots(ScriptedSlots):
    def __init__(self, script):
        super().__init__(script, host="h")
        self.releases: list = []

    def released(self, slots):
        self.releases.append(sorted(s.index for s in slots))
        super().released(slots)


def driver(tmp_path, script=((0, 2),), launcher=None, **kw):
    options = TrainOptions(verbose=0, **{"max_gpus": 2, **kw})
    store = dist.HashStore()
    rdv = Rendezvous(store, port=29500)
    said: list = []
    launcher = launcher or StandInLauncher()
    slots = ReleasingSlots(list(script))
    pool = LearnerPool(options, slots, launcher, rdv, "127.0.0.1", tmp_path, "t", said.append)
    planner = GenerationPlanner(options, rdv, pool)
    recovery = Recovery(options, rdv, planner, pool, None, said.append)
    return SimpleNamespace(options=options, store=store, slots=slots, launcher=launcher, pool=pool, planner=planner,
                           recovery=recovery, said=said)


def ready(d, *lids):
    for lid in lids:
        d.pool.on_ready({"lid": lid, "steps_per_epoch": 10, "n_train": 100})


def started(d, tmp_path):
    """Two learners running generation 1."""
    d.pool.poll_grants(d.planner.involved())
    ready(d, "L1", "L2")
    d.planner.plan(time.monotonic())
    assert d.planner.started(1) is not None
    return d


def test_a_learner_is_started_per_granted_slot_and_the_first_generation_waits_for_them(tmp_path):
    d = driver(tmp_path)
    d.pool.poll_grants(set())
    assert [(s.learner_id, s.slot.index, s.env["NBRUNNER_ELASTIC_DEVICE"]) for s in d.launcher.specs] == [
        ("L1", 0, "cpu"), ("L2", 1, "cpu")]
    assert d.launcher.specs[0].master_port == 29500 and d.launcher.specs[0].log_path == tmp_path / "learner-t-L1.log"
    now = time.monotonic()
    ready(d, "L1")
    d.planner.plan(now)
    assert d.planner.gen == 0                    # L2 is still starting
    ready(d, "L2")
    d.planner.plan(now)
    plan = DriverLink(d.store, "L2").newest_plan()
    assert (plan.gen, plan.members, plan.source, plan.mode, plan.reason) == (1, ["L1", "L2"], "L1", "restart", "start")
    assert plan.threads == {"L1": 2, "L2": 2} and plan.backend == "gloo"
    assert d.planner.inflight == 1 and d.pool.get("L1").status == "member"
    assert d.planner.started(2) is None and d.planner.started(1) == plan
    assert (d.planner.active_gen, d.planner.inflight) == (1, None)
    assert d.planner.involved() == d.planner.running() == {"L1", "L2"}


def test_the_first_generation_starts_without_a_slow_learner_after_a_while(tmp_path):
    d = driver(tmp_path)
    d.pool.poll_grants(set())
    ready(d, "L1")
    d.planner.plan(time.monotonic() + 10.5)
    assert d.planner.newest().members == ["L1"]


def test_a_slot_taken_back_shrinks_the_group_and_is_released_once_its_learner_left(tmp_path):
    d = started(driver(tmp_path, script=[(0, 2), (5, 1)]), tmp_path)
    d.slots.on_progress(5)
    d.pool.poll_grants(d.planner.involved())
    assert d.launcher.handles["L2"].signals == []  # still a member of the running generation
    d.planner.plan(time.monotonic())
    plan = d.planner.newest()
    assert (plan.gen, plan.members, plan.mode, plan.reason, plan.prev_world) == (2, ["L1"], "live", "grant", 2)
    assert d.pool.get("L2").leaving
    d.planner.started(2)
    d.launcher.handles["L2"].exit(0)             # it left at the switch
    exits = d.pool.poll_exits(d.planner.involved(), step=6)
    assert exits.slots and exits.failures == [] and not exits.finished
    d.pool.release(exits.slots)
    assert d.slots.releases == [[1]]


def test_a_learner_that_does_not_leave_is_stopped_then_killed(tmp_path):
    d = started(driver(tmp_path, script=[(0, 2), (5, 1)], launcher=StandInLauncher(obeys=False)), tmp_path)
    d.slots.on_progress(5)
    d.pool.poll_grants(d.planner.involved())
    d.planner.plan(time.monotonic())
    d.planner.started(2)
    L2 = d.pool.get("L2")
    d.pool.reap_leavers(d.planner.involved())
    assert L2.t_left is not None and d.launcher.handles["L2"].signals == []
    L2.t_left -= LEAVE_GRACE_S + 0.1             # as if it had had its grace
    d.pool.reap_leavers(d.planner.involved())
    assert d.launcher.handles["L2"].signals == ["term"]
    L2.t_stop -= KILL_AFTER_S + 0.1
    d.pool.reap_leavers(d.planner.involved())
    assert d.launcher.handles["L2"].signals == ["term", "kill"]
    exits = d.pool.poll_exits(d.planner.involved(), step=9)
    assert exits.failures == []                  # stopped by the driver: not a failure


def test_a_learner_that_died_is_recovered_from_the_newest_snapshot(tmp_path):
    d = driver(tmp_path, script=[(0, 3)], max_gpus=3)
    d.pool.poll_grants(set())
    ready(d, "L1", "L2", "L3")
    d.planner.plan(time.monotonic())
    d.planner.started(1)
    d.launcher.handles["L2"].exit(-9)
    exits = d.pool.poll_exits(d.planner.involved(), step=40)
    (L, info), = exits.failures
    assert L.lid == "L2" and info["exit_code"] == -9 and info["step"] == 40 and info["status"] == "member"
    assert info["slot"] == {"host": "h", "index": 1, "device": None}
    assert d.pool.slot_failures == {L.slot: 1}
    d.recovery.start("learner L2 died")
    assert d.recovery.pending and d.store.check([abort_key(1)])
    d.recovery.advance(have_checkpoints=False)
    assert d.planner.gen == 1                    # the survivors have not reported their failure yet
    d.pool.on_fail("L1", 1, snap_step=30)
    d.pool.on_fail("L3", 1, snap_step=35)
    d.recovery.advance(have_checkpoints=False)
    plan = d.planner.newest()
    assert (plan.gen, plan.members, plan.source, plan.mode, plan.reason, plan.prev_world) == (
        2, ["L3", "L1"], "L3", "snapshot", "failure", 3)
    assert not d.recovery.pending


def test_without_a_snapshot_the_recovery_restarts_from_the_initial_state(tmp_path):
    d = started(driver(tmp_path), tmp_path)
    d.launcher.handles["L2"].exit(-9)
    d.pool.poll_exits(d.planner.involved(), step=3)
    d.recovery.start("learner L2 died")
    d.pool.on_fail("L1", 1, snap_step=None)
    d.recovery.advance(have_checkpoints=False)
    plan = d.planner.newest()
    assert (plan.members, plan.mode, plan.reason, plan.checkpoint) == (["L1"], "restart", "restart", None)
    assert d.said == ["  no learner kept a snapshot: restarting from the initial state"]


def test_a_learner_that_does_not_report_its_failure_is_killed(tmp_path):
    d = started(driver(tmp_path, timeout=0.0), tmp_path)
    d.recovery.start("generation 1 did not start")
    d.recovery.since -= 5.1                      # as if the wait were over
    d.recovery.advance(have_checkpoints=False)
    assert d.launcher.handles["L1"].signals == ["kill"] and d.launcher.handles["L2"].signals == ["kill"]
    assert d.said == ["  learner L1 did not respond: stopping it", "  learner L2 did not respond: stopping it"]


def test_a_slot_whose_learner_cannot_start_is_tried_max_slot_failures_times(tmp_path):
    d = driver(tmp_path, launcher=StandInLauncher(fails_on=(1,)), max_slot_failures=2)
    for _ in range(4):
        d.pool.poll_grants(set())
    assert [s.learner_id for s in d.launcher.specs] == ["L1"]
    assert len(d.said) == 2 and "could not start a learner on h/1" in d.said[0]
    assert d.pool.spawnable()                    # slot 0 is fine


def test_a_standby_learner_takes_a_newly_granted_slot(tmp_path):
    d = driver(tmp_path, script=[(0, 1), (5, 2)], launcher=StandInLauncher(standby=True))
    d.pool.poll_grants(set())
    assert [(s.learner_id, s.slot) for s in d.launcher.specs][1] == ("L2", None)  # one standby: max_gpus not reached
    d.slots.on_progress(5)
    d.pool.poll_grants(set())
    assert DriverLink(d.store, "L2").wait_assignment() == {"host": "h", "index": 1, "gpu": None}
    assert d.pool.get("L2").slot.index == 1 and len(d.launcher.specs) == 2   # bound, not a new start


@pytest.mark.parametrize("threads_per_learner, expected", [(None, 2), (3, -3)])
def test_cpu_threads_share(tmp_path, threads_per_learner, expected):
    d = started(driver(tmp_path, threads_per_learner=threads_per_learner), tmp_path)
    assert set(d.planner.newest().threads.values()) == {expected}
