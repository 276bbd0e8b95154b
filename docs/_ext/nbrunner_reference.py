"""Reference pages generated from the code at every build (Sphinx extension).

- ``reference/cli.md`` from the Typer app's commands (``nbrunner.client.cli.app``: usage, help,
  every option and argument with its help text),
- ``reference/rest.md`` from the OpenAPI document ``GET /openapi.json`` serves
  (``nbrunner.server.openapi.document``),
- ``reference/configuration.md`` from ``nbrunner.core.config.VARIABLES``.

The pages are written into ``reference/_generated/`` before Sphinx reads the sources (they are
not committed), so they cannot drift from the code.  Topic pages that other work adds at the
top of ``docs/`` (``TOPIC_PAGES``) join the toctree named for them when they exist.
"""
from __future__ import annotations

import json
from pathlib import Path

# page at the top of docs/ -> the index whose toctree lists it once it exists
TOPIC_PAGES = {
    "waiting": "howto/index", "notifications": "howto/index", "inputs": "howto/index",
    "pipelines": "howto/index", "bulk-submit": "howto/index", "usage": "admin/index", "metrics": "admin/index", "reliability": "admin/index",
}


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def cli_markdown() -> str:
    """Every ``nbrunner`` command and subcommand, from the Typer app."""
    import typer

    from nbrunner.client.cli import app

    root = typer.main.get_command(app)
    out = ["# Command line (`nbrunner`)", "",
           "Generated from the commands' own declarations (`nbrunner COMMAND --help` prints the same).",
           "`nbrunner sweep show ID` is the command `sweep-show` below.", ""]

    def walk(cmd, path: list[str]) -> None:
        ctx = cmd.context_class(cmd, info_name=" ".join(path))  # typer's own click, vendored or not
        if path != ["nbrunner"]:
            out.append(f"## `{' '.join(path[1:])}`")
            out.append("")
            out.append("```text")
            out.append(" ".join(cmd.collect_usage_pieces(ctx)).join([f"{' '.join(path)} ", ""]))
            out.append("```")
            out.append("")
            if cmd.help:
                out.append(cmd.help.strip())
                out.append("")
            rows = []
            for param in cmd.params:
                if getattr(param, "hidden", False):
                    continue
                names = ", ".join(f"`{o}`" for o in (*param.opts, *param.secondary_opts)) \
                    if param.param_type_name == "option" else f"`{param.metavar or param.name.upper()}`"
                help_text = getattr(param, "help", None) or ""
                default = param.default
                if param.param_type_name == "option" and default not in (None, False, ()) and not callable(default):
                    help_text += f" (default: `{default}`)"
                rows.append(f"| {names} | {_escape(help_text)} |")
            if rows:
                out.extend(["| argument or option | meaning |", "|---|---|", *rows, ""])
        for name in getattr(cmd, "list_commands", lambda c: [])(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and (not sub.hidden or name == "sweep-show"):
                walk(sub, [*path, name])

    walk(root, ["nbrunner"])
    return "\n".join(out) + "\n"


def rest_markdown() -> str:
    """Every route of the REST API, from its OpenAPI document."""
    from nbrunner.server.openapi import document

    doc = document()
    out = ["# REST API", "",
           "Generated from the OpenAPI document the API serves at `GET /openapi.json` (under",
           "`<base_url>nbrunner/api` of a Jupyter server, or `<hub>/services/nbrunner/api` of a hub service).",
           "Errors are `{\"message\": ...}` with 400, 404 or 409 (401 and 403 for refused credentials).", ""]
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            out += [f"## `{method.upper()} {path}`", ""]
            summary = op.get("summary") or op.get("description") or ""
            if summary:
                out += [summary.strip(), ""]
            params = op.get("parameters", [])
            if params:
                out += ["| parameter | in | meaning |", "|---|---|---|"]
                out += [f"| `{p['name']}` | {p['in']} | {_escape(p.get('description', ''))} |" for p in params]
                out.append("")
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body:
                out += [f"Body: `{body.get('$ref', '').rsplit('/', 1)[-1] or 'JSON'}`", ""]
            answers = ", ".join(f"{code} {_escape(r.get('description', ''))}" for code, r in op["responses"].items())
            out += [f"Answers: {answers}", ""]
    out += ["## Schemas", ""]
    for name, schema in doc.get("components", {}).get("schemas", {}).items():
        out += [f"### `{name}`", "", "```json", json.dumps(schema, indent=2), "```", ""]
    return "\n".join(out) + "\n"


def config_markdown() -> str:
    """Every ``NBRUNNER_*`` variable, from ``nbrunner.core.config``."""
    from nbrunner.core.config import VARIABLES

    out = ["# Configuration", "",
           "Generated from `nbrunner/core/config.py`. A bad value stops the command that reads it with a",
           "one-line error. Set by you:", "", "| variable | meaning | default |", "|---|---|---|"]
    out += [f"| `{v.name}` | {_escape(v.doc)} | {_escape(v.default_text)} |" for v in VARIABLES if not v.internal]
    out += ["", "Set by nbrunner for its own processes (read them in a job, do not set them):", "",
            "| variable | meaning |", "|---|---|"]
    out += [f"| `{v.name}` | {_escape(v.doc)} |" for v in VARIABLES if v.internal]
    return "\n".join(out) + "\n"


def write_pages(srcdir: Path) -> None:
    target = srcdir / "reference" / "_generated"
    target.mkdir(parents=True, exist_ok=True)
    for name, make in (("cli", cli_markdown), ("rest", rest_markdown), ("configuration", config_markdown)):
        path = target / f"{name}.md"
        text = make()
        if not path.exists() or path.read_text() != text:  # unchanged pages are not rebuilt
            path.write_text(text)


def _generate(app) -> None:
    write_pages(Path(app.srcdir))


def _topic_pages(app, docname: str, source: list[str]) -> None:
    """Add the topic pages that exist to the toctree of their index."""
    present = [name for name, index in TOPIC_PAGES.items()
               if index == docname and (Path(app.srcdir) / f"{name}.md").exists()]
    if present:
        entries = "\n".join(f"/{name}" for name in present)
        source[0] += f"\n\n```{{toctree}}\n:caption: More\n:maxdepth: 1\n\n{entries}\n```\n"


def setup(app):
    app.connect("builder-inited", _generate)
    app.connect("source-read", _topic_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
