"""A job's inputs on a real cluster: copied into the job's working directory, read where the
notebook read them, stored once by content, in the job's zip; refused in one line past the limit
or outside the notebook's directory, with nothing created."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile

import pytest

from nbrunner.core.errors import InvalidRequest, TooLarge
from support import make_notebook

pytestmark = pytest.mark.slow

READER = """
import os, nbrunner
rows = open('data/a.csv').read()
extra = open('data/sub/b.txt').read()
print('rows:', rows.strip(), '| extra:', extra, '| cwd:', os.getcwd())
nbrunner.record('rows', len(rows.splitlines()))
open('data/a.csv', 'w').write('changed by the job')
"""


@pytest.fixture(scope="module")
def project(shared_workspace):
    proj = shared_workspace / "proj"
    make_notebook(proj / "reader.ipynb", READER)
    (proj / "data" / "sub").mkdir(parents=True)
    (proj / "data" / "a.csv").write_text("x,y\n1,2\n3,4\n")
    (proj / "data" / "sub" / "b.txt").write_text("bee")
    (shared_workspace / "outside.csv").write_text("secret")
    return proj


def blobs(settings) -> dict[str, int]:
    store = settings.storage / "inputs"
    return {p.name: p.stat().st_size for p in store.iterdir() if not p.name.startswith(".")} if store.is_dir() else {}


def test_two_jobs_naming_the_same_folder_share_its_bytes_and_each_reads_its_own_copy(cluster, project):
    settings = cluster.settings
    before = blobs(settings)
    first = cluster.submit(project / "reader.ipynb", inputs=["data"])
    second = cluster.submit(project / "reader.ipynb", inputs=["data/"])
    for job in (first, second):
        job.wait(timeout=120)
        assert job.status == "completed", job.record.error
        assert job.record.inputs == ["data"]
        log = job.logs()
        work = settings.job_dir(job.id) / "work"
        assert "rows: x,y\n1,2\n3,4 | extra: bee" in log
        assert f"cwd: {work}" in log
        assert job.record.metrics["rows"] == 3
    added = {k: v for k, v in blobs(settings).items() if k not in before}
    # a.csv, b.txt and the folder's manifest: once, whatever the number of jobs
    assert len(added) == 3, added
    assert sorted(added.values())[:2] == [3, len("x,y\n1,2\n3,4\n")]
    assert (project / "data" / "a.csv").read_text() == "x,y\n1,2\n3,4\n"  # the job changed its copy only
    buf = io.BytesIO()
    cluster.backend.download(first.id, "zip", buf)
    names = zipfile.ZipFile(buf).namelist()
    assert "work/data/a.csv" in names and "work/data/sub/b.txt" in names
    rerun = first.rerun()  # the same inputs, from the store, not read again
    rerun.wait(timeout=120)
    assert rerun.status == "completed" and rerun.record.metrics["rows"] == 3


def test_inputs_past_the_limit_or_outside_the_notebooks_directory_create_nothing(cluster, project, monkeypatch):
    settings = cluster.settings
    jobs_before, blobs_before = len(cluster.jobs()), blobs(settings)
    dirs_before = {p.name for p in settings.storage.iterdir()}
    monkeypatch.setenv("NBRUNNER_MAX_INPUT_BYTES", "10")
    with pytest.raises(TooLarge) as err:
        cluster.submit(project / "reader.ipynb", inputs=["data"])
    assert "larger than the limit of 10 bytes" in str(err.value) and err.value.status == 413
    monkeypatch.delenv("NBRUNNER_MAX_INPUT_BYTES")
    for inputs, said in ((["../outside.csv"], "leaves the notebook's directory"), (["nothere.csv"], "not found")):
        with pytest.raises(InvalidRequest, match=said):
            cluster.submit(project / "reader.ipynb", inputs=inputs)
    (project / "escape").symlink_to(settings.workspace / "outside.csv")
    with pytest.raises(InvalidRequest, match="leaves the notebook's directory"):
        cluster.submit(project / "reader.ipynb", inputs=["escape"])
    assert len(cluster.jobs()) == jobs_before and blobs(settings) == blobs_before
    assert {p.name for p in settings.storage.iterdir()} == dirs_before


def test_the_cli_takes_inputs_and_refuses_past_the_limit_in_one_line(cluster, project):
    env = {**os.environ, "NBRUNNER_WORKSPACE": str(cluster.settings.workspace)}
    run = lambda *args, **extra: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "nbrunner", *args], capture_output=True, text=True, cwd=project,
        env={**env, **extra}, timeout=180)
    done = run("submit", "reader.ipynb", "--input", "data", "--wait", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["inputs"] == ["data"]
    refused = run("submit", "reader.ipynb", "--input", "data", NBRUNNER_MAX_INPUT_BYTES="5")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and "larger than the limit of 5 bytes" in refused.stderr
