"""The push channel's changes, pure: coalescing, ids and their order, who sees what, resuming."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from nbrunner.core.changes import (HIDDEN_JOB, Change, after, build, data_for, entry_id, order, plan, replay_from,
                                   resumable, visible)
from nbrunner.core.identity import Caller

ALICE, BOB, ADMIN = Caller("alice"), Caller("bob"), Caller("root", admin=True)


def job_entry(eid: str, job: str, kind: str = "progress") -> tuple[str, dict[str, str]]:
    return eid, {"type": kind, "job": job}


def test_one_change_per_object_at_its_last_entry_in_stream_order():
    entries = [job_entry("1-0", "a", "submitted"), job_entry("2-0", "b", "submitted"), job_entry("3-0", "a", "started"),
               ("4-0", {"type": "schedule", "schedule": "s"}), ("5-0", {"type": "worker_joined", "worker": "w"})]
    p = plan(entries)
    assert [(k, eid) for k, (eid, _) in p.objects.items()] == [(("job", "b"), "2-0"), (("job", "a"), "3-0"),
                                                               (("schedule", "s"), "4-0")]
    assert p.cluster == "5-0"
    loaded = {("job", "a"): ("alice", {"id": "a"}), ("job", "b"): ("bob", {"id": "b"}),
              ("schedule", "s"): ("alice", {"id": "s"})}
    changes = build(p, loaded, cluster={"hosts": []}, owners={})
    assert [(c.id, c.kind, c.key, c.owner) for c in changes] == [
        ("2-0.0", "job", "b", "bob"), ("3-0.0", "job", "a", "alice"), ("4-0.0", "schedule", "s", "alice"),
        ("5-0.1", "cluster", "", None)]
    assert changes[1].data == {"job": {"id": "a"}}


def test_a_gone_record_is_a_deletion_for_the_owner_the_entry_names_else_for_admins():
    p = plan([("1-0", {"type": "deleted", "job": "a", "owner": "alice"}), ("2-0", {"type": "schedule", "schedule": "s"})])
    changes = build(p, {("job", "a"): None, ("schedule", "s"): None})
    assert [(c.data, c.owner) for c in changes] == [({"id": "a", "deleted": True}, "alice"),
                                                    ({"id": "s", "deleted": True}, "")]
    assert visible(changes[0], ALICE) and not visible(changes[0], BOB) and visible(changes[0], ADMIN)
    assert not visible(changes[1], ALICE) and visible(changes[1], ADMIN)
    assert p.cluster == "1-0"  # a removal frees whatever it held


def test_the_cluster_goes_to_everyone_with_others_jobs_hidden():
    status = {"gpus_total": 2, "hosts": [{"name": "h", "slots": [{"index": 0, "job": "a"}, {"index": 1, "job": "b"},
                                                                  {"index": 2, "job": None}]}]}
    change = build(plan([("7-0", {"type": "gpus", "job": "a"})]), {("job", "a"): ("alice", {})}, status,
                   {"a": "alice", "b": "bob"})[-1]
    assert change.kind == "cluster" and all(visible(change, c) for c in (ALICE, BOB, ADMIN))
    slots = [s["job"] for s in data_for(change, ALICE)["cluster"]["hosts"][0]["slots"]]
    assert slots == ["a", HIDDEN_JOB, None]
    assert data_for(change, ADMIN) is change.data
    assert status["hosts"][0]["slots"][1]["job"] == "b"  # the shared object is not changed


def test_an_accounts_file_published_or_reloaded_is_a_cluster_change_for_everyone():
    p = plan([("8-0", {"type": "accounts", "source": "accounts.yaml"})])
    assert p.objects == {} and p.cluster == "8-0"
    change = build(p, {}, {"gpus_total": 0, "hosts": []}, {})[-1]
    assert change.kind == "cluster" and change.id == "8-0.1" and all(visible(change, c) for c in (ALICE, BOB, ADMIN))


def test_ids_order_by_entry_then_rank_and_a_bare_id_is_the_whole_entry():
    assert order("5-1.0") < order("5-1.1") < order("5-1") < order("5-2.0") < order("6-0.0")
    assert order("12-0.0") > order("9-9")  # numbers, not text
    for bad in ("", "5", "5-1.2", "a-1", "5-1.0.0", None, "5-1 "):
        assert order(bad) is None
    assert entry_id("5-1.1") == entry_id("5-1") == "5-1"


def test_after_keeps_only_what_a_subscriber_has_not_had():
    c = Change("5-1.0", "job", "a", "alice", {})
    assert after(c, None) and after(c, order("5-0")) and not after(c, order("5-1.0")) and not after(c, order("5-1"))


def test_replay_reads_the_entry_again_only_when_its_cluster_change_may_be_missing():
    assert replay_from(order("5-1.0")) == "5-1"
    assert replay_from(order("5-1.1")) == "(5-1"
    assert replay_from(order("5-1")) == "(5-1"


def test_resuming_needs_every_entry_after_the_last_id():
    last = order("100-0.0")
    assert resumable(last, "50-0", "200-0", trimmed=True)
    assert resumable(last, "100-0", "200-0", trimmed=True)
    assert not resumable(last, "150-0", "200-0", trimmed=True)  # the entries between were trimmed
    assert resumable(last, "150-0", "200-0", trimmed=False)  # never trimmed: nothing was lost
    assert not resumable(last, "50-0", "99-0", trimmed=False)  # from another, shorter history
    assert resumable(order("0-0"), None, "0-0", trimmed=False)


@given(st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from(["progress", "gpus", "started"])), max_size=30),
       st.integers(min_value=0, max_value=30))
def test_a_cut_anywhere_then_a_replay_misses_nothing_and_repeats_nothing(events, cut):
    """Live batches up to a cut, then a replay from the last id seen: every object touched after
    the cut arrives, each id at most once, ids increasing."""
    entries = [(f"{i + 1}-0", {"type": kind, "job": job}) for i, (job, kind) in enumerate(events)]
    loaded = {("job", j): ("alice", {"id": j}) for j in "abcd"}

    def changes(run):
        return build(plan(run), loaded, cluster={"hosts": []}, owners={})

    seen = changes(entries[:cut])
    last = order(seen[-1].id) if seen else None
    rest = entries
    if last is not None:  # what XRANGE gives from replay_from(last): "(id" excludes the entry itself
        start = replay_from(last)
        first = order(start.lstrip("("))[:2]
        rest = [e for e in entries if order(e[0])[:2] > first or order(e[0])[:2] == first and start[0] != "("]
    resumed = [c for c in changes(rest) if after(c, last)]
    ids = [c.id for c in seen + resumed]
    assert ids == sorted(ids, key=order) and len(set(ids)) == len(ids)
    touched_after = {j for i, (j, _) in enumerate(events) if i >= cut}
    assert touched_after <= {c.key for c in resumed}
    if any(k == "gpus" for _, k in events[cut:]):
        assert any(c.kind == "cluster" for c in resumed)
