"""Concurrent ``POST /jobs`` of one server process, submitted together (group commit).

A submit's own work is small (its checks come from caches, two small files); what it used to pay
for was the hop to a thread and a Redis round trip with its fsync, once per request.  Requests
that arrive while a batch is being submitted wait for the next batch, which goes to a thread as one
:func:`~nbrunner.control.submit.submit_each` call: one hop, one Redis script storing every
record.  Each request still gets its own record or its own error; a bad request never refuses
another.  At most ``IN_FLIGHT`` batches run at once, so one slow request (a large notebook sent as
content) does not hold every other submit back.
"""
from __future__ import annotations

import asyncio
from typing import Any

from ..control.api import ClusterAPI
from ..control.submit import submit_each
from ..core.identity import Caller
from ..core.models import JobRecord

IN_FLIGHT = 2
MAX_BATCH = 100


class SubmitBatcher:
    """The batches of one application (one per ``ClusterAPI``, made by :func:`submit_batcher`)."""

    def __init__(self, api: ClusterAPI):
        self.api = api
        self.pending: list[tuple[Caller, Any, asyncio.Future]] = []
        self.running = 0

    async def submit(self, caller: Caller, request: Any) -> JobRecord:
        """Queue ``request`` as ``caller``'s job; its record, or its error raised here."""
        future = asyncio.get_running_loop().create_future()
        self.pending.append((caller, request, future))
        if self.running < IN_FLIGHT:
            self.running += 1
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self.pending:
                batch, self.pending = self.pending[:MAX_BATCH], self.pending[MAX_BATCH:]
                try:
                    asks = [(request, caller.name, caller.groups) for caller, request, _ in batch]
                    results = await loop.run_in_executor(None, submit_each, self.api.store, self.api.settings, asks)
                except Exception as exc:  # noqa: BLE001 - nothing was stored: each request gets the error
                    results = [exc] * len(batch)
                for (_, _, future), result in zip(batch, results):
                    if future.done():  # the request went away; its job (if any) stays, as a submit's would
                        continue
                    if isinstance(result, BaseException):
                        future.set_exception(result)
                    else:
                        future.set_result(result)
        finally:
            self.running -= 1


def submit_batcher(settings: dict[str, Any]) -> SubmitBatcher:
    """The application's batcher (made on first use)."""
    batcher = settings.get("nbrunner_submit_batcher")
    if batcher is None:
        batcher = settings.setdefault("nbrunner_submit_batcher", SubmitBatcher(settings["nbrunner_api"]))
    return batcher
