"""A TCP proxy between the browser and the Jupyter server, whose connections a test can cut at
once, as a network failure would (the push channel's stream among them)."""
from __future__ import annotations

import socket
import threading


class CuttingProxy:
    """Forwards ``127.0.0.1:<port>`` to ``127.0.0.1:<target>``; :meth:`cut` drops every open
    connection (new ones are forwarded again)."""

    def __init__(self, target: int):
        self.target = target
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._pairs: set[tuple[socket.socket, socket.socket]] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="cutting-proxy", daemon=True).start()

    def cut(self) -> int:
        """Drop every open connection; how many there were."""
        with self._lock:
            pairs, self._pairs = self._pairs, set()
        for pair in pairs:
            _drop(pair)
        return len(pairs)

    def close(self) -> None:
        self._closed = True
        self._server.close()
        self.cut()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            pair = (client, upstream)
            with self._lock:
                self._pairs.add(pair)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b, pair), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, pair) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._pairs.discard(pair)
            _drop(pair)


def _drop(pair: tuple[socket.socket, socket.socket]) -> None:
    for s in pair:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()
