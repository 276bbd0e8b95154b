"""Hand-written DistributedDataParallel training loop, launched by torchrun.

The same model, data, global batch split and optimizer as ElasticTrainer: each step takes
the next ``--batch`` samples of the epoch permutation, rank r its contiguous chunk.  Runs
steps [--start, --stop), resuming from / saving to ``--ckpt`` (checkpoint-and-restart
elasticity), and logs rank 0's step end times to ``--log``."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

T_PROCESS = time.time()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_elastic_common import loss_fn, make_cnn, make_optimizer, synthetic  # noqa: E402

from nbrunner.elastic.protocol import epoch_permutation, split_bounds  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--from-step", type=int, default=0)
    ap.add_argument("--to-step", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--n-train", type=int, required=True)
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--out-json", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    t_init = time.time()
    model = make_cnn(0)
    opt = make_optimizer(model)
    step = a.from_step
    if a.ckpt and os.path.exists(a.ckpt):
        ck = torch.load(a.ckpt, weights_only=True)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        step = ck["step"]
    ddp = DDP(model)
    data = synthetic(a.n_train, seed=0)
    spe = a.n_train // a.batch
    lo, hi = split_bounds(a.batch, world, rank)
    t_ready = time.time()
    times = []
    perm_epoch, perm = -1, None
    while step < a.to_step:
        epoch, pos = divmod(step, spe)
        if epoch != perm_epoch:
            perm, perm_epoch = epoch_permutation(a.n_train, a.seed, epoch), epoch
        idx = perm[pos * a.batch + lo:pos * a.batch + hi]
        x, y = data.tensors[0][idx], data.tensors[1][idx]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        step += 1
        times.append(time.time())
    t_save0 = time.time()
    if rank == 0 and a.ckpt:
        tmp = a.ckpt + ".tmp"
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step}, tmp)
        os.replace(tmp, a.ckpt)
    t_saved = time.time()
    if rank == 0:
        with open(a.out_json, "w") as f:
            json.dump({"times": times, "world": world, "start": a.from_step, "stop": a.to_step, "t_process": T_PROCESS,
                       "t_init": t_init, "t_ready": t_ready, "t_save0": t_save0, "t_saved": t_saved}, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
