"""A job's kind: the runs of one owner's notebook with the same parameters and training set-up. Pure, no I/O.

An elastic job measures its throughput only at the learner counts it has run, so the goodput
policy models it from one or two points at first and grows it step by step to measure more.
Earlier runs of the same notebook by the same owner with the same parameters, training the same
model with the same batch rule (the ``setup`` its trainer reports,
:func:`nbrunner.elastic.trainer.setup_of`), measured the same samples per second at other counts:
once a job has reported its own first throughput and set-up, the points of its kind fill in its
model (its own points win where both have one). Before that nothing is assumed: a job whose
set-up is not known yet is a stranger. The parameters are part of the kind because a parameter
may change the work of a step (an image size, a sequence length) without changing the model.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["kind_of", "with_kind", "SETUP_MAX_CHARS"]

SETUP_MAX_CHARS = 64
"""Longest ``setup`` a trainer may report (a digest); a longer one is not kept."""


def kind_of(owner: str | None, notebook: str, parameters: dict[str, Any], setup: str | None) -> str | None:
    """The kind of a job run by ``owner`` from ``notebook`` with ``parameters`` and training set-up
    ``setup`` (None: the set-up is not known yet, so the job has no kind)."""
    if not setup:
        return None
    text = json.dumps([owner, notebook, parameters, setup], sort_keys=True, default=repr)
    return hashlib.sha1(text.encode()).hexdigest()


def with_kind(own: dict[Any, float], kind: dict[Any, float]) -> dict[Any, float]:
    """A job's throughput points (``{learners: samples/s}``, keys as both are given) with its kind's at
    the counts it has not run; none while the job has measured nothing itself."""
    if not own:
        return {}
    return {**kind, **own}
