"""The REST API's requests counted for ``nbrunner_api_requests_total{method,route,code}``.

Each handler counts its request when it finishes (:meth:`~.handlers.BaseHandler.on_finish`),
labelled by its route's pattern (:func:`route_label`, never the raw path: job ids would make a
series each), in the application's :class:`~nbrunner.control.counters.RequestTally`, which is
added to the cluster's counters in Redis at most once a second and before each ``GET /metrics``.
"""
from __future__ import annotations

import logging
import re
from typing import Any

from ..control.counters import RequestTally

log = logging.getLogger("nbrunner.server")


def request_tally(settings: dict[str, Any]) -> RequestTally:
    """The API requests this server process counted, not yet in Redis (one per application)."""
    tally = settings.get("nbrunner_request_tally")
    if tally is None:
        tally = settings.setdefault("nbrunner_request_tally", RequestTally())
    return tally


def flush_requests(settings: dict[str, Any]) -> None:
    """Add the counted requests to the cluster's counters (kept for later if it cannot be reached)."""
    try:
        request_tally(settings).flush(settings["nbrunner_api"].store.r)
    except Exception as exc:  # noqa: BLE001 - no cluster yet, Redis restarting: counted at the next flush
        log.debug("requests not counted yet: %s", exc)


def route_label(pattern: str, prefix: str) -> str:
    """A route's pattern under ``prefix`` as the requests counter labels it: ``/jobs/{job_id}/log``
    for ``<prefix>/jobs/(?P<job_id>[a-z0-9]{1,32})/log/?``."""
    label = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern.removeprefix(prefix))
    return label.removesuffix("/?") or "/"
