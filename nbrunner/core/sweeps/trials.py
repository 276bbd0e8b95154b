"""Trials: the grid points of a spec (in the order written) times ``generate`` random draws
(the records of a sweep and its trials: :mod:`.record`)."""
from __future__ import annotations

import itertools
import math
from typing import Any

from .record import SweepRecord, SweepStatus, Trial, TrialState  # noqa: F401 - where they used to live
from .spec import SweepSpec, parse_spec


def _draw(rng, dist: dict) -> Any:
    (kind, args), = dist.items()
    if kind == "uniform":
        return float(rng.uniform(args[0], args[1]))
    if kind == "loguniform":
        return float(math.exp(rng.uniform(math.log(args[0]), math.log(args[1]))))
    if kind == "normal":
        return float(rng.normal(args[0], args[1]))
    if kind == "randint":
        return int(rng.integers(args[0], args[1], endpoint=True))
    return args[int(rng.integers(len(args)))]  # choice


def generate_trials(spec: SweepSpec | Any, seed: int | None = None) -> list[dict[str, Any]]:
    """The parameters of every trial: grid points (in spec order) x ``generate`` draws."""
    import numpy as np

    if not isinstance(spec, SweepSpec):
        spec = parse_spec(spec)
    seed = spec.seed if seed is None else seed
    rng = np.random.default_rng(seed)
    names = list(spec.parameters)
    grid_names = [n for n in names if isinstance(spec.parameters[n], list)]
    trials = []
    for point in itertools.product(*(spec.parameters[n] for n in grid_names)):
        fixed = dict(zip(grid_names, point))
        for _ in range(spec.generate):
            params = {}
            for n in names:
                value = spec.parameters[n]
                if n in fixed:
                    params[n] = fixed[n]
                elif isinstance(value, dict):
                    params[n] = _draw(rng, value)
                else:
                    params[n] = value
            trials.append(params)
    return trials


__all__ = ["generate_trials", "SweepRecord", "Trial", "TrialState", "SweepStatus"]
