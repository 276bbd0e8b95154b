"""Driver <-> learner protocol over the driver's TCPStore: the key layout, the plan, and both
ends of it (:class:`Rendezvous` for the driver; :class:`DriverLink` and :class:`Poller` for
a learner).

Keys
----
``payload``            cloudpickled objects + run config (set once before any learner starts)
``req``                counter: the newest generation number the driver has planned
``plan/<g>``           pickled :class:`Plan` of generation g
``abort/<g>``          exists when generation g was abandoned before it started
``assign/<lid>``       pickled slot a standby learner is bound to
``g<g>/arrive/<lid>``  arrival barrier before the process group of generation g is formed
``g<g>/pg/...``        PrefixStore under which generation g's process group rendezvous
``log/n``, ``log/<i>`` learner -> driver messages (pickled lists of dicts), i = 1..n
``final``              torch.save bytes of the final model/optimizer state
"""
from __future__ import annotations

import os
import pickle
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable, Iterator, Optional


class ElasticTrainingError(RuntimeError):
    """Training could not continue (an exception in user code on a learner, no learner
    could be started, too many failures).  The first line of the message names the cause
    (for a learner's exception: its type and message, e.g. ``FileNotFoundError: ...``);
    a learner's traceback follows on the next lines."""


class LearnerExit(Exception):
    """The learner process leaves with ``code``: 0 when no plan it is in is left to run, 3
    when the driver is gone."""

    def __init__(self, code: int = 0):
        self.code = code


class GenerationAbandoned(Exception):
    """A generation was given up before its process group formed (the driver aborted it or
    planned a newer one, or not all its learners arrived in time)."""


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


def assign_key(lid: str) -> str:
    return f"assign/{lid}"


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


def _tcp_store(addr: str, port: int, timeout: float, master: bool = False):
    import torch.distributed as dist

    if master:
        return dist.TCPStore(addr, port, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=timeout))
    return dist.TCPStore(addr, port, is_master=False, timeout=timedelta(seconds=timeout))


class Rendezvous:
    """The driver's end: the TCPStore it hosts, the plans, aborts and slot assignments it
    publishes there, and the learners' messages it reads back in order."""

    def __init__(self, store, port: int):
        self.store = store
        self.port = port               # where learners reach the store
        self._read = 0                 # log records read so far
        self._missing_since: Optional[float] = None

    @classmethod
    def open(cls, payload: bytes, timeout: float) -> "Rendezvous":
        """A store on a free port holding ``payload``, which every learner loads first."""
        store = _tcp_store("0.0.0.0", 0, timeout, master=True)
        store.set(PAYLOAD, payload)
        store.add(REQ, 0)
        store.add(LOG_N, 0)
        return cls(store, store.port)

    def publish(self, plan: Plan) -> None:
        self.store.set(plan_key(plan.gen), plan.dumps())
        v = self.store.add(REQ, 1)
        assert v == plan.gen, (v, plan.gen)

    def abort(self, g: int) -> None:
        self.store.set(abort_key(g), b"1")

    def assign(self, lid: str, slot: dict) -> None:
        self.store.set(assign_key(lid), pickle.dumps(slot))

    def records(self) -> Iterator[dict]:
        """The learners' messages not read yet, oldest first.  A message whose writer died
        between its two store calls is skipped after 2 s."""
        store = self.store
        n = store.add(LOG_N, 0)
        while self._read < n:
            i = self._read + 1
            key = log_key(i)
            if not store.check([key]):
                now = time.monotonic()
                if self._missing_since is None:
                    self._missing_since = now
                if now - self._missing_since < 2.0:
                    return
                self._read = i
                self._missing_since = None
                continue
            self._missing_since = None
            recs = pickle.loads(store.get(key))
            store.delete_key(key)
            self._read = i
            yield from recs

    def final_state(self) -> bytes:
        return self.store.get(FINAL)

    def close(self) -> None:
        """Stop hosting the store."""
        self.store = None


class DriverLink:
    """A learner's end: its connection to the driver's store, the newest plan it has seen,
    and whether it reported a failure since it last joined a generation."""

    def __init__(self, store, lid: str):
        self.store, self.lid = store, lid
        self.checked = 0        # newest plan seen
        self.failed = False

    @classmethod
    def connect(cls, addr: str, port: int, lid: str, timeout: float) -> "DriverLink":
        return cls(_tcp_store(addr, port, timeout), lid)

    def payload(self) -> bytes:
        return self.store.get(PAYLOAD)

    def req(self) -> int:
        return self.store.add(REQ, 0)

    def aborted(self, g: int) -> bool:
        return self.store.check([abort_key(g)])

    def wait_keys(self, keys: list, timeout: float) -> bool:
        """Block until all ``keys`` exist (True) or ``timeout`` passes (False), without
        busy polling.

        Raises:
            LearnerExit: the driver is gone (code 3).
        """
        try:
            self.store.wait(keys, timedelta(seconds=timeout))
            return True
        except Exception:
            try:
                self.req()
            except Exception:
                raise LearnerExit(3)
            return False

    def newest_plan(self) -> Plan:
        """Block until the driver publishes a plan newer than the newest one seen; return it."""
        while True:
            if self.req() <= self.checked:
                self.wait_keys([plan_key(self.checked + 1)], 1.0)
            req = self.req()
            if req > self.checked:
                return self.take_plan(req)

    def take_plan(self, g: int) -> Plan:
        """Plan ``g``, which the learners agreed to switch to."""
        self.checked = max(self.checked, g)
        return Plan.loads(self.store.get(plan_key(g)))

    def barrier(self, plan: Plan, timeout: float) -> None:
        """Wait until every member of ``plan`` arrived.

        Raises:
            GenerationAbandoned: the driver aborted the generation or planned a newer one, or
                not every member arrived within ``timeout``.
        """
        g = plan.gen
        self.store.set(arrive_key(g, self.lid), b"1")
        keys = [arrive_key(g, m) for m in plan.members]
        deadline = time.monotonic() + timeout
        while not self.wait_keys(keys, 0.1):
            if self.aborted(g) or self.req() > g:
                raise GenerationAbandoned(f"generation {g} abandoned")
            if time.monotonic() > deadline:
                raise GenerationAbandoned(f"generation {g}: not all learners arrived within {timeout:.0f}s")

    def joined(self) -> None:
        """The learner has the state of the generation it joined."""
        self.failed = False

    def report_fail(self, g: int, step: int, snap_step: Optional[int], t_last_step: Optional[float],
                    err: str = "") -> None:
        self.failed = True
        post(self.store, [{"type": "fail", "lid": self.lid, "gen": g, "step": step, "snap_step": snap_step,
                           "t_last_step": t_last_step, "error": err[-2000:]}])

    def wait_assignment(self) -> dict:
        """As a standby learner: the slot the driver binds it to."""
        post(self.store, [{"type": "standby", "lid": self.lid, "pid": os.getpid()}])
        key = assign_key(self.lid)
        while not self.wait_keys([key], 1.0):
            pass
        return pickle.loads(self.store.get(key))

    def ready(self, n_train: int, n_test: int, steps_per_epoch: int) -> None:
        post(self.store, [{"type": "ready", "lid": self.lid, "pid": os.getpid(), "host": socket.gethostname(),
                           "n_train": n_train, "n_test": n_test, "steps_per_epoch": steps_per_epoch}])

    def busy(self, what: str) -> None:
        post(self.store, [{"type": "busy", "lid": self.lid, "what": what}])

    def error(self, tb: str) -> None:
        post(self.store, [{"type": "error", "lid": self.lid, "where": "training", "traceback": tb}])

    def set_final(self, blob: bytes) -> None:
        self.store.set(FINAL, blob)


class Poller(threading.Thread):
    """Background thread with its own store connection: keeps ``req`` fresh, forwards queued
    records to the driver, and watches for the driver abandoning the running generation,
    so the training loop never waits on the store."""

    def __init__(self, addr: str, port: int, timeout: float, interval: float = 0.05):
        super().__init__(daemon=True, name="nbrunner-poller")
        self.store = _tcp_store(addr, port, timeout)
        self.req = 0
        self.interval = interval
        self.error: Optional[BaseException] = None
        self._buf: list[dict] = []
        self._urgent = False
        self._lock = threading.Lock()
        self._ev = threading.Event()
        self._stopping = False
        self._last_flush = 0.0
        self._watch: Optional[tuple[int, Callable[[], bool]]] = None
        self._next_abort_check = 0.0

    def watch_abort(self, gen: int, on_abort: Callable[[], bool]) -> None:
        """Call ``on_abort`` (from this thread) once the driver abandoned generation ``gen``, and
        again every check until it returns True."""
        self._watch = (gen, on_abort)

    def unwatch(self) -> None:
        self._watch = None

    def push(self, rec: dict, urgent: bool = False) -> None:
        with self._lock:
            self._buf.append(rec)
            self._urgent = self._urgent or urgent
        if urgent:
            self._ev.set()

    def flush(self) -> None:
        with self._lock:
            buf, self._buf, self._urgent = self._buf, [], False
        if buf:
            post(self.store, buf)
        self._last_flush = time.monotonic()

    def run(self) -> None:
        while not self._stopping:
            self._ev.wait(self.interval)
            self._ev.clear()
            try:
                self.req = self.store.add(REQ, 0)
                self._check_abort()
                if self._buf and (self._urgent or time.monotonic() - self._last_flush > 0.05):
                    self.flush()
            except Exception as e:  # driver gone
                self.error = e
                return

    def _check_abort(self) -> None:
        watch = self._watch
        now = time.monotonic()
        if watch is None or now < self._next_abort_check:
            return
        self._next_abort_check = now + 0.1
        if self.store.check([abort_key(watch[0])]) and self._watch is watch and watch[1]():
            self._watch = None

    def close(self) -> None:
        self._stopping = True
        self._ev.set()
        self.join(timeout=2)
        if self.error is None:
            try:
                self.flush()
            except Exception:
                pass
