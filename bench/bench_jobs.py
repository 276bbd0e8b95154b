"""Notebook jobs vs bare papermill, in one script.

(a) one one-cell notebook: nbrunner submit -> completed vs the ``papermill`` CLI (goal ratio <= 0.3);
(b) 50 trivial jobs on 2 workers vs 50 sequential papermill runs (goal >= 8x faster).

Workers keep a pre-warmed kernel: in (a) each job is submitted once the worker has been idle for
``IDLE_S`` (as a user's job usually finds it), so its spare kernel is up; in (b) jobs arrive back to
back and each finds the spare that was started when the previous one ended, whether ready or not.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
IDLE_S = 2.0


def trivial_notebook(path: Path) -> Path:
    """A parameters cell (``X = 1``) and ``print(X)``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = nbformat.v4.new_code_cell("X = 1")
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell("print(X)")]
    nbformat.write(nb, str(path))
    return path


def _papermill(nb: Path, out: Path, x: int) -> None:
    subprocess.run([sys.executable, "-m", "papermill", str(nb), str(out), "-p", "X", str(x), "--no-progress-bar"],
                   check=True, capture_output=True)


def run(n_jobs: int = 50, repeats: int = 3) -> list[dict]:
    import nbrunner

    ws = Path(tempfile.mkdtemp(prefix="nbb", dir="/tmp"))
    nb = trivial_notebook(ws / "one.ipynb")
    pm_single = []
    for i in range(repeats):
        t = time.perf_counter()
        _papermill(nb, ws / f"pm{i}.ipynb", i)
        pm_single.append(time.perf_counter() - t)
    t = time.perf_counter()
    for i in range(n_jobs):
        _papermill(nb, ws / f"pmseq{i}.ipynb", i)
    pm_seq = time.perf_counter() - t

    with nbrunner.setup_cluster(gpus=0, workers=2, workspace=ws) as cluster:
        cluster.submit(nb, {"X": -1}).wait(120)  # warm-up: workers imported, caches filled
        single = []
        for i in range(repeats):
            time.sleep(IDLE_S)
            t = time.perf_counter()
            job = cluster.submit(nb, {"X": i}).wait(120, poll=0.02)
            single.append(time.perf_counter() - t)
            assert job.record.status == "completed", job.record.error
        t = time.perf_counter()
        jobs = [cluster.submit(nb, {"X": i}) for i in range(n_jobs)]
        for j in jobs:
            j.wait(600, poll=0.05)
        many = time.perf_counter() - t
        assert all(j.record.status == "completed" for j in jobs)

    one, base = statistics.median(single), statistics.median(pm_single)
    return [
        {"benchmark": "one job: nbrunner submit->completed vs papermill CLI (s)", "value": one, "baseline": base,
         "ratio": one / base, "goal": "<= 0.3", "ok": one / base <= 0.3},
        {"benchmark": f"{n_jobs} jobs on 2 workers vs {n_jobs} sequential papermill (s)", "value": many,
         "baseline": pm_seq, "ratio": pm_seq / many, "goal": ">= 8x faster", "ok": pm_seq / many >= 8},
    ]


if __name__ == "__main__":
    from table import print_table

    print_table(run())
