"""Generations: which learners run, on which slots, and the plans that resize them in place.

The driver starts one learner per granted slot (and standby learners where the launcher
allows), and publishes a plan for every generation: its members and the learner whose state
the others take.  A shrink is published first and the slot confirmed released once its
learner left; a grow waits for the new learners to be ready, so the running ones never stop
for a start.
"""
from __future__ import annotations

import pickle
import sys
import time
from dataclasses import asdict
from typing import Optional

from ..control import runtime
from .history import _tail
from .launcher import LearnerSpec
from .protocol import REQ, Plan, plan_key
from .slots import Slot

# A learner left out of the generation that now runs exits by itself within milliseconds;
# one that has not after this long (stuck in a destructor, a lost message...) is stopped,
# so that its slot is confirmed released promptly.  A learner finishing a checkpoint write
# says so ("busy") and gets up to the collective ``timeout`` instead.
LEAVE_GRACE_S = 2.0
KILL_AFTER_S = 3.0   # after terminate(), before kill()


class LearnerState:
    """What the driver knows of one learner process."""

    def __init__(self, lid: str, slot: Optional[Slot], handle, log_path):
        self.lid, self.slot, self.handle, self.log_path = lid, slot, handle, log_path
        self.status = "starting"   # starting | ready | member | exited
        self.t_spawn = time.monotonic()
        self.t_ready: Optional[float] = None
        self.failed_gen = -1
        self.snap_step: Optional[int] = None
        # leaving: left out of a planned generation (it exits once that generation runs),
        # or told to stop; t_left: when the driver saw it out of every generation in play;
        # t_stop: when the driver terminated it (its exit is then never a failure)
        self.leaving = False
        self.t_left: Optional[float] = None
        self.t_stop: Optional[float] = None
        self.killed = False
        self.busy = False
        self.rc: Optional[int] = None
        self.info: dict = {}

    @property
    def alive(self) -> bool:
        return self.status != "exited"


class Generations:
    """Starting, assigning and stopping learners, and publishing generation plans (a part of
    the training run)."""

    def _on_gen(self, r: dict) -> None:
        g = int(r["gen"])
        if g != self.inflight:
            return
        plan = self.plans[g]
        self.inflight = None
        self.active_gen = g
        self.world = plan.world
        self._rate.clear()  # samples/s is measured per learner count (the scheduler's throughput model)
        if plan.reason != "start":
            info = {"step": int(r["step"]), "from": int(r["from"]), "to": int(r["to"]),
                    "pause_s": r["pause_s"], "reason": plan.reason}
            if plan.mode == "snapshot":
                info["replayed_steps"] = max(0, self.step_high - int(r["step"]))
            self.history.rescales.append(info)
            p = f"{r['pause_s']:.3f} s" if r["pause_s"] is not None else "n/a"
            self.say(f"  learners {info['from']} -> {info['to']} at step {info['step']} ({plan.reason}, pause {p}"
                     + (f", {info['replayed_steps']} steps recomputed from snapshot" if "replayed_steps" in info else "")
                     + ")")
            for cb in self.t.callbacks:
                cb.on_rescale(info)
        self.step = int(r["step"])
        total = self._total()
        pause = {"resize_pause_s": r["pause_s"]} if plan.reason != "start" and r["pause_s"] is not None else {}
        runtime.report(progress=(self.step / total) if total else None, metrics={"learners": plan.world, **pause},
                       step=self.step)  # the job's record shows the new size at once

    def _spawnable(self) -> bool:
        return any(self.slot_failures.get(s, 0) < self.options["max_slot_failures"] for s in self._granted)

    def _spawn(self, slot: Optional[Slot]) -> LearnerState:
        lid = self._new_lid()
        log_path = self.logs_dir / f"learner-{self.run_tag}-{lid}.log"
        env = {"NBRUNNER_ELASTIC_SYSPATH": self.sys_path,
               "NBRUNNER_ELASTIC_DEVICE": "cuda" if (slot is not None and slot.is_gpu) else "cpu",
               "NBRUNNER_ELASTIC_STORE_TIMEOUT": str(max(30.0, self.options["timeout"]))}
        spec = LearnerSpec(learner_id=lid, slot=slot, master_addr=self.master_addr, master_port=self.port,
                           log_path=log_path, env=env)
        handle = self.launcher.launch(spec)
        L = LearnerState(lid, slot, handle, log_path)
        self.learners[lid] = L
        return L

    def _assign(self, L: LearnerState, slot: Slot) -> None:
        """Bind a standby learner to a granted slot."""
        L.slot = slot
        L.t_spawn = time.monotonic()
        self.store.set(f"assign/{L.lid}", pickle.dumps({"host": slot.host, "index": slot.index,
                                                        "gpu": slot.gpu_index if slot.is_gpu else None}))

    def _want_standby(self) -> int:
        p = self.options["prestart"]
        if self.standby_failures >= 3 or not getattr(self.launcher, "supports_standby", False):
            return 0
        if p is not None:
            return max(0, int(p))
        if self.options["max_gpus"] is None:
            return 0  # no idea whether more slots may come
        return 1 if len(self._granted) < self._cap() else 0

    def _poll_procs(self) -> None:
        exited = []
        involved = self._involved()
        for L in list(self.learners.values()):
            if not L.alive:
                continue
            rc = L.handle.poll()
            if rc is None:
                continue
            prev = L.status
            L.status = "exited"
            L.rc = rc
            if L.slot is None:  # a standby learner
                if rc != 0 and L.t_stop is None:
                    self.standby_failures += 1
                    self.say(f"  standby learner {L.lid} exited with code {rc}" + self._tail_note(L))
                continue
            exited.append(L.slot)
            if rc == 0:
                if not L.leaving:
                    self.finishing = True  # learners only exit 0 when told to leave, or when done
                continue
            if L.t_stop is not None:
                continue  # we stopped it
            if L.leaving and L.lid not in involved:
                continue  # it had left every generation in play: nothing is lost
            self.slot_failures[L.slot] = self.slot_failures.get(L.slot, 0) + 1
            info = {"learner": L.lid, "slot": asdict(L.slot), "exit_code": rc, "step": self.step, "time": time.time(),
                    "status": prev}
            self.history.failures.append(info)
            for cb in self.t.callbacks:
                cb.on_failure(info)
            if prev == "starting":
                self.say(f"  learner {L.lid} exited with code {rc} while starting" + self._tail_note(L))
                continue
            involved = self._involved()
            if L.lid in involved:
                self.say(f"  learner {L.lid} died (exit code {rc}) near step {self.step}: continuing without it")
                self._start_recovery(f"learner {L.lid} died")
        if exited:
            try:
                self.slots.released(exited)
            except Exception as e:  # the source's problem, not a reason to stop training
                print(f"ElasticTrainer: slot source released() failed: {e}", file=sys.stderr)

    def _tail_note(self, L: LearnerState) -> str:
        t = _tail(L.log_path, 15)
        return f"\n{t}" if t and self.verbose > 1 else ""

    def _involved(self) -> set:
        s = set()
        if self.gen and self.gen in self.plans:
            s.update(self.plans[self.gen].members)
        if self.active_gen and self.active_gen in self.plans:
            s.update(self.plans[self.active_gen].members)
        return s

    def _stop(self, L: LearnerState) -> None:
        """Terminate a learner the training no longer needs (never counted as a failure)."""
        L.leaving = True
        if L.t_stop is None and L.alive:
            L.t_stop = time.monotonic()
            L.handle.terminate()

    def _reap_leavers(self) -> None:
        """Learners left out of the generation that now runs exit by themselves; make sure
        they do (their slot is released only once they are gone), and kill the ones that
        ignore terminate()."""
        now = time.monotonic()
        involved: Optional[set] = None
        for L in self.learners.values():
            if not L.alive:
                continue
            if L.t_stop is not None:
                if not L.killed and now - L.t_stop > KILL_AFTER_S:
                    L.killed = True
                    L.handle.kill()
                continue
            if not L.leaving:
                continue
            if involved is None:
                involved = self._involved()
            if L.lid in involved:
                L.t_left = None  # still part of the generation being planned or running
                continue
            if L.t_left is None:
                L.t_left = now
            elif now - L.t_left > (max(LEAVE_GRACE_S, self.options["timeout"]) if L.busy else LEAVE_GRACE_S):
                self._stop(L)

    def _poll_grants(self) -> None:
        if self.final or self.finishing:
            self._granted = []
            for L in self.learners.values():
                if L.alive and L.slot is None:
                    self._stop(L)
            return
        granted = list(self.slots.granted())[: self._cap()]
        self._granted = granted
        self._max_granted = max(self._max_granted, len(granted))
        gset = set(granted)
        for slot in [s for s in self.slot_failures if s not in gset]:
            del self.slot_failures[slot]  # taken back: if it is granted again (a host that returns), start afresh
        revoked = sorted(self._unbound - gset)
        if revoked:  # taken back before any learner ran on them: nothing to wait for
            try:
                self.slots.released(revoked)
            except Exception as e:
                print(f"ElasticTrainer: slot source released() failed: {e}", file=sys.stderr)
        involved = self._involved()
        for L in self.learners.values():
            # a revoked learner outside every generation in play: one that never trained has
            # nothing to finish; one that left its last generation gets a grace (_reap_leavers)
            if L.alive and L.slot is not None and L.slot not in gset and L.lid not in involved and not L.leaving:
                self._stop(L)
        have = {L.slot for L in self.learners.values() if L.alive}
        standby = [L for L in self.learners.values() if L.alive and L.slot is None]
        for slot in granted:
            if slot not in have and self.slot_failures.get(slot, 0) < self.options["max_slot_failures"]:
                if standby:
                    self._assign(standby.pop(0), slot)
                    continue
                try:
                    self._spawn(slot)
                except Exception as e:  # e.g. the slot's host does not answer: like a learner dead at start
                    self.slot_failures[slot] = self.slot_failures.get(slot, 0) + 1
                    self.say(f"  could not start a learner on {slot.host}/{slot.index}: {e}")
        self._unbound = gset - {L.slot for L in self.learners.values() if L.alive}
        want = self._want_standby()
        while len(standby) < want:
            standby.append(self._spawn(None))
        for L in standby[want:]:
            if L.status == "starting":
                self._stop(L)

    def _cpu_share(self, colocated: int) -> int:
        """How many learners of this job share a host's CPUs: a CPU learner uses
        usable_cpus // share intra-op threads.  The share is the job's maximum learner
        count (not the current one), so a resize never changes a learner's thread count
        (oversubscribing a shared host makes every parallel region wait for descheduled
        threads).  A negative value asks for exactly -n threads."""
        if self.options["threads_per_learner"]:
            return -int(self.options["threads_per_learner"])
        share = self.options["max_gpus"] or self._max_granted
        return max(colocated, min(share, self._cap()))

    def _publish(self, members: list[LearnerState], source: LearnerState, mode: str, reason: str, prev_world: int,
                 checkpoint: Optional[str] = None) -> None:
        self.gen += 1
        g = self.gen
        per_host: dict = {}
        for L in members:
            per_host[L.slot.host] = per_host.get(L.slot.host, 0) + 1
        backend = "nccl" if all(L.slot.is_gpu for L in members) else "gloo"
        plan = Plan(gen=g, members=[L.lid for L in members], source=source.lid, mode=mode, backend=backend,
                    threads={L.lid: self._cpu_share(per_host[L.slot.host]) for L in members}, prev_world=prev_world,
                    reason=reason, checkpoint=checkpoint)
        self.plans[g] = plan
        self.store.set(plan_key(g), plan.dumps())
        v = self.store.add(REQ, 1)
        assert v == g, (v, g)
        self.inflight = g
        self.inflight_since = time.monotonic()
        for L in members:
            L.status = "member"

    def _plan(self) -> None:
        if self.final or self.finishing:
            return
        if self.recovering is not None:
            self._recover()
            return
        now = time.monotonic()
        if self.inflight is not None:
            if now - self.inflight_since > self.options["timeout"] + 15:
                self._start_recovery(f"generation {self.inflight} did not start")
            return
        gset = set(self._granted)
        ready = [L for L in self.learners.values() if L.status == "ready" and L.slot in gset]
        starting = [L for L in self.learners.values() if L.status == "starting" and L.slot in gset]
        if self.active_gen == 0:
            if not ready:
                return
            need = max(1, self.options["min_gpus"])
            first_ready = min(L.t_ready for L in ready)
            if starting and not (len(ready) >= need and now - first_ready > max(10.0, self.options["join_wait"])):
                return
            self._publish(ready, ready[0], "restart", "start", 0)
            return
        active = [self.learners[lid] for lid in self.plans[self.active_gen].members]
        leaving = [L for L in active if L.slot not in gset]
        stay = [L for L in active if L.slot in gset]
        join: list[LearnerState] = []
        if ready and (not starting or leaving or now - min(L.t_ready for L in ready) >= self.options["join_wait"]):
            join = ready
        if not leaving and not join:
            return
        if not stay:
            if not join:
                return  # everything was revoked and nothing new is ready: keep training meanwhile
            stay = [leaving.pop(0)]  # it hands its state over, then leaves at the next plan
        members = (stay + join)[: self._cap()]
        for L in leaving:
            L.leaving = True
        self._publish(members, stay[0], "live", "grant", len(active))
