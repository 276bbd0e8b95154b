"""The ExtensionApp: attaches to the workspace's cluster and registers the handlers."""
from __future__ import annotations

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Unicode

from .handlers import routes
from .model_servers import ModelServers


class NbrunnerExtension(ExtensionApp):
    """Serves the REST API (routes in :mod:`.handlers`, listed in the README) for the cluster of the server's root directory."""

    name = "nbrunner"
    load_other_extensions = True

    workspace = Unicode("", config=True, help="nbrunner workspace (default: NBRUNNER_WORKSPACE or the server root)")
    multi_user = Bool(False, config=True, help="users see and change only their own jobs; admins see all")
    admin_users = Unicode("", config=True, help="comma-separated user names that see and change every job")

    def initialize_settings(self) -> None:
        """The cluster's operations (:class:`~nbrunner.control.api.ClusterAPI`), built once for every
        handler; they connect to the workspace's cluster on first use."""
        import os

        from ..control.api import ClusterAPI
        from ..core.discovery import resolve

        workspace = self.workspace or os.environ.get("NBRUNNER_WORKSPACE") or self.serverapp.root_dir
        self.settings.update({
            "nbrunner_api": ClusterAPI(resolve(workspace)),
            "nbrunner_root": self.serverapp.root_dir,
            "nbrunner_multi_user": self.multi_user,
            "nbrunner_admins": {u.strip() for u in self.admin_users.split(",") if u.strip()},
            "nbrunner_model_servers": ModelServers(),
        })

    def initialize_handlers(self) -> None:
        self.handlers.extend(routes())

    async def stop_extension(self) -> None:
        """Stop the model servers this Jupyter server started, and its push channel's reader."""
        servers = self.settings.get("nbrunner_model_servers")
        if servers is not None:
            servers.stop_all()
        push = self.serverapp.web_app.settings.get("nbrunner_push")
        if push is not None:
            push.close()
