"""The commands that watch the cluster from outside: ``metrics`` (a Prometheus exporter) and
``usage`` (GPU-hours per account or user per day)."""
from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Optional

import typer

from ...core.config import METRICS_PORT
from .app import DirOption, app, cluster_of, print_json


@app.command()
def metrics(port: int = typer.Option(METRICS_PORT, "--port", min=0, max=65535, help="port (0: any free one)"),
            address: str = typer.Option("127.0.0.1", "--address", help="address to listen on (0.0.0.0: every one)"),
            workspace: Optional[Path] = DirOption) -> None:
    """Serve the cluster's metrics at /metrics for Prometheus to scrape (docs/metrics.md)."""
    from ...control.discovery import resolve
    from ...execution.exporter import serve

    serve(resolve(workspace), port, address)


@app.command()
def usage(by: str = typer.Option("account", "--by", help="account or user"),
          since: Optional[str] = typer.Option(None, "--since", help="7d, 24h or a date 2026-11-01 (default 7d)"),
          as_json: bool = typer.Option(False, "--json", help="the GET /usage object"),
          as_csv: bool = typer.Option(False, "--csv", help="day,<by>,gpu_hours rows, for spreadsheets"),
          workspace: Optional[Path] = DirOption) -> None:
    """GPU-hours per account or user per day (yours; an admin's: everyone's)."""
    if by not in ("account", "user"):
        raise typer.BadParameter(f"--by must be account or user, got {by!r}")
    if as_json and as_csv:
        raise typer.BadParameter("--json and --csv do not go together")
    report = cluster_of(workspace).backend.usage(by, since)
    if as_json:
        print_json(report)
    elif as_csv:
        out = csv.writer(sys.stdout, lineterminator="\n")
        out.writerow(["day", by, "gpu_hours"])
        for row in report["rows"]:
            out.writerow([row["day"], row[by], f"{row['gpu_hours']:.4f}"])
    else:
        print(usage_text(report))


def usage_text(report: dict) -> str:
    """The report as a table: a row per day and account (or user), then the totals."""
    by = report["by"]
    rows = [("day", by, "gpu_hours")] + [(r["day"], r[by], f"{r['gpu_hours']:.2f}") for r in report["rows"]]
    rows += [("total", key, f"{hours:.2f}") for key, hours in report["totals"].items()]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:>{widths[2]}}" for a, b, c in rows]
    return "\n".join(lines + [f"GPU-hours from {report['since']} to {report['until']}"])
