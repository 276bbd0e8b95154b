"""The documentation's pages as the tests read them: the fenced blocks a page marks to be run.

A block is marked with MyST's ``code-block`` directive and a class::

    ```{code-block} bash
    :class: tested

    nbrunner submit notebooks/hello.ipynb --wait
    ```

``tested`` blocks (tutorials) run against a real cluster in ``test_tutorials.py``; ``checklist``
blocks (the JupyterHub checklist) run as root in ``test_hub_checklist.py``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

_BLOCK = re.compile(r"^```\{code-block\} (\w+)\n((?::\w[\w-]*:[^\n]*\n)*)\n?(.*?)^```$", re.M | re.S)


class Block(NamedTuple):
    language: str
    classes: tuple[str, ...]
    text: str
    line: int


def blocks(page: Path) -> list[Block]:
    """Every ``{code-block}`` of ``page``, in order, with its classes."""
    source = page.read_text()
    out = []
    for m in _BLOCK.finditer(source):
        options = dict(re.findall(r"^:([\w-]+):\s*(.*)$", m.group(2), re.M))
        out.append(Block(m.group(1), tuple(options.get("class", "").split()), m.group(3),
                         source.count("\n", 0, m.start()) + 1))
    return out


def script(page: Path, cls: str = "tested") -> str:
    """The ``cls`` blocks of ``page`` as one bash script, in order: bash blocks as they are, Python
    blocks run by ``python`` from a here-document (so shell variables set before are not needed by
    them, and what they print shows in the script's output)."""
    parts = ["set -euo pipefail"]
    for b in blocks(page):
        if cls not in b.classes:
            continue
        parts.append(f"# {page.name} line {b.line}")
        if b.language == "bash":
            parts.append(b.text)
        elif b.language == "python":
            parts.append(f"python - <<'NBRUNNER_DOCS_PYTHON'\n{b.text}NBRUNNER_DOCS_PYTHON")
        else:
            raise AssertionError(f"{page}:{b.line}: a {cls} block must be bash or python, not {b.language}")
    return "\n".join(parts) + "\n"
