"""A real Prometheus (Debian's) scrapes a real `nbrunner metrics` exporter of a real cluster, loads
nbrunner's alert rules and evaluates them; the rules and the dashboard name only families the
exporter serves."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from support import assert_one_line_error, free_port, make_notebook, own_cluster, short_tmpdir, stop_process, wait_for

from .test_rules import MONITORING, dashboard_exprs, names_in, rule_exprs

pytestmark = pytest.mark.slow


def query(port: int, expr: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as resp:
        answer = json.load(resp)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def served_names(text: str) -> set[str]:
    """The sample names an exposition can hold: each family's, by its TYPE line."""
    out = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            out |= {"counter": {name}, "histogram": {f"{name}_bucket", f"{name}_sum", f"{name}_count"}}.get(kind, {name})
    return out


@pytest.fixture(scope="module")
def exporter():
    """A cluster that ran two GPU jobs, and `nbrunner metrics` on a free port serving it."""
    ws = short_tmpdir()
    make_notebook(ws / "quick.ipynb", "import time\ntime.sleep(1)")
    with own_cluster(ws, gpus=2, workers=2) as cluster:
        for job in [cluster.submit("quick.ipynb", min_gpus=1, max_gpus=1) for _ in range(2)]:
            assert job.wait(120).record.status == "completed"
        proc = subprocess.Popen([sys.executable, "-m", "nbrunner", "metrics", "--port", "0", "--dir", str(ws)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            line = proc.stdout.readline()
            assert "/metrics" in line, line + proc.stderr.read()
            yield int(line.rsplit(":", 1)[1].split("/")[0]), cluster
        finally:
            stop_process(proc)


def test_prometheus_scrapes_the_exporter_and_evaluates_the_rules(exporter):
    port, cluster = exporter
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    taken = subprocess.run([sys.executable, "-m", "nbrunner", "metrics", "--port", str(port), "--dir",
                            str(cluster.settings.workspace)], capture_output=True, text=True, timeout=60)
    assert_one_line_error(taken, 1, f"cannot listen on 127.0.0.1:{port}")
    served = served_names(text)
    assert names_in(" ".join(rule_exprs())) <= served
    assert names_in(" ".join(dashboard_exprs())) <= served

    data, prom_port = Path(tempfile.mkdtemp(prefix="prom")), free_port()
    rules = data / "nbrunner-rules.yaml"
    rules.write_text((MONITORING / "nbrunner-rules.yaml").read_text())
    config = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(rules)]
    config["scrape_configs"][0]["static_configs"] = [{"targets": [f"127.0.0.1:{port}"]}]
    (data / "prometheus.yml").write_text(yaml.safe_dump(config))
    prom = subprocess.Popen(["/usr/bin/prometheus", f"--config.file={data / 'prometheus.yml'}",
                             f"--storage.tsdb.path={data / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=open(data / "prometheus.log", "w"), start_new_session=True)
    try:
        def finished() -> list[dict]:
            try:
                return query(prom_port, 'nbrunner_jobs_finished_total{status="completed"}')
            except OSError:
                return []
        wait_for(finished, 60, 0.5, "Prometheus to scrape the exporter")
        result = finished()
        assert [(r["metric"]["account"], float(r["value"][1])) for r in result] == [("default", 2.0)]
        assert result[0]["metric"]["job"] == "nbrunner"
        assert float(query(prom_port, "sum(nbrunner_workers)")[0]["value"][1]) == 2
        # the no-live-worker rule's expression: empty while both workers live
        no_worker = next(e for e in rule_exprs() if "nbrunner_workers" in e)
        assert query(prom_port, no_worker) == []
        # the rules loaded and were evaluated against the scraped series without an error
        def evaluated() -> list[dict]:
            with urllib.request.urlopen(f"http://127.0.0.1:{prom_port}/api/v1/rules", timeout=10) as resp:
                groups = json.load(resp)["data"]["groups"]
            rules = [r for g in groups for r in g["rules"]]
            return rules if rules and all(r.get("lastEvaluation", "").startswith("2") and
                                          not r["lastEvaluation"].startswith("0001") for r in rules) else []
        rules_seen = wait_for(evaluated, 30, 0.5, "the rules to be evaluated")
        assert {r["name"] for r in rules_seen} == {
            "NbrunnerNoLiveWorker", "NbrunnerJobsWaitingWhileGpusFree", "NbrunnerSchedulerPassesSlow",
            "NbrunnerSchedulerStalled", "NbrunnerJobsRequeuedInALoop"}
        assert all(r["health"] == "ok" for r in rules_seen), rules_seen
        assert all(r["state"] == "inactive" for r in rules_seen)  # a healthy cluster: nothing pending or firing
        # the slow-pass rule's quantile over the real passes: a number, under its 1 s threshold
        def p90() -> tuple[float] | None:
            got = query(prom_port, "histogram_quantile(0.9, sum by (le) (rate(nbrunner_scheduler_pass_seconds_bucket[1m])))")
            value = float(got[0]["value"][1]) if got else math.nan
            return None if math.isnan(value) else (value,)  # NaN: no pass between two scrapes yet
        assert 0 <= wait_for(p90, 60, 0.5, "two scrapes with passes between them")[0] < 1
    finally:
        stop_process(prom)
