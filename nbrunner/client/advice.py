"""Advice a client gives at submit when a job's options will not do what its notebook expects.

Today one case: a notebook that trains with ``ElasticTrainer`` submitted with ``max_gpus`` of 0 or
1 can only ever get one learner (``max_gpus`` defaults to ``min_gpus``, which defaults to 0).
"""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Iterable

MAX_GPUS_HELP = ("most GPUs the job may hold (default: --min-gpus, so 0: no GPU; an ElasticTrainer "
                 "notebook then trains on one CPU learner: give --max-gpus N for up to N learners)")


class SingleLearnerWarning(UserWarning):
    """An ElasticTrainer notebook submitted with ``max_gpus`` <= 1: one learner at most."""


def uses_elastic_trainer(text: str) -> bool:
    """Whether a notebook's JSON text has a code cell that names ``ElasticTrainer``."""
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return False
    return any(c.get("cell_type") == "code" and "ElasticTrainer" in "".join(c.get("source", ""))
               for c in cells if isinstance(c, dict))


def _read(notebook: str | os.PathLike, roots: Iterable[Path]) -> str | None:
    """The notebook's text as submit found it: relative to the current directory first, then to
    each of ``roots`` (the workspace); None if this process cannot read it."""
    for path in (Path(notebook), *(root / notebook for root in roots)):
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except (OSError, UnicodeDecodeError):
            continue
    return None


def single_learner_advice(notebook: str | os.PathLike, max_gpus: int, roots: Iterable[Path] = ()) -> str | None:
    """The one-line advice for a job of ``notebook`` (a local path) holding at most ``max_gpus``,
    or None (enough GPUs, no ElasticTrainer, or a notebook this process cannot read)."""
    if max_gpus > 1:
        return None
    text = _read(notebook, roots)
    if text is None or not uses_elastic_trainer(text):
        return None
    return (f"{os.fspath(notebook)} trains with ElasticTrainer but max_gpus is {max_gpus}: it can only ever get "
            f"one learner (ask for more with --max-gpus N, or max_gpus=N)")


def warn_single_learner(notebook: str | os.PathLike, max_gpus: int, roots: Iterable[Path] = ()) -> None:
    """Issue :class:`SingleLearnerWarning` if :func:`single_learner_advice` has advice."""
    advice = single_learner_advice(notebook, max_gpus, roots)
    if advice:
        warnings.warn(advice, SingleLearnerWarning, stacklevel=3)
