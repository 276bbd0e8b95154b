"""Jobs run as their owners vs the default, in one script (as root: it makes a Unix account).

One trivial notebook, submitted ``REPEATS`` times to each of two clusters of one worker (no GPU
slots): the default one, whose jobs adopt the worker's pre-warmed kernel (forked from its kernel
fork server), and one started with ``--run-as-owner``, whose jobs run in a process of the owner's
that starts a fresh kernel.  Each job is submitted once the worker has been idle ``IDLE_S`` (as a
user's job usually finds it).  Figures: the medians of submit -> completed, and of the part of it
the work horse spends (``started_at`` to ``finished_at``).
"""
from __future__ import annotations

import os
import secrets
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]
IDLE_S = 2.0
REPEATS = 5


def _seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def _measure(run_as_owner: bool, owner: str) -> tuple[float, float]:
    """Medians of submit -> completed and of the horse's part, on a fresh cluster."""
    from bench_jobs import trivial_notebook
    from nbrunner.client.cluster import Cluster
    from nbrunner.core.config import Settings
    from nbrunner.control.store import reachable
    from nbrunner.execution.supervisor import Supervisor

    ws = Path(tempfile.mkdtemp(prefix="nbo", dir="/tmp"))
    os.chmod(ws, 0o711)
    nb = trivial_notebook(ws / "one.ipynb")
    settings = Settings.load(ws)
    sup = Supervisor(settings, gpus=0, workers=1, run_as_owner=run_as_owner).start()
    try:
        cluster = Cluster(settings, reachable(settings), sup)
        cluster.wait_ready(1, timeout=90)
        cluster.submit(nb, {"X": -1}, owner=owner).wait(120)  # warm-up: worker imported, caches filled
        total, horse = [], []
        for i in range(REPEATS):
            time.sleep(IDLE_S)
            t = time.perf_counter()
            job = cluster.submit(nb, {"X": i}, owner=owner).wait(120, poll=0.02)
            total.append(time.perf_counter() - t)
            assert job.record.status == "completed", job.record.error
            horse.append(_seconds(job.record.started_at, job.record.finished_at))
    finally:
        sup.stop()
    return statistics.median(total), statistics.median(horse)


def run() -> list[dict]:
    from support import unix_accounts

    for key in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE", "NBRUNNER_WORKSPACE"):
        os.environ.pop(key, None)
    owner = f"nbbench{secrets.token_hex(3)}"
    with unix_accounts(owner):
        plain_total, plain_horse = _measure(False, owner)
        own_total, own_horse = _measure(True, owner)
    return [
        {"benchmark": "one job as its owner vs default: submit->completed (s)", "value": own_total,
         "baseline": plain_total, "ratio": own_total / plain_total, "goal": "<= 5", "ok": own_total / plain_total <= 5},
        {"benchmark": "one job as its owner vs default: started->finished (s)", "value": own_horse,
         "baseline": plain_horse, "ratio": own_horse / plain_horse, "goal": "informative", "ok": True},
    ]


if __name__ == "__main__":
    from table import print_table

    print_table(run())
