"""Models in JupyterLab, in a real browser: register a job's model from its row in the Jobs panel,
see it in the Models panel, serve it (a real `nbrunner serve` process answers /health and /predict)
and stop it.  Screenshots go to ``test-artifacts/ui/`` (models-*.png)."""
from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from labserver import shot_path
from support import http, make_notebook, refused, wait_for
from test_jupyterlab import job_row, jobs_panel, open_lab, shot, show_sidebar

pytestmark = pytest.mark.slow

RUN_TIMEOUT = 120_000  # ms: a job on a busy 2-core machine

TRAIN = '''
import torch
from torch import nn
import nbrunner


class Scorer(nn.Module):  # defined only in the notebook
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)


model = Scorer()
with torch.no_grad():
    model.fc.weight.copy_(torch.tensor([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]))  # class 0 iff x0 > 0
    model.fc.bias.zero_()
nbrunner.save_model(model)
'''


@pytest.fixture(scope="module")
def jobs(lab):
    """A completed job that saved a model and a completed one that did not."""
    make_notebook(lab.workspace / "scorer.ipynb", TRAIN)
    make_notebook(lab.workspace / "nothing.ipynb", "print('no model')")
    trained = lab.cluster.submit(str(lab.workspace / "scorer.ipynb"), name="scorer")
    plain = lab.cluster.submit(str(lab.workspace / "nothing.ipynb"), name="nothing")
    trained.wait(120)
    plain.wait(60)
    assert trained.status == "completed", trained.record.error
    assert plain.status == "completed", plain.record.error
    return trained.id, plain.id


def test_register_a_jobs_model_then_serve_and_stop_it(lab, page, jobs):
    trained, plain = jobs
    open_lab(page, lab)
    panel = jobs_panel(page)
    row = job_row(page, trained)
    expect(row).to_have_attribute("data-status", "completed", timeout=RUN_TIMEOUT)
    register = row.get_by_test_id("nbrunner-job-register")
    expect(register).to_be_visible()
    expect(register).to_have_accessible_name(f"Register the model of job scorer ({trained})")
    # A job that saved no model offers no registration.
    expect(job_row(page, plain)).to_have_attribute("data-status", "completed")
    expect(job_row(page, plain).get_by_test_id("nbrunner-job-register")).to_have_count(0)
    panel.screenshot(path=str(shot_path("models-01-jobs-panel-register")))

    register.click()
    dialog = page.get_by_test_id("nbrunner-register-dialog")
    expect(dialog).to_be_visible()
    name = dialog.get_by_test_id("nbrunner-model-name")
    expect(name).to_have_value("scorer")  # suggested from the job's name
    name.fill("scorer-ui")
    shot(page, "models-02-register-dialog")
    dialog.get_by_test_id("nbrunner-register-ok").click()
    expect(dialog).to_have_count(0)
    toast = page.locator(".Toastify__toast").filter(has_text="as scorer-ui:1")
    expect(toast).to_be_visible()
    toast.get_by_role("button", name="Show models").click()

    models = page.get_by_test_id("nbrunner-models-panel")
    expect(models).to_be_visible()
    model = models.locator('[data-testid="nbrunner-model"][data-model="scorer-ui:1"]')
    expect(model).to_be_visible()
    expect(model.get_by_test_id("nbrunner-model-job")).to_have_text(trained)
    expect(model.get_by_test_id("nbrunner-model-framework")).to_have_text("pytorch (Scorer)")
    expect(model.get_by_test_id("nbrunner-model-saved")).to_have_text(re.compile(r"^saved .*\d{1,2}:\d{2}"))
    expect(model).to_have_attribute("data-serving", "false")
    shot(page, "models-03-models-panel")

    model.get_by_test_id("nbrunner-model-serve").click()
    url_link = model.get_by_test_id("nbrunner-model-url")
    expect(url_link).to_be_visible(timeout=RUN_TIMEOUT)
    expect(model).to_have_attribute("data-serving", "true")
    url = url_link.inner_text()
    assert url.startswith("http://127.0.0.1:")
    assert http("GET", url + "/health") == (200, {"status": "ok", "model": "scorer-ui:1"})
    assert http("POST", url + "/predict", {"inputs": [[2, 0, 0], [-2, 5, 5]]}) == (200, {"predictions": [0, 1]})
    code, servers = lab.api("GET", "models/serving")
    assert code == 200 and [s["model"] for s in servers["servers"]] == ["scorer-ui:1"]
    pid = servers["servers"][0]["pid"]
    shot(page, "models-04-serving")

    model.get_by_test_id("nbrunner-model-stop").click()
    expect(model.get_by_test_id("nbrunner-model-serve")).to_be_visible()
    expect(url_link).to_have_count(0)
    expect(model).to_have_attribute("data-serving", "false")
    assert refused(url)
    assert lab.api("GET", "models/serving") == (200, {"servers": []})
    wait_for(lambda: not _alive(pid), timeout=10, what=f"model server {pid} to exit")
    shot(page, "models-05-stopped")


def test_a_second_version_and_a_refused_registration(lab, page, jobs):
    trained, _ = jobs
    open_lab(page, lab)
    jobs_panel(page)
    job_row(page, trained).get_by_test_id("nbrunner-job-register").click()
    dialog = page.get_by_test_id("nbrunner-register-dialog")
    dialog.get_by_test_id("nbrunner-model-name").fill("bad name!")
    dialog.get_by_test_id("nbrunner-register-ok").click()
    expect(page.locator(".Toastify__toast").filter(has_text="Invalid model name")).to_be_visible()

    job_row(page, trained).get_by_test_id("nbrunner-job-register").click()
    dialog = page.get_by_test_id("nbrunner-register-dialog")
    dialog.get_by_test_id("nbrunner-model-name").fill("scorer-ui")
    dialog.get_by_test_id("nbrunner-model-name").press("Enter")
    expect(page.locator(".Toastify__toast").filter(has_text="as scorer-ui:2")).to_be_visible()

    models = show_sidebar(page, "nbrunner-models-panel")
    rows = models.get_by_test_id("nbrunner-model")
    expect(rows.first).to_have_attribute("data-model", "scorer-ui:2")  # newest version first
    # Serving one version of a name blocks the others until it stops.
    v2 = models.locator('[data-model="scorer-ui:2"]')
    v1 = models.locator('[data-model="scorer-ui:1"]')
    v2.get_by_test_id("nbrunner-model-serve").click()
    expect(v2.get_by_test_id("nbrunner-model-url")).to_be_visible(timeout=RUN_TIMEOUT)
    expect(v1.get_by_test_id("nbrunner-model-serve")).to_be_disabled()
    models.screenshot(path=str(shot_path("models-06-one-version-served")))
    # Left serving on purpose: the lab fixture fails if any process outlives JupyterLab.


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True

