"""``nbrunner service``: the REST API served standalone to a JupyterHub's users, as a hub service.

The hub starts it (``c.JupyterHub.services``, README: "On a JupyterHub") with its ``JUPYTERHUB_*``
environment, and its proxy forwards ``<hub>/services/<name>/...`` here with the full path.  Every
route of the Jupyter extension (:func:`.handlers.routes`, the same bodies and OpenAPI document) is
served under ``$JUPYTERHUB_SERVICE_PREFIX`` + ``api``, by :class:`HubRoute`, which asks the hub who
each request comes from (``jupyterhub.services.auth.HubOAuth``):

- a user's API token (``Authorization: token ...``), or the OAuth cookie this service sets for a
  browser after the hub's login (``<prefix>oauth_callback``); a request authenticated by that
  cookie and not read-only must carry the XSRF token (``X-XSRFToken``), as HubOAuth checks it;
- no credentials: 401 ``{"message": ...}``, except a browser's page request (a GET accepting
  ``text/html``), which is redirected to the hub's login and comes back with the cookie;
- credentials the hub refuses (forged, expired, revoked), a token without the scope
  ``access:services!service=<name>`` (another service's, or a token made for another service),
  or a hub service instead of a user: 403 ``{"message": ...}``.

Nothing is read or changed before the caller is known.  The caller (:func:`~nbrunner.core.identity.hub_caller`)
is the hub user: jobs, sweeps, schedules and model servers record its name as owner and its hub
groups beside it; hub admins and members of ``--admin-group`` see and change everything.  This
process alone holds the cluster's Redis connection; the model servers it starts run as its user.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import secrets
import signal
import sys
from typing import Any
from urllib.parse import urlsplit

from jupyterhub.services.auth import HubOAuth, HubOAuthCallbackHandler, HubOAuthenticated, UserNotAllowed
from tornado import web
from tornado.httpserver import HTTPServer

from ..control.api import ClusterAPI
from ..core.config import HUB_AUTH_CACHE_S, SERVICE_PORT
from ..control.local_files import read_accounts
from ..control.discovery import resolve
from ..core.errors import NbrunnerError
from ..core.identity import Caller, hub_caller
from .handlers import routes
from .model_servers import ModelServers

log = logging.getLogger("nbrunner.service")


class HubRoute(HubOAuthenticated, web.RequestHandler):
    """The host of the API's routes under ``nbrunner service``: JupyterHub says who asks (see the
    module docstring), in :meth:`prepare`, before any route runs."""

    _caller: Caller

    @property
    def hub_auth(self) -> HubOAuth:
        return self.settings["nbrunner_hub_auth"]

    @property
    def api_url(self) -> str:
        """Where the API is served: ``$JUPYTERHUB_SERVICE_PREFIX`` + ``api``."""
        return self.settings["nbrunner_api_url"]

    @property
    def caller(self) -> Caller:
        return self._caller

    async def prepare(self) -> None:
        """Identify the hub user (asynchronously: a check with the hub never stalls other requests),
        or answer 401/403, or send a browser to the hub's login."""
        try:
            model = await self.hub_auth.get_user(self, sync=False)
        except web.HTTPError as exc:  # the hub is unreachable, or refuses this service's own token
            raise web.HTTPError(503, f"cannot check credentials with JupyterHub: {exc.log_message}") from None
        if model is None:
            self._no_user()
            return
        try:
            model = self.check_hub_user(model)
        except UserNotAllowed:
            self._deny(403, f"hub {model.get('kind', 'user')} {model['name']} may not use this service "
                            f"(it needs the scope access:services!service={self._service_name()})")
            return
        if model.get("kind", "user") != "user":
            self._deny(403, f"hub service {model['name']} is not a user: nbrunner jobs belong to hub users")
            return
        self.current_user = model
        self._caller = hub_caller(model, self.settings.get("nbrunner_admin_group"))

    def _no_user(self) -> None:
        """No identity: refused credentials (403), none at all (401), or a browser to send to the login."""
        presented = self.hub_auth.get_token(self, in_cookie=False) or self.get_cookie(self.hub_auth.cookie_name)
        if presented:
            self._deny(403, "JupyterHub does not accept these credentials (a token that is invalid, expired or "
                            "revoked, or a login cookie without its XSRF token)")
        elif self.request.method == "GET" and "text/html" in self.request.headers.get("Accept", ""):
            self.redirect(self.get_login_url())
        else:
            self._deny(401, "authentication required: send a JupyterHub API token (Authorization: token ...) "
                            "or log in to the hub")

    def _deny(self, status: int, message: str) -> None:
        self.set_status(status)
        if status == 401:
            self.set_header("WWW-Authenticate", 'token realm="JupyterHub"')
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"message": message}))

    def _service_name(self) -> str:
        return os.environ.get("JUPYTERHUB_SERVICE_NAME", "nbrunner")


class OAuthCallback(HubOAuthCallbackHandler):
    """``<prefix>oauth_callback``: ends the hub's OAuth login of a browser and sets its cookie."""

    @property
    def hub_auth(self) -> HubOAuth:
        return self.settings["nbrunner_hub_auth"]


def make_app(hub_auth: HubOAuth, workspace: str | None = None, admin_group: str | None = None) -> web.Application:
    """The service's tornado application: every route under ``<prefix>api``, the OAuth callback, and
    ``<prefix>`` sending a browser to its jobs; it attaches to the cluster of ``workspace`` (or of
    ``NBRUNNER_REDIS_URL`` / ``NBRUNNER_WORKSPACE``, as other commands do) on first use."""
    prefix = hub_auth.base_url  # $JUPYTERHUB_SERVICE_PREFIX, with its trailing slash
    api_url = prefix + "api"
    api = ClusterAPI(resolve(workspace))
    handlers: list[Any] = routes(HubRoute, re.escape(api_url))
    handlers += [
        (urlsplit(hub_auth.oauth_redirect_uri).path, OAuthCallback),
        (prefix.rstrip("/") + "/?", web.RedirectHandler, {"url": api_url + "/jobs", "permanent": False}),
    ]
    return web.Application(handlers, **{
        "nbrunner_api": api,
        "nbrunner_root": str(api.settings.workspace),
        "nbrunner_model_servers": ModelServers(),
        "nbrunner_hub_auth": hub_auth,
        "nbrunner_admin_group": admin_group,
        "nbrunner_api_url": api_url,
        "cookie_secret": secrets.token_bytes(32),  # a restart logs browsers in again (through the hub)
    })


def listen_address(port: int | None) -> tuple[str, int]:
    """Where to listen: the host and port of the service's ``url`` in the hub config
    (``JUPYTERHUB_SERVICE_URL``), ``port`` overriding the port."""
    url = urlsplit(os.environ.get("JUPYTERHUB_SERVICE_URL") or f"http://127.0.0.1:{SERVICE_PORT}")
    return url.hostname or "127.0.0.1", port or url.port or SERVICE_PORT


def serve(port: int | None = None, admin_group: str | None = None, workspace: str | None = None,
          accounts: str | None = None) -> int:
    """Run the service until SIGTERM or SIGINT (the hub stops its services with SIGTERM); returns
    the exit code: 2 outside a hub or with a bad accounts file (its line named)."""
    if not os.environ.get("JUPYTERHUB_API_TOKEN"):
        print("nbrunner: nbrunner service runs as a JupyterHub service and found no JUPYTERHUB_API_TOKEN: "
              "start it from c.JupyterHub.services (see docs/admin/jupyterhub.md)", file=sys.stderr)
        return 2
    if accounts is not None:
        try:
            read_accounts(accounts)
        except NbrunnerError as exc:
            print(f"nbrunner: {exc}", file=sys.stderr)
            return 2
    logging.basicConfig(level=logging.INFO, format="[%(levelname).1s %(asctime)s %(name)s] %(message)s")
    asyncio.run(_serve(listen_address(port), admin_group, workspace, accounts))
    return 0


def _publish_accounts(api: ClusterAPI, path: str) -> None:
    """Make the accounts file the cluster's (at start: once the cluster answers; on SIGHUP again).
    A bad file is logged and changes nothing."""
    from ..control.accounts import publish

    try:
        publish(api.store, path)
        log.info("accounts published from %s", path)
    except NbrunnerError as exc:
        log.warning("accounts not published: %s", exc)


async def _serve(address: tuple[str, int], admin_group: str | None, workspace: str | None,
                 accounts: str | None = None) -> None:
    hub_auth = HubOAuth(api_token=os.environ["JUPYTERHUB_API_TOKEN"], cache_max_age=HUB_AUTH_CACHE_S)
    app = make_app(hub_auth, workspace, admin_group)
    loop = asyncio.get_running_loop()
    if accounts is not None:
        api = app.settings["nbrunner_api"]
        await loop.run_in_executor(None, _publish_accounts, api, accounts)
        loop.add_signal_handler(signal.SIGHUP, lambda: loop.run_in_executor(None, _publish_accounts, api, accounts))
    from ..core.config import MAX_CONTENT_BODY, MAX_INPUT_BYTES
    from ..core.inputs import body_allowance

    # behind the hub's proxy: the client's address from its headers; a job's notebook and inputs fit in a body
    server = HTTPServer(app, xheaders=True, max_body_size=MAX_CONTENT_BODY + body_allowance(MAX_INPUT_BYTES.count()))
    server.listen(address[1], address[0])
    stopped = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stopped.set)
    log.info("serving the nbrunner API at %sapi on http://%s:%d (cluster of %s)", hub_auth.base_url, *address,
             app.settings["nbrunner_api"].settings.workspace)
    await stopped.wait()
    server.stop()
    app.settings["nbrunner_model_servers"].stop_all()


def main(argv: list[str] | None = None) -> int:
    """``python -m nbrunner.server.hub_service [--port P] [--admin-group G] [--dir D]``, which
    ``nbrunner service`` runs (the command checks and documents the options)."""
    parser = argparse.ArgumentParser(prog="nbrunner service")
    parser.add_argument("--port", type=int)
    parser.add_argument("--admin-group")
    parser.add_argument("--dir")
    parser.add_argument("--accounts")
    args = parser.parse_args(argv)
    return serve(args.port, args.admin_group, args.dir, args.accounts)


if __name__ == "__main__":
    sys.exit(main())
