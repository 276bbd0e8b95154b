"""A schedule's life (nbrunner.core.schedule_lifecycle): every (state, event) pair in a table, and
the invariants of the module's docstring over random event sequences."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings, strategies as st

from nbrunner.core.errors import InvalidRequest
from nbrunner.core.fence import Refused
from nbrunner.core.models import parse_time
from nbrunner.core.schedule_lifecycle import Delete, Edit, Fire, Ran, Removed, SubmitRun, created, transition
from nbrunner.core.schedules import ScheduleRecord, ScheduleSpec, ScheduleState, iso

from machine_checks import step_purely

T0 = datetime(2026, 1, 1, 0, 0, 0, tzinfo=timezone.utc)
DUE = iso(T0 + timedelta(seconds=60))


def new_schedule(**fields) -> ScheduleRecord:
    spec = ScheduleSpec.parse({"notebook": "n.ipynb", **({} if "cron" in fields else {"every": 60}), **fields})
    return created(spec, "sc1", T0, notebook="n.ipynb", owner="ann", groups=["g"])


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


EVENTS = {
    "fire": Fire(due=DUE, at=at(61)), "fire_early": Fire(due=DUE, at=at(30)),
    "fire_stale": Fire(due=iso(at(0)), at=at(61)), "fire_changed": Fire(due=DUE, at=at(61), last_job="other"),
    "pause": Edit(changes={"paused": True}, at=at(10)), "resume": Edit(changes={"paused": False}, at=at(70)),
    "clock": Edit(changes={"every": 30}, at=at(70)),
    "ran": Ran(job="job1"), "ran_error": Ran(error="notebook gone"), "ran_nothing": Ran(),
    "delete": Delete(),
}
PATHS = {"active": [], "paused": ["pause"], "fired": ["fire"], "resumed": ["pause", "resume"]}
ANY_STATE = {"pause", "resume", "clock", "ran", "ran_error", "delete"}
LEGAL = {
    "active": ANY_STATE | {"fire"},
    "paused": ANY_STATE,
    "fired": ANY_STATE,  # its fire time was fired: never again
    "resumed": ANY_STATE,  # next fire time counted from the resume: the old one is gone
}


def at_state(name: str) -> ScheduleRecord:
    rec = new_schedule()
    for event in PATHS[name]:
        rec = transition(rec, EVENTS[event]).record
    return rec


@pytest.mark.parametrize("state", list(PATHS))
@pytest.mark.parametrize("event", list(EVENTS))
def test_every_state_and_event(state, event):
    rec = at_state(state)
    before = rec.model_dump_json()
    if event in LEGAL[state]:
        done = transition(rec, EVENTS[event])
        if done.record is not None:
            check_invariants(done.record)
    else:
        with pytest.raises(Refused):
            transition(rec, EVENTS[event])
    assert rec.model_dump_json() == before


def test_the_states_of_the_table():
    assert at_state("active").state is ScheduleState.ACTIVE and at_state("active").next_run_at == DUE
    paused = at_state("paused")
    assert paused.state is ScheduleState.PAUSED and paused.next_run_at is None
    assert at_state("resumed").next_run_at == iso(at(130))  # every 60 s from the resume
    fired = at_state("fired")
    assert fired.next_run_at == iso(at(120)) and fired.last_run_at == iso(at(61))


def test_fire_moves_past_every_missed_time_and_asks_for_one_run():
    done = transition(new_schedule(), Fire(due=DUE, at=at(605)))
    assert done.actions == (SubmitRun(due=DUE),) and done.event == ""
    assert done.record.next_run_at == iso(at(660)) and done.record.last_run_at == iso(at(605))
    noted = transition(done.record, Ran(job="j1")).record
    assert noted.last_job == "j1" and noted.last_error is None
    failed = transition(noted, Ran(error="notebook gone")).record
    assert failed.last_job == "j1" and failed.last_error == "notebook gone"


def test_overlap_skip_notes_the_skip_instead_of_a_run():
    rec = transition(new_schedule(), Ran(job="j1")).record
    done = transition(rec, Fire(due=DUE, at=at(61), previous_active=True, last_job="j1"))
    assert done.actions == () and done.event == "schedule"
    assert done.record.last_error == "skipped: the previous run j1 has not finished"
    assert done.record.next_run_at == iso(at(120)) and done.record.last_job == "j1"
    queue = transition(transition(new_schedule(overlap="queue"), Ran(job="j1")).record,
                       Fire(due=DUE, at=at(61), previous_active=True, last_job="j1"))
    assert queue.actions == (SubmitRun(due=DUE),)


def test_edit_checks_like_a_create_and_changes_nothing_when_bad():
    rec = new_schedule()
    with pytest.raises(InvalidRequest, match="every must be between"):
        transition(rec, Edit(changes={"every": 0}, at=at(1)))
    faster = transition(rec, Edit(changes={"every": 45}, at=at(10))).record
    assert faster.every == 45 and faster.next_run_at == iso(at(55))  # a new clock counts from the edit
    renamed = transition(rec, Edit(changes={"name": "nightly", "notebook": "m.ipynb"}, at=at(1), from_content=True))
    assert renamed.record.name == "nightly" and renamed.record.from_content and renamed.record.next_run_at == DUE


def test_delete_removes_the_record_and_tells_its_owner():
    done = transition(new_schedule(), Delete())
    assert done.record is None and done.actions == (Removed(owner="ann"),) and done.event == "schedule"


def test_the_record_keeps_its_stored_shape():
    rec = transition(new_schedule(), Fire(due=DUE, at=at(61))).record
    stored = json.loads(rec.model_dump_json())
    assert list(stored) == ["id", "name", "notebook", "parameters", "cron", "every", "timezone", "overlap", "paused",
                            "next_run_at", "last_run_at", "created_at", "owner", "min_gpus", "max_gpus", "priority",
                            "timeout", "groups", "from_content", "last_job", "last_error", "pipeline"]
    assert "state" not in rec.to_dict() and stored["next_run_at"] == "2026-01-01T00:02:00.000Z"


# ---- invariants over random event sequences ------------------------------------------------------------

def check_invariants(rec: ScheduleRecord) -> None:
    assert (rec.next_run_at is None) == rec.paused, rec
    assert rec.state is (ScheduleState.PAUSED if rec.paused else ScheduleState.ACTIVE)


MOVES = ["wait", "wait", "fire", "fire", "fire_old", "pause", "resume", "every", "ran", "ran_error"]


# every, not cron: croniter runs a process when first imported (platform.architecture), which the fast
# tier forbids; cron's fire times are next_fire's, tested with real schedules in tests/control
@settings(max_examples=100, deadline=None)
@given(st.sampled_from([{"every": 60}, {"every": 7}, {"every": 3600, "timezone": "Europe/Paris"}]),
       st.sampled_from(["skip", "queue"]), st.lists(st.tuples(st.sampled_from(MOVES), st.integers(1, 400)),
                                                     max_size=40))
def test_invariants_hold_after_every_event(clock, overlap, moves):
    rec = new_schedule(overlap=overlap, **clock)
    now = T0
    fired: list[str] = []
    runs = 0
    for move, n in moves:
        if move == "wait":
            now += timedelta(seconds=n)
            continue
        event = {
            "fire": Fire(due=rec.next_run_at or DUE, at=now, previous_active=n % 2 == 0, last_job=rec.last_job),
            "fire_old": Fire(due=fired[-1] if fired else DUE, at=now, last_job=rec.last_job),
            "pause": Edit(changes={"paused": True}, at=now), "resume": Edit(changes={"paused": False}, at=now),
            "every": Edit(changes={"every": n, "cron": None}, at=now),
            "ran": Ran(job=f"j{n}"), "ran_error": Ran(error="e"),
        }[move]
        done = step_purely(transition, rec, event)
        if done is None:
            continue
        new = done.record
        check_invariants(new)
        if isinstance(event, Fire):
            assert not rec.paused and event.due == rec.next_run_at and parse_time(event.due) <= now
            assert not fired or parse_time(event.due) > parse_time(fired[-1])  # each fire time at most once
            fired.append(event.due)
            assert parse_time(new.next_run_at) > now and new.last_run_at == iso(now)
            skipped = (new.last_error or "").startswith("skipped:")
            assert (done.actions == (SubmitRun(due=event.due),)) != skipped
            assert skipped == (overlap == "skip" and event.previous_active and bool(rec.last_job))
            runs += not skipped
        else:
            assert new.last_run_at == rec.last_run_at
        if not isinstance(event, Ran):
            assert new.last_job == rec.last_job
        rec = new
    assert runs <= len(fired)
