"""Tests for the cluster simulator nbrunner.sim on a tiny hand-made trace set (pure: no process)."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

import nbrunner.core.goodput as goodput_mod
import nbrunner.sim.engine as engine
from nbrunner.sim import AppModel, load_workload, main, simulate
PLACEMENTS = ["1", "2", "3", "4", "44"]
LOCAL_BSZ = [4, 8, 16, 32]


def toy_step(r: int, local: int) -> tuple[float, float]:
    """Synthetic measurement: compute 0.1 + 0.01 * local, sync 0.01 * (r - 1)."""
    sync = 0.01 * (r - 1)
    return 0.1 + 0.01 * local + sync, sync


def write_app(traces: Path, app: str, validation: dict[int, list[int]]) -> None:
    d = traces / app
    d.mkdir(parents=True)
    lines = ["placement,local_bsz,step_time,sync_time"]
    for p in PLACEMENTS:
        for b in LOCAL_BSZ:
            step, sync = toy_step(sum(map(int, p)), b)
            lines.append(f"{p},{b},{step},{sync}")
    (d / "placements.csv").write_text("\n".join(lines) + "\n")
    lines = ["num_nodes,num_replicas,local_bsz,step_time,sync_time"]
    for b in LOCAL_BSZ:  # a worse, spread-out measurement of 8 GPUs that must be ignored
        lines.append(f"8,8,{b},9.0,1.0")
    (d / "scalability.csv").write_text("\n".join(lines) + "\n")
    for bsz, iters in validation.items():
        rows = ["progress,iteration,metric,grad_sqr,grad_var"]
        rows += [f"{(i + 1) * 10.0},{it},0.5,1.0,1.0" for i, it in enumerate(iters)]
        (d / f"validation-{bsz}.csv").write_text("\n".join(rows) + "\n")


@pytest.fixture
def toy(tmp_path: Path):
    """tmp_path/traces/{long,short} and a helper writing tmp_path/workloads/<name>.csv."""
    traces = tmp_path / "traces"
    write_app(traces, "long", {32: [1000, 2000]})  # 2000 steps at batch 32
    write_app(traces, "short", {32: [50, 100], 8: [300, 600]})  # 100 steps at batch 32

    def workload(name: str, rows: list[tuple]) -> Path:
        path = tmp_path / "workloads" / f"{name}.csv"
        path.parent.mkdir(exist_ok=True)
        lines = ["name,time,application,num_replicas,batch_size"]
        lines += [",".join(map(str, r)) for r in rows]
        path.write_text("\n".join(lines) + "\n")
        return path

    return traces, workload


def test_app_model_interpolation_and_accumulation(toy):
    traces, _ = toy
    m = AppModel("long", traces / "long")
    assert m.step_time(2, 32) == pytest.approx(toy_step(2, 16)[0])
    # local batch 12 lies between 8 and 16: linear interpolation.
    assert m.step_time(2, 24) == pytest.approx((toy_step(2, 8)[0] + toy_step(2, 16)[0]) / 2)
    # local batch 64 > 32 measured: two accumulated micro-batches of 32, one sync.
    step, sync = toy_step(1, 32)
    assert m.step_time(1, 64) == pytest.approx(2 * step - sync)
    # below the smallest measured local batch the step time is held, not extrapolated.
    assert m.step_time(8, 16) == pytest.approx(toy_step(8, 4)[0])
    # 8 GPUs packed on two nodes ("44") is used, not the spread-out scalability row.
    assert m.step_time(8, 32) == pytest.approx(toy_step(8, 4)[0])
    # 5..7 GPUs are not measured: linear in the GPU count between 4 and 8.
    assert m.step_time(6, 32) == pytest.approx((toy_step(4, 8)[0] + toy_step(8, 4)[0]) / 2)
    assert m.total_steps(32) == 2000
    # batch 16 has no file: samples interpolated in log(batch) between 8 and 32.
    s = AppModel("short", traces / "short")
    assert s.total_steps(16) == pytest.approx((600 * 8 + 100 * 32) / 2 / 16)


def test_best_replicas_is_fewest_gpus_at_peak_throughput(toy):
    traces, _ = toy
    m = AppModel("long", traces / "long")
    # batch 32: 1 GPU 0.42 s, 2 GPUs 0.27 s, 4 GPUs 0.21 s, 8 GPUs 0.21 s -> 4.
    assert m.best_replicas(32, 64) == 4
    assert m.best_replicas(32, 2) == 2


def test_single_job_finishes_in_expected_time(toy):
    traces, workload = toy
    path = workload("one", [("long-0", 10, "long", 2, 32)])
    expected = 2.0 + 2000 * toy_step(2, 16)[0]
    res = simulate(path, 4, "static", restart_pause=2.0)
    assert res.avg_jct_s == pytest.approx(expected)
    assert res.makespan_s == pytest.approx(expected)
    assert res.gpu_utilization == pytest.approx(0.5)
    # Elastic: alone on the cluster it gets its best size, 4 GPUs.
    res = simulate(path, 4, "fairshare", restart_pause=0.0)
    assert res.avg_jct_s == pytest.approx(2000 * toy_step(4, 8)[0])
    assert res.jobs[0].gpus == 4


def test_static_is_fifo_without_backfill(toy):
    traces, workload = toy
    path = workload("fifo", [("a", 0, "long", 3, 32), ("b", 1, "long", 2, 32), ("c", 2, "short", 1, 32)])
    res = simulate(path, 4, "static")
    a, b, c = res.jobs
    assert a.start == 0
    assert b.start == pytest.approx(a.finish)  # b (2 GPUs) does not fit next to a (3)
    assert c.start == pytest.approx(a.finish)  # c would fit next to a, but no backfill
    assert c.finish < b.finish


def test_fairshare_beats_static_on_contended_workload(toy):
    traces, workload = toy
    rows = [("long-0", 0, "long", 4, 32)]
    rows += [(f"short-{i}", 5 + 20 * i, "short", 2, 32) for i in range(6)]
    path = workload("contended", rows)
    static = simulate(path, 4, "static", restart_pause=2.0)
    fair = simulate(path, 4, "fairshare", restart_pause=2.0)
    prio = simulate(path, 4, "priority", restart_pause=2.0)
    assert fair.avg_jct_s < 0.6 * static.avg_jct_s
    for res in (static, fair, prio):
        assert all(j.finish is not None and j.finish > j.submit for j in res.jobs)
        assert 0 < res.gpu_utilization <= 1 + 1e-9
    # Resizes are charged: a bigger pause can only make things slower here.
    slow = simulate(path, 4, "fairshare", restart_pause=30.0)
    assert slow.avg_jct_s > fair.avg_jct_s
    assert sum(j.resizes for j in fair.jobs) > 0


def test_load_workload_reads_rows(toy):
    _, workload = toy
    jobs = load_workload(workload("w", [("x", 3, "long", 2, 32)]))
    assert [(j.name, j.submit, j.app, j.replicas, j.batch) for j in jobs] == [("x", 3.0, "long", 2, 32)]


def test_unknown_application_is_an_error(toy):
    _, workload = toy
    with pytest.raises(ValueError, match="nope"):
        simulate(workload("bad", [("x", 0, "nope", 1, 32)]), 4, "static")


def run_module(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """``python -m nbrunner.sim ARGS`` in this process: (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["nbrunner.sim", *args])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("nbrunner.sim", run_name="__main__", alter_sys=False)
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


def test_module_json_output_shape(toy, monkeypatch, capsys):
    traces, workload = toy
    path = workload("cli", [("long-0", 0, "long", 4, 32), ("short-1", 5, "short", 2, 32)])
    keys = {"avg_jct_s", "p99_jct_s", "makespan_s", "gpu_utilization", "restarts"}
    code, out, err = run_module(monkeypatch, capsys, str(path), "--gpus", "4", "--policy", "fairshare", "--json",
                                "--restart-pause", "1", "--interval", "30")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1
    data = json.loads(lines[0])
    assert set(data) == keys
    assert all(isinstance(data[k], float) and data[k] > 0 for k in keys - {"restarts"})
    assert isinstance(data["restarts"], int) and data["restarts"] >= 1  # the short job's arrival resizes the long one
    code, out, err = run_module(monkeypatch, capsys, str(path), "--traces", str(traces / "missing"))
    assert code != 0 and err.startswith("error:") and "Traceback" not in err


def test_main_in_process(toy, capsys):
    traces, workload = toy
    path = workload("cli", [("long-0", 0, "long", 4, 32), ("short-1", 5, "short", 2, 32)])
    for policy in ("static", "tiresias", "priority", "goodput"):
        assert main([str(path), "--gpus", "4", "--policy", policy, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert set(data) == {"avg_jct_s", "p99_jct_s", "makespan_s", "gpu_utilization", "restarts"}
    assert main([str(path), "--gpus", "4", "--traces", str(traces)]) == 0  # override + readable summary
    text = capsys.readouterr().out
    assert "avg JCT" in text and "utilization" in text


def test_tiresias_backfills_and_preempts_by_attained_service(toy, monkeypatch):
    traces, workload = toy
    path = workload("las", [("a", 0, "long", 3, 32), ("b", 1, "long", 2, 32), ("c", 2, "short", 1, 32)])
    res = simulate(path, 4, "tiresias", restart_pause=0.0)
    a, b, c = res.jobs
    assert c.start == pytest.approx(2.0)  # backfilled next to a (static would wait for a)
    assert b.start >= c.finish - 1e-9 or b.start >= a.finish - 1e-9
    # A tiny threshold demotes a after its first interval: b (queue 0) preempts it.
    monkeypatch.setattr(engine, "TIRESIAS_THRESHOLD", 10.0)
    res = simulate(path, 4, "tiresias", restart_pause=0.0, interval=60.0)
    a, b, c = res.jobs
    assert b.start < a.finish
    assert a.restarts >= 1 and res.restarts >= 1


def test_restart_pause_delays_every_start(toy):
    _, workload = toy
    path = workload("one", [("long-0", 10, "long", 2, 32)])
    fast = simulate(path, 4, "static", restart_pause=0.0)
    slow = simulate(path, 4, "static", restart_pause=30.0)
    assert slow.avg_jct_s == pytest.approx(fast.avg_jct_s + 30.0)
    assert slow.restarts == 0


def test_goodput_only_sees_sizes_the_job_ran(toy, monkeypatch):
    traces, workload = toy
    seen = []
    real = engine.allocate

    def spy(total, demands, policy="fairshare", **kw):
        for d in demands:
            seen.append((d["gpus"], dict(d["throughput"])))
        return real(total, demands, policy, **kw)

    monkeypatch.setattr(engine, "allocate", spy)
    rows = [("long-0", 0, "long", 4, 32)] + [(f"short-{i}", 5 + 20 * i, "short", 2, 32) for i in range(3)]
    res = simulate(workload("g", rows), 4, "goodput", restart_pause=2.0)
    assert all(j.finish is not None for j in res.jobs)
    assert seen and seen[0] == (0, {})  # first call: nothing measured
    for gpus, thr in seen:
        assert gpus == 0 or gpus in thr  # a running job has measured its current size
        assert all(1 <= n <= 4 for n in thr)
    # What it sees is the trace's throughput at that size.
    m = AppModel("long", traces / "long")
    _, thr = next((g, t) for g, t in seen if 4 in t)
    assert thr[4] == pytest.approx(32 / m.step_time(4, 32))


@pytest.mark.parametrize("kinds", [True, False])
def test_goodput_lends_a_job_the_sizes_its_kind_ran_once_it_has_measured_one(toy, monkeypatch, kinds):
    """Two runs of one application and batch (one kind, nbrunner.core.kinds): the second sees the sizes
    the first ran once it has measured its own first size, and nothing before; without kinds, its own only."""
    traces, workload = toy
    seen: dict[int, list] = {0: [], 1: [], 2: []}
    real = engine.allocate

    def spy(total, demands, policy="fairshare", **kw):
        for d in demands:
            seen[d["id"]].append((d["gpus"], dict(d["throughput"])))
        return real(total, demands, policy, **kw)

    monkeypatch.setattr(engine, "allocate", spy)
    rows = [("first", 0, "long", 4, 32), ("short", 20, "short", 2, 32), ("second", 200, "long", 4, 32)]
    res = simulate(workload("k", rows), 4, "goodput", restart_pause=2.0, kinds=kinds)
    ran_first = set(res.jobs[0].measured)
    own, lent = set(), set()
    for gpus, thr in seen[2]:
        if gpus == 0:
            assert thr == {}  # not measured yet: no kind's points either
            continue
        own.add(gpus)
        lent |= set(thr) - own
    assert own and len(ran_first) > 1
    assert (bool(lent) and lent <= ran_first) if kinds else not lent
    if kinds:
        m = AppModel("long", traces / "long")
        _, thr = next((g, t) for g, t in seen[2] if set(t) - {g})
        assert all(v == pytest.approx(32 / m.step_time(n, 32)) for n, v in thr.items())


def test_goodput_is_fed_attained_service(toy, monkeypatch):
    _, workload = toy
    calls = []
    real = engine.allocate

    def spy(total, demands, policy="fairshare", **kw):
        calls.append({d["id"]: (d.get("attained"), d["gpus"]) for d in demands})
        return real(total, demands, policy, **kw)

    monkeypatch.setattr(engine, "allocate", spy)
    rows = [("long-0", 0, "long", 4, 32), ("short-1", 100, "short", 2, 32)]
    res = simulate(workload("a", rows), 4, "goodput", restart_pause=2.0, interval=60.0)
    assert calls[0] == {0: (0.0, 0)}
    last: dict = {}
    for call in calls:
        for idx, (attained, gpus) in call.items():
            assert attained >= last.get(idx, 0.0)  # GPU-seconds only grow
            last[idx] = attained
    # The long job held its GPUs from 0 until the short one arrived: 4 GPUs x 100 s.
    assert next(c for c in calls if 1 in c)[0][0] == pytest.approx(400.0)
    assert max(j.attained for j in res.jobs) > 0
    calls.clear()
    simulate(workload("a", rows), 4, "goodput", restart_pause=2.0, attained=False)
    assert calls and all(a is None for c in calls for a, _ in c.values())  # the policy before short work first


def test_goodput_serves_the_newcomer_before_the_long_job(toy, monkeypatch):
    """A long job past the (here tiny) queue threshold yields to a short newcomer."""
    _, workload = toy
    monkeypatch.setattr(goodput_mod, "QUEUE_THRESHOLDS", (300.0,))
    rows = [("long-0", 0, "long", 4, 32)] + [(f"short-{i}", 100 + 60 * i, "short", 1, 32) for i in range(3)]
    path = workload("las", rows)
    las = simulate(path, 4, "goodput", restart_pause=2.0)
    flat = simulate(path, 4, "goodput", restart_pause=2.0, attained=False)
    jct = lambda res: [j.finish - j.submit for j in res.jobs]  # noqa: E731
    assert sum(jct(las)[1:]) < sum(jct(flat)[1:])  # the short jobs finish sooner
    assert all(j.finish is not None for j in las.jobs)
