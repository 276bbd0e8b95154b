"""Checkpoint files: ``ckpt-<step>.pt`` in a run's checkpoint directory, written by learner
rank 0 at an epoch end (in a thread, through a temp file and a rename; the newest ``keep``
are kept) and read by the driver to resume a run or to restart it after a failure."""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Callable, Optional

FORMAT = "nbrunner.elastic.checkpoint/1"


def latest_checkpoint(d: Optional[Path]) -> tuple[Optional[Path], Optional[dict]]:
    """The newest readable checkpoint in ``d`` and its contents, or ``(None, None)``."""
    if d is None or not d.is_dir():
        return None, None
    import torch

    for p in sorted(d.glob("ckpt-*.pt"), reverse=True):
        try:
            return p, torch.load(p, map_location="cpu", weights_only=True)
        except Exception as e:  # a torn or foreign file: try the previous one
            print(f"ElasticTrainer: ignoring unreadable checkpoint {p.name}: {e}", file=sys.stderr)
    return None, None


def remove_stale(d: Optional[Path]) -> None:
    """Remove the temp files of writes a previous run did not finish (never read)."""
    if d is not None and d.is_dir():
        for stale in d.glob(".ckpt-*.tmp"):
            try:
                stale.unlink()
            except OSError:
                pass


class CheckpointWriter:
    """Writes a learner's checkpoints into ``directory``, one at a time, each in a thread of
    its own so that training goes on meanwhile."""

    def __init__(self, directory: Optional[str], keep: int):
        self.directory = Path(directory) if directory else None
        self.keep = max(1, keep)
        self._thread: Optional[threading.Thread] = None

    def write(self, state: dict, step: int, written: Callable[[Path], None]) -> None:
        """Write ``state`` as the checkpoint of ``step`` (after the previous write ended),
        then call ``written`` with its path (from the writing thread)."""
        d, keep = self.directory, self.keep

        def write():
            import torch

            d.mkdir(parents=True, exist_ok=True)
            final = d / f"ckpt-{step:09d}.pt"
            tmp = d / f".{final.name}.{os.getpid()}.tmp"
            torch.save(state, tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, final)
            for old in sorted(d.glob("ckpt-*.pt"))[:-keep]:
                try:
                    old.unlink()
                except OSError:
                    pass
            written(final)

        self.join()
        self._thread = threading.Thread(target=write, name="nbrunner-ckpt", daemon=False)
        self._thread.start()

    def busy(self) -> bool:
        t = self._thread
        return t is not None and t.is_alive()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()
