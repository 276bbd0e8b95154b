"""Event-driven cluster simulator replaying Pollux workloads against nbrunner's policies.

Usage::

    python -m nbrunner.sim WORKLOAD [--gpus 64] \
        [--policy static|tiresias|fairshare|priority|goodput] [--restart-pause 30] \
        [--traces DIR] [--json] [--interval 60] [--adaptive-batch]
    python -m nbrunner.sim --generate SEED [--jobs 160] [--save CSV] [...]

``WORKLOAD`` is a CSV (``name,time,application,num_replicas,batch_size``) or the
name of a shipped workload (``workload-1`` .. ``workload-8``). The workloads and
the throughput traces they replay ship in ``data/pollux/`` (from the Pollux OSDI
2021 artifact, Apache License 2.0; see its README).

Modules: ``apps`` (step time and work of each application, from its traces),
``adapt`` (batch-size adaptation: statistical efficiency from the gradient noise
scale, the batch of the highest goodput), ``workload`` (reading, writing and
generating workloads), ``engine`` (the replay and the scheduling rules of each
policy), ``cli`` (the command).
"""

from .adapt import BatchAdaptation
from .apps import EPOCHS, AppModel, load_apps
from .cli import main
from .engine import POLICIES, TIRESIAS_THRESHOLD, SimResult, simulate
from .workload import (DATA_DIR, TRACES_DIR, WORKLOADS_DIR, Job, bundled_workloads, generate_workload,
                       load_workload, resolve_workload, write_workload)

__all__ = ["AppModel", "BatchAdaptation", "Job", "SimResult", "load_apps", "load_workload", "write_workload", "generate_workload",
           "resolve_workload", "bundled_workloads", "simulate", "main", "POLICIES", "TIRESIAS_THRESHOLD", "EPOCHS",
           "DATA_DIR", "TRACES_DIR", "WORKLOADS_DIR"]
