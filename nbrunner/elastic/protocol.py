"""Driver <-> learner protocol over the driver's TCPStore (shared by both sides).

Keys
----
``payload``            cloudpickled objects + run config (set once before any learner starts)
``req``                counter: the newest generation number the driver has planned
``plan/<g>``           pickled :class:`Plan` of generation g
``abort/<g>``          exists when generation g was abandoned before it started
``g<g>/arrive/<lid>``  arrival barrier before the process group of generation g is formed
``g<g>/pg/...``        PrefixStore under which generation g's process group rendezvous
``log/n``, ``log/<i>`` learner -> driver messages (pickled lists of dicts), i = 1..n
``final``              torch.save bytes of the final model/optimizer state
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any, Optional

class ElasticTrainingError(RuntimeError):
    """Training could not continue (an exception in user code on a learner, no learner
    could be started, too many failures).  The first line of the message names the cause
    (for a learner's exception: its type and message, e.g. ``FileNotFoundError: ...``);
    a learner's traceback follows on the next lines."""


def root_cause(tb: str) -> str:
    """``"Type: message"`` of the exception a formatted traceback ends with (the one that
    was raised), on one line; the last line of ``tb`` if it has no such line."""
    lines = [line for line in tb.strip().splitlines() if line.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if not lines[i].startswith((" ", "\t")):
            # the exception line, plus continuation lines of a multi-line message
            return " ".join(" ".join(lines[i:]).split())
    return "an exception (no traceback)"


PAYLOAD = "payload"
REQ = "req"
LOG_N = "log/n"
FINAL = "final"


def plan_key(g: int) -> str:
    return f"plan/{g}"


def abort_key(g: int) -> str:
    return f"abort/{g}"


def arrive_key(g: int, lid: str) -> str:
    return f"g{g}/arrive/{lid}"


def pg_prefix(g: int) -> str:
    return f"g{g}/pg/"


def log_key(i: int) -> str:
    return f"log/{i}"


@dataclass
class Plan:
    gen: int
    members: list[str]           # learner ids; rank = position
    source: str                  # learner whose state everybody takes
    mode: str                    # "live" | "snapshot" | "restart"
    backend: str = "gloo"
    threads: dict = field(default_factory=dict)  # lid -> torch intra-op threads (0 = leave)
    prev_world: int = 0
    reason: str = ""             # "start" | "grant" | "failure" | "restart"
    checkpoint: Optional[str] = None  # restart mode: file the source loads (None: payload state)

    @property
    def world(self) -> int:
        return len(self.members)

    def dumps(self) -> bytes:
        return pickle.dumps(self.__dict__)

    @classmethod
    def loads(cls, b: bytes) -> "Plan":
        return cls(**pickle.loads(b))


def post(store: Any, records: list[dict]) -> None:
    """Append learner -> driver messages (any learner may call this concurrently)."""
    if not records:
        return
    i = store.add(LOG_N, 1)
    store.set(log_key(i), pickle.dumps(records))


def split_bounds(total: int, parts: int, rank: int) -> tuple[int, int]:
    """[lo, hi) of chunk ``rank`` when ``total`` items are split into ``parts`` contiguous
    chunks whose sizes differ by at most one (first chunks larger), like numpy.array_split."""
    q, r = divmod(total, parts)
    lo = rank * q + min(rank, r)
    return lo, lo + q + (1 if rank < r else 0)


def epoch_permutation(n: int, seed: int, epoch: int):
    import torch

    g = torch.Generator()
    g.manual_seed((int(seed) * 1_000_003 + int(epoch) * 7919 + 12345) % (2**63 - 1))
    return torch.randperm(n, generator=g)


def step_seed(seed: int, step: int, rank: int) -> int:
    return (int(seed) * 2_654_435_761 + int(step) * 40_503 + int(rank) * 97 + 1) % (2**63 - 1)
