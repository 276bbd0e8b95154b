"""A Jupyter server extension for the forwarding tests: ``GET <base_url>nbrunner/api/test-stream?flag=PATH``
answers as a stream of server-sent events does: it sends ``data: first``, then waits until the
file ``flag`` exists and sends ``data: second``.  Through a forwarder that held the body back,
``first`` would not arrive before the test makes the flag."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web


class StreamHandler(APIHandler):
    @web.authenticated
    async def get(self) -> None:
        flag = Path(self.get_query_argument("flag"))
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.write("data: first\n\n")
        await self.flush()
        deadline = time.monotonic() + 60
        while not flag.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self.write("data: second\n\n")
        self.finish(set_content_type="text/event-stream")


def _jupyter_server_extension_points():
    return [{"module": "stream_route"}]


def _load_jupyter_server_extension(serverapp) -> None:
    route = url_path_join(serverapp.base_url, "nbrunner/api/test-stream")
    serverapp.web_app.add_handlers(".*$", [(route, StreamHandler)])
