"""REST handlers (jupyter-server APIHandler): Jupyter auth on every route, JSON errors, no 500 for bad input."""
from __future__ import annotations

import ast
import functools
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web
from tornado.ioloop import IOLoop

from ..control import submit
from ..client.cluster import Cluster, connect
from ..client.job import download_name, read_log, read_metrics, zip_dir
from ..core.config import IO_CHUNK_BYTES, JOBS_PAGE_DEFAULT, JOBS_PAGE_MAX, MAX_BODY
from ..core.html import OUTPUT_HTML
from ..core.errors import InvalidRequest, NbrunnerError, NotFound
from ..core.limits import MAX_INT64, bad_input, loads_json
from ..core.models import STATUSES, JobRecord

API = r"/nbrunner/api"
ID = r"(?P<job_id>[a-z0-9]{1,32})"


@functools.lru_cache(maxsize=1)
def _os_user() -> str:
    import getpass

    return getpass.getuser()


class BaseHandler(APIHandler):
    """Errors as ``{"message": ...}``; nbrunner errors map to their status (400/404/409/503)."""

    @property
    def cluster(self) -> Cluster:
        cached = self.settings.get("nbrunner_cluster")
        if cached is None:
            cached = connect(self.settings["nbrunner_workspace"])
            self.settings["nbrunner_cluster"] = cached
        return cached

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, web.HTTPError) and exc.log_message:
            message = exc.log_message % exc.args if exc.args else exc.log_message
        elif isinstance(exc, NbrunnerError):
            message = str(exc)
        else:
            message = self._reason or "error"
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"message": message}))

    def _handle_request_exception(self, e: BaseException) -> None:
        if not isinstance(e, NbrunnerError) and bad_input(e) is not None:  # hostile input, not a bug: 400
            e = InvalidRequest(bad_input(e))
        if isinstance(e, NbrunnerError):
            if self._finished:
                return
            self.send_error(e.status, exc_info=(type(e), e, e.__traceback__))
            return
        super()._handle_request_exception(e)

    @property
    def root(self) -> Path:
        """The server root, resolved (once: it is on every request's path)."""
        root = self.settings.get("nbrunner_root_resolved")
        if root is None:
            root = self.settings["nbrunner_root_resolved"] = Path(self.settings["nbrunner_root"]).resolve()
        return root

    def user(self) -> str:
        """The job owner: the Jupyter identity in multi-user mode, else the server's OS user
        (a token-only server gives every browser a random identity)."""
        if not self.settings.get("nbrunner_multi_user"):
            return _os_user()
        user = self.current_user
        return getattr(user, "username", None) or getattr(user, "name", None) or str(user or "anonymous")

    def is_admin(self) -> bool:
        return not self.settings.get("nbrunner_multi_user") or self.user() in self.settings.get("nbrunner_admins", ())

    def visible(self, rec: JobRecord) -> bool:
        return self.is_admin() or rec.owner == self.user()

    def job(self, job_id: str) -> JobRecord:
        rec = self.cluster.store.get(job_id)
        if not self.visible(rec):
            raise NotFound(f"no job {job_id!r}")
        return rec

    def body(self) -> dict[str, Any]:
        raw = self.request.body or b""
        if len(raw) > MAX_BODY:
            raise InvalidRequest(f"request body larger than {MAX_BODY // 1024} KiB")
        data = loads_json(raw or b"{}")
        if not isinstance(data, dict):
            raise InvalidRequest("request body must be a JSON object")
        return data

    def reply(self, obj: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(obj, default=str))

    def relative_path(self, path: Any, what: str = "notebook") -> str:
        """Refuse absolute paths and ``..``: REST paths are relative to the server root."""
        if not isinstance(path, str) or not path.strip():
            raise InvalidRequest(f"{what} must be a path relative to the server root")
        if path.startswith(("/", "\\", "~")) or ".." in Path(path).parts or "\x00" in path:
            raise InvalidRequest(f"{what} path must stay inside the server root: {path}")
        return path


class JobsHandler(BaseHandler):
    @web.authenticated
    def get(self) -> None:
        status = self.get_query_argument("status", None)
        if status is not None and status not in STATUSES:
            raise InvalidRequest(f"status must be one of {', '.join(STATUSES)}")
        raw = self.get_query_argument("limit", str(JOBS_PAGE_DEFAULT))
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 6 and 1 <= int(raw) <= JOBS_PAGE_MAX):
            raise InvalidRequest(f"limit must be an integer from 1 to {JOBS_PAGE_MAX}, got {raw[:20]!r}")
        cursor = self.get_query_argument("cursor", None)
        owner = None if self.is_admin() else self.user()
        schedule = self.get_query_argument("schedule", None)  # a schedule's runs (also after it was deleted)
        where = None if owner is None and schedule is None else (
            lambda r: (owner is None or r.owner == owner) and (schedule is None or r.schedule == schedule))
        records, after = self.cluster.store.page(status, int(raw), cursor, where=where)
        self.reply({"jobs": [r.to_dict() for r in records], "next": after})

    @web.authenticated
    async def post(self) -> None:
        data = self.body()
        data["notebook"] = self.relative_path(data.get("notebook"))
        root = self.root
        cluster = self.cluster
        workspace = cluster.settings.workspace
        if root != workspace:  # notebook paths are relative to the server root
            data["notebook"] = str(root / data["notebook"])
        if "sweep" in data:
            raise InvalidRequest("unknown field 'sweep' (trials are created by POST /sweeps)")
        if "schedule" in data:
            raise InvalidRequest("unknown field 'schedule' (runs are created by POST /schedules)")
        if data.get("cwd") is not None:  # like the notebook: relative to the server root
            data["cwd"] = str(root / self.relative_path(data["cwd"], "cwd"))
        # in a thread: the snapshot's writes and Redis's fsync must not stall other requests, and
        # concurrent submits then share Redis's fsyncs
        rec = await IOLoop.current().run_in_executor(None, submit.submit, cluster.store, cluster.settings, data,
                                                     self.user())
        self.reply(rec.to_dict(), 201)


class JobHandler(BaseHandler):
    @web.authenticated
    def get(self, job_id: str) -> None:
        self.reply(self.job(job_id).to_dict())

    @web.authenticated
    def patch(self, job_id: str) -> None:
        self.job(job_id)
        data = self.body()
        if set(data) != {"priority"}:
            raise InvalidRequest("only {\"priority\": p} can be changed")
        self.reply(submit.set_priority(self.cluster.store, job_id, data["priority"]).to_dict())

    @web.authenticated
    async def delete(self, job_id: str) -> None:
        """Cancel; with ``?purge=true`` remove a finished job's record and directory (204)."""
        self.job(job_id)
        purge = self.get_query_argument("purge", "false").lower()
        if purge not in ("true", "false", "1", "0"):
            raise InvalidRequest(f"purge must be true or false, got {purge!r}")
        if purge in ("true", "1"):  # in a thread: it may wait for the worker's release, and removes a directory
            await IOLoop.current().run_in_executor(None, submit.purge, self.cluster.store, self.cluster.settings,
                                                   job_id)
            self.set_status(204)
            self.finish()
            return
        # in a thread: the cancel renders the job's output.html
        rec = await IOLoop.current().run_in_executor(None, submit.cancel, self.cluster.store, job_id,
                                                     self.cluster.settings)
        self.reply(rec.to_dict())


class LogHandler(BaseHandler):
    @web.authenticated
    def get(self, job_id: str) -> None:
        rec = self.job(job_id)
        raw = self.get_query_argument("offset", "0")
        try:
            offset = int(raw) if len(raw) <= 20 else -1
            if not 0 <= offset <= MAX_INT64:
                raise ValueError
        except ValueError:
            raise InvalidRequest(f"offset must be a non-negative integer, got {raw!r}") from None
        text, offset = read_log(self.cluster.settings.job_dir(job_id), offset, finished=rec.finished)
        self.reply({"text": text, "offset": offset})


class OutputHandler(BaseHandler):
    @web.authenticated
    def get(self, job_id: str) -> None:
        self.job(job_id)
        path = self.cluster.settings.job_dir(job_id) / "output.ipynb"
        if not path.exists():
            raise NotFound(f"job {job_id} has no output notebook yet")
        self.reply(json.loads(path.read_text()))


class MetricsHandler(BaseHandler):
    """``GET /jobs/{id}/metrics`` -> ``{"metrics": [rows of metrics.jsonl, in order]}``."""

    @web.authenticated
    def get(self, job_id: str) -> None:
        self.job(job_id)
        self.reply({"metrics": read_metrics(self.cluster.settings.job_dir(job_id))})


DOWNLOADS = {"ipynb": ("output.ipynb", "application/x-ipynb+json"), "html": (OUTPUT_HTML, "text/html; charset=utf-8"),
             "zip": (None, "application/zip")}


class DownloadHandler(BaseHandler):
    """``GET /jobs/{id}/download?format=ipynb|html|zip``: the output notebook, its HTML, or a zip
    of the job directory, as an attachment."""

    @web.authenticated
    async def get(self, job_id: str) -> None:
        rec = self.job(job_id)
        fmt = self.get_query_argument("format", "ipynb")
        if fmt not in DOWNLOADS:
            raise InvalidRequest(f"format must be one of {', '.join(DOWNLOADS)}, got {fmt!r}")
        job_dir = self.cluster.settings.job_dir(job_id)
        name, content_type = DOWNLOADS[fmt]
        if name is not None and not (job_dir / name).is_file():
            what = "output notebook" if fmt == "ipynb" else "HTML output"
            raise NotFound(f"job {job_id} has no {what} yet")
        if name is None and not job_dir.is_dir():
            raise NotFound(f"job {job_id} has no directory")
        self.set_header("Content-Type", content_type)
        self.set_header("Content-Disposition", f'attachment; filename="{download_name(rec, fmt)}"')
        with tempfile.TemporaryFile() as tmp:
            if name is None:  # zipping a large directory must not stall other users' requests
                await IOLoop.current().run_in_executor(None, zip_dir, job_dir, tmp)
            else:
                await IOLoop.current().run_in_executor(None, _copy, job_dir / name, tmp)
            tmp.seek(0)
            while chunk := tmp.read(IO_CHUNK_BYTES):
                self.write(chunk)
                await self.flush()
        self.finish()


def _copy(path: Path, out) -> None:
    with open(path, "rb") as f:
        shutil.copyfileobj(f, out)


class RerunHandler(BaseHandler):
    """``POST /jobs/{id}/rerun`` ``{parameters?}`` -> 201 a new job from the same input snapshot."""

    @web.authenticated
    def post(self, job_id: str) -> None:
        self.job(job_id)
        data = self.body()
        for key in data:
            if key != "parameters":
                raise InvalidRequest(f"unknown field {key!r}")
        rec = submit.rerun(self.cluster.store, self.cluster.settings, job_id, data.get("parameters"), owner=self.user())
        self.reply(rec.to_dict(), 201)


class OpenAPIHandler(BaseHandler):
    """``GET /openapi.json``: the OpenAPI 3 document of this API."""

    @web.authenticated
    def get(self) -> None:
        from .openapi import document

        self.reply(document(self.base_url))


class ClusterHandler(BaseHandler):
    @web.authenticated
    def get(self) -> None:
        self.reply(self.cluster.status())


class TimelineHandler(BaseHandler):
    @web.authenticated
    def get(self) -> None:
        self.reply({"jobs": self.cluster.timeline(where=None if self.is_admin() else self.visible)})


def _parameter(p: dict) -> dict:
    text = p.get("default") or "None"
    try:
        value = ast.literal_eval(text)
        json.dumps(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = text
    kind = {bool: "bool", int: "int", float: "float", str: "str", type(None): "none", list: "list",
            dict: "dict"}.get(type(value), "str")
    return {"name": p["name"], "value": value, "type": kind, "help": p.get("help") or ""}


class ParametersHandler(BaseHandler):
    """Names and defaults of a notebook's ``parameters`` cell, for the submit dialog."""

    @web.authenticated
    def get(self) -> None:
        import papermill

        rel = self.relative_path(self.get_query_argument("path", ""), "path")
        settings = self.cluster.settings
        root = self.root
        path = submit.resolve_notebook(settings, str(root / rel))
        submit.read_notebook(path, rel)
        try:
            found = papermill.inspect_notebook(str(path))
        except Exception as exc:
            raise InvalidRequest(f"cannot read the parameters of {rel} ({exc.__class__.__name__})") from None
        self.reply({"parameters": [_parameter(p) for p in found.values()]})


class SweepsHandler(BaseHandler):
    """``POST /sweeps`` ``{notebook, spec}`` (spec: a mapping or YAML text) -> 201 ``{"id", "jobs", "leaderboard"}``;
    ``GET /sweeps`` -> ``{"sweeps": [...]}``."""

    @web.authenticated
    def get(self) -> None:
        from ..client.sweep import list_sweeps

        sweeps = [s for s in list_sweeps(self.cluster) if self.is_admin() or s.record.owner == self.user()]
        self.reply({"sweeps": [s.to_dict() for s in sweeps]})

    @web.authenticated
    def post(self) -> None:
        from ..client.sweep import submit_sweep
        from ..control.sweeps import JOB_OPTIONS

        data = self.body()
        for key in data:
            if key not in ("notebook", "spec", *JOB_OPTIONS):
                raise InvalidRequest(f"unknown field {key!r}")
        notebook = self.relative_path(data.get("notebook"))
        if "spec" not in data:
            raise InvalidRequest("missing field 'spec' (a sweep spec: a mapping or YAML text)")
        spec = data["spec"]
        if not isinstance(spec, (dict, str)):
            raise InvalidRequest("spec must be a mapping or YAML text")
        root = self.root
        notebook = str(root / notebook)  # notebook paths are relative to the server root
        options = {k: data[k] for k in JOB_OPTIONS if k in data}
        sweep = submit_sweep(self.cluster, notebook, spec, owner=self.user(), base=root, allow_file=False, **options)
        self.reply(sweep.to_dict(), 201)


class SweepHandler(BaseHandler):
    """``GET /sweeps/{id}`` -> ``{"id", "jobs", "leaderboard"}``, 404 unknown; ``DELETE`` cancels it."""

    def sweep(self, sweep_id: str):
        from ..client.sweep import Sweep

        sweep = Sweep(self.cluster, sweep_id)
        if not (self.is_admin() or sweep.record.owner == self.user()):
            raise NotFound(f"no sweep {sweep_id!r}")
        return sweep

    @web.authenticated
    def get(self, sweep_id: str) -> None:
        self.reply(self.sweep(sweep_id).to_dict())

    @web.authenticated
    def delete(self, sweep_id: str) -> None:
        self.reply(self.sweep(sweep_id).cancel().to_dict())


class SchedulesHandler(BaseHandler):
    """``POST /schedules`` -> 201 schedule; ``GET /schedules`` -> ``{"schedules": [...]}``."""

    @web.authenticated
    def get(self) -> None:
        from ..control.schedules import list_schedules

        records = [r for r in list_schedules(self.cluster.store) if self.is_admin() or r.owner == self.user()]
        self.reply({"schedules": [r.to_dict() for r in records]})

    @web.authenticated
    def post(self) -> None:
        from ..control.schedules import create_schedule

        data = self.body()
        data["notebook"] = str(self.root / self.relative_path(data.get("notebook")))
        cluster = self.cluster
        rec = create_schedule(cluster.store, cluster.settings, data, owner=self.user())
        self.reply(rec.to_dict(), 201)


class ScheduleHandler(BaseHandler):
    """``GET``/``PATCH``/``DELETE /schedules/{id}`` (404 if unknown or not the user's)."""

    def schedule(self, schedule_id: str):
        from ..control.schedules import get_schedule

        rec = get_schedule(self.cluster.store, schedule_id)
        if not (self.is_admin() or rec.owner == self.user()):
            raise NotFound(f"no schedule {schedule_id!r}")
        return rec

    @web.authenticated
    def get(self, schedule_id: str) -> None:
        self.reply(self.schedule(schedule_id).to_dict())

    @web.authenticated
    def patch(self, schedule_id: str) -> None:
        from ..control.schedules import update_schedule

        self.schedule(schedule_id)
        data = self.body()
        if "notebook" in data:
            data["notebook"] = str(self.root / self.relative_path(data["notebook"]))
        cluster = self.cluster
        self.reply(update_schedule(cluster.store, cluster.settings, schedule_id, data).to_dict())

    @web.authenticated
    def delete(self, schedule_id: str) -> None:
        from ..control.schedules import delete_schedule

        self.schedule(schedule_id)
        delete_schedule(self.cluster.store, schedule_id)
        self.set_status(204)
        self.finish()


# ---- models: the registry and model servers ---------------------------------------------------


def _model_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A registry entry (as ``nbrunner model list --json``) plus its model's framework, class and saved_at."""
    try:
        meta = json.loads((Path(entry["path"]) / "meta.json").read_text())
    except (OSError, ValueError, TypeError):
        meta = {}
    meta = meta if isinstance(meta, dict) else {}
    return {**entry, **{k: meta.get(k) for k in ("framework", "class_name", "saved_at", "input_shape")}}


class ModelsHandler(BaseHandler):
    """``GET /models`` -> ``{"models": [...], "jobs_with_model": [job ids]}``;
    ``POST /models`` ``{job, name}`` -> 201 the new entry (the next version of ``name``)."""

    @web.authenticated
    def get(self) -> None:
        from ..serving.registry import list_models

        settings = self.cluster.settings
        jobs = [r.id for r in self.cluster.store.all() if self.visible(r)
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
        self.job(job_id)
        self.reply(_model_entry(register_model(self.cluster.settings, job_id, name)), 201)


class ModelServingHandler(BaseHandler):
    """``GET /models/serving`` -> ``{"servers": [...]}``; ``POST`` ``{model: "NAME[:VERSION]", port?}`` -> 201
    the started server ``{name, version, model, port, url, pid, owner, started_at}``."""

    @property
    def servers(self):
        return self.settings["nbrunner_model_servers"]

    @web.authenticated
    def get(self) -> None:
        self.reply({"servers": [s.to_dict() for s in self.servers.list()]})

    @web.authenticated
    async def post(self) -> None:
        data = self.body()
        for key in data:
            if key not in ("model", "port"):
                raise InvalidRequest(f"unknown field {key!r} (give {{\"model\": \"NAME[:VERSION]\", \"port\": P}})")
        if "model" not in data:
            raise InvalidRequest("missing field 'model' (NAME or NAME:VERSION)")
        server = await self.servers.start(self.cluster.settings, data["model"], data.get("port"), owner=self.user())
        self.reply(server.to_dict(), 201)


class ModelServerHandler(BaseHandler):
    """``GET /models/serving/{name}`` -> that model's server; ``DELETE`` -> 204: stops it (404 if none runs)."""

    servers = ModelServingHandler.servers  # and no POST: a server is started on /models/serving

    @web.authenticated
    def get(self, name: str) -> None:
        self.reply(self.servers.get(name).to_dict())

    @web.authenticated
    def delete(self, name: str) -> None:
        server = self.servers.get(name)
        if not (self.is_admin() or server.owner == self.user()):
            raise NotFound(f"model {name!r} is not being served")
        self.servers.stop(name)
        self.set_status(204)
        self.finish()


def routes() -> list[tuple[str, type]]:
    return [
        (rf"{API}/jobs/?", JobsHandler),
        (rf"{API}/jobs/{ID}/?", JobHandler),
        (rf"{API}/jobs/{ID}/log/?", LogHandler),
        (rf"{API}/jobs/{ID}/output/?", OutputHandler),
        (rf"{API}/jobs/{ID}/metrics/?", MetricsHandler),
        (rf"{API}/jobs/{ID}/download/?", DownloadHandler),
        (rf"{API}/jobs/{ID}/rerun/?", RerunHandler),
        (rf"{API}/cluster/?", ClusterHandler),
        (rf"{API}/cluster/timeline/?", TimelineHandler),
        (rf"{API}/notebook-parameters/?", ParametersHandler),
        (rf"{API}/sweeps/?", SweepsHandler),
        (rf"{API}/sweeps/(?P<sweep_id>[a-z0-9]{{1,32}})/?", SweepHandler),
        (rf"{API}/schedules/?", SchedulesHandler),
        (rf"{API}/schedules/(?P<schedule_id>[a-z0-9]{{1,32}})/?", ScheduleHandler),
        (rf"{API}/models/?", ModelsHandler),
        (rf"{API}/models/serving/?", ModelServingHandler),
        (rf"{API}/models/serving/(?P<name>[^/]+)/?", ModelServerHandler),
        (rf"{API}/openapi.json", OpenAPIHandler),
    ]
