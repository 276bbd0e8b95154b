"""What every record's life test checks at each step: a pure transition never changes the record
it is given, whether it applies the event or refuses it."""
from __future__ import annotations

from typing import Any, Callable

from nbrunner.core.fence import Refused


def step_purely(transition: Callable[[Any, Any], Any], record: Any, event: Any) -> Any:
    """``transition(record, event)``, or None if it refused the event; either way ``record`` is
    asserted unchanged (compared as its JSON)."""
    before = record.model_dump_json()
    try:
        done = transition(record, event)
    except Refused:
        done = None
    assert record.model_dump_json() == before  # pure: the record given is never changed
    return done
