"""REST handlers (jupyter-server APIHandler): Jupyter auth on every route, JSON errors, no 500 for bad input."""
from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

from ..control import submit
from ..client.cluster import Cluster, connect
from ..client.job import read_log
from ..core.errors import InvalidRequest, NbrunnerError, NotFound
from ..core.limits import MAX_INT64, bad_input, loads_json
from ..core.models import STATUSES, JobRecord

API = r"/nbrunner/api"
ID = r"(?P<job_id>[a-z0-9]{1,32})"
MAX_BODY = 1024 * 1024
DEFAULT_LIMIT, MAX_LIMIT = 1000, 10000  # jobs per page of GET /jobs


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

    def user(self) -> str:
        """The job owner: the Jupyter identity in multi-user mode, else the server's OS user
        (a token-only server gives every browser a random identity)."""
        if not self.settings.get("nbrunner_multi_user"):
            import getpass

            return getpass.getuser()
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
        raw = self.get_query_argument("limit", str(DEFAULT_LIMIT))
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 6 and 1 <= int(raw) <= MAX_LIMIT):
            raise InvalidRequest(f"limit must be an integer from 1 to {MAX_LIMIT}, got {raw[:20]!r}")
        cursor = self.get_query_argument("cursor", None)
        owner = None if self.is_admin() else self.user()
        records, after = self.cluster.store.page(status, int(raw), cursor,
                                                 where=None if owner is None else lambda r: r.owner == owner)
        self.reply({"jobs": [r.to_dict() for r in records], "next": after})

    @web.authenticated
    def post(self) -> None:
        data = self.body()
        data["notebook"] = self.relative_path(data.get("notebook"))
        root = Path(self.settings["nbrunner_root"]).resolve()
        cluster = self.cluster
        workspace = cluster.settings.workspace
        if root != workspace:  # notebook paths are relative to the server root
            data["notebook"] = str(root / data["notebook"])
        if "sweep" in data:
            raise InvalidRequest("unknown field 'sweep' (trials are created by POST /sweeps)")
        if data.get("cwd") is not None:  # like the notebook: relative to the server root
            data["cwd"] = str(root / self.relative_path(data["cwd"], "cwd"))
        rec = submit.submit(cluster.store, cluster.settings, data, owner=self.user())
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
    def delete(self, job_id: str) -> None:
        self.job(job_id)
        self.reply(submit.cancel(self.cluster.store, job_id).to_dict())


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
        root = Path(self.settings["nbrunner_root"]).resolve()
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
        root = Path(self.settings["nbrunner_root"]).resolve()
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


def routes() -> list[tuple[str, type]]:
    return [
        (rf"{API}/jobs/?", JobsHandler),
        (rf"{API}/jobs/{ID}/?", JobHandler),
        (rf"{API}/jobs/{ID}/log/?", LogHandler),
        (rf"{API}/jobs/{ID}/output/?", OutputHandler),
        (rf"{API}/cluster/?", ClusterHandler),
        (rf"{API}/cluster/timeline/?", TimelineHandler),
        (rf"{API}/notebook-parameters/?", ParametersHandler),
        (rf"{API}/sweeps/?", SweepsHandler),
        (rf"{API}/sweeps/(?P<sweep_id>[a-z0-9]{{1,32}})/?", SweepHandler),
    ]
