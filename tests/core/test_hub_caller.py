"""Who a JupyterHub user is to nbrunner: name, groups, and admin (a hub admin, or a member of the
service's --admin-group)."""
from __future__ import annotations

from nbrunner.core.identity import Caller, hub_caller

ALICE = {"kind": "user", "name": "alice", "admin": False, "groups": ["ml-team", "vision"], "scopes": []}


def test_a_hub_user_is_a_caller_with_their_groups():
    assert hub_caller(ALICE) == Caller(name="alice", groups=("ml-team", "vision"), admin=False)
    assert hub_caller(ALICE, admin_group="nbrunner-admins").admin is False


def test_hub_admins_and_admin_group_members_are_admins():
    assert hub_caller({**ALICE, "admin": True}).admin
    assert hub_caller(ALICE, admin_group="vision").admin
    assert not hub_caller({**ALICE, "groups": []}, admin_group="vision").admin


def test_a_model_without_groups_or_admin_fields_is_a_plain_user():
    """A token whose scopes do not let it read the user's groups gives a model without them."""
    caller = hub_caller({"name": "bob"}, admin_group="nbrunner-admins")
    assert caller == Caller(name="bob") and caller.sees("bob") and not caller.sees("alice")
