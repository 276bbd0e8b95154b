"""Tests for nbrunner.core.allocate, the pure allocation policy."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbrunner.core.allocate import allocate


def job(id, min_gpus=1, max_gpus=8, priority=5000, submitted_at=0, **extra):
    return {"id": id, "min_gpus": min_gpus, "max_gpus": max_gpus, "priority": priority,
            "submitted_at": submitted_at, **extra}


# ---------------------------------------------------------------- examples


def test_design_example_3_and_5():
    demands = [job("a", 1, 8, 5000, 0), job("b", 1, 8, 10000, 1)]
    assert allocate(8, demands) == {"a": 3, "b": 5}
    assert allocate(8, demands, "fairshare") == {"a": 3, "b": 5}


def test_empty_and_zero_capacity():
    assert allocate(8, []) == {}
    assert allocate(0, [job("a", 1, 4)]) == {"a": 0}
    assert allocate(0, [job("a", 0, 4)]) == {"a": 0}


def test_fairshare_equal_split_ties_to_earlier_job():
    demands = [job("c", submitted_at=3), job("a", submitted_at=1), job("b", submitted_at=2)]
    # 8 / 3 = 2.67 each: the two leftover GPUs go to the two earliest jobs.
    assert allocate(8, demands) == {"a": 3, "b": 3, "c": 2}


def test_fairshare_respects_max_and_min():
    demands = [job("a", 1, 2, 10000, 0), job("b", 3, 10, 1, 1), job("c", 1, 10, 5000, 2)]
    # a is capped at 2, b is held at its min 3, c takes the rest.
    assert allocate(10, demands) == {"a": 2, "b": 3, "c": 5}


def test_fairshare_not_enough_demand_leaves_gpus_idle():
    assert allocate(16, [job("a", 1, 3), job("b", 2, 4, submitted_at=1)]) == {"a": 3, "b": 4}


def test_priority_policy_greedy_in_priority_order():
    demands = [job("low", 1, 8, 100, 0), job("high", 1, 4, 9000, 5), job("mid", 2, 8, 5000, 1)]
    # mins 1 + 2 + 1; then high fills to 4, mid gets the remaining 2 extra.
    assert allocate(8, demands, "priority") == {"high": 4, "mid": 3, "low": 1}
    assert allocate(20, demands, "priority") == {"high": 4, "mid": 8, "low": 8}


def test_priority_policy_ties_by_submission_then_id():
    demands = [job("b", 1, 4, 5000, 0), job("a", 1, 4, 5000, 0), job("c", 1, 4, 5000, -1)]
    assert allocate(6, demands, "priority") == {"c": 4, "a": 1, "b": 1}


def test_admission_stops_without_backfill():
    demands = [job("a", 2, 4, submitted_at=0), job("big", 7, 8, submitted_at=1), job("small", 1, 1, submitted_at=2)]
    # big does not fit next to a; small would, but there is no backfill.
    assert allocate(8, demands) == {"a": 4, "big": 0, "small": 0}
    assert allocate(8, demands, "priority") == {"a": 4, "big": 0, "small": 0}
    assert allocate(9, demands) == {"a": 2, "big": 7, "small": 0}


def test_priority_order_decides_admission():
    demands = [job("old", 4, 4, 1, 0), job("urgent", 6, 6, 10000, 1)]
    assert allocate(8, demands, "fairshare") == {"old": 4, "urgent": 0}
    assert allocate(8, demands, "priority") == {"old": 0, "urgent": 6}


def test_running_jobs_first():
    demands = [job("new-urgent", 4, 8, 10000, 0), job("running-low", 4, 8, 1, 5, running=True)]
    assert allocate(6, demands, "priority") == {"running-low": 6, "new-urgent": 0}
    assert allocate(6, demands, "fairshare") == {"running-low": 6, "new-urgent": 0}
    assert allocate(6, [dict(d, running=False) for d in demands], "priority") == {"new-urgent": 6, "running-low": 0}


def test_running_jobs_past_capacity_are_cut():
    demands = [job("r1", 3, 3, running=True), job("r2", 3, 3, submitted_at=1, running=True)]
    assert allocate(4, demands) == {"r1": 3, "r2": 0}


def test_max_zero_jobs_take_nothing_and_do_not_block():
    demands = [job("a", 4, 8, submitted_at=0), job("cpu", 0, 0, submitted_at=1), job("b", 4, 8, submitted_at=2)]
    assert allocate(8, demands) == {"a": 4, "cpu": 0, "b": 4}
    assert allocate(0, [job("cpu", 0, 0), job("cpu2", 0, 0, submitted_at=1)]) == {"cpu": 0, "cpu2": 0}


def test_iso_submitted_at_and_numbers_compare_as_posix_seconds():
    t0 = "2024-05-01T10:00:00Z"
    t1 = "2024-05-01T12:00:00+02:00"  # same instant as t0 in UTC
    t2 = datetime(2024, 5, 1, 10, 0, 1)  # naive datetime = UTC, one second later
    early = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc).timestamp()
    demands = [job("b", 3, 3, submitted_at=t1), job("a", 3, 3, submitted_at=t0),
               job("c", 3, 3, submitted_at=t2), job("z", 3, 3, submitted_at=early)]
    # Order: z (number, 9:00), a (tie with b broken by id), b, c.
    assert allocate(9, demands) == {"z": 3, "a": 3, "b": 3, "c": 0}


def test_float_priorities_are_weights():
    demands = [job("a", 1, 8, 1.5, 0), job("b", 1, 8, 3.0, 1)]
    assert allocate(8, demands) == {"a": 3, "b": 5}


def test_integer_ids():
    assert allocate(8, [job(2, submitted_at=0), job(10, submitted_at=0)]) == {2: 4, 10: 4}
    assert allocate(7, [job(2, submitted_at=0), job(10, submitted_at=0)]) == {2: 4, 10: 3}


@pytest.mark.parametrize(
    "total, demands, policy, match",
    [
        (-1, [job("a")], "fairshare", "total_gpus"),
        (2.5, [job("a")], "fairshare", "total_gpus"),
        (True, [job("a")], "fairshare", "total_gpus"),
        (8, [job("a", -1, 4)], "fairshare", "min_gpus"),
        (8, [job("a", 0, -4)], "fairshare", "max_gpus"),
        (8, [job("a", 5, 4)], "fairshare", "min_gpus 5 > max_gpus 4"),
        (8, [job("a", 1.5, 4)], "fairshare", "min_gpus must be integers"),
        (8, [job("a")], "roundrobin", "unknown policy"),
        (8, [job("a"), job("a", submitted_at=1)], "fairshare", "duplicate id 'a'"),
        (8, [job("a", priority=0)], "fairshare", "priority"),
        (8, [job("a", priority=10001)], "priority", "priority"),
        (8, [job("a", priority=float("nan"))], "priority", "priority"),
        (8, [job("a", priority="high")], "priority", "priority"),
        (8, [job("a", submitted_at="yesterday")], "fairshare", "ISO-8601"),
        (8, [job("a", submitted_at=float("inf"))], "fairshare", "finite"),
        (8, [job("a", running="yes")], "fairshare", "running"),
        (8, [job("a"), job(1)], "fairshare", "ids"),
        (8, [{"id": "a", "min_gpus": 1}], "fairshare", "lacks"),
        (8, ["a"], "fairshare", "dict"),
    ],
)
def test_validation_errors(total, demands, policy, match):
    with pytest.raises(ValueError, match=match):
        allocate(total, demands, policy)


def test_medium_input_matches_reference():
    rng = random.Random(7)
    demands = []
    for i in range(300):
        lo = rng.randint(0, 3)
        demands.append(job(f"j{i}", lo, lo + rng.randint(0, 16), rng.randint(1, 10000), rng.random(),
                           running=rng.random() < 0.1))
    for policy in ("fairshare", "priority"):
        out = allocate(250, demands, policy)
        assert len(out) == len(demands) and sum(out.values()) == 250
        assert out == reference(250, demands, policy)


# ---------------------------------------------------------------- reference model


def order_of(demands, policy):
    def key(d):
        t = d["submitted_at"]
        if policy == "fairshare":
            return (not d.get("running", False), t, d["id"])
        return (not d.get("running", False), -d["priority"], t, d["id"])
    return sorted(demands, key=key)


def admitted_of(total, demands, policy):
    used, out = 0, []
    for d in order_of(demands, policy):
        if used + d["min_gpus"] > total:
            break
        used += d["min_gpus"]
        out.append(d)
    return out


def reference(total, demands, policy):
    """Slow, exact (Fraction) version of the policy, written independently."""
    res = {d["id"]: 0 for d in demands}
    adm = admitted_of(total, demands, policy)
    if policy == "priority":
        left = total - sum(d["min_gpus"] for d in adm)
        for d in adm:
            extra = min(d["max_gpus"] - d["min_gpus"], left)
            res[d["id"]] = d["min_gpus"] + extra
            left -= extra
        return res
    if not adm:
        return res
    target = min(total, sum(d["max_gpus"] for d in adm))

    def share(d, L):
        return min(max(L * d["priority"], Fraction(d["min_gpus"])), Fraction(d["max_gpus"]))

    def f(L):
        return sum(share(d, L) for d in adm)

    points = sorted({Fraction(d[k], d["priority"]) for d in adm for k in ("min_gpus", "max_gpus")})
    L = points[-1]
    for a, b in zip(points, points[1:]):
        if f(b) >= target:  # f is linear on [a, b]
            fa, fb = f(a), f(b)
            L = a if fb == fa else a + (target - fa) * (b - a) / (fb - fa)
            break
    x = [share(d, L) for d in adm]
    assert sum(x) == target
    floors = [int(v) for v in x]  # non-negative, so int() floors
    left = target - sum(floors)
    ranked = sorted(range(len(adm)), key=lambda i: (-(x[i] - floors[i]), i))
    for i in ranked[:left]:
        floors[i] += 1
    for d, v in zip(adm, floors):
        res[d["id"]] = v
    return res


# ---------------------------------------------------------------- properties


@st.composite
def scenarios(draw):
    n = draw(st.integers(0, 12))
    prio = st.one_of(st.integers(1, 10000), st.sampled_from([1, 2, 3, 5000, 10000]))
    demands = []
    for i in range(n):
        lo = draw(st.integers(0, 4))
        hi = draw(st.one_of(st.integers(lo, lo + 8), st.just(lo)))
        demands.append(job(f"j{i:02d}", lo, hi, draw(prio), draw(st.integers(0, 6)), running=draw(st.booleans())))
    return draw(st.integers(0, 40)), demands


policies = st.sampled_from(["fairshare", "priority"])


@settings(max_examples=150, deadline=None)
@given(scenarios(), policies)
def test_matches_exact_reference(sc, policy):
    total, demands = sc
    assert allocate(total, demands, policy) == reference(total, demands, policy)


@settings(max_examples=120, deadline=None)
@given(scenarios(), policies)
def test_invariants(sc, policy):
    total, demands = sc
    out = allocate(total, demands, policy)
    assert set(out) == {d["id"] for d in demands}
    assert all(isinstance(v, int) and v >= 0 for v in out.values())
    assert sum(out.values()) <= total
    adm = admitted_of(total, demands, policy)
    adm_ids = {d["id"] for d in adm}
    for d in demands:
        if d["id"] in adm_ids:
            assert d["min_gpus"] <= out[d["id"]] <= d["max_gpus"]
        else:
            assert out[d["id"]] == 0
    # Work-conserving: GPUs are left idle only when every admitted job is at its max.
    assert sum(out.values()) == min(total, sum(d["max_gpus"] for d in adm))
    if any(out[d["id"]] < d["max_gpus"] for d in adm):
        assert sum(out.values()) == total
    # No admitted job after a refused one (a job with min > 0 that got nothing).
    refused = False
    for d in order_of(demands, policy):
        if refused:
            assert out[d["id"]] == 0
        elif d["min_gpus"] > 0 and out[d["id"]] == 0:
            refused = True


@settings(max_examples=120, deadline=None)
@given(scenarios(), policies, st.randoms(use_true_random=False))
def test_deterministic_under_shuffle(sc, policy, rnd):
    total, demands = sc
    shuffled = list(demands)
    rnd.shuffle(shuffled)
    assert allocate(total, shuffled, policy) == allocate(total, demands, policy)


@settings(max_examples=150, deadline=None)
@given(scenarios(), st.data())
def test_raising_priority_never_lowers_share(sc, data):
    total, demands = sc
    if not demands:
        return
    i = data.draw(st.integers(0, len(demands) - 1))
    new_priority = data.draw(st.integers(demands[i]["priority"], 10000))
    raised = list(demands)
    raised[i] = dict(demands[i], priority=new_priority)
    before = allocate(total, demands, "fairshare")
    after = allocate(total, raised, "fairshare")
    jid = demands[i]["id"]
    assert after[jid] >= before[jid]
