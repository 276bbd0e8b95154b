"""The Python handle on a pipeline: :meth:`nbrunner.Cluster.pipeline` returns a :class:`Pipeline`.

::

    pipe = cluster.pipeline("digits.pipeline.yaml", parameters={"prep.rows": 400})
    pipe.wait(); pipe.status; pipe.steps["train"]["outputs"]; pipe.rerun(from_step="train"); pipe.cancel()
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ..core.config import MAX_PIPELINE_BYTES
from ..core.errors import InvalidRequest
from ..control.local_files import read_limited

FINISHED = ("completed", "failed", "cancelled")
WAIT_POLL_S = 0.2


def pipeline_name(path: Path) -> str:
    """A pipeline's default name from its file: ``digits.pipeline.yaml`` -> ``digits``."""
    name = path.name
    for suffix in (".yaml", ".yml", ".json"):
        name = name.removesuffix(suffix)
    return name.removesuffix(".pipeline") or "pipeline"


def load_source(source: str | os.PathLike | dict[str, Any]) -> tuple[Any, Path, str]:
    """(the file's text or the dict, the directory its notebook paths are relative to, its default
    name) of a pipeline given as a path or a dict (relative to the current directory)."""
    if isinstance(source, dict):
        return source, Path.cwd(), "pipeline"
    if not isinstance(source, (str, os.PathLike)):
        raise InvalidRequest("a pipeline is a file path or a dict")
    path = Path(source).expanduser()
    try:
        data = read_limited(path, MAX_PIPELINE_BYTES)
    except FileNotFoundError:
        raise InvalidRequest(f"pipeline file not found: {source}") from None
    except IsADirectoryError:
        raise InvalidRequest(f"not a pipeline file: {source}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequest(f"{source} is not UTF-8 text") from None
    return text, path.resolve().parent, pipeline_name(path)


def pipeline_request(source: str | os.PathLike | dict[str, Any]) -> dict[str, Any]:
    """A pipeline (a path or a dict) as a request carries it: the file as a dict, its name from
    the file's, its notebook paths absolute (a service's backend then reads them as content)."""
    from ..core.pipelines.spec import read_pipeline

    data, base, name = load_source(source)
    data = dict(read_pipeline(data))
    data.setdefault("name", name)
    steps = data.get("steps")
    if isinstance(steps, dict):
        data["steps"] = {k: _absolute(step, base) for k, step in steps.items()}
    return data


def _absolute(step: Any, base: Path) -> Any:
    if not isinstance(step, dict):
        return step
    sweep = step.get("sweep")
    holder = dict(sweep) if isinstance(sweep, dict) else dict(step)
    if isinstance(holder.get("notebook"), str):
        holder["notebook"] = str(base / Path(holder["notebook"]).expanduser())
    return {**step, "sweep": holder} if isinstance(sweep, dict) else holder


class Pipeline:
    """A handle on a pipeline: ``.id``, ``.status``, ``.steps`` (read fresh), ``.wait()``,
    ``.cancel()``, ``.rerun(from_step=None)``, ``.to_dict()``; ``.record`` is its latest record."""

    def __init__(self, cluster, record: dict[str, Any]):
        self.cluster = cluster
        self.id: str = record["id"]
        self.record = record

    def __repr__(self) -> str:
        return f"<Pipeline {self.id} {self.record.get('name')!r} {self.record.get('status')}>"

    def refresh(self) -> dict[str, Any]:
        self.record = self.cluster.backend.pipeline(self.id)
        return self.record

    @property
    def name(self) -> str:
        return self.record["name"]

    @property
    def status(self) -> str:
        """``queued``, ``running``, ``completed``, ``failed`` or ``cancelled`` (read now)."""
        if self.record["status"] in FINISHED:
            return self.record["status"]
        return self.refresh()["status"]

    @property
    def steps(self) -> dict[str, dict[str, Any]]:
        """Each step: ``{status, job, outputs, needs, waiting, ...}`` (read now, unless finished)."""
        if self.record["status"] not in FINISHED:
            self.refresh()
        return self.record["steps"]

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def wait(self, timeout: float | None = None) -> "Pipeline":
        """Block until the pipeline has finished (TimeoutError after ``timeout`` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.finished:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"pipeline {self.id} still {self.record['status']} after {timeout} s")
            time.sleep(WAIT_POLL_S)
        return self

    def cancel(self) -> "Pipeline":
        self.record = self.cluster.backend.cancel_pipeline(self.id)
        return self

    def rerun(self, from_step: str | None = None) -> "Pipeline":
        """A new pipeline reusing this one's completed steps before ``from_step`` (None: every
        completed step) with their jobs and outputs."""
        return Pipeline(self.cluster, self.cluster.backend.rerun_pipeline(self.id, from_step))

    def jobs(self) -> dict[str, Any]:
        """The :class:`~nbrunner.client.job.Job` of each step that has one."""
        return {name: self.cluster.job(s["job"]) for name, s in self.steps.items() if s.get("job")}

    def to_dict(self) -> dict[str, Any]:
        return dict(self.record)
