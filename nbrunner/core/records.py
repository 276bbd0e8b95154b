"""Job records without pydantic: statuses, times, the public fields, and a read-only view.

:mod:`.models` validates requests and records, and writes them; it costs about 0.1 s to
import (pydantic).  Commands that only show records (``nbrunner jobs``, ``show``, ``logs``)
read them through :class:`RecordView` instead: the stored JSON as it is, with the read API
of :class:`~nbrunner.core.models.JobRecord` (attributes, ``finished``, ``duration()``,
``to_dict()``).  A view is made only of a record whose every field already has the type the
model would give it (what the store writes); anything else goes through the model, so both
give the same answers.  ``nbrunner submit`` makes its new record as a view too
(:meth:`RecordView.new`), so it does not import pydantic either.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Callable

STATUSES = ("queued", "running", "completed", "failed", "cancelled")
FINISHED = ("completed", "failed", "cancelled")
PRIORITY_MIN, PRIORITY_MAX, PRIORITY_DEFAULT = 1, 10000, 5000

# Fields of the public job record (the README's job record), in display order.
PUBLIC_FIELDS = (
    "id", "name", "notebook", "parameters", "status", "priority", "min_gpus", "max_gpus", "gpus",
    "owner", "created_at", "started_at", "finished_at", "output", "error", "progress", "metrics", "sweep",
    "schedule",
    "history",
)
# Bookkeeping fields that ``to_dict()`` (the REST and ``--json`` job) shows after the public ones.
SHOWN_EXTRA = ("timeout", "kernel", "attempt", "worker", "queue_position")


def utcnow() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def duration(started_at: str | None, finished_at: str | None) -> float | None:
    """Seconds from start to finish (to now while running); None before the start."""
    start = parse_time(started_at)
    if start is None:
        return None
    end = parse_time(finished_at) or datetime.now(timezone.utc)
    return max(0.0, (end - start).total_seconds())


def _str(v: Any) -> bool:
    return type(v) is str


def _opt_str(v: Any) -> bool:
    return v is None or type(v) is str


def _int(v: Any) -> bool:
    return type(v) is int


def _opt_int(v: Any) -> bool:
    return v is None or type(v) is int


def _opt_float(v: Any) -> bool:
    return v is None or type(v) is float


def _bool(v: Any) -> bool:
    return type(v) is bool


def _object(v: Any) -> bool:
    return type(v) is dict


def _status(v: Any) -> bool:
    return type(v) is str and v in STATUSES


def _history(v: Any) -> bool:
    return type(v) is list and all(type(h) is dict and all(type(x) is str for x in h.values()) for h in v)


def _slots(v: Any) -> bool:
    return type(v) is list and all(type(s) is list for s in v)


def _floats(v: Any) -> bool:
    return type(v) is dict and all(type(x) is float for x in v.values())


_REQUIRED = object()
# Every field of JobRecord: the check that its stored value is already what the model would
# give, and its default (a type for a fresh container; _REQUIRED: no fixed default, so a record
# without it goes through the model).  tests/test_records.py keeps this in step with the model.
FIELDS: dict[str, tuple[Callable[[Any], bool], Any]] = {
    "id": (_str, _REQUIRED),
    "name": (_str, _REQUIRED),
    "notebook": (_str, _REQUIRED),
    "parameters": (_object, dict),
    "status": (_status, "queued"),
    "priority": (_int, PRIORITY_DEFAULT),
    "min_gpus": (_int, 0),
    "max_gpus": (_int, 0),
    "gpus": (_int, 0),
    "owner": (_str, ""),
    "created_at": (_str, _REQUIRED),  # the model's default is the time of reading
    "started_at": (_opt_str, None),
    "finished_at": (_opt_str, None),
    "output": (_opt_str, None),
    "error": (_opt_str, None),
    "progress": (_opt_float, None),
    "metrics": (_object, dict),
    "sweep": (_opt_str, None),
    "schedule": (_opt_str, None),
    "history": (_history, list),
    "timeout": (_opt_float, None),
    "kernel": (_opt_str, None),
    "language": (_opt_str, None),
    "cwd": (_opt_str, None),
    "report_mode": (_bool, False),
    "retries": (_int, 2),
    "attempt": (_int, 0),
    "lost": (_int, 0),
    "dispatched": (_bool, False),
    "worker": (_opt_str, None),
    "host": (_opt_str, None),
    "slots": (_slots, list),
    "elastic": (_bool, False),
    "training_over": (_bool, False),
    "released": (_bool, True),
    "cancel_requested": (_bool, False),
    "queue_position": (_opt_int, None),
    "throughput": (_floats, dict),
    "pause_s": (_opt_float, None),
}


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN and Infinity: the model decides what they mean


class RecordView:
    """A stored job record, read-only, with the read API of ``JobRecord`` (see the module)."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]):
        object.__setattr__(self, "_data", data)

    @classmethod
    def parse(cls, raw: str | bytes) -> RecordView | None:
        """The view of a stored record, or None where only the model can tell what it holds
        (not a JSON object, a field missing without a fixed default, a value of another type)."""
        try:
            stored = json.loads(raw, parse_constant=_no_constant)
        except ValueError:
            return None
        if type(stored) is not dict:
            return None
        data = {}
        for name, (ok, default) in FIELDS.items():
            if name in stored:
                value = stored[name]
                if not ok(value):
                    return None
            elif default is _REQUIRED:
                return None
            else:
                value = default() if isinstance(default, type) else default
            data[name] = value
        return cls(data)

    @classmethod
    def new(cls, **values: Any) -> RecordView | None:
        """A new queued record of ``values`` (every other field its default, created now, its
        history starting at "queued"), as JobRecord would make it; None where only the model can
        tell (a value of another type, an unknown field)."""
        if not values.keys() <= FIELDS.keys():
            return None
        data = {}
        for name, (ok, default) in FIELDS.items():
            if name in values:
                value = values[name]
            elif name == "created_at":
                value = utcnow()
            elif default is _REQUIRED:
                return None
            else:
                value = default() if isinstance(default, type) else default
            if not ok(value):
                return None
            data[name] = value
        if data["status"] != "queued" or data["history"]:
            return None
        data["history"] = [{"status": "queued", "at": data["created_at"]}]
        return cls(data)

    def model_dump_json(self) -> str:
        """The record as JSON, as JobRecord writes it (what the store keeps)."""
        return json.dumps(self._data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a RecordView is read-only (change records with JobStore.update)")

    def __repr__(self) -> str:
        return f"<RecordView {self.id} {self.status}>"

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def to_dict(self) -> dict[str, Any]:
        d = self._data
        return {**{k: d[k] for k in PUBLIC_FIELDS}, **{k: d[k] for k in SHOWN_EXTRA}}

    def duration(self) -> float | None:
        return duration(self.started_at, self.finished_at)
