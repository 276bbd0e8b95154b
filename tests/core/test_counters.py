"""What a job's transitions add to the cluster's counters (nbrunner.core.counters): each end
counted once, first starts with their wait, re-queues by reason, reclaims by account."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from nbrunner.core.counters import (
    BUCKETS, account_label, ended, field, observation, parse_field, request_field, transition_counts,
)
from nbrunner.core.lifecycle import (
    KERNEL_KILLED, CancelRequested, Dispatch, Fail, Finish, Preempt, Progress, ReleaseConfirmed, SetAccount, Shrunk,
    Start, Undispatch, WorkerLost, submitted, transition,
)
from nbrunner.core.models import JobRecord

T0, T1, T2 = "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:40.000Z", "2026-01-01T00:02:10.000Z"


def job(**kw) -> JobRecord:
    return submitted(JobRecord(id="j1", name="n", notebook="n.ipynb", created_at=T0, **kw))


def run(rec: JobRecord, *events) -> tuple[JobRecord, dict[str, float]]:
    """The record after ``events`` and what they added up to."""
    total: dict[str, float] = {}
    for e in events:
        done = transition(rec, e)
        for k, v in transition_counts(rec, done.record, done.event).items():
            total[k] = total.get(k, 0) + v
        rec = done.record
    return rec, total


def test_a_completed_job_counts_its_end_its_wait_and_its_run_once():
    rec, counts = run(job(account="vision"), Dispatch(host="h"), Start(attempt=1, worker="w", host="h", at=T1),
                      Progress(progress=0.5), Finish(attempt=1, at=T2), ReleaseConfirmed(attempt=1, worker="w", at=T2))
    assert counts == {
        field("finished", "completed", "vision"): 1,
        field("wait", "b", "vision", BUCKETS["wait"].index(60)): 1, field("wait", "s", "vision"): 40.0,
        field("run", "b", "vision", BUCKETS["run"].index(300)): 1, field("run", "s", "vision"): 90.0,
    }
    assert ended(rec)


def test_a_killed_kernel_with_retries_left_is_not_an_end_and_counts_as_a_requeue():
    start = Start(attempt=1, worker="w", host="h", at=T1)
    rec, counts = run(job(retries=1), Dispatch(host="h"), start, Fail(attempt=1, error=f"{KERNEL_KILLED}: 9", at=T2))
    # never shown failed: it waits for its worker's release, then runs again
    assert rec.status == "running" and not ended(rec) and field("finished", "failed", "default") not in counts
    rec, counts = run(rec, ReleaseConfirmed(attempt=1, worker="w", at=T2))
    assert rec.status == "queued" and counts == {field("requeues", "kernel_killed"): 1}
    # the second start is not a first start: no second wait
    rec, counts = run(rec, Dispatch(host="h"), Start(attempt=2, worker="w", host="h", at=T2), Finish(attempt=2, at=T2))
    assert set(counts) == {field("finished", "completed", "default"), field("run", "b", "default", 0),
                           field("run", "s", "default")}


def test_requeues_by_reason_and_reclaims_by_account():
    lost = run(job(retries=2), Dispatch(host="h"), Start(attempt=1, worker="w", host="h", at=T1),
               WorkerLost(attempt=1, at=T2))[1]
    assert lost[field("requeues", "worker_lost")] == 1
    undispatched = run(job(), Dispatch(host="h"), Undispatch(attempt=1))[1]
    assert undispatched == {field("requeues", "undispatched"): 1}
    rec, counts = run(job(), SetAccount(account="nlp"), Dispatch(host="h"),
                      Start(attempt=1, worker="w", host="h", at=T1), Shrunk(reason="reclaimed by account vision"),
                      Shrunk(reason="reclaimed by account vision"), Preempt(attempt=1, reason="reclaimed"),
                      ReleaseConfirmed(attempt=1, worker="w", at=T2))
    assert counts[field("reclaims", "nlp")] == 2  # the second Shrunk with the same reason changes nothing
    assert counts[field("requeues", "preempted")] == 1 and rec.status == "queued"


def test_a_job_cancelled_while_queued_ends_once_without_a_run_time():
    rec, counts = run(job(), CancelRequested(at=T1))
    assert counts == {field("finished", "cancelled", "default"): 1}
    assert account_label(rec) == "default"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["dispatch", "undispatch", "start", "finish", "fail", "kill", "lost", "cancel",
                                 "release", "preempt"]), max_size=25))
def test_whatever_happens_a_job_ends_at_most_once(names):
    """Over any sequence of events (refused ones skipped), the ends counted are 1 if the job ended, else 0."""
    from nbrunner.core.lifecycle import Refused

    rec, ends = job(retries=2), 0
    for name in names:
        a = rec.attempt
        e = {"dispatch": Dispatch(host="h"), "undispatch": Undispatch(attempt=a),
             "start": Start(attempt=a, worker="w", host="h", at=T1), "finish": Finish(attempt=a, at=T2),
             "fail": Fail(attempt=a, error="ValueError: x", at=T2),
             "kill": Fail(attempt=a, error=f"{KERNEL_KILLED}: 9", at=T2), "lost": WorkerLost(attempt=a, at=T2),
             "cancel": CancelRequested(at=T2), "release": ReleaseConfirmed(attempt=a, worker="w", at=T2),
             "preempt": Preempt(attempt=a, reason="r")}[name]
        try:
            done = transition(rec, e)
        except Refused:
            continue
        ends += sum(v for k, v in transition_counts(rec, done.record, done.event).items()
                    if parse_field(k)[0] == "finished")
        rec = done.record
    assert ends == (1 if ended(rec) else 0)


def test_fields_and_observations():
    assert parse_field(field("api", "GET", "/jobs/{job_id}", "200")) == ["api", "GET", "/jobs/{job_id}", "200"]
    assert request_field("GET", "/jobs", 404) == field("api", "GET", "/jobs", "404")
    assert parse_field("not json") is None and parse_field("[1]") is None
    assert observation("pass", 0.004) == {field("pass", "b", 0): 1, field("pass", "s"): 0.004}
    assert observation("pass", 0.005)[field("pass", "b", 0)] == 1  # a bound is its bucket's ("le")
    assert observation("pass", 99.0)[field("pass", "b", len(BUCKETS["pass"]))] == 1  # +Inf


def test_the_default_account_is_the_accounts_trees():
    from nbrunner.core import accounts, counters

    assert counters.DEFAULT == accounts.DEFAULT

