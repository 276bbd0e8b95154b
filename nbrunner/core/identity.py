"""Who makes a request: :class:`Caller`, and whom an object shows itself to.

A user sees and changes only what they own; admins see and change everything.  Anything
else answers as if it did not exist (NotFound), so that its existence is not revealed.
Under ``nbrunner service`` the caller is a JupyterHub user (:func:`hub_caller`).
"""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple


class Caller(NamedTuple):
    """The identity of one request: a user name, the user's groups, and whether they are an admin."""

    name: str
    groups: tuple[str, ...] = ()
    admin: bool = False

    def sees(self, owner: str | None) -> bool:
        """May this caller read and change an object owned by ``owner``?"""
        return self.admin or owner == self.name

    @property
    def owner_filter(self) -> str | None:
        """The owner a listing keeps (None: everyone's, for an admin)."""
        return None if self.admin else self.name


def local_caller(name: str) -> Caller:
    """The caller of a single-user deployment (the CLI, the Python API, a personal Jupyter server):
    its user owns the jobs it submits and sees every job of the cluster."""
    return Caller(name=name, admin=True)


def hub_caller(model: Mapping[str, Any], admin_group: str | None = None) -> Caller:
    """The caller a JupyterHub user model (``GET /hub/api/user``: ``name``, ``groups``, ``admin``)
    stands for: a hub admin, or a member of ``admin_group``, is an admin."""
    groups = tuple(str(g) for g in model.get("groups") or ())
    admin = bool(model.get("admin")) or (admin_group is not None and admin_group in groups)
    return Caller(name=str(model["name"]), groups=groups, admin=admin)
