"""The top layer: the Jupyter server extension, nbrunner's REST API under ``<base_url>nbrunner/api``.

Enabled by ``jupyter-config/server-config/nbrunner.json`` (``{"nbrunner.server": true}``);
the handlers call the client and control layers, built once in ``initialize_settings``.
"""
from .extension import NbrunnerExtension


def _jupyter_server_extension_points():
    return [{"module": "nbrunner.server", "app": NbrunnerExtension}]


__all__ = ["NbrunnerExtension"]
