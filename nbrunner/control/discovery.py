"""Finding running clusters, like ``jupyter server list``.

Every cluster started by ``nbrunner up`` or :func:`nbrunner.setup_cluster` writes one JSON file
in the runtime directory (``NBRUNNER_RUNTIME_DIR``, else ``$XDG_RUNTIME_DIR/nbrunner``, else
``~/.local/share/nbrunner/runtime``): ``{"workspace", "storage", "redis_url", "embedded",
"pid", "started_at", "lab_url"}``, removed when it stops. A file whose process is gone is
stale: ignored and removed.

A command that needs a cluster finds it in this order (:func:`resolve`):

1. ``NBRUNNER_REDIS_URL``, or an explicit ``--dir`` / ``NBRUNNER_WORKSPACE``;
2. a cluster whose workspace is the current directory, contains it or lies inside it
   (the deepest workspace containing it wins; several inside it are ambiguous);
3. the only running cluster;
4. else the current directory (which then reports that no cluster runs there).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ..core.config import REDIS_URL, RUNTIME_DIR, WORKSPACE, Settings, redact
from ..core.errors import NoCluster


class AmbiguousCluster(NoCluster):
    """Several running clusters could be meant (the CLI exits 2, as when none runs)."""


def runtime_dir() -> Path:
    configured = RUNTIME_DIR.text()
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return Path(xdg) / "nbrunner"
    return Path.home() / ".local" / "share" / "nbrunner" / "runtime"


def _started(pid: int) -> float | None:
    try:
        import psutil

        return psutil.Process(pid).create_time()
    except Exception:  # noqa: BLE001 - no such process (or no permission to look)
        return None


def register(settings: Settings, lab_url: str | None = None) -> Path | None:
    """Record the cluster this process runs; returns the file (None if it cannot be written)."""
    info = {"workspace": str(settings.workspace), "storage": str(settings.storage), "redis_url": settings.url,
            "embedded": settings.embedded, "pid": os.getpid(), "process_started": _started(os.getpid()),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "lab_url": lab_url}
    folder = runtime_dir()
    path = folder / f"cluster-{os.getpid()}-{abs(hash(str(settings.workspace))) % 10**8}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # may hold a Redis password
        with os.fdopen(fd, "w") as f:
            json.dump(info, f)
        os.replace(tmp, path)
    except OSError:
        return None
    return path


def unregister(path: Path | None) -> None:
    if path is not None:
        try:
            path.unlink()
        except OSError:
            pass


def _alive(info: dict[str, Any]) -> bool:
    pid = info.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    started = _started(pid)
    if started is None:
        return False
    recorded = info.get("process_started")
    return not isinstance(recorded, (int, float)) or abs(started - recorded) < 2  # not a reused pid


def running() -> list[dict[str, Any]]:
    """The running clusters, oldest first; stale files are removed."""
    folder = runtime_dir()
    out = []
    try:
        files = sorted(folder.glob("cluster-*.json"))
    except OSError:
        return []
    for path in files:
        try:
            info = json.loads(path.read_text())
            if not isinstance(info, dict) or not isinstance(info.get("workspace"), str):
                raise ValueError
        except (OSError, ValueError):
            unregister(path)
            continue
        if not _alive(info):
            unregister(path)
            continue
        info["file"] = str(path)
        out.append(info)
    return sorted(out, key=lambda i: (str(i.get("started_at")), i["workspace"]))


def public(info: dict[str, Any]) -> dict[str, Any]:
    """What ``nbrunner list --json`` shows of a cluster (no password)."""
    return {"workspace": info["workspace"], "redis_url": redact(str(info.get("redis_url") or "")),
            "pid": info.get("pid"), "started_at": info.get("started_at"), "lab_url": info.get("lab_url")}


def settings_of(info: dict[str, Any]) -> Settings:
    ws = Path(info["workspace"])
    return Settings(workspace=ws, storage=Path(info.get("storage") or ws / "runs"),
                    redis_url=None if info.get("embedded", True) else info.get("redis_url"))


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def resolve(workspace: str | os.PathLike | None = None, cwd: Path | None = None) -> Settings:
    """The settings of the cluster a command means (see the module docstring)."""
    if workspace is not None or REDIS_URL.text() or WORKSPACE.text():
        return Settings.load(workspace)
    here = Path(cwd or os.getcwd()).resolve()
    default = Settings.load(here)
    clusters = running()
    if not clusters:
        return default
    if (default.socket_path.exists() and any(Path(c["workspace"]) == here for c in clusters)):
        return default
    above = [c for c in clusters if _within(here, Path(c["workspace"]))]
    if above:  # the deepest workspace that contains the current directory
        best = max(above, key=lambda c: len(Path(c["workspace"]).parts))
        return settings_of(best)
    below = [c for c in clusters if _within(Path(c["workspace"]), here)]
    if len({c["workspace"] for c in below}) == 1:
        return settings_of(below[0])
    candidates = below or clusters
    if len({c["workspace"] for c in candidates}) == 1:
        return settings_of(candidates[0])
    listed = ", ".join(sorted({c["workspace"] for c in candidates}))
    raise AmbiguousCluster(f"several nbrunner clusters are running ({listed}): choose one with --dir")
