"""The REST API of a JupyterHub user's server, forwarded to the nbrunner service.

With ``NBRUNNER_SERVICE_URL`` set, the extension holds no Redis connection (none is configured
in a user's server): once Jupyter has authenticated the browser, :class:`ForwardHandler` sends
each request to ``<base_url>nbrunner/api/PATH`` on to ``<NBRUNNER_SERVICE_URL>api/PATH`` with the
user's token (``Authorization: token``: ``NBRUNNER_TOKEN``, else ``JUPYTERHUB_API_TOKEN``), never
the browser's own credentials.  The method, query, body and the service's status come back as
they are; the body is streamed chunk by chunk as it arrives (downloads, a stream of events).

``POST /jobs``, ``/sweeps``, ``/schedules`` (and a ``PATCH /schedules/{id}`` that changes the
notebook) get the notebook's ``content`` (``POST /pipelines``: each step's, and a ``file`` is read
here; a job's ``inputs`` their ``inputs_content``), read from the user's file under the server's root
(paths outside it are refused, as without a service); ``notebook`` then names it relative to the
root.  ``GET /notebook-parameters`` reads the user's file, so it is answered here
(:class:`~.handlers.ParametersHandler`).  A service out of reach answers 503 with a one-line
message.  The JupyterLab extension sees the same API either way.
"""
from __future__ import annotations

import json
import logging
import re
from typing import Any

from tornado import httputil, web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ..client.remote import api_url, inputs_content
from ..control.submit import resolve_notebook
from ..core.config import FORWARD_CONNECT_TIMEOUT_S, FORWARD_REQUEST_TIMEOUT_S
from ..control.local_files import read_notebook_text
from .handlers import API, BaseHandler, JupyterRoute, ParametersHandler
from .pipeline_routes import pipeline_with_content

log = logging.getLogger("nbrunner.forward")

# what travels between the browser and the service besides the body: never the browser's cookies
# or credentials one way, nor the service's cookies the other
REQUEST_HEADERS = ("Content-Type", "Accept", "Last-Event-ID", "Prefer")
RESPONSE_HEADERS = ("Content-Type", "Content-Disposition", "Cache-Control", "X-Total-Count", "X-Accel-Buffering",
                    "Retry-After", "Location")
# the requests whose notebook travels as content (method, path under the API)
WITH_CONTENT = re.compile(r"(POST (jobs|sweeps|schedules|pipelines)|PATCH schedules/[a-z0-9]{1,32})/?")
MAX_CLIENTS = 64  # requests forwarded at once (streams of events last): more wait their turn


class BrowserGone(Exception):
    """Raised into the request to the service when the browser has closed its connection."""


class ForwardHandler(BaseHandler, JupyterRoute):
    """Every route of the API but ``notebook-parameters``, forwarded (see the module docstring)."""

    _started = False  # the service's answer began: its status and headers are sent
    _gone = False  # the browser went away: stop reading the service's answer
    _content_type = "application/json"  # the service's answer's

    @web.authenticated
    async def get(self, path: str) -> None:
        await self.forward(path)

    post = patch = put = delete = get  # each method goes on as it came

    def on_connection_close(self) -> None:
        self._gone = True
        super().on_connection_close()

    async def forward(self, path: str) -> None:
        """Send this request on to the service and its answer back, as it comes."""
        method, service = self.request.method, self.settings["nbrunner_service"]
        raw_path = self.request.path[len(self.api_url) + 1:]  # as sent, not unescaped
        body = self.request.body if method in ("POST", "PATCH", "PUT") else None
        if WITH_CONTENT.fullmatch(f"{method} {path}"):
            body = await self.in_thread(self.with_content, body)
        headers = {k: self.request.headers[k] for k in REQUEST_HEADERS if k in self.request.headers}
        if service["token"]:
            headers["Authorization"] = f"token {service['token']}"
        query = f"?{self.request.query}" if self.request.query else ""
        request = HTTPRequest(service["api"] + raw_path + query, method=method, headers=headers, body=body,
                              follow_redirects=False, decompress_response=False, allow_nonstandard_methods=True,
                              connect_timeout=FORWARD_CONNECT_TIMEOUT_S, request_timeout=FORWARD_REQUEST_TIMEOUT_S,
                              header_callback=self._header_line(), streaming_callback=self._chunk)
        try:
            await self.http_client.fetch(request, raise_error=False)
        except (OSError, HTTPClientError, httputil.HTTPInputError, BrowserGone) as exc:
            if self._gone:
                return
            if self._started:  # cut off midway: the browser must not take a part for the whole
                log.warning("nbrunner service %s: %s %s cut off (%s)", service["url"], method, path, exc)
                self.detach().close()
                return
            raise web.HTTPError(503, f"the nbrunner service at {service['url']} is out of reach "
                                     f"({getattr(exc, 'message', None) or exc.__class__.__name__})") from None
        if not self._finished:
            self.finish(set_content_type=self._content_type)

    @property
    def http_client(self) -> AsyncHTTPClient:
        """The server's client to the service (made on first use, on the server's event loop)."""
        client = self.settings.get("nbrunner_http_client")
        if client is None:
            client = self.settings["nbrunner_http_client"] = AsyncHTTPClient(
                force_instance=True, max_clients=MAX_CLIENTS, max_body_size=1 << 40)
        return client

    def with_content(self, raw: bytes | None) -> bytes | None:
        """The request body with ``content``: the text of the user's notebook that ``notebook``
        names under the server root (as without a service, a path outside it is refused)."""
        data = self.body()
        if "steps" in data or "file" in data:
            return json.dumps(pipeline_with_content(self, data)).encode("utf-8")
        if data.get("content") is not None or ("notebook" not in data and self.request.method == "PATCH"):
            return raw
        rel = self.relative_path(data.get("notebook"))
        path = resolve_notebook(self.api.settings, rel)  # symbolic links out of the root: refused
        sent = {**data, "notebook": rel, "content": read_notebook_text(path, rel)}
        if data.get("inputs") and "inputs_content" not in data:  # the job's input files go with it
            sent["inputs_content"] = inputs_content(path, data["inputs"])
        return json.dumps(sent).encode("utf-8")

    def _header_line(self):
        status: dict[str, Any] = {}
        headers = httputil.HTTPHeaders()

        def line(text: str) -> None:
            if not status:
                start = httputil.parse_response_start_line(text.strip())
                status.update(code=start.code, reason=start.reason)
            elif text.strip():
                headers.parse_line(text)
            elif not self._gone:  # the end of the headers: the answer begins
                self.set_status(status["code"], status["reason"] or None)
                self.clear_header("Content-Type")
                for name in RESPONSE_HEADERS:
                    if name in headers:
                        self.set_header(name, headers[name])
                self._content_type = headers.get("Content-Type", self._content_type)
                self._started = True
        return line

    def _chunk(self, chunk: bytes) -> None:
        if self._gone:
            raise BrowserGone()  # ends the request to the service
        self.write(chunk)
        self.flush().add_done_callback(_sent)


def _sent(future) -> None:
    future.exception()  # a browser that went away midway: nothing to do (on_connection_close stops the rest)


def forward_routes() -> list[tuple[str, type]]:
    """The routes of a server that forwards to an nbrunner service: the parameters of a notebook
    of the server, then everything else."""
    return [(rf"{API}/notebook-parameters/?", type("ParametersHandler", (ParametersHandler, JupyterRoute), {})),
            (rf"{API}/(?P<path>.*)", ForwardHandler)]


def service_settings(url: str, token: str | None) -> dict[str, Any]:
    """What :class:`ForwardHandler` reads from the server's settings (``nbrunner_service``)."""
    return {"url": url, "api": api_url(url), "token": token}
