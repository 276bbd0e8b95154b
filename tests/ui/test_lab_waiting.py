"""Why a job waits, in a real browser on a real server and cluster (2 GPU slots): the Jobs panel's
label under the status (its message on hover) and the job page's line, both following the push
channel; and the narrow sidebar table showing what matters first: a trial's sweep tag whole and
clickable beside a long name, the leaderboard's objective and job ids whole."""
from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from support import make_notebook, wait_for
from test_jupyterlab import RUN_TIMEOUT, job_row, jobs_panel, open_lab, shot, show_sweep
from test_lab_job_page import open_job_page

pytestmark = pytest.mark.slow

BUSY = "needs 2 GPUs; 2 of the 2 go to the 1 job ahead of it"
# A trial that records a long objective: -1.2345678 * X.
SCORE = "import nbrunner\nnbrunner.record('score', -1.2345678 * X)"


def fits(page: Page, locator) -> bool:
    """The element shows its whole text (nothing cut by an ellipsis or its cell)."""
    return locator.evaluate("e => e.scrollWidth <= e.clientWidth + 1")


def test_a_waiting_jobs_label_says_why_on_hover_and_its_page_says_it_too(lab, page):
    ahead = lab.cluster.submit(str(lab.workspace / "ticker.ipynb"), name="ahead", max_gpus=2)
    wait_for(lambda: ahead.status == "running", timeout=90, what="the first job to hold both GPUs")
    waiting = lab.cluster.submit(str(lab.workspace / "ticker.ipynb"), name="behind", max_gpus=2)
    try:
        wait_for(lambda: (lab.job(waiting.id).get("waiting") or {}).get("code") == "gpus_busy", timeout=30,
                 what="the second job's reason")
        open_lab(page, lab)
        panel = jobs_panel(page)
        label = job_row(page, waiting.id).get_by_test_id("nbrunner-job-waiting")
        expect(label).to_have_text("GPUs busy")
        expect(label).to_have_attribute("data-code", "gpus_busy")
        # no expected start: the job ahead never ran before, so nobody knows when it ends
        expect(label).to_have_attribute("title", BUSY + ".")
        label.hover()
        assert fits(page, label)
        box, pbox = label.bounding_box(), panel.bounding_box()
        assert box["x"] + box["width"] <= pbox["x"] + pbox["width"]  # inside the narrow sidebar
        expect(job_row(page, ahead.id).get_by_test_id("nbrunner-job-waiting")).to_have_count(0)
        shot(page, "70-jobs-waiting-label")

        view = open_job_page(page, waiting.id)
        line = view.get_by_test_id("nbrunner-jobpage-outlook")
        expect(line).to_have_text(f"Waiting (GPUs busy): {BUSY}.")
        expect(line).to_have_attribute("data-code", "gpus_busy")
        shot(page, "71-job-page-waiting")

        ahead.cancel()  # it starts: the label and the line go, pushed
        expect(line).to_have_count(0, timeout=RUN_TIMEOUT)
        jobs_panel(page)
        expect(job_row(page, waiting.id)).to_have_attribute("data-status", "running")
        expect(job_row(page, waiting.id).get_by_test_id("nbrunner-job-waiting")).to_have_count(0)
    finally:
        for job in (ahead, waiting):
            if job.status in ("queued", "running"):
                job.cancel()


def test_the_narrow_table_keeps_the_sweep_tag_and_the_leaderboard_keeps_objective_and_ids_whole(lab, page):
    make_notebook(lab.workspace / "a_rather_long_notebook_name_for_the_sidebar.ipynb", SCORE,
                  parameters="X = 1.0\nLONG_NAMED_PARAMETER = ''")
    code, created = lab.api("POST", "sweeps", {
        "notebook": "a_rather_long_notebook_name_for_the_sidebar.ipynb",
        "spec": {"parameters": {"X": [1.0, 1.5], "LONG_NAMED_PARAMETER": "a value that is long enough"},
                 "objective": {"metric": "score", "mode": "max"}}})
    assert code == 201, created
    sweep_id = created["id"]
    wait_for(lambda: all(r["status"] == "completed" for r in lab.api("GET", f"sweeps/{sweep_id}")[1]["leaderboard"]),
             timeout=RUN_TIMEOUT / 1000, what="the trials to complete")
    open_lab(page, lab)
    panel = jobs_panel(page)
    trial = created["jobs"][0]["id"] if isinstance(created["jobs"][0], dict) else created["jobs"][0]
    tag = job_row(page, trial).get_by_test_id("nbrunner-job-sweep")
    expect(tag).to_be_visible()
    assert fits(page, tag)
    # what a click at the tag's middle hits is the tag, not the name's ellipsis or the row
    hit = tag.evaluate("t => { const b = t.getBoundingClientRect();"
                       " return t.contains(document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2)); }")
    assert hit
    name = job_row(page, trial).get_by_test_id("nbrunner-job-name")
    assert not fits(page, name)  # the long name gives way (ellipsis), the tag does not
    tag.click()
    group = page.locator(f'[data-testid="nbrunner-sweep"][data-sweep-id="{sweep_id}"]')
    expect(group).to_be_visible()
    expect(panel.get_by_test_id("nbrunner-jobs-sweep")).to_have_value(sweep_id)
    group = show_sweep(page, sweep_id)
    objectives = group.get_by_test_id("nbrunner-leaderboard-objective")
    expect(objectives).to_have_text(["-1.2346", "-1.8519"])
    rows = group.get_by_test_id("nbrunner-leaderboard-row")
    for i in range(2):
        assert fits(page, objectives.nth(i))
        job_cell = rows.nth(i).locator("td").nth(2)
        expect(job_cell.locator("code")).to_have_text(rows.nth(i).get_attribute("data-job-id"))
        assert fits(page, job_cell)
    shot(page, "72-narrow-sweep-leaderboard")
