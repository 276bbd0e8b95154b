"""(a) Steady-state training throughput: ElasticTrainer vs a hand-written DDP loop.

Same ~1M-parameter CNN, same synthetic data and global batch split, world size 2, gloo,
one intra-op thread per process.  Steady-state samples/s = global batch / mean interval
between rank 0's step end times after a warm-up, over the fastest 75% of the intervals
(the slow tail is other tenants of this shared machine; elastic's periodic costs such as
snapshots stay in).  Runs alternate (elastic, DDP, elastic, ...); the best of each is kept."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_elastic_common import (  # noqa: E402
    load_average, loss_fn, make_cnn, make_get_datasets, make_optimizer, trimmed_step_time, print_rows, run_torchrun, tmpdir,
)

BATCH = 128
STEPS = 80
WARMUP = 5
ROUNDS = 5


def elastic_sps(batch: int = BATCH, steps: int = STEPS, warmup: int = WARMUP) -> float:
    from nbrunner.elastic import Callback, ElasticTrainer, LocalSlots

    times: dict[int, float] = {}

    class StepTimes(Callback):
        def on_step(self, step, logs):
            times[step] = logs["time"]

    model = make_cnn(0)
    trainer = ElasticTrainer(model, make_get_datasets(batch * steps), loss_fn, make_optimizer(model),
                             callbacks=[StepTimes()])
    trainer.train(epochs=1, effective_batch_size=batch, max_gpus=2, slots=LocalSlots(2), verbose=0,
                  checkpoint_every=0, prestart=0)
    ts = [times[s] for s in sorted(times) if s > warmup]
    return batch / trimmed_step_time(ts)


def ddp_sps(batch: int = BATCH, steps: int = STEPS, warmup: int = WARMUP) -> float:
    d = tmpdir()
    out = run_torchrun(2, 0, steps, batch, batch * steps, None, d / "log.json", threads=1)
    return batch / trimmed_step_time(out["times"][warmup:])


def run() -> list[dict]:
    el, dd = [], []
    for _ in range(ROUNDS):
        el.append(elastic_sps())
        dd.append(ddp_sps())
    e, d = max(el), max(dd)
    print(f"elastic samples/s per round: {[round(x) for x in el]}, DDP: {[round(x) for x in dd]} "
          f"(load average {load_average()})", file=sys.stderr)
    return [{"benchmark": "elastic throughput, samples/s (2 learners, 1M-param CNN, batch 128) vs hand-written DDP",
             "value": e, "baseline": d, "ratio": e / d, "goal": "ratio >= 0.95", "ok": e / d >= 0.95}]


if __name__ == "__main__":
    print_rows(run())
