"""A job re-run after its driver died resumes from the latest checkpoint and ends on the
parameters of an uninterrupted run."""
from __future__ import annotations

import pytest

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import torch

from .digits_setup import BATCH, EPOCHS, max_abs_diff

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {tests!r})
    import torch
    from elastic.digits_setup import BATCH, EPOCHS, SlowCrossEntropy, make_get_datasets, make_mlp
    from nbrunner.elastic import ElasticTrainer

    model, opt = make_mlp()
    trainer = ElasticTrainer(model, make_get_datasets({npz!r}), SlowCrossEntropy(0.01), opt)
    h = trainer.train(epochs=EPOCHS, effective_batch_size=BATCH, max_gpus=2, checkpoint_dir={ckpt!r},
                      checkpoint_every=1, verbose=1)
    torch.save(trainer.model.state_dict(), {out!r})
    print("HISTORY", json.dumps(h.to_dict()))
""")


def _wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_resume_after_driver_killed(tmp_path, digits_npz, reference):
    ckpt = tmp_path / "checkpoints"
    out = tmp_path / "final.pt"
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(tests=str(TESTS), npz=digits_npz, ckpt=str(ckpt), out=str(out)))
    spe = 1500 // BATCH
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBRUNNER_")}

    first = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        target = ckpt / f"ckpt-{2 * spe:09d}.pt"   # written at the end of epoch 2
        _wait_for(lambda: target.exists() or first.poll() is not None, 120, "the epoch-2 checkpoint")
        first.send_signal(signal.SIGKILL)          # the "worker" dies: driver and (PDEATHSIG) learners
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
    log1 = first.stdout.read().decode()
    assert target.exists(), log1
    assert not out.exists(), "the first run should have been killed before the end:\n" + log1

    second = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=240)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "resuming from" in second.stdout
    hist = json.loads(second.stdout.split("HISTORY ", 1)[1])
    assert hist["resumed_from_step"] >= 2 * spe
    assert hist["steps"] == EPOCHS * spe
    assert [e["epoch"] for e in hist["epochs"]] == list(range(1, EPOCHS + 1))

    ref_sd, ref_hist, _ = reference
    final = torch.load(out, weights_only=True)
    assert max_abs_diff(final, ref_sd) <= 1e-4
    for a, b in zip(hist["epochs"], ref_hist.epochs):
        assert abs(a["train_loss"] - b["train_loss"]) < 1e-4

    # checkpoints hold model, optimizer, epoch, position and RNG state; no temp files remain
    assert not list(ckpt.glob(".*.tmp"))
    files = sorted(ckpt.glob("ckpt-*.pt"))
    assert files and len(files) <= 2
    ck = torch.load(files[-1], weights_only=True)
    assert {"model", "optimizer", "epoch", "position", "step", "rng", "train_state"} <= set(ck)
    assert ck["epoch"] == EPOCHS and ck["step"] == EPOCHS * spe

    # a third run finds the training complete and does not start learners
    third = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120)
    assert third.returncode == 0, third.stdout + third.stderr
    assert "already complete" in third.stdout
    assert max_abs_diff(torch.load(out, weights_only=True), ref_sd) <= 1e-4
