"""The collector's pure parts (nbrunner.control.cluster_metrics): gauges of live records, and a
scrape that finds no cluster."""
from __future__ import annotations


def test_gauges_of_live_jobs_read_a_waiting_reason_when_records_carry_one():
    """``nbrunner_jobs_waiting`` counts queued jobs by ``waiting.code`` (a dict or an object), with a
    series for every code; ``nbrunner_jobs_startable`` leaves out jobs an account or a pipeline holds."""
    from dataclasses import dataclass, field as dc_field

    from nbrunner.control.cluster_metrics import WAITING_CODES, job_families, startable_family
    from nbrunner.core.models import JobPhase, JobStatus

    @dataclass
    class Live:  # a live record as a version with waiting reasons stores it
        id: str
        status: JobStatus = JobStatus.QUEUED
        phase: JobPhase = JobPhase.WAITING
        account: str | None = None
        min_gpus: int = 1
        slots: list = dc_field(default_factory=list)
        waiting: dict | None = None

    live = [Live("a", waiting={"code": "gpus_busy", "message": "x"}), Live("b", waiting={"code": "account_limit"}),
            Live("c", account="vision"), Live("d", status=JobStatus.RUNNING, phase=JobPhase.RUNNING, account="vision")]
    jobs, waiting = job_families(live, {"completed": 7, "failed": 1, "cancelled": 0})
    got = {tuple(s.labels.values()): s.value for s in jobs.samples}
    assert got[("queued", "default")] == 2 and got[("queued", "vision")] == 1 and got[("running", "vision")] == 1
    assert got[("completed", "")] == 7
    reasons = {s.labels["reason"]: s.value for s in waiting.samples}
    assert set(reasons) == set(WAITING_CODES) and reasons["gpus_busy"] == 1 and reasons["account_limit"] == 1
    assert sum(reasons.values()) == 2
    assert startable_family(live, 1).samples[0].value == 2  # a and c: b is held by its account's limit
    assert startable_family(live, 0).samples[0].value == 0


def test_a_scrape_without_a_cluster_says_nbrunner_up_0():
    from nbrunner.control.cluster_metrics import ClusterCollector
    from nbrunner.core.errors import NoCluster

    def none():
        raise NoCluster("no nbrunner cluster is running")

    families = list(ClusterCollector(none).collect())
    assert [(f.name, [s.value for s in f.samples]) for f in families] == [("nbrunner_up", [0])]
