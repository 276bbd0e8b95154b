"""The cluster's operations for one caller: what the REST API (and ``nbrunner service``) offers.

:class:`ClusterAPI` is built once per server (the Jupyter server extension, ``nbrunner
service``) and handed to its handlers, which only translate HTTP to these calls and back.
Every operation takes the :class:`~nbrunner.core.identity.Caller`; owners hold: a job, sweep
or schedule the caller does not see answers NotFound, as if it did not exist, on every
operation (reads, files, changes, filters).
"""
from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.changes import HIDDEN_JOB
from ..core.config import MAX_FILTER, PAGE_READ_BATCH
from ..core.demands import DEFAULT_POLICY
from ..core.errors import Forbidden, InvalidRequest, NotFound
from ..core.identity import Caller
from ..core.keys import POLICY
from ..core.models import STATUSES, JobRecord
from .store import JobStore, reachable
from . import grants, submit
from .job_files import read_log, read_metrics, read_output_text
from .pipeline_api import PipelineOperations
from .registration import live_capacity

if TYPE_CHECKING:
    from ..core.config import Settings
    from ..core.schedules import ScheduleRecord
    from ..core.sweeps.trials import SweepRecord


ORDERS = ("newest", "oldest")  # the orders of GET /jobs, by creation time


class ClusterAPI(PipelineOperations):
    """The operations of one cluster (see the module docstring).  The store connects on first
    use: a server may start before its cluster does (NoCluster until then)."""

    def __init__(self, settings: Settings, store: JobStore | None = None):
        self.settings = settings
        self._store = store

    @property
    def store(self) -> JobStore:
        if self._store is None:
            self._store = reachable(self.settings)
        return self._store

    # ---- jobs -----------------------------------------------------------------------------------
    def job(self, caller: Caller, job_id: str) -> JobRecord:
        """The job's record; NotFound if there is none or the caller does not see it."""
        rec = self.store.get(job_id)
        if not caller.sees(rec.owner):
            raise NotFound(f"no job {job_id!r}")
        return rec

    def jobs(self, caller: Caller, status: str | None = None, limit: int | None = None, cursor: str | None = None,
             schedule: str | None = None, sweep: str | None = None, owner: str | None = None,
             name: str | None = None, order: str = "newest", after: str | None = None,
             ) -> tuple[list[JobRecord], str | None]:
        """A page of the jobs the caller sees, newest first (``order="oldest"``: oldest first), and
        the cursor of the next page.  Filters: ``status``, ``schedule``, ``sweep``, ``owner`` (a
        user other than the caller finds nothing unless the caller is an admin) and ``name`` (a
        part of the job's name, any case).  The page starts at ``cursor``, or just after the job
        ``after`` (one the caller sees)."""
        if after is not None:
            if cursor is not None:
                raise InvalidRequest("give cursor or after, not both")
            cursor = self.store.cursor_after(after) if isinstance(after, str) and after.isalnum() else None
            if cursor is None or not caller.sees(self.store.get(after).owner):
                raise InvalidRequest(f"after must be the id of a job of the listing, got {str(after)[:40]!r}")
        if status is not None and status not in STATUSES:
            raise InvalidRequest(f"status must be one of {', '.join(STATUSES)}")
        if order not in ORDERS:
            raise InvalidRequest(f"order must be one of {', '.join(ORDERS)}, got {str(order)[:20]!r}")
        for what, value in (("owner", owner), ("q", name), ("schedule", schedule), ("sweep", sweep)):
            if value is not None and (not isinstance(value, str) or len(value) > MAX_FILTER):
                raise InvalidRequest(f"{what} must be text of at most {MAX_FILTER} characters")
        mine = caller.owner_filter
        wanted = {o for o in (mine, owner) if o is not None}
        part = name.casefold() if name else None
        where = None if not wanted and schedule is None and sweep is None and part is None else (
            lambda r: all(r.owner == o for o in wanted) and (schedule is None or r.schedule == schedule)
            and (sweep is None or r.sweep == sweep) and (part is None or part in r.name.casefold()))
        return self.store.page(status, limit, cursor, where=where, oldest_first=order == "oldest")

    def count(self, caller: Caller, status: str | None = None) -> int:
        """How many jobs the caller sees (in ``status``): an admin's count reads no record."""
        if status is not None and status not in STATUSES:
            raise InvalidRequest(f"status must be one of {', '.join(STATUSES)}")
        owner = caller.owner_filter
        if owner is None:
            return self.store.count(status)
        n, cursor = 0, None
        while True:
            records, cursor = self.store.page(status, PAGE_READ_BATCH, cursor, where=lambda r: r.owner == owner)
            n += len(records)
            if cursor is None:
                return n

    def submit(self, caller: Caller, request: dict[str, Any], base: Path | None = None) -> JobRecord:
        """Queue a job owned by the caller (see :func:`nbrunner.control.submit.submit`)."""
        return submit.submit(self.store, self.settings, request, owner=caller.name, base=base, groups=caller.groups)

    def submit_many(self, caller: Caller, requests: Any, base: Path | None = None) -> list[JobRecord]:
        """Queue several jobs owned by the caller, all or none (see :func:`nbrunner.control.submit.submit_many`)."""
        return submit.submit_many(self.store, self.settings, requests, owner=caller.name, base=base,
                                  groups=caller.groups)

    def cancel(self, caller: Caller, job_id: str) -> JobRecord:
        self.job(caller, job_id)
        return submit.cancel(self.store, job_id, self.settings)

    def purge(self, caller: Caller, job_id: str) -> None:
        self.job(caller, job_id)
        submit.purge(self.store, self.settings, job_id)

    def set_priority(self, caller: Caller, job_id: str, priority: Any) -> JobRecord:
        self.job(caller, job_id)
        return submit.set_priority(self.store, job_id, priority)

    def rerun(self, caller: Caller, job_id: str, parameters: Any = None) -> JobRecord:
        """A new job, owned by the caller, from the job's input snapshot and options."""
        self.job(caller, job_id)
        return submit.rerun(self.store, self.settings, job_id, parameters, owner=caller.name, groups=caller.groups)

    def job_dir(self, caller: Caller, job_id: str) -> tuple[JobRecord, Path]:
        """The job's record and directory (its files: output, log, metrics, downloads)."""
        return self.job(caller, job_id), self.settings.job_dir(job_id)

    def log(self, caller: Caller, job_id: str, offset: int = 0) -> tuple[str, int]:
        rec, job_dir = self.job_dir(caller, job_id)
        return read_log(job_dir, offset, finished=rec.finished)

    def output(self, caller: Caller, job_id: str) -> dict[str, Any]:
        """The executed notebook (JSON); NotFound before it exists."""
        return json.loads(self.output_text(caller, job_id))

    def output_text(self, caller: Caller, job_id: str) -> str:
        """The executed notebook's file; NotFound before it exists."""
        _, job_dir = self.job_dir(caller, job_id)
        return read_output_text(job_dir, job_id)

    def metrics(self, caller: Caller, job_id: str) -> list[dict[str, Any]]:
        _, job_dir = self.job_dir(caller, job_id)
        return read_metrics(job_dir)

    # ---- the cluster ----------------------------------------------------------------------------
    def status(self, caller: Caller | None = None) -> dict[str, Any]:
        """Hosts, slots and who holds each, free GPUs and policy (the ``GET /cluster`` object); a
        slot held by a job the ``caller`` does not see shows :data:`HIDDEN_JOB`, not its id."""
        cap = live_capacity(self.store)
        held = grants.holdings(self.store.r)
        if caller is not None and not caller.admin and held:
            owners = {j: rec.owner for j in set(held.values()) if (rec := self.store.find(j)) is not None}
            held = {slot: j if caller.sees(owners.get(j)) else HIDDEN_JOB for slot, j in held.items()}
        hosts = []
        for host in sorted(cap.hosts):
            slots = [{"index": i, "job": held.get((host, i))} for i in sorted(cap.hosts[host])]
            hosts.append({"name": host, "slots": slots})
        total = sum(len(h["slots"]) for h in hosts)
        busy = sum(1 for h in hosts for s in h["slots"] if s["job"])
        return {"policy": self.store.r.get(POLICY) or DEFAULT_POLICY, "gpus_total": total, "gpus_free": total - busy,
                "hosts": hosts, "workers": len(cap.workers)}

    def timeline(self, caller: Caller, limit: int | None = 1000) -> list[dict[str, Any]]:
        """GPU allocation over time of the jobs that held GPUs, among the newest ``limit`` jobs the
        caller sees (None: all); oldest first."""
        owner = caller.owner_filter
        records, _ = self.store.page(limit=limit, where=None if owner is None else (lambda r: r.owner == owner))
        records.reverse()
        with self.store.r.pipeline(transaction=False) as p:
            for rec in records:
                p.lrange(grants.timeline_key(rec.id), 0, -1)
            lists = p.execute()
        return [{"id": rec.id, "name": rec.name, "points": [json.loads(x) for x in raw]}
                for rec, raw in zip(records, lists) if raw]

    def accounts(self) -> dict[str, Any]:
        """The accounts sharing the GPUs (``GET /accounts``, ``nbrunner share``): per account its
        weight, guarantee, limit, demand, the GPUs it holds, its fair share, what it borrows or
        lends, and the GPU-hours it used in the last 24 h and in total; the file it came from;
        the accounts' GPUs over time.  No accounts: an empty list."""
        from ..core.accounts import held_by_account
        from ..core.placement import demand_of
        from ..core.shares import account_shares
        from . import accounts

        tree = accounts.current(self.store)
        total = len(live_capacity(self.store).slots)
        policy = self.store.r.get(POLICY) or DEFAULT_POLICY
        out: dict[str, Any] = {"accounts": [], "gpus_total": total, "policy": policy, "source": None,
                               "loaded_at": None, "timeline": []}
        if tree is None:
            return out
        live = self.store.all(("queued", "running"))
        shares = account_shares(total, [demand_of(r) for r in live], policy, tree)
        held = held_by_account((shares.account_of[rec.id], len(rec.slots)) for rec in live)
        used = accounts.usage(self.store)
        for row in shares.accounts:
            have, share = held.get(row["path"], 0), row["share"]
            recent, ever = used.get(row["path"], (0.0, 0.0))
            out["accounts"].append({
                "name": row["name"], "path": row["path"], "weight": row["weight"], "guaranteed": row["guaranteed"],
                "limit": row["limit"], "members": row["members"], "users": row["users"], "jobs": row["jobs"],
                "demand": row["demand"], "share": share, "allocated": row["allocated"], "held": have,
                "borrowed": max(0, have - share), "lent": max(0, share - have),
                "gpu_hours_24h": round(recent, 4), "gpu_hours_total": round(ever, 4)})
        return {**out, **accounts.source(self.store), "timeline": accounts.timeline(self.store)}

    def prometheus_metrics(self, caller: Caller) -> tuple[bytes, str]:
        """The cluster's metrics in Prometheus's text format and its content type (``GET /metrics``,
        admins only: Forbidden otherwise)."""
        from .cluster_metrics import exposition

        if not caller.admin:
            raise Forbidden("only an admin can read the cluster's metrics")
        return exposition(lambda: self.store)

    def usage(self, caller: Caller, by: str | None = None, since: str | None = None) -> dict[str, Any]:
        """GPU-hours per account or user per day since ``since`` (``GET /usage``, ``nbrunner
        usage``): an admin's of every job, a user's of their own."""
        from .usage import usage

        return usage(self.store, caller, by, since)

    def reload_accounts(self, caller: Caller) -> dict[str, Any]:
        """Read the accounts file again (admins only); the accounts as :meth:`accounts` shows them."""
        from . import accounts

        if not caller.admin:
            raise Forbidden("only an admin can reload the accounts")
        accounts.reload(self.store)
        return self.accounts()

    def notebook_parameters(self, path: str, shown: str) -> list[dict[str, Any]]:
        """Names, default values, types and help of the ``parameters`` cell of the notebook at
        ``path`` (``shown``: the path as the caller gave it)."""
        import papermill

        real = submit.resolve_notebook(self.settings, path)
        submit.read_notebook(real, shown)
        try:
            found = papermill.inspect_notebook(str(real))
        except Exception as exc:
            raise InvalidRequest(f"cannot read the parameters of {shown} ({exc.__class__.__name__})") from None
        return [_parameter(p) for p in found.values()]

    # ---- sweeps ---------------------------------------------------------------------------------
    def create_sweep(self, caller: Caller, notebook: str, spec: Any, base: Path | None = None,
                     allow_file: bool = True, content: Any = None, **options: Any) -> dict[str, Any]:
        """A sweep owned by the caller of the file ``notebook`` names, or of ``content`` (see
        :func:`nbrunner.control.sweeps.create_sweep`)."""
        from .sweeps import create_sweep

        rec = create_sweep(self.store, self.settings, notebook, spec, owner=caller.name, groups=caller.groups,
                           base=Path.cwd() if base is None else base, allow_file=allow_file, content=content,
                           **options)
        return self.sweep_dict(rec)

    def sweep_record(self, caller: Caller, sweep_id: str) -> SweepRecord:
        from .sweeps import get_record

        rec = get_record(self.store, sweep_id)
        if not caller.sees(rec.owner):
            raise NotFound(f"no sweep {sweep_id!r}")
        return rec

    def sweep(self, caller: Caller, sweep_id: str) -> dict[str, Any]:
        return self.sweep_dict(self.sweep_record(caller, sweep_id))

    def sweeps(self, caller: Caller) -> list[dict[str, Any]]:
        return [self.sweep_dict(rec) for rec in self.sweep_records(caller)]

    def sweep_records(self, caller: Caller) -> list[SweepRecord]:
        """The records of the sweeps the caller sees, oldest first."""
        from .sweeps import get_record, sweep_ids

        out = []
        for sid in sweep_ids(self.store):
            try:
                rec = get_record(self.store, sid)
            except NotFound:
                continue
            if caller.sees(rec.owner):
                out.append(rec)
        return out

    def cancel_sweep(self, caller: Caller, sweep_id: str) -> dict[str, Any]:
        from .sweeps import cancel_sweep

        self.sweep_record(caller, sweep_id)
        return self.sweep_dict(cancel_sweep(self.store, sweep_id, self.settings))

    def sweep_dict(self, rec: SweepRecord) -> dict[str, Any]:
        """``{"id", "jobs", "leaderboard"}`` (what ``GET /sweeps/{id}`` returns)."""
        from ..core.sweeps.leaderboard import leaderboard
        from .sweeps import jobs_of

        jobs = jobs_of(self.store, rec.job_ids())
        return {"id": rec.id, "jobs": [jobs[j].to_dict() for j in rec.job_ids() if j in jobs],
                "leaderboard": leaderboard(rec, jobs)}

    # ---- schedules ------------------------------------------------------------------------------
    def create_schedule(self, caller: Caller, request: dict[str, Any], base: Path | None = None) -> ScheduleRecord:
        from .schedules import create_schedule

        return create_schedule(self.store, self.settings, request, owner=caller.name, base=base, groups=caller.groups)

    def schedule(self, caller: Caller, schedule_id: str) -> ScheduleRecord:
        from .schedules import get_schedule

        rec = get_schedule(self.store, schedule_id)
        if not caller.sees(rec.owner):
            raise NotFound(f"no schedule {schedule_id!r}")
        return rec

    def schedules(self, caller: Caller) -> list[ScheduleRecord]:
        from .schedules import list_schedules

        return [r for r in list_schedules(self.store) if caller.sees(r.owner)]

    def update_schedule(self, caller: Caller, schedule_id: str, changes: dict[str, Any]) -> ScheduleRecord:
        from .schedules import update_schedule

        self.schedule(caller, schedule_id)
        return update_schedule(self.store, self.settings, schedule_id, changes)

    def delete_schedule(self, caller: Caller, schedule_id: str) -> None:
        from .schedules import delete_schedule

        self.schedule(caller, schedule_id)
        delete_schedule(self.store, schedule_id, self.settings)


def _parameter(p: dict) -> dict:
    """A papermill parameter as the submit dialog shows it: name, value, type and help."""
    text = p.get("default") or "None"
    try:
        value = ast.literal_eval(text)
        json.dumps(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = text
    kind = {bool: "bool", int: "int", float: "float", str: "str", type(None): "none", list: "list",
            dict: "dict"}.get(type(value), "str")
    return {"name": p["name"], "value": value, "type": kind, "help": p.get("help") or ""}
