"""``main``, the entry point, and its fast path for the common commands.

typer (0.2x) converts every parameter's value through a pydantic TypeAdapter, which costs more
than a read command's whole work.  When a read command or ``submit`` is given only plain arguments
(options it declares, each once unless repeatable; values that typer would take as they are),
:func:`main` binds them itself, from the command's own typer declarations, and calls it.  Anything
else (--help, an unknown or repeated option, a value typer might refuse) goes through typer as
before, so help and error messages are typer's.
"""
from __future__ import annotations

import errno
import functools
import os
import sys
from pathlib import Path
from typing import Any, Optional

import typer

try:  # typer >= 0.25 vendors its own click
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
    from typer._click.utils import PacifyFlushWrapper
    from typer.exceptions import Abort, Exit
except ImportError:  # pragma: no cover
    from click.exceptions import Abort, ClickException, Exit, NoArgsIsHelpError, UsageError
    from click.utils import PacifyFlushWrapper
from ...core.errors import NbrunnerError, NoCluster
from .app import app

PLAIN_COMMANDS = ("jobs", "show", "logs", "cluster", "list", "submit")


def _join_parameters(argv: list[str]) -> list[str]:
    """``-p NAME VALUE`` (papermill's form) -> ``-p NAME=VALUE`` for the option parser."""
    out, i = [], 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            out += argv[i:]
            break
        if tok in ("-p", "--parameter") and i + 1 < len(argv) and "=" not in argv[i + 1]:
            if i + 2 >= len(argv):
                raise UsageError(f"{tok} needs a name and a value")
            if argv[i + 2].startswith("--") and len(argv[i + 2]) > 2:  # `-p NAME --timeout 5`: a value is missing
                raise UsageError(f"{tok} {argv[i + 1]} needs a value before {argv[i + 2]} "
                                 f"(write {tok} {argv[i + 1]}={argv[i + 2]} for a value that starts with --)")
            out += [tok, f"{argv[i + 1]}={argv[i + 2]}"]
            i += 3
            continue
        out.append(tok)
        i += 1
    return out

def _plain_value(annotation: str, info: Any, text: str) -> Any:
    """``text`` as typer would convert it for ``annotation``, or _NOT_PLAIN where typer could
    say something else (a check, a refusal)."""
    if annotation in ("str", "Optional[str]", "Optional[list[str]]"):
        return text
    if annotation in ("int", "Optional[int]"):
        plain = text.isascii() and text.isdigit() and (text == "0" or not text.startswith("0"))
        return int(text) if plain and info.min is None and info.max is None else _NOT_PLAIN
    if annotation in ("Path", "Optional[Path]"):
        checked = (info.exists or not info.file_okay or not info.dir_okay or info.writable or info.resolve_path
                   or info.allow_dash or info.path_type is not None)
        unreadable = os.path.exists(text) and not os.access(text, os.R_OK)  # typer refuses those
        return Path(text) if text and not checked and not unreadable else _NOT_PLAIN
    return _NOT_PLAIN


_NOT_PLAIN = object()


def plain_call(argv: list[str]) -> Optional[Any]:
    """A call of the read command ``argv`` asks for, with its arguments bound, if they are plain
    (see the module docstring); else None."""
    from inspect import signature

    from typer.models import ArgumentInfo, OptionInfo

    if not argv or argv[0] not in PLAIN_COMMANDS or os.environ.get("_NBRUNNER_COMPLETE"):
        return None
    func = next((c.callback for c in app.registered_commands
                 if (c.name or c.callback.__name__.replace("_", "-")) == argv[0]), None)
    if func is None:
        return None
    params = signature(func).parameters
    options, arguments, values = {}, [], {}
    for name, param in params.items():
        info = param.default
        if isinstance(info, ArgumentInfo) and info.default is ...:
            arguments.append(name)
        elif isinstance(info, OptionInfo) and info.param_decls and not any("/" in d for d in info.param_decls) \
                and info.callback is None and info.envvar is None and (param.annotation != "bool" or info.default is False):
            options.update((decl, name) for decl in info.param_decls)
        else:
            return None
    words, rest = [], list(argv[1:])
    while rest:
        token = rest.pop(0)
        if not token.startswith("-"):
            words.append(token)
            continue
        name = options.get(token)
        repeatable = name is not None and params[name].annotation == "Optional[list[str]]"
        if name is None or name in values and not repeatable:
            return None
        if params[name].annotation == "bool":
            values[name] = True
            continue
        if not rest or rest[0].startswith("-"):
            return None
        value = _plain_value(params[name].annotation, params[name].default, rest.pop(0))
        values[name] = values.get(name, []) + [value] if repeatable else value
    if len(words) != len(arguments):
        return None
    values.update((name, _plain_value(params[name].annotation, params[name].default, word))
                  for name, word in zip(arguments, words))
    if any(v is _NOT_PLAIN for v in values.values()):
        return None
    for name in set(options.values()) - set(values):
        values[name] = params[name].default.default
    return functools.partial(func, **values)


def _app_for(argv: list[str]) -> typer.Typer:
    """``app``, reduced to the one command ``argv`` names if it names one: typer builds every
    command of an app (signatures, annotations, parameter types) before it parses any."""
    info = next((c for c in app.registered_commands
                 if argv and (c.name or c.callback.__name__.replace("_", "-")) == argv[0]), None)
    if info is None:
        return app
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True, help=app.info.help)
    one.registered_commands = [info]
    one.callback()(_group)  # still a group, with the same command path and usage lines
    return one


def _group() -> None:
    pass


def _run_plain(call: Any) -> Any:
    """Run a directly bound command as typer's main runs one (end of input, Ctrl-C, a closed pipe)."""
    try:
        return call()
    except EOFError as exc:
        print(file=sys.stderr)
        raise Abort() from exc
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        sys.stdout = PacifyFlushWrapper(sys.stdout)
        sys.stderr = PacifyFlushWrapper(sys.stderr)
        sys.exit(1)


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point: one-line errors, exit 2 for usage errors and for no running cluster."""
    try:
        argv = _join_parameters(list(sys.argv[1:] if argv is None else argv))
        if argv[:2] == ["sweep", "show"]:  # `sweep` runs NOTEBOOK SPEC; `sweep show ID` reads one
            argv = ["sweep-show", *argv[2:]]
        call = plain_call(argv)
        rv = (_run_plain(call) if call is not None
              else _app_for(argv)(args=argv, prog_name="nbrunner", standalone_mode=False))
    except NoArgsIsHelpError as exc:  # bare `nbrunner` or `nbrunner model`: the help, no error
        text = exc.format_message()
        if text.strip():
            print(text)
        sys.exit(0)
    except (UsageError, ClickException) as exc:
        lines = exc.format_message().strip().splitlines()
        print(f"nbrunner: {lines[0] if lines else 'invalid usage (see --help)'}", file=sys.stderr)
        sys.exit(2)
    except Abort:
        sys.exit(130)
    except Exit as exc:
        sys.exit(exc.exit_code)
    except NoCluster as exc:
        print(f"nbrunner: {exc}", file=sys.stderr)
        sys.exit(2)
    except NbrunnerError as exc:
        print(f"nbrunner: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # last resort: still one line
        print(f"nbrunner: unexpected error: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
    sys.exit(rv if isinstance(rv, int) else 0)
