"""The JupyterLab extension's REST types (extension/src/types.ts) agree with the OpenAPI
schemas, which are the models' (tests/server/test_openapi_models.py): field by field, names,
types, nullability and optional fields, read from the TypeScript source.

Direction matters.  An answer's interface (IJob, ISchedule) names every field the server sends,
accepts every value it may send (null where the model allows None) and makes optional at least
what the server may leave out.  A request's interface (ISubmitRequest, ISweepRequest, ...) names
only fields the server takes, sends only values it accepts (null only where the model allows
None) and always sends the fields it requires.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from nbrunner.core.models import JOB_OPTIONS
from nbrunner.core.schedules import EDITABLE
from nbrunner.server.openapi import document

TYPES = Path(__file__).resolve().parents[2] / "extension" / "src" / "types.ts"
SCHEMAS = document()["components"]["schemas"]
SWEEP_REQUEST = document()["paths"]["/sweeps"]["post"]["requestBody"]["content"]["application/json"]["schema"]
ANSWERS = {"IJob": SCHEMAS["Job"], "IStatusChange": SCHEMAS["Job"]["properties"]["history"]["items"],
           "IWaiting": SCHEMAS["Job"]["properties"]["waiting"], "ISchedule": SCHEMAS["Schedule"]}
REQUESTS = {"ISubmitRequest": SCHEMAS["JobRequest"], "ISweepRequest": SWEEP_REQUEST,
            "IScheduleRequest": SCHEMAS["ScheduleRequest"], "IScheduleUpdate": SCHEMAS["ScheduleRequest"]}


class TypeScript:
    """The interfaces and type aliases of one TypeScript module, read with regular expressions and
    brace matching (enough for types.ts: no generics but Omit, Array and index signatures)."""

    def __init__(self, source: str):
        self.source = re.sub(r"/\*.*?\*/|//[^\n]*", "", source, flags=re.S)
        self.aliases = {m.group(1): m.group(2).strip() for m in
                        re.finditer(r"^export type (\w+)\s*=\s*(.*?);\s*$", self.source, re.M | re.S)}
        self.interfaces: dict[str, tuple[str, str]] = {}
        for m in re.finditer(r"^export interface (\w+)(?:\s+extends\s+([^{]+))?\s*\{", self.source, re.M):
            self.interfaces[m.group(1)] = ((m.group(2) or "").strip(), self._block(m.end()))

    def _block(self, start: int) -> str:
        depth = 1
        for i in range(start, len(self.source)):
            depth += {"{": 1, "}": -1}.get(self.source[i], 0)
            if depth == 0:
                return self.source[start:i]
        raise AssertionError("unbalanced braces")

    def members(self, name: str) -> dict[str, tuple[bool, str]]:
        """``{field: (optional, type text)}`` of an interface, its bases' included."""
        bases, body = self.interfaces[name]
        out: dict[str, tuple[bool, str]] = {}
        for base in split_top(bases, ","):
            omit = re.fullmatch(r"Omit<\s*(\w+)\s*,(.*)>", base, re.S)
            if omit:
                left_out = set(re.findall(r"'(\w+)'", omit.group(2)))
                out.update({k: v for k, v in self.members(omit.group(1)).items() if k not in left_out})
            else:
                out.update(self.members(base))
        for member in split_top(body, ";"):
            m = re.fullmatch(r"(\w+)(\?)?\s*:\s*(.+)", member, re.S)
            assert m, f"{name}: member not understood: {member!r}"
            out[m.group(1)] = (bool(m.group(2)), " ".join(m.group(3).split()))
        return out

    def kinds(self, text: str) -> set[str]:
        """What values a type admits: string, number, boolean, null, object, array, any, or 'literal's."""
        out: set[str] = set()
        for part in split_top(text, "|"):
            if part in ("string", "number", "boolean", "null"):
                out.add(part)
            elif part == "undefined":
                continue
            elif re.fullmatch(r"'[^']*'", part):
                out.add(part)
            elif part.endswith("[]") or part.startswith("Array<"):
                out.add("array")
            elif part.startswith("{") or part in self.interfaces:
                out.add("object")
            elif part == "JSONValue":
                out.add("any")
            elif re.fullmatch(r"\(typeof \w+\)\[number\]", part):
                out.add("string")  # a constant array's strings (constants.ts)
            elif part in self.aliases:
                out |= self.kinds(self.aliases[part])
            else:
                raise AssertionError(f"type not understood: {part!r}")
        return out


def split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside brackets, stripped, empty parts left out."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += {"{": 1, "(": 1, "<": 1, "[": 1, "}": -1, ")": -1, ">": -1, "]": -1}.get(c, 0)
        if c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def schema_kinds(schema: dict) -> set[str]:
    if "oneOf" in schema:
        out = set().union(*(schema_kinds(s) for s in schema["oneOf"]))
    elif "$ref" in schema or schema.get("type") == "object":
        out = {"object"}
    elif schema.get("type") == "string" and "enum" in schema:
        out = {f"'{v}'" for v in schema["enum"]}
    elif schema.get("type") in ("integer", "number"):
        out = {"number"}
    else:
        out = {schema["type"]} if "type" in schema else {"any"}
    return out | ({"null"} if schema.get("nullable") else set())


def covers(wide: set[str], narrow: set[str]) -> bool:
    """Every value of ``narrow`` is one of ``wide``."""
    return "any" in wide or all(k in wide or (k.startswith("'") and "string" in wide) for k in narrow)


def answer_errors(ts: TypeScript, name: str, schema: dict) -> list[str]:
    members, props, required = ts.members(name), schema["properties"], set(schema.get("required", ()))
    errors = [f"{name} lacks {k!r}" for k in props if k not in members]
    for field, (optional, text) in members.items():
        if field not in props:
            errors.append(f"{name}.{field}: the server sends no such field")
            continue
        if not covers(ts.kinds(text), schema_kinds(props[field])):
            errors.append(f"{name}.{field}: {text} does not admit {sorted(schema_kinds(props[field]))}")
        if not optional and field not in required:
            errors.append(f"{name}.{field}: required, but the server may leave it out")
    return errors


def request_errors(ts: TypeScript, name: str, schema: dict) -> list[str]:
    members, props = ts.members(name), schema["properties"]
    errors = [f"{name} lacks {k!r}, which the server requires" for k in schema.get("required", ())
              if k not in members or members[k][0]]
    for field, (_, text) in members.items():
        if field not in props:
            errors.append(f"{name}.{field}: the server takes no such field")
        elif not covers(schema_kinds(props[field]), ts.kinds(text)):
            errors.append(f"{name}.{field}: {text} sends what the server refuses ({sorted(schema_kinds(props[field]))})")
    return errors


@pytest.fixture(scope="module")
def ts() -> TypeScript:
    return TypeScript(TYPES.read_text())


@pytest.mark.parametrize("name", ANSWERS)
def test_answer_interfaces_read_what_the_server_sends(ts, name):
    assert answer_errors(ts, name, ANSWERS[name]) == []


@pytest.mark.parametrize("name", REQUESTS)
def test_request_interfaces_send_what_the_server_takes(ts, name):
    assert request_errors(ts, name, REQUESTS[name]) == []


def test_job_options_are_declared_once(ts):
    """IJobOptions holds the job options, in their order; the requests that take them extend it."""
    assert list(ts.members("IJobOptions")) == list(JOB_OPTIONS)
    for name in ("ISubmitRequest", "ISweepRequest"):
        assert "IJobOptions" in ts.interfaces[name][0], name
    assert set(ts.members("IScheduleUpdate")) <= set(EDITABLE)


def test_a_drifted_interface_is_caught(ts):
    """The reader sees a missing field, a wrong type, a lost null and a field the server refuses."""
    source = TYPES.read_text()
    drifted = TypeScript(source.replace("  gpus: number;\n", "  gpus: string;\n", 1)
                         .replace("  error?: string | null;\n", "  error?: string;\n", 1)
                         .replace("  kernel?: string | null;\n", "", 1)
                         .replace("export interface IJobOptions {\n", "export interface IJobOptions {\n  colour?: string;\n", 1))
    job = answer_errors(drifted, "IJob", ANSWERS["IJob"])
    assert any("IJob.gpus" in e for e in job) and any("IJob.error" in e for e in job), job
    assert "IJob lacks 'kernel'" in job
    assert any("ISubmitRequest.colour" in e for e in request_errors(drifted, "ISubmitRequest", REQUESTS["ISubmitRequest"]))
