"""Batch-size adaptation in nbrunner.sim (statistical efficiency, batch choice, replay); pure, no process."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import nbrunner.sim.engine as engine
from nbrunner.sim import AppModel, BatchAdaptation, main, simulate
from nbrunner.sim.apps import load_apps
from nbrunner.sim.workload import TRACES_DIR

from .test_sim import PLACEMENTS, toy_step

LOCAL_BSZ = [2, 4, 8, 16, 32]
# Two epochs of 100 steps of the initial batch 8 each (progress, iteration, grad_sqr, grad_var); at batch 32
# the run made them in 50 steps (gain 2) and then 30 (gain 10/3): larger batches pay later in training.
VALIDATION = {8: [(100.0, 100, 1.0, 3.0), (200.0, 200, 1.0, 15.0)],
              32: [(100.5, 50, 1.0, 3.0), (201.0, 80, 1.0, 15.0)]}


def workload(traces: Path, name: str, rows: str) -> Path:
    """A workload CSV in the workloads directory beside ``traces`` (so those traces are its default)."""
    path = traces.parent / "workloads" / f"{name}.csv"
    path.parent.mkdir(exist_ok=True)
    path.write_text("name,time,application,num_replicas,batch_size\n" + rows)
    return path


def write_toy(traces: Path, app: str = "toy") -> Path:
    d = traces / app
    d.mkdir(parents=True)
    lines = ["placement,local_bsz,step_time,sync_time"]
    lines += [f"{p},{b},{toy_step(sum(map(int, p)), b)[0]},{toy_step(sum(map(int, p)), b)[1]}"
              for p in PLACEMENTS for b in LOCAL_BSZ]
    (d / "placements.csv").write_text("\n".join(lines) + "\n")
    for bsz, rows in VALIDATION.items():
        text = ["progress,iteration,metric,grad_sqr,grad_var"]
        text += [f"{p},{it},0.5,{sqr},{var}" for p, it, sqr, var in rows]
        (d / f"validation-{bsz}.csv").write_text("\n".join(text) + "\n")
    return d


@pytest.fixture
def toy_app(tmp_path: Path) -> tuple[Path, BatchAdaptation]:
    traces = tmp_path / "traces"
    return traces, BatchAdaptation(AppModel("toy", write_toy(traces)))


def test_statistical_efficiency_as_the_runs_measured_it(toy_app):
    _, ad = toy_app
    assert (ad.init_batch, ad.max_batch) == (8, 32)
    # gain = the epoch's progress / its steps in the run at that batch; efficiency = gain / (B / 8).
    assert ad.gain(8, 0) == pytest.approx(1.0) and ad.gain(8, 1) == pytest.approx(1.0)
    assert ad.gain(32, 0) == pytest.approx(100.5 / 50)
    assert ad.efficiency(32, 0) == pytest.approx(100.5 / 50 / 4)
    assert ad.efficiency(32, 1) == pytest.approx(100.5 / 30 / 4)  # later in training larger batches pay more
    assert ad.efficiency(32, 1) > ad.efficiency(32, 0)
    assert ad.gain(16, 0) == pytest.approx(1 + (100.5 / 50 - 1) / 3)  # linear in the batch between 8 and 32
    # Held outside the validated batches, and never above B / 8.
    assert ad.gain(64, 1) == pytest.approx(100.5 / 30) and ad.gain(4, 0) == pytest.approx(0.5)
    # A run that keeps a validated batch needs exactly that run's steps: one ruler with fixed-batch jobs.
    assert sum(100.0 / ad.gain(32, e) for e in (0, 1)) == pytest.approx(80, rel=0.01)
    # Epochs end at the smallest progress of their row; the job trains for every measured epoch.
    assert list(ad.epoch_ends) == [100.0, 200.0] and ad.work == 200.0
    assert [ad.epoch_of(p) for p in (0, 99.9, 100.0, 150, 200)] == [0, 0, 1, 1, 2]


def test_best_batch_maximises_goodput(toy_app):
    _, ad = toy_app
    app = ad.app
    for gpus in (1, 2, 4, 8):
        for epoch in (0, 1):
            batch, rate = ad.best(gpus, epoch)
            assert ad.init_batch <= batch <= ad.max_batch and batch in ad.grid
            assert rate == pytest.approx(ad.gain(batch, epoch) / app.step_time(gpus, batch))
            assert all(rate >= ad.gain(b, epoch) / app.step_time(gpus, int(b)) - 1e-12 for b in ad.grid)
            assert ad.goodput(gpus, epoch) == pytest.approx(8 * rate)
    # More GPUs make a larger batch worth its lower efficiency.
    assert ad.best(8, 1)[0] > ad.best(1, 0)[0]


def test_an_adapting_job_finishes_when_its_epochs_are_done(toy_app):
    traces, ad = toy_app
    path = workload(traces, "one", "toy-0,0,toy,2,8\n")
    res = simulate(path, 4, "fairshare", restart_pause=3.0, adaptive_batch=True)
    job = res.jobs[0]
    gpus = ad.best_replicas(4)
    assert job.max_gpus == gpus and job.epoch == 1  # it finished in its last epoch
    expected = 3.0 + sum(100.0 / ad.best(gpus, e)[1] for e in (0, 1))
    assert res.avg_jct_s == pytest.approx(expected)
    assert job.run_batch == ad.best(gpus, 1)[0]
    # Without adaptation the same job runs its workload batch for the measured 200 steps.
    fixed = simulate(path, 4, "fairshare", restart_pause=3.0)
    assert fixed.jobs[0].run_batch == 8
    assert fixed.avg_jct_s == pytest.approx(3.0 + 200 * ad.app.step_time(fixed.jobs[0].gpus, 8))
    # Static and Tiresias keep the workload's batch even when asked to adapt.
    assert simulate(path, 4, "tiresias", restart_pause=3.0, adaptive_batch=True).jobs[0].run_batch == 8


def test_goodput_sees_goodput_at_this_epochs_efficiency(toy_app, monkeypatch):
    traces, ad = toy_app
    path = workload(traces, "two", "toy-0,0,toy,2,8\ntoy-1,5,toy,2,8\n")
    seen = []
    real = engine.allocate

    def spy(total, demands, policy="fairshare", **kw):
        # as a live job reports it: throughput at the batch it runs and that batch's efficiency
        seen.extend({g: t * d["efficiency"][g] for g, t in d["throughput"].items()} for d in demands)
        return real(total, demands, policy, **kw)

    monkeypatch.setattr(engine, "allocate", spy)
    res = simulate(path, 4, "goodput", restart_pause=1.0, interval=2.0, adaptive_batch=True)
    assert all(j.finish is not None for j in res.jobs)
    epoch_values = [{g: ad.goodput(g, e) for g in thr} for thr in seen if thr for e in (0, 1)]
    for thr in (t for t in seen if t):  # every size it ran, valued at one epoch's efficiency
        assert any(thr == pytest.approx(v) for v in epoch_values)
    assert any(thr == pytest.approx({g: ad.goodput(g, 1) for g in thr}) for thr in seen if thr)


def test_cli_adaptive_batch(toy_app, capsys):
    traces, _ = toy_app
    path = workload(traces, "cli", "toy-0,0,toy,2,8\ntoy-1,5,toy,2,32\n")
    assert main([str(path), "--gpus", "4", "--policy", "goodput", "--adaptive-batch", "--json"]) == 0
    adaptive = json.loads(capsys.readouterr().out)
    assert main([str(path), "--gpus", "4", "--policy", "goodput", "--json"]) == 0
    fixed = json.loads(capsys.readouterr().out)
    assert set(adaptive) == set(fixed) and adaptive["avg_jct_s"] != fixed["avg_jct_s"]


def test_the_shipped_traces_give_adapting_and_fixed_jobs_one_ruler():
    """On every shipped application, a job that keeps a validated batch through every epoch of the adaptive model
    needs the steps the fixed-batch model counts (the measured run's), within 0.5%."""
    for name, app in load_apps(TRACES_DIR).items():
        ad = BatchAdaptation(app)
        ends = np.concatenate(([0.0], ad.epoch_ends))
        for batch in app.validation:
            steps = sum((ends[e + 1] - ends[e]) / ad.gain(batch, e) for e in range(len(ad.epoch_ends)))
            assert steps == pytest.approx(app.total_steps(batch), rel=0.005), (name, batch)
            assert all(0 < ad.efficiency(batch, e) <= 1 for e in range(len(ad.epoch_ends)))
