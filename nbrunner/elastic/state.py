"""A learner's training state in memory (:class:`LearnerState`): model, optimizer, position
and epoch rows, snapshots (copies reusing their buffers), and the broadcast that gives one
learner's state to the others of a new generation."""
from __future__ import annotations

import copy
import io
import time
from typing import Any, Optional

import torch
import torch.distributed as dist


class Snapshot:
    __slots__ = ("step", "model", "opt", "ts")

    def __init__(self, step, model, opt, ts):
        self.step, self.model, self.opt, self.ts = step, model, opt, ts


def clone_state(obj, device=None):
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        return t.to(device, copy=True) if device is not None else t.clone()
    if isinstance(obj, dict):
        return {k: clone_state(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clone_state(v, device) for v in obj]
    if isinstance(obj, tuple):
        return tuple(clone_state(v, device) for v in obj)
    return copy.deepcopy(obj)


def copy_into(dst, src) -> bool:
    """Copy ``src`` into the same-shaped structure ``dst`` in place; False (and ``dst``
    possibly partly written) when the structures differ."""
    if isinstance(src, torch.Tensor):
        if not isinstance(dst, torch.Tensor) or dst.shape != src.shape or dst.dtype != src.dtype \
                or dst.device != src.device:
            return False
        dst.copy_(src.detach())
        return True
    if isinstance(src, dict):
        if not isinstance(dst, dict) or dst.keys() != src.keys():
            return False
        for k, v in src.items():
            if isinstance(v, (torch.Tensor, dict, list, tuple)):
                if not copy_into(dst[k], v):
                    return False
            elif dst[k] != v:
                dst[k] = copy.deepcopy(v)
        return True
    if isinstance(src, (list, tuple)):
        if not isinstance(dst, (list, tuple)) or len(dst) != len(src):
            return False
        for i, v in enumerate(src):
            if isinstance(v, (torch.Tensor, dict, list, tuple)):
                if not copy_into(dst[i], v):
                    return False
            elif dst[i] != v:
                if isinstance(dst, tuple):
                    return False
                dst[i] = copy.deepcopy(v)
        return True
    return False


def strip_tensors(obj, out: list):
    if isinstance(obj, torch.Tensor):
        out.append(obj)
        return ("__tensor__", len(out) - 1)
    if isinstance(obj, dict):
        return {k: strip_tensors(v, out) for k, v in obj.items()}
    if isinstance(obj, list):
        return [strip_tensors(v, out) for v in obj]
    if isinstance(obj, tuple):
        return tuple(strip_tensors(v, out) for v in obj)
    return obj


def fill_tensors(obj, tensors: list):
    if isinstance(obj, tuple) and len(obj) == 2 and obj[0] == "__tensor__":
        return tensors[obj[1]]
    if isinstance(obj, dict):
        return {k: fill_tensors(v, tensors) for k, v in obj.items()}
    if isinstance(obj, list):
        return [fill_tensors(v, tensors) for v in obj]
    if isinstance(obj, tuple):
        return tuple(fill_tensors(v, tensors) for v in obj)
    return obj


def broadcast_state(model, opt, train_state: dict, src: int, rank: int, device) -> Optional[dict]:
    """Give learner ``src``'s model, optimizer and train state to every learner of the group:
    one broadcast of the structure, then one flat buffer per dtype.  Returns the train state
    received (None on ``src``, which keeps its own)."""
    obj: list[Any] = [None]
    tensors: list[torch.Tensor] = []
    if rank == src:
        sd = model.state_dict()
        mkeys = list(sd.keys())
        tensors.extend(sd[k] for k in mkeys)
        nmodel = len(tensors)
        ostate = strip_tensors(opt.state_dict(), tensors)
        obj[0] = {"ts": train_state, "mkeys": mkeys, "nmodel": nmodel, "opt": ostate,
                  "spec": [(t.dtype, tuple(t.shape)) for t in tensors]}
    dev = device if device.type == "cuda" else None
    dist.broadcast_object_list(obj, src=src, device=dev)
    meta = obj[0]
    spec = meta["spec"]
    # one flat buffer per dtype
    by_dtype: dict = {}
    for i, (dt, shape) in enumerate(spec):
        by_dtype.setdefault(dt, []).append(i)
    received: list[Optional[torch.Tensor]] = [None] * len(spec)
    for dt, idxs in sorted(by_dtype.items(), key=lambda kv: str(kv[0])):
        numels = [int(torch.Size(spec[i][1]).numel()) for i in idxs]
        if rank == src:
            flat = torch.cat([tensors[i].detach().reshape(-1).to(device) for i in idxs]) if idxs else None
        else:
            flat = torch.empty(sum(numels), dtype=dt, device=device)
        dist.broadcast(flat, src=src)
        if rank != src:
            off = 0
            for i, n in zip(idxs, numels):
                received[i] = flat[off:off + n].view(spec[i][1])
                off += n
    if rank != src:
        sd = model.state_dict()
        with torch.no_grad():
            for k, t in zip(meta["mkeys"], received[:meta["nmodel"]]):
                sd[k].copy_(t)
        opt.load_state_dict(fill_tensors(meta["opt"], [
            t.clone() if t is not None else None for t in received]))
        return meta["ts"]
    return None


def fresh_train_state() -> dict:
    """The train state of a run that has not made a step."""
    return {"step": 0, "loss_sum": 0.0, "loss_n": 0, "sizes": [], "epochs": []}


class LearnerState:
    """What a learner holds: the model and optimizer, the train state (``step``, the running
    epoch's loss sum and count, the world sizes it ran at, the epoch rows), the device they
    live on, and the newest in-memory snapshot of all three.

    ``consistent`` is False while the live state is not a whole step boundary: mid-step,
    received from a peer in a generation that failed, or missing a step's loss.  Only a
    consistent state is snapshotted when a failure is reported."""

    def __init__(self, model, opt, train_state: dict):
        self.model, self.opt, self.ts = model, opt, train_state
        self.device = torch.device("cpu")
        self.snap: Optional[Snapshot] = None
        self.consistent = True

    def bind(self, device, sync_batchnorm: bool = False) -> None:
        """Move the model to ``device`` (converting BatchNorm layers to the synchronised one
        if asked) and put it in training mode."""
        self.device = device
        self.model.to(device)
        if sync_batchnorm:
            from .sync_bn import convert_sync_batchnorm

            self.model = convert_sync_batchnorm(self.model, device.type)
        self.model.train()

    # ------------------------------------------------------------ train state
    @property
    def step(self) -> int:
        return self.ts["step"]

    @property
    def epochs_done(self) -> int:
        return len(self.ts["epochs"])

    def begin_step(self) -> None:
        self.consistent = False

    def end_step(self) -> None:
        self.ts["step"] += 1
        self.consistent = True

    def mark_consistent(self) -> None:
        self.consistent = True

    def mark_inconsistent(self) -> None:
        self.consistent = False

    def count_loss(self, loss: float) -> None:
        """Count a finished step's global loss in the running epoch's mean."""
        self.ts["loss_sum"] += loss
        self.ts["loss_n"] += 1

    def note_world(self, world: int) -> None:
        """The running epoch (also) runs at ``world`` learners."""
        sizes = self.ts["sizes"]
        if not sizes or sizes[-1] != world:
            sizes.append(world)

    def close_epoch(self, val: dict, world: int) -> dict:
        """Append the row of the epoch that ends now (``val``: its validation figures) and
        start the next one at ``world`` learners; returns the row."""
        ts = self.ts
        rec = {"epoch": len(ts["epochs"]) + 1, "train_loss": ts["loss_sum"] / max(1, ts["loss_n"]), **val,
               "world_sizes": list(ts["sizes"]), "step": ts["step"], "time": time.time()}
        ts["epochs"].append(rec)
        ts["loss_sum"], ts["loss_n"], ts["sizes"] = 0.0, 0, [world]
        return rec

    # ------------------------------------------------------------ snapshots
    @property
    def snap_step(self) -> Optional[int]:
        return self.snap.step if self.snap is not None else None

    def snapshot(self) -> None:
        """Copy of model, optimizer and position; reuses the previous snapshot's buffers
        when the structure is unchanged (a memcpy, no allocation)."""
        msd, osd = self.model.state_dict(), self.opt.state_dict()
        old = self.snap
        if old is not None and copy_into(old.model, msd) and copy_into(old.opt, osd):
            old.step, old.ts = self.ts["step"], copy.deepcopy(self.ts)
            return
        self.snap = Snapshot(self.ts["step"], clone_state(msd), clone_state(osd), copy.deepcopy(self.ts))

    def snapshot_if_behind(self) -> None:
        """Snapshot a consistent live state that is newer than the snapshot."""
        if self.consistent and (self.snap is None or self.snap.step < self.ts["step"]):
            self.snapshot()

    def restore_snapshot(self) -> None:
        snap = self.snap
        if snap is None:
            raise RuntimeError("recovery source has no snapshot")
        with torch.no_grad():
            self.model.load_state_dict(snap.model)
        self.opt.load_state_dict(clone_state(snap.opt))
        self.ts = copy.deepcopy(snap.ts)

    def load_checkpoint(self, path: str) -> None:
        ck = torch.load(path, map_location=self.device, weights_only=True)
        with torch.no_grad():
            self.model.load_state_dict(ck["model"])
        self.opt.load_state_dict(ck["optimizer"])
        self.ts = ck["train_state"]

    def broadcast(self, src: int, rank: int) -> None:
        """Take rank ``src``'s state (see :func:`broadcast_state`)."""
        received = broadcast_state(self.model, self.opt, self.ts, src, rank, self.device)
        if received is not None:
            self.consistent = False
            self.ts = received

    def cpu_copy(self) -> dict:
        """``{"model", "optimizer", "train_state"}``: a copy of the state on the CPU."""
        return {"model": clone_state(self.model.state_dict(), "cpu"),
                "optimizer": clone_state(self.opt.state_dict(), "cpu"),
                "train_state": copy.deepcopy(self.ts)}

    def final_bytes(self) -> bytes:
        buf = io.BytesIO()
        torch.save({"model": clone_state(self.model.state_dict(), "cpu"),
                    "optimizer": clone_state(self.opt.state_dict(), "cpu"),
                    "train_state": self.ts}, buf)
        return buf.getvalue()
