"""Pipelines on a real cluster: typed values step to step, a failure skipping its dependents, a
rerun from the failed step reusing the steps before it, cancel, a sweep as a step, bad files
refused with nothing created, the CLI, and the example pipeline of notebooks/."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nbrunner.control.pipelines import ACTIVE_PIPELINES, pipeline_ids
from nbrunner.core.errors import InvalidRequest

from support import make_notebook, own_cluster, short_tmpdir, wait_for

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

A = '''
import nbrunner
nbrunner.record("n", n * 2)
nbrunner.record("path", f"/data/{n}.npz")
nbrunner.record("ratio", 0.25)
'''
B = '''
import nbrunner
assert type(count) is int and count == 6, repr(count)
assert type(where) is str and where == "/data/3.npz", repr(where)
assert label == "ratio=0.25 of 6", repr(label)
nbrunner.record("score", count * 1.5)
'''
C = '''
import nbrunner
assert type(score) is float and score == 9.0, repr(score)
assert type(n) is int and n == 6
nbrunner.record("done", True)
'''
FLAKY = '''
import os
if not os.path.exists(flag):
    raise RuntimeError("no flag yet")
import nbrunner
nbrunner.record("ok", 1)
'''

THREE = {
    "name": "three",
    "steps": {
        "a": {"notebook": "a.ipynb", "parameters": {"n": 3}},
        "b": {"notebook": "b.ipynb", "needs": ["a"], "retries": 0,
              "parameters": {"count": "{{ steps.a.outputs.n }}", "where": "{{steps.a.outputs.path}}",
                             "label": "ratio={{ steps.a.outputs.ratio }} of {{ steps.a.outputs.n }}"}},
        "c": {"notebook": "c.ipynb", "needs": ["b"], "priority": 7000,
              "parameters": {"score": "{{ steps.b.outputs.score }}", "n": "{{ steps.a.outputs.n }}"}},
    },
}


@pytest.fixture(scope="module")
def ws() -> Path:
    ws = short_tmpdir("nbpl")
    make_notebook(ws / "a.ipynb", A, parameters="n = 0")
    make_notebook(ws / "b.ipynb", B, parameters="count = 0\nwhere = ''\nlabel = ''")
    make_notebook(ws / "c.ipynb", C, parameters="score = 0.0\nn = 0")
    make_notebook(ws / "flaky.ipynb", FLAKY, parameters="flag = 'x'")
    make_notebook(ws / "sleep.ipynb", "import time\ntime.sleep(300)")
    make_notebook(ws / "score.ipynb", "import nbrunner\nnbrunner.record('acc', x * 10)\nnbrunner.record('x', x)",
                  parameters="x = 0")
    return ws


@pytest.fixture(scope="module")
def cluster(ws):
    with own_cluster(ws, gpus=0, workers=2) as c:
        yield c


def test_three_steps_pass_typed_values_step_to_step(cluster):
    pipe = cluster.pipeline(THREE)
    assert pipe.record["status"] in ("queued", "running")
    assert pipe.record["steps"]["b"]["waiting"] == {"code": "needs", "message": "waits for a"}
    pipe.wait(timeout=240)
    assert pipe.status == "completed", pipe.record
    steps = pipe.steps
    assert [steps[s]["status"] for s in "abc"] == ["completed"] * 3
    assert steps["a"]["outputs"] == {"n": 6, "path": "/data/3.npz", "ratio": 0.25}
    assert steps["b"]["outputs"] == {"score": 9.0} and steps["c"]["outputs"] == {"done": True}
    b = cluster.job(steps["b"]["job"]).to_dict()
    assert b["pipeline"] == pipe.id and b["step"] == "b" and b["parameters"]["count"] == 6
    assert b["name"] == "three/b"
    c = cluster.job(steps["c"]["job"]).to_dict()
    assert c["priority"] == 7000 and c["parameters"] == {"score": 9.0, "n": 6}
    assert pipe.record["finished_at"] and pipe.id not in cluster.store.r.smembers(ACTIVE_PIPELINES)
    started_b = b["history"][0]["at"]
    assert started_b >= cluster.job(steps["a"]["job"]).to_dict()["finished_at"]  # b was made after a ended
    assert pipe.id in [p.id for p in cluster.pipelines()]


def test_a_failure_skips_dependents_and_a_rerun_from_it_reuses_the_steps_before(cluster, ws):
    flag = ws / "flag.txt"
    spec = {"name": "flaky", "steps": {
        "a": {"notebook": "a.ipynb", "parameters": {"n": 3}},
        "b": {"notebook": "flaky.ipynb", "needs": ["a"], "retries": 0, "parameters": {"flag": str(flag)}},
        "c": {"notebook": "c.ipynb", "needs": ["b"], "parameters": {"score": 9.0, "n": "{{ steps.a.outputs.n }}"}},
        "side": {"notebook": "a.ipynb", "parameters": {"n": 1}}}}
    first = cluster.pipeline(spec).wait(timeout=240)
    steps = first.steps
    assert first.status == "failed"
    assert steps["b"]["status"] == "failed" and "no flag yet" in steps["b"]["error"]
    assert steps["c"]["status"] == "skipped" and steps["c"]["job"] is None and steps["c"]["error"] == "skipped: b failed"
    assert steps["side"]["status"] == "completed"  # not a dependent: it ran on
    flag.write_text("ok")
    second = first.rerun(from_step="b").wait(timeout=240)
    assert second.status == "completed", second.record
    again = second.steps
    assert again["a"]["reused"] and again["a"]["job"] == steps["a"]["job"] and again["a"]["outputs"] == {
        "n": 6, "path": "/data/3.npz", "ratio": 0.25}
    assert again["side"]["reused"] and again["side"]["job"] == steps["side"]["job"]
    assert again["b"]["job"] != steps["b"]["job"] and not again["b"]["reused"]
    assert second.record["rerun_of"] == first.id
    ran_a = [j for j in cluster.store.all() if j.pipeline in (first.id, second.id) and j.step == "a"]
    assert len(ran_a) == 1  # a ran once, for both pipelines


def test_cancel_cancels_running_steps_and_skips_pending_ones(cluster):
    pipe = cluster.pipeline({"steps": {"s": {"notebook": "sleep.ipynb"},
                                       "after": {"notebook": "c.ipynb", "needs": ["s"]}}})
    wait_for(lambda: pipe.steps["s"]["status"] == "running", 120, what="the first step to run")
    job = pipe.steps["s"]["job"]
    pipe.cancel()
    assert pipe.record["status"] == "cancelled" and pipe.record["finished_at"]
    assert pipe.record["steps"]["s"]["status"] == "cancelled" and pipe.record["steps"]["after"]["status"] == "skipped"
    assert wait_for(lambda: cluster.job(job).status == "cancelled", 60, what="the step's job to be cancelled")
    with pytest.raises(Exception, match="already cancelled"):
        pipe.cancel()


def test_a_sweep_step_passes_on_its_best_trials_outputs(cluster):
    spec = {"steps": {
        "search": {"sweep": {"notebook": "score.ipynb", "parameters": {"x": [1, 3, 2]},
                             "objective": {"metric": "acc", "mode": "max"}}},
        "use": {"notebook": "a.ipynb", "needs": ["search"], "parameters": {"n": "{{ steps.search.outputs.x }}"}}}}
    pipe = cluster.pipeline(spec).wait(timeout=300)
    assert pipe.status == "completed", pipe.record
    search = pipe.steps["search"]
    assert search["kind"] == "sweep" and search["sweep"] and search["outputs"] == {"acc": 30, "x": 3}
    assert cluster.job(search["job"]).to_dict()["parameters"] == {"x": 3}
    assert pipe.steps["use"]["outputs"]["n"] == 6


@pytest.mark.parametrize("spec, message", [
    ({"steps": {"a": {"notebook": "a.ipynb", "needs": ["b"]}, "b": {"notebook": "b.ipynb", "needs": ["a"]}}},
     "the steps' needs form a cycle: a -> b -> a"),
    ({"steps": {"a": {"notebook": "a.ipynb", "needs": ["zz"]}}}, "step 'a' needs unknown step 'zz'"),
    ({"steps": {"a": {"notebook": "a.ipynb"}, "b": {"notebook": "b.ipynb", "parameters": {"x": "{{ steps.a.outputs.n }}"}}}},
     "step 'b': a template names step 'a', which is not among its needs"),
    ({"steps": {"a": {"notebook": "a.ipynb", "sweep": {"notebook": "a.ipynb"}}}}, "step 'a' has both notebook and sweep"),
    ({"steps": {"a": {"notebook": "a.ipynb"}, "b": {"notebook": "missing.ipynb", "needs": ["a"]}}},
     "step 'b': notebook not found"),
    ({"steps": {"a": {"notebook": "a.ipynb", "max_gpus": -1}}}, "step 'a': max_gpus must be >= 0"),
    ("big.pipeline.yaml", "larger than 64 KiB"),
])
def test_bad_files_are_refused_with_one_line_and_create_nothing(cluster, ws, spec, message):
    before_ids, before_jobs = pipeline_ids(cluster.store), len(cluster.store.all())
    before_dirs = sorted((ws / "runs" / "pipelines").glob("*")) if (ws / "runs" / "pipelines").exists() else []
    if spec == "big.pipeline.yaml":  # a file over the size limit
        (ws / spec).write_text("steps: {a: {notebook: a.ipynb}}\n#" + "x" * 70000)
        spec = ws / spec
    with pytest.raises(InvalidRequest) as exc:
        cluster.pipeline(spec)
    assert message in str(exc.value) and "\n" not in str(exc.value)
    assert pipeline_ids(cluster.store) == before_ids and len(cluster.store.all()) == before_jobs
    after_dirs = sorted((ws / "runs" / "pipelines").glob("*")) if (ws / "runs" / "pipelines").exists() else []
    assert after_dirs == before_dirs


def nbrunner_cli(cluster, cwd, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **cluster.settings.env()}
    return subprocess.run([sys.executable, "-m", "nbrunner", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def test_the_example_pipeline_runs_from_the_cli(cluster, ws):
    example = ws / "example"
    shutil.copytree(REPO / "notebooks" / "pipeline", example)
    run = nbrunner_cli(cluster, example, "pipeline", "run", "digits.pipeline.yaml", "-p", "prep.rows", "600",
                       "--wait", "--json")
    assert run.returncode == 0, run.stderr
    rec = json.loads(run.stdout)
    assert rec["name"] == "digits" and rec["status"] == "completed"
    steps = rec["steps"]
    assert steps["prep"]["outputs"]["rows"] == 600 and steps["prep"]["outputs"]["data_path"].endswith("digits.npz")
    assert steps["train"]["outputs"]["accuracy"] > 0.8
    assert steps["report"]["outputs"] == {"passed": True}
    shown = nbrunner_cli(cluster, example, "pipeline", "show", rec["id"])
    assert shown.returncode == 0 and "report" in shown.stdout and "completed" in shown.stdout
    listed = json.loads(nbrunner_cli(cluster, example, "pipelines", "--json").stdout)["pipelines"]
    assert listed[0]["id"] == rec["id"]
    bad = nbrunner_cli(cluster, example, "pipeline", "rerun", rec["id"], "--from", "nope")
    assert bad.returncode == 1 and bad.stderr.strip() == f"nbrunner: pipeline {rec['id']} has no step 'nope'"
    gone = nbrunner_cli(cluster, example, "pipeline", "show", "zzzz")
    assert gone.returncode == 1 and gone.stderr.strip() == "nbrunner: no pipeline 'zzzz'"


def test_a_schedule_runs_a_pipeline(cluster, ws):
    (ws / "sched").mkdir(exist_ok=True)
    (ws / "sched" / "two.pipeline.yaml").write_text(
        "steps:\n  a: {notebook: ../a.ipynb, parameters: {n: 2}}\n"
        "  b: {notebook: ../a.ipynb, needs: [a], parameters: {n: '{{ steps.a.outputs.n }}'}}\n")
    with pytest.raises(InvalidRequest, match="unknown field 'min_gpus' for a schedule of a pipeline"):
        cluster.schedule(pipeline=ws / "sched" / "two.pipeline.yaml", every=1, min_gpus=1)
    schedule = cluster.schedule(pipeline=ws / "sched" / "two.pipeline.yaml", every=1)
    assert schedule.to_dict()["pipeline"] == "two"
    try:
        def first_run():
            runs = [p for p in cluster.pipelines() if p.record.get("schedule") == schedule.id]
            return next((p for p in runs if p.record["status"] in ("completed", "failed")), None)
        run = wait_for(first_run, 180, 0.5, "a scheduled pipeline to complete")
        assert run.record["owner"] == schedule.to_dict()["owner"]
        assert run.record["status"] == "completed", run.record
        assert run.steps["a"]["outputs"]["n"] == 4 and run.steps["b"]["outputs"]["n"] == 8
    finally:
        schedule.delete()
