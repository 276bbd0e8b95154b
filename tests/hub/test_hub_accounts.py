"""Accounts through nbrunner service: the hub's groups decide each user's account."""
from __future__ import annotations

import pytest

from support import wait_for

pytestmark = pytest.mark.slow


def test_hub_groups_decide_the_account(as_user):
    made = {}
    for user in ("alice", "bob", "hubadmin"):  # groups ml-team, vision, none
        code, job = as_user(user)("POST", "jobs", body={"notebook": "hello.ipynb"})
        assert code == 201, job
        made[user] = job["id"]
    alice = as_user("alice")
    wait_for(lambda: all(as_user(u)("GET", "jobs", j)[1]["account"] for u, j in made.items()), 60,
             what="the scheduler to place each job in its account")
    accounts = {u: as_user(u)("GET", "jobs", j)[1]["account"] for u, j in made.items()}
    assert accounts == {"alice": "ml", "bob": "vision", "hubadmin": "default"}
    assert as_user("bob")("GET", "jobs", made["bob"])[1]["groups"] == ["vision"]
    code, view = alice("GET", "accounts")
    assert code == 200 and [a["path"] for a in view["accounts"]] == ["vision", "ml", "default"]
    assert {a["path"]: a["weight"] for a in view["accounts"]} == {"vision": 3, "ml": 1, "default": 1}
    code, refused = alice("POST", "accounts", "reload")
    assert code == 403 and "admin" in refused["message"]
    code, reloaded = as_user("hubadmin")("POST", "accounts", "reload")
    assert code == 200 and reloaded["source"].endswith("accounts.yaml")
