"""The Python face of nbrunner: clusters, jobs, sweeps, notebook widgets and the CLI.

    from nbrunner.client import setup_cluster
    with setup_cluster(gpus=4, workers=2) as cluster:
        job = cluster.submit("train.ipynb", {"lr": 0.01}, max_gpus=4)
        job.wait()

The same names are at the top (``nbrunner.setup_cluster``, ``nbrunner.connect``, ...).
"""
from .cluster import Cluster, connect, default_cluster, print_jobs_summary, setup_cluster
from .job import Job

__all__ = ["Cluster", "Job", "Sweep", "Schedule", "connect", "setup_cluster", "default_cluster", "print_jobs_summary"]


def __getattr__(name: str):
    """``Sweep`` and ``Schedule`` on first use: the CLI (a module of this package) does not load the sweep machinery."""
    if name == "Sweep":
        from .sweep import Sweep

        return Sweep
    if name == "Schedule":
        from .schedule import Schedule

        return Schedule
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
