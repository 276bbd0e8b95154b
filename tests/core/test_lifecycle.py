"""A job's life (nbrunner.core.lifecycle): every (state, event) pair in a table, and the
invariants over random event sequences."""
from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from nbrunner.core.lifecycle import (
    HORSE_DIED, KERNEL_KILLED, WORKER_LOST, AppendTimeline, Cancelled, CancelRequested, Declare, Dispatch, Enqueue,
    Fail, Finish, ForgetRun, FreeSlots, Position, Progress, Purge, Quarantine, Refused, ReleaseConfirmed, RemoveJob,
    RenderHtml, SetPriority, SlotsHeld, Start, StopRun, StoppedEarly, Timeout, TrainingOver, Undispatch, WorkerLost,
    Preempt, SetAccount, Shrunk,
    settle_event, submitted, transition,
)
from nbrunner.core.models import JobPhase, JobRecord

T = "2026-01-01T00:00:05.000Z"
SLOT = (("h", 0),)


def events(attempt: int = 1, worker: str = "w1") -> dict[str, object]:
    """One event of every kind, fresh for a record at ``attempt`` run by ``worker``."""
    return {
        "dispatch": Dispatch(host="h", slots=SLOT), "undispatch": Undispatch(attempt=attempt),
        "start": Start(attempt=attempt, worker=worker, host="h", at=T), "progress": Progress(progress=0.5),
        "finish": Finish(attempt=attempt, at=T), "fail": Fail(attempt=attempt, error="ValueError: x", at=T),
        "timeout": Timeout(attempt=attempt, at=T), "cancel": CancelRequested(at=T),
        "cancelled": Cancelled(attempt=attempt, worker=worker),
        "release": ReleaseConfirmed(attempt=attempt, worker=worker, at=T),
        "lost": WorkerLost(attempt=attempt, at=T), "quarantine": Quarantine(cause="bad", at=T), "purge": Purge(),
        "priority": SetPriority(priority=7000), "position": Position(position=3), "held": SlotsHeld(slots=SLOT),
        "declare": Declare(min_gpus=1, max_gpus=2), "training_over": TrainingOver(), "stopped": StoppedEarly(rung=1),
        "preempt": Preempt(attempt=attempt, reason="reclaimed by account a"),
        "shrunk": Shrunk(reason="reclaimed by account a"), "account": SetAccount(account="a/b"),
    }


STATES = {  # name: (status, phase, error)
    "waiting": ("queued", "waiting", None), "dispatched": ("queued", "dispatched", None),
    "running": ("running", "running", None), "preempting": ("running", "preempting", None),
    "completed/stopping": ("completed", "stopping", None), "completed/ended": ("completed", "ended", None),
    "failed/stopping": ("failed", "stopping", "ValueError: x"), "failed/ended": ("failed", "ended", "ValueError: x"),
    "cancelled/stopping": ("cancelled", "stopping", "cancelled"), "cancelled/ended": ("cancelled", "ended", "cancelled"),
}


def at_state(name: str, **over) -> JobRecord:
    status, phase, error = STATES[name]
    runs = status != "queued"
    fields = dict(id="j1", name="n", notebook="n.ipynb", created_at="2026-01-01T00:00:00.000Z", status=status,
                  phase=phase, error=error, attempt=1, timeout=60.0, retries=2,
                  worker="w1" if runs else None, started_at="2026-01-01T00:00:01.000Z" if runs else None,
                  finished_at="2026-01-01T00:00:04.000Z" if status in ("completed", "failed", "cancelled") else None,
                  slots=[] if phase in ("ended", "waiting") else [["h", 0]],
                  history=[{"status": "queued", "at": "2026-01-01T00:00:00.000Z"}])
    fields["gpus"] = len(fields["slots"])
    if runs:
        fields["history"].append({"status": "running", "at": fields["started_at"]})
    if fields["finished_at"]:
        fields["history"].append({"status": status, "at": fields["finished_at"]})
    return JobRecord(**{**fields, **over})


R, SAME, GONE = "refused", "same", "removed"
# (state, event) -> the state after it: "status/phase", SAME (a change within the state), R or GONE
TABLE = {
    "waiting": dict(dispatch="queued/dispatched", undispatch=R, start=R, progress=SAME, finish=R, fail=R, timeout=R,
                    cancel="cancelled/ended", cancelled=R, release=R, lost=R, quarantine="failed/ended", purge=R,
                    priority=SAME, position=SAME, held=SAME, declare=SAME, training_over=SAME, stopped=R),
    "dispatched": dict(dispatch=R, undispatch="queued/waiting", start="running/running", progress=SAME, finish=R,
                       fail=R, timeout=R, cancel="cancelled/ended", cancelled=R, release=R, lost=R,
                       quarantine="failed/ended", purge=R, priority=SAME, position=SAME, held=SAME, declare=SAME,
                       training_over=SAME, stopped=R),
    "running": dict(dispatch=R, undispatch=R, start=R, progress=SAME, finish="completed/stopping",
                    fail="failed/stopping", timeout="failed/stopping", cancel="cancelled/stopping", cancelled=R,
                    release="failed/ended", lost="queued/waiting", quarantine="failed/stopping", purge=R,
                    priority=SAME, position=R, held=SAME, declare=SAME, training_over=SAME, stopped=R),
    "preempting": dict(dispatch=R, undispatch=R, start=R, progress=SAME, finish="completed/stopping",
                       fail="failed/stopping", timeout="failed/stopping", cancel="cancelled/stopping", cancelled=R,
                       release="queued/waiting", lost="queued/waiting", quarantine="failed/stopping", purge=R,
                       priority=SAME, position=R, held=SAME, declare=SAME, training_over=SAME, stopped=R),
}
for finished in ("completed", "failed", "cancelled"):
    TABLE[f"{finished}/stopping"] = dict(
        dispatch=R, undispatch=R, start=R, progress=R, finish=R, fail=R, timeout=R, cancel=R,
        cancelled=f"{finished}/ended" if finished == "cancelled" else R,
        release=R if finished == "cancelled" else f"{finished}/ended", lost=f"{finished}/ended", quarantine=R,
        purge=R, priority=R, position=R, held=SAME, declare=R, training_over=SAME,
        stopped=SAME if finished == "cancelled" else R)
    TABLE[f"{finished}/ended"] = dict(
        dispatch=R, undispatch=R, start=R, progress=R, finish=R, fail=R, timeout=R, cancel=R, cancelled=R, release=R,
        lost=R, quarantine=R, purge=GONE, priority=R, position=R, held=R, declare=R, training_over=SAME,
        stopped=SAME if finished == "cancelled" else R)

for _row in TABLE.values():
    _row.update(preempt=R, shrunk=R, account=SAME)
TABLE["running"].update(preempt="running/preempting", shrunk=SAME)
TABLE["preempting"].update(shrunk=SAME)
TABLE["dispatched"].update(shrunk=SAME)


def test_the_table_covers_every_state_and_event():
    assert set(TABLE) == set(STATES)
    for row in TABLE.values():
        assert set(row) == set(events())


@pytest.mark.parametrize("state, event", [(s, e) for s in TABLE for e in TABLE[s]])
def test_every_state_and_event(state, event):
    rec = at_state(state)
    before = msgspec.json.encode(rec)
    expected = TABLE[state][event]
    if expected == R:
        with pytest.raises(Refused):
            transition(rec, events()[event])
    else:
        done = transition(rec, events()[event])
        if expected == GONE:
            assert done.record is None and RemoveJob() in done.actions
        else:
            now = done.record
            shown = f"{now.status}/{now.phase}"
            assert shown == (f"{rec.status}/{rec.phase}" if expected == SAME else expected)
            check_invariants(now)
    assert msgspec.json.encode(rec) == before  # the input record never changes


def check_invariants(rec: JobRecord) -> None:
    assert rec.finished == (rec.finished_at is not None), rec
    allowed = {"queued": {"waiting", "dispatched"}, "running": {"running", "preempting"}}.get(
        rec.status, {"stopping", "ended"})
    assert rec.phase in allowed, rec
    if rec.phase is JobPhase.ENDED:
        assert rec.slots == [] and rec.gpus == 0, rec
    assert rec.gpus == len(rec.slots)
    assert rec.error is None or rec.status in ("failed", "cancelled"), rec
    statuses = [h["status"] for h in rec.history]
    assert statuses[0] == "queued" and statuses[-1] == rec.status
    assert all(a != b for a, b in zip(statuses, statuses[1:])), statuses
    assert statuses.count("running") <= rec.retries + rec.preempted + 1, rec


def test_stale_attempts_and_other_workers_are_refused():
    for state, name in [("dispatched", "start"), ("dispatched", "undispatch"), ("running", "finish"),
                        ("running", "fail"), ("running", "lost"), ("failed/stopping", "release"),
                        ("cancelled/stopping", "cancelled")]:
        with pytest.raises(Refused):
            transition(at_state(state), events(attempt=0)[name])
    for state, name in [("running", "release"), ("cancelled/stopping", "cancelled")]:
        with pytest.raises(Refused):
            transition(at_state(state), events(worker="w2")[name])


def test_a_cancelled_dispatch_is_not_started():
    with pytest.raises(Refused):
        transition(at_state("dispatched", cancel_requested=True), events()["start"])


def test_actions_of_the_main_transitions():
    d = transition(at_state("waiting"), Dispatch(host="h", slots=SLOT, timeout_grace_s=30))
    assert d.record.attempt == 2 and d.record.host == "h"
    assert d.actions[-1] == Enqueue(attempt=2, host="h", timeout_s=90)
    done = transition(at_state("running"), Finish(attempt=1, at=T))
    assert done.actions == (RenderHtml(),) and done.record.progress == 1.0 and done.record.finished_at == T
    cancel = transition(at_state("running"), CancelRequested(at=T))
    assert StopRun(attempt=1) in cancel.actions and not any(isinstance(a, FreeSlots) for a in cancel.actions)
    assert cancel.record.cancel_requested and cancel.record.slots == [["h", 0]]  # its worker releases them
    queued = transition(at_state("dispatched"), CancelRequested(at=T))
    assert StopRun(attempt=1) in queued.actions and FreeSlots(reason="cancelled") in queued.actions
    assert transition(at_state("running"), Timeout(attempt=1, at=T)).record.error == \
        "timeout: the job ran longer than its 60 s limit"
    held = transition(at_state("running", slots=[]), SlotsHeld(slots=(("h", 1), ("h", 0))))
    assert held.record.slots == [["h", 0], ["h", 1]] and held.actions == (AppendTimeline(gpus=2),)
    assert transition(held.record, SlotsHeld(slots=(("h", 0), ("h", 1)))).record == held.record  # no change


def test_a_lost_worker_requeues_with_the_error_cleared_then_fails_when_retries_are_spent():
    rec = transition(at_state("running", error=None), WorkerLost(attempt=1, at=T))
    assert rec.record.status == "queued" and rec.record.error is None and rec.record.lost == 1
    assert rec.record.worker is None and rec.record.finished_at is None
    assert rec.actions == (ForgetRun(attempt=1), FreeSlots(reason="requeued"), AppendTimeline(gpus=0))
    assert rec.record.history[-1] == {"status": "queued", "at": T, "reason": WORKER_LOST}
    spent = transition(at_state("running", lost=2), WorkerLost(attempt=1, at=T))
    assert spent.record.status == "failed" and spent.record.error == WORKER_LOST and spent.record.phase == "ended"
    assert RenderHtml() in spent.actions and FreeSlots(reason=WORKER_LOST) in spent.actions


def test_a_killed_kernel_is_run_again_like_a_lost_worker_with_the_error_cleared():
    error = f"{KERNEL_KILLED} by SIGKILL (DeadKernelError)"
    killed = transition(at_state("running"), Fail(attempt=1, error=error, at=T))
    # never a terminal status it would come back from (one terminal history entry, one terminal event)
    assert (killed.record.status, killed.record.phase, killed.event) == ("running", "preempting", "")
    again = transition(killed.record, settle_event(killed.record, 1, "w1", T))
    assert again.record.status == "queued" and again.record.error is None and again.record.finished_at is None
    assert again.record.history[-1]["reason"] == error  # why it runs again
    assert again.record.lost == 1 and again.record.preempted == 0 and again.record.reclaimed is None
    assert [h["status"] for h in again.record.history] == ["queued", "running", "queued"]
    last = transition(at_state("running", lost=2), Fail(attempt=1, error=error, at=T))  # no retry left: it fails
    assert last.record.status == "failed" and last.record.error == error
    killed = at_state("failed/stopping", error=error)  # a record written before: still run again
    again = transition(killed, settle_event(killed, 1, "w1", T))
    assert again.record.status == "queued" and again.record.error is None and again.record.finished_at is None
    spent = transition(at_state("failed/stopping", error=killed.error, lost=2), ReleaseConfirmed(attempt=1,
                                                                                                 worker="w1", at=T))
    assert spent.record.status == "failed" and spent.record.phase == "ended"


def test_a_work_horse_that_died_unrecorded_fails_the_job():
    done = transition(at_state("running"), settle_event(at_state("running"), 1, "w1", T))
    assert done.record.status == "failed" and done.record.error == HORSE_DIED and RenderHtml() in done.actions


def test_a_preempted_job_waits_again_without_spending_a_retry():
    rec = transition(at_state("running", lost=2), Preempt(attempt=1, reason="reclaimed by account vision"))
    assert rec.record.phase == "preempting" and rec.actions == (StopRun(attempt=1),)
    assert rec.record.preempt_reason == "reclaimed by account vision" and rec.record.released is False
    assert rec.record.reclaimed is None  # not shrunk: its page says so only once it is re-queued
    again = transition(rec.record, settle_event(rec.record, 1, "w1", T))
    assert again.record.status == "queued" and (again.record.lost, again.record.preempted) == (2, 1)
    assert again.record.reclaimed == "reclaimed by account vision"
    assert again.record.history[-1] == {"status": "queued", "at": T, "reason": "reclaimed by account vision"}
    with pytest.raises(Refused):
        transition(rec.record, Preempt(attempt=1, reason="again"))


def test_settle_confirms_a_cancel_with_cancelled():
    rec = at_state("cancelled/stopping")
    assert settle_event(rec, 1, "w1", T) == Cancelled(attempt=1, worker="w1")
    assert transition(rec, settle_event(rec, 1, "w1", T)).record.phase == "ended"


def test_priority_bounds_are_checked_by_the_transition():
    from nbrunner.core.errors import InvalidRequest

    for bad in (0, 10001, "5", True, 5.0):
        with pytest.raises(InvalidRequest):
            transition(at_state("waiting"), SetPriority(priority=bad))
    assert transition(at_state("running"), SetPriority(priority=10000)).record.priority == 10000


def test_purge_waits_for_the_release_and_refuses_unfinished_jobs():
    with pytest.raises(Refused, match="still stopping"):
        transition(at_state("completed/stopping"), Purge())
    with pytest.raises(Refused, match="cancel it before deleting it"):
        transition(at_state("running"), Purge())


def test_stopped_early_keeps_the_decisive_metric():
    done = transition(at_state("cancelled/ended"), StoppedEarly(rung=2, metric="acc", value=0.5))
    assert done.record.error == "stopped early at rung 2" and done.record.metrics == {"acc": 0.5}


def test_progress_builds_the_throughput_record():
    rec = at_state("running")
    for metrics in ({"loss": 1.0, "samples_per_s": 410.0, "learners": 1}, {"samples_per_s": 790.0, "learners": 2},
                    {"samples_per_s": 800.0, "learners": 2}, {"learners": 4, "resize_pause_s": 0.8},
                    {"samples_per_s": None, "learners": 4}, {"samples_per_s": 5.0, "learners": True}):
        rec = transition(rec, Progress(metrics=metrics)).record
    assert rec.throughput == {"1": 410.0, "2": 800.0} and rec.pause_s == 0.8
    assert rec.metrics["loss"] == 1.0 and transition(rec, Progress(progress=7)).record.progress == 1.0


def test_progress_keeps_the_trainers_set_up_apart_from_the_metrics():
    rec = at_state("running")
    for metrics in ({"learners": 1, "setup": "ab12"}, {"samples_per_s": 410.0, "learners": 1, "setup": 7},
                    {"learners": 1, "setup": "x" * 65}, {"learners": 1, "setup": ""}):
        rec = transition(rec, Progress(metrics=metrics)).record
    assert rec.setup == "ab12" and "setup" not in rec.metrics and rec.throughput == {"1": 410.0}


def test_a_new_job_is_queued_and_waiting_with_one_history_entry():
    rec = submitted(JobRecord(id="a", name="n", notebook="n.ipynb", created_at=T))
    assert (rec.status, rec.phase, rec.history) == ("queued", "waiting", [{"status": "queued", "at": T}])
    with pytest.raises(Refused):
        submitted(rec)


# ---- random sequences ----------------------------------------------------------------------------------

KINDS = sorted(events())


@st.composite
def scripts(draw):
    steps = []
    for _ in range(draw(st.integers(1, 40))):
        steps.append((draw(st.sampled_from(KINDS)), draw(st.sampled_from([0, 0, 0, -1, 1])),
                      draw(st.sampled_from(["w1", "w1", "w2"])), draw(st.booleans())))
    return steps


@settings(max_examples=200, deadline=None)
@given(scripts(), st.integers(0, 3))
def test_invariants_hold_after_every_event(script, retries):
    rec = submitted(JobRecord(id="j", name="n", notebook="n.ipynb", created_at="2026-01-01T00:00:00.000Z",
                              retries=retries, timeout=5.0))
    status_changes = 0
    for kind, attempt_shift, worker, killed in script:
        ev = events(attempt=rec.attempt + attempt_shift, worker=worker)[kind]
        if kind == "fail" and killed:
            ev = Fail(attempt=ev.attempt, error=f"{KERNEL_KILLED} by SIGKILL", at=T)
        if kind == "start":
            ev = Start(attempt=ev.attempt, worker=worker, host="h", at=T)
        before = rec
        try:
            done = transition(rec, ev)
        except Refused:
            assert rec == before
            continue
        if done.record is None:
            break
        status_changes += done.record.status != rec.status
        rec = done.record
        check_invariants(rec)
        assert len(rec.history) == 1 + status_changes
        assert rec.lost <= rec.retries
