"""A pipeline file, pure: its validation, its graph, its templates and its parameter overrides.

A pipeline file (YAML text, or the same as a dict)::

    name: digits
    steps:
      prep:   {notebook: prep.ipynb, parameters: {rows: 800}}
      train:  {notebook: train.ipynb, needs: [prep], max_gpus: 2,
               parameters: {data: "{{ steps.prep.outputs.data_path }}", lr: 0.1}}
      report: {notebook: report.ipynb, needs: [train],
               parameters: {accuracy: "{{ steps.train.outputs.accuracy }}"}}
    on_failure: stop

A step is a notebook (``notebook`` with the job options) or a sweep (``sweep``: a sweep spec plus
the ``notebook`` its trials run; the step's job options apply to every trial).  A template
``{{ steps.S.outputs.NAME }}`` in a parameter stands for the value step S recorded as NAME: a
template that is the whole string gives the value itself, typed (a number stays a number); one
inside a longer string is replaced by the value's text.  :func:`parse_pipeline` refuses, with one
line, a file over :data:`~nbrunner.core.config.MAX_PIPELINE_BYTES`, a cycle, an unknown step in
``needs``, a template naming a step that is not among the step's needs (transitively), a step
with both ``notebook`` and ``sweep``, and job options a job would refuse.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterator

import msgspec

from ..config import MAX_PIPELINE_BYTES, MAX_PIPELINE_STEPS
from ..errors import InvalidRequest
from ..limits import load_yaml, short
from ..models import JOB_OPTIONS, JobRequest, check_name

TOP_KEYS = ("name", "steps", "on_failure")
ON_FAILURE = ("stop", "continue")
SWEEP_OPTIONS = tuple(k for k in JOB_OPTIONS if k != "name")  # what a sweep step passes to its trials
STEP_OPTIONS = (*SWEEP_OPTIONS, "retries", "inputs")  # what a notebook step passes to its job
STEP_KEYS = ("notebook", "sweep", "needs", "parameters", *STEP_OPTIONS)
STEP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
TEMPLATE = re.compile(r"\{\{\s*steps\.([A-Za-z_][A-Za-z0-9_-]*)\.outputs\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
ANY_TEMPLATE = re.compile(r"\{\{.*?\}\}", re.S)


class StepSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One step as validated: its ``notebook`` (a sweep step's too), ``needs``, ``parameters``
    (templates unfilled; a sweep step's are its spec's), job ``options`` and, for a sweep step,
    the rest of its sweep spec (``sweep``)."""

    notebook: str
    needs: tuple[str, ...] = ()
    parameters: dict[str, Any] = {}
    options: dict[str, Any] = {}
    sweep: dict[str, Any] | None = None

    @property
    def kind(self) -> str:
        return "sweep" if self.sweep is not None else "notebook"

    def templates(self) -> list[tuple[str, str]]:
        """The (step, output name) pairs its parameters' templates name."""
        return [(m.group(1), m.group(2)) for text in _strings(self.parameters) for m in TEMPLATE.finditer(text)]

    def to_dict(self) -> dict[str, Any]:
        """The step as a pipeline file writes it."""
        out: dict[str, Any] = {}
        if self.sweep is not None:
            out["sweep"] = {"notebook": self.notebook, **self.sweep, "parameters": self.parameters}
        else:
            out["notebook"] = self.notebook
            if self.parameters:
                out["parameters"] = self.parameters
        if self.needs:
            out["needs"] = list(self.needs)
        return {**out, **self.options}


class PipelineSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A validated pipeline file: its ``name``, its steps in file order, ``on_failure``."""

    name: str
    steps: dict[str, StepSpec]
    on_failure: str = "stop"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "steps": {k: s.to_dict() for k, s in self.steps.items()},
                "on_failure": self.on_failure}

    def dependents(self, step: str) -> set[str]:
        """The steps that need ``step``, directly or not."""
        return _closure(step, {k: [d for d, s in self.steps.items() if k in s.needs] for k in self.steps})

    def ancestors(self, step: str) -> set[str]:
        """The steps ``step`` needs, directly or not."""
        return _closure(step, {k: list(s.needs) for k, s in self.steps.items()})


def _closure(start: str, edges: dict[str, list[str]]) -> set[str]:
    seen: set[str] = set()
    todo = list(edges.get(start, ()))
    while todo:
        k = todo.pop()
        if k not in seen:
            seen.add(k)
            todo.extend(edges.get(k, ()))
    return seen


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (keys excluded)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# ---- reading ----------------------------------------------------------------------------------

def read_pipeline(source: Any, what: str = "pipeline file") -> dict[str, Any]:
    """The pipeline file as a dict: ``source`` is a dict or YAML text (at most MAX_PIPELINE_BYTES)."""
    if isinstance(source, (str, bytes)):
        size = len(source.encode("utf-8", errors="surrogatepass") if isinstance(source, str) else source)
        if size > MAX_PIPELINE_BYTES:
            raise InvalidRequest(f"{what} is larger than {MAX_PIPELINE_BYTES // 1024} KiB")
        source = load_yaml(source, what)
    elif isinstance(source, dict):
        try:
            size = len(json.dumps(source, default=str))
        except (TypeError, ValueError, RecursionError):
            raise InvalidRequest(f"{what} must be JSON values") from None
        if size > MAX_PIPELINE_BYTES:
            raise InvalidRequest(f"{what} is larger than {MAX_PIPELINE_BYTES // 1024} KiB")
    if not isinstance(source, dict):
        raise InvalidRequest(f"{what} must be a mapping with steps")
    return source


def parse_pipeline(source: Any, default_name: str = "pipeline") -> PipelineSpec:
    """Validate a pipeline file (dict or YAML text); InvalidRequest with one line otherwise."""
    raw = read_pipeline(source)
    for key in raw:
        if key not in TOP_KEYS:
            raise InvalidRequest(f"unknown key {short(key)} in the pipeline file (expected {', '.join(TOP_KEYS)})")
    name = raw.get("name")
    if name is None:
        name = default_name
    elif not isinstance(name, str):
        raise InvalidRequest("name must be a string")
    try:
        name = check_name(name)
    except ValueError as exc:
        raise InvalidRequest(f"name: {exc}") from None
    on_failure = raw.get("on_failure", "stop")
    if on_failure not in ON_FAILURE:
        raise InvalidRequest(f"on_failure must be stop or continue, got {short(on_failure)}")
    steps = raw.get("steps")
    if not isinstance(steps, dict) or not steps:
        raise InvalidRequest("steps must be a mapping of step names to steps")
    if len(steps) > MAX_PIPELINE_STEPS:
        raise InvalidRequest(f"a pipeline has at most {MAX_PIPELINE_STEPS} steps, got {len(steps)}")
    parsed = {}
    for step, body in steps.items():
        if not isinstance(step, str) or not STEP_NAME.fullmatch(step):
            raise InvalidRequest(f"step name {short(step)} must be a letter or _ then letters, digits, _ or - "
                                 "(at most 64)")
        parsed[step] = _parse_step(step, body)
    spec = PipelineSpec(name=name, steps=parsed, on_failure=on_failure)
    check_graph(spec)
    return spec


def _parse_step(step: str, body: Any) -> StepSpec:
    if not isinstance(body, dict):
        raise InvalidRequest(f"step {step!r} must be a mapping (notebook or sweep, needs, parameters, job options)")
    for key in body:
        if key not in STEP_KEYS:
            raise InvalidRequest(f"step {step!r}: unknown key {short(key)} (expected {', '.join(STEP_KEYS)})")
    if ("notebook" in body) == ("sweep" in body):
        raise InvalidRequest(f"step {step!r} has both notebook and sweep" if "notebook" in body
                             else f"step {step!r} has neither notebook nor sweep")
    needs = body.get("needs") or []
    if isinstance(needs, str):
        needs = [needs]
    if not isinstance(needs, list) or not all(isinstance(n, str) for n in needs):
        raise InvalidRequest(f"step {step!r}: needs must be a list of step names")
    options = {k: body[k] for k in STEP_OPTIONS if k in body}
    if "sweep" in body:
        sweep = body["sweep"]
        if not isinstance(sweep, dict) or "notebook" not in sweep:
            raise InvalidRequest(f"step {step!r}: sweep must be a sweep spec with the notebook its trials run")
        if "parameters" in body:
            raise InvalidRequest(f"step {step!r}: a sweep step's parameters go in its sweep spec")
        for key in options:
            if key not in SWEEP_OPTIONS:
                raise InvalidRequest(f"step {step!r}: {key} is not an option of a sweep's trials")
        rest = {k: v for k, v in sweep.items() if k not in ("notebook", "parameters")}
        notebook, parameters = sweep["notebook"], sweep.get("parameters") or {}
    else:
        rest, notebook, parameters = None, body["notebook"], body.get("parameters") or {}
    if not isinstance(notebook, str) or not notebook.strip():
        raise InvalidRequest(f"step {step!r}: notebook must be a path")
    if not isinstance(parameters, dict):
        raise InvalidRequest(f"step {step!r}: parameters must be a mapping")
    spec = StepSpec(notebook=notebook, needs=tuple(dict.fromkeys(needs)), parameters=parameters, options=options,
                    sweep=rest)
    _check_options(step, spec)
    return spec


def _check_options(step: str, spec: StepSpec) -> None:
    """The job options and parameters as a job request checks them (templates are strings)."""
    for text in _strings(spec.parameters):
        for found in ANY_TEMPLATE.findall(text):
            if not TEMPLATE.fullmatch(found):
                raise InvalidRequest(f"step {step!r}: template {short(found, 60)} is not "
                                     "{{ steps.STEP.outputs.NAME }}")
    try:
        if spec.sweep is not None:
            from ..sweeps.spec import parse_spec

            parse_spec({**spec.sweep, "parameters": spec.parameters})
            JobRequest.parse({"notebook": spec.notebook, **spec.options})
        else:
            JobRequest.parse({"notebook": spec.notebook, "parameters": spec.parameters, **spec.options})
    except InvalidRequest as exc:
        raise InvalidRequest(f"step {step!r}: {exc}") from None


def check_graph(spec: PipelineSpec) -> list[str]:
    """The steps in an order where each comes after its needs; InvalidRequest for an unknown step
    in ``needs``, a cycle, or a template naming a step that is not among the step's needs."""
    for step, s in spec.steps.items():
        for need in s.needs:
            if need not in spec.steps:
                raise InvalidRequest(f"step {step!r} needs unknown step {need!r}")
    order = topological_order(spec)
    for step, s in spec.steps.items():
        before = spec.ancestors(step)
        for named, _ in s.templates():
            if named not in before:
                raise InvalidRequest(f"step {step!r}: a template names step {named!r}, which is not among its needs")
    return order


def topological_order(spec: PipelineSpec) -> list[str]:
    """Kahn's order (ties in file order); InvalidRequest naming a cycle if there is one."""
    left = {k: set(s.needs) for k, s in spec.steps.items()}
    order: list[str] = []
    while left:
        ready = [k for k, needs in left.items() if not needs]
        if not ready:
            raise InvalidRequest(f"the steps' needs form a cycle: {' -> '.join(_cycle(left))}")
        for k in ready:
            order.append(k)
            del left[k]
        for needs in left.values():
            needs.difference_update(ready)
    return order


def _cycle(left: dict[str, set[str]]) -> list[str]:
    """One cycle among steps that all still wait for a need (each has one left)."""
    path, at = [], next(iter(left))
    while at not in path:
        path.append(at)
        at = sorted(left[at])[0]
    return path[path.index(at):] + [at]


# ---- templates ----------------------------------------------------------------------------------

class MissingOutput(Exception):
    """A template names an output its step did not record."""

    def __init__(self, step: str, name: str):
        super().__init__(f"step {step!r} recorded no output {name!r}")
        self.step, self.name = step, name


def fill(value: Any, outputs: dict[str, dict[str, Any]]) -> Any:
    """``value`` with its templates replaced from ``outputs`` (step -> its recorded outputs):
    a whole-string template gives the value itself; raises :class:`MissingOutput`."""
    if isinstance(value, dict):
        return {k: fill(v, outputs) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, outputs) for v in value]
    if not isinstance(value, str) or "{{" not in value:
        return value
    whole = TEMPLATE.fullmatch(value.strip())
    if whole:
        return _output(outputs, whole.group(1), whole.group(2))

    def text(m: re.Match) -> str:
        got = _output(outputs, m.group(1), m.group(2))
        return got if isinstance(got, str) else json.dumps(got)

    return TEMPLATE.sub(text, value)


def _output(outputs: dict[str, dict[str, Any]], step: str, name: str) -> Any:
    recorded = outputs.get(step) or {}
    if name not in recorded:
        raise MissingOutput(step, name)
    return recorded[name]


# ---- overrides ----------------------------------------------------------------------------------

def with_parameters(raw: dict[str, Any], overrides: dict[str, Any] | None) -> dict[str, Any]:
    """The pipeline file ``raw`` with parameter ``overrides``: ``{"STEP.NAME": value}`` or
    ``{"STEP": {NAME: value}}`` (a sweep step's go to its sweep spec); InvalidRequest for an
    unknown step."""
    if not overrides:
        return raw
    if not isinstance(overrides, dict):
        raise InvalidRequest("parameters must be a mapping of STEP.NAME to values")
    steps = raw.get("steps")
    if not isinstance(steps, dict):
        raise InvalidRequest("steps must be a mapping of step names to steps")
    steps = {k: dict(v) if isinstance(v, dict) else v for k, v in steps.items()}
    for key, value in overrides.items():
        if not isinstance(key, str):
            raise InvalidRequest(f"parameter {short(key)} must be STEP.NAME")
        if "." in key:
            step, _, name = key.partition(".")
            pairs = {name: value}
        elif isinstance(value, dict):
            step, pairs = key, value
        else:
            raise InvalidRequest(f"parameter {key!r} must be STEP.NAME")
        body = steps.get(step)
        if not isinstance(body, dict):
            raise InvalidRequest(f"parameter {key!r}: no step {step!r} in the pipeline")
        if isinstance(body.get("sweep"), dict):
            sweep = dict(body["sweep"])
            sweep["parameters"] = {**(sweep.get("parameters") or {}), **pairs}
            body["sweep"] = sweep
        else:
            body["parameters"] = {**(body.get("parameters") or {}), **pairs}
    return {**raw, "steps": steps}


__all__ = ["PipelineSpec", "StepSpec", "parse_pipeline", "read_pipeline", "fill", "with_parameters",
           "MissingOutput", "check_graph", "topological_order"]
