"""The ``nbrunner`` Typer app and what its commands share: the ``--dir`` option, the cluster a
command acts on, ``-p`` values, JSON and table output."""
from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ...core.config import WORKSPACE

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True,
                  help="Run parameterized Jupyter notebooks as elastic GPU jobs on a shared cluster.")
DirOption = typer.Option(None, "--dir", help=f"workspace directory (default: {WORKSPACE.name} or the current directory)")


def parse_value(text: str) -> Any:
    """A ``-p`` value, typed like papermill's CLI: numbers, booleans, None, else the string.
    ValueError (one line) for an integer longer than Python converts (``sys.get_int_max_str_digits``)."""
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    if text == "None":
        return None
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError as exc:
            if kind is int and "digits" in str(exc):
                digits = sum(c.isdigit() for c in text)
                raise ValueError(f"an integer of {digits} digits is too long (at most "
                                 f"{sys.get_int_max_str_digits()})") from None
            continue
        if kind is float and value != value or value in (float("inf"), float("-inf")):
            return text
        return value
    return text


@functools.cache
def console():
    """rich's console, made on first use (rich costs as much to import as a read command's work)."""
    from rich.console import Console

    return Console()


def terminal() -> dict:
    """How a table is printed to stdout: cut to its width, and in colour unless NO_COLOR is set,
    if it is a terminal; else in full, without colour."""
    if not sys.stdout.isatty():
        return {"width": None, "color": False}
    import shutil

    return {"width": shutil.get_terminal_size().columns, "color": not os.environ.get("NO_COLOR")}


def cluster_of(workspace: Optional[Path]):
    """The cluster a command acts on (:func:`nbrunner.connect`)."""
    from ..cluster import connect

    return connect(workspace)


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def gpu_slots(value: str) -> Optional[int]:
    """``--gpus``: a number of slots, or None for ``auto``."""
    if value == "auto":
        return None
    try:
        n = int(value)
    except ValueError:
        raise typer.BadParameter(f"--gpus must be a number or 'auto', got {value!r}") from None
    if n < 0:
        raise typer.BadParameter("--gpus must be >= 0")
    return n


def typed_parameters(items: Optional[list[str]]) -> dict[str, Any]:
    """``-p NAME=VALUE`` options (``-p NAME VALUE`` is joined by main) as a dict of typed values."""
    parameters: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"-p needs a name and a value, got {item!r}")
        try:
            parameters[key] = parse_value(value)
        except ValueError as exc:
            raise typer.BadParameter(f"-p {key}: {exc}") from None
    return parameters
