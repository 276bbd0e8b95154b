"""Slot sources, the global-batch split, synchronised BatchNorm, model saving, errors."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from nbrunner.elastic import (
    ElasticSyncBatchNorm, ElasticTrainer, ElasticTrainingError, LocalSlots, ScriptedSlots, Slot,
    SlotSource, convert_sync_batchnorm, load_model, register_slot_source_factory, save_model,
)
from nbrunner.elastic import slots as slots_mod
from nbrunner.elastic.protocol import epoch_permutation, split_bounds

from .digits_setup import make_get_datasets, make_mlp


def test_split_bounds_cover_the_global_batch():
    for total in (1, 7, 64, 256):
        for parts in range(1, min(total, 9) + 1):
            bounds = [split_bounds(total, parts, r) for r in range(parts)]
            assert bounds[0][0] == 0 and bounds[-1][1] == total
            assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
            sizes = [hi - lo for lo, hi in bounds]
            assert max(sizes) - min(sizes) <= 1


def test_epoch_permutation_depends_on_seed_and_epoch_only():
    a = epoch_permutation(100, seed=3, epoch=1)
    assert torch.equal(a, epoch_permutation(100, seed=3, epoch=1))
    assert sorted(a.tolist()) == list(range(100))
    assert not torch.equal(a, epoch_permutation(100, seed=3, epoch=2))
    assert not torch.equal(a, epoch_permutation(100, seed=4, epoch=1))


def test_scripted_slots_follow_steps_and_wait_for_release():
    s = ScriptedSlots([(0, 2), (5, 1), (12, 2)], host="h")
    assert isinstance(s, SlotSource)
    assert s.granted() == [Slot("h", 0), Slot("h", 1)]
    s.on_progress(4)
    assert len(s.granted()) == 2
    s.on_progress(5)
    assert s.granted() == [Slot("h", 0)]
    s.on_progress(12)                     # slot 1 not released yet: another one is granted
    assert s.granted() == [Slot("h", 0), Slot("h", 2)]
    s.released([Slot("h", 1)])
    assert s.log == [(0, 2), (5, 1), (12, 2)]


def test_local_slots_and_default_source(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert [s.device for s in LocalSlots(3).granted()] == [None, None, None]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    g = LocalSlots(4).granted()          # one learner per GPU at most
    assert [(s.device, s.gpu_index) for s in g] == [("cuda:2", 2), ("cuda:5", 5)]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")

    monkeypatch.delenv("NBRUNNER_JOB_ID", raising=False)
    src = slots_mod.default_slot_source(None, 1)
    assert isinstance(src, LocalSlots) and len(src.granted()) == 1
    assert len(slots_mod.default_slot_source(3, 1).granted()) == 3

    # inside a job, the registered cluster factory decides
    calls = []

    def factory(max_gpus, min_gpus, job_id):
        calls.append((max_gpus, min_gpus, job_id))
        return ScriptedSlots([(0, 1)])

    monkeypatch.setenv("NBRUNNER_JOB_ID", "j1")
    register_slot_source_factory(factory)
    try:
        assert isinstance(slots_mod.default_slot_source(4, 2), ScriptedSlots)
        assert calls == [(4, 2, "j1")]
    finally:
        register_slot_source_factory(None)
    # ... or NBRUNNER_SLOT_SOURCE=module:factory
    monkeypatch.setenv("NBRUNNER_SLOT_SOURCE", "nbrunner.elastic.slots:LocalSlots")
    with pytest.raises(TypeError):  # LocalSlots does not take these keywords: proves it was called
        slots_mod.default_slot_source(2, 1)
    monkeypatch.delenv("NBRUNNER_SLOT_SOURCE")
    # a job granted no GPU trains with one local CPU learner
    assert [s.device for s in slots_mod.default_slot_source(0, 0).granted()] == [None]


def test_sync_batchnorm_single_process_is_batchnorm():
    torch.manual_seed(0)
    bn = nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4))
    ref = nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4))
    ref.load_state_dict(bn.state_dict())
    conv = convert_sync_batchnorm(bn)
    assert isinstance(conv[1], ElasticSyncBatchNorm)
    assert conv[1].weight is bn[1].weight
    x = torch.randn(8, 2, 6, 6)
    assert torch.allclose(conv(x), ref(x))
    assert torch.allclose(conv[1].running_mean, ref[1].running_mean)


def test_save_and_load_model(tmp_path):
    class Local(nn.Module):  # not importable from anywhere: pickled by value
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(x) * 2

    m = Local()
    save_model(m, tmp_path / "m")
    assert {p.name for p in (tmp_path / "m").iterdir()} >= {"model.pkl", "state_dict.pt", "meta.json"}
    m2 = load_model(tmp_path / "m")
    x = torch.randn(4, 3)
    assert torch.equal(m(x), m2(x)) and not m2.training


def test_argument_validation(digits_npz):
    model, opt = make_mlp()
    other = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)
    with pytest.raises(ValueError, match="not parameters of the model"):
        ElasticTrainer(model, make_get_datasets(digits_npz), nn.CrossEntropyLoss(), other)
    tr = ElasticTrainer(model, make_get_datasets(digits_npz), nn.CrossEntropyLoss(), opt)
    with pytest.raises(ValueError, match="min_gpus"):
        tr.train(epochs=1, max_gpus=1, min_gpus=2)


def _bad_loss(out, y):
    raise ZeroDivisionError("broken loss function")


@pytest.mark.slow
def test_exception_in_user_code_is_reported(digits_npz):
    model, opt = make_mlp()
    tr = ElasticTrainer(model, make_get_datasets(digits_npz), _bad_loss, opt)
    with pytest.raises(ElasticTrainingError, match="ZeroDivisionError: broken loss function"):
        tr.train(epochs=1, effective_batch_size=64, max_gpus=1, verbose=0)
    with pytest.raises(ElasticTrainingError, match="fewer than effective_batch_size"):
        ElasticTrainer(model, make_get_datasets(digits_npz), nn.CrossEntropyLoss(), opt).train(
            epochs=1, effective_batch_size=5000, max_gpus=1, verbose=0)
