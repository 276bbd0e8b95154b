"""The goodput policy's inputs in the service: the job record's throughput and pause, the demands."""

from __future__ import annotations

from nbrunner.core.allocate import allocate
from nbrunner.core.models import JobRecord
from nbrunner.core.placement import demand_of


def rec(**kw) -> JobRecord:
    base = {"id": "j1", "name": "n", "notebook": "nb.ipynb", "elastic": True, "min_gpus": 1, "max_gpus": 8,
            "status": "running", "created_at": "2026-01-01T00:00:00Z"}
    return JobRecord(**{**base, **kw})


def test_demands_carry_the_goodput_inputs_and_allocate_uses_them():
    a = rec(id="a", slots=[["h", i] for i in range(4)], throughput={"1": 100.0, "2": 199.0, "4": 395.0},
            pause_s=1.0)
    b = rec(id="b", created_at="2026-01-01T00:00:01Z", slots=[["g", i] for i in range(4)],
            throughput={"1": 100.0, "2": 101.0, "4": 101.5}, pause_s=1.0)
    da, db = demand_of(a), demand_of(b)
    assert da["throughput"] == {"1": 100.0, "2": 199.0, "4": 395.0} and da["gpus"] == 4 and da["pause_s"] == 1.0
    assert db["gpus"] == 4 and db["running"] is True
    assert allocate(8, [da, db], "fairshare") == {"a": 4, "b": 4}
    out = allocate(8, [da, db], "goodput")
    assert out["a"] > out["b"]  # a scales, b does not
    assert out["b"] >= 1
    fresh = demand_of(rec(id="c"))
    assert fresh["throughput"] == {} and fresh["gpus"] == 0 and fresh["pause_s"] == 0.0
