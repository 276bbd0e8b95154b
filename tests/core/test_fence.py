"""The attempt fence (nbrunner.core.lifecycle.fence): a write on behalf of an attempt is refused
once the record has moved on, so a worker cut off by a partition that comes back cannot change
the record of the job re-queued and running elsewhere.  A table of (state, attempt) for the job's
own events, and a property over random lives of a job."""
from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from nbrunner.control.job_channel import stamped
from nbrunner.core.fence import fence_files
from nbrunner.core.lifecycle import (
    Declare, Dispatch, Progress, Refused, Start, TrainingOver, WorkerLost, fence, submitted, transition,
)
from nbrunner.core.models import JobRecord

from tests.core.test_lifecycle import STATES, T, at_state, events

OWN = {"progress": Progress(progress=0.5), "declare": Declare(min_gpus=1, max_gpus=2),
       "training_over": TrainingOver()}
LIVE = {"dispatched", "running", "preempting", "completed/stopping", "failed/stopping", "cancelled/stopping"}
WRITES = ("progress", "declare", "training_over")  # a job's own events (job_channel.JOB_EVENTS)


@pytest.mark.parametrize("state", sorted(STATES))
@pytest.mark.parametrize("offset", [-1, 0])
def test_fence_table(state, offset):
    """attempt 1 is the record's; attempt 0 is stale everywhere, attempt 1 only outside its live phases."""
    rec = at_state(state)
    owns = offset == 0 and state in LIVE
    if owns:
        fence(rec, rec.attempt + offset)
    else:
        with pytest.raises(Refused, match="stale"):
            fence(rec, rec.attempt + offset)
    fence(rec, None)  # a write naming no attempt (the scheduler's, a user's) is never fenced


@pytest.mark.parametrize("name", WRITES)
@pytest.mark.parametrize("state", sorted(STATES))
def test_a_stale_attempts_own_writes_change_nothing(name, state):
    rec = at_state(state)
    before = msgspec.json.encode(rec)
    stale = msgspec.structs.replace(OWN[name], attempt=0)
    with pytest.raises(Refused):
        transition(rec, stale)
    assert msgspec.json.encode(rec) == before


def test_after_a_requeue_the_old_attempt_is_fenced_until_and_after_the_next_dispatch():
    rec = at_state("running")
    requeued = transition(rec, WorkerLost(attempt=1, at=T)).record
    assert (requeued.status, requeued.phase, requeued.attempt) == ("queued", "waiting", 1)
    with pytest.raises(Refused):  # still attempt 1 in the record, but back in the queue: not its any more
        transition(requeued, Progress(progress=0.9, attempt=1))
    again = transition(transition(requeued, Dispatch(host="h")).record,
                       Start(attempt=2, worker="w2", host="h", at=T)).record
    for name in WRITES:
        with pytest.raises(Refused):
            transition(again, msgspec.structs.replace(OWN[name], attempt=1))
    assert transition(again, Progress(progress=0.9, attempt=2)).record.progress == 0.9


def test_a_jobs_events_are_stamped_with_its_attempt():
    assert stamped(Progress(progress=0.1), 3).attempt == 3
    assert stamped(Progress(progress=0.1, attempt=1), 3).attempt == 3  # a request cannot name another attempt
    assert stamped(Progress(progress=0.1), None).attempt is None


@st.composite
def lives(draw):
    """Random steps: an event kind and which attempt (relative to the record's) sends it."""
    kinds = sorted(events())
    return [(draw(st.sampled_from(kinds)), draw(st.sampled_from([-2, -1, 0, 0, 0])), draw(st.booleans()))
            for _ in range(draw(st.integers(1, 50)))]


@settings(max_examples=200, deadline=None)
@given(lives(), st.integers(0, 3))
def test_no_write_of_a_past_attempt_ever_changes_the_record(life, retries):
    """Whatever happened before, an event of an attempt that no longer owns the record (an earlier
    one, or the current one once back in the queue or released) is refused and changes nothing."""
    rec = submitted(JobRecord(id="j", name="n", notebook="n.ipynb", created_at="2026-01-01T00:00:00.000Z",
                              retries=retries, timeout=5.0))
    for kind, shift, own in life:
        attempt = rec.attempt + shift
        ev = events(attempt=attempt)[kind]
        if kind in OWN and own:
            ev = msgspec.structs.replace(ev, attempt=attempt)
        carries = getattr(ev, "attempt", None) is not None
        try:
            fence(rec, attempt)
            owner = True
        except Refused:
            owner = False
        before = msgspec.json.encode(rec)
        try:
            done = transition(rec, ev)
        except Refused:
            assert msgspec.json.encode(rec) == before
            continue
        if carries and shift < 0:
            raise AssertionError(f"{kind} of past attempt {attempt} changed the record at attempt {rec.attempt}")
        if kind in OWN and carries and not owner:
            raise AssertionError(f"{kind} of attempt {attempt} changed the record in phase {rec.phase}")
        if done.record is None:
            break
        rec = done.record


@pytest.mark.parametrize("mark, attempt, owns", [
    (None, 3, True),       # no attempt claimed the directory (a job run outside a worker)
    ("3", 3, True),
    ("3\n", 3, True),
    ("4", 3, False),       # re-run elsewhere: the stale attempt's files are refused
    ("2", 3, False),       # a newer attempt never yields to an older one either
    ("", 3, False),
])
def test_fence_files(mark, attempt, owns):
    if owns:
        fence_files(mark, attempt)
    else:
        with pytest.raises(Refused, match=f"attempt {attempt} is stale"):
            fence_files(mark, attempt)
