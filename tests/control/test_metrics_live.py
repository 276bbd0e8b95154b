"""The cluster's metrics and usage on a real cluster (CPU slots, accounts): counters added at the
transitions, the scheduler's passes, gauges of the live state, and `nbrunner usage` adding up to the
GPU timelines of the jobs that ran."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time

import pytest

import nbrunner
from nbrunner.control.cluster_metrics import cluster_families
from nbrunner.control.grants import timeline
from nbrunner.core.attained import attained_service

from support import GRANT_FOLLOWER, make_notebook, wait_for

pytestmark = pytest.mark.slow

ACCOUNTS = """accounts:
  - name: a
    weight: 3
    members: [alice]
  - name: b
    weight: 1
    members: ["@bteam"]
"""


def samples(store) -> dict[tuple, float]:
    """Every sample the collector gives now: {(name, sorted label pairs): value}."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in cluster_families(store) for s in family.samples}


def value(got: dict, name: str, **labels) -> float:
    return got.get((name, tuple(sorted(labels.items()))), 0.0)


def cli(*args: str, ws) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nbrunner", *args, "--dir", str(ws)], capture_output=True, text=True,
                          timeout=120, env={**os.environ})


def test_metrics_count_what_happened_and_usage_adds_up_to_the_timelines(workspace):
    make_notebook(workspace / "follow.ipynb", GRANT_FOLLOWER, parameters="MIN = 1\nMAX = 4\nSTOP = 'stop'")
    make_notebook(workspace / "quick.ipynb", "import time\ntime.sleep(1.5)")
    make_notebook(workspace / "bad.ipynb", "raise ValueError('bad')")
    (workspace / "accounts.yaml").write_text(ACCOUNTS)
    stop = workspace / "stop"
    with nbrunner.setup_cluster(gpus=4, workers=2, workspace=workspace, accounts=workspace / "accounts.yaml") as c:
        b = c.submit("follow.ipynb", {"STOP": str(stop)}, max_gpus=4, owner="bob", groups=["bteam"])
        wait_for(lambda: b.refresh().record.gpus == 4, 60, what="bob to borrow all 4 slots")
        a = c.submit("follow.ipynb", {"STOP": str(stop)}, max_gpus=4, owner="alice")
        wait_for(lambda: a.refresh().record.gpus == 3 and a.record.status == "running" and b.refresh().record.gpus == 1,
                 60, what="the 3/1 split, alice's job running")
        live = samples(c.store)
        assert value(live, "nbrunner_gpus") == 4 and value(live, "nbrunner_gpus_free") == 0
        assert value(live, "nbrunner_gpus_allocated", account="a") == 3
        assert value(live, "nbrunner_gpus_allocated", account="b") == 1
        assert value(live, "nbrunner_account_share_gpus", account="a") == 3
        assert value(live, "nbrunner_jobs", status="running", account="a") == 1
        assert sum(v for (n, _), v in live.items() if n == "nbrunner_workers") == 2
        assert value(live, "nbrunner_reclaims_total", account="b") >= 1  # bob's follower shrunk for alice
        stop.touch()
        quick = [c.submit("quick.ipynb", min_gpus=1, max_gpus=2, owner=o, groups=g)
                 for o, g in (("alice", []), ("alice", []), ("bob", ["bteam"]))]
        bad = c.submit("bad.ipynb", owner="bob", groups=["bteam"])
        for j in (a, b, *quick, bad):
            j.wait(120)
        for j in (a, b, *quick, bad):  # each has given its slots back (its timeline ends at 0)
            wait_for(lambda: j.refresh().record.phase == "ended", 30, what=f"{j.id} released")
        got = samples(c.store)
        assert value(got, "nbrunner_jobs_finished_total", status="completed", account="a") == 3
        assert value(got, "nbrunner_jobs_finished_total", status="completed", account="b") == 2
        assert value(got, "nbrunner_jobs_finished_total", status="failed", account="b") == 1
        assert value(got, "nbrunner_job_wait_seconds_count", account="a") == 3
        assert value(got, "nbrunner_job_wait_seconds_bucket", account="b", le="+Inf") == 3
        assert value(got, "nbrunner_job_run_seconds_count", account="a") == 3
        assert value(got, "nbrunner_job_run_seconds_sum", account="a") >= 2 * 1.5
        assert value(got, "nbrunner_jobs", status="completed", account="") == 5
        assert value(got, "nbrunner_jobs", status="failed", account="") == 1
        assert value(got, "nbrunner_scheduler_pass_seconds_count") > 0
        assert time.time() - value(got, "nbrunner_scheduler_last_pass_timestamp_seconds") < 60

        # usage: the GPU timelines of the jobs that ran, per account and per user
        now = time.time()
        ran = [j.refresh().record for j in (a, b, *quick, bad)]
        held = {r.id: attained_service(timeline(c.store.r, r.id), now) / 3600 for r in ran}
        assert all(held[j.id] > 0 for j in (a, b, *quick)) and held[bad.id] == 0
        by_account = json.loads(cli("usage", "--json", ws=workspace).stdout)
        expected = {acc: sum(held[r.id] for r in ran if r.account == acc) for acc in ("a", "b")}
        assert by_account["by"] == "account" and by_account["totals"].keys() == expected.keys()
        for acc, hours in expected.items():
            assert by_account["totals"][acc] == pytest.approx(hours, rel=1e-9, abs=1e-12)
        by_user = json.loads(cli("usage", "--by", "user", "--since", "1d", "--json", ws=workspace).stdout)
        for user in ("alice", "bob"):
            assert by_user["totals"][user] == pytest.approx(sum(held[r.id] for r in ran if r.owner == user), rel=1e-9)
        rows = list(csv.DictReader(io.StringIO(cli("usage", "--csv", "--by", "user", ws=workspace).stdout)))
        assert set(rows[0]) == {"day", "user", "gpu_hours"}
        assert sum(float(r["gpu_hours"]) for r in rows) == pytest.approx(sum(held.values()), abs=1e-3)
        table = cli("usage", ws=workspace).stdout.splitlines()
        assert table[0].split() == ["day", "account", "gpu_hours"] and table[-1].startswith("GPU-hours from ")
        bad_since = cli("usage", "--since", "yesterday", ws=workspace)
        assert bad_since.returncode == 1 and "since must be like 7d" in bad_since.stderr
        assert len(bad_since.stderr.strip().splitlines()) == 1
