"""The pipeline operations of :class:`~nbrunner.control.api.ClusterAPI` for one caller: owners
hold (another user's pipeline answers NotFound on every operation)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import NotFound
from ..core.identity import Caller

if TYPE_CHECKING:
    from ..core.config import Settings
    from ..core.pipelines.record import PipelineRecord
    from .store import JobStore


class PipelineOperations:
    """Mixed into ClusterAPI, which gives ``store`` and ``settings``."""

    store: JobStore
    settings: Settings

    def create_pipeline(self, caller: Caller, source: Any, base: Path | None = None, parameters: Any = None,
                        allow_files: bool = True, default_name: str = "pipeline") -> dict[str, Any]:
        """A pipeline owned by the caller (see :func:`nbrunner.control.pipelines.create_pipeline`)."""
        from .pipelines import create_pipeline

        return create_pipeline(self.store, self.settings, source, owner=caller.name, groups=caller.groups, base=base,
                               parameters=parameters, allow_files=allow_files, default_name=default_name).to_dict()

    def pipeline_record(self, caller: Caller, pipeline_id: str) -> PipelineRecord:
        from .pipelines import get_record

        rec = get_record(self.store, pipeline_id)
        if not caller.sees(rec.owner):
            raise NotFound(f"no pipeline {pipeline_id!r}")
        return rec

    def pipeline(self, caller: Caller, pipeline_id: str) -> dict[str, Any]:
        return self.pipeline_record(caller, pipeline_id).to_dict()

    def pipelines(self, caller: Caller) -> list[dict[str, Any]]:
        """The pipelines the caller sees, newest first."""
        from .pipelines import get_record, pipeline_ids

        out = []
        for pid in reversed(pipeline_ids(self.store)):
            try:
                rec = get_record(self.store, pid)
            except NotFound:
                continue
            if caller.sees(rec.owner):
                out.append(rec.to_dict())
        return out

    def cancel_pipeline(self, caller: Caller, pipeline_id: str) -> dict[str, Any]:
        from .pipelines import cancel_pipeline

        self.pipeline_record(caller, pipeline_id)
        return cancel_pipeline(self.store, pipeline_id, self.settings).to_dict()

    def rerun_pipeline(self, caller: Caller, pipeline_id: str, from_step: Any = None) -> dict[str, Any]:
        """A new pipeline, owned by the caller, reusing the completed steps before ``from_step``."""
        from .pipelines import rerun_pipeline

        self.pipeline_record(caller, pipeline_id)
        return rerun_pipeline(self.store, self.settings, pipeline_id, from_step, owner=caller.name,
                              groups=caller.groups).to_dict()
