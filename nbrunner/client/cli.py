"""The ``nbrunner`` command line (commands listed in the README).

The read commands (``jobs``, ``show``, ``logs``, ``cluster``, ``list``) answer about as fast as
``rq info``: they read records as views (no pydantic) and print plain text (no rich).
"""
from __future__ import annotations

import errno
import functools
import json
import os
import secrets
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

import typer

try:  # typer >= 0.25 vendors its own click
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
    from typer._click.utils import PacifyFlushWrapper
    from typer.exceptions import Abort, Exit
except ImportError:  # pragma: no cover
    from click.exceptions import Abort, ClickException, Exit, NoArgsIsHelpError, UsageError
    from click.utils import PacifyFlushWrapper
from ..core.errors import NbrunnerError, NoCluster
from ..core.models import PRIORITY_DEFAULT, STATUSES

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True,
                  help="Run parameterized Jupyter notebooks as elastic GPU jobs on a shared cluster.")
DirOption = typer.Option(None, "--dir", help="workspace directory (default: NBRUNNER_WORKSPACE or the current directory)")


def parse_value(text: str) -> Any:
    """A ``-p`` value, typed like papermill's CLI: numbers, booleans, None, else the string."""
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    if text == "None":
        return None
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
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


def _terminal() -> dict:
    """How a table is printed to stdout: cut to its width, and in colour unless NO_COLOR is set,
    if it is a terminal; else in full, without colour."""
    if not sys.stdout.isatty():
        return {"width": None, "color": False}
    import shutil

    return {"width": shutil.get_terminal_size().columns, "color": not os.environ.get("NO_COLOR")}


def _cluster(workspace: Optional[Path]):
    from .cluster import connect

    return connect(workspace)


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def _gpus(value: str) -> Optional[int]:
    if value == "auto":
        return None
    try:
        n = int(value)
    except ValueError:
        raise typer.BadParameter(f"--gpus must be a number or 'auto', got {value!r}") from None
    if n < 0:
        raise typer.BadParameter("--gpus must be >= 0")
    return n


@app.command()
def up(workspace: Optional[Path] = DirOption,
       gpus: str = typer.Option("auto", help="GPU slots of this host: a number (CPU slots) or 'auto'"),
       workers: int = typer.Option(2, min=1, help="worker processes"),
       port: int = typer.Option(8888, help="JupyterLab port"),
       no_lab: bool = typer.Option(False, "--no-lab", help="do not start JupyterLab"),
       policy: str = typer.Option("fairshare", help="fairshare, priority or goodput"),
       host: Optional[str] = typer.Option(None, help="host name the workers register")) -> None:
    """Start Redis, the scheduler, workers and JupyterLab in the workspace, until Ctrl-C."""
    from ..core.config import Settings
    from ..execution.supervisor import Supervisor

    from ..core.allocate import POLICIES

    if policy not in POLICIES:
        raise typer.BadParameter(f"--policy must be fairshare, priority or goodput, got {policy!r}")
    slots = _gpus(gpus)
    settings = Settings.load(workspace)
    if not settings.workspace.is_dir():
        raise NbrunnerError(f"workspace is not a directory: {settings.workspace}")
    token = os.environ.get("NBRUNNER_LAB_TOKEN") or secrets.token_hex(24)
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


@app.command()
def submit(notebook: str = typer.Argument(..., help="notebook path"),
           param: Optional[list[str]] = typer.Option(None, "-p", "--parameter", metavar="NAME VALUE",
                                                     help="a parameter, typed like papermill's (repeatable)"),
           params_file: Optional[Path] = typer.Option(None, "-f", "--parameters-file", help="YAML file of parameters"),
           name: Optional[str] = typer.Option(None, "--name"),
           min_gpus: int = typer.Option(0, "--min-gpus"),
           max_gpus: Optional[int] = typer.Option(None, "--max-gpus"),
           priority: int = typer.Option(PRIORITY_DEFAULT, "--priority"),
           timeout: Optional[float] = typer.Option(None, "--timeout", help="seconds"),
           kernel: Optional[str] = typer.Option(None, "--kernel"),
           wait: bool = typer.Option(False, "--wait", help="block until the job ends; exit 0 only if it completed"),
           as_json: bool = typer.Option(False, "--json"),
           workspace: Optional[Path] = DirOption) -> None:
    """Queue a notebook as a job and print its id."""
    parameters: dict[str, Any] = {}
    if params_file is not None:
        from ..core.limits import load_yaml, read_limited

        try:
            loaded = load_yaml(read_limited(params_file), str(params_file))  # no aliases, bounded size and depth
        except OSError as exc:
            raise NbrunnerError(f"cannot read {params_file}: {exc.strerror or exc.__class__.__name__}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise NbrunnerError(f"{params_file} must hold a mapping of parameter names to values")
        parameters.update(loaded)
    parameters.update(_parameters(param))
    cluster = _cluster(workspace)
    job = cluster.submit(notebook, parameters, name=name, min_gpus=min_gpus, max_gpus=max_gpus,
                         priority=priority, timeout=timeout, kernel=kernel)
    if not wait:
        _print_json(job.to_dict()) if as_json else print(job.id)
        return
    if not as_json:
        print(job.id, flush=True)
    job.wait()
    if as_json:
        _print_json(job.to_dict())
    else:
        console().print(f"{job.id} {job.record.status}" + (f": {job.record.error}" if job.record.error else ""))
    raise typer.Exit(0 if job.record.status == "completed" else 1)


JOBS_SHOWN = 50  # `nbrunner jobs` without --limit or --all


@app.command()
def jobs(status: Optional[str] = typer.Option(None, "--status"),
         limit: Optional[int] = typer.Option(None, "--limit", help=f"show the newest N jobs (default {JOBS_SHOWN})"),
         every: bool = typer.Option(False, "--all", help="show every job"),
         schedule: Optional[str] = typer.Option(None, "--schedule", metavar="ID", help="only the runs of this schedule"),
         as_json: bool = typer.Option(False, "--json"), workspace: Optional[Path] = DirOption,
         live: bool = typer.Option(False, "--watch", help="a live table, changes as they happen, until Ctrl-C")) -> None:
    """List the newest jobs (--json: {"jobs": [newest first], "next": cursor or null}, as GET /jobs)."""
    if status is not None and status not in STATUSES:
        raise typer.BadParameter(f"--status must be one of {', '.join(STATUSES)}")
    if limit is not None and every:
        raise typer.BadParameter("--limit and --all do not go together")
    if live and (every or as_json):
        raise typer.BadParameter("--watch shows the newest jobs live: not with --all or --json")
    if limit is not None and limit < 1:
        raise typer.BadParameter(f"--limit must be a positive integer, got {limit}")
    cluster = _cluster(workspace)
    if live:
        from .watch import watch

        return watch(cluster, status, schedule, limit or JOBS_SHOWN, **_terminal())
    where = None if schedule is None else (lambda r: r.schedule == schedule)
    records, after = cluster.store.page(status, None if every else limit or JOBS_SHOWN, where=where)
    if as_json:
        _print_json({"jobs": [r.to_dict() for r in records], "next": after})
        return
    from . import render

    records.reverse()  # the newest at the bottom, next to the prompt
    print(render.jobs_text(records, **_terminal()))
    line = render.totals_line(records)
    if after is not None:
        line += f" (the newest {len(records)} of {cluster.store.count(status)}; --all lists them all)"
    print(line)


@app.command()
def show(job_id: str = typer.Argument(..., metavar="JOB"), as_json: bool = typer.Option(False, "--json"),
         workspace: Optional[Path] = DirOption) -> None:
    """Show one job."""
    rec = _cluster(workspace).store.get(job_id)
    if as_json:
        _print_json(rec.to_dict())
        return
    from . import render

    print(render.job_detail(rec))


@app.command()
def logs(job_id: str = typer.Argument(..., metavar="JOB"), follow: bool = typer.Option(False, "--follow", "-f"),
         workspace: Optional[Path] = DirOption) -> None:
    """Print a job's log; with --follow, until the job ends."""
    from .job import read_log

    cluster = _cluster(workspace)
    rec = cluster.store.get(job_id)
    job_dir = cluster.settings.job_dir(rec.id)
    offset = 0
    while True:
        text, offset = read_log(job_dir, offset, finished=rec.finished)
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()
        if follow:
            rec = cluster.store.get(job_id)
        if not follow or rec.finished:
            if follow:  # what was written between the read and the status check
                text, offset = read_log(job_dir, offset, finished=True)
                sys.stdout.write(text)
            return
        time.sleep(0.5)


@app.command()
def cancel(job_id: str = typer.Argument(..., metavar="JOB"), workspace: Optional[Path] = DirOption) -> None:
    """Cancel a queued or running job."""
    job = _cluster(workspace).job(job_id).cancel()
    print(f"{job.id} {job.record.status}")


def _parameters(items: Optional[list[str]]) -> dict[str, Any]:
    """``-p NAME=VALUE`` options (``-p NAME VALUE`` is joined by main) as a dict of typed values."""
    parameters: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"-p needs a name and a value, got {item!r}")
        parameters[key] = parse_value(value)
    return parameters


@app.command()
def rerun(job_id: str = typer.Argument(..., metavar="JOB"),
          param: Optional[list[str]] = typer.Option(None, "-p", "--parameter", metavar="NAME VALUE",
                                                    help="a parameter to change (repeatable)"),
          as_json: bool = typer.Option(False, "--json"),
          workspace: Optional[Path] = DirOption) -> None:
    """Run a job again from its input snapshot with the same options, and print the new id."""
    parameters = _parameters(param)
    job = _cluster(workspace).job(job_id).rerun(parameters)
    _print_json(job.to_dict()) if as_json else print(job.id)


@app.command()
def delete(job_id: str = typer.Argument(..., metavar="JOB"), workspace: Optional[Path] = DirOption) -> None:
    """Delete a finished job: its record and its directory."""
    _cluster(workspace).job(job_id).delete()
    print(f"{job_id} deleted")


@app.command()
def download(job_id: str = typer.Argument(..., metavar="JOB"),
             fmt: str = typer.Option("ipynb", "--format", help="ipynb, html or zip"),
             output: Optional[Path] = typer.Option(None, "-o", "--output",
                                                   help="file to write (default: NAME-ID.FORMAT here; - for stdout)"),
             workspace: Optional[Path] = DirOption) -> None:
    """Save a job's output notebook, its HTML, or a zip of its directory."""
    from ..control.job_files import DOWNLOAD_SUFFIX, download_name
    from .job import download as write_download

    if fmt not in DOWNLOAD_SUFFIX:
        raise typer.BadParameter(f"--format must be one of {', '.join(DOWNLOAD_SUFFIX)}, got {fmt!r}")
    job = _cluster(workspace).job(job_id)
    if output is not None and str(output) == "-":
        write_download(job, fmt, sys.stdout.buffer)
        return
    target = output or Path(download_name(job.record, fmt))
    tmp = target.with_name(f".{target.name}.part")
    try:
        with open(tmp, "wb") as f:
            write_download(job, fmt, f)
        os.replace(tmp, target)
    except OSError as exc:
        raise NbrunnerError(f"cannot write {target}: {exc.strerror or exc.__class__.__name__}") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    print(target)


@app.command()
def priority(job_id: str = typer.Argument(..., metavar="JOB"), value: int = typer.Argument(..., metavar="P"),
             workspace: Optional[Path] = DirOption) -> None:
    """Change a job's priority (1..10000)."""
    job = _cluster(workspace).job(job_id).set_priority(value)
    print(f"{job.id} priority {job.record.priority}")


@app.command("cluster")
def cluster_cmd(as_json: bool = typer.Option(False, "--json"), workspace: Optional[Path] = DirOption) -> None:
    """Show hosts, slots, who holds each, free GPUs and the policy."""
    status = _cluster(workspace).status()
    if as_json:
        _print_json(status)
        return
    from . import render

    print(render.cluster_text(status, **_terminal()))


@app.command("list")
def list_clusters(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the clusters running on this machine (workspace, Redis, pid, JupyterLab URL)."""
    from ..core.discovery import public, running

    clusters = [public(c) for c in running()]
    if as_json:
        _print_json({"clusters": clusters})
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
    from ..core.store import reachable
    from ..core.config import Settings
    from ..execution.worker import run_worker

    settings = Settings.load(workspace)
    reachable(settings)
    if addr:
        os.environ["NBRUNNER_HOST_ADDR"] = addr
    slot_list = None
    if slots is not None:
        try:
            slot_list = [] if slots in ("", "none") else [int(s) for s in slots.split(",")]
        except ValueError:
            raise typer.BadParameter(f"--slots must be comma-separated integers, got {slots!r}") from None
    run_worker(settings, gpus=_gpus(gpus) if slot_list is None else len(slot_list), host=host, slots=slot_list,
               burst=burst)


@app.command()
def scheduler(policy: Optional[str] = typer.Option(None, help="fairshare, priority or goodput (default: keep the cluster's)"),
              workspace: Optional[Path] = DirOption) -> None:
    """Run the scheduler (a second one waits as standby)."""
    from ..core.store import reachable
    from ..core.config import Settings
    from ..control.scheduler import run_scheduler

    from ..core.allocate import POLICIES

    if policy is not None and policy not in POLICIES:
        raise typer.BadParameter(f"--policy must be fairshare, priority or goodput, got {policy!r}")
    settings = Settings.load(workspace)
    reachable(settings)
    run_scheduler(settings, policy)


def _join_parameters(argv: list[str]) -> list[str]:
    """``-p NAME VALUE`` (papermill's form) -> ``-p NAME=VALUE`` for the option parser."""
    out, i = [], 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            out += argv[i:]
            break
        if tok in ("-p", "--parameter") and i + 1 < len(argv) and "=" not in argv[i + 1]:
            if i + 2 >= len(argv):
                raise UsageError(f"{tok} needs a name and a value")
            if argv[i + 2].startswith("--") and len(argv[i + 2]) > 2:  # `-p NAME --timeout 5`: a value is missing
                raise UsageError(f"{tok} {argv[i + 1]} needs a value before {argv[i + 2]} "
                                 f"(write {tok} {argv[i + 1]}={argv[i + 2]} for a value that starts with --)")
            out += [tok, f"{argv[i + 1]}={argv[i + 2]}"]
            i += 3
            continue
        out.append(tok)
        i += 1
    return out


# ---- sweeps, models, serving ------------------------------------------------------------------

@app.command()
def sweep(notebook: str = typer.Argument(..., help="notebook path"),
          spec: Path = typer.Argument(..., metavar="SPEC.yaml", help="sweep spec (YAML)"),
          dry_run: bool = typer.Option(False, "--dry-run", help="print the trials; submit nothing (no cluster needed)"),
          as_json: bool = typer.Option(False, "--json"),
          name: Optional[str] = typer.Option(None, "--name", help="display name of the trials (default: notebook stem)"),
          min_gpus: Optional[int] = typer.Option(None, "--min-gpus", help="per trial"),
          max_gpus: Optional[int] = typer.Option(None, "--max-gpus", help="per trial"),
          priority: Optional[int] = typer.Option(None, "--priority", help="per trial"),
          timeout: Optional[float] = typer.Option(None, "--timeout", help="seconds, per trial"),
          kernel: Optional[str] = typer.Option(None, "--kernel"),
          workspace: Optional[Path] = DirOption) -> None:
    """Run a hyperparameter sweep: every trial is a job; prints the sweep id."""
    from ..core.config import Settings
    from ..control.sweeps import prepare

    options = {"name": name, "min_gpus": min_gpus, "max_gpus": max_gpus, "priority": priority,
               "timeout": timeout, "kernel": kernel}
    if dry_run:
        parsed, trials, path, _nb, _opts = prepare(Settings.load(workspace), notebook, spec, base=Path.cwd(),
                                                   options=options)
        if as_json:
            _print_json({"trials": [{"parameters": p} for p in trials]})
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
    cluster = _cluster(workspace)
    result = cluster.sweep(notebook, spec, **options)
    if as_json:
        _print_json(result.to_dict())
    else:
        print(result.id)


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
    parameters = _parameters(param)
    s = _cluster(workspace).schedule(notebook, parameters, cron=cron, every=every, timezone=tz, overlap=overlap,
                                     name=name, min_gpus=min_gpus, max_gpus=max_gpus, priority=priority,
                                     timeout=timeout)
    _print_json(s.to_dict()) if as_json else print(s.id)


@schedule_app.command("list")
def schedule_list(as_json: bool = typer.Option(False, "--json"), workspace: Optional[Path] = DirOption) -> None:
    """List schedules."""
    from ..control.schedules import list_schedules

    records = list_schedules(_cluster(workspace).store)
    if as_json:
        _print_json({"schedules": [r.to_dict() for r in records]})
    else:
        from . import render

        console().print(render.schedules_table(records))


@schedule_app.command("show")
def schedule_show(schedule_id: str = typer.Argument(..., metavar="ID"),
                  workspace: Optional[Path] = DirOption) -> None:
    """Show one schedule (JSON)."""
    from ..control.schedules import get_schedule

    _print_json(get_schedule(_cluster(workspace).store, schedule_id).to_dict())


@schedule_app.command("pause")
def schedule_pause(schedule_id: str = typer.Argument(..., metavar="ID"),
                   workspace: Optional[Path] = DirOption) -> None:
    """Stop starting runs (a run already started goes on)."""
    from .schedule import Schedule

    s = Schedule(_cluster(workspace), schedule_id).pause()
    print(f"{s.id} paused")


@schedule_app.command("resume")
def schedule_resume(schedule_id: str = typer.Argument(..., metavar="ID"),
                    workspace: Optional[Path] = DirOption) -> None:
    """Start runs again, from the next fire time after now."""
    from .schedule import Schedule

    s = Schedule(_cluster(workspace), schedule_id).resume()
    print(f"{s.id} resumed, next run at {s.record.next_run_at}")


@schedule_app.command("delete")
def schedule_delete(schedule_id: str = typer.Argument(..., metavar="ID"),
                    workspace: Optional[Path] = DirOption) -> None:
    """Delete a schedule (its runs stay, as jobs)."""
    from .schedule import Schedule

    Schedule(_cluster(workspace), schedule_id).delete()
    print(f"{schedule_id} deleted")


model_app = typer.Typer(no_args_is_help=True, help="Register and list trained models.")
app.add_typer(model_app, name="model")


@model_app.command("register")
def model_register(job_id: str = typer.Argument(..., metavar="JOB"), name: str = typer.Argument(..., metavar="NAME"),
                   as_json: bool = typer.Option(False, "--json"), workspace: Optional[Path] = DirOption) -> None:
    """Register the model a job saved (runs/JOB/model/) as the next version of NAME; prints NAME:VERSION."""
    from ..core.config import Settings
    from ..serving.registry import register_model

    entry = register_model(Settings.load(workspace), job_id, name)
    _print_json(entry) if as_json else print(f"{entry['name']}:{entry['version']}")


@model_app.command("list")
def model_list(as_json: bool = typer.Option(False, "--json"), workspace: Optional[Path] = DirOption) -> None:
    """List registered models and their versions."""
    from ..core.config import Settings
    from ..serving.registry import list_models

    models = list_models(Settings.load(workspace))
    if as_json:
        _print_json({"models": models})
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
    from ..serving.serve import make_server

    server = make_server(model, port, workspace, host=host, quiet=False)
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
PLAIN_COMMANDS = ("jobs", "show", "logs", "cluster", "list", "submit")


def _plain_value(annotation: str, info: Any, text: str) -> Any:
    """``text`` as typer would convert it for ``annotation``, or _NOT_PLAIN where typer could
    say something else (a check, a refusal)."""
    if annotation in ("str", "Optional[str]", "Optional[list[str]]"):
        return text
    if annotation in ("int", "Optional[int]"):
        plain = text.isascii() and text.isdigit() and (text == "0" or not text.startswith("0"))
        return int(text) if plain and info.min is None and info.max is None else _NOT_PLAIN
    if annotation in ("Path", "Optional[Path]"):
        checked = (info.exists or not info.file_okay or not info.dir_okay or info.writable or info.resolve_path
                   or info.allow_dash or info.path_type is not None)
        unreadable = os.path.exists(text) and not os.access(text, os.R_OK)  # typer refuses those
        return Path(text) if text and not checked and not unreadable else _NOT_PLAIN
    return _NOT_PLAIN


_NOT_PLAIN = object()


def _plain_call(argv: list[str]) -> Optional[Any]:
    """A call of the read command ``argv`` asks for, with its arguments bound, if they are plain
    (see above); else None."""
    from inspect import signature

    from typer.models import ArgumentInfo, OptionInfo

    if not argv or argv[0] not in PLAIN_COMMANDS or os.environ.get("_NBRUNNER_COMPLETE"):
        return None
    func = next((c.callback for c in app.registered_commands
                 if (c.name or c.callback.__name__.replace("_", "-")) == argv[0]), None)
    if func is None:
        return None
    params = signature(func).parameters
    options, arguments, values = {}, [], {}
    for name, param in params.items():
        info = param.default
        if isinstance(info, ArgumentInfo) and info.default is ...:
            arguments.append(name)
        elif isinstance(info, OptionInfo) and info.param_decls and not any("/" in d for d in info.param_decls) \
                and info.callback is None and info.envvar is None and (param.annotation != "bool" or info.default is False):
            options.update((decl, name) for decl in info.param_decls)
        else:
            return None
    words, rest = [], list(argv[1:])
    while rest:
        token = rest.pop(0)
        if not token.startswith("-"):
            words.append(token)
            continue
        name = options.get(token)
        repeatable = name is not None and params[name].annotation == "Optional[list[str]]"
        if name is None or name in values and not repeatable:
            return None
        if params[name].annotation == "bool":
            values[name] = True
            continue
        if not rest or rest[0].startswith("-"):
            return None
        value = _plain_value(params[name].annotation, params[name].default, rest.pop(0))
        values[name] = values.get(name, []) + [value] if repeatable else value
    if len(words) != len(arguments):
        return None
    values.update((name, _plain_value(params[name].annotation, params[name].default, word))
                  for name, word in zip(arguments, words))
    if any(v is _NOT_PLAIN for v in values.values()):
        return None
    for name in set(options.values()) - set(values):
        values[name] = params[name].default.default
    return functools.partial(func, **values)


def _app_for(argv: list[str]) -> typer.Typer:
    """``app``, reduced to the one command ``argv`` names if it names one: typer builds every
    command of an app (signatures, annotations, parameter types) before it parses any."""
    info = next((c for c in app.registered_commands
                 if argv and (c.name or c.callback.__name__.replace("_", "-")) == argv[0]), None)
    if info is None:
        return app
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True, help=app.info.help)
    one.registered_commands = [info]
    one.callback()(_group)  # still a group, with the same command path and usage lines
    return one


def _group() -> None:
    pass


def _run_plain(call: Any) -> Any:
    """Run a directly bound command as typer's main runs one (end of input, Ctrl-C, a closed pipe)."""
    try:
        return call()
    except EOFError as exc:
        print(file=sys.stderr)
        raise Abort() from exc
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        sys.stdout = PacifyFlushWrapper(sys.stdout)
        sys.stderr = PacifyFlushWrapper(sys.stderr)
        sys.exit(1)


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point: one-line errors, exit 2 for usage errors and for no running cluster."""
    try:
        argv = _join_parameters(list(sys.argv[1:] if argv is None else argv))
        call = _plain_call(argv)
        rv = (_run_plain(call) if call is not None
              else _app_for(argv)(args=argv, prog_name="nbrunner", standalone_mode=False))
    except NoArgsIsHelpError as exc:  # bare `nbrunner` or `nbrunner model`: the help, no error
        text = exc.format_message()
        if text.strip():
            print(text)
        sys.exit(0)
    except (UsageError, ClickException) as exc:
        lines = exc.format_message().strip().splitlines()
        print(f"nbrunner: {lines[0] if lines else 'invalid usage (see --help)'}", file=sys.stderr)
        sys.exit(2)
    except Abort:
        sys.exit(130)
    except Exit as exc:
        sys.exit(exc.exit_code)
    except NoCluster as exc:
        print(f"nbrunner: {exc}", file=sys.stderr)
        sys.exit(2)
    except NbrunnerError as exc:
        print(f"nbrunner: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # last resort: still one line
        print(f"nbrunner: unexpected error: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
    sys.exit(rv if isinstance(rv, int) else 0)
