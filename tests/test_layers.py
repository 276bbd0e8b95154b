"""The package's import graph: no circle, and every module imports only its own layer or lower ones.

Read with ``ast`` from the source (nothing is imported): every ``import`` and ``from ... import``
counts, at module level, inside a function or under ``if TYPE_CHECKING:``, and importing
``nbrunner.a.b`` counts as importing the package ``nbrunner.a`` (its ``__init__``) too, since
Python runs it first, unless the importer is inside that package already.  The root ``nbrunner/__init__.py`` imports its
public names lazily (by name, not with an import statement) and is left out.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import nbrunner

from source_trees import parsed

PACKAGE = Path(nbrunner.__file__).parent

# Lowest first: the data flow submit -> queue -> allocate -> execute -> train -> store -> browse.
LAYERS = ["core", "control", "elastic", "execution", "serving", "client", "server"]
TOP = len(LAYERS)  # nbrunner/__init__, __main__ and the sim/ package stand above every layer


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The nbrunner modules that ``name`` (read from ``path``) imports, packages included."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            # "from pkg import mod" imports the module pkg.mod; "from mod import name" the module
            targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in known else stem for a in node.names]
        else:
            continue
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)}
        for target in targets:
            parts = target.split(".")
            for i in range(2, len(parts) + 1):
                prefix = ".".join(parts[:i])
                if prefix in known and (prefix not in own or prefix == target != name):
                    found.add(prefix)
    return found


@functools.cache
def graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    mods = modules(root)
    return {name: imports(name, path, set(mods)) for name, path in mods.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def layer_of(name: str) -> int:
    parts = name.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return TOP


def test_every_module_is_in_a_layer_or_on_top():
    on_top = ("nbrunner", "nbrunner.__main__", "nbrunner.sim")
    loose = [m for m in modules() if layer_of(m) == TOP and m not in on_top and not m.startswith("nbrunner.sim.")]
    assert loose == [], f"modules outside the layers {LAYERS}: {loose}"


def test_no_import_circle():
    assert cycles(graph()) == []


def test_imports_go_down_the_layers():
    upward = sorted(f"{a} -> {b}" for a, targets in graph().items() for b in targets if layer_of(b) > layer_of(a))
    assert upward == [], "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def test_the_check_sees_function_level_and_package_imports(tmp_path):
    """The checker itself: a circle closed only inside a function, and an import of a package's
    module, are both seen."""
    pkg = tmp_path / "nbrunner"
    (pkg / "core").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("from . import b\n")
    (pkg / "core" / "b.py").write_text("def f():\n    from .a import x\n")
    (pkg / "client.py").write_text("import nbrunner.core.a\n")
    (pkg / "core" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import client\n")
    g = graph(pkg)
    assert g["nbrunner.core.b"] == {"nbrunner.core.a"}
    assert g["nbrunner.core.c"] == {"nbrunner.client"}  # typing-only imports count too
    assert g["nbrunner.client"] == {"nbrunner.core", "nbrunner.core.a"}
    assert cycles(g) == [["nbrunner.core.a", "nbrunner.core.b"]]


@pytest.mark.parametrize("name", ["nbrunner.control.store", "nbrunner.client.cluster", "nbrunner.execution.worker"])
def test_layer_of_reads_the_subpackage(name):
    assert layer_of(name) == LAYERS.index(name.split(".")[1])


# core holds records and decisions: Redis, processes, threads, sockets and files are control's (or a
# higher layer's).  config.py is the one edge inside it: it reads the environment and the cluster's
# password file when a setting is asked for.
IO_MODULES = {"redis", "rq", "subprocess", "socket", "psutil", "signal", "shutil", "tempfile", "multiprocessing",
              "threading", "http.client", "http.server", "urllib.request", "requests", "httpx", "torch", "nbconvert",
              "papermill", "jupyter_client"}
OS_CALLS = {"walk", "kill", "replace", "remove", "unlink", "makedirs", "mkdir", "listdir", "scandir", "rename",
            "getpid", "chmod", "chown", "open", "stat", "fork", "system"}
PATH_CALLS = {"read_text", "read_bytes", "write_text", "write_bytes", "mkdir", "iterdir", "glob", "rglob", "is_file",
              "is_dir", "exists", "resolve", "stat", "touch", "rmdir", "unlink", "open", "expanduser"}
CORE_EDGE = {"nbrunner.core.config"}


def io_in(path: Path) -> list[str]:
    """The I/O imports and calls of one module: an I/O package imported, ``open()``, an ``os``
    call that touches files or processes, a path method that does."""
    found = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"import {n}" for n in names if not getattr(node, "level", 0)
                      and any(n == m or n.startswith(m + ".") for m in IO_MODULES)]
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "open":
                hit = True
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "os":
                hit = f.attr in OS_CALLS
            else:
                hit = isinstance(f, ast.Attribute) and f.attr in PATH_CALLS
            if hit:
                found.append(f"{ast.unparse(f)}() line {node.lineno}")
    return found


def test_core_does_no_io():
    io = {name: found for name, path in modules().items()
          if layer_of(name) == 0 and name not in CORE_EDGE and (found := io_in(path))}
    assert io == {}, "core/ reads, writes or talks to something:\n" + "\n".join(f"{k}: {v}" for k, v in io.items())


def test_the_io_check_sees_reads_writes_and_clients(tmp_path):
    mod = tmp_path / "m.py"
    mod.write_text("import redis\nfrom pathlib import Path\n\ndef f(p):\n    Path(p).write_text('x')\n"
                   "    with open(p) as fh:\n        os.replace(p, p)\n        return fh.read(), 'a'.replace('a', 'b')\n")
    assert io_in(mod) == ["import redis", "Path(p).write_text() line 5", "open() line 6", "os.replace() line 7"]
