"""What a learner holds (LearnerState), which samples each step takes (StepBatches), and its
checkpoint files."""
from __future__ import annotations

import time

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

from nbrunner.elastic.batches import StepBatches
from nbrunner.elastic.checkpoints import CheckpointWriter, latest_checkpoint, remove_stale
from nbrunner.elastic.protocol import epoch_permutation
from nbrunner.elastic.state import LearnerState, fresh_train_state


def learner_state() -> LearnerState:
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return LearnerState(model, opt, fresh_train_state())


def train_step(state: LearnerState) -> None:
    state.begin_step()
    state.opt.zero_grad()
    state.model(torch.randn(4, 3)).sum().backward()
    state.opt.step()
    state.end_step()


def params(state: LearnerState) -> dict:
    return {k: v.clone() for k, v in state.model.state_dict().items()}


def test_a_snapshot_restores_model_optimizer_and_position():
    s = learner_state()
    train_step(s)
    s.count_loss(0.5)
    s.snapshot()
    kept, kept_ts = params(s), dict(s.ts)
    kept_momentum = s.opt.state_dict()["state"][0]["momentum_buffer"].clone()
    for _ in range(3):
        train_step(s)
    assert s.step == 4 and s.snap_step == 1
    s.restore_snapshot()
    assert s.step == 1 and s.ts == kept_ts
    assert all(torch.equal(s.model.state_dict()[k], kept[k]) for k in kept)
    assert torch.equal(s.opt.state_dict()["state"][0]["momentum_buffer"], kept_momentum)
    buffers = dict(s.snap.model)
    train_step(s)                                # training on does not touch the snapshot ...
    assert all(torch.equal(s.snap.model[k], kept[k]) for k in kept)
    s.snapshot()                                 # ... and the next one reuses its buffers
    assert all(s.snap.model[k] is buffers[k] for k in buffers) and s.snap_step == 2


def test_a_failure_snapshots_only_a_consistent_newer_state():
    s = learner_state()
    s.snapshot_if_behind()
    assert s.snap_step == 0
    train_step(s)
    s.begin_step()                               # failed mid-step
    s.snapshot_if_behind()
    assert s.snap_step == 0
    s.mark_consistent()
    s.snapshot_if_behind()
    assert s.snap_step == 1


def test_a_learner_without_a_snapshot_cannot_be_a_recovery_source():
    with pytest.raises(RuntimeError, match="recovery source has no snapshot"):
        learner_state().restore_snapshot()


def test_an_epoch_row_closes_the_epoch():
    s = learner_state()
    s.note_world(2)
    s.note_world(2)
    s.note_world(1)
    s.count_loss(1.0)
    s.count_loss(3.0)
    train_step(s)
    row = s.close_epoch({"val_loss": 0.25}, world=1)
    assert {k: row[k] for k in ("epoch", "train_loss", "val_loss", "world_sizes", "step")} == {
        "epoch": 1, "train_loss": 2.0, "val_loss": 0.25, "world_sizes": [2, 1], "step": 1}
    assert abs(row["time"] - time.time()) < 5
    assert s.epochs_done == 1 and (s.ts["loss_sum"], s.ts["loss_n"], s.ts["sizes"]) == (0.0, 0, [1])


def test_the_final_state_and_a_cpu_copy_are_copies():
    import io

    s = learner_state()
    train_step(s)
    copy = s.cpu_copy()
    final = torch.load(io.BytesIO(s.final_bytes()), weights_only=True)
    train_step(s)
    assert copy["train_state"]["step"] == 1 and final["train_state"]["step"] == 1
    assert not torch.equal(copy["model"]["weight"], s.model.weight.detach())
    assert torch.equal(copy["model"]["weight"], final["model"]["weight"])


def test_the_learners_chunks_make_up_each_step_of_the_epoch():
    n, B = 53, 8
    data = TensorDataset(torch.arange(n).float().unsqueeze(1), torch.arange(n))
    for W in (1, 2, 3, 5):
        batches = [StepBatches(data, None, B, seed=4, epochs=2) for _ in range(W)]
        assert batches[0].steps_per_epoch == 6 and batches[0].total == 12
        for step in (0, 5, 6, 11):
            epoch, pos = divmod(step, 6)
            parts = [b.train_batch(step, W, r, torch.device("cpu")) for r, b in enumerate(batches)]
            assert torch.cat([y for _, y, _ in parts]).tolist() == \
                epoch_permutation(n, 4, epoch)[pos * B:(pos + 1) * B].tolist()
            assert sum(share for _, _, share in parts) == pytest.approx(W)


def test_the_test_set_is_split_over_the_learners():
    test = TensorDataset(torch.zeros(23, 1), torch.arange(23))
    b = StepBatches(TensorDataset(torch.zeros(8, 1), torch.zeros(8)), test, 4, seed=0, epochs=1)
    seen = [y for r in range(3) for _, y in b.test_batches(3, r, 5, torch.device("cpu"))]
    assert torch.cat(seen).tolist() == list(range(23)) and b.n_test == 23


def test_a_training_set_smaller_than_the_global_batch_is_refused():
    with pytest.raises(ValueError, match="the training set has 3 samples, fewer than effective_batch_size=4"):
        StepBatches(TensorDataset(torch.zeros(3, 1), torch.zeros(3)), None, 4, seed=0, epochs=1)


def test_checkpoints_keep_the_newest_and_a_torn_one_is_skipped(tmp_path, capsys):
    writer = CheckpointWriter(str(tmp_path), keep=2)
    written: list = []
    for step in (10, 20, 30):
        writer.write({"step": step, "model": {"w": torch.ones(2) * step}}, step, written.append)
    writer.join()
    assert not writer.busy()
    assert written == [tmp_path / f"ckpt-{s:09d}.pt" for s in (10, 20, 30)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt-000000020.pt", "ckpt-000000030.pt"]
    (tmp_path / "ckpt-000000040.pt").write_bytes(b"torn")
    (tmp_path / ".ckpt-000000050.pt.123.tmp").write_bytes(b"unfinished")
    path, ck = latest_checkpoint(tmp_path)
    assert path.name == "ckpt-000000030.pt" and ck["step"] == 30
    assert "ignoring unreadable checkpoint ckpt-000000040.pt" in capsys.readouterr().err
    remove_stale(tmp_path)
    assert not list(tmp_path.glob(".*.tmp"))
    assert latest_checkpoint(tmp_path / "missing") == (None, None) and latest_checkpoint(None) == (None, None)
