"""The ``goodput`` allocation policy: short work first, GPUs where they speed jobs up. Pure, no I/O.

Called by ``nbrunner.core.allocate.allocate`` (through
``nbrunner.core.demands.split_admitted``, for the whole cluster or for each user's
jobs under accounts) after admission, which is exactly fairshare's (running jobs
first, then by submission; no backfill), so every admitted job gets at least its
``min_gpus``. The GPUs above the minimums are handed out as follows (``S(n)`` is a
job's speedup on ``n`` GPUs over one, from its measured throughput, see
``nbrunner.core.throughput``).

1. Short work first, as Tiresias's discretised two-dimensional least attained service. A demand may carry
   ``"attained"``: the GPU-seconds it has received so far (default 0). :data:`QUEUE_THRESHOLDS` splits attained
   service into queues (queue 0 below the first threshold, queue k from threshold k-1 on): with the one threshold of
   16 GPU-hours (the Tiresias baseline's), new and short jobs are in queue 0, long ones in queue 1. Queues are
   served in turn, lowest first: a queue's jobs are served (below) before any GPU above a minimum goes to a later
   queue, so a job with less attained service is not served after one with more when the two are in different
   queues. Within a queue, jobs are not ranked by attained service (no thrashing between jobs taking turns). A
   measured batch-adapting job (step 5) that reports its ``progress`` is queued by the lesser of its attained service
   and its estimated remaining service ``R`` (below): a long job near its end is short work again, not left with what
   new jobs leave for the hours it still needs (a fixed-batch job so queued grows past its efficient size in queue 0:
   on the test draws the makespan grew more than average JCT fell).
2. Elasticity decides how many GPUs each job of a queue gets:

   * a job without measurements gets its fairshare share (weighted max-min
     between its min and max, ``nbrunner.core.fairsplit``) of the GPUs left for
     its queue; what the queue's measured jobs leave tops these shares up
     (fairshare again) before any of it goes to a later queue;
   * in queue 0, measured jobs get the GPUs one at a time by the largest
     weighted marginal gain ``priority * r * (1/S(x) - 1/S(x+1))`` (Pollux's
     fairness-weighted speedup, a power mean with p = -1: concave here, so the
     greedy is optimal; ties, equal up to rounding (:data:`TIE_RTOL`), to the
     earlier job), where ``r`` is ``R ** -0.5`` (:data:`REMAINING_EXPONENT`) over its mean among the queue's
     measured jobs and ``R`` the job's estimated remaining service, ``attained *
     (1 - progress) / progress`` (from the ``progress`` it reports; the median of the
     others' without it): under congestion the jobs nearer their end get more of the
     GPUs, a soft shortest-remaining-first that still serves every job. Never past their max, their
     peak or ``2 x`` their largest measured size (:data:`EXPLORE_FACTOR`; or
     their current size, if larger), so a job measured at one size (modelled as
     scaling linearly from there) grows step by step and is measured on the way (a
     fixed-batch job whose largest measured size alone ran slower than a smaller one, as
     when its batch needs two micro-steps there, is modelled from the sizes up to its
     best until it has run past that dip: fitted with it, it would never grow past it);
     and, while a later queue has jobs, only while each GPU adds at least
     :data:`SHORT_EFFICIENCY_FLOOR` (0.2) to the job's speedup (``S(n) - S(n-1)``):
     a short job does not hold GPUs it barely uses while long jobs wait (with
     batch-size adaptation a job's goodput keeps rising a little up to its max,
     and queue 0 took nearly the whole cluster);
   * in later queues (long jobs, which share the cluster for hours), the first
     measured job (admission order, as Tiresias serves a queue) is served first,
     up to its *efficient size*: the largest ``n`` within the same bounds up to
     which its speedup still rises and ``S(n) / n`` stays at or above
     :data:`EFFICIENCY_FLOOR` (0.85); the others share what is left by the
     marginal gain above (without ``r``), each up to its efficient size. The
     first one finishes sooner than if all shared evenly, and the ones behind it
     do not wait for it in turn (the last one sets the makespan); the floor keeps
     each from taking GPUs it would use poorly.

3. GPUs left once every queue is served go, by the same marginal gain, to the later queues' measured jobs past their
   efficient size and to queue 0's held below what they gain from, within the bounds above; GPUs no job gains from
   stay free.
4. Restart-aware: a demand may carry ``"gpus"`` (its current GPU count, default 0), ``"pause_s"`` (measured pause of
   one resize, seconds, default 0) and ``"horizon_s"`` (default :data:`HORIZON_S`, 150 s = two and a half 60 s
   scheduling intervals). In the marginal-gain steps, a running measured job's GPUs up to its current count are
   worth ``rho / (1 - rho)`` of its utility more (``rho = SHRINK_PAUSES x pause / horizon``, spread evenly over
   them), the utility it loses to the pauses if it is resized: a job shrunk now pays a pause now and another when it
   grows back as the GPUs return (:data:`SHRINK_PAUSES`), so small reshuffles do not happen. That spread makes one
   GPU from each of three jobs look cheaper than three from one, though it costs three pauses; so queue 0's
   fixed-batch jobs' resizes are then concentrated on few jobs (``nbrunner.core.pauses``: a job shrunk or grown gets
   its GPUs back, or gives its extra ones, when the jobs already resized lose or gain less than its pause and the
   GPUs are worth; later queues serve their first job first, which these marginal values would undo; batch-adapting
   jobs are left as they are: worse on the tuning set). At the end, a job whose new count ``x`` differs from ``g =
   gpus`` (both within ``[min, max]``) only grows if ``(H - pause) * X(x) > H * X(g)``, i.e. the samples it gains
   over the horizon exceed what the pause costs. A demand may carry ``"hold_s"``: how long the caller expects the
   job's next allocation to last, measured (:func:`expected_hold_s`: until the next arrival at the cluster's recent
   arrival rate, and no longer than the job has held each of its allocations so far); a growth of a job with a fixed
   batch (no ``efficiency``) is weighed over the larger of ``hold_s`` and ``horizon_s`` (a medium job that has held
   3 GPUs for an hour of a quiet cluster grows to the 4th, which pays its pause in minutes, not in 150 s; a
   batch-adapting job's growth keeps ``horizon_s``: weighed over longer times, such jobs resized more and finished
   later on the tuning set). GPUs of growths that are not made undo shrinks that fed them (in admission order, while
   they last), and what is left of them goes, by the same marginal gain and within the same bounds, to the other
   measured jobs (each such growth checked again), so that a GPU is not left idle while a job gains from it
   (work-conserving). A demand may also carry ``"progress"`` (the share of its work done, ``0..1`` or None, as the
   job reports it): a running job's horizon ``H`` is then at most the time it has left at its pace, ``(attained -
   pause * g) / g * (1 - progress) / progress``: a job about to end is neither grown nor, through the pause's weight
   above, shrunk for a gain it would not live to collect. When every admitted job is in a later queue (only long
   jobs: no short one running or waiting), GPUs still free after all this go, by the same marginal gain and within
   the same bounds, to the measured jobs, each such growth weighed over the whole time the job has left (from its
   ``progress``; the horizon above without it) rather than :data:`HORIZON_S`: no short job is there to take them
   back, so such an allocation lasts until the next arrival, and a long job finishing alone would otherwise leave
   GPUs idle for hours for want of a gain that pays its pause within 150 s.

5. Batch-size adaptation: a demand may carry ``"efficiency"`` (``{gpus: statistical
   efficiency}``, values in ``(0, 1]``): the job scales its batch with its GPUs, so what it
   gains from ``n`` GPUs is its goodput, throughput x statistical efficiency. The model of
   every step above is then fitted to its goodput points (``nbrunner.core.efficiency``)
   instead of its raw throughput: the speedup it counts is progress, not samples. Such a job
   also grows further: in queue 0, while later queues wait, while each GPU adds at least
   :data:`SHORT_ADAPTIVE_FLOOR` (0.1, not 0.2) to its goodput speedup; in later queues, first
   come, first served, up to the larger of its efficient size and the largest ``n`` whose every
   GPU past its minimum adds at least :data:`LONG_ADAPTIVE_FLOOR` (0.45). Its goodput keeps
   rising with GPUs longer than a fixed batch's throughput does (its batch grows with them).
   Before it has measured anything (``efficiency`` empty) it starts at :data:`ADAPTIVE_START`
   (1) GPU, as Pollux starts a job and lets it grow to twice what it has measured; it gets
   more only of the GPUs left once every other job is served. (The simulator's jobs say they
   adapt from their submission; a live job's demand carries ``efficiency`` from its first
   report, so a live one starts at its fairshare share.) A demand without ``efficiency`` is
   served exactly as above.

6. Dips (``nbrunner.core.dips``): last, a job the steps above would start or resize to a size it
   ran (its own runs and its kind's) no faster than a smaller size it ran (at least ``min``) gets the
   fewest GPUs it ran at least as fast; the GPUs this frees go to the other measured jobs by the
   marginal gain above, checked the same way. Across hosts, or where a batch-adapting job's batch
   needs another micro-step, a job runs slower on 5-7 GPUs than on 4, which the smooth model fitted
   through those points does not show. A job the steps above leave at its current count in a dip
   moves out of it only if it runs there enough faster to pay the pause over the time it has left
   (``(H - pause) * X(fewer) > H * X(current)``, ``H`` as in step 4 with its whole time left).

Without ``attained`` every job is in queue 0 and the policy is the plain goodput
split of measured speedups; without measurements either, it equals fairshare.

Conventions: ``throughput`` is ``{gpus: samples_per_s}`` (see
``nbrunner.core.throughput``; the service and the simulator add, once a job has measured one
size, the sizes earlier runs of its kind measured: ``nbrunner.core.kinds``), ``efficiency``
likewise keyed with values in ``(0, 1]``;
``thresholds`` (a call's own queue thresholds, default :data:`QUEUE_THRESHOLDS`) increasing
finite numbers > 0; ``attained``, ``pause_s``, ``horizon_s`` and ``hold_s`` are
finite numbers >= 0 (``pause_s`` may be None: not measured); ``progress`` a number in
``[0, 1]`` or None; ``gpus`` an integer >= 0. Anything else raises ``ValueError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .dips import leave_dips
from .efficiency import check_efficiency, goodput_points
from .fairsplit import fair_split
from .pauses import concentrate_resizes
from .throughput import fit_arrays, points

__all__ = ["goodput_allocate", "attained_array", "queue_of", "QUEUE_THRESHOLDS", "EFFICIENCY_FLOOR",
           "SHORT_EFFICIENCY_FLOOR", "SHORT_ADAPTIVE_FLOOR", "LONG_ADAPTIVE_FLOOR", "HORIZON_S", "EXPLORE_FACTOR",
           "ADAPTIVE_START", "SHRINK_PAUSES", "REMAINING_EXPONENT", "HOLD_WINDOW_S", "expected_hold_s"]

QUEUE_THRESHOLDS = (16 * 3600.0,)
"""Attained service (GPU-seconds) at which a job moves to the next queue: 16 GPU-hours."""
EFFICIENCY_FLOOR = 0.85
"""Least speedup per GPU, ``S(n) / n``, of a long job's efficient size (queues after the first)."""
SHORT_EFFICIENCY_FLOOR = 0.2
"""Least speedup a GPU adds, ``S(n) - S(n-1)``, to a queue-0 job before later queues are served."""
SHORT_ADAPTIVE_FLOOR = 0.1
""":data:`SHORT_EFFICIENCY_FLOOR` of a batch-adapting job (a demand with ``efficiency``), on its goodput speedup."""
LONG_ADAPTIVE_FLOOR = 0.45
"""Least goodput speedup a GPU adds to a batch-adapting long job past its efficient size (queues after the first)."""
HORIZON_S = 150.0
"""Seconds a new allocation is expected to last (two and a half 60 s scheduling intervals): what a resize's pause
is weighed against, at least."""
REMAINING_EXPONENT = 0.5
"""Queue 0's marginal gains are weighted by ``R ** -REMAINING_EXPONENT`` (``R``: a job's estimated remaining
service): a soft shortest-remaining-first."""
HOLD_WINDOW_S = 3600.0
"""Seconds of recent arrivals :func:`expected_hold_s` reads the cluster's arrival rate from."""
ADAPTIVE_START = 1
"""GPUs a batch-adapting job gets before it has measured anything (more only of GPUs no other job gains from)."""
EXPLORE_FACTOR = 2
SHRINK_PAUSES = 2
"""Pauses a shrink of a running job costs it, as weighed in the marginal gains: its own, and the one of its growth
back when the GPUs return."""
TIE_RTOL = 1e-9
"""Marginal gains this close (relative) are a tie, given to the earlier job: float noise decides nothing."""
_REAL = (int, float, np.integer, np.floating)


def queue_of(attained, thresholds: tuple[float, ...] | None = None) -> np.ndarray:
    """Queue index of each attained service (GPU-seconds): 0 below the first threshold
    (``thresholds``, default :data:`QUEUE_THRESHOLDS`)."""
    limits = np.asarray(QUEUE_THRESHOLDS if thresholds is None else thresholds, dtype=np.float64)
    if len(limits) and not (np.isfinite(limits).all() and (limits > 0).all() and (np.diff(limits) > 0).all()):
        raise ValueError(f"queue thresholds must be increasing finite numbers > 0, got {tuple(limits.tolist())}")
    return np.searchsorted(limits, np.asarray(attained, dtype=np.float64), side="right")


def attained_array(demands: list[dict], ids: list) -> np.ndarray:
    """Validated ``attained`` of every demand (GPU-seconds, default 0)."""
    values = [d.get("attained", 0) for d in demands]
    if not all(issubclass(t, _REAL) and not issubclass(t, bool) for t in set(map(type, values))):
        i = next(i for i, v in enumerate(values) if isinstance(v, bool) or not isinstance(v, _REAL))
        raise ValueError(f"demand {ids[i]!r}: attained must be a number (GPU-seconds), got {values[i]!r}")
    arr = np.array(values, dtype=np.float64)
    bad = ~(np.isfinite(arr) & (arr >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"demand {ids[i]!r}: attained must be a finite number >= 0, got {values[i]!r}")
    return arr


def goodput_allocate(total: int, m: np.ndarray, M: np.ndarray, w: np.ndarray, w_is_int: bool,
                     adm_demands: list[dict], adm_ids: list, thresholds: tuple[float, ...] | None = None
                     ) -> np.ndarray:
    """GPU counts of the admitted jobs (in admission order).

    ``m``/``M``/``w`` are the admitted jobs' min, max (capped at total) and
    priorities in that order (``w_is_int``: all priorities whole numbers);
    ``thresholds``: the queues' (default :data:`QUEUE_THRESHOLDS`).
    """
    attained = attained_array(adm_demands, adm_ids)
    thr = [d.get("throughput") or {} for d in adm_demands]
    adapting = [i for i, d in enumerate(adm_demands) if d.get("efficiency") is not None]
    for i in adapting:  # fitted to their goodput (throughput x efficiency)
        thr[i] = _goodput_of(adm_demands[i], adm_ids[i])
    adapts = np.isin(np.arange(len(m)), adapting)
    measured = np.fromiter((len(t) > 0 for t in thr), dtype=bool, count=len(thr))
    midx = np.flatnonzero(measured)
    for i in midx.tolist():
        _check_restart_fields(adm_demands[i], adm_ids[i])
    coef = np.zeros((len(m), 3))  # (b, a, c) per job; rows of unmeasured jobs stay 0
    cap = M.astype(np.int64).copy()
    cur = np.zeros(len(m), dtype=np.int64)
    rho = np.zeros(len(m))
    pts = [points(thr[i], adm_ids[i]) for i in midx]
    if len(midx):
        coef[midx], max_seen = fit_arrays([p if adapts[i] else _past_a_dip(p, M[i]) for p, i in zip(pts, midx)])
        if adapting:  # their largest size run, not the largest of their goodput points
            row = {i: r for r, i in enumerate(midx.tolist())}
            for i in adapting:
                if i in row:
                    max_seen[row[i]] = max(int(k) for k in adm_demands[i]["throughput"])
        held = np.fromiter((d.get("gpus", 0) if d.get("running", False) else 0 for d in (adm_demands[i] for i in midx)),
                           dtype=np.int64, count=len(midx))
        # Most each measured job may reach: 2x its largest measured size, or what it holds now (measured soon).
        cap[midx] = np.minimum(M[midx], np.maximum(np.maximum(EXPLORE_FACTOR * max_seen, held), m[midx]))
        cur[midx], rho[midx] = _current(adm_demands, midx, m[midx], cap[midx])
    x = m.astype(np.int64).copy()
    start = np.where(adapts & ~measured, np.clip(ADAPTIVE_START, m, M), M).astype(np.int64)  # a first size to measure
    usable = min(total, int(M.sum()))
    avail = usable - int(m.sum())
    remaining = _remaining_service(adm_demands, midx, attained)
    queue = queue_of(np.where(adapts, np.fmin(attained, remaining), attained), thresholds)
    queues = np.unique(queue).tolist()
    held_back = np.zeros(len(m), dtype=bool)  # queue-0 jobs kept below what they gain from while long jobs wait
    weff = w.astype(np.float64).copy()
    for q in queues:
        if avail <= 0:
            break
        sel = np.flatnonzero(queue == q)
        un, ms = sel[~measured[sel]], sel[measured[sel]]
        if len(un):  # fairshare shares of the queue's GPUs, up to a first size to measure
            fair = fair_split(avail + int(m[sel].sum()), m[sel], start[sel], w[sel], w_is_int)[~measured[sel]]
            avail -= int(fair.sum() - x[un].sum())
            x[un] = fair
        if len(ms) and avail > 0:
            if q == 0:  # by marginal gain; while later queues wait, only GPUs the job uses well
                floor = np.where(adapts[ms], SHORT_ADAPTIVE_FLOOR, SHORT_EFFICIENCY_FLOOR)
                lim = cap[ms] if q == queues[-1] else _useful_size(coef[ms], floor, x[ms], cap[ms])
                held_back[ms] = lim < cap[ms]
                weff[ms] = w[ms] * _remaining_weight(remaining[ms])
                add = _greedy(avail, x[ms], lim, coef[ms], weff[ms], cur[ms], rho[ms])
            else:  # the first up to its efficient size (adapting: its useful size), the others by marginal gain
                add = _serve_long(avail, ms, x, coef, cap, adapts, w, cur, rho)
            x[ms] += add
            avail -= int(add.sum())
        if len(un) and avail > 0 and q != queues[-1]:  # before a later queue
            avail = _top_up(avail, x, un, start, w, w_is_int)
    rest = midx[(queue[midx] > 0) | held_back[midx]]  # the other measured jobs had every GPU they gain from
    if len(rest) and avail > 0:
        add = _greedy(avail, x[rest], cap[rest], coef[rest], w[rest], cur[rest], rho[rest])
        x[rest] += add
        avail -= int(add.sum())
    _top_up(avail, x, np.flatnonzero(~measured & adapts), M, w, w_is_int)  # GPUs no other job gains from
    only_long = bool(len(queue)) and bool((queue > 0).all())
    fixed = midx[~adapts[midx]]  # not later queues (their first job first), nor batch-adapting jobs (worse on tuning)
    concentrate_resizes(x, fixed[queue[fixed] == 0], cur, m, cap, coef, weff, rho, queue)
    _settle(x, usable, m, M, midx, coef, cap, w, cur, rho, adm_demands, only_long)
    leave_dips(x, usable, midx, _runs(pts, midx, adm_demands, adapts), cur, m,
               lambda free, o: _greedy(free, x[o], cap[o], coef[o], w[o], cur[o], rho[o]), _patience(adm_demands, cur))
    return x


def _patience(adm_demands: list[dict], cur: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """For jobs (indices) running on ``cur`` GPUs: how many times faster each must run on fewer GPUs for a move to
    pay its pause over the time it has left (``H / (H - pause)``; its horizon without ``progress``)."""
    def of(jobs: np.ndarray) -> np.ndarray:
        out = np.full(len(jobs), np.inf)
        for r, i in enumerate(jobs.tolist()):
            d = adm_demands[i]
            H, pause = _horizon(d, int(cur[i]), time_left=True), float(d.get("pause_s", 0.0) or 0.0)
            if H > pause:
                out[r] = H / (H - pause)
        return out
    return of


def _runs(pts: list, midx: np.ndarray, adm_demands: list[dict], adapts: np.ndarray) -> list:
    """Each measured job's points (sizes, seconds per sample) at the sizes it ran: a batch-adapting job's goodput
    points also hold sizes its efficiency alone was reported at (predicted), left out here."""
    out = []
    for (n, y), i in zip(pts, midx.tolist()):
        thr = adm_demands[i]["throughput"] if adapts[i] else None
        if thr is not None and len(thr) < len(n):  # its goodput points also hold sizes it only predicted
            ran = np.isin(n, points(thr)[0])
            n, y = n[ran], y[ran]
        out.append((n, y))
    return out


def _past_a_dip(pts: tuple[np.ndarray, np.ndarray], most: int) -> tuple[np.ndarray, np.ndarray]:
    """A fixed-batch job's points (sizes, seconds per sample) to fit: without its largest size if that one alone
    ran slower than a smaller one and ``most`` (its max) is larger: the job is modelled from the sizes up to its
    best, so it tries the next size past the dip; once it has run past it (or there is a second dip), every point
    counts."""
    n, y = pts
    if len(n) < 2 or n[-1] >= most:
        return pts
    secs = y.tolist()  # seconds per sample, by size; a few points: plain floats are faster than arrays here
    best = secs[0]
    for s in secs[1:-1]:
        if s > best:
            return pts  # a dip below the largest size: fitted as measured
        best = s
    return (n[:-1], y[:-1]) if secs[-1] > best else pts


def _serve_long(avail: int, ms: np.ndarray, x: np.ndarray, coef: np.ndarray, cap: np.ndarray,
                adapts: np.ndarray, w: np.ndarray, cur: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Extra GPUs of a later queue's measured jobs ``ms`` out of ``avail``: the first up to its efficient size
    (a batch-adapting one: the larger of that and its useful size), the others by marginal gain up to theirs."""
    size = _efficient_size(coef[ms], EFFICIENCY_FLOOR, cap[ms])
    ad = adapts[ms]
    if ad.any():
        useful = _useful_size(coef[ms[ad]], np.full(int(ad.sum()), LONG_ADAPTIVE_FLOOR), x[ms[ad]], cap[ms[ad]])
        size[ad] = np.maximum(size[ad], useful)
    ext = np.maximum(size - x[ms], 0)
    add = np.zeros(len(ms), dtype=np.int64)
    add[0] = min(int(ext[0]), avail)  # the first long job, first come, first served
    o = ms[1:]
    add[1:] = _greedy(avail - int(add[0]), x[o], x[o] + ext[1:], coef[o], w[o], cur[o], rho[o])
    return add


def _remaining_service(adm_demands: list[dict], jobs: np.ndarray, attained: np.ndarray) -> np.ndarray:
    """Per admitted job: its estimated remaining service ``attained (1 - progress) / progress`` (GPU-seconds) if it
    is one of ``jobs`` (with validated fields); NaN without ``progress`` > 0 or service."""
    R = np.full(len(attained), np.nan)
    for i in jobs.tolist():
        p = adm_demands[i].get("progress")
        if p is not None and 0 < p <= 1 and attained[i] > 0:
            R[i] = attained[i] * (1 - p) / p
    return R


def _remaining_weight(remaining: np.ndarray) -> np.ndarray:
    """Per job: ``R ** -REMAINING_EXPONENT`` over its mean, ``R`` its estimated remaining service
    (:func:`_remaining_service`; the median of the others' where unknown)."""
    R = remaining.copy()
    known = R[np.isfinite(R)]
    R = np.where(np.isfinite(R), R, float(np.median(known)) if len(known) else 1.0)
    R = np.maximum(R, 1e-3 * max(float(R.mean()), 1e-9)) ** -REMAINING_EXPONENT  # a job about to end: bounded
    return R / R.mean()


def _settle(x: np.ndarray, usable: int, m: np.ndarray, M: np.ndarray, midx: np.ndarray, coef: np.ndarray,
            cap: np.ndarray, w: np.ndarray, cur: np.ndarray, rho: np.ndarray, adm_demands: list[dict],
            only_long: bool) -> None:
    """Restart-aware (in place): growths not worth their pause undone, their GPUs to shrinks, then, by marginal
    gain, to the measured jobs whose growth stood (each such growth checked again); with ``only_long`` (every
    admitted job in a later queue), GPUs still free go to the measured jobs, growths weighed over their time left."""
    pinned = _restart_aware(x, m, M, midx, coef[midx], adm_demands)
    free = usable - int(x.sum())
    other = midx[~np.isin(midx, pinned)]
    if free > 0 and len(other):
        x[other] += _greedy(free, x[other], cap[other], coef[other], w[other], cur[other], rho[other])
        _restart_aware(x, m, M, midx, coef[midx], adm_demands)
    free = usable - int(x.sum())
    if only_long and free > 0 and len(midx):
        x[midx] += _greedy(free, x[midx], cap[midx], coef[midx], w[midx], cur[midx], rho[midx])
        _restart_aware(x, m, M, midx, coef[midx], adm_demands, time_left=True)


def _top_up(avail: int, x: np.ndarray, idx: np.ndarray, upto: np.ndarray, w: np.ndarray, w_is_int: bool) -> int:
    """Raise ``x[idx]`` toward ``upto[idx]`` by fairshare out of ``avail`` GPUs (in place); the GPUs left."""
    if not len(idx) or avail <= 0 or not (x[idx] < upto[idx]).any():
        return avail
    top = fair_split(avail + int(x[idx].sum()), x[idx], upto[idx], w[idx], w_is_int)
    avail -= int(top.sum() - x[idx].sum())
    x[idx] = top
    return avail


def _goodput_of(d: dict, ident: Any) -> dict:
    """The points a batch-adapting job's model is fitted to: its goodput (validated)."""
    thr, eff = d.get("throughput") or {}, d["efficiency"]
    if thr:
        return goodput_points(thr, eff, EXPLORE_FACTOR, ident)
    check_efficiency(eff, ident)  # validated even before the job measured anything
    return thr


def _efficient_size(coef: np.ndarray, floor: float, cap: np.ndarray) -> np.ndarray:
    """Per job (rows ``(b, a, c)``): the largest ``n`` (1..cap) with ``S`` still rising and ``S(n)/n >= floor``.

    With ``y(n) = a + b/n + c(n-1)``: ``S(n)/n = y(1) / (n y(n))`` falls with ``n``, and
    ``S`` rises from ``n-1`` to ``n`` while ``c n (n-1) < b``; both bounds are roots of
    quadratics, checked against their integer neighbours for rounding.
    """
    b, a, c = coef[:, 0], coef[:, 1], coef[:, 2]
    big = cap.astype(np.float64) + 1.0
    with np.errstate(all="ignore"):  # floor 0 (no floor) or c near 0: infinite bounds, clipped below
        limit = (a + b) / floor  # n y(n) = c n^2 + (a - c) n + b must stay <= limit
        K = limit - b
        disc = np.sqrt((a - c) ** 2 + 4 * c * K)
        # The larger root, in the form without cancellation for each sign of a - c.
        n_eff = np.where(a >= c, 2 * K / ((a - c) + disc), (c - a + disc) / (2 * c))
        n_eff = np.where(np.isnan(n_eff), big, n_eff)
        n_rise = np.where(c > 0, (1 + np.sqrt(1 + 4 * b / np.where(c > 0, c, 1.0))) / 2, big)
    n = np.clip(np.floor(np.minimum(np.minimum(n_eff, n_rise), big)), 1, big)

    def ok(k: np.ndarray) -> np.ndarray:
        efficient = c * k * k + (a - c) * k + b <= limit * (1 + 1e-12)
        rising = (k <= 1) | (c * k * (k - 1) < b)
        return efficient & rising

    n = np.where(ok(n + 1), n + 1, n)
    n = np.where(ok(n) | (n <= 1), n, n - 1)
    return np.minimum(n, cap).astype(np.int64)


def _useful_size(coef: np.ndarray, floor: np.ndarray, base: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Per job: the largest ``n`` (``base``..``cap``) whose every GPU past ``base`` adds ``S(k) - S(k-1) >= floor``
    (the job's)."""
    ext = np.maximum(cap - base, 0)
    if ext.sum() == 0:
        return base.copy()
    b, a, c = coef[:, 0], coef[:, 1], coef[:, 2]
    job, start, k = _flat(ext)
    hi = (base[job] + k + 1).astype(np.float64)  # the count the job's k-th extra GPU takes it to
    y = lambda n: a[job] + b[job] / n + c[job] * (n - 1)  # noqa: E731
    lo = np.maximum(hi - 1, 1)
    adds = np.where(hi <= 1, 1.0, (a + b)[job] * (1 / y(hi) - 1 / y(lo)))  # S(hi) - S(hi - 1)
    good = _segment_cummin((adds >= floor[job]).astype(np.float64), start, ext) > 0
    return base + np.bincount(job[good], minlength=len(base)).astype(np.int64)


def _greedy(pool: int, base: np.ndarray, cap: np.ndarray, coef: np.ndarray, w: np.ndarray, cur: np.ndarray,
            rho: np.ndarray) -> np.ndarray:
    """Extra GPUs (above ``base``, up to ``cap``): the ``pool`` largest weighted marginal gains."""
    ext = np.maximum(cap - base, 0)
    if pool <= 0 or ext.sum() == 0:
        return np.zeros(len(base), dtype=np.int64)
    b, a, c = coef[:, 0], coef[:, 1], coef[:, 2]
    # Flat candidates: job j's k-th extra GPU takes it from base+k to base+k+1.
    job, start, k = _flat(ext)
    lo = (base[job] + k).astype(np.float64)
    y = lambda n: a[job] + b[job] / n + c[job] * (n - 1)  # noqa: E731
    y1 = (a + b)[job]  # seconds per sample on 1 GPU: S(n) = y1 / y(n)
    # Gain in -1/S (concave for this model); from 0 GPUs the gain is 1.
    gain = np.where(lo < 1, 1.0, (y(np.maximum(lo, 1)) - y(lo + 1)) / y1) * w[job]
    # Non-increasing per job (running minimum), so every job's picks are a prefix.
    gain = _segment_cummin(gain, start, ext)
    # Sticky: a running job at g loses its pause on any change, so the GPUs up to its
    # current count are worth the pause's share of its utility more (spread evenly
    # over them; still non-increasing).
    sticky = np.flatnonzero((cur > base) & (rho > 0))
    if len(sticky):
        gc = cur[sticky].astype(np.float64)
        yg = a[sticky] + b[sticky] / gc + c[sticky] * (gc - 1)
        r = rho[sticky]
        bonus = np.zeros(len(base))
        bonus[sticky] = yg / (a + b)[sticky] * r / (1 - r) * w[sticky] / (cur[sticky] - base[sticky])
        gain = gain + np.where(lo < cur[job], bonus[job], 0.0)
    cand = np.flatnonzero(gain > 0)
    if len(cand) > pool:
        g = gain[cand]
        thresh = np.partition(g, len(g) - pool)[len(g) - pool]
        # Gains equal up to rounding (the same speedup fitted from other points) are ties.
        near = np.abs(g - thresh) <= TIE_RTOL * thresh
        above = cand[(g > thresh) & ~near]
        tie = cand[near]
        tie = tie[np.lexsort((k[tie], job[tie]))][: pool - len(above)]
        cand = np.concatenate((above, tie))
    return np.bincount(job[cand], minlength=len(base)).astype(np.int64)


def _flat(ext: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For ``ext[j]`` extra GPUs per job: each candidate's job, each job's first candidate, each candidate's rank."""
    job = np.repeat(np.arange(len(ext)), ext)
    start = np.cumsum(ext) - ext
    return job, start, np.arange(len(job)) - np.repeat(start, ext)


def _check_restart_fields(d: dict, ident: Any) -> None:
    g = d.get("gpus", 0)
    if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or g < 0:
        raise ValueError(f"demand {ident!r}: gpus must be an integer >= 0, got {g!r}")
    for key in ("pause_s", "horizon_s", "hold_s", "progress"):
        v = d.get(key, 0.0)
        if v is None and key in ("pause_s", "hold_s", "progress"):
            continue
        if key == "progress" and not (isinstance(v, _REAL) and not isinstance(v, bool) and 0 <= v <= 1):
            raise ValueError(f"demand {ident!r}: progress must be a number in [0, 1] or None, got {v!r}")
        if isinstance(v, bool) or not isinstance(v, _REAL) or not math.isfinite(v) or v < 0:
            raise ValueError(f"demand {ident!r}: {key} must be a finite number >= 0, got {v!r}")


def _current(adm_demands: list[dict], midx: np.ndarray, mm: np.ndarray, cap: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Current GPU count (0 if not running or outside ``[min, cap]``) and the pauses of a shrink / horizon per
    measured job."""
    cur = np.zeros(len(midx), dtype=np.int64)
    rho = np.zeros(len(midx))
    for r, i in enumerate(midx.tolist()):
        d = adm_demands[i]
        g = d.get("gpus", 0)
        if g and d.get("running", False) and mm[r] <= g <= cap[r]:
            H = _horizon(d, g)
            cur[r] = g
            pause = SHRINK_PAUSES * float(d.get("pause_s", 0.0) or 0.0)
            rho[r] = min(max(pause / H, 0.0), 0.5) if H > 0 else 0.5
    return cur, rho


def _horizon(d: dict, g: int, time_left: bool = False, grow: bool = False) -> float:
    """Seconds a resize of a running job on ``g`` GPUs is weighed over: ``horizon_s`` (a growth of a job with a
    fixed batch: ``hold_s`` if longer), or the time the job has left if it reports its ``progress`` and ends
    sooner (the service that gave it ``progress``, less one pause, over ``g`` GPUs, times
    ``(1 - progress) / progress``); with ``time_left``, that time even if longer."""
    H = float(d.get("horizon_s", HORIZON_S))
    if grow and d.get("hold_s") is not None and d.get("efficiency") is None:
        H = max(H, float(d["hold_s"]))
    p = d.get("progress")
    if p is not None and 0 < p < 1 and g > 0:
        useful = max(float(d.get("attained", 0.0)) - float(d.get("pause_s", 0.0) or 0.0) * g, 0.0)
        left = useful * (1 - p) / p / g
        H = left if time_left else min(H, left)
    return H


def expected_hold_s(arrivals: int, age_s: float, resizes: int, window_s: float | None = None) -> float:
    """Seconds a job's next allocation is expected to last (a demand's ``hold_s``): until the next arrival at
    the recent rate (``window_s``, default :data:`HOLD_WINDOW_S`, over the ``arrivals`` of the last ``window_s``
    seconds), and no longer than the job has held each of its allocations so far (``age_s`` since it was
    submitted, over its ``resizes``, the changes of its GPU count since its first start, plus one)."""
    window_s = HOLD_WINDOW_S if window_s is None else window_s
    if arrivals < 0 or resizes < 0 or not (math.isfinite(age_s) and age_s >= 0) or not window_s > 0:
        raise ValueError(f"expected_hold_s: arrivals and resizes >= 0, age_s >= 0 and window_s > 0, got "
                         f"{arrivals!r}, {age_s!r}, {resizes!r}, {window_s!r}")
    own = age_s / (resizes + 1)
    return min(window_s / arrivals, own) if arrivals else min(window_s, own)


def _segment_cummin(v: np.ndarray, start: np.ndarray, ext: np.ndarray) -> np.ndarray:
    """Running minimum of ``v`` within each segment ``[start, start + ext)``."""
    out = v.copy()
    longest = int(ext.max()) if len(ext) else 0
    for step in range(1, longest):  # segments are short (at most max - min GPUs)
        has = ext > step
        idx = start[has] + step
        out[idx] = np.minimum(out[idx], out[idx - 1])
    return out


def _restart_aware(x: np.ndarray, m: np.ndarray, M: np.ndarray, midx: np.ndarray, coef: np.ndarray,
                   adm_demands: list[dict], time_left: bool = False) -> list[int]:
    """Undo growths not worth their pause (weighed over the job's time left, with ``time_left``); their GPUs undo
    shrinks (in order). The jobs whose growth was undone."""
    spare = 0
    shrinks, pinned = [], []
    for r, i in enumerate(midx.tolist()):
        d = adm_demands[i]
        g = d.get("gpus", 0)
        if not g or not d.get("running", False) or x[i] == g or not (m[i] <= g <= M[i]):
            continue
        b, a, c = coef[r]
        X = lambda n: 1.0 / (a + b / n + c * (n - 1))  # noqa: E731
        if x[i] > g:
            pause = float(d.get("pause_s", 0.0) or 0.0)
            H = _horizon(d, g, time_left, grow=True)
            if (H - pause) * X(x[i]) <= H * X(g):
                spare += int(x[i]) - g
                x[i] = g
                pinned.append(i)
        else:
            shrinks.append(i)
    for i in shrinks:
        need = adm_demands[i]["gpus"] - int(x[i])
        if need <= spare:
            spare -= need
            x[i] += need
    return pinned
