"""A kernel client that knows its kernel is ready as soon as the kernel has answered.

jupyter_client's ``wait_for_ready`` (which nbclient, so papermill, calls before the first cell)
sends ``kernel_info``, and once the reply is in, reads IOPub until it has been quiet for 0.2 s:
every job waited that long with nothing to do.  :class:`ReadyClient` asks the same question and
stops as soon as the IOPub messages of its own request are in (the kernel's ``idle`` status for
it): IOPub is then connected and drained of that request, which is all the flush was for.  When
IOPub brings nothing for the request within ``IOPUB_CHECK_S`` (it was not connected yet, as
jupyter_client also allows for), ``kernel_info`` is asked again; a kernel that greets each new
IOPub subscriber (ipykernel's ``iopub_welcome``) is asked again as soon as it has greeted.
"""
from __future__ import annotations

import time
from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import ensure_async
from traitlets import DottedObjectName, Type

IOPUB_CHECK_S = 0.2  # how long IOPub may take to show a request's status once its reply came
REPLY_WAIT_S = 1.0
WELCOME_GRACE_S = 0.02  # after IOPub's welcome, how long the request's status may still take  # how long one kernel_info request is waited for before it is sent again


class ReadyClient(AsyncKernelClient):
    """An async kernel client whose ``wait_for_ready`` ends when the kernel has answered (see the
    module docstring)."""

    async def _async_wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            msg_id = self.kernel_info()
            reply = await self._reply(msg_id, min(REPLY_WAIT_S, max(0.0, deadline - time.monotonic())))
            if reply is not None and await self._iopub_idle(msg_id, IOPUB_CHECK_S):
                self._handle_kernel_info_reply(reply)
                return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")

    wait_for_ready = _async_wait_for_ready  # the base class binds its own function to the name

    async def _reply(self, msg_id: str, wait: float) -> dict | None:
        """The shell reply to ``msg_id`` (other replies are dropped), or None after ``wait`` s."""
        end = time.monotonic() + wait
        while True:
            try:
                msg = await ensure_async(self.shell_channel.get_msg(timeout=max(0.0, end - time.monotonic())))
            except Empty:
                return None
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return msg

    async def _iopub_idle(self, msg_id: str, wait: float) -> bool:
        """True once IOPub brought the kernel's ``idle`` status for ``msg_id``; False if it brought
        nothing of that request within ``wait`` seconds (IOPub not connected yet)."""
        end = time.monotonic() + wait
        seen = False
        while True:
            left = end - time.monotonic()
            try:
                msg = await ensure_async(self.iopub_channel.get_msg(timeout=max(0.0, left)))
            except Empty:
                return seen
            if msg.get("msg_type") == "iopub_welcome" and not seen:
                # IOPub just connected: what the kernel published for the request before is lost,
                # and what it published after comes at once (ipykernel says welcome, JEP 65)
                end = min(end, time.monotonic() + WELCOME_GRACE_S)
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            seen = True
            if msg.get("msg_type") == "status" and msg.get("content", {}).get("execution_state") == "idle":
                return True
            end = max(end, time.monotonic() + IOPUB_CHECK_S)  # busy came: idle follows at once


class ReadyKernelManager(AsyncKernelManager):
    """An async kernel manager whose clients are :class:`ReadyClient`."""

    client_class = DottedObjectName("nbrunner.execution.ready_client.ReadyClient")
    client_factory = Type(ReadyClient)  # the base class gives a default of its own: no derivation
