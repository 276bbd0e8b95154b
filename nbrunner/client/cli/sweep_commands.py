"""The commands on sweeps, schedules and models: ``sweep``, ``schedule ...``, ``model ...`` and
``serve``."""
from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Any, Optional

import typer

from ..advice import MAX_GPUS_HELP
from .app import DirOption, app, cluster_of, console, print_json, typed_parameters


@app.command()
def sweep(notebook: str = typer.Argument(..., help="notebook path"),
          spec: Path = typer.Argument(..., metavar="SPEC.yaml", help="sweep spec (YAML)"),
          dry_run: bool = typer.Option(False, "--dry-run", help="print the trials; submit nothing (no cluster needed)"),
          as_json: bool = typer.Option(False, "--json"),
          name: Optional[str] = typer.Option(None, "--name", help="display name of the trials (default: notebook stem)"),
          min_gpus: Optional[int] = typer.Option(None, "--min-gpus", help="per trial"),
          max_gpus: Optional[int] = typer.Option(None, "--max-gpus", help="per trial; " + MAX_GPUS_HELP),
          priority: Optional[int] = typer.Option(None, "--priority", help="per trial"),
          timeout: Optional[float] = typer.Option(None, "--timeout", help="seconds, per trial"),
          kernel: Optional[str] = typer.Option(None, "--kernel"),
          workspace: Optional[Path] = DirOption) -> None:
    """Run a hyperparameter sweep: every trial is a job; prints the sweep id.

    See a sweep's trials ranked by its objective with `nbrunner sweep show ID`, and every sweep
    with `nbrunner sweeps`."""
    from ...core.config import Settings
    from ...control.sweeps import prepare

    options = {"name": name, "min_gpus": min_gpus, "max_gpus": max_gpus, "priority": priority,
               "timeout": timeout, "kernel": kernel}
    if dry_run:
        parsed, trials, path, _nb, _opts = prepare(Settings.load(workspace), notebook, spec, base=Path.cwd(),
                                                   options=options)
        if as_json:
            print_json({"trials": [{"parameters": p} for p in trials]})
            return
        from rich.table import Table

        names = list(parsed.parameters)
        table = Table(title=f"{len(trials)} trials of {path.name} (dry run: nothing submitted)")
        table.add_column("#", justify="right")
        for n in names:
            table.add_column(n)
        for i, p in enumerate(trials, start=1):
            table.add_row(str(i), *[f"{p[n]:.6g}" if isinstance(p[n], float) else json.dumps(p[n]) for n in names])
        console().print(table)
        return
    cluster = cluster_of(workspace)
    result = cluster.sweep(notebook, spec, **options)
    if as_json:
        print_json(result.to_dict())
    else:
        print(result.id)


@app.command("sweep-show", hidden=True)
def sweep_show(sweep_id: str = typer.Argument(..., metavar="ID"), as_json: bool = typer.Option(False, "--json"),
               workspace: Optional[Path] = DirOption) -> None:
    """Show a sweep's leaderboard, best objective first (`nbrunner sweep show ID`; --json: as GET /sweeps/{id})."""
    s = cluster_of(workspace).sweep(sweep_id)
    if as_json:
        print_json(s.record.to_dict())
        return
    from .. import render

    print(render.leaderboard_text(s.record))


@app.command("sweeps")
def sweeps(as_json: bool = typer.Option(False, "--json"), workspace: Optional[Path] = DirOption) -> None:
    """List the sweeps you see, oldest first (--json: as GET /sweeps)."""
    states = [s.record for s in cluster_of(workspace).sweeps()]
    if as_json:
        print_json({"sweeps": [st.to_dict() for st in states]})
        return
    from .. import render

    print(render.sweeps_text(states))


schedule_app = typer.Typer(no_args_is_help=True, help="Run notebooks on a clock (each run is a job).")
app.add_typer(schedule_app, name="schedule")


@schedule_app.command("add")
def schedule_add(notebook: str = typer.Argument(..., help="notebook path"),
                 cron: Optional[str] = typer.Option(None, "--cron", metavar="EXPR",
                                                    help="5-field cron, or @hourly, @daily, @weekly, @monthly"),
                 every: Optional[int] = typer.Option(None, "--every", metavar="SECONDS", help="run every N seconds"),
                 tz: str = typer.Option("UTC", "--tz", metavar="ZONE", help="IANA timezone the cron is read in"),
                 overlap: str = typer.Option("skip", "--overlap",
                                             help="skip: no run while the previous one is queued or running; queue"),
                 param: Optional[list[str]] = typer.Option(None, "-p", "--parameter", metavar="NAME VALUE",
                                                           help="a parameter of every run (repeatable)"),
                 name: Optional[str] = typer.Option(None, "--name"),
                 min_gpus: Optional[int] = typer.Option(None, "--min-gpus"),
                 max_gpus: Optional[int] = typer.Option(None, "--max-gpus"),
                 priority: Optional[int] = typer.Option(None, "--priority"),
                 timeout: Optional[float] = typer.Option(None, "--timeout", help="seconds, per run"),
                 as_json: bool = typer.Option(False, "--json"),
                 workspace: Optional[Path] = DirOption) -> None:
    """Run a notebook on a schedule (--cron or --every); prints the schedule id."""
    parameters = typed_parameters(param)
    s = cluster_of(workspace).schedule(notebook, parameters, cron=cron, every=every, timezone=tz, overlap=overlap,
                                     name=name, min_gpus=min_gpus, max_gpus=max_gpus, priority=priority,
                                     timeout=timeout)
    print_json(s.to_dict()) if as_json else print(s.id)


@schedule_app.command("list")
def schedule_list(as_json: bool = typer.Option(False, "--json"), workspace: Optional[Path] = DirOption) -> None:
    """List schedules."""
    records = [s.record for s in cluster_of(workspace).schedules()]
    if as_json:
        print_json({"schedules": [r.to_dict() for r in records]})
    else:
        from .. import render

        console().print(render.schedules_table(records))


@schedule_app.command("show")
def schedule_show(schedule_id: str = typer.Argument(..., metavar="ID"),
                  workspace: Optional[Path] = DirOption) -> None:
    """Show one schedule (JSON)."""
    print_json(cluster_of(workspace).backend.schedule(schedule_id).to_dict())


@schedule_app.command("pause")
def schedule_pause(schedule_id: str = typer.Argument(..., metavar="ID"),
                   workspace: Optional[Path] = DirOption) -> None:
    """Stop starting runs (a run already started goes on)."""
    from ..schedule import Schedule

    s = Schedule(cluster_of(workspace), schedule_id).pause()
    print(f"{s.id} paused")


@schedule_app.command("resume")
def schedule_resume(schedule_id: str = typer.Argument(..., metavar="ID"),
                    workspace: Optional[Path] = DirOption) -> None:
    """Start runs again, from the next fire time after now."""
    from ..schedule import Schedule

    s = Schedule(cluster_of(workspace), schedule_id).resume()
    print(f"{s.id} resumed, next run at {s.record.next_run_at}")


@schedule_app.command("delete")
def schedule_delete(schedule_id: str = typer.Argument(..., metavar="ID"),
                    workspace: Optional[Path] = DirOption) -> None:
    """Delete a schedule (its runs stay, as jobs)."""
    from ..schedule import Schedule

    Schedule(cluster_of(workspace), schedule_id).delete()
    print(f"{schedule_id} deleted")


model_app = typer.Typer(no_args_is_help=True, help="Register and list trained models.")
app.add_typer(model_app, name="model")


def models_workspace(workspace: Optional[Path]) -> Path:
    """The workspace whose models a command acts on: the running cluster's, found as other commands
    find it (``--dir``, else discovery from the current directory), else ``--dir`` or the current
    directory (no running cluster needed)."""
    from ...core.config import Settings
    from ...core.errors import NoCluster
    from ..local import LocalBackend

    try:
        return LocalBackend.attach(workspace).settings.workspace
    except NoCluster:
        return Settings.load(workspace).workspace


def registry_of(workspace: Optional[Path]):
    """Whose models a command acts on: the service's (``NBRUNNER_SERVICE_URL``), else the
    registry of :func:`models_workspace`."""
    from ...core.config import SERVICE_URL, Settings

    if SERVICE_URL.text():
        return cluster_of(workspace).backend
    from ..local import LocalBackend

    return LocalBackend(Settings.load(models_workspace(workspace)), None)


@model_app.command("register")
def model_register(job_id: str = typer.Argument(..., metavar="JOB"), name: str = typer.Argument(..., metavar="NAME"),
                   as_json: bool = typer.Option(False, "--json"), workspace: Optional[Path] = DirOption) -> None:
    """Register the model a job saved (runs/JOB/model/) as the next version of NAME; prints NAME:VERSION."""
    entry = registry_of(workspace).register_model(job_id, name)
    print_json(entry) if as_json else print(f"{entry['name']}:{entry['version']}")


@model_app.command("list")
def model_list(as_json: bool = typer.Option(False, "--json"), workspace: Optional[Path] = DirOption) -> None:
    """List registered models and their versions."""
    models = registry_of(workspace).models()
    if as_json:
        print_json({"models": models})
        return
    from rich.table import Table

    table = Table(title=f"{len(models)} registered model version(s)")
    for col in ("name", "version", "job", "created_at", "path"):
        table.add_column(col)
    for m in models:
        table.add_row(m["name"], str(m["version"]), m["job"] or "", m["created_at"] or "", m["path"])
    console().print(table)


@app.command()
def serve(model: str = typer.Argument(..., metavar="NAME[:VERSION]"),
          port: int = typer.Option(8000, "--port", min=0, max=65535),
          host: str = typer.Option("127.0.0.1", "--host"),
          workspace: Optional[Path] = DirOption) -> None:
    """Serve a registered model over HTTP: POST /predict {"inputs": [[...]]}, GET /health."""
    from ...serving.serve import make_server

    server = make_server(model, port, models_workspace(workspace), host=host, quiet=False)
    stop = threading.Event()

    def _stop(*_: Any) -> None:
        if not stop.is_set():
            stop.set()
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    print(f"serving {server.label} on {server.url} (POST /predict, GET /health); Ctrl-C to stop", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


# ---- common commands without typer's parameter conversion --------------------------------------
# typer (0.2x) converts every parameter's value through a pydantic TypeAdapter, which costs more
# than a read command's whole work.  When a read command or `submit` is given only plain arguments
# (options it declares, each once unless repeatable; values that typer would take as they are),
# main() binds them itself, from the command's own typer declarations, and calls it.  Anything
# else (--help, an unknown or repeated option, a value typer might refuse) goes through typer as
# before, so help and error messages are typer's.
