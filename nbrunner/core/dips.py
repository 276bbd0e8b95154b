"""Dips: sizes a job ran no faster than on fewer GPUs, where a resize should not take it. Pure, no I/O.

A job's model (``nbrunner.core.throughput``: seconds per sample ``a + b / n + c (n - 1)``) is
smooth; what the job measures need not be. Past a host's GPUs its learners talk over the
network, and a batch-adapting job's best batch can need another micro-step: such a job runs
slower on 5 to 7 GPUs than it did on 4, and faster again on 8 or more. Fitted through the dip,
the model still counts the 5th GPU as a gain, so the marginal-gain steps resize jobs into
dips, where they do less with more GPUs (and pay a pause for it).

Used by ``nbrunner.core.goodput`` once its allocation is made: a job that would be started or
resized to a size it ran (its own runs and its kind's) no faster than a smaller size it ran
gets the smallest such size instead; the GPUs this frees go to the other jobs, which are
checked the same way. A job that stays at its current count in a dip is moved out of it only
when what it gains there over the time it has left pays for the pause of the move (``patience``):
moved at every small gain, jobs whose measured goodput at a size moves with their epoch churned
on the tuning set; left there whatever the gain, a job can run hours slower than it would on
fewer GPUs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["fewer_as_fast", "leave_dips"]


def fewer_as_fast(x: np.ndarray, job: np.ndarray, sizes: np.ndarray, secs: np.ndarray, least: np.ndarray
                  ) -> np.ndarray:
    """Per job, the fewest GPUs (at least its ``least``) it ran at least as fast as on ``x`` GPUs; ``x`` itself if
    it did not run ``x`` or ran every smaller size slower. ``job``/``sizes``/``secs``: one entry per size a job
    ran, with its seconds per sample there."""
    at = _secs_at(x, job, sizes, secs, -np.inf)  # -inf where x was not run: no size is as fast
    ok = (sizes >= least[job]) & (sizes < x[job]) & (secs <= at[job])
    fewer = x.copy()
    np.minimum.at(fewer, job[ok], sizes[ok])
    return fewer


def _secs_at(n: np.ndarray, job: np.ndarray, sizes: np.ndarray, secs: np.ndarray, missing: float = np.inf
             ) -> np.ndarray:
    """Per job, its seconds per sample on ``n`` GPUs (``missing`` if it did not run ``n``)."""
    out = np.full(len(n), missing)
    hit = sizes == n[job]
    out[job[hit]] = secs[hit]
    return out


def leave_dips(x: np.ndarray, usable: int, idx: np.ndarray, runs: list[tuple[np.ndarray, np.ndarray]],
               cur: np.ndarray, least: np.ndarray, regive: Callable[[int, np.ndarray], np.ndarray],
               patience: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
    """Out of their dips (in place on ``x``), the jobs ``idx`` started or resized into one (module docstring).

    ``runs[k]``: job ``idx[k]``'s sizes run and its seconds per sample there; ``cur``/``least``: each job's
    current count and minimum; ``usable``: the GPUs ``x`` may use in all; ``regive(free, jobs)``: the GPUs
    (of ``free``) to add to each of ``jobs``; ``patience(jobs)``: for each of ``jobs`` left at its current
    count in a dip, how many times faster it must run on the fewer GPUs to be moved (default: never).
    A job moved out of a dip keeps its new size; the others are checked again after each hand-out, so no
    job is left resized into a dip.
    """
    if not len(idx):
        return
    job = np.repeat(idx, [len(n) for n, _ in runs])
    sizes = np.concatenate([n for n, _ in runs]).astype(np.int64)
    secs = np.concatenate([y for _, y in runs])
    moved = np.zeros(len(x), dtype=bool)
    worth = np.zeros(len(x), dtype=bool)  # jobs at their current count whose dip pays for the move
    fewer = fewer_as_fast(x, job, sizes, secs, least)
    if patience is not None:
        at_cur = np.flatnonzero((fewer < x) & (x == cur))
        if len(at_cur):
            ratio = _secs_at(x, job, sizes, secs)[at_cur] / _secs_at(fewer, job, sizes, secs)[at_cur]
            worth[at_cur] = ratio > patience(at_cur)
    while True:  # each round moves a job for good: at most len(idx) rounds
        out = (fewer < x) & ((x != cur) | worth) & ~moved
        if not out.any():
            return
        x[out] = fewer[out]
        moved |= out
        free, others = usable - int(x.sum()), idx[~moved[idx]]
        if free <= 0 or not len(others):
            return
        x[others] += regive(free, others)
        fewer = fewer_as_fast(x, job, sizes, secs, least)
