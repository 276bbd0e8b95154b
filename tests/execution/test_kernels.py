"""A kernel that dies before running a cell is started again; one that never starts fails the job
with a clear error. Real kernels from real kernelspecs whose launcher exits before ipykernel runs."""
from __future__ import annotations

import json
import sys

import pytest

import nbrunner

from support import make_notebook

# exits 1 while the counter file holds fewer than FAILURES starts, then becomes an ipykernel

pytestmark = pytest.mark.slow
LAUNCHER = """
import os, runpy, sys
counter, failures, connection = sys.argv[1], int(sys.argv[2]), sys.argv[3]
starts = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(starts + 1))
if starts < failures:
    sys.exit(1)
sys.argv = ["ipykernel_launcher", "-f", connection]
runpy.run_module("ipykernel_launcher", run_name="__main__")
"""


def kernelspec(root, name: str, failures: int):
    """A kernel whose first ``failures`` starts die at once; returns its start counter file."""
    spec_dir = root / "kernels" / name
    spec_dir.mkdir(parents=True)
    (spec_dir / "launcher.py").write_text(LAUNCHER)
    counter = root / f"{name}.starts"
    argv = [sys.executable, str(spec_dir / "launcher.py"), str(counter), str(failures), "{connection_file}"]
    (spec_dir / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": name, "language": "python"}))
    return counter


@pytest.fixture
def kernel_cluster(workspace, monkeypatch):
    root = workspace / "jupyter"
    counters = {"flaky": kernelspec(root, "flaky", 2), "broken": kernelspec(root, "broken", 99)}
    monkeypatch.setenv("JUPYTER_PATH", str(root))
    cluster = nbrunner.setup_cluster(gpus=0, workers=1, workspace=workspace)
    yield cluster, counters
    cluster.shutdown()


def test_a_kernel_that_dies_at_start_is_started_again(kernel_cluster, workspace):
    cluster, counters = kernel_cluster
    make_notebook(workspace / "k.ipynb", "print('ran on', N)",
                  "from ipykernel.kernelapp import IPKernelApp\nprint('transport', IPKernelApp.instance().transport)",
                  parameters="N = 0")
    job = cluster.submit("k.ipynb", {"N": 7}, kernel="flaky").wait(120)
    assert job.record.status == "completed", job.record.error
    assert counters["flaky"].read_text() == "3"  # two starts died, the third ran the notebook
    assert job.logs().count("the kernel failed to start") == 2
    assert "ran on 7" in job.logs()
    assert "transport ipc" in job.logs()  # unix sockets: no TCP port for another process to take first
    assert job.record.attempt == 1  # started again in place, not a re-queued attempt


def test_a_kernel_that_never_starts_fails_the_job_with_one_line(kernel_cluster, workspace):
    cluster, counters = kernel_cluster
    make_notebook(workspace / "k.ipynb", "print('never')")
    job = cluster.submit("k.ipynb", kernel="broken").wait(120)
    rec = job.record
    assert rec.status == "failed"
    assert "Kernel died before replying to kernel_info" in rec.error and "\n" not in rec.error
    assert counters["broken"].read_text() == "3"
    assert "never" not in "".join(o.get("text", "") for c in job.output_notebook().cells for o in c.get("outputs", []))
