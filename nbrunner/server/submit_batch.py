"""Concurrent ``POST /jobs`` of one server process, submitted together (group commit).

A submit's own work is small (its checks come from caches, two small files); what it costs beyond
that is a thread hop and the Redis write that stores its record (a round trip, and the fsync of
``appendfsync always``: an accepted job survives a crash). So submits go in two stages, each in a
thread: requests are *staged* (checked, their job directories written:
:func:`~nbrunner.control.submit.stage_each`) in batches, at most ``STAGING`` batches at once, so
one slow request (a large notebook sent as content) does not hold every other submit back; staged
records are *stored* by one committer, every record staged while the previous write was in flight
in one script (:func:`~nbrunner.control.submit.store_staged`). Each request still gets its own
record or its own error; a bad request never refuses another.
"""
from __future__ import annotations

import asyncio
from typing import Any

from ..control.api import ClusterAPI
from ..control.submit import stage_each, store_staged
from ..core.identity import Caller
from ..core.models import JobRecord

STAGING = 2
MAX_BATCH = 100


class SubmitBatcher:
    """The batches of one application (one per ``ClusterAPI``, made by :func:`submit_batcher`)."""

    def __init__(self, api: ClusterAPI):
        self.api = api
        self.pending: list[tuple[Caller, Any, asyncio.Future]] = []
        self.staged: list[tuple[JobRecord | Exception, asyncio.Future]] = []
        self.staging = 0
        self.storing = False

    async def submit(self, caller: Caller, request: Any) -> JobRecord:
        """Queue ``request`` as ``caller``'s job; its record, or its error raised here."""
        future = asyncio.get_running_loop().create_future()
        self.pending.append((caller, request, future))
        if self.staging < STAGING:
            self.staging += 1
            asyncio.get_running_loop().create_task(self._stage())
        return await future

    async def _stage(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self.pending:
                batch, self.pending = self.pending[:MAX_BATCH], self.pending[MAX_BATCH:]
                try:
                    asks = [(request, caller.name, caller.groups) for caller, request, _ in batch]
                    results = await loop.run_in_executor(None, stage_each, self.api.settings, asks)
                except Exception as exc:  # noqa: BLE001 - nothing was staged: each request gets the error
                    results = [exc] * len(batch)
                self.staged += [(result, future) for (_, _, future), result in zip(batch, results)]
                if not self.storing:
                    self.storing = True
                    loop.create_task(self._store())
        finally:
            self.staging -= 1

    async def _store(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self.staged:
                batch, self.staged = self.staged, []
                try:
                    results = await loop.run_in_executor(None, store_staged, self.api.store, self.api.settings,
                                                         [result for result, _ in batch])
                except Exception as exc:  # noqa: BLE001 - store_staged answers for its records; this is a bug's
                    results = [exc] * len(batch)
                for (_, future), result in zip(batch, results):
                    if future.done():  # the request went away; its job (if any) stays, as a submit's would
                        continue
                    if isinstance(result, BaseException):
                        future.set_exception(result)
                    else:
                        future.set_result(result)
        finally:
            self.storing = False


def submit_batcher(settings: dict[str, Any]) -> SubmitBatcher:
    """The application's batcher (made on first use)."""
    batcher = settings.get("nbrunner_submit_batcher")
    if batcher is None:
        batcher = settings.setdefault("nbrunner_submit_batcher", SubmitBatcher(settings["nbrunner_api"]))
    return batcher
