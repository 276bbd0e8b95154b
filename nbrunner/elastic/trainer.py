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
import math
import os
import pickle
import shutil
import sys
import tempfile
import time
import uuid
from collections import deque
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from .. import runtime
from . import model_io
from .launcher import LearnerSpec, LocalLauncher
from .protocol import FINAL, LOG_N, PAYLOAD, REQ, Plan, abort_key, log_key, plan_key
from .slots import Slot, default_slot_source

__all__ = ["ElasticTrainer", "History", "Callback", "ElasticTrainingError"]


class ElasticTrainingError(RuntimeError):
    """Training could not continue (an exception in user code on a learner, no learner
    could be started, too many failures)."""


@dataclass
class History:
    epochs: list = field(default_factory=list)      # dicts: epoch, train_loss, val_loss, val_accuracy, world_sizes, ...
    steps: int = 0                                  # optimizer steps of the trajectory
    rescales: list = field(default_factory=list)    # dicts: step, from, to, pause_s, reason
    failures: list = field(default_factory=list)    # dicts: learner, slot, exit_code, step, time
    checkpoints: list = field(default_factory=list)
    resumed_from_step: Optional[int] = None
    wall_time_s: float = 0.0
    samples_per_s: Optional[float] = None

    def to_dict(self) -> dict:
        return asdict(self)

    def __repr__(self) -> str:
        last = self.epochs[-1] if self.epochs else {}
        acc = f", val_accuracy={last['val_accuracy']:.4f}" if "val_accuracy" in last else ""
        return (f"History(epochs={len(self.epochs)}, steps={self.steps}, rescales={len(self.rescales)}, "
                f"failures={len(self.failures)}{acc})")


class Callback:
    """Hooks run in the driver (the notebook's process) while training runs."""

    def on_train_begin(self, info: dict) -> None: ...

    def on_step(self, step: int, logs: dict) -> None: ...

    def on_epoch_end(self, epoch: int, logs: dict) -> None: ...

    def on_rescale(self, info: dict) -> None: ...

    def on_failure(self, info: dict) -> None: ...

    def on_train_end(self, history: History) -> None: ...


class _FnCallback(Callback):
    def __init__(self, fn: Callable):
        self.fn = fn

    def on_epoch_end(self, epoch: int, logs: dict) -> None:
        self.fn(logs)


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


# A learner left out of the generation that now runs exits by itself within milliseconds;
# one that has not after this long (stuck in a destructor, a lost message...) is stopped,
# so that its slot is confirmed released promptly.  A learner finishing a checkpoint write
# says so ("busy") and gets up to the collective ``timeout`` instead.
LEAVE_GRACE_S = 2.0
KILL_AFTER_S = 3.0   # after terminate(), before kill()


class _L:
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


def _latest_checkpoint(d: Optional[Path]):
    if d is None or not d.is_dir():
        return None, None
    import torch

    for p in sorted(d.glob("ckpt-*.pt"), reverse=True):
        try:
            return p, torch.load(p, map_location="cpu", weights_only=True)
        except Exception as e:  # a torn or foreign file: try the previous one
            print(f"ElasticTrainer: ignoring unreadable checkpoint {p.name}: {e}", file=sys.stderr)
    return None, None


def _tail(path, n: int = 40) -> str:
    try:
        with open(path, "rb") as f:
            return b"".join(f.readlines()[-n:]).decode(errors="replace")
    except OSError:
        return ""


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


class _Run:
    def __init__(self, trainer: ElasticTrainer, o: dict):
        self.t = trainer
        self.o = o
        self.verbose = o["verbose"]
        self.learners: dict[str, _L] = {}
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
        cap = self.o["effective_batch_size"]
        if self.o["max_gpus"] is not None:
            cap = min(cap, self.o["max_gpus"])
        return cap

    # ------------------------------------------------------------------ run
    def run(self) -> History:
        import torch
        import torch.distributed as dist

        o = self.o
        t0 = time.monotonic()
        jd = runtime.job_dir()
        ckpt_dir = Path(o["checkpoint_dir"]) if o["checkpoint_dir"] else (jd / "checkpoints" if jd else None)
        model_dir = Path(o["model_dir"]) if o["model_dir"] else (jd / "model" if jd else None)
        self.ckpt_dir = ckpt_dir
        own_logs = jd is None
        logs_dir = (jd / "logs") if jd else Path(tempfile.mkdtemp(prefix="nbrunner-elastic-"))
        self.logs_dir = logs_dir
        run_tag = uuid.uuid4().hex[:6]

        # resume (a temp file left by a write the previous run did not finish is never read)
        if ckpt_dir is not None and ckpt_dir.is_dir():
            for stale in ckpt_dir.glob(".ckpt-*.tmp"):
                try:
                    stale.unlink()
                except OSError:
                    pass
        ts = {"step": 0, "loss_sum": 0.0, "loss_n": 0, "sizes": [], "epochs": []}
        path, ck = _latest_checkpoint(ckpt_dir)
        self.resume_n_train = None
        if ck is not None:
            cfg = ck.get("config", {})
            if cfg.get("effective_batch_size") != o["effective_batch_size"] or cfg.get("seed") != o["seed"]:
                raise ValueError(
                    f"checkpoint {path} was written with effective_batch_size={cfg.get('effective_batch_size')}, "
                    f"seed={cfg.get('seed')}; this run uses {o['effective_batch_size']}, {o['seed']}: "
                    f"use another checkpoint_dir or the same settings")
            self.t.model.load_state_dict(ck["model"])
            self.t.optimizer.load_state_dict(ck["optimizer"])
            ts = ck["train_state"]
            self.resume_n_train = cfg.get("n_train")
            self.history.resumed_from_step = int(ts["step"])
            self.step = self.step_high = int(ts["step"])
            for rec in ts["epochs"]:
                self.epoch_records[rec["epoch"]] = rec
            self.history.checkpoints.append(str(path))
            self.say(f"ElasticTrainer: resuming from {path} (epoch {len(ts['epochs'])}, step {ts['step']})")
            if len(ts["epochs"]) >= o["epochs"] and ts["loss_n"] == 0:
                self.history.epochs = list(ts["epochs"])
                self.history.steps = int(ts["step"])
                self.history.wall_time_s = time.monotonic() - t0
                self._save_model(model_dir)
                self.say("ElasticTrainer: training already complete")
                return self.history

        slots = o["slots"] if o["slots"] is not None else default_slot_source(o["max_gpus"], o["min_gpus"])
        self.slots = slots
        launcher = o["launcher"] or getattr(slots, "launcher", None) or LocalLauncher()
        self.launcher = launcher
        self.master_addr = o["master_addr"] or getattr(launcher, "master_addr", None) or "127.0.0.1"
        store = dist.TCPStore("0.0.0.0", 0, is_master=True, wait_for_workers=False,
                              timeout=timedelta(seconds=max(30.0, o["timeout"])))
        self.store = store
        self.port = store.port
        cfg = {k: o[k] for k in ("epochs", "effective_batch_size", "seed", "checkpoint_every", "sync_batchnorm",
                                 "snapshot_every", "timeout", "eval_batch_size", "broadcast_buffers",
                                 "find_unused_parameters", "keep_checkpoints")}
        cfg["checkpoint_dir"] = str(ckpt_dir) if ckpt_dir else None
        objects = (self.t.model, self.t.optimizer, self.t.loss_fn, self.t.get_datasets, self.t.metrics)
        with model_io.by_value(list(objects)):
            import cloudpickle

            blob = cloudpickle.dumps({"objects": objects, "config": cfg, "train_state": ts})
        store.set(PAYLOAD, blob)
        self.payload_bytes = len(blob)
        store.add(REQ, 0)
        store.add(LOG_N, 0)
        self.sys_path = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
        self.run_tag = run_tag
        ok = False
        try:
            slots.start(o["min_gpus"], o["max_gpus"] or max(1, o["min_gpus"]))
            for cb in self.t.callbacks:
                cb.on_train_begin({"epochs": o["epochs"], "effective_batch_size": o["effective_batch_size"],
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
                shutil.rmtree(logs_dir, ignore_errors=True)
        self.history.wall_time_s = time.monotonic() - t0
        for cb in self.t.callbacks:
            cb.on_train_end(self.history)
        return self.history

    # ------------------------------------------------------------------ main loop
    def _loop(self) -> None:
        o = self.o
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
            if len(self.history.failures) > o["max_failures"]:
                raise ElasticTrainingError(f"{len(self.history.failures)} learner failures: giving up")
            if not any(L.alive and L.slot is not None for L in self.learners.values()):
                if self._granted and not self._spawnable():
                    raise ElasticTrainingError("every granted slot failed to run a learner "
                                               f"{self.o['max_slot_failures']} times" + self._last_logs())
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

    def _last_logs(self) -> str:
        dead = [L for L in self.learners.values() if L.status == "exited" and L.rc not in (0, None)]
        if not dead:
            return ""
        L = dead[-1]
        return f"\n--- last lines of {L.log_path} ---\n{_tail(L.log_path)}"

    # ------------------------------------------------------------------ messages from learners
    def _read_logs(self) -> None:
        store = self.store
        n = store.add(LOG_N, 0)
        while self.log_read < n:
            i = self.log_read + 1
            key = log_key(i)
            if not store.check([key]):
                now = time.monotonic()
                if self._log_missing_since is None:
                    self._log_missing_since = now
                if now - self._log_missing_since < 2.0:
                    return
                self.log_read = i  # its writer died between the two store calls
                self._log_missing_since = None
                continue
            self._log_missing_since = None
            recs = pickle.loads(store.get(key))
            store.delete_key(key)
            self.log_read = i
            for r in recs:
                self._on_record(r)

    def _on_record(self, r: dict) -> None:
        typ = r.get("type")
        if typ == "step":
            self._on_step(r)
        elif typ == "epoch":
            self._on_epoch(r["record"])
        elif typ == "gen":
            self._on_gen(r)
        elif typ == "ready":
            L = self.learners.get(r["lid"])
            if L is not None and L.status == "starting":
                L.status = "ready"
                L.t_ready = time.monotonic()
                L.info = r
                if L.slot is not None:
                    self.slot_failures.pop(L.slot, None)  # max_slot_failures counts failures in a row
            self._check_dataset(r)
        elif typ == "fail":
            g = int(r["gen"])
            L = self.learners.get(r["lid"])
            if L is not None and g >= L.failed_gen:
                L.failed_gen = g
                L.snap_step = r.get("snap_step")
            self.step_high = max(self.step_high, int(r.get("step") or 0))
            # only a failure of the newest generation calls for a recovery.  An older one is
            # already dealt with, or shows up again: a member of the newest plan that failed
            # before it reports a failure of that plan too (Learner.wait_plan), and a learner
            # that is not in it leaves.  A late report -- from a learner cut off by the
            # network, say -- would otherwise abort a healthy generation and get its
            # learners killed as unresponsive.
            if g >= self.gen:
                self._start_recovery(f"learner {r['lid']} lost its group: {r.get('error', '')[:200]}")
        elif typ == "error":
            raise ElasticTrainingError(f"learner {r['lid']} raised during {r.get('where', 'training')}:\n"
                                       f"{r.get('traceback', '')}")
        elif typ == "busy":
            L = self.learners.get(r["lid"])
            if L is not None:
                L.busy = True
        elif typ == "checkpoint":
            if r["path"] not in self.history.checkpoints:
                self.history.checkpoints.append(r["path"])
        elif typ == "final":
            self.final = True

    def _check_dataset(self, r: dict) -> None:
        if self.spe is None:
            self.spe = int(r["steps_per_epoch"])
            self.n_train = int(r["n_train"])
            if self.resume_n_train is not None and self.resume_n_train != self.n_train:
                raise ElasticTrainingError(
                    f"the checkpoint was written for a training set of {self.resume_n_train} samples, "
                    f"get_datasets() now returns {self.n_train}")
            total = self.spe * self.o["epochs"]
            self.say(f"ElasticTrainer: {self.o['epochs']} epochs x {self.spe} steps (global batch "
                     f"{self.o['effective_batch_size']}, {self.n_train} samples), up to {self._cap()} learner(s)"
                     + (f", resuming at step {self.step}/{total}" if self.history.resumed_from_step else ""))

    def _on_step(self, r: dict) -> None:
        step = int(r["step"])
        self.step = step
        self.step_high = max(self.step_high, step)
        self.loss = r["loss"]
        self.world = r["world"]
        self._rate.append((r["t"], step))
        sps = self._sps()
        on_progress = getattr(self.slots, "on_progress", None)
        if on_progress is not None:
            on_progress(step)
        for cb in self.t.callbacks:
            cb.on_step(step, {"loss": r["loss"], "learners": r["world"], "samples_per_s": sps, "time": r["t"]})
        now = time.monotonic()
        total = self._total()
        if now - self._last_report >= 1.0:
            self._last_report = now
            runtime.report(progress=(step / total) if total else None,
                           metrics={"loss": r["loss"], "samples_per_s": sps, "learners": r["world"]}, step=step)
        if self.verbose and self.o["print_every"] > 0 and now - self._last_print >= self.o["print_every"]:
            self._last_print = now
            e, pos = divmod(step, self.spe or 1)
            self.say(f"  epoch {e + 1}/{self.o['epochs']} step {pos}/{self.spe} loss {r['loss']:.4f} "
                     f"learners {r['world']}" + (f" {sps:.0f} samples/s" if sps else ""))

    def _sps(self) -> Optional[float]:
        if len(self._rate) < 2:
            return None
        (t0, s0), (t1, s1) = self._rate[0], self._rate[-1]
        if t1 <= t0 or s1 <= s0:
            return None
        return (s1 - s0) * self.o["effective_batch_size"] / (t1 - t0)

    def _total(self) -> Optional[int]:
        return self.spe * self.o["epochs"] if self.spe else None

    def _on_epoch(self, rec: dict) -> None:
        e = int(rec["epoch"])
        first = e not in self.epoch_records
        self.epoch_records[e] = rec
        if not first:
            return
        total = self._total()
        sps = self._sps()
        if sps:
            rec = dict(rec, samples_per_s=sps)
            self.epoch_records[e] = rec
        metrics = {k: v for k, v in rec.items() if k in ("train_loss", "val_loss") or k.startswith("val_")}
        # this report postpones the next per-step one (which carries the learner count and the
        # throughput): with epochs shorter than the report interval there is no other, so it
        # carries them too
        metrics["learners"] = self.world
        if sps:
            metrics["samples_per_s"] = sps
        runtime.report(progress=(rec["step"] / total) if total else None, metrics=metrics, epoch=e, step=rec["step"])
        self._last_report = time.monotonic()
        self._last_print = time.monotonic()
        if self.verbose:
            width = 20
            done = e / max(1, self.o["epochs"])
            bar = "#" * int(round(done * width))
            parts = [f"epoch {e:>{len(str(self.o['epochs']))}}/{self.o['epochs']} [{bar:<{width}}] {done * 100:3.0f}%",
                     f"loss {rec['train_loss']:.4f}"]
            for k in ("val_loss", "val_accuracy"):
                if k in rec:
                    parts.append(f"{k} {rec[k]:.4f}")
            for k, v in rec.items():
                if k.startswith("val_") and k not in ("val_loss", "val_accuracy"):
                    parts.append(f"{k} {v:.4f}")
            parts.append("learners " + "->".join(str(w) for w in rec.get("world_sizes", [])))
            if sps:
                parts.append(f"{sps:.0f} samples/s")
            self.say("  ".join(parts))
        for cb in self.t.callbacks:
            cb.on_epoch_end(e, rec)

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

    # ------------------------------------------------------------------ processes and slots
    def _spawnable(self) -> bool:
        return any(self.slot_failures.get(s, 0) < self.o["max_slot_failures"] for s in self._granted)

    def _spawn(self, slot: Optional[Slot]) -> _L:
        lid = self._new_lid()
        log_path = self.logs_dir / f"learner-{self.run_tag}-{lid}.log"
        env = {"NBRUNNER_ELASTIC_SYSPATH": self.sys_path,
               "NBRUNNER_ELASTIC_DEVICE": "cuda" if (slot is not None and slot.is_gpu) else "cpu",
               "NBRUNNER_ELASTIC_STORE_TIMEOUT": str(max(30.0, self.o["timeout"]))}
        spec = LearnerSpec(learner_id=lid, slot=slot, master_addr=self.master_addr, master_port=self.port,
                           log_path=log_path, env=env)
        handle = self.launcher.launch(spec)
        L = _L(lid, slot, handle, log_path)
        self.learners[lid] = L
        return L

    def _assign(self, L: _L, slot: Slot) -> None:
        """Bind a standby learner to a granted slot."""
        L.slot = slot
        L.t_spawn = time.monotonic()
        self.store.set(f"assign/{L.lid}", pickle.dumps({"host": slot.host, "index": slot.index,
                                                        "gpu": slot.gpu_index if slot.is_gpu else None}))

    def _want_standby(self) -> int:
        p = self.o["prestart"]
        if self.standby_failures >= 3 or not getattr(self.launcher, "supports_standby", False):
            return 0
        if p is not None:
            return max(0, int(p))
        if self.o["max_gpus"] is None:
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

    def _tail_note(self, L: _L) -> str:
        t = _tail(L.log_path, 15)
        return f"\n{t}" if t and self.verbose > 1 else ""

    def _involved(self) -> set:
        s = set()
        if self.gen and self.gen in self.plans:
            s.update(self.plans[self.gen].members)
        if self.active_gen and self.active_gen in self.plans:
            s.update(self.plans[self.active_gen].members)
        return s

    def _stop(self, L: _L) -> None:
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
            elif now - L.t_left > (max(LEAVE_GRACE_S, self.o["timeout"]) if L.busy else LEAVE_GRACE_S):
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
            if slot not in have and self.slot_failures.get(slot, 0) < self.o["max_slot_failures"]:
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

    # ------------------------------------------------------------------ planning
    def _cpu_share(self, colocated: int) -> int:
        """How many learners of this job share a host's CPUs: a CPU learner uses
        usable_cpus // share intra-op threads.  The share is the job's maximum learner
        count (not the current one), so a resize never changes a learner's thread count
        (oversubscribing a shared host makes every parallel region wait for descheduled
        threads).  A negative value asks for exactly -n threads."""
        if self.o["threads_per_learner"]:
            return -int(self.o["threads_per_learner"])
        share = self.o["max_gpus"] or self._max_granted
        return max(colocated, min(share, self._cap()))

    def _publish(self, members: list[_L], source: _L, mode: str, reason: str, prev_world: int,
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
            if now - self.inflight_since > self.o["timeout"] + 15:
                self._start_recovery(f"generation {self.inflight} did not start")
            return
        gset = set(self._granted)
        ready = [L for L in self.learners.values() if L.status == "ready" and L.slot in gset]
        starting = [L for L in self.learners.values() if L.status == "starting" and L.slot in gset]
        if self.active_gen == 0:
            if not ready:
                return
            need = max(1, self.o["min_gpus"])
            first_ready = min(L.t_ready for L in ready)
            if starting and not (len(ready) >= need and now - first_ready > max(10.0, self.o["join_wait"])):
                return
            self._publish(ready, ready[0], "restart", "start", 0)
            return
        active = [self.learners[lid] for lid in self.plans[self.active_gen].members]
        leaving = [L for L in active if L.slot not in gset]
        stay = [L for L in active if L.slot in gset]
        join: list[_L] = []
        if ready and (not starting or leaving or now - min(L.t_ready for L in ready) >= self.o["join_wait"]):
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

    def _start_recovery(self, why: str) -> None:
        if self.final or self.finishing:
            return
        if self.recovering is None:
            self.recovering = {"since": time.monotonic(), "why": why}
            if self.gen:
                self.store.set(abort_key(self.gen), b"1")

    def _recover(self) -> None:
        now = time.monotonic()
        G = self.gen
        plan = self.plans.get(G)
        members = [self.learners[lid] for lid in plan.members] if plan else []
        alive = [L for L in members if L.alive]
        pending = [L for L in alive if L.failed_gen < G]
        # learners of the previous generation that are not in plan G leave by themselves
        if pending:
            if now - self.recovering["since"] < self.o["timeout"] + 5:
                return
            for L in pending:  # hung in a collective: give up on them
                self.say(f"  learner {L.lid} did not respond: stopping it")
                L.handle.kill()
            return
        gset = set(self._granted)
        survivors = [L for L in alive if L.slot in gset]
        ready = [L for L in self.learners.values() if L.status == "ready" and L.slot in gset]
        with_state = [L for L in survivors if L.snap_step is not None]
        prev_world = self.plans[self.active_gen].world if self.active_gen else 0
        if with_state:
            src = max(with_state, key=lambda L: L.snap_step)
            mode, ck = "snapshot", None
        else:
            cand = survivors + ready
            if not cand:
                return  # wait for replacements to start
            src = cand[0]
            latest, _ = _latest_checkpoint(self.ckpt_dir) if self.history.checkpoints else (None, None)
            mode, ck = "restart", (str(latest) if latest else None)
            self.say("  no learner kept a snapshot: restarting from "
                     + (f"checkpoint {latest}" if latest else "the initial state"))
        members_new = [src] + [L for L in survivors if L is not src] + [L for L in ready if L not in survivors]
        members_new = members_new[: self._cap()]
        for L in self.learners.values():
            if L.alive and L not in members_new and L.status == "member":
                L.leaving = True
        self.recovering = None
        self._publish(members_new, src, mode, "failure" if mode == "snapshot" else "restart", prev_world, ck)

    # ------------------------------------------------------------------ end
    def _finalize(self, model_dir: Optional[Path]) -> None:
        import torch

        blob = self.store.get(FINAL)
        st = torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)
        self.t.model.load_state_dict(st["model"])
        self.t.optimizer.load_state_dict(st["optimizer"])
        ts = st["train_state"]
        self.history.epochs = list(ts["epochs"])
        self.history.steps = int(ts["step"])
        rates = [r["samples_per_s"] for r in self.epoch_records.values() if r.get("samples_per_s")]
        self.history.samples_per_s = (sum(rates) / len(rates)) if rates else self._sps()
        self._save_model(model_dir)
        last = self.history.epochs[-1] if self.history.epochs else {}
        acc = f", val_accuracy {last['val_accuracy']:.4f}" if "val_accuracy" in last else ""
        self.say(f"ElasticTrainer: done, {self.history.steps} steps, {len(self.history.rescales)} resize(s), "
                 f"{len(self.history.failures)} failure(s){acc}")

    def _save_model(self, model_dir: Optional[Path]) -> None:
        if model_dir is not None:
            model_io.save_model(self.t.model, model_dir)

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
