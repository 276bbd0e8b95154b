"""The process's default cluster: the one :func:`nbrunner.connect` or :func:`nbrunner.setup_cluster` made.

It sits apart from :mod:`nbrunner.client.cluster` so that the views (:mod:`.widgets`), which
the job handle opens, find the default cluster without importing the module that imports
them.  The package hands over a ``connect`` that imports :mod:`.cluster` on first use.
"""
from __future__ import annotations

from typing import Any, Callable

_default: Any = None
_connect: Callable[[], Any] | None = None


def connect_with(connect: Callable[[], Any]) -> None:
    """How :func:`default_cluster` attaches when no cluster was made yet."""
    global _connect
    _connect = connect


def remember(cluster: Any, replace: bool = True) -> None:
    """Make ``cluster`` the default (``replace=False``: only if there is none)."""
    global _default
    if replace or _default is None:
        _default = cluster


def forget(cluster: Any) -> None:
    """No default any more, if ``cluster`` was it (it shut down)."""
    global _default
    if _default is cluster:
        _default = None


def default_cluster() -> Any:
    """The default cluster, or a new connection to the workspace's running cluster."""
    if _default is not None:
        return _default
    if _connect is None:
        raise RuntimeError("nbrunner.client was not imported")  # its __init__ hands a connect over
    return _connect()
