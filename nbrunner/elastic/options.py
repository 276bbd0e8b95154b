"""The options of one training run (:class:`TrainOptions`): what
:meth:`~nbrunner.elastic.ElasticTrainer.train` was called with, checked and normalised once.

The fields are train()'s parameters, declared here only: :func:`train_signature` makes
train()'s signature from them (what ``help()`` and the docs show) and
:meth:`TrainOptions.from_call` binds a call's arguments to them.
"""
from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, Optional

# train()'s parameters that may also be given by position, in this order
POSITIONAL = ("epochs", "effective_batch_size", "max_gpus", "min_gpus", "checkpoint_every", "seed")
# fields set by the trainer (ElasticTrainer(adaptive_batch=..., max_batch=...)), not by train()
TRAINER_FIELDS = ("adaptive_batch", "max_batch")


@dataclass
class TrainOptions:
    """Arguments of :meth:`ElasticTrainer.train` (documented there), with the same defaults.

    Raises:
        ValueError: ``epochs`` < 0, ``effective_batch_size`` < 1, ``max_gpus`` < 0,
            ``min_gpus`` > ``max_gpus`` (``max_gpus=0`` means no limit, like None), or
            ``max_batch`` without ``adaptive_batch`` or below ``effective_batch_size``.

    ``adaptive_batch`` and ``max_batch`` are the trainer's (``ElasticTrainer(adaptive_batch=...,
    max_batch=...)``, see :mod:`nbrunner.elastic.adaptive`).
    """

    epochs: int = 10
    effective_batch_size: int = 256
    max_gpus: Optional[int] = None
    min_gpus: int = 1
    checkpoint_every: int = 1
    seed: int = 0
    slots: Any = None
    launcher: Any = None
    checkpoint_dir: Any = None
    model_dir: Any = None
    sync_batchnorm: bool = False
    snapshot_every: int = 10
    timeout: float = 60.0
    verbose: int = 1
    print_every: float = 30.0
    master_addr: Optional[str] = None
    eval_batch_size: int = 512
    max_failures: int = 20
    max_slot_failures: int = 3
    join_wait: float = 3.0
    broadcast_buffers: bool = True
    find_unused_parameters: bool = False
    keep_checkpoints: int = 2
    prestart: Optional[int] = None
    threads_per_learner: Optional[int] = None
    adaptive_batch: bool = False
    max_batch: Optional[int] = None

    def __post_init__(self):
        if self.epochs < 0 or self.effective_batch_size < 1:
            raise ValueError("epochs must be >= 0 and effective_batch_size >= 1")
        if self.max_gpus is not None and self.max_gpus < 1:
            if self.max_gpus != 0:
                raise ValueError("max_gpus must be >= 1")
            self.max_gpus = None
        if self.max_gpus is not None and self.min_gpus > self.max_gpus:
            raise ValueError(f"min_gpus ({self.min_gpus}) > max_gpus ({self.max_gpus})")
        self.epochs, self.effective_batch_size = int(self.epochs), int(self.effective_batch_size)
        self.min_gpus = max(0, int(self.min_gpus))
        self.checkpoint_every = int(self.checkpoint_every or 0)
        self.seed, self.snapshot_every = int(self.seed), int(self.snapshot_every)
        self.sync_batchnorm = bool(self.sync_batchnorm)
        self.timeout, self.print_every = float(self.timeout), float(self.print_every)
        self.join_wait = float(self.join_wait)
        self.verbose, self.eval_batch_size = int(self.verbose), int(self.eval_batch_size)
        self.max_failures, self.max_slot_failures = int(self.max_failures), int(self.max_slot_failures)
        self.broadcast_buffers = bool(self.broadcast_buffers)
        self.find_unused_parameters = bool(self.find_unused_parameters)
        self.keep_checkpoints = int(self.keep_checkpoints)
        self.adaptive_batch = bool(self.adaptive_batch)
        if self.max_batch is not None:
            if not self.adaptive_batch:
                raise ValueError("max_batch needs adaptive_batch=True")
            if isinstance(self.max_batch, bool) or not isinstance(self.max_batch, int) \
                    or self.max_batch < self.effective_batch_size:
                raise ValueError(f"max_batch ({self.max_batch}) must be a whole number >= effective_batch_size "
                                 f"({self.effective_batch_size})")

    @classmethod
    def from_call(cls, args: tuple, kwargs: dict[str, Any], **trainer: Any) -> TrainOptions:
        """The options of a call ``train(*args, **kwargs)`` (``trainer``: :data:`TRAINER_FIELDS`).

        Raises:
            TypeError: an argument train() does not take, too many positional ones, or one given twice.
        """
        bound = _SIGNATURE.bind(None, *args, **kwargs)
        bound.arguments.pop("self")
        return cls(**bound.arguments, **trainer)

    @property
    def cap(self) -> int:
        """Most learners at once: ``max_gpus``, and never more than one per sample of the global batch."""
        return self.effective_batch_size if self.max_gpus is None else min(self.effective_batch_size, self.max_gpus)

    def learner_config(self, checkpoint_dir: Optional[str]) -> dict:
        """The options every learner reads (sent in the payload)."""
        cfg = {k: getattr(self, k) for k in (
            "epochs", "effective_batch_size", "seed", "checkpoint_every", "sync_batchnorm", "snapshot_every", "timeout",
            "eval_batch_size", "broadcast_buffers", "find_unused_parameters", "keep_checkpoints")}
        if self.adaptive_batch:
            cfg.update(adaptive_batch=True, max_batch=self.max_batch)
        cfg["checkpoint_dir"] = checkpoint_dir
        return cfg


def train_signature(returns: Any = inspect.Signature.empty) -> inspect.Signature:
    """``train(self, epochs=10, ..., seed=0, *, slots=None, ...)``: the fields of :class:`TrainOptions`
    but the trainer's, with their defaults; the :data:`POSITIONAL` ones first, the others by keyword only."""
    fields = [f for f in dataclasses.fields(TrainOptions) if f.name not in TRAINER_FIELDS]
    fields.sort(key=lambda f: POSITIONAL.index(f.name) if f.name in POSITIONAL else len(POSITIONAL))
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for f in fields:
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if f.name in POSITIONAL else inspect.Parameter.KEYWORD_ONLY
        annotation = inspect.Parameter.empty if f.type in (Any, "Any") else f.type
        params.append(inspect.Parameter(f.name, kind, default=f.default, annotation=annotation))
    return inspect.Signature(params, return_annotation=returns)


_SIGNATURE = train_signature()
