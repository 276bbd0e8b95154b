"""The shape of a record's life, shared by every kind of record: a pure ``transition(record, event)
-> Transition(record, actions, event)`` that refuses what is illegal in the record's state.

A kind of record (a job: :mod:`nbrunner.core.lifecycle`; a pipeline:
:mod:`nbrunner.core.pipelines.lifecycle`; a sweep: :mod:`nbrunner.core.sweeps.lifecycle`, and
one of its trials: :mod:`nbrunner.core.sweeps.trial_lifecycle`; a schedule:
:mod:`nbrunner.core.schedule_lifecycle`) declares its events (frozen msgspec structs), its actions
(the instructions other code carries out) and one handler per event type; :class:`Machine`
dispatches an event to its handler.  Records are frozen msgspec structs or frozen pydantic models;
:func:`replace` copies either with changes.  Handlers return a
:class:`Transition` and raise :class:`~nbrunner.core.lifecycle.Refused` (a Conflict) for an
event that is not legal; they never do I/O and never read the clock (events carry their time).
"""
from __future__ import annotations

from typing import Any, Callable, Generic, Iterable, TypeVar

import msgspec

from .fence import Refused

R = TypeVar("R")


class Transition(msgspec.Struct, Generic[R], frozen=True):
    """The new record (None when it is removed), the actions to carry out, and the kind of the
    event-stream entry to write ("": none)."""

    record: R | None
    actions: tuple[Any, ...] = ()
    event: str = ""


class Machine(Generic[R]):
    """The transitions of one kind of record: ``machine(record, event)`` runs the handler
    registered for ``type(event)``; an event of no registered type is a TypeError (a bug)."""

    def __init__(self, kind: str, handlers: dict[type, Callable[[R, Any], Transition[R]]]):
        self.kind = kind
        self.handlers = dict(handlers)

    @property
    def events(self) -> tuple[type, ...]:
        return tuple(self.handlers)

    def __call__(self, record: R, event: Any) -> Transition[R]:
        handler = self.handlers.get(type(event))
        if handler is None:
            raise TypeError(f"not a {self.kind} event: {event!r}")
        return handler(record, event)

    def allows(self, record: R, event: Any) -> bool:
        """Whether ``event`` is legal for ``record`` (the transition is computed and dropped)."""
        try:
            self(record, event)
        except Refused:
            return False
        return True

    def fold(self, record: R, events: Iterable[Any]) -> Transition[R]:
        """``events`` applied in turn: the last record, every action in order, the last
        event-stream kind given; Refused by the first illegal event."""
        actions: list[Any] = []
        kind = ""
        for event in events:
            done = self(record, event)
            record, actions, kind = done.record, [*actions, *done.actions], done.event or kind
        return Transition(record, tuple(actions), kind)


def replace(record: R, **changes: Any) -> R:
    """``record`` (a frozen msgspec struct or pydantic model) with ``changes``."""
    copy = getattr(record, "model_copy", None)
    if copy is not None:  # pydantic: the changes are the transition's own values, not input to validate
        return copy(update=changes)
    return msgspec.structs.replace(record, **changes)


__all__ = ["Machine", "Transition", "replace"]
