"""A sweep's life and its trials' (nbrunner.core.sweeps.lifecycle, .trial_lifecycle): every (state,
event) pair in a table, and the invariants of the modules' docstrings over random event sequences."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from nbrunner.core.errors import Conflict
from nbrunner.core.fence import Refused
from nbrunner.core.sweeps import trial_lifecycle as tl
from nbrunner.core.sweeps.lifecycle import (Advance, Cancel, CancelJob, Ended, JobSeen, Recover, StopTrial,
                                            SubmitTrials, TrialNotSubmitted, TrialsSubmitted, to_read, transition)
from nbrunner.core.sweeps.record import SweepRecord, SweepStatus, Trial, TrialState
from nbrunner.core.sweeps.spec import parse_spec
from nbrunner.core.sweeps.trials import generate_trials

from machine_checks import step_purely

T = "2026-01-01T00:00:05.000Z"
TS = TrialState


def new_sweep(n: int = 2, max_parallel: int | None = 1, early: dict | None = None) -> SweepRecord:
    raw = {"parameters": {"x": list(range(n))}, "objective": {"metric": "acc", "mode": "max"}, "seed": 0,
           "max_parallel": max_parallel}
    if early:
        raw["early_stopping"] = early
    spec = parse_spec(raw)
    return SweepRecord(id="s1", notebook="n.ipynb", name="n", spec=spec.to_dict(),
                       trials=[Trial(parameters=p) for p in generate_trials(spec)])


# ---- one trial ---------------------------------------------------------------------------------------

TRIAL_EVENTS = {
    "submitting": tl.Submitting(), "submitted": tl.Submitted(job="j"), "skipped": tl.Skipped(error="e"),
    "reset": tl.Reset(), "withdrawn": tl.Withdrawn(), "reported": tl.Reported(values=(0.5,)),
    "decided": tl.Decided(rung=1, decision="continue"),
}
TRIAL_PATHS = {
    TS.PENDING: [], TS.SUBMITTING: ["submitting"], TS.SUBMITTED: ["submitting", "submitted"],
    TS.SKIPPED: ["submitting", "skipped"], TS.CANCELLED: ["withdrawn"],
}
TRIAL_LEGAL = {
    TS.PENDING: {"submitting", "withdrawn"},
    TS.SUBMITTING: {"submitted", "skipped", "reset", "withdrawn"},
    TS.SUBMITTED: {"reported", "decided"},
    TS.SKIPPED: set(), TS.CANCELLED: set(),
}


def trial_at(state: TrialState) -> Trial:
    trial = Trial(parameters={"x": 1})
    for name in TRIAL_PATHS[state]:
        trial = tl.step(trial, TRIAL_EVENTS[name])
    assert trial.state is state
    return trial


def check_trial(t: Trial) -> None:
    assert (t.job is not None) == (t.state is TS.SUBMITTED), t
    assert t.error is None or t.state is TS.SKIPPED, t
    assert list(t.decisions.values()).count("stopped") <= 1


@pytest.mark.parametrize("state", list(TrialState))
@pytest.mark.parametrize("event", list(TRIAL_EVENTS))
def test_every_trial_state_and_event(state, event):
    trial = trial_at(state)
    if event in TRIAL_LEGAL[state]:
        check_trial(tl.step(trial, TRIAL_EVENTS[event]))
    else:
        with pytest.raises(Refused):
            tl.step(trial, TRIAL_EVENTS[event])
    assert trial == trial_at(state)  # the record given is never changed


def test_a_rung_is_decided_once_and_a_stopped_trial_never_again():
    trial = tl.step(trial_at(TS.SUBMITTED), tl.Decided(rung=1, decision="continue"))
    with pytest.raises(Refused):
        tl.step(trial, tl.Decided(rung=1, decision="stopped"))
    stopped = tl.step(trial, tl.Decided(rung=2, decision="stopped"))
    assert stopped.decisions == {"1": "continue", "2": "stopped"}
    with pytest.raises(Refused):
        tl.step(stopped, tl.Decided(rung=3, decision="continue"))
    with pytest.raises(Refused):
        tl.step(trial, tl.Decided(rung=3, decision="maybe"))


def test_final_values_take_no_more_reports():
    trial = tl.step(trial_at(TS.SUBMITTED), tl.Reported(values=(0.1, 0.2), final=True))
    assert trial.values == [0.1, 0.2] and trial.values_final
    with pytest.raises(Refused):
        tl.step(trial, tl.Reported(values=(0.1, 0.2, 0.3)))


# ---- a sweep -------------------------------------------------------------------------------------------

RUNNING = JobSeen(status="running")
DONE = JobSeen(status="completed")
EVENTS = {
    "advance": Advance(at=T, jobs={"j0": RUNNING, "j1": RUNNING}),
    "advance_done": Advance(at=T, jobs={"j0": DONE, "j1": DONE}),
    "recover": Recover(),
    "submitted_0": TrialsSubmitted(jobs={0: "j0"}), "not_submitted_0": TrialNotSubmitted(index=0, error="gone"),
    "submitted_1": TrialsSubmitted(jobs={1: "j1"}),
    "cancel": Cancel(at=T, jobs={"j0": RUNNING}),
}
PATHS = {  # two trials, one at a time: the events that lead to each state from a new sweep
    "new": [], "0 submitting": ["advance"], "0 submitted": ["advance", "submitted_0"],
    "1 submitting": ["advance", "submitted_0", "advance_done"],
    "0 skipped, 1 submitting": ["advance", "not_submitted_0", "advance"],
    "completed": ["advance", "submitted_0", "advance_done", "submitted_1", "advance_done"],
    "cancelled": ["cancel"],
}
LEGAL = {
    "new": {"advance", "advance_done", "cancel"},
    "0 submitting": {"advance", "advance_done", "recover", "submitted_0", "not_submitted_0", "cancel"},
    "0 submitted": {"advance", "advance_done", "cancel"},
    "1 submitting": {"advance", "advance_done", "recover", "submitted_1", "cancel"},
    "0 skipped, 1 submitting": {"advance", "advance_done", "recover", "submitted_1", "cancel"},
    "completed": set(), "cancelled": set(),
}


def at_state(name: str) -> SweepRecord:
    return transition.fold(new_sweep(), [EVENTS[e] for e in PATHS[name]]).record


@pytest.mark.parametrize("state", list(PATHS))
@pytest.mark.parametrize("event", list(EVENTS))
def test_every_sweep_state_and_event(state, event):
    rec = at_state(state)
    before = rec.model_dump_json()
    assert transition.allows(rec, EVENTS[event]) == (event in LEGAL[state])
    if event in LEGAL[state]:
        done = transition(rec, EVENTS[event])
        check_invariants(done.record)
        assert done.event == ("sweep" if done.record.finished else "")
        assert any(isinstance(a, Ended) for a in done.actions) == done.record.finished
    else:
        with pytest.raises(Refused):
            transition(rec, EVENTS[event])
    assert rec.model_dump_json() == before


def test_fold_gathers_the_actions_and_stops_at_an_illegal_event():
    done = transition.fold(new_sweep(), [EVENTS[e] for e in ("advance", "submitted_0", "advance_done")])
    assert done.actions == (SubmitTrials(indexes=(0,)), SubmitTrials(indexes=(1,))) and done.event == ""
    with pytest.raises(Refused):
        transition.fold(new_sweep(), [EVENTS["cancel"], EVENTS["advance"]])


def test_the_states_of_the_table():
    assert [t.state for t in at_state("1 submitting").trials] == [TS.SUBMITTED, TS.SUBMITTING]
    assert [t.state for t in at_state("0 skipped, 1 submitting").trials] == [TS.SKIPPED, TS.SUBMITTING]
    done = at_state("completed")
    assert done.status is SweepStatus.COMPLETED and done.finished_at == T and done.job_ids() == ["j0", "j1"]
    with pytest.raises(Conflict, match="sweep s1 is already completed"):
        transition(done, EVENTS["cancel"])


def test_advance_submits_up_to_max_parallel_and_ends_the_sweep_once():
    rec = new_sweep(n=5, max_parallel=2)
    done = transition(rec, Advance(at=T))
    assert done.actions == (SubmitTrials(indexes=(0, 1)),)
    rec = transition(done.record, TrialsSubmitted(jobs={0: "a", 1: "b"})).record
    assert transition(rec, Advance(at=T, jobs={"a": RUNNING, "b": RUNNING})).actions == ()
    done = transition(rec, Advance(at=T, jobs={"a": DONE}))  # b vanished: counts as ended
    assert done.actions == (SubmitTrials(indexes=(2, 3)),)


def test_a_trial_that_could_not_be_submitted_makes_room():
    rec = transition(new_sweep(n=3, max_parallel=1), Advance(at=T)).record
    rec = transition(rec, TrialNotSubmitted(index=0, error="notebook gone")).record
    assert rec.trials[0].state is TS.SKIPPED and rec.trials[0].error == "notebook gone"
    assert transition(rec, Advance(at=T)).actions == (SubmitTrials(indexes=(1,)),)


def test_recover_adopts_the_job_a_dead_submitter_made_and_resets_the_others():
    rec = transition(new_sweep(n=3, max_parallel=None), Advance(at=T)).record
    rec = transition(rec, Recover(found={1: "made"})).record
    assert [(t.state, t.job) for t in rec.trials] == [(TS.PENDING, None), (TS.SUBMITTED, "made"), (TS.PENDING, None)]
    with pytest.raises(Refused):
        transition(rec, Recover())  # none is being submitted


def test_cancel_withdraws_the_unsubmitted_trials_and_cancels_the_unfinished_jobs():
    rec = transition(new_sweep(n=3, max_parallel=2), Advance(at=T)).record
    rec = transition(rec, TrialsSubmitted(jobs={0: "a"})).record
    done = transition(rec, Cancel(at=T, jobs={"a": RUNNING}))
    assert done.actions == (CancelJob(job="a"), Ended(status=SweepStatus.CANCELLED))
    assert [t.state for t in done.record.trials] == [TS.SUBMITTED, TS.CANCELLED, TS.CANCELLED]
    assert done.record.finished_at == T and done.record.status.value == "cancelled"
    assert transition(rec, Cancel(at=T, jobs={"a": DONE})).actions == (Ended(status=SweepStatus.CANCELLED),)


def test_a_sweep_whose_trials_all_ended_cannot_be_cancelled_before_its_advance_completes_it():
    rec = transition(new_sweep(n=2, max_parallel=None), Advance(at=T)).record
    rec = transition(rec, TrialsSubmitted(jobs={0: "a", 1: "b"})).record
    with pytest.raises(Refused, match="already completed"):
        transition(rec, Cancel(at=T, jobs={"a": DONE, "b": DONE}))
    assert transition(rec, Cancel(at=T, jobs={"a": DONE, "b": RUNNING})).record.status.value == "cancelled"
    assert transition(rec, Advance(at=T, jobs={"a": DONE, "b": DONE})).record.status.value == "completed"


def test_early_stopping_stops_the_worse_trials_once_per_rung():
    rec = new_sweep(n=3, max_parallel=None, early={"rungs": [1, 2], "reduction_factor": 3})
    rec = transition(rec, Advance(at=T)).record
    rec = transition(rec, TrialsSubmitted(jobs={0: "a", 1: "b", 2: "c"})).record
    jobs = {"a": RUNNING, "b": RUNNING, "c": RUNNING}
    assert to_read(rec, jobs) == [0, 1, 2] and to_read(rec, {"a": JobSeen(status="queued")}) == []
    reports = {0: tl.Reported(values=(0.1,)), 1: tl.Reported(values=(0.9,)), 2: tl.Reported(values=(0.5,))}
    done = transition(rec, Advance(at=T, jobs=jobs, reports=reports))
    assert done.actions == (StopTrial(index=0, job="a", rung=1, metric="acc"),
                            StopTrial(index=2, job="c", rung=1, metric="acc"))
    rec = done.record
    assert [t.decisions for t in rec.trials] == [{"1": "stopped"}, {"1": "continue"}, {"1": "stopped"}]
    assert transition(rec, Advance(at=T, jobs=jobs)).actions == ()  # decided once


def test_the_record_keeps_its_stored_shape():
    rec = transition(new_sweep(), Advance(at=T)).record
    rec = transition(rec, TrialsSubmitted(jobs={0: "j0"})).record
    stored = json.loads(rec.model_dump_json())
    assert stored["status"] == "running" and [t["state"] for t in stored["trials"]] == ["submitted", "pending"]
    assert list(stored) == ["id", "notebook", "name", "spec", "trials", "options", "owner", "groups", "from_content",
                            "created_at", "finished_at", "status"]
    assert list(stored["trials"][0]) == ["parameters", "state", "job", "error", "values", "values_final", "decisions"]
    again = SweepRecord.model_validate_json(rec.model_dump_json())
    assert again.model_dump() == rec.model_dump() and again.trials[1].state is TS.PENDING and str(again.status) == "running"


# ---- invariants over random event sequences ------------------------------------------------------------

def check_invariants(rec: SweepRecord) -> None:
    assert (rec.finished_at is not None) == rec.finished, rec
    for t in rec.trials:
        check_trial(t)
        if rec.finished:
            assert t.state not in (TS.PENDING, TS.SUBMITTING), rec


class World:
    """The trial jobs a sweep's machine is told about, run by a random script."""

    def __init__(self, rec: SweepRecord):
        self.rec = rec
        self.jobs: dict[str, JobSeen] = {}
        self.values: dict[str, list[float]] = {}
        self.orphans: dict[int, str] = {}
        self.asked: list[int] = []  # trials a SubmitTrials asked for, not answered yet
        self.made = 0
        self.ended = 0
        self.stops: dict[int, int] = {}
        self.jobs_of: dict[int, str] = {}

    def new_job(self) -> str:
        self.made += 1
        job = f"j{self.made}"
        self.jobs[job] = JobSeen(status="queued")
        self.values[job] = []
        return job

    def event(self, move: str, draw):
        if move == "advance":
            reports = {i: tl.Reported(values=tuple(self.values[self.rec.trials[i].job][:4]),
                                      final=self.jobs[self.rec.trials[i].job].finished)
                       for i in to_read(self.rec, self.jobs)}
            return Advance(at=T, jobs=dict(self.jobs), reports=reports)
        if move in ("ok", "fail") and self.asked:
            i = self.asked.pop(0)
            return TrialsSubmitted(jobs={i: self.new_job()}) if move == "ok" else TrialNotSubmitted(index=i, error="e")
        if move == "crash_made" and self.asked:
            self.orphans[self.asked.pop(0)] = self.new_job()
        elif move == "crash":
            self.asked = []
        elif move == "recover":
            self.asked = []
            found, self.orphans = self.orphans, {}
            return Recover(found=found)
        elif move == "cancel":
            return Cancel(at=T, jobs=dict(self.jobs))
        elif move == "any_submitted":  # a wrong event: Refused unless that trial is being submitted
            return TrialsSubmitted(jobs={draw(st.integers(0, len(self.rec.trials) - 1)): "stray"})
        elif self.jobs:
            job = draw(st.sampled_from(sorted(self.jobs)))
            if move == "start" and self.jobs[job].status == "queued":
                self.jobs[job] = JobSeen(status="running")
            elif move == "report" and not self.jobs[job].finished:
                self.values[job].append(draw(st.floats(0, 1)))
            elif move == "finish":
                self.jobs[job] = JobSeen(status=draw(st.sampled_from(["completed", "failed"])))
            elif move == "vanish":
                del self.jobs[job]
        return None

    def carry_out(self, done) -> None:
        for action in done.actions:
            if isinstance(action, SubmitTrials):
                self.asked += list(action.indexes)
            elif isinstance(action, StopTrial):
                self.stops[action.index] = self.stops.get(action.index, 0) + 1
                if action.job in self.jobs:
                    self.jobs[action.job] = JobSeen(status="cancelled")
            elif isinstance(action, Ended):
                self.ended += 1


MOVES = ["advance"] * 6 + ["ok"] * 4 + ["start"] * 4 + ["report"] * 8 + ["finish"] * 2 + [
    "fail", "crash", "crash_made", "recover", "vanish", "any_submitted"]


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 5), st.sampled_from([None, 1, 2]), st.sampled_from([None, [1], [1, 2]]),
       st.lists(st.sampled_from(MOVES), min_size=5, max_size=60), st.integers(0, 150), st.data())
def test_invariants_hold_after_every_event(n, max_parallel, early, moves, cancel_at, data):
    world = World(new_sweep(n, max_parallel, {"rungs": early, "reduction_factor": 2} if early else None))
    limit = max_parallel or n
    for move in moves[:cancel_at] + ["cancel"] * (cancel_at < len(moves)) + moves[cancel_at:]:  # cancelled, or not
        event = world.event(move, data.draw)
        if event is None:
            continue
        rec = world.rec
        done = step_purely(transition, rec, event)
        if done is None:
            continue
        new = done.record
        check_invariants(new)
        assert any(isinstance(a, Ended) for a in done.actions) == (new.finished and not rec.finished)
        for old, t in zip(rec.trials, new.trials):
            assert old.job is None or t.job == old.job  # a trial keeps its job
        world.rec = new
        world.carry_out(done)
        if isinstance(event, Advance) and not new.finished:
            busy = sum(1 for t in new.trials if t.state is TS.SUBMITTING
                       or (t.job in world.jobs and not world.jobs[t.job].finished))
            assert busy <= limit, (busy, limit, new.trials)
        assert world.ended <= 1
        for i, t in enumerate(new.trials):
            assert world.stops.get(i, 0) == list(t.decisions.values()).count("stopped") <= 1
