"""Each pass's outlook of the live jobs: why a queued job waits, when jobs should start and end.

The reasons come from the allocator (:func:`nbrunner.core.allocate.allocate_explained`, in the
same pass as the shares) or, for a job it serves that the scheduler cannot place yet, from
:func:`nbrunner.core.waiting.unplaced_reason`.  The expected starts and ends come from a
replay of the queue (:func:`nbrunner.core.estimates.estimate`) started at most every
``ESTIMATE_EVERY_S`` seconds, sooner when jobs come, start or go, in a thread of its own (a pass
never waits for it: it writes the last replay's times; a long queue takes seconds to replay),
over the first ``ESTIMATE_MAX_JOBS`` unfinished jobs (running ones, then by submission; the others
get no estimate); queued jobs' durations are the wall times of their owner's last completed runs
of the same notebook, kept per (owner, notebook) in Redis as jobs complete
(:meth:`Outlooks.record_run`).  A record is written only
when its outlook changed (a time by more than ``ESTIMATE_SLACK_S``), so a quiet queue writes
nothing and pushes nothing.
"""
from __future__ import annotations

import threading
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..core.config import ESTIMATE_EVERY_S, ESTIMATE_MAX_JOBS, ESTIMATE_RUNS, ESTIMATE_SLACK_S
from ..core.estimates import estimate, median_duration, remaining_s
from ..core.keys import runs_key
from ..core.models import JobStatus, parse_time
from ..core.placement import started
from ..core.waiting import unplaced_reason

if TYPE_CHECKING:
    from ..core.models import JobRecord
    from .store import JobStore


def iso(ts: float | None) -> str | None:
    """POSIX seconds as the records' ISO 8601 UTC (None stays None)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _seconds(value: str | None) -> float | None:
    t = parse_time(value)
    return None if t is None else t.timestamp()


def asking_accounts(reasons: dict[str, str]) -> set[str]:
    """The accounts GPUs are taken back for, from the reclaim plan's reasons."""
    prefix = "reclaimed by account "
    return {r[len(prefix):] for r in reasons.values() if r.startswith(prefix)}


class Outlooks:
    """The scheduler's outlook of its jobs between passes (the last replay and when it ran)."""

    def __init__(self, store: JobStore):
        self.store, self.r = store, store.r
        self._at = -float("inf")
        self._seen: frozenset = frozenset()
        self._times: dict[str, tuple[float | None, float | None]] = {}  # the last replay's
        self._replay: threading.Thread | None = None

    def record_run(self, rec: JobRecord) -> None:
        """Keep the wall time of a completed job for the estimates of its owner's next runs."""
        took = rec.duration()
        if rec.status is JobStatus.COMPLETED and took is not None:
            key = runs_key(rec.owner, rec.notebook)
            with self.r.pipeline(transaction=False) as p:
                p.lpush(key, f"{took:.3f}")
                p.ltrim(key, 0, ESTIMATE_RUNS - 1)
                p.execute()

    def typical(self, jobs: list[JobRecord]) -> dict[tuple[str, str], float | None]:
        """The median wall time of each (owner, notebook)'s last completed runs."""
        pairs = sorted({(r.owner, r.notebook) for r in jobs})
        with self.r.pipeline(transaction=False) as p:
            for owner, nb in pairs:
                p.lrange(runs_key(owner, nb), 0, ESTIMATE_RUNS - 1)
            got = p.execute()
        return {pair: median_duration([float(x) for x in xs]) for pair, xs in zip(pairs, got)}

    def times(self, jobs: list[JobRecord], demands: list[dict], total: int, policy: str, tree: Any,
              now: float) -> dict[str, tuple[float | None, float | None]]:
        """Expected (start, end) per job from the last replay; a new one is started when due."""
        seen = frozenset((r.id, r.status, r.phase, len(r.slots)) for r in jobs)
        busy = self._replay is not None and self._replay.is_alive()
        if busy or (seen == self._seen and time.monotonic() - self._at < ESTIMATE_EVERY_S):
            return self._times
        pairs = sorted(zip(jobs, demands), key=lambda p: (not started(p[0]), p[1]["submitted_at"], p[0].id))
        rows = self.rows(pairs[:ESTIMATE_MAX_JOBS], now)
        self._at, self._seen = time.monotonic(), seen
        self._replay = threading.Thread(target=self._run, args=(now, total, policy, rows, tree),
                                        name="nbrunner-estimates", daemon=True)
        self._replay.start()
        return self._times

    def _run(self, now: float, total: int, policy: str, rows: list[dict], tree: Any) -> None:
        self._times = estimate(now, total, policy, rows, tree)  # one assignment: a pass sees old or new

    def rows(self, pairs: list[tuple[JobRecord, dict]], now: float) -> list[dict]:
        """The replay's input: each job's demand with its remaining wall time and the GPUs it holds."""
        typical = self.typical([rec for rec, _ in pairs])
        rows = []
        for rec, d in pairs:
            usual = typical.get((rec.owner, rec.notebook))
            if started(rec):
                begun = _seconds(rec.started_at)
                rest = remaining_s(0.0 if begun is None else now - begun, rec.progress, usual)
            else:
                rest = usual
            rows.append({**d, "remaining_s": rest, "held": len(rec.slots)})
        return rows

    def outlooks(self, jobs: list[JobRecord], waiting: dict[str, dict], placed: set[str], shares: dict[str, int],
                 free: set, account_of: dict[str, str], asking: set[str],
                 times: dict[str, tuple[float | None, float | None]]) -> dict[str, dict]:
        """The outlook of every job whose record should change: ``{id: {field: value}}``.
        ``placed``: the jobs this pass dispatches; ``free``: the slots nobody holds after it."""
        out = {}
        for rec in jobs:
            start, end = times.get(rec.id, (None, None))
            if started(rec) or rec.id in placed:
                new: dict[str, Any] = {"expected_end": iso(end)}
            else:
                why = waiting.get(rec.id)
                if why is None:
                    acct = account_of.get(rec.id) or ""
                    chain = {acct[:i] for i in range(len(acct) + 1) if i == len(acct) or acct[i] == "/"}
                    why = unplaced_reason(max(shares.get(rec.id, 0), rec.min_gpus, 1), not rec.elastic, sorted(free),
                                          next(iter(sorted(chain & asking)), None))
                new = {"waiting": why, "expected_start": iso(start), "expected_end": iso(end)}
            if changed(rec, new):
                out[rec.id] = new
        return out


def changed(rec: JobRecord, new: dict[str, Any]) -> bool:
    """Does ``new`` change the record (a time only when it moves more than the slack)?"""
    for k, v in new.items():
        old = getattr(rec, k)
        if k == "waiting":
            if v != old:
                return True
        elif (v is None) != (old is None) or (v is not None and abs(_seconds(v) - _seconds(old)) > ESTIMATE_SLACK_S):
            return True
    return False
