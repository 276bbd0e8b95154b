"""One JupyterLab tab in Chromium, this tree against a baseline revision (before the push channel),
each in turn on the same kind of cluster (an embedded Redis, no worker: records change only when
the benchmark changes them):

- idle: with 100,000 jobs in the history and the Jobs panel open, the bytes the tab receives from
  the nbrunner API over 60 s (CDP network events); how long after its tab is clicked the panel
  shows its first jobs, and how many job rows the page holds;
- changes: with 3,000 jobs, 10 rounds of a submit, a priority change, a start and a finish of one
  job (whose page is open) and a submit and a cancel of another (records changed as the cluster
  changes them): the time from each change to the panel, the job page and the notification
  showing it (the page's own clock, checked every animation frame).

``python bench/bench_push_lab.py [BASELINE_REV [HISTORY [IDLE_S]]]`` (default baseline: the last
revision without the channel)."""
from __future__ import annotations

import getpass
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_history import fill  # noqa: E402
from pushkit import Server, new_job, redis_store, tree_at  # noqa: E402

BASELINE = "26e73a3"  # main before the push channel
CHROMIUM = "/usr/bin/chromium"
GOAL_IDLE_BPS = 2048
GOAL_FIRST_PAGE_S = 1.0
GOAL_MEDIAN_S, GOAL_P99_S = 1.0, 2.0
ROUNDS = 10
API = "/nbrunner/api/"

# Installed in the page: wait (every animation frame) until a condition holds, note when.
WATCH = """([key, kind, id, value]) => {
  window.__seen = window.__seen || {};
  const done = () => {
    if (kind === 'row') {
      const row = document.querySelector(`#nbrunner-jobs-panel [data-testid="nbrunner-job"][data-job-id="${id}"]`);
      return row && row.dataset.status === value;
    }
    if (kind === 'priority') {
      const box = document.querySelector(`#nbrunner-jobs-panel [data-testid="nbrunner-job-priority"][data-job-id="${id}"]`);
      return box && box.value === value;
    }
    if (kind === 'page') {
      const badge = document.querySelector(`[data-testid="nbrunner-job-page"][data-job-id="${id}"] [data-testid="nbrunner-job-status"]`);
      return badge && badge.textContent === value;
    }
    return Array.from(document.querySelectorAll('.Toastify__toast')).some(t => t.textContent.includes(value));
  };
  const tick = () => { if (done()) { window.__seen[key] = Date.now(); } else { requestAnimationFrame(tick); } };
  tick();
}"""


def open_lab(page, server: Server) -> None:
    page.goto(f"{server.url}lab/workspaces/bench?token={server.token}")
    page.wait_for_selector('.jp-SideBar .lm-TabBar-tab[data-id="nbrunner-jobs-panel"]', timeout=120_000)
    page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=120_000)
    page.wait_for_timeout(3000)  # JupyterLab's own start is over: the panel is measured alone


def show_panel(page) -> float:
    """Click the Jobs tab; seconds until the panel shows its first job."""
    t = time.monotonic()
    page.locator('.jp-SideBar .lm-TabBar-tab[data-id="nbrunner-jobs-panel"]').click()
    page.wait_for_selector('#nbrunner-jobs-panel [data-testid="nbrunner-job"]', timeout=120_000)
    return time.monotonic() - t


def idle(browser, tree: Path, history: int, idle_s: float) -> dict:
    root = Path(tempfile.mkdtemp(prefix="nbrlab", dir="/tmp"))
    with redis_store(root) as store:
        fill(store, history, owners=(getpass.getuser(),))
        server = Server(tree, root, lab=True)
        try:
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            page = context.new_page()
            cdp = context.new_cdp_session(page)
            cdp.send("Network.enable")
            urls: dict[str, str] = {}
            got: dict[str, int] = {}
            cdp.on("Network.requestWillBeSent", lambda e: urls.__setitem__(e["requestId"], e["request"]["url"]))
            cdp.on("Network.dataReceived", lambda e: got.__setitem__(e["requestId"], got.get(e["requestId"], 0)
                                                                     + e["encodedDataLength"]))
            cdp.on("Network.loadingFinished", lambda e: got.__setitem__(e["requestId"], max(
                got.get(e["requestId"], 0), e["encodedDataLength"])))
            open_lab(page, server)
            first_page = show_panel(page)
            rows = page.locator('#nbrunner-jobs-panel [data-testid="nbrunner-job"]').count()
            page.wait_for_timeout(5000)  # settled: whatever the panel does on opening is done

            def api_bytes() -> int:
                return sum(n for rid, n in got.items() if API in urls.get(rid, ""))

            before, t = api_bytes(), time.monotonic()
            page.wait_for_timeout(int(idle_s * 1000))  # CDP events arrive only during Playwright calls
            rate = (api_bytes() - before) / (time.monotonic() - t)
            requests = sum(1 for u in urls.values() if API in u)
            context.close()
        finally:
            server.stop()
    return {"bytes_per_s": rate, "first_page_s": first_page, "rows": rows, "requests": requests}


def changes(browser, tree: Path, history: int) -> dict:
    from nbrunner.core.lifecycle import CancelRequested, Dispatch, Finish, SetPriority, Start
    from nbrunner.core.models import utcnow

    owner = getpass.getuser()
    root = Path(tempfile.mkdtemp(prefix="nbrlab", dir="/tmp"))
    lat: dict[str, list[float]] = {"panel": [], "page": [], "notification": []}
    with redis_store(root) as store:
        fill(store, history, owners=(owner,))
        server = Server(tree, root, lab=True)
        try:
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            page = context.new_page()
            open_lab(page, server)
            show_panel(page)
            page.wait_for_timeout(5000)  # the notifier has read what had ended before

            def change(surfaces: dict[str, tuple[str, str, str]], write) -> None:
                keys = []
                for surface, (kind, job_id, value) in surfaces.items():
                    key = f"{surface}:{kind}:{job_id}:{value}"
                    page.evaluate(WATCH, [key, kind, job_id, value])
                    keys.append((surface, key))
                write()
                at = time.time() * 1000
                for surface, key in keys:
                    page.wait_for_function("k => window.__seen && window.__seen[k]", arg=key, timeout=60_000)
                    lat[surface].append((page.evaluate("k => window.__seen[k]", key) - at) / 1000)

            for i in range(ROUNDS):
                a, b = new_job(f"bench-a{i}", owner), new_job(f"bench-b{i}", owner)
                change({"panel": ("row", a.id, "queued")}, lambda: store.create(a))
                page.evaluate("([id, name]) => { window.jupyterapp.commands.execute('nbrunner:open-job', {id, name}); }",
                              [a.id, a.name])
                page.wait_for_selector(f'[data-testid="nbrunner-job-page"][data-job-id="{a.id}"] '
                                       '[data-testid="nbrunner-job-status"]')
                page.wait_for_timeout(300)
                change({"panel": ("priority", a.id, str(100 + i))},
                       lambda: store.transition(a.id, SetPriority(priority=100 + i)))
                store.transition(a.id, Dispatch(host="bench"))
                change({"panel": ("row", a.id, "running"), "page": ("page", a.id, "running")},
                       lambda: store.transition(a.id, Start(attempt=1, worker="bench", host="bench", at=utcnow())))
                change({"panel": ("row", a.id, "completed"), "page": ("page", a.id, "completed"),
                        "notification": ("toast", a.id, f"Job {a.name} completed")},
                       lambda: store.transition(a.id, Finish(attempt=1, at=utcnow())))
                change({"panel": ("row", b.id, "queued")}, lambda: store.create(b))
                change({"panel": ("row", b.id, "cancelled"), "notification": ("toast", b.id, f"Job {b.name} was cancelled")},
                       lambda: store.transition(b.id, CancelRequested(at=utcnow())))
                page.evaluate("() => { window.jupyterapp.commands.execute('apputils:dismiss-all-notifications')"
                              ".catch(() => undefined); }")
            context.close()
        finally:
            server.stop()

    def stats(xs: list[float]) -> tuple[float, float]:
        xs = sorted(xs)
        return statistics.median(xs), xs[min(len(xs) - 1, int(round(0.99 * (len(xs) - 1))))]

    return {surface: stats(xs) for surface, xs in lat.items()} | {"n": {s: len(x) for s, x in lat.items()}}


def run(baseline: str = BASELINE, history: int = 100_000, idle_s: float = 60.0) -> list[dict]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            with tree_at(None) as tree, tree_at(baseline) as base:
                now_idle = idle(browser, tree, history, idle_s)
                base_idle = idle(browser, base, history, idle_s)
                now_changes = changes(browser, tree, 3000)
                base_changes = changes(browser, base, 3000)
        finally:
            browser.close()
    print(f"idle: {now_idle} vs {base_idle}\nchanges: {now_changes} vs {base_changes}", file=sys.stderr)
    n = f"{history:,} jobs"
    rows = [
        {"benchmark": f"idle tab, {n}: bytes/s from the nbrunner API over {idle_s:g} s", "value": now_idle["bytes_per_s"],
         "baseline": base_idle["bytes_per_s"], "ratio": now_idle["bytes_per_s"] / max(base_idle["bytes_per_s"], 1e-9),
         "goal": f"<= {GOAL_IDLE_BPS} B/s", "ok": now_idle["bytes_per_s"] <= GOAL_IDLE_BPS},
        {"benchmark": f"Jobs panel: first jobs shown after its tab is clicked, {n} (s)", "value": now_idle["first_page_s"],
         "baseline": base_idle["first_page_s"], "ratio": now_idle["first_page_s"] / base_idle["first_page_s"],
         "goal": f"<= {GOAL_FIRST_PAGE_S:g} s", "ok": now_idle["first_page_s"] <= GOAL_FIRST_PAGE_S},
        {"benchmark": f"Jobs panel: job rows in the page, {n}", "value": now_idle["rows"], "baseline": base_idle["rows"],
         "ratio": now_idle["rows"] / max(base_idle["rows"], 1), "goal": "<= 200", "ok": now_idle["rows"] <= 200},
    ]
    for surface in ("panel", "page", "notification"):
        for i, (what, goal) in enumerate((("median", GOAL_MEDIAN_S), ("p99", GOAL_P99_S))):
            value, base = now_changes[surface][i], base_changes[surface][i]
            rows.append({"benchmark": f"a change shown in the {surface} ({now_changes['n'][surface]} changes), {what} (s)",
                         "value": value, "baseline": base, "ratio": value / base, "goal": f"<= {goal:g} s",
                         "ok": value <= goal})
    return rows


if __name__ == "__main__":
    from table import print_table

    args = sys.argv[1:4]
    print_table(run(*(a if i == 0 else (float(a) if i == 2 else int(a)) for i, a in enumerate(args))))
