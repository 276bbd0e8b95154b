"""Resizes concentrated on few jobs: a resized job pays its pause whatever the number of GPUs. Pure, no I/O.

Used by ``nbrunner.core.goodput`` on an allocation its marginal-gain steps made. Those steps weigh a
running job's pause spread evenly over the GPUs it holds (a concave approximation), so taking one
GPU each from three jobs looks cheaper than three from one, though it costs three pauses. Here the
pause is a fixed cost per resized job:

1. shrinks: each job shrunk below its current count (least shrunk first) is given its GPUs back
   when the least-valued GPUs of the jobs already resized (shrunk ones down to their minimum, grown
   ones down to their current count) are worth less than what it lost plus its pause;
2. growths: each job grown above its current count (least grown first) gives its extra GPUs to
   the jobs already resized or starting (grown or starting ones up to their cap, shrunk ones while
   they stay shrunk: step 1 weighed giving them all back) when these gain more from them than it
   does less its pause.

Only GPUs of jobs of the same group (a queue) move. A GPU's value is the job's weight times what it
takes off ``1 / S`` (as in the marginal-gain steps); the pause's cost is ``rho / (1 - rho)`` of the
job's utility (``rho``: a shrink's pauses over the horizon, see ``goodput._current``; a growth pays one
of the two).
"""

from __future__ import annotations

import heapq

import numpy as np

__all__ = ["concentrate_resizes"]


def concentrate_resizes(x: np.ndarray, idx: np.ndarray, cur: np.ndarray, lo: np.ndarray, cap: np.ndarray,
                        coef: np.ndarray, weight: np.ndarray, rho: np.ndarray, group: np.ndarray) -> None:
    """Concentrate the shrinks, then the growths, of the jobs ``idx`` (in place on ``x``).

    Per job (arrays over all jobs): ``cur`` its current count (0: not running), ``lo``/``cap`` the
    bounds of ``x``, ``coef`` its model's ``(b, a, c)``, ``weight`` its marginal gains' weight,
    ``rho`` its shrink's pause share, ``group`` its queue.
    """
    running = idx[cur[idx] > 0]
    if not len(running):
        return
    _shrinks(x, running, cur, lo, coef, weight, rho, group)
    _growths(x, running, idx, cur, cap, coef, weight, rho, group)


def _t(coef: np.ndarray, i: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``1 / S(n)`` of jobs ``i`` (``2`` at 0 GPUs: the first GPU's value is 1)."""
    b, a, c = coef[i, 0], coef[i, 1], coef[i, 2]
    nn = np.maximum(n, 1).astype(np.float64)
    return np.where(n >= 1, (a + b / nn + c * (nn - 1)) / (a + b), 2.0)


def _candidates(i: np.ndarray, top: np.ndarray, count: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat (job, GPU count) pairs: ``count[k]`` counts from ``top[k]`` on, by ``step`` (-1: down, 1: up)."""
    job = np.repeat(i, count)
    first = np.repeat(top, count)
    rank = np.arange(len(job)) - np.repeat(np.cumsum(count) - count, count)
    return job, first + step * rank


def _pick(job: np.ndarray, used: np.ndarray, skip: np.ndarray, j: int, need: int, first: int) -> list[int]:
    """The first ``need`` entries from ``first`` on, not used, not of ``j`` nor of a job in ``skip``."""
    picks = []
    for e in range(first, len(job)):
        i = int(job[e])
        if used[e] or i == j or skip[i]:
            continue
        picks.append(e)
        if len(picks) == need:
            break
    return picks


def _shrinks(x, idx, cur, lo, coef, weight, rho, group) -> None:
    """Step 1 (module docstring) over the running jobs ``idx``."""
    shrunk = idx[x[idx] < cur[idx]]
    if not len(shrunk):
        return
    # What a donor can give: a shrunk job down to its minimum, a grown one down to its current count.
    floor = np.where(x[idx] < cur[idx], lo[idx], cur[idx])
    count = np.minimum(np.maximum(x[idx] - floor, 0), int((cur[shrunk] - x[shrunk]).sum()))
    job, n = _candidates(idx, x[idx], count, -1)  # the donor's n-th GPU, from its top down
    value = weight[job] * (_t(coef, job, n - 1) - _t(coef, job, n))
    order = np.lexsort((-n, job, value, group[job]))  # by queue, least valued first; a donor's top GPU first
    cost = weight * rho / np.maximum(1 - rho, 1e-9)

    def worth(j: int, moved: float) -> bool:  # what the job lost plus its pause, against the GPUs' value
        t = _t(coef, np.array([j, j]), np.array([x[j], cur[j]]))
        return weight[j] * (t[0] - t[1]) + cost[j] * t[1] > moved

    _undo(x, shrunk, cur, -1, job[order], value[order], group, worth)


def _growths(x, running, idx, cur, cap, coef, weight, rho, group) -> None:
    """Step 2 (module docstring): the running jobs ``running`` grown give to the jobs ``idx``."""
    grown = running[x[running] > cur[running]]
    if not len(grown):
        return
    # Who can take: a job grown or starting up to its cap, a shrunk one while it stays shrunk.
    rec = idx[(x[idx] > 0) & (x[idx] != cur[idx])]
    ceil = np.where(x[rec] < cur[rec], cur[rec] - 1, cap[rec])
    count = np.minimum(np.maximum(ceil - x[rec], 0), int((x[grown] - cur[grown]).sum()))
    job, n = _candidates(rec, x[rec] + 1, count, 1)  # the recipient's n-th GPU, from its next up
    value = weight[job] * (_t(coef, job, n - 1) - _t(coef, job, n))
    order = np.lexsort((n, job, -value, group[job]))  # by queue, most valued first; a recipient's next GPU first
    r = rho / 2  # a growth pays one pause, a shrink two
    cost = weight * r / np.maximum(1 - r, 1e-9)

    def worth(j: int, moved: float) -> bool:  # what the others gain, against the job's gain less its pause
        t = _t(coef, np.array([j, j]), np.array([cur[j], x[j]]))
        return moved > weight[j] * (t[0] - t[1]) - cost[j] * t[0]

    _undo(x, grown, cur, 1, job[order], value[order], group, worth)


def _undo(x: np.ndarray, resized: np.ndarray, cur: np.ndarray, sign: int, job: np.ndarray, value: np.ndarray,
          group: np.ndarray, worth) -> None:
    """Undo the resizes of ``resized`` (``sign`` -1: shrinks, 1: growths), least resized first, each with the
    first entries of ``job``/``value`` (sorted by queue, then in the order they are to be used) of its queue
    when ``worth(j, their value)``: GPUs move from (shrinks) or to (growths) those jobs. A job that moved GPUs
    and is still resized is weighed again with its new difference."""
    q = group[job]
    done = np.zeros(len(x), dtype=bool)
    used = np.zeros(len(job), dtype=bool)
    todo = [(int(sign * (x[j] - cur[j])), j) for j in resized.tolist()]
    heapq.heapify(todo)
    while todo:
        diff, j = heapq.heappop(todo)
        if done[j] or diff != sign * (x[j] - cur[j]):
            continue  # done, or queued again with its new difference
        lo_e, hi_e = np.searchsorted(q, group[j], "left"), np.searchsorted(q, group[j], "right")
        picks = _pick(job[:hi_e], used, done, j, diff, int(lo_e))
        if len(picks) < diff or not worth(j, float(value[picks].sum())):
            continue
        used[picks] = True
        np.add.at(x, job[picks], sign)
        x[j] = cur[j]
        done[j] = True
        for i in set(job[picks].tolist()):  # a job that moved GPUs and is still resized: weighed again
            if cur[i] > 0 and sign * (x[i] - cur[i]) > 0:
                heapq.heappush(todo, (int(sign * (x[i] - cur[i])), i))
