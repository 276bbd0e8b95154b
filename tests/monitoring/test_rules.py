"""docker/monitoring: the alert rules pass `promtool check rules` and their unit tests (`promtool test
rules`), and the rules and the Grafana dashboard name only metric families nbrunner serves."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

MONITORING = Path(__file__).resolve().parents[2] / "docker" / "monitoring"
PROMTOOL = "/usr/bin/promtool"


def names_in(expr: str) -> set[str]:
    """The nbrunner metric names a PromQL expression reads."""
    return set(re.findall(r"\bnbrunner_[a-z_]+\b", expr))


def rule_exprs() -> list[str]:
    rules = yaml.safe_load((MONITORING / "nbrunner-rules.yaml").read_text())
    return [rule["expr"] for group in rules["groups"] for rule in group["rules"]]


def dashboard_exprs() -> list[str]:
    board = json.loads((MONITORING / "nbrunner-dashboard.json").read_text())
    return [t["expr"] for panel in board["panels"] for t in panel.get("targets", [])]


@pytest.mark.slow
def test_promtool_checks_the_rules_and_runs_their_unit_tests():
    check = subprocess.run([PROMTOOL, "check", "rules", "nbrunner-rules.yaml"], cwd=MONITORING, capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0 and "SUCCESS: 5 rules found" in check.stdout, check.stdout + check.stderr
    unit = subprocess.run([PROMTOOL, "test", "rules", "nbrunner-rules.test.yaml"], cwd=MONITORING,
                          capture_output=True, text=True, timeout=120)
    assert unit.returncode == 0 and "SUCCESS" in unit.stdout, unit.stdout + unit.stderr
    tested = yaml.safe_load((MONITORING / "nbrunner-rules.test.yaml").read_text())
    alerts = {r["alert"] for g in yaml.safe_load((MONITORING / "nbrunner-rules.yaml").read_text())["groups"]
              for r in g["rules"]}
    fired = {t["alertname"] for test in tested["tests"] for t in test["alert_rule_test"] if t["exp_alerts"]}
    assert fired == alerts  # every alert has a unit test in which it fires


def test_the_dashboard_has_the_panels_the_docs_promise():
    board = json.loads((MONITORING / "nbrunner-dashboard.json").read_text())
    titles = {p["title"] for p in board["panels"]}
    assert {"GPUs by account", "Waiting jobs by reason", "Wait time (submit to first start)",
            "Re-queues and reclaims"} <= titles
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])
    assert all(p["targets"] and all(t["expr"] for t in p["targets"]) for p in board["panels"])
    assert names_in(" ".join(dashboard_exprs())) >= {"nbrunner_gpus_allocated", "nbrunner_jobs_waiting",
                                                     "nbrunner_job_wait_seconds_bucket", "nbrunner_requeues_total",
                                                     "nbrunner_reclaims_total"}
