"""The example notebooks run under papermill in a real kernel, with learner processes."""
from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import nbformat
import numpy as np
import papermill as pm
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _outputs_text(nb) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append(out["text"])
            elif out.get("output_type") == "error":
                parts.append("ERROR " + out["ename"] + ": " + out["evalue"])
    return "".join(parts)


def _parameters_cell(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1
    return cells[0].source


def write_tiny_cifar(d: Path, n_train: int = 384, n_test: int = 96, seed: int = 0) -> Path:
    """Files in the CIFAR-10 python format: pickled dicts with b"data" (uint8 N x 3072)
    and b"labels".  Class c has a brighter channel c % 3, so there is something to learn."""
    rng = np.random.default_rng(seed)
    d.mkdir(parents=True, exist_ok=True)

    def batch(n, name):
        labels = rng.integers(0, 10, n)
        data = rng.integers(0, 128, (n, 3, 32, 32), dtype=np.uint8)
        for i, c in enumerate(labels):
            data[i, c % 3] += np.uint8(100)
        with open(d / name, "wb") as f:
            pickle.dump({b"batch_label": name.encode(), b"labels": labels.tolist(),
                         b"data": data.reshape(n, 3072), b"filenames": [b"x.png"] * n}, f)

    batch(n_train // 2, "data_batch_1")
    batch(n_train - n_train // 2, "data_batch_2")
    batch(n_test, "test_batch")
    return d


def test_notebook_parameters_cells():
    digits = _parameters_cell(NOTEBOOKS / "digits_elastic.ipynb")
    for line in ("EPOCHS = 10", "BATCHSIZE = 64", "LR = 0.01", "MOMENTUM = 0.9", "MAX_GPUS = 2"):
        assert line in digits
    cifar = _parameters_cell(NOTEBOOKS / "cifar10_vgg.ipynb")
    for name in ("EPOCHS", "N_CLASSES", "BATCHSIZE", "LR", "MOMENTUM", "GPU", "DATA_DIR"):
        assert f"{name} = " in cifar
    for name in ("digits_elastic.ipynb", "cifar10_vgg.ipynb"):
        nbformat.validate(nbformat.read(NOTEBOOKS / name, as_version=4))


@pytest.mark.slow
def test_cifar10_vgg_notebook_runs_on_tiny_cifar(tmp_path, monkeypatch):
    data = write_tiny_cifar(tmp_path / "cifar-10-batches-py")
    job_dir = tmp_path / "runs" / "nbjob"
    job_dir.mkdir(parents=True)
    for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE", "NBRUNNER_SLOT_SOURCE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("NBRUNNER_JOB_ID", "nbjob")        # the kernel runs "inside a job"
    monkeypatch.setenv("NBRUNNER_JOB_DIR", str(job_dir))
    out = tmp_path / "output.ipynb"
    pm.execute_notebook(str(NOTEBOOKS / "cifar10_vgg.ipynb"), str(out), kernel_name="python3",
                        parameters={"EPOCHS": 2, "N_CLASSES": 10, "BATCHSIZE": 64, "LR": 0.05, "MOMENTUM": 0.9,
                                    "GPU": 2, "DATA_DIR": str(data)},
                        cwd=str(tmp_path), progress_bar=False, execution_timeout=300)
    nb = nbformat.read(out, as_version=4)
    text = _outputs_text(nb)
    assert "ERROR" not in text
    assert "epoch 2/2" in text and "learners 2" in text and "val_accuracy" in text
    steps = 2 * (384 // 64)
    assert f"steps {steps}" in text
    assert (job_dir / "model" / "model.pkl").exists()
    assert sorted((job_dir / "checkpoints").glob("ckpt-*.pt"))
    recorded = [json.loads(ln) for ln in (job_dir / "metrics.jsonl").read_text().splitlines()]
    assert any("accuracy" in m for m in recorded)


@pytest.mark.parametrize("max_gpus", [2])
@pytest.mark.slow
def test_digits_elastic_notebook(tmp_path, monkeypatch, max_gpus):
    for k in ("NBRUNNER_JOB_ID", "NBRUNNER_JOB_DIR", "NBRUNNER_REDIS_URL"):
        monkeypatch.delenv(k, raising=False)
    out = tmp_path / "output.ipynb"
    pm.execute_notebook(str(NOTEBOOKS / "digits_elastic.ipynb"), str(out), kernel_name="python3",
                        parameters={"EPOCHS": 3, "LR": 0.05, "MAX_GPUS": max_gpus}, cwd=str(tmp_path),
                        progress_bar=False, execution_timeout=300)
    text = _outputs_text(nbformat.read(out, as_version=4))
    assert "epoch 3/3" in text
    m = re.search(r"^accuracy ([0-9.]+) after (\d+) steps", text, re.M)
    assert m, text
    assert float(m.group(1)) > 0.85 and int(m.group(2)) == 3 * (1500 // 64)
