"""Public names of a package, imported on first use (PEP 562), so importing it stays cheap."""
from __future__ import annotations

from importlib import import_module
from typing import Any, Callable


def lazy_exports(package: str, namespace: dict[str, Any], exports: dict[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its globals: ``namespace``), for which
    ``exports`` maps each public name to the module, relative to ``package``, that defines it."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(import_module(exports[name], package), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(list(namespace) + list(exports))

    return __getattr__, __dir__
