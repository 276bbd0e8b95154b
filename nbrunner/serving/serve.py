"""``nbrunner serve NAME[:VERSION]``: score a registered model over HTTP.

- ``POST /predict`` with ``{"inputs": [[...], ...]}`` answers ``{"predictions": [...]}``: the
  class index per row when the model's output is 2-D with more than one column (a
  classifier's logits or probabilities; argmax over dim 1), else the raw outputs as lists.
  ``{"inputs": ..., "raw": true}`` always returns the raw outputs.
- ``GET /health`` answers 200 ``{"status": "ok", "model": "NAME:VERSION"}``.
- Bad requests (malformed JSON, no or empty ``inputs``, non-numeric or ragged values, a shape
  the model refuses, a body over :data:`~nbrunner.core.config.MODEL_MAX_BODY` bytes) get 400 ``{"message": ...}``; the
  server keeps serving.

The standard library's ThreadingHTTPServer serves requests; the model is called under a lock
in ``torch.no_grad()``.
"""
from __future__ import annotations

import json
import math
import os
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..core.config import IO_CHUNK_BYTES, MODEL_DRAIN_BYTES, MODEL_MAX_BODY, Settings
from ..core.errors import NbrunnerError, one_line


class BadInput(Exception):
    """A request the server refuses with 400."""


def to_tensor(inputs: Any):
    """``inputs`` as a float32 tensor, or BadInput naming what is wrong."""
    import numpy as np
    import torch

    if not isinstance(inputs, list):
        raise BadInput("'inputs' must be a list of rows, e.g. {\"inputs\": [[0.1, 0.2], [0.3, 0.4]]}")
    if not inputs:
        raise BadInput("'inputs' is empty: give at least one row")
    try:
        arr = np.asarray(inputs)
    except (ValueError, TypeError):
        raise BadInput("'inputs' rows must all have the same shape") from None
    if arr.dtype.kind == "O":
        raise BadInput("'inputs' must be numbers, in rows of the same shape")
    if arr.dtype.kind not in "iuf":
        raise BadInput("'inputs' must be numbers (not strings or booleans)")
    arr = arr.astype(np.float32)
    if not np.isfinite(arr).all():
        raise BadInput("'inputs' must be finite numbers")
    return torch.from_numpy(arr)


def predictions(output: Any, raw: bool = False) -> list:
    """A model's output as JSON: class indices for 2-D multi-column outputs, else raw values."""
    import torch

    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        output = output[0]
    if isinstance(output, dict):
        output = output.get("logits", next(iter(output.values()), None))
    if not isinstance(output, torch.Tensor):
        raise BadInput(f"the model returned {type(output).__name__}, not a tensor")
    output = output.detach().cpu()
    if not raw and output.dim() == 2 and output.shape[1] > 1:
        return output.argmax(dim=1).tolist()
    return _nan_to_none(output.float().tolist())


def _nan_to_none(values: Any) -> Any:
    if isinstance(values, list):
        return [_nan_to_none(v) for v in values]
    return values if not isinstance(values, float) or math.isfinite(values) else None


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, model, label: str, quiet: bool = True):
        self.model = model
        self.label = label
        self.quiet = quiet
        self.lock = threading.Lock()
        super().__init__(address, _Handler)

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        host = self.server_address[0]
        return f"http://{host}:{self.port}"

    def predict(self, body: dict) -> dict:
        import torch

        if "inputs" not in body:
            raise BadInput("missing 'inputs': send {\"inputs\": [[...], ...]}")
        x = to_tensor(body["inputs"])
        raw = body.get("raw", False)
        if not isinstance(raw, bool):
            raise BadInput("'raw' must be true or false")
        with self.lock, torch.no_grad():
            try:
                out = self.model(x)
            except Exception as exc:  # noqa: BLE001 - wrong shape or dtype: the caller's input
                raise BadInput(f"the model cannot score these inputs (shape {list(x.shape)}): "
                               f"{exc.__class__.__name__}: {one_line(exc)}") from None
        return {"predictions": predictions(out, raw)}


class _Handler(BaseHTTPRequestHandler):
    server: ModelServer
    protocol_version = "HTTP/1.1"
    server_version = "nbrunner-serve"

    def log_message(self, fmt: str, *args: Any) -> None:
        if not self.server.quiet:
            super().log_message(fmt, *args)

    def reply(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def fail(self, status: int, message: str, close: bool = False) -> None:
        if close:
            self.close_connection = True
        self.reply(status, {"message": message})

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/health":
            self.reply(200, {"status": "ok", "model": self.server.label})
        elif path == "/predict":
            self.fail(HTTPStatus.METHOD_NOT_ALLOWED, "use POST /predict with {\"inputs\": [[...], ...]}")
        else:
            self.fail(404, f"not found: {path or '/'} (routes: POST /predict, GET /health)")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked" or length is None:
            return self.fail(400, "send the request body with a Content-Length", close=True)
        try:
            size = int(length)
            if size < 0:
                raise ValueError
        except ValueError:
            return self.fail(400, "invalid Content-Length", close=True)
        if size > MODEL_MAX_BODY:
            if size <= MODEL_DRAIN_BYTES:  # read it away so that the client sees the answer, not a reset
                left = size
                while left > 0:
                    chunk = self.rfile.read(min(left, IO_CHUNK_BYTES))
                    if not chunk:
                        break
                    left -= len(chunk)
            return self.fail(400, f"request body larger than {MODEL_MAX_BODY // 2**20} MiB", close=True)
        raw = self.rfile.read(size)
        if path != "/predict":
            return self.fail(404, f"not found: {path or '/'} (routes: POST /predict, GET /health)")
        try:
            try:
                body = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                raise BadInput("request body is not valid JSON") from None
            if not isinstance(body, dict):
                raise BadInput("request body must be a JSON object {\"inputs\": [[...], ...]}")
            result = self.server.predict(body)
        except BadInput as exc:
            return self.fail(400, str(exc))
        except Exception as exc:  # noqa: BLE001 - keep serving whatever happens
            return self.fail(500, f"{exc.__class__.__name__}: {one_line(exc)}")
        self.reply(200, result)


def make_server(name_version: str, port: int = 0, workspace: str | os.PathLike | None = None,
                host: str = "127.0.0.1", quiet: bool = True) -> ModelServer:
    """A server for registered model ``NAME[:VERSION]`` (latest version without one), bound to
    ``host:port`` (0: a free port, see ``server.port``); call ``serve_forever()``, e.g. in a thread.
    Unknown model or version: NotFound / InvalidRequest."""
    from .registry import load_registered

    settings = Settings.load(workspace)
    model, entry = load_registered(settings, name_version)
    label = f"{entry['name']}:{entry['version']}"
    try:
        return ModelServer((host, int(port)), model, label, quiet=quiet)
    except OSError as exc:
        raise NbrunnerError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def serve_in_thread(server: ModelServer) -> threading.Thread:
    t = threading.Thread(target=server.serve_forever, name=f"nbrunner-serve-{server.port}", daemon=True)
    t.start()
    return t
