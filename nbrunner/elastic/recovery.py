"""Recovery: resuming from the newest checkpoint, and going on without a learner that died.

When a learner dies the survivors fail their collective and report; the driver then publishes
a generation without it, from the newest in-memory snapshot among the survivors (the steps
after that snapshot are recomputed), or, if no survivor kept one, restarts from the newest
checkpoint (or the initial state).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from .checkpoints import latest_checkpoint, remove_stale
from .generations import GenerationPlanner
from .options import TrainOptions
from .pool import LearnerPool
from .protocol import Rendezvous
from .state import fresh_train_state


@dataclass
class Resume:
    """Where a run starts."""

    train_state: dict
    path: Optional[Path] = None       # the checkpoint it comes from
    n_train: Optional[int] = None     # the training-set size that checkpoint was written for
    finished: bool = False            # that checkpoint holds a finished run


def resume(options: TrainOptions, ckpt_dir: Optional[Path], model, optimizer) -> Resume:
    """The newest checkpoint in ``ckpt_dir`` (its model and optimizer state loaded into
    ``model`` and ``optimizer``), or a fresh start.  A temp file left by a write the previous
    run did not finish is removed, never read.

    Raises:
        ValueError: the checkpoint was written with another batch size, seed or batch adaptation.
    """
    remove_stale(ckpt_dir)
    path, checkpoint = latest_checkpoint(ckpt_dir)
    if checkpoint is None:
        return Resume(fresh_train_state())
    cfg = checkpoint.get("config", {})
    if cfg.get("effective_batch_size") != options.effective_batch_size or cfg.get("seed") != options.seed:
        raise ValueError(
            f"checkpoint {path} was written with effective_batch_size={cfg.get('effective_batch_size')}, "
            f"seed={cfg.get('seed')}; this run uses {options.effective_batch_size}, {options.seed}: "
            f"use another checkpoint_dir or the same settings")
    if bool(cfg.get("adaptive_batch", False)) != options.adaptive_batch:
        raise ValueError(f"checkpoint {path} was written with adaptive_batch={bool(cfg.get('adaptive_batch'))}; "
                         f"this run uses {options.adaptive_batch}: use another checkpoint_dir or the same setting")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    ts = checkpoint["train_state"]
    return Resume(ts, path, cfg.get("n_train"),
                  finished=len(ts["epochs"]) >= options.epochs and ts["loss_n"] == 0)


class Recovery:
    """The recovery under way, if any: since when, and why."""

    def __init__(self, options: TrainOptions, rendezvous: Rendezvous, planner: GenerationPlanner,
                 pool: LearnerPool, ckpt_dir: Optional[Path], say: Callable[[str], None]):
        self.options, self.rendezvous, self.planner, self.pool = options, rendezvous, planner, pool
        self.ckpt_dir = ckpt_dir
        self.say = say
        self.since: Optional[float] = None
        self.why = ""

    @property
    def pending(self) -> bool:
        return self.since is not None

    def start(self, why: str) -> None:
        """A learner of a generation in play was lost: abort the generations in play (the
        running one too: its learners may wait in a collective for a peer that is gone
        without closing its connections, a host cut off) and plan without it."""
        if self.since is None:
            self.since, self.why = time.monotonic(), why
            for g in {self.planner.gen, self.planner.active_gen} - {0}:
                self.rendezvous.abort(g)

    def advance(self, have_checkpoints: bool) -> None:
        """Publish the recovery generation once every live member of the newest plan reported
        its failure (killing the ones that do not respond in time).  ``have_checkpoints``:
        the run wrote (or resumed from) a checkpoint, the restart point if no survivor kept
        a snapshot."""
        now = time.monotonic()
        planner, pool = self.planner, self.pool
        G = planner.gen
        plan = planner.newest()
        members = [pool.get(lid) for lid in plan.members] if plan else []
        alive = [L for L in members if L.alive]
        pending = [L for L in alive if L.failed_gen < G]
        # learners of the previous generation that are not in plan G leave by themselves
        if pending:
            if now - self.since < self.options.timeout + 5:
                return
            for L in pending:  # hung in a collective: give up on them
                self.say(f"  learner {L.lid} did not respond: stopping it")
                pool.kill(L)
            return
        gset = set(pool.granted)
        survivors = [L for L in alive if L.slot in gset]
        ready = pool.granted_learners("ready")
        with_state = [L for L in survivors if L.snap_step is not None]
        prev_world = planner.running_world()
        if with_state:
            src = max(with_state, key=lambda L: L.snap_step)
            mode, checkpoint = "snapshot", None
        else:
            cand = survivors + ready
            if not cand:
                return  # wait for replacements to start
            src = cand[0]
            latest, _ = latest_checkpoint(self.ckpt_dir) if have_checkpoints else (None, None)
            mode, checkpoint = "restart", (str(latest) if latest else None)
            self.say("  no learner kept a snapshot: restarting from "
                     + (f"checkpoint {latest}" if latest else "the initial state"))
        members_new = [src] + [L for L in survivors if L is not src] + [L for L in ready if L not in survivors]
        members_new = members_new[: self.options.cap]
        for L in pool.alive():
            if L not in members_new and L.status == "member":
                pool.leave(L)
        self.since = None
        planner.publish(members_new, src, mode, "failure" if mode == "snapshot" else "restart", prev_world, checkpoint)
