"""Fixtures of the browser tests: a real cluster, a real JupyterLab server, headless chromium.

One cluster and one JupyterLab server per test module (they take a few seconds to start on
a small machine); a fresh browser page per test, each in its own JupyterLab workspace so no
test inherits another's open tabs.
"""
from __future__ import annotations

import re

import pytest

from labserver import CHROMIUM, running_lab, shot_path


@pytest.fixture(scope="module")
def lab():
    """A real cluster (2 GPU slots on one host, 2 workers) and a real JupyterLab server on it."""
    with running_lab() as lab:
        yield lab


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield b
        b.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


@pytest.fixture
def page(browser, lab, request):
    """A new browser page; page errors fail the test; a screenshot is kept when it fails."""
    from playwright.sync_api import expect

    expect.set_options(timeout=20_000)
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        try:
            pg.screenshot(path=shot_path(f"FAILED-{re.sub(r'[^A-Za-z0-9_.-]', '_', request.node.name)}"))
        except Exception:  # noqa: BLE001 - a failed screenshot must not hide the failure
            pass
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


@pytest.fixture
def jp_asyncio_loop():
    """pytest-jupyter (loaded by the REST tests) closes an asyncio loop after every test; the
    Playwright sync API runs its own loop in these tests, so they get a loop of their own."""
    import asyncio

    loop = asyncio.new_event_loop()
    yield loop
    if not loop.is_running():
        loop.close()
