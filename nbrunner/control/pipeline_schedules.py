"""Schedules that run a pipeline (``"pipeline"`` instead of ``"notebook"``): each fire time makes
one pipeline (:mod:`.pipelines`) with ``schedule`` set, owned by the schedule's owner.

The pipeline file is checked when the schedule is made (as a pipeline is checked when it is run)
and kept with each step's notebook as content in ``<storage>/schedules/<id>/pipeline.json``:
every run runs the notebooks as they were then."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..core.config import Settings
from ..core.errors import InvalidRequest
from ..core.pipelines.spec import parse_pipeline, read_pipeline
from .store import JobStore
from .pipelines import check_notebooks, create_pipeline, get_record, split_contents

OPTIONS = ("cron", "every", "timezone", "overlap", "name")  # what a pipeline schedule takes besides the file


def pipeline_path(settings: Settings, schedule_id: str) -> Path:
    return settings.storage / "schedules" / schedule_id / "pipeline.json"


def prepare(settings: Settings, source: Any, base: Path | None, allow_files: bool = True) -> tuple[str, dict]:
    """The pipeline's name and the file to keep (each step with its notebook's ``content``) of a
    pipeline file (a dict, or YAML text; relative notebook paths from ``base``, then the
    workspace); InvalidRequest with one line when the pipeline could not run."""
    raw, contents = split_contents(source if not isinstance(source, str) else read_pipeline(source))
    spec = parse_pipeline(read_pipeline(raw))
    snaps = check_notebooks(settings, spec, contents, base, allow_files)
    steps = {}
    for name, step in spec.steps.items():
        body = step.to_dict()
        shown, text = snaps[name]
        if "sweep" in body:
            body["sweep"] = {**body["sweep"], "notebook": shown}
        else:
            body["notebook"] = shown
        steps[name] = {**body, "content": text}
    return spec.name, {"name": spec.name, "steps": steps, "on_failure": spec.on_failure}


def check_request(request: dict[str, Any]) -> None:
    for key in request:
        if key not in (*OPTIONS, "pipeline", "paused"):
            raise InvalidRequest(f"unknown field {key!r} for a schedule of a pipeline (its steps carry the job options)")


def keep(settings: Settings, schedule_id: str, stored: dict) -> None:
    path = pipeline_path(settings, schedule_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".pipeline.json.{os.getpid()}")
    tmp.write_text(json.dumps(stored), encoding="utf-8")
    os.replace(tmp, path)


def fire(store: JobStore, settings: Settings, schedule_id: str, owner: str, groups: list[str]) -> str:
    """Run the schedule's pipeline once; its id."""
    try:
        stored = json.loads(pipeline_path(settings, schedule_id).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidRequest(f"the pipeline of schedule {schedule_id} cannot be read ({exc.__class__.__name__})") \
            from None
    rec = create_pipeline(store, settings, stored, owner=owner, groups=groups, allow_files=False, schedule=schedule_id)
    return rec.id


def run_active(store: JobStore, pipeline_id: str) -> bool:
    """Whether the pipeline a schedule last made has not finished."""
    try:
        return not get_record(store, pipeline_id).finished
    except Exception:  # noqa: BLE001 - gone or unreadable: not running
        return False
