"""Allocation down an accounts tree (nbrunner.core.shares, ``allocate(..., accounts=TREE)``): examples,
then properties checked against a model written here."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from nbrunner.core.accounts import accounts_tree
from nbrunner.core.allocate import allocate
from nbrunner.core.errors import InvalidRequest
from nbrunner.core.shares import account_shares
from .test_allocate import order_of, reference
from .test_allocate import scenarios as flat_scenarios


def job(id, owner, min_gpus=1, max_gpus=8, priority=5000, submitted_at=0, **extra):
    return {"id": id, "owner": owner, "min_gpus": min_gpus, "max_gpus": max_gpus, "priority": priority,
            "submitted_at": submitted_at, **extra}


AB = {"accounts": [{"name": "A", "weight": 3, "members": ["a"]}, {"name": "B", "weight": 1, "members": ["b"]}]}


def rows(shares):
    return {r["path"]: r for r in shares.accounts}


# ---------------------------------------------------------------- examples


def test_weights_split_and_a_lone_account_borrows_everything():
    assert allocate(8, [job("a1", "a"), job("b1", "b")], accounts=AB) == {"a1": 6, "b1": 2}
    assert allocate(8, [job("b1", "b")], accounts=AB) == {"b1": 8}
    view = rows(account_shares(8, [job("b1", "b")], "fairshare", AB))
    assert (view["B"]["share"], view["B"]["allocated"], view["B"]["borrowed"], view["B"]["lent"]) == (2, 8, 6, 0)
    assert (view["A"]["share"], view["A"]["allocated"], view["A"]["borrowed"], view["A"]["lent"]) == (6, 0, 0, 6)
    assert view["default"]["share"] == 0  # no jobs there: it takes no share of the others'


def test_lender_returns_borrowers_jobs_shrink_or_wait():
    # B borrowed all 8 with four running elastic jobs; A asks: A gets its 6. B keeps 2, as two jobs of
    # 1 (its first two in its queue); the other two get 0: re-queued by the service.
    demands = [job(f"b{i}", "b", 1, 8, submitted_at=i, running=True) for i in range(4)] + [job("a1", "a", submitted_at=9)]
    assert allocate(8, demands, accounts=AB) == {"b0": 1, "b1": 1, "b2": 0, "b3": 0, "a1": 6}
    # One elastic borrower: it shrinks to B's share.
    assert allocate(8, [job("b0", "b", 1, 8, running=True), job("a1", "a", submitted_at=9)], accounts=AB) == {"b0": 2, "a1": 6}


def test_a_guarantee_protects_running_jobs_and_is_returned_when_asked():
    tree = {"accounts": [{"name": "A", "weight": 3, "members": ["a"]},
                         {"name": "B", "weight": 1, "guaranteed": 4, "members": ["b"]}]}
    demands = [job(f"b{i}", "b", 1, 8, submitted_at=i, running=True) for i in range(4)] + [job("a1", "a", submitted_at=9)]
    # B's running minimums (4) fit in its guarantee: none of its jobs is taken below its minimum.
    assert allocate(8, demands, accounts=tree) == {"b0": 1, "b1": 1, "b2": 1, "b3": 1, "a1": 4}
    # A guarantee beats weight: B (weight 1, guaranteed 4) gets 4 of 8 against A's weight 3.
    assert allocate(8, [job("a1", "a"), job("b1", "b", submitted_at=1)], accounts=tree) == {"a1": 4, "b1": 4}
    # Six running minimums against a guarantee of 4: B is cut down to its guarantee, not below.
    demands = [job(f"b{i}", "b", 1, 1, submitted_at=i, running=True) for i in range(6)] + [job("a1", "a", submitted_at=9)]
    out = allocate(8, demands, accounts=tree)
    assert out["a1"] == 4 and [out[f"b{i}"] for i in range(6)] == [1, 1, 1, 1, 0, 0]


def test_users_in_one_account_share_by_user_not_by_job():
    tree = {"accounts": [{"name": "team", "members": ["u1", "u2"]}]}
    demands = [job(f"u1-{i}", "u1", submitted_at=i) for i in range(10)] + [job("u2-0", "u2", submitted_at=20)]
    out = allocate(8, demands, accounts=tree)
    assert out["u2-0"] == 4 and sum(out[f"u1-{i}"] for i in range(10)) == 4
    assert [out[f"u1-{i}"] for i in range(10)] == [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]  # u1's first four jobs
    # The same when u1's ten jobs were already running (the account has no guarantee).
    running = [dict(d, running=True) if d["owner"] == "u1" else d for d in demands]
    assert allocate(8, running, accounts=tree) == out
    users = account_shares(8, demands, "fairshare", tree).users
    assert users == [{"account": "team", "user": "u1", "jobs": 10, "demand": 80, "allocated": 4},
                     {"account": "team", "user": "u2", "jobs": 1, "demand": 8, "allocated": 4}]


def test_a_users_jobs_share_by_the_cluster_policy():
    tree = {"accounts": [{"name": "team", "members": ["u1", "u2"]}]}
    mine = [job("lo", "u1", 1, 8, 100, 0), job("hi", "u1", 1, 4, 9000, 5), job("mid", "u1", 2, 8, 5000, 1)]
    demands = mine + [job("other", "u2", 1, 8, 10000, 0)]
    for policy in ("fairshare", "priority", "goodput"):
        out = allocate(16, demands, policy, accounts=tree)
        assert out["other"] == 8
        assert {k: out[k] for k in ("lo", "hi", "mid")} == allocate(8, mine, policy)
    assert allocate(16, demands, "priority", accounts=tree) == {"hi": 4, "mid": 3, "lo": 1, "other": 8}


def test_limits_hold_and_what_is_left_goes_to_the_others():
    tree = {"accounts": [{"name": "A", "weight": 3, "limit": 3, "members": ["a"]}, {"name": "B", "members": ["b"]}]}
    assert allocate(8, [job("a1", "a"), job("b1", "b")], accounts=tree) == {"a1": 3, "b1": 5}
    # Nobody else wants them: GPUs stay idle rather than pass a limit.
    assert allocate(8, [job("a1", "a"), job("b1", "b", max_gpus=2)], accounts=tree) == {"a1": 3, "b1": 2}


def test_nested_accounts():
    tree = {"accounts": [
        {"name": "P", "weight": 1, "limit": 5, "accounts": [{"name": "c1", "weight": 1, "members": ["u1"]},
                                                             {"name": "c2", "weight": 4, "members": ["u2"]}]},
        {"name": "Q", "weight": 1, "members": ["u3"]}]}
    demands = [job("1", "u1", max_gpus=16), job("2", "u2", max_gpus=16), job("3", "u3", max_gpus=16)]
    assert allocate(16, demands, accounts=tree) == {"1": 1, "2": 4, "3": 11}  # P at its limit 5, 1:4 inside
    assert allocate(8, demands, accounts=tree) == {"1": 1, "2": 3, "3": 4}    # 4 each; 0.8:3.2 rounded
    demands[1]["max_gpus"] = 2  # c2 uses 2 of its 4: c1 borrows them
    assert allocate(16, demands, accounts=tree) == {"1": 3, "2": 2, "3": 11}
    view = rows(account_shares(16, demands, "fairshare", tree))
    assert [view[p]["share"] for p in ("P", "P/c1", "P/c2", "Q")] == [5, 1, 4, 11]
    assert (view["P/c1"]["borrowed"], view["P/c2"]["lent"], view["P"]["borrowed"]) == (2, 2, 0)
    assert view["P"]["demand"] == 18 and view["P"]["users"] == 2 and view["P"]["jobs"] == 2


def test_groups_decide_the_account():
    tree = {"accounts": [{"name": "vision", "members": ["@ml-team"]}, {"name": "nlp", "members": ["@nlp", "carol"]}]}
    demands = [job("1", "alice", groups=["nlp", "ml-team"]), job("2", "bob", groups=["nlp"], submitted_at=1),
               job("3", "carol", groups=["ml-team"], submitted_at=2), job("4", "dave", submitted_at=3)]
    got = account_shares(12, demands, "fairshare", tree)
    assert got.account_of == {"1": "vision", "2": "nlp", "3": "nlp", "4": "default"}
    assert got.jobs == {"1": 4, "2": 2, "3": 2, "4": 4}  # three accounts of weight 1; two users share nlp


def test_a_share_that_cannot_start_a_job_is_lent_and_idle_gpus_go_to_waiting_jobs():
    # A's share is 6 and its job needs 7: it waits, B uses all 8.
    assert allocate(8, [job("a1", "a", 7, 7), job("b1", "b", 1, 8, submitted_at=1)], accounts=AB) == {"a1": 0, "b1": 8}
    # B needs only 1: the 7 idle GPUs go to A's waiting job, which fits in them.
    assert allocate(8, [job("a1", "a", 7, 7), job("b1", "b", 1, 1, submitted_at=1)], accounts=AB) == {"a1": 7, "b1": 1}
    # Within an account: x's share (3 of 9) cannot start its 4-GPU job, nor q's its 5-GPU one; y needs 3.
    # The 6 idle GPUs go to the next job of the user with the fewest GPUs (ties: the earlier user): x.
    tree = {"accounts": [{"name": "t", "members": ["x", "q", "y"]}]}
    demands = [job("x", "x", 4, 4), job("q", "q", 5, 5, submitted_at=1), job("y", "y", 1, 3, submitted_at=2)]
    assert allocate(9, demands, accounts=tree) == {"x": 4, "q": 0, "y": 3}


def test_no_backfill_within_a_users_queue_but_other_users_go_on():
    tree = {"accounts": [{"name": "t", "members": ["u1", "u2"]}]}
    demands = [job("big", "u1", 6, 6, submitted_at=0), job("small", "u1", 1, 1, submitted_at=1),
               job("other", "u2", 1, 8, submitted_at=2)]
    assert allocate(8, demands, accounts=tree) == {"big": 0, "small": 0, "other": 8}


def test_guarantees_above_the_cluster_are_split_by_weight():
    tree = {"accounts": [{"name": "A", "guaranteed": 6, "members": ["a"]},
                         {"name": "B", "guaranteed": 6, "weight": 3, "members": ["b"]}]}
    assert allocate(8, [job("a1", "a"), job("b1", "b")], accounts=tree) == {"a1": 2, "b1": 6}


def test_goodput_within_a_user_and_what_it_leaves_is_lent():
    tree = {"accounts": [{"name": "t", "members": ["u1", "u2"]}]}
    flat = {1: 100.0, 2: 100.0}  # measured: no gain from a second GPU
    demands = [job("m", "u1", 1, 8, throughput=flat), job("f", "u2", 1, 8, submitted_at=1)]
    assert allocate(8, demands, "goodput") == {"m": 1, "f": 4}  # flat: the rest stays free
    assert allocate(8, demands, "goodput", accounts=tree) == {"m": 1, "f": 7}


def test_empty_and_zero():
    assert allocate(8, [], accounts=AB) == {}
    got = account_shares(0, [job("a1", "a")], "fairshare", AB)
    assert got.jobs == {"a1": 0} and rows(got)["A"]["demand"] == 0
    empty = account_shares(8, [], "priority", AB)
    assert empty.jobs == {} and empty.users == [] and [r["path"] for r in empty.accounts] == ["A", "B", "default"]
    assert allocate(8, [job("cpu", "a", 0, 0), job("b1", "b")], accounts=AB) == {"cpu": 0, "b1": 8}


@pytest.mark.parametrize("demands, accounts, exc, match", [
    ([{**job("1", "a"), "owner": None}], AB, ValueError, "demand '1': owner must be a user name"),
    ([{k: v for k, v in job("1", "a").items() if k != "owner"}], AB, ValueError, "owner must be a user name"),
    ([job("1", "")], AB, ValueError, "owner must be a user name"),
    ([job("1", "a", groups="ml")], AB, ValueError, "demand '1': groups must be a list of group names"),
    ([job("1", "a", groups=[1])], AB, ValueError, "groups must be a list"),
    ([job("1", "a", 5, 4)], AB, ValueError, "min_gpus 5 > max_gpus 4"),
    ([job("1", "a")], {"accounts": [{"name": "A", "weight": -1}]}, InvalidRequest, "weight must be a positive number"),
    ([job("1", "a")], {"accounts": "A"}, InvalidRequest, "accounts must be a list"),
])
def test_bad_input(demands, accounts, exc, match):
    with pytest.raises(exc, match=match):
        allocate(8, demands, accounts=accounts)


def test_ten_thousand_jobs_in_a_hundred_accounts():
    rng = random.Random(5)
    tree = {"accounts": [{"name": f"d{i}", "weight": rng.randint(1, 4), "accounts": [
        {"name": f"t{i}-{j}", "weight": rng.randint(1, 5), "guaranteed": rng.randint(0, 20),
         "members": [f"u{i}-{j}-{k}" for k in range(10)]} for j in range(9)]} for i in range(10)]}
    demands = []
    for n in range(10_000):
        lo = rng.randint(0, 4)
        demands.append(job(n, f"u{rng.randrange(11)}-{rng.randrange(9)}-{rng.randrange(10)}", lo,
                           lo + rng.randint(0, 32), rng.randint(1, 10000), rng.random(), running=rng.random() < 0.1))
    got = account_shares(8000, demands, "fairshare", tree)
    assert sum(got.jobs.values()) == 8000
    assert len(got.accounts) == 101 and sum(r["allocated"] for r in got.accounts if "/" not in r["path"]) == 8000


# ---------------------------------------------------------------- a model for the properties

USERS = ["u0", "u1", "u2", "u3", "u4", "u5"]
GROUPS = ["g0", "g1", "g2", "g3"]  # g3 is never listed


def walk(tree):
    """(account dict, path, parent path) for every account, parents first; default last."""
    out = []

    def visit(items, parent):
        for a in items:
            path = f"{parent}/{a['name']}" if parent else a["name"]
            out.append((a, path, parent))
            visit(a.get("accounts", []), path)

    visit(tree["accounts"], None)
    out.append((dict(tree.get("default") or {}), "default", None))
    return out


def leaf_of(tree, owner, groups):
    accounts = walk(tree)
    for a, path, _ in accounts:
        if owner in a.get("members", []):
            return path
    for a, path, _ in accounts:  # entries in file order
        for m in a.get("members", []):
            if m.startswith("@") and m[1:] in groups:
                return path
    return "default"


def under(path, leaf):
    return leaf == path or leaf.startswith(path + "/")


def guaranteed(a):
    return a.get("guaranteed", sum(guaranteed(c) for c in a.get("accounts", [])))


def demand_of(tree, total, leaves, demands, path):
    """What ``path`` could use at most: its jobs' max (each user at most the cluster), within limits."""
    a = next(a for a, p, _ in walk(tree) if p == path)
    if a.get("accounts"):
        d = sum(demand_of(tree, total, leaves, demands, c) for _, c, parent in walk(tree) if parent == path)
    else:
        per_user = {}
        for x in demands:
            if leaves[x["id"]] == path:
                per_user[x["owner"]] = per_user.get(x["owner"], 0) + min(x["max_gpus"], total)
        d = sum(min(v, total) for v in per_user.values())
    return d if a.get("limit") is None else min(d, a["limit"])


@st.composite
def account_scenarios(draw, small_mins=False):
    weights = st.sampled_from([1, 1, 2, 3, 0.5])

    def leaf(name):
        node = {"name": name, "weight": draw(weights), "guaranteed": draw(st.integers(0, 4)), "members": []}
        if draw(st.booleans()):
            node["limit"] = node["guaranteed"] + draw(st.integers(0, 10))
        return node

    accounts, leaves = [], []
    for i in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            kids = [leaf(f"a{i}{j}") for j in range(draw(st.integers(1, 3)))]
            leaves += kids
            node = {"name": f"a{i}", "weight": draw(weights), "accounts": kids}
            g = sum(k["guaranteed"] for k in kids) + draw(st.integers(0, 3))
            if draw(st.booleans()):
                node["guaranteed"] = g
            if draw(st.booleans()):
                node["limit"] = g + draw(st.integers(0, 10))
        else:
            node = leaf(f"a{i}")
            leaves.append(node)
        accounts.append(node)
    for u in USERS:
        where = draw(st.integers(-2, len(leaves) - 1))
        if where >= 0:
            leaves[where]["members"].append(u)
    for g in GROUPS[:3]:
        where = draw(st.integers(-1, len(leaves) - 1))
        if where >= 0:
            leaves[where]["members"].append("@" + g)
    default = {"weight": draw(weights), "guaranteed": draw(st.integers(0, 2))}
    tree = {"accounts": accounts, "default": default}
    user_groups = {u: draw(st.lists(st.sampled_from(GROUPS), max_size=3, unique=True)) for u in USERS}
    demands = []
    prio = st.sampled_from([1, 2, 3, 5000, 10000])
    for i in range(draw(st.integers(0, 14))):
        owner = draw(st.sampled_from(USERS))
        lo = draw(st.integers(0, 1 if small_mins else 3))
        demands.append(job(f"j{i:02d}", owner, lo, lo + draw(st.integers(0, 8)), draw(prio), draw(st.integers(0, 6)),
                           running=draw(st.booleans()), groups=user_groups[owner]))
        if draw(st.integers(0, 3)) == 0:  # measured, for goodput (the other policies ignore it)
            base = draw(st.sampled_from([50.0, 100.0]))
            demands[-1]["throughput"] = {1: base, 2: base * draw(st.sampled_from([1.0, 1.5, 1.9]))}
    return draw(st.integers(0, 30)), demands, tree


policies = st.sampled_from(["fairshare", "priority"])


def by_user(tree, demands):
    leaves = {d["id"]: leaf_of(tree, d["owner"], d["groups"]) for d in demands}
    users: dict = {}
    for d in demands:
        users.setdefault((leaves[d["id"]], d["owner"]), []).append(d)
    return leaves, users


@settings(max_examples=70, deadline=None)
@given(account_scenarios(), st.sampled_from(["fairshare", "priority", "goodput"]))
def test_totals_limits_and_job_bounds(sc, policy):
    total, demands, tree = sc
    got = account_shares(total, demands, policy, tree)
    out = got.jobs
    assert set(out) == {d["id"] for d in demands}
    assert all(isinstance(v, int) for v in out.values())
    assert sum(out.values()) <= total
    for d in demands:
        assert out[d["id"]] == 0 or d["min_gpus"] <= out[d["id"]] <= d["max_gpus"]
    leaves, _ = by_user(tree, demands)
    assert got.account_of == leaves
    for a, path, _ in walk(tree):
        held = sum(out[i] for i, leaf in leaves.items() if under(path, leaf))
        if a.get("limit") is not None:
            assert held <= a["limit"]
        assert rows(got)[path]["allocated"] == held


@settings(max_examples=70, deadline=None)
@given(account_scenarios(), policies)
def test_each_user_is_the_flat_policy_on_its_share(sc, policy):
    total, demands, tree = sc
    out = allocate(total, demands, policy, accounts=tree)
    for jobs in by_user(tree, demands)[1].values():
        share = sum(out[d["id"]] for d in jobs)
        assert {d["id"]: out[d["id"]] for d in jobs} == allocate(share, jobs, policy)


@settings(max_examples=70, deadline=None)
@given(account_scenarios(), policies)
def test_no_gpu_idle_while_a_job_could_use_it(sc, policy):
    total, demands, tree = sc
    out = allocate(total, demands, policy, accounts=tree)
    idle = total - sum(out.values())
    if idle == 0:
        return
    leaves, users = by_user(tree, demands)
    accounts = walk(tree)
    held = {path: sum(out[i] for i, leaf in leaves.items() if under(path, leaf)) for _, path, _ in accounts}
    room_of = {}
    for (leaf, _), jobs in users.items():
        room = idle
        for a, path, _ in accounts:
            if under(path, leaf) and a.get("limit") is not None:
                room = min(room, a["limit"] - held[path])
        room_of[leaf] = room
        share = sum(out[d["id"]] for d in jobs)
        used = 0
        for d in order_of(jobs, policy):
            if used + d["min_gpus"] > share:  # the next job waits: it did not fit in the idle GPUs either
                assert used + d["min_gpus"] - share > room
                break
            used += d["min_gpus"]
            if out[d["id"]] < d["max_gpus"]:  # admitted and below its max: a limit above it is full
                assert room == 0


def fitting_guarantees(sc, policy):
    """The allocation and each job's leaf, for a scenario whose top-level guarantees fit in the cluster."""
    total, demands, tree = sc
    assume(sum(guaranteed(a) for a, _, parent in walk(tree) if parent is None) <= total)
    return allocate(total, demands, policy, accounts=tree), by_user(tree, demands)[0]


@settings(max_examples=70, deadline=None)
@given(account_scenarios(small_mins=True), policies)
def test_guarantees_are_met_when_the_cluster_can(sc, policy):
    out, leaves = fitting_guarantees(sc, policy)
    total, demands, tree = sc
    for a, path, _ in walk(tree):
        held = sum(out[i] for i, leaf in leaves.items() if under(path, leaf))
        assert held >= min(guaranteed(a), demand_of(tree, total, leaves, demands, path))


@settings(max_examples=70, deadline=None)
@given(account_scenarios(), policies)
def test_running_jobs_within_the_guarantee_keep_their_minimum(sc, policy):
    out, leaves = fitting_guarantees(sc, policy)
    _, demands, tree = sc
    for a, path, _ in walk(tree):
        running = [d for d in demands if leaves[d["id"]] == path and d["running"]]
        if sum(d["min_gpus"] for d in running) <= guaranteed(a):
            assert all(out[d["id"]] >= d["min_gpus"] for d in running)


@settings(max_examples=60, deadline=None)
@given(account_scenarios(), st.sampled_from(["fairshare", "priority", "goodput"]), st.randoms(use_true_random=False))
def test_deterministic_and_the_same_from_a_tree_object(sc, policy, rnd):
    total, demands, tree = sc
    out = allocate(total, demands, policy, accounts=tree)
    shuffled = list(demands)
    rnd.shuffle(shuffled)
    assert allocate(total, shuffled, policy, accounts=tree) == out
    assert allocate(total, demands, policy, accounts=accounts_tree(tree)) == out


@settings(max_examples=70, deadline=None)
@given(account_scenarios(), policies)
def test_the_account_view_adds_up(sc, policy):
    total, demands, tree = sc
    got = account_shares(total, demands, policy, tree)
    view = rows(got)
    leaves, _ = by_user(tree, demands)
    for a, path, parent in walk(tree):
        r = view[path]
        assert r["allocated"] - r["share"] == r["borrowed"] - r["lent"] and min(r["borrowed"], r["lent"]) == 0
        assert r["demand"] == sum(min(d["max_gpus"], total) for d in demands if under(path, leaves[d["id"]]))
        assert r["guaranteed"] == guaranteed(a) and r["limit"] == a.get("limit")
        kids = [view[p]["share"] for _, p, par in walk(tree) if par == path]
        assert sum(kids) <= r["share"]
        if a.get("limit") is not None:
            assert r["share"] <= a["limit"]
    assert sum(view[p]["share"] for _, p, parent in walk(tree) if parent is None) <= total
    assert sum(u["allocated"] for u in got.users) == sum(got.jobs.values())


@st.composite
def divisible(draw):
    """Two levels of accounts with whole weights, every leaf wanting the whole cluster, and a total
    that every level divides exactly."""
    tops = []
    for i in range(draw(st.integers(2, 3))):
        kids = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(1, 2)))]
        tops.append((draw(st.integers(1, 4)), kids))
    lcm = 1
    for _, kids in tops:
        lcm = lcm * sum(kids) // math.gcd(lcm, sum(kids))
    total = draw(st.integers(1, 3)) * sum(w for w, _ in tops) * lcm
    return tops, total, draw(st.integers(1, 3))


@settings(max_examples=70, deadline=None)
@given(divisible(), policies)
def test_weights_are_exact_when_the_total_divides(case, policy):
    tops, total, n_users = case
    tree = {"accounts": []}
    demands = []
    expect = {}
    top_w = sum(w for w, _ in tops)
    for i, (w, kids) in enumerate(tops):
        accounts = []
        for j, kw in enumerate(kids):
            members = [f"u{i}{j}{k}" for k in range(n_users)]
            accounts.append({"name": f"a{i}{j}", "weight": kw, "members": members})
            share = total * w // top_w * kw // sum(kids)
            for k, user in enumerate(members):
                demands.append(job(f"{user}-x", user, 1, total, submitted_at=k))
                demands.append(job(f"{user}-y", user, 0, total, submitted_at=k + 0.5))
            expect[f"a{i}/a{i}{j}"] = share
        tree["accounts"].append({"name": f"a{i}", "weight": w, "accounts": accounts})
    view = rows(account_shares(total, demands, policy, tree))
    assert {p: view[p]["allocated"] for p in expect} == expect
    if all(share % n_users == 0 for share in expect.values()):  # users split their account's share equally
        out = allocate(total, demands, policy, accounts=tree)
        for d in demands:
            user = d["owner"]
            assert out[f"{user}-x"] + out[f"{user}-y"] == expect[f"a{user[1]}/a{user[1:3]}"] // n_users


@settings(max_examples=70, deadline=None)
@given(flat_scenarios(), policies)
def test_without_accounts_it_is_the_flat_policy(sc, policy):
    total, demands = sc
    assert allocate(total, demands, policy, accounts=None) == allocate(total, demands, policy) \
        == reference(total, demands, policy)
