"""A running job's grow: the slots held for it and its grant change in one step, so a job that reads
what it holds and then its grant never takes a slot granted meanwhile for one taken back (it would
give it away, and its grant would list a slot it does not hold, with nothing left to mend it)."""
from __future__ import annotations

import pytest

from nbrunner.control import grants
from nbrunner.core.keys import HOLDINGS

pytestmark = pytest.mark.slow


@pytest.fixture
def store(workspace):
    from nbrunner.control.store import JobStore
    from nbrunner.execution.redis_server import EmbeddedRedis

    server = EmbeddedRedis(workspace / ".nbrunner", shared=True).ensure()
    yield JobStore.from_url(server.url)
    server.stop()


def test_a_grow_holds_the_free_slots_and_grants_them_with_those_held(store):
    r = store.r
    assert grants.take(r, "j", ("h", 0)) and grants.take(r, "other", ("h", 1))
    gen = grants.write_grant(r, "j", [("h", 0)])
    assert grants.grow(r, "j", [("h", 0)], [("h", 1), ("h", 2)]) == [("h", 2)]  # h/1 is another job's
    assert grants.holdings(r) == {("h", 0): "j", ("h", 1): "other", ("h", 2): "j"}
    assert grants.read_grant(r, "j") == {"generation": gen + 1, "slots": [["h", 0], ["h", 2]]}
    assert grants.grow(r, "j", [("h", 0), ("h", 2)], [("h", 1)]) == []  # nothing free: nothing changes
    assert grants.read_grant(r, "j")["generation"] == gen + 1 and r.hget(HOLDINGS, "h/1") == "other"


def test_a_job_that_read_its_grant_before_a_grow_gives_back_nothing_of_it(store, monkeypatch):
    from nbrunner.elastic.cluster_slots import ClusterSlots

    from nbrunner.core.models import JobRecord

    monkeypatch.setenv("NBRUNNER_REDIS_URL", store.url)
    r = store.r
    assert store.create(JobRecord(id="j", name="j", notebook="x.ipynb", owner="alice"))
    grants.take(r, "j", ("h", 0))
    old = grants.write_grant(r, "j", [("h", 0)])
    slots = ClusterSlots("j")
    grants.grow(r, "j", [("h", 0)], [("h", 1)])  # lands after the job read generation `old`
    slots._refresh(old, [("h", 0)])  # what the job read before the grow
    assert grants.held_by(r, "j") == [("h", 0), ("h", 1)]
    grants.write_grant(r, "j", [("h", 0)])  # a shrink before the job saw h/1: it gives it back
    slots._refresh(*slots.client.grant())
    assert grants.held_by(r, "j") == [("h", 0)] and [(s.host, s.index) for s in slots.granted()] == [("h", 0)]
