"""nbrunner: run parameterized Jupyter notebooks as elastic GPU jobs on a shared cluster."""

from .allocate import allocate
from .cluster import Cluster, Job, connect, print_jobs_summary, setup_cluster
from .errors import InvalidRequest, NbrunnerError, NoCluster
from .runtime import record

__version__ = "0.1.0"
__all__ = ["allocate", "setup_cluster", "connect", "print_jobs_summary", "record", "Cluster", "Job",
           "NbrunnerError", "InvalidRequest", "NoCluster"]
