"""nbrunner.client.widgets against a real cluster (2 workers, no GPU slots): JobsMonitor and JobWidget,
their controls, their refresh thread, and what a notebook executed by papermill saves of them."""
from __future__ import annotations

import threading

import nbformat
import pytest

from nbrunner.client.widgets import JobsMonitor, JobWidget

from support import make_notebook, wait_for

pytestmark = pytest.mark.slow

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def monitors():
    """Monitors made by a test; closed afterwards whatever happens."""
    made: list = []

    def make(*args, **kwargs):
        m = JobsMonitor(*args, **kwargs)
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()


@pytest.fixture
def too_big(cluster):
    """Jobs that need more GPUs than the cluster has (none): they stay queued.  Cancelled
    afterwards: a queued job that does not fit holds back the jobs submitted after it."""
    made = []

    def submit(cluster, name="too-big"):
        job = cluster.submit("hello.ipynb", name=name, min_gpus=2, max_gpus=2)
        made.append(job)
        return job

    yield submit
    for job in made:
        if job.status == "queued":
            job.cancel()


def test_the_monitor_lists_jobs_and_follows_them_until_they_finish(cluster, monitors, too_big):
    quick = cluster.submit("hello.ipynb", {"NAME": "monitor"}, name="quick")
    big = too_big(cluster)
    m = monitors(cluster, interval=0.2)
    assert m.running
    assert {quick.id, big.id} <= set(m.rows)
    # Newest first; one row per job with name, status, GPUs, progress, priority, cancel.
    boxes = list(m._table.children)
    assert boxes.index(m.rows[big.id].box) < boxes.index(m.rows[quick.id].box)
    row = m.rows[big.id]
    assert "too-big" in row.name.value and big.id in row.name.value
    assert "queued" in row.status.value
    assert row.gpus.value == "0/2"
    assert row.priority.value == 5000 and not row.priority.disabled
    assert row.cancel.description == "Cancel" and not row.cancel.disabled
    assert 0.0 <= row.progress.value <= 1.0

    first = m.updates
    row = m.rows[quick.id]
    wait_for(lambda: row.record.status == "completed", timeout=90, what="the monitor to show the job completed")
    assert "completed" in row.status.value
    assert row.progress.value == 1.0 and row.progress.bar_style == "success"
    assert row.cancel.disabled and row.priority.disabled
    assert m.updates > first  # the refresh thread kept it up to date
    assert "completed" in m.summary.value
    assert quick.status == "completed"


def test_priority_changes_through_the_widget(cluster, monitors, too_big):
    big = too_big(cluster, "prio")
    m = monitors(cluster, interval=5)  # refreshed by hand below
    row = m.rows[big.id]
    row.priority.value = 7777  # what the user's edit does
    assert cluster.job(big.id).record.priority == 7777
    assert row.record.priority == 7777
    # A refresh keeps the new value; a refused change is reverted and explained.
    m.refresh()
    assert row.priority.value == 7777
    big.cancel()
    m.refresh()
    assert row.priority.disabled
    row.priority.value = 42
    assert row.priority.value == 7777 and cluster.job(big.id).record.priority == 7777
    assert "already cancelled" in m.message.value


def test_the_cancel_button_cancels_a_queued_job(cluster, monitors, too_big):
    big = too_big(cluster, "to-cancel")
    m = monitors(cluster, interval=5)
    row = m.rows[big.id]
    assert big.status == "queued"
    row.cancel.click()
    assert cluster.job(big.id).status == "cancelled"
    assert "cancelled" in row.status.value and row.cancel.disabled
    # Clicking again (a stale view) says why nothing happens.
    row.cancel.disabled = False
    row.cancel.click()
    assert "already cancelled" in m.message.value


def test_close_stops_the_refresh_thread(cluster):
    m = JobsMonitor(cluster, interval=0.1)
    thread = m._thread
    assert m.running and thread.daemon
    wait_for(lambda: m.updates >= 3, timeout=10, what="a few refreshes")
    m.close()
    assert not m.running and not thread.is_alive()
    # Nothing refreshes a closed monitor: the thread is gone and late updates are dropped.
    after = m.updates
    m._apply_records([])
    assert m.updates == after
    assert thread not in threading.enumerate()


def test_the_static_fallback_shows_the_jobs(cluster, monitors, too_big):
    a = cluster.submit("hello.ipynb", name="fallback <one>")
    b = too_big(cluster, "fallback-two")
    m = monitors(cluster, interval=5)
    bundle = m._repr_mimebundle_()
    assert WIDGET_VIEW in bundle  # the live view where widgets render
    page = bundle["text/html"]
    assert page.startswith("<table") and "fallback &lt;one&gt;" in page and "fallback-two" in page
    assert f'data-job-id="{b.id}" data-status="queued"' in page and a.id in page
    text = bundle["text/plain"]
    assert "fallback <one>" in text and "fallback-two" in text and b.id in text and "queued" in text
    b.cancel()


def test_job_widget_follows_one_job_and_stops_when_it_finishes(cluster, too_big):
    job = cluster.submit("hello.ipynb", {"NAME": "single"}, name="single")
    w = job.widget()
    try:
        assert isinstance(w, JobWidget) and w.running
        wait_for(lambda: w.row.record.status == "completed", timeout=90, what="the widget to show completion")
        wait_for(lambda: not w.running, timeout=10, what="the widget to stop refreshing")
        assert w.row.progress.value == 1.0 and w.row.cancel.disabled
        assert "NAME=&#x27;single&#x27;" in w.details.value and "output" in w.details.value
        bundle = w._repr_mimebundle_()
        assert "single" in bundle["text/html"] and "completed" in bundle["text/plain"]
    finally:
        w.close()
    big = too_big(cluster, "single-big")
    w = JobWidget(big, interval=0.2)
    try:
        w.row.priority.value = 9000
        assert big.refresh().record.priority == 9000
        w.row.cancel.click()
        assert big.status == "cancelled"
        wait_for(lambda: not w.running, timeout=10, what="the widget to stop after the cancel")
    finally:
        w.close()


def test_a_notebook_executed_by_papermill_saves_the_table(cluster, shared_workspace, tmp_path, too_big):
    import papermill

    done = cluster.submit("hello.ipynb", name="pm-done")
    done.wait(90)
    waiting = too_big(cluster, "pm-waiting")
    nb = make_notebook(
        tmp_path / "monitor.ipynb",
        "import asyncio, time\nimport nbrunner\nfrom nbrunner.client.widgets import JobsMonitor\n"
        "cluster = nbrunner.connect(WORKSPACE)\nmonitor = JobsMonitor(cluster, interval=0.1)\nmonitor",
        # Let the kernel's loop run: the refresh thread's updates are applied there.
        "start = monitor.updates\ndeadline = time.monotonic() + 30\n"
        "while monitor.updates < start + 2 and time.monotonic() < deadline:\n    await asyncio.sleep(0.05)\n"
        "print('refreshed', monitor.updates >= start + 2, 'on the main thread', monitor.applied_on_main_thread)",
        "cluster.job(JOB).widget()",
        "monitor.close()\nprint('still running', monitor.running)",
        parameters="WORKSPACE = ''\nJOB = ''",
    )
    out = tmp_path / "monitor.out.ipynb"
    papermill.execute_notebook(str(nb), str(out), parameters={"WORKSPACE": str(shared_workspace), "JOB": done.id},
                               kernel_name="python3", progress_bar=False, cwd=str(tmp_path))
    saved = nbformat.read(str(out), as_version=4)
    code = [c for c in saved.cells if c.cell_type == "code"]
    table = code[2].outputs[0]
    assert table.output_type == "execute_result"
    assert WIDGET_VIEW in table.data
    assert '<table class="nbrunner-jobs"' in table.data["text/html"]
    for job in (done, waiting):
        assert job.record.name in table.data["text/html"] and job.id in table.data["text/html"]
        assert job.record.name in table.data["text/plain"]
    assert "Loading widget" not in table.data["text/plain"]
    printed = "".join(o.get("text", "") for o in code[3].outputs)
    assert "refreshed True on the main thread True" in printed
    single = code[4].outputs[0].data
    assert done.id in single["text/html"] and "completed" in single["text/plain"]
    assert "still running False" in "".join(o.get("text", "") for o in code[5].outputs)
    waiting.cancel()


def test_jobs_monitor_is_public_and_filters_by_owner_status_and_sweep(cluster, too_big):
    import getpass

    import nbrunner

    assert nbrunner.JobsMonitor is JobsMonitor and "JobsMonitor" in nbrunner.__all__
    # The sweep first: a queued job that does not fit holds back the jobs submitted after it.
    sweep = cluster.sweep("hello.ipynb", {"parameters": {"NAME": ["s1", "s2"]}, "max_parallel": 2,
                                          "objective": {"metric": "score", "mode": "max"}})
    mine = too_big(cluster, name="mine")
    theirs = cluster.submit("hello.ipynb", name="theirs", min_gpus=2, max_gpus=2, owner="someone-else")
    made = []
    try:
        everyone = cluster.monitor(interval=0.2)
        made.append(everyone)
        assert {mine.id, theirs.id} <= set(everyone.rows)

        own = cluster.monitor(mine=True, interval=0.2)
        made.append(own)
        assert mine.id in own.rows and theirs.id not in own.rows
        assert all(r.record.owner == getpass.getuser() for r in own.rows.values())

        other = cluster.monitor(owner="someone-else", status="queued", interval=0.2)
        made.append(other)
        assert set(other.rows) == {theirs.id}
        assert "owner someone-else" in other._title() and "queued" in other._title()

        trials = cluster.monitor(sweep=sweep, interval=0.2)
        made.append(trials)
        ids = {j.id for j in sweep.jobs}
        assert set(trials.rows) == ids and len(ids) == 2
        assert f"sweep {sweep.id}" in trials.summary.value
        with pytest.raises(ValueError, match="status must be one of"):
            cluster.monitor(status="finished")
    finally:
        for m in made:
            m.close()
        if theirs.status == "queued":
            theirs.cancel()


def test_a_monitor_made_first_thing_in_a_fresh_process_finds_the_running_cluster(cluster, shared_workspace):
    """``JobsMonitor()`` with no cluster, before anything else of nbrunner is loaded (as in a job's
    notebook): it attaches to the workspace's running cluster."""
    import os
    import subprocess
    import sys

    code = ("from nbrunner.client.widgets import JobsMonitor\nmonitor = JobsMonitor(interval=60)\n"
            "print('workspace', monitor.cluster.settings.workspace)\nmonitor.close()\n")
    env = {**os.environ, "NBRUNNER_WORKSPACE": str(shared_workspace)}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0 and f"workspace {shared_workspace}" in p.stdout, p.stdout + p.stderr
