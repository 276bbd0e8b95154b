"""Trained models: :func:`save_model` in a notebook, a registry of named versions, loading.

A model directory (``runs/<job-id>/model/``, written by :func:`save_model` or by
ElasticTrainer) has the layout of :mod:`nbrunner.elastic.model_io`: ``model.pkl``
(cloudpickle; classes defined in the notebook or in the user's own modules are pickled by
value, so it loads without the notebook's source), ``state_dict.pt`` (the weights) and
``meta.json``.  One loader (:func:`nbrunner.elastic.model_io.load_model`) reads both.

The registry is plain files, durable and readable without a running cluster:
``<workspace>/.nbrunner/models/<NAME>/<VERSION>/`` holds a copy of the job's model
directory and ``registry.json`` (``name``, ``version``, ``job``, ``created_at``, ``path``).
Versions are 1, 2, ...; a version directory appears atomically (renamed from a temporary
directory), so two concurrent registrations never get the same version.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

from ..core.config import Settings
from ..core.errors import InvalidRequest, NotFound
from ..core.models import utcnow

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
JOB_RE = re.compile(r"^[a-z0-9]{1,32}$")
MODEL_FILES = ("model.pkl", "state_dict.pt", "meta.json")


def _input_shape(model: Any) -> list | None:
    """[None, in_features] when the model's first layer is a Linear (None: the batch)."""
    try:
        import torch.nn as nn

        for m in model.modules():
            if next(m.children(), None) is not None:
                continue  # a container: look at its leaves
            if isinstance(m, nn.Linear):
                return [None, int(m.in_features)]
            return None
    except Exception:
        return None
    return None


def save_model(model: Any, path: str | os.PathLike | None = None, *, input_shape: list | tuple | None = None) -> Path:
    """Save a torch ``nn.Module`` so that it loads without the notebook's source.

    Inside a job it goes to ``runs/<job-id>/model/`` (where ``nbrunner model register``
    finds it); outside a job give ``path``.  Writes ``model.pkl``, ``state_dict.pt`` and
    ``meta.json`` (framework, class name, saved_at, input shape when known).  Returns the
    directory."""
    import torch.nn as nn

    from ..control import runtime
    from ..elastic import model_io

    if not isinstance(model, nn.Module):
        raise TypeError(f"save_model expects a torch.nn.Module, got {type(model).__name__}")
    if path is None:
        jd = runtime.job_dir()
        if jd is None:
            raise ValueError("save_model(model) outside a job needs a path: save_model(model, 'my-model')")
        path = jd / "model"
    d = model_io.save_model(model, path)
    meta_path = d / "meta.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        meta = {}
    shape = list(input_shape) if input_shape is not None else _input_shape(model)
    meta.update({"framework": "pytorch", "class_name": type(model).__qualname__, "saved_at": utcnow(),
                 "input_shape": shape, "job": runtime.job_id()})
    tmp = d / ".meta.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2))
    os.replace(tmp, meta_path)
    return d


def load_model(path: str | os.PathLike):
    """Load a model directory written by :func:`save_model` or ElasticTrainer (eval mode)."""
    from ..elastic import model_io

    d = Path(path)
    if not (d / "model.pkl").is_file() and not (d.is_file() and d.name == "model.pkl"):
        raise NotFound(f"no saved model in {path}")
    return model_io.load_model(d)


# ---------------------------------------------------------------------------------------------
# registry


def models_dir(settings: Settings) -> Path:
    return settings.state_dir / "models"


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise InvalidRequest(f"invalid model name {name!r}: use 1..64 letters, digits, '.', '_' or '-', "
                             "starting with a letter or digit")
    return name


def job_model_dir(settings: Settings, job_id: str) -> Path:
    """``runs/<job>/model`` of an existing job with a saved model (one-line errors otherwise)."""
    if not isinstance(job_id, str) or not JOB_RE.match(job_id):
        raise NotFound(f"no job {job_id!r}")
    jd = settings.job_dir(job_id)
    if not jd.is_dir():
        raise NotFound(f"no job {job_id!r}")
    md = jd / "model"
    if not (md / "model.pkl").is_file():
        raise InvalidRequest(f"job {job_id} has no saved model (runs/{job_id}/model/ is empty): call "
                             "nbrunner.save_model(model) in the notebook, or train with ElasticTrainer")
    return md


def _versions(name_dir: Path) -> list[int]:
    if not name_dir.is_dir():
        return []
    return sorted(int(p.name) for p in name_dir.iterdir() if p.name.isdigit() and (p / "registry.json").is_file())


def register_model(settings: Settings, job_id: str, name: str) -> dict[str, Any]:
    """Copy ``runs/<job>/model/`` into the registry as the next version of ``name``."""
    check_name(name)
    source = job_model_dir(settings, job_id)
    name_dir = models_dir(settings) / name
    name_dir.mkdir(parents=True, exist_ok=True)
    tmp = name_dir / f".tmp-{uuid.uuid4().hex[:12]}"
    try:
        shutil.copytree(source, tmp)
        meta = {}
        try:
            meta = json.loads((tmp / "meta.json").read_text())
        except (OSError, ValueError):
            pass
        version = (max((int(p.name) for p in name_dir.iterdir() if p.name.isdigit()), default=0)) + 1
        while True:
            target = name_dir / str(version)
            entry = {"name": name, "version": version, "job": job_id, "created_at": utcnow(), "path": str(target),
                     "source": str(source), "meta": meta}
            (tmp / "registry.json").write_text(json.dumps(entry, indent=2))
            try:
                os.rename(tmp, target)  # atomic; fails if another registration took this version
                return public(entry)
            except OSError:
                if not target.exists():
                    raise
                version += 1
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def public(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: entry.get(k) for k in ("name", "version", "job", "created_at", "path")}


def list_models(settings: Settings) -> list[dict[str, Any]]:
    """Every registered version: ``[{"name", "version", "job", "created_at", "path"}]`` by name, version."""
    root = models_dir(settings)
    out = []
    if not root.is_dir():
        return out
    for name_dir in sorted(p for p in root.iterdir() if p.is_dir() and NAME_RE.match(p.name)):
        for v in _versions(name_dir):
            try:
                entry = json.loads((name_dir / str(v) / "registry.json").read_text())
            except (OSError, ValueError):
                continue
            entry["path"] = str(name_dir / str(v))  # where it is now, even if the workspace moved
            out.append(public(entry))
    return out


def resolve(settings: Settings, spec: str) -> dict[str, Any]:
    """The registry entry of ``NAME`` (latest version) or ``NAME:VERSION``."""
    if not isinstance(spec, str) or not spec:
        raise InvalidRequest("give a model as NAME or NAME:VERSION")
    name, sep, version = spec.partition(":")
    check_name(name)
    name_dir = models_dir(settings) / name
    versions = _versions(name_dir)
    if not versions:
        raise NotFound(f"no model {name!r} in the registry (see `nbrunner model list`)")
    if not sep or version == "latest":
        v = versions[-1]
    else:
        if not version.isdigit():
            raise InvalidRequest(f"model version must be a positive integer, got {version!r}")
        v = int(version)
        if v not in versions:
            raise NotFound(f"model {name!r} has no version {v} (versions: {', '.join(map(str, versions))})")
    entry = json.loads((name_dir / str(v) / "registry.json").read_text())
    entry["path"] = str(name_dir / str(v))
    return entry


def load_registered(settings: Settings, spec: str):
    """(model, registry entry) of ``NAME[:VERSION]``."""
    entry = resolve(settings, spec)
    return load_model(entry["path"]), entry
