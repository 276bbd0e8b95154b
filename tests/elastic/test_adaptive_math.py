"""Batch-size adaptation's arithmetic (nbrunner.elastic.adaptive): the batch rule, the gradient
noise estimates, AdaScale's gain and the efficiency map the allocator reads."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nbrunner.core.efficiency import check_efficiency
from nbrunner.elastic import adaptive


def test_the_batch_grows_with_the_learners_up_to_max_batch_and_the_training_set():
    assert [adaptive.batch_for(32, 96, w) for w in (1, 2, 3, 4, 8)] == [32, 64, 96, 96, 96]
    assert adaptive.batch_for(32, None, 8) == 256
    assert adaptive.batch_for(32, None, 100, n_train=1500) == 1500
    assert adaptive.batch_for(32, 96, 0) == 32


def test_the_estimates_are_unbiased():
    """Per-sample gradients with a known mean and covariance: averaged over many steps, the
    estimates of tr(Sigma) and |mu|^2 from k chunks match them."""
    rng = np.random.default_rng(0)
    mu = np.array([0.3, -0.2, 0.1, 0.0])
    sd = np.array([1.0, 0.5, 2.0, 0.1])
    tr_true, sqr_true = float((sd ** 2).sum()), float((mu ** 2).sum())
    for k, sizes in ((2, (16, 16)), (4, (9, 8, 8, 7))):
        B = sum(sizes)
        trs, sqrs = [], []
        for _ in range(4000):
            g = mu + sd * rng.standard_normal((B, 4))
            parts = np.split(g, np.cumsum(sizes)[:-1])
            local = sum(len(p) * float((p.mean(0) ** 2).sum()) for p in parts) / B
            tr, sqr = adaptive.estimate(local, float((g.mean(0) ** 2).sum()), k, B)
            trs.append(tr)
            sqrs.append(sqr)
        assert np.mean(trs) == pytest.approx(tr_true, rel=0.05)
        assert np.mean(sqrs) == pytest.approx(sqr_true, abs=0.05 * tr_true / B + 0.01)


def test_the_moving_average_starts_at_the_first_estimates():
    gns = None
    for _ in range(5):
        gns = adaptive.smoothed(gns, 40.0, 2.0)
    assert adaptive.averages(gns) == pytest.approx((40.0, 2.0))
    assert adaptive.smoothed(gns, float("nan"), 1.0) == gns  # a broken estimate is skipped
    assert adaptive.noise_scale(gns) == pytest.approx(20.0)
    assert adaptive.averages(None) is None and adaptive.gain(None, 32, 128) == 1.0


def test_gain_and_efficiency_from_the_noise_scale():
    gns = adaptive.smoothed(None, 64.0 * 2.0, 2.0)  # noise scale phi = 64 samples
    # efficiency (phi + B0) / (phi + B); the gain is B / B0 times it
    assert adaptive.efficiency(gns, 32, 96) == pytest.approx((64 + 32) / (64 + 96))
    assert adaptive.gain(gns, 32, 96) == pytest.approx(3 * (64 + 32) / (64 + 96))
    assert adaptive.gain(gns, 32, 32) == 1.0 and adaptive.efficiency(gns, 32, 32) == 1.0
    pure_noise = adaptive.smoothed(None, 10.0, -1.0)  # the true gradient is lost in the noise
    assert adaptive.gain(pure_noise, 32, 128) == pytest.approx(4.0) and adaptive.noise_scale(pure_noise) is None


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e3, 1e6), st.floats(-1e3, 1e3), st.sampled_from([8, 32, 100]), st.integers(1, 40),
       st.one_of(st.none(), st.integers(100, 5000)))
@example(2.2250738585e-313, 0.0, 32, 3, None)  # subnormal statistics: pure noise, the gain B / B0
@example(2.2250738585e-313, 0.0, 8, 3, None)
def test_the_efficiency_map_is_what_the_allocator_accepts(tr, sqr, base, most, max_batch):
    gns = adaptive.smoothed(None, tr, sqr)
    eff = adaptive.efficiency_map(gns, base, max_batch, 1500, most)
    assert list(eff) == [str(n) for n in range(1, min(most, adaptive.EFFICIENCY_SIZES) + 1)]
    assert check_efficiency(eff)  # every value in (0, 1]
    values = list(eff.values())
    assert values[0] == 1.0 and all(a >= b * (1 - 1e-12) for a, b in zip(values, values[1:]))  # larger: less efficient
    for n, e in eff.items():
        b = adaptive.batch_for(base, max_batch, int(n), 1500)
        assert 1.0 <= adaptive.gain(gns, base, b) <= b / base * (1 + 1e-12)
    assert adaptive.efficiency_map(None, base, max_batch, 1500, most) == {}
