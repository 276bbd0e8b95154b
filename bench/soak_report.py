"""The soak's verdict, read from what the cluster kept: the job records, the event stream, the
storage, the processes, Redis's ACL users and the hosts' temporary directories."""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import psutil

from soak_work import write_log

TERMINAL = ("completed", "failed", "cancelled")
ELASTIC_TOLERANCE = 1e-4  # float summation order only (bench/bench_elastic_equivalence.py)
REFERENCE_TIMEOUT_S = 600.0


def _store(cluster):
    from nbrunner.control.store import JobStore

    return JobStore.from_url(cluster.url)


def _final_params(ws: Path, job_id: str):
    import torch

    path = ws / "runs" / job_id / "final.pt"
    return torch.load(path, weights_only=True) if path.exists() else None


def elastic_reference(soak, cluster) -> dict | None:
    """The final parameters of the ElasticTrainer job run alone, before any fault (same seed)."""
    from soak_work import request_for

    import random

    token = soak.tokens[soak.users[0]]
    _, body = request_for("elastic", random.Random(0))
    body["parameters"], body["max_gpus"] = {"MAX": 1}, 1
    status, job = soak.api.call(token, "POST", "/jobs", body)
    assert status == 201, (status, job)
    deadline = time.monotonic() + REFERENCE_TIMEOUT_S
    while time.monotonic() < deadline:
        status, rec = soak.api.call(token, "GET", f"/jobs/{job['id']}")
        if status == 200 and rec["status"] in TERMINAL:
            assert rec["status"] == "completed", rec
            soak.say(f"reference ElasticTrainer run {job['id']} completed")
            soak.reference_id = job["id"]
            return _final_params(soak.ws, job["id"])
        time.sleep(1)
    raise AssertionError("the reference ElasticTrainer job did not end")


def wait_all_ended(soak, cluster, timeout: float, faulter=None) -> None:
    """Until every job (and sweep) has ended and its worker released it, or ``timeout``; and until
    ``faulter`` (the fault thread) is done, if given."""
    deadline = time.monotonic() + timeout
    store = _store(cluster)
    from nbrunner.control.sweeps import get_record as get_sweep

    last = None
    while time.monotonic() < deadline:
        try:
            pending = [r for r in store.all() if not (r.finished and r.phase == "ended")]
            sweeps = [s for s, _ in soak.sweeps if not get_sweep(store, s).finished]
        except Exception as exc:  # noqa: BLE001 - Redis restarting after the last fault
            soak.say(f"waiting: {exc.__class__.__name__}")
            time.sleep(2)
            continue
        if not pending and not sweeps and not (faulter is not None and faulter.is_alive()):
            return
        if not pending and not sweeps:
            soak.drained.set()  # nothing left for the faults to hit
        if (len(pending), len(sweeps)) != last:
            soak.say(f"waiting for {len(pending)} jobs and {len(sweeps)} sweeps to end")
            last = (len(pending), len(sweeps))
        time.sleep(2)
    soak.say("gave up waiting: what is still unfinished counts as lost")


def _stream_terminals(r) -> dict[str, int]:
    """How many times each job's status entered a terminal one on the event stream."""
    from nbrunner.core.keys import EVENTS

    prev: dict[str, str] = {}
    entered: dict[str, int] = {}
    for _id, e in r.xrange(EVENTS):
        job, status = e.get("job"), e.get("status")
        if not job or not status:
            continue
        if status in TERMINAL and prev.get(job) not in TERMINAL:
            entered[job] = entered.get(job, 0) + 1
        prev[job] = status
    return entered


def _misfires(store, sched: dict, stopped_at: float) -> tuple[int, list[str]]:
    """Fire times (``created_at + k*every`` before the schedule was paused) run zero or twice."""
    from nbrunner.core.models import parse_time

    every = sched["every"]
    created = parse_time(sched["created_at"]).timestamp()
    runs = sorted(parse_time(r.created_at).timestamp() for r in store.all() if r.schedule == sched["id"])
    last_k = int((stopped_at - created) // every) - 1  # the last fire time surely before the pause
    counts = {k: 0 for k in range(1, last_k + 1)}
    for t in runs:
        k = int((t - created) // every)
        if k in counts:
            counts[k] += 1
    bad = [f"fire time {k} (+{k * every} s): {n} runs" for k, n in counts.items() if n != 1]
    return len(bad), bad


def _orphans(soak, cluster, ended: set[str]) -> list[str]:
    """Processes of the soak's users, kernels and learners under the workers, ACL users of ended
    jobs, files the users left in the hosts' temporary directories."""
    import pwd

    found = []
    uids = set()
    for name in soak.users + [soak.mallory]:
        try:
            uids.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            pass
    for p in psutil.process_iter(["uids", "cmdline"]):
        try:
            if p.info["uids"] and p.info["uids"].real in uids:
                found.append(f"process {p.pid}: {' '.join(p.info['cmdline'] or [])[:100]}")
        except psutil.Error:
            continue
    for w in cluster.workers:
        if not w.alive():
            continue
        try:
            for c in psutil.Process(w.pid).children(recursive=True):
                cmd = " ".join(c.cmdline())
                if "ipykernel" in cmd or "nbrunner.elastic.learner" in cmd:
                    found.append(f"{'kernel' if 'ipykernel' in cmd else 'learner'} {c.pid} under {w.name}")
        except psutil.Error:
            continue
    from nbrunner.core.job_access import USER_PREFIX

    for user in cluster.client().execute_command("ACL", "USERS"):
        if user.startswith(USER_PREFIX) and user[len(USER_PREFIX):] in ended:
            found.append(f"Redis ACL user {user}")
    for tmp in (soak.ws / "tmp").glob("host*"):
        for f in tmp.iterdir():
            try:
                if f.lstat().st_uid in uids:
                    found.append(f"temporary file {f}")
            except OSError:
                continue
    return found


def _recovery(faults) -> dict:
    return {k: {"p50": round(statistics.median(v), 2), "max": round(max(v), 2)}
            for k, v in faults.recovery.items() if v}


def _entries(soak, store, sched: dict) -> list[dict]:
    """Every accepted job: the direct submissions, then each sweep's trials and the schedule's runs
    (written to the log now that they are known)."""
    entries = list(soak.accepted)
    mine = {s for s, _ in soak.sweeps}
    for r in sorted(store.all(), key=lambda r: r.created_at):
        kind = "sweep" if r.sweep in mine else "schedule" if r.schedule == sched["id"] else None
        if kind:
            entry = {"id": r.id, "owner": r.owner, "kind": kind}
            entries.append(entry)
            write_log(soak.log_path, soak.log_lock, entry)
    return entries


def _per_job(records: dict, entries: list[dict], entered: dict[str, int]) -> tuple[int, int, int, list[str]]:
    terminal = lost = duplicated = 0
    problems = []
    for e in entries:
        rec = records.get(e["id"])
        if rec is None or rec.status not in TERMINAL:
            lost += 1
            problems.append(f"lost {e['id']} ({e['kind']}): {rec.status if rec else 'no record'}")
            continue
        terminal += 1
        ends = [h for h in rec.history if h["status"] in TERMINAL]
        if len(ends) != 1 or rec.history[-1]["status"] not in TERMINAL or entered.get(e["id"], 0) > 1:
            duplicated += 1
            problems.append(f"duplicated {e['id']}: history {[h['status'] for h in rec.history]}, "
                            f"{entered.get(e['id'], 0)} terminal events")
    return terminal, lost, duplicated, problems


def _elastic(soak, records: dict, entries: list[dict], reference) -> tuple[int, list[str]]:
    mismatch, notes = 0, []
    for e in entries:
        rec = records.get(e["id"])
        if e["kind"] != "elastic" or rec is None or rec.status != "completed":
            continue
        got = _final_params(soak.ws, e["id"])
        diff = max(float((got[k] - reference[k]).abs().max()) for k in reference) if got is not None else None
        if diff is None or diff > ELASTIC_TOLERANCE:
            mismatch += 1
            notes.append(f"elastic {e['id']} (attempt {rec.attempt}): max |diff| {diff}")
    return mismatch, notes


def report(soak, cluster, net, sched: dict, stopped_at: float, reference) -> dict:
    store = _store(cluster)
    entries = _entries(soak, store, sched)
    records = {r.id: r for r in store.all()}
    entered = _stream_terminals(store.r)
    terminal, lost, duplicated, problems = _per_job(records, entries, entered)
    mismatch, elastic_notes = _elastic(soak, records, entries, reference)
    misfires, misfire_notes = _misfires(store, sched, stopped_at)
    ended = {i for i, r in records.items() if r.finished}
    orphans = _orphans(soak, cluster, ended)
    lat = soak.api.latencies
    p99 = statistics.quantiles(lat, n=100)[98] if len(lat) > 1 else (lat[0] if lat else 0.0)
    out = {"jobs_submitted": len(entries), "jobs_terminal": terminal, "lost": lost, "duplicated": duplicated,
           "faults": dict(soak.faults.counts), "recovery_s": _recovery(soak.faults),
           "elastic_mismatch": mismatch, "schedule_misfires": misfires, "orphans": len(orphans),
           "api_p99_ms": round(p99, 1)}
    unacknowledged = [i for i, r in records.items() if r.owner in soak.users and i not in {e["id"] for e in entries}
                      and not r.sweep and not r.schedule and i != getattr(soak, "reference_id", None)]
    details = {"report": out, "seed": soak.args.seed, "hosts": net.hosts if net.enabled else 1,
               "namespaces": net.enabled, "problems": problems, "elastic": elastic_notes, "misfires": misfire_notes,
               "orphans": orphans, "fault_notes": soak.faults.notes, "skipped": soak.faults.skipped,
               "submit_errors": soak.errors[:50], "hostile_sent": soak.hostile_sent,
               "hostile_problems": soak.hostile_problems, "unacknowledged_jobs": unacknowledged,
               "by_kind": _by_kind(records, entries)}
    (soak.ws / "soak-details.json").write_text(json.dumps(details, indent=1))
    notes = [f"{k}: {v}" for k, v in details.items() if k not in ("report",) and v]
    if not net.enabled:
        notes.insert(0, "one host: network namespaces could not be made")
    return {"report": out, "rows": _rows(out), "notes": notes}


def _by_kind(records: dict, entries: list[dict]) -> dict:
    out: dict = {}
    for e in entries:
        rec = records.get(e["id"])
        key = f"{e['kind']}:{rec.status if rec else 'missing'}"
        out[key] = out.get(key, 0) + 1
    return out


def _rows(out: dict) -> list[dict]:
    row = lambda what, value, baseline, goal, ok: {  # noqa: E731
        "benchmark": what, "value": float(value), "baseline": float(baseline),
        "ratio": float(value) / baseline if baseline else 0.0, "goal": goal, "ok": ok}
    rows = [row("jobs terminal vs submitted", out["jobs_terminal"], out["jobs_submitted"], "== 1",
                out["jobs_terminal"] == out["jobs_submitted"])]
    for key in ("lost", "duplicated", "elastic_mismatch", "schedule_misfires", "orphans"):
        rows.append(row(key.replace("_", " "), out[key], 0, "0", out[key] == 0))
    for kind, rec in out["recovery_s"].items():
        rows.append(row(f"recovery after {kind} x{out['faults'][kind]} (s, max; p50 {rec['p50']})", rec["max"], 60,
                        "<= 1.0", rec["max"] <= 60))
    rows.append(row("REST API p99 during the soak (ms)", out["api_p99_ms"], 1000, "report", True))
    return rows


if __name__ == "__main__":
    sys.exit("run bench/soak.py")
