"""The ExtensionApp: attaches to the workspace's cluster (or forwards to an nbrunner service) and registers the handlers."""
from __future__ import annotations

from pathlib import Path

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Unicode

from ..core.config import SERVICE_URL, WORKSPACE, Settings, service_token
from .handlers import routes
from .model_servers import ModelServers


class NbrunnerExtension(ExtensionApp):
    """Serves the REST API (routes in :mod:`.handlers`, listed in the README) for the cluster of the server's root directory."""

    name = "nbrunner"
    load_other_extensions = True

    workspace = Unicode("", config=True, help=f"nbrunner workspace (default: {WORKSPACE.name} or the server root)")
    multi_user = Bool(False, config=True, help="users see and change only their own jobs; admins see all")
    admin_users = Unicode("", config=True, help="comma-separated user names that see and change every job")

    def initialize_settings(self) -> None:
        """The cluster's operations (:class:`~nbrunner.control.api.ClusterAPI`), built once for every
        handler; they connect to the workspace's cluster on first use.  With ``NBRUNNER_SERVICE_URL``
        set there is no cluster here: the API is forwarded to that service (:mod:`.forward`)."""
        from ..control.api import ClusterAPI

        service = SERVICE_URL.text()
        root = self.serverapp.root_dir
        if service:  # the notebooks' own operations only (their parameters): no Redis, no workspace
            from .forward import service_settings

            here = Path(root).resolve()
            self.settings.update({"nbrunner_api": ClusterAPI(Settings(workspace=here, storage=here, redis_url=None)),
                                  "nbrunner_root": root, "nbrunner_service": service_settings(service, service_token())})
            self.log.info("nbrunner: the REST API is forwarded to the nbrunner service at %s", service)
            return
        from ..control.discovery import resolve

        workspace = self.workspace or WORKSPACE.text() or root
        self.settings.update({
            "nbrunner_api": ClusterAPI(resolve(workspace)),
            "nbrunner_root": root,
            "nbrunner_multi_user": self.multi_user,
            "nbrunner_admins": {u.strip() for u in self.admin_users.split(",") if u.strip()},
            "nbrunner_model_servers": ModelServers(),
        })

    def initialize_handlers(self) -> None:
        if "nbrunner_service" in self.settings:
            from .forward import forward_routes

            self.handlers.extend(forward_routes())
            return
        self.handlers.extend(routes())

    async def stop_extension(self) -> None:
        """Stop the model servers this Jupyter server started, and its push channel's reader."""
        servers = self.settings.get("nbrunner_model_servers")
        if servers is not None:
            servers.stop_all()
        push = self.serverapp.web_app.settings.get("nbrunner_push")
        if push is not None:
            push.close()
