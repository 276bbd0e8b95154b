"""Reclaim, pure (nbrunner.core.reclaim): who asks for lent GPUs back, and what that means for the
borrowers' running jobs."""
from __future__ import annotations

from nbrunner.core.models import JobRecord
from nbrunner.core.placement import demand_of
from nbrunner.core.reclaim import reclaim_plan
from nbrunner.core.shares import account_shares

NESTED = {"accounts": [{"name": "research", "accounts": [{"name": "nlp", "members": ["bob"]}]},
                       {"name": "ops", "members": ["olga"]}]}


def job(job_id: str, owner: str, slots: int, elastic: bool, created: str, max_gpus: int = 4) -> JobRecord:
    running = slots > 0
    return JobRecord(id=job_id, name=job_id, notebook="x.ipynb", owner=owner, min_gpus=1, max_gpus=max_gpus,
                     status="running" if running else "queued", phase="running" if running else "waiting",
                     slots=[["h", i] for i in range(slots)], elastic=elastic, created_at=created)


def plan(live: list[JobRecord], tree: dict):
    shares = account_shares(4, [demand_of(r) for r in live], "fairshare", tree)
    return reclaim_plan(live, shares.jobs, shares.accounts, shares.account_of)


def test_the_account_that_asks_is_named_not_the_parent_of_the_lender():
    live = [job("b", "bob", 4, True, "2024-01-01T00:00:00Z"), job("o", "olga", 0, False, "2024-01-01T00:01:00Z", 2)]
    r = plan(live, NESTED)
    assert r.shrunk == {"b": "reclaimed by account ops"} and r.preempt == {}
    assert r.shares["b"] == 2


def test_a_non_elastic_borrower_is_preempted_for_the_account_that_asks():
    live = [job("b", "bob", 4, False, "2024-01-01T00:00:00Z"), job("o", "olga", 0, False, "2024-01-01T00:01:00Z", 2)]
    r = plan(live, NESTED)
    assert r.preempt == {"b": "reclaimed by account ops"} and r.shrunk == {}
    assert r.shares["b"] == 4  # it keeps what it holds until it is stopped
