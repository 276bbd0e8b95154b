"""The commands on jobs: ``submit``, ``jobs``, ``show``, ``logs``, ``cancel``, ``rerun``,
``delete``, ``download`` and ``priority``."""
from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Optional

import typer

from ...core.config import FOLLOW_POLL_S, JOBS_SHOWN, RETRIES
from ...core.errors import NbrunnerError
from ...core.models import PRIORITY_DEFAULT, PRIORITY_MAX, PRIORITY_MIN, STATUSES
from ..advice import MAX_GPUS_HELP, SingleLearnerWarning
from .app import DirOption, app, cluster_of, console, print_json, typed_parameters, terminal


@app.command()
def submit(notebook: str = typer.Argument(..., help="notebook path"),
           param: Optional[list[str]] = typer.Option(None, "-p", "--parameter", metavar="NAME VALUE",
                                                     help="a parameter, typed like papermill's (repeatable)"),
           params_file: Optional[Path] = typer.Option(None, "-f", "--parameters-file", help="YAML file of parameters"),
           name: Optional[str] = typer.Option(None, "--name"),
           min_gpus: int = typer.Option(0, "--min-gpus", help="GPUs the job needs to start"),
           max_gpus: Optional[int] = typer.Option(None, "--max-gpus", help=MAX_GPUS_HELP),
           priority: int = typer.Option(PRIORITY_DEFAULT, "--priority", help=f"{PRIORITY_MIN}..{PRIORITY_MAX}"),
           timeout: Optional[float] = typer.Option(None, "--timeout", help="seconds of wall time, the whole job"),
           kernel: Optional[str] = typer.Option(None, "--kernel", help="kernel name (default: the notebook's)"),
           language: Optional[str] = typer.Option(None, "--language", help="kernel language, when no kernel is named"),
           cwd: Optional[str] = typer.Option(None, "--cwd", help="working directory (default: the notebook's)"),
           report_mode: bool = typer.Option(False, "--report-mode", help="hide code cells' input in the output"),
           retries: Optional[int] = typer.Option(None, "--retries",
                                                 help=f"re-runs after a lost worker (default: {RETRIES.name})"),
           inputs: Optional[list[str]] = typer.Option(None, "--input", metavar="PATH",
                                                      help="a file or folder beside the notebook the job reads "
                                                           "(copied into its working directory; repeatable)"),
           notify: Optional[list[str]] = typer.Option(None, "--notify", metavar="TARGET",
                                                      help="tell this target when the job ends, instead of your "
                                                           "`nbrunner notify` targets (repeatable)"),
           wait: bool = typer.Option(False, "--wait", help="block until the job ends; exit 0 only if it completed"),
           as_json: bool = typer.Option(False, "--json"),
           workspace: Optional[Path] = DirOption) -> None:
    """Queue a notebook as a job and print its id."""
    parameters: dict[str, Any] = {}
    if params_file is not None:
        from ...control.local_files import read_limited
        from ...core.limits import load_yaml

        try:
            loaded = load_yaml(read_limited(params_file), str(params_file))  # no aliases, bounded size and depth
        except OSError as exc:
            raise NbrunnerError(f"cannot read {params_file}: {exc.strerror or exc.__class__.__name__}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise NbrunnerError(f"{params_file} must hold a mapping of parameter names to values")
        parameters.update(loaded)
    parameters.update(typed_parameters(param))
    cluster = cluster_of(workspace)
    extra = {k: v for k, v in (("language", language), ("cwd", cwd), ("retries", retries)) if v is not None}
    if report_mode:
        extra["report_mode"] = True
    if inputs:
        extra["inputs"] = inputs
    if notify:
        extra["notify"] = notify
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SingleLearnerWarning)
        job = cluster.submit(notebook, parameters, name=name, min_gpus=min_gpus, max_gpus=max_gpus,
                             priority=priority, timeout=timeout, kernel=kernel, **extra)
    for w in caught:
        print(f"nbrunner: warning: {w.message}", file=sys.stderr)
    if not wait:
        print_json(job.to_dict()) if as_json else print(job.id)
        return
    if not as_json:
        print(job.id, flush=True)
    job.wait()
    if as_json:
        print_json(job.to_dict())
    else:
        console().print(f"{job.id} {job.record.status}" + (f": {job.record.error}" if job.record.error else ""))
    raise typer.Exit(0 if job.record.status == "completed" else 1)


@app.command()
def jobs(status: Optional[str] = typer.Option(None, "--status"),
         limit: Optional[int] = typer.Option(None, "--limit", help=f"show the newest N jobs, the newest last (default {JOBS_SHOWN})"),
         every: bool = typer.Option(False, "--all", help="show every job"),
         schedule: Optional[str] = typer.Option(None, "--schedule", metavar="ID", help="only the runs of this schedule"),
         sweep: Optional[str] = typer.Option(None, "--sweep", metavar="ID", help="only the trials of this sweep"),
         as_json: bool = typer.Option(False, "--json"), workspace: Optional[Path] = DirOption,
         live: bool = typer.Option(False, "--watch", help="a live table, changes as they happen, until Ctrl-C")) -> None:
    """List the newest jobs (--json: {"jobs": [newest first], "next": cursor or null}, as GET /jobs)."""
    if status is not None and status not in STATUSES:
        raise typer.BadParameter(f"--status must be one of {', '.join(STATUSES)}")
    if limit is not None and every:
        raise typer.BadParameter("--limit and --all do not go together")
    if live and sweep is not None:
        raise typer.BadParameter("--watch does not filter by sweep: use nbrunner sweep show ID")
    if live and (every or as_json):
        raise typer.BadParameter("--watch shows the newest jobs live: not with --all or --json")
    if limit is not None and limit < 1:
        raise typer.BadParameter(f"--limit must be a positive integer, got {limit}")
    backend = cluster_of(workspace).backend
    if live:
        from ..watch import watch

        return watch(backend, status, schedule, limit or JOBS_SHOWN, **terminal())
    records, after = backend.jobs(status, None if every else limit or JOBS_SHOWN, schedule=schedule, sweep=sweep)
    if as_json:
        print_json({"jobs": [r.to_dict() for r in records], "next": after})
        return
    from .. import render

    print(render.jobs_text(records, **terminal()))
    line = render.totals_line(records)
    if after is not None:
        line += f" (the newest {len(records)} of {backend.count(status)}; --all lists them all)"
    print(line)


@app.command()
def show(job_id: str = typer.Argument(..., metavar="JOB"), as_json: bool = typer.Option(False, "--json"),
         workspace: Optional[Path] = DirOption) -> None:
    """Show one job."""
    rec = cluster_of(workspace).backend.job(job_id)
    if as_json:
        print_json(rec.to_dict())
        return
    from .. import render

    print(render.job_detail(rec))


@app.command()
def logs(job_id: str = typer.Argument(..., metavar="JOB"), follow: bool = typer.Option(False, "--follow", "-f"),
         workspace: Optional[Path] = DirOption) -> None:
    """Print a job's log; with --follow, until the job ends."""
    backend = cluster_of(workspace).backend
    offset = 0
    while True:
        text, offset = backend.log(job_id, offset)
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()
        if not follow:
            return
        if backend.job(job_id).finished:  # what was written between the read and the status check
            sys.stdout.write(backend.log(job_id, offset)[0])
            return
        time.sleep(FOLLOW_POLL_S)


@app.command()
def cancel(job_id: str = typer.Argument(..., metavar="JOB"), workspace: Optional[Path] = DirOption) -> None:
    """Cancel a queued or running job."""
    job = cluster_of(workspace).job(job_id).cancel()
    print(f"{job.id} {job.record.status}")


@app.command()
def rerun(job_id: str = typer.Argument(..., metavar="JOB"),
          param: Optional[list[str]] = typer.Option(None, "-p", "--parameter", metavar="NAME VALUE",
                                                    help="a parameter to change (repeatable)"),
          as_json: bool = typer.Option(False, "--json"),
          workspace: Optional[Path] = DirOption) -> None:
    """Run a job again from its input snapshot with the same options, and print the new id."""
    parameters = typed_parameters(param)
    job = cluster_of(workspace).job(job_id).rerun(parameters)
    print_json(job.to_dict()) if as_json else print(job.id)


@app.command()
def delete(job_id: str = typer.Argument(..., metavar="JOB"), workspace: Optional[Path] = DirOption) -> None:
    """Delete a finished job: its record and its directory."""
    cluster_of(workspace).job(job_id).delete()
    print(f"{job_id} deleted")


@app.command()
def download(job_id: str = typer.Argument(..., metavar="JOB"),
             fmt: str = typer.Option("ipynb", "--format", help="ipynb, html or zip"),
             output: Optional[Path] = typer.Option(None, "-o", "--output",
                                                   help="file to write (default: NAME-ID.FORMAT here; - for stdout)"),
             workspace: Optional[Path] = DirOption) -> None:
    """Save a job's output notebook, its HTML, or a zip of its directory."""
    from ...control.job_files import DOWNLOAD_SUFFIX, download_name
    from ..job import download as write_download

    if fmt not in DOWNLOAD_SUFFIX:
        raise typer.BadParameter(f"--format must be one of {', '.join(DOWNLOAD_SUFFIX)}, got {fmt!r}")
    job = cluster_of(workspace).job(job_id)
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
    job = cluster_of(workspace).job(job_id).set_priority(value)
    print(f"{job.id} priority {job.record.priority}")


