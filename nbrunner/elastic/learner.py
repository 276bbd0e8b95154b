"""A learner process: ``python -m nbrunner.elastic.learner --addr HOST --port PORT --id LID``.

Life cycle
----------
1. connect to the driver's TCPStore, unpickle the payload (model, optimizer, loss,
   dataset function, config), build the datasets, import what DDP needs (and tell the worker
   agent that started it, if one did, which modules that imported), post ``ready``;
2. wait for a generation plan that includes it (``plan/<g>``, announced through ``req``);
3. for each generation: arrival barrier, ``init_process_group`` under a per-generation
   PrefixStore, take the state from the plan's source learner by broadcast, train;
4. every step the learners all-reduce a small control vector ``[req, loss]``, launched when
   the step ends and waited for when the next one ends (so it overlaps a whole step):
   ``req`` is the newest plan the rank-0 learner's poller thread saw in the store, so all
   learners agree on the step after which they switch to it (one step later than it was
   seen); before a snapshot, an epoch end, a resize or the last step it is waited for at once;
5. a collective that fails (peer died, timeout) sends the learner back to step 2 after
   reporting ``fail`` with the step of its newest in-memory snapshot; the driver then plans
   a recovery generation whose source restores the best snapshot.

Its parts: :class:`~.state.LearnerState` (what it holds), :class:`~.protocol.DriverLink` and
:class:`~.protocol.Poller` (talking to the driver), :class:`~.group.GenerationGroup` (the
running generation's process group) and :class:`~.training.TrainingLoop` (steps, epochs).
"""
from __future__ import annotations

import time

_T_START = time.time()

import argparse
import json
import os
import sys
import time
import traceback
from typing import NamedTuple, Optional, Union

import torch
import torch.distributed as dist

from ..core.config import (ELASTIC_CPUS, ELASTIC_DEVICE, ELASTIC_STANDBY, ELASTIC_STORE_TIMEOUT, ELASTIC_SYSPATH,
                           ELASTIC_THREADS, LEARNER_LOADED)
from .batch_adaptation import BatchAdaptation
from .batches import StepBatches
from .checkpoints import CheckpointWriter
from .group import GenerationGroup
from .protocol import DriverLink, GenerationAbandoned, LearnerExit, Plan, Poller
from .state import LearnerState
from .training import TrainingLoop

_COMM_MARKERS = (
    "gloo", "nccl", "connection closed", "connection reset", "timed out", "timeout",
    "broken pipe", "pair.cc", "processgroup", "socket", "peer", "connection refused",
)


def _is_comm_error(e: BaseException) -> bool:
    if isinstance(e, (GenerationAbandoned, dist.DistError, ConnectionError, TimeoutError)):
        return True
    msg = str(e).lower()
    return isinstance(e, RuntimeError) and any(m in msg for m in _COMM_MARKERS)


def _usable_cpus() -> int:
    fixed = ELASTIC_CPUS.count()
    if fixed:
        return max(1, fixed)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class _Loaded(NamedTuple):
    """What loading the payload gave, for the steps after it."""

    t_payload: float     # when the payload was unpickled
    t_data: float        # when the datasets were built
    batches: StepBatches
    imported: list       # the modules loading imported


class Learner:
    """One learner process: its parts, and the generations it runs (see the module docstring)."""

    def __init__(self, addr: str, port: int, lid: str):
        self.addr, self.port, self.lid = addr, port, lid
        self.link: Optional[DriverLink] = None        # connect()
        self.cfg: dict = {}                           # the run's config, from the payload (load())
        self.poller: Optional[Poller] = None          # load()
        self.state: Optional[LearnerState] = None     # load()
        self.checkpoints: Optional[CheckpointWriter] = None
        self.loop: Optional[TrainingLoop] = None      # load()
        self.group = GenerationGroup(self.log)
        self.was_active = False    # it ran a generation: a plan without it sends it away

    @property
    def timeout(self) -> float:
        """Seconds a collective, or a generation's arrival barrier, may wait for a peer."""
        return float(self.cfg["timeout"])

    # ---------------------------------------------------------------- setup
    def log(self, msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')} learner {self.lid}] {msg}", flush=True)

    def connect(self) -> None:
        t = ELASTIC_STORE_TIMEOUT.seconds()
        self.link = DriverLink.connect(self.addr, self.port, self.lid, t)

    def load(self) -> "_Loaded":
        """Everything that does not depend on the slot: payload, datasets, imports."""
        import cloudpickle

        before = set(sys.modules)
        for p in reversed([p for p in (ELASTIC_SYSPATH.text() or "").split(os.pathsep) if p]):
            if p not in sys.path:
                sys.path.append(p)
        payload = cloudpickle.loads(self.link.payload())
        t_payload = time.time()
        self.cfg = cfg = payload["config"]
        model, opt, loss_fn, get_datasets, metrics = payload["objects"]
        self.state = LearnerState(model, opt, payload["train_state"])
        self.poller = Poller(self.addr, self.port, max(self.timeout, 30.0))
        self.poller.start()
        ds = get_datasets()
        if not isinstance(ds, (tuple, list)) or len(ds) != 2:
            raise TypeError("get_datasets() must return (train_dataset, test_dataset)")
        t_data = time.time()
        batches = StepBatches(ds[0], ds[1], int(cfg["effective_batch_size"]), cfg["seed"], int(cfg["epochs"]))
        self.checkpoints = CheckpointWriter(cfg.get("checkpoint_dir"), int(cfg.get("keep_checkpoints", 2)))
        adapt = BatchAdaptation(cfg, batches.n_train) if cfg.get("adaptive_batch") else None
        self.loop = TrainingLoop(self.lid, self.state, batches, loss_fn, metrics, cfg, self.poller, self.checkpoints,
                                 adapt)
        # DistributedDataParallel imports torch._dynamo on first use (~1 s): do it now, while
        # the current learners keep training, instead of during the resize pause.
        import torch._dynamo  # noqa: F401
        from torch.nn.parallel import DistributedDataParallel  # noqa: F401

        torch.set_num_threads(max(1, ELASTIC_THREADS.count()))
        imported = [m for m in sys.modules
                    if m not in before and not any(part.startswith("_") for part in m.split("."))]
        return _Loaded(t_payload, t_data, batches, imported)

    def tell_loaded(self, imported: list[str]) -> None:
        """Tell the worker's learner agent that started this learner (if one did) that it has
        loaded, and which modules that imported: its warm interpreters import them ahead."""
        path = LEARNER_LOADED.text()
        if not path:
            return
        try:
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                json.dump(imported, f)
            os.replace(tmp, path)
        except OSError:
            pass

    def wait_assignment(self) -> None:
        """Standby learner: wait until the driver binds it to a slot (it has not touched
        any GPU yet, so it can still choose which one it sees)."""
        slot = self.link.wait_assignment()
        if slot.get("gpu") is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = str(slot["gpu"])
            os.environ[ELASTIC_DEVICE.name] = "cuda"
        else:
            os.environ[ELASTIC_DEVICE.name] = "cpu"

    def bind(self, loaded: "_Loaded") -> None:
        """Device-dependent setup, then tell the driver this learner can join."""
        device = torch.device("cpu")
        if ELASTIC_DEVICE.text() == "cuda":
            torch.cuda.set_device(0)
            device = torch.device("cuda", 0)
        self.state.bind(device, bool(self.cfg.get("sync_batchnorm")))
        b, t_payload, t_data = loaded.batches, loaded.t_payload, loaded.t_data
        self.link.ready(b.n_train, b.n_test, b.steps_per_epoch)
        self.log(f"ready after {time.time() - _T_START:.2f}s (payload at {t_payload - _T_START:.2f}s, "
                 f"datasets {t_data - t_payload:.2f}s): {b.n_train} train / {b.n_test} test "
                 f"samples, {b.steps_per_epoch} steps per epoch, device {device}")

    # ---------------------------------------------------------------- generations
    def wait_plan(self) -> Plan:
        """The next plan this learner runs in.

        Raises:
            LearnerExit: it ran a generation and a newer plan leaves it out (code 0).
        """
        while True:
            plan = self.link.newest_plan()
            if self.lid in plan.members:
                if (self.link.failed and plan.mode == "live") or self.link.aborted(plan.gen):
                    self.report_fail(plan.gen)
                    continue
                return plan
            if self.was_active:
                raise LearnerExit(0)

    def report_fail(self, g: int, err: str = "") -> None:
        self.state.snapshot_if_behind()
        self.link.report_fail(g, self.state.step, self.state.snap_step, self.loop.t_last_step, err)

    def run(self) -> int:
        self.connect()
        loaded = self.load()
        self.tell_loaded(loaded.imported)
        if ELASTIC_STANDBY.flag():
            self.wait_assignment()
        self.bind(loaded)
        plan = self.wait_plan()
        while True:
            outcome = self.run_gen(plan)
            if outcome == "done":
                return 0
            if outcome == "failed":
                plan = self.wait_plan()
                continue
            plan = self.link.take_plan(int(outcome))
            if self.lid not in plan.members:
                raise LearnerExit(0)

    def run_gen(self, plan: Plan) -> Union[str, int]:
        """Run generation ``plan``: ``"done"``, ``"failed"`` (reported to the driver), or the
        number of the newer plan the learners agreed to switch to."""
        g = plan.gen
        self.was_active = True
        rank = plan.members.index(self.lid)
        W = plan.world
        src = plan.members.index(plan.source)
        state = self.state
        try:
            self.link.barrier(plan, self.timeout)
            self.group.form(plan, rank, self.link.store, state.device, self.timeout)
            if plan.backend == "gloo":
                self.poller.watch_abort(g, self._cut_generation)
            if self.lid == plan.source:
                if plan.mode == "snapshot":
                    state.restore_snapshot()
                elif plan.mode == "restart" and plan.checkpoint:
                    state.load_checkpoint(plan.checkpoint)
            if W > 1:
                state.broadcast(src, rank)
            state.mark_consistent()
            self.link.joined()
            state.snapshot()
            self._share_threads(plan)
            outcome = self.loop.train(plan, rank, self.group)
            if outcome == "done":
                self.finish(rank)
            else:
                self._teardown()  # here, not in train(): no frame of it may still hold the DDP module
            return outcome
        except LearnerExit:
            raise  # the process exits without destroying anything (see main)
        except Exception as e:
            if not _is_comm_error(e):
                raise
            err = f"{type(e).__name__}: {e}"
            self.log(f"generation {g} failed: {err}")
            self.loop.settle()
            self._teardown(e)
            self.report_fail(g, err)
            return "failed"

    def _share_threads(self, plan: Plan) -> None:
        """A CPU learner's intra-op threads: its share of the host's usable CPUs."""
        share = int(plan.threads.get(self.lid, 0)) if plan.threads else 0
        if share and self.state.device.type == "cpu":
            n = -share if share < 0 else max(1, _usable_cpus() // share)
            if torch.get_num_threads() != n:
                torch.set_num_threads(n)

    def _teardown(self, exc: Optional[BaseException] = None) -> None:
        """Leave the generation (see :meth:`GenerationGroup.dissolve` for the order)."""
        if self.poller is not None:
            self.poller.unwatch()
        self.group.dissolve(exc)
        if self.loop is not None:
            self.loop.release()

    def _cut_generation(self) -> bool:
        """The driver abandoned the running generation (a peer's host is gone): a collective
        waiting for that peer would only fail at the gloo timeout, so close this generation's
        connections and let it fail now.  A learner still making steps is left alone: it
        reaches the next plan at its step boundary."""
        if not self.loop.stalled():
            return False
        self.group.cut()
        return True

    def finish(self, rank: int) -> None:
        self.checkpoints.join()
        if rank == 0:
            self.link.set_final(self.state.final_bytes())
            self.poller.push({"type": "final", "step": self.state.step}, urgent=True)
        self.poller.close()
        # the process group is not dissolved: the process exits right away (see main)

    def close(self) -> None:
        if self.checkpoints is not None and self.checkpoints.busy():
            try:  # a learner that leaves while writing a checkpoint: let the driver wait for it
                self.link.busy("checkpoint")
            except Exception:
                pass
            self.checkpoints.join()
        poller = self.poller
        if poller is not None and poller.is_alive():
            poller.close()


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nbrunner.elastic.learner")
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--id", required=True)
    a = ap.parse_args(argv)
    learner = Learner(a.addr, a.port, a.id)
    code = 0
    try:
        code = learner.run()
    except LearnerExit as e:
        code = e.code
    except BaseException:
        tb = traceback.format_exc()
        print(tb, file=sys.stderr, flush=True)
        try:
            learner.link.error(tb)
        except Exception:
            pass
        code = 1
    finally:
        try:
            learner.close()
        except Exception:
            pass
    return code


def _exit_now(code: int) -> None:
    """Leave without interpreter finalisation.  Everything that matters is done by then
    (records flushed to the driver, checkpoint written, final state in the store); what is
    left -- process groups, DDP reducers, gloo and OpenMP threads -- can only delay the exit
    (their destructors may block, see GenerationGroup.dissolve), and a learner that leaves must
    give its slot back at once: the driver confirms the release only when the process is gone."""
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    os._exit(code)


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    _exit_now(main())
