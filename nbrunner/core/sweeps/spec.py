"""A sweep's spec: parsing and validation, one-line errors (InvalidRequest) naming the problem.

A spec is a YAML file, YAML text or a dict::

    parameters:
      lr: {loguniform: [0.001, 0.1]}   # uniform: [a, b], normal: [mu, sigma], randint: [a, b], choice: [v, ...]
      momentum: [0.5, 0.9]             # a list: every value (grid)
      epochs: 5                        # a scalar: fixed
    generate: 3                        # random draws per grid point (default 1)
    seed: 0                            # same spec and seed -> same trials (numpy default_rng)
    max_parallel: 2                    # trials queued or running at once (default: no limit)
    objective: {metric: accuracy, mode: max}
    early_stopping: {rungs: [1, 2, 4], reduction_factor: 3}

A list is always a grid; to pass a list or a mapping as one fixed value, wrap it: ``[[1, 2]]``.
"""
from __future__ import annotations

import json
import math
import os
from typing import Any

from pydantic import BaseModel, Field

from ..config import MAX_TRIALS, MAX_YAML_DEPTH
from ..errors import InvalidRequest
from ..limits import (MAX_INT64, MIN_INT64, check_depth, check_ints, check_parameter_name, check_text, load_yaml)

TOP_KEYS = ("parameters", "generate", "seed", "max_parallel", "objective", "early_stopping")
DISTRIBUTIONS = ("choice", "loguniform", "normal", "randint", "uniform")


class Objective(BaseModel):
    metric: str
    mode: str  # "max" or "min"


class EarlyStopping(BaseModel):
    rungs: list[int]
    reduction_factor: int | float = 3


class SweepSpec(BaseModel):
    """A validated spec; ``parameters`` keeps the written form (scalar, list or distribution)."""

    parameters: dict[str, Any] = Field(default_factory=dict)
    generate: int = 1
    seed: int | None = None
    max_parallel: int | None = None
    objective: Objective
    early_stopping: EarlyStopping | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _json_value(value: Any, where: str) -> Any:
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"{where}: values must be JSON values ({exc})") from None


def _fmt(v: Any) -> str:
    return json.dumps(v, default=str)


def read_spec(spec: Any, source: str = "sweep spec") -> dict[str, Any]:
    """The raw mapping of a spec given as a dict or YAML text (a file is read by the caller:
    :func:`nbrunner.control.local_files.spec_source`); ``source`` names it in errors."""
    if isinstance(spec, SweepSpec):
        return spec.to_dict()
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and _names_a_file(spec)):
        raise InvalidRequest("sweep spec must be a mapping or YAML text")
    if isinstance(spec, (bytes, str)):
        spec = load_yaml(spec, source)  # no aliases, bounded size and depth
    elif isinstance(spec, dict):
        check_text(spec, source)
        check_depth(spec, source, MAX_YAML_DEPTH)
        check_ints(spec, source)
    if not isinstance(spec, dict):
        kind = "nothing" if spec is None else type(spec).__name__
        raise InvalidRequest(f"{source} must be a mapping (parameters, objective, ...), got {kind}")
    return spec


def _names_a_file(text: str) -> bool:
    return "\n" not in text and text.strip().endswith((".yaml", ".yml", ".json"))


def _two_numbers(name: str, kind: str, args: Any) -> tuple[float, float]:
    if not isinstance(args, list) or len(args) != 2 or not all(is_number(a) for a in args):
        raise InvalidRequest(f"parameter {name!r}: {kind} needs a list of two numbers, got {_fmt(args)}")
    return args[0], args[1]


def _check_distribution(name: str, dist: dict) -> dict:
    if len(dist) != 1:
        keys = ", ".join(str(k) for k in dist) or "none"
        raise InvalidRequest(f"parameter {name!r}: a distribution is a mapping with exactly one of "
                             f"{', '.join(DISTRIBUTIONS)} (got keys: {keys})")
    (kind, args), = dist.items()
    if kind not in DISTRIBUTIONS:
        raise InvalidRequest(f"parameter {name!r}: unknown distribution {kind!r} (expected one of {', '.join(DISTRIBUTIONS)})")
    if kind in ("uniform", "loguniform"):
        lo, hi = _two_numbers(name, f"{kind} [low, high]", args)
        if lo > hi:
            raise InvalidRequest(f"parameter {name!r}: {kind} bounds are reversed ({_fmt(args)}: low must come first)")
        if kind == "loguniform" and lo <= 0:
            raise InvalidRequest(f"parameter {name!r}: loguniform bounds must be > 0, got {_fmt(args)}")
    elif kind == "normal":
        _mu, sigma = _two_numbers(name, "normal [mu, sigma]", args)
        if sigma <= 0:
            raise InvalidRequest(f"parameter {name!r}: normal sigma must be > 0, got {sigma}")
    elif kind == "randint":
        if not isinstance(args, list) or len(args) != 2 or not all(_is_int(a) for a in args):
            raise InvalidRequest(f"parameter {name!r}: randint needs two integers [low, high], got {_fmt(args)}")
        if not all(MIN_INT64 <= a < MAX_INT64 for a in args):
            raise InvalidRequest(f"parameter {name!r}: randint bounds must be 64-bit integers (-2**63 .. 2**63-2)")
        if args[0] > args[1]:
            raise InvalidRequest(f"parameter {name!r}: randint bounds are reversed ({_fmt(args)}: low must come first)")
    elif kind == "choice":
        if not isinstance(args, list) or not args:
            raise InvalidRequest(f"parameter {name!r}: choice needs a non-empty list of values, got {_fmt(args)}")
        args = _json_value(args, f"parameter {name!r}")
    return {kind: args}


def _check_positive_int(spec: dict, key: str, allow_none: bool) -> int | None:
    v = spec.get(key)
    if v is None and allow_none:
        return None
    if not _is_int(v) or v < 1:
        extra = " (or null for no limit)" if allow_none else ""
        raise InvalidRequest(f"{key} must be a positive integer{extra}, got {_fmt(v)}")
    return v


def parse_spec(spec: Any, source: str = "sweep spec") -> SweepSpec:
    """Validate a spec (dict or YAML text; ``source`` names it in errors); InvalidRequest with one
    line otherwise."""
    raw = read_spec(spec, source)
    for key in raw:
        if key not in TOP_KEYS:
            raise InvalidRequest(f"unknown key {str(key)!r} in sweep spec (expected {', '.join(TOP_KEYS)})")
    params = raw.get("parameters")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidRequest("parameters must be a mapping of parameter names to values, lists or distributions")
    checked: dict[str, Any] = {}
    for name, value in params.items():
        check_parameter_name(name)
        if isinstance(value, dict):
            checked[name] = _check_distribution(name, value)
        elif isinstance(value, list):
            if not value:
                raise InvalidRequest(f"parameter {name!r}: an empty list gives no grid values")
            checked[name] = _json_value(value, f"parameter {name!r}")
        else:
            checked[name] = _json_value(value, f"parameter {name!r}")
    generate = 1 if raw.get("generate") is None else _check_positive_int(raw, "generate", False)
    seed = raw.get("seed")
    if seed is not None and (not _is_int(seed) or not 0 <= seed <= MAX_INT64):
        raise InvalidRequest(f"seed must be a non-negative integer, got {_fmt(seed)}")
    max_parallel = _check_positive_int(raw, "max_parallel", True)

    obj = raw.get("objective")
    if obj is None:
        raise InvalidRequest("objective is missing: add objective: {metric: NAME, mode: max|min}")
    if not isinstance(obj, dict):
        raise InvalidRequest(f"objective must be a mapping {{metric: NAME, mode: max|min}}, got {_fmt(obj)}")
    for key in obj:
        if key not in ("metric", "mode"):
            raise InvalidRequest(f"unknown key {str(key)!r} in objective (expected metric, mode)")
    metric = obj.get("metric")
    if not isinstance(metric, str) or not metric.strip():
        raise InvalidRequest("objective.metric must be the name of a metric, e.g. accuracy")
    mode = obj.get("mode")
    if mode not in ("max", "min"):
        raise InvalidRequest(f"objective.mode must be 'max' or 'min', got {_fmt(mode)}")

    early = raw.get("early_stopping")
    es = None
    if early is not None:
        if not isinstance(early, dict):
            raise InvalidRequest("early_stopping must be a mapping {rungs: [...], reduction_factor: N}")
        for key in early:
            if key not in ("rungs", "reduction_factor"):
                raise InvalidRequest(f"unknown key {str(key)!r} in early_stopping (expected rungs, reduction_factor)")
        rungs = early.get("rungs")
        if (not isinstance(rungs, list) or not rungs or not all(_is_int(r) and r >= 1 for r in rungs)
                or any(a >= b for a, b in zip(rungs, rungs[1:]))):
            raise InvalidRequest(f"early_stopping.rungs must be an increasing list of positive integers, got {_fmt(rungs)}")
        eta = early.get("reduction_factor", 3)
        if not is_number(eta) or eta <= 1:
            raise InvalidRequest(f"early_stopping.reduction_factor must be a number > 1, got {_fmt(eta)}")
        es = EarlyStopping(rungs=rungs, reduction_factor=eta)

    result = SweepSpec(parameters=checked, generate=generate, seed=seed, max_parallel=max_parallel,
                       objective=Objective(metric=metric, mode=mode), early_stopping=es)
    n = count_trials(result)
    if n > MAX_TRIALS:
        raise InvalidRequest(f"the sweep has {n} trials, more than the limit of {MAX_TRIALS} (shrink the grid or generate)")
    return result


def count_trials(spec: SweepSpec) -> int:
    n = spec.generate
    for value in spec.parameters.values():
        if isinstance(value, list):
            n *= len(value)
    return n
