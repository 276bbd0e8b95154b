"""Elastic data-parallel training for notebooks (see docs/architecture.md).

    from nbrunner.elastic import ElasticTrainer
    trainer = ElasticTrainer(model, get_datasets, loss_fn, optimizer)
    history = trainer.train(epochs=10, effective_batch_size=256, max_gpus=8, min_gpus=1)
    trainer.model  # final weights
"""
from .launcher import Launcher, LearnerHandle, LearnerSpec, LocalLauncher
from .model_io import load_model, save_model
from .slots import (
    LocalSlots, ScriptedSlots, Slot, SlotSource, default_slot_source, register_slot_source_factory,
)
from .sync_bn import ElasticSyncBatchNorm, convert_sync_batchnorm
from .trainer import Callback, ElasticTrainer, ElasticTrainingError, History

__all__ = [
    "ElasticTrainer", "History", "Callback", "ElasticTrainingError",
    "Slot", "SlotSource", "LocalSlots", "ScriptedSlots", "default_slot_source", "register_slot_source_factory",
    "Launcher", "LearnerHandle", "LearnerSpec", "LocalLauncher",
    "load_model", "save_model", "ElasticSyncBatchNorm", "convert_sync_batchnorm",
]
