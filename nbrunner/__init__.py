"""nbrunner: run parameterized Jupyter notebooks as elastic GPU jobs on a shared cluster.

Public names are imported lazily, so ``import nbrunner`` (in every job's kernel, and for
``python -m nbrunner.sim``) stays cheap.
"""
from .core.lazy import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
