"""ElasticTrainer: in-place elastic data-parallel training driven from a notebook.

The calling process (the notebook's kernel) is the *driver*: it never computes gradients
and never touches CUDA.  It owns a TCPStore (rendezvous + control channel), asks a
SlotSource which slots it may use, starts one learner process per slot through a Launcher,
and publishes *generation plans*: which learners form the process group, and which one
holds the state the others take.  Learners switch to a new plan at a step boundary they
agree on through the all-reduce they already do every step, so a resize costs one process
group re-formation plus one state broadcast (tens of milliseconds), and new learners start
(interpreter, imports, unpickling, datasets) while the old ones keep training.

Semantics
---------
* Global batch: every optimizer step consumes the next ``effective_batch_size`` samples
  of the epoch's permutation (seeded by ``seed`` and the epoch); with W learners, learner r
  takes the r-th contiguous chunk (sizes differ by at most one), weights its mean loss by
  its share ``n_r / B`` and gradients are all-reduced with SUM.  A step is therefore the
  single-process step on the whole global batch, at any world size, up to float summation
  order.  An epoch is ``len(train) // effective_batch_size`` steps.  The loss function
  must return the *mean* over its batch (``reduction="mean"``, the torch default).
* Randomness inside the model (dropout...) is re-seeded every step from
  ``(seed, step, rank)``: a run is reproducible for a given sequence of world sizes, and a
  resumed run draws what the uninterrupted run drew; a different world size draws
  different masks, so only models without such randomness follow exactly the same
  trajectory at every world size.
* BatchNorm: each learner normalises with the statistics of *its* chunk, so the step
  depends on the world size (a 2-learner step normalises two half-batches separately).
  Running statistics follow learner 0 (DDP broadcasts its buffers every step).  Pass
  ``sync_batchnorm=True`` to convert BatchNorm layers to a synchronised BatchNorm that
  computes the statistics over the global batch (CPU and GPU), which restores the
  world-size invariance at the price of two small all-reduces per BatchNorm layer per step.
* Failures: learners keep an in-memory snapshot every ``snapshot_every`` steps and at the
  start of every generation.  When a learner dies, survivors fail their collective (peer
  closed, or the ``timeout``), report, and the driver restarts the group without the dead
  learner from the newest snapshot among survivors: the steps after that snapshot are
  recomputed, so the trajectory is the one of an uninterrupted run.
"""
from __future__ import annotations

import io
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import deque
from datetime import timedelta
from pathlib import Path
from typing import Callable, Iterable, Optional

from ..control import runtime
from . import model_io
from .generations import Generations, LearnerState
from .history import Callback, History, Reporting, _FnCallback
from .launcher import LocalLauncher
from .protocol import FINAL, LOG_N, PAYLOAD, REQ, ElasticTrainingError, Plan
from .recovery import Recovery
from .slots import Slot, default_slot_source

__all__ = ["ElasticTrainer", "History", "Callback", "ElasticTrainingError"]


def _normalize_metrics(metrics) -> dict:
    if metrics is None:
        return {}
    if isinstance(metrics, dict):
        return {str(k): v for k, v in metrics.items() if callable(v)}
    out = {}
    for m in metrics:
        if isinstance(m, str):
            if m.lower() in ("accuracy", "acc"):
                continue  # built in: val_accuracy whenever it applies
            raise ValueError(f"unknown metric name {m!r}: pass a callable(outputs, targets) instead")
        out[getattr(m, "__name__", f"metric{len(out)}")] = m
    return out




class ElasticTrainer:
    """Elastic data-parallel training of ``model`` (see the module docstring)."""

    def __init__(self, model, get_datasets: Callable, loss_fn: Callable, optimizer, *,
                 metrics=None, callbacks: Optional[Iterable] = None):
        import torch

        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError("optimizer must be a torch.optim.Optimizer built on model.parameters()")
        params = {id(p) for p in model.parameters()}
        for g in optimizer.param_groups:
            for p in g["params"]:
                if id(p) not in params:
                    raise ValueError("the optimizer holds tensors that are not parameters of the model")
        if not callable(get_datasets):
            raise TypeError("get_datasets must be a function returning (train_dataset, test_dataset)")
        self.model = model
        self.get_datasets = get_datasets
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.metrics = _normalize_metrics(metrics)
        self.callbacks = [c if isinstance(c, Callback) else _FnCallback(c) for c in (callbacks or [])]
        self.history: Optional[History] = None
        self._run: Optional[_Run] = None

    def learner_pids(self) -> dict:
        """{learner id: pid} of the learners running now (local launcher only)."""
        run = self._run
        if run is None:
            return {}
        return {L.lid: getattr(L.handle, "pid", None) for L in list(run.learners.values()) if L.alive}

    def train(self, epochs: int = 10, effective_batch_size: int = 256, max_gpus: Optional[int] = None,
              min_gpus: int = 1, checkpoint_every: int = 1, seed: int = 0, *,
              slots=None, launcher=None, checkpoint_dir=None, model_dir=None,
              sync_batchnorm: bool = False, snapshot_every: int = 10, timeout: float = 60.0,
              verbose: int = 1, print_every: float = 30.0, master_addr: Optional[str] = None,
              eval_batch_size: int = 512, max_failures: int = 20, max_slot_failures: int = 3,
              join_wait: float = 3.0, broadcast_buffers: bool = True,
              find_unused_parameters: bool = False, keep_checkpoints: int = 2,
              prestart: Optional[int] = None, threads_per_learner: Optional[int] = None) -> History:
        """Train for ``epochs`` epochs and return the History; ``self.model`` then holds the
        final weights (and ``self.optimizer`` the final optimizer state).

        ``slots``: a SlotSource (default: :func:`nbrunner.elastic.slots.default_slot_source`).
        ``max_gpus``: most learners at once (default: 1 outside a job, else what is granted).
        ``checkpoint_dir``: where checkpoints go (default: ``runs/<job-id>/checkpoints`` in a
        job, none outside); an existing checkpoint there is resumed from.
        ``model_dir``: where the final model is saved (default ``runs/<job-id>/model`` in a job).
        ``prestart``: standby learners kept started (imports, payload, datasets done; no
        slot, no GPU touched) so that a newly granted slot gets a learner at once.  Default:
        one while fewer slots than ``max_gpus`` are granted and the launcher supports it
        (the local launcher does), else none (also none when ``max_gpus`` is None).
        ``sync_batchnorm``: synchronise BatchNorm statistics over the global batch.
        ``snapshot_every``: steps between in-memory snapshots (failure recovery point).
        ``timeout``: seconds a collective may wait for a peer before it counts as failed.
        ``threads_per_learner``: torch intra-op threads of a CPU learner (default: the host's
        usable CPUs divided by ``max_gpus`` -- or by the most slots granted so far when
        ``max_gpus`` is None -- at least 1, constant across resizes).
        """
        if epochs < 0 or effective_batch_size < 1:
            raise ValueError("epochs must be >= 0 and effective_batch_size >= 1")
        if max_gpus is not None and max_gpus < 1:
            max_gpus = None if max_gpus == 0 else max_gpus
            if max_gpus is not None:
                raise ValueError("max_gpus must be >= 1")
        if max_gpus is not None and min_gpus > max_gpus:
            raise ValueError(f"min_gpus ({min_gpus}) > max_gpus ({max_gpus})")
        opts = dict(epochs=int(epochs), effective_batch_size=int(effective_batch_size), max_gpus=max_gpus,
                    min_gpus=max(0, int(min_gpus)), checkpoint_every=int(checkpoint_every or 0), seed=int(seed),
                    slots=slots, launcher=launcher, checkpoint_dir=checkpoint_dir, model_dir=model_dir,
                    sync_batchnorm=bool(sync_batchnorm), snapshot_every=int(snapshot_every), timeout=float(timeout),
                    verbose=int(verbose), print_every=float(print_every), master_addr=master_addr,
                    eval_batch_size=int(eval_batch_size), max_failures=int(max_failures),
                    max_slot_failures=int(max_slot_failures), join_wait=float(join_wait),
                    broadcast_buffers=bool(broadcast_buffers), find_unused_parameters=bool(find_unused_parameters),
                    keep_checkpoints=int(keep_checkpoints), prestart=prestart,
                    threads_per_learner=threads_per_learner)
        run = _Run(self, opts)
        self._run = run
        try:
            self.history = run.run()
        finally:
            self._run = None
        return self.history


class _Run(Reporting, Generations, Recovery):
    """One call of :meth:`ElasticTrainer.train`: the driver's state and its main loop.  Its
    parts live beside it: reports (:mod:`.history`), learners and generation plans
    (:mod:`.generations`), resuming and recovery (:mod:`.recovery`)."""

    def __init__(self, trainer: ElasticTrainer, options: dict):
        self.t = trainer
        self.options = options
        self.verbose = options["verbose"]
        self.learners: dict[str, LearnerState] = {}
        self.plans: dict[int, Plan] = {}
        self.gen = 0                  # newest published generation
        self.active_gen = 0           # newest generation whose first step ran
        self.inflight: Optional[int] = None
        self.inflight_since = 0.0
        self.recovering: Optional[dict] = None
        self.final = False
        self.finishing = False
        self.log_read = 0
        self._log_missing_since: Optional[float] = None
        self.slot_failures: dict[Slot, int] = {}
        self.history = History()
        self.epoch_records: dict[int, dict] = {}
        self.step = 0
        self.step_high = 0
        self.world = 0
        self.spe: Optional[int] = None
        self.n_train: Optional[int] = None
        self.loss: Optional[float] = None
        self._rate = deque(maxlen=64)
        self._next_seq = 0
        self._last_report = 0.0
        self._last_print = time.monotonic()
        self._granted: list[Slot] = []
        self._next_grant_poll = 0.0
        self.standby_failures = 0
        self._max_granted = 0
        self._unbound: set[Slot] = set()  # granted slots with no live learner: released if taken back
        self._waiting_said = False
        self.t_start = time.monotonic()

    # ------------------------------------------------------------------ helpers
    def say(self, msg: str) -> None:
        if self.verbose:
            print(msg, flush=True)

    def _new_lid(self) -> str:
        self._next_seq += 1
        return f"L{self._next_seq}"

    def _cap(self) -> int:
        cap = self.options["effective_batch_size"]
        if self.options["max_gpus"] is not None:
            cap = min(cap, self.options["max_gpus"])
        return cap

    # ------------------------------------------------------------------ run
    def run(self) -> History:
        options = self.options
        t0 = time.monotonic()
        job_dir = runtime.job_dir()
        self.ckpt_dir = Path(options["checkpoint_dir"]) if options["checkpoint_dir"] else (job_dir / "checkpoints" if job_dir else None)
        model_dir = Path(options["model_dir"]) if options["model_dir"] else (job_dir / "model" if job_dir else None)
        own_logs = job_dir is None
        self.logs_dir = (job_dir / "logs") if job_dir else Path(tempfile.mkdtemp(prefix="nbrunner-elastic-"))
        self.run_tag = uuid.uuid4().hex[:6]

        train_state = self._resume()
        if train_state is None:  # the checkpoint holds a finished run
            self.history.wall_time_s = time.monotonic() - t0
            self._save_model(model_dir)
            self.say("ElasticTrainer: training already complete")
            return self.history

        slots = options["slots"] if options["slots"] is not None else default_slot_source(options["max_gpus"], options["min_gpus"])
        self.slots = slots
        self.launcher = options["launcher"] or getattr(slots, "launcher", None) or LocalLauncher()
        self.master_addr = options["master_addr"] or getattr(self.launcher, "master_addr", None) or "127.0.0.1"
        self._open_store(train_state)
        ok = False
        try:
            slots.start(options["min_gpus"], options["max_gpus"] or max(1, options["min_gpus"]))
            for cb in self.t.callbacks:
                cb.on_train_begin({"epochs": options["epochs"], "effective_batch_size": options["effective_batch_size"],
                                   "resumed_from_step": self.history.resumed_from_step})
            self._loop()
            self._finalize(model_dir)
            ok = True
        finally:
            self._shutdown()
            try:
                slots.close()
            except Exception:
                pass
            del self.store
            if own_logs and ok and not os.environ.get("NBRUNNER_ELASTIC_KEEP_LOGS"):
                shutil.rmtree(self.logs_dir, ignore_errors=True)
        self.history.wall_time_s = time.monotonic() - t0
        for cb in self.t.callbacks:
            cb.on_train_end(self.history)
        return self.history

    def _open_store(self, train_state: dict) -> None:
        """The rendezvous store, holding what every learner loads first: the pickled model,
        optimizer, loss, datasets and metrics (by value), the run's config and train state."""
        import torch.distributed as dist

        options = self.options
        self.store = dist.TCPStore("0.0.0.0", 0, is_master=True, wait_for_workers=False,
                                   timeout=timedelta(seconds=max(30.0, options["timeout"])))
        self.port = self.store.port
        cfg = {k: options[k] for k in ("epochs", "effective_batch_size", "seed", "checkpoint_every", "sync_batchnorm",
                                 "snapshot_every", "timeout", "eval_batch_size", "broadcast_buffers",
                                 "find_unused_parameters", "keep_checkpoints")}
        cfg["checkpoint_dir"] = str(self.ckpt_dir) if self.ckpt_dir else None
        objects = (self.t.model, self.t.optimizer, self.t.loss_fn, self.t.get_datasets, self.t.metrics)
        with model_io.by_value(list(objects)):
            import cloudpickle

            blob = cloudpickle.dumps({"objects": objects, "config": cfg, "train_state": train_state})
        self.store.set(PAYLOAD, blob)
        self.payload_bytes = len(blob)
        self.store.add(REQ, 0)
        self.store.add(LOG_N, 0)
        self.sys_path = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))

    # ------------------------------------------------------------------ main loop
    def _loop(self) -> None:
        options = self.options
        while not self.final:
            self._read_logs()
            if self.final:
                break
            self._poll_procs()
            self._reap_leavers()
            now = time.monotonic()
            if now >= self._next_grant_poll:
                self._poll_grants()
                self._next_grant_poll = now + 0.05
            self._plan()
            if len(self.history.failures) > options["max_failures"]:
                raise ElasticTrainingError(f"{len(self.history.failures)} learner failures: giving up")
            if not any(L.alive and L.slot is not None for L in self.learners.values()):
                if self._granted and not self._spawnable():
                    raise ElasticTrainingError("every granted slot failed to run a learner "
                                               f"{self.options['max_slot_failures']} times" + self._last_logs())
                if not self._granted and not self._waiting_said and now - self.t_start > 5:
                    self._waiting_said = True
                    self.say("ElasticTrainer: waiting for the slot source to grant a slot ...")
            time.sleep(0.01 if self._busy() else 0.05)

    def _busy(self) -> bool:
        """A resize, a recovery or a learner start is under way.  Otherwise the driver polls
        five times less often: on a host whose cores all run learners, its polling is
        throughput taken from them."""
        if self.inflight is not None or self.recovering is not None or not self.active_gen or self.finishing:
            return True
        return any(L.alive and (L.leaving or (L.slot is not None and L.status in ("starting", "ready")))
                   for L in self.learners.values())

    # ------------------------------------------------------------------ end
    def _finalize(self, model_dir: Optional[Path]) -> None:
        import torch

        blob = self.store.get(FINAL)
        st = torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)
        self.t.model.load_state_dict(st["model"])
        self.t.optimizer.load_state_dict(st["optimizer"])
        train_state = st["train_state"]
        self.history.epochs = list(train_state["epochs"])
        self.history.steps = int(train_state["step"])
        rates = [r["samples_per_s"] for r in self.epoch_records.values() if r.get("samples_per_s")]
        self.history.samples_per_s = (sum(rates) / len(rates)) if rates else self._sps()
        self._save_model(model_dir)
        last = self.history.epochs[-1] if self.history.epochs else {}
        acc = f", val_accuracy {last['val_accuracy']:.4f}" if "val_accuracy" in last else ""
        self.say(f"ElasticTrainer: done, {self.history.steps} steps, {len(self.history.rescales)} resize(s), "
                 f"{len(self.history.failures)} failure(s){acc}")


    def _shutdown(self) -> None:
        live = [L for L in self.learners.values() if L.alive]
        running = set(self.plans[self.active_gen].members) if self.active_gen in self.plans else set()
        for L in live:  # standby, not yet joined and departed learners have nothing to finish
            if L.status != "member" or L.lid not in running or L.leaving:
                self._stop(L)
        deadline = time.monotonic() + (10.0 if self.final else 0.5)
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
        if live:
            try:
                self.slots.released([L.slot for L in live if L.slot is not None])
            except Exception:
                pass
