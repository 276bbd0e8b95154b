"""The Python face of nbrunner: clusters, jobs, sweeps, notebook widgets and the CLI.

    from nbrunner.client import setup_cluster
    with setup_cluster(gpus=4, workers=2) as cluster:
        job = cluster.submit("train.ipynb", {"lr": 0.01}, max_gpus=4)
        job.wait()

The same names are at the top (``nbrunner.setup_cluster``, ``nbrunner.connect``, ...).
"""
from importlib import import_module

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


def __getattr__(name: str):
    """Public names on first use: the CLI (a module of this package) loads only what a command needs
    (``nbrunner list`` reads no Redis, so it does not import redis-py)."""
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
