"""What a training run reports: its :class:`History`, the :class:`Callback` hooks, and the
driver's reading of the learners' log records (steps, epochs, generations, failures).

Learners append records to the rendezvous store (``log_key(n)``); the driver reads them in
order, keeps the epoch rows, streams progress and metrics to the job record
(:func:`nbrunner.control.runtime.report`) and prints a text progress line.
"""
from __future__ import annotations

import pickle
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

from ..control import runtime
from .protocol import LOG_N, ElasticTrainingError, log_key, root_cause


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


def _tail(path, n: int = 40) -> str:
    try:
        with open(path, "rb") as f:
            return b"".join(f.readlines()[-n:]).decode(errors="replace")
    except OSError:
        return ""


class Reporting:
    """The driver's side of the learners' reports (a part of the training run)."""

    def _last_logs(self) -> str:
        dead = [L for L in self.learners.values() if L.status == "exited" and L.rc not in (0, None)]
        if not dead:
            return ""
        L = dead[-1]
        return f"\n--- last lines of {L.log_path} ---\n{_tail(L.log_path)}"

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
            tb = r.get("traceback", "")
            raise ElasticTrainingError(f"{root_cause(tb)} (raised by learner {r['lid']} during "
                                       f"{r.get('where', 'training')})\n{tb}")
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
            total = self.spe * self.options["epochs"]
            self.say(f"ElasticTrainer: {self.options['epochs']} epochs x {self.spe} steps (global batch "
                     f"{self.options['effective_batch_size']}, {self.n_train} samples), up to {self._cap()} learner(s)"
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
        if self.verbose and self.options["print_every"] > 0 and now - self._last_print >= self.options["print_every"]:
            self._last_print = now
            e, pos = divmod(step, self.spe or 1)
            self.say(f"  epoch {e + 1}/{self.options['epochs']} step {pos}/{self.spe} loss {r['loss']:.4f} "
                     f"learners {r['world']}" + (f" {sps:.0f} samples/s" if sps else ""))

    def _sps(self) -> Optional[float]:
        if len(self._rate) < 2:
            return None
        (t0, s0), (t1, s1) = self._rate[0], self._rate[-1]
        if t1 <= t0 or s1 <= s0:
            return None
        return (s1 - s0) * self.options["effective_batch_size"] / (t1 - t0)

    def _total(self) -> Optional[int]:
        return self.spe * self.options["epochs"] if self.spe else None

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
            done = e / max(1, self.options["epochs"])
            bar = "#" * int(round(done * width))
            parts = [f"epoch {e:>{len(str(self.options['epochs']))}}/{self.options['epochs']} [{bar:<{width}}] {done * 100:3.0f}%",
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
