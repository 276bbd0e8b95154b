"""Accounts on a real cluster (CPU slots): weighted splits between accounts, borrowing, reclaim by
shrinking elastic jobs, preemption of non-elastic borrowers after ``reclaim_after``, splits by
user, ``nbrunner share`` and ``GET /accounts``."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

import nbrunner

from support import GRANT_FOLLOWER, make_notebook, no_slot_ever_held_twice, wait_for

pytestmark = pytest.mark.slow

GANG = """import pathlib, time
while not pathlib.Path(STOP).exists():
    time.sleep(0.1)
"""
ACCOUNTS = """accounts:
  - name: a
    weight: 3
    members: [alice, ann]
  - name: b
    weight: 1
    members: ["@bteam"]
reclaim_after: RECLAIM
"""


def gpus(job) -> int:
    return job.refresh().record.gpus


def write(ws, reclaim_after: float = 30):
    make_notebook(ws / "follow.ipynb", GRANT_FOLLOWER, parameters="MIN = 1\nMAX = 8\nSTOP = 'stop'")
    make_notebook(ws / "gang.ipynb", GANG, parameters="STOP = 'stop'")
    (ws / "accounts.yaml").write_text(ACCOUNTS.replace("RECLAIM", str(reclaim_after)))


def test_accounts_split_borrow_and_reclaim_by_shrinking(workspace):
    write(workspace)
    stop = workspace / "stop"
    with nbrunner.setup_cluster(gpus=8, workers=3, workspace=workspace, accounts=workspace / "accounts.yaml") as c:
        params = {"STOP": str(stop)}
        b = c.submit("follow.ipynb", params, max_gpus=8, owner="bob", groups=["bteam"])
        wait_for(lambda: gpus(b) == 8, 30, what="b to borrow all 8 slots")  # b alone: it borrows everything
        t = time.monotonic()
        a = c.submit("follow.ipynb", params, max_gpus=8, owner="alice")
        wait_for(lambda: gpus(a) == 6 and gpus(b) == 2, 30, what="the 6/2 split")
        took = time.monotonic() - t
        assert took < 10, took  # within 10 s
        assert b.refresh().record.reclaimed == "reclaimed by account a"
        assert (a.record.account, b.record.account) == ("a", "b")
        view = c.accounts()
        rows = {r["path"]: r for r in view["accounts"]}
        assert (rows["a"]["held"], rows["b"]["held"]) == (6, 2)
        assert (rows["a"]["share"], rows["b"]["share"]) == (6, 2) and rows["b"]["borrowed"] == 0
        assert rows["b"]["gpu_hours_total"] > 0  # it held 8 GPUs for a while
        stop.write_text("")
        a.wait(60), b.wait(60)
        assert no_slot_ever_held_twice(c.store.r) > 0


def test_a_non_elastic_borrower_is_requeued_after_reclaim_after_not_before(workspace):
    write(workspace, reclaim_after=4)
    stop = workspace / "stop"
    with nbrunner.setup_cluster(gpus=4, workers=3, workspace=workspace, accounts=workspace / "accounts.yaml") as c:
        gang = c.submit("gang.ipynb", {"STOP": str(stop)}, max_gpus=4, owner="bob", groups=["bteam"])
        wait_for(lambda: gang.refresh().record.status == "running", 30, what="the gang to run")
        asked = time.monotonic()
        a = c.submit("follow.ipynb", {"STOP": str(stop)}, max_gpus=4, owner="alice")
        wait_for(lambda: gang.refresh().record.status == "queued", 30, 0.05, what="the gang to be re-queued")
        waited = time.monotonic() - asked
        assert waited >= 4, waited  # not before reclaim_after
        rec = gang.record
        assert rec.preempted == 1 and rec.lost == 0 and rec.reclaimed == "reclaimed by account a"
        assert rec.history[-1]["status"] == "queued" and rec.history[-1]["reason"] == "reclaimed by account a"
        # a's share is 3; the 4th is lent to it too, since b's gang cannot run on 1
        wait_for(lambda: gpus(a) == 4, 30, what="a to get the GPUs back")
        stop.write_text("")
        a.wait(60)
        wait_for(lambda: gang.refresh().record.status == "completed", 60, what="the gang to run again and end")


def test_two_users_of_one_account_split_by_user_not_by_job(workspace):
    write(workspace)
    stop = workspace / "stop"
    with nbrunner.setup_cluster(gpus=4, workers=4, workspace=workspace, accounts=workspace / "accounts.yaml") as c:
        params = {"STOP": str(stop)}
        many = [c.submit("follow.ipynb", params, max_gpus=4, owner="alice") for _ in range(3)]
        one = c.submit("follow.ipynb", params, max_gpus=4, owner="ann")
        wait_for(lambda: gpus(one) == 2 and sum(gpus(j) for j in many) == 2, 40, what="2 GPUs for each user")
        stop.write_text("")
        for j in [*many, one]:
            j.wait(60)


def test_share_cli_and_reload(workspace):
    write(workspace)
    with nbrunner.setup_cluster(gpus=2, workers=1, workspace=workspace, accounts=workspace / "accounts.yaml") as c:
        run = lambda *a: subprocess.run([sys.executable, "-m", "nbrunner", "share", *a, "--dir", str(workspace)],  # noqa: E731
                                        capture_output=True, text=True, timeout=60)
        p = run("--json")
        assert p.returncode == 0, p.stderr
        view = json.loads(p.stdout)
        assert [r["path"] for r in view["accounts"]] == ["a", "b", "default"]
        assert view["gpus_total"] == 2 and view["source"].endswith("accounts.yaml")
        table = run()
        assert table.returncode == 0 and "account" in table.stdout and "GPU-h 24h" in table.stdout
        (workspace / "accounts.yaml").write_text("accounts:\n  - name: a\n    weight: -1\n")
        bad = run("--reload")
        assert bad.returncode != 0 and "accounts.yaml line 3: weight" in bad.stderr and "Traceback" not in bad.stderr
        assert [r["path"] for r in c.accounts()["accounts"]] == ["a", "b", "default"]  # the tree stays
        (workspace / "accounts.yaml").write_text("accounts:\n  - name: vision\n    weight: 2\n")
        good = run("--reload", "--json")
        assert good.returncode == 0 and [r["path"] for r in json.loads(good.stdout)["accounts"]] == ["vision",
                                                                                                      "default"]


def test_a_bad_accounts_file_is_refused_at_start_naming_the_line(workspace):
    (workspace / "accounts.yaml").write_text("accounts:\n  - name: a\n    weight: 1\n    limit: -2\n")
    p = subprocess.run([sys.executable, "-m", "nbrunner", "up", "--no-lab", "--gpus", "0", "--dir", str(workspace),
                        "--accounts", str(workspace / "accounts.yaml")], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "line 4" in p.stderr and "limit" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert not (workspace / ".nbrunner" / "redis.sock").exists()  # nothing was started
