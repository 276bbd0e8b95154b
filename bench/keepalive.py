"""A keep-alive HTTP load generator that is not the limit: ``clients`` connections kept alive, each
sending its requests back to back, all driven by one asyncio loop in its own process (raw HTTP/1.1
on asyncio streams: no HTTP library's per-request cost, no thread switching, no GIL shared with the
caller's threads).

:func:`keepalive_load` measures one route; :func:`generator_ceiling` measures the generator itself
against :func:`trivial_server` (a process that answers every request at once with a fixed 200), so a
bench can show that the rates it reports are the server's, not the generator's.
:func:`process_cpu_s` reads a process's CPU time (user + system), for the server's CPU per request.
"""
from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import time
from contextlib import contextmanager
from urllib.parse import urlsplit


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process ``pid`` has used so far (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length, chunked = 0, False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if not chunked:
        return status, await reader.readexactly(length) if length else b""
    body = b""
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        chunk = await reader.readexactly(size + 2)
        if size == 0:
            return status, body
        body += chunk[:-2]


async def _drive(host: str, port: int, request: bytes, clients: int, per: int) -> dict:
    lat: list[float] = []
    errors: list[str] = []
    conns = [await asyncio.open_connection(host, port) for _ in range(clients)]

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(per):
            t = time.perf_counter()
            writer.write(request)
            status, body = await _read_response(reader)
            lat.append(time.perf_counter() - t)
            if status >= 300:
                errors.append(f"{status} {body[:200]!r}")
        writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(client(r, w) for r, w in conns))
    elapsed = time.perf_counter() - t0
    q = statistics.quantiles(lat, n=100)
    return {"rate": len(lat) / elapsed, "p50_s": statistics.median(lat), "p99_s": q[98], "errors": errors,
            "elapsed_s": elapsed, "requests": len(lat)}


def _request_bytes(url: str, token: str | None, method: str, body: dict | list | None) -> tuple[str, int, bytes]:
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    data = json.dumps(body).encode() if body is not None else b""
    head = [f"{method} {path} HTTP/1.1", f"Host: {parts.hostname}:{parts.port}", "Connection: keep-alive",
            "Content-Type: application/json", f"Content-Length: {len(data)}"]
    if token:
        head.append(f"Authorization: token {token}")
    return parts.hostname, parts.port, ("\r\n".join(head) + "\r\n\r\n").encode() + data


def _run_in_child(conn, *args) -> None:
    try:
        conn.send(asyncio.run(_drive(*args)))
    except BaseException as exc:  # noqa: BLE001 - the parent raises it
        conn.send(exc)


def keepalive_load(url: str, token: str | None, method: str = "GET", body: dict | list | None = None,
                   clients: int = 10, per: int = 50) -> dict:
    """``clients`` kept-alive connections to ``url`` each send ``per`` requests back to back (from a
    process of their own); returns the requests per second over the run, the latencies' p50 and p99
    (s), the non-2xx answers, the time it took and the number of requests."""
    host, port, request = _request_bytes(url, token, method, body)
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_run_in_child, args=(child, host, port, request, clients, per), daemon=True)
    proc.start()
    got = parent.recv()
    proc.join()
    if isinstance(got, BaseException):
        raise got
    return got


_FIXED = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


async def _serve(sock: socket.socket) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(v) for k, _, v in (line.partition(b":") for line in head.split(b"\r\n"))
                               if k.strip().lower() == b"content-length"), 0)
                if length:
                    await reader.readexactly(length)
                writer.write(_FIXED)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(answer, sock=sock)
    await server.serve_forever()


@contextmanager
def trivial_server():
    """A process answering every HTTP request at once with ``200 {}``: yields its URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    proc = multiprocessing.get_context("fork").Process(target=lambda: asyncio.run(_serve(sock)), daemon=True)
    proc.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        proc.terminate()
        proc.join(10)
        sock.close()


def generator_ceiling(clients: int = 10, per: int = 500, body: dict | list | None = None) -> dict:
    """The generator's own rate against :func:`trivial_server` (its ceiling on this machine now)."""
    with trivial_server() as url:
        return keepalive_load(url + "/", "x" * 32, "POST", body, clients=clients, per=per)


@contextmanager
def workers_suspended(r):
    """rq's own suspension on the cluster's Redis ``r`` (what ``rq suspend`` sets): the workers take
    no new job until it ends, so submitted jobs queue and the machine's CPU is the API's alone."""
    from rq.suspension import resume, suspend

    suspend(r)
    try:
        yield
    finally:
        resume(r)
