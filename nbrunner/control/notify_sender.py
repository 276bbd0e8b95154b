"""Sending notifications: ``mailto:`` through the cluster's SMTP server (``NBRUNNER_SMTP_URL``,
:mod:`smtplib`), every other target through Apprise; and :class:`Notifier`, the two threads of the
scheduler's process that do it without ever holding up the scheduler.

One thread (:class:`~.notifications.EndWatcher`) turns ends into queued notifications; the other
takes due ones (:func:`~.notifications.claim`), sends each, and logs the outcome in its user's
log: sent, or a retry after ``NBRUNNER_NOTIFY_BACKOFF_S`` (doubling each time, at most
``NOTIFY_BACKOFF_MAX_S``) up to ``NBRUNNER_NOTIFY_RETRIES`` times, then failed.  A target the
allow list no longer allows, or mail without an SMTP server, fails at once.  Several scheduler
processes (a standby) each run a notifier: the queue gives each notification to one of them.
"""
from __future__ import annotations

import logging
import smtplib
import socket
import threading
from email.message import EmailMessage
from urllib.parse import parse_qs, unquote, urlsplit

from ..core.config import (NOTIFY_BACKOFF, NOTIFY_BACKOFF_MAX_S, NOTIFY_POLL_S, NOTIFY_RETRIES,
                           NOTIFY_SEND_TIMEOUT_S, SMTP_URL, Settings)
from ..core.errors import InvalidRequest, one_line
from ..core.notify_targets import check_target, kind_of
from .store import JobStore
from . import notifications

log = logging.getLogger("nbrunner.notify")


class SendFailed(Exception):
    """A delivery that did not go through (``permanent``: trying again cannot help)."""

    def __init__(self, message: str, permanent: bool = False):
        super().__init__(message)
        self.permanent = permanent


def send_mail(address: str, title: str, body: str, smtp_url: str | None = None) -> None:
    """Send one e-mail through ``smtp_url`` (default ``NBRUNNER_SMTP_URL``): ``smtp://[user:password@]
    host[:port][?from=ADDRESS&starttls=1]`` or ``smtps://...`` (TLS from the start)."""
    url = smtp_url or SMTP_URL.text()
    if not url:
        raise SendFailed(f"no SMTP server for e-mail ({SMTP_URL.name} is not set)", permanent=True)
    parts = urlsplit(url)
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        raise SendFailed(f"{SMTP_URL.name} must be smtp://host:port or smtps://host:port", permanent=True)
    query = parse_qs(parts.query)
    sender = query.get("from", [f"nbrunner@{socket.getfqdn()}"])[0]
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, address, title
    msg.set_content(body)
    kind = smtplib.SMTP_SSL if parts.scheme == "smtps" else smtplib.SMTP
    port = parts.port or (465 if parts.scheme == "smtps" else 25)
    try:
        with kind(parts.hostname, port, timeout=NOTIFY_SEND_TIMEOUT_S) as smtp:
            if query.get("starttls", ["0"])[0] in ("1", "true", "yes"):
                smtp.starttls()
            if parts.username:
                smtp.login(unquote(parts.username), unquote(parts.password or ""))
            smtp.send_message(msg)
    except (OSError, smtplib.SMTPException) as exc:
        raise SendFailed(f"SMTP {parts.hostname}:{port}: {one_line(exc, 200)}") from None


def send_apprise(target: str, title: str, body: str, kind: str) -> None:
    """Send one notification to the Apprise URL ``target`` (``kind``: info, success, warning or
    failure); the reason Apprise logged when it fails."""
    import apprise

    bell = apprise.Apprise()
    if not bell.add(target):
        raise SendFailed("not a URL Apprise can send to", permanent=True)
    with apprise.LogCapture(level=logging.WARNING) as said:
        ok = bell.notify(body=body, title=title, notify_type=kind)
    if not ok:
        lines = [line.strip() for line in said.getvalue().splitlines() if line.strip()]
        raise SendFailed(one_line(lines[-1] if lines else "Apprise could not send it", 300))


def deliver(item: dict) -> None:
    """Send one queued notification (SendFailed if it did not go through)."""
    target = item["target"]
    try:
        check_target(target)  # the allow list may have changed since it was set
    except InvalidRequest as exc:
        raise SendFailed(str(exc), permanent=True) from None
    if kind_of(target) == "mailto":
        send_mail(target[len("mailto:"):], item["title"], item["body"])
    else:
        send_apprise(target, item["title"], item["body"], item["type"])


def backoff(attempt: int) -> float:
    """Seconds before retry number ``attempt`` (1, 2, ...)."""
    return min(NOTIFY_BACKOFF.seconds() * 2 ** (attempt - 1), NOTIFY_BACKOFF_MAX_S)


def send_due(store: JobStore) -> int:
    """Send the notifications that are due; how many were tried."""
    items = notifications.claim(store.r)
    for item in items:
        try:
            deliver(item)
        except SendFailed as exc:
            attempt = item["attempt"] + 1
            if exc.permanent or attempt > NOTIFY_RETRIES.count():
                notifications.record_delivery(store.r, item, "failed", str(exc))
                notifications.done(store.r, item)
            else:
                notifications.record_delivery(store.r, item, "retrying", str(exc))
                notifications.retry(store.r, item, backoff(attempt))
            continue
        except Exception as exc:  # noqa: BLE001 - a plugin's own bug: logged as a failure, never retried forever
            notifications.record_delivery(store.r, item, "failed", one_line(f"{exc.__class__.__name__}: {exc}"))
            notifications.done(store.r, item)
            continue
        notifications.record_delivery(store.r, item, "sent")
        notifications.done(store.r, item)
    return len(items)


class Notifier:
    """The notification threads of a scheduler process (see the module docstring)."""

    def __init__(self, settings: Settings, name: str):
        self.settings, self.name = settings, name
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self) -> "Notifier":
        for target, what in ((self._watch, "ends"), (self._send, "send")):
            thread = threading.Thread(target=target, name=f"nbrunner-notify-{what}", daemon=True)
            thread.start()
            self.threads.append(thread)
        return self

    def stop(self) -> None:
        self.stopping.set()

    def _watch(self) -> None:
        watcher = None
        while not self.stopping.is_set():
            try:
                if watcher is None:
                    watcher = notifications.EndWatcher(JobStore.from_url(self.settings.url), self.name)
                watcher.step(block_s=1.0)
            except Exception as exc:  # noqa: BLE001 - Redis restarting: try again
                log.warning("notifications: reading ends failed: %s: %s", exc.__class__.__name__, exc)
                watcher = None
                self.stopping.wait(1.0)

    def _send(self) -> None:
        store = None
        while not self.stopping.is_set():
            try:
                if store is None:
                    store = JobStore.from_url(self.settings.url)
                if not send_due(store):
                    self.stopping.wait(NOTIFY_POLL_S)
            except Exception as exc:  # noqa: BLE001 - Redis restarting: try again
                log.warning("notifications: sending failed: %s: %s", exc.__class__.__name__, exc)
                store = None
                self.stopping.wait(1.0)
