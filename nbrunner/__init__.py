"""nbrunner: run parameterized Jupyter notebooks as elastic GPU jobs on a shared cluster.

Public names are imported lazily, so ``import nbrunner`` (in every job's kernel, and for
``python -m nbrunner.sim``) stays cheap.
"""
from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "allocate": ".core.allocate",
    "setup_cluster": ".client.cluster",
    "connect": ".client.cluster",
    "print_jobs_summary": ".client.cluster",
    "Cluster": ".client.cluster",
    "Job": ".client.job",
    "JobsMonitor": ".client.widgets",
    "record": ".control.runtime",
    "save_model": ".serving.registry",
    "NbrunnerError": ".core.errors",
    "InvalidRequest": ".core.errors",
    "NoCluster": ".core.errors",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'nbrunner' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
