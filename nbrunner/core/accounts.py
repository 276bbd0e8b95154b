"""The accounts tree: reading and checking an accounts file, and which account a job is in.

Pure (``nbrunner.control.local_files.read_accounts`` reads the file). The file::

    accounts:
      - name: vision
        weight: 3            # share among sibling accounts with demand (default 1)
        guaranteed: 4        # GPUs it gets back, when it asks (default 0; see below)
        limit: 8             # most GPUs it may hold, borrowing included (default: none)
        members: [alice, "@ml-team"]     # user names and hub groups (@group)
        accounts: [...]      # optional sub-accounts, same shape
    default: {weight: 1}     # users in no account (weight, guaranteed, limit)
    reclaim_after: 30        # seconds a non-elastic borrower keeps lent GPUs once asked

Rules (a file that breaks one is refused with one line naming its line, e.g.
``accounts.yaml line 7: weight must be a positive number, got -1``):

* Keys: only those above; ``accounts`` is required (it may be empty) and every
  account needs a ``name``. ``name``: letters, digits, ``_ . -`` (at most 64, not
  starting with ``.``/``-``), unique in the whole file, not ``default`` (the
  account of users in no account). An account's path joins the names from the top
  with ``/`` (``research/vision``).
* ``weight``: a number > 0 (at most 1,000,000). ``guaranteed`` and ``limit``: whole
  GPUs >= 0; ``limit: null`` or no limit = no limit. ``guaranteed <= limit``.
* Sub-accounts: their guarantees add up to at most the parent's guarantee; a parent
  that states none gets the sum of its sub-accounts'. (Its limit bounds that sum, as
  it bounds its guarantee.) A sub-account's own limit may be larger than its
  parent's: the tighter one holds.
* ``members``: only on accounts without sub-accounts. Entries are user names (as
  the hub spells them, matched exactly) or ``@group`` (a hub group). An entry may
  appear once in the whole file: a user or group listed in two accounts is an
  error (which account would it be?), as is a repeated entry in one list.
* ``reclaim_after``: seconds >= 0 (default 30, at most 30 days).

Membership (``AccountTree.account_of(owner, groups)``): a user listed by name is in
that account, whatever their groups. Otherwise, of the user's hub groups that the
file lists, the one whose ``@group`` entry comes first in the file decides. A user
matched by neither is in ``default``. The result is always a leaf account's path.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

from .config import MAX_ACCOUNT_GPUS, MAX_STRING_CHARS, MAX_TIMEOUT_S, MAX_WEIGHT, RECLAIM_AFTER_S
from .errors import InvalidRequest
from .limits import YamlList, YamlMap, load_yaml, short

__all__ = ["Account", "AccountTree", "parse_accounts", "accounts_tree", "held_by_account", "DEFAULT",
           "RECLAIM_AFTER_S", "MAX_WEIGHT"]

DEFAULT = "default"
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
_ROOT_KEYS = ("accounts", "default", "reclaim_after")
_ACCOUNT_KEYS = ("name", "weight", "guaranteed", "limit", "members", "accounts")
_DEFAULT_KEYS = ("weight", "guaranteed", "limit")


@dataclass(frozen=True)
class Account:
    """One account of the tree (``limit`` None = no limit)."""

    name: str
    path: str
    weight: int | float = 1
    guaranteed: int = 0
    limit: int | None = None
    members: tuple[str, ...] = ()
    accounts: tuple[Account, ...] = ()

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "weight": self.weight, "guaranteed": self.guaranteed,
                               "limit": self.limit}
        if self.accounts:
            out["accounts"] = [a.to_dict() for a in self.accounts]
        else:
            out["members"] = list(self.members)
        return out


@dataclass(frozen=True)
class AccountTree:
    """A checked accounts file: top-level accounts, the default account, ``reclaim_after``."""

    accounts: tuple[Account, ...]
    default: Account
    reclaim_after: float = RECLAIM_AFTER_S
    users: dict[str, str] = field(default_factory=dict, compare=False, repr=False)   # user -> path
    groups: dict[str, tuple[int, str]] = field(default_factory=dict, compare=False, repr=False)  # group -> (rank, path)

    def account_of(self, owner: str, groups=()) -> str:
        """The path of the leaf account of a user with these hub groups (see the module docstring)."""
        path = self.users.get(owner)
        if path is not None:
            return path
        best = None
        for g in groups or ():
            hit = self.groups.get(g)
            if hit is not None and (best is None or hit < best):
                best = hit
        return DEFAULT if best is None else best[1]

    def walk(self) -> Iterator[tuple[Account, Account | None]]:
        """Every account with its parent (None at the top), parents first, in file order; the
        default account last."""
        stack: list[tuple[Account, Account | None]] = [(a, None) for a in reversed(self.accounts)]
        while stack:
            a, parent = stack.pop()
            yield a, parent
            stack.extend((c, a) for c in reversed(a.accounts))
        yield self.default, None

    def to_dict(self) -> dict:
        """The file's content with every default filled in (what ``accounts_tree`` reads back)."""
        d = self.default
        return {"accounts": [a.to_dict() for a in self.accounts],
                "default": {"weight": d.weight, "guaranteed": d.guaranteed, "limit": d.limit},
                "reclaim_after": self.reclaim_after}


def held_by_account(holdings: Iterable[tuple[str, int]]) -> dict[str, int]:
    """GPUs held per account path, a parent account's being the sum of its sub-accounts'
    (``holdings``: the path of each job's account, a leaf, and the GPUs the job holds)."""
    held: dict[str, int] = {}
    for path, gpus in holdings:
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            up = "/".join(parts[:i])
            held[up] = held.get(up, 0) + gpus
    return held


def parse_accounts(text: str | bytes, source: str = "accounts.yaml") -> AccountTree:
    """Read and check an accounts file's text; ``InvalidRequest`` names the line of a problem."""
    data = load_yaml(text, source, lines=True)
    if data is None:
        raise InvalidRequest(f"{source} line 1: the file is empty; it needs an accounts list")
    return _Reader(source, lined=True).tree(data)


def accounts_tree(accounts: Any) -> AccountTree:
    """An ``AccountTree`` from the file's content as a dict (checked), or the tree itself."""
    if isinstance(accounts, AccountTree):
        return accounts
    return _Reader("accounts").tree(accounts)


class _Reader:
    """Checks the loaded content; knows line numbers when it came from ``load_yaml(lines=True)``."""

    def __init__(self, source: str, lined: bool = False):
        self.source = source
        self.lined = lined
        self.names: dict[str, str] = {}     # account name -> " (line N)" where it was first named
        self.members: dict[str, tuple[str, str]] = {}  # entry -> (account, " (line N)")
        self.users: dict[str, str] = {}
        self.groups: dict[str, tuple[int, str]] = {}

    def fail(self, container: Any, key: Any, label: str, message: str) -> NoReturn:
        line = _line(container, key) or (1 if self.lined else 0)  # 1: the document itself
        if line:
            raise InvalidRequest(f"{self.source} line {line}: {message}")
        raise InvalidRequest(f"{self.source}: {label}: {message}" if label else f"{self.source}: {message}")

    def where(self, container: Any, key: Any) -> str:
        """`` (line N)`` naming where ``container[key]`` is in the file; empty without lines."""
        line = _line(container, key)
        return f" (line {line})" if line else ""

    def tree(self, data: Any) -> AccountTree:
        if not isinstance(data, dict):
            self.fail(data, None, "", f"expected a mapping with an accounts list, got {_kind(data)}")
        self.keys(data, _ROOT_KEYS, "")
        if "accounts" not in data:
            self.fail(data, None, "", "accounts is missing (a list of accounts, may be empty)")
        tops = self.account_list(data, "accounts", "", "")
        default = self.default(data)
        reclaim = data.get("reclaim_after", RECLAIM_AFTER_S)
        if isinstance(reclaim, bool) or not isinstance(reclaim, (int, float)) or not math.isfinite(reclaim) \
                or not 0 <= reclaim <= MAX_TIMEOUT_S:
            self.fail(data, "reclaim_after", "", f"reclaim_after must be seconds from 0 to {MAX_TIMEOUT_S}, "
                                                 f"got {short(reclaim)}")
        return AccountTree(tuple(tops), default, float(reclaim), self.users, self.groups)

    def keys(self, d: dict, allowed: tuple, label: str) -> None:
        for k in d:
            if k not in allowed:
                self.fail(d, k, label, f"unknown key {short(k)} (expected one of {', '.join(allowed)})")

    def account_list(self, d: dict, key: str, parent: str, label: str) -> list[Account]:
        items = d[key]
        if items is None:
            return []
        if not isinstance(items, list):
            self.fail(d, key, label, f"{key} must be a list of accounts, got {_kind(items)}")
        return [self.account(items, i, parent) for i in range(len(items))]

    def account(self, items: list, i: int, parent: str) -> Account:
        d = items[i]
        label = f"{'account ' + repr(parent) + ' ' if parent else ''}accounts[{i}]"
        if not isinstance(d, dict):
            self.fail(items, i, label, f"an account must be a mapping with a name, got {_kind(d)}")
        self.keys(d, _ACCOUNT_KEYS, label)
        name = self.name(d, label)
        label = f"account {name!r}"
        path = f"{parent}/{name}" if parent else name
        weight = self.weight(d, label)
        limit = self.gpus(d, "limit", label, None)
        subs = self.account_list(d, "accounts", path, label) if "accounts" in d else []
        below = sum(a.guaranteed for a in subs)
        guaranteed = self.gpus(d, "guaranteed", label, below)
        if limit is not None and guaranteed > limit:
            if "guaranteed" in d:
                self.fail(d, "guaranteed", label, f"guaranteed {guaranteed} is above the limit {limit}")
            self.fail(d, "limit", label, f"the guarantees of the sub-accounts add up to {guaranteed}, "
                                         f"above this account's limit {limit}")
        if below > guaranteed:
            self.fail(d, "guaranteed", label,
                      f"the guarantees of the sub-accounts add up to {below}, above this account's guarantee {guaranteed}")
        members = self.member_list(d, name, path, label, bool(subs))
        return Account(name, path, weight, guaranteed, limit, members, tuple(subs))

    def name(self, d: dict, label: str) -> str:
        if "name" not in d:
            self.fail(d, None, label, "the account has no name")
        name = d["name"]
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            self.fail(d, "name", label, f"name must be letters, digits, _ . - (at most 64), got {short(name)}")
        if name == DEFAULT:
            self.fail(d, "name", label, f"{DEFAULT!r} is the account of users in no account; use the default key")
        if name in self.names:
            self.fail(d, "name", label, f"duplicate account name {name!r}{self.names[name]}")
        line = _line(d, "name")
        self.names[name] = f" (first at line {line})" if line else ""
        return name

    def weight(self, d: dict, label: str) -> int | float:
        w = d.get("weight", 1)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or not 0 < w <= MAX_WEIGHT:
            big = isinstance(w, (int, float)) and math.isfinite(w) and w > MAX_WEIGHT
            self.fail(d, "weight", label, f"weight must be a positive number, got {short(w)}"
                      + (f" (at most {MAX_WEIGHT:,})" if big else ""))
        return int(w) if float(w).is_integer() else float(w)

    def gpus(self, d: dict, key: str, label: str, absent: int | None) -> int | None:
        if key not in d or (key == "limit" and d[key] is None):
            return absent
        v = d[key]
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_ACCOUNT_GPUS:
            none = " or null" if key == "limit" else ""
            self.fail(d, key, label, f"{key} must be a whole number of GPUs >= 0{none}, got {short(v)}")
        return v

    def member_list(self, d: dict, name: str, path: str, label: str, has_subs: bool) -> tuple[str, ...]:
        members = d.get("members")
        if members is None:
            return ()
        if has_subs:
            self.fail(d, "members", label, "an account with sub-accounts cannot have members; "
                                           "put them in a sub-account")
        if not isinstance(members, list):
            self.fail(d, "members", label, f"members must be a list of user names and @groups, got {_kind(members)}")
        for i, entry in enumerate(members):
            self.member(members, i, entry, name, path, label)
        return tuple(members)

    def member(self, members: list, i: int, entry: Any, name: str, path: str, label: str) -> None:
        if not isinstance(entry, str):
            self.fail(members, i, label, f"a member must be a user name or @group, got {short(entry)}")
        group = entry.startswith("@")
        bare = entry[1:] if group else entry
        if not bare or bare != bare.strip() or any(c.isspace() or not c.isprintable() for c in bare) \
                or bare.startswith("@") or len(bare) > MAX_STRING_CHARS:
            kind = "@group (@ then a group name without spaces)" if group else "user name without spaces"
            self.fail(members, i, label, f"member {short(entry)} is not a {kind}")
        if entry in self.members:
            other, at = self.members[entry]
            self.fail(members, i, label, f"{entry!r} is already a member of account {other!r}{at}; "
                                         "a user or group belongs to one account")
        self.members[entry] = (name, self.where(members, i))
        if group:
            self.groups[bare] = (len(self.groups), path)
        else:
            self.users[bare] = path

    def default(self, data: dict) -> Account:
        d = data.get("default")
        if d is None:
            return Account(DEFAULT, DEFAULT)
        if not isinstance(d, dict):
            self.fail(data, "default", "", f"default must be a mapping (weight, guaranteed, limit), got {_kind(d)}")
        label = "default"
        self.keys(d, _DEFAULT_KEYS, label)
        weight = self.weight(d, label)
        limit = self.gpus(d, "limit", label, None)
        guaranteed = self.gpus(d, "guaranteed", label, 0)
        if limit is not None and guaranteed > limit:
            self.fail(d, "guaranteed", label, f"guaranteed {guaranteed} is above the limit {limit}")
        return Account(DEFAULT, DEFAULT, weight, guaranteed, limit)


def _line(container: Any, key: Any) -> int:
    """The file line of ``container[key]`` (or of the container when key is None); 0 if unknown."""
    if isinstance(container, YamlMap):
        return container.key_lines.get(key, container.line) if key is not None else container.line
    if isinstance(container, YamlList):
        if key is not None and 0 <= key < len(container.item_lines):
            return container.item_lines[key]
        return container.line
    return 0


def _kind(v: Any) -> str:
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    if v is None:
        return "nothing"
    return ("text " if isinstance(v, str) else "") + short(v)
