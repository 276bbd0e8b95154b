"""(c) Resize pause distribution: >= 10 in-place resizes 1 <-> 2 learners, ~1M-parameter CNN.

A slot source alternates the grant between 1 and 2 slots a few steps after each resize;
the pause of each resize is what ElasticTrainer records (wall time between the last step
at the old size and the first step at the new size, measured by the learner that stays).
Two standby learners are kept started so that a grant gets a learner at once."""
from __future__ import annotations

import statistics
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_elastic_common import (  # noqa: E402
    load_average, loss_fn, make_cnn, make_get_datasets, make_optimizer, print_rows,
)

BATCH = 64
STEPS = 400
RESIZES = 12
EVERY = 6


class AlternatingSlots:
    """1 slot, then 2, then 1, ... flipping EVERY steps after each completed resize."""

    def __init__(self, host="local", resizes=RESIZES, every=EVERY):
        from nbrunner.elastic import Slot

        self.Slot = Slot
        self.host, self.left, self.every = host, resizes, every
        self.n, self.next_at, self.step = 1, every, 0
        self.used = set()
        self.lock = threading.Lock()
        self.slots = [Slot(host, 0)]
        self.counter = 1

    def start(self, min_gpus, max_gpus):
        pass

    def on_progress(self, step):
        with self.lock:
            self.step = step
            if self.left > 0 and self.next_at is not None and step >= self.next_at:
                self.next_at = None
                self.left -= 1
                if len(self.slots) == 1:
                    self.slots.append(self.Slot(self.host, self.counter))
                    self.counter += 1
                else:
                    self.slots.pop()

    def resized(self, step):
        with self.lock:
            self.next_at = step + self.every

    def granted(self):
        with self.lock:
            return list(self.slots)

    def released(self, slots):
        pass

    def close(self):
        pass


def run() -> list[dict]:
    from nbrunner.elastic import Callback, ElasticTrainer

    src = AlternatingSlots()

    class OnResize(Callback):
        def on_rescale(self, info):
            src.resized(info["step"])

    model = make_cnn(0)
    trainer = ElasticTrainer(model, make_get_datasets(BATCH * STEPS), loss_fn, make_optimizer(model),
                             callbacks=[OnResize()])
    hist = trainer.train(epochs=1, effective_batch_size=BATCH, max_gpus=2, slots=src, verbose=0,
                         checkpoint_every=0, prestart=2)
    pauses = sorted(r["pause_s"] for r in hist.rescales)
    shrink = [r["pause_s"] for r in hist.rescales if r["to"] < r["from"]]
    grow = [r["pause_s"] for r in hist.rescales if r["to"] > r["from"]]
    n = len(pauses)
    med = statistics.median(pauses)
    p90 = pauses[min(n - 1, int(round(0.9 * (n - 1))))]
    print(f"{n} resizes; pauses (s): {[round(p, 3) for p in pauses]}; shrink median "
          f"{statistics.median(shrink):.3f}, grow median {statistics.median(grow):.3f} "
          f"(load average {load_average()})", file=sys.stderr)
    goal = 0.25
    return [
        {"benchmark": f"resize pause median (s), {n} resizes 1<->2, 1M-param CNN", "value": med, "baseline": goal,
         "ratio": med / goal, "goal": "<= 0.25 s", "ok": n >= 10 and med <= goal},
        {"benchmark": "resize pause p90 (s)", "value": p90, "baseline": goal, "ratio": p90 / goal,
         "goal": "info", "ok": True},
        {"benchmark": "resize pause max (s)", "value": pauses[-1], "baseline": goal, "ratio": pauses[-1] / goal,
         "goal": "info", "ok": True},
    ]


if __name__ == "__main__":
    print_rows(run())
