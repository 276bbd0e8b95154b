"""Accounts in JupyterLab: the cluster view's accounts table and their GPUs over time, kept up to
date by the push channel (polled without it), and a job's page naming its account and why it lost
GPUs when another account reclaimed them.

Real parts only: a cluster started with an accounts file, a JupyterLab server on it, jobs of two
users run by rq workers, headless Chromium.  The reclaims are real: the scheduler shrinks an
elastic borrower and re-queues a non-elastic one.  Screenshots go to test-artifacts/ui/.
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from labserver import Lab, running_lab
from support import GRANT_FOLLOWER, make_notebook, wait_for
from test_jupyterlab import jobs_panel, open_lab, shot
from test_lab_job_page import open_job_page

pytestmark = pytest.mark.slow

ACCOUNTS = """accounts:
  - name: vision
    weight: 3
    guaranteed: 1
    limit: 2
    members: [alice]
  - name: nlp
    weight: 1
    guaranteed: 1
    members: [bob]
reclaim_after: 2
"""
REASON = "reclaimed by account vision"
ACCOUNTS_GET = re.compile(r"/nbrunner/api/accounts(\?.*)?$")


@pytest.fixture(scope="module")
def lab():
    """The cluster of the browser tests (2 GPU slots), sharing its GPUs by ACCOUNTS."""
    with running_lab(accounts=ACCOUNTS) as lab:
        make_notebook(lab.workspace / "follow.ipynb", GRANT_FOLLOWER, parameters="MIN = 1\nMAX = 2\nSTOP = 'stop'")
        yield lab


@pytest.fixture
def jobs(lab: Lab):
    """Submit jobs as a user (``owner``); at the end every one is stopped and the slots are free."""
    started = []

    def submit(notebook: str, owner: str, name: str, min_gpus: int, max_gpus: int, **parameters):
        job = lab.cluster.submit(str(lab.workspace / notebook), parameters, name=name, min_gpus=min_gpus,
                                 max_gpus=max_gpus, owner=owner)
        started.append(job)
        return job

    yield submit
    stop = lab.workspace / "stop"
    stop.write_text("")
    try:
        for job in started:
            if job.status in ("queued", "running"):
                job.cancel()
        wait_for(lambda: lab.api("GET", "cluster")[1]["gpus_free"] == 2, timeout=60, what="every slot to be free")
    finally:
        stop.unlink()


def holds(lab: Lab, job, gpus: int) -> None:
    wait_for(lambda: lab.job(job.id)["status"] == "running" and lab.job(job.id)["gpus"] == gpus, timeout=90,
             what=f"job {job.id} to run on {gpus} GPU(s)")


def open_cluster_view(page: Page, lab: Lab) -> Locator:
    open_lab(page, lab)
    jobs_panel(page).get_by_test_id("nbrunner-open-cluster").click()
    view = page.get_by_test_id("nbrunner-cluster-view")
    expect(view).to_be_visible()
    return view


def cell(view: Locator, account: str, column: str) -> Locator:
    return view.locator(f'[data-testid="nbrunner-account"][data-account="{account}"] [data-col="{column}"]')


def account_series(view: Locator, account: str) -> Locator:
    return view.locator(f'[data-testid="nbrunner-accounts-timeline-series"][data-account-id="{account}"]')


def requests_to(page: Page, pattern: re.Pattern) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if pattern.search(r.url) else None)
    return seen


def test_the_cluster_view_shows_the_accounts_and_their_gpus_over_time(lab, page, jobs):
    alice = jobs("ticker.ipynb", "alice", "alice-ticker", 1, 1)
    holds(lab, alice, 1)
    view = open_cluster_view(page, lab)
    rows = view.get_by_test_id("nbrunner-account")
    expect(rows).to_have_count(3)
    assert [r.get_attribute("data-account") for r in rows.all()] == ["vision", "nlp", "default"]
    expected = {"vision": ("3", "1", "2"), "nlp": ("1", "1", "–"), "default": ("1", "0", "–")}
    for account, (weight, guaranteed, limit) in expected.items():
        expect(cell(view, account, "name")).to_have_text(account)
        expect(cell(view, account, "weight")).to_have_text(weight)
        expect(cell(view, account, "guaranteed")).to_have_text(guaranteed)
        expect(cell(view, account, "limit")).to_have_text(limit)
    expect(cell(view, "vision", "demand")).to_have_text("1")
    expect(cell(view, "vision", "held")).to_have_text("1")
    expect(cell(view, "nlp", "held")).to_have_text("0")
    expect(cell(view, "vision", "gpu-hours")).to_have_text(re.compile(r"^\d+\.\d\d$"))
    expect(view.get_by_test_id("nbrunner-accounts-source")).to_contain_text("accounts.yaml")
    expect(account_series(view, "vision")).to_have_count(1)
    expect(view.get_by_test_id("nbrunner-accounts-timeline-legend")).to_contain_text("vision")
    expect(view.get_by_test_id("nbrunner-accounts-timeline").locator("svg")).to_have_attribute(
        "aria-label", re.compile(r"^GPU allocation per account over the last .*; 1 account$"))
    # The job timeline above is unchanged: alice's job is one of its series.
    expect(view.locator(f'[data-testid="nbrunner-timeline-series"][data-job-id="{alice.id}"]')).to_have_count(1)

    # Live: bob's job arrives through the push channel, with no polling in between.
    expect(view.get_by_test_id("nbrunner-live-status")).to_have_attribute("data-mode", "live")
    page.wait_for_timeout(1500)  # the reads of the channel's opening are done
    reads = requests_to(page, ACCOUNTS_GET)
    page.wait_for_timeout(3000)
    assert reads == []  # nothing changed: the accounts are not read again
    bob = jobs("ticker.ipynb", "bob", "bob-ticker", 1, 1)
    expect(cell(view, "nlp", "held")).to_have_text("1", timeout=30_000)  # (the view re-reads on a timer only each minute)
    expect(cell(view, "nlp", "demand")).to_have_text("1")
    expect(account_series(view, "nlp")).to_have_count(1, timeout=30_000)
    assert lab.job(bob.id)["account"] == "nlp"
    shot(page, "60-cluster-view-accounts")


def test_without_the_channel_the_accounts_are_read_on_a_timer(lab, page, jobs):
    page.route(re.compile(r".*/nbrunner/api/events.*"), lambda route: route.abort())
    reads = requests_to(page, ACCOUNTS_GET)
    view = open_cluster_view(page, lab)
    expect(view.get_by_test_id("nbrunner-live-status")).to_have_attribute("data-mode", "polling", timeout=30_000)
    expect(cell(view, "vision", "held")).to_have_text("0")
    before = len(reads)
    page.wait_for_timeout(4000)
    assert len(reads) >= before + 2  # it polls
    alice = jobs("ticker.ipynb", "alice", "alice-polled", 1, 1)
    expect(cell(view, "vision", "held")).to_have_text("1", timeout=90_000)
    assert lab.job(alice.id)["account"] == "vision"


def reclaims(page: Locator) -> Locator:
    return page.get_by_test_id("nbrunner-jobpage-reclaim")


def test_a_shrunk_jobs_page_names_its_account_and_why(lab, page, jobs):
    bob = jobs("follow.ipynb", "bob", "bob-elastic", 0, 2, MIN=1, MAX=2, STOP=str(lab.workspace / "stop"))
    wait_for(lambda: bob.refresh().record.elastic and bob.record.gpus == 2, timeout=90,
             what="bob's elastic job to borrow both GPUs")
    open_lab(page, lab)
    jobs_panel(page)
    view = open_job_page(page, bob.id)
    details = view.get_by_test_id("nbrunner-jobpage-details")
    expect(details.locator('[data-field="account"] td')).to_have_text("nlp")
    expect(reclaims(view)).to_have_count(0)
    # alice's account asks for its guaranteed GPU back: bob's job shrinks at its next step.
    alice = jobs("ticker.ipynb", "alice", "alice-reclaims", 1, 1)
    expect(reclaims(view)).to_have_text([f"Shrunk: {REASON}"], timeout=60_000)
    expect(reclaims(view)).to_have_attribute("data-kind", "shrunk")
    holds(lab, alice, 1)
    assert lab.job(bob.id)["reclaimed"] == REASON
    shot(page, "61-job-page-shrunk")


def test_a_requeued_jobs_page_says_why_it_went_back_to_the_queue(lab, page, jobs):
    bob = jobs("ticker.ipynb", "bob", "bob-gang", 2, 2)
    holds(lab, bob, 2)
    alice = jobs("ticker.ipynb", "alice", "alice-asks", 1, 1)
    # A non-elastic borrower keeps the lent GPU reclaim_after (2 s), then goes back to the queue.
    wait_for(lambda: (lab.job(bob.id)["history"][-1].get("reason") == REASON
                      and lab.job(bob.id)["status"] == "queued"), timeout=90, what="bob's job to be re-queued")
    open_lab(page, lab)
    jobs_panel(page)
    view = open_job_page(page, bob.id)
    expect(view.get_by_test_id("nbrunner-jobpage-details").locator('[data-field="account"] td')).to_have_text("nlp")
    expect(reclaims(view)).to_have_text([f"Re-queued: {REASON}"])
    expect(reclaims(view)).to_have_attribute("data-kind", "requeued")
    expect(view.get_by_test_id("nbrunner-jobpage-history-reason")).to_have_text([REASON])
    shot(page, "62-job-page-requeued")
    # alice's job got the GPU; its page names her account and no reclaim.
    holds(lab, alice, 1)
    mine = open_job_page(page, alice.id)
    expect(mine.get_by_test_id("nbrunner-jobpage-details").locator('[data-field="account"] td')).to_have_text(
        "vision")
    expect(reclaims(mine)).to_have_count(0)
