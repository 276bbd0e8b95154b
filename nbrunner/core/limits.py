"""Input limits shared by the REST API, the CLI and the Python helpers.

One user's request must never stall the cluster: whatever is accepted here can be stored,
read back, scheduled and run. Every check raises :class:`~nbrunner.core.errors.InvalidRequest`
with a one-line message naming the field and the limit (the values are in :mod:`.config`, the
README lists them).
"""
from __future__ import annotations

import keyword
import sys
from typing import Any

from .config import (MAX_BODY_DEPTH, MAX_DEPTH, MAX_PARAMETERS_BYTES, MAX_STRING_CHARS, MAX_TIMEOUT_S,
                     MAX_YAML_BYTES, MAX_YAML_DEPTH)
from .errors import InvalidRequest

MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)


def depth(value: Any) -> int:
    """Nesting depth of a JSON-like value (a scalar is 0, ``[1]`` is 1), without recursion."""
    best = 0
    stack = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children = v.values()
        elif isinstance(v, (list, tuple)):
            children = v
        else:
            best = max(best, d)
            continue
        best = max(best, d + 1)
        if d + 1 > MAX_BODY_DEPTH * 4:  # far past any limit: stop walking
            return best
        stack.extend((c, d + 1) for c in children)
    return best


def check_depth(value: Any, where: str, limit: int = MAX_DEPTH) -> None:
    if depth(value) > limit:
        raise InvalidRequest(f"{where} is nested more than {limit} levels deep")


def check_text(value: Any, where: str) -> None:
    """Every string (keys included) must be valid UTF-8 (no lone surrogates such as "\\ud800")."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidRequest(f"{where} contains text that is not valid UTF-8 (a lone surrogate)") from None
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)


def check_ints(value: Any, where: str) -> None:
    """Integers inside ``value`` must fit in 64 bits (a JSON reader in another language must read them)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, int) and not isinstance(v, bool):
            if not MIN_INT64 <= v <= MAX_INT64:
                raise InvalidRequest(f"{where}: integer out of the 64-bit range")
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)


def check_int64(value: Any, where: str) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value > MAX_INT64:
        raise InvalidRequest(f"{where} must be at most 2**63-1, got {short(value)}")


def short(value: Any, limit: int = 40) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        return "a number with too many digits"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_parameter_name(name: Any) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise InvalidRequest(f"parameter name {short(name)} is not a Python identifier")
    if keyword.iskeyword(name):
        raise InvalidRequest(f"parameter name {name!r} is a Python keyword")


def check_parameters(params: Any, where: str = "parameters") -> None:
    """Names, nesting, integer range, text and size of a job's parameters."""
    if not isinstance(params, dict):
        return
    check_text(params, where)
    for name in params:
        check_parameter_name(name)
    for name, value in params.items():
        check_depth(value, f"parameter {name!r}")
    check_ints(params, where)
    import json

    try:
        size = len(json.dumps(params, allow_nan=False))
    except (TypeError, ValueError):
        return  # not JSON: the model's own check names the problem
    if size > MAX_PARAMETERS_BYTES:
        raise InvalidRequest(f"{where} are larger than {MAX_PARAMETERS_BYTES // 1024} KiB as JSON")


def check_request(data: dict) -> None:
    """What every job request passes before the model validates it."""
    check_text(data, "request")
    for key in ("notebook", "name", "kernel", "language", "cwd"):
        v = data.get(key)
        if isinstance(v, str) and len(v) > MAX_STRING_CHARS:
            raise InvalidRequest(f"{key} is longer than {MAX_STRING_CHARS} characters")
    check_parameters(data.get("parameters"))
    for key in ("min_gpus", "max_gpus", "retries"):
        check_int64(data.get(key), key)
    t = data.get("timeout")
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        try:
            too_long = float(t) > MAX_TIMEOUT_S
        except OverflowError:
            too_long = True
        if too_long:
            raise InvalidRequest(f"timeout must be at most {MAX_TIMEOUT_S} s (30 days), got {short(t)}")


# ---- JSON and YAML text ----------------------------------------------------------------------

def loads_json(raw: bytes | str, what: str = "request body") -> Any:
    """``json.loads`` with one-line errors for every way a hostile text can fail."""
    import json

    try:
        data = json.loads(raw)
    except RecursionError:
        raise InvalidRequest(f"{what} is nested too deeply") from None
    except UnicodeDecodeError:
        raise InvalidRequest(f"{what} is not valid UTF-8") from None
    except json.JSONDecodeError:
        raise InvalidRequest(f"{what} is not valid JSON") from None
    except ValueError as exc:  # e.g. an integer longer than sys.get_int_max_str_digits()
        if "digits" in str(exc):
            raise InvalidRequest(f"{what} holds an integer with more than {sys.get_int_max_str_digits()} digits") from None
        raise InvalidRequest(f"{what} is not acceptable JSON: {str(exc).splitlines()[0][:120]}") from None
    check_depth(data, what, MAX_BODY_DEPTH)
    return data


class YamlMap(dict):
    """A mapping read by ``load_yaml(..., lines=True)``: ``line`` is the 1-based line where it
    starts and ``key_lines[key]`` the line of each key."""

    line = 0
    key_lines: dict


class YamlList(list):
    """A sequence read by ``load_yaml(..., lines=True)``: ``line`` where it starts and
    ``item_lines[i]`` the line of each item (1-based)."""

    line = 0
    item_lines: list


def _loader(lines: bool = False):
    import yaml

    class LimitedLoader(yaml.SafeLoader):
        """A SafeLoader that refuses aliases (no billion laughs) and deep nesting."""

        def __init__(self, stream):
            super().__init__(stream)
            self._depth = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed", event.start_mark)
            self._depth += 1
            if self._depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                                                  self.peek_event().start_mark)
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    if not lines:
        return LimitedLoader

    class LinedLoader(LimitedLoader):
        """Mappings and sequences that keep their line numbers; a repeated key is an error."""

        def construct_lined_map(self, node):
            data = YamlMap()
            data.line, data.key_lines = node.start_mark.line + 1, {}
            yield data
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    repeated = key in data
                except TypeError:
                    raise yaml.constructor.ConstructorError(None, None, "a key must be a plain value",
                                                            key_node.start_mark) from None
                if repeated:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {short(key)}",
                                                            key_node.start_mark)
                data.key_lines[key] = key_node.start_mark.line + 1
                data[key] = self.construct_object(value_node)

        def construct_lined_seq(self, node):
            data = YamlList()
            data.line, data.item_lines = node.start_mark.line + 1, [n.start_mark.line + 1 for n in node.value]
            yield data
            data.extend(self.construct_object(n) for n in node.value)

    LinedLoader.add_constructor("tag:yaml.org,2002:map", LinedLoader.construct_lined_map)
    LinedLoader.add_constructor("tag:yaml.org,2002:seq", LinedLoader.construct_lined_seq)
    return LinedLoader


def load_yaml(text: str | bytes, source: str = "YAML", lines: bool = False) -> Any:
    """Load YAML safely: at most MAX_YAML_BYTES, no aliases, at most MAX_YAML_DEPTH levels,
    integers within 64 bits; InvalidRequest with one line otherwise. With ``lines``,
    mappings are :class:`YamlMap` and sequences :class:`YamlList` (they keep their line
    numbers, for errors that name the line) and a repeated key is refused."""
    import yaml

    if isinstance(text, bytes):
        if len(text) > MAX_YAML_BYTES:
            raise InvalidRequest(f"{source} is larger than {MAX_YAML_BYTES // 1024} KiB")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidRequest(f"{source} is not UTF-8 text") from None
    if len(text.encode("utf-8", errors="surrogatepass")) > MAX_YAML_BYTES:
        raise InvalidRequest(f"{source} is larger than {MAX_YAML_BYTES // 1024} KiB")
    check_text(text, source)
    try:
        data = yaml.load(text, Loader=_loader(lines))  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InvalidRequest(f"{source} is not valid YAML: {problem}{where}") from None
    except RecursionError:
        raise InvalidRequest(f"{source} is nested too deeply") from None
    except ValueError as exc:  # an integer with too many digits
        if "digits" in str(exc):
            raise InvalidRequest(f"{source} holds an integer with more than {sys.get_int_max_str_digits()} digits") from None
        raise InvalidRequest(f"{source} holds a value that cannot be read: {str(exc).splitlines()[0][:120]}") from None
    check_ints(data, source)
    return data


def bad_input(exc: BaseException) -> str | None:
    """The one-line message when ``exc`` comes from hostile input rather than a bug, else None.

    Used by the REST handlers so that such errors answer 400, never 500."""
    if isinstance(exc, RecursionError):
        return "the request is nested too deeply"
    if isinstance(exc, UnicodeError):
        return "the request contains text that is not valid UTF-8"
    if isinstance(exc, ValueError) and "digits" in str(exc) and "int" in str(exc):
        return f"the request holds an integer with more than {sys.get_int_max_str_digits()} digits"
    if isinstance(exc, OverflowError):
        return "a number in the request is out of range"
    return None


def gpu_count(key: Any, field: str, ident: Any = None) -> int:
    """A key of a demand's ``{gpus: value}`` map (``field``) as a GPU count; ``ValueError`` if it is none."""
    try:
        n = int(key)
    except (TypeError, ValueError):
        raise ValueError(f"demand {ident!r}: {field} key {key!r} is not a GPU count") from None
    if isinstance(key, (bool, float)) or n < 1:
        raise ValueError(f"demand {ident!r}: {field} key {key!r} must be a positive integer")
    return n
