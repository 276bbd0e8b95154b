"""Recovery: resuming from the newest checkpoint, and going on without a learner that died.

When a learner dies the survivors fail their collective and report; the driver then publishes
a generation without it, from the newest in-memory snapshot among the survivors (the steps
after that snapshot are recomputed), or, if no survivor kept one, restarts from the newest
checkpoint (or the initial state).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

from . import model_io
from .protocol import abort_key


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


class Recovery:
    """Resuming and recovering (a part of the training run)."""

    def _resume(self) -> Optional[dict]:
        """The train state to start from: the newest checkpoint's (its model and optimizer
        state loaded), or a fresh one; None if that checkpoint holds a finished run.  A temp
        file left by a write the previous run did not finish is removed, never read."""
        options, ckpt_dir = self.options, self.ckpt_dir
        if ckpt_dir is not None and ckpt_dir.is_dir():
            for stale in ckpt_dir.glob(".ckpt-*.tmp"):
                try:
                    stale.unlink()
                except OSError:
                    pass
        train_state = {"step": 0, "loss_sum": 0.0, "loss_n": 0, "sizes": [], "epochs": []}
        path, checkpoint = _latest_checkpoint(ckpt_dir)
        self.resume_n_train = None
        if checkpoint is None:
            return train_state
        cfg = checkpoint.get("config", {})
        if cfg.get("effective_batch_size") != options["effective_batch_size"] or cfg.get("seed") != options["seed"]:
            raise ValueError(
                f"checkpoint {path} was written with effective_batch_size={cfg.get('effective_batch_size')}, "
                f"seed={cfg.get('seed')}; this run uses {options['effective_batch_size']}, {options['seed']}: "
                f"use another checkpoint_dir or the same settings")
        self.t.model.load_state_dict(checkpoint["model"])
        self.t.optimizer.load_state_dict(checkpoint["optimizer"])
        train_state = checkpoint["train_state"]
        self.resume_n_train = cfg.get("n_train")
        self.history.resumed_from_step = int(train_state["step"])
        self.step = self.step_high = int(train_state["step"])
        for rec in train_state["epochs"]:
            self.epoch_records[rec["epoch"]] = rec
        self.history.checkpoints.append(str(path))
        self.say(f"ElasticTrainer: resuming from {path} (epoch {len(train_state['epochs'])}, step {train_state['step']})")
        if len(train_state["epochs"]) >= options["epochs"] and train_state["loss_n"] == 0:
            self.history.epochs = list(train_state["epochs"])
            self.history.steps = int(train_state["step"])
            return None
        return train_state

    def _start_recovery(self, why: str) -> None:
        if self.final or self.finishing:
            return
        if self.recovering is None:
            self.recovering = {"since": time.monotonic(), "why": why}
            # the running generation too: its learners may wait in a collective for a peer
            # that is gone without closing its connections (a host cut off)
            for g in {self.gen, self.active_gen} - {0}:
                self.store.set(abort_key(g), b"1")

    def _recover(self) -> None:
        now = time.monotonic()
        G = self.gen
        plan = self.plans.get(G)
        members = [self.learners[lid] for lid in plan.members] if plan else []
        alive = [L for L in members if L.alive]
        pending = [L for L in alive if L.failed_gen < G]
        # learners of the previous generation that are not in plan G leave by themselves
        if pending:
            if now - self.recovering["since"] < self.options["timeout"] + 5:
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
            mode, checkpoint = "snapshot", None
        else:
            cand = survivors + ready
            if not cand:
                return  # wait for replacements to start
            src = cand[0]
            latest, _ = _latest_checkpoint(self.ckpt_dir) if self.history.checkpoints else (None, None)
            mode, checkpoint = "restart", (str(latest) if latest else None)
            self.say("  no learner kept a snapshot: restarting from "
                     + (f"checkpoint {latest}" if latest else "the initial state"))
        members_new = [src] + [L for L in survivors if L is not src] + [L for L in ready if L not in survivors]
        members_new = members_new[: self._cap()]
        for L in self.learners.values():
            if L.alive and L not in members_new and L.status == "member":
                L.leaving = True
        self.recovering = None
        self._publish(members_new, src, mode, "failure" if mode == "snapshot" else "restart", prev_world, checkpoint)

    def _save_model(self, model_dir: Optional[Path]) -> None:
        if model_dir is not None:
            model_io.save_model(self.t.model, model_dir)
