"""The notification settings in JupyterLab: the Jobs panel's bell opens a form (an e-mail address,
Apprise URLs, the events); saving it sets what GET /me/notifications returns, a target the
cluster does not allow is refused with the server's one line and changes nothing, and the form
reads the saved settings back.  Real JupyterLab server and cluster, headless Chromium."""
from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from labserver import Lab
from test_jupyterlab import jobs_panel, open_lab, shot

pytestmark = pytest.mark.slow


def open_settings(page: Page, lab: Lab):
    open_lab(page, lab)
    jobs_panel(page).get_by_test_id("nbrunner-open-notifications").click()
    form = page.locator(".nbrunner-Notifications")
    expect(form).to_be_visible()
    return form


def test_the_bell_opens_the_settings_which_save_through_rest_and_read_back(page: Page, lab: Lab):
    code, before = lab.api("GET", "me/notifications")
    assert code == 200 and before["targets"] == []
    form = open_settings(page, lab)
    expect(form.get_by_test_id("nbrunner-notify-on-failed")).to_be_checked()  # every event until set
    form.get_by_test_id("nbrunner-notify-email").fill("alice@example.org")
    form.get_by_test_id("nbrunner-notify-urls").fill("json://hooks.example.org/x")
    form.get_by_test_id("nbrunner-notify-save").click()
    status = form.get_by_test_id("nbrunner-notify-status")
    expect(status).to_contain_text("notification target json is not allowed on this cluster (allowed: mailto")
    assert lab.api("GET", "me/notifications") == (200, before)

    form.get_by_test_id("nbrunner-notify-urls").fill("")
    for event in ("completed", "cancelled", "sweep"):
        form.get_by_test_id(f"nbrunner-notify-on-{event}").uncheck()
    form.get_by_test_id("nbrunner-notify-save").click()
    expect(status).to_have_text("Saved.")
    assert lab.api("GET", "me/notifications") == (200, {"targets": ["mailto:alice@example.org"],
                                                        "on": ["failed", "pipeline"]})
    shot(page, "notification-settings")

    code, _ = lab.api("PUT", "me/notifications", {"targets": ["mailto:bob@example.org"], "on": ["sweep"]})
    assert code == 200
    page.reload()
    form = open_settings(page, lab)
    expect(form.get_by_test_id("nbrunner-notify-email")).to_have_value("bob@example.org")
    expect(form.get_by_test_id("nbrunner-notify-on-sweep")).to_be_checked()
    expect(form.get_by_test_id("nbrunner-notify-on-failed")).not_to_be_checked()
    expect(form.get_by_test_id("nbrunner-notify-log")).to_contain_text("Nothing sent yet.")


def test_a_notifications_link_opens_the_jobs_page(page: Page, lab: Lab):
    from test_lab_job_page import job_page

    job = lab.cluster.submit(str(lab.workspace / "other.ipynb"))
    page.goto(lab.page_url() + f"&nbrunner-job={job.id}", wait_until="domcontentloaded")  # the link of a notification
    expect(page.locator("#jupyterlab-splash")).to_have_count(0, timeout=60_000)
    expect(job_page(page, job.id)).to_be_visible()
