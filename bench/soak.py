"""A seeded chaos soak: hub users submit through ``nbrunner service`` while faults hit every part
of the cluster; then every accepted job must have ended exactly once.

    python bench/soak.py [--minutes M] [--seed S] [--users U] [--hosts H] [--fault-every F]
                         [--workspace DIR] [--log PATH] [--json]

A real JupyterHub (npm's configurable-http-proxy when ``.cache/chp`` has it) runs ``nbrunner
service`` with an accounts file of three accounts (one, ``lab``, has no guarantee: it borrows,
and gives back when the others ask, so reclaims happen); Redis (AOF), a scheduler and a standby
on host 0; two workers on each of H hosts (network namespaces, ``--run-as-owner``); U hub users,
real Unix accounts removed at the end, each submitting with their own token notebooks that
complete, fail or time out, ElasticTrainer jobs (1-3 slots, sklearn's digits, seed 0), sweeps,
and one schedule firing every 10 s; one more user sends hostile requests.  Faults of the nine
kinds (``soak_faults.py``) come one every F seconds on average.  Submissions stop after M
minutes; the soak waits until every job has ended, then reads Redis, the event stream and the
storage, and reports (``--json``: one line with the keys DESIGN pins).  Must run as root.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests" / "hub")]

from soak_cluster import Cluster, Network, UnixUsers  # noqa: E402
from soak_faults import Faults, schedule_of_kinds  # noqa: E402
from soak_report import elastic_reference, report, wait_all_ended  # noqa: E402
from soak_work import KINDS, Api, hostile_round, submit, write_log  # noqa: E402

SCHEDULE_EVERY_S = 10
SUBMISSIONS_PER_WORKER_MIN = 2.0  # all users together, per worker process (a 2-core machine's pace)
HOSTILE_EVERY_S = 15.0
END_TIMEOUT_S = 1500.0


def accounts_yaml(users: list[str]) -> str:
    thirds = [users[i::3] for i in range(3)]
    return ("accounts:\n"
            f"  - {{name: vision, weight: 2, guaranteed: 2, members: {json.dumps(thirds[0])}}}\n"
            f"  - {{name: nlp, weight: 1, guaranteed: 1, members: {json.dumps(thirds[1])}}}\n"
            f"  - {{name: lab, weight: 1, members: {json.dumps(thirds[2])}}}\n"
            "default: {weight: 1}\nreclaim_after: 10\n")


# JupyterHub polls a managed service every 30 s (its _ServiceSpawner is made without the hub's
# config: no setting changes that) and starts it again only then.  The soak polls it every 2 s, as
# a process supervisor (systemd's Restart=always) would notice an external service's exit, so that
# the service's recovery measures nbrunner's start, not the hub's constant.
PROMPT_SERVICE_POLL = """
import jupyterhub.services.service as _hub_services
_start_polling = _hub_services._ServiceSpawner.start_polling
def _prompt_polling(self):
    self.poll_interval = 2
    _start_polling(self)
_hub_services._ServiceSpawner.start_polling = _prompt_polling
"""

class Soak:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.tag = secrets.token_hex(2)
        self.ws = Path(args.workspace).resolve() if args.workspace else Path(tempfile.mkdtemp(prefix="nbsoak", dir="/tmp"))
        self.ws.mkdir(parents=True, exist_ok=True)
        os.chmod(self.ws, 0o711)
        self.log_path = Path(args.log).resolve() if args.log else self.ws / "submissions.jsonl"
        self.log_path.write_text("")
        self.log_lock = threading.Lock()
        self.users = [f"soak{self.tag}u{k}" for k in range(args.users)]
        self.mallory = f"soak{self.tag}x"
        self.stop = threading.Event()
        self.drained = threading.Event()  # no job left to end: the faults stop too
        self.accepted: list[dict] = []
        self.sweeps: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.hostile_problems: list[str] = []
        self.hostile_sent = 0

    def say(self, text: str) -> None:
        print(f"[soak {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    # ---- submitting ------------------------------------------------------------------------------------
    def user_loop(self, k: int, token: str) -> None:
        rng = random.Random(self.args.seed * 1000 + k)
        names, weights = zip(*KINDS)
        gap = 60.0 * len(self.users) / (SUBMISSIONS_PER_WORKER_MIN * self.workers)
        self.stop.wait(rng.uniform(0, gap))
        while not self.stop.is_set():
            kind = rng.choices(names, weights)[0]
            status, body = submit(self.api, token, kind, rng)
            if status == 201 and isinstance(body, dict):
                if kind == "sweep":
                    self.sweeps.append((body["id"], self.users[k]))
                else:
                    entry = {"id": body["id"], "owner": self.users[k], "kind": kind}
                    self.accepted.append(entry)
                    write_log(self.log_path, self.log_lock, entry)
            else:
                self.errors.append(f"{self.users[k]} {kind}: {status} {str(body)[:160]}")
            self.api.call(token, "GET", "/jobs")
            self.stop.wait(rng.expovariate(1.0 / gap))

    def hostile_loop(self, token: str) -> None:
        rng = random.Random(self.args.seed * 1000 + 999)
        while not self.stop.wait(rng.expovariate(1.0 / HOSTILE_EVERY_S)):
            victims = [e["id"] for e in self.accepted[-20:]]
            self.hostile_problems += hostile_round(self.hostile_api, token, rng, victims)
            self.hostile_sent += 1

    def fault_loop(self) -> None:
        rng = random.Random(self.args.seed)
        every = self.args.fault_every
        kinds = schedule_of_kinds(rng, int(self.args.minutes * 60 / every * 3) + 9)
        self.stop.wait(min(every, 15))
        for kind in kinds:
            if self.stop.is_set() and (self.faults.counts[kind] or self.faults.skipped.get(kind) or self.drained.is_set()):
                continue  # after the submissions: only the kinds not seen yet, while jobs still run
            self.say(f"fault {kind}")
            took = self.faults.inject(kind)
            self.say(f"  {kind}: " + (f"whole again after {took:.1f} s" if took is not None else "skipped"))
            wait = rng.expovariate(1.0 / every) if every > 0 else 0
            if not self.stop.is_set():
                self.stop.wait(wait)

    def service_ok(self) -> bool:
        status, _ = self.probe_api.call(self.tokens[self.users[0]], "GET", "/cluster", timeout=10)
        return status == 200

    # ---- the run -------------------------------------------------------------------------------------------
    def run(self) -> dict:
        from harness import Hub

        net = Network(self.args.hosts, self.tag).up()
        if not net.enabled:
            self.say(f"network namespaces cannot be made ({net.why_not}): one host, no partition faults")
        unix = UnixUsers([*self.users, self.mallory])
        cluster = Cluster(self.ws, net)
        hub = None
        try:
            unix.make()
            cluster.start()
            accounts = self.ws / "accounts.yaml"
            accounts.write_text(accounts_yaml(self.users))
            extra = (f"service['command'] += ['--accounts', {str(accounts)!r}]\n"
                     "c.Spawner.poll_interval = 2\nc.LocalProcessSpawner.poll_interval = 2\n" + PROMPT_SERVICE_POLL)
            (self.ws / "hub").mkdir(exist_ok=True)
            hub = Hub(cluster.env(), admins=["soakadmin"], extra_config=extra, scratch=self.ws / "hub").start()
            for name in [*self.users, self.mallory]:
                hub.add_user(name)
            self.tokens = {name: hub.token(name) for name in [*self.users, self.mallory]}
            self.api, self.hostile_api, self.probe_api = Api(hub.service_api), Api(hub.service_api), Api(hub.service_api)
            self.workers = len(cluster.workers)
            self.faults = Faults(cluster, net, hub, self.service_ok, random.Random(self.args.seed + 1))
            self.say(f"workspace {self.ws}; {len(cluster.workers)} workers on {net.hosts if net.enabled else 1} "
                     f"host(s); hub at {hub.url}")
            reference = elastic_reference(self, cluster)
            return self._soak(cluster, net, reference)
        finally:
            self.stop.set()
            if hub is not None:
                hub.stop()
            cluster.stop()
            net.down()
            unix.remove()
            if not self.args.workspace:
                shutil.rmtree(self.ws, ignore_errors=True)

    def _soak(self, cluster: Cluster, net: Network, reference) -> dict:
        owner = self.users[0]
        status, sched = self.api.call(self.tokens[owner], "POST", "/schedules", {
            "notebook": "tick.ipynb", "content": __import__("soak_work").NOTEBOOKS["complete"],
            "every": SCHEDULE_EVERY_S, "overlap": "queue"})
        assert status == 201, (status, sched)
        threads = [threading.Thread(target=self.user_loop, args=(k, self.tokens[u]), daemon=True)
                   for k, u in enumerate(self.users)]
        threads.append(threading.Thread(target=self.hostile_loop, args=(self.tokens[self.mallory],), daemon=True))
        faulter = threading.Thread(target=self.fault_loop, daemon=True)
        t0 = time.monotonic()
        for th in [*threads, faulter]:
            th.start()
        while time.monotonic() - t0 < self.args.minutes * 60:
            time.sleep(1)
        self.stop.set()
        self.say("submissions stopped; pausing the schedule, waiting for the last fault to heal")
        stopped_at = time.time()
        for _ in range(60):
            status, _ = self.api.call(self.tokens[owner], "PATCH", f"/schedules/{sched['id']}", {"paused": True})
            if status == 200:
                break
            time.sleep(1)
        for th in threads:
            th.join(120)
        wait_all_ended(self, cluster, END_TIMEOUT_S, faulter)
        self.drained.set()
        faulter.join(WHOLE_JOIN_S)
        wait_all_ended(self, cluster, END_TIMEOUT_S)  # what the last faults re-queued
        return report(self, cluster, net, sched, stopped_at, reference)


WHOLE_JOIN_S = 300


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--users", type=int, default=10)
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--fault-every", type=float, default=25.0)
    ap.add_argument("--workspace", default=None, help="keep the workspace (Redis AOF, storage) here")
    ap.add_argument("--log", default=None, help="one JSON line per accepted submission")
    ap.add_argument("--json", action="store_true", help="print the report as one JSON line")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("soak.py: must run as root (Unix accounts, --run-as-owner workers, network namespaces)", file=sys.stderr)
        return 2
    for key in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE", "NBRUNNER_WORKSPACE"):
        os.environ.pop(key, None)
    # stopped early (also when started in the background, where SIGINT is ignored): clean up all the same
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    result = Soak(args).run()
    if args.json:
        print(json.dumps(result["report"]))
    else:
        from table import print_table

        print_table(result["rows"])
    for line in result["notes"]:
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
