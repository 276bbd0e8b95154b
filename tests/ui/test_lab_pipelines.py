"""Pipelines in JupyterLab, in a real browser on a real server and cluster.

"Run pipeline" on a ``*.pipeline.yaml`` file (and only there) starts the pipeline and opens the
Pipelines view, which draws its graph of steps with their statuses, live: the first step runs
while the second waits for it, then both complete; clicking a step opens its job's page.
Screenshots go to ``test-artifacts/ui/``.
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from support import make_notebook
from test_jupyterlab import RUN_TIMEOUT, open_lab, shot, show_sidebar

pytestmark = pytest.mark.slow

PIPELINE_POST = re.compile(r"/nbrunner/api/pipelines(\?[^/]*)?$")

FIRST = """
import time, pathlib, nbrunner
deadline = time.time() + 120
while not pathlib.Path(gate).exists() and time.time() < deadline:
    time.sleep(0.2)
nbrunner.record("n", 21)
"""
SECOND = "import nbrunner\nassert type(n) is int\nnbrunner.record('twice', n * 2)"


def test_run_a_pipeline_from_its_file_and_watch_its_graph(lab, page):
    ws = lab.workspace
    gate = ws / "ui-gate.txt"
    make_notebook(ws / "flow" / "first.ipynb", FIRST, parameters="gate = ''")
    make_notebook(ws / "flow" / "second.ipynb", SECOND, parameters="n = 0")
    (ws / "flow" / "two.pipeline.yaml").write_text(
        "name: two\nsteps:\n"
        f"  first: {{notebook: first.ipynb, parameters: {{gate: '{gate}'}}}}\n"
        "  second: {notebook: second.ipynb, needs: [first], parameters: {n: '{{ steps.first.outputs.n }}'}}\n")
    (ws / "flow" / "plain.yaml").write_text("a: 1\n")
    open_lab(page, lab, "flow")
    browser = show_sidebar(page, "filebrowser")

    plain = browser.locator(".jp-DirListing-item", has_text="plain.yaml")
    expect(plain).to_be_visible()
    plain.click()
    plain.click(button="right")
    expect(page.locator(".lm-Menu").last).to_be_visible()
    expect(page.locator('.lm-Menu-item[data-command="nbrunner:run-sweep"]')).to_be_visible()  # the menu is open
    expect(page.locator('.lm-Menu-item[data-command="nbrunner:run-pipeline"]')).to_be_hidden()
    page.keyboard.press("Escape")

    item = browser.locator(".jp-DirListing-item", has_text="two.pipeline.yaml")
    item.click()
    item.click(button="right")
    entry = page.locator('.lm-Menu-item[data-command="nbrunner:run-pipeline"]')
    expect(entry).to_be_visible()
    shot(page, "60-run-pipeline-context-menu")
    with page.expect_response(lambda r: bool(PIPELINE_POST.search(r.url)) and r.request.method == "POST") as info:
        entry.click()
    assert info.value.status == 201, info.value.text()
    pipeline_id = info.value.json()["id"]

    view = page.get_by_test_id("nbrunner-pipelines-view")
    expect(view).to_be_visible()
    graph = view.locator(f'[data-testid="nbrunner-pipeline-graph"][data-pipeline="{pipeline_id}"]')
    expect(graph).to_be_visible()
    first = graph.locator('[data-testid="nbrunner-pipeline-step"][data-step="first"]')
    second = graph.locator('[data-testid="nbrunner-pipeline-step"][data-step="second"]')
    expect(first).to_have_attribute("data-status", "running", timeout=RUN_TIMEOUT)
    expect(second).to_have_attribute("data-status", "pending")
    expect(second).to_contain_text("waits for first")
    shot(page, "61-pipeline-running")

    gate.write_text("go")
    expect(second).to_have_attribute("data-status", "completed", timeout=RUN_TIMEOUT)
    expect(first).to_have_attribute("data-status", "completed")
    expect(graph).to_have_attribute("data-status", "completed")
    row = view.locator(f'[data-testid="nbrunner-pipeline-row"][data-pipeline="{pipeline_id}"]')
    expect(row).to_contain_text("2/2 steps completed")
    shot(page, "62-pipeline-completed")
    code, rec = lab.api("GET", f"pipelines/{pipeline_id}")
    assert code == 200 and rec["steps"]["second"]["outputs"] == {"twice": 42}

    second.click()
    job_page = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="two/second")
    expect(job_page).to_be_visible()
    shot(page, "63-pipeline-step-job-page")
