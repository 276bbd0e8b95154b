"""The throughput each kind of job has measured, for the ``goodput`` policy (``nbrunner.core.kinds``).

A kind's points (``nbrunner:kind:<kind>``, a hash of learner count -> samples/s, kept
:data:`KIND_TTL_S` after its last change) are written by the active scheduler from the records of
the live jobs it reads each pass, and read once per kind into memory (a scheduler that takes over
reads them again), so a pass costs one pipelined write only when a job reported a new point.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..core.kinds import kind_of, with_kind

if TYPE_CHECKING:
    import redis

    from ..core.models import JobRecord

KIND_TTL_S = 30 * 86400
"""Seconds a kind's points are kept after their last change: a notebook not run for a month is a stranger again."""


def kind_key(kind: str) -> str:
    return f"nbrunner:kind:{kind}"


class KindLedger:
    """The throughput points of the kinds of the jobs a scheduler sees, updated pass by pass."""

    def __init__(self, r: redis.Redis):
        self.r = r
        self._points: dict[str, dict[str, float]] = {}
        self._read: dict[str, JobRecord] = {}  # the record each job's points were last taken from

    def throughputs(self, jobs: list[JobRecord]) -> dict[str, dict[str, float]]:
        """``{job id: its throughput with its kind's points}`` of the jobs of ``jobs`` with a kind and
        points of their own; their new points are added to their kinds first."""
        kinds = {rec.id: kind_of(rec.owner, rec.notebook, rec.parameters, rec.setup)
                 for rec in jobs if rec.setup and rec.throughput}
        self._load({k for k in kinds.values() if k not in self._points})
        writes: dict[str, dict[str, float]] = {}
        for rec in jobs:
            kind = kinds.get(rec.id)
            if kind is None or self._read.get(rec.id) is rec:
                continue
            known = self._points[kind]
            new = {k: float(v) for k, v in rec.throughput.items() if known.get(k) != float(v)}
            if new:
                known.update(new)
                writes.setdefault(kind, {}).update(new)
        if writes:
            with self.r.pipeline(transaction=False) as p:
                for kind, points in writes.items():
                    p.hset(kind_key(kind), mapping=points)
                    p.expire(kind_key(kind), KIND_TTL_S)
                p.execute()
        self._read = {rec.id: rec for rec in jobs if rec.id in kinds}
        self._points = {kind: self._points[kind] for kind in kinds.values()}  # read again if a job of it returns
        return {rec.id: with_kind(rec.throughput, self._points[kinds[rec.id]]) for rec in jobs if rec.id in kinds}

    def _load(self, kinds: set[str]) -> None:
        if not kinds:
            return
        order = sorted(kinds)
        with self.r.pipeline(transaction=False) as p:
            for kind in order:
                p.hgetall(kind_key(kind))
            for kind, raw in zip(order, p.execute()):
                self._points[kind] = dict(_valid(raw or {}))


def _valid(raw: dict):
    """The ``(learners, samples/s)`` of a stored hash that are what this module writes."""
    for k, v in raw.items():
        try:
            n, sps = int(k), float(v)
        except (TypeError, ValueError):
            continue
        if n > 0 and math.isfinite(sps) and sps > 0:
            yield str(n), sps
