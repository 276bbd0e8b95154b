"""Schedules and sweeps in JupyterLab, in a real browser on a real server and cluster.

The Run-as-job dialog's "Run on a schedule" creates a schedule whose runs arrive live in
the Schedules view, where it is paused, resumed, edited and deleted; a bad cron says why next
to its field; "Run sweep…" on a spec file starts a sweep whose leaderboard has one row per
trial.  Screenshots go to ``test-artifacts/ui/``.
"""
from __future__ import annotations

import re
import time
from datetime import datetime, timezone

import pytest
from playwright.sync_api import Locator, Page, expect

from labserver import Lab
from support import make_notebook, wait_for
from test_jupyterlab import RUN_TIMEOUT, SCORE, jobs_panel, open_lab, shot, show_sidebar, submit_dialog

pytestmark = pytest.mark.slow

SCHEDULE_POST = re.compile(r"/nbrunner/api/schedules(\?[^/]*)?$")
SCHEDULE_PATCH = re.compile(r"/nbrunner/api/schedules/[a-z0-9]+(\?[^/]*)?$")
SWEEP_POST = re.compile(r"/nbrunner/api/sweeps(\?[^/]*)?$")


def runs(lab: Lab, schedule_id: str) -> list[dict]:
    code, body = lab.api("GET", f"jobs?schedule={schedule_id}")
    assert code == 200, body
    return body["jobs"]


def epoch(iso: str) -> float:
    """Seconds since the epoch of an ISO 8601 time (UTC when it names no zone)."""
    moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def assert_no_run_after(lab: Lab, schedule_id: str, moment: float, window: float) -> None:
    """Over ``window`` seconds, no run of the schedule is created after ``moment`` (epoch s; a
    fire claimed just before it may still land within a second)."""
    deadline = time.monotonic() + window
    while time.monotonic() < deadline:
        late = [r["id"] for r in runs(lab, schedule_id) if epoch(r["created_at"]) > moment + 1]
        assert not late, f"runs started after the schedule stopped: {late}"
        time.sleep(0.5)


def open_dialog(page: Page, lab: Lab, notebook: str) -> Locator:
    open_lab(page, lab, notebook)
    page.get_by_test_id("nbrunner-run-as-job").click()
    return submit_dialog(page)


def field_error(dialog: Locator, field: str) -> Locator:
    return dialog.locator(f'[data-testid="nbrunner-field-error"][data-field="{field}"]')


def schedule_row(page: Page, schedule_id: str) -> Locator:
    return page.locator(f'[data-testid="nbrunner-schedule"][data-schedule-id="{schedule_id}"]')


@pytest.fixture
def paris_page(browser, lab):
    """A page whose browser runs in Europe/Paris (the server's default zone is UTC)."""
    from playwright.sync_api import expect as expect_

    expect_.set_options(timeout=20_000)
    context = browser.new_context(viewport={"width": 1440, "height": 900}, timezone_id="Europe/Paris")
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def test_schedule_a_notebook_then_pause_resume_edit_and_delete_it(lab, paris_page):
    page = paris_page
    make_notebook(lab.workspace / "beat.ipynb", "print(f'beat {X}')", parameters="X = 1")
    dialog = open_dialog(page, lab, "beat.ipynb")
    dialog.get_by_test_id("nbrunner-mode-schedule").click()
    expect(dialog.get_by_test_id("nbrunner-mode-schedule")).to_have_attribute("aria-checked", "true")
    expect(page.get_by_test_id("nbrunner-submit")).to_have_text("Save schedule")
    # The time zone defaults to the browser's.
    zone = "Europe/Paris"
    expect(dialog.get_by_test_id("nbrunner-when-timezone")).to_have_value(zone)
    dialog.get_by_test_id("nbrunner-when-preset").select_option("seconds")
    dialog.get_by_test_id("nbrunner-when-seconds").fill("2")
    dialog.get_by_test_id("nbrunner-param-row").filter(has_text="X").locator("input").fill("7")
    dialog.get_by_test_id("nbrunner-job-name").fill("heartbeat")
    shot(page, "30-schedule-dialog-every-2s")
    with page.expect_response(lambda r: bool(SCHEDULE_POST.search(r.url)) and r.request.method == "POST") as info:
        page.get_by_test_id("nbrunner-submit").click()
    assert info.value.status == 201, info.value.text()
    schedule = info.value.json()
    sid = schedule["id"]
    assert schedule["every"] == 2 and schedule["cron"] is None and schedule["timezone"] == zone
    assert schedule["parameters"] == {"X": 7} and schedule["name"] == "heartbeat"
    expect(page.get_by_test_id("nbrunner-submit-dialog")).to_have_count(0)

    # The Schedules view opens on the new schedule; its runs arrive there, newest first.
    view = page.get_by_test_id("nbrunner-schedules-view")
    expect(view).to_be_visible()
    row = schedule_row(page, sid)
    expect(row.get_by_test_id("nbrunner-schedule-timing")).to_have_text("every 2 s")
    expect(row.get_by_test_id("nbrunner-schedule-timezone")).to_have_text(zone)
    expect(row.get_by_test_id("nbrunner-schedule-state")).to_have_text("active")
    section = page.locator(f'[data-testid="nbrunner-schedule-runs"][data-schedule-id="{sid}"]')
    run_rows = section.get_by_test_id("nbrunner-job")
    expect(run_rows.nth(1)).to_be_visible(timeout=RUN_TIMEOUT)  # two runs at least
    expect(section.locator('[data-testid="nbrunner-job"][data-status="completed"]').first) \
        .to_be_visible(timeout=RUN_TIMEOUT)
    listed = run_rows.evaluate_all("rs => rs.map(r => r.dataset.jobId)")
    api_runs = runs(lab, sid)
    assert all(r["schedule"] == sid and r["parameters"] == {"X": 7} for r in api_runs)
    # Newest first, as the API lists them (the view may be one poll behind).
    assert [r["id"] for r in api_runs if r["id"] in listed] == listed
    expect(row.get_by_test_id("nbrunner-schedule-last")).to_contain_text("ago")
    shot(page, "31-schedules-view-runs-arriving")

    # Pause: no new run for a while.
    with page.expect_response(lambda r: bool(SCHEDULE_PATCH.search(r.url)) and r.request.method == "PATCH") as info:
        row.get_by_test_id("nbrunner-schedule-pause").click()
    assert info.value.status == 200 and info.value.json()["paused"] is True
    paused_at = time.time()
    expect(row.get_by_test_id("nbrunner-schedule-state")).to_have_text("paused")
    assert_no_run_after(lab, sid, paused_at, window=8)  # four periods of the schedule
    paused_count = len(runs(lab, sid))
    expect(row.get_by_test_id("nbrunner-schedule-next")).to_have_text("–")
    shot(page, "32-schedule-paused")

    # Resume: runs arrive again, in the view too.
    row.get_by_test_id("nbrunner-schedule-resume").click()
    expect(row.get_by_test_id("nbrunner-schedule-state")).to_have_text("active")
    wait_for(lambda: len(runs(lab, sid)) > paused_count, timeout=60, what="a run after resuming")
    expect(run_rows).to_have_count(len(runs(lab, sid)), timeout=30_000)
    assert run_rows.count() > paused_count

    # Edit through the same form: every 3 s, X = 9.
    row.get_by_test_id("nbrunner-schedule-edit").click()
    edit = page.get_by_test_id("nbrunner-submit-dialog")
    expect(edit).to_be_visible()
    expect(edit.get_by_test_id("nbrunner-mode")).to_have_count(0)  # no mode switch: it is a schedule
    expect(edit.get_by_test_id("nbrunner-when-preset")).to_have_value("seconds")
    expect(edit.get_by_test_id("nbrunner-when-seconds")).to_have_value("2")
    x_input = edit.get_by_test_id("nbrunner-param-row").filter(has_text="X").locator("input")
    expect(x_input).to_have_value("7")
    edit.get_by_test_id("nbrunner-when-seconds").fill("3")
    x_input.fill("9")
    shot(page, "33-schedule-edit-dialog")
    with page.expect_response(lambda r: bool(SCHEDULE_PATCH.search(r.url)) and r.request.method == "PATCH") as info:
        page.get_by_test_id("nbrunner-submit").click()
    assert info.value.status == 200, info.value.text()
    expect(edit).to_have_count(0)
    expect(row.get_by_test_id("nbrunner-schedule-timing")).to_have_text("every 3 s")
    updated = lab.api("GET", f"schedules/{sid}")[1]
    assert updated["every"] == 3 and updated["parameters"] == {"X": 9} and updated["cron"] is None
    wait_for(lambda: any(r["parameters"] == {"X": 9} for r in runs(lab, sid)), timeout=60,
             what="a run with the edited parameters")

    # Delete, after confirming: gone from the view and the API, and no more runs.
    row.get_by_test_id("nbrunner-schedule-delete").click()
    confirm = page.get_by_test_id("nbrunner-delete-schedule-confirm")
    expect(confirm).to_be_visible()
    shot(page, "34-schedule-delete-confirm")
    confirm.get_by_test_id("nbrunner-delete-schedule-yes").click()
    expect(row).to_have_count(0)
    deleted_at = time.time()
    assert lab.api("GET", f"schedules/{sid}")[0] == 404
    assert_no_run_after(lab, sid, deleted_at, window=6)  # two periods
    shot(page, "35-schedule-deleted")


def test_an_invalid_cron_says_why_next_to_the_field_and_a_refusal_shows_in_the_dialog(lab, page):
    dialog = open_dialog(page, lab, "other.ipynb")
    dialog.get_by_test_id("nbrunner-mode-schedule").click()
    dialog.get_by_test_id("nbrunner-when-preset").select_option("cron")
    cron = dialog.get_by_test_id("nbrunner-when-cron")
    cron.fill("61 * * * *")
    error = field_error(dialog, "when:cron")
    expect(error).to_be_visible()
    expect(error).to_contain_text("minute must be 0–59, not 61")
    expect(cron).to_have_attribute("aria-invalid", "true")
    cron.fill("0 9 * *")
    expect(error).to_contain_text("has 4")
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" and "schedules" in r.url else None)
    page.get_by_test_id("nbrunner-submit").click()
    expect(cron).to_be_focused()  # the dialog stays open and takes the user to the field
    shot(page, "36-schedule-invalid-cron")
    cron.fill("*/5 9-17 * * mon-fri")
    expect(error).to_be_hidden()
    # An invalid zone too.
    zone = dialog.get_by_test_id("nbrunner-when-timezone")
    zone.fill("Mars/Olympus")
    expect(field_error(dialog, "when:timezone")).to_contain_text("not a time zone")
    zone.fill("Europe/Paris")
    expect(field_error(dialog, "when:timezone")).to_be_hidden()
    assert posts == []
    # What only the server refuses is shown in the dialog, which stays open.
    dialog.get_by_test_id("nbrunner-when-preset").select_option("seconds")
    dialog.get_by_test_id("nbrunner-when-seconds").fill("99999999")
    with page.expect_response(lambda r: bool(SCHEDULE_POST.search(r.url)) and r.request.method == "POST") as info:
        page.get_by_test_id("nbrunner-submit").click()
    assert info.value.status == 400
    message = info.value.json()["message"]
    expect(dialog.get_by_test_id("nbrunner-submit-error")).to_have_text(message)
    assert "every" in message
    shot(page, "37-schedule-refused-by-server")
    dialog.get_by_test_id("nbrunner-when-seconds").fill("60")
    expect(dialog.get_by_test_id("nbrunner-submit-error")).to_be_hidden()
    page.get_by_test_id("nbrunner-cancel-dialog").click()
    expect(dialog).to_have_count(0)
    assert lab.api("GET", "schedules")[1]["schedules"] == []


def test_run_a_sweep_from_a_spec_file_and_see_its_leaderboard(lab, page):
    make_notebook(lab.workspace / "score.ipynb", SCORE, parameters="X = 0.5\nY = 1.0")
    (lab.workspace / "grid.yaml").write_text(
        "parameters:\n  X: [1, 2, 3]\n  Y: 2.0\nmax_parallel: 2\nobjective: {metric: score, mode: max}\n")
    open_lab(page, lab)
    browser = show_sidebar(page, "filebrowser")
    item = browser.locator(".jp-DirListing-item", has_text="grid.yaml")
    expect(item).to_be_visible()
    item.click(button="right")
    entry = page.locator('.lm-Menu-item[data-command="nbrunner:run-sweep"]')
    expect(entry).to_be_visible()
    shot(page, "38-run-sweep-context-menu")
    entry.click()
    picker = page.get_by_test_id("nbrunner-sweep-picker")
    expect(picker).to_be_visible()
    picker.get_by_test_id("nbrunner-sweep-notebook").fill("score.ipynb")
    page.locator(".nbrunner-SweepPicker-next").click()
    dialog = page.get_by_test_id("nbrunner-submit-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_test_id("nbrunner-mode-sweep")).to_have_attribute("aria-checked", "true")
    expect(dialog.get_by_test_id("nbrunner-when-spec")).to_have_value("grid.yaml")
    expect(dialog.get_by_test_id("nbrunner-params")).to_be_hidden()  # the spec sets them
    expect(page.get_by_test_id("nbrunner-submit")).to_have_text("Start sweep")
    shot(page, "39-sweep-dialog")
    with page.expect_response(lambda r: bool(SWEEP_POST.search(r.url)) and r.request.method == "POST") as info:
        page.get_by_test_id("nbrunner-submit").click()
    assert info.value.status == 201, info.value.text()
    sweep_id = info.value.json()["id"]
    assert len(info.value.json()["leaderboard"]) == 3

    jobs_panel(page)
    group = page.locator(f'[data-testid="nbrunner-sweep"][data-sweep-id="{sweep_id}"]')
    rows = group.get_by_test_id("nbrunner-leaderboard-row")
    expect(rows).to_have_count(3)
    expect(group.get_by_test_id("nbrunner-sweep-summary")).to_contain_text("3 trials")
    shot(page, "40-sweep-from-spec-running")
    done = group.locator('[data-testid="nbrunner-leaderboard-status"][data-status="completed"]')
    expect(done).to_have_count(3, timeout=RUN_TIMEOUT)
    expect(rows).to_have_count(3)
    expect(group.get_by_test_id("nbrunner-sweep-summary")).to_contain_text("3 trials: 3 completed")
    # Best first: X=3 scores 6.
    expect(rows.first).to_have_attribute("data-rank", "1")
    expect(rows.first.get_by_test_id("nbrunner-leaderboard-params")).to_contain_text("X=3")
    shot(page, "41-sweep-from-spec-ended")
