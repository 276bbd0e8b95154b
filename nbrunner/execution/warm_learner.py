"""A pre-started learner interpreter: ``python -m nbrunner.execution.warm_learner``.

A worker's :class:`nbrunner.execution.learner_agent.LearnerAgent` keeps a few of these once its
host has run a learner for a job whose driver is elsewhere: each imports torch, DDP and the
learner module (seconds of a learner's start) and waits for one start request on stdin, a JSON
line ``{"argv", "env", "log"}`` as the agent would run it.  It then becomes that learner in
this process (same pid, so signals and exit codes reach the agent as for a fresh process).
End of stdin without a request: it exits.  Nothing here touches CUDA, so the request's
``CUDA_VISIBLE_DEVICES`` still decides which GPU the learner sees.
"""
from __future__ import annotations

import json
import os
import sys
import time

LEARNER_MODULE = "nbrunner.elastic.learner"


def learner_args(argv: list[str]) -> list[str] | None:
    """The learner's own arguments if ``argv`` (interpreter options and all) runs the learner module."""
    for i in range(len(argv) - 1):
        if argv[i] == "-m" and argv[i + 1] == LEARNER_MODULE:
            return argv[i + 2:] if all(a in ("-u",) for a in argv[:i]) else None
    return None


def main() -> None:
    import cloudpickle  # noqa: F401
    import torch._dynamo  # noqa: F401
    from torch.nn.parallel import DistributedDataParallel  # noqa: F401

    from ..elastic import learner

    line = sys.stdin.buffer.readline()
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
