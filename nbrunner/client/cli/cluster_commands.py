"""The commands on the cluster and its processes: ``up``, ``cluster``, ``list``, ``worker`` and
``scheduler``."""
from __future__ import annotations

import os
import secrets
import signal
import threading
from pathlib import Path
from typing import Optional

import typer

from ...core.config import HOST_ADDR, LAB_TOKEN
from ...core.errors import NbrunnerError
from .app import DirOption, app, cluster_of, console, gpu_slots, print_json, terminal


@app.command()
def up(workspace: Optional[Path] = DirOption,
       gpus: str = typer.Option("auto", help="GPU slots of this host: a number (CPU slots) or 'auto'"),
       workers: int = typer.Option(2, min=1, help="worker processes"),
       port: int = typer.Option(8888, help="JupyterLab port"),
       no_lab: bool = typer.Option(False, "--no-lab", help="do not start JupyterLab"),
       policy: str = typer.Option("fairshare", help="fairshare, priority or goodput"),
       host: Optional[str] = typer.Option(None, help="host name the workers register")) -> None:
    """Start Redis, the scheduler, workers and JupyterLab in the workspace, until Ctrl-C."""
    from ...core.config import Settings
    from ...execution.supervisor import Supervisor

    from ...core.allocate import POLICIES

    if policy not in POLICIES:
        raise typer.BadParameter(f"--policy must be fairshare, priority or goodput, got {policy!r}")
    slots = gpu_slots(gpus)
    settings = Settings.load(workspace)
    if not settings.workspace.is_dir():
        raise NbrunnerError(f"workspace is not a directory: {settings.workspace}")
    token = LAB_TOKEN.text() or secrets.token_hex(24)
    lab_args = [f"--IdentityProvider.token={token}"]
    sup = Supervisor(settings, gpus=slots, workers=workers, policy=policy, host=host,
                     lab_port=None if no_lab else port, lab_args=lab_args)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    sup.start()
    try:
        # plain prints: rich would wrap the lab's URL at the terminal's (or 80) columns
        print(f"nbrunner is up in {settings.workspace} (Redis {settings.url.split('@')[-1]}, "
              f"{workers} workers, policy {policy})", flush=True)
        if not no_lab:
            print(f"JupyterLab: http://127.0.0.1:{port}/lab?token={token}", flush=True)
        print("Press Ctrl-C to stop.", flush=True)
        stop.wait()
    finally:
        print("stopping...", flush=True)
        sup.stop()


@app.command("cluster")
def cluster_cmd(as_json: bool = typer.Option(False, "--json"), workspace: Optional[Path] = DirOption) -> None:
    """Show hosts, slots, who holds each, free GPUs and the policy."""
    status = cluster_of(workspace).status()
    if as_json:
        print_json(status)
        return
    from .. import render

    print(render.cluster_text(status, **terminal()))


@app.command("list")
def list_clusters(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the clusters running on this machine (workspace, Redis, pid, JupyterLab URL)."""
    from ...core.discovery import public, running

    clusters = [public(c) for c in running()]
    if as_json:
        print_json({"clusters": clusters})
        return
    if not clusters:
        print("no nbrunner cluster is running: start one with `nbrunner up`")
        return
    from rich.table import Table

    table = Table(title=f"{len(clusters)} running cluster(s)")
    for col in ("workspace", "redis", "pid", "started_at", "lab"):
        table.add_column(col, overflow="fold")
    for c in clusters:
        table.add_row(c["workspace"], c["redis_url"], str(c["pid"]), c["started_at"] or "", c["lab_url"] or "")
    console().print(table)


@app.command()
def worker(gpus: str = typer.Option("auto", help="GPU slots: a number (CPU slots) or 'auto'"),
           host: Optional[str] = typer.Option(None, help="host name to register (default: this host's name)"),
           addr: Optional[str] = typer.Option(None, help="address other hosts reach this one at (learner rendezvous)"),
           slots: Optional[str] = typer.Option(None, hidden=True, help="explicit slot indices, e.g. 0,1"),
           burst: bool = typer.Option(False, hidden=True),
           workspace: Optional[Path] = DirOption) -> None:
    """Run a worker: executes jobs and registers this host's GPU slots."""
    from ...core.store import reachable
    from ...core.config import Settings
    from ...execution.worker import run_worker

    settings = Settings.load(workspace)
    reachable(settings)
    if addr:
        os.environ[HOST_ADDR.name] = addr
    slot_list = None
    if slots is not None:
        try:
            slot_list = [] if slots in ("", "none") else [int(s) for s in slots.split(",")]
        except ValueError:
            raise typer.BadParameter(f"--slots must be comma-separated integers, got {slots!r}") from None
    run_worker(settings, gpus=gpu_slots(gpus) if slot_list is None else len(slot_list), host=host, slots=slot_list,
               burst=burst)


@app.command()
def scheduler(policy: Optional[str] = typer.Option(None, help="fairshare, priority or goodput (default: keep the cluster's)"),
              workspace: Optional[Path] = DirOption) -> None:
    """Run the scheduler (a second one waits as standby)."""
    from ...core.store import reachable
    from ...core.config import Settings
    from ...control.scheduler import run_scheduler

    from ...core.allocate import POLICIES

    if policy is not None and policy not in POLICIES:
        raise typer.BadParameter(f"--policy must be fairshare, priority or goodput, got {policy!r}")
    settings = Settings.load(workspace)
    reachable(settings)
    run_scheduler(settings, policy)


