"""``nbrunner notify``: where and when the caller is told that a job, sweep or pipeline ended."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .app import DirOption, app, cluster_of, print_json


@app.command()
def notify(add: Optional[list[str]] = typer.Option(None, "--add", metavar="TARGET",
                                                   help="mailto:ADDRESS or an Apprise URL (repeatable)"),
           remove: Optional[list[str]] = typer.Option(None, "--remove", metavar="TARGET",
                                                      help="a target to stop telling (repeatable)"),
           on: Optional[list[str]] = typer.Option(None, "--on", metavar="EVENT",
                                                  help="the events to tell, replacing the current ones: completed, "
                                                       "failed, cancelled, sweep, pipeline (repeatable)"),
           listing: bool = typer.Option(False, "--list", help="print the targets and events (also without options)"),
           show_log: bool = typer.Option(False, "--log", help="print the deliveries, newest first"),
           as_json: bool = typer.Option(False, "--json", help="print what GET /me/notifications (or its log) returns"),
           workspace: Optional[Path] = DirOption) -> None:
    """Show or change your notification targets and events (no option, or --list: show them)."""
    backend = cluster_of(workspace).backend
    if show_log:
        entries = backend.notification_log()
        if as_json:
            print_json({"log": entries})
            return
        for e in entries:
            print(f"{e['time']}  {e['outcome']:<8} {e['event']:<9} {e['subject']:<16} {e['target']}"
                  + (f"  ({e['error']})" if e.get("error") else ""))
        if not entries:
            print("no notification sent yet")
        return
    settings = backend.notifications()
    if listing and (add or remove or on):
        raise typer.BadParameter("--list shows the settings: not with --add, --remove or --on")
    if add or remove or on:
        targets = [t for t in settings["targets"] if t not in (remove or [])]
        missing = [t for t in remove or [] if t not in settings["targets"]]
        if missing:
            raise typer.BadParameter(f"--remove {missing[0]}: not one of your targets")
        targets += [t for t in add or [] if t not in targets]
        settings = backend.set_notifications({"targets": targets, "on": list(on) if on else settings["on"]})
    if as_json:
        print_json(settings)
        return
    print("targets: " + (", ".join(settings["targets"]) or "none"))
    print("on: " + (", ".join(settings["on"]) or "nothing"))
