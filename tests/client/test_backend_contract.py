"""One contract, two backends: every operation of :class:`nbrunner.client.backend.Backend` behaves
the same over Redis (:class:`LocalBackend`) and through an nbrunner service's REST API
(:class:`RemoteBackend`, a real Jupyter server with the nbrunner extension in front of the same real
cluster).  Each test runs once per backend; what it checks is the contract, not one side's
implementation (as torch's rendezvous backends share one contract-test mixin)."""
from __future__ import annotations

import io
import json
import os
import zipfile

import pytest

from nbrunner.client.backend import Backend
from nbrunner.client.local import LocalBackend
from nbrunner.client.remote import RemoteBackend
from nbrunner.core.errors import Conflict, InvalidRequest, NbrunnerError, NotFound
from support import jupyter_server, short_tmpdir, wait_for

pytestmark = pytest.mark.slow

TOKEN = "contract-token"


@pytest.fixture(scope="module")
def service_url(cluster, shared_workspace):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("NBRUNNER_", "PYTEST_"))}
    env = {**clean, **cluster.settings.env()}
    with jupyter_server(shared_workspace, TOKEN, env, short_tmpdir("nbl") / "service.log") as (url, _proc):
        yield f"{url}nbrunner/"


@pytest.fixture(scope="module", params=["local", "remote"])
def backend(request, cluster, shared_workspace) -> Backend:
    if request.param == "local":
        return LocalBackend(cluster.settings, cluster.store)
    return RemoteBackend(request.getfixturevalue("service_url"), TOKEN)


@pytest.fixture(autouse=True)
def in_workspace(monkeypatch, shared_workspace):
    monkeypatch.chdir(shared_workspace)  # both backends read the notebook from the caller's directory


def finished(backend: Backend, job_id: str, timeout: float = 120):
    return wait_for(lambda: (r := backend.job(job_id)).status.finished and r, timeout, 0.2, f"job {job_id} to end")


def test_what_only_a_local_backend_holds_is_refused_in_one_line_elsewhere(backend, shared_workspace):
    assert backend.where
    rec = backend.submit({"notebook": "hello.ipynb", "parameters": {"TIMES": 0}})
    if isinstance(backend, LocalBackend):
        assert backend.settings.workspace == shared_workspace
        assert backend.job_dir(rec.id).is_dir()
    else:
        for local_only in (lambda: backend.settings, lambda: backend.job_dir(rec.id)):
            with pytest.raises(NbrunnerError) as refused:
                local_only()
            assert "\n" not in str(refused.value) and "service" in str(refused.value)
    finished(backend, rec.id)


def test_a_job_runs_and_its_files_come_back(backend):
    rec = backend.submit({"notebook": "hello.ipynb", "parameters": {"NAME": "contract", "TIMES": 2}})
    assert rec.status == "queued" and rec.parameters == {"NAME": "contract", "TIMES": 2}
    assert backend.job(rec.id).id == rec.id
    done = finished(backend, rec.id)
    assert done.status == "completed" and done.metrics == {"greetings": 2}
    assert [row["greetings"] for row in backend.metrics(rec.id) if "greetings" in row] == [2]
    text, offset = backend.log(rec.id)
    assert "hello contract #2" in text and offset == len(text.encode())
    assert backend.log(rec.id, offset) == ("", offset)
    out = json.loads(backend.output_text(rec.id))
    assert any("hello contract #1" in "".join(o.get("text", "")) for c in out["cells"] for o in c.get("outputs", []))
    for fmt, check in (("ipynb", lambda b: json.loads(b)["cells"]), ("html", lambda b: b"hello contract" in b),
                       ("zip", lambda b: "output.ipynb" in zipfile.ZipFile(io.BytesIO(b)).namelist())):
        buf = io.BytesIO()
        backend.download(rec.id, fmt, buf)
        assert check(buf.getvalue()), fmt
    assert isinstance(backend.timeline(rec.id), list)


def test_listings_are_newest_first_and_counted(backend):
    first = backend.submit({"notebook": "hello.ipynb", "parameters": {"TIMES": 0}})
    second = backend.submit({"notebook": "hello.ipynb", "parameters": {"TIMES": 0}})
    page, _next = backend.jobs(limit=2)
    assert [r.id for r in page] == [second.id, first.id]
    assert backend.count() >= 2
    for rec in (first, second):
        finished(backend, rec.id)
    assert backend.count("completed") >= 2


def test_priority_rerun_cancel_and_purge(backend):
    rec = backend.submit({"notebook": "hello.ipynb", "parameters": {"TIMES": 1}})
    assert backend.set_priority(rec.id, 9000).priority == 9000
    done = finished(backend, rec.id)
    again = backend.rerun(done.id, {"NAME": "again"})
    assert again.id != done.id and again.parameters == {"NAME": "again", "TIMES": 1}
    with pytest.raises(Conflict):
        backend.cancel(done.id)  # already finished
    finished(backend, again.id)
    backend.purge(again.id)
    with pytest.raises(NotFound):
        backend.job(again.id)


def test_bad_input_is_refused_alike(backend):
    before = backend.count()
    with pytest.raises(NbrunnerError) as missing:
        backend.submit({"notebook": "no-such.ipynb"})
    assert missing.value.status in (400, 404) and "\n" not in str(missing.value)
    with pytest.raises(InvalidRequest):
        backend.submit({"notebook": "hello.ipynb", "min_gpus": 2, "max_gpus": 1})
    with pytest.raises(NotFound):
        backend.job("nosuchjob")
    rec = backend.submit({"notebook": "hello.ipynb", "parameters": {"TIMES": 0}})
    with pytest.raises(InvalidRequest):
        backend.set_priority(rec.id, 0)
    assert backend.count() == before + 1
    finished(backend, rec.id)


def test_job_changes_follow_a_submission(backend):
    feed = backend.job_changes()
    try:
        rec = backend.submit({"notebook": "hello.ipynb", "parameters": {"TIMES": 0}})
        seen: list[dict] = []

        def ended() -> bool:
            seen.extend(feed.read(1.0))
            return any(c.get("job", {}).get("id") == rec.id and c["job"]["status"] == "completed" for c in seen)

        wait_for(ended, 120, 0, "the job's completion on the change feed")
    finally:
        feed.close()


def test_the_cluster_and_its_accounts(backend):
    status = backend.status()
    assert {"policy", "gpus_total", "gpus_free", "hosts"} <= set(status)
    backend.wait_ready(1, 30)
    assert "accounts" in backend.accounts()


def test_a_sweep_is_made_read_and_cancelled(backend):
    spec = {"parameters": {"TIMES": [0, 1]}, "objective": {"metric": "greetings", "mode": "max"}}
    state = backend.create_sweep("hello.ipynb", spec)
    assert len(state.jobs) == 2 and all(j.sweep == state.id for j in state.jobs)
    assert backend.sweep(state.id).id == state.id
    assert state.id in [s.id for s in backend.sweeps()]
    wait_for(lambda: all(j.status.finished for j in backend.sweep(state.id).jobs), 120, 0.2, "the trials")
    # the scheduler's next pass marks the sweep completed after its trials' jobs ended
    wait_for(lambda: backend.sweep(state.id).status == "completed", 60, 0.2, "the sweep completed")
    board = backend.sweep(state.id).leaderboard
    assert [row["objective"] for row in board] == [1, 0]
    with pytest.raises(Conflict):
        backend.cancel_sweep(state.id)  # already finished
    waiting = backend.create_sweep("hello.ipynb", {**spec, "parameters": {"TIMES": [0, 1, 2, 3]}, "max_parallel": 1})
    cancelled = backend.cancel_sweep(waiting.id)
    assert cancelled.id == waiting.id and cancelled.status == "cancelled"
    with pytest.raises(NotFound):
        backend.sweep("nosuchsweep")


def test_a_schedule_is_made_changed_and_deleted(backend):
    rec = backend.create_schedule({"notebook": "hello.ipynb", "every": 3600, "parameters": {"TIMES": 0}})
    assert rec.every == 3600 and not rec.paused
    assert backend.schedule(rec.id).id == rec.id
    assert rec.id in [s.id for s in backend.schedules()]
    assert backend.update_schedule(rec.id, {"paused": True}).paused
    with pytest.raises(InvalidRequest):
        backend.update_schedule(rec.id, {"every": 0})
    backend.delete_schedule(rec.id)
    with pytest.raises(NotFound):
        backend.schedule(rec.id)


def test_models_are_listed_alike(backend):
    assert isinstance(backend.models(), list)
    rec = finished(backend, backend.submit({"notebook": "hello.ipynb", "parameters": {"TIMES": 0}}).id)
    with pytest.raises(NbrunnerError) as none_saved:
        backend.register_model(rec.id, "nothing")  # the job saved no model
    assert none_saved.value.status in (400, 404, 409) and "\n" not in str(none_saved.value)


def test_usage_is_reported_alike(backend):
    report = backend.usage("user", "1d")
    assert report["by"] == "user" and {"since", "until", "rows", "totals"} <= set(report)
    assert all(set(row) == {"day", "user", "gpu_hours"} for row in report["rows"])
    with pytest.raises(InvalidRequest):
        backend.usage("planet", "1d")


def test_a_pipeline_passes_a_recorded_value_on(backend, shared_workspace):
    spec = {"name": "contract", "steps": {
        "first": {"notebook": "hello.ipynb", "parameters": {"TIMES": 2}},
        "second": {"notebook": "hello.ipynb", "needs": ["first"],
                   "parameters": {"TIMES": "{{ steps.first.outputs.greetings }}"}}}}
    rec = backend.create_pipeline(spec, shared_workspace)
    assert rec["id"] in [p["id"] for p in backend.pipelines()]
    done = wait_for(lambda: (p := backend.pipeline(rec["id"]))["status"] in ("completed", "failed") and p, 180, 0.3,
                    "the pipeline")
    assert done["status"] == "completed"
    second = backend.job(done["steps"]["second"]["job"])
    assert second.parameters["TIMES"] == 2 and second.pipeline == rec["id"]
    again = backend.rerun_pipeline(rec["id"], "second")
    assert again["id"] != rec["id"] and again["steps"]["first"]["job"] == done["steps"]["first"]["job"]
    wait_for(lambda: backend.pipeline(again["id"])["status"] == "completed", 180, 0.3, "the rerun")
    with pytest.raises(NotFound):
        backend.pipeline("nosuchpipeline")
    with pytest.raises(InvalidRequest):
        backend.create_pipeline({"steps": {"a": {"notebook": "hello.ipynb", "needs": ["a"]}}}, shared_workspace)


def test_many_jobs_are_submitted_all_or_none(backend):
    before = backend.count()
    with pytest.raises(InvalidRequest) as bad:
        backend.submit_many([{"notebook": "hello.ipynb"}, {"notebook": "hello.ipynb", "priority": 0}])
    assert "jobs[1]" in str(bad.value) and backend.count() == before
    records = backend.submit_many([{"notebook": "hello.ipynb", "parameters": {"TIMES": t}} for t in (0, 1)])
    assert [r.parameters["TIMES"] for r in records] == [0, 1] and backend.count() == before + 2
    for rec in records:
        finished(backend, rec.id)


def test_notification_settings_are_the_callers(backend):
    saved = backend.set_notifications({"targets": ["mailto:contract@example.org"], "on": ["failed"]})
    assert saved["targets"] == ["mailto:contract@example.org"] and saved["on"] == ["failed"]
    assert backend.notifications() == saved
    with pytest.raises(InvalidRequest):
        backend.set_notifications({"targets": ["json://elsewhere.example.org/hook"], "on": ["failed"]})
    assert backend.notifications() == saved
    assert isinstance(backend.notification_log(), list)
