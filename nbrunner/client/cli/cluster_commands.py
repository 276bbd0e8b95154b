"""The commands on the cluster and its processes: ``up``, ``cluster``, ``share``, ``list``,
``worker``, ``scheduler`` and ``service``."""
from __future__ import annotations

import os
import secrets
import signal
import sys
import threading
from pathlib import Path
from typing import Optional

import typer

from ...core.config import HOST_ADDR, LAB_TOKEN
from ...core.errors import NbrunnerError
from .app import DirOption, app, cluster_of, console, gpu_slots, print_json, terminal
from .fast import Exit, UsageError


@app.command()
def up(workspace: Optional[Path] = DirOption,
       gpus: str = typer.Option("auto", help="GPU slots of this host: a number (CPU slots) or 'auto'"),
       workers: int = typer.Option(2, min=1, help="worker processes"),
       port: int = typer.Option(8888, help="JupyterLab port"),
       no_lab: bool = typer.Option(False, "--no-lab", help="do not start JupyterLab"),
       policy: str = typer.Option("goodput", help="goodput, fairshare or priority"),
       host: Optional[str] = typer.Option(None, help="host name the workers register"),
       accounts: Optional[Path] = typer.Option(None, "--accounts", metavar="ACCOUNTS.yaml",
                                               help="accounts that share the GPUs (SIGHUP reads the file again)"),
       run_as_owner: bool = typer.Option(False, "--run-as-owner",
                                         help="run each job as its owner's Unix account (as root)")) -> None:
    """Start Redis, the scheduler, workers and JupyterLab in the workspace, until Ctrl-C."""
    from ...core.config import Settings
    from ...execution.supervisor import Supervisor

    from ...core.allocate import POLICIES

    if policy not in POLICIES:
        raise typer.BadParameter(f"--policy must be fairshare, priority or goodput, got {policy!r}")
    slots = gpu_slots(gpus)
    _check_root(run_as_owner)
    settings = Settings.load(workspace)
    if not settings.workspace.is_dir():
        raise NbrunnerError(f"workspace is not a directory: {settings.workspace}")
    token = LAB_TOKEN.text() or secrets.token_hex(24)
    lab_args = [f"--IdentityProvider.token={token}"]
    sup = Supervisor(settings, gpus=slots, workers=workers, policy=policy, host=host,
                     lab_port=None if no_lab else port, lab_args=lab_args,
                     accounts=str(accounts) if accounts is not None else None, run_as_owner=run_as_owner)
    stop, hup = threading.Event(), threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, lambda *_: hup.set())
    sup.start()
    try:
        # plain prints: rich would wrap the lab's URL at the terminal's (or 80) columns
        print(f"nbrunner is up in {settings.workspace} (Redis {settings.url.split('@')[-1]}, "
              f"{workers} workers, policy {policy})", flush=True)
        if not no_lab:
            print(f"JupyterLab: http://127.0.0.1:{port}/lab?token={token}", flush=True)
        print("Press Ctrl-C to stop.", flush=True)
        while not stop.wait(0.2):
            if hup.is_set():
                hup.clear()
                _reload_accounts(sup)
    finally:
        print("stopping...", flush=True)
        sup.stop()


def _reload_accounts(sup) -> None:
    """SIGHUP: read the accounts file again; a bad one is refused and the published tree stays."""
    if sup.accounts is None:
        print("SIGHUP: this cluster has no accounts file", flush=True)
        return
    try:
        sup.publish_accounts()
        print(f"accounts reloaded from {sup.accounts}", flush=True)
    except NbrunnerError as exc:
        print(f"accounts not reloaded: {exc}", flush=True)


@app.command("cluster")
def cluster_cmd(as_json: bool = typer.Option(False, "--json"), workspace: Optional[Path] = DirOption) -> None:
    """Show hosts, slots, who holds each, free GPUs and the policy."""
    status = cluster_of(workspace).status()
    if as_json:
        print_json(status)
        return
    from .. import render

    print(render.cluster_text(status, **terminal()))


@app.command()
def share(as_json: bool = typer.Option(False, "--json"),
          reload: bool = typer.Option(False, "--reload", help="read the accounts file again first"),
          workspace: Optional[Path] = DirOption) -> None:
    """Show the accounts sharing the GPUs: weight, guarantee, limit, demand, GPUs held, share,
    borrowed or lent, and GPU-hours used in the last 24 h and in total."""
    cluster = cluster_of(workspace)
    view = cluster.reload_accounts() if reload else cluster.accounts()
    if as_json:
        print_json(view)
        return
    from .. import render

    print(render.share_text(view, **terminal()))


@app.command("list")
def list_clusters(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the clusters running on this machine (workspace, Redis, pid, JupyterLab URL)."""
    from ...control.discovery import public, running

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
           run_as_owner: bool = typer.Option(False, "--run-as-owner",
                                             help="run each job as its owner's Unix account (as root)"),
           workspace: Optional[Path] = DirOption) -> None:
    """Run a worker: executes jobs and registers this host's GPU slots."""
    from ...control.store import reachable
    from ...core.config import Settings
    from ...execution.worker import run_worker

    _check_root(run_as_owner)
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
               burst=burst, run_as_owner=run_as_owner)


def _check_root(run_as_owner: bool) -> None:
    if run_as_owner and os.geteuid() != 0:
        raise UsageError("--run-as-owner needs root (it starts each job as its owner's Unix account)")


@app.command()
def scheduler(policy: Optional[str] = typer.Option(None, help="fairshare, priority or goodput (default: keep the cluster's)"),
              workspace: Optional[Path] = DirOption) -> None:
    """Run the scheduler (a second one waits as standby)."""
    from ...control.store import reachable
    from ...core.config import Settings
    from ...control.scheduler import run_scheduler

    from ...core.allocate import POLICIES

    if policy is not None and policy not in POLICIES:
        raise typer.BadParameter(f"--policy must be fairshare, priority or goodput, got {policy!r}")
    settings = Settings.load(workspace)
    reachable(settings)
    run_scheduler(settings, policy)


@app.command()
def service(port: Optional[int] = typer.Option(None, "--port", min=1, max=65535,
                                               help="port (default: that of the service's url in the hub config)"),
            admin_group: Optional[str] = typer.Option(None, "--admin-group",
                                                      help="a hub group whose members see and change every job"),
            accounts: Optional[Path] = typer.Option(None, "--accounts", metavar="ACCOUNTS.yaml",
                                                    help="accounts that share the GPUs (SIGHUP reads the file again)"),
            workspace: Optional[Path] = DirOption) -> None:
    """Serve the REST API to a JupyterHub's users, as a hub-managed service (docs/admin/jupyterhub.md)."""
    import importlib.util

    if importlib.util.find_spec("jupyterhub") is None:
        print("nbrunner: nbrunner service needs the jupyterhub package: pip install 'nbrunner[hub]'", file=sys.stderr)
        raise Exit(2)
    args = [*(["--port", str(port)] if port else []), *(["--admin-group", admin_group] if admin_group else []),
            *(["--dir", str(workspace)] if workspace else []), *(["--accounts", str(accounts)] if accounts else [])]
    # the server layer stands above this one: it runs in this process's place (the hub keeps its pid)
    os.execv(sys.executable, [sys.executable, "-m", "nbrunner.server.hub_service", *args])

