"""The kernels a job runs on: how they are configured, and how the work horse finds them."""
from __future__ import annotations

import os
from pathlib import Path

ADOPTED: list = []  # pre-warmed kernels this process adopted (:class:`.warm_kernel.AdoptedProcess`)


def kernel_config():
    """Kernels talk over unix sockets: TCP ports picked free by jupyter_client can be taken by
    another kernel or a gloo group before the kernel binds them ("Address already in use")."""
    import uuid

    from jupyter_core.paths import jupyter_runtime_dir
    from traitlets.config import Config

    config = Config()
    runtime = jupyter_runtime_dir()
    # one prefix per kernel: jupyter_client's default ("kernel-ipc" in the cwd) is shared by every
    # kernel started in the same directory; "<prefix>-<n>" must fit a unix socket path
    prefix = os.path.join(runtime, f"nbrunner-{uuid.uuid4().hex}-ipc")
    if len(prefix) < 100:
        os.makedirs(runtime, mode=0o700, exist_ok=True)
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = prefix
    return config


def remove_kernel_sockets(config) -> None:
    """Remove the unix sockets a kernel killed before its own cleanup left behind."""
    import glob

    if config.KernelManager.get("transport") == "ipc":
        for path in glob.glob(glob.escape(config.KernelManager.ip) + "-*"):
            Path(path).unlink(missing_ok=True)


def kernel_processes() -> list:
    """The ``Popen`` objects of the kernels papermill started in this process, and the
    pre-warmed kernel it adopted (:mod:`.warm_kernel`)."""
    import gc
    import subprocess

    return [obj for obj in gc.get_objects()
            if isinstance(obj, subprocess.Popen) and "ipykernel" in " ".join(map(str, obj.args or []))] + ADOPTED
