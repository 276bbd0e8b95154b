"""Small jobs at the speed of the machine: one run, every baseline measured in this script.

(a) one trivial notebook, nbrunner submit -> completed (``job.wait()``, as a user waits) vs an
    in-process ``papermill.execute_notebook`` of the same notebook, which starts its own kernel
    (papermill already imported; goal ratio <= 0.5).  The two alternate, ``repeats`` times each; a
    job is submitted after the workers were idle ``IDLE_S`` (as a user's job usually finds them);
(b) ``n`` trivial jobs on 2 workers (submitted with ``cluster.submit_many``) vs ``n`` sequential
    in-process calls (goal >= 3x faster) and vs ``n`` sequential ``papermill`` CLI runs (>= 10x);
(c) ``POST /jobs`` per second from 10 clients, each on one kept-alive connection, to a Jupyter
    server with the nbrunner extension on the same cluster (goal >= 500/s, no error; p99 reported);
    the baseline is the same server's ``GET /api/status`` from the same clients.  ``GET /jobs``
    (a page of 50) is reported beside them.

``python bench/bench_small_jobs.py [N [REPEATS]]`` (defaults 50 and 5); ``python bench/run.py
bench_small_jobs`` runs it with the others.  The sequential baselines run once the cluster is shut
down, so that its queued REST jobs do not slow them.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_jobs import trivial_notebook  # noqa: E402

IDLE_S = 2.0
CLIENTS = 10


def _in_process(nb: Path, out: Path, x: int) -> None:
    import papermill

    papermill.execute_notebook(str(nb), str(out), parameters={"X": x}, progress_bar=False)


def _cli(nb: Path, out: Path, x: int) -> None:
    subprocess.run([sys.executable, "-m", "papermill", str(nb), str(out), "-p", "X", str(x), "--no-progress-bar"],
                   check=True, capture_output=True)


def _timed(fn, *args) -> float:
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def _rest(ws: Path, per_client: int) -> dict:
    """POST /jobs, GET /api/status and GET /jobs rates from ``CLIENTS`` kept-alive clients."""
    from loadgen import jupyter_server, keepalive_load

    with jupyter_server(ws) as (base, token):
        root = base[: -len("/nbrunner/api")]
        post = {"notebook": "one.ipynb", "parameters": {"X": 7}}
        keepalive_load(root, token, "POST", "/nbrunner/api/jobs", post, clients=2, per=5)  # caches filled
        status = keepalive_load(root, token, "GET", "/api/status", clients=CLIENTS, per=per_client)
        posts = keepalive_load(root, token, "POST", "/nbrunner/api/jobs", post, clients=CLIENTS, per=per_client)
        lists = keepalive_load(root, token, "GET", "/nbrunner/api/jobs?limit=50", clients=CLIENTS, per=per_client)
    return {"status": status, "post": posts, "list": lists}


def run(n: int = 50, repeats: int = 5, per_client: int = 50) -> list[dict]:
    import nbrunner

    ws = Path(tempfile.mkdtemp(prefix="nbs", dir="/tmp"))
    nb = trivial_notebook(ws / "one.ipynb")
    _in_process(nb, ws / "warm.ipynb", -1)  # papermill and nbclient imported, as for a caller that uses them
    saved = {k: os.environ.pop(k) for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE") if k in os.environ}
    try:
        with nbrunner.setup_cluster(gpus=0, workers=2, workspace=ws) as cluster:
            cluster.submit(nb, {"X": -1}).wait(120)  # warm-up: caches filled, spare kernels started
            single, base = [], []
            for i in range(repeats):
                time.sleep(IDLE_S)
                t = time.perf_counter()
                job = cluster.submit(nb, {"X": i}).wait(120)
                single.append(time.perf_counter() - t)
                assert job.record.status == "completed", job.record.error
                base.append(_timed(_in_process, nb, ws / f"ip{i}.ipynb", i))
            time.sleep(IDLE_S)
            t = time.perf_counter()
            if hasattr(cluster, "submit_many"):
                jobs = cluster.submit_many([{"notebook": nb, "parameters": {"X": i}} for i in range(n)])
            else:  # an older tree (an A/B run with PYTHONPATH): one submit each
                jobs = [cluster.submit(nb, {"X": i}) for i in range(n)]
            for job in jobs:
                job.wait(600)
            many = time.perf_counter() - t
            assert all(j.record.status == "completed" for j in jobs)
            rest = _rest(ws, per_client)
    finally:
        os.environ.update(saved)
    seq = sum(_timed(_in_process, nb, ws / f"seq{i}.ipynb", i) for i in range(n))
    cli = sum(_timed(_cli, nb, ws / f"cli{i}.ipynb", i) for i in range(n))
    one, one_base = statistics.median(single), statistics.median(base)
    print(f"small jobs: single {[round(s, 3) for s in single]} vs in-process {[round(b, 3) for b in base]}; "
          f"{n} jobs {many:.2f} s, sequential {seq:.2f} s, CLI {cli:.2f} s; rest "
          f"{ {k: {m: v for m, v in r.items() if m != 'errors'} for k, r in rest.items()} }; "
          f"load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    post, status, lists = rest["post"], rest["status"], rest["list"]
    return [
        {"benchmark": "one trivial job: submit->completed vs in-process papermill.execute_notebook (s)",
         "value": one, "baseline": one_base, "ratio": one / one_base, "goal": "<= 0.5", "ok": one / one_base <= 0.5},
        {"benchmark": f"{n} trivial jobs on 2 workers vs {n} sequential in-process execute_notebook (s)",
         "value": many, "baseline": seq, "ratio": seq / many, "goal": ">= 3x faster", "ok": seq / many >= 3},
        {"benchmark": f"{n} trivial jobs on 2 workers vs {n} sequential papermill CLI runs (s)",
         "value": many, "baseline": cli, "ratio": cli / many, "goal": ">= 10x faster", "ok": cli / many >= 10},
        {"benchmark": f"POST /jobs per s, {CLIENTS} keep-alive clients vs GET /api/status per s",
         "value": post["rate"], "baseline": status["rate"], "ratio": post["rate"] / status["rate"],
         "goal": ">= 500/s, no error", "ok": post["rate"] >= 500 and not post["errors"]},
        {"benchmark": "POST /jobs p99 under that load vs GET /api/status p99 (s)", "value": post["p99_s"],
         "baseline": status["p99_s"], "ratio": post["p99_s"] / status["p99_s"], "goal": "report",
         "ok": not post["errors"]},
        {"benchmark": "GET /jobs?limit=50 per s, same clients vs GET /api/status per s", "value": lists["rate"],
         "baseline": status["rate"], "ratio": lists["rate"] / status["rate"], "goal": "report",
         "ok": not lists["errors"]},
    ]


if __name__ == "__main__":
    from table import print_table

    print_table(run(*(int(a) for a in sys.argv[1:3])))
