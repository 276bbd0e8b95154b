"""Sweeps: spec parsing and validation, dry runs, real sweeps with max_parallel, early stopping, REST."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from datetime import datetime

import pytest

import nbrunner
from nbrunner.core.errors import InvalidRequest, NotFound
from nbrunner.control.local_files import spec_source
from nbrunner.control.sweeps import ACTIVE_SWEEPS, sweep_ids
from nbrunner.core.sweeps.asha import rung_decision
from nbrunner.core.config import MAX_TRIALS
from nbrunner.core.sweeps.spec import count_trials, parse_spec
from nbrunner.core.sweeps.trials import generate_trials

from support import make_notebook, own_cluster, short_tmpdir

pytest_plugins = ["pytest_jupyter.jupyter_server"]

OBJ = {"metric": "score", "mode": "max"}


# ---- spec: parsing, expansion, validation (no cluster) --------------------------------------------

def test_grid_times_generate_and_fixed_values():
    spec = parse_spec({"parameters": {"lr": {"loguniform": [0.001, 0.1]}, "momentum": [0.5, 0.9],
                                      "layers": [1, 2, 3], "epochs": 5},
                       "generate": 4, "seed": 0, "objective": OBJ})
    assert count_trials(spec) == 2 * 3 * 4
    trials = generate_trials(spec)
    assert len(trials) == 24
    assert all(list(t) == ["lr", "momentum", "layers", "epochs"] and t["epochs"] == 5 for t in trials)
    # grid points in spec order, `generate` draws per grid point
    assert [(t["momentum"], t["layers"]) for t in trials[::4]] == [(0.5, 1), (0.5, 2), (0.5, 3), (0.9, 1), (0.9, 2), (0.9, 3)]
    assert len({t["lr"] for t in trials}) == 24
    # no distributions: one trial per grid point by default; only scalars: one trial
    assert len(generate_trials(parse_spec({"parameters": {"a": [1, 2, 3], "b": ["x", "y"]}, "objective": OBJ}))) == 6
    assert generate_trials(parse_spec({"parameters": {"a": 1}, "objective": OBJ})) == [{"a": 1}]
    assert generate_trials(parse_spec({"parameters": {"a": [[1, 2]]}, "objective": OBJ})) == [{"a": [1, 2]}]


def test_same_spec_and_seed_give_the_same_trials(tmp_path):
    text = """
parameters:
  lr: {loguniform: [0.001, 0.1]}
  drop: {uniform: [0.0, 0.5]}
  width: {randint: [16, 64]}
  act: {choice: [relu, tanh, gelu]}
  noise: {normal: [0, 1]}
  momentum: [0.5, 0.9]
generate: 5
seed: 7
objective: {metric: accuracy, mode: max}
"""
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    a = generate_trials(parse_spec(text))
    assert a == generate_trials(parse_spec(*spec_source(str(path)))) == generate_trials(parse_spec(*spec_source(path)))
    assert a == generate_trials(parse_spec(parse_spec(text).to_dict()))
    other = parse_spec(text.replace("seed: 7", "seed: 8"))
    assert generate_trials(other) != a
    assert json.loads(json.dumps(a)) == a  # plain JSON values, no numpy scalars
    assert all(type(t["width"]) is int and type(t["lr"]) is float for t in a)


def test_each_distribution_stays_in_its_bounds():
    spec = parse_spec({"parameters": {"u": {"uniform": [-2, 3]}, "lu": {"loguniform": [1e-4, 1e-1]},
                                      "ri": {"randint": [1, 3]}, "c": {"choice": ["a", 2, None, [1]]},
                                      "n": {"normal": [10, 0.5]}},
                       "generate": 600, "seed": 1, "objective": OBJ})
    trials = generate_trials(spec)
    assert all(-2 <= t["u"] <= 3 for t in trials)
    assert all(1e-4 <= t["lu"] <= 1e-1 for t in trials)
    assert {t["ri"] for t in trials} == {1, 2, 3}  # inclusive bounds
    assert sorted({json.dumps(t["c"]) for t in trials}) == sorted(json.dumps(v) for v in ["a", 2, None, [1]])
    # log-uniform: about as many draws in each decade
    decades = [sum(1 for t in trials if lo <= t["lu"] < lo * 10) for lo in (1e-4, 1e-3, 1e-2)]
    assert min(decades) > 120
    normal = [t["n"] for t in trials]
    assert abs(sum(normal) / len(normal) - 10) < 0.1
    assert len({t["u"] for t in trials}) == 600


BAD_SPECS = [
    ("not a mapping", "[1, 2]", "must be a mapping"),
    ("scalar", "42", "must be a mapping"),
    ("bad yaml", "parameters: {lr: [0.1, 0.2\nobjective: x", "not valid YAML"),
    ("unknown top-level key", {"paramters": {}, "objective": OBJ}, "unknown key 'paramters'"),
    ("unknown distribution", {"parameters": {"lr": {"lognormal": [0, 1]}}, "objective": OBJ}, "unknown distribution 'lognormal'"),
    ("two distributions", {"parameters": {"lr": {"uniform": [0, 1], "normal": [0, 1]}}, "objective": OBJ}, "exactly one"),
    ("uniform reversed", {"parameters": {"lr": {"uniform": [0.5, 0.1]}}, "objective": OBJ}, "reversed"),
    ("loguniform reversed", {"parameters": {"lr": {"loguniform": [0.1, 0.01]}}, "objective": OBJ}, "reversed"),
    ("randint reversed", {"parameters": {"n": {"randint": [5, 1]}}, "objective": OBJ}, "reversed"),
    ("loguniform zero", {"parameters": {"lr": {"loguniform": [0, 1]}}, "objective": OBJ}, "> 0"),
    ("normal sigma", {"parameters": {"x": {"normal": [0, 0]}}, "objective": OBJ}, "sigma must be > 0"),
    ("randint floats", {"parameters": {"n": {"randint": [1.5, 3]}}, "objective": OBJ}, "two integers"),
    ("uniform arity", {"parameters": {"lr": {"uniform": [1]}}, "objective": OBJ}, "two numbers"),
    ("uniform strings", {"parameters": {"lr": {"uniform": ["a", "b"]}}, "objective": OBJ}, "two numbers"),
    ("empty choice", {"parameters": {"act": {"choice": []}}, "objective": OBJ}, "non-empty list"),
    ("empty grid", {"parameters": {"momentum": []}}, "empty list"),
    ("bad parameter name", {"parameters": {"learning rate": [1]}, "objective": OBJ}, "not a Python identifier"),
    ("objective missing", {"parameters": {"a": [1, 2]}}, "objective is missing"),
    ("objective mode", {"parameters": {"a": [1]}, "objective": {"metric": "acc", "mode": "maximize"}}, "objective.mode"),
    ("objective mode missing", {"parameters": {"a": [1]}, "objective": {"metric": "acc"}}, "objective.mode"),
    ("objective metric", {"parameters": {"a": [1]}, "objective": {"mode": "max"}}, "objective.metric"),
    ("objective not mapping", {"objective": "accuracy"}, "objective must be a mapping"),
    ("generate zero", {"parameters": {"a": {"uniform": [0, 1]}}, "generate": 0, "objective": OBJ}, "generate must be a positive integer"),
    ("generate float", {"generate": 2.5, "objective": OBJ}, "generate must be a positive integer"),
    ("seed negative", {"seed": -1, "objective": OBJ}, "seed must be a non-negative integer"),
    ("max_parallel zero", {"max_parallel": 0, "objective": OBJ}, "max_parallel must be a positive integer"),
    ("rungs", {"objective": OBJ, "early_stopping": {"rungs": [2, 1]}}, "early_stopping.rungs"),
    ("reduction factor", {"objective": OBJ, "early_stopping": {"rungs": [1], "reduction_factor": 1}}, "reduction_factor"),
    ("early key", {"objective": OBJ, "early_stopping": {"rungs": [1], "grace": 2}}, "unknown key 'grace'"),
    ("too many trials", {"parameters": {"a": list(range(100)), "b": {"uniform": [0, 1]}}, "generate": 11,
                         "objective": OBJ}, f"limit of {MAX_TRIALS}"),
    ("not JSON", {"parameters": {"a": [float("nan")]}, "objective": OBJ}, "JSON"),
    ("missing file", "no-such-spec.yaml", "not found"),
]


@pytest.mark.parametrize("spec, words", [b[1:] for b in BAD_SPECS], ids=[b[0] for b in BAD_SPECS])
def test_bad_specs_are_refused_with_one_line(spec, words):
    with pytest.raises(InvalidRequest) as info:
        parse_spec(*spec_source(spec))
    message = str(info.value)
    assert words in message and "\n" not in message, message


def test_asha_rung_decision():
    # fewer trials at the rung than the reduction factor: no decision yet
    assert rung_decision(0.1, [0.1, 0.9], 3, "max") is None
    # top 1/eta continue (at least one), the others stop
    assert rung_decision(0.9, [0.1, 0.9, 0.5], 3, "max") == "continue"
    assert rung_decision(0.5, [0.1, 0.9, 0.5], 3, "max") == "stopped"
    assert rung_decision(0.1, [0.1, 0.9, 0.5], 3, "min") == "continue"
    assert rung_decision(0.5, [0.1, 0.9, 0.5, 0.7], 2, "max") == "stopped"
    assert rung_decision(0.7, [0.1, 0.9, 0.5, 0.7], 2, "max") == "continue"
    assert rung_decision(None, [None, 0.2], 2, "max") == "stopped"
    assert rung_decision(0.5, [0.5, 0.5], 2, "max") == "continue"  # ties favour the trial


# ---- CLI dry run (no cluster needed) ------------------------------------------------------------------

def run_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NBRUNNER_REDIS_URL", "NBRUNNER_WORKSPACE")}
    return subprocess.run([sys.executable, "-m", "nbrunner", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=60)


@pytest.mark.slow
def test_dry_run_prints_trials_and_submits_nothing():
    ws = short_tmpdir()
    make_notebook(ws / "train.ipynb", "print(LR, MOMENTUM)", parameters="LR = 0.1\nMOMENTUM = 0.9\nEPOCHS = 1")
    (ws / "spec.yaml").write_text("parameters:\n  LR: {loguniform: [0.001, 0.1]}\n  MOMENTUM: [0.5, 0.9]\n"
                                  "  EPOCHS: 3\ngenerate: 2\nseed: 3\nobjective: {metric: accuracy, mode: max}\n")
    p = run_cli("sweep", "train.ipynb", "spec.yaml", "--dry-run", "--json", cwd=ws)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert list(out) == ["trials"] and len(out["trials"]) == 4
    assert out["trials"] == [{"parameters": t} for t in generate_trials(parse_spec(*spec_source(ws / "spec.yaml")))]
    assert not (ws / ".nbrunner").exists() and not (ws / "runs").exists()  # no cluster started, nothing written
    p = run_cli("sweep", "train.ipynb", "spec.yaml", "--dir", str(ws), cwd=ws)  # a real sweep needs a cluster
    assert p.returncode == 2 and "nbrunner up" in p.stderr


@pytest.mark.parametrize("args, words", [
    (("train.ipynb", "bad.yaml"), "bounds are reversed"),
    (("train.ipynb", "typo.yaml"), "'LRR' is not in the parameters cell"),
    (("missing.ipynb", "spec.yaml"), "notebook not found"),
    (("train.ipynb", "nope.yaml"), "sweep spec file not found"),
    (("train.ipynb", "notyaml.yaml"), "not valid YAML"),
])
def test_dry_run_errors_are_one_line(tmp_path, monkeypatch, capsys, args, words):
    from nbrunner.client.cli import main

    make_notebook(tmp_path / "train.ipynb", "print(LR)", parameters="LR = 0.1")
    (tmp_path / "spec.yaml").write_text("parameters: {LR: [0.1]}\nobjective: {metric: accuracy, mode: max}\n")
    (tmp_path / "typo.yaml").write_text("parameters:\n  LRR: [0.1]\nobjective: {metric: accuracy, mode: max}\n")
    (tmp_path / "bad.yaml").write_text("parameters:\n  LR: {uniform: [1, 0]}\nobjective: {metric: accuracy, mode: max}\n")
    (tmp_path / "notyaml.yaml").write_text("parameters: {LR: [0.1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NBRUNNER_WORKSPACE", str(tmp_path))
    with pytest.raises(SystemExit) as info:
        main(["sweep", *args, "--dry-run", "--json"])
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 1 and len(err) == 1 and words in err[0], err


# ---- real sweeps ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sweep_ws():
    ws = short_tmpdir()
    make_notebook(ws / "score.ipynb",
                  "import time, nbrunner\ntime.sleep(SLEEP)\nnbrunner.record('score', X * 1.5)\nprint('score', X)",
                  parameters="X = 1\nSLEEP = 1.0")
    make_notebook(ws / "epochs.ipynb",
                  "import time, nbrunner\nfor epoch in range(EPOCHS):\n    time.sleep(STEP)\n"
                  "    nbrunner.record('score', Q * 10 + epoch)\n    print('epoch', epoch, flush=True)",
                  parameters="Q = 1\nEPOCHS = 5\nSTEP = 1.0")
    with own_cluster(ws, gpus=0, workers=3) as cluster:
        cluster.ws = ws
        yield cluster


def _t(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


@pytest.mark.slow
def test_sweep_runs_at_most_max_parallel_trials_and_ranks_them(sweep_ws):
    cluster = sweep_ws
    before = len(cluster.jobs())
    spec = {"parameters": {"X": [1, 4, 2, 3], "SLEEP": 1.0}, "max_parallel": 2,
            "objective": {"metric": "score", "mode": "max"}}
    sweep = cluster.sweep(cluster.ws / "score.ipynb", spec)
    assert len(sweep.jobs) == 2  # the rest wait for a free place
    assert cluster.store.r.sismember(ACTIVE_SWEEPS, sweep.id)
    sweep.wait(timeout=90)
    jobs = sweep.jobs
    assert len(jobs) == 4 and len(cluster.jobs()) == before + 4
    recs = [j.record for j in jobs]
    assert all(r.status == "completed" and r.sweep == sweep.id for r in recs), [(r.status, r.error) for r in recs]
    assert [r.parameters["X"] for r in recs] == [1, 4, 2, 3]
    # never more than max_parallel running at once
    events = sorted([(_t(r.started_at), 1) for r in recs] + [(_t(r.finished_at), -1) for r in recs],
                    key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, d in events:
        running += d
        peak = max(peak, running)
    assert peak == 2
    board = sweep.leaderboard()
    assert [e["parameters"]["X"] for e in board] == [4, 3, 2, 1]
    assert [e["rank"] for e in board] == [1, 2, 3, 4]
    assert [e["trial"] for e in board] == [1, 3, 2, 0]  # X = [1, 4, 2, 3]: a row's trial index is stable
    assert [e["objective"] for e in board] == [6.0, 4.5, 3.0, 1.5]
    assert all(set(e) == {"rank", "trial", "job", "parameters", "objective", "status"} and e["status"] == "completed"
               for e in board)
    d = sweep.to_dict()
    assert list(d) == ["id", "jobs", "leaderboard"] and d["id"] == sweep.id
    assert [j["id"] for j in d["jobs"]] == [j.id for j in jobs] and d["leaderboard"] == board
    assert not cluster.store.r.sismember(ACTIVE_SWEEPS, sweep.id) and sweep.status == "completed"


@pytest.mark.slow
def test_a_bad_sweep_creates_no_job(sweep_ws):
    cluster = sweep_ws
    before, sweeps = len(cluster.jobs()), len(sweep_ids(cluster.store))
    obj = {"metric": "score", "mode": "max"}
    for notebook, spec, kw, words in [
        ("score.ipynb", {"parameters": {"X": [1, 2], "Y": [1]}, "objective": obj}, {}, "'Y' is not in the parameters cell"),
        ("missing.ipynb", {"parameters": {"X": [1]}, "objective": obj}, {}, "notebook not found"),
        ("score.ipynb", {"parameters": {"X": [1]}}, {}, "objective is missing"),
        ("score.ipynb", {"parameters": {"X": [1]}, "objective": obj}, {"min_gpus": 2, "max_gpus": 1}, "greater than"),
        ("score.ipynb", {"parameters": {"X": [1]}, "objective": obj}, {"priority": 0}, "priority"),
        ("score.ipynb", {"parameters": {"X": [1]}, "objective": obj}, {"kernel": "nosuchkernel"}, "unknown kernel"),
    ]:
        with pytest.raises(InvalidRequest) as info:
            cluster.sweep(cluster.ws / notebook, spec, **kw)
        assert words in str(info.value)
    assert len(cluster.jobs()) == before and len(sweep_ids(cluster.store)) == sweeps
    with pytest.raises(NotFound):
        nbrunner.client.sweep.Sweep(cluster, "nosuchsweep")


@pytest.mark.slow
def test_early_stopping_cancels_the_worse_trials(sweep_ws):
    cluster = sweep_ws
    spec = {"parameters": {"Q": [4, 3, 2, 1], "EPOCHS": 5, "STEP": 1.0}, "max_parallel": 2,
            "objective": {"metric": "score", "mode": "max"},
            "early_stopping": {"rungs": [1, 2], "reduction_factor": 2}}
    sweep = cluster.sweep(cluster.ws / "epochs.ipynb", spec).wait(timeout=120)
    by_q = {j.record.parameters["Q"]: j.record for j in sweep.jobs}
    assert by_q[4].status == "completed" and by_q[4].metrics["score"] == 44
    for q in (2, 1):  # they started after a better trial had reported: stopped at their first rung
        assert by_q[q].status == "cancelled" and by_q[q].error == "stopped early at rung 1", (q, by_q[q].error)
        assert by_q[q].metrics["score"] == q * 10
    assert by_q[3].status == "completed" or by_q[3].error.startswith("stopped early at rung")
    board = sweep.leaderboard()
    assert [e["parameters"]["Q"] for e in board] == [4, 3, 2, 1]  # stopped trials keep their place
    assert [e["rank"] for e in board] == [1, 2, 3, 4]
    assert [e["status"] for e in board][2:] == ["cancelled", "cancelled"]
    assert [e["objective"] for e in board][2:] == [20.0, 10.0]


@pytest.mark.slow
def test_cli_sweep_submits_and_prints_json(sweep_ws):
    ws = sweep_ws.ws
    (ws / "cli.yaml").write_text("parameters:\n  X: {randint: [1, 9]}\n  SLEEP: 0.1\ngenerate: 2\nseed: 4\n"
                                 "objective: {metric: score, mode: max}\n")
    p = run_cli("sweep", "score.ipynb", "cli.yaml", "--json", "--priority", "6000", "--dir", str(ws), cwd=ws)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert list(out) == ["id", "jobs", "leaderboard"] and len(out["jobs"]) == 2
    assert all(j["sweep"] == out["id"] and j["priority"] == 6000 for j in out["jobs"])
    assert [e["parameters"] for e in out["leaderboard"]] == generate_trials(parse_spec(*spec_source(ws / "cli.yaml")))
    nbrunner.client.sweep.Sweep(sweep_ws, out["id"]).wait(timeout=60)


@pytest.mark.slow
def test_advancing_from_several_processes_never_submits_a_trial_twice(sweep_ws):
    """The scheduler advances the sweep; threads of this process hammer advance_sweeps meanwhile."""
    import threading

    from nbrunner.control.sweeps import advance_sweeps

    cluster = sweep_ws
    stop = threading.Event()

    def hammer():
        from nbrunner.control.store import JobStore

        store = JobStore.from_url(cluster.settings.url)
        while not stop.is_set():
            advance_sweeps(store, cluster.settings)

    threads = [threading.Thread(target=hammer, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        spec = {"parameters": {"X": [1, 2, 3], "SLEEP": 0.1}, "max_parallel": 1,
                "objective": {"metric": "score", "mode": "max"}}
        sweep = cluster.sweep(cluster.ws / "score.ipynb", spec).wait(timeout=90)
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    mine = [r for r in cluster.store.all() if r.sweep == sweep.id]
    assert len(mine) == 3 and sorted(r.parameters["X"] for r in mine) == [1, 2, 3]
    recs = sorted(mine, key=lambda r: r.started_at)
    assert all(_t(a.finished_at) <= _t(b.started_at) for a, b in zip(recs, recs[1:]))  # one at a time


@pytest.mark.slow
def test_cancel_a_sweep(sweep_ws):
    cluster = sweep_ws
    spec = {"parameters": {"X": [1, 2, 3], "SLEEP": 30}, "max_parallel": 1, "objective": {"metric": "score", "mode": "max"}}
    sweep = cluster.sweep(cluster.ws / "score.ipynb", spec)
    sweep.cancel().wait(timeout=10)
    assert sweep.status == "cancelled"
    assert [j.record.status for j in sweep.jobs] == ["cancelled"]
    assert [e["status"] for e in sweep.leaderboard()] == ["cancelled"] * 3
    time.sleep(1.5)  # the scheduler passes do not submit anything more
    assert len(sweep.jobs) == 1


# ---- REST -------------------------------------------------------------------------------------------

@pytest.fixture
def jp_root_dir(sweep_ws):
    return sweep_ws.ws


@pytest.mark.slow
async def test_rest_post_and_get_sweeps(api, sweep_ws):
    spec_yaml = "parameters:\n  X: [2, 5]\n  SLEEP: 0.1\nobjective: {metric: score, mode: min}\n"
    code, created = await api("POST", "sweeps", body={"notebook": "score.ipynb", "spec": spec_yaml})
    assert code == 201, created
    assert list(created) == ["id", "jobs", "leaderboard"] and len(created["jobs"]) == 2
    assert all(j["sweep"] == created["id"] and j["owner"] for j in created["jobs"])
    deadline = time.monotonic() + 90
    while True:
        code, got = await api("GET", "sweeps", created["id"])
        assert code == 200
        if all(j["status"] == "completed" for j in got["jobs"]):
            break
        assert time.monotonic() < deadline, got
        await asyncio.sleep(0.3)
    assert [e["parameters"]["X"] for e in got["leaderboard"]] == [2, 5]  # mode min
    assert [e["objective"] for e in got["leaderboard"]] == [3.0, 7.5]
    code, listed = await api("GET", "sweeps")
    assert code == 200 and created["id"] in [s["id"] for s in listed["sweeps"]]

    code, created = await api("POST", "sweeps", body={"notebook": "score.ipynb", "priority": 7000, "spec": {
        "parameters": {"X": [1]}, "objective": {"metric": "score", "mode": "max"}}})
    assert code == 201 and created["jobs"][0]["priority"] == 7000


BAD_REST = [
    ({"raw": b"{nope"}, 400, "not valid JSON"),
    ({"body": {"notebook": "score.ipynb"}}, 400, "spec"),
    ({"body": {"notebook": "score.ipynb", "spec": "parameters: [1"}}, 400, "not valid YAML"),
    ({"body": {"notebook": "score.ipynb", "spec": {"parameters": {"X": {"uniform": [2, 1]}}, "objective": OBJ}}}, 400, "reversed"),
    ({"body": {"notebook": "score.ipynb", "spec": {"parameters": {"X": [1]}}}}, 400, "objective"),
    ({"body": {"notebook": "score.ipynb", "spec": "spec.yaml"}}, 400, "must be a mapping"),  # never a server-side file
    ({"body": {"notebook": "score.ipynb", "spec": [1, 2]}}, 400, "spec must be a mapping"),
    ({"body": {"notebook": "../x.ipynb", "spec": {"objective": OBJ}}}, 400, "inside the server root"),
    ({"body": {"notebook": "missing.ipynb", "spec": {"objective": OBJ}}}, 400, "notebook not found"),
    ({"body": {"notebook": "score.ipynb", "spec": {"objective": OBJ}, "sweep": "x"}}, 400, "unknown field"),
]


@pytest.mark.parametrize("kw, code, words", BAD_REST, ids=[b[2] for b in BAD_REST])
@pytest.mark.slow
async def test_rest_bad_sweeps_get_400_and_create_nothing(api, sweep_ws, kw, code, words):
    (sweep_ws.ws / "spec.yaml").write_text("parameters: {X: [1]}\nobjective: {metric: score, mode: max}\n")
    _, before = await api("GET", "jobs")
    got, data = await api("POST", "sweeps", body=kw.get("body"), raw=kw.get("raw"))
    assert got == code and words in data["message"], (got, data)
    _, after = await api("GET", "jobs")
    assert len(after["jobs"]) == len(before["jobs"])


@pytest.mark.slow
async def test_rest_unknown_sweep_is_404(api):
    code, data = await api("GET", "sweeps", "nosuchsweep")
    assert code == 404 and "no sweep" in data["message"]
    code, data = await api("DELETE", "sweeps", "nosuchsweep")
    assert code == 404
