"""One attempt of a job in its record: its start, its end (``output.html`` first, then the final
status and ``job.json``), the environment its processes get, and dying with the worker.

The record is the source of truth: the job moves queued -> running only if this is still its
current attempt, and ends completed or failed (one-line ``error``) only if it still runs as
this attempt (a cancel or a re-queue after a lost worker wins).
"""
from __future__ import annotations

from ..control.actions import advance
from ..control.outage import until_reachable
from ..core.config import ATTEMPT, GPUS, JOB_DIR, JOB_ID, SLOT_SOURCE, Settings
from ..core.lifecycle import Fail, Finish, Refused, Start, Timeout
from ..core.models import JobRecord, utcnow
from ..control.safe_write import write_into
from ..control.store import JobStore


def start_attempt(store: JobStore, job_id: str, attempt: int, worker: str, host: str) -> JobRecord | None:
    """The record of the started attempt; None for a stale rq job (the attempt was re-dispatched,
    cancelled or taken back)."""
    try:
        return advance(store, job_id, Start(attempt=attempt, worker=worker, host=host, at=utcnow())).record
    except Refused:
        return None


def finish(store: JobStore, settings: Settings, job_id: str, attempt: int, error: str | None,
           timed_out: bool = False) -> JobRecord | None:
    """End the attempt (``output.html`` first): completed, or failed with ``error`` (or by its time
    limit); None if it no longer runs as ``attempt`` (a cancel or a re-queue came first)."""
    at = utcnow()
    event = (Timeout(attempt=attempt, at=at) if timed_out else Fail(attempt=attempt, error=error, at=at) if error
             else Finish(attempt=attempt, at=at))
    try:
        return until_reachable(lambda: advance(store, job_id, event, settings).record, f"ending job {job_id}")
    except Refused:
        return None


def job_environment(settings: Settings, rec: JobRecord) -> dict[str, str]:
    env = {**settings.env(), JOB_ID.name: rec.id, JOB_DIR.name: str(settings.job_dir(rec.id)),
           ATTEMPT.name: str(rec.attempt)}
    gpus = [str(index) for host, index in rec.slots]
    env[GPUS.name] = ",".join(gpus)
    env[SLOT_SOURCE.name] = "nbrunner.elastic.cluster_slots:cluster_slot_source"  # ElasticTrainer follows the grant
    if not rec.elastic:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
    return env


def die_with_parent() -> None:
    """SIGKILL this process when its parent (the worker) dies, so a lost worker's job never
    keeps running beside its re-run."""
    import ctypes
    import signal

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def die_with_parent_preexec() -> None:
    """``preexec_fn`` for children of a worker: they die with it."""
    die_with_parent()


def end(store: JobStore, settings: Settings, rec: JobRecord, error: str | None, timed_out: bool) -> str:
    """Record the attempt's end (``output.html`` before the final status) and write ``job.json``
    (again: the copy written before the status is of the first try's record, and a retried write
    may store a newer one); returns the final status."""
    final = finish(store, settings, rec.id, rec.attempt, error, timed_out)
    if final is not None:
        write_into(settings.job_dir(rec.id), "job.json", final.to_json(indent=1).encode())
    return "failed" if error else "completed"
