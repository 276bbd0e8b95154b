"""The Jupyter server extension: nbrunner's REST API under ``<base_url>nbrunner/api``."""
from .extension import NbrunnerExtension


def _jupyter_server_extension_points():
    return [{"module": "nbrunner.server", "app": NbrunnerExtension}]


__all__ = ["NbrunnerExtension"]
