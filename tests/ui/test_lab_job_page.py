"""A job's page in JupyterLab, its read-only output, and the notifications when jobs end.

Real parts only: a JupyterLab server on a real cluster, jobs run by rq workers with
papermill, headless Chromium clicking as a user does.  Screenshots go to test-artifacts/ui/.
"""
from __future__ import annotations

import io
import json
import re
import zipfile

import nbformat
import pytest
from playwright.sync_api import Page, expect

from labserver import Lab
from support import make_notebook, wait_for
from test_jupyterlab import job_row, jobs_panel, open_lab, shot, submit_dialog

pytestmark = pytest.mark.slow

ENDED = ("completed", "failed", "cancelled")
STEPS = 5


@pytest.fixture(scope="module", autouse=True)
def notebooks(lab):
    """A notebook that records a loss per step, one that fails with a root cause."""
    make_notebook(lab.workspace / "train.ipynb",
                  "import nbrunner\nfor step in range(STEPS):\n"
                  "    nbrunner.record('loss', round(LR / (step + 1), 4))\n"
                  "print(f'trained {STEPS} steps at lr {LR}')",
                  parameters="STEPS = 5  # training steps\nLR = 0.5")
    make_notebook(lab.workspace / "broken.ipynb",
                  "raise FileNotFoundError('no data_batch_* files in ' + DATA)",
                  parameters="DATA = '/nowhere'")


def run(lab: Lab, notebook: str, name: str, max_gpus: int = 0, **parameters) -> dict:
    """Submit a job and wait until it ends; its record."""
    job = lab.cluster.submit(str(lab.workspace / notebook), parameters, name=name, max_gpus=max_gpus)
    wait_for(lambda: job.status in ENDED, timeout=150, what=f"job {name} to end")
    # The page's GPU chart reads the release point, written just after the final status.
    return lab.job(job.id)


def job_page(page: Page, job_id: str):
    return page.locator(f'[data-testid="nbrunner-job-page"][data-job-id="{job_id}"]')


def open_job_page(page: Page, job_id: str):
    """Open a job's page from its row in the Jobs panel, as a user does (click its name)."""
    row = job_row(page, job_id)
    expect(row).to_be_visible()
    row.get_by_test_id("nbrunner-job-name").click()
    view = job_page(page, job_id)
    expect(view).to_be_visible()
    return view


def kernels(lab: Lab) -> list:
    import urllib.request

    req = urllib.request.Request(f"{lab.url}api/kernels", headers={"Authorization": f"token {lab.token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def toast(page: Page, text: str):
    return page.locator(".Toastify__toast", has_text=text)


@pytest.fixture(scope="module")
def trained(lab) -> dict:
    job = run(lab, "train.ipynb", "train-page", max_gpus=1, STEPS=STEPS, LR=0.5)
    assert job["status"] == "completed", job["error"]
    # The GPU series ends with its release point, written just after the final status.
    wait_for(lambda: lab.cluster.job(job["id"]).timeline()[-1:] and
             lab.cluster.job(job["id"]).timeline()[-1]["gpus"] == 0, timeout=30, what="the GPU release")
    return job


def test_the_page_of_a_completed_job(lab, page, trained):
    job_id = trained["id"]
    open_lab(page, lab)
    jobs_panel(page)
    view = open_job_page(page, job_id)
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="train-page")
    expect(tab).to_be_visible()
    expect(view.get_by_test_id("nbrunner-jobpage-name")).to_have_text("train-page")
    expect(view.get_by_test_id("nbrunner-job-status").first).to_have_text("completed")
    # The parameters it ran with.
    params = view.get_by_test_id("nbrunner-jobpage-parameters")
    expect(params.locator('[data-param="STEPS"] td')).to_have_text(str(STEPS))
    expect(params.locator('[data-param="LR"] td')).to_have_text("0.5")
    # Status history with timestamps, oldest first.
    history = view.get_by_test_id("nbrunner-jobpage-history").locator("li")
    expect(history).to_have_count(3)
    assert [history.nth(i).get_attribute("data-status") for i in range(3)] == ["queued", "running", "completed"]
    assert [h["status"] for h in trained["history"]] == ["queued", "running", "completed"]
    expect(history.nth(2).locator("time")).to_have_attribute("datetime", trained["history"][2]["at"])
    details = view.get_by_test_id("nbrunner-jobpage-details")
    expect(details.locator('[data-field="attempt"] td')).to_have_text(str(trained["attempt"]))
    expect(details.locator('[data-field="worker"] td')).to_have_text(trained["worker"])
    assert trained["host"]
    expect(details.locator('[data-field="host"] td')).to_have_text(trained["host"])
    # The loss over its steps, and the GPUs it held.
    chart = view.locator('[data-testid="nbrunner-jobpage-metric-chart"][data-title="loss"]')
    expect(chart).to_have_attribute("data-points", str(STEPS))
    expect(chart.locator("path.nbrunner-Chart-line")).to_have_count(1)
    expect(chart.get_by_test_id("nbrunner-chart-last")).to_have_text(f"last {round(0.5 / STEPS, 4)}")
    gpus = view.get_by_test_id("nbrunner-jobpage-gpu-chart")
    expect(gpus).to_be_visible()
    expect(gpus).to_have_attribute("data-points", str(len(lab.cluster.job(job_id).timeline())))
    expect(view.get_by_test_id("nbrunner-jobpage-error")).to_have_count(0)
    shot(page, "30-job-page-completed")

    # Downloads: the executed notebook, its HTML, a zip of the job directory.
    expected = {"ipynb": ".ipynb", "html": ".html", "zip": ".zip"}
    for fmt, suffix in expected.items():
        with page.expect_download() as info:
            view.get_by_test_id(f"nbrunner-jobpage-download-{fmt}").click()
        download = info.value
        assert download.failure() is None
        assert download.suggested_filename == f"train-page-{job_id}{suffix}"
        data = open(download.path(), "rb").read()
        if fmt == "ipynb":
            nb = nbformat.reads(data.decode(), as_version=4)
            assert any("trained 5 steps" in json.dumps(c.get("outputs", [])) for c in nb.cells)
        elif fmt == "html":
            text = data.decode()
            assert text.lstrip().lower().startswith("<!doctype html") and "trained 5 steps" in text
        else:
            names = zipfile.ZipFile(io.BytesIO(data)).namelist()
            assert {"output.ipynb", "output.html", "metrics.jsonl"} <= set(names), names


def test_the_output_opens_read_only_without_a_kernel(lab, page, trained):
    job_id = trained["id"]
    open_lab(page, lab)
    before = {k["id"] for k in kernels(lab)}
    view = open_job_page(page, job_id) if jobs_panel(page) else None
    view.get_by_test_id("nbrunner-jobpage-open-output").click()
    output = page.locator(f'[data-testid="nbrunner-output-view"][data-job-id="{job_id}"]')
    expect(output).to_have_attribute("data-loaded", "true")
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current", has_text="output: train-page")
    expect(tab).to_be_visible()
    expect(tab).to_have_attribute("title", re.compile(r"read-only, no kernel"))
    frame = output.frame_locator("iframe")
    expect(frame.locator("body")).to_contain_text("trained 5 steps at lr 0.5")
    expect(frame.locator("body")).to_contain_text("STEPS = 5")  # the injected parameters
    # Nothing to edit: a static page, not a notebook editor.
    expect(page.locator(".jp-NotebookPanel")).to_have_count(0)
    shot(page, "31-output-read-only")
    # The panel's Output button opens the same view (no second tab), again without a kernel.
    job_row(page, job_id).get_by_test_id("nbrunner-job-open-output").click()
    expect(page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="output: train-page")).to_have_count(1)
    page.wait_for_timeout(1000)  # give a kernel, were one requested, the time to appear
    assert {k["id"] for k in kernels(lab)} == before


def test_rerun_with_an_edited_parameter(lab, page, trained):
    open_lab(page, lab)
    jobs_panel(page)
    view = open_job_page(page, trained["id"])
    view.get_by_test_id("nbrunner-jobpage-rerun").click()
    dialog = submit_dialog(page)
    expect(dialog).to_have_attribute("data-rerun-of", trained["id"])
    expect(dialog.locator('[data-param="STEPS"]')).to_have_value(str(STEPS))
    expect(dialog.locator('[data-param="LR"]')).to_have_value("0.5")
    dialog.locator('[data-param="STEPS"]').fill("3")
    shot(page, "32-rerun-dialog")
    rerun = f"/nbrunner/api/jobs/{trained['id']}/rerun"
    with page.expect_response(lambda r: rerun in r.url and r.request.method == "POST") as info:
        dialog.get_by_test_id("nbrunner-submit").click()
    assert info.value.status == 201, info.value.text()
    new = info.value.json()
    assert new["id"] != trained["id"] and new["parameters"] == {"STEPS": 3, "LR": 0.5}
    expect(dialog).to_have_count(0)
    # The new job's page opens and follows it to the end.
    new_view = job_page(page, new["id"])
    expect(new_view).to_be_visible()
    expect(new_view.get_by_test_id("nbrunner-job-status").first).to_have_text("completed", timeout=150_000)
    expect(new_view.get_by_test_id("nbrunner-jobpage-parameters").locator('[data-param="STEPS"] td')).to_have_text("3")
    chart = new_view.locator('[data-testid="nbrunner-jobpage-metric-chart"][data-title="loss"]')
    expect(chart).to_have_attribute("data-points", "3")
    assert lab.job(new["id"])["status"] == "completed"
    expect(job_row(page, new["id"])).to_be_visible()
    shot(page, "33-rerun-completed")


def test_delete_a_job_after_confirmation(lab, page):
    job = run(lab, "train.ipynb", "to-delete", STEPS=2)
    job_dir = lab.cluster.settings.job_dir(job["id"])
    assert job_dir.is_dir()
    open_lab(page, lab)
    jobs_panel(page)
    view = open_job_page(page, job["id"])
    view.get_by_test_id("nbrunner-jobpage-delete").click()
    confirm = page.get_by_test_id("nbrunner-delete-confirm")
    expect(confirm).to_contain_text(job["id"])
    shot(page, "34-delete-confirmation")
    confirm.get_by_test_id("nbrunner-delete-confirm-keep").click()
    expect(confirm).to_have_count(0)
    assert lab.api("GET", f"jobs/{job['id']}")[0] == 200
    view.get_by_test_id("nbrunner-jobpage-delete").click()
    page.get_by_test_id("nbrunner-delete-confirm-yes").click()
    expect(view).to_have_count(0)  # the page closes
    expect(job_row(page, job["id"])).to_have_count(0)  # the row disappears
    assert lab.api("GET", f"jobs/{job['id']}")[0] == 404
    assert not job_dir.exists()


def test_a_failed_job_shows_its_cause(lab, page):
    job = run(lab, "broken.ipynb", "broken-data")
    assert job["status"] == "failed"
    open_lab(page, lab)
    jobs_panel(page)
    view = open_job_page(page, job["id"])
    error = view.get_by_test_id("nbrunner-jobpage-error")
    expect(error).to_contain_text("FileNotFoundError")
    expect(error).to_contain_text("no data_batch_* files in /nowhere")
    expect(view.get_by_test_id("nbrunner-job-status").first).to_have_text("failed")
    expect(view.get_by_test_id("nbrunner-jobpage-no-metrics")).to_be_visible()
    shot(page, "35-job-page-failed")


def test_a_notification_when_a_job_ends_opens_its_page(lab, page, trained):
    open_lab(page, lab)
    jobs_panel(page)
    # Wait for the notifier's first poll: jobs already ended (train-page) give nothing.
    page.wait_for_timeout(4000)
    job = lab.cluster.submit(str(lab.workspace / "train.ipynb"), {"STEPS": 2}, name="notify-me")
    note = toast(page, "Job notify-me completed")
    expect(note).to_be_visible(timeout=150_000)
    page.wait_for_timeout(1000)  # the toast slides in: the screenshot shows it in place
    shot(page, "36-notification-job-completed")
    expect(toast(page, "train-page")).to_have_count(0)
    note.get_by_role("button", name="Open job").click()
    expect(job_page(page, job.id)).to_be_visible()
    expect(note).to_have_count(0)  # the action closed it
    # One notification per job, however many polls follow.
    page.wait_for_timeout(7000)
    expect(toast(page, "Job notify-me completed")).to_have_count(0)

    failing = lab.cluster.submit(str(lab.workspace / "broken.ipynb"), name="notify-fail")
    note = toast(page, "Job notify-fail failed")
    expect(note).to_be_visible(timeout=150_000)
    expect(note).to_contain_text("no data_batch_*")
    assert failing.status == "failed"


def test_a_notification_when_a_sweep_ends(lab, page):
    open_lab(page, lab)
    jobs_panel(page)
    page.wait_for_timeout(4000)
    code, sweep = lab.api("POST", "sweeps", {
        "notebook": "train.ipynb",
        "spec": {"parameters": {"LR": [0.1, 0.2], "STEPS": 2},
                 "objective": {"metric": "loss", "mode": "min"}, "max_parallel": 2},
    })
    assert code == 201, sweep
    note = toast(page, f"Sweep {sweep['id']} ended")
    expect(note).to_be_visible(timeout=200_000)
    expect(note).to_contain_text("2 trials")
    board = lab.api("GET", f"sweeps/{sweep['id']}")[1]["leaderboard"]
    best = next(e for e in board if e["rank"] == 1)
    page.wait_for_timeout(1000)
    shot(page, "37-notification-sweep-ended")
    note.get_by_role("button", name="Open best trial").click()
    expect(job_page(page, best["job"])).to_be_visible()
    # No notification per trial.
    expect(page.locator(".Toastify__toast", has_text=re.compile(r"Job \S+ completed"))).to_have_count(0)


def test_cancel_a_running_job_from_its_page(lab, page):
    job = lab.cluster.submit(str(lab.workspace / "ticker.ipynb"), name="page-ticker")
    try:
        wait_for(lambda: job.status == "running", timeout=90, what="the ticker to run")
        open_lab(page, lab)
        jobs_panel(page)
        view = open_job_page(page, job.id)
        expect(view.get_by_test_id("nbrunner-job-status").first).to_have_text("running")
        expect(view.get_by_test_id("nbrunner-jobpage-delete")).to_have_count(0)  # not finished
        expect(view.get_by_test_id("nbrunner-jobpage-download-zip")).to_be_disabled()
        view.get_by_test_id("nbrunner-jobpage-cancel").click()
        confirm = page.get_by_test_id("nbrunner-cancel-confirm")
        expect(confirm).to_contain_text(job.id)
        confirm.get_by_test_id("nbrunner-cancel-confirm-yes").click()
        # The page follows the job: cancelled, history, and now it can be deleted.
        expect(view.get_by_test_id("nbrunner-job-status").first).to_have_text("cancelled")
        expect(view.get_by_test_id("nbrunner-jobpage-history").locator('li[data-status="cancelled"]')).to_have_count(1)
        expect(view.get_by_test_id("nbrunner-jobpage-cancel")).to_have_count(0)
        expect(view.get_by_test_id("nbrunner-jobpage-delete")).to_be_visible()
        assert lab.job(job.id)["status"] == "cancelled"
        # The user cancelled it here: no "was cancelled" notification on top.
        page.wait_for_timeout(5000)
        expect(toast(page, "page-ticker was cancelled")).to_have_count(0)
        shot(page, "38-job-page-cancelled")
    finally:
        if job.status in ("queued", "running"):
            job.cancel()
