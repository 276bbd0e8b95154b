"""TrainOptions: the arguments of ElasticTrainer.train, checked and normalised once."""
from __future__ import annotations

import dataclasses
import inspect

import pytest

from nbrunner.elastic import ElasticTrainer
from nbrunner.elastic.options import TrainOptions


def test_defaults_are_the_ones_train_takes():
    """train()'s arguments, and the trainer's batch adaptation (its constructor's), with their defaults."""
    params = inspect.signature(ElasticTrainer.train).parameters
    train_defaults = {k: p.default for k, p in params.items() if k != "self"}
    ctor = inspect.signature(ElasticTrainer.__init__).parameters
    train_defaults.update({k: ctor[k].default for k in ("adaptive_batch", "max_batch")})
    assert train_defaults == {f.name: f.default for f in dataclasses.fields(TrainOptions)}


def test_batch_adaptation_options_are_checked():
    assert TrainOptions(adaptive_batch=True, max_batch=64, effective_batch_size=32).max_batch == 64
    assert TrainOptions(adaptive_batch=1).adaptive_batch is True
    for kw, words in (({"max_batch": 64}, "needs adaptive_batch"), ({"adaptive_batch": True, "max_batch": 16},
                      ">= effective_batch_size"), ({"adaptive_batch": True, "max_batch": 64.5}, "whole number")):
        with pytest.raises(ValueError, match=words):
            TrainOptions(effective_batch_size=32, **kw)
    cfg = TrainOptions(adaptive_batch=True, max_batch=64, effective_batch_size=32).learner_config(None)
    assert cfg["adaptive_batch"] is True and cfg["max_batch"] == 64


def test_values_are_normalised():
    o = TrainOptions(epochs=3.0, effective_batch_size=64.0, min_gpus=-2, checkpoint_every=None, timeout=5,
                     sync_batchnorm=1, print_every=0, keep_checkpoints=4.0)
    assert (o.epochs, o.effective_batch_size, o.min_gpus, o.checkpoint_every) == (3, 64, 0, 0)
    assert type(o.epochs) is int and type(o.timeout) is float and o.timeout == 5.0
    assert o.sync_batchnorm is True and type(o.print_every) is float and type(o.keep_checkpoints) is int


def test_max_gpus_zero_means_no_limit():
    o = TrainOptions(max_gpus=0, effective_batch_size=32)
    assert o.max_gpus is None and o.cap == 32


@pytest.mark.parametrize("kw, message", [
    ({"epochs": -1}, "epochs must be >= 0"),
    ({"effective_batch_size": 0}, "effective_batch_size >= 1"),
    ({"max_gpus": -1}, "max_gpus must be >= 1"),
    ({"min_gpus": 3, "max_gpus": 2}, r"min_gpus \(3\) > max_gpus \(2\)"),
])
def test_bad_values_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        TrainOptions(**kw)


def test_cap_is_max_gpus_but_never_more_than_the_global_batch():
    assert TrainOptions(effective_batch_size=4, max_gpus=8).cap == 4
    assert TrainOptions(effective_batch_size=256, max_gpus=2).cap == 2
    assert TrainOptions(effective_batch_size=8).cap == 8


def test_learner_config_holds_what_learners_read():
    cfg = TrainOptions(epochs=2, seed=7, snapshot_every=3).learner_config("/ckpt")
    assert cfg == {"epochs": 2, "effective_batch_size": 256, "seed": 7, "checkpoint_every": 1,
                   "sync_batchnorm": False, "snapshot_every": 3, "timeout": 60.0, "eval_batch_size": 512,
                   "broadcast_buffers": True, "find_unused_parameters": False, "keep_checkpoints": 2,
                   "checkpoint_dir": "/ckpt"}


def test_train_shows_the_documented_signature():
    """help(ElasticTrainer.train) and the docs show the parameters by name, with TrainOptions' defaults:
    the first six also by position, in the documented order, the others by keyword only."""
    params = list(inspect.signature(ElasticTrainer.train).parameters.values())
    assert [(p.name, p.default) for p in params[1:7]] == [
        ("epochs", 10), ("effective_batch_size", 256), ("max_gpus", None), ("min_gpus", 1),
        ("checkpoint_every", 1), ("seed", 0)]
    assert {p.kind for p in params[:7]} == {inspect.Parameter.POSITIONAL_OR_KEYWORD}
    assert {p.kind for p in params[7:]} == {inspect.Parameter.KEYWORD_ONLY}
    assert [p.name for p in params[7:]][:4] == ["slots", "launcher", "checkpoint_dir", "model_dir"]
    assert "adaptive_batch" not in [p.name for p in params]  # the trainer's, not train()'s
    assert inspect.signature(ElasticTrainer.train).return_annotation == "History"


def test_a_call_binds_to_the_options():
    o = TrainOptions.from_call((3, 64, 4), {"seed": 7, "timeout": 2}, adaptive_batch=False, max_batch=None)
    assert (o.epochs, o.effective_batch_size, o.max_gpus, o.min_gpus, o.seed, o.timeout) == (3, 64, 4, 1, 7, 2.0)
    assert TrainOptions.from_call((), {}) == TrainOptions()
    for args, kwargs, words in (((), {"epoch": 3}, "epoch"), ((1, 2, 3, 4, 5, 6, 7), {}, "too many positional"),
                                ((3,), {"epochs": 4}, "multiple values")):
        with pytest.raises(TypeError, match=words):
            TrainOptions.from_call(args, kwargs)
    with pytest.raises(TypeError, match="'sed'"):
        TrainOptions.from_call((), {"slots": None, "sed": 1})


def test_a_runs_set_up_is_its_model_and_batch_rule():
    """What sets samples/s at each learner count (the job's kind, nbrunner.core.kinds): the model's
    class and size and the batch rule; not the epochs, the seed or the learner bounds."""
    from torch import nn

    from nbrunner.elastic.trainer import setup_of

    def mlp(hidden: int = 64):
        return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    base = setup_of(mlp(), TrainOptions(effective_batch_size=32))
    assert base == setup_of(mlp(), TrainOptions(effective_batch_size=32, epochs=9, seed=3, max_gpus=4, min_gpus=2))
    others = {setup_of(mlp(128), TrainOptions(effective_batch_size=32)),
              setup_of(mlp(), TrainOptions(effective_batch_size=64)),
              setup_of(mlp(), TrainOptions(effective_batch_size=32, adaptive_batch=True)),
              setup_of(mlp(), TrainOptions(effective_batch_size=32, adaptive_batch=True, max_batch=128)),
              setup_of(mlp(), TrainOptions(effective_batch_size=32, sync_batchnorm=True)),
              setup_of(nn.Sequential(nn.Linear(64, 10)), TrainOptions(effective_batch_size=32))}
    assert len(others) == 6 and base not in others and len(base) == 16
