"""The checks of a job request's fields, without pydantic, and :func:`plain_request`.

:class:`~nbrunner.core.models.JobRequest` runs these checks as its validators.  A request whose
every field already has the exact type the (strict) model accepts and passes every check is
taken by :func:`plain_request` as it is, so ``nbrunner submit`` does not import pydantic (about
0.2 s with the models); anything else (None from :func:`plain_request`) goes through the model,
which says what is wrong in one line.
"""
from __future__ import annotations

import json
import keyword
import math
from types import SimpleNamespace
from typing import Any

from .limits import MAX_INT64, MAX_TIMEOUT_S, check_request
from .records import PRIORITY_DEFAULT, PRIORITY_MAX, PRIORITY_MIN, _bool, _int, _opt_int, _opt_str, _str


def check_notebook(v: str) -> str:
    if not v.strip():
        raise ValueError("notebook path is empty")
    if "\x00" in v:
        raise ValueError("notebook path contains a NUL byte")
    return v


def check_parameters(v: dict) -> dict:
    """Python identifiers, not keywords, mapped to JSON values; returns a copy made of JSON."""
    for key in v:
        if not key.isidentifier():
            raise ValueError(f"parameter name {key!r} is not a Python identifier")
        if keyword.iskeyword(key):
            raise ValueError(f"parameter name {key!r} is a Python keyword")
    try:
        text = json.dumps(v, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"parameters must be JSON values ({exc})") from None
    return json.loads(text)


def check_name(v: str | None) -> str | None:
    if v is not None:
        v = v.strip()
        if not v or len(v) > 200 or any(ord(c) < 32 for c in v):
            raise ValueError("name must be 1..200 printable characters")
    return v


def check_count(v: int | None, field: str) -> int | None:
    """min_gpus, max_gpus, retries."""
    if v is not None and v < 0:
        raise ValueError(f"{field} must be >= 0, got {v}")
    if v is not None and v > MAX_INT64:
        raise ValueError(f"{field} must be at most 2**63-1")
    return v


def check_priority(v: int) -> int:
    if not PRIORITY_MIN <= v <= PRIORITY_MAX:
        raise ValueError(f"priority must be between {PRIORITY_MIN} and {PRIORITY_MAX}, got {v}")
    return v


def check_timeout(v: Any) -> float | None:
    if v is None:
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("timeout must be a number of seconds")
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {v}")
    if v > MAX_TIMEOUT_S:
        raise ValueError(f"timeout must be at most {MAX_TIMEOUT_S} s (30 days), got {v:g}")
    return float(v)


def check_bounds(min_gpus: int, max_gpus: int | None) -> int:
    """``max_gpus``, which defaults to ``min_gpus``; no less than it."""
    if max_gpus is None:
        max_gpus = min_gpus
    if min_gpus > max_gpus:
        raise ValueError(f"min_gpus ({min_gpus}) is greater than max_gpus ({max_gpus})")
    return max_gpus


def _any(v: Any) -> bool:
    return True  # check_timeout says what it accepts


def _str_dict(v: Any) -> bool:
    return type(v) is dict and all(type(k) is str for k in v)


# Every field of JobRequest: the exact types the strict model takes as they are, and its default.
# tests/test_requests.py keeps this in step with the model.
REQUEST_FIELDS: dict[str, tuple[Any, Any]] = {
    "notebook": (_str, None), "parameters": (_str_dict, dict), "name": (_opt_str, None),
    "min_gpus": (_int, 0), "max_gpus": (_opt_int, None), "priority": (_int, PRIORITY_DEFAULT),
    "timeout": (_any, None), "kernel": (_opt_str, None), "language": (_opt_str, None), "cwd": (_opt_str, None),
    "report_mode": (_bool, False), "sweep": (_opt_str, None), "schedule": (_opt_str, None),
    "retries": (_opt_int, None),
}


def plain_request(data: Any) -> SimpleNamespace | None:
    """``data`` as the request JobRequest would make of it (same attributes and values), if
    every field is plainly valid; else None (the model then validates it and names the error).
    Raises InvalidRequest for what every request must pass first (sizes, nesting)."""
    if type(data) is not dict or "notebook" not in data or not data.keys() <= REQUEST_FIELDS.keys():
        return None
    check_request(data)
    values = {}
    for name, (ok, default) in REQUEST_FIELDS.items():
        value = data.get(name, default() if default is dict else default)
        if not ok(value):
            return None
        values[name] = value
    try:
        values["notebook"] = check_notebook(values["notebook"])
        values["parameters"] = check_parameters(values["parameters"])
        values["name"] = check_name(values["name"])
        for name in ("min_gpus", "max_gpus", "retries"):
            values[name] = check_count(values[name], name)
        values["priority"] = check_priority(values["priority"])
        values["timeout"] = check_timeout(values["timeout"])
        values["max_gpus"] = check_bounds(values["min_gpus"], values["max_gpus"])
    except ValueError:
        return None
    return SimpleNamespace(**values)
