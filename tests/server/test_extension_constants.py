"""The JupyterLab extension's constants (extension/src/constants.ts) are the server's: job
statuses in lifecycle order, the finished ones, priority bounds and default, model names."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from nbrunner.core.models import FINISHED, PRIORITY_DEFAULT, PRIORITY_MAX, PRIORITY_MIN, STATUSES
from nbrunner.serving.registry import NAME_RE

CONSTANTS = Path(__file__).resolve().parents[2] / "extension" / "src" / "constants.ts"


@pytest.fixture(scope="module")
def source() -> str:
    return CONSTANTS.read_text()


def _names(values) -> tuple[str, ...]:
    """Status names, whether the server keeps them as strings or as str enum members."""
    return tuple(getattr(v, "value", v) for v in values)


def ts_strings(source: str, name: str) -> tuple[str, ...]:
    """The string literals of `export const NAME ... = [...]`."""
    match = re.search(rf"^export const {name}\b[^=]*=\s*\[(.*?)\]", source, re.M | re.S)
    assert match, f"no array {name} in {CONSTANTS.name}"
    return tuple(re.findall(r"'([^']*)'", match.group(1)))


def ts_int(source: str, name: str) -> int:
    match = re.search(rf"^export const {name} = (\d+);", source, re.M)
    assert match, f"no number {name} in {CONSTANTS.name}"
    return int(match.group(1))


def test_statuses(source):
    assert ts_strings(source, "STATUSES") == _names(STATUSES)


def test_finished_statuses(source):
    assert ts_strings(source, "FINISHED_STATUSES") == _names(FINISHED)


def test_cancellable_statuses_are_the_unfinished_ones(source):
    unfinished = tuple(s for s in _names(STATUSES) if s not in _names(FINISHED))
    assert ts_strings(source, "CANCELLABLE_STATUSES") == unfinished


def test_priority_bounds_and_default(source):
    assert (ts_int(source, "MIN_PRIORITY"), ts_int(source, "MAX_PRIORITY"),
            ts_int(source, "DEFAULT_PRIORITY")) == (PRIORITY_MIN, PRIORITY_MAX, PRIORITY_DEFAULT)


def test_model_name_pattern(source):
    match = re.search(r"^export const MODEL_NAME_RE = /(.*)/;$", source, re.M)
    assert match, f"no MODEL_NAME_RE in {CONSTANTS.name}"
    assert match.group(1) == NAME_RE.pattern


def test_a_changed_constant_is_seen():
    """The readers see a difference, not only agreement."""
    changed = "export const STATUSES = [\n  'queued',\n  'done'\n] as const;\nexport const MIN_PRIORITY = 0;\n"
    assert ts_strings(changed, "STATUSES") == ("queued", "done") != _names(STATUSES)
    assert ts_int(changed, "MIN_PRIORITY") != PRIORITY_MIN
