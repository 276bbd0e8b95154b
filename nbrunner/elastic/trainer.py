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
* Global batch (the default, ``adaptive_batch=False``): every optimizer step consumes the
  next ``effective_batch_size`` samples of the epoch's permutation (seeded by ``seed`` and
  the epoch); with W learners, learner r takes the r-th contiguous chunk (sizes differ by at
  most one), weights its mean loss by its share ``n_r / B`` and gradients are all-reduced
  with SUM.  A step is therefore the single-process step on the whole global batch, at any
  world size, up to float summation order.  An epoch is ``len(train) //
  effective_batch_size`` steps.  The loss function must return the *mean* over its batch
  (``reduction="mean"``, the torch default).
* Batch-size adaptation (``ElasticTrainer(adaptive_batch=True, max_batch=...)``): a step on
  W learners takes ``min(effective_batch_size * W, max_batch)`` samples, its learning rate
  scaled by AdaScale's gain; epochs are passes over the data (:mod:`.batch_adaptation`).
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
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from ..core.config import ELASTIC_KEEP_LOGS
from ..control import runtime
from . import model_io
from .generations import GenerationPlanner
from .history import Callback, History, HistoryRecorder, _FnCallback
from .launcher import LocalLauncher
from .options import TrainOptions, train_signature
from .pool import LearnerPool
from .protocol import ElasticTrainingError, Rendezvous, root_cause
from .recovery import Recovery, resume
from .slots import default_slot_source

__all__ = ["ElasticTrainer", "History", "Callback", "ElasticTrainingError", "setup_of"]


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
                 metrics=None, callbacks: Optional[Iterable] = None, adaptive_batch: bool = False,
                 max_batch: Optional[int] = None):
        """``adaptive_batch``: scale the global batch with the learners held, from
        ``effective_batch_size`` per learner up to ``max_batch`` (default: no top but the
        training set), the learning rate multiplied by AdaScale's gain from the gradient noise
        scale measured while training (see :mod:`nbrunner.elastic.adaptive`); the job reports its
        statistical efficiency so that the goodput policy sizes it by goodput.  Off by default:
        it changes the trajectory (the global batch no longer stays the same at every world size).
        """
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
        self.adaptive_batch, self.max_batch = bool(adaptive_batch), max_batch
        TrainOptions(adaptive_batch=self.adaptive_batch, max_batch=max_batch, effective_batch_size=1)  # checks them

    def learner_pids(self) -> dict:
        """{learner id: pid} of the learners running now (local launcher only)."""
        run = self._run
        return run.learner_pids() if run is not None else {}

    def train(self, *args: Any, **kwargs: Any) -> History:
        """Train for ``epochs`` epochs and return the History; ``self.model`` then holds the
        final weights (and ``self.optimizer`` the final optimizer state).

        The arguments are :class:`~nbrunner.elastic.options.TrainOptions`' fields, with its defaults
        (``epochs``, ``effective_batch_size``, ``max_gpus``, ``min_gpus``, ``checkpoint_every`` and
        ``seed`` also by position); the signature shown is made from them.

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
        options = TrainOptions.from_call(args, kwargs, adaptive_batch=self.adaptive_batch, max_batch=self.max_batch)
        run = _Run(self, options)
        self._run = run
        try:
            self.history = run.run()
        finally:
            self._run = None
        return self.history

    train.__signature__ = train_signature(returns="History")


def setup_of(model, options: TrainOptions) -> str:
    """A digest of what sets a run's samples per second at each learner count: the model's class and
    size and the batch rule (the job's kind, :mod:`nbrunner.core.kinds`, is its notebook's runs with
    the same one)."""
    import hashlib

    size = sum(int(p.numel()) for p in model.parameters())
    parts = [type(model).__module__, type(model).__qualname__, size, options.effective_batch_size,
             options.adaptive_batch, options.max_batch, options.sync_batchnorm, options.threads_per_learner]
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:16]


class _Run:
    """One call of :meth:`ElasticTrainer.train`: the driver's main loop over the parts it
    composes -- the rendezvous store (:class:`~.protocol.Rendezvous`), the learner processes
    (:class:`~.pool.LearnerPool`), the generation plans (:class:`~.generations.GenerationPlanner`),
    failure recovery (:class:`~.recovery.Recovery`) and the account of the run
    (:class:`~.history.HistoryRecorder`) -- and the records of the learners it routes to them."""

    def __init__(self, trainer: ElasticTrainer, options: TrainOptions):
        self.t = trainer
        self.options = options
        self.recorder = HistoryRecorder(options, trainer.callbacks, self.say, setup_of(trainer.model, options))
        self.rendezvous: Optional[Rendezvous] = None   # run() makes these once training starts
        self.pool: Optional[LearnerPool] = None
        self.planner: Optional[GenerationPlanner] = None
        self.recovery: Optional[Recovery] = None
        self.final = False        # the final state is in the store
        self.finishing = False    # a learner exited when done: training is over
        self._next_grant_poll = 0.0
        self._waiting_said = False
        self.t_start = time.monotonic()

    def say(self, msg: str) -> None:
        if self.options.verbose:
            print(msg, flush=True)

    def learner_pids(self) -> dict:
        return self.pool.pids() if self.pool is not None else {}

    # ------------------------------------------------------------------ run
    def run(self) -> History:
        options = self.options
        t0 = time.monotonic()
        job_dir = runtime.job_dir()
        ckpt_dir = (Path(options.checkpoint_dir) if options.checkpoint_dir
                    else (job_dir / "checkpoints" if job_dir else None))
        model_dir = Path(options.model_dir) if options.model_dir else (job_dir / "model" if job_dir else None)
        own_logs = job_dir is None
        logs_dir = (job_dir / "logs") if job_dir else Path(tempfile.mkdtemp(prefix="nbrunner-elastic-"))

        start = resume(options, ckpt_dir, self.t.model, self.t.optimizer)
        if start.path is not None:
            self.recorder.resumed(start.path, start.train_state, start.n_train, start.finished)
        if start.finished:
            self.recorder.history.wall_time_s = time.monotonic() - t0
            self._save_model(model_dir)
            self.say("ElasticTrainer: training already complete")
            return self.recorder.history

        slots = options.slots if options.slots is not None else default_slot_source(options.max_gpus, options.min_gpus)
        launcher = options.launcher or getattr(slots, "launcher", None) or LocalLauncher()
        master_addr = options.master_addr or getattr(launcher, "master_addr", None) or "127.0.0.1"
        self.rendezvous = Rendezvous.open(self._payload(start.train_state, ckpt_dir), max(30.0, options.timeout))
        self.pool = LearnerPool(options, slots, launcher, self.rendezvous, master_addr, logs_dir, uuid.uuid4().hex[:6],
                                self.say)
        self.planner = GenerationPlanner(options, self.rendezvous, self.pool)
        self.recovery = Recovery(options, self.rendezvous, self.planner, self.pool, ckpt_dir, self.say)
        ok = False
        try:
            slots.start(options.min_gpus, options.max_gpus or max(1, options.min_gpus))
            self.recorder.begin(getattr(slots, "on_progress", None))
            self._loop()
            self._finalize(model_dir)
            ok = True
        finally:
            self.pool.shutdown(self.planner.running(), self.final)
            try:
                slots.close()
            except Exception:
                pass
            self.rendezvous.close()
            if own_logs and ok and not ELASTIC_KEEP_LOGS.flag():
                shutil.rmtree(logs_dir, ignore_errors=True)
        return self.recorder.end(time.monotonic() - t0)

    def _payload(self, train_state: dict, ckpt_dir: Optional[Path]) -> bytes:
        """What every learner loads first: the pickled model, optimizer, loss, datasets and
        metrics (by value), the run's config and train state."""
        cfg = self.options.learner_config(str(ckpt_dir) if ckpt_dir else None)
        objects = (self.t.model, self.t.optimizer, self.t.loss_fn, self.t.get_datasets, self.t.metrics)
        with model_io.by_value(list(objects)):
            import cloudpickle

            return cloudpickle.dumps({"objects": objects, "config": cfg, "train_state": train_state})

    # ------------------------------------------------------------------ main loop
    def _loop(self) -> None:
        options, pool = self.options, self.pool
        while not self.final:
            for r in self.rendezvous.records():
                self._on_record(r)
            if self.final:
                break
            self._poll_exits()
            pool.reap_leavers(self.planner.involved())
            now = time.monotonic()
            if now >= self._next_grant_poll:
                if self.final or self.finishing:
                    pool.stop_granting()
                else:
                    pool.poll_grants(self.planner.involved())
                self._next_grant_poll = now + 0.05
            self._plan()
            if len(self.recorder.history.failures) > options.max_failures:
                raise ElasticTrainingError(f"{len(self.recorder.history.failures)} learner failures: giving up")
            if not pool.any_bound():
                if pool.granted and not pool.spawnable():
                    raise ElasticTrainingError("every granted slot failed to run a learner "
                                               f"{options.max_slot_failures} times" + pool.last_logs())
                if not pool.granted and not self._waiting_said and now - self.t_start > 5:
                    self._waiting_said = True
                    self.say("ElasticTrainer: waiting for the slot source to grant a slot ...")
            time.sleep(0.01 if self._busy() else 0.05)

    def _busy(self) -> bool:
        """A resize, a recovery or a learner start is under way.  Otherwise the driver polls
        five times less often: on a host whose cores all run learners, its polling is
        throughput taken from them."""
        planner = self.planner
        if planner.inflight is not None or self.recovery.pending or not planner.active_gen or self.finishing:
            return True
        return self.pool.changing()

    def _lost(self, why: str) -> None:
        """A learner of a generation in play is gone: recover without it (unless training is over)."""
        if not (self.final or self.finishing):
            self.recovery.start(why)

    def _poll_exits(self) -> None:
        involved = self.planner.involved()
        exits = self.pool.poll_exits(involved, self.recorder.step)
        for L, info in exits.failures:
            self.recorder.failure(info)
            rc = info["exit_code"]
            if info["status"] == "starting":
                self.say(f"  learner {L.lid} exited with code {rc} while starting" + self.pool.tail_note(L))
            elif L.lid in involved:
                self.say(f"  learner {L.lid} died (exit code {rc}) near step {self.recorder.step}: "
                         "continuing without it")
                self._lost(f"learner {L.lid} died")
        if exits.finished:
            self.finishing = True
        self.pool.release(exits.slots)

    def _plan(self) -> None:
        if self.final or self.finishing:
            return
        if self.recovery.pending:
            self.recovery.advance(bool(self.recorder.history.checkpoints))
            return
        now = time.monotonic()
        if self.planner.inflight is not None:
            if self.planner.overdue(now):
                self._lost(f"generation {self.planner.inflight} did not start")
            return
        self.planner.plan(now)

    def _on_record(self, r: dict) -> None:
        """Route a learner's record to the part it concerns."""
        typ = r.get("type")
        if typ == "step":
            self.recorder.on_step(r)
        elif typ == "epoch":
            self.recorder.on_epoch(r["record"])
        elif typ == "gen":
            plan = self.planner.started(int(r["gen"]))
            if plan is not None:
                self.recorder.on_generation(plan, r)
        elif typ == "ready":
            self.pool.on_ready(r)
            self.recorder.on_dataset(r)
        elif typ == "fail":
            g = int(r["gen"])
            self.pool.on_fail(r["lid"], g, r.get("snap_step"))
            self.recorder.reached(int(r.get("step") or 0))
            # only a failure of the newest generation calls for a recovery.  An older one is
            # already dealt with, or shows up again: a member of the newest plan that failed
            # before it reports a failure of that plan too (Learner.wait_plan), and a learner
            # that is not in it leaves.  A late report -- from a learner cut off by the
            # network, say -- would otherwise abort a healthy generation and get its
            # learners killed as unresponsive.
            if g >= self.planner.gen:
                self._lost(f"learner {r['lid']} lost its group: {r.get('error', '')[:200]}")
        elif typ == "error":
            tb = r.get("traceback", "")
            raise ElasticTrainingError(f"{root_cause(tb)} (raised by learner {r['lid']} during "
                                       f"{r.get('where', 'training')})\n{tb}")
        elif typ == "busy":
            self.pool.on_busy(r["lid"])
        elif typ == "checkpoint":
            self.recorder.on_checkpoint(r["path"])
        elif typ == "final":
            self.final = True

    # ------------------------------------------------------------------ end
    def _finalize(self, model_dir: Optional[Path]) -> None:
        import torch

        st = torch.load(io.BytesIO(self.rendezvous.final_state()), map_location="cpu", weights_only=True)
        self.t.model.load_state_dict(st["model"])
        self.t.optimizer.load_state_dict(st["optimizer"])
        self.recorder.finished(st["train_state"])
        self._save_model(model_dir)
        self.say(self.recorder.done_line())

    def _save_model(self, model_dir: Optional[Path]) -> None:
        if model_dir is not None:
            model_io.save_model(self.t.model, model_dir)
