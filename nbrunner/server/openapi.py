"""The OpenAPI 3 document of the REST API (served at ``GET /openapi.json``).

Maintained by hand next to the handlers; ``tests/test_openapi.py`` checks that every
(path, method) :func:`nbrunner.server.handlers.routes` serves is documented here and that
nothing documented is missing from the handlers.
"""
from __future__ import annotations

import copy
from typing import Any

from ..core.models import PRIORITY_MAX, PRIORITY_MIN

STATUSES = ["queued", "running", "completed", "failed", "cancelled"]


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict:
    return _json(_ref("Error"), description)


def _path_param(name: str, what: str) -> dict:
    return {"name": name, "in": "path", "required": True, "description": what,
            "schema": {"type": "string", "pattern": "^[a-z0-9]{1,32}$"}}


def _query(name: str, schema: dict, what: str) -> dict:
    return {"name": name, "in": "query", "required": False, "description": what, "schema": schema}


JOB_ID = _path_param("job_id", "the job's id")
SWEEP_ID = _path_param("sweep_id", "the sweep's id")
BAD = {"400": _error("bad input (one-line message)")}
UNKNOWN = {"404": _error("unknown, or not visible to this user")}
CONFLICT = {"409": _error("conflicts with the job's state")}
OBJ = {"type": "object"}

JOB = {
    "type": "object",
    "description": "A job record (README: the job record).",
    "properties": {
        "id": {"type": "string"}, "name": {"type": "string"}, "notebook": {"type": "string"},
        "parameters": OBJ, "status": {"type": "string", "enum": STATUSES},
        "priority": {"type": "integer", "minimum": PRIORITY_MIN, "maximum": PRIORITY_MAX},
        "min_gpus": {"type": "integer"}, "max_gpus": {"type": "integer"}, "gpus": {"type": "integer"},
        "owner": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"},
        "started_at": {"type": "string", "format": "date-time", "nullable": True},
        "finished_at": {"type": "string", "format": "date-time", "nullable": True},
        "output": {"type": "string", "nullable": True}, "error": {"type": "string", "nullable": True},
        "progress": {"type": "number", "nullable": True}, "metrics": OBJ,
        "sweep": {"type": "string", "nullable": True},
        "history": {"type": "array", "description": "one entry per status change, oldest first",
                    "items": {"type": "object", "properties": {
                        "status": {"type": "string", "enum": STATUSES},
                        "at": {"type": "string", "format": "date-time"}}}},
    },
}

JOB_REQUEST = {
    "type": "object", "required": ["notebook"],
    "properties": {
        "notebook": {"type": "string", "description": "path relative to the server root"},
        "parameters": OBJ, "name": {"type": "string"},
        "min_gpus": {"type": "integer", "minimum": 0}, "max_gpus": {"type": "integer", "minimum": 0},
        "priority": {"type": "integer", "minimum": PRIORITY_MIN, "maximum": PRIORITY_MAX},
        "timeout": {"type": "number", "exclusiveMinimum": 0}, "kernel": {"type": "string"},
    },
}

SWEEP = {"type": "object", "properties": {
    "id": {"type": "string"}, "jobs": {"type": "array", "items": {"type": "string"}},
    "leaderboard": {"type": "array", "items": OBJ}}}

PATHS: dict[str, dict[str, Any]] = {
    "/jobs": {
        "get": {"summary": "List the jobs visible to the caller, newest first",
                "parameters": [_query("status", {"type": "string", "enum": STATUSES}, "only jobs in this status")],
                "responses": {"200": _json({"type": "object", "properties": {
                    "jobs": {"type": "array", "items": _ref("Job")}}}, "the jobs"), **BAD}},
        "post": {"summary": "Submit a notebook as a job",
                 "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("JobRequest")}}},
                 "responses": {"201": _json(_ref("Job"), "the queued job"), **BAD}},
    },
    "/jobs/{job_id}": {
        "parameters": [JOB_ID],
        "get": {"summary": "One job", "responses": {"200": _json(_ref("Job"), "the job"), **UNKNOWN}},
        "patch": {"summary": "Change a job's priority",
                  "requestBody": {"required": True, "content": {"application/json": {"schema": {
                      "type": "object", "required": ["priority"],
                      "properties": {"priority": {"type": "integer"}}}}}},
                  "responses": {"200": _json(_ref("Job"), "the job"), **BAD, **UNKNOWN, **CONFLICT}},
        "delete": {"summary": "Cancel a job; with purge=true remove a finished job (record and directory)",
                   "parameters": [_query("purge", {"type": "boolean", "default": False},
                                         "remove a finished job instead of cancelling")],
                   "responses": {"200": _json(_ref("Job"), "the cancelled job"),
                                 "204": {"description": "purged"}, **BAD, **UNKNOWN,
                                 "409": _error("cancel: already finished; purge: not finished yet")}},
    },
    "/jobs/{job_id}/log": {
        "parameters": [JOB_ID],
        "get": {"summary": "The job's log from a byte offset (for live tailing)",
                "parameters": [_query("offset", {"type": "integer", "minimum": 0}, "byte offset")],
                "responses": {"200": _json({"type": "object", "properties": {
                    "text": {"type": "string"}, "offset": {"type": "integer"}}}, "log text"), **BAD, **UNKNOWN}},
    },
    "/jobs/{job_id}/output": {
        "parameters": [JOB_ID],
        "get": {"summary": "The executed notebook (JSON)",
                "responses": {"200": _json(OBJ, "the notebook"), **UNKNOWN}},
    },
    "/jobs/{job_id}/metrics": {
        "parameters": [JOB_ID],
        "get": {"summary": "Every metrics row the job reported (metrics.jsonl), in order",
                "responses": {"200": _json({"type": "object", "properties": {
                    "metrics": {"type": "array", "items": OBJ}}}, "the rows"), **UNKNOWN}},
    },
    "/jobs/{job_id}/download": {
        "parameters": [JOB_ID],
        "get": {"summary": "The output notebook, its HTML, or a zip of the job directory, as an attachment",
                "parameters": [_query("format", {"type": "string", "enum": ["ipynb", "html", "zip"],
                                                 "default": "ipynb"}, "what to download")],
                "responses": {"200": {"description": "the file (Content-Disposition: attachment)", "content": {
                    "application/x-ipynb+json": {}, "text/html": {}, "application/zip": {}}},
                    **BAD, "404": _error("unknown job, or that output does not exist yet")}},
    },
    "/jobs/{job_id}/rerun": {
        "parameters": [JOB_ID],
        "post": {"summary": "A new job from the same input snapshot and options, parameters merged",
                 "requestBody": {"required": False, "content": {"application/json": {"schema": {
                     "type": "object", "properties": {"parameters": OBJ}}}}},
                 "responses": {"201": _json(_ref("Job"), "the new job"), **BAD, **UNKNOWN, **CONFLICT}},
    },
    "/cluster": {
        "get": {"summary": "Slots per host and who holds them",
                "responses": {"200": _json({"type": "object", "properties": {
                    "policy": {"type": "string"}, "gpus_total": {"type": "integer"},
                    "gpus_free": {"type": "integer"}, "hosts": {"type": "array", "items": OBJ}}}, "the cluster")}},
    },
    "/cluster/timeline": {
        "get": {"summary": "GPUs held over time, per visible job",
                "responses": {"200": _json({"type": "object", "properties": {
                    "jobs": {"type": "array", "items": OBJ}}}, "per job: id and points")}},
    },
    "/notebook-parameters": {
        "get": {"summary": "Names and defaults of a notebook's parameters cell",
                "parameters": [{**_query("path", {"type": "string"}, "notebook path relative to the server root"),
                                "required": True}],
                "responses": {"200": _json({"type": "object", "properties": {
                    "parameters": {"type": "array", "items": OBJ}}}, "the parameters"), **BAD}},
    },
    "/sweeps": {
        "get": {"summary": "The sweeps visible to the caller",
                "responses": {"200": _json({"type": "object", "properties": {
                    "sweeps": {"type": "array", "items": _ref("Sweep")}}}, "the sweeps")}},
        "post": {"summary": "Start a parameter sweep",
                 "requestBody": {"required": True, "content": {"application/json": {"schema": {
                     "type": "object", "required": ["notebook", "spec"],
                     "properties": {"notebook": {"type": "string"},
                                    "spec": {"oneOf": [OBJ, {"type": "string"}]}}}}}},
                 "responses": {"201": _json(_ref("Sweep"), "the sweep"), **BAD}},
    },
    "/sweeps/{sweep_id}": {
        "parameters": [SWEEP_ID],
        "get": {"summary": "One sweep with its leaderboard", "responses": {"200": _json(_ref("Sweep"), "the sweep"),
                                                                          **UNKNOWN}},
        "delete": {"summary": "Cancel a sweep", "responses": {"200": _json(_ref("Sweep"), "the sweep"),
                                                             **UNKNOWN, **CONFLICT}},
    },
    "/openapi.json": {
        "get": {"summary": "This document", "responses": {"200": _json(OBJ, "an OpenAPI 3 document")}},
    },
}

DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "nbrunner", "version": "1",
             "description": "Run parameterized notebooks as jobs. Jupyter server authentication on every route; "
                            "errors are JSON {\"message\": ...}."},
    "servers": [{"url": "/nbrunner/api"}],
    "paths": PATHS,
    "components": {"schemas": {
        "Job": JOB, "JobRequest": JOB_REQUEST, "Sweep": SWEEP,
        "Error": {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}},
    }},
}


def document(base_url: str = "/") -> dict[str, Any]:
    """The OpenAPI document, its server URL under the Jupyter server's ``base_url``."""
    doc = copy.deepcopy(DOCUMENT)
    doc["servers"] = [{"url": base_url.rstrip("/") + "/nbrunner/api"}]
    return doc
