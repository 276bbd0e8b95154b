"""Why a job waits (nbrunner.core.waiting through allocate_explained): examples and properties."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbrunner.core.allocate import allocate, allocate_explained
from nbrunner.core.models import WAITING_CODES
from nbrunner.core.shares import account_shares
from nbrunner.core.waiting import reason, unplaced_reason

from .test_account_shares import account_scenarios


def job(id, min_gpus=1, max_gpus=8, priority=5000, submitted_at=0, **extra):
    return {"id": id, "min_gpus": min_gpus, "max_gpus": max_gpus, "priority": priority,
            "submitted_at": submitted_at, **extra}


def left_waiting(demands, gpus):
    return {d["id"] for d in demands if gpus[d["id"]] == 0 and d["max_gpus"] > 0 and not d.get("running", False)}


# ---------------------------------------------------------------- examples

def test_jobs_behind_the_admitted_ones_wait_for_busy_gpus_with_the_numbers():
    demands = [job("a", 4, 8, submitted_at=0), job("b", 6, 6, submitted_at=1), job("c", 1, 1, submitted_at=2)]
    got = allocate_explained(8, demands)
    assert got.gpus == allocate(8, demands) == {"a": 8, "b": 0, "c": 0}
    assert got.waiting == {
        "b": {"code": "gpus_busy", "message": "needs 6 GPUs; 4 of the 8 go to the 1 job ahead of it"},
        "c": {"code": "gpus_busy", "message": "behind job b, which needs 6 GPUs; 4 of the 8 go to the 1 job ahead of it"},
    }


def test_capacity_names_the_cluster_or_the_largest_host():
    demands = [job("big", 12, 12), job("gang", 3, 3, submitted_at=1, gang=True),
               job("spread", 3, 3, submitted_at=2)]
    got = allocate_explained(4, demands, hosts=[2, 2])
    assert got.waiting["big"] == {"code": "capacity", "message": "needs 12 GPUs; the live workers have 4"}
    assert got.waiting["gang"] == {"code": "capacity", "message": "needs 3 GPUs on one host; the largest host has 2"}
    # behind the job that can never start (no backfill): busy, and the message says which and why
    assert got.waiting["spread"]["code"] == "gpus_busy"
    assert "behind job big, which needs 12 GPUs; the live workers have 4" in got.waiting["spread"]["message"]


def test_no_live_worker():
    got = allocate_explained(0, [job("a", 1, 2), job("cpu", 0, 0, submitted_at=1)], hosts=[])
    assert got.waiting == {"a": {"code": "no_workers", "message": "no live worker; it needs 1 GPU"}}


def test_running_jobs_and_jobs_that_ask_for_no_gpu_never_wait():
    demands = [job("r", 2, 2, running=True), job("cpu", 0, 0, submitted_at=1), job("q", 4, 4, submitted_at=2)]
    got = allocate_explained(4, demands, policy="priority")
    assert got.gpus == {"r": 2, "cpu": 0, "q": 0}
    assert set(got.waiting) == {"q"}


TREE = {"accounts": [{"name": "vision", "weight": 1, "limit": 8, "members": ["alice"]},
                     {"name": "nlp", "weight": 1, "members": ["bob", "carol"]}]}


def test_account_limit_and_shares_name_the_account():
    demands = [job("a1", 8, 8, owner="alice", running=True), job("a2", 1, 1, submitted_at=1, owner="alice"),
               job("b1", 4, 4, owner="bob", running=True), job("b2", 2, 2, submitted_at=2, owner="bob"),
               job("c1", 4, 4, owner="carol", running=True)]
    got = allocate_explained(16, demands, accounts=TREE)
    assert got.gpus["a2"] == 0 and got.gpus["b2"] == 0
    assert got.waiting["a2"] == {"code": "account_limit", "message": "account vision holds its limit of 8 GPUs"}
    assert got.waiting["b2"]["code"] == "account_share"
    assert got.waiting["b2"]["message"] == "user bob is at their share of account nlp: 4 of its 8 GPUs"


def test_an_account_at_its_share_while_another_holds_the_rest():
    tree = {"accounts": [{"name": "vision", "weight": 1, "members": ["alice"]},
                         {"name": "nlp", "weight": 1, "members": ["bob"]}]}
    demands = [job("a1", 4, 4, owner="alice", running=True), job("a2", 2, 2, submitted_at=1, owner="alice"),
               job("b1", 4, 4, owner="bob", running=True), job("b2", 2, 2, submitted_at=1, owner="bob")]
    got = allocate_explained(8, demands, accounts=tree)
    assert got.waiting["a2"] == {"code": "account_share",
                                 "message": "account vision is at its share: 4 of 8 GPUs; other accounts hold 4"}


def test_a_lone_user_behind_their_own_jobs_waits_for_busy_gpus():
    demands = [job("a1", 6, 6, owner="alice", running=True), job("a2", 4, 4, submitted_at=1, owner="alice")]
    got = allocate_explained(8, demands, accounts=TREE)
    assert got.waiting == {"a2": {"code": "gpus_busy", "message": "needs 4 GPUs; the jobs ahead of it hold 6 of the 8"}}


def test_unplaced_reasons():
    free = [("h1", 0), ("h2", 0), ("h2", 1)]
    assert unplaced_reason(3, True, free) == {
        "code": "gpus_busy", "message": "needs 3 GPUs on one host; the most free on a host is 2"}
    assert unplaced_reason(4, False, free) == {
        "code": "gpus_busy", "message": "needs 4 GPUs; 3 free, the rest still held by other jobs"}
    assert unplaced_reason(2, False, free, "vision") == {
        "code": "reclaiming", "message": "2 GPUs are being taken back for account vision from borrowers"}


def test_reason_refuses_an_unknown_code():
    with pytest.raises(ValueError, match="unknown waiting code"):
        reason("bored", "x")


# ---------------------------------------------------------------- properties

@st.composite
def flat_scenarios(draw):
    n = draw(st.integers(0, 12))
    demands = []
    for i in range(n):
        lo = draw(st.integers(0, 6))
        demands.append(job(f"j{i:02d}", lo, lo + draw(st.integers(0, 6)), draw(st.sampled_from([1, 5000, 10000])),
                           draw(st.integers(0, 5)), running=draw(st.booleans()), gang=draw(st.booleans())))
    hosts = draw(st.none() | st.lists(st.integers(0, 6), max_size=4))
    total = sum(hosts) if hosts is not None else draw(st.integers(0, 20))
    return total, demands, hosts


def can_ever_fit(d, total, hosts):
    if d.get("gang") and hosts:
        return d["min_gpus"] <= max(hosts)
    return d["min_gpus"] <= total


def check(total, demands, hosts, gpus, waiting):
    assert set(waiting) == left_waiting(demands, gpus)  # a reason exactly for the jobs left waiting
    for d in demands:
        why = waiting.get(d["id"])
        if why is None:
            continue
        assert why["code"] in WAITING_CODES and why["message"] and "\n" not in why["message"]
        if why["code"] == "no_workers":
            assert hosts == [] or (hosts is None and total == 0)
        elif why["code"] == "capacity":  # only when no placement could ever fit
            assert not can_ever_fit(d, total, hosts)
        else:
            assert can_ever_fit(d, total, hosts)


@settings(max_examples=150, deadline=None)
@given(flat_scenarios(), st.sampled_from(["fairshare", "priority", "goodput"]))
def test_flat_a_reason_exactly_for_each_waiting_job(sc, policy):
    total, demands, hosts = sc
    got = allocate_explained(total, demands, policy, hosts=hosts)
    assert got.gpus == allocate(total, demands, policy)
    check(total, demands, hosts, got.gpus, got.waiting)


@settings(max_examples=100, deadline=None)
@given(account_scenarios(), st.sampled_from(["fairshare", "priority", "goodput"]))
def test_accounts_a_reason_exactly_for_each_waiting_job(sc, policy):
    total, demands, tree = sc
    got = allocate_explained(total, demands, policy, accounts=tree)
    assert got.gpus == account_shares(total, demands, policy, tree).jobs == allocate(total, demands, policy, tree)
    check(total, demands, None, got.gpus, got.waiting)
    for d in demands:
        why = got.waiting.get(d["id"])
        if why and why["code"] == "account_limit":  # the limit named is one on the job's way up
            assert "limit" in why["message"]
