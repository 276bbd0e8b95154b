"""Where nbrunner service listens: the host and port of the service's url in the hub config
(JUPYTERHUB_SERVICE_URL), --port overriding the port."""
from __future__ import annotations

from nbrunner.core.config import SERVICE_PORT as DEFAULT_PORT
from nbrunner.server.hub_service import listen_address


def test_the_hub_configs_url_gives_host_and_port(monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_SERVICE_URL", "http://10.0.0.5:10123")
    assert listen_address(None) == ("10.0.0.5", 10123)
    assert listen_address(10200) == ("10.0.0.5", 10200)


def test_without_a_url_it_listens_on_localhost(monkeypatch):
    monkeypatch.delenv("JUPYTERHUB_SERVICE_URL", raising=False)
    assert listen_address(None) == ("127.0.0.1", DEFAULT_PORT)
    monkeypatch.setenv("JUPYTERHUB_SERVICE_URL", "http://hub-service")
    assert listen_address(None) == ("hub-service", DEFAULT_PORT)
