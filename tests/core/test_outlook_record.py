"""The record's outlook (waiting, expected_start, expected_end) through the Position event, pure."""
from __future__ import annotations

import pytest

from nbrunner.core.lifecycle import Dispatch, Finish, Position, Refused, Start, transition

from .test_lifecycle import T, at_state

WHY = {"code": "gpus_busy", "message": "needs 2 GPUs; 2 of the 2 go to the 1 job ahead of it"}
START, END = "2026-01-01T00:01:00.000Z", "2026-01-01T00:02:00.000Z"


def test_a_queued_job_takes_why_it_waits_and_its_times_as_one_pushed_change():
    done = transition(at_state("waiting"), Position(position=1, outlook={
        "waiting": WHY, "expected_start": START, "expected_end": END}))
    rec = done.record
    assert (rec.queue_position, rec.waiting, rec.expected_start, rec.expected_end) == (1, WHY, START, END)
    assert done.event == "waiting"  # an entry on the event stream: pushed like every change
    assert rec.to_dict()["waiting"] == WHY and rec.to_dict()["expected_start"] == START
    again = transition(rec, Position(position=1, outlook={"waiting": WHY}))
    assert again.event == "" and again.record == rec  # nothing new: nothing written to the stream
    moved = transition(rec, Position(position=2))  # a position alone is not pushed (as before)
    assert moved.event == "" and moved.record.queue_position == 2 and moved.record.waiting == WHY


def test_dispatch_clears_the_reason_and_the_expected_start_and_the_end_clears_the_expected_end():
    rec = transition(at_state("waiting"), Position(position=None, outlook={
        "waiting": WHY, "expected_start": START, "expected_end": END})).record
    rec = transition(rec, Dispatch(host="h", slots=(("h", 0),))).record
    assert rec.waiting is None and rec.expected_start is None and rec.expected_end == END
    rec = transition(rec, Start(attempt=rec.attempt, worker="w1", host="h", at=T)).record
    rec = transition(rec, Position(position=None, outlook={"expected_end": START})).record
    assert rec.expected_end == START
    rec = transition(rec, Finish(attempt=rec.attempt, at=T)).record
    assert rec.expected_end is None


def test_a_running_job_takes_only_an_expected_end_and_an_ended_one_nothing():
    running = at_state("running")
    with pytest.raises(Refused):
        transition(running, Position(position=None, outlook={"waiting": WHY}))
    with pytest.raises(Refused):
        transition(running, Position(position=3))
    for name in ("completed/stopping", "cancelled/ended"):
        with pytest.raises(Refused):
            transition(at_state(name), Position(position=None, outlook={"expected_end": END}))
