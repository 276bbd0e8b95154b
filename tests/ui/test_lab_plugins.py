"""The extension's plugins in a real JupyterLab: one plugin per area, each activated, every
command there, and main-area tabs opened once per thing they show (the `MainAreaWidgets` helper).

The page exposes the JupyterLab application (``window.jupyterapp``, see labserver.py), so the
test reads the plugins and runs the commands as the extension's own buttons do.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from support import wait_for
from test_jupyterlab import open_lab

pytestmark = pytest.mark.slow

PLUGINS = [
    "nbrunner:channel", "nbrunner:models", "nbrunner:jobs", "nbrunner:notifier",
    "nbrunner:job-pages", "nbrunner:logs", "nbrunner:cluster", "nbrunner:run-as-job",
    "nbrunner:sweeps", "nbrunner:schedules", "nbrunner:pipelines", "nbrunner:notifications",
]
COMMANDS = [
    "nbrunner:run-as-job", "nbrunner:open-jobs", "nbrunner:open-jobs-table", "nbrunner:open-cluster",
    "nbrunner:open-log", "nbrunner:open-job", "nbrunner:open-output", "nbrunner:open-models",
    "nbrunner:open-schedules", "nbrunner:run-sweep", "nbrunner:open-pipelines", "nbrunner:run-pipeline",
    "nbrunner:open-notifications",
]


def run(page: Page, command: str, args: dict | None = None) -> None:
    page.evaluate("async ([id, args]) => { await window.jupyterapp.commands.execute(id, args); }",
                  [command, args or {}])


def count(page: Page, widget_id: str) -> int:
    return page.locator(f'[id="{widget_id}"]').count()


def test_each_area_is_an_activated_plugin_and_every_command_is_there(lab, page):
    open_lab(page, lab)
    ours = page.evaluate("() => window.jupyterapp.listPlugins().filter(id => id.startsWith('nbrunner:'))")
    assert sorted(ours) == sorted(PLUGINS)
    inactive = page.evaluate("ids => ids.filter(id => !window.jupyterapp.isPluginActivated(id))", PLUGINS)
    assert inactive == []
    missing = page.evaluate("ids => ids.filter(id => !window.jupyterapp.commands.hasCommand(id))", COMMANDS)
    assert missing == []


def test_main_area_tabs_open_once_and_logs_open_side_by_side(lab, page):
    first = lab.cluster.submit(str(lab.workspace / "greet.ipynb"), name="tabs-a")
    second = lab.cluster.submit(str(lab.workspace / "greet.ipynb"), name="tabs-b")
    for job in (first, second):
        wait_for(lambda job=job: lab.job(job.id)["status"] == "completed", timeout=120,
                 what=f"job {job.id} to complete")
    open_lab(page, lab)

    # A view shown once: opened twice, one tab; closed, a new one.
    for command, widget_id in [("nbrunner:open-cluster", "nbrunner-cluster-widget"),
                               ("nbrunner:open-schedules", "nbrunner-schedules-widget"),
                               ("nbrunner:open-pipelines", "nbrunner-pipelines-widget"),
                               ("nbrunner:open-notifications", "nbrunner-notifications-widget")]:
        run(page, command)
        expect(page.locator(f'[id="{widget_id}"]')).to_be_visible()
        run(page, command)
        page.wait_for_timeout(300)
        assert count(page, widget_id) == 1, command
    page.evaluate("() => Array.from(window.jupyterapp.shell.widgets('main'))"
                  ".find(w => w.id === 'nbrunner-cluster-widget').close()")
    expect(page.locator('[id="nbrunner-cluster-widget"]')).to_have_count(0)
    run(page, "nbrunner:open-cluster")
    expect(page.locator('[id="nbrunner-cluster-widget"]')).to_be_visible()

    # One tab per job: its page, its log, its output, each opened twice.
    for command, widget_id in [("nbrunner:open-job", f"nbrunner-job-page-widget-{first.id}"),
                               ("nbrunner:open-log", f"nbrunner-log-widget-{first.id}"),
                               ("nbrunner:open-output", f"nbrunner-output-widget-{first.id}")]:
        run(page, command, {"id": first.id, "name": "tabs-a"})
        expect(page.locator(f'[id="{widget_id}"]')).to_be_visible()
        run(page, command, {"id": first.id, "name": "tabs-a"})
        page.wait_for_timeout(300)
        assert count(page, widget_id) == 1, command
    expect(page.locator(f'[data-testid="nbrunner-job-page"][data-job-id="{first.id}"]')).to_have_count(1)

    # A second job's log opens as a tab beside the first log (the same tab area), not elsewhere.
    run(page, "nbrunner:open-log", {"id": second.id, "name": "tabs-b"})
    expect(page.locator(f'[id="nbrunner-log-widget-{second.id}"]')).to_be_visible()
    # The tab bar of each tab, by its label (the main area's tab areas each have their own).
    bars = page.evaluate("""labels => labels.map(label => [...document.querySelectorAll('.lm-DockPanel-tabBar')]
        .findIndex(bar => [...bar.querySelectorAll('.lm-TabBar-tabLabel')].some(t => t.textContent === label)))""",
                         ["Log: tabs-a", "Log: tabs-b"])
    assert bars[0] >= 0 and bars[0] == bars[1], bars
