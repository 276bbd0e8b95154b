"""A shrink gives the slot back at once, and the job grows back when the slot returns.

The learner left out at a shrink must exit by itself and the trainer must confirm the
release right away (``SlotSource.released``): until then the allocator cannot hand the
slot to the job that is waiting for it.  When the slot is granted again, a learner is put
on it -- a standby one (local launcher) or a freshly started one (a launcher without
standby support, like the cluster's) -- and joins the running group.  A learner that does
not leave is stopped after a grace; one that cannot be started is retried, not fatal; and
the end of a generation cannot deadlock a learner on its way out."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from torch import nn

from nbrunner.elastic import Callback, ElasticTrainer, LocalLauncher, LocalSlots, ScriptedSlots

from .digits_setup import BATCH, EPOCHS, make_get_datasets, make_mlp, max_abs_diff, train_digits

pytestmark = pytest.mark.slow

SLOW_STEP = 0.15  # per training step until the grow happened: a new learner needs seconds to start


class GatedCrossEntropy(nn.Module):
    """Cross-entropy; each training step also sleeps ``delay`` while the file ``gate``
    exists, so that the run outlasts the start of a new learner on a loaded machine
    without being slow once the grow happened.  Timing only: no number changes."""

    def __init__(self, gate: str, delay: float):
        super().__init__()
        self.gate, self.delay = gate, delay

    def forward(self, out, y):
        if out.requires_grad and os.path.exists(self.gate):
            time.sleep(self.delay)
        return nn.functional.cross_entropy(out, y)


class NoStandbyLauncher(LocalLauncher):
    supports_standby = False  # like the cluster launcher: every learner starts on its slot


class RecordingSlots(ScriptedSlots):
    def __init__(self, script):
        super().__init__(script)
        self.releases: list = []   # (monotonic time, slot indices)
        self.seen: set = set()     # every slot index ever granted

    def granted(self):
        g = super().granted()
        self.seen.update(s.index for s in g)
        return g

    def released(self, slots):
        self.releases.append((time.monotonic(), sorted(s.index for s in slots)))
        super().released(slots)


@pytest.mark.parametrize("standby", [True, False], ids=["standby", "no-standby"])
def test_shrink_releases_the_slot_at_once_and_grows_back(digits_npz, reference, tmp_path, standby):
    gate = tmp_path / "slow"
    gate.touch()
    slots = RecordingSlots([(0, 2), (12, 1), (40, 2)])
    rescales = []

    class Rec(Callback):
        def on_rescale(self, info):
            rescales.append((time.monotonic(), info))
            if (info["from"], info["to"]) == (1, 2):
                gate.unlink()

    model, opt = make_mlp()
    trainer = ElasticTrainer(model, make_get_datasets(digits_npz), GatedCrossEntropy(str(gate), SLOW_STEP), opt,
                             callbacks=[Rec()])
    launcher = LocalLauncher() if standby else NoStandbyLauncher()
    hist = trainer.train(epochs=EPOCHS, effective_batch_size=BATCH, max_gpus=2, slots=slots, launcher=launcher,
                         verbose=0)

    assert [(r["from"], r["to"]) for r in hist.rescales] == [(2, 1), (1, 2)], (hist.rescales, hist.failures)
    assert [info for _, info in rescales] == hist.rescales
    assert hist.failures == []
    t_shrink, t_grow = rescales[0][0], rescales[1][0]
    # the learner of slot 1 left at the shrink: its slot is confirmed released at once,
    # long before the grow (not with everything else when training ends)
    first = [(t, idx) for t, idx in slots.releases if 1 in idx]
    assert first, slots.releases
    t_release, idx = first[0]
    assert idx == [1], slots.releases
    assert t_release - t_shrink < 2.0, (t_release - t_shrink, slots.releases)
    assert t_release < t_grow
    # so the source could grant slot 1 again for the grow: no other slot was ever needed
    assert slots.seen == {0, 1}, slots.seen
    # and the resized run still follows the static trajectory
    ref_sd, ref_hist, _ = reference
    assert hist.steps == ref_hist.steps
    assert max_abs_diff(trainer.model.state_dict(), ref_sd) <= 1e-4


class _HidesItsExit:
    """A learner handle that reports the process as running until the driver stops it:
    from the driver's side, a learner stuck on its way out."""

    def __init__(self, handle):
        self.handle, self.pid, self.stopped = handle, handle.pid, False

    def poll(self):
        rc = self.handle.poll()
        return rc if self.stopped else None

    def terminate(self):
        self.stopped = True
        self.handle.terminate()

    def kill(self):
        self.stopped = True
        self.handle.kill()

    def wait(self, timeout=None):
        if not self.stopped:
            time.sleep(timeout or 0)
            return None
        return self.handle.wait(timeout)


class StuckLeaverLauncher(LocalLauncher):
    def __init__(self):
        super().__init__()
        self.stuck: list = []

    def launch(self, spec):
        handle = super().launch(spec)
        if spec.learner_id == "L2":  # the learner of slot 1, which the shrink drops
            handle = _HidesItsExit(handle)
            self.stuck.append(handle)
        return handle


def test_a_learner_that_does_not_leave_is_stopped_and_its_slot_released(digits_npz, tmp_path):
    from nbrunner.core.config import LEARNER_LEAVE_GRACE_S as LEAVE_GRACE_S

    gate = tmp_path / "slow"
    gate.touch()
    slots = RecordingSlots([(0, 2), (12, 1)])
    rescales = []

    class Rec(Callback):
        def on_rescale(self, info):
            rescales.append((time.monotonic(), info))

    launcher = StuckLeaverLauncher()
    model, opt = make_mlp()
    trainer = ElasticTrainer(model, make_get_datasets(digits_npz), GatedCrossEntropy(str(gate), 0.03), opt,
                             callbacks=[Rec()])
    hist = trainer.train(epochs=EPOCHS, effective_batch_size=BATCH, max_gpus=2, slots=slots, launcher=launcher,
                         prestart=0, verbose=0)
    assert [(r["from"], r["to"]) for r in hist.rescales] == [(2, 1)], (hist.rescales, hist.failures)
    assert hist.failures == []  # stopping a learner that left is not a failure
    assert len(launcher.stuck) == 1 and launcher.stuck[0].stopped
    t_shrink = rescales[0][0]
    first = [(t, idx) for t, idx in slots.releases if 1 in idx]
    assert first and first[0][1] == [1], slots.releases
    assert LEAVE_GRACE_S - 0.5 < first[0][0] - t_shrink < LEAVE_GRACE_S + 3.0, (first[0][0] - t_shrink, slots.releases)


class FlakyLauncher(LocalLauncher):
    """The first start of a learner on slot 1 fails (its host does not answer, say)."""

    def __init__(self):
        super().__init__()
        self.attempts: list = []

    def launch(self, spec):
        self.attempts.append(spec.slot.index if spec.slot is not None else None)
        if spec.slot is not None and spec.slot.index == 1 and self.attempts.count(1) == 1:
            raise RuntimeError("no worker on the slot's host started the learner")
        return super().launch(spec)


def test_a_learner_that_cannot_be_started_is_retried_not_fatal(digits_npz, reference):
    launcher = FlakyLauncher()
    sd, hist, _ = train_digits(digits_npz, slots=LocalSlots(2), max_gpus=2, launcher=launcher, delay=0.0)
    assert launcher.attempts.count(1) == 2, launcher.attempts
    assert any(2 in e["world_sizes"] for e in hist.epochs)
    ref_sd, ref_hist, _ = reference
    assert hist.steps == ref_hist.steps
    assert max_abs_diff(sd, ref_sd) <= 1e-4


TEARDOWN = r"""
import sys, time
import torch, torch.distributed as dist
from nbrunner.elastic.group import GenerationGroup

sys.setswitchinterval(30)  # a thread waiting for the GIL gets it only once the main thread blocks
store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
group = GenerationGroup(print)
for g in range(5):
    dist.init_process_group("gloo", store=dist.PrefixStore(f"g{g}/", store), rank=0, world_size=1)
    net = group.wrap(torch.nn.Linear(4, 2), torch.device("cpu"))
    net(torch.ones(2, 4)).sum().backward()
    exc = None
    if g % 2:  # a failed generation: the traceback's frames still reference the DDP module
        def step(net):
            raise RuntimeError("gloo: connection closed by peer")
        try:
            step(net)
        except RuntimeError as e:
            exc = e
    del net
    t = torch.ones(3)
    dist.all_reduce(t, async_op=True)  # its Work is dropped at once: gloo's worker thread owns it last
    end = time.perf_counter() + 0.2
    while time.perf_counter() < end:  # keep the GIL: the worker ends the collective, then waits for the GIL
        pass
    group.dissolve(exc)
    assert group.net is None and not dist.is_initialized()
print("ok", flush=True)
"""


def test_generation_teardown_does_not_deadlock_on_the_gil():
    """The end of a generation while a gloo worker thread waits for the GIL to drop the
    tensors of a finished collective: if DDP's reducer held the last reference to the
    process group, its destructor would join that thread with the GIL held, forever (the
    learner leaving at a shrink never exited, so its slot was never released)."""
    r = subprocess.run([sys.executable, "-c", TEARDOWN], capture_output=True, text=True, timeout=90)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
