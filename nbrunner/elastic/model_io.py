"""Shipping user code by value, and saving/loading trained models.

Objects defined in a notebook (``__main__``) are pickled by value by cloudpickle anyway.
Objects from the user's own modules (a ``models.py`` next to the notebook, a test module)
would be pickled by reference and could not be loaded where that source is missing (a
learner on another host, ``nbrunner serve`` months later), so :func:`by_value` registers
such modules for pickling by value: every module that is not part of the standard library,
an installed distribution (site-packages) or torch/nbrunner.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import sysconfig
import types
from pathlib import Path
from typing import Any, Iterable, Iterator

import cloudpickle

__all__ = ["by_value", "dumps", "save_model", "load_model"]

_KEEP_BY_REFERENCE = ("torch", "nbrunner", "numpy", "sklearn", "cloudpickle", "builtins", "__main__")


def _installed_prefixes() -> list[str]:
    paths = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            paths.add(os.path.realpath(p))
    for p in sys.path:
        if p and ("site-packages" in p or "dist-packages" in p):
            paths.add(os.path.realpath(p))
    paths.add(os.path.realpath(sys.prefix))
    paths.add(os.path.realpath(sys.base_prefix))
    return sorted(paths)


def _is_user_module(mod: types.ModuleType) -> bool:
    name = mod.__name__
    if name.split(".")[0] in _KEEP_BY_REFERENCE or name in sys.builtin_module_names:
        return False
    f = getattr(mod, "__file__", None)
    if not f:
        return False
    f = os.path.realpath(f)
    return not any(f.startswith(p + os.sep) for p in _installed_prefixes())


def _modules_of(objs: Iterable[Any]) -> set[str]:
    """Names of modules defining the classes/functions reachable from ``objs`` (shallow:
    module trees, their classes, functions and closures, containers)."""
    import torch.nn as nn

    found: set[str] = set()
    seen: set[int] = set()
    stack = list(objs)
    while stack:
        o = stack.pop()
        if o is None or id(o) in seen:
            continue
        seen.add(id(o))
        if isinstance(o, nn.Module):
            for m in o.modules():
                found.add(type(m).__module__)
                for v in vars(m).values():
                    if callable(v) and not isinstance(v, nn.Module):
                        stack.append(v)
            continue
        if isinstance(o, (list, tuple, set)):
            stack.extend(o)
            continue
        if isinstance(o, dict):
            stack.extend(o.values())
            continue
        if isinstance(o, types.FunctionType):
            found.add(o.__module__)
            for c in o.__closure__ or ():
                try:
                    stack.append(c.cell_contents)
                except ValueError:
                    pass
            for name in o.__code__.co_names:
                g = o.__globals__.get(name)
                if isinstance(g, type) or isinstance(g, types.FunctionType):
                    stack.append(g)
            continue
        if isinstance(o, type):
            found.add(o.__module__)
            continue
        if isinstance(o, types.MethodType):
            stack.append(o.__func__)
            stack.append(o.__self__)
            continue
        found.add(type(o).__module__)
    return {m for m in found if m}


@contextlib.contextmanager
def by_value(objs: Iterable[Any]) -> Iterator[list[str]]:
    """While active, user modules reachable from ``objs`` are pickled by value."""
    registered = []
    for name in sorted(_modules_of(objs)):
        mod = sys.modules.get(name)
        if mod is None or not _is_user_module(mod):
            continue
        try:
            cloudpickle.register_pickle_by_value(mod)
            registered.append(mod)
        except (ValueError, TypeError):
            pass
    try:
        yield [m.__name__ for m in registered]
    finally:
        for mod in registered:
            try:
                cloudpickle.unregister_pickle_by_value(mod)
            except (ValueError, KeyError):
                pass


def dumps(obj: Any) -> bytes:
    flat = obj if isinstance(obj, (list, tuple)) else [obj]
    with by_value(flat):
        return cloudpickle.dumps(obj)


def save_model(model: Any, path: str | os.PathLike) -> Path:
    """Save ``model`` to directory ``path``: ``model.pkl`` (cloudpickle, user classes by
    value, so it loads without the notebook's source), ``state_dict.pt`` (weights only) and
    ``meta.json``.  Returns the directory."""
    import torch

    d = Path(path)
    d.mkdir(parents=True, exist_ok=True)
    was_training = getattr(model, "training", None)
    blob = dumps(model)
    tmp = d / ".model.pkl.tmp"
    tmp.write_bytes(blob)
    os.replace(tmp, d / "model.pkl")
    if hasattr(model, "state_dict"):
        buf = io.BytesIO()
        torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, buf)
        tmp = d / ".state_dict.pt.tmp"
        tmp.write_bytes(buf.getvalue())
        os.replace(tmp, d / "state_dict.pt")
    meta = {
        "class": f"{type(model).__module__}.{type(model).__qualname__}",
        "parameters": int(sum(p.numel() for p in model.parameters())) if hasattr(model, "parameters") else None,
        "training": was_training,
        "format": "nbrunner.elastic/1",
        "torch": torch.__version__,
    }
    (d / "meta.json").write_text(json.dumps(meta, indent=2))
    return d


def load_model(path: str | os.PathLike, map_location: str = "cpu") -> Any:
    """Load a model saved by :func:`save_model` (or by ElasticTrainer into
    ``runs/<job-id>/model/``) without needing the source that defined its class.
    The model is returned in eval mode."""
    import torch

    d = Path(path)
    if d.is_file():
        d = d.parent
    with open(d / "model.pkl", "rb") as f:
        model = cloudpickle.load(f)
    sd_path = d / "state_dict.pt"
    if sd_path.exists() and hasattr(model, "load_state_dict"):
        sd = torch.load(sd_path, map_location=map_location, weights_only=True)
        model.load_state_dict(sd)
    if hasattr(model, "eval"):
        model.eval()
    return model
