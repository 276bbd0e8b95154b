"""The OpenAPI entries of the pipeline routes (merged into :mod:`.openapi`'s document)."""
from __future__ import annotations

from typing import Any

from ..core.models import JobRequest
from ..core.pipelines.record import PIPELINE_STATUSES, STEP_STATUSES
from ..core.pipelines.spec import STEP_OPTIONS
from .model_schemas import object_schema

_REF = "#/components/schemas/"
_ERR = {"content": {"application/json": {"schema": {"$ref": _REF + "Error"}}}}
BAD = {"400": {"description": "bad input (one-line message); nothing created", **_ERR}}
UNKNOWN = {"404": {"description": "unknown, or not visible to this user", **_ERR}}
CONFLICT = {"409": {"description": "conflicts with the pipeline's state", **_ERR}}
OBJ = {"type": "object"}
_NULL_STR = {"type": "string", "nullable": True}
_STEP_OPTIONS = object_schema(JobRequest, STEP_OPTIONS)["properties"]  # a step's job options, as a job takes them


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


STEP = {"type": "object", "properties": {
    "status": {"type": "string", "enum": list(STEP_STATUSES)}, "job": _NULL_STR,
    "sweep": {**_NULL_STR, "description": "a sweep step's sweep (its job: the best trial's, once it ended)"},
    "outputs": {**OBJ, "description": "what its job recorded with nbrunner.record (the last value per name)"},
    "needs": {"type": "array", "items": {"type": "string"}}, "notebook": {"type": "string"},
    "kind": {"type": "string", "enum": ["notebook", "sweep"]},
    "waiting": {"type": "object", "nullable": True, "description": "a pending step: {code: needs, message}",
                "properties": {"code": {"type": "string"}, "message": {"type": "string"}}},
    "error": _NULL_STR, "reused": {"type": "boolean", "description": "taken from the pipeline it reruns"}}}
PIPELINE = {"type": "object", "description": "A pipeline record (docs/pipelines.md).", "properties": {
    "id": {"type": "string"}, "name": {"type": "string"}, "owner": {"type": "string"},
    "groups": {"type": "array", "items": {"type": "string"}},
    "status": {"type": "string", "enum": list(PIPELINE_STATUSES)},
    "steps": {"type": "object", "additionalProperties": STEP}, "on_failure": {"type": "string", "enum": ["stop", "continue"]},
    "created_at": {"type": "string", "format": "date-time"},
    "finished_at": {"type": "string", "format": "date-time", "nullable": True},
    "rerun_of": _NULL_STR, "schedule": _NULL_STR}}
PIPELINE_FILE = {"type": "object", "required": ["steps"], "description": "the pipeline file as JSON", "properties": {
    "name": {"type": "string"}, "on_failure": {"type": "string", "enum": ["stop", "continue"]},
    "parameters": {**OBJ, "description": "overrides: {\"STEP.NAME\": value}"},
    "steps": {"type": "object", "additionalProperties": {"type": "object", "properties": {
        "notebook": {"type": "string"}, "sweep": {**OBJ, "description": "a sweep spec with its notebook"},
        "needs": {"type": "array", "items": {"type": "string"}}, "parameters": OBJ,
        "content": {"description": "the notebook's JSON (through a service)", "oneOf": [OBJ, {"type": "string"}]},
        **_STEP_OPTIONS}}}}}
_ID = {"name": "pipeline_id", "in": "path", "required": True, "description": "the pipeline's id",
       "schema": {"type": "string", "pattern": "^[a-z0-9]{1,32}$"}}
_ONE = _json({"$ref": _REF + "Pipeline"}, "the pipeline")

PATHS: dict[str, dict[str, Any]] = {
    "/pipelines": {
        "get": {"summary": "The pipelines visible to the caller, newest first",
                "responses": {"200": _json({"type": "object", "properties": {
                    "pipelines": {"type": "array", "items": {"$ref": _REF + "Pipeline"}}}}, "the pipelines")}},
        "post": {"summary": "Run a pipeline of notebooks",
                 "requestBody": {"required": True, "content": {"application/json": {"schema": PIPELINE_FILE}}},
                 "responses": {"201": _ONE, **BAD}},
    },
    "/pipelines/{pipeline_id}": {
        "parameters": [_ID],
        "get": {"summary": "One pipeline with its steps", "responses": {"200": _ONE, **UNKNOWN}},
        "delete": {"summary": "Cancel a pipeline: running steps cancelled, pending ones skipped",
                   "responses": {"200": _ONE, **UNKNOWN, **CONFLICT}},
    },
    "/pipelines/{pipeline_id}/rerun": {
        "parameters": [_ID],
        "post": {"summary": "A new pipeline reusing the completed steps before a step",
                 "requestBody": {"required": False, "content": {"application/json": {"schema": {
                     "type": "object", "properties": {"from": {"type": "string"}}}}}},
                 "responses": {"201": _ONE, **BAD, **UNKNOWN, **CONFLICT}},
    },
}
SCHEMAS = {"Pipeline": PIPELINE}
