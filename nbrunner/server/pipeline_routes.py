"""The REST routes of pipelines (mixins: :mod:`.handlers` serves them with its ``BaseHandler``).

``POST /pipelines`` takes the pipeline file as JSON (a step may carry its notebook's ``content``;
``parameters``, ``{"STEP.NAME": value}``, overrides the file's), or ``{"file": PATH}`` naming a
pipeline file under the server root (its notebooks relative to its directory) -> 201 the record;
``GET /pipelines`` -> ``{"pipelines": [...]}`` (newest first); ``GET /pipelines/{id}``;
``DELETE /pipelines/{id}`` cancels it; ``POST /pipelines/{id}/rerun`` ``{"from": STEP}`` -> 201 a
new pipeline reusing the completed steps before STEP."""
from __future__ import annotations

from typing import Any

from tornado import web

from ..core.errors import InvalidRequest


def pipeline_file(handler, data: dict[str, Any]) -> tuple[str, Any, str]:
    """The text of the pipeline file ``data["file"]`` names under the server root, the directory
    its notebook paths are relative to, and its default name."""
    from ..client.pipeline import load_source

    for key in data:
        if key not in ("file", "parameters"):
            raise InvalidRequest(f"unknown field {key!r} (give the pipeline as a file or as JSON, not both)")
    rel = handler.relative_path(data["file"], "file")
    return load_source(handler.root / rel)


class PipelinesRoute:
    @web.authenticated
    def get(self) -> None:
        self.reply({"pipelines": self.api.pipelines(self.caller)})

    @web.authenticated
    async def post(self) -> None:
        data = self.body(content=True)
        overrides = data.pop("parameters", None)
        source, base, name = data, self.root, "pipeline"
        if "file" in data:  # a pipeline file under the server root (the Lab's "Run pipeline")
            source, base, name = pipeline_file(self, data)
        steps = data.get("steps")
        if isinstance(steps, dict):
            for step in steps.values():
                if isinstance(step, dict) and step.get("content") is None:
                    self._check_path(step)
        rec = await self.in_thread(lambda: self.api.create_pipeline(self.caller, source, base=base,
                                                                     parameters=overrides, default_name=name))
        self.reply(rec, 201)

    def _check_path(self, step: dict[str, Any]) -> None:
        """A notebook read from the server's files stays under its root."""
        step.pop("content", None)
        sweep = step.get("sweep")
        notebook = sweep.get("notebook") if isinstance(sweep, dict) else step.get("notebook")
        if notebook is not None:
            self.relative_path(notebook)


class PipelineRoute:
    @web.authenticated
    def get(self, pipeline_id: str) -> None:
        self.reply(self.api.pipeline(self.caller, pipeline_id))

    @web.authenticated
    def delete(self, pipeline_id: str) -> None:
        self.reply(self.api.cancel_pipeline(self.caller, pipeline_id))


class PipelineRerunRoute:
    @web.authenticated
    async def post(self, pipeline_id: str) -> None:
        data = self.body()
        for key in data:
            if key != "from":
                raise InvalidRequest(f"unknown field {key!r}")
        step = data.get("from")
        if step is not None and not isinstance(step, str):
            raise InvalidRequest("from must be the name of a step")
        rec = await self.in_thread(lambda: self.api.rerun_pipeline(self.caller, pipeline_id, step))
        self.reply(rec, 201)


def pipeline_with_content(handler, data: dict[str, Any]) -> dict[str, Any]:
    """A ``POST /pipelines`` body for the service (:mod:`.forward`): the pipeline file as JSON (a
    ``file`` under the server root is read), each step's notebook read from the server's files
    (paths relative to the file's directory, else to the root) and sent as ``content``, named
    relative to the root."""
    from ..control.submit import resolve_notebook
    from ..control.local_files import read_notebook_text
    from ..core.pipelines.spec import read_pipeline

    root = handler.root
    overrides = data.get("parameters")
    if "file" in data:
        text, base, name = pipeline_file(handler, {"file": data["file"]})
        data = {"name": name, **read_pipeline(text)}
    else:
        base = root
    steps = data.get("steps")
    if not isinstance(steps, dict):
        return data
    out = {}
    for key, step in steps.items():
        if isinstance(step, dict) and step.get("content") is None:
            sweep = step.get("sweep")
            holder = dict(sweep) if isinstance(sweep, dict) else dict(step)
            notebook = holder.get("notebook")
            if isinstance(notebook, str):
                handler.relative_path(notebook)
                path = resolve_notebook(handler.api.settings, notebook, base)  # inside the root only
                rel = str(path.relative_to(root)) if root in path.parents else notebook
                holder["notebook"] = rel
                step = ({**step, "sweep": holder} if isinstance(sweep, dict) else holder)
                step["content"] = read_notebook_text(path, rel)
        out[key] = step
    return {**data, "steps": out, **({"parameters": overrides} if overrides else {})}
