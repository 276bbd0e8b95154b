"""docker/: the compose file is valid and describes the documented deployment (no Docker engine runs here)."""
from __future__ import annotations

import pytest

import shutil
import subprocess
from pathlib import Path

import yaml

DOCKER = Path(__file__).resolve().parents[1] / "docker"


def compose_cli() -> list[str]:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    raise AssertionError("no docker compose CLI: scripts/test.sh installs Debian's docker-compose")


@pytest.mark.slow
def test_compose_config_validates():
    p = subprocess.run([*compose_cli(), "-f", str(DOCKER / "compose.yaml"), "config"], capture_output=True, text=True,
                       cwd=DOCKER)
    assert p.returncode == 0, p.stderr
    resolved = yaml.safe_load(p.stdout)
    assert set(resolved["services"]) >= {"redis", "lab", "gpu-worker", "hub"}
    hub = resolved["services"]["hub"]
    assert hub["environment"]["NBRUNNER_REDIS_URL"].startswith("redis://")
    assert any("jupyterhub/jupyterhub_config.py:/etc/jupyterhub/" in str(v) for v in hub["volumes"])


def test_compose_describes_redis_lab_gpu_workers_and_shared_storage():
    spec = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    services = spec["services"]
    gpu = services["gpu-worker"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["driver"] == "nvidia" and "gpu" in gpu["capabilities"]
    for name in ("lab", "gpu-worker", "cpu-worker"):
        assert "workspace:/workspace" in services[name]["volumes"]
        assert services[name]["environment"]["NBRUNNER_REDIS_URL"].startswith("redis://")
    assert "--appendonly" in services["redis"]["command"]
    assert (DOCKER / "Dockerfile").read_text().startswith("# nbrunner on CPU")
    assert "FROM ${PYTORCH_IMAGE}" in (DOCKER / "Dockerfile.cuda").read_text()


def test_the_hub_variant_runs_the_tested_hub_config_with_the_cluster():
    """The hub service (profile "hub") runs docker/jupyterhub/jupyterhub_config.py (the config the
    tests in tests/hub/ run a real hub on) with nbrunner service's extra, beside a scheduler."""
    services = yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]
    hub = services["hub"]
    assert hub["profiles"] == ["hub"] and "profiles" not in services["lab"]  # the default up is unchanged
    assert hub["build"]["args"]["NBRUNNER_EXTRAS"] == "[hub]"
    assert hub["build"]["args"]["NPM_PACKAGES"].startswith("configurable-http-proxy@")  # npm's: it streams
    assert 'ARG NPM_PACKAGES=""' in (DOCKER / "Dockerfile").read_text()
    assert "./jupyterhub/jupyterhub_config.py:/etc/jupyterhub/jupyterhub_config.py:ro" in hub["volumes"]
    assert "workspace:/workspace" in hub["volumes"]
    assert hub["environment"]["NBRUNNER_REDIS_URL"].startswith("redis://")
    command = hub["command"][-1]
    assert "nbrunner scheduler &" in command and "jupyterhub -f /etc/jupyterhub/jupyterhub_config.py" in command
    assert "8000:8000" in hub["ports"]
    assert 'ARG NBRUNNER_EXTRAS=""' in (DOCKER / "Dockerfile").read_text()
    config = (DOCKER / "jupyterhub" / "jupyterhub_config.py").read_text()
    assert '"command": ["nbrunner", "service"' in config and "access:services!service=nbrunner" in config
