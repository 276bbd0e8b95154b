"""The Jobs table at scale, in a real browser on a real server and cluster with 5,000 jobs in its
history: paging, each filter, sorting, a row opening its job page; changes arriving on the push
channel (no list read again), resuming after the connection is cut mid-burst, and polling, said
in the panel, when the channel cannot be opened.  Screenshots go to ``test-artifacts/ui/``."""
from __future__ import annotations

import random
import re
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from playwright.sync_api import Page, expect

from labserver import Lab
from proxy import CuttingProxy
from test_jupyterlab import job_row, jobs_panel, open_lab, shot

pytestmark = pytest.mark.slow

HISTORY = 5000
JOBS_GET = re.compile(r"/nbrunner/api/jobs(\?[^/]*)?$")


@pytest.fixture(scope="module")
def history(lab: Lab) -> dict:
    """5,000 finished jobs written straight into the cluster's Redis, as the store files them: three
    owners, the three end states, a schedule's runs, a sweep's trials."""
    from nbrunner.control.submit import new_id
    from nbrunner.control.job_write import JobWrite, queue_write
    from nbrunner.core.models import JobRecord

    code, schedule = lab.api("POST", "schedules", {"notebook": "other.ipynb", "cron": "@weekly", "name": "weekly"})
    assert code == 201, schedule
    lab.api("PATCH", f"schedules/{schedule['id']}", {"paused": True})
    rng = random.Random(7)
    start = time.time() - HISTORY - 3600
    store = lab.cluster.store
    with store.r.pipeline(transaction=False) as p:
        for i in range(HISTORY):
            created = start + i
            began = datetime.fromtimestamp(created + 1, timezone.utc)
            status = ("completed", "failed", "cancelled")[i % 3]
            rec = JobRecord(
                id=new_id(), name=f"digits #{i}", notebook="digits.ipynb", status=status, priority=rng.randint(1, 10000),
                owner=("alice", "bob", "carol")[i % 5 % 3], max_gpus=i % 4, metrics={"accuracy": rng.random()},
                created_at=datetime.fromtimestamp(created, timezone.utc).isoformat(timespec="milliseconds"),
                started_at=began.isoformat(timespec="milliseconds"),
                finished_at=(began + timedelta(seconds=i % 50)).isoformat(timespec="milliseconds"),
                error="ValueError: diverged" if status == "failed" else None,
                schedule=schedule["id"] if i % 100 == 0 else None, sweep="swp1" if i % 250 == 7 else None)
            queue_write(p, JobWrite(rec.id, rec, score=created, new=True))  # as the store files a job
        p.execute()
    return {"schedule": schedule["id"]}


def table(page: Page):
    return page.get_by_test_id("nbrunner-jobs-panel")


def row_ids(page: Page) -> list[str]:
    return table(page).get_by_test_id("nbrunner-job").evaluate_all("rs => rs.map(r => r.dataset.jobId)")


def expect_rows(page: Page, expected: list[str], timeout: float = 10) -> None:
    """The table comes to list exactly ``expected`` (a filter's page replaces one of as many rows)."""
    deadline = time.monotonic() + timeout
    while (rows := row_ids(page)) != expected and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert rows == expected


def api_ids(lab: Lab, query: str) -> list[str]:
    code, body = lab.api("GET", f"jobs?{query}")
    assert code == 200, body
    return [j["id"] for j in body["jobs"]]


def set_rows(page: Page, n: int) -> None:
    table(page).get_by_test_id("nbrunner-jobs-limit").select_option(str(n))
    expect(table(page).get_by_test_id("nbrunner-job")).to_have_count(n)


def count_requests(page: Page, pattern: re.Pattern) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if r.method == "GET" and pattern.search(r.url) else None)
    return seen


def test_paging_through_5000_jobs_a_page_at_a_time(lab, page, history):
    gets = count_requests(page, JOBS_GET)
    open_lab(page, lab)
    t = time.monotonic()
    jobs_panel(page)
    expect(table(page).get_by_test_id("nbrunner-job").first).to_be_visible()
    first_page_s = time.monotonic() - t
    assert table(page).get_by_test_id("nbrunner-job").count() == 50  # the default page, not the history
    expect(table(page).get_by_test_id("nbrunner-live-status")).to_have_attribute("data-mode", "live")
    shot(page, "50-jobs-table-first-page")
    set_rows(page, 200)
    total = len(api_ids(lab, "limit=10000"))
    seen: list[str] = []
    label = table(page).get_by_test_id("nbrunner-page-label")
    older = table(page).get_by_test_id("nbrunner-page-older")
    while True:
        ids = row_ids(page)
        assert 0 < len(ids) <= 200
        expect(label).to_have_text(f"Jobs {len(seen) + 1}–{len(seen) + len(ids)}")
        seen += ids
        if older.is_disabled():
            break
        older.click()
        expect(label).not_to_have_text(f"Jobs {len(seen) - len(ids) + 1}–{len(seen)}")
    assert len(seen) == len(set(seen)) == total >= HISTORY  # every job once, newest first
    assert seen == api_ids(lab, "limit=10000")
    pages = -(-total // 200)
    table(page).get_by_test_id("nbrunner-page-newer").click()
    expect(label).to_have_text(f"Jobs {(pages - 2) * 200 + 1}–{(pages - 1) * 200}")
    assert len(gets) <= 2 + total // 200 + 2  # a read per page, none on a timer
    print(f"first page shown {first_page_s:.2f} s after the panel tab was clicked")


@pytest.mark.parametrize("field, value, query", [
    ("status", "failed", "status=failed"),
    ("owner", "bob", "owner=bob"),
    ("sweep", "swp1", "sweep=swp1"),
    ("q", "#49", "q=%2349"),
])
def test_each_filter_lists_only_matching_jobs(lab, page, history, field, value, query):
    open_lab(page, lab)
    panel = jobs_panel(page)
    expect(panel.get_by_test_id("nbrunner-job").first).to_be_visible()
    if field == "status":
        panel.get_by_test_id("nbrunner-jobs-filter").select_option(value)
    else:
        box = panel.get_by_test_id({"owner": "nbrunner-jobs-owner", "sweep": "nbrunner-jobs-sweep",
                                    "q": "nbrunner-jobs-search"}[field])
        box.fill(value)
        box.press("Enter")
    expected = api_ids(lab, f"{query}&limit=50")
    assert expected
    expect_rows(page, expected)
    shot(page, f"51-jobs-table-filter-{field}")


def test_the_schedule_filter_lists_its_runs(lab, page, history):
    open_lab(page, lab)
    panel = jobs_panel(page)
    select = panel.get_by_test_id("nbrunner-jobs-schedule")
    expect(select.locator(f'option[value="{history["schedule"]}"]')).to_have_count(1)
    select.select_option(history["schedule"])
    expected = api_ids(lab, f"schedule={history['schedule']}&limit=50")
    assert len(expected) == HISTORY // 100
    expect_rows(page, expected)


def test_sorting_by_a_column_and_by_creation(lab, page, history):
    open_lab(page, lab)
    panel = jobs_panel(page)
    expect(panel.get_by_test_id("nbrunner-job")).to_have_count(50)
    listed = row_ids(page)
    by_priority = panel.get_by_test_id("nbrunner-sort-priority")
    by_priority.click()
    expect(by_priority).to_have_attribute("data-sort", "ascending")
    values = panel.get_by_test_id("nbrunner-job-priority").evaluate_all("xs => xs.map(x => Number(x.value))")
    assert values == sorted(values) and sorted(row_ids(page)) == sorted(listed)  # the same rows, in order
    by_priority.click()
    expect(by_priority).to_have_attribute("data-sort", "descending")
    values = panel.get_by_test_id("nbrunner-job-priority").evaluate_all("xs => xs.map(x => Number(x.value))")
    assert values == sorted(values, reverse=True)
    shot(page, "52-jobs-table-sorted-by-priority")
    by_created = panel.get_by_test_id("nbrunner-sort-created")
    by_created.click()  # newest first: the listing's own order
    by_created.click()  # oldest first: the server turns the listing round
    expect(by_created).to_have_attribute("data-sort", "ascending")
    oldest = api_ids(lab, "order=oldest&limit=50")
    expect(panel.get_by_test_id("nbrunner-job").first).to_have_attribute("data-job-id", oldest[0])
    assert row_ids(page) == oldest


def test_a_row_opens_its_job_page(lab, page, history):
    open_lab(page, lab)
    jobs_panel(page)
    row = table(page).get_by_test_id("nbrunner-job").nth(3)
    job_id = row.get_attribute("data-job-id")
    row.get_by_test_id("nbrunner-job-status").click()  # anywhere on the row but a control
    view = page.locator(f'[data-testid="nbrunner-job-page"][data-job-id="{job_id}"]')
    expect(view).to_be_visible()
    expect(view.get_by_test_id("nbrunner-jobpage-id")).to_have_text(job_id)


def test_the_table_opens_full_width_in_a_tab(lab, page, history):
    open_lab(page, lab)
    jobs_panel(page).get_by_test_id("nbrunner-open-wide").click()
    wide = page.get_by_test_id("nbrunner-jobs-table")
    expect(wide.get_by_test_id("nbrunner-job")).to_have_count(50)
    for column in ("name", "status", "gpus", "priority", "owner", "created", "duration", "metric"):
        expect(wide.get_by_test_id(f"nbrunner-sort-{column}")).to_be_in_viewport()
    first = wide.get_by_test_id("nbrunner-job").first
    expect(first.get_by_test_id("nbrunner-job-metric")).to_be_in_viewport()
    expect(first.get_by_test_id("nbrunner-job-log")).to_be_in_viewport()
    shot(page, "55-jobs-table-full-width")


def test_changes_arrive_without_reading_the_list_again(lab, page, history):
    """Submit, priority and cancel reach the table and an open job page on the channel."""
    open_lab(page, lab)
    jobs_panel(page)
    expect(table(page).get_by_test_id("nbrunner-live-status")).to_have_attribute("data-mode", "live")
    expect(table(page).get_by_test_id("nbrunner-job")).to_have_count(50)
    gets = count_requests(page, JOBS_GET)
    code, job = lab.api("POST", "jobs", {"notebook": "other.ipynb", "name": "pushed", "min_gpus": 5, "max_gpus": 5})
    assert code == 201
    row = job_row(page, job["id"])
    expect(row).to_have_attribute("data-status", "queued")
    expect(table(page).get_by_test_id("nbrunner-job").first).to_have_attribute("data-job-id", job["id"])
    expect(table(page).get_by_test_id("nbrunner-job")).to_have_count(50)  # the page keeps its size
    row.get_by_test_id("nbrunner-job-name").click()
    view = page.locator(f'[data-testid="nbrunner-job-page"][data-job-id="{job["id"]}"]')
    expect(view).to_be_visible()
    lab.api("PATCH", f"jobs/{job['id']}", {"priority": 77})
    expect(row.get_by_test_id("nbrunner-job-priority")).to_have_value("77")
    lab.api("DELETE", f"jobs/{job['id']}")
    expect(row).to_have_attribute("data-status", "cancelled")
    expect(view.get_by_test_id("nbrunner-job-status").first).to_have_text("cancelled")
    expect(page.locator(".Toastify__toast", has_text="Job pushed was cancelled")).to_have_count(1)
    assert gets == []  # nothing but the channel: no list read again


def test_a_cut_connection_resumes_without_a_gap_or_a_duplicate(lab, page, history):
    """The connection is cut mid-burst (a proxy drops it); the table then shows every job of the
    burst once, from the channel alone."""
    proxy = CuttingProxy(int(lab.url.rsplit(":", 1)[1].strip("/")))
    try:
        url = lab.page_url().replace(lab.url, f"http://127.0.0.1:{proxy.port}/")
        events = count_requests(page, re.compile(r"/nbrunner/api/events"))
        page.goto(url)
        expect(page.locator("#jupyterlab-splash")).to_have_count(0, timeout=60_000)
        jobs_panel(page)
        set_rows(page, 200)
        expect(table(page).get_by_test_id("nbrunner-live-status")).to_have_attribute("data-mode", "live")
        gets = count_requests(page, JOBS_GET)
        code_loads = set()  # the Lab's code in flight: a cut fails a lazy chunk's load, not what is tested here
        page.on("request", lambda r: code_loads.add(r) if "/static/" in r.url else None)
        page.on("requestfinished", lambda r: code_loads.discard(r))
        page.on("requestfailed", lambda r: code_loads.discard(r))
        burst: list[str] = []
        half, cut = threading.Event(), threading.Event()

        def submit(n: int) -> None:
            for i in range(n):
                if i == n // 2:  # the second half is written after the cut, while the tab reconnects
                    half.set()
                    cut.wait(60)
                code, job = lab.api("POST", "jobs", {"notebook": "other.ipynb", "name": f"burst-{i}",
                                                     "min_gpus": 5, "max_gpus": 5})
                assert code == 201
                burst.append(job["id"])

        writer = threading.Thread(target=submit, args=(60,))
        writer.start()
        page.wait_for_function("n => Array.from(document.querySelectorAll('[data-testid=nbrunner-job]'))"
                               ".filter(r => r.getAttribute('aria-label').startsWith('Job burst-')).length >= n", arg=15)
        assert half.wait(60)  # the first half written (a loaded machine shows 15 rows before the writer is there)
        for _ in range(300):
            if not code_loads:
                break
            page.wait_for_timeout(100)
        assert proxy.cut() >= 1 and len(burst) == 30  # mid-burst
        cut.set()
        writer.join()
        page.wait_for_timeout(500)
        rows = table(page).get_by_test_id("nbrunner-job")
        expect(rows.filter(has_text="burst-")).to_have_count(60, timeout=30_000)
        ids = row_ids(page)
        assert len(ids) == len(set(ids)) <= 200 and set(burst) <= set(ids)
        assert ids[:60] == burst[::-1]  # newest first
        assert len(events) >= 2  # the channel reconnected
        assert gets == []  # the rows came from the channel, not from reading the list again
        shot(page, "53-jobs-table-after-a-cut")
    finally:
        for job_id in api_ids(lab, "status=queued&limit=200"):
            lab.api("DELETE", f"jobs/{job_id}")
        proxy.close()


def test_without_the_channel_the_panel_polls_and_says_so(lab, page, history):
    page.route(re.compile(r".*/nbrunner/api/events.*"), lambda route: route.abort())
    gets = count_requests(page, JOBS_GET)
    open_lab(page, lab)
    panel = jobs_panel(page)
    status = panel.get_by_test_id("nbrunner-live-status")
    expect(status).to_have_attribute("data-mode", "polling", timeout=30_000)
    expect(status).to_contain_text("Live updates unavailable")
    before = len(gets)
    page.wait_for_timeout(4000)
    assert len(gets) >= before + 2  # it polls
    code, job = lab.api("POST", "jobs", {"notebook": "other.ipynb", "name": "polled", "min_gpus": 5, "max_gpus": 5})
    expect(job_row(page, job["id"])).to_be_visible()
    shot(page, "54-jobs-table-polling")
    lab.api("DELETE", f"jobs/{job['id']}")
