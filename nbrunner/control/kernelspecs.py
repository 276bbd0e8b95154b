"""Whether a kernel is installed, as jupyter_client's ``KernelSpecManager`` would say, but cheaply.

``KernelSpecManager().get_kernel_spec(name)`` looks in ``jupyter_path("kernels")``, then in
IPython's ``<ipython dir>/kernels``, then takes ipykernel's own ``python3``.  Finding IPython's
directory imports IPython: about 0.45 s of every ``nbrunner submit``.  :func:`installed` looks
in the same places in the same order, with the same name matching, without importing IPython,
and leaves the answer to ``KernelSpecManager`` wherever the two could differ (a kernel.json it
might refuse, a kernel provisioner to look up, an IPython kernels directory, an unusual name).
"""
from __future__ import annotations

import json
import os
import re

NATIVE = "python3"  # jupyter_client's NATIVE_KERNEL_NAME: ipykernel's own spec
_VALID_NAME = re.compile(r"^[a-z0-9._\-]+$", re.IGNORECASE)  # others make KernelSpecManager log a warning
_TEXT_KEYS = ("name", "mimetype", "display_name", "language", "kernel_protocol_version")


def installed(name: str) -> bool | None:
    """True or False as ``KernelSpecManager().get_kernel_spec(name)`` would answer (a spec or
    NoSuchKernel), or None where only it can tell."""
    found = find(name)
    return True if isinstance(found, str) else found


def find(name: str) -> str | bool | None:
    """As :func:`installed`, but the directory of the spec where one was found (ipykernel's own
    ``python3``, which has none here, is True)."""
    from jupyter_core.paths import jupyter_path

    if not _VALID_NAME.match(name):
        return None
    wanted = name.lower()
    for kernel_dir in [d for d in jupyter_path("kernels") if os.path.isdir(d)]:
        try:
            entries = os.listdir(kernel_dir)
        except OSError:
            return None
        for entry in entries:
            path = os.path.join(kernel_dir, entry)
            if entry.lower() == wanted and os.path.isdir(path) and os.path.isfile(os.path.join(path, "kernel.json")):
                return path if _plain_spec(path) else None
    if any(os.path.isdir(os.path.join(d, "kernels")) for d in _ipython_dirs()):
        return None
    if wanted == NATIVE:
        if name != NATIVE:  # KernelSpecManager reads another spec for "Python3"
            return None
        from importlib.util import find_spec

        return find_spec("ipykernel") is not None
    return False


def _ipython_dirs() -> list[str]:
    """Every directory IPython could take as its own (``IPython.paths.get_ipython_dir``)."""
    if os.environ.get("IPYTHONDIR"):
        return [os.path.normpath(os.path.expanduser(os.environ["IPYTHONDIR"]))]
    home = os.path.realpath(os.path.expanduser("~"))
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return [os.path.join(home, ".ipython"), os.path.join(config, "ipython")]


def _plain_spec(path: str) -> bool:
    """True if ``path``/kernel.json is one ``KernelSpecManager`` takes as it is: the types its
    ``KernelSpec`` accepts and the default kernel provisioner."""
    try:
        with open(os.path.join(path, "kernel.json"), encoding="utf-8") as f:
            spec = json.load(f)
    except (OSError, ValueError):
        return False
    if not isinstance(spec, dict) or "resource_dir" in spec:
        return False
    if any(k in spec and not isinstance(spec[k], str) for k in _TEXT_KEYS):
        return False
    if any(k in spec and not isinstance(spec[k], dict) for k in ("env", "metadata")):
        return False
    argv, mode = spec.get("argv", []), spec.get("interrupt_mode", "signal")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return False
    if not isinstance(mode, str) or mode.lower() not in ("message", "signal"):
        return False
    return "kernel_provisioner" not in spec.get("metadata", {})
