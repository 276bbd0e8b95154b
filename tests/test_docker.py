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
    assert set(resolved["services"]) >= {"redis", "lab", "gpu-worker"}


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
