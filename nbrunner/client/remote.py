"""The backend of a cluster reached through an nbrunner service: :class:`RemoteBackend`.

With ``NBRUNNER_SERVICE_URL`` set (``nbrunner service`` behind a JupyterHub, or a Jupyter server
running the nbrunner extension), :func:`nbrunner.connect`, the widgets and the CLI hold no Redis
connection: each operation of :class:`~.local.LocalBackend` is one request to the REST API under
``<NBRUNNER_SERVICE_URL>api/`` with ``Authorization: token <NBRUNNER_TOKEN or
JUPYTERHUB_API_TOKEN>`` (:class:`ServiceClient`, over :mod:`http.client`: a few milliseconds to
import, one kept-alive connection, so the CLI's read commands stay fast).  A notebook travels as
``content``, read here from the caller's file; ``notebook`` names it relative to the caller's
home directory (the job's working directory there), else by its file name.  What the service
refuses raises the error the local backend would (its one-line message); a service out of reach
raises NoCluster.
"""
from __future__ import annotations

import getpass
import http.client
import json
import os
import queue
import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence
from urllib.parse import quote, urlencode, urlsplit

from ..core.config import HUB_USER_NAME, IO_CHUNK_BYTES, JOBS_PAGE_MAX, SERVICE_TIMEOUT_S, SERVICE_URL
from ..core.errors import InvalidRequest, NbrunnerError, NoCluster, NotFound, from_status, one_line
from ..core.models import JobRecord
from ..control.local_files import notebook_file, read_notebook_text
from .sweep import SweepState

if TYPE_CHECKING:
    from ..core.schedules import ScheduleRecord

ID = re.compile(r"[a-z0-9]{1,32}")


def api_url(service_url: str) -> str:
    """The root of the REST API of the nbrunner service at ``service_url`` (its ``api/``);
    InvalidRequest unless it is an http(s) URL."""
    parts = urlsplit(service_url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise InvalidRequest(f"{SERVICE_URL.name} must be an http:// or https:// URL, got {service_url!r}")
    return service_url.rstrip("/") + "/api/"


class ServiceClient:
    """JSON requests to one nbrunner service's REST API (see the module docstring)."""

    def __init__(self, url: str, token: str | None, timeout: float = SERVICE_TIMEOUT_S):
        parts = urlsplit(api_url(url))
        self.url = url if url.endswith("/") else url + "/"
        self.token = token
        self.timeout = timeout
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self._prefix = parts.path
        self._local = threading.local()  # a connection per thread (a monitor widget polls from its own)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def open(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None,
             headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
        """Send one request; the response, whatever its status (read it before the next request)."""
        query = {k: v for k, v in (query or {}).items() if v is not None}
        target = self._prefix + path + (f"?{urlencode(query)}" if query else "")
        sent = {"Accept": "application/json", **(headers or {})}
        if self.token:
            sent["Authorization"] = f"token {self.token}"
        data = None
        if body is not None:
            try:
                data = json.dumps(body, allow_nan=False).encode("utf-8")
            except (TypeError, ValueError) as exc:
                raise InvalidRequest(f"the request holds a value JSON cannot carry ({one_line(exc, 120)})") from None
            sent["Content-Type"] = "application/json"
        while True:
            reused = getattr(self._local, "used", False)
            try:
                conn = self._connection()
                conn.request(method, target, body=data, headers=sent)
                response = conn.getresponse()
                self._local.used = True
                return response
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                self.close()
                if not reused:  # else: a kept-alive connection the service had closed; once more on a new one
                    raise self.unreachable(exc) from None
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                raise self.unreachable(exc) from None

    def call(self, method: str, path: str, body: Any = None, **query: Any) -> Any:
        """One request; its JSON answer (None for an empty one), or the error it stands for."""
        response = self.open(method, path, body, query)
        raw = response.read()
        if response.status >= 300:
            raise self.error(response, raw)
        return json.loads(raw) if raw else None

    def error(self, response: http.client.HTTPResponse, raw: bytes) -> NbrunnerError:
        """The error an answer with a failing status stands for, with the service's one-line message."""
        status = response.status
        try:
            message = json.loads(raw)["message"]
        except (ValueError, TypeError, KeyError):
            message = None
        if status in (502, 504) or (message is None and status == 503):  # the hub's proxy: no service behind it
            return NoCluster(f"the nbrunner service at {self.url} is out of reach ({status} {response.reason})")
        if not isinstance(message, str):
            return NbrunnerError(f"the nbrunner service at {self.url} answered {status} {response.reason} "
                                 f"(is {SERVICE_URL.name} right?)")
        if status in (401, 403):
            return NbrunnerError(f"the nbrunner service refused the request ({status}): {one_line(message)}")
        return from_status(status, one_line(message))

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = self._local.conn = kind(self._host, self._port, timeout=self.timeout)
            self._local.used = False
        return conn

    def unreachable(self, exc: BaseException) -> NoCluster:
        """The error of a request that got no answer."""
        return NoCluster(f"cannot reach the nbrunner service at {self.url} ({exc.__class__.__name__}): is it running? "
                         f"({SERVICE_URL.name})")


def notebook_content(notebook: str | os.PathLike) -> tuple[str, str]:
    """The name and text of the caller's notebook file, checked as a submit checks it (one-line
    errors): the name is its path relative to the home directory, else its file name."""
    real = notebook_file(Path(notebook).expanduser(), str(notebook))
    text = read_notebook_text(real, str(notebook))
    home = Path.home().resolve()
    return (str(real.relative_to(home)) if home in real.parents else real.name), text


def inputs_content(notebook: str | os.PathLike, inputs: Any) -> dict[str, Any]:
    """The ``inputs_content`` of a request: the caller's input files beside ``notebook``, read and
    encoded (:mod:`nbrunner.core.inputs`; one-line errors, TooLarge past ``NBRUNNER_MAX_INPUT_BYTES``)."""
    from ..core.config import MAX_INPUT_BYTES
    from ..control.local_files import collect_inputs
    from ..core.inputs import check_paths, encode

    try:
        paths = check_paths(inputs)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    real = notebook_file(Path(notebook).expanduser(), str(notebook))
    return encode(collect_inputs(real.parent, paths, MAX_INPUT_BYTES.count()))


def _id(value: str, what: str) -> str:
    """An id as a URL path segment; one the service could not have made is NotFound here."""
    if not isinstance(value, str) or not ID.fullmatch(value):
        raise NotFound(f"no {what} {value!r}")
    return quote(value)


class RemoteBackend:
    """A cluster's operations over an nbrunner service's REST API: :class:`~.backend.Backend`, as
    :class:`~.local.LocalBackend` (see the module docstring)."""

    def __init__(self, url: str, token: str | None):
        self.client = ServiceClient(url, token)
        self.user = os.environ.get(HUB_USER_NAME) or getpass.getuser()

    @property
    def where(self) -> str:
        return self.client.url

    @property
    def settings(self):
        raise NbrunnerError(f"a cluster reached through {SERVICE_URL.name} has no local settings, job directories "
                            "or Redis: its service holds them")

    store = settings

    def _call(self, method: str, path: str, body: Any = None, **query: Any) -> Any:
        return self.client.call(method, path, body, **query)

    # ---- jobs -----------------------------------------------------------------------------------
    def job(self, job_id: str) -> JobRecord:
        return JobRecord.from_dict(self._call("GET", f"jobs/{_id(job_id, 'job')}"))

    def jobs(self, status: str | None = None, limit: int | None = None, cursor: str | None = None, *,
             schedule: str | None = None, sweep: str | None = None,
             owner: str | None = None) -> tuple[list[JobRecord], str | None]:
        """A page of jobs, newest first (``limit`` None: all), and the cursor of the next page;
        ``owner`` filters the service's pages here."""
        def keep(r: JobRecord) -> bool:
            return (owner is None or r.owner == owner) and (status is None or r.status == status)

        out: list[JobRecord] = []
        size = JOBS_PAGE_MAX if limit is None else min(limit, JOBS_PAGE_MAX)
        while True:
            page = self._call("GET", "jobs", status=status, schedule=schedule, sweep=sweep, limit=size, cursor=cursor)
            out += [r for r in map(JobRecord.from_dict, page["jobs"]) if keep(r)]
            cursor = page["next"]
            if limit is not None or cursor is None:
                return out, cursor

    def job_changes(self) -> "ServiceJobChanges":
        """The job changes from now on (``nbrunner jobs --watch``), from the service's push channel."""
        return ServiceJobChanges(self.client)

    def count(self, status: str | None = None) -> int:
        """How many jobs the caller sees (in ``status``): the service counts (``Prefer: count=exact``)."""
        response = self.client.open("GET", "jobs", query={"status": status, "limit": 1},
                                    headers={"Prefer": "count=exact"})
        raw = response.read()
        if response.status >= 300:
            raise self.client.error(response, raw)
        total = response.getheader("X-Total-Count")
        return int(total) if total and total.isdigit() else len(self.jobs(status)[0])

    def submit(self, request: dict[str, Any], owner: str | None = None, groups: Sequence[str] = ()) -> JobRecord:
        _no_owner(owner, groups)
        name, text = notebook_content(request["notebook"])
        body = {**request, "notebook": name, "content": text}
        if request.get("inputs"):  # their bytes travel with the notebook
            body["inputs_content"] = inputs_content(request["notebook"], request["inputs"])
        return JobRecord.from_dict(self._call("POST", "jobs", body))

    def submit_many(self, requests: list[dict[str, Any]], owner: str | None = None,
                    groups: Sequence[str] = ()) -> list[JobRecord]:
        """One ``POST /jobs`` of every request (each notebook read once, sent as content)."""
        _no_owner(owner, groups)
        contents: dict[str, tuple[str, str]] = {}
        body = []
        for i, request in enumerate(requests):
            key = str(request["notebook"])
            if key not in contents:
                try:
                    contents[key] = notebook_content(request["notebook"])
                except NbrunnerError as exc:
                    raise type(exc)(f"jobs[{i}]: {exc}") from None
            name, text = contents[key]
            body.append({**request, "notebook": name, "content": text})
        return [JobRecord.from_dict(r) for r in self._call("POST", "jobs", {"jobs": body})["jobs"]]

    def cancel(self, job_id: str) -> JobRecord:
        return JobRecord.from_dict(self._call("DELETE", f"jobs/{_id(job_id, 'job')}"))

    def set_priority(self, job_id: str, priority: int) -> JobRecord:
        return JobRecord.from_dict(self._call("PATCH", f"jobs/{_id(job_id, 'job')}", {"priority": priority}))

    def rerun(self, job_id: str, parameters: dict[str, Any] | None = None) -> JobRecord:
        body = {} if parameters is None else {"parameters": parameters}
        return JobRecord.from_dict(self._call("POST", f"jobs/{_id(job_id, 'job')}/rerun", body))

    def purge(self, job_id: str) -> None:
        self._call("DELETE", f"jobs/{_id(job_id, 'job')}", purge="true")

    def job_dir(self, job_id: str) -> Path:
        raise NbrunnerError(f"job {job_id}'s directory is on the nbrunner service's side: read it with job.logs(), "
                            "job.output_notebook(), job.metrics() or `nbrunner download`")

    def log(self, job_id: str, offset: int = 0) -> tuple[str, int]:
        chunk = self._call("GET", f"jobs/{_id(job_id, 'job')}/log", offset=offset)
        return chunk["text"], chunk["offset"]

    def output_text(self, job_id: str) -> str:
        response = self.client.open("GET", f"jobs/{_id(job_id, 'job')}/output")
        raw = response.read()
        if response.status >= 300:
            raise self.client.error(response, raw)
        return raw.decode("utf-8")

    def metrics(self, job_id: str) -> list[dict[str, Any]]:
        return self._call("GET", f"jobs/{_id(job_id, 'job')}/metrics")["metrics"]

    def download(self, job_id: str, fmt: str, out) -> None:
        """Write the download of format ``fmt`` to the binary file ``out``, as it arrives."""
        response = self.client.open("GET", f"jobs/{_id(job_id, 'job')}/download", query={"format": fmt})
        if response.status >= 300:
            raise self.client.error(response, response.read())
        while True:
            try:
                chunk = response.read(IO_CHUNK_BYTES)
            except (OSError, http.client.HTTPException) as exc:  # cut off midway
                self.client.close()
                raise self.client.unreachable(exc) from None
            if not chunk:
                return
            try:
                out.write(chunk)
            except BaseException:  # the rest of the answer stays unread: this connection is done
                self.client.close()
                raise

    def timeline(self, job_id: str) -> list[dict]:
        """GPUs held over time (``[]`` for a job not among the newest the service charts)."""
        jobs = self._call("GET", "cluster/timeline")["jobs"]
        return next((j["points"] for j in jobs if j["id"] == job_id), [])

    # ---- the cluster ----------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        return self._call("GET", "cluster")

    def accounts(self) -> dict[str, Any]:
        return self._call("GET", "accounts")

    def reload_accounts(self) -> dict[str, Any]:
        return self._call("POST", "accounts/reload", {})

    def usage(self, by: str | None = None, since: str | None = None) -> dict[str, Any]:
        """GPU-hours per account or user per day (``GET /usage``): the caller's own jobs, or an admin's all."""
        return self._call("GET", "usage", by=by, since=since)

    def wait_ready(self, workers: int, timeout: float) -> None:
        """Block until the service's cluster has ``workers`` workers."""
        deadline = time.monotonic() + timeout
        while self.status().get("workers", 0) < workers:
            if time.monotonic() > deadline:
                raise TimeoutError(f"fewer than {workers} workers after {timeout} s")
            time.sleep(0.2)

    # ---- sweeps ---------------------------------------------------------------------------------
    def create_sweep(self, notebook: str | os.PathLike, spec: Any, owner: str | None = None,
                     **options: Any) -> SweepState:
        from ..control.local_files import spec_source
        from ..core.sweeps.spec import read_spec

        _no_owner(owner)
        name, text = notebook_content(notebook)
        body = {"notebook": name, "content": text, "spec": read_spec(*spec_source(spec)),
                **{k: v for k, v in options.items() if v is not None}}
        return SweepState.from_dict(self._call("POST", "sweeps", body))

    def sweep(self, sweep_id: str) -> SweepState:
        return SweepState.from_dict(self._call("GET", f"sweeps/{_id(sweep_id, 'sweep')}"))

    def sweeps(self) -> list[SweepState]:
        return [SweepState.from_dict(s) for s in self._call("GET", "sweeps")["sweeps"]]

    def cancel_sweep(self, sweep_id: str) -> SweepState:
        return SweepState.from_dict(self._call("DELETE", f"sweeps/{_id(sweep_id, 'sweep')}"))

    # ---- pipelines ------------------------------------------------------------------------------
    def create_pipeline(self, source: Any, base: Path, parameters: dict[str, Any] | None = None,
                        default_name: str = "pipeline") -> dict[str, Any]:
        """The pipeline file as JSON, each step's notebook (relative to ``base``) sent as content."""
        from ..core.pipelines.spec import read_pipeline

        data = dict(read_pipeline(source))
        data.setdefault("name", default_name)
        steps = data.get("steps")
        if isinstance(steps, dict):
            data["steps"] = {name: _with_content(step, base) for name, step in steps.items()}
        if parameters:
            data["parameters"] = parameters
        return self._call("POST", "pipelines", data)

    def pipeline(self, pipeline_id: str) -> dict[str, Any]:
        return self._call("GET", f"pipelines/{_id(pipeline_id, 'pipeline')}")

    def pipelines(self) -> list[dict[str, Any]]:
        return self._call("GET", "pipelines")["pipelines"]

    def cancel_pipeline(self, pipeline_id: str) -> dict[str, Any]:
        return self._call("DELETE", f"pipelines/{_id(pipeline_id, 'pipeline')}")

    def rerun_pipeline(self, pipeline_id: str, from_step: str | None = None) -> dict[str, Any]:
        body = {} if from_step is None else {"from": from_step}
        return self._call("POST", f"pipelines/{_id(pipeline_id, 'pipeline')}/rerun", body)

    # ---- schedules ------------------------------------------------------------------------------
    def create_schedule(self, request: dict[str, Any], owner: str | None = None) -> ScheduleRecord:
        _no_owner(owner)
        if "pipeline" in request:  # each step's notebook goes as content
            steps = request["pipeline"].get("steps") or {}
            pipeline = {**request["pipeline"], "steps": {k: _with_content(v, Path.cwd()) for k, v in steps.items()}}
            return _schedule(self._call("POST", "schedules", {**request, "pipeline": pipeline}))
        name, text = notebook_content(request["notebook"])
        return _schedule(self._call("POST", "schedules", {**request, "notebook": name, "content": text}))

    def schedule(self, schedule_id: str) -> ScheduleRecord:
        return _schedule(self._call("GET", f"schedules/{_id(schedule_id, 'schedule')}"))

    def schedules(self) -> list[ScheduleRecord]:
        return [_schedule(s) for s in self._call("GET", "schedules")["schedules"]]

    def update_schedule(self, schedule_id: str, changes: dict[str, Any]) -> ScheduleRecord:
        if changes.get("notebook") is not None:
            name, text = notebook_content(changes["notebook"])
            changes = {**changes, "notebook": name, "content": text}
        return _schedule(self._call("PATCH", f"schedules/{_id(schedule_id, 'schedule')}", changes))

    def delete_schedule(self, schedule_id: str) -> None:
        self._call("DELETE", f"schedules/{_id(schedule_id, 'schedule')}")

    # ---- notifications --------------------------------------------------------------------------
    def notifications(self) -> dict[str, Any]:
        return self._call("GET", "me/notifications")

    def set_notifications(self, settings: dict[str, Any]) -> dict[str, Any]:
        return self._call("PUT", "me/notifications", settings)

    def notification_log(self) -> list[dict[str, Any]]:
        return self._call("GET", "me/notifications/log")["log"]

    # ---- models ---------------------------------------------------------------------------------
    def register_model(self, job_id: str, name: str) -> dict[str, Any]:
        from ..serving.registry import public

        return public(self._call("POST", "models", {"job": job_id, "name": name}))

    def models(self) -> list[dict[str, Any]]:
        from ..serving.registry import public

        return [public(m) for m in self._call("GET", "models")["models"]]


class ServiceJobChanges:
    """The job changes the caller may see, from the service's push channel (``GET /events``, read
    by a thread; a dropped connection is opened again with ``Last-Event-ID``, so nothing is
    missed or repeated).  Ready once the service has taken the subscription."""

    def __init__(self, client: ServiceClient):
        self.client = ServiceClient(client.url, client.token, timeout=SERVICE_TIMEOUT_S)  # its own connection
        self.changes: queue.Queue[dict[str, Any] | BaseException] = queue.Queue()
        self.last_id: str | None = None
        self.closed = False
        self.ready = threading.Event()
        threading.Thread(target=self._run, name="nbrunner-events", daemon=True).start()
        if not self.ready.wait(SERVICE_TIMEOUT_S):
            raise NoCluster(f"the nbrunner service at {client.url} did not open its push channel")
        if not self.changes.empty() and isinstance(self.changes.queue[0], BaseException):
            raise self.changes.get()

    def read(self, block_s: float) -> list[dict[str, Any]]:
        """The next changes, waiting up to ``block_s`` seconds for one ([] if none came)."""
        out: list[dict[str, Any]] = []
        try:
            item = self.changes.get(timeout=block_s) if block_s else self.changes.get_nowait()
            while True:
                if isinstance(item, BaseException):
                    raise item
                out.append(item)
                item = self.changes.get_nowait()
        except queue.Empty:
            return out

    def close(self) -> None:
        self.closed = True
        self.client.close()

    def _run(self) -> None:
        while not self.closed:
            try:
                headers = {"Accept": "text/event-stream", **({"Last-Event-ID": self.last_id} if self.last_id else {})}
                response = self.client.open("GET", "events", headers=headers)
                if response.status >= 300:
                    raise self.client.error(response, response.read())
                self._messages(response)
            except NoCluster as exc:  # out of reach: once open, it is tried again
                if not self.ready.is_set():
                    self._fail(exc)
                    return
            except NbrunnerError as exc:  # refused (a token revoked meanwhile, say): the reader says why
                self._fail(exc)
                return
            except (OSError, http.client.HTTPException):
                pass
            self.client.close()
            time.sleep(0.5)  # then resume where the stream broke off

    def _fail(self, exc: NbrunnerError) -> None:
        self.changes.put(exc)
        self.ready.set()

    def _messages(self, response: http.client.HTTPResponse) -> None:
        event, data, event_id = "message", [], None
        for raw in response:
            line = raw.decode("utf-8").rstrip("\r\n")
            if line:
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "event":
                    event = value
                elif field == "data":
                    data.append(value)
                elif field == "id":
                    event_id = value
                continue
            if event_id is not None:
                self.last_id = event_id
            if event == "ready":
                self.ready.set()
            elif event == "job" and data:
                self.changes.put(json.loads("\n".join(data)))
            elif event == "reload":
                self.changes.put({"reload": True})
            event, data, event_id = "message", [], None


def _with_content(step: Any, base: Path) -> Any:
    """A pipeline step with its notebook (relative to ``base``) read and sent as ``content``."""
    if not isinstance(step, dict):
        return step
    sweep = step.get("sweep")
    holder = dict(sweep) if isinstance(sweep, dict) else dict(step)
    notebook = holder.get("notebook")
    if not isinstance(notebook, str) or not notebook.strip():
        return step
    path = Path(notebook).expanduser()
    name, text = notebook_content(path if path.is_absolute() else base / path)
    holder["notebook"] = name
    return {**step, "sweep": holder, "content": text} if isinstance(sweep, dict) else {**holder, "content": text}


def _no_owner(owner: str | None, groups: Sequence[str] = ()) -> None:
    if owner is not None or groups:
        raise InvalidRequest("owner and groups cannot be given: the nbrunner service takes them from your token")


def _schedule(data: dict[str, Any]) -> ScheduleRecord:
    from ..core.schedules import ScheduleRecord

    return ScheduleRecord.model_validate(data)
