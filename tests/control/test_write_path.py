"""One write path for each record: a job's (:mod:`nbrunner.control.job_write`), a sweep's, a
pipeline's and a schedule's (one function each in their control module).

The fast tests read the package's source (``ast``, nothing imported): no module but ``job_write``
writes a job's record, its status indexes, ``nbrunner:jobs``, ``nbrunner:finished`` or its GPU
timeline; no function but the one write function of its kind writes a sweep's, pipeline's or
schedule's record or listings; and no module but ``record_lock`` runs a WATCH/MULTI loop.  The slow ones, on a real
embedded Redis, count the writes of a job's key (keyspace notifications): a dispatch, whose
transition asks for its held slots to be noted in the record (``SyncSlots``), writes the record
once, with the same event-stream entries, record and timeline as before; so does a dispatch
taken back (``FreeSlots``).
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import pytest

import nbrunner

from source_trees import parsed

PACKAGE = Path(nbrunner.__file__).parent
WRITER = "nbrunner/control/job_write.py"
LOOP = "nbrunner/control/record_lock.py"
# the names of a job's keys: its record, the listing and status indexes, the finish times, the timeline
JOB_KEYS = {"job_key", "status_index", "timeline_key", "JOBS", "FINISHED_AT"}
# redis-py's commands (and a pipeline's) that change a key
WRITES = {
    "set", "setnx", "setex", "psetex", "getset", "getdel", "getex", "mset", "msetnx", "delete", "unlink", "rename",
    "renamenx", "copy", "expire", "expireat", "pexpire", "pexpireat", "persist", "append", "incr", "incrby",
    "incrbyfloat", "decr", "decrby", "hset", "hsetnx", "hmset", "hdel", "hincrby", "hincrbyfloat", "lpush", "rpush",
    "lpushx", "rpushx", "lset", "ltrim", "lrem", "lpop", "rpop", "linsert", "lmove", "rpoplpush", "sadd", "srem",
    "spop", "smove", "zadd", "zrem", "zincrby", "zpopmin", "zpopmax", "zremrangebyscore", "zremrangebyrank",
    "zremrangebylex", "xadd", "xdel", "xtrim", "restore",
}


# the other records: the names of their keys, and the one function (module, name) that writes them
RECORD_KEYS = {
    "sweep": ({"sweep_key", "SWEEPS", "ACTIVE_SWEEPS"}, ("nbrunner/control/sweeps.py", "_write")),
    "pipeline": ({"pipeline_key", "PIPELINES", "ACTIVE_PIPELINES"}, ("nbrunner/control/pipelines.py", "_write")),
    "schedule": ({"schedule_key", "SCHEDULES"}, ("nbrunner/control/schedules.py", "_apply")),
}


def _names(node: ast.AST) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))}


def job_key_writes(source: str | ast.AST, names: set[str] = JOB_KEYS) -> list[int]:
    """The lines of ``source`` that write a job's key (or one ``names`` names): a write command
    whose arguments name one of :data:`JOB_KEYS`, directly or through a variable assigned from
    one (in the same module)."""
    tree = ast.parse(source) if isinstance(source, str) else source
    keyish = set(names)
    for node in ast.walk(tree):  # key = job_key(job_id); p.set(key, ...)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _names(node.value) & names:
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                keyish |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES:
            if any(_names(a) & keyish for a in [*node.args, *(k.value for k in node.keywords)]):
                out.append(node.lineno)
    return out


def writes_outside(tree: ast.AST, names: set[str], function: str | None) -> list[int]:
    """The lines of ``tree`` that write a key ``names`` names outside the top-level function
    ``function`` (None: anywhere)."""
    inside = {n for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == function
              for n in range(f.lineno, f.end_lineno + 1)}
    return [line for line in job_key_writes(tree, names) if line not in inside]


def watch_loops(source: str | ast.AST) -> list[int]:
    """The lines of ``source`` that WATCH keys or catch ``WatchError`` (an optimistic-lock loop)."""
    tree = ast.parse(source) if isinstance(source, str) else source
    return [n.lineno for n in ast.walk(tree)
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "watch")
            or (isinstance(n, ast.ExceptHandler) and n.type is not None and "WatchError" in _names(n.type))]


@lru_cache(maxsize=None)
def _trees() -> tuple[tuple[str, ast.AST], ...]:
    """Every module of the package, parsed once for both checks."""
    return tuple((path.relative_to(PACKAGE.parent).as_posix(), parsed(path))
                 for path in sorted(PACKAGE.rglob("*.py")))


def test_the_checks_see_a_write_of_a_job_key():
    assert job_key_writes("r.set(job_key(j), '{}')\n") == [1]
    assert job_key_writes("key = job_key(j)\nx = 1\np.hset(key, 'a', 1)\n") == [3]
    assert job_key_writes("p.zadd(status_index(s), {j: 1.0})\np.rpush(keys.timeline_key(j), '{}')\n") == [1, 2]
    assert job_key_writes("r.get(job_key(j))\nr.set(grant_key(j), '{}')\nr.mget([job_key(i) for i in ids])\n") == []
    assert watch_loops("with r.pipeline() as p:\n  p.watch(k)\n  try:\n    pass\n  except redis.WatchError:\n"
                       "    pass\n") == [2, 5]


def test_only_the_write_path_writes_a_job_key():
    found = {name: lines for name, tree in _trees() if name != WRITER and (lines := job_key_writes(tree))}
    assert found == {}, f"job keys written outside {WRITER}: {found}"
    assert job_key_writes(dict(_trees())[WRITER])  # the checks see its writes


def test_the_checks_see_a_write_outside_the_write_function():
    source = ("def _write(i):\n    key = sweep_key(i)\n    p.set(key, 1)\n    p.srem(ACTIVE_SWEEPS, i)\n"
              "def other(i):\n    r.zadd(SWEEPS, {i: 1})\n    r.get(sweep_key(i))\n")
    names = RECORD_KEYS["sweep"][0]
    assert writes_outside(ast.parse(source), names, "_write") == [6]
    assert writes_outside(ast.parse(source), names, None) == [3, 4, 6]


@pytest.mark.parametrize("kind", sorted(RECORD_KEYS))
def test_only_its_write_function_writes_a_record_key(kind):
    names, (writer, function) = RECORD_KEYS[kind]
    found = {name: lines for name, tree in _trees()
             if (lines := writes_outside(tree, names, function if name == writer else None))}
    assert found == {}, f"{kind} keys written outside {writer}:{function}: {found}"
    assert job_key_writes(dict(_trees())[writer], names)  # the checks see its writes


def test_one_optimistic_lock_loop():
    found = {name: lines for name, tree in _trees() if name != LOOP and (lines := watch_loops(tree))}
    assert found == {}, f"WATCH/MULTI loops outside {LOOP}: {found}"


@pytest.mark.parametrize("state", ["waiting", "dispatched", "running", "preempting", "completed/stopping",
                                   "cancelled/ended"])
def test_what_a_job_and_its_holdings_cause_leaves_nothing_to_carry_out(state):
    """The job's own events (a job's processes apply them with ``JobStore.transition``) and the
    slots it holds (``grants.sync_slots``) change only the record: nothing for ``actions`` after
    the write.  A dispatch's SyncSlots and a FreeSlots are done in the write, never after it."""
    from nbrunner.control.job_channel import JOB_EVENTS
    from nbrunner.control.job_write import transition_write
    from nbrunner.core.lifecycle import Refused, SlotsHeld, SyncSlots, FreeSlots, transition
    from tests.core.test_lifecycle import at_state, events

    rec = at_state(state)
    own = [e for e in events().values() if type(e) in JOB_EVENTS.values()]
    assert len(own) == len(JOB_EVENTS)
    for event in [*own, SlotsHeld(slots=(("h", 0), ("h", 1))), SlotsHeld(slots=())]:
        try:
            done = transition(rec, event)
        except Refused:
            continue
        out, _ = transition_write(rec, done, held=lambda: [], score=lambda: 0.0)
        assert out.actions == (), (state, event, out.actions)
    for event in events().values():  # no action left to carry out changes the record
        try:
            done = transition(rec, event)
        except Refused:
            continue
        if done.record is None:
            continue
        out, w = transition_write(rec, done, held=lambda: [("h", 3)], score=lambda: 0.0)
        assert not any(isinstance(a, SyncSlots) for a in out.actions)
        if any(isinstance(a, (SyncSlots, FreeSlots)) for a in done.actions):
            assert w is not None and w.record == out.record
            assert out.record.slots == ([["h", 3]] if any(isinstance(a, SyncSlots) for a in done.actions) else [])


# ---- on a real Redis ---------------------------------------------------------------------------

@pytest.fixture
def store(workspace):
    from nbrunner.control.store import JobStore
    from nbrunner.execution.redis_server import EmbeddedRedis

    server = EmbeddedRedis(workspace / ".nbrunner", shared=True).ensure()
    yield JobStore.from_url(server.url)
    server.stop()


class KeyWrites:
    """The commands that changed one key, from Redis's keyspace notifications."""

    def __init__(self, r, key: str):
        self.r = r
        self.key = key
        db = r.connection_pool.connection_kwargs.get("db") or 0
        self.channel = f"__keyspace@{db}__:{key}"
        self.done = f"__keyspace@{db}__:{key}:done"
        r.config_set("notify-keyspace-events", "KA")
        self.sub = r.pubsub()
        self.sub.subscribe(self.channel, self.done)
        for _ in range(2):
            m = self.sub.get_message(timeout=5.0)
            assert m is not None and m["type"] == "subscribe", m

    def seen(self) -> list[str]:
        """Every command seen since the last call (a marker key written after them ends the read)."""
        self.r.set(self.key + ":done", "1")
        out, self.channels = [], []
        while True:
            m = self.sub.get_message(timeout=5.0)
            assert m is not None, "no keyspace notification within 5 s"
            if m["channel"] == self.done:
                return out
            out.append(m["data"])
            self.channels.append(m["channel"])


@pytest.mark.slow
def test_a_dispatch_writes_the_record_once(store):
    from nbrunner.control import grants
    from nbrunner.control.actions import advance
    from nbrunner.core.keys import EVENTS, job_key
    from nbrunner.core.lifecycle import Dispatch, Undispatch
    from nbrunner.core.models import JobRecord

    assert store.create(JobRecord(id="job1", name="job1", notebook="x.ipynb", owner="alice"))
    slots = (("h", 0), ("h", 1))
    assert all(grants.take(store.r, "job1", s) for s in slots)  # as the scheduler does before dispatching
    writes = KeyWrites(store.r, job_key("job1"))
    last = store.last_event_id()

    done = advance(store, "job1", Dispatch(host="h", slots=slots))  # WriteGrant, SyncSlots, Enqueue
    assert writes.seen() == ["set"]
    rec = store.get("job1")
    assert done.record == rec and rec.phase == "dispatched" and rec.attempt == 1
    assert rec.slots == [["h", 0], ["h", 1]] and rec.gpus == 2
    entries = [f for _, f in store.r.xrange(EVENTS, f"({last}", "+")]
    assert entries == [{"type": "dispatched", "job": "job1", "status": "queued"},
                       {"type": "gpus", "job": "job1", "status": "queued"}]
    assert [p["gpus"] for p in grants.timeline(store.r, "job1")] == [2]
    assert grants.read_grant(store.r, "job1")["slots"] == [["h", 0], ["h", 1]]

    # taken back before it started: FreeSlots gives the slots back; the record notes it in the same write
    last = store.last_event_id()
    advance(store, "job1", Undispatch(attempt=1))
    assert writes.seen() == ["set"]
    rec = store.get("job1")
    assert rec.phase == "waiting" and rec.slots == [] and rec.gpus == 0
    entries = [f for _, f in store.r.xrange(EVENTS, f"({last}", "+")]
    assert entries == [{"type": "undispatched", "job": "job1", "status": "queued"},
                       {"type": "gpus", "job": "job1", "status": "queued"},
                       {"type": "slots_freed", "released": "job1"}]
    assert [p["gpus"] for p in grants.timeline(store.r, "job1")] == [2, 0]
    assert grants.held_by(store.r, "job1") == [] and grants.read_grant(store.r, "job1")["slots"] == []


@pytest.mark.slow
def test_a_transition_retried_after_a_concurrent_change_writes_once(store):
    """The one loop reads again when the record changed between its read and its write."""
    from nbrunner.core.keys import job_key
    from nbrunner.core.lifecycle import Progress, SetPriority
    from nbrunner.core.models import JobRecord

    assert store.create(JobRecord(id="job2", name="job2", notebook="x.ipynb"))
    writes = KeyWrites(store.r, job_key("job2"))
    calls = []

    def pick(rec):
        calls.append(rec.priority)
        if len(calls) == 1:  # someone else changes the record after this read
            store.transition("job2", SetPriority(priority=7))
        return Progress(progress=0.5)

    done = store.transition("job2", pick)
    assert calls[1] == 7 != calls[0] and done.record.priority == 7 and done.record.progress == 0.5
    assert writes.seen() == ["set", "set"]  # the other change, then this one: never lost, never twice
    assert store.get("job2") == done.record


def _pipeline_entries(store, after: str) -> list[dict]:
    from nbrunner.core.keys import EVENTS

    return [f for _, f in store.r.xrange(EVENTS, f"({after}", "+") if "pipeline" in f]


@pytest.mark.slow
def test_a_pipeline_step_writes_the_record_once(store, workspace):
    """The job of a step a transition queues is made first; one write carries the transition and
    what became of the job (never a second write from the action).  A creator that died before its
    pipeline began: the next pass begins it."""
    from nbrunner.control import submit
    from nbrunner.control.pipelines import ACTIVE_PIPELINES, advance_pipeline, create_pipeline, get_record, \
        pipeline_key, submitting_key
    from nbrunner.core.config import Settings

    settings = Settings.load(workspace)
    spec = {"name": "two", "on_failure": "continue", "steps": {
        "a": {"notebook": "hello.ipynb"}, "b": {"notebook": "hello.ipynb", "needs": ["a"]}}}
    writes = KeyWrites(store.r, pipeline_key("p"))  # the id is not known yet: watch every pipeline key below
    writes.sub.psubscribe(writes.channel.replace(":pipeline:p", ":pipeline:*"))
    assert writes.sub.get_message(timeout=5.0)["type"] == "psubscribe"
    last = store.last_event_id()
    rec = create_pipeline(store, settings, spec)
    seen = writes.seen()
    key = pipeline_key(rec.id)
    # stored, then Begin and its step's StepSubmitted in one write (its lock and marks aside; before: three writes)
    assert [d for c, d in zip(writes.channels, seen) if c.endswith(":" + key)] == ["set", "set"]
    assert {"hset", "hdel"} <= set(seen), seen  # the step marked before its job was made, cleared by the write
    assert rec.to_json() == get_record(store, rec.id).to_json() and rec.steps["a"].submitted and rec.steps["a"].job
    assert rec.steps["b"].status == "pending" and store.r.sismember(ACTIVE_PIPELINES, rec.id)
    assert [e["type"] for e in _pipeline_entries(store, last)] == ["pipeline", "pipeline"]
    assert not store.r.exists(submitting_key(rec.id))

    writes.sub.punsubscribe()
    writes.sub.get_message(timeout=5.0)
    writes = KeyWrites(store.r, key)
    submit.cancel(store, rec.steps["a"].job, settings)
    last = store.last_event_id()
    after = advance_pipeline(store, settings, rec.id)  # a ended (cancelled), so b is submitted: one write
    assert writes.seen() == ["set"]
    assert after.to_json() == get_record(store, rec.id).to_json()
    assert after.steps["a"].status == "cancelled" and after.steps["b"].status == "queued"
    assert after.steps["b"].submitted and store.find(after.steps["b"].job).step == "b"
    assert [(e["type"], e["status"]) for e in _pipeline_entries(store, last)] == [("pipeline", "running")] * 2


@pytest.mark.slow
def test_a_pipeline_writer_with_a_stale_read_never_overwrites(store, workspace):
    from nbrunner.control import pipelines
    from nbrunner.core.config import Settings
    from nbrunner.core.lifecycle import Refused
    from nbrunner.core.pipelines.lifecycle import StepStarted

    settings = Settings.load(workspace)
    rec = pipelines.create_pipeline(store, settings, {"name": "one", "steps": {"a": {"notebook": "hello.ipynb"}}})
    cancelled = pipelines.cancel_pipeline(store, rec.id, settings)  # meanwhile, someone cancels it
    writes = KeyWrites(store.r, pipelines.pipeline_key(rec.id))
    with pytest.raises(Refused):  # its transition runs on what is stored, not on the stale `rec`
        pipelines._apply(store, settings, rec, StepStarted(step="a"))
    assert writes.seen() == []
    assert pipelines.get_record(store, rec.id).to_json() == cancelled.to_json()


@pytest.mark.slow
def test_a_sweep_writer_with_a_stale_read_never_overwrites(store, workspace):
    from nbrunner.control import sweeps
    from nbrunner.core.config import Settings
    from nbrunner.core.lifecycle import Refused
    from nbrunner.core.models import utcnow
    from nbrunner.core.sweeps.lifecycle import Advance

    settings = Settings.load(workspace)
    rec = sweeps.create_sweep(store, settings, "hello.ipynb", {"parameters": {"TIMES": [1, 2, 3]}, "max_parallel": 1,
                                                                 "objective": {"metric": "x", "mode": "max"}})
    writes = KeyWrites(store.r, sweeps.sweep_key(rec.id))
    cancelled = sweeps.cancel_sweep(store, rec.id, settings)
    assert writes.seen() == ["set"] and cancelled.status == "cancelled"
    with pytest.raises(Refused):  # a stale holder advancing what it read: refused, nothing written
        sweeps._apply(store, settings, rec, Advance(at=utcnow()))
    assert writes.seen() == []
    assert sweeps.get_record(store, rec.id) == cancelled


@pytest.mark.slow
def test_a_pipeline_whose_creator_died_before_it_began_is_begun_by_the_next_pass(store, workspace):
    from nbrunner.control import pipelines
    from nbrunner.core.config import Settings
    from nbrunner.core.pipelines.lifecycle import created
    from nbrunner.core.pipelines.record import PipelineRecord, StepState

    settings = Settings.load(workspace)
    rec = created(PipelineRecord(id="died0001", name="one", owner="alice", steps={"a": StepState(
        needs=[], notebook="hello.ipynb")}, spec={"name": "one", "steps": {"a": {"notebook": "hello.ipynb"}}}))
    path = pipelines.snapshot_path(settings, rec.id, "a")
    path.parent.mkdir(parents=True)
    path.write_text((workspace / "hello.ipynb").read_text())
    pipelines._write(store, rec.id, new=rec)  # stored, then its creator died before Begin
    assert pipelines.get_record(store, rec.id).steps["a"].status == "pending"
    writes = KeyWrites(store.r, pipelines.pipeline_key(rec.id))
    after = pipelines.advance_pipeline(store, settings, rec.id)
    assert writes.seen() == ["set"]
    assert after.steps["a"].status == "queued" and after.steps["a"].submitted
    assert store.find(after.steps["a"].job).pipeline == rec.id
    assert pipelines.advance_pipeline(store, settings, rec.id).to_json() == after.to_json()  # begun once
    assert writes.seen() == []


@pytest.mark.slow
def test_a_step_job_made_by_a_submitter_that_died_before_its_write_is_adopted(store, workspace):
    from nbrunner.control import pipelines, submit
    from nbrunner.core.config import Settings

    settings = Settings.load(workspace)
    spec = {"name": "two", "on_failure": "continue", "steps": {
        "a": {"notebook": "hello.ipynb"}, "b": {"notebook": "hello.ipynb", "needs": ["a"]}}}
    rec = pipelines.create_pipeline(store, settings, spec)
    # a submitter marked b, made its job, and died before the write that records it
    store.r.hset(pipelines.submitting_key(rec.id), "b", 1)
    orphan = submit.submit(store, settings, {"notebook": "hello.ipynb", "pipeline": rec.id, "step": "b"})
    submit.cancel(store, rec.steps["a"].job, settings)
    after = pipelines.advance_pipeline(store, settings, rec.id)
    assert after.steps["b"].job == orphan.id and after.steps["b"].submitted
    assert [j.id for j in store.all() if j.pipeline == rec.id and j.step == "b"] == [orphan.id]  # never twice
    assert not store.r.exists(pipelines.submitting_key(rec.id))


@pytest.mark.slow
def test_a_sweep_advance_that_submits_a_trial_writes_the_record_once(store, workspace):
    """The next trial's job is made first; one write carries the Advance and what became of it."""
    from nbrunner.control import submit, sweeps
    from nbrunner.core.config import Settings
    from nbrunner.core.keys import EVENTS

    settings = Settings.load(workspace)
    rec = sweeps.create_sweep(store, settings, "hello.ipynb", {"parameters": {"TIMES": [1, 2, 3]}, "max_parallel": 1,
                                                               "objective": {"metric": "x", "mode": "max"}})
    assert [t.state for t in rec.trials] == ["submitted", "pending", "pending"]
    writes = KeyWrites(store.r, sweeps.sweep_key(rec.id))
    submit.cancel(store, rec.trials[0].job, settings)
    after = sweeps.advance_sweep(store, settings, rec.id)
    assert writes.seen() == ["set"]  # before: the trial written submitting, then written submitted
    assert [t.state for t in after.trials][1:] == ["submitted", "pending"]
    assert store.find(after.trials[1].job).sweep == rec.id
    assert sweeps.get_record(store, rec.id) == after and not store.r.exists(sweeps.submitting_key(rec.id))

    # a submitter that marked trial 2 and made its job died before its write: the job is adopted
    store.r.hset(sweeps.submitting_key(rec.id), "2", 1)
    orphan = submit.submit(store, settings, sweeps._trial_request(settings, after, 2), owner=after.owner)
    last = store.last_event_id()
    submit.cancel(store, after.trials[1].job, settings)
    final = sweeps.advance_sweep(store, settings, rec.id)
    assert writes.seen() == ["set"] and final.trials[2].job == orphan.id
    assert [j.id for j in store.all() if j.sweep == rec.id and j.name == sweeps.trial_name(rec, 2)] == [orphan.id]
    assert not [f for _, f in store.r.xrange(EVENTS, f"({last}", "+") if f.get("sweep") == rec.id]


def test_a_new_job_is_only_added_to_its_indexes():
    """A new job's key is checked free by the insert script, so its id is in no index: its write
    adds it (to ``nbrunner:jobs``, its status index, the active set) and removes nothing; a change
    of an existing record still takes it out of the other status indexes."""
    from nbrunner.control.job_write import Commands, JobWrite, queue_write
    from nbrunner.core.keys import JOBS, status_index
    from nbrunner.core.lifecycle import submitted
    from nbrunner.core.models import JobRecord

    rec = submitted(JobRecord(id="abcdefgh", name="n", notebook="n.ipynb", owner="me", output="runs/abcdefgh/o.ipynb"))
    new = Commands()
    queue_write(new, JobWrite(rec.id, rec, score=1.0, new=True, active=True))
    assert "zrem" not in new.args
    assert {JOBS, status_index("queued")} <= set(new.args) and status_index("running") not in new.args
    moved = Commands()
    queue_write(moved, JobWrite(rec.id, rec, score=1.0))
    assert "zrem" in moved.args and status_index("running") in moved.args
