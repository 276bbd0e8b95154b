"""``runs/<job-id>/output.html``: an ended job's notebook as HTML, viewable without a kernel.

Written by whoever ends the job (the worker, a cancel, the scheduler when a worker is lost)
before the final status is recorded, so a client that sees the final status finds the file.
nbconvert is imported here on first use only: the CLI's read commands never load it.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger("nbrunner.html")

OUTPUT_HTML = "output.html"


def write_output_html(job_dir: Path) -> Path | None:
    """Render ``output.ipynb`` (or, if the job never ran, the ``input.ipynb`` snapshot) to
    ``output.html``, replacing it atomically; None if there is no notebook or it cannot be
    rendered (never raises: the job must end whatever happens here)."""
    source = next((p for p in (job_dir / "output.ipynb", job_dir / "input.ipynb") if p.is_file()), None)
    if source is None:
        return None
    target = job_dir / OUTPUT_HTML
    tmp = job_dir / f".{OUTPUT_HTML}.{os.getpid()}.tmp"
    try:
        from nbconvert import HTMLExporter

        from .notebooks import load_nbformat

        nb = load_nbformat().read(str(source), as_version=4)
        body, _ = HTMLExporter().from_notebook_node(nb)
        tmp.write_text(body, encoding="utf-8")
        os.replace(tmp, target)
        return target
    except Exception as exc:  # noqa: BLE001 - a notebook nbconvert cannot render must not block the job's end
        log.warning("could not render %s to HTML: %s: %s", source, exc.__class__.__name__, exc)
        tmp.unlink(missing_ok=True)
        return None
