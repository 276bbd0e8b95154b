"""The commands on pipelines: ``pipeline run|show|cancel|rerun`` and ``pipelines``."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from .app import DirOption, app, cluster_of, console, print_json, typed_parameters

pipeline_app = typer.Typer(no_args_is_help=True, help="Pipelines: notebooks that feed notebooks.")
app.add_typer(pipeline_app, name="pipeline")
JsonOption = typer.Option(False, "--json", help="print the pipeline record as JSON")


def print_pipeline(rec: dict[str, Any]) -> None:
    """A pipeline's steps as a table: status, job, why it waits or failed, outputs."""
    from rich.table import Table

    table = Table(title=f"pipeline {rec['id']} {rec['name']!r}: {rec['status']}")
    for column in ("step", "needs", "status", "job", "note", "outputs"):
        table.add_column(column)
    for name, step in rec["steps"].items():
        note = (step.get("waiting") or {}).get("message") or step.get("error") or ("reused" if step.get("reused") else "")
        outputs = ", ".join(f"{k}={v!r}" for k, v in (step.get("outputs") or {}).items())
        table.add_row(name, ", ".join(step.get("needs") or []), step["status"], step.get("job") or step.get("sweep") or "",
                      note, outputs[:80])
    console().print(table)


@pipeline_app.command("run")
def pipeline_run(file: Path = typer.Argument(..., metavar="FILE", help="the pipeline file (YAML)"),
                 param: Optional[list[str]] = typer.Option(None, "-p", "--parameter", metavar="STEP.NAME VALUE",
                                                           help="override a step's parameter (repeatable)"),
                 wait: bool = typer.Option(False, "--wait", help="block until it ends; exit 0 only if it completed"),
                 as_json: bool = JsonOption,
                 workspace: Optional[Path] = DirOption) -> None:
    """Run a pipeline; prints its id (its record with --json)."""
    overrides = typed_parameters(param)
    for key in overrides:
        if "." not in key:
            raise typer.BadParameter(f"-p takes STEP.NAME, got {key!r}")
    pipe = cluster_of(workspace).pipeline(file, overrides or None)
    if wait:
        pipe.wait()
    if as_json:
        print_json(pipe.to_dict())
    else:
        print(pipe.id)
    if wait and pipe.status != "completed":
        raise typer.Exit(1)


@pipeline_app.command("show")
def pipeline_show(pipeline_id: str = typer.Argument(..., metavar="ID"), as_json: bool = JsonOption,
                  workspace: Optional[Path] = DirOption) -> None:
    """A pipeline's steps: status, job, why a step waits, outputs."""
    rec = cluster_of(workspace).backend.pipeline(pipeline_id)
    print_json(rec) if as_json else print_pipeline(rec)


@pipeline_app.command("cancel")
def pipeline_cancel(pipeline_id: str = typer.Argument(..., metavar="ID"), as_json: bool = JsonOption,
                    workspace: Optional[Path] = DirOption) -> None:
    """Cancel a pipeline: its running steps are cancelled, its pending ones skipped."""
    rec = cluster_of(workspace).backend.cancel_pipeline(pipeline_id)
    print_json(rec) if as_json else print(f"{rec['id']} {rec['status']}")


@pipeline_app.command("rerun")
def pipeline_rerun(pipeline_id: str = typer.Argument(..., metavar="ID"),
                   from_step: Optional[str] = typer.Option(None, "--from", metavar="STEP",
                                                           help="run again from this step (default: from the steps "
                                                                "that did not complete)"),
                   as_json: bool = JsonOption, workspace: Optional[Path] = DirOption) -> None:
    """A new pipeline reusing the completed steps before STEP (their jobs and outputs); prints its id."""
    rec = cluster_of(workspace).backend.rerun_pipeline(pipeline_id, from_step)
    print_json(rec) if as_json else print(rec["id"])


@app.command()
def pipelines(as_json: bool = typer.Option(False, "--json", help='print {"pipelines": [...]}'),
              workspace: Optional[Path] = DirOption) -> None:
    """List pipelines, newest first."""
    recs = cluster_of(workspace).backend.pipelines()
    if as_json:
        print_json({"pipelines": recs})
        return
    from rich.table import Table

    table = Table()
    for column in ("id", "name", "status", "steps", "created", "finished"):
        table.add_column(column)
    for rec in recs:
        done = sum(1 for s in rec["steps"].values() if s["status"] == "completed")
        table.add_row(rec["id"], rec["name"], rec["status"], f"{done}/{len(rec['steps'])} completed",
                      rec["created_at"], rec.get("finished_at") or "")
    console().print(table)
