"""Reclaim by shrinking, with real ElasticTrainer learners: a borrowing account's training gives
GPUs back at its next step when the lender asks, and ends on the same parameters as a static run."""
from __future__ import annotations

import os
import time

import papermill
import pytest

import nbrunner

from support import make_notebook, no_slot_ever_held_twice, wait_for

from .test_elastic_jobs import PARAMS, SETUP, TRAIN, learners, result

pytestmark = pytest.mark.slow

ACCOUNTS = "accounts:\n  - {name: vision, weight: 3, members: [alice]}\n  - {name: nlp, weight: 1, members: [bob]}\n"
HOLD = "import time, pathlib\nwhile not pathlib.Path(STOP).exists():\n    time.sleep(0.1)"


def test_a_lender_gets_its_share_back_and_the_borrower_loses_no_step(workspace):
    nb = make_notebook(workspace / "train.ipynb", SETUP, TRAIN, parameters=PARAMS)
    make_notebook(workspace / "hold.ipynb", HOLD, parameters="STOP = 'stop'")
    (workspace / "accounts.yaml").write_text(ACCOUNTS)
    gate = workspace / "gate"
    gate.touch()
    params = {"EPOCHS": 30, "MAX_GPUS": 4, "OUT": "elastic", "GATE": str(gate), "DELAY": 0.2}
    with nbrunner.setup_cluster(gpus=4, workers=2, workspace=workspace, accounts=workspace / "accounts.yaml") as c:
        borrower = c.submit("train.ipynb", params, min_gpus=1, max_gpus=4, owner="bob")
        wait_for(lambda: borrower.refresh().record.gpus == 4 and learners(borrower) == 4, 180,
                 what="nlp's training on all 4 slots (it borrows vision's 3)")
        asked = time.monotonic()
        lender = c.submit("hold.ipynb", {"STOP": str(workspace / "stop")}, min_gpus=3, max_gpus=3, owner="alice")
        wait_for(lambda: lender.refresh().record.status == "running", 120, what="vision's job on its 3 slots")
        took = time.monotonic() - asked
        assert lender.record.gpus == 3 and borrower.refresh().record.gpus == 1
        assert borrower.record.reclaimed == "reclaimed by account vision"
        assert (borrower.record.account, lender.record.account) == ("nlp", "vision")
        wait_for(lambda: learners(borrower) == 1, 60, what="nlp's training on 1 learner")
        (workspace / "stop").touch()
        lender.wait(60)
        wait_for(lambda: borrower.refresh().record.gpus == 4 and learners(borrower) == 4, 180,
                 what="nlp's training back on 4 learners")
        gate.unlink()
        borrower.wait(300)
        assert borrower.record.status == "completed", borrower.record.error
        assert borrower.record.preempted == 0 and borrower.record.lost == 0  # shrunk in place, never stopped
        assert no_slot_ever_held_twice(c.store.r) > 0
    history, elastic = result(workspace, "elastic")
    assert [(r["from"], r["to"]) for r in history["rescales"]][:2] == [(4, 1), (1, 4)], history["rescales"]
    print(f"vision had its 3 GPUs {took:.2f} s after it asked")
    env = {k: os.environ.pop(k) for k in ("NBRUNNER_WORKSPACE",) if k in os.environ}
    try:
        papermill.execute_notebook(str(nb), str(workspace / "static-out.ipynb"),
                                   parameters={**params, "OUT": "static", "GATE": ""}, cwd=str(workspace),
                                   progress_bar=False)
    finally:
        os.environ.update(env)
    static_history, static = result(workspace, "static")
    assert history["steps"] == static_history["steps"] == 30 * (1500 // 64)  # no step lost, none repeated
    assert max((elastic[k] - static[k]).abs().max().item() for k in static) <= 1e-4
