"""Dips (nbrunner.core.dips): the goodput policy does not start or resize a job to a size it ran no faster than a
smaller one."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nbrunner.core import goodput
from nbrunner.core.allocate import allocate
from nbrunner.core.dips import fewer_as_fast, leave_dips

from .test_allocate import job
from .test_goodput import measured_scenarios
from .test_throughput import curve

# yolov3-like: faster on every GPU of a host (4), slower past it, faster again from 8.
RATES = {1: 1.0, 2: 1.8, 4: 2.7, 5: 2.2, 6: 2.5, 8: 2.8}
SIZES = np.array(sorted(RATES))
SECS = np.array([1 / RATES[n] for n in SIZES])


def fewer(x: int, least: int = 1) -> int:
    return int(fewer_as_fast(np.array([x]), np.zeros(len(SIZES), dtype=np.int64), SIZES, SECS, np.array([least]))[0])


def test_the_fewest_gpus_that_ran_as_fast():
    assert fewer(6) == 4 and fewer(5) == 4  # 4 ran faster than 5 and 6
    assert fewer(8) == 8 and fewer(4) == 4 and fewer(1) == 1  # nothing smaller ran as fast
    assert fewer(7) == 7  # not run: nothing is known of it
    assert fewer(6, least=5) == 6  # 4 is below the job's minimum, 5 ran slower


def test_jobs_resized_into_a_dip_leave_it_and_others_take_the_gpus():
    x, cur, least = np.array([6, 2, 5]), np.array([4, 2, 5]), np.array([1, 1, 1])
    runs = [(SIZES, SECS), (np.array([1, 2]), np.array([1.0, 0.5])), (SIZES, SECS)]
    given_to = []

    def regive(free, jobs):
        given_to.append((free, jobs.tolist()))
        return np.where(jobs == 1, free, 0)

    leave_dips(x, 13, np.array([0, 1, 2]), runs, cur, least, regive)
    # Job 0 was grown into its dip: back to 4. Job 2 sits in its dip at its current count: left there.
    assert x.tolist() == [4, 4, 5] and given_to == [(2, [1, 2])]


def test_a_job_sitting_in_its_dip_leaves_it_when_the_gain_pays_for_the_pause():
    runs = [(SIZES, SECS), (SIZES, SECS)]  # on 6: 2.5, on 4: 2.7 (1.08x)
    for patience, moved in ((1.05, True), (1.1, False), (np.inf, False)):
        x = np.array([6, 2])
        leave_dips(x, 8, np.array([0, 1]), runs, np.array([6, 2]), np.array([1, 1]),
                   lambda free, jobs: np.where(jobs == 1, free, 0), lambda jobs: np.full(len(jobs), patience))
        assert x.tolist() == ([4, 4] if moved else [6, 2]), patience


def test_a_job_measured_slower_on_6_than_on_4_gets_4_and_the_other_job_the_rest(monkeypatch):
    a = job("a", 1, 6, throughput={1: 100.0, 2: 200.0, 4: 400.0, 6: 390.0})
    b = job("b", 1, 8, submitted_at=1, throughput=curve(0.01, 0.004, 0.0, [1, 2, 4]))
    assert allocate(10, [a, b], "goodput") == {"a": 4, "b": 6}
    # Already running on 6: moving it costs a pause, and it is left there.
    run = dict(a, running=True, gpus=6, pause_s=30.0)
    assert allocate(10, [run, b], "goodput") == {"a": 6, "b": 4}
    monkeypatch.setattr(goodput, "leave_dips", lambda *args: None)
    assert allocate(10, [a, b], "goodput") == {"a": 6, "b": 4}  # the model alone, fitted through the dip


def test_a_job_running_in_a_deep_dip_moves_out_when_it_has_the_time_to_gain_from_it():
    # Slower on 6 than on 4 by a third: with hours left (a tenth done after 10 GPU-hours), the move pays its
    # 30 s pause many times over; a minute from its end (a hundredth left) it would not.
    a = job("a", 1, 6, throughput={1: 100.0, 2: 200.0, 4: 400.0, 6: 300.0})
    b = job("b", 1, 8, submitted_at=1, throughput=curve(0.01, 0.004, 0.0, [1, 2, 4]))
    run = dict(a, running=True, gpus=6, pause_s=30.0, attained=36000.0)
    assert allocate(10, [dict(run, progress=0.1), b], "goodput") == {"a": 4, "b": 6}
    assert allocate(10, [dict(run, progress=0.99), b], "goodput") == {"a": 6, "b": 4}


def test_a_batch_adapting_job_reads_its_dip_in_its_goodput_at_sizes_it_ran():
    eff = {1: 1.0, 2: 1.0, 4: 1.0, 6: 0.65}  # goodput on 6: 600 x 0.65 = 390 < 400 on 4
    a = job("a", 1, 6, throughput={1: 100.0, 2: 200.0, 4: 400.0, 6: 600.0}, efficiency=eff)
    b = job("b", 1, 8, submitted_at=1, throughput=curve(0.01, 0.004, 0.0, [1, 2, 4]))
    assert allocate(10, [a, b], "goodput")["a"] == 4
    # Its efficiency on 6 alone (predicted, not run there): its goodput on 6 is a prediction, not a dip.
    predicted = dict(a, throughput={1: 100.0, 2: 200.0, 4: 400.0})
    assert allocate(10, [predicted, b], "goodput")["a"] == 6


@st.composite
def dipping_scenarios(draw):
    """Measured scenarios whose jobs ran slower past a host's GPUs (2 or 4) on the sizes not filling hosts."""
    total, demands = draw(measured_scenarios())
    out = []
    for d in demands:
        if "throughput" in d:  # scaling well up to a host, with more sizes run
            sizes = {int(n) for n in d["throughput"]} | set(draw(st.lists(st.integers(1, 12), max_size=3)))
            smooth = curve(0.0, draw(st.floats(0.001, 0.05)), draw(st.floats(0, 0.002)), sorted(sizes))
            host, slow = draw(st.sampled_from([2, 4])), draw(st.floats(0.4, 1.0))
            thr = {n: v * (slow if n > host and n % host else 1.0) for n, v in smooth.items()}
            d = dict(d, throughput=thr)
            if draw(st.booleans()):
                d["efficiency"] = {n: draw(st.floats(0.3, 1.0)) for n in thr}
        out.append(dict(d, attained=draw(st.sampled_from([0.0, 20 * 3600.0]))))
    return total, out


@settings(max_examples=200, deadline=None)
@given(dipping_scenarios())
def test_no_job_is_started_or_resized_into_a_dip(sc):
    total, demands = sc
    out = allocate(total, demands, "goodput")
    for d in demands:
        x, ran = out[d["id"]], d.get("throughput") or {}
        if x == 0 or x not in ran or (d.get("running") and d.get("gpus") == x):
            continue
        eff = d.get("efficiency") or {}
        rate = {n: v * eff.get(n, 1.0) for n, v in ran.items()}
        assert not any(d["min_gpus"] <= n < x and rate[n] > rate[x] * (1 + 1e-9) for n in rate), (d, x)
