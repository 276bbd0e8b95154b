"""Reading a sweep's results and every job option, from the CLI and Python, over Redis and over an
nbrunner service's REST API: ``nbrunner sweep show ID`` (the leaderboard, ``--json``), ``nbrunner
sweeps``, ``nbrunner jobs --sweep ID``, ``cluster.sweep(ID)``, ``cluster.sweeps()``,
``cluster.jobs(sweep=...)``, ``submit``'s flags for language, cwd, report mode and retries, and
the warning for an ElasticTrainer notebook that can only get one learner."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings

import pytest

from support import assert_one_line_error, make_notebook
from .test_remote_client import home, local, ok, remote, remote_env, service  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow

SPEC = "parameters:\n  WHO: [a, b, c]\nobjective: {metric: score, mode: max}\n"


@pytest.fixture(scope="module")
def swept(cluster, shared_workspace):
    """A finished sweep of three trials whose objective is the length of WHO's value times 1, 2, 3."""
    make_notebook(shared_workspace / "scored.ipynb",
                  "import nbrunner\nnbrunner.record('score', {'a': 1, 'b': 3, 'c': 2}[WHO])", parameters="WHO = 'a'")
    (shared_workspace / "scored.yaml").write_text(SPEC)
    sweep_id = ok(local(shared_workspace, "sweep", "scored.ipynb", "scored.yaml")).strip()
    cluster.sweep(sweep_id).wait(timeout=300)
    return sweep_id


def test_sweep_show_prints_the_leaderboard_best_first(swept, shared_workspace, cluster):
    text = ok(local(shared_workspace, "sweep", "show", swept))
    lines = text.splitlines()
    assert lines[0] == f"sweep {swept} 'scored' completed: 3 trials"
    assert lines[1].split() == ["rank", "objective", "status", "job", "parameters"]
    assert [line.split()[:3] for line in lines[2:]] == [["1", "3", "completed"], ["2", "2", "completed"],
                                                         ["3", "1", "completed"]]
    assert [line.split()[-1] for line in lines[2:]] == ["WHO=b", "WHO=c", "WHO=a"]
    shown = json.loads(ok(local(shared_workspace, "sweep", "show", swept, "--json")))
    assert shown == cluster.sweep(swept).to_dict()
    assert [row["objective"] for row in shown["leaderboard"]] == [3, 2, 1]
    assert_one_line_error(local(shared_workspace, "sweep", "show", "nosuchsweep"), 1, "nosuchsweep")


def test_sweeps_and_jobs_of_a_sweep(swept, shared_workspace, cluster):
    listed = json.loads(ok(local(shared_workspace, "sweeps", "--json")))["sweeps"]
    assert swept in [s["id"] for s in listed]
    table = ok(local(shared_workspace, "sweeps"))
    row = next(line for line in table.splitlines() if line.startswith(swept))
    assert row.split()[1:] == ["scored", "completed", "3/3", "3"]
    trials = json.loads(ok(local(shared_workspace, "jobs", "--sweep", swept, "--json")))["jobs"]
    board = cluster.sweep(swept).leaderboard()
    assert sorted(j["id"] for j in trials) == sorted(row["job"] for row in board)
    assert all(j["sweep"] == swept for j in trials)
    text = ok(local(shared_workspace, "jobs", "--sweep", swept))
    assert sum(j["id"] in text for j in trials) == 3


def test_python_finds_a_sweep_by_id(swept, cluster):
    from nbrunner.core.errors import NotFound

    found = cluster.sweep(swept)
    assert found.id == swept and found.best()["objective"] == 3 and found.status == "completed"
    assert swept in [s.id for s in cluster.sweeps()]
    assert sorted(j.id for j in cluster.jobs(sweep=found)) == sorted(r["job"] for r in found.leaderboard())
    assert [j.id for j in cluster.jobs(sweep=swept)] == [j.id for j in cluster.jobs(sweep=found)]
    with pytest.raises(NotFound):
        cluster.sweep("nosuchsweep")
    with pytest.raises(TypeError):
        cluster.sweep(swept, max_gpus=2)  # options without a spec: a mistake, not a lookup


def test_the_same_over_rest(swept, service, home, shared_workspace):
    for args in (["sweep", "show", swept], ["sweep", "show", swept, "--json"], ["jobs", "--sweep", swept, "--json"]):
        assert ok(remote(service, home, *args)) == ok(local(shared_workspace, *args)), args
    assert swept in ok(remote(service, home, "sweeps"))
    code = textwrap.dedent(f"""
        import json, nbrunner
        cluster = nbrunner.connect()
        s = cluster.sweep({swept!r})
        print(json.dumps({{"best": s.best()["objective"], "ids": [x.id for x in cluster.sweeps()],
                          "trials": sorted(j.id for j in cluster.jobs(sweep=s))}}))
    """)
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=home,
                                    env=remote_env(service), timeout=120, check=True).stdout)
    assert out["best"] == 3 and swept in out["ids"] and len(out["trials"]) == 3


def test_submit_takes_every_job_option(cluster, shared_workspace, service, home):
    make_notebook(shared_workspace / "sub" / "where.ipynb", "import os\nprint('cwd', os.getcwd())")
    make_notebook(home / "where.ipynb", "import os\nprint('cwd', os.getcwd())")
    args = ["--language", "python", "--report-mode", "--retries", "0", "--json"]
    rec = json.loads(ok(local(shared_workspace, "submit", "sub/where.ipynb", "--cwd", "sub", *args)))
    job = cluster.job(rec["id"]).wait(timeout=120)  # the record's bookkeeping fields, read over Redis
    assert (job.record.language, job.record.cwd, job.record.report_mode, job.record.retries) == ("python", "sub", True, 0)
    assert job.status == "completed" and f"cwd {shared_workspace / 'sub'}" in job.logs()
    over_rest = json.loads(ok(remote(service, home, "submit", "where.ipynb", *args)))
    sent = cluster.job(over_rest["id"]).wait(timeout=120).record
    assert (sent.language, sent.report_mode, sent.retries, sent.status) == ("python", True, 0, "completed")
    plain = cluster.job(json.loads(ok(local(shared_workspace, "submit", "sub/where.ipynb", "--json")))["id"]).record
    assert (plain.language, plain.cwd, plain.report_mode) == (None, None, False)  # flags left out: the defaults
    assert "--report-mode" in ok(local(shared_workspace, "submit", "--help"))


ELASTIC = "from nbrunner.elastic import ElasticTrainer\nprint('would train with', ElasticTrainer.__name__)"


def test_an_elastic_notebook_that_can_only_get_one_learner_is_warned(cluster, shared_workspace):
    from nbrunner.client.advice import SingleLearnerWarning

    make_notebook(shared_workspace / "elastic.ipynb", ELASTIC)
    p = local(shared_workspace, "submit", "elastic.ipynb")
    assert p.returncode == 0 and p.stdout.strip()
    assert p.stderr.strip().splitlines() == [
        "nbrunner: warning: elastic.ipynb trains with ElasticTrainer but max_gpus is 0: it can only ever get one "
        "learner (ask for more with --max-gpus N, or max_gpus=N)"]
    quiet = local(shared_workspace, "submit", "elastic.ipynb", "--max-gpus", "2")
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert local(shared_workspace, "submit", "hello.ipynb").stderr == ""  # no ElasticTrainer: nothing to say
    with pytest.warns(SingleLearnerWarning, match="max_gpus is 1"):
        cluster.submit("elastic.ipynb", max_gpus=1)  # relative to the workspace, as submit takes it
    with warnings.catch_warnings():
        warnings.simplefilter("error", SingleLearnerWarning)
        cluster.submit("elastic.ipynb", max_gpus=2)
    assert "default: --min-gpus" in " ".join(ok(local(shared_workspace, "submit", "--help")).replace("│", " ").split())
