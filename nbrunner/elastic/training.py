"""A learner's training loop: optimizer steps on its chunk of the global batch, epoch ends
(validation, the epoch row, checkpoints), and the step boundary at which it leaves the running
generation for a newer plan the learners agreed on (:mod:`.switch`)."""
from __future__ import annotations

import time
from typing import Optional, Union

import torch
import torch.distributed as dist

from ..core.config import LEARNER_STALLED_S
from .batch_adaptation import BatchAdaptation, pieces
from .batches import StepBatches, batch_len
from .checkpoints import FORMAT, CheckpointWriter
from .group import GenerationGroup
from .protocol import LearnerExit, Plan, Poller, step_seed
from .state import LearnerState
from .switch import SwitchAgreement



class TrainingLoop:
    """Trains a learner's state over the generations it runs.  ``cfg`` is the run's config
    as the driver sent it; records for the driver go through ``poller``."""

    def __init__(self, lid: str, state: LearnerState, batches: StepBatches, loss_fn, metrics: Optional[dict],
                 cfg: dict, poller: Poller, checkpoints: CheckpointWriter, adapt: Optional[BatchAdaptation] = None):
        self.lid = lid
        self.state, self.batches = state, batches
        self.loss_fn, self.metrics = loss_fn, metrics
        self.cfg = cfg
        self.poller = poller
        self.checkpoints = checkpoints
        self.agreement = SwitchAgreement()
        self.t_last_step: Optional[float] = None
        self.adapt = adapt  # batch-size adaptation (None: the fixed global batch)

    def stalled(self) -> bool:
        """No step ended for a while (a learner making steps reaches a newer plan by itself)."""
        return self.t_last_step is None or time.time() - self.t_last_step >= LEARNER_STALLED_S

    def train(self, plan: Plan, rank: int, group: GenerationGroup) -> Union[str, int]:
        """Train in generation ``plan`` until the run is done (``"done"``) or the learners
        agreed on a newer plan (its number).

        Raises:
            LearnerExit: the driver is gone.
        """
        W = plan.world
        cfg = self.cfg
        state = self.state
        if W > 1:
            net = group.wrap(state.model, state.device, bool(cfg.get("find_unused_parameters", False)),
                             bool(cfg.get("broadcast_buffers", True)))
            if self.adapt is not None:
                net.register_comm_hook(None, self.adapt.hook(W))
        else:
            net = state.model
        state.note_world(W)
        if self.adapt is not None:
            self.adapt.start(state.ts)
        is_source = self.lid == plan.source
        # only rank 0's view of the newest plan is used (the control all-reduce shares it):
        # the other learners' pollers need not take a store round trip every 50 ms
        self.poller.interval = 0.05 if rank == 0 else 0.5
        t_prev = self.t_last_step
        first = True
        snapshot_every = max(1, int(cfg.get("snapshot_every", 10)))
        spe, total = self.batches.steps_per_epoch, self.batches.total
        while True:
            if self.poller.error is not None:
                raise LearnerExit(3)
            if self._epoch_over(W, spe):
                self.end_epoch(W, rank)
            if self._done(total):
                return "done"
            if first:
                first = False
                if is_source:
                    now = time.time()
                    self.poller.push({"type": "gen", "gen": plan.gen, "step": state.step, "from": plan.prev_world,
                                      "to": W, "reason": plan.reason, "mode": plan.mode, "lid": self.lid,
                                      "pause_s": (now - t_prev) if (t_prev is not None and plan.reason != "start") else None,
                                      "t": now}, urgent=True)
            req = self.step(net, W, rank)
            s = state.step
            snap = s % snapshot_every == 0
            if self.agreement.pending and (snap or req > plan.gen or self._boundary(s, W, spe, total)):
                req = max(req, self._drain())  # the train state must be whole: snapshot, epoch end, leaving
            if snap:
                state.snapshot()
            if req > plan.gen:
                return req  # the caller dissolves the group once this frame (and its DDP reference) is gone

    def _epoch_over(self, W: int, spe: int) -> bool:
        if self.adapt is not None:
            return self.adapt.epoch_over(self.state.ts, W)
        return self.state.step // spe > self.state.epochs_done

    def _done(self, total: int) -> bool:
        return self.adapt.done(self.state.ts) if self.adapt is not None else self.state.step >= total

    def _boundary(self, s: int, W: int, spe: int, total: int) -> bool:
        """Step ``s`` ended an epoch (or the run)."""
        if self.adapt is not None:
            return self.adapt.epoch_over(self.state.ts, W)
        return s >= total or s % spe == 0

    def step(self, net, W: int, rank: int) -> int:
        """One optimizer step; returns the newest plan the learners agreed on so far."""
        if self.adapt is not None:
            return self._adaptive_step(net, W, rank)
        state = self.state
        step = state.step
        x, y, share = self.batches.train_batch(step, W, rank, state.device)
        self._seed(step_seed(self.cfg["seed"], step, rank))
        state.begin_step()
        opt = state.opt
        opt.zero_grad(set_to_none=True)
        out = net(x)
        # each learner weights its loss by its share of the global batch; DDP averages the
        # gradients over the W learners (its own allreduce: a Python comm hook that sums costs
        # throughput), hence the factor W, exact for a power of two and within 1 ulp otherwise
        loss = self.loss_fn(out, y)
        if share != 1.0:
            loss = loss * share
        loss.backward()
        opt.step()
        state.end_step()
        now = time.time()
        self.t_last_step = now
        if W == 1:
            self._account(float(loss.item()), step + 1, now, W, rank)
            return self.poller.req
        # the previous step's control vector has had a whole step to arrive: take it, then
        # launch this step's, which the next step end (or _drain) takes
        req = self._drain()
        self.agreement.launch(self.poller.req if rank == 0 else 0, loss, step + 1, now, W, rank)
        return req

    def _adaptive_step(self, net, W: int, rank: int) -> int:
        """One optimizer step at the batch of ``W`` learners, its learning rate scaled by the gain
        (see :mod:`.batch_adaptation`); returns the newest plan the learners agreed on so far."""
        state, ad = self.state, self.adapt
        ts, step = state.ts, state.step
        B = ad.batch(W)
        chunks = self.batches.chunks_at(len(ts["epochs"]), ts["pos"], B, W, rank, state.device, pieces(W, B))
        self._seed(step_seed(self.cfg["seed"], step, rank))
        state.begin_step()
        opt = state.opt
        opt.zero_grad(set_to_none=True)
        grads = ad.backward(net, [p for g in opt.param_groups for p in g["params"]], self.loss_fn, chunks, W, B)
        with ad.scaled_lr(opt, ts, B):
            opt.step()
        ts["pos"] += B
        state.end_step()
        now = time.time()
        self.t_last_step = now
        if W == 1:
            self._account(float(grads.loss.item()), step + 1, now, W, rank, (grads.local, grads.total_sqr))
            return self.poller.req
        req = self._drain()
        self.agreement.launch(self.poller.req if rank == 0 else 0, grads.loss, step + 1, now, W, rank,
                              (grads.local, grads.total_sqr / W))
        return req

    def _seed(self, s: int) -> None:
        # torch.manual_seed also queues a lazy seed for every uninitialised accelerator
        # backend, formatting a stack trace for each (~0.5 ms a step); only the generators
        # the model can draw from are seeded here
        torch.default_generator.manual_seed(s)
        if self.state.device.type == "cuda":
            torch.cuda.manual_seed(s)

    def _drain(self) -> int:
        """Wait for the pending control all-reduce and account its step; returns the plan it
        carries (0 if none is pending)."""
        agreed = self.agreement.drain()
        if agreed is None:
            return 0
        self._account(agreed.loss, agreed.step, agreed.t, agreed.world, agreed.rank, agreed.extra)
        return agreed.req

    def _account(self, gloss: float, step: int, t: float, W: int, rank: int, grads: tuple = ()) -> None:
        """Count a finished step's global loss in the epoch's mean (and, adapting the batch, its
        gradient statistics ``grads``: ``(L, |G|^2)`` summed over the learners); rank 0 reports the step."""
        self.state.count_loss(gloss)
        extra = {}
        if self.adapt is not None:
            B = self.adapt.batch(W)
            if grads:
                self.adapt.account(self.state.ts, grads[0], grads[1], W if W > 1 else pieces(W, B), B)
            extra = self.adapt.report(self.state.ts, B) if rank == 0 else {}
        if rank == 0:
            self.poller.push({"type": "step", "step": step, "loss": gloss, "world": W, "t": t, **extra})

    def settle(self) -> None:
        """After a failed collective: account the pending control vector if its all-reduce
        completed; otherwise the live state is not snapshotted (its loss sum lacks a step)."""
        agreed, lost = self.agreement.settle()
        if agreed is not None:
            self._account(agreed.loss, agreed.step, agreed.t, agreed.world, agreed.rank, agreed.extra)
        elif lost:
            self.state.mark_inconsistent()

    def release(self) -> None:
        """The generation's process group is gone: drop its collectives."""
        self.agreement.release()

    def validate(self, W: int, rank: int) -> dict:
        """The validation figures of the live model over the whole test set (each learner
        computes its chunk)."""
        out_rec: dict = {}
        batches = self.batches
        if batches.test_ds is None or batches.n_test == 0:
            return out_rec
        model = self.state.model
        device = self.state.device
        model.eval()
        names = list(self.metrics) if self.metrics else []
        sums = torch.zeros(4 + len(names), dtype=torch.float64)
        with torch.no_grad():
            for x, y in batches.test_batches(W, rank, int(self.cfg.get("eval_batch_size") or 512), device):
                out = model(x)
                n = batch_len(y)
                sums[0] += float(self.loss_fn(out, y)) * n
                sums[1] += n
                if (isinstance(out, torch.Tensor) and out.dim() == 2 and out.shape[1] > 1 and isinstance(y, torch.Tensor)
                        and y.dim() == 1 and not y.is_floating_point()):
                    sums[2] += float((out.argmax(1) == y).sum())
                    sums[3] += 1
                for j, name in enumerate(names):
                    sums[4 + j] += float(self.metrics[name](out, y)) * n
        model.train()
        if W > 1:
            t = sums.to(device)
            dist.all_reduce(t)
            sums = t.cpu()
        n = max(float(sums[1]), 1.0)
        out_rec["val_loss"] = float(sums[0]) / n
        if sums[3] > 0:
            out_rec["val_accuracy"] = float(sums[2]) / n
        for j, name in enumerate(names):
            out_rec[f"val_{name}"] = float(sums[4 + j]) / n
        return out_rec

    def end_epoch(self, W: int, rank: int) -> None:
        val = self.validate(W, rank)
        if self.adapt is not None:  # the epoch row shows the batch and statistics it ended with
            report = self.adapt.report(self.state.ts, self.adapt.batch(W))
            val.update({k: v for k, v in report.items() if k not in ("gns", "progress")})
            self.state.ts["pos"] = 0
        rec = self.state.close_epoch(val, W)
        if rank == 0:
            self.poller.push({"type": "epoch", "record": rec}, urgent=True)
            e = rec["epoch"]
            every = int(self.cfg.get("checkpoint_every") or 0)
            if self.checkpoints.directory is not None and every > 0 and (
                    e % every == 0 or e == int(self.cfg["epochs"])):
                self.write_checkpoint(e)

    def write_checkpoint(self, epoch: int) -> None:
        b, step = self.batches, self.state.step
        position = self.state.ts["pos"] if self.adapt is not None else step % b.steps_per_epoch
        state = {"format": FORMAT, **self.state.cpu_copy(),
                 "epoch": epoch, "position": position, "step": step,
                 "rng": {"torch": torch.get_rng_state()},
                 "config": {"effective_batch_size": b.batch_size, "seed": self.cfg["seed"], "n_train": b.n_train,
                            "steps_per_epoch": b.steps_per_epoch}}
        if self.adapt is not None:
            state["config"].update(adaptive_batch=True, max_batch=self.cfg.get("max_batch"))

        def written(path) -> None:
            self.poller.push({"type": "checkpoint", "path": str(path), "epoch": epoch, "step": step}, urgent=True)

        self.checkpoints.write(state, step, written)
