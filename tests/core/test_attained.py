"""Attained service integrated from a GPU timeline (nbrunner.core.attained), and the demands that carry it."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from nbrunner.core.allocate import allocate
from nbrunner.core.attained import Attained, attained_service, fold, service_at
from nbrunner.core.models import JobRecord
from nbrunner.core.placement import demand_of

T0 = 1_700_000_000.0


def point(t: float, gpus: int) -> dict:
    iso = datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"t": iso, "gpus": gpus}


def test_integral_of_the_gpu_count():
    timeline = [point(T0, 2), point(T0 + 10, 1), point(T0 + 15, 0), point(T0 + 100, 4)]
    # 2 x 10 + 1 x 5 + 0 x 85, then 4 GPUs for the 5 s up to now
    assert attained_service(timeline, T0 + 105) == 45.0
    assert attained_service(timeline[:3], T0 + 1000) == 25.0  # released: no more service
    assert attained_service([], T0) == 0.0


def test_resizes_count_the_changes_of_the_gpu_count_after_the_first_start():
    timeline = [point(T0, 0), point(T0 + 5, 2), point(T0 + 6, 2), point(T0 + 9, 4), point(T0 + 20, 0),
                point(T0 + 30, 4)]  # queued, started on 2, granted 2 again, grown, preempted, restarted
    assert fold(Attained(), timeline).resizes == 3
    assert fold(Attained(), timeline[:3]).resizes == 0
    assert fold(fold(Attained(), timeline[:4]), timeline[4:]).resizes == 3


def test_a_point_out_of_order_counts_for_no_time():
    skewed = [point(T0, 2), point(T0 - 3, 1), point(T0 + 4, 0)]  # another host's clock, 3 s behind
    assert attained_service(skewed, T0 + 10) == 1 * 4.0
    assert attained_service([point(T0, 3)], T0 - 5) == 0.0  # now before the newest point


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 500), st.integers(0, 8)), max_size=12), st.integers(0, 12),
       st.floats(0, 100))
def test_folding_in_parts_equals_folding_at_once(steps, cut, later):
    t, timeline = T0, []
    for dt, g in steps:
        t += dt
        timeline.append(point(t, g))
    cut = min(cut, len(timeline))
    whole = fold(Attained(), timeline)
    parts = fold(fold(Attained(), timeline[:cut]), timeline[cut:])
    assert parts.seen == whole.seen == len(timeline) and parts.resizes == whole.resizes
    assert abs(service_at(parts, t + later) - service_at(whole, t + later)) <= 1e-6 * (1 + whole.closed)
    assert service_at(whole, t + later) >= whole.closed >= 0


def test_demands_carry_attained_service_and_goodput_serves_the_least_served_first():
    base = {"name": "n", "notebook": "nb.ipynb", "elastic": True, "min_gpus": 1, "max_gpus": 3, "status": "running"}
    old = JobRecord(id="a", created_at="2026-01-01T00:00:00Z", slots=[["h", 0], ["h", 1]], **base)
    new = JobRecord(id="b", created_at="2026-01-01T00:00:05Z", slots=[["h", 2]], **base)
    demands = [demand_of(old, 120.0, 300.0), demand_of(new)]
    assert demands[0]["attained"] == 120.0 and demands[1]["attained"] == 0.0
    assert demands[0]["hold_s"] == 300.0 and demands[1]["hold_s"] is None
    assert allocate(3, demands, "fairshare") == {"a": 2, "b": 1}
    assert allocate(3, demands, "goodput") == {"a": 2, "b": 1}  # both in the first queue of 16 GPU-hours
    assert allocate(3, demands, "goodput", queue_thresholds=(60.0,)) == {"a": 1, "b": 2}  # a is past 60 s
