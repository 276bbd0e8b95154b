"""Where a user is told that something ended, pure: targets, the admin's allow list, a user's
settings, secrets masked, and the message itself.

A target is ``mailto:ADDRESS`` (sent through the cluster's SMTP server, ``NBRUNNER_SMTP_URL``)
or an Apprise URL (``slack://...``, ``json://host/path``, ...).  ``NBRUNNER_NOTIFY_ALLOW`` lists
what users may name: a scheme alone (``mailto``, ``slack``: any target of it) or
``scheme://host[:port]`` (that host only; ``mailto://example.org``: addresses of that domain).
Anything else is refused in one line, so the service sends nothing to a place of the user's
choosing on its network.  Apprise's own ``mailto://`` and ``mailtos://`` (any SMTP server) are
refused: mail goes through the cluster's server.

A user's settings are ``{"targets": [TARGET, ...], "on": [EVENT, ...]}``; a job's ``notify``
overrides them for that job (a list of targets, or the same object, either key optional).
"""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from .config import NOTIFY_ALLOW
from .errors import InvalidRequest

#: What a user may be told about: a job of theirs ended so (not a sweep's trial), a sweep ended,
#: a pipeline ended.
EVENTS = ("completed", "failed", "cancelled", "sweep", "pipeline")
#: Targets one user (or job) may name.
MAX_TARGETS = 20
#: Characters of one target.
MAX_TARGET_CHARS = 2000

_ADDRESS = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                      r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*)")
_SCHEME = re.compile(r"([a-z][a-z0-9+.-]*)://", re.IGNORECASE)


def parse_allow(text: str | None) -> list[tuple[str, str | None, int | None]]:
    """``NBRUNNER_NOTIFY_ALLOW``'s entries as ``(scheme, host or None, port or None)``."""
    out = []
    for raw in (text or "").split(","):
        entry = raw.strip()
        if not entry:
            continue
        if "://" in entry:
            parts = urlsplit(entry)
            out.append((parts.scheme.lower(), (parts.hostname or "").lower() or None, parts.port))
        else:
            out.append((entry.lower().rstrip(":"), None, None))
    return out


def kind_of(target: str) -> str:
    """``mailto`` or the Apprise scheme of ``target`` (InvalidRequest when it is neither)."""
    if target.lower().startswith("mailto:") and not target.startswith("mailto://", 0):
        return "mailto"
    m = _SCHEME.match(target)
    if not m:
        raise InvalidRequest(f"malformed notification target {_short(target)!r}: give mailto:ADDRESS or an Apprise "
                             "URL (scheme://...)")
    return m.group(1).lower()


def _short(target: str) -> str:
    return target if len(target) <= 60 else target[:57] + "..."


def host_of(target: str) -> tuple[str | None, int | None]:
    """The host (an address's domain) and port ``target`` sends to, for the allow list."""
    if kind_of(target) == "mailto":
        m = _ADDRESS.fullmatch(target[len("mailto:"):])
        return (m.group(1).lower() if m else None), None
    try:
        parts = urlsplit(target)
        return (parts.hostname or "").lower() or None, parts.port
    except ValueError:
        return None, None


def check_target(target: Any, allow: str | None = None) -> str:
    """``target`` if it is well formed and allowed (``allow``: the allow list's text, default
    ``NBRUNNER_NOTIFY_ALLOW``); else InvalidRequest in one line."""
    if not isinstance(target, str) or not target.strip():
        raise InvalidRequest("a notification target must be text: mailto:ADDRESS or an Apprise URL")
    target = target.strip()
    if len(target) > MAX_TARGET_CHARS or any(ord(c) < 32 for c in target):
        raise InvalidRequest(f"malformed notification target {_short(target)!r}")
    kind = kind_of(target)
    if kind in ("mailto", "mailtos") and "://" in target:
        raise InvalidRequest(f"notification target {_short(target)!r}: write mailto:ADDRESS (mail goes through the "
                             "cluster's SMTP server)")
    if kind == "mailto" and not _ADDRESS.fullmatch(target[len("mailto:"):]):
        raise InvalidRequest(f"malformed e-mail target {_short(target)!r}: write mailto:name@example.org")
    try:
        host, port = host_of(target)
    except ValueError:
        raise InvalidRequest(f"malformed notification target {_short(target)!r}") from None
    entries = parse_allow(NOTIFY_ALLOW.text() if allow is None else allow)
    if not any(scheme == kind and (h is None or h == host) and (p is None or p == port) for scheme, h, p in entries):
        # the host only where the list names hosts of that scheme: elsewhere it may be a secret (slack://TOKEN/...)
        where = f"{kind}://{host}" if host and kind != "mailto" and any(s == kind and h for s, h, _ in entries) else kind
        raise InvalidRequest(f"notification target {where} is not allowed on this cluster (allowed: "
                             f"{', '.join(_entry(e) for e in entries) or 'nothing'}; {NOTIFY_ALLOW.name})")
    if kind != "mailto":
        check_apprise(target)
    return target


def _entry(entry: tuple[str, str | None, int | None]) -> str:
    scheme, host, port = entry
    return scheme if host is None else f"{scheme}://{host}" + (f":{port}" if port else "")


def check_apprise(target: str) -> None:
    """InvalidRequest unless Apprise can send to the URL ``target``."""
    import apprise

    if apprise.Apprise.instantiate(target, suppress_exceptions=True) is None:
        raise InvalidRequest(f"malformed notification target {mask(target)!r}: not a URL Apprise can send to")


def mask(target: str) -> str:
    """``target`` with its secrets (passwords, tokens, keys) hidden, as the delivery log shows it."""
    try:
        kind = kind_of(target)
    except InvalidRequest:
        return "***"
    if kind == "mailto":
        return target
    try:
        import apprise

        plugin = apprise.Apprise.instantiate(target, suppress_exceptions=True)
        if plugin is not None:
            return plugin.url(privacy=True)
    except Exception:  # noqa: BLE001 - a plugin's own formatting: fall back to hiding it all
        pass
    return f"{kind}://***"


def check_targets(targets: Any, allow: str | None = None) -> list[str]:
    if not isinstance(targets, list):
        raise InvalidRequest("targets must be a list of notification targets")
    if len(targets) > MAX_TARGETS:
        raise InvalidRequest(f"at most {MAX_TARGETS} notification targets")
    out: list[str] = []
    for t in targets:
        t = check_target(t, allow)
        if t not in out:
            out.append(t)
    return out


def check_events(on: Any) -> list[str]:
    if not isinstance(on, list) or not all(isinstance(e, str) for e in on):
        raise InvalidRequest(f"on must be a list of events ({', '.join(EVENTS)})")
    unknown = [e for e in on if e not in EVENTS]
    if unknown:
        raise InvalidRequest(f"unknown event {unknown[0]!r}: events are {', '.join(EVENTS)}")
    return [e for e in EVENTS if e in on]


def check_settings(data: Any) -> dict[str, list[str]]:
    """The body of ``PUT /me/notifications``: ``{"targets": [...], "on": [...]}`` (a missing
    ``targets`` is none, a missing ``on`` every event)."""
    if not isinstance(data, dict):
        raise InvalidRequest("notification settings must be an object {\"targets\": [...], \"on\": [...]}")
    for key in data:
        if key not in ("targets", "on"):
            raise InvalidRequest(f"unknown field {key!r} (give targets and on)")
    return {"targets": check_targets(data.get("targets", [])), "on": check_events(data.get("on", list(EVENTS)))}


def check_job_notify(value: Any) -> dict[str, list[str]]:
    """A job's ``notify``: a list of targets, or ``{"targets"?, "on"?}``; only the keys given
    override the owner's settings."""
    if isinstance(value, list):
        value = {"targets": value}
    if not isinstance(value, dict):
        raise InvalidRequest("notify must be a list of targets or {\"targets\": [...], \"on\": [...]}")
    for key in value:
        if key not in ("targets", "on"):
            raise InvalidRequest(f"notify: unknown field {key!r} (give targets and on)")
    out = {}
    if "targets" in value:
        out["targets"] = check_targets(value["targets"])
    if "on" in value:
        out["on"] = check_events(value["on"])
    return out


def default_settings() -> dict[str, list[str]]:
    return {"targets": [], "on": list(EVENTS)}


def effective(user: dict[str, list[str]] | None, job: dict[str, list[str]] | None) -> dict[str, list[str]]:
    """The settings that apply to one job: the owner's, with the job's ``notify`` keys over them."""
    return {**default_settings(), **(user or {}), **(job or {})}


#: Apprise's notification type for each event's outcome.
_TYPES = {"completed": "success", "failed": "failure", "cancelled": "warning"}


def job_message(rec: dict[str, Any], page_url: str | None) -> tuple[str, str, str]:
    """``(title, body, type)`` telling that the job ``rec`` (its public dict) ended."""
    status, name, job_id = rec.get("status"), rec.get("name") or rec.get("id"), rec.get("id")
    title = f"nbrunner: job {name} {status}"
    lines = [f"Job {name} ({job_id}) {status}" + (f": {rec['error']}" if rec.get("error") else ".")]
    lines.append(f"Notebook: {rec.get('notebook')}; owner: {rec.get('owner')}.")
    lines.append(f"Page: {page(page_url, job_id)}")
    return title, "\n".join(lines), _TYPES.get(status, "info")


def group_message(what: str, rec: dict[str, Any], page_url: str | None, detail: str = "") -> tuple[str, str, str]:
    """``(title, body, type)`` telling that a sweep or pipeline (``what``) ended."""
    status, ident = rec.get("status"), rec.get("id")
    name = rec.get("name") or ident
    title = f"nbrunner: {what} {name} {status}"
    lines = [f"{what.capitalize()} {name} ({ident}) {status}." + (f" {detail}" if detail else "")]
    if page_url:
        lines.append(f"Jobs: {page_url.rstrip('/')}?nbrunner-{what}={ident}")
    return title, "\n".join(lines), _TYPES.get(status, "info")


def page(page_url: str | None, job_id: Any) -> str:
    """The URL of a job's page in JupyterLab (``NBRUNNER_NOTIFY_PAGE_URL``), else how to find it."""
    if page_url:
        return f"{page_url.rstrip('/')}?nbrunner-job={job_id}"
    return f"job {job_id} in JupyterLab's nbrunner Jobs panel (`nbrunner show {job_id}`)"
