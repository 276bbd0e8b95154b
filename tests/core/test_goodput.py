"""Tests for the goodput policy (nbrunner.core.goodput): measured speedups, restarts, short work first."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbrunner.core.allocate import allocate
from nbrunner.core.goodput import (ADAPTIVE_START, EFFICIENCY_FLOOR, HOLD_WINDOW_S, HORIZON_S, LONG_ADAPTIVE_FLOOR,
                                   QUEUE_THRESHOLDS, SHORT_ADAPTIVE_FLOOR, SHORT_EFFICIENCY_FLOOR, expected_hold_s,
                                   queue_of)
from nbrunner.core.throughput import fit_many, fit_throughput

from .test_allocate import admitted_of, job, order_of, scenarios
from .test_throughput import curve

LONG = 20 * 3600.0  # attained GPU-seconds past the 16 GPU-hour threshold


# ---------------------------------------------------------------- policy examples


def test_no_measurements_equals_fairshare_example():
    demands = [job("a", 1, 8, 5000, 0), job("b", 1, 8, 10000, 1)]
    assert allocate(8, demands, "goodput") == {"a": 3, "b": 5}


def test_gpus_go_to_the_job_that_scales():
    scales = curve(0.0, 0.01, 0.0, [1, 2, 4])  # linear
    flat = curve(0.01, 0.001, 0.0, [1, 2, 4])  # ~10% gain from 1 to 4
    demands = [job("a", 1, 8, throughput=flat), job("b", 1, 8, submitted_at=1, throughput=scales)]
    assert allocate(8, demands, "fairshare") == {"a": 4, "b": 4}
    out = allocate(8, demands, "goodput")
    # -1/S gains: b 1/2, 1/6, 1/12, 1/20, then a's 1 -> 2 (0.045) before b's 1/30.
    assert out == {"a": 2, "b": 6}


def test_no_gpu_past_the_peak_or_twice_the_largest_size_seen():
    peaked = curve(0.0, 0.01, 0.002, [1, 2, 3, 4])  # peak near sqrt(0.01/0.002) = 2.2
    out = allocate(16, [job("a", 1, 16, throughput=peaked)], "goodput")
    assert out["a"] == 2
    # Slower on 3 only: a dip it has not run past (test_a_dip_...), so it tries up to 2 x 2.
    out = allocate(16, [job("a", 1, 16, throughput=curve(0.0, 0.01, 0.002, [1, 2, 3]))], "goodput")
    assert out["a"] == 4
    lin = allocate(16, [job("a", 1, 16, throughput={3: 300.0})], "goodput")
    assert lin["a"] == 6  # linear extrapolation only up to 2 x 3


def test_equal_gains_up_to_rounding_go_to_the_earlier_job():
    # Both scale linearly from 2 (equal speedups); their fits differ in the last bits only.
    for first, second in (({2: 64.0}, {2: 256 / 3}), ({2: 256 / 3}, {2: 64.0})):
        demands = [job("a", 0, 3, 1, 0, throughput=first), job("b", 0, 3, 1, 0, throughput=second)]
        assert allocate(5, demands, "goodput") == {"a": 3, "b": 2}
        assert allocate(5, demands[::-1], "goodput") == {"a": 3, "b": 2}  # admission order, not list order


def test_unmeasured_jobs_keep_their_fairshare_share():
    demands = [job("a", 1, 8, throughput=curve(0.0, 0.01, 0.0, [1, 2])), job("b", 1, 8, submitted_at=1),
               job("c", 1, 8, submitted_at=2)]
    fair = allocate(9, demands, "fairshare")
    out = allocate(9, demands, "goodput")
    assert out["b"] == fair["b"] and out["c"] == fair["c"]
    assert out["a"] == 3


def test_priority_weights_marginal_gain():
    t = curve(0.0, 0.01, 0.0, [1, 2, 4, 8])
    demands = [job("a", 1, 8, 1000, 0, throughput=t), job("b", 1, 8, 10000, 1, throughput=t)]
    out = allocate(8, demands, "goodput")
    # Gains 10000 * (1/x - 1/(x+1)) for b against 1000 * (1/x - 1/(x+1)) for a: a only
    # gets its second GPU when b's next one is worth less (b at 5: 333 < a's 500).
    assert out == {"a": 2, "b": 6}
    assert allocate(8, [dict(demands[0], priority=10000), demands[1]], "goodput") == {"a": 4, "b": 4}


def test_restart_aware_keeps_small_gain_resizes_out():
    # 2 -> 3 GPUs gains ~1.5% throughput: less than a 30 s pause over the horizon.
    t = curve(0.01, 0.002, 0.0, [1, 2])
    d = job("a", 1, 4, running=True, gpus=2, pause_s=30.0, throughput=t)
    assert allocate(3, [d], "goodput") == {"a": 2}
    # Without a pause (or a long horizon) the GPU is worth it.
    assert allocate(3, [dict(d, pause_s=0.0)], "goodput") == {"a": 3}
    # A large gain is taken despite the pause.
    lin = curve(0.0, 0.01, 0.0, [1, 2])
    assert allocate(3, [dict(d, throughput=lin)], "goodput") == {"a": 3}


def test_restart_aware_undoes_shrink_that_fed_a_refused_growth():
    small = curve(0.01, 0.0001, 0.0, [1, 2, 4])  # flat
    big = curve(0.01, 0.004, 0.0, [1, 2, 4])  # 4 -> 7 GPUs: +4%, less than 120 s over the horizon
    demands = [job("a", 1, 8, running=True, gpus=4, pause_s=120.0, throughput=small),
               job("b", 1, 8, submitted_at=1, running=True, gpus=4, pause_s=120.0, throughput=big)]
    out = allocate(8, demands, "goodput")
    assert out == {"a": 4, "b": 4}
    no_pause = [dict(d, pause_s=0.0) for d in demands]
    assert allocate(8, no_pause, "goodput") == {"a": 1, "b": 7}


def test_a_shrink_is_weighed_as_two_pauses(monkeypatch):
    """A running job shrunk now pays a pause now and another when it grows back: a growth of another job that
    would pay for one pause of the job it shrinks, but not for two, is not made."""
    from nbrunner.core import goodput

    a = job("a", 1, 8, running=True, gpus=4, pause_s=30.0, throughput=curve(0.0, 0.01, 0.0, [1, 2, 4]))
    # b's 3rd GPU takes 1/6 off its 1/S, a's 4th 1/12; a's pause costs 1/16 of its utility (1/4) if one
    # pause (rho 30 s / 150 s = 0.2: 0.2 / 0.8), 1/6 if two (0.4 / 0.6): 1/12 + 1/16 < 1/6 < 1/12 + 1/6.
    b = job("b", 1, 8, submitted_at=1, running=True, gpus=2, pause_s=30.0, throughput=curve(0.0, 0.01, 0.0, [1, 2]))
    assert goodput.SHRINK_PAUSES == 2
    assert allocate(6, [a, b], "goodput") == {"a": 4, "b": 2}
    monkeypatch.setattr(goodput, "SHRINK_PAUSES", 1)  # one pause: the reshuffle is made
    assert allocate(6, [a, b], "goodput") == {"a": 3, "b": 3}


def test_a_fixed_batch_growth_is_weighed_over_the_expected_hold():
    """A growth that pays its pause over the time the job's allocation is expected to last (``hold_s``), but
    not over 150 s, is made for a job with a fixed batch; a batch-adapting job's is weighed over 150 s."""
    t = curve(0.002, 0.01, 0.0, [1, 2, 3])  # 3 -> 4 GPUs: 1.19x, not worth a 30 s pause over 150 s
    a = job("a", 1, 4, running=True, gpus=3, pause_s=30.0, throughput=t)
    assert allocate(4, [a], "goodput") == {"a": 3}
    assert allocate(4, [dict(a, hold_s=HORIZON_S)], "goodput") == {"a": 3}
    assert allocate(4, [dict(a, hold_s=600.0)], "goodput") == {"a": 4}
    assert allocate(4, [dict(a, hold_s=None)], "goodput") == {"a": 3}  # None: not measured
    adapting = dict(a, hold_s=600.0, efficiency={1: 1.0, 2: 1.0, 3: 1.0})
    assert allocate(4, [adapting], "goodput") == {"a": 3}


def test_expected_hold_is_the_next_arrival_or_the_jobs_own_hold():
    assert expected_hold_s(12, 7200.0, 1) == 300.0  # 12 arrivals in the hour: one every 300 s
    assert expected_hold_s(2, 900.0, 2) == 300.0  # resized twice in 15 minutes: 300 s per allocation
    assert expected_hold_s(0, 90000.0, 0) == HOLD_WINDOW_S  # no arrival in the window: the window
    assert expected_hold_s(1, 600.0, 0, window_s=1800.0) == 600.0
    for bad in ((-1, 10.0, 0), (1, -1.0, 0), (1, float("nan"), 0), (1, 10.0, -1)):
        with pytest.raises(ValueError, match="expected_hold_s"):
            expected_hold_s(*bad)
    with pytest.raises(ValueError, match="expected_hold_s"):
        expected_hold_s(1, 10.0, 0, window_s=0.0)


def test_restart_fields_are_validated():
    t = curve(0.01, 0.002, 0.0, [1, 2])
    d = job("a", 1, 4, running=True, gpus=2, pause_s=60.0, throughput=t)
    for bad in ({"gpus": "2"}, {"gpus": -1}, {"gpus": True}, {"pause_s": -1.0}, {"pause_s": float("inf")},
                {"horizon_s": "x"}, {"hold_s": -1.0}, {"hold_s": float("nan")}, {"hold_s": "600"}):
        with pytest.raises(ValueError):
            allocate(3, [dict(d, **bad)], "goodput")
    assert allocate(3, [dict(d, pause_s=None)], "goodput") == {"a": 3}  # None = no pause measured


def test_gpus_of_a_growth_not_made_go_to_a_job_that_gains():
    flat = curve(0.045, 0.01, 0.0, [1, 2])  # 1 -> 2 GPUs: +10%, not worth a 30 s pause over the horizon
    lin = curve(0.0, 0.01, 0.0, [1, 2, 4])
    a = job("a", 1, 8, running=True, gpus=1, pause_s=30.0, throughput=flat)
    b = job("b", 1, 8, submitted_at=1, running=True, gpus=4, pause_s=30.0, throughput=lin)
    # a's first extra GPU is the largest marginal gain, but its growth is not made: that GPU
    # goes to b (which gains from it) instead of staying idle.
    assert allocate(10, [a, b], "goodput") == {"a": 1, "b": 8}
    assert allocate(10, [a], "goodput") == {"a": 1}  # nobody else gains: the GPUs stay free


def test_progress_caps_the_horizon_of_a_job_about_to_end():
    lin = curve(0.0, 0.01, 0.0, [1, 2])
    d = job("a", 1, 4, running=True, gpus=2, pause_s=30.0, throughput=lin, attained=2 * 600.0)
    assert allocate(4, [dict(d, progress=0.5)], "goodput") == {"a": 4}  # 570 s left: doubling pays
    # 99% done: about 6 s left at 2 GPUs, less than the pause: no growth, however large the gain.
    assert allocate(4, [dict(d, progress=0.99)], "goodput") == {"a": 2}
    assert allocate(4, [dict(d, progress=None)], "goodput") == {"a": 4}
    for bad in (-0.1, 1.5, float("nan"), "0.5", True):
        with pytest.raises(ValueError):
            allocate(4, [dict(d, progress=bad)], "goodput")


def test_free_gpus_go_to_long_jobs_over_their_time_left():
    flat = curve(0.045, 0.01, 0.0, [1, 2])  # 1 -> 2 GPUs: +10%, not worth a 30 s pause over HORIZON_S
    a = job("a", 1, 8, running=True, gpus=1, pause_s=30.0, throughput=flat, attained=LONG, progress=0.5)
    # Only long jobs: the free GPUs last until the next arrival, the job has ~20 h left at its pace.
    assert allocate(10, [a], "goodput") == {"a": 4}  # 2x its largest measured size
    # Its time left is what the growth is weighed over: nearly done, it stays.
    assert allocate(10, [dict(a, progress=0.9999)], "goodput") == {"a": 1}
    # Without progress (no time left known) or with a short job running, HORIZON_S as before.
    assert allocate(10, [dict(a, progress=None)], "goodput") == {"a": 1}
    short = job("s", 1, 1, submitted_at=1, running=True, gpus=1, pause_s=30.0, throughput={1: 50.0})
    assert allocate(10, [a, short], "goodput") == {"a": 1, "s": 1}
    assert allocate(10, [a, dict(short, attained=LONG)], "goodput") == {"a": 4, "s": 1}


def test_horizon_field():
    t = curve(0.01, 0.002, 0.0, [1, 2])
    d = job("a", 1, 4, running=True, gpus=2, pause_s=60.0, throughput=t)
    assert allocate(3, [dict(d, horizon_s=HORIZON_S * 100)], "goodput") == {"a": 3}


# ---------------------------------------------------------------- properties


@st.composite
def measured_scenarios(draw):
    total, demands = draw(scenarios())
    out = []
    for d in demands:
        d = dict(d)
        if draw(st.booleans()):
            sizes = draw(st.lists(st.integers(1, 12), min_size=1, max_size=4))
            a, b, c = draw(st.floats(0, 0.05)), draw(st.floats(0.001, 0.05)), draw(st.floats(0, 0.01))
            d["throughput"] = {(str(n) if draw(st.booleans()) else n): v for n, v in curve(a, b, c, sizes).items()}
        if d.get("running") and draw(st.booleans()):
            d["gpus"] = draw(st.integers(0, 12))
            d["pause_s"] = draw(st.floats(0, 300))
        out.append(d)
    return total, out


ATTAINED = st.one_of(st.sampled_from([0, 1.0, QUEUE_THRESHOLDS[0] - 1, QUEUE_THRESHOLDS[0], LONG]),
                     st.floats(0, 3 * LONG))


@st.composite
def queued_scenarios(draw, pauses: bool = True):
    total, demands = draw(measured_scenarios())
    out = []
    for d in demands:
        if not pauses:
            d = {k: v for k, v in d.items() if k not in ("gpus", "pause_s")}
        out.append(dict(d, attained=draw(ATTAINED)))
    return total, out


@settings(max_examples=150, deadline=None)
@given(st.one_of(measured_scenarios(), queued_scenarios()))
def test_goodput_invariants(sc):
    """Totals, min/max (running jobs never below their min), admission as fairshare, no backfill."""
    total, demands = sc
    out = allocate(total, demands, "goodput")
    assert set(out) == {d["id"] for d in demands}
    assert all(isinstance(v, int) and v >= 0 for v in out.values())
    assert sum(out.values()) <= total
    adm = {d["id"] for d in admitted_of(total, demands, "fairshare")}
    for d in demands:
        if d["id"] in adm:
            assert d["min_gpus"] <= out[d["id"]] <= d["max_gpus"]
        else:
            assert out[d["id"]] == 0
    refused = False
    for d in order_of(demands, "fairshare"):
        if refused:
            assert out[d["id"]] == 0
        elif d["min_gpus"] > 0 and out[d["id"]] == 0:
            refused = True


@settings(max_examples=120, deadline=None)
@given(st.one_of(measured_scenarios(), queued_scenarios()), st.randoms(use_true_random=False))
def test_goodput_deterministic_under_shuffle(sc, rnd):
    total, demands = sc
    shuffled = list(demands)
    rnd.shuffle(shuffled)
    assert allocate(total, shuffled, "goodput") == allocate(total, demands, "goodput")


@settings(max_examples=120, deadline=None)
@given(scenarios())
def test_goodput_equals_fairshare_without_measurements(sc):
    total, demands = sc
    assert allocate(total, demands, "goodput") == allocate(total, demands, "fairshare")


@settings(max_examples=100, deadline=None)
@given(measured_scenarios())
def test_goodput_never_less_utility_than_fairshare_without_pauses(sc):
    """With no pauses, the measured jobs' modelled utility sum w * (-1/S(x)) is at least fairshare's.

    (-1/S is concave in x for the fitted model, so the greedy is optimal; GPUs fairshare
    gives past 2x the largest size seen are not counted, goodput cannot use them.)
    """
    total, demands = sc
    demands = [{k: v for k, v in d.items() if k not in ("gpus", "pause_s")} for d in demands]
    fair = allocate(total, demands, "fairshare")
    good = allocate(total, demands, "goodput")
    models = dict(zip([d["id"] for d in demands], fit_many([d.get("throughput") or {} for d in demands])))

    def value(alloc):
        v = 0.0
        for d in demands:
            m, x = models[d["id"]], alloc[d["id"]]
            if m is not None:
                cap = max(2 * m.max_seen, d["min_gpus"])
                v += d["priority"] * (-2.0 if x == 0 else -1.0 / float(m.speedup(min(x, cap))))
        return v

    # Fairshare may hand measured jobs GPUs beyond 2x what they ran; goodput does not count those.
    assert value(good) >= value(fair) - 1e-9 * max(1.0, value(fair))


# ---------------------------------------------------------------- short work first

def test_queue_thresholds():
    assert QUEUE_THRESHOLDS == (16 * 3600.0,)
    assert queue_of([0, 16 * 3600.0 - 1, 16 * 3600.0, 10 * LONG]).tolist() == [0, 0, 1, 1]


def test_newcomer_is_served_before_a_long_job():
    lin = curve(0.0, 0.01, 0.0, [1, 2, 4, 8])
    long = job("long", 1, 8, running=True, gpus=8, throughput=lin, attained=LONG)
    new = job("new", 1, 6, submitted_at=1)
    assert allocate(8, [long, new], "fairshare") == {"long": 4, "new": 4}
    # The newcomer (queue 0) gets its whole fair share of the GPUs above the minimums first.
    assert allocate(8, [long, new], "goodput") == {"long": 2, "new": 6}
    # Below the threshold both are in queue 0: the plain goodput split.
    assert allocate(8, [dict(long, attained=3600.0), new], "goodput") == {"long": 4, "new": 4}


def test_a_long_batch_adapting_job_near_its_end_is_short_work_again():
    lin = curve(0.0, 0.01, 0.0, [1, 2, 4, 8])
    eff = {n: 1.0 for n in (1, 2, 4, 8)}
    long = job("long", 1, 8, running=True, gpus=4, throughput=lin, efficiency=eff, attained=LONG)
    new = job("new", 1, 8, submitted_at=1, throughput=lin, efficiency=eff)
    # Half done: 20 GPU-hours left, past the threshold both ways: the newcomer is served first.
    assert allocate(8, [dict(long, progress=0.5), new], "goodput") == {"long": 1, "new": 7}
    # Nine tenths done: about 2 GPU-hours left, under the 16 GPU-hour threshold: queue 0 again.
    assert allocate(8, [dict(long, progress=0.9), new], "goodput") == {"long": 4, "new": 4}
    # Without progress nothing is known of what is left: queued by attained service alone.
    assert allocate(8, [long, new], "goodput") == {"long": 1, "new": 7}
    # A fixed-batch job is queued by attained service alone.
    fixed = [{k: v for k, v in d.items() if k != "efficiency"} for d in (dict(long, progress=0.9), new)]
    assert allocate(8, fixed, "goodput") == {"long": 1, "new": 7}


def test_long_jobs_first_come_first_served():
    lin = curve(0.0, 0.01, 0.0, [1, 2, 4])  # efficient up to 2 x 4 GPUs
    longs = [job(f"l{i}", 1, 8, submitted_at=i, throughput=lin, attained=LONG) for i in range(3)]
    assert allocate(10, longs, "goodput") == {"l0": 8, "l1": 1, "l2": 1}
    # Without attained service the three share by marginal gain.
    plain = [{k: v for k, v in d.items() if k != "attained"} for d in longs]
    assert allocate(10, plain, "goodput") == {"l0": 4, "l1": 3, "l2": 3}


def test_long_jobs_behind_the_first_share_by_marginal_gain():
    lin = curve(0.0, 0.01, 0.0, [1, 2, 4])  # efficient up to 2 x 4 GPUs
    longs = [job(f"l{i}", 1, 8, submitted_at=i, throughput=lin, attained=LONG) for i in range(3)]
    # The first one up to its efficient size; the next two split what is left instead of one after the other.
    assert allocate(14, longs, "goodput") == {"l0": 8, "l1": 3, "l2": 3}


def test_short_jobs_nearer_their_end_get_more_gpus():
    lin = curve(0.0, 0.01, 0.0, [1, 2, 4])
    start = job("a", 1, 8, throughput=lin, attained=3600.0, progress=0.1)  # ~9 GPU-h left
    near = job("b", 1, 8, submitted_at=1, throughput=lin, attained=3600.0, progress=0.9)  # ~0.1 GPU-h left
    # Equal gains would split 4 / 4; weighted by 1 / sqrt(remaining service), b is served more.
    assert allocate(8, [start, near], "goodput") == {"a": 2, "b": 6}
    # Without progress (nothing known of what is left) the plain split.
    plain = [{k: v for k, v in d.items() if k != "progress"} for d in (start, near)]
    assert allocate(8, plain, "goodput") == {"a": 4, "b": 4}


def test_long_jobs_stop_at_their_efficient_size():
    knee = curve(0.001, 0.009, 0.0, [1, 2, 4])  # S(n)/n = 10/(n+9): efficient size 2 at 0.85
    lin = curve(0.0, 0.01, 0.0, [1, 2, 4])
    assert EFFICIENCY_FLOOR == 0.85
    demands = [job("a", 1, 8, throughput=knee, attained=LONG), job("b", 1, 8, submitted_at=1, throughput=lin,
                                                                     attained=LONG)]
    assert allocate(6, demands, "goodput") == {"a": 2, "b": 4}
    # The plain split gives a its 3rd GPU (gain 0.15) before b its 4th (0.083).
    plain = [{k: v for k, v in d.items() if k != "attained"} for d in demands]
    assert allocate(6, plain, "goodput") == {"a": 3, "b": 3}
    # GPUs left once both are at their efficient size go by marginal gain again.
    assert allocate(20, demands, "goodput") == {"a": 8, "b": 8}


def test_short_jobs_keep_only_useful_gpus_while_long_jobs_wait():
    knee = curve(0.004, 0.006, 0.0, [1, 2, 4])  # S = 10 / (4 + 6/n): GPUs 2..4 add 0.43, 0.24, 0.15
    lin = curve(0.0, 0.01, 0.0, [1, 2, 4])
    assert SHORT_EFFICIENCY_FLOOR == 0.2
    short = job("short", 1, 8, throughput=knee)
    long = job("long", 1, 8, submitted_at=1, throughput=lin, attained=LONG)
    # short stops at 3 GPUs (its 4th would add 0.15 < 0.2); long gets the rest.
    assert allocate(10, [short, long], "goodput") == {"short": 3, "long": 7}
    # With more GPUs than long can use, short grows past 3 again by marginal gain.
    assert allocate(12, [short, long], "goodput") == {"short": 4, "long": 8}
    assert allocate(16, [short, long], "goodput") == {"short": 8, "long": 8}
    # Without a later queue waiting, the plain split: short's 4th GPU (gain 0.05) before new's 7th (0.024).
    new = job("new", 1, 8, submitted_at=1, throughput=lin)
    assert allocate(10, [short, new], "goodput") == {"short": 4, "new": 6}
    assert allocate(4, [short], "goodput") == {"short": 4}


def test_batch_adapting_jobs_have_their_own_floors():
    """A demand with ``efficiency`` (here 1 at every size: goodput = throughput) grows by its marginal
    goodput speedup: long jobs past their efficient size, short ones further while long jobs wait."""
    assert (SHORT_ADAPTIVE_FLOOR, LONG_ADAPTIVE_FLOOR) == (0.1, 0.45)
    flat = {n: 1.0 for n in range(1, 9)}
    slow = curve(0.001, 0.009, 0.0, [1, 2, 4])  # S(n)/n = 10/(n+9); GPU n adds 90/((n+9)(n+8)): 0.49 at 5, 0.43 at 6
    lin = curve(0.0, 0.01, 0.0, [1, 2, 4])
    a = job("a", 1, 8, throughput=slow, attained=LONG)
    b = job("b", 1, 8, submitted_at=1, throughput=lin, attained=LONG)
    assert allocate(10, [a, b], "goodput") == {"a": 2, "b": 8}  # fixed batch: a stops at its efficient size
    assert allocate(10, [dict(a, efficiency=flat), b], "goodput") == {"a": 5, "b": 5}
    knee = curve(0.004, 0.006, 0.0, [1, 2, 4])  # GPUs 2..6 add 0.43, 0.24, 0.15, 0.10, 0.08
    short = job("short", 1, 8, throughput=knee)
    assert allocate(10, [short, b], "goodput") == {"short": 3, "b": 7}
    assert allocate(10, [dict(short, efficiency=flat), b], "goodput") == {"short": 5, "b": 5}
    # Without a later queue waiting, the plain split as for a fixed batch.
    new = job("new", 1, 8, submitted_at=1, throughput=lin)
    assert allocate(10, [dict(short, efficiency=flat), new], "goodput") == allocate(10, [short, new], "goodput")


def test_an_unmeasured_adapting_job_starts_small():
    """Before it has measured anything a batch-adapting job gets ADAPTIVE_START GPUs; it gets more only of
    the GPUs no other job gains from (a fixed-batch job gets its fairshare share, as before)."""
    assert ADAPTIVE_START == 1
    knee = curve(0.004, 0.006, 0.0, [1, 2, 4])
    short = job("short", 1, 8, throughput=knee, efficiency={n: 1.0 for n in range(1, 9)})
    u = job("u", 1, 8, submitted_at=2)
    b = job("b", 1, 8, submitted_at=1, throughput=curve(0.0, 0.01, 0.0, [1, 2, 4]), attained=LONG)
    assert allocate(10, [short, dict(u, efficiency={}), b], "goodput") == {"short": 5, "u": 1, "b": 4}
    assert allocate(10, [short, u, b], "goodput")["u"] > 1  # fixed batch: its fairshare share of its queue
    # GPUs nobody else gains from are not left idle: the short job's cap is 8 (2x its largest measured 4).
    assert allocate(10, [short, dict(u, efficiency={})], "goodput") == {"short": 8, "u": 2}
    assert allocate(10, [dict(u, efficiency={})], "goodput") == {"u": 8}
    assert allocate(10, [dict(u, efficiency={}, min_gpus=3)], "goodput") == {"u": 8}


def test_unmeasured_jobs_are_topped_up_before_a_later_queue():
    peaked = curve(0.0, 0.01, 0.005, [1, 2])  # peak at 1-2 GPUs
    demands = [job("m", 1, 8, throughput=peaked), job("u", 1, 8, submitted_at=1),
               job("old", 1, 8, submitted_at=2, throughput=curve(0.0, 0.01, 0.0, [4]), attained=LONG)]
    out = allocate(12, demands, "goodput")
    assert out["m"] <= 2 and out["u"] == 8  # u gets what m cannot use before "old" gets more than 1
    assert sum(out.values()) == 12


def test_attained_is_validated():
    for bad in ("1", -1.0, float("nan"), float("inf"), True, None):
        with pytest.raises(ValueError, match="attained"):
            allocate(4, [job("a", attained=bad)], "goodput")
    assert allocate(4, [job("a", attained=np.float32(5.0)), job("b", attained=7)], "goodput") == {"a": 2, "b": 2}
    assert allocate(4, [job("a", attained="x")], "fairshare") == {"a": 4}  # other policies ignore it


def still_gains(d: dict, x: int, total: int, queue: int) -> bool:
    """Whether admitted job ``d`` at ``x`` GPUs is below the size its queue serves it to while a later queue waits."""
    cap_max = min(d["max_gpus"], total)
    thr = d.get("throughput") or {}
    if not thr:
        return x < cap_max
    model = fit_throughput(thr)
    cap = min(cap_max, max(2 * model.max_seen, d["min_gpus"]))
    if x >= cap or x < 1:
        return x < cap
    rises = model.speedup(x + 1) > model.speedup(x) * (1 + 1e-9)
    if queue == 0:  # only GPUs that add at least SHORT_EFFICIENCY_FLOOR to its speedup
        return rises and model.speedup(x + 1) - model.speedup(x) >= SHORT_EFFICIENCY_FLOOR * (1 + 1e-9)
    return rises and model.speedup(x + 1) / (x + 1) >= EFFICIENCY_FLOOR * (1 + 1e-9)


@settings(max_examples=150, deadline=None)
@given(queued_scenarios(pauses=False))
def test_less_attained_is_not_served_after_more(sc):
    """A job past its min in a later queue means every admitted job of an earlier queue is served."""
    total, demands = sc
    out = allocate(total, demands, "goodput")
    adm = admitted_of(total, demands, "fairshare")
    queue = {d["id"]: int(queue_of(d["attained"])) for d in adm}
    for j in adm:
        if out[j["id"]] <= j["min_gpus"]:
            continue
        for i in adm:
            if queue[i["id"]] < queue[j["id"]]:
                assert not still_gains(i, out[i["id"]], total, queue[i["id"]]), (i, j, out)


@settings(max_examples=100, deadline=None)
@given(measured_scenarios(), st.data())
def test_job_about_to_end_is_never_grown(sc, data):
    """A running measured job whose reported progress leaves it less time than one pause is not grown."""
    total, demands = sc
    if data.draw(st.booleans()):  # jobs that would grow: linear from their current size, GPUs to spare
        demands = [job(f"k{i}", 1, 8, submitted_at=i, running=True, gpus=g, pause_s=30.0,
                       throughput=curve(0.0, 0.01, 0.0, [g]))
                   for i, g in enumerate(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=5)))]
        total = sum(d["gpus"] for d in demands) + data.draw(st.integers(0, 30))
    ending = set()
    for d in demands:
        g = d.get("gpus", 0)
        if (d.get("running") and d.get("throughput") and d.get("pause_s", 0) > 1 and g
                and d["min_gpus"] <= g <= d["max_gpus"] and data.draw(st.booleans())):
            d.update(progress=0.999, attained=g * d["pause_s"] * 1.5)  # a 2000th of half a pause left
            ending.add(d["id"])
    out = allocate(total, demands, "goodput")
    assert all(out[d["id"]] <= d["gpus"] for d in demands if d["id"] in ending)


def test_a_dip_at_the_largest_size_is_not_extrapolated():
    """Fitted with its dip, a job measured slower on 3 GPUs than on 2 is modelled as peaking at 2 and never runs
    on 4; fitted to the sizes up to its best, it grows past the dip (and once it has run past it, or below its
    best twice, every point counts)."""
    from nbrunner.core.goodput import _past_a_dip
    from nbrunner.core.throughput import points

    dip = {2: 53.0, 3: 51.8}
    n, _ = _past_a_dip(points(dip), 4)
    assert n.tolist() == [2.0]
    assert _past_a_dip(points(dip), 3)[0].tolist() == [2.0, 3.0]  # 3 is its max: nothing past the dip
    assert _past_a_dip(points({**dip, 4: 84.2}), 8)[0].tolist() == [2.0, 3.0, 4.0]
    assert _past_a_dip(points({**dip, 4: 45.0}), 8)[0].tolist() == [2.0, 3.0, 4.0]
    assert _past_a_dip(points({1: 28.0, 2: 53.0}), 8)[0].tolist() == [1.0, 2.0]
    a = job("a", 1, 4, running=True, gpus=2, pause_s=30.0, throughput=dip, attained=3600.0, progress=0.5)
    b = job("b", 1, 8, submitted_at=1, running=True, gpus=6, pause_s=5.0, throughput=curve(0.0, 0.01, 0.001, [3, 6]),
            attained=3600.0, progress=0.5)  # past its peak on 6 GPUs
    assert allocate(8, [a, b], "goodput") == {"a": 4, "b": 4}
    assert allocate(8, [dict(a, throughput={**dip, 4: 45.0}), b], "goodput")["a"] == 2  # 4 ran slower too
