"""Tests for nbrunner.core.pauses: a resized job pays its pause whatever the number of GPUs it changes by."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nbrunner.core.allocate import allocate
from nbrunner.core.pauses import concentrate_resizes

from .test_allocate import job
from .test_throughput import curve

LINEAR = (0.01, 0.0, 0.0)  # a model row (b, a, c), seconds per sample a + b/n + c(n-1): linear speedup


def _inputs(n, coef=(0.05, 0.001, 0.0005), rho=0.4, group=None):
    return dict(lo=np.ones(n, dtype=np.int64), cap=np.full(n, 8, dtype=np.int64), coef=np.tile(coef, (n, 1)),
                weight=np.ones(n), rho=np.full(n, rho), group=np.zeros(n, dtype=np.int64) if group is None else group)


def _objective(x, cur, kw):
    """Weighted utility ``-w / S(x)`` less each resized job's pause (a shrink's ``rho``, a growth's half)."""
    b, a, c = kw["coef"].T
    n = np.maximum(x, 1)
    inv = np.where(x >= 1, (a + b / n + c * (n - 1)) / (a + b), 2.0)
    g = np.maximum(cur, 1)
    at_cur = (a + b / g + c * (g - 1)) / (a + b)
    rho = kw["rho"]
    pause = np.where((cur > 0) & (x < cur), rho / (1 - rho), 0.0) + np.where((cur > 0) & (x > cur),
                                                                               rho / 2 / (1 - rho / 2), 0.0)
    return float((-kw["weight"] * inv - kw["weight"] * pause * at_cur).sum())


def test_shrinks_are_taken_from_few_jobs():
    """Three GPUs taken one from each of three jobs cost three pauses; from two of them, two."""
    cur = np.array([4, 4, 4, 4])
    x = np.array([4, 3, 3, 3])
    kw = _inputs(4)
    before = _objective(x, cur, kw)
    concentrate_resizes(x, np.arange(4), cur, **kw)
    assert x.sum() == 13
    assert ((x < cur).sum()) == 2 and sorted(x.tolist()) == [2, 3, 4, 4]
    assert _objective(x, cur, kw) > before


def test_without_a_pause_nothing_moves():
    cur = np.array([4, 4, 4, 2, 2])
    x = np.array([4, 3, 3, 3, 3])
    kw = _inputs(5, rho=0.0)
    concentrate_resizes(x, np.arange(5), cur, **kw)
    assert x.tolist() == [4, 3, 3, 3, 3]


def test_growths_go_to_few_jobs():
    """Three free GPUs given one to each of three jobs cost three pauses; given to one, one."""
    cur = np.array([2, 2, 2])
    x = np.array([3, 3, 3])
    kw = _inputs(3, coef=LINEAR)
    before = _objective(x, cur, kw)
    concentrate_resizes(x, np.arange(3), cur, **kw)
    assert x.sum() == 9 and (x > cur).sum() == 1 and x.max() == 5
    assert _objective(x, cur, kw) > before


def test_gpus_stay_in_their_queue_and_with_jobs_it_is_given():
    cur = np.array([4, 4, 4])
    x = np.array([3, 3, 4])
    kw = _inputs(3, group=np.array([0, 1, 1]))
    concentrate_resizes(x, np.arange(3), cur, **kw)
    assert x.tolist() == [3, 3, 4]  # the only other job shrunk is in another queue
    x = np.array([3, 3, 4])
    concentrate_resizes(x, np.array([0, 2]), cur, **_inputs(3))
    assert x.tolist() == [3, 3, 4]  # job 1 is not among the jobs it may move


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 8), st.sampled_from([0, 1]),
                          st.floats(0.001, 0.05), st.floats(0.0, 0.01), st.floats(0.0, 0.002),
                          st.floats(0.2, 3.0)), min_size=1, max_size=8),
       st.floats(0.0, 0.5))
def test_moves_keep_the_gpus_and_bounds_and_never_lower_the_objective(rows, rho):
    cur = np.array([r[0] for r in rows])
    x = np.array([r[1] for r in rows])
    kw = dict(lo=np.ones(len(rows), dtype=np.int64), cap=np.full(len(rows), 8, dtype=np.int64),
              coef=np.array([r[3:6] for r in rows]), weight=np.array([r[6] for r in rows]),
              rho=np.full(len(rows), rho), group=np.array([r[2] for r in rows]))
    before, resized = _objective(x, cur, kw), int(((cur > 0) & (x != cur)).sum())
    total = x.sum()
    concentrate_resizes(x, np.arange(len(rows)), cur, **kw)
    assert x.sum() == total and (x >= 1).all() and (x <= 8).all()
    assert int(((cur > 0) & (x != cur)).sum()) <= resized
    assert _objective(x, cur, kw) >= before - 1e-12
    for g in (0, 1):  # no GPU changes queue
        sel = kw["group"] == g
        assert x[sel].sum() == np.array([r[1] for r in rows])[sel].sum()


def test_a_newcomer_is_fed_by_fewer_jobs_when_a_resize_pauses_them():
    """Four equal running jobs on 16 GPUs and a newcomer with its fair share (3): with a 30 s pause two
    of them pay a pause, not three; with no pause, the three least-valued GPUs (one from each of three)."""
    t = curve(0.001, 0.05, 0.0005, [1, 2, 4])
    running = [job(f"r{i}", 1, 8, submitted_at=i, running=True, gpus=4, pause_s=30.0, throughput=t,
                   attained=3600.0, progress=0.3) for i in range(4)]
    new = job("new", 1, 8, submitted_at=10)
    out = allocate(16, running + [new], "goodput")
    assert out["new"] == 3 and sum(out.values()) == 16
    assert sorted(out[f"r{i}"] for i in range(4)) == [2, 3, 4, 4]
    out = allocate(16, [dict(d, pause_s=0.0) for d in running] + [new], "goodput")
    assert sorted(out[f"r{i}"] for i in range(4)) == [3, 3, 3, 4]
