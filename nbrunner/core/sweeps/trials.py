"""Trials: the grid points of a spec (in the order written) times ``generate`` random draws,
and the sweep's record of what became of each trial."""
from __future__ import annotations

import itertools
import math
from typing import Any

from pydantic import BaseModel, Field

from ..models import utcnow
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


class Trial(BaseModel):
    parameters: dict[str, Any]
    state: str = "pending"  # pending, submitting, submitted, skipped (could not be submitted), cancelled
    job: str | None = None
    error: str | None = None
    values: list[float | None] = Field(default_factory=list)  # objective per report, up to the last rung
    values_final: bool = False  # read after the job finished: nothing more will come
    decisions: dict[str, str] = Field(default_factory=dict)  # rung -> "continue" | "stopped"


class SweepRecord(BaseModel):
    id: str
    notebook: str  # relative to the workspace (as given, when it came as content)
    name: str
    spec: dict[str, Any]
    trials: list[Trial]
    options: dict[str, Any] = Field(default_factory=dict)  # job fields given to every trial
    owner: str = ""
    groups: list[str] = Field(default_factory=list)  # the owner's groups (a hub's), given to each trial
    from_content: bool = False  # the notebook came with the request: trials run the snapshot, ``notebook`` names it
    created_at: str = Field(default_factory=utcnow)
    finished_at: str | None = None
    status: str = "running"  # running, completed, cancelled

    @property
    def parsed(self) -> SweepSpec:
        return SweepSpec.model_validate(self.spec)

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "cancelled")

    def job_ids(self) -> list[str]:
        return [t.job for t in self.trials if t.job]
