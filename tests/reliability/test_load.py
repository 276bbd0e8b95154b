"""Load over REST: many jobs from concurrent clients, all accepted, each executed exactly once.
(The 500-job run with latency figures is bench/bench_load.py.)"""
from __future__ import annotations

import pytest

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from loadgen import run_load  # noqa: E402

pytestmark = pytest.mark.slow


def test_concurrent_rest_submissions_each_run_exactly_once():
    res = run_load(jobs=60, clients=10, workers=2, timeout=600)
    print(f"\n60 jobs / 10 clients: POST p50 {res['post_p50_s'] * 1000:.1f} ms, p99 {res['post_p99_s'] * 1000:.1f} ms; "
          f"all done in {res['total_s']:.0f} s")
    assert res["errors"] == [] and res["accepted"] == 60
    assert res["completed"] == 60 and res["executed_once"], res["not_completed"]
