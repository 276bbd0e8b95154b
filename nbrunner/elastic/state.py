"""A learner's training state in memory: snapshots (copies reusing their buffers) and the
broadcast that gives one learner's state to the others of a new generation."""
from __future__ import annotations

import copy
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
