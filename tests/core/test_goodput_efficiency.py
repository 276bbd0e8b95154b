"""The goodput policy with batch-size adaptation: throughput x statistical efficiency (nbrunner.core.efficiency)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from nbrunner.core.allocate import allocate
from nbrunner.core.efficiency import check_efficiency, goodput_points

from .test_allocate import admitted_of, job
from .test_goodput import measured_scenarios, queued_scenarios
from .test_throughput import curve


def noise_efficiency(phi: float, base: int, sizes) -> dict:
    """Efficiency of a job whose batch is ``base * n`` on ``n`` GPUs, at gradient noise scale ``phi``."""
    return {n: (phi + base) / (phi + base * n) for n in sizes}


def test_goodput_points_multiply_measured_and_predict_unmeasured():
    thr = {1: 100.0, 2: 200.0}  # linear
    pts = goodput_points(thr, {1: 1.0, 2: 0.5, 3: 0.4, 4: 0.25, 9: 0.1}, 2)
    assert pts[1] == pytest.approx(100.0) and pts[2] == pytest.approx(100.0)
    assert pts[3] == pytest.approx(300.0 * 0.4) and pts[4] == pytest.approx(400.0 * 0.25)
    assert 9 not in pts  # past 2 x the largest measured size
    assert goodput_points(thr, {}, 2) == {1: 100.0, 2: 200.0}


def test_an_inefficient_large_batch_takes_fewer_gpus():
    linear = curve(0.0, 0.01, 0.0, [1, 2, 4])
    noisy = job("noisy", 1, 8, throughput=linear, efficiency=noise_efficiency(4096.0, 32, range(1, 9)))
    clean = job("clean", 1, 8, submitted_at=1, throughput=linear, efficiency=noise_efficiency(16.0, 32, range(1, 9)))
    plain = allocate(8, [dict(noisy, efficiency={}), dict(clean, efficiency={})], "goodput")
    assert plain == {"noisy": 4, "clean": 4}  # same throughput curves: an even split
    out = allocate(8, [noisy, clean], "goodput")
    # a large noise scale keeps a large batch efficient: that job's GPUs still make progress
    assert out["noisy"] > out["clean"] >= 1 and sum(out.values()) <= 8


def test_efficiency_is_validated():
    for bad in ({1: 0.0}, {1: 1.5}, {0: 0.5}, {"x": 0.5}, {1: float("nan")}, {1: True}, [0.5]):
        with pytest.raises(ValueError, match="efficiency"):
            allocate(4, [job("a", throughput={1: 10.0}, efficiency=bad)], "goodput")
        with pytest.raises(ValueError, match="efficiency"):
            allocate(4, [job("a", efficiency=bad)], "goodput")  # before anything is measured too
    assert check_efficiency({"2": 0.5, 1: 1}) == {2: 0.5, 1: 1.0}
    assert allocate(4, [job("a", efficiency=[0.5])], "fairshare") == {"a": 4}  # other policies ignore it


@st.composite
def adaptive_scenarios(draw):
    """Scenarios in which some jobs adapt their batch: measured ones with an efficiency map from a noise scale,
    unmeasured ones with an empty map (they start small)."""
    total, demands = draw(st.one_of(measured_scenarios(), queued_scenarios()))
    out = []
    for d in demands:
        if d.get("throughput") and draw(st.booleans()):
            phi, base = draw(st.floats(1.0, 1e5)), draw(st.sampled_from([16, 32, 128]))
            d = dict(d, efficiency=noise_efficiency(phi, base, range(1, draw(st.integers(1, 24)) + 1)))
        elif not d.get("throughput") and draw(st.booleans()):
            d = dict(d, efficiency={})
        out.append(d)
    return total, out


@settings(max_examples=120, deadline=None)
@given(adaptive_scenarios(), st.randoms(use_true_random=False))
def test_invariants_with_efficiency(sc, rnd):
    """Totals, bounds and admission as without efficiency; the same answer in any order."""
    total, demands = sc
    out = allocate(total, demands, "goodput")
    assert sum(out.values()) <= total
    adm = {d["id"] for d in admitted_of(total, demands, "fairshare")}  # admission does not depend on it
    for d in demands:  # (a job with min 0 may be admitted with none: the efficiency moves GPUs, not admission)
        if d["id"] in adm:
            assert d["min_gpus"] <= out[d["id"]] <= d["max_gpus"]
        else:
            assert out[d["id"]] == 0
    shuffled = list(demands)
    rnd.shuffle(shuffled)
    assert allocate(total, shuffled, "goodput") == out


@settings(max_examples=100, deadline=None)
@given(measured_scenarios(), st.floats(0.05, 1.0))
def test_the_same_efficiency_at_every_size_changes_nothing(sc, e):
    """Speedups are ratios: a job whose efficiency is the same at every size is allocated as without it
    (in one queue: with later queues an adapting job's floors differ, see test_goodput.py; and without a dip
    at the largest size measured, which only a fixed-batch job's model leaves out)."""
    total, demands = sc
    for d in demands:
        t = {int(k): v for k, v in (d.get("throughput") or {}).items()}
        assume(not t or t[max(t)] >= max(t.values()))
    flat = [dict(d, efficiency={n: e for n in range(1, 25)}) if d.get("throughput") else d for d in demands]
    assert allocate(total, flat, "goodput") == allocate(total, demands, "goodput")
