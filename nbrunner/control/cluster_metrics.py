"""The cluster's Prometheus metrics, read from Redis at each scrape (``GET /metrics``, ``nbrunner metrics``).

:class:`ClusterCollector` is a ``prometheus_client`` collector: every scrape reads the cluster's
state, so the values are the cluster's whichever process serves them.  Gauges come from the live
jobs (queued and running: their records), the status indexes (how many finished jobs are kept:
one ``ZCARD`` each, never a scan of the history), the live workers and the accounts tree;
counters and histograms from the hash ``nbrunner:counters`` (:mod:`nbrunner.core.counters`),
which the transitions, the scheduler and the API servers add to.  A scrape costs a few round
trips plus reading the live jobs' records, however many finished jobs Redis holds.

Families (``docs/metrics.md`` lists them with their meaning): ``nbrunner_up``,
``nbrunner_jobs{status,account}``, ``nbrunner_jobs_waiting{reason}``, ``nbrunner_jobs_startable``,
``nbrunner_jobs_finished_total{status,account}``, ``nbrunner_job_wait_seconds{account}``,
``nbrunner_job_run_seconds{account}``, ``nbrunner_gpus``, ``nbrunner_gpus_free``,
``nbrunner_gpus_allocated{account}``, ``nbrunner_account_share_gpus{account}``,
``nbrunner_account_guaranteed_gpus{account}``, ``nbrunner_account_gpu_seconds_total{account}``,
``nbrunner_reclaims_total{account}``, ``nbrunner_requeues_total{reason}``,
``nbrunner_workers{host}``, ``nbrunner_scheduler_pass_seconds``,
``nbrunner_scheduler_last_pass_timestamp_seconds``, ``nbrunner_api_requests_total{method,route,code}``.
"""
from __future__ import annotations

import logging
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any, Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from ..core.counters import BUCKETS, REQUEUE_REASONS, account_label, parse_field
from ..core.demands import DEFAULT_POLICY
from ..core.keys import COUNTERS, POLICY, USAGE, status_index
from ..core.models import FINISHED
from . import accounts, grants
from .registration import live_capacity

if TYPE_CHECKING:
    from ..core.models import JobRecord
    from .store import JobStore

log = logging.getLogger("nbrunner.metrics")

# the text format every Prometheus 2 reads (the names here are plain ASCII: the same text in later versions)
TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"
# the codes of a queued job's ``waiting`` reason (the gauge has a series for each, 0 when none waits so)
WAITING_CODES = ("capacity", "no_workers", "gpus_busy", "account_limit", "account_share", "reclaiming", "needs")
# histograms: short name in the counters hash -> (family, help, label names)
HISTOGRAMS = {
    "wait": ("nbrunner_job_wait_seconds", "Seconds from a job's submission to its first start.", ("account",)),
    "run": ("nbrunner_job_run_seconds", "Seconds an ended job ran (its last start to its end).", ("account",)),
    "pass": ("nbrunner_scheduler_pass_seconds", "Seconds one scheduler pass took.", ()),
}


class ClusterCollector:
    """Collects the cluster's metrics from Redis; ``store()`` gives the cluster's store (it may
    raise NoCluster, or Redis may be down: then only ``nbrunner_up 0``)."""

    def __init__(self, store: Callable[[], JobStore]):
        self.store = store

    def describe(self) -> list[Metric]:
        return []  # no description at registration: a registry must not read Redis then

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("nbrunner_up", "1 if the cluster's Redis answered this scrape, else 0.")
        try:
            families = cluster_families(self.store())
        except Exception as exc:  # noqa: BLE001 - no cluster, Redis down: a scrape says so, never a 500
            log.warning("metrics: cannot read the cluster: %s: %s", exc.__class__.__name__, exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families


def cluster_families(store: JobStore) -> list[Metric]:
    """Every family, read from the cluster's Redis now."""
    r = store.r
    with r.pipeline(transaction=False) as p:
        for status in FINISHED:
            p.zcard(status_index(status))
        p.hgetall(COUNTERS)
        p.get(POLICY)
        p.hgetall(USAGE)
        *kept, counts, policy, used = p.execute()
    live = store.all(("queued", "running"))
    out = job_families(live, dict(zip(FINISHED, kept)))
    gpus = gpu_families(store, live, policy or DEFAULT_POLICY, used)
    free = next(m for m in gpus if m.name == "nbrunner_gpus_free").samples[0].value
    out += gpus + [startable_family(live, int(free))] + counter_families(counts)
    return out


# waiting reasons that hold a job back although GPUs are free (its account's, or a pipeline's)
HELD_BACK = ("account_limit", "account_share", "reclaiming", "needs")


def startable_family(live: list[JobRecord], free: int) -> Metric:
    """``nbrunner_jobs_startable``: queued jobs not yet handed to a worker whose ``min_gpus`` fit
    in the free GPUs, and that no account limit or share, reclaim or pipeline holds back (they
    should start at the next pass: the alert on jobs waiting while GPUs are free reads it)."""
    family = GaugeMetricFamily("nbrunner_jobs_startable", "Queued jobs, not yet dispatched, whose min_gpus fit in "
                               "the free GPUs and that nothing else holds back.")
    family.add_metric([], sum(1 for rec in live if rec.status.value == "queued" and rec.phase.value == "waiting"
                              and rec.min_gpus <= free and _waiting_code(rec) not in HELD_BACK))
    return family


def job_families(live: list[JobRecord], kept: dict[str, int]) -> list[Metric]:
    """``nbrunner_jobs`` (live jobs by account; finished ones kept, all accounts: no account label
    value) and ``nbrunner_jobs_waiting`` (queued jobs by the code of their ``waiting`` reason)."""
    jobs = GaugeMetricFamily("nbrunner_jobs", "Jobs by status: queued and running ones by account; finished ones "
                             "kept in Redis, all accounts (account empty).", labels=["status", "account"])
    by = Counter((rec.status.value, account_label(rec)) for rec in live)
    for status in ("queued", "running"):
        if not any(s == status for s, _ in by):
            by[(status, "default")] += 0
    for (status, account), n in sorted(by.items()):
        jobs.add_metric([status, account], n)
    for status, n in kept.items():
        jobs.add_metric([status, ""], n)
    waiting = GaugeMetricFamily("nbrunner_jobs_waiting", "Queued jobs by the code of their waiting reason.",
                                labels=["reason"])
    reasons = Counter({code: 0 for code in WAITING_CODES})
    for rec in live:
        code = _waiting_code(rec)
        if rec.status.value == "queued" and code:
            reasons[code] += 1
    for code, n in reasons.items():
        waiting.add_metric([code], n)
    return [jobs, waiting]


def _waiting_code(rec: Any) -> str | None:
    """The code of a queued record's ``waiting`` reason (``{"code", "message"}``), if it has one."""
    waiting = getattr(rec, "waiting", None)
    code = waiting.get("code") if isinstance(waiting, dict) else getattr(waiting, "code", None)
    return code if isinstance(code, str) and code else None


def gpu_families(store: JobStore, live: list[JobRecord], policy: str, used: dict[str, str]) -> list[Metric]:
    """GPUs in all and free, GPUs held by account, the accounts' shares and guarantees and
    GPU-seconds used, the live workers per host."""
    cap = live_capacity(store)
    slots = cap.slots
    held = [s for s in grants.holdings(store.r) if s in slots]
    total = GaugeMetricFamily("nbrunner_gpus", "GPU slots of the live workers.")
    total.add_metric([], len(slots))
    free = GaugeMetricFamily("nbrunner_gpus_free", "GPU slots of the live workers that no job holds.")
    free.add_metric([], len(slots) - len(held))
    workers = GaugeMetricFamily("nbrunner_workers", "Live workers per host.", labels=["host"])
    for host, n in sorted(Counter(w.get("host", "") for w in cap.workers.values()).items()):
        workers.add_metric([host], n)
    allocated = GaugeMetricFamily("nbrunner_gpus_allocated", "GPUs held by the jobs of an account (a parent "
                                  "account's include its sub-accounts').", labels=["account"])
    share = GaugeMetricFamily("nbrunner_account_share_gpus", "An account's fair share of the GPUs.",
                              labels=["account"])
    guaranteed = GaugeMetricFamily("nbrunner_account_guaranteed_gpus", "GPUs guaranteed to an account.",
                                   labels=["account"])
    holding: dict[str, int] = defaultdict(int)
    tree = accounts.current(store)
    if tree is None:
        holding["default"] = sum(len(rec.slots) for rec in live)
    else:
        from ..core.accounts import held_by_account
        from ..core.placement import demand_of
        from ..core.shares import account_shares

        rows = account_shares(len(slots), [demand_of(rec) for rec in live], policy, tree)
        holding.update(held_by_account((rows.account_of.get(rec.id, account_label(rec)), len(rec.slots))
                                       for rec in live))
        for row in rows.accounts:
            holding.setdefault(row["path"], 0)
            share.add_metric([row["path"]], row["share"])
            guaranteed.add_metric([row["path"]], row["guaranteed"])
    for account, n in sorted(holding.items()):
        allocated.add_metric([account], n)
    gpu_seconds = CounterMetricFamily("nbrunner_account_gpu_seconds", "GPU-seconds an account's jobs held, "
                                      "added up by the scheduler.", labels=["account"])
    for account, seconds in sorted(used.items()):
        gpu_seconds.add_metric([account], float(seconds))
    return [total, free, workers, allocated, share, guaranteed, gpu_seconds]


def counter_families(counts: dict[str, str]) -> list[Metric]:
    """The counters and histograms of the hash ``nbrunner:counters``."""
    finished = CounterMetricFamily("nbrunner_jobs_finished", "Jobs that ended, by status and account.",
                                   labels=["status", "account"])
    reclaims = CounterMetricFamily("nbrunner_reclaims", "GPUs taken back from a job of an account (a preemption, "
                                   "or an elastic job shrunk), by the job's account.", labels=["account"])
    requeues = CounterMetricFamily("nbrunner_requeues", "Jobs that went back to the queue, by reason.",
                                   labels=["reason"])
    requests = CounterMetricFamily("nbrunner_api_requests", "Requests the REST API answered, by method, route "
                                   "pattern and status code.", labels=["method", "route", "code"])
    last_pass = GaugeMetricFamily("nbrunner_scheduler_last_pass_timestamp_seconds",
                                  "When the active scheduler last ended a pass (Unix time).")
    plain = {"finished": finished, "reclaims": reclaims, "requeues": requeues, "api": requests}
    seen_requeues = set()
    buckets: dict[tuple[str, tuple], list[float]] = {}
    sums: dict[tuple[str, tuple], float] = {}
    for key, value in counts.items():
        parts = parse_field(key)
        if parts is None:
            continue
        name, rest = parts[0], [str(x) for x in parts[1:]]
        if name in plain:
            plain[name].add_metric(rest, float(value))
            if name == "requeues":
                seen_requeues.update(rest)
        elif name == "last_pass":
            last_pass.add_metric([], float(value))
        elif name in HISTOGRAMS and rest and rest[0] in ("b", "s"):
            if rest[0] == "s":
                sums[(name, tuple(rest[1:]))] = float(value)
            else:
                labels, index = tuple(rest[1:-1]), int(rest[-1])
                counts_of = buckets.setdefault((name, labels), [0.0] * (len(BUCKETS[name]) + 1))
                if 0 <= index < len(counts_of):
                    counts_of[index] += float(value)
    for reason in REQUEUE_REASONS:
        if reason not in seen_requeues:
            requeues.add_metric([reason], 0)
    out: list[Metric] = [finished, reclaims, requeues, requests, last_pass]
    for name, (family, doc, label_names) in HISTOGRAMS.items():
        hist = HistogramMetricFamily(family, doc, labels=list(label_names))
        for (hname, labels), per_bucket in sorted(buckets.items()):
            if hname != name or len(labels) != len(label_names):
                continue
            cumulative, running = [], 0.0
            for bound, n in zip([*map(str, BUCKETS[name]), "+Inf"], per_bucket):
                running += n
                cumulative.append((_bound(bound), running))
            hist.add_metric(list(labels), cumulative, sums.get((name, labels), 0.0))
        out.append(hist)
    return out


def _bound(text: str) -> str:
    """A bucket bound as Prometheus writes it (``1.0``, ``0.005``, ``+Inf``)."""
    return text if text == "+Inf" else repr(float(text))


def registry_of(store: Callable[[], JobStore]):
    """A ``prometheus_client`` registry holding only the cluster's collector."""
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(ClusterCollector(store))
    return registry


def exposition(store: Callable[[], JobStore]) -> tuple[bytes, str]:
    """The cluster's metrics in Prometheus's text format, and its content type."""
    from prometheus_client import generate_latest

    return generate_latest(registry_of(store)), TEXT_FORMAT
