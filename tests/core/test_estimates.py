"""Expected starts and ends (nbrunner.core.estimates): a replay of the queue, durations from the past."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbrunner.core.estimates import estimate, median_duration, remaining_s

NOW = 1_000_000.0


def row(id, gpus=1, submitted_at=0.0, remaining=None, running=False, held=None, min_gpus=None, priority=5000):
    return {"id": id, "min_gpus": gpus if min_gpus is None else min_gpus, "max_gpus": gpus, "priority": priority,
            "submitted_at": submitted_at, "running": running, "remaining_s": remaining,
            "held": (gpus if held is None else held) if running else 0}


def test_a_queue_behind_a_running_job_starts_as_the_jobs_ahead_end():
    got = estimate(NOW, 2, "fairshare", [
        row("a", 2, 0, remaining=10.0, running=True),
        row("b", 1, 1, remaining=30.0), row("c", 2, 2, remaining=5.0), row("d", 1, 3, remaining=7.0)])
    assert got["a"] == (None, NOW + 10)  # running: no start to expect
    assert got["b"] == (NOW + 10, NOW + 40)
    assert got["c"] == (NOW + 40, NOW + 45)  # no backfill: d waits behind c although a GPU is free
    assert got["d"] == (NOW + 45, NOW + 52)


def test_priority_order_and_a_job_that_needs_no_gpu():
    got = estimate(NOW, 1, "priority", [
        row("a", 1, 0, remaining=10.0, running=True), row("low", 1, 1, remaining=5.0, priority=1),
        row("high", 1, 2, remaining=5.0, priority=9000), row("cpu", 0, 3, remaining=4.0)])
    assert got["high"] == (NOW + 10, NOW + 15)
    assert got["low"] == (NOW + 15, NOW + 20)
    assert got["cpu"] == (NOW, NOW + 4)


def test_nothing_is_made_up_behind_a_job_of_unknown_duration():
    got = estimate(NOW, 1, "fairshare", [
        row("a", 1, 0, remaining=10.0, running=True), row("first", 1, 1, remaining=None),
        row("later", 1, 2, remaining=20.0)])
    assert got["first"] == (NOW + 10, None)  # it starts when a ends, but nobody knows when it ends
    assert got["later"] == (None, None)


def test_no_gpu_at_all_gives_no_estimate():
    assert estimate(NOW, 0, "fairshare", [row("a", 1, 0, remaining=5.0)]) == {"a": (None, None)}


def test_accounts_divide_the_replayed_cluster():
    tree = {"accounts": [{"name": "v", "weight": 1, "members": ["alice"]}, {"name": "n", "weight": 1, "members": ["bob"]}]}
    rows = [dict(row("a1", 2, 0, remaining=10.0, running=True), owner="alice"),
            dict(row("b1", 2, 1, remaining=30.0), owner="bob"),
            dict(row("a2", 2, 2, remaining=5.0), owner="alice")]
    got = estimate(NOW, 4, "fairshare", rows, tree)
    assert got["b1"] == (NOW, NOW + 30)
    assert got["a2"] == (NOW + 10, NOW + 15)


def test_remaining_and_median():
    assert remaining_s(30.0, 0.25, None) == 90.0  # from its own progress first
    assert remaining_s(30.0, None, 100.0) == 70.0  # else from its past runs
    assert remaining_s(130.0, None, 100.0) is None  # longer than usual: unknown, not a guess
    assert remaining_s(5.0, 1.0, None) == 0.0
    assert remaining_s(5.0, None, None) is None
    assert median_duration([]) is None
    assert median_duration([3.0, 1.0, 100.0, float("nan")]) == 3.0


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 6), st.lists(st.tuples(st.integers(0, 4), st.none() | st.floats(0, 500), st.booleans()),
                                   max_size=10))
def test_starts_never_before_now_ends_after_starts_and_known_only_with_durations(gpus, specs):
    rows, used = [], 0
    for i, (g, rest, running) in enumerate(specs):
        running = running and g > 0 and used + g <= gpus
        used += g if running else 0
        rows.append(row(f"j{i}", g, float(i), remaining=rest, running=running))
    got = estimate(NOW, gpus, "fairshare", rows)
    assert set(got) == {r["id"] for r in rows}
    for r in rows:
        start, end = got[r["id"]]
        if r["running"]:
            assert start is None
        if start is not None:
            assert start >= NOW - 1e-6
        if end is not None:
            assert r["remaining_s"] is not None
            assert end >= (start if start is not None else NOW) - 1e-6
            assert math.isclose(end - (start if start is not None else NOW), r["remaining_s"], abs_tol=1e-6)
        if r["min_gpus"] > gpus:
            assert start is None


@pytest.mark.parametrize("policy", ["fairshare", "priority", "goodput"])
def test_every_policy_replays(policy):
    got = estimate(NOW, 2, policy, [row("a", 2, 0, remaining=3.0, running=True), row("b", 2, 1, remaining=4.0)])
    assert got["b"] == (NOW + 3, NOW + 7)
