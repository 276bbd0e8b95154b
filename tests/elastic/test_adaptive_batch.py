"""Batch-size adaptation on real learners (gloo, CPU): the digits MLP converges as with the fixed
batch while its batch follows its learners, resized mid-run; a checkpoint keeps its mode."""
from __future__ import annotations

import pytest
import torch

from nbrunner.elastic import ElasticTrainer, ScriptedSlots
from nbrunner.elastic.recovery import resume
from nbrunner.elastic.options import TrainOptions

from .digits_setup import BATCH, SlowCrossEntropy, make_get_datasets, make_mlp, train_digits

pytestmark = pytest.mark.slow

EPOCHS = 10
MAX_BATCH = 96


@pytest.fixture(scope="module")
def fixed(digits_npz):
    """The fixed-batch run: one learner, global batch 32, 10 epochs."""
    return train_digits(digits_npz, max_gpus=1, delay=0.0, epochs=EPOCHS)[1]


def adaptive_run(digits_npz, script, tmp_path=None):
    model, opt = make_mlp()
    trainer = ElasticTrainer(model, make_get_datasets(digits_npz), SlowCrossEntropy(0.004), opt,
                             adaptive_batch=True, max_batch=MAX_BATCH)
    hist = trainer.train(epochs=EPOCHS, effective_batch_size=BATCH, max_gpus=max(n for _, n in script),
                         slots=ScriptedSlots(script), prestart=1, verbose=0,
                         checkpoint_dir=None if tmp_path is None else str(tmp_path))
    return hist


def test_resized_adaptive_run_reaches_the_fixed_batch_accuracy(digits_npz, fixed):
    hist = adaptive_run(digits_npz, [(0, 4), (40, 2)])
    assert [(r["from"], r["to"]) for r in hist.rescales] == [(4, 2)]
    acc, ref = hist.epochs[-1]["val_accuracy"], fixed.epochs[-1]["val_accuracy"]
    print(f"final accuracy: adaptive {acc:.4f}, fixed batch {ref:.4f}")
    assert abs(acc - ref) <= 0.01
    assert len(hist.epochs) == EPOCHS and hist.steps < fixed.steps  # larger batches: fewer steps
    for e in hist.epochs:  # every epoch row says the batch, gain and efficiency it ended with
        world = e["world_sizes"][-1]
        assert e["batch_size"] == min(BATCH * world, MAX_BATCH)
        assert e["lr_factor"] == e["gain"] and 1.0 < e["gain"] <= e["batch_size"] / BATCH
        assert e["statistical_efficiency"] == pytest.approx(e["gain"] * BATCH / e["batch_size"])
        assert e["noise_scale"] > 0
    assert hist.epochs[0]["batch_size"] == MAX_BATCH and hist.epochs[-1]["batch_size"] == 2 * BATCH
    # an epoch is a pass over the data whatever the batch: 1500 samples, the remainder dropped
    steps = [b["step"] - a["step"] for a, b in zip([{"step": 0}] + hist.epochs, hist.epochs)]
    assert steps[0] == 1500 // MAX_BATCH and steps[-1] == 1500 // (2 * BATCH)


def test_a_lone_learner_measures_the_noise_scale_and_keeps_its_batch(digits_npz, fixed, tmp_path):
    hist = adaptive_run(digits_npz, [(0, 1)], tmp_path)
    assert hist.steps == fixed.steps  # one learner: the base batch, as the fixed run
    assert all(e["batch_size"] == BATCH and e["gain"] == 1.0 for e in hist.epochs)
    assert all(e["noise_scale"] > 0 for e in hist.epochs)  # from the two halves of each batch
    assert abs(hist.epochs[-1]["val_accuracy"] - fixed.epochs[-1]["val_accuracy"]) <= 0.01
    ckpt = torch.load(hist.checkpoints[-1], weights_only=True)
    assert ckpt["config"]["adaptive_batch"] is True and ckpt["train_state"]["gns"]["w"] > 0
    model, opt = make_mlp()
    with pytest.raises(ValueError, match="adaptive_batch"):  # a fixed-batch run cannot take it up
        resume(TrainOptions(effective_batch_size=BATCH), tmp_path, model, opt)
    done = resume(TrainOptions(effective_batch_size=BATCH, adaptive_batch=True, epochs=EPOCHS), tmp_path, model, opt)
    assert done.finished
