"""nbrunner: run parameterized Jupyter notebooks as elastic GPU jobs on a shared cluster.

Public names are imported lazily, so ``import nbrunner`` (in every job's kernel, and for
``python -m nbrunner.sim``) stays cheap.
"""
from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "allocate": ".allocate",
    "setup_cluster": ".cluster",
    "connect": ".cluster",
    "print_jobs_summary": ".cluster",
    "Cluster": ".cluster",
    "Job": ".cluster",
    "JobsMonitor": ".widgets",
    "record": ".runtime",
    "save_model": ".registry",
    "NbrunnerError": ".errors",
    "InvalidRequest": ".errors",
    "NoCluster": ".errors",
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
