"""The accounts file (nbrunner.core.accounts): its checks, each refused with the line of the problem,
and which account a user is in."""

from __future__ import annotations

import pytest

from nbrunner.control.local_files import read_accounts
from nbrunner.core.accounts import (DEFAULT, AccountTree, accounts_tree, held_by_account, parse_accounts)
from nbrunner.core.errors import InvalidRequest

GOOD = """\
accounts:
  - name: vision
    weight: 3
    guaranteed: 4
    limit: 8
    members: [alice, "@ml-team"]
  - name: research
    weight: 1.5
    accounts:
      - name: nlp
        guaranteed: 2
        members:
          - bob
          - "@nlp"
      - name: speech
        members: ["@nlp-speech", "@ml-team-2"]
default: {weight: 1}
reclaim_after: 45
"""


def test_good_file_and_its_defaults():
    tree = parse_accounts(GOOD)
    vision, research = tree.accounts
    assert (vision.name, vision.path, vision.weight, vision.guaranteed, vision.limit) == ("vision", "vision", 3, 4, 8)
    assert vision.members == ("alice", "@ml-team")
    assert research.weight == 1.5 and research.limit is None
    assert research.guaranteed == 2  # a parent without one gets the sum of its sub-accounts'
    nlp, speech = research.accounts
    assert nlp.path == "research/nlp" and speech.path == "research/speech"
    assert (speech.weight, speech.guaranteed, speech.limit) == (1, 0, None)
    assert tree.default.weight == 1 and tree.default.path == DEFAULT
    assert tree.reclaim_after == 45.0
    assert [a.path for a, _ in tree.walk()] == ["vision", "research", "research/nlp", "research/speech", DEFAULT]
    assert [p.path if p else None for _, p in tree.walk()] == [None, None, "research", "research", None]


def test_the_dict_form_reads_back_to_the_same_tree():
    tree = parse_accounts(GOOD)
    data = tree.to_dict()
    assert data["accounts"][1]["accounts"][0] == {"name": "nlp", "weight": 1, "guaranteed": 2, "limit": None,
                                                  "members": ["bob", "@nlp"]}
    assert data["default"] == {"weight": 1, "guaranteed": 0, "limit": None}
    assert accounts_tree(data) == tree
    assert accounts_tree(tree) is tree


def test_minimal_files():
    tree = parse_accounts("accounts: []\n")
    assert tree.accounts == () and tree.reclaim_after == 30.0 and tree.default.weight == 1
    assert tree.account_of("anyone", ["any"]) == DEFAULT
    assert parse_accounts("accounts:\n").accounts == ()
    assert parse_accounts("accounts:\n  - name: solo\n").accounts[0].members == ()


def test_membership_user_name_before_groups_then_first_group_in_the_file():
    tree = parse_accounts(GOOD)
    assert tree.account_of("alice") == "vision"
    assert tree.account_of("alice", ["nlp"]) == "vision"           # her name wins over her groups
    assert tree.account_of("bob", ["ml-team"]) == "research/nlp"
    assert tree.account_of("carol", ["nlp"]) == "research/nlp"
    # Several listed groups: the one whose @group entry comes first in the file decides,
    # whatever order the hub gives them in.
    assert tree.account_of("carol", ["nlp-speech", "ml-team"]) == "vision"
    assert tree.account_of("carol", ["ml-team-2", "nlp"]) == "research/nlp"
    assert tree.account_of("carol", ["ml-team-2", "unlisted"]) == "research/speech"
    assert tree.account_of("carol", ["unlisted"]) == DEFAULT
    assert tree.account_of("carol") == DEFAULT
    assert tree.account_of("Alice") == DEFAULT                       # names match exactly
    assert tree.account_of("@ml-team") == DEFAULT                    # a group is not a user


def bad(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


@pytest.mark.parametrize("text, message", [
    (bad("weight: 3", "weight: -1"), "accounts.yaml line 3: weight must be a positive number, got -1"),
    (bad("weight: 3", "weight: 0"), "accounts.yaml line 3: weight must be a positive number, got 0"),
    (bad("weight: 3", "weight: three"), "accounts.yaml line 3: weight must be a positive number, got 'three'"),
    (bad("weight: 3", "weight: yes"), "accounts.yaml line 3: weight must be a positive number, got True"),
    (bad("weight: 3", "weight: .nan"), "accounts.yaml line 3: weight must be a positive number, got nan"),
    (bad("weight: 3", "weight: 2000000"), ("accounts.yaml line 3: weight must be a positive number, got 2000000 "
                                          "(at most 1,000,000)")),
    (bad("guaranteed: 4", "guaranteed: -2"), "accounts.yaml line 4: guaranteed must be a whole number of GPUs >= 0, got -2"),
    (bad("guaranteed: 4", "guaranteed: 1.5"), "accounts.yaml line 4: guaranteed must be a whole number of GPUs >= 0, got 1.5"),
    (bad("limit: 8", "limit: eight"), "accounts.yaml line 5: limit must be a whole number of GPUs >= 0 or null, got 'eight'"),
    (bad("guaranteed: 4", "guaranteed: 9"), "accounts.yaml line 4: guaranteed 9 is above the limit 8"),
    (bad("name: nlp", "name: vision"), "accounts.yaml line 10: duplicate account name 'vision' (first at line 2)"),
    (bad("name: nlp", "name: default"), "accounts.yaml line 10: 'default' is the account of users in no account"),
    (bad("name: nlp", "name: a/b"), "accounts.yaml line 10: name must be letters, digits, _ . - (at most 64), got 'a/b'"),
    (bad("name: nlp", "name: -x"), "accounts.yaml line 10: name must be letters"),
    (bad("name: nlp", "name: 7"), "accounts.yaml line 10: name must be letters, digits, _ . - (at most 64), got 7"),
    (bad("    limit: 8\n", "    limt: 8\n"), ("accounts.yaml line 5: unknown key 'limt' (expected one of name, weight, "
                                              "guaranteed, limit, members, accounts)")),
    (bad("reclaim_after: 45", "reclaim_after: 45\nreclaim: 3"), "accounts.yaml line 19: unknown key 'reclaim'"),
    (bad("default: {weight: 1}", "default: {weight: 1, members: [x]}"), ("accounts.yaml line 17: unknown key 'members' "
                                                                       "(expected one of weight, guaranteed, limit)")),
    (bad("default: {weight: 1}", "default: {weight: 1, guaranteed: 3, limit: 2}"),
     "accounts.yaml line 17: guaranteed 3 is above the limit 2"),
    (bad("default: {weight: 1}", "default: 5"), "accounts.yaml line 17: default must be a mapping"),
    (bad("reclaim_after: 45", "reclaim_after: -1"), "accounts.yaml line 18: reclaim_after must be seconds from 0 to 2592000, got -1"),
    (bad("reclaim_after: 45", "reclaim_after: soon"), "accounts.yaml line 18: reclaim_after must be seconds"),
    # Sub-accounts' guarantees above the parent's guarantee, or above its limit.
    (bad("    weight: 1.5\n", "    weight: 1.5\n    guaranteed: 1\n"),
     "accounts.yaml line 9: the guarantees of the sub-accounts add up to 2, above this account's guarantee 1"),
    (bad("    weight: 1.5\n", "    weight: 1.5\n    limit: 1\n"),
     "accounts.yaml line 9: the guarantees of the sub-accounts add up to 2, above this account's limit 1"),
    (bad("    weight: 1.5\n", "    weight: 1.5\n    guaranteed: 2\n    limit: 1\n"),
     "accounts.yaml line 9: guaranteed 2 is above the limit 1"),
    # Members: a user or group in two accounts, or twice in one, is an error.
    (bad("          - bob", "          - alice"),
     "accounts.yaml line 13: 'alice' is already a member of account 'vision' (line 6); a user or group belongs to one account"),
    (bad('"@nlp-speech"', '"@ml-team"'), "accounts.yaml line 16: '@ml-team' is already a member of account 'vision' (line 6)"),
    (bad("[alice, ", "[alice, alice, "), "accounts.yaml line 6: 'alice' is already a member of account 'vision' (line 6)"),
    (bad('"@nlp"', '"@"'), "accounts.yaml line 14: member '@' is not a @group (@ then a group name without spaces)"),
    (bad('"@nlp"', '"@n lp"'), "accounts.yaml line 14: member '@n lp' is not a @group"),
    (bad('"@nlp"', '"@@nlp"'), "accounts.yaml line 14: member '@@nlp' is not a @group"),
    (bad("- bob", '- "bob smith"'), "accounts.yaml line 13: member 'bob smith' is not a user name without spaces"),
    (bad("- bob", '- ""'), "accounts.yaml line 13: member '' is not a user name without spaces"),
    (bad("- bob", "- 12"), "accounts.yaml line 13: a member must be a user name or @group, got 12"),
    (bad('members: [alice, "@ml-team"]', "members: alice"),
     "accounts.yaml line 6: members must be a list of user names and @groups, got text 'alice'"),
    (bad("    weight: 1.5\n", "    weight: 1.5\n    members: [zed]\n"),
     "accounts.yaml line 9: an account with sub-accounts cannot have members; put them in a sub-account"),
    # Shapes.
    ("", "accounts.yaml line 1: the file is empty; it needs an accounts list"),
    ("- a\n- b\n", "accounts.yaml line 1: expected a mapping with an accounts list, got a list"),
    ("default: {weight: 2}\n", "accounts.yaml line 1: accounts is missing"),
    ("accounts: {name: x}\n", "accounts.yaml line 1: accounts must be a list of accounts, got a mapping"),
    ("accounts:\n  - vision\n", "accounts.yaml line 2: an account must be a mapping with a name, got text 'vision'"),
    ("accounts:\n  - weight: 2\n", "accounts.yaml line 2: the account has no name"),
    ("accounts:\n  - name: p\n    accounts: 3\n", "accounts.yaml line 3: accounts must be a list of accounts, got 3"),
    # YAML itself: the repository's loader (no aliases, no repeated keys), with line and column.
    ("accounts: &a []\nother: *a\n", "accounts.yaml is not valid YAML: aliases (*name) are not allowed (line 2, column 8)"),
    (bad("    limit: 8\n", "    limit: 8\n    limit: 9\n"), "accounts.yaml is not valid YAML: duplicate key 'limit' (line 6"),
    ("accounts:\n\t- name: x\n", ("accounts.yaml is not valid YAML: found character '\\t' that cannot start any token "
                                 "(line 2, column 1)")),
])
def test_bad_files_are_refused_with_the_line(text, message):
    with pytest.raises(InvalidRequest) as err:
        parse_accounts(text)
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)


def test_the_source_name_leads_the_message():
    with pytest.raises(InvalidRequest, match=r"^/etc/nbrunner/teams\.yaml line 3: weight"):
        parse_accounts(bad("weight: 3", "weight: -1"), "/etc/nbrunner/teams.yaml")


@pytest.mark.parametrize("tree, message", [
    ({"accounts": [{"name": "v", "weight": -1}]}, "accounts: account 'v': weight must be a positive number, got -1"),
    ({"accounts": [{"name": "p", "accounts": [{"name": "c", "weight": 0}]}]}, "accounts: account 'c': weight must be"),
    ({"accounts": [{"name": "v", "members": ["a"]}, {"name": "w", "members": ["a"]}]},
     "accounts: account 'w': 'a' is already a member of account 'v'; a user or group belongs to one account"),
    ({"accounts": [{"name": "v"}, {"name": "v"}]}, "accounts: accounts[1]: duplicate account name 'v'"),
    ({"accounts": [{"nam": "v"}]}, "accounts: accounts[0]: unknown key 'nam'"),
    ({"accounts": [{"name": "p", "accounts": ["x"]}]}, "accounts: account 'p' accounts[0]: an account must be a mapping"),
    ({"accounts": [], "default": {"limit": -1}}, "accounts: default: limit must be a whole number of GPUs"),
    ([], "accounts: expected a mapping with an accounts list, got a list"),
    ({}, "accounts: accounts is missing"),
])
def test_the_dict_form_is_checked_the_same_way(tree, message):
    with pytest.raises(InvalidRequest) as err:
        accounts_tree(tree)
    assert str(err.value).startswith(message), str(err.value)


def test_read_accounts_from_a_file(tmp_path):
    path = tmp_path / "accounts.yaml"
    path.write_text(GOOD)
    assert isinstance(read_accounts(path), AccountTree)
    path.write_text(bad("weight: 3", "weight: -1"))
    with pytest.raises(InvalidRequest, match=rf"^{path} line 3: weight must be a positive number, got -1$"):
        read_accounts(path)
    with pytest.raises(InvalidRequest, match="cannot read the accounts file .*missing.yaml: No such file"):
        read_accounts(tmp_path / "missing.yaml")
    path.write_bytes(b"accounts: []\n#" + b"x" * 70000)
    with pytest.raises(InvalidRequest, match="larger than 64 KiB"):
        read_accounts(path)


def test_a_parent_account_holds_what_its_sub_accounts_hold():
    jobs = [("research/nlp", 2), ("research/speech", 3), ("research/nlp", 1), ("vision", 4), (DEFAULT, 0)]
    assert held_by_account(jobs) == {"research": 6, "research/nlp": 3, "research/speech": 3, "vision": 4,
                                     DEFAULT: 0}
    assert held_by_account([]) == {}
