"""Pure placement (nbrunner.core.placement) on plain lists and sets: no Redis, no processes."""
from __future__ import annotations

from nbrunner.core.models import JobRecord
from nbrunner.core.placement import admitted, demand_of, keep, pick, pick_one_host


def record(**fields) -> JobRecord:
    base = {"id": "j1", "name": "j1", "notebook": "nb.ipynb", "created_at": "2026-01-01T00:00:00Z"}
    return JobRecord(**{**base, **fields})


def test_pick_takes_the_tightest_host_that_fits_the_rest_and_honours_preferences():
    free = {("a", 0), ("b", 0), ("b", 1), ("b", 2), ("c", 0), ("c", 1)}
    assert pick(free, 2, prefer=[]) == [("c", 0), ("c", 1)]  # b's 3 stay whole for a job of 3
    assert pick(free, 1, prefer=[]) == [("a", 0)]
    assert pick(free, 3, prefer=[]) == [("b", 0), ("b", 1), ("b", 2)]
    # No host fits 4: the one with most free slots, then the tightest host for the last one.
    assert pick(free, 4, prefer=[]) == [("b", 0), ("b", 1), ("b", 2), ("a", 0)]
    assert pick(free, 2, prefer=["a"]) == [("a", 0), ("c", 0)]  # a job's own host first
    assert pick(free, 4, prefer=["c", "a"]) == [("c", 0), ("c", 1), ("a", 0), ("b", 0)]
    assert pick(free, 0, prefer=[]) == []
    assert pick(free, 9, prefer=[]) == sorted(free, key=lambda s: ({"b": 0, "c": 1, "a": 2}[s[0]], s[1]))


def test_pick_one_host_takes_the_tightest_host_that_fits_or_none():
    free = [("a", 0), ("a", 1), ("a", 2), ("b", 3), ("b", 5)]
    assert pick_one_host(free, 2) == [("b", 3), ("b", 5)]
    assert pick_one_host(free, 3) == [("a", 0), ("a", 1), ("a", 2)]
    assert pick_one_host(free, 4) is None


def test_keep_stays_on_the_drivers_host_then_the_largest():
    held = [("a", 0), ("b", 0), ("b", 1), ("c", 0), ("c", 1), ("c", 2)]
    assert keep(held, 1, home="a") == [("a", 0)]
    assert keep(held, 3, home="a") == [("a", 0), ("c", 0), ("c", 1)]
    assert keep(held, 2, home=None) == [("c", 0), ("c", 1)]
    assert keep(held, 0, home="a") == []


def test_demand_of_elastic_and_gang_jobs():
    elastic = record(min_gpus=1, max_gpus=4, elastic=True)
    assert demand_of(elastic)["min_gpus"] == 1 and demand_of(elastic)["max_gpus"] == 4
    assert demand_of(elastic)["running"] is False
    done = record(min_gpus=1, max_gpus=4, elastic=True, status="running", training_over=True)
    assert (demand_of(done)["min_gpus"], demand_of(done)["max_gpus"]) == (0, 0)
    gang = record(min_gpus=0, max_gpus=2)
    assert (demand_of(gang)["min_gpus"], demand_of(gang)["max_gpus"]) == (2, 2)
    running_gang = record(max_gpus=2, status="running", slots=[("a", 0), ("a", 1)])
    assert (demand_of(running_gang)["min_gpus"], demand_of(running_gang)["max_gpus"]) == (2, 2)
    assert demand_of(running_gang)["running"] is True
    # The goodput policy weighs a resize over at most the time the job's reported progress leaves it.
    assert demand_of(record(progress=0.25, elastic=True))["progress"] == 0.25
    assert demand_of(elastic)["progress"] is None


def test_admitted_stops_at_the_first_job_that_does_not_fit_in_the_policys_order():
    demands = [
        {"id": "old", "min_gpus": 3, "max_gpus": 3, "priority": 1, "submitted_at": 1, "running": False},
        {"id": "new", "min_gpus": 1, "max_gpus": 1, "priority": 9000, "submitted_at": 2, "running": False},
        {"id": "run", "min_gpus": 1, "max_gpus": 1, "priority": 1, "submitted_at": 3, "running": True},
    ]
    assert admitted(3, demands, "fairshare") == {"run"}  # running first; 'old' blocks 'new'
    assert admitted(3, demands, "priority") == {"run", "new"}  # 'new' before 'old'; 'old' no longer fits
    assert admitted(5, demands, "fairshare") == {"run", "old", "new"}


def test_plan_shrinks_first_then_grows_waits_and_dispatches_in_order():
    from nbrunner.core.placement import plan

    t = "2026-01-01T00:00:0{}Z"
    shrinking = record(id="s", elastic=True, min_gpus=1, max_gpus=4, status="running", host="a", created_at=t.format(1))
    growing = record(id="g", elastic=True, min_gpus=1, max_gpus=4, status="running", host="b", created_at=t.format(2))
    gang = record(id="q", max_gpus=2, created_at=t.format(3))
    waiting = record(id="w", max_gpus=3, created_at=t.format(4))
    cpu = record(id="c", max_gpus=0, created_at=t.format(5))
    grant_of = {"s": [("a", 0), ("a", 1), ("c", 0)], "g": [("b", 0)]}
    free = {("b", 1), ("d", 0), ("d", 1)}
    shares = {"s": 2, "g": 2, "q": 2, "w": 0, "c": 0}
    steps = plan([cpu, waiting, gang, growing, shrinking], shares, {"s", "g", "q", "c"}, grant_of, free, "fairshare")
    assert [(s.kind, s.rec.id) for s in steps] == [
        ("shrink", "s"), ("grow", "g"), ("dispatch", "q"), ("position", "w"), ("dispatch", "c")]
    assert steps[0].slots == [("a", 0), ("a", 1)]  # the driver's host is kept
    assert steps[1].slots == [("b", 1)] and steps[1].have == [("b", 0)]  # grows on its own host
    assert steps[2].slots == [("d", 0), ("d", 1)]  # a gang on one host
    assert steps[3].position == 1
    assert steps[4].slots == []
    assert free == {("b", 1), ("d", 0), ("d", 1)}  # the caller's set is not changed


def test_plan_keeps_a_gang_queued_when_no_host_has_room():
    from nbrunner.core.placement import plan

    gang = record(id="q", max_gpus=2)
    steps = plan([gang], {"q": 2}, {"q"}, {}, {("a", 0), ("b", 0)}, "fairshare")
    assert [(s.kind, s.position) for s in steps] == [("position", 1)]


def test_plan_leaves_an_empty_host_whole_for_the_job_that_needs_it():
    from nbrunner.core.placement import plan

    t = "2026-01-01T00:00:0{}Z"
    small = record(id="e", elastic=True, min_gpus=1, max_gpus=1, created_at=t.format(1))
    gang = record(id="q", max_gpus=4, created_at=t.format(2))
    free = {("a", 3), *(("b", i) for i in range(4))}  # host a has one slot left, host b is empty
    steps = plan([small, gang], {"e": 1, "q": 4}, {"e", "q"}, {}, free, "fairshare")
    assert [(s.kind, s.rec.id, s.slots) for s in steps] == [
        ("dispatch", "e", [("a", 3)]), ("dispatch", "q", [("b", i) for i in range(4)])]


def test_plan_places_the_largest_grow_first_and_grants_in_the_policys_order():
    from nbrunner.core.placement import plan

    t = "2026-01-01T00:00:0{}Z"
    two = record(id="two", elastic=True, min_gpus=1, max_gpus=4, status="running", host="a", created_at=t.format(1))
    three = record(id="three", elastic=True, min_gpus=1, max_gpus=8, status="running", host="c", created_at=t.format(2))
    grant_of = {"two": [("a", 0)], "three": [("c", 0)]}
    free = {("x", 0), ("x", 1), ("x", 2), ("y", 0), ("z", 0)}
    steps = plan([three, two], {"two": 3, "three": 4}, {"two", "three"}, grant_of, free, "fairshare")
    # In the policy's order "two" would take 2 of x's 3 and "three" one slot on each of x, y and z.
    assert [(s.kind, s.rec.id, s.slots) for s in steps] == [
        ("grow", "two", [("y", 0), ("z", 0)]), ("grow", "three", [("x", 0), ("x", 1), ("x", 2)])]
    # Fewer free slots than the grows need: how many each gets is decided in the policy's order.
    steps = plan([three, two], {"two": 5, "three": 4}, {"two", "three"}, grant_of, free, "fairshare")
    assert [(s.rec.id, len(s.slots)) for s in steps] == [("two", 4), ("three", 1)]
