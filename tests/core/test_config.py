"""Settings in one module: every NBRUNNER_* variable and tunable in nbrunner/core/config.py, the
README's configuration table equal to it, and each variable read when used, not at import."""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from nbrunner.core import config
from nbrunner.core.config import KEEP_DAYS, RETRIES, USER_VARIABLES, VARIABLES, WORKER_TTL, Variable, check
from nbrunner.core.errors import InvalidRequest

from source_trees import parsed

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "nbrunner"
NAME = re.compile(r"(?<![A-Za-z0-9_])NBRUNNER_[A-Z0-9_]+")
GETTERS = {"raw", "text", "required", "seconds", "days", "count", "flag"}


@functools.cache
def modules() -> dict[str, ast.Module]:
    """Every module's syntax tree, parsed once for the tests here (they only read them)."""
    return {str(p.relative_to(PACKAGE)): parsed(p) for p in sorted(PACKAGE.rglob("*.py"))}


def readme_table() -> dict[str, tuple[str, str]]:
    """The README's configuration table: variable -> (meaning, default)."""
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.fullmatch(r"\| `(NBRUNNER_[A-Z0-9_]+)` \| (.+) \| (.+) \|", line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} is in the table twice"
            rows[m.group(1)] = (m.group(2), m.group(3))
    return rows


def docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring nodes of a module, its classes and its functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_every_variable_is_declared_once_with_a_one_line_doc():
    names = [v.name for v in VARIABLES]
    assert len(names) == len(set(names))
    assert {v.name for v in vars(config).values() if isinstance(v, Variable)} == set(names)
    for v in VARIABLES:
        assert NAME.fullmatch(v.name) and v.doc and "\n" not in v.doc, v
        assert v.kind in GETTERS - {"raw", "required"}, v
        assert v.shown is not None or v.default is not None or v.internal, f"{v.name}: say what unset means"
    check(VARIABLES, {})  # every default reads back with its own getter


def test_readme_table_is_the_user_variables():
    table = readme_table()
    assert set(table) == {v.name for v in USER_VARIABLES}
    for v in USER_VARIABLES:
        assert table[v.name] == (v.doc, v.default_text), v.name
    assert list(table) == [v.name for v in USER_VARIABLES]  # same order: the table reads like the module


def test_every_name_mentioned_is_a_variable():
    known = {v.name for v in VARIABLES}
    texts = {"README.md": (REPO / "README.md").read_text()}
    texts.update({str(p.relative_to(REPO)): p.read_text() for p in PACKAGE.rglob("*.py")})
    for where, text in texts.items():
        unknown = set(NAME.findall(text)) - known
        assert not unknown, f"{where} names {sorted(unknown)}, which config.py does not define"


def test_only_config_names_a_variable_in_code():
    naming = set()
    for path, tree in modules().items():
        if path == "core/config.py":
            continue
        skip = docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip \
                    and NAME.search(node.value):
                naming.add(path)
    assert naming == set(), "use the Variable from nbrunner.core.config"


def _import_time_reads(tree: ast.Module) -> list[str]:
    """Environment reads in the statements that run at import (functions' bodies do not)."""
    found = []
    stack = [s for s in tree.body if not (isinstance(s, ast.If) and "__main__" in ast.unparse(s.test))]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv"):
            found.append(ast.unparse(node))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in GETTERS:
            owner = node.func.value
            name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if isinstance(getattr(config, name, None), Variable):
                found.append(ast.unparse(node))
        stack.extend(ast.iter_child_nodes(node))
    return found


def test_nothing_reads_the_environment_at_import():
    reads = {path: r for path, tree in modules().items() if (r := _import_time_reads(tree))}
    assert reads == {}


def test_tunables_are_named_once_with_a_doc():
    lines = (PACKAGE / "core" / "config.py").read_text().splitlines()
    tree = ast.parse("\n".join(lines))
    constants = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.isupper() and not isinstance(getattr(config, name), Variable):
                constants.add(name)
                assert lines[node.lineno - 2].startswith("#: "), f"{name} has no #: line above it"
    # the names these values had before they moved here: a module that brings one back defines a tunable twice
    constants |= {"EVERY_S", "BATCH", "LOCK_TTL_MS", "RETRY_INTERVAL", "KILL_AFTER_S", "RESTART_CHECK_S",
                  "START_TIMEOUT", "STOP_TIMEOUT", "SHOWN", "DEFAULT_LIMIT", "MAX_LIMIT", "CHUNK", "DRAIN_LIMIT",
                  "HEARTBEAT_INTERVAL", "WORKER_TTL", "LEASE_TTL", "DEFAULT_RETRIES", "DEFAULT_KERNEL", "MIN_PORT",
                  "MAX_GPUS", "LEAVE_GRACE_S", "STALLED_S", "START_TIMEOUT_S", "REFILL_AFTER_S"}
    for path, tree in modules().items():
        if path == "core/config.py":
            continue
        for node in tree.body:
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            names |= {e.id for t in targets if isinstance(t, ast.Tuple) for e in t.elts if isinstance(e, ast.Name)}
            assert not names & constants, f"{path} defines {names & constants}: import it from nbrunner.core.config"


def test_bad_values_get_one_line_errors():
    with pytest.raises(InvalidRequest, match=r"^NBRUNNER_WORKER_TTL must be a number of seconds > 0, got 'soon'$"):
        WORKER_TTL.seconds({"NBRUNNER_WORKER_TTL": "soon"})
    for bad in ("0", "-1", "nan", "inf"):
        with pytest.raises(InvalidRequest, match="NBRUNNER_WORKER_TTL"):
            WORKER_TTL.seconds({"NBRUNNER_WORKER_TTL": bad})
    with pytest.raises(InvalidRequest, match=r"^NBRUNNER_RETRIES must be a whole number >= 0, got '-1'$"):
        RETRIES.count({"NBRUNNER_RETRIES": "-1"})
    with pytest.raises(InvalidRequest, match=r"NBRUNNER_KEEP_DAYS must be a number of days > 0 \(or unset: keep every"):
        check(environ={"NBRUNNER_KEEP_DAYS": "soon"})
    with pytest.raises(InvalidRequest, match="^NBRUNNER_JOB_ID is not set"):
        config.JOB_ID.required({})
    assert WORKER_TTL.seconds({"NBRUNNER_WORKER_TTL": " 2.5 "}) == 2.5 and WORKER_TTL.seconds({}) == 15
    assert RETRIES.count({"NBRUNNER_RETRIES": ""}) == 2 and KEEP_DAYS.days({"NBRUNNER_KEEP_DAYS": "1"}) == 1


def test_the_three_import_time_reads_are_read_when_used(monkeypatch):
    from nbrunner.control import registration, scheduler, submit
    from nbrunner.core.models import JobRequest

    request = JobRequest.parse({"notebook": "a.ipynb"})
    monkeypatch.delenv("NBRUNNER_WORKER_TTL", raising=False)
    monkeypatch.delenv("NBRUNNER_LEASE_TTL", raising=False)
    monkeypatch.delenv("NBRUNNER_RETRIES", raising=False)
    assert (registration.heartbeat_interval(), scheduler.lease_ms(), submit.retries(request)) == (3.0, 5000, 2)
    monkeypatch.setenv("NBRUNNER_WORKER_TTL", "7.5")
    monkeypatch.setenv("NBRUNNER_LEASE_TTL", "2.5")
    monkeypatch.setenv("NBRUNNER_RETRIES", "5")
    assert (registration.heartbeat_interval(), scheduler.lease_ms(), submit.retries(request)) == (1.5, 2500, 5)
    assert submit.retries(JobRequest.parse({"notebook": "a.ipynb", "retries": 0})) == 0  # the job's own wins
    monkeypatch.setenv("NBRUNNER_RETRIES", "many")
    with pytest.raises(InvalidRequest, match="NBRUNNER_RETRIES"):
        submit.retries(request)


def test_settings_read_the_environment_when_loaded(monkeypatch, tmp_path):
    monkeypatch.setenv("NBRUNNER_WORKSPACE", str(tmp_path))
    monkeypatch.setenv("NBRUNNER_STORAGE", str(tmp_path / "shared"))
    monkeypatch.setenv("NBRUNNER_REDIS_URL", "")  # empty: unset
    s = config.Settings.load()
    assert (s.workspace, s.storage, s.embedded) == (tmp_path.resolve(), (tmp_path / "shared").resolve(), True)
    assert s.env() == {"NBRUNNER_WORKSPACE": str(s.workspace), "NBRUNNER_STORAGE": str(s.storage),
                       "NBRUNNER_REDIS_URL": f"unix://{s.workspace}/.nbrunner/redis.sock"}
