"""A pre-started learner interpreter: ``python -m nbrunner.execution.warm_learner``.

A worker's :class:`nbrunner.execution.learner_agent.LearnerAgent` keeps a few of these once its
host has run a learner for a job whose driver is elsewhere: each imports torch, DDP and the
learner module (seconds of a learner's start) and waits for one start request on stdin, a JSON
line ``{"argv", "env", "log"}`` as the agent would run it.  Meanwhile it imports the modules the
last learner started on this host imported to load its job (its dataset function's, say): the
JSON list in the file named by ``NBRUNNER_WARM_IMPORTS``, read again whenever it changes.  It
then becomes that learner in this process (same pid, so signals and exit codes reach the agent
as for a fresh process).
End of stdin without a request: it exits.  Nothing here touches CUDA (importing a module does
not, for the libraries a dataset function uses), so the request's ``CUDA_VISIBLE_DEVICES``
still decides which GPU the learner sees.
"""
from __future__ import annotations

import importlib
import json
import os
import select
import sys
import time

from ..core.config import WARM_IMPORTS

LEARNER_MODULE = "nbrunner.elastic.learner"


def learner_args(argv: list[str]) -> list[str] | None:
    """The learner's own arguments if ``argv`` (interpreter options and all) runs the learner module."""
    for i in range(len(argv) - 1):
        if argv[i] == "-m" and argv[i + 1] == LEARNER_MODULE:
            return argv[i + 2:] if all(a in ("-u",) for a in argv[:i]) else None
    return None


def import_ahead(path: str) -> None:
    """Import the modules listed in the JSON file ``path``, in order; one that fails is skipped
    (the learner that needs it imports it, and fails, itself)."""
    try:
        with open(path) as f:
            names = json.load(f)
    except (OSError, ValueError):
        return
    for name in names if isinstance(names, list) else []:
        if isinstance(name, str) and name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001
                pass


def wait_request(imports: str | None) -> bytes:
    """The start request line (empty at end of stdin), importing the modules listed in
    ``imports`` meanwhile, again whenever that file changes."""
    seen = None
    while True:
        if imports:
            try:
                mtime = os.stat(imports).st_mtime_ns
            except OSError:
                mtime = None
            if mtime is not None and mtime != seen:
                seen = mtime
                import_ahead(imports)
        if select.select([sys.stdin.buffer], [], [], 0.5 if imports else None)[0]:
            return sys.stdin.buffer.readline()


def main() -> None:
    import cloudpickle  # noqa: F401
    import torch._dynamo  # noqa: F401
    from torch.nn.parallel import DistributedDataParallel  # noqa: F401

    from ..elastic import learner

    line = wait_request(os.environ.pop(WARM_IMPORTS.name, None))
    if not line:
        os._exit(0)
    msg = json.loads(line)
    os.environ.update(msg["env"])
    if msg.get("log"):
        os.makedirs(os.path.dirname(msg["log"]) or ".", exist_ok=True)
        fd = os.open(msg["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    sys.stdout.reconfigure(line_buffering=True)
    learner._T_START = time.time()  # its "ready after" counts from the request
    learner._exit_now(learner.main(learner_args(msg["argv"])))


if __name__ == "__main__":
    main()
