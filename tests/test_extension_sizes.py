"""The JupyterLab extension's sources stay small: no file under ``extension/src`` over 400 lines
(split a bigger one into components, hooks or plugins of their own)."""
from __future__ import annotations

from pathlib import Path

SOURCES = Path(__file__).resolve().parent.parent / "extension" / "src"
MAX_LINES = 400


def line_counts(root: Path = SOURCES) -> dict[str, int]:
    """Lines of every TypeScript source under ``root``, by path relative to it."""
    return {
        str(path.relative_to(root)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(root.rglob("*"))
        if path.suffix in {".ts", ".tsx"}
    }


def test_sources_are_found():
    counts = line_counts()
    assert "index.ts" in counts and "main-area.ts" in counts, sorted(counts)


def test_no_source_over_the_limit():
    over = {path: n for path, n in line_counts().items() if n > MAX_LINES}
    assert not over, f"extension sources over {MAX_LINES} lines: {over}"


def test_the_count_sees_a_long_file(tmp_path):
    (tmp_path / "long.tsx").write_text("x\n" * (MAX_LINES + 1))
    (tmp_path / "short.ts").write_text("x\n")
    assert line_counts(tmp_path) == {"long.tsx": MAX_LINES + 1, "short.ts": 1}
