"""The REST API's handlers: thin translations from HTTP to :class:`~nbrunner.control.api.ClusterAPI`
and back, JSON errors, no 500 for bad input.

The route classes are mixins, served by two hosts that say who the caller is: the Jupyter
server extension (:class:`JupyterRoute`, Jupyter's authentication) and ``nbrunner service``
(:mod:`.hub_service`, JupyterHub's); :func:`routes` makes the concrete handlers for a host."""
from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import redis
from jupyter_server.base.handlers import APIHandler
from tornado import web
from tornado.ioloop import IOLoop
from tornado.iostream import StreamClosedError

from ..control.api import ClusterAPI
from ..control.job_files import DOWNLOADS, copy_file, download_file, download_name, zip_dir
from ..core.config import IO_CHUNK_BYTES, JOBS_PAGE_DEFAULT, JOBS_PAGE_MAX, MAX_BODY, MAX_CONTENT_BODY
from ..core.errors import Forbidden, InvalidRequest, NbrunnerError, NoCluster
from ..core.identity import Caller, local_caller
from ..core.limits import MAX_INT64, bad_input, loads_json
from ..core.models import STATUSES
from .request_counts import flush_requests, request_tally, route_label
from .submit_batch import submit_batcher
from .token_identity import token_identity
from .model_routes import ModelServerRoute, ModelServingRoute, ModelsRoute
from .notification_routes import NotificationLogRoute, NotificationsRoute
from .pipeline_routes import PipelineRerunRoute, PipelineRoute, PipelinesRoute

API = r"/nbrunner/api"
_ENCODER = msgspec.json.Encoder()
ID = r"(?P<job_id>[a-z0-9]{1,32})"


@functools.lru_cache(maxsize=1)
def _os_user() -> str:
    import getpass

    return getpass.getuser()


class BaseHandler:
    """What every route shares (a mixin of a tornado handler of the host): errors as
    ``{"message": ...}`` with nbrunner errors mapped to their status (400/404/409/503), the JSON
    body and reply.  The cluster's operations (:class:`~nbrunner.control.api.ClusterAPI`) come from
    the application's settings (``nbrunner_api``), put there once by the host; the host's
    ``caller`` says who asks."""

    caller: Caller
    route = ""  # the route's pattern ("/jobs/{job_id}"), the label of its requests' count (set by routes())

    @property
    def api(self) -> ClusterAPI:
        return self.settings["nbrunner_api"]

    def on_finish(self) -> None:
        """Count the request (method, route pattern, status) for ``nbrunner_api_requests_total``."""
        if self.route and request_tally(self.settings).count(self.request.method, self.route, self.get_status()):
            IOLoop.current().run_in_executor(None, flush_requests, self.settings)
        super().on_finish()

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
        if isinstance(e, (redis.ConnectionError, redis.TimeoutError)):  # Redis restarting, or cut off: 503
            e = NoCluster(f"the cluster's Redis is out of reach right now ({e.__class__.__name__}): "
                          "try again in a moment")
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

    def body(self, content: bool = False, many: bool = False) -> Any:
        """The request's JSON object, at most MAX_BODY bytes; with ``content``, a body that carries a
        notebook's ``content`` may have MAX_CONTENT_BODY; with ``many``, a JSON array is taken too."""
        raw = self.request.body or b""
        limit = MAX_CONTENT_BODY if content and b'"content"' in raw else MAX_BODY
        if content and b'"inputs_content"' in raw:  # a job's inputs, sent with it (core.inputs)
            from ..core.config import MAX_INPUT_BYTES
            from ..core.errors import TooLarge
            from ..core.inputs import body_allowance

            limit += body_allowance(MAX_INPUT_BYTES.count())
            if len(raw) > limit:
                raise TooLarge(f"inputs are larger than the limit of {MAX_INPUT_BYTES.count()} bytes "
                               f"({MAX_INPUT_BYTES.name})")
        if len(raw) > limit:
            raise InvalidRequest(f"request body larger than {limit // 1024} KiB")
        data = loads_json(raw or b"{}")
        if many and isinstance(data, list):
            return data
        if not isinstance(data, dict):
            raise InvalidRequest("request body must be a JSON object")
        if len(raw) > MAX_BODY and data.get("content") is None and not (many and "jobs" in data) \
                and data.get("inputs_content") is None:
            raise InvalidRequest(f"request body larger than {MAX_BODY // 1024} KiB")
        return data

    def reply(self, obj: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(obj, default=str))

    def reply_records(self, obj: Any, status: int = 200) -> None:
        """:meth:`reply` of job records given as :meth:`~nbrunner.core.models.JobRecord.public_view`
        (the same JSON as of their ``to_dict()``, encoded by msgspec: the hot routes' answers)."""
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(_ENCODER.encode(obj))

    def relative_path(self, path: Any, what: str = "notebook") -> str:
        """Refuse absolute paths and ``..``: REST paths are relative to the server root."""
        if not isinstance(path, str) or not path.strip():
            raise InvalidRequest(f"{what} must be a path relative to the server root")
        if path.startswith(("/", "\\", "~")) or ".." in Path(path).parts or "\x00" in path:
            raise InvalidRequest(f"{what} path must stay inside the server root: {path}")
        return path

    def notebook_path(self, data: dict[str, Any]) -> str:
        """A request's ``notebook``: a file under the server root, or, when the request carries
        the notebook's ``content``, the relative path that names it (kept as given)."""
        rel = self.relative_path(data.get("notebook"))
        return rel if data.get("content") is not None else str(self.root / rel)

    async def in_thread(self, fn, *args: Any) -> Any:
        """Run ``fn(*args)`` in a thread: writes, fsyncs and file work must not stall other requests."""
        return await IOLoop.current().run_in_executor(None, fn, *args)


class JupyterRoute(APIHandler):
    """The Jupyter server extension's host: Jupyter authenticates every request."""

    @property
    def api_url(self) -> str:
        """Where the API is served: ``<base_url>nbrunner/api``."""
        return self.base_url.rstrip("/") + "/nbrunner/api"

    @property
    def identity_provider(self) -> Any:
        """Jupyter's, but when users are not told apart a request with the server's token in its
        header gets the token's user made once, with no login cookie (:mod:`.token_identity`)."""
        if self.settings.get("nbrunner_multi_user") or "identity_provider" not in self.settings:
            return super().identity_provider
        return token_identity(self.settings)

    @property
    def caller(self) -> Caller:
        """Who asks: in multi-user mode the Jupyter identity (admins: ``admin_users``), else the
        server's OS user, who sees every job (a token-only server gives every browser a random
        identity)."""
        if not self.settings.get("nbrunner_multi_user"):
            return local_caller(_os_user())
        user = self.current_user
        name = getattr(user, "username", None) or getattr(user, "name", None) or str(user or "anonymous")
        return Caller(name=name, admin=name in self.settings.get("nbrunner_admins", ()))


class JobsHandler(BaseHandler):
    @web.authenticated
    def get(self) -> None:
        """A page of jobs, newest first (``order=oldest``: oldest first), filtered by ``status``,
        ``schedule``, ``sweep``, ``owner`` and ``q`` (a part of the name, any case)."""
        status = self.get_query_argument("status", None)
        if status is not None and status not in STATUSES:
            raise InvalidRequest(f"status must be one of {', '.join(STATUSES)}")
        raw = self.get_query_argument("limit", str(JOBS_PAGE_DEFAULT))
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 6 and 1 <= int(raw) <= JOBS_PAGE_MAX):
            raise InvalidRequest(f"limit must be an integer from 1 to {JOBS_PAGE_MAX}, got {raw[:20]!r}")
        arg = self.get_query_argument
        records, after = self.api.jobs(self.caller, status, int(raw), arg("cursor", None), schedule=arg("schedule", None),
                                       sweep=arg("sweep", None), owner=arg("owner", None), name=arg("q", None),
                                       order=arg("order", "newest"), after=arg("after", None))
        if "count=exact" in self.request.headers.get("Prefer", ""):  # what `nbrunner jobs` says it lists of
            self.set_header("X-Total-Count", str(self.api.count(self.caller, status)))
        self.reply_records({"jobs": [r.public_view() for r in records], "next": after})

    @web.authenticated
    async def post(self) -> None:
        """One job request (201: the job), or a list of them, as a JSON array or ``{"jobs": [...]}``
        (201: ``{"jobs": [...]}``, all created or none)."""
        data = self.body(content=True, many=True)
        if isinstance(data, dict) and "jobs" in data and set(data) != {"jobs"}:
            raise InvalidRequest('a list of job requests comes alone: {"jobs": [...]}')
        if isinstance(data, list) or "jobs" in data:
            entries = data if isinstance(data, list) else data["jobs"]
            if not isinstance(entries, list):
                raise InvalidRequest("jobs must be a list of job requests")
            requests = [self._job_request(entry, i) for i, entry in enumerate(entries)]
            records = await self.in_thread(self.api.submit_many, self.caller, requests)
            self.reply_records({"jobs": [r.public_view() for r in records]}, 201)
            return
        # concurrent submits are stored together: one thread hop, one Redis round trip per batch
        rec = await submit_batcher(self.settings).submit(self.caller, self._job_request(data))
        self.reply_records(rec.public_view(), 201)

    def _job_request(self, data: Any, index: int | None = None) -> dict[str, Any]:
        """A request of ``POST /jobs`` with its paths taken from the server root (``index``: its place
        in a list, named by the error)."""
        try:
            if not isinstance(data, dict):
                raise InvalidRequest("a job request must be a JSON object")
            data = dict(data)
            data["notebook"] = self.relative_path(data.get("notebook"))
            root = self.root
            if data.get("content") is None and root != self.api.settings.workspace:  # relative to the server root
                data["notebook"] = str(root / data["notebook"])
            if "sweep" in data:
                raise InvalidRequest("unknown field 'sweep' (trials are created by POST /sweeps)")
            if "schedule" in data:
                raise InvalidRequest("unknown field 'schedule' (runs are created by POST /schedules)")
            for key in ("pipeline", "step"):
                if key in data:
                    raise InvalidRequest(f"unknown field {key!r} (steps are created by POST /pipelines)")
            if data.get("cwd") is not None:  # like the notebook: relative to the server root
                data["cwd"] = str(root / self.relative_path(data["cwd"], "cwd"))
        except InvalidRequest as exc:
            raise exc if index is None else InvalidRequest(f"jobs[{index}]: {exc}") from None
        return data


class JobHandler(BaseHandler):
    @web.authenticated
    def get(self, job_id: str) -> None:
        self.reply_records(self.api.job(self.caller, job_id).public_view())

    @web.authenticated
    def patch(self, job_id: str) -> None:
        self.api.job(self.caller, job_id)
        data = self.body()
        if set(data) != {"priority"}:
            raise InvalidRequest("only {\"priority\": p} can be changed")
        self.reply(self.api.set_priority(self.caller, job_id, data["priority"]).to_dict())

    @web.authenticated
    async def delete(self, job_id: str) -> None:
        """Cancel; with ``?purge=true`` remove a finished job's record and directory (204)."""
        self.api.job(self.caller, job_id)
        purge = self.get_query_argument("purge", "false").lower()
        if purge not in ("true", "false", "1", "0"):
            raise InvalidRequest(f"purge must be true or false, got {purge!r}")
        if purge in ("true", "1"):  # it may wait for the worker's release, and removes a directory
            await self.in_thread(self.api.purge, self.caller, job_id)
            self.set_status(204)
            self.finish()
            return
        rec = await self.in_thread(self.api.cancel, self.caller, job_id)  # renders the job's output.html
        self.reply(rec.to_dict())


class LogHandler(BaseHandler):
    @web.authenticated
    def get(self, job_id: str) -> None:
        raw = self.get_query_argument("offset", "0")
        try:
            offset = int(raw) if len(raw) <= 20 else -1
            if not 0 <= offset <= MAX_INT64:
                raise ValueError
        except ValueError:
            raise InvalidRequest(f"offset must be a non-negative integer, got {raw!r}") from None
        text, offset = self.api.log(self.caller, job_id, offset)
        self.reply({"text": text, "offset": offset})


class OutputHandler(BaseHandler):
    @web.authenticated
    def get(self, job_id: str) -> None:
        self.reply(self.api.output(self.caller, job_id))


class MetricsHandler(BaseHandler):
    """``GET /jobs/{id}/metrics`` -> ``{"metrics": [rows of metrics.jsonl, in order]}``."""

    @web.authenticated
    def get(self, job_id: str) -> None:
        self.reply({"metrics": self.api.metrics(self.caller, job_id)})


class DownloadHandler(BaseHandler):
    """``GET /jobs/{id}/download?format=ipynb|html|zip``: the output notebook, its HTML, or a zip
    of the job directory, as an attachment."""

    @web.authenticated
    async def get(self, job_id: str) -> None:
        rec, job_dir = self.api.job_dir(self.caller, job_id)
        fmt = self.get_query_argument("format", "ipynb")
        path = download_file(job_dir, job_id, fmt)
        self.set_header("Content-Type", DOWNLOADS[fmt][1])
        self.set_header("Content-Disposition", f'attachment; filename="{download_name(rec, fmt)}"')
        with tempfile.TemporaryFile() as tmp:
            if path is None:  # zipping a large directory must not stall other users' requests
                await self.in_thread(zip_dir, job_dir, tmp)
            else:
                await self.in_thread(copy_file, path, tmp)
            tmp.seek(0)
            while chunk := tmp.read(IO_CHUNK_BYTES):
                self.write(chunk)
                await self.flush()
        self.finish()


class RerunHandler(BaseHandler):
    """``POST /jobs/{id}/rerun`` ``{parameters?}`` -> 201 a new job from the same input snapshot."""

    @web.authenticated
    def post(self, job_id: str) -> None:
        self.api.job(self.caller, job_id)
        data = self.body()
        for key in data:
            if key != "parameters":
                raise InvalidRequest(f"unknown field {key!r}")
        self.reply(self.api.rerun(self.caller, job_id, data.get("parameters")).to_dict(), 201)


class OpenAPIHandler(BaseHandler):
    """``GET /openapi.json``: the OpenAPI 3 document of this API."""

    @web.authenticated
    def get(self) -> None:
        from .openapi import document

        self.reply(document(self.api_url))


class EventsHandler(BaseHandler):
    """``GET /events``: the push channel, server-sent events of the changes the caller may see
    (:mod:`.push`)."""

    _sub = None

    @web.authenticated
    async def get(self) -> None:
        from .push import broadcaster, last_event_id, stream

        last = last_event_id(self.request.headers.get("Last-Event-ID") or self.get_query_argument("last_event_id", None))
        api = self.api
        await self.in_thread(lambda: api.store)  # no cluster: a 503 now, before the stream starts
        hub = broadcaster(self.settings, api)
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")  # a proxy in front must not hold the stream back
        self._sub = await hub.subscribe(self.caller, last)
        await stream(self, hub, self._sub)
        try:
            self.finish()
        except StreamClosedError:
            pass

    def on_connection_close(self) -> None:
        if self._sub is not None:  # the client went: stop at once rather than at the next heartbeat
            self._sub.close()
        super().on_connection_close()


class ClusterHandler(BaseHandler):
    @web.authenticated
    def get(self) -> None:
        self.reply(self.api.status(self.caller))


class TimelineHandler(BaseHandler):
    @web.authenticated
    def get(self) -> None:
        self.reply({"jobs": self.api.timeline(self.caller)})


class AccountsHandler(BaseHandler):
    """``GET /accounts``: the accounts sharing the GPUs (empty without accounts)."""

    @web.authenticated
    def get(self) -> None:
        self.reply(self.api.accounts())


class AccountsReloadHandler(BaseHandler):
    """``POST /accounts/reload`` (admins): read the accounts file again."""

    @web.authenticated
    def post(self) -> None:
        self.reply(self.api.reload_accounts(self.caller))


class PrometheusHandler(BaseHandler):
    """``GET /metrics``: the cluster's metrics in Prometheus's text format (admins; others 403)."""

    @web.authenticated
    async def get(self) -> None:
        if not self.caller.admin:
            raise Forbidden("only an admin can read the cluster's metrics")
        await self.in_thread(flush_requests, self.settings)  # this process's requests so far
        body, content_type = await self.in_thread(self.api.prometheus_metrics, self.caller)
        self.set_header("Content-Type", content_type)
        self.write(body)
        await self.flush()  # the headers go now: Jupyter's APIHandler.finish would make them JSON's
        self.finish()


class UsageHandler(BaseHandler):
    """``GET /usage?by=account|user&since=7d``: GPU-hours per account or user per day (a user's own
    jobs; an admin's, every job's)."""

    @web.authenticated
    async def get(self) -> None:
        by, since = self.get_query_argument("by", None), self.get_query_argument("since", None)
        self.reply(await self.in_thread(self.api.usage, self.caller, by, since))


class ParametersHandler(BaseHandler):
    """Names and defaults of a notebook's ``parameters`` cell, for the submit dialog."""

    @web.authenticated
    def get(self) -> None:
        rel = self.relative_path(self.get_query_argument("path", ""), "path")
        self.reply({"parameters": self.api.notebook_parameters(str(self.root / rel), rel)})


class SweepsHandler(BaseHandler):
    """``POST /sweeps`` ``{notebook, spec}`` (spec: a mapping or YAML text) -> 201 ``{"id", "jobs", "leaderboard"}``;
    ``GET /sweeps`` -> ``{"sweeps": [...]}``."""

    @web.authenticated
    def get(self) -> None:
        self.reply({"sweeps": self.api.sweeps(self.caller)})

    @web.authenticated
    def post(self) -> None:
        from ..control.sweeps import JOB_OPTIONS

        data = self.body(content=True)
        for key in data:
            if key not in ("notebook", "spec", "content", *JOB_OPTIONS):
                raise InvalidRequest(f"unknown field {key!r}")
        notebook = self.relative_path(data.get("notebook"))
        if "spec" not in data:
            raise InvalidRequest("missing field 'spec' (a sweep spec: a mapping or YAML text)")
        spec = data["spec"]
        if not isinstance(spec, (dict, str)):
            raise InvalidRequest("spec must be a mapping or YAML text")
        root, content = self.root, data.get("content")
        options = {k: data[k] for k in JOB_OPTIONS if k in data}
        sweep = self.api.create_sweep(self.caller, notebook if content is not None else str(root / notebook), spec,
                                      base=root, allow_file=False, content=content, **options)
        self.reply(sweep, 201)


class SweepHandler(BaseHandler):
    """``GET /sweeps/{id}`` -> ``{"id", "jobs", "leaderboard"}``, 404 unknown; ``DELETE`` cancels it."""

    @web.authenticated
    def get(self, sweep_id: str) -> None:
        self.reply(self.api.sweep(self.caller, sweep_id))

    @web.authenticated
    def delete(self, sweep_id: str) -> None:
        self.reply(self.api.cancel_sweep(self.caller, sweep_id))


class SchedulesHandler(BaseHandler):
    """``POST /schedules`` -> 201 schedule; ``GET /schedules`` -> ``{"schedules": [...]}``."""

    @web.authenticated
    def get(self) -> None:
        self.reply({"schedules": [r.to_dict() for r in self.api.schedules(self.caller)]})

    @web.authenticated
    def post(self) -> None:
        data = self.body(content=True)
        if "pipeline" not in data:  # a schedule of a pipeline: its steps name their notebooks
            data["notebook"] = self.notebook_path(data)
        self.reply(self.api.create_schedule(self.caller, data, base=self.root).to_dict(), 201)


class ScheduleHandler(BaseHandler):
    """``GET``/``PATCH``/``DELETE /schedules/{id}`` (404 if unknown or not the user's)."""

    @web.authenticated
    def get(self, schedule_id: str) -> None:
        self.reply(self.api.schedule(self.caller, schedule_id).to_dict())

    @web.authenticated
    def patch(self, schedule_id: str) -> None:
        self.api.schedule(self.caller, schedule_id)
        data = self.body(content=True)
        if "notebook" in data:
            data["notebook"] = self.notebook_path(data)
        self.reply(self.api.update_schedule(self.caller, schedule_id, data).to_dict())

    @web.authenticated
    def delete(self, schedule_id: str) -> None:
        self.api.delete_schedule(self.caller, schedule_id)
        self.set_status(204)
        self.finish()


class NotificationsHandler(NotificationsRoute, BaseHandler):
    """``GET``/``PUT /me/notifications``."""


class NotificationLogHandler(NotificationLogRoute, BaseHandler):
    """``GET /me/notifications/log``."""


class ModelsHandler(ModelsRoute, BaseHandler):
    """``GET``/``POST /models``."""


class ModelServingHandler(ModelServingRoute, BaseHandler):
    """``GET``/``POST /models/serving``."""


class ModelServerHandler(ModelServerRoute, BaseHandler):
    """``GET``/``DELETE /models/serving/{name}``."""


class PipelinesHandler(PipelinesRoute, BaseHandler):
    """``POST``/``GET /pipelines``."""


class PipelineHandler(PipelineRoute, BaseHandler):
    """``GET``/``DELETE /pipelines/{id}`` (404 if unknown or not the user's)."""


class PipelineRerunHandler(PipelineRerunRoute, BaseHandler):
    """``POST /pipelines/{id}/rerun``."""


def routes(host: type = JupyterRoute, api: str = API) -> list[tuple[str, type]]:
    """The handlers of every route under ``api``, each route's mixin served by the tornado handler
    class ``host`` (the Jupyter extension's by default)."""
    return [(pattern.replace(API, api, 1), type(route.__name__, (route, host), {"route": route_label(pattern, API)}))
            for pattern, route in [
        (rf"{API}/jobs/?", JobsHandler),
        (rf"{API}/jobs/{ID}/?", JobHandler),
        (rf"{API}/jobs/{ID}/log/?", LogHandler),
        (rf"{API}/jobs/{ID}/output/?", OutputHandler),
        (rf"{API}/jobs/{ID}/metrics/?", MetricsHandler),
        (rf"{API}/jobs/{ID}/download/?", DownloadHandler),
        (rf"{API}/jobs/{ID}/rerun/?", RerunHandler),
        (rf"{API}/events/?", EventsHandler),
        (rf"{API}/cluster/?", ClusterHandler),
        (rf"{API}/cluster/timeline/?", TimelineHandler),
        (rf"{API}/accounts/?", AccountsHandler),
        (rf"{API}/accounts/reload/?", AccountsReloadHandler),
        (rf"{API}/notebook-parameters/?", ParametersHandler),
        (rf"{API}/sweeps/?", SweepsHandler),
        (rf"{API}/sweeps/(?P<sweep_id>[a-z0-9]{{1,32}})/?", SweepHandler),
        (rf"{API}/schedules/?", SchedulesHandler),
        (rf"{API}/schedules/(?P<schedule_id>[a-z0-9]{{1,32}})/?", ScheduleHandler),
        (rf"{API}/pipelines/?", PipelinesHandler),
        (rf"{API}/pipelines/(?P<pipeline_id>[a-z0-9]{{1,32}})/?", PipelineHandler),
        (rf"{API}/pipelines/(?P<pipeline_id>[a-z0-9]{{1,32}})/rerun/?", PipelineRerunHandler),
        (rf"{API}/models/?", ModelsHandler),
        (rf"{API}/models/serving/?", ModelServingHandler),
        (rf"{API}/models/serving/(?P<name>[^/]+)/?", ModelServerHandler),
        (rf"{API}/me/notifications/?", NotificationsHandler),
        (rf"{API}/me/notifications/log/?", NotificationLogHandler),
        (rf"{API}/openapi.json", OpenAPIHandler),
        (rf"{API}/metrics/?", PrometheusHandler),
        (rf"{API}/usage/?", UsageHandler),
    ]]

