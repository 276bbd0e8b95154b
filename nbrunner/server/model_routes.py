"""The REST routes of the model registry and model servers (mixins: :mod:`.handlers` serves them
with its ``BaseHandler``)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tornado import web

from ..core.config import MAX_MODEL_JOBS
from ..core.errors import InvalidRequest, NotFound

ID_RE = re.compile(r"[a-z0-9]{1,32}")


def _model_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A registry entry (as ``nbrunner model list --json``) plus its model's framework, class and saved_at."""
    try:
        meta = json.loads((Path(entry["path"]) / "meta.json").read_text())
    except (OSError, ValueError, TypeError):
        meta = {}
    meta = meta if isinstance(meta, dict) else {}
    return {**entry, **{k: meta.get(k) for k in ("framework", "class_name", "saved_at", "input_shape")}}


class ModelsRoute:
    """``GET /models`` -> ``{"models": [...], "jobs_with_model": [job ids]}``;
    ``POST /models`` ``{job, name}`` -> 201 the new entry (the next version of ``name``)."""

    @web.authenticated
    def get(self) -> None:
        """``?jobs=a,b``: ``jobs_with_model`` only among these jobs (a page's), not the whole history."""
        from ..serving.registry import list_models

        settings = self.api.settings
        among = self.get_query_argument("jobs", None)
        if among is None:
            records = self.api.store.all()
        else:
            ids = [i for i in among.split(",") if i][:MAX_MODEL_JOBS + 1]
            if len(ids) > MAX_MODEL_JOBS or not all(ID_RE.fullmatch(i) for i in ids):
                raise InvalidRequest(f"jobs must be at most {MAX_MODEL_JOBS} job ids, comma-separated")
            records = [r for r in map(self.api.store.find, ids) if r is not None]
        jobs = [r.id for r in records if self.caller.sees(r.owner)
                and (settings.job_dir(r.id) / "model" / "model.pkl").is_file()]
        self.reply({"models": [_model_entry(m) for m in list_models(settings)], "jobs_with_model": jobs})

    @web.authenticated
    def post(self) -> None:
        from ..serving.registry import JOB_RE, register_model

        data = self.body()
        for key in data:
            if key not in ("job", "name"):
                raise InvalidRequest(f"unknown field {key!r} (give {{\"job\": JOB, \"name\": NAME}})")
        job_id, name = data.get("job"), data.get("name")
        if not isinstance(job_id, str) or not job_id:
            raise InvalidRequest("missing field 'job' (the id of a job that saved a model)")
        if not isinstance(name, str) or not name:
            raise InvalidRequest("missing field 'name' (the model's name, e.g. digits)")
        if not JOB_RE.match(job_id):
            raise NotFound(f"no job {job_id!r}")
        self.api.job(self.caller, job_id)
        self.reply(_model_entry(register_model(self.api.settings, job_id, name)), 201)


class ModelServingRoute:
    """``GET /models/serving`` -> ``{"servers": [...]}``; ``POST`` ``{model: "NAME[:VERSION]", port?}`` -> 201
    the started server ``{name, version, model, port, url, pid, owner, started_at}``."""

    @property
    def servers(self):
        return self.settings["nbrunner_model_servers"]

    @web.authenticated
    def get(self) -> None:
        self.reply({"servers": [s.to_dict() for s in self.servers.list() if self.caller.sees(s.owner)]})

    @web.authenticated
    async def post(self) -> None:
        data = self.body()
        for key in data:
            if key not in ("model", "port"):
                raise InvalidRequest(f"unknown field {key!r} (give {{\"model\": \"NAME[:VERSION]\", \"port\": P}})")
        if "model" not in data:
            raise InvalidRequest("missing field 'model' (NAME or NAME:VERSION)")
        caller = self.caller
        server = await self.servers.start(self.api.settings, data["model"], data.get("port"), owner=caller.name,
                                          groups=caller.groups, sees=caller.sees)
        self.reply(server.to_dict(), 201)


class ModelServerRoute:
    """``GET /models/serving/{name}`` -> that model's server; ``DELETE`` -> 204: stops it (404 if none runs)."""

    servers = ModelServingRoute.servers  # and no POST: a server is started on /models/serving

    def server(self, name: str):
        server = self.servers.get(name)
        if not self.caller.sees(server.owner):
            raise NotFound(f"model {name!r} is not being served")
        return server

    @web.authenticated
    def get(self, name: str) -> None:
        self.reply(self.server(name).to_dict())

    @web.authenticated
    def delete(self, name: str) -> None:
        self.server(name)
        self.servers.stop(name)
        self.set_status(204)
        self.finish()
