"""HistoryRecorder: the learners' records turned into the History, the callbacks and the
printed progress (outside a job: nothing goes to a job record)."""
from __future__ import annotations

import pytest

from nbrunner.elastic import Callback
from nbrunner.elastic.history import HistoryRecorder
from nbrunner.elastic.options import TrainOptions
from nbrunner.elastic.protocol import ElasticTrainingError, Plan


class Calls(Callback):
    def __init__(self):
        self.calls: list = []

    def on_train_begin(self, info):
        self.calls.append(("begin", info))

    def on_step(self, step, logs):
        self.calls.append(("step", step, logs))

    def on_epoch_end(self, epoch, logs):
        self.calls.append(("epoch", epoch, logs))

    def on_rescale(self, info):
        self.calls.append(("rescale", info))

    def on_failure(self, info):
        self.calls.append(("failure", info))

    def on_train_end(self, history):
        self.calls.append(("end", history))


@pytest.fixture
def recorder(monkeypatch):
    monkeypatch.delenv("NBRUNNER_JOB_ID", raising=False)
    said: list = []
    cb = Calls()
    rec = HistoryRecorder(TrainOptions(epochs=2, effective_batch_size=10, print_every=0), [cb], said.append)
    return rec, cb, said


def step(rec, s, t, world=2, loss=1.0):
    rec.on_step({"type": "step", "step": s, "loss": loss, "world": world, "t": t})


def test_steps_give_the_throughput_and_reach_the_slot_source_and_callbacks(recorder):
    rec, cb, _ = recorder
    progress: list = []
    rec.begin(progress.append)
    assert cb.calls == [("begin", {"epochs": 2, "effective_batch_size": 10, "resumed_from_step": None})]
    step(rec, 1, 100.0)
    step(rec, 2, 100.5)
    step(rec, 3, 101.0)
    assert progress == [1, 2, 3]
    assert rec.sps() == pytest.approx(2 * 10 / 1.0)
    assert cb.calls[-1] == ("step", 3, {"loss": 1.0, "learners": 2, "samples_per_s": pytest.approx(20.0), "time": 101.0})
    assert (rec.step, rec.step_high, rec.world) == (3, 3, 2)


def test_a_resize_is_recorded_with_its_pause_and_a_recovery_with_its_recomputed_steps(recorder):
    rec, cb, said = recorder
    rec.on_generation(Plan(1, ["L1", "L2"], "L1", "restart", reason="start"),
                      {"step": 0, "from": 0, "to": 2, "pause_s": None})
    assert rec.history.rescales == [] and rec.world == 2
    step(rec, 12, 1.0)
    rec.on_generation(Plan(2, ["L1"], "L1", "live", prev_world=2, reason="grant"),
                      {"step": 12, "from": 2, "to": 1, "pause_s": 0.03})
    rec.reached(20)                              # a learner got to step 20 before it failed
    rec.on_generation(Plan(3, ["L1"], "L1", "snapshot", prev_world=1, reason="failure"),
                      {"step": 15, "from": 1, "to": 1, "pause_s": 0.5})
    assert rec.history.rescales == [
        {"step": 12, "from": 2, "to": 1, "pause_s": 0.03, "reason": "grant"},
        {"step": 15, "from": 1, "to": 1, "pause_s": 0.5, "reason": "failure", "replayed_steps": 5}]
    assert [c[1] for c in cb.calls if c[0] == "rescale"] == rec.history.rescales
    assert said == ["  learners 2 -> 1 at step 12 (grant, pause 0.030 s)",
                    "  learners 1 -> 1 at step 15 (failure, pause 0.500 s, 5 steps recomputed from snapshot)"]
    assert rec.step == 15


def test_an_epoch_row_is_kept_once_with_the_throughput(recorder):
    rec, cb, said = recorder
    rec.on_dataset({"steps_per_epoch": 5, "n_train": 50})
    step(rec, 4, 10.0)
    step(rec, 5, 11.0)
    row = {"epoch": 1, "train_loss": 0.5, "val_loss": 0.4, "val_accuracy": 0.9, "world_sizes": [2], "step": 5}
    rec.on_epoch(row)
    rec.on_epoch(dict(row, train_loss=9.0))     # the same epoch again (a recovery replayed it): ignored
    epochs = [c for c in cb.calls if c[0] == "epoch"]
    assert epochs == [("epoch", 1, dict(row, samples_per_s=10.0))]
    assert said[-1].startswith("epoch 1/2 [##########          ]  50%  loss 0.5000  val_loss 0.4000")
    rec.finished({"epochs": [epochs[0][2]], "step": 5})
    assert (rec.history.steps, rec.history.samples_per_s) == (5, 10.0)
    assert rec.done_line() == "ElasticTrainer: done, 5 steps, 0 resize(s), 0 failure(s), val_accuracy 0.9000"


def test_a_resumed_run_must_see_the_same_training_set(recorder, tmp_path):
    rec, _, said = recorder
    rec.resumed(tmp_path / "ckpt-000000010.pt", {"step": 10, "epochs": [{"epoch": 1}], "loss_n": 0}, 50, False)
    assert rec.history.resumed_from_step == 10 and rec.step == rec.step_high == 10
    assert rec.history.checkpoints == [str(tmp_path / "ckpt-000000010.pt")]
    assert said[0].startswith("ElasticTrainer: resuming from")
    with pytest.raises(ElasticTrainingError, match="a training set of 50 samples, get_datasets\\(\\) now returns 60"):
        rec.on_dataset({"steps_per_epoch": 6, "n_train": 60})


def test_failures_and_the_end_reach_the_callbacks(recorder):
    rec, cb, _ = recorder
    info = {"learner": "L2", "exit_code": -9}
    rec.failure(info)
    rec.on_checkpoint("/c/ckpt-1.pt")
    rec.on_checkpoint("/c/ckpt-1.pt")
    h = rec.end(3.5)
    assert h.failures == [info] and h.checkpoints == ["/c/ckpt-1.pt"] and h.wall_time_s == 3.5
    assert cb.calls == [("failure", info), ("end", h)]
