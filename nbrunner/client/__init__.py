"""The Python face of nbrunner: clusters, jobs, sweeps, notebook widgets and the CLI.

    from nbrunner.client import setup_cluster
    with setup_cluster(gpus=4, workers=2) as cluster:
        job = cluster.submit("train.ipynb", {"lr": 0.01}, max_gpus=4)
        job.wait()

The same names are at the top (``nbrunner.setup_cluster``, ``nbrunner.connect``, ...).
"""
from ..core.lazy import lazy_exports
from . import session

_EXPORTS = {
    "Cluster": ".cluster",
    "connect": ".cluster",
    "default_cluster": ".cluster",
    "print_jobs_summary": ".cluster",
    "setup_cluster": ".cluster",
    "Job": ".job",
    "Sweep": ".sweep",
    "Schedule": ".schedule",
}
__all__ = list(_EXPORTS)


# the CLI (a module of this package) loads only what a command needs: `nbrunner list`, which
# reads no Redis, does not import redis-py
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


def _connect():
    from .cluster import connect

    return connect()


session.connect_with(_connect)  # for the views' default cluster, before the cluster module is loaded
