"""``runs/<job-id>/output.html``: an ended job's notebook as HTML, viewable without a kernel.

Written by whoever ends the job (the worker, a cancel, the scheduler when a worker is lost)
before the final status is recorded, so a client that sees the final status finds the file.
nbconvert is imported here on first use only: the CLI's read commands never load it.
"""
from __future__ import annotations

import logging
import secrets
import threading
from pathlib import Path

log = logging.getLogger("nbrunner.html")

OUTPUT_HTML = "output.html"


_exporter = None  # one HTMLExporter per process: its templates are parsed once
_lock = threading.Lock()  # an exporter keeps state while it converts: one conversion at a time


def exporter():
    """The process's HTMLExporter (nbconvert imported on first use)."""
    global _exporter
    if _exporter is None:
        from nbconvert import HTMLExporter

        class Exporter(HTMLExporter):
            """nbconvert's HTML exporter, whose inlined style sheets (the template's CSS and the lab
            theme with its fonts, about 270 KB) are read once per process, and stand in the page as
            short markers while nbconvert parses and rewrites it (BeautifulSoup, for image
            descriptions and focus order, leaves a style element's text as it is): the same page,
            in a third of the time."""

            def _init_resources(self, resources):
                resources = super()._init_resources(resources)
                for key in ("include_css", "include_lab_theme"):
                    resources[key] = _marked(resources[key])
                return resources

            def from_notebook_node(self, nb, resources=None, **kw):
                body, resources = super().from_notebook_node(nb, resources, **kw)
                for marker, text, _ in _STYLES.values():
                    body = body.replace(marker, text)
                return body, resources

        _exporter = Exporter()
    return _exporter


_STYLES: dict = {}  # (resource, name) -> (its marker, the style sheet it stands for, the element with the marker)


def _marked(make):
    """``make`` (an exporter's ``include_css`` or ``include_lab_theme``), called once per name: the
    element it makes, with a marker in place of the style sheet's text."""
    import markupsafe

    def marked(name):
        key = (make.__name__, name)
        if key not in _STYLES:
            element = str(make(name))
            head, rest = element.split(">", 1)
            text, tail = rest.rsplit("</style>", 1)
            marker = f"/* nbrunner style sheet {len(_STYLES)} {secrets.token_hex(8)} */"
            _STYLES[key] = (marker, text, f"{head}>{marker}</style>{tail}")
        return markupsafe.Markup(_STYLES[key][2])  # noqa: S704 - nbconvert's own element, marked

    return marked


def preload() -> None:
    """Import nbconvert and parse its templates now (a worker does it before it forks job
    processes, so that a job's end does not pay for it)."""
    from ..core.notebooks import load_nbformat

    v4 = load_nbformat().v4
    cell = v4.new_code_cell("print(1)", outputs=[v4.new_output("stream", name="stdout", text="1\n")])
    nb = v4.new_notebook(cells=[v4.new_markdown_cell("# nbrunner"), cell],
                         metadata={"language_info": {"name": "python", "pygments_lexer": "ipython3"}})
    try:  # markdown and a code cell: the markdown renderer and the lexer are loaded too
        with _lock:
            exporter().from_notebook_node(nb)
    except Exception as exc:  # noqa: BLE001 - the job's end tries again and logs why
        log.warning("could not prepare the HTML exporter: %s: %s", exc.__class__.__name__, exc)


def write_output_html(job_dir: Path) -> Path | None:
    """Render ``output.ipynb`` (or, if the job never ran, the ``input.ipynb`` snapshot) to
    ``output.html``, replacing it atomically (as :func:`nbrunner.control.safe_write.write_into`: the
    job directory may be its owner's); None if there is no notebook or it cannot be rendered
    (never raises: the job must end whatever happens here)."""
    source = next((p for p in (job_dir / "output.ipynb", job_dir / "input.ipynb") if p.is_file()), None)
    if source is None:
        return None
    try:
        from ..core.notebooks import load_nbformat
        from .safe_write import open_beneath, write_into

        with open_beneath(job_dir, source.name, mode="r") as f:
            nb = load_nbformat().read(f, as_version=4)
        # Without the saved widget state nbconvert shows each widget's own static fallback
        # (e.g. the jobs monitor's text/html table); with it, it emits views that need the
        # widget manager's scripts from a CDN, blank when viewed offline or with scripts off.
        nb.metadata.pop("widgets", None)
        with _lock:
            body, _ = exporter().from_notebook_node(nb)
        return write_into(job_dir, OUTPUT_HTML, body.encode("utf-8"))
    except Exception as exc:  # noqa: BLE001 - a notebook nbconvert cannot render must not block the job's end
        log.warning("could not render %s to HTML: %s: %s", source, exc.__class__.__name__, exc)
        return None
