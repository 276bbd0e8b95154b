"""Shared pieces of the elastic benchmarks: a ~1M-parameter CNN, synthetic image data,
and helpers to run ElasticTrainer and a hand-written DDP worker under torchrun."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from table import print_table

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
WORKER = HERE / "bench_elastic_ddp_worker.py"
HW = 16          # image side
N_CLASSES = 10


def make_cnn(seed: int = 0) -> nn.Module:
    """~0.99M parameters: two VGG blocks on 16x16 RGB images and a wide classifier."""
    torch.manual_seed(seed)

    def block(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.ReLU(), nn.Conv2d(o, o, 3, padding=1), nn.ReLU(),
                             nn.MaxPool2d(2))

    return nn.Sequential(block(3, 32), block(32, 64), nn.Flatten(), nn.Linear(64 * (HW // 4) ** 2, 896), nn.ReLU(),
                         nn.Linear(896, N_CLASSES))


def make_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def synthetic(n: int, seed: int = 0):
    """Images whose mean colour depends on the class (so the loss goes down)."""
    from torch.utils.data import TensorDataset

    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, N_CLASSES, (n,), generator=g)
    x = torch.randn(n, 3, HW, HW, generator=g) * 0.5
    x += (y.float().view(-1, 1, 1, 1) / N_CLASSES - 0.5)
    return TensorDataset(x, y)


def make_get_datasets(n_train: int, n_test: int = 0):
    def get_datasets():
        return synthetic(n_train, seed=0), (synthetic(n_test, seed=1) if n_test else None)

    return get_datasets


def loss_fn(out, y):
    return nn.functional.cross_entropy(out, y)


def median_step_time(times: list[float]) -> float:
    d = [b - a for a, b in zip(times, times[1:])]
    return statistics.median(d) if d else float("nan")


def trimmed_step_time(times: list[float], keep: float = 0.75) -> float:
    """Mean step interval over the fastest ``keep`` fraction: on a shared machine the slow
    tail is other tenants' interference, while per-step overheads (including periodic ones)
    stay in the mean."""
    d = sorted(b - a for a, b in zip(times, times[1:]))
    d = d[: max(1, int(len(d) * keep))]
    return sum(d) / len(d)


def load_average() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBRUNNER_")}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def run_torchrun(nproc: int, start: int, stop: int, batch: int, n_train: int, ckpt: Path | None,
                 log: Path, threads: int = 1) -> dict:
    """One torchrun launch of the DDP worker; returns the worker's log plus wall times."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
           f"--nproc-per-node={nproc}", str(WORKER), "--from-step", str(start), "--to-step", str(stop),
           "--batch", str(batch), "--n-train", str(n_train), "--out-json", str(log), "--threads", str(threads)]
    if ckpt is not None:
        cmd += ["--ckpt", str(ckpt)]
    t0 = time.time()
    r = subprocess.run(cmd, env=clean_env(), capture_output=True, text=True, timeout=300)
    t1 = time.time()
    if r.returncode != 0:
        raise RuntimeError(f"torchrun failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    out = json.loads(log.read_text())
    out.update(launch_t0=t0, launch_t1=t1)
    return out


def tmpdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="nbrunner-bench-"))


print_rows = print_table  # the table of bench/table.py