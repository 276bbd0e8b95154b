"""How the learners of a generation agree on the step after which they switch to a newer plan.

Every step they all-reduce a small control vector ``[req, loss]``, launched when the step
ends and waited for when the next one ends, so that it overlaps a whole step: ``req`` is the
newest plan rank 0's poller saw in the store (the others add 0), so all learners read the
same one, one step later than it was seen; ``loss`` is each learner's weighted loss, whose
sum over the learners is W times the step's global loss."""
from __future__ import annotations

from typing import NamedTuple, Optional

import torch
import torch.distributed as dist


class Agreed(NamedTuple):
    """What the control all-reduce of one step carried."""

    req: int        # the newest plan rank 0 had seen
    loss: float     # the step's global loss
    step: int       # the step it ended (counted from 1)
    t: float        # when it ended
    world: int
    rank: int
    extra: tuple = ()  # the sums of the values the learners added (batch adaptation's gradient statistics)


class SwitchAgreement:
    """The control all-reduce in flight (at most one) and the collectives of the running
    generation that must outlive gloo's threads (released by :meth:`release`, never by them)."""

    def __init__(self):
        self._pending: Optional[tuple] = None   # (work, vector, step, t, W, rank)
        self._works: list = []

    @property
    def pending(self) -> bool:
        return self._pending is not None

    def launch(self, req: int, loss: torch.Tensor, step: int, t: float, world: int, rank: int,
               extra: tuple = ()) -> None:
        """Start the all-reduce of the step that just ended (``loss``: this learner's
        weighted loss of it; ``extra``: further numbers to sum over the learners)."""
        ctl = torch.stack([torch.tensor(float(req), dtype=torch.float64, device=loss.device),
                           loss.detach().to(torch.float64)])
        if extra:
            ctl = torch.cat([ctl, torch.tensor(extra, dtype=torch.float64, device=loss.device)])
        self._pending = (dist.all_reduce(ctl, async_op=True), ctl, step, t, world, rank)

    def drain(self) -> Optional[Agreed]:
        """Wait for the pending all-reduce (None if none is pending)."""
        p = self._pending
        if p is None:
            return None
        work, ctl, step, t, world, rank = p
        work.wait()
        self._pending = None
        self._works = [work]  # released by the next step or by release(), never by gloo's thread
        return _agreed(ctl, step, t, world, rank)

    def settle(self) -> tuple[Optional[Agreed], bool]:
        """After a failed collective: ``(agreed, lost)``, the pending all-reduce's result if it
        completed, and whether one was pending and did not complete (its step's loss is lost)."""
        p, self._pending = self._pending, None
        if p is None:
            return None, False
        self._works.append(p[0])
        try:
            done = p[0].is_completed()
            if done:
                p[0].wait()
        except Exception:
            done = False
        if not done:
            return None, True
        ctl, step, t, world, rank = p[1:]
        return _agreed(ctl, step, t, world, rank), False

    def release(self) -> None:
        """Drop the generation's collectives (once its process group is destroyed)."""
        self._works.clear()
        self._pending = None


def _agreed(ctl: torch.Tensor, step: int, t: float, world: int, rank: int) -> Agreed:
    values = ctl.tolist()
    return Agreed(int(values[0]), float(values[1]) / world, step, t, world, rank, tuple(values[2:]))
