"""The ``nbrunner`` command line (commands listed in the README).

One module per concern: :mod:`.app` (the Typer app and what commands share),
:mod:`.job_commands`, :mod:`.cluster_commands`, :mod:`.sweep_commands` (sweeps, schedules,
models), :mod:`.monitor_commands` (``metrics``, ``usage``), :mod:`.pipeline_commands`, and
:mod:`.fast` (:func:`main`, with its fast path for plain arguments).  The read commands (``jobs``,
``show``, ``logs``, ``cluster``, ``list``) answer about as fast as ``rq info``: they read records
with msgspec and print plain text (no rich).
"""
# each module registers its commands
from . import (cluster_commands, job_commands, monitor_commands, notify_commands,  # noqa: F401
               pipeline_commands, sweep_commands)
from .app import app
from .fast import main

# `nbrunner --help` lists the commands in this order (each module registers its own)
COMMANDS = ("up", "submit", "jobs", "show", "logs", "cancel", "rerun", "delete", "download", "priority", "cluster",
            "share", "usage", "metrics", "list", "worker", "scheduler", "service", "sweep", "sweep-show", "sweeps",
            "serve", "notify")


def _name(info) -> str:
    return info.name or info.callback.__name__.replace("_", "-")


app.registered_commands.sort(key=lambda c: COMMANDS.index(_name(c)) if _name(c) in COMMANDS else len(COMMANDS))

__all__ = ["app", "main"]
