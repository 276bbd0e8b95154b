"""A pipeline's life (nbrunner.core.pipelines.lifecycle): every (state, event) pair in a table,
and the invariants of the module docstring over random graphs and event sequences."""
from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from nbrunner.core.lifecycle import Refused
from nbrunner.core.pipelines.lifecycle import (Begin, Cancel, CancelJob, Ended, StepEnded, StepNotSubmitted,
                                               StepStarted, StepSubmitted, SubmitStep, created, rerun_steps,
                                               spec_of, transition)
from nbrunner.core.pipelines.record import PipelineRecord, StepState, StepStatus
from nbrunner.core.pipelines.spec import parse_pipeline

T = "2026-01-01T00:00:05.000Z"
S = StepStatus


def new_pipeline(text: str, pid: str = "p1") -> PipelineRecord:
    spec = parse_pipeline(text)
    steps = {n: StepState(needs=list(s.needs), notebook=s.notebook, kind=s.kind) for n, s in spec.steps.items()}
    return created(PipelineRecord(id=pid, name=spec.name, steps=steps, on_failure=spec.on_failure,
                                  spec=msgspec.to_builtins(spec)))


CHAIN = "steps: {a: {notebook: a.ipynb}, b: {notebook: b.ipynb, needs: [a], parameters: {x: '{{ steps.a.outputs.v }}'}}}"

EVENTS = {
    "begin": Begin(at=T), "cancel": Cancel(at=T),
    "submit_a": StepSubmitted(step="a", job="ja"), "not_submit_a": StepNotSubmitted(step="a", error="e", at=T),
    "start_a": StepStarted(step="a"), "end_a": StepEnded(step="a", status=S.COMPLETED, at=T, outputs={"v": 7}),
    "fail_a": StepEnded(step="a", status=S.FAILED, at=T, error="ValueError: x"),
    "submit_b": StepSubmitted(step="b", job="jb"), "start_b": StepStarted(step="b"),
    "end_b": StepEnded(step="b", status=S.COMPLETED, at=T),
}
PATHS = {  # state: the events that lead there from a new pipeline
    "new": [], "a queued": ["begin"], "a submitted": ["begin", "submit_a"],
    "a running": ["begin", "submit_a", "start_a"], "b queued": ["begin", "submit_a", "end_a"],
    "b submitted": ["begin", "submit_a", "end_a", "submit_b"],
    "b running": ["begin", "submit_a", "end_a", "submit_b", "start_b"],
    "completed": ["begin", "submit_a", "end_a", "submit_b", "end_b"],
    "failed": ["begin", "submit_a", "fail_a"], "cancelled": ["begin", "cancel"],
}
LEGAL = {
    "new": {"begin", "cancel"},
    "a queued": {"submit_a", "not_submit_a", "cancel"},
    "a submitted": {"start_a", "end_a", "fail_a", "cancel"},
    "a running": {"end_a", "fail_a", "cancel"},
    "b queued": {"submit_b", "cancel"},
    "b submitted": {"start_b", "end_b", "cancel"},
    "b running": {"end_b", "cancel"},
    "completed": set(), "failed": set(), "cancelled": set(),
}


def at_state(name: str) -> PipelineRecord:
    rec = new_pipeline(CHAIN)
    for event in PATHS[name]:
        rec = transition(rec, EVENTS[event]).record
    return rec


@pytest.mark.parametrize("state", list(PATHS))
@pytest.mark.parametrize("event", list(EVENTS))
def test_every_state_and_event(state, event):
    rec = at_state(state)
    if event in LEGAL[state]:
        done = transition(rec, EVENTS[event])
        check_invariants(done.record)
        assert done.event == "pipeline"
    else:
        with pytest.raises(Refused):
            transition(rec, EVENTS[event])


def test_the_states_of_the_table():
    assert at_state("b queued").steps["b"].status is S.QUEUED
    assert at_state("completed").status.value == "completed" and at_state("completed").finished_at == T
    failed = at_state("failed")
    assert failed.status.value == "failed" and failed.steps["b"].status is S.SKIPPED
    assert failed.steps["b"].error == "skipped: a failed"


def test_templates_are_filled_typed_when_the_step_is_queued():
    rec = at_state("a submitted")
    done = transition(rec, EVENTS["end_a"])
    assert done.actions == (SubmitStep(step="b", parameters={"x": 7}),)
    assert done.record.status.value == "running" and done.record.steps["a"].outputs == {"v": 7}


def test_a_pending_step_says_what_it_waits_for():
    rec = at_state("a running")
    assert rec.steps["b"].waiting == {"code": "needs", "message": "waits for a"}
    assert rec.steps["a"].waiting is None
    assert at_state("b queued").steps["b"].waiting is None


def test_a_missing_output_fails_the_step_and_skips_nothing_else_that_can_run():
    rec = new_pipeline("steps: {a: {notebook: a.ipynb}, b: {notebook: b.ipynb, needs: [a], "
                       "parameters: {x: '{{ steps.a.outputs.v }}'}}, c: {notebook: c.ipynb, needs: [b]}, "
                       "d: {notebook: d.ipynb, needs: [a]}}")
    for e in (Begin(at=T), StepSubmitted(step="a", job="ja"), StepEnded(step="a", status=S.COMPLETED, at=T)):
        done = transition(rec, e)
        rec = done.record
    assert rec.steps["b"].status is S.FAILED and "recorded no output 'v'" in rec.steps["b"].error
    assert rec.steps["c"].status is S.SKIPPED and rec.steps["d"].status is S.QUEUED
    assert done.actions == (SubmitStep(step="d", parameters={}),)


def test_continue_runs_the_dependents_of_a_failed_step():
    rec = new_pipeline("steps: {a: {notebook: a.ipynb}, b: {notebook: b.ipynb, needs: [a]}}\non_failure: continue")
    rec = transition(transition(rec, Begin(at=T)).record, StepSubmitted(step="a", job="ja")).record
    done = transition(rec, StepEnded(step="a", status=S.FAILED, at=T, error="x"))
    assert done.actions == (SubmitStep(step="b", parameters={}),) and done.record.steps["b"].status is S.QUEUED


def test_cancel_cancels_running_jobs_and_skips_pending_steps():
    rec = at_state("a running")
    done = transition(rec, Cancel(at=T))
    assert done.actions == (CancelJob(job="ja"), Ended(status=done.record.status))
    assert done.record.status.value == "cancelled" and done.record.finished_at == T
    assert done.record.steps["a"].status is S.CANCELLED and done.record.steps["b"].status is S.SKIPPED


def test_rerun_reuses_completed_steps_before_the_rerun_one():
    three = "steps: {a: {notebook: a.ipynb}, b: {notebook: b.ipynb, needs: [a]}, c: {notebook: c.ipynb, needs: [b]}}"
    rec = new_pipeline(three)
    for e in (Begin(at=T), StepSubmitted(step="a", job="ja"), StepEnded(step="a", status=S.COMPLETED, at=T,
              outputs={"v": 1}), StepSubmitted(step="b", job="jb"), StepEnded(step="b", status=S.FAILED, at=T)):
        rec = transition(rec, e).record
    assert rec.status.value == "failed"
    steps = rerun_steps(spec_of(rec), rec, None)
    assert steps["a"].reused and steps["a"].job == "ja" and steps["a"].outputs == {"v": 1}
    assert steps["b"].status is S.PENDING and steps["c"].status is S.PENDING
    again = created(msgspec.structs.replace(rec, id="p2", steps=steps, status="queued", finished_at=None))
    done = transition(again, Begin(at=T))
    assert done.actions == (SubmitStep(step="b", parameters={}),)
    assert {n for n, s in rerun_steps(spec_of(rec), rec, "a").items() if s.reused} == set()


# ---- invariants over random graphs and event sequences ---------------------------------------------

def check_invariants(rec: PipelineRecord) -> None:
    spec = spec_of(rec)
    steps = rec.steps
    for name, s in steps.items():
        if s.status is S.SKIPPED:
            for dep in spec.dependents(name):
                assert steps[dep].status is S.SKIPPED, (name, dep, steps)
        if s.status is S.PENDING and not rec.finished:
            assert s.waiting is None or s.waiting["code"] == "needs"
        else:
            assert s.waiting is None
    every = all(s.status.finished for s in steps.values())
    assert rec.finished == every, (rec.status, steps)
    assert (rec.finished_at is not None) == rec.finished


@st.composite
def scripts(draw):
    n = draw(st.integers(1, 5))
    names = [f"s{i}" for i in range(n)]
    steps = {}
    for i, name in enumerate(names):
        needs = draw(st.lists(st.sampled_from(names[:i]), unique=True, max_size=i)) if i else []
        params = {"x": f"{{{{ steps.{needs[0]}.outputs.v }}}}"} if needs and draw(st.booleans()) else {}
        steps[name] = {"notebook": f"{name}.ipynb", "needs": needs, "parameters": params}
    on_failure = draw(st.sampled_from(["stop", "continue"]))
    events = draw(st.lists(st.tuples(st.sampled_from(["submit", "not", "start", "ok", "ok_empty", "fail", "cancelled",
                                                      "cancel"]), st.sampled_from(names)), max_size=40))
    return {"steps": steps, "on_failure": on_failure}, events


def make(kind: str, step: str):
    return {"submit": StepSubmitted(step=step, job=f"j{step}"), "not": StepNotSubmitted(step=step, error="e", at=T),
            "start": StepStarted(step=step), "ok": StepEnded(step=step, status=S.COMPLETED, at=T, outputs={"v": 1}),
            "ok_empty": StepEnded(step=step, status=S.COMPLETED, at=T),
            "fail": StepEnded(step=step, status=S.FAILED, at=T, error="x"),
            "cancelled": StepEnded(step=step, status=S.CANCELLED, at=T, error="cancelled"),
            "cancel": Cancel(at=T)}[kind]


@settings(max_examples=200, deadline=None)
@given(scripts())
def test_invariants_hold_after_every_event(script):
    source, events = script
    rec = new_pipeline(source)
    spec = spec_of(rec)
    done = transition(rec, Begin(at=T))
    ended = 0
    for kind, step in [("begin", "")] + events:
        if kind != "begin":
            try:
                done = transition(rec, make(kind, step))
            except Refused:
                continue
        before, rec = rec, done.record
        check_invariants(rec)
        ended += sum(isinstance(a, Ended) for a in done.actions)
        for action in done.actions:
            if isinstance(action, SubmitStep):  # a step starts only once its needs settled
                assert before.steps[action.step].status is S.PENDING
                for need in spec.steps[action.step].needs:
                    status = rec.steps[need].status
                    assert status is S.COMPLETED or (rec.on_failure == "continue" and status.finished)
    assert ended == (1 if rec.finished else 0)
