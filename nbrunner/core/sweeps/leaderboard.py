"""The leaderboard of a sweep: every trial, best objective first.

Ranks are 1, 2, ... (ties keep trial order); trials without a numeric objective (not reported
yet, failed before reporting, not submitted yet: ``job`` null and ``status`` ``pending``) come
last with ``rank`` null.  A stopped trial keeps its place, with the last value it recorded.
"""
from __future__ import annotations

from typing import Any

from ..models import JobRecord
from .asha import numeric
from .trials import SweepRecord


def objective_of(job: JobRecord | None, metric: str) -> float | None:
    if job is None:
        return None
    return numeric(job.metrics.get(metric))


def leaderboard(rec: SweepRecord, jobs: dict[str, JobRecord]) -> list[dict[str, Any]]:
    """Every trial, best objective first; trials without an objective last with rank None.
    ``trial`` is the trial's index in the sweep (stable, unlike ``job``, which is None while
    the trial is pending)."""
    spec = rec.parsed
    metric, mode = spec.objective.metric, spec.objective.mode
    rows = []
    for i, t in enumerate(rec.trials):
        job = jobs.get(t.job) if t.job else None
        if job is not None:
            status = job.status
        elif t.state == "skipped":
            status = "failed"
        elif t.state == "cancelled":
            status = "cancelled"
        else:
            status = "pending"
        objective = objective_of(job, metric)
        if objective is None and job is not None and t.values:
            objective = next((v for v in reversed(t.values) if v is not None), None)
        rows.append((i, {"rank": None, "trial": i, "job": t.job, "parameters": t.parameters, "objective": objective,
                         "status": status}))
    ranked = [r for r in rows if r[1]["objective"] is not None]
    sign = -1.0 if mode == "max" else 1.0
    ranked.sort(key=lambda r: (sign * r[1]["objective"], r[0]))
    for rank, (_, row) in enumerate(ranked, start=1):
        row["rank"] = rank
    rest = [r for r in rows if r[1]["objective"] is None]
    return [row for _, row in ranked + rest]
