"""The learner processes of a training run, as the driver sees them: started on granted slots
(or as standbys, bound to a slot later), stopped when the run no longer needs them, reaped
when they do not leave, and their exits sorted into finished, left and failed."""
from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional

from ..core.config import (ELASTIC_DEVICE, ELASTIC_STORE_TIMEOUT, ELASTIC_SYSPATH, LEARNER_KILL_AFTER_S,
                           LEARNER_LEAVE_GRACE_S)
from .launcher import LearnerSpec
from .options import TrainOptions
from .protocol import Rendezvous
from .slots import Slot

# A learner left out of the generation that now runs exits by itself within milliseconds;
# one that has not after this long (stuck in a destructor, a lost message...) is stopped,
# so that its slot is confirmed released promptly.  A learner finishing a checkpoint write
# says so ("busy") and gets up to the collective ``timeout`` instead.


def tail(path, n: int = 40) -> str:
    """The last ``n`` lines of the file ``path`` ("" if it cannot be read)."""
    try:
        with open(path, "rb") as f:
            return b"".join(f.readlines()[-n:]).decode(errors="replace")
    except OSError:
        return ""


class LearnerProcess:
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


@dataclass
class Exits:
    """What :meth:`LearnerPool.poll_exits` found."""

    slots: list = field(default_factory=list)      # slots whose learner exited, not kept: to release
    failures: list = field(default_factory=list)   # (learner, failure info) in order
    finished: bool = False                         # a learner exited 0 unasked: training is over


class LearnerPool:
    """The run's learner processes and the slots they run on: which slots are granted, how
    often a slot's learner failed in a row, and the standby learners kept started."""

    def __init__(self, options: TrainOptions, slots, launcher, rendezvous: Rendezvous, master_addr: str,
                 logs_dir: Path, run_tag: str, say: Callable[[str], None]):
        self.options = options
        self.slots, self.launcher, self.rendezvous = slots, launcher, rendezvous
        self.say = say
        self.learners: dict[str, LearnerProcess] = {}
        self.granted: list[Slot] = []
        self.max_granted = 0
        self.slot_failures: dict[Slot, int] = {}
        self.standby_failures = 0
        self._unbound: set[Slot] = set()  # granted slots with no live learner: released if taken back
        self._next_seq = 0
        # where a learner finds the driver, the modules it imports, and where it logs
        self._master_addr = master_addr
        self._sys_path = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
        self._logs_dir, self._run_tag = logs_dir, run_tag

    # ------------------------------------------------------------ queries
    def get(self, lid: str) -> Optional[LearnerProcess]:
        return self.learners.get(lid)

    def alive(self) -> list[LearnerProcess]:
        return [L for L in self.learners.values() if L.alive]

    def granted_learners(self, status: str) -> list[LearnerProcess]:
        """The learners in ``status`` on a slot granted now."""
        gset = set(self.granted)
        return [L for L in self.learners.values() if L.status == status and L.slot in gset]

    def pids(self) -> dict:
        return {L.lid: getattr(L.handle, "pid", None) for L in list(self.learners.values()) if L.alive}

    def any_bound(self) -> bool:
        """A live learner is bound to a slot."""
        return any(L.alive and L.slot is not None for L in self.learners.values())

    def spawnable(self) -> bool:
        return any(self.slot_failures.get(s, 0) < self.options.max_slot_failures for s in self.granted)

    def changing(self) -> bool:
        """A learner is starting on a slot, or leaving."""
        return any(L.alive and (L.leaving or (L.slot is not None and L.status in ("starting", "ready")))
                   for L in self.learners.values())

    def last_logs(self) -> str:
        """The end of the log of the learner that failed last ("" if none did)."""
        dead = [L for L in self.learners.values() if L.status == "exited" and L.rc not in (0, None)]
        if not dead:
            return ""
        L = dead[-1]
        return f"\n--- last lines of {L.log_path} ---\n{tail(L.log_path)}"

    def tail_note(self, L: LearnerProcess) -> str:
        t = tail(L.log_path, 15)
        return f"\n{t}" if t and self.options.verbose > 1 else ""

    # ------------------------------------------------------------ learners' messages
    def on_ready(self, r: dict) -> None:
        L = self.learners.get(r["lid"])
        if L is not None and L.status == "starting":
            L.status = "ready"
            L.t_ready = time.monotonic()
            L.info = r
            if L.slot is not None:
                self.slot_failures.pop(L.slot, None)  # max_slot_failures counts failures in a row

    def on_fail(self, lid: str, g: int, snap_step: Optional[int]) -> None:
        L = self.learners.get(lid)
        if L is not None and g >= L.failed_gen:
            L.failed_gen = g
            L.snap_step = snap_step

    def on_busy(self, lid: str) -> None:
        L = self.learners.get(lid)
        if L is not None:
            L.busy = True

    # ------------------------------------------------------------ changes
    def spawn(self, slot: Optional[Slot]) -> LearnerProcess:
        self._next_seq += 1
        lid = f"L{self._next_seq}"
        log_path = self._logs_dir / f"learner-{self._run_tag}-{lid}.log"
        env = {ELASTIC_SYSPATH.name: self._sys_path,
               ELASTIC_DEVICE.name: "cuda" if (slot is not None and slot.is_gpu) else "cpu",
               ELASTIC_STORE_TIMEOUT.name: str(max(30.0, self.options.timeout))}
        spec = LearnerSpec(learner_id=lid, slot=slot, master_addr=self._master_addr, master_port=self.rendezvous.port,
                           log_path=log_path, env=env)
        handle = self.launcher.launch(spec)
        L = LearnerProcess(lid, slot, handle, log_path)
        self.learners[lid] = L
        return L

    def assign(self, L: LearnerProcess, slot: Slot) -> None:
        """Bind a standby learner to a granted slot."""
        L.slot = slot
        L.t_spawn = time.monotonic()
        self.rendezvous.assign(L.lid, {"host": slot.host, "index": slot.index,
                                       "gpu": slot.gpu_index if slot.is_gpu else None})

    def enlist(self, members: list[LearnerProcess]) -> None:
        """They are members of the generation just planned."""
        for L in members:
            L.status = "member"

    def leave(self, L: LearnerProcess) -> None:
        """It is left out of the generation just planned (it exits once that one runs)."""
        L.leaving = True

    def stop(self, L: LearnerProcess) -> None:
        """Terminate a learner the training no longer needs (never counted as a failure)."""
        L.leaving = True
        if L.t_stop is None and L.alive:
            L.t_stop = time.monotonic()
            L.handle.terminate()

    def kill(self, L: LearnerProcess) -> None:
        L.handle.kill()

    def release(self, slots: list) -> None:
        """Confirm to the slot source that these slots' learners are gone."""
        if slots:
            try:
                self.slots.released(slots)
            except Exception as e:  # the source's problem, not a reason to stop training
                print(f"ElasticTrainer: slot source released() failed: {e}", file=sys.stderr)

    def poll_exits(self, involved: set, step: int) -> Exits:
        """Note the learners that exited; a standby one that failed is counted here, the
        others are returned (the caller releases their slots, except the slot of a learner
        that failed on a slot still granted: it is kept for the learner that replaces it)."""
        out = Exits()
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
                    self.say(f"  standby learner {L.lid} exited with code {rc}" + self.tail_note(L))
                continue
            if rc == 0 or L.t_stop is not None or (L.leaving and L.lid not in involved):
                out.slots.append(L.slot)
                if rc == 0 and not L.leaving:
                    out.finished = True  # learners only exit 0 when told to leave, or when done
                continue  # exited 0, stopped by us, or out of every generation in play: nothing is lost
            self.slot_failures[L.slot] = self.slot_failures.get(L.slot, 0) + 1
            if L.slot in self.granted and self.slot_failures[L.slot] < self.options.max_slot_failures:
                # the slot stays held for the learner that replaces this one (poll_grants starts
                # it at once): released, it would go back to the scheduler, which may give it to
                # another job and leave this one waiting for a slot; taken back, it is released
                self._unbound.add(L.slot)
            else:
                out.slots.append(L.slot)
            out.failures.append((L, {"learner": L.lid, "slot": asdict(L.slot), "exit_code": rc, "step": step,
                                     "time": time.time(), "status": prev}))
        return out

    def reap_leavers(self, involved: set) -> None:
        """Learners left out of the generation that now runs exit by themselves; make sure
        they do (their slot is released only once they are gone), and kill the ones that
        ignore terminate()."""
        now = time.monotonic()
        for L in self.learners.values():
            if not L.alive:
                continue
            if L.t_stop is not None:
                if not L.killed and now - L.t_stop > LEARNER_KILL_AFTER_S:
                    L.killed = True
                    L.handle.kill()
                continue
            if not L.leaving:
                continue
            if L.lid in involved:
                L.t_left = None  # still part of the generation being planned or running
                continue
            if L.t_left is None:
                L.t_left = now
            elif now - L.t_left > (max(LEARNER_LEAVE_GRACE_S, self.options.timeout) if L.busy else LEARNER_LEAVE_GRACE_S):
                self.stop(L)

    def stop_granting(self) -> None:
        """Training is over: no slot is needed any more, nor any standby learner."""
        self.granted = []
        for L in self.learners.values():
            if L.alive and L.slot is None:
                self.stop(L)

    def poll_grants(self, involved: set) -> None:
        """Follow the slot source: start (or bind a standby) learner on each newly granted slot,
        stop the ones whose slot was taken back, keep the wanted number of standbys."""
        granted = list(self.slots.granted())[: self.options.cap]
        self.granted = granted
        self.max_granted = max(self.max_granted, len(granted))
        gset = set(granted)
        for slot in [s for s in self.slot_failures if s not in gset]:
            del self.slot_failures[slot]  # taken back: if it is granted again (a host that returns), start afresh
        self.release(sorted(self._unbound - gset))  # taken back before any learner ran on them
        for L in self.learners.values():
            # a revoked learner outside every generation in play: one that never trained has
            # nothing to finish; one that left its last generation gets a grace (reap_leavers)
            if L.alive and L.slot is not None and L.slot not in gset and L.lid not in involved and not L.leaving:
                self.stop(L)
        have = {L.slot for L in self.learners.values() if L.alive}
        standby = [L for L in self.learners.values() if L.alive and L.slot is None]
        for slot in granted:
            if slot not in have and self.slot_failures.get(slot, 0) < self.options.max_slot_failures:
                if standby:
                    self.assign(standby.pop(0), slot)
                    continue
                try:
                    self.spawn(slot)
                except Exception as e:  # e.g. the slot's host does not answer: like a learner dead at start
                    self.slot_failures[slot] = self.slot_failures.get(slot, 0) + 1
                    self.say(f"  could not start a learner on {slot.host}/{slot.index}: {e}")
        self._unbound = gset - {L.slot for L in self.learners.values() if L.alive}
        want = self._want_standby()
        while len(standby) < want:
            standby.append(self.spawn(None))
        for L in standby[want:]:
            if L.status == "starting":
                self.stop(L)

    def _want_standby(self) -> int:
        p = self.options.prestart
        if self.standby_failures >= 3 or not getattr(self.launcher, "supports_standby", False):
            return 0
        if p is not None:
            return max(0, int(p))
        if self.options.max_gpus is None:
            return 0  # no idea whether more slots may come
        return 1 if len(self.granted) < self.options.cap else 0

    def shutdown(self, running: set, final: bool) -> None:
        """End every learner: the members of the running generation finish by themselves
        (given 10 s once training is over), the others are stopped; then release their slots."""
        live = self.alive()
        for L in live:  # standby, not yet joined and departed learners have nothing to finish
            if L.status != "member" or L.lid not in running or L.leaving:
                self.stop(L)
        deadline = time.monotonic() + (10.0 if final else 0.5)
        for L in live:
            while L.handle.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            if L.handle.poll() is None:
                L.handle.terminate()
        for L in live:
            if L.handle.wait(3.0) is None:
                L.handle.kill()
                L.handle.wait(3.0)
            L.status = "exited"
        gone = [L.slot for L in live if L.slot is not None]
        gone += sorted(self._unbound - set(gone))  # kept for a replacement that never came
        self._unbound = set()
        if gone:
            try:
                self.slots.released(gone)
            except Exception:
                pass
