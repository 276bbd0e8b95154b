"""``nbrunner metrics``: a Prometheus exporter of the cluster, for a Prometheus on the host to scrape.

It serves ``/metrics`` (``prometheus_client``'s HTTP server) with the cluster's collector
(:class:`~nbrunner.control.cluster_metrics.ClusterCollector`): every scrape reads Redis, so the
exporter holds no state and may be restarted or run beside ``GET /metrics`` of a server.  It
attaches to the cluster on the first scrape that finds it (``nbrunner_up`` is 0 until then).
"""
from __future__ import annotations

import logging
import signal
import threading
from typing import TYPE_CHECKING

from ..control.cluster_metrics import registry_of
from ..core.errors import NbrunnerError
from ..control.store import reachable

if TYPE_CHECKING:
    from ..core.config import Settings
    from ..control.store import JobStore

log = logging.getLogger("nbrunner.metrics")


class ClusterStore:
    """The cluster's store, connected on first use (and retried at each use until it answers)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._store: JobStore | None = None

    def __call__(self) -> JobStore:
        if self._store is None:
            self._store = reachable(self.settings)
        return self._store


def serve(settings: Settings, port: int, address: str = "127.0.0.1",
          ready: threading.Event | None = None) -> None:
    """Serve the cluster's metrics at ``http://address:port/metrics`` until SIGTERM or SIGINT."""
    from prometheus_client import start_http_server

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        server, thread = start_http_server(port, address, registry=registry_of(ClusterStore(settings)))
    except OSError as exc:
        raise NbrunnerError(f"cannot listen on {address}:{port}: {exc.strerror or exc}") from None
    print(f"nbrunner: serving the metrics of the cluster of {settings.workspace} at "
          f"http://{address}:{server.server_port}/metrics", flush=True)
    if ready is not None:
        ready.set()
    stop.wait()
    server.shutdown()
    thread.join(5)
