"""(b) Time lost to one shrink and one grow: ElasticTrainer in place vs torchrun restart.

ElasticTrainer: ``ScriptedSlots([(0, 2), (S1, 1), (S2, 2)])`` with the ~1M-parameter CNN;
learners resize in place at step boundaries.

torchrun (checkpoint-and-restart elasticity, what ``torchrun --nnodes=1:2`` does when the
membership changes): the same DDP loop runs steps [0, S1) with ``--nproc-per-node=2``,
saves a checkpoint and exits; it is relaunched with ``--nproc-per-node=1`` for [S1, S2),
and again with 2 for [S2, N), each launch resuming from the checkpoint.

Time lost per resize = (end of the first step at the new size - end of the last step at
the old size) - the median step time at the new size, i.e. the wall time during which no
training happened, measured the same way for both from rank 0's step end times.  A second
pair of rows gives the wall-clock view: the whole resized run minus a static 2-learner run
of the same steps, corrected for the steps that ran at 1 learner."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_elastic_common import (  # noqa: E402
    loss_fn, make_cnn, make_get_datasets, make_optimizer, median_step_time, print_rows, run_torchrun, tmpdir,
)

BATCH = 128
STEPS = 60
S1, S2 = 20, 40


def _segments(records):
    """[(world, [end times...]), ...] for consecutive steps at the same world size."""
    segs = []
    for step, world, t in records:
        if not segs or segs[-1][0] != world:
            segs.append((world, []))
        segs[-1][1].append(t)
    return segs


def _gaps(segs):
    gaps = []
    for (w0, t0), (w1, t1) in zip(segs, segs[1:]):
        gaps.append(max(0.0, (t1[0] - t0[-1]) - median_step_time(t1)))
    return gaps


def elastic_run(script):
    import time

    from nbrunner.elastic import Callback, ElasticTrainer, LocalSlots, ScriptedSlots

    recs = []

    class StepTimes(Callback):
        def on_step(self, step, logs):
            recs.append((step, logs["learners"], logs["time"]))

    model = make_cnn(0)
    trainer = ElasticTrainer(model, make_get_datasets(BATCH * STEPS), loss_fn, make_optimizer(model),
                             callbacks=[StepTimes()])
    slots = ScriptedSlots(script) if script else LocalSlots(2)
    t0 = time.time()
    hist = trainer.train(epochs=1, effective_batch_size=BATCH, max_gpus=2, slots=slots, verbose=0, checkpoint_every=0)
    wall = time.time() - t0
    recs.sort()
    return recs, hist, wall


def torchrun_runs(plan):
    d = tmpdir()
    ckpt = d / "ckpt.pt"
    out = []
    for i, (nproc, a, b) in enumerate(plan):
        out.append(run_torchrun(nproc, a, b, BATCH, BATCH * STEPS, ckpt, d / f"log{i}.json"))
    return out


def run() -> list[dict]:
    # ElasticTrainer, resized 2 -> 1 -> 2, and static
    recs, hist, wall_el = elastic_run([(0, 2), (S1, 1), (S2, 2)])
    segs = _segments(recs)
    assert [w for w, _ in segs] == [2, 1, 2], [w for w, _ in segs]
    gaps_el = _gaps(segs)
    recs_s, _, wall_el_static = elastic_run(None)
    t2 = median_step_time([t for _, _, t in recs_s])
    t1 = median_step_time(segs[1][1])
    n1 = len(segs[1][1])
    lost_wall_el = wall_el - wall_el_static - n1 * (t1 - t2)

    # torchrun checkpoint-and-restart, and static
    runs = torchrun_runs([(2, 0, S1), (1, S1, S2), (2, S2, STEPS)])
    segs_tr = [(r["world"], r["times"]) for r in runs]
    gaps_tr = _gaps(segs_tr)
    static_tr = torchrun_runs([(2, 0, STEPS)])[0]
    wall_tr = runs[-1]["launch_t1"] - runs[0]["launch_t0"]
    wall_tr_static = static_tr["launch_t1"] - static_tr["launch_t0"]
    t2_tr = median_step_time(static_tr["times"])
    t1_tr = median_step_time(runs[1]["times"])
    lost_wall_tr = wall_tr - wall_tr_static - (S2 - S1) * (t1_tr - t2_tr)

    lost_el, lost_tr = sum(gaps_el), sum(gaps_tr)
    print(f"elastic gaps {[round(g, 3) for g in gaps_el]} s, pauses {[r['pause_s'] for r in hist.rescales]}; "
          f"torchrun gaps {[round(g, 3) for g in gaps_tr]} s", file=sys.stderr)
    print(f"wall: elastic {wall_el:.1f} s vs static {wall_el_static:.1f} s; torchrun {wall_tr:.1f} s vs static "
          f"{wall_tr_static:.1f} s; step times elastic 2:{t2:.3f} 1:{t1:.3f}, torchrun 2:{t2_tr:.3f} 1:{t1_tr:.3f}",
          file=sys.stderr)
    ratio = lost_tr / max(lost_el, 1e-6)
    wratio = lost_wall_tr / max(lost_wall_el, 1e-3)
    return [
        {"benchmark": "training time lost to 1 shrink + 1 grow (s): ElasticTrainer vs torchrun restart",
         "value": lost_el, "baseline": lost_tr, "ratio": ratio, "goal": ">= 10x less (ratio >= 10)", "ok": ratio >= 10},
        {"benchmark": "wall-clock time lost vs static run, adjusted for 1-learner steps (s), elastic vs torchrun",
         "value": lost_wall_el, "baseline": lost_wall_tr, "ratio": wratio,
         "goal": "info (noisy: difference of two runs)", "ok": True},
    ]


if __name__ == "__main__":
    print_rows(run())
