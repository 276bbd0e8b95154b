"""The kernel check of submit answers as jupyter_client's KernelSpecManager does, without IPython."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

from nbrunner.control.kernelspecs import installed

SPECS = {
    "plain": {"argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "Plain",
              "language": "python", "metadata": {"debugger": True}},
    "MixedCase": {"argv": ["x"], "display_name": "Mixed", "language": "python"},
    "provisioned": {"argv": ["x"], "display_name": "P", "language": "python",
                    "metadata": {"kernel_provisioner": {"provisioner_name": "no-such-provisioner"}}},
    "badtype": {"argv": ["x"], "display_name": 3},
    "badjson": None,
}


def manager_says(name: str):
    try:
        KernelSpecManager().get_kernel_spec(name)
        return True
    except NoSuchKernel:
        return False
    except Exception as exc:  # noqa: BLE001 - what the manager raises is what submit would get
        return type(exc).__name__


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    root = tmp_path / "jupyter" / "kernels"
    for name, spec in SPECS.items():
        (root / name).mkdir(parents=True)
        (root / name / "kernel.json").write_text("{not json" if spec is None else json.dumps(spec))
    (root / "nospec").mkdir()  # no kernel.json: not a kernel
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("IPYTHONDIR", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (tmp_path / "home").mkdir()
    return tmp_path


@pytest.mark.parametrize("name", ["plain", "PLAIN", "mixedcase", "MixedCase", "python3", "Python3", "nope", "nospec"])
def test_same_answer_as_kernelspecmanager(kernels, name):
    assert installed(name) == manager_says(name)


@pytest.mark.parametrize("name", ["provisioned", "badtype", "badjson", "bad name", ""])
def test_cases_it_cannot_settle_are_left_to_kernelspecmanager(kernels, name):
    assert installed(name) is None


def test_an_ipython_kernels_directory_is_left_to_kernelspecmanager(kernels, monkeypatch):
    assert installed("nope") is False
    (kernels / "ipy" / "kernels").mkdir(parents=True)
    monkeypatch.setenv("IPYTHONDIR", str(kernels / "ipy"))
    assert installed("nope") is None


@pytest.mark.slow
def test_no_ipython_import():
    code = ("import sys\nfrom nbrunner.control.submit import check_kernel\ncheck_kernel('python3')\n"
            "try:\n    check_kernel('no-such-kernel')\nexcept Exception as exc:\n    print(exc)\n"
            "print('IPython' in sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.stdout.splitlines() == ["unknown kernel: 'no-such-kernel'", "False"], p.stdout + p.stderr
