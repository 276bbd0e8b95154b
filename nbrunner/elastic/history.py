"""What a training run reports: its :class:`History`, the :class:`Callback` hooks, and the
:class:`HistoryRecorder` that turns the learners' records (steps, epochs, generations,
failures) into them.

The recorder keeps the epoch rows, streams progress and metrics to the job record
(:func:`nbrunner.control.runtime.report`) and prints a text progress line.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

from ..control import runtime
from . import adaptive
from .options import TrainOptions
from .protocol import ElasticTrainingError, Plan


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


class HistoryRecorder:
    """The driver's account of a run: its :class:`History`, the epoch rows, where the run
    is (step, newest step reached, learner count, throughput), and what it has reported to
    the job record, printed, and told the callbacks."""

    def __init__(self, options: TrainOptions, callbacks: list, say: Callable[[str], None], setup: Optional[str] = None):
        self.options, self.callbacks, self.say = options, callbacks, say
        self.setup = setup  # the run's training set-up (its job's kind), reported with each new generation
        self.history = History()
        self.epoch_records: dict[int, dict] = {}
        self.step = 0
        self.step_high = 0           # newest step any learner reached (a recovery may go back)
        self.world = 0
        self.spe: Optional[int] = None
        self.n_train: Optional[int] = None
        self._rate = deque(maxlen=64)
        self._batch = options.effective_batch_size  # the global batch of the running generation
        self._progress: Optional[float] = None      # adapting the batch: the learners' fraction done
        self._adapted: dict = {}                    # adapting the batch: the newest step's figures
        self._last_report = 0.0
        self._last_print = time.monotonic()
        self._resume_n_train: Optional[int] = None  # the training-set size of the checkpoint resumed from
        self._on_progress: Optional[Callable[[int], None]] = None

    def resumed(self, path, train_state: dict, n_train: Optional[int], finished: bool) -> None:
        """The run resumes from checkpoint ``path``, written for a training set of ``n_train``
        samples (and holding a finished run if ``finished``)."""
        self._resume_n_train = n_train
        self.history.resumed_from_step = int(train_state["step"])
        self.step = self.step_high = int(train_state["step"])
        for rec in train_state["epochs"]:
            self.epoch_records[rec["epoch"]] = rec
        self.history.checkpoints.append(str(path))
        self.say(f"ElasticTrainer: resuming from {path} (epoch {len(train_state['epochs'])}, step {train_state['step']})")
        if finished:
            self.history.epochs = list(train_state["epochs"])
            self.history.steps = int(train_state["step"])

    def begin(self, on_progress: Optional[Callable[[int], None]]) -> None:
        """Training begins; ``on_progress`` is told every step reached (the slot source's hook)."""
        self._on_progress = on_progress
        for cb in self.callbacks:
            cb.on_train_begin({"epochs": self.options.epochs, "effective_batch_size": self.options.effective_batch_size,
                               "resumed_from_step": self.history.resumed_from_step})

    def end(self, wall_time_s: float) -> History:
        self.history.wall_time_s = wall_time_s
        for cb in self.callbacks:
            cb.on_train_end(self.history)
        return self.history

    def sps(self) -> Optional[float]:
        """Samples per second over the recent steps at the current learner count."""
        if len(self._rate) < 2:
            return None
        (t0, s0), (t1, s1) = self._rate[0], self._rate[-1]
        if t1 <= t0 or s1 <= s0:
            return None
        return (s1 - s0) * self._batch / (t1 - t0)

    def total(self) -> Optional[int]:
        return self.spe * self.options.epochs if self.spe and not self.options.adaptive_batch else None

    def fraction(self, step: int) -> Optional[float]:
        """Progress (0..1) at ``step``: steps of the total, or the learners' own count when the
        batch adapts (epochs then have no fixed number of steps)."""
        total = self.total()
        return (step / total) if total else self._progress

    def _adaptive_metrics(self, r: dict) -> dict:
        """A step record's batch-adaptation figures, and the efficiency map the allocator reads."""
        self._batch = int(r["batch_size"])
        self._progress = r.get("progress")
        o = self.options
        eff = adaptive.efficiency_map(r.get("gns"), o.effective_batch_size, o.max_batch, self.n_train,
                                      o.max_gpus or o.cap)
        out = {k: r[k] for k in ("batch_size", "statistical_efficiency", "gain", "lr_factor", "noise_scale")}
        self._adapted = {**out, "efficiency": eff} if eff else out
        return self._adapted

    def on_dataset(self, r: dict) -> None:
        """A learner's ``ready`` record: the first one tells the dataset's size.

        Raises:
            ElasticTrainingError: the run resumes from a checkpoint of another training set.
        """
        if self.spe is not None:
            return
        self.spe = int(r["steps_per_epoch"])
        self.n_train = int(r["n_train"])
        if self._resume_n_train is not None and self._resume_n_train != self.n_train:
            raise ElasticTrainingError(
                f"the checkpoint was written for a training set of {self._resume_n_train} samples, "
                f"get_datasets() now returns {self.n_train}")
        total = self.spe * self.options.epochs
        self.say(f"ElasticTrainer: {self.options.epochs} epochs x {self.spe} steps (global batch "
                 f"{self.options.effective_batch_size}, {self.n_train} samples), up to {self.options.cap} learner(s)"
                 + (f", resuming at step {self.step}/{total}" if self.history.resumed_from_step else ""))

    def reached(self, step: int) -> None:
        """A learner reports it had reached ``step`` (when it failed)."""
        self.step_high = max(self.step_high, step)

    def on_step(self, r: dict) -> None:
        step = int(r["step"])
        self.step = step
        self.step_high = max(self.step_high, step)
        self.world = r["world"]
        extra = self._adaptive_metrics(r) if "batch_size" in r else {}
        self._rate.append((r["t"], step))
        sps = self.sps()
        if self._on_progress is not None:
            self._on_progress(step)
        for cb in self.callbacks:
            cb.on_step(step, {"loss": r["loss"], "learners": r["world"], "samples_per_s": sps, "time": r["t"],
                              **{k: v for k, v in extra.items() if k != "efficiency"}})
        now = time.monotonic()
        if now - self._last_report >= 1.0:
            self._last_report = now
            runtime.report(progress=self.fraction(step),
                           metrics={"loss": r["loss"], "samples_per_s": sps, "learners": r["world"], **extra}, step=step)
        if self.options.verbose and self.options.print_every > 0 and now - self._last_print >= self.options.print_every:
            self._last_print = now
            e, pos = divmod(step, self.spe or 1)
            self.say(f"  epoch {e + 1}/{self.options.epochs} step {pos}/{self.spe} loss {r['loss']:.4f} "
                     f"learners {r['world']}" + (f" {sps:.0f} samples/s" if sps else ""))

    def on_generation(self, plan: Plan, r: dict) -> None:
        """Generation ``plan`` made its first step (``r``: the source learner's record)."""
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
            for cb in self.callbacks:
                cb.on_rescale(info)
        self.step = int(r["step"])
        pause = {"resize_pause_s": r["pause_s"]} if plan.reason != "start" and r["pause_s"] is not None else {}
        setup = {"setup": self.setup} if self.setup else {}
        runtime.report(progress=self.fraction(self.step), metrics={"learners": plan.world, **pause, **setup},
                       step=self.step)  # the job's record shows the new size at once

    def on_epoch(self, rec: dict) -> None:
        e = int(rec["epoch"])
        first = e not in self.epoch_records
        self.epoch_records[e] = rec
        if not first:
            return
        total = self.total()
        done = (rec["step"] / total) if total else e / max(1, self.options.epochs)
        sps = self.sps()
        if sps:
            rec = dict(rec, samples_per_s=sps)
            self.epoch_records[e] = rec
        metrics = {k: v for k, v in rec.items() if k in ("train_loss", "val_loss") or k.startswith("val_")}
        # this report postpones the next per-step one (which carries the learner count and the
        # throughput): with epochs shorter than the report interval there is no other, so it
        # carries them too
        metrics["learners"] = self.world
        metrics.update(self._adapted)
        if sps:
            metrics["samples_per_s"] = sps
        runtime.report(progress=done if self.spe else None, metrics=metrics, epoch=e, step=rec["step"])
        self._last_report = time.monotonic()
        self._last_print = time.monotonic()
        if self.options.verbose:
            self.say(self._epoch_line(e, rec, sps))
        for cb in self.callbacks:
            cb.on_epoch_end(e, rec)

    def _epoch_line(self, e: int, rec: dict, sps: Optional[float]) -> str:
        epochs = self.options.epochs
        width = 20
        done = e / max(1, epochs)
        bar = "#" * int(round(done * width))
        parts = [f"epoch {e:>{len(str(epochs))}}/{epochs} [{bar:<{width}}] {done * 100:3.0f}%",
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
        return "  ".join(parts)

    def on_checkpoint(self, path: str) -> None:
        if path not in self.history.checkpoints:
            self.history.checkpoints.append(path)

    def failure(self, info: dict) -> None:
        """A learner failed (``info``: a row of ``History.failures``)."""
        self.history.failures.append(info)
        for cb in self.callbacks:
            cb.on_failure(info)

    def finished(self, train_state: dict) -> None:
        """Training ended with ``train_state`` (the final one)."""
        h = self.history
        h.epochs = list(train_state["epochs"])
        h.steps = int(train_state["step"])
        rates = [r["samples_per_s"] for r in self.epoch_records.values() if r.get("samples_per_s")]
        h.samples_per_s = (sum(rates) / len(rates)) if rates else self.sps()

    def done_line(self) -> str:
        h = self.history
        last = h.epochs[-1] if h.epochs else {}
        acc = f", val_accuracy {last['val_accuracy']:.4f}" if "val_accuracy" in last else ""
        return (f"ElasticTrainer: done, {h.steps} steps, {len(h.rescales)} resize(s), "
                f"{len(h.failures)} failure(s){acc}")
