"""Hyperparameter sweeps: a spec expands to trials, each trial is an ordinary job with ``sweep`` set.

Spec (a YAML file, YAML text or a dict; DESIGN section 6 "Sweeps")::

    parameters:
      lr: {loguniform: [0.001, 0.1]}   # uniform: [a, b], normal: [mu, sigma], randint: [a, b], choice: [v, ...]
      momentum: [0.5, 0.9]             # a list: every value (grid)
      epochs: 5                        # a scalar: fixed
    generate: 3                        # random draws per grid point (default 1)
    seed: 0                            # same spec and seed -> same trials (numpy default_rng)
    max_parallel: 2                    # trials queued or running at once (default: no limit)
    objective: {metric: accuracy, mode: max}
    early_stopping: {rungs: [1, 2, 4], reduction_factor: 3}

Trials are the grid points (the Cartesian product of the list-valued parameters, in the
order they are written) times ``generate`` draws of the distributions. A list is always a
grid; to pass a list or a mapping as one fixed value, wrap it: ``[[1, 2]]``.

The sweep record lives in Redis (``nbrunner:sweep:<id>``, listed in the sorted set
``nbrunner:sweeps``; unfinished ones also in ``nbrunner:sweeps:active``). Only the first
``max_parallel`` trials are submitted at once; :func:`advance_sweeps`, called by the
scheduler on every pass, submits the next ones as earlier trials finish and applies early
stopping. Every change of a sweep record is made under the sweep's lock key
(``nbrunner:sweep:<id>:lock``), so several processes may call it: a trial is never
submitted twice (it is marked ``submitting`` before its job is created, and a job left
behind by a crash in between is adopted rather than submitted again).

The notebook is snapshotted when the sweep is created (``<storage>/sweeps/<id>/input.ipynb``);
every trial runs that snapshot, even if the notebook is edited while the sweep runs.

Early stopping (ASHA, "stop" variant): a trial's k-th report of the objective metric
(``nbrunner.record(metric, v)``, or ElasticTrainer's per-epoch ``val_*`` metrics; the
lines of ``runs/<job>/metrics.jsonl`` that contain the metric) is its value at rung k.
When a running trial has reached rung r (its highest rung so far) and at least
``reduction_factor`` trials of the sweep have a value at r (itself included, whether the
others still run, finished or were stopped), it is kept only if it is among the best
``max(1, floor(n / reduction_factor))`` of those n values; otherwise it is cancelled with
the error ``stopped early at rung r``. Until enough trials reached the rung it keeps
running (and is judged at its next rung instead if it gets there first). A decision is
made once per trial and rung. A stopped trial keeps its place on the leaderboard, with
the last objective value it recorded.

Leaderboard: every trial, best objective first (``rank`` 1, 2, ...; ties keep trial
order); trials without a numeric objective (not reported yet, failed before reporting,
not submitted yet: ``job`` null and ``status`` ``pending``) come last with ``rank`` null.
"""
from __future__ import annotations

import getpass
import itertools
import json
import logging
import math
import os
import secrets
import time
import uuid
from pathlib import Path
from typing import Any, Iterable

import redis
from pydantic import BaseModel, Field

from . import service
from .config import Settings
from .errors import Conflict, InvalidRequest, NbrunnerError, NotFound
from .models import JobRecord, JobRequest, utcnow
from .store import PREFIX, JobStore, job_key

log = logging.getLogger("nbrunner.sweeps")

SWEEPS = PREFIX + "sweeps"                 # sorted set: sweep id -> creation time
ACTIVE_SWEEPS = PREFIX + "sweeps:active"   # sweeps advance_sweeps still looks after
MAX_TRIALS = 1000
LOCK_TTL_MS = 30_000
TOP_KEYS = ("parameters", "generate", "seed", "max_parallel", "objective", "early_stopping")
DISTRIBUTIONS = ("choice", "loguniform", "normal", "randint", "uniform")
JOB_OPTIONS = ("name", "min_gpus", "max_gpus", "priority", "timeout", "kernel")


def sweep_key(sweep_id: str) -> str:
    return f"{PREFIX}sweep:{sweep_id}"


def lock_key(sweep_id: str) -> str:
    return f"{PREFIX}sweep:{sweep_id}:lock"


# ---------------------------------------------------------------------------------------------
# spec


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


def _is_number(v: Any) -> bool:
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


def read_spec(spec: Any, allow_file: bool = True) -> dict[str, Any]:
    """The raw mapping of a spec given as a dict, YAML text or (``allow_file``) a YAML file path."""
    import yaml

    if isinstance(spec, SweepSpec):
        return spec.to_dict()
    source = "sweep spec"
    if isinstance(spec, os.PathLike) or (allow_file and isinstance(spec, str) and _looks_like_path(spec)):
        if not allow_file:
            raise InvalidRequest("sweep spec must be a mapping or YAML text")
        path = Path(spec).expanduser()
        try:
            spec = path.read_text()
        except FileNotFoundError:
            raise InvalidRequest(f"sweep spec file not found: {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidRequest(f"cannot read sweep spec {path}: {getattr(exc, 'strerror', None) or exc.__class__.__name__}") from None
        source = f"sweep spec {path}"
    if isinstance(spec, bytes):
        spec = spec.decode("utf-8", errors="replace")
    if isinstance(spec, str):
        try:
            spec = yaml.safe_load(spec)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise InvalidRequest(f"{source} is not valid YAML: {problem}{where}") from None
    if not isinstance(spec, dict):
        kind = "nothing" if spec is None else type(spec).__name__
        raise InvalidRequest(f"{source} must be a mapping (parameters, objective, ...), got {kind}")
    return spec


def _looks_like_path(text: str) -> bool:
    if "\n" in text or not text.strip():
        return False
    t = text.strip()
    if t.endswith((".yaml", ".yml", ".json")):
        return True
    try:
        return Path(t).expanduser().is_file()
    except (OSError, ValueError):
        return False


def _two_numbers(name: str, kind: str, args: Any) -> tuple[float, float]:
    if not isinstance(args, list) or len(args) != 2 or not all(_is_number(a) for a in args):
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


def parse_spec(spec: Any, allow_file: bool = True) -> SweepSpec:
    """Validate a spec (dict, YAML text, YAML file path); InvalidRequest with one line otherwise."""
    raw = read_spec(spec, allow_file)
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
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidRequest(f"parameter name {name!r} is not a Python identifier")
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
    if seed is not None and (not _is_int(seed) or seed < 0):
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
        if not _is_number(eta) or eta <= 1:
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


# ---------------------------------------------------------------------------------------------
# record


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
    notebook: str  # relative to the workspace
    name: str
    spec: dict[str, Any]
    trials: list[Trial]
    options: dict[str, Any] = Field(default_factory=dict)  # job fields given to every trial
    owner: str = ""
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


def get_record(store: JobStore, sweep_id: str) -> SweepRecord:
    raw = store.r.get(sweep_key(sweep_id)) if isinstance(sweep_id, str) else None
    if raw is None:
        raise NotFound(f"no sweep {sweep_id!r}")
    return SweepRecord.model_validate_json(raw)


def _save(store: JobStore, rec: SweepRecord) -> None:
    store.r.set(sweep_key(rec.id), rec.model_dump_json())


def snapshot_path(settings: Settings, sweep_id: str) -> Path:
    return settings.storage / "sweeps" / sweep_id / "input.ipynb"


class _Lock:
    """The sweep's lock key (SET NX PX; released only by its holder)."""

    _RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"

    def __init__(self, store: JobStore, sweep_id: str):
        self.r = store.r
        self.key = lock_key(sweep_id)
        self.token = uuid.uuid4().hex

    def acquire(self, wait: float = 0.0) -> bool:
        deadline = time.monotonic() + wait
        while True:
            if self.r.set(self.key, self.token, nx=True, px=LOCK_TTL_MS):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def release(self) -> None:
        try:
            self.r.eval(self._RELEASE, 1, self.key, self.token)
        except redis.RedisError:
            pass


# ---------------------------------------------------------------------------------------------
# creating a sweep


def _notebook_parameters(path: Path) -> dict:
    import papermill

    try:
        return papermill.inspect_notebook(str(path))
    except Exception:  # no parameters cell, or one papermill cannot parse: nothing to check against
        return {}


def prepare(settings: Settings, notebook: str | os.PathLike, spec: Any, *, base: Path | None = None,
            allow_file: bool = True, options: dict[str, Any] | None = None):
    """Validate everything a sweep needs before anything is written.

    Returns (spec, trials, notebook path, notebook node, job options)."""
    parsed = parse_spec(spec, allow_file)
    if parsed.seed is None:
        parsed.seed = secrets.randbelow(2**32)
    trials = generate_trials(parsed)
    options = {k: v for k, v in (options or {}).items() if v is not None}
    for key in options:
        if key not in JOB_OPTIONS:
            raise InvalidRequest(f"unknown field {key!r}")
    JobRequest.parse({"notebook": str(notebook), **options})  # options alone, with one-line errors
    path = service.resolve_notebook(settings, str(notebook), base)
    shown = service.relative_to_workspace(settings, path)
    nb = service.read_notebook(path, shown)
    if options.get("kernel"):
        service.check_kernel(options["kernel"])
    declared = _notebook_parameters(path)
    for i, params in enumerate(trials):
        if declared:
            for name in params:
                if name not in declared:
                    raise InvalidRequest(f"parameter {name!r} is not in the parameters cell of {shown} "
                                         f"(it has {', '.join(declared)})")
        try:
            JobRequest.parse({"notebook": shown, "parameters": params, "sweep": "x", **options})
        except InvalidRequest as exc:
            raise InvalidRequest(f"trial {i + 1}: {exc}") from None
    return parsed, trials, path, nb, options


def create_sweep(store: JobStore, settings: Settings, notebook: str | os.PathLike, spec: Any, *,
                 owner: str | None = None, base: Path | None = None, allow_file: bool = True,
                 **options: Any) -> SweepRecord:
    """Validate, record the sweep and submit its first trials (at most ``max_parallel``)."""
    import nbformat

    parsed, trials, path, nb, options = prepare(settings, notebook, spec, base=base, allow_file=allow_file,
                                                options=options)
    shown = service.relative_to_workspace(settings, path)
    for _ in range(10):
        sweep_id = service.new_id()
        if store.r.zscore(SWEEPS, sweep_id) is None and not store.r.exists(sweep_key(sweep_id)):
            break
    rec = SweepRecord(id=sweep_id, notebook=shown, name=options.pop("name", None) or path.stem,
                      spec=parsed.to_dict(), trials=[Trial(parameters=p) for p in trials], options=options,
                      owner=owner or getpass.getuser())
    snap = snapshot_path(settings, sweep_id)
    snap.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(snap))
    lock = _Lock(store, sweep_id)
    lock.acquire()  # a fresh id: nobody else holds it; the scheduler skips the sweep until we are done
    try:
        if not store.r.set(sweep_key(sweep_id), rec.model_dump_json(), nx=True):
            raise Conflict(f"sweep id {sweep_id} already exists")
        with store.r.pipeline() as p:
            p.zadd(SWEEPS, {sweep_id: time.time()})
            p.sadd(ACTIVE_SWEEPS, sweep_id)
            p.execute()
        _advance(store, settings, rec)
    finally:
        lock.release()
    store.emit("sweep", sweep=sweep_id, status=rec.status)
    return rec


def submit_sweep(cluster, notebook: str | os.PathLike, spec: Any, *, owner: str | None = None,
                 base: Path | None = None, allow_file: bool = True, **options: Any) -> "Sweep":
    """What :meth:`nbrunner.Cluster.sweep` does: validate, submit the first trials, return a :class:`Sweep`.

    ``options``: job fields for every trial (``name``, ``min_gpus``, ``max_gpus``, ``priority``,
    ``timeout``, ``kernel``)."""
    rec = create_sweep(cluster.store, cluster.settings, notebook, spec, owner=owner,
                       base=Path.cwd() if base is None else base, allow_file=allow_file, **options)
    return Sweep(cluster, rec.id, rec)


# ---------------------------------------------------------------------------------------------
# advancing


def advance_sweeps(store: JobStore, settings: Settings) -> None:
    """Submit the next trials of every unfinished sweep, apply early stopping, finish sweeps.

    Called by the scheduler on every pass; safe to call from several processes at once and
    as often as wanted (a sweep another process is advancing is skipped); never raises."""
    try:
        ids = store.r.smembers(ACTIVE_SWEEPS)
    except redis.RedisError as exc:
        log.warning("advance_sweeps: %s", exc)
        return
    for sweep_id in sorted(ids):
        try:
            advance_sweep(store, settings, sweep_id)
        except Exception as exc:  # noqa: BLE001 - one broken sweep must not stop the scheduler
            log.warning("advancing sweep %s failed: %s: %s", sweep_id, exc.__class__.__name__, exc)


def advance_sweep(store: JobStore, settings: Settings, sweep_id: str, wait: float = 0.0) -> SweepRecord | None:
    """Advance one sweep under its lock; None if another process holds the lock."""
    lock = _Lock(store, sweep_id)
    if not lock.acquire(wait):
        return None
    try:
        raw = store.r.get(sweep_key(sweep_id))
        if raw is None:
            store.r.srem(ACTIVE_SWEEPS, sweep_id)
            return None
        rec = SweepRecord.model_validate_json(raw)
        if rec.finished:
            store.r.srem(ACTIVE_SWEEPS, sweep_id)
            return rec
        _advance(store, settings, rec)
        return rec
    finally:
        lock.release()


def _jobs(store: JobStore, ids: Iterable[str]) -> dict[str, JobRecord]:
    ids = list(ids)
    if not ids:
        return {}
    out = {}
    for jid, raw in zip(ids, store.r.mget([job_key(i) for i in ids])):
        if raw is not None:
            out[jid] = JobRecord.model_validate_json(raw)
    return out


def _advance(store: JobStore, settings: Settings, rec: SweepRecord) -> None:
    """One step of a sweep (the caller holds its lock); saves the record if it changed."""
    before = rec.model_dump_json()
    jobs = _jobs(store, rec.job_ids())
    _adopt(store, rec, jobs)
    spec = rec.parsed
    if spec.early_stopping is not None:
        _early_stopping(store, settings, rec, spec, jobs)
    limit = spec.max_parallel or len(rec.trials)
    unfinished = sum(1 for t in rec.trials if t.state == "submitting"
                     or (t.job and t.job in jobs and not jobs[t.job].finished))
    for i, trial in enumerate(rec.trials):
        if unfinished >= limit:
            break
        if trial.state != "pending":
            continue
        job = _submit_trial(store, settings, rec, i)
        if job is not None:
            jobs[job.id] = job
            unfinished += 1
    done = all(t.state in ("submitted", "skipped", "cancelled") for t in rec.trials) and all(
        jobs[t.job].finished for t in rec.trials if t.job and t.job in jobs)  # a vanished record counts as ended
    if done:
        rec.status = "completed"
        rec.finished_at = utcnow()
    if rec.model_dump_json() != before:
        _save(store, rec)
    if done:
        store.r.srem(ACTIVE_SWEEPS, rec.id)
        store.emit("sweep", sweep=rec.id, status=rec.status)


def trial_name(rec: SweepRecord, index: int) -> str:
    return f"{rec.name} #{index + 1}"[:200]


def _adopt(store: JobStore, rec: SweepRecord, jobs: dict[str, JobRecord]) -> None:
    """Trials marked ``submitting`` whose process died before recording the job: find the job
    (same sweep, same name) or submit again."""
    stuck = [i for i, t in enumerate(rec.trials) if t.state == "submitting"]
    if not stuck:
        return
    known = set(rec.job_ids())
    orphans = [r for r in store.all() if r.sweep == rec.id and r.id not in known]
    for i in stuck:
        match = next((r for r in orphans if r.name == trial_name(rec, i) and r.parameters == rec.trials[i].parameters),
                     None)
        if match is not None:
            rec.trials[i].job, rec.trials[i].state = match.id, "submitted"
            jobs[match.id] = match
            orphans.remove(match)
        else:
            rec.trials[i].state = "pending"


def _submit_trial(store: JobStore, settings: Settings, rec: SweepRecord, index: int) -> JobRecord | None:
    trial = rec.trials[index]
    trial.state = "submitting"
    _save(store, rec)  # before the job exists: a crash now is repaired by _adopt, never a double submit
    request = {"notebook": str(settings.workspace / rec.notebook), "parameters": trial.parameters,
               "name": trial_name(rec, index), "sweep": rec.id, **rec.options}
    try:
        job = service.submit(store, settings, request, owner=rec.owner)
    except NbrunnerError as exc:  # e.g. the notebook was deleted meanwhile: this trial cannot run
        trial.state = "skipped"
        trial.error = str(exc)
        _save(store, rec)
        return None
    # any other error (Redis went away) leaves the trial "submitting": the next pass adopts
    # the job if it was created, else submits it again
    _use_snapshot(settings, rec.id, job.id)
    trial.job, trial.state = job.id, "submitted"
    _save(store, rec)
    return job


def _use_snapshot(settings: Settings, sweep_id: str, job_id: str) -> None:
    """Run the notebook as it was when the sweep was created, even if it was edited since."""
    snap = snapshot_path(settings, sweep_id)
    target = settings.job_dir(job_id) / "input.ipynb"
    try:
        data = snap.read_bytes()
        if target.read_bytes() == data:
            return
        tmp = target.with_name(".input.ipynb.sweep")
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# early stopping


def _numeric(value: Any) -> float | None:
    if _is_number(value):
        return float(value)
    return None


def reported_values(job_dir: Path, metric: str, limit: int | None = None) -> list[float | None]:
    """The values of ``metric`` in the order the job reported them (``metrics.jsonl``)."""
    out: list[float | None] = []
    try:
        with open(job_dir / "metrics.jsonl", "rb") as f:
            for line in f:
                if not line.endswith(b"\n"):
                    break  # being written
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and metric in row:
                    out.append(_numeric(row[metric]))
                    if limit is not None and len(out) >= limit:
                        break
    except OSError:
        pass
    return out


def _better(a: float | None, b: float | None, mode: str) -> bool:
    """a strictly better than b (a missing value is worst)."""
    if a is None:
        return False
    if b is None:
        return True
    return a > b if mode == "max" else a < b


def _early_stopping(store: JobStore, settings: Settings, rec: SweepRecord, spec: SweepSpec,
                    jobs: dict[str, JobRecord]) -> None:
    es = spec.early_stopping
    metric, mode = spec.objective.metric, spec.objective.mode
    top = max(es.rungs)
    for t in rec.trials:  # refresh the values of trials that may still report
        job = jobs.get(t.job) if t.job else None
        if job is None or len(t.values) >= top or t.values_final or job.status == "queued":
            continue
        t.values = reported_values(settings.job_dir(t.job), metric, top)
        t.values_final = job.finished
    for t in rec.trials:
        job = jobs.get(t.job) if t.job else None
        if job is None or job.status not in ("queued", "running") or job.cancel_requested:
            continue
        reached = [r for r in es.rungs if len(t.values) >= r]
        if not reached:
            continue
        rung = reached[-1]
        if str(rung) in t.decisions:
            continue
        peers = [o.values[rung - 1] for o in rec.trials if len(o.values) >= rung]
        decision = rung_decision(t.values[rung - 1], peers, es.reduction_factor, mode)
        if decision is None:
            continue  # not enough trials at this rung yet: keep running
        t.decisions[str(rung)] = decision
        if decision == "stopped":
            stop_trial(store, t.job, rung, metric, settings.job_dir(t.job))
            jobs[t.job] = store.get(t.job)


def rung_decision(mine: float | None, peers: list[float | None], reduction_factor: float, mode: str) -> str | None:
    """ASHA at one rung: ``"continue"`` if ``mine`` is among the best ``max(1, floor(n / eta))``
    of the ``n`` values ``peers`` (which include ``mine``), ``"stopped"`` if not, None while
    ``n < eta``. A missing value is worst; ties count in the trial's favour."""
    if len(peers) < reduction_factor:
        return None
    keep = max(1, math.floor(len(peers) / reduction_factor))
    ahead = sum(1 for v in peers if _better(v, mine, mode))
    return "continue" if ahead < keep else "stopped"


def stop_trial(store: JobStore, job_id: str, rung: int, metric: str | None = None, job_dir: Path | None = None) -> None:
    """Cancel a trial's job with the error ``stopped early at rung N``.

    The job's record also gets the last value of ``metric`` it wrote to ``metrics.jsonl``:
    ``nbrunner.record`` writes the file before the record, and a record update arriving after
    the cancel is dropped, so the record could miss the very value the decision was made on."""
    try:
        service.cancel(store, job_id)
    except Conflict:  # it finished meanwhile
        return
    message = f"stopped early at rung {rung}"
    reported = reported_values(job_dir, metric) if metric and job_dir is not None else []
    last = reported[-1] if reported else None

    def change(r: JobRecord) -> bool:
        if r.status != "cancelled":
            return False
        r.error = message
        if last is not None:
            r.metrics[metric] = last
        return True

    store.update(job_id, change, event="stopped")


# ---------------------------------------------------------------------------------------------
# reading


def objective_of(job: JobRecord | None, metric: str) -> float | None:
    if job is None:
        return None
    return _numeric(job.metrics.get(metric))


def leaderboard(rec: SweepRecord, jobs: dict[str, JobRecord]) -> list[dict[str, Any]]:
    """Every trial, best objective first; trials without an objective last with rank None.
    ``trial`` is the trial's index in the sweep (stable, unlike ``job``, which is None while
    the trial is pending)."""
    spec = rec.parsed
    metric, mode = spec.objective.metric, spec.objective.mode
    rows = []
    for i, t in enumerate(rec.trials):
        job = jobs.get(t.job) if t.job else None
        if job is not None:
            status = job.status
        elif t.state == "skipped":
            status = "failed"
        elif t.state == "cancelled":
            status = "cancelled"
        else:
            status = "pending"
        objective = objective_of(job, metric)
        if objective is None and job is not None and t.values:
            objective = next((v for v in reversed(t.values) if v is not None), None)
        rows.append((i, {"rank": None, "trial": i, "job": t.job, "parameters": t.parameters, "objective": objective,
                         "status": status}))
    ranked = [r for r in rows if r[1]["objective"] is not None]
    sign = -1.0 if mode == "max" else 1.0
    ranked.sort(key=lambda r: (sign * r[1]["objective"], r[0]))
    for rank, (_, row) in enumerate(ranked, start=1):
        row["rank"] = rank
    rest = [r for r in rows if r[1]["objective"] is None]
    return [row for _, row in ranked + rest]


def cancel_sweep(store: JobStore, sweep_id: str) -> SweepRecord:
    """Cancel the trials not submitted yet and every unfinished trial job."""
    lock = _Lock(store, sweep_id)
    if not lock.acquire(wait=10):
        raise Conflict(f"sweep {sweep_id} is busy, try again")
    try:
        rec = get_record(store, sweep_id)
        if rec.finished:
            raise Conflict(f"sweep {sweep_id} is already {rec.status}")
        for t in rec.trials:
            if t.state in ("pending", "submitting") and not t.job:
                t.state = "cancelled"
        for job in _jobs(store, rec.job_ids()).values():
            if not job.finished:
                try:
                    service.cancel(store, job.id)
                except Conflict:
                    pass
        rec.status, rec.finished_at = "cancelled", utcnow()
        _save(store, rec)
        store.r.srem(ACTIVE_SWEEPS, sweep_id)
    finally:
        lock.release()
    store.emit("sweep", sweep=sweep_id, status="cancelled")
    return rec


def sweep_ids(store: JobStore) -> list[str]:
    return store.r.zrange(SWEEPS, 0, -1)


class Sweep:
    """A handle on a sweep: ``.id``, ``.jobs``, ``.wait()``, ``.leaderboard()``, ``.to_dict()``."""

    def __init__(self, cluster, sweep_id: str, record: SweepRecord | None = None):
        self.cluster = cluster
        self.id = sweep_id
        self.record = record or get_record(cluster.store, sweep_id)

    def __repr__(self) -> str:
        return f"<Sweep {self.id} {self.record.name!r} {self.record.status} {len(self.record.trials)} trials>"

    def refresh(self) -> "Sweep":
        self.record = get_record(self.cluster.store, self.id)
        return self

    @property
    def status(self) -> str:
        return self.refresh().record.status

    @property
    def trials(self) -> list[dict[str, Any]]:
        """``[{"parameters": {...}}, ...]``: every trial, in order."""
        return [{"parameters": t.parameters} for t in self.record.trials]

    @property
    def jobs(self) -> list:
        """The trial jobs submitted so far, in trial order (refreshed on every access)."""
        from .cluster import Job

        self.refresh()
        records = _jobs(self.cluster.store, self.record.job_ids())
        return [Job(self.cluster, records[j]) for j in self.record.job_ids() if j in records]

    def wait(self, timeout: float | None = None, poll: float = 0.3) -> "Sweep":
        """Block until every trial has finished (or the sweep was cancelled); TimeoutError after ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.refresh().record.finished:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"sweep {self.id} still running after {timeout} s")
            time.sleep(poll)
        return self

    def leaderboard(self) -> list[dict[str, Any]]:
        self.refresh()
        return leaderboard(self.record, _jobs(self.cluster.store, self.record.job_ids()))

    def best(self) -> dict[str, Any] | None:
        board = self.leaderboard()
        return board[0] if board and board[0]["rank"] is not None else None

    def cancel(self) -> "Sweep":
        self.record = cancel_sweep(self.cluster.store, self.id)
        return self

    def to_dict(self) -> dict[str, Any]:
        """``{"id", "jobs", "leaderboard"}`` (what ``GET /sweeps/{id}`` returns)."""
        self.refresh()
        jobs = _jobs(self.cluster.store, self.record.job_ids())
        return {"id": self.id, "jobs": [jobs[j].to_dict() for j in self.record.job_ids() if j in jobs],
                "leaderboard": leaderboard(self.record, jobs)}


def get_sweep(cluster, sweep_id: str) -> Sweep:
    return Sweep(cluster, sweep_id)


def list_sweeps(cluster) -> list[Sweep]:
    out = []
    for sid in sweep_ids(cluster.store):
        try:
            out.append(Sweep(cluster, sid))
        except NotFound:
            continue
    return out
