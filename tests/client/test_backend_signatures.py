"""Both backends implement :class:`nbrunner.client.backend.Backend`, member for member: the same
names, the same parameters (names, kinds, defaults), properties where it has properties, and no
public operation of one backend that the protocol does not declare."""
from __future__ import annotations

import inspect

import pytest

from nbrunner.client.backend import Backend, JobChangeFeed, operations
from nbrunner.client.local import JobChanges, LocalBackend
from nbrunner.client.remote import RemoteBackend, ServiceJobChanges

BACKENDS = (LocalBackend, RemoteBackend)
# what one backend has beyond the contract: how it is made, and what it holds
OWN = {LocalBackend: {"attach", "api", "user", "caller"}, RemoteBackend: {"client", "user"}}


def parameters(fn) -> list[tuple[str, object, object]]:
    sig = inspect.signature(fn)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
@pytest.mark.parametrize("name", sorted(operations()))
def test_each_operation_has_the_protocols_parameters(backend, name):
    declared = operations()[name]
    if isinstance(declared, property):
        own = inspect.getattr_static(backend, name, None)
        # a plain attribute set in __init__ (LocalBackend.settings) is as good as a property
        assert own is None or isinstance(own, property), f"{backend.__name__}.{name} is not a property"
        if own is None:
            assert name in inspect.getsource(backend.__init__), f"{backend.__name__} has no {name}"
        return
    own = inspect.getattr_static(backend, name, None)
    assert own is not None, f"{backend.__name__} lacks {name}"
    assert parameters(getattr(backend, name)) == parameters(declared), f"{backend.__name__}.{name}"


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
def test_no_backend_offers_an_operation_the_protocol_does_not_declare(backend):
    public = {n for n in vars(backend) if not n.startswith("_")}
    extra = public - set(operations()) - OWN[backend]
    assert not extra, f"{backend.__name__} has public members outside the Backend protocol: {sorted(extra)}"


@pytest.mark.parametrize("feed", (JobChanges, ServiceJobChanges), ids=lambda f: f.__name__)
def test_both_change_feeds_read_and_close_alike(feed):
    for name in ("read", "close"):
        assert parameters(getattr(feed, name)) == parameters(getattr(JobChangeFeed, name))


def test_a_class_without_the_operations_is_no_backend():
    class Half:
        def job(self, job_id):  # pragma: no cover - never called
            raise AssertionError

    assert not isinstance(Half(), Backend)
