"""Tests for the throughput model (nbrunner.core.throughput): fit and efficient size."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbrunner.core.goodput import _efficient_size
from nbrunner.core.throughput import ThroughputModel, fit_many, fit_throughput


def curve(a, b, c, sizes):
    return {n: 1.0 / (a + b / n + c * (n - 1)) for n in sizes}


# ---------------------------------------------------------------- model fit


def test_fit_recovers_exact_model():
    m = fit_throughput(curve(0.001, 0.01, 0.0002, [1, 2, 4, 8]))
    assert m.a == pytest.approx(0.001, rel=1e-6)
    assert m.b == pytest.approx(0.01, rel=1e-6)
    assert m.c == pytest.approx(0.0002, rel=1e-6)
    assert m.max_seen == 8
    assert m.samples_per_s(16) == pytest.approx(1 / (0.001 + 0.01 / 16 + 0.0002 * 15))


def test_fit_one_point_is_linear_scaling_from_it():
    m = fit_throughput({"4": 400.0})
    assert m.samples_per_s(4) == pytest.approx(400.0)
    assert m.samples_per_s(8) == pytest.approx(800.0)
    assert m.speedup(2) == pytest.approx(2.0)


def test_fit_two_points_and_duplicates_nonnegative():
    m = fit_throughput({1: 100.0, 2: 120.0})
    assert min(m.a, m.b, m.c) >= 0
    assert m.samples_per_s(1) == pytest.approx(100.0)
    assert m.samples_per_s(2) == pytest.approx(120.0)
    # Throughput that falls with more GPUs: sync cost, still non-negative.
    m2 = fit_throughput({1: 100.0, 2: 150.0, 4: 120.0})
    assert min(m2.a, m2.b, m2.c) >= 0
    assert m2.c > 0
    assert m2.samples_per_s(8) < m2.samples_per_s(4)


def test_fit_two_sizes_past_the_peak_keeps_the_parallel_compute():
    """Two sizes are fitted exactly by ``b/n + c(n-1)`` and by a flat ``a + c(n-1)`` alike: the fit keeps the
    parallel compute ``b`` (a job slower at 25 GPUs than at 20 still scales below 20), whatever the rounding."""
    m = fit_throughput({25: 18759.0, 20: 18800.0})
    assert m.samples_per_s(20) == pytest.approx(18800.0, rel=1e-4)
    assert m.samples_per_s(25) == pytest.approx(18759.0, rel=1e-4)
    assert m.b > 0 and m.a == 0
    assert m.speedup(20) > 10


def test_fit_empty_and_invalid():
    assert fit_throughput({}) is None
    for bad in ({0: 10.0}, {"x": 10.0}, {1: -1.0}, {1: float("nan")}, {1: True}, [1, 2]):
        with pytest.raises(ValueError):
            fit_throughput(bad)


def test_fit_many_matches_single():
    ts = [curve(0.002, 0.02, 0.0, [1, 3]), {}, curve(0.0, 0.01, 0.001, [2, 4, 6]), {5: 50.0}]
    many = fit_many(ts)
    for t, m in zip(ts, many):
        single = fit_throughput(t)
        if single is None:
            assert m is None
        else:
            assert (m.a, m.b, m.c) == pytest.approx((single.a, single.b, single.c))


def test_efficient_size_examples():
    lin = ThroughputModel(0.0, 0.01, 0.0, 4)
    assert lin.efficient_size(0.85, 16) == 16  # linear: every GPU is used fully
    # a = b / 9: S(n) / n = 10 / (n + 9) >= 0.85 while n <= 2.76.
    assert ThroughputModel(0.001, 0.009, 0.0, 4).efficient_size(0.85, 16) == 2
    # Sync cost: S rises while c n (n-1) < b, i.e. up to n = 10 for b = 0.0095, c = 0.0001.
    peaked = ThroughputModel(0.0, 0.0095, 0.0001, 4)
    assert peaked.efficient_size(0.0, 64) == 10
    assert peaked.speedup(11) < peaked.speedup(10)
    assert peaked.efficient_size(0.99, 64) == 1


@settings(max_examples=300, deadline=None)
@given(st.floats(0, 0.05), st.floats(0.0001, 0.05), st.floats(0, 0.01), st.sampled_from([0.0, 0.5, 0.7, 0.85, 0.95]),
       st.integers(1, 64))
def test_vectorised_efficient_size_matches_the_scan(a, b, c, floor, cap):
    scan = ThroughputModel(a, b, c, 1).efficient_size(floor, cap)
    fast = int(_efficient_size(np.array([[b, a, c]]), floor, np.array([cap]))[0])
    if fast != scan:  # only a tie at float precision may differ
        m = ThroughputModel(a, b, c, 1)
        k = min(fast, scan) + 1
        assert m.speedup(k) / k == pytest.approx(floor, rel=1e-9) or m.speedup(k) == pytest.approx(m.speedup(k - 1))
