"""Small jobs at the speed of the machine: one run, every baseline measured in this script.

(a) one trivial notebook, nbrunner submit -> completed (``job.wait()``, as a user waits) vs an
    in-process ``papermill.execute_notebook`` of the same notebook, which starts its own kernel
    (papermill already imported; goal ratio <= 0.5).  The two alternate, ``repeats`` times each; a
    job is submitted after the workers were idle ``IDLE_S`` (as a user's job usually finds them);
(b) ``n`` trivial jobs on 2 workers (submitted with ``cluster.submit_many``) vs ``n`` sequential
    in-process calls (goal >= 3x faster) and vs ``n`` sequential ``papermill`` CLI runs (>= 10x);
(c) ``POST /jobs`` per second from 10 clients, each on one kept-alive connection sending 300
    requests (a few seconds: a steady state, not the burst's first second), to a Jupyter
    server with the nbrunner extension on the same cluster (goal >= 500/s, no error; p99 reported),
    once with the 2 workers running the submitted jobs and once with them suspended (rq's own
    suspension, as ``rq suspend`` sets it: the jobs queue, the CPU is the API's);
    the baseline is the same server's ``GET /api/status`` from the same clients.  ``GET /jobs``
    (a page of 50) is reported beside them.

``python bench/bench_small_jobs.py [N [REPEATS [CLI_RUNS]]]`` (defaults 50, 5 and N: every CLI run
timed; fewer are timed and scaled to N when given, as the table's row then says, for a loaded machine
where one CLI run takes a minute); ``python bench/run.py bench_small_jobs`` runs it with the others.
The REST rows come from :mod:`keepalive` (one asyncio process, kept-alive connections; its own
ceiling against a trivial server is the last row) and give the Jupyter server's CPU per request
beside each rate: on a shared machine the rate follows the CPU share the server gets, the CPU per
request does not.  The sequential baselines run once the cluster is shut
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


def _rest(ws: Path, per_client: int, r) -> dict:
    """POST /jobs, GET /api/status and GET /jobs rates from ``CLIENTS`` kept-alive clients, each with
    the Jupyter server's CPU per request; and the load generator's own ceiling (a trivial server)."""
    import contextlib

    from keepalive import generator_ceiling, keepalive_load, process_cpu_s, workers_suspended
    from loadgen import jupyter_server

    post = {"notebook": "one.ipynb", "parameters": {"X": 7}}
    out = {"ceiling": generator_ceiling(CLIENTS, 10 * per_client, post)}
    with jupyter_server(ws, pids := []) as (base, token):
        root = base[: -len("/nbrunner/api")]
        keepalive_load(root + "/nbrunner/api/jobs", token, "POST", post, clients=2, per=5)  # caches filled
        for name, path, method, body in (("status", "/api/status", "GET", None),  # alone first: no backlog to dispatch
                                         ("alone", "/nbrunner/api/jobs", "POST", post),
                                         ("post", "/nbrunner/api/jobs", "POST", post),
                                         ("list", "/nbrunner/api/jobs?limit=50", "GET", None)):
            cpu = process_cpu_s(pids[0])
            with workers_suspended(r) if name == "alone" else contextlib.nullcontext():
                got = out[name] = keepalive_load(root + path, token, method, body, clients=CLIENTS, per=per_client)
            got["server_cpu_ms"] = (process_cpu_s(pids[0]) - cpu) * 1000 / got["requests"]
    return out


def run(n: int = 50, repeats: int = 5, cli_runs: int | None = None, per_client: int = 300) -> list[dict]:
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
            rest = _rest(ws, per_client, cluster.store.r)
    finally:
        os.environ.update(saved)
    seq = sum(_timed(_in_process, nb, ws / f"seq{i}.ipynb", i) for i in range(n))
    cli_runs = n if cli_runs is None else max(1, min(cli_runs, n))
    cli = sum(_timed(_cli, nb, ws / f"cli{i}.ipynb", i) for i in range(cli_runs)) * n / cli_runs
    one, one_base = statistics.median(single), statistics.median(base)
    print(f"small jobs: single {[round(s, 3) for s in single]} vs in-process {[round(b, 3) for b in base]}; "
          f"{n} jobs {many:.2f} s, sequential {seq:.2f} s, CLI {cli:.2f} s; rest "
          f"{ {k: {m: v for m, v in r.items() if m != 'errors'} for k, r in rest.items()} }; "
          f"load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    post, status, lists, ceiling, alone = rest["post"], rest["status"], rest["list"], rest["ceiling"], rest["alone"]
    return [
        {"benchmark": "one trivial job: submit->completed vs in-process papermill.execute_notebook (s)",
         "value": one, "baseline": one_base, "ratio": one / one_base, "goal": "<= 0.5", "ok": one / one_base <= 0.5},
        {"benchmark": f"{n} trivial jobs on 2 workers vs {n} sequential in-process execute_notebook (s)",
         "value": many, "baseline": seq, "ratio": seq / many, "goal": ">= 3x faster", "ok": seq / many >= 3},
        {"benchmark": f"{n} trivial jobs on 2 workers vs {n} sequential papermill CLI runs (s)"
                      + (f" ({cli_runs} runs timed, scaled to {n})" if cli_runs < n else ""),
         "value": many, "baseline": cli, "ratio": cli / many, "goal": ">= 10x faster", "ok": cli / many >= 10},
        {"benchmark": f"POST /jobs per s, {CLIENTS} keep-alive clients, the workers running the jobs vs GET /api/status per s",
         "value": post["rate"], "baseline": status["rate"], "ratio": post["rate"] / status["rate"],
         "goal": ">= 500/s, no error", "ok": post["rate"] >= 500 and not post["errors"]},
        {"benchmark": "POST /jobs per s, the API alone (workers suspended by rq: the jobs queue) vs GET /api/status per s",
         "value": alone["rate"], "baseline": status["rate"], "ratio": alone["rate"] / status["rate"],
         "goal": ">= 500/s, no error", "ok": alone["rate"] >= 500 and not alone["errors"]},
        {"benchmark": "POST /jobs p99, the API alone vs GET /api/status p99 (s)", "value": alone["p99_s"],
         "baseline": status["p99_s"], "ratio": alone["p99_s"] / status["p99_s"], "goal": "report",
         "ok": not alone["errors"]},
        {"benchmark": "POST /jobs p99 under that load vs GET /api/status p99 (s)", "value": post["p99_s"],
         "baseline": status["p99_s"], "ratio": post["p99_s"] / status["p99_s"], "goal": "report",
         "ok": not post["errors"]},
        {"benchmark": "POST /jobs p50 under that load vs GET /api/status p50 (s)", "value": post["p50_s"],
         "baseline": status["p50_s"], "ratio": post["p50_s"] / status["p50_s"], "goal": "report",
         "ok": not post["errors"]},
        {"benchmark": "Jupyter server's CPU per POST /jobs vs per GET /api/status (ms)", "value": post["server_cpu_ms"],
         "baseline": status["server_cpu_ms"], "ratio": post["server_cpu_ms"] / status["server_cpu_ms"],
         "goal": "report", "ok": True},
        {"benchmark": "GET /jobs?limit=50 per s, same clients vs GET /api/status per s", "value": lists["rate"],
         "baseline": status["rate"], "ratio": lists["rate"] / status["rate"], "goal": "report",
         "ok": not lists["errors"]},
        {"benchmark": "GET /jobs?limit=50 p99 vs GET /api/status p99 (s)", "value": lists["p99_s"],
         "baseline": status["p99_s"], "ratio": lists["p99_s"] / status["p99_s"], "goal": "report",
         "ok": not lists["errors"]},
        {"benchmark": "Jupyter server's CPU per GET /jobs?limit=50 vs per GET /api/status (ms)",
         "value": lists["server_cpu_ms"], "baseline": status["server_cpu_ms"],
         "ratio": lists["server_cpu_ms"] / status["server_cpu_ms"], "goal": "report", "ok": True},
        {"benchmark": "machine load (1-minute average) at the end vs CPUs: figures above are shared-CPU figures",
         "value": os.getloadavg()[0], "baseline": os.cpu_count() or 1, "ratio": os.getloadavg()[0] / (os.cpu_count() or 1),
         "goal": "report", "ok": True},
        {"benchmark": f"load generator's own ceiling: POST per s to a trivial server vs POST /jobs per s",
         "value": ceiling["rate"], "baseline": post["rate"], "ratio": ceiling["rate"] / post["rate"],
         "goal": ">= 2 (not the limit)", "ok": ceiling["rate"] >= 2 * post["rate"]},
    ]


if __name__ == "__main__":
    from table import print_table

    print_table(run(*(int(a) for a in sys.argv[1:4])))
