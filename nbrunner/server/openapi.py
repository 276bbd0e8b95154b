"""The OpenAPI 3 document of the REST API (served at ``GET /openapi.json``).

Written next to the handlers; ``tests/server/test_openapi.py`` checks that every (path, method)
:func:`nbrunner.server.handlers.routes` serves is documented here and that nothing documented is
missing from the handlers.  The job record's and the job request's schemas are made from their
models (:mod:`.model_schemas`: fields, types, nullability, required fields); the schedule's are
held to theirs by ``tests/server/test_openapi_models.py``.
"""
from __future__ import annotations

import copy
from typing import Any

from ..core.config import (JOBS_PAGE_DEFAULT, JOBS_PAGE_MAX, MAX_BULK_JOBS, MAX_FILTER, MAX_INPUT_BYTES, PAGE_SCAN_MAX,
                           RETRIES)
from ..core.models import (JOB_OPTIONS, PRIORITY_DEFAULT, PRIORITY_MAX, PRIORITY_MIN, PUBLIC_FIELDS, SHOWN_EXTRA,
                           STATUSES, WAITING_CODES, JobRecord, JobRequest)
from ..core.schedules import JOB_OPTIONS as SCHEDULE_JOB_OPTIONS
from . import openapi_pipelines
from .model_schemas import object_schema



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
GROUPS = {"type": "array", "items": {"type": "string"},
          "description": "the owner's groups when it was made (JupyterHub groups, under nbrunner service)"}

_DATE = {"format": "date-time"}
_STATUS_CHANGE = {"type": "object", "required": ["status", "at"], "properties": {
    "status": {"type": "string", "enum": list(STATUSES)}, "at": {"type": "string", "format": "date-time"},
    "reason": {"type": "string", "description": "why the job went back to the queue"}}}
INPUTS = {"description": "files and folders beside the notebook, copied into its working directory (runs/<id>/work/) "
                         "before it runs"}

# The record's fields, types and nullability are JobRecord's (what to_dict() shows); these notes add the rest.
JOB = object_schema(JobRecord, (*PUBLIC_FIELDS, *SHOWN_EXTRA), all_required=True,
                    description="A job record (README: the job record).", notes={
    "priority": {"minimum": PRIORITY_MIN, "maximum": PRIORITY_MAX, "default": PRIORITY_DEFAULT},
    "groups": {"description": GROUPS["description"]},
    "created_at": _DATE, "started_at": _DATE, "finished_at": _DATE,
    "schedule": {"description": "the schedule this job is a run of"},
    "history": {"description": "one entry per status change, oldest first", "items": _STATUS_CHANGE},
    "waiting": {"required": ["code", "message"], "description": "why a queued job waits (docs/waiting.md), else null",
                "properties": {"code": {"type": "string", "enum": list(WAITING_CODES)},
                               "message": {"type": "string", "description": "one line naming the numbers"}}},
    "expected_start": {**_DATE, "description": "a queued job's expected start (a replay of the queue), null when "
                                               "unknown"},
    "expected_end": {**_DATE, "description": "the expected end (its progress, or its past runs), null when unknown"},
    "inputs": INPUTS,
})

CONTENT = {"oneOf": [OBJ, {"type": "string"}],
           "description": "the notebook itself (its JSON object or text), snapshotted instead of reading "
                          "`notebook` from the server root; `notebook` then names it (a relative path)"}

# JobRequest's fields but those only nbrunner sets (a sweep's, a schedule's, a pipeline's), with the notebook's
# content and its inputs' bytes, which the handler takes out before the request is checked.
JOB_REQUEST = object_schema(JobRequest, [f for f in JobRequest.__struct_fields__
                                         if f not in ("sweep", "schedule", "pipeline", "step")], notes={
    "notebook": {"description": "path relative to the server root"},
    "min_gpus": {"minimum": 0}, "max_gpus": {"minimum": 0, "description": "default: min_gpus"},
    "priority": {"minimum": PRIORITY_MIN, "maximum": PRIORITY_MAX},
    "timeout": {"exclusiveMinimum": 0, "description": "seconds"},
    "language": {"description": "the kernel's language (papermill -l), when no kernel is named"},
    "cwd": {"description": "the notebook's working directory, relative to the server root"},
    "report_mode": {"description": "hide the input of code cells in the output (papermill --report-mode)"},
    "retries": {"minimum": 0, "description": f"re-runs after a lost worker or a killed kernel (default: {RETRIES.name})"},
    "inputs": INPUTS,
    "notify": {"oneOf": [{"type": "array", "items": {"type": "string"}}, _ref("NotificationSettings")],
               "description": "overrides the owner's notification settings for this job"},
})
JOB_REQUEST["properties"].update({
    "content": CONTENT,
    "inputs_content": {"type": "object", "description": "with content: each input's bytes, base64 (a file), or an "
                                                        "object of its files' relative paths to base64 (a folder)"},
})
NOTIFICATIONS = {"type": "object", "properties": {
    "targets": {"type": "array", "items": {"type": "string"},
                "description": "mailto:ADDRESS or Apprise URLs the admin's allow list admits"},
    "on": {"type": "array", "items": {"type": "string", "enum": ["completed", "failed", "cancelled", "sweep",
                                                                 "pipeline"]}}}}
NOTIFICATION_LOG = {"type": "object", "properties": {"log": {"type": "array", "items": {
    "type": "object", "properties": {
        "time": {"type": "string", "format": "date-time"}, "target": {"type": "string", "description": "secrets masked"},
        "event": {"type": "string"}, "subject": {"type": "string", "description": "job ID, sweep ID or pipeline ID"},
        "outcome": {"type": "string", "enum": ["sent", "retrying", "failed"]}, "attempt": {"type": "integer"},
        "error": {"type": "string", "nullable": True}}}}}}

SWEEP = {"type": "object", "properties": {
    "id": {"type": "string"}, "jobs": {"type": "array", "items": {"type": "string"}},
    "leaderboard": {"type": "array", "items": OBJ}}}

_CLOCK = {
    "cron": {"type": "string", "nullable": True, "description": "5-field cron, or @hourly, @daily, @weekly, @monthly"},
    "every": {"type": "integer", "nullable": True, "minimum": 1,
              "description": "seconds (exactly one of cron and every)"},
    "timezone": {"type": "string", "default": "UTC"}, "overlap": {"type": "string", "enum": ["skip", "queue"]},
}
_NULLABLE_STR = {"type": "string", "nullable": True}
# ScheduleSpec's and ScheduleRecord's fields (tests/server/test_openapi_models.py holds them to the models)
SCHEDULE_REQUEST = {"type": "object", "properties": {
    "notebook": {"type": "string"}, "parameters": OBJ, **_CLOCK, "paused": {"type": "boolean"},
    **{k: JOB_REQUEST["properties"][k] for k in SCHEDULE_JOB_OPTIONS},
    "content": {**CONTENT, "description": CONTENT["description"] + "; every run runs it"},
    "pipeline": {"oneOf": [OBJ, {"type": "string"}], "description": "instead of notebook (which is then left out) "
                                                                    "and the job options: a pipeline file, run on "
                                                                    "the clock (docs/pipelines.md)"}}}
SCHEDULE = {"type": "object", "properties": {
    "id": {"type": "string"}, "name": {"type": "string"}, "notebook": {"type": "string"}, "parameters": OBJ,
    **_CLOCK, "paused": {"type": "boolean"}, "next_run_at": _NULLABLE_STR, "last_run_at": _NULLABLE_STR,
    "created_at": {"type": "string"}, "owner": {"type": "string"},
    "min_gpus": {"type": "integer"}, "max_gpus": {"type": "integer"}, "priority": {"type": "integer"},
    "timeout": {"type": "number", "nullable": True},
    "groups": GROUPS, "last_job": _NULLABLE_STR, "last_error": _NULLABLE_STR,
    "pipeline": {**_NULLABLE_STR, "description": "a schedule of a pipeline: the pipeline's name"}}}
SCHEDULE["required"] = list(SCHEDULE["properties"])  # the record shows every field
MODEL_SERVER = {"type": "object", "properties": {
    **{k: {"type": "integer" if k in ("port", "pid", "version") else "string"}
       for k in ("name", "version", "model", "port", "url", "pid", "owner", "started_at")}, "groups": GROUPS}}

PATHS: dict[str, dict[str, Any]] = {
    "/jobs": {
        "get": {"summary": "List the jobs visible to the caller, newest first",
                "parameters": [_query("status", {"type": "string", "enum": list(STATUSES)}, "only jobs in this status"),
                               _query("schedule", {"type": "string"}, "only the runs of this schedule"),
                               _query("sweep", {"type": "string"}, "only the trials of this sweep"),
                               _query("owner", {"type": "string"},
                                      "only this user's jobs (another user's: none, unless the caller is an admin)"),
                               _query("q", {"type": "string", "maxLength": MAX_FILTER},
                                      "only jobs whose name contains this text (any case)"),
                               _query("order", {"type": "string", "enum": ["newest", "oldest"], "default": "newest"},
                                      "by creation time"),
                               _query("limit", {"type": "integer", "minimum": 1, "maximum": JOBS_PAGE_MAX,
                                                "default": JOBS_PAGE_DEFAULT},
                                      f"at most this many jobs (a filtered page that reads {PAGE_SCAN_MAX:,} records "
                                      "without filling up returns what it found, with a next cursor)"),
                               _query("cursor", {"type": "string"},
                                      "the previous page's next (same filters and order): the page after it"),
                               _query("after", {"type": "string"},
                                      "a job's id: the page after that job (instead of cursor)"),
                               {"name": "Prefer", "in": "header", "required": False,
                                "description": "count=exact: the X-Total-Count header says how many jobs the caller "
                                               "sees in that status", "schema": {"type": "string"}}],
                "responses": {"200": {**_json({"type": "object", "properties": {
                    "jobs": {"type": "array", "items": _ref("Job")},
                    "next": {"type": "string", "nullable": True,
                             "description": "cursor of the next page, or null on the last one"}}},
                    "a page of jobs"), "headers": {"X-Total-Count": {
                        "description": "with Prefer: count=exact", "schema": {"type": "integer"}}}}, **BAD}},
        "post": {"summary": "Submit a notebook as a job, or several jobs at once (all or none)",
                 "requestBody": {"required": True, "content": {"application/json": {"schema": {"oneOf": [
                     _ref("JobRequest"),
                     {"type": "array", "items": _ref("JobRequest"), "minItems": 1, "maxItems": MAX_BULK_JOBS},
                     {"type": "object", "required": ["jobs"], "additionalProperties": False,
                      "properties": {"jobs": {"type": "array", "items": _ref("JobRequest"), "minItems": 1,
                                              "maxItems": MAX_BULK_JOBS}}}]}}},
                                 "description": "one job request; or a list of them (a JSON array, or {\"jobs\": "
                                                "[...]}): each is checked, and either every job is created or none "
                                                "(the 400 names the first bad one, jobs[i])"},
                 "responses": {"201": _json({"oneOf": [_ref("Job"), {
                     "type": "object", "properties": {"jobs": {"type": "array", "items": _ref("Job")}}}]},
                     "the queued job; for a list, {\"jobs\": [...]}, in the order given"), **BAD}},
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
    "/events": {
        "get": {"summary": "The push channel: changes of the jobs, sweeps and schedules the caller sees, and of "
                           "the cluster, as server-sent events (text/event-stream), as they happen",
                "description": "Messages: `ready` ({resumed, user, admin}), `job` ({job} or {id, deleted}), `sweep`, `schedule`, "
                               "`cluster` ({cluster}: the GET /cluster object), `reload` (what was missed is gone: "
                               "read everything again), and a `: ping` comment every 15 s. Each change has an id; "
                               "send the last one seen as Last-Event-ID when reconnecting to resume without a gap "
                               "or a duplicate.",
                "parameters": [{"name": "Last-Event-ID", "in": "header", "required": False,
                                "description": "the last id received: resume after it",
                                "schema": {"type": "string", "pattern": r"^\d+-\d+(\.[01])?$"}},
                               _query("last_event_id", {"type": "string"}, "the same, for clients that cannot set "
                                                                           "headers")],
                "responses": {"200": {"description": "the stream", "content": {"text/event-stream": {
                    "schema": {"type": "string"}}}}, **BAD,
                    "503": _error("no cluster is running")}},
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
    "/accounts": {
        "get": {"summary": "The accounts sharing the GPUs: per account weight, guarantee, limit, demand, GPUs held, "
                           "fair share, borrowed or lent, GPU-hours used in the last 24 h and in total",
                "responses": {"200": _json(_ref("Accounts"), "the accounts (an empty list without accounts)")}},
    },
    "/accounts/reload": {
        "post": {"summary": "Read the accounts file again (admins)",
                 "responses": {"200": _json(_ref("Accounts"), "the accounts as now published"),
                               "400": _error("the file is bad (the line is named); nothing changed"),
                               "403": _error("not an admin")}},
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
                     "properties": {"notebook": {"type": "string"}, "content": CONTENT,
                                    "spec": {"oneOf": [OBJ, {"type": "string"}]},
                                    **{k: JOB_REQUEST["properties"][k] for k in JOB_OPTIONS}}}}}},
                 "responses": {"201": _json(_ref("Sweep"), "the sweep"), **BAD}},
    },
    "/sweeps/{sweep_id}": {
        "parameters": [SWEEP_ID],
        "get": {"summary": "One sweep with its leaderboard", "responses": {"200": _json(_ref("Sweep"), "the sweep"),
                                                                          **UNKNOWN}},
        "delete": {"summary": "Cancel a sweep", "responses": {"200": _json(_ref("Sweep"), "the sweep"),
                                                             **UNKNOWN, **CONFLICT}},
    },
    "/schedules": {
        "get": {"summary": "The schedules visible to the caller",
                "responses": {"200": _json({"type": "object", "properties": {
                    "schedules": {"type": "array", "items": _ref("Schedule")}}}, "the schedules")}},
        "post": {"summary": "Run a notebook on a clock (cron or every N seconds)",
                 "requestBody": {"required": True, "content": {"application/json": {
                     "schema": _ref("ScheduleRequest")}}},
                 "responses": {"201": _json(_ref("Schedule"), "the schedule"), **BAD}},
    },
    "/schedules/{schedule_id}": {
        "parameters": [_path_param("schedule_id", "the schedule's id")],
        "get": {"summary": "One schedule", "responses": {"200": _json(_ref("Schedule"), "the schedule"), **UNKNOWN}},
        "patch": {"summary": "Pause, resume or change a schedule",
                  "requestBody": {"required": True, "content": {"application/json": {"schema": {
                      **_ref("ScheduleRequest"), "description": "any of the fields, and paused"}}}},
                  "responses": {"200": _json(_ref("Schedule"), "the schedule"), **BAD, **UNKNOWN}},
        "delete": {"summary": "Delete a schedule (its runs stay)",
                   "responses": {"204": {"description": "deleted"}, **UNKNOWN}},
    },
    "/models": {
        "get": {"summary": "Registered model versions, and the jobs that saved a model",
                "parameters": [_query("jobs", {"type": "string"}, "comma-separated job ids (at most 500): "
                                                                  "jobs_with_model only among them")],
                "responses": {"200": _json({"type": "object", "properties": {
                    "models": {"type": "array", "items": OBJ},
                    "jobs_with_model": {"type": "array", "items": {"type": "string"}}}}, "the models")}},
        "post": {"summary": "Register a job's model as the next version of a name",
                 "requestBody": {"required": True, "content": {"application/json": {"schema": {
                     "type": "object", "required": ["job", "name"],
                     "properties": {"job": {"type": "string"}, "name": {"type": "string"}}}}}},
                 "responses": {"201": _json(OBJ, "the registry entry"), **BAD, **UNKNOWN}},
    },
    "/models/serving": {
        "get": {"summary": "The model servers this server runs",
                "responses": {"200": _json({"type": "object", "properties": {
                    "servers": {"type": "array", "items": _ref("ModelServer")}}}, "the servers")}},
        "post": {"summary": "Serve a model version over HTTP",
                 "requestBody": {"required": True, "content": {"application/json": {"schema": {
                     "type": "object", "required": ["model"],
                     "properties": {"model": {"type": "string", "description": "NAME or NAME:VERSION"},
                                    "port": {"type": "integer"}}}}}},
                 "responses": {"201": _json(_ref("ModelServer"), "the server, once it listens"), **BAD, **UNKNOWN,
                               **CONFLICT}},
    },
    "/models/serving/{name}": {
        "parameters": [{"name": "name", "in": "path", "required": True, "description": "the model's name",
                        "schema": {"type": "string"}}],
        "get": {"summary": "That model's server", "responses": {"200": _json(_ref("ModelServer"), "the server"),
                                                               **UNKNOWN}},
        "delete": {"summary": "Stop that model's server", "responses": {"204": {"description": "stopped"},
                                                                       **UNKNOWN}},
    },
    "/openapi.json": {
        "get": {"summary": "This document", "responses": {"200": _json(OBJ, "an OpenAPI 3 document")}},
    },
    "/metrics": {
        "get": {"summary": "The cluster's metrics in Prometheus's text format (admins; docs/metrics.md)",
                "responses": {"200": {"description": "Prometheus text exposition format 0.0.4", "content": {
                    "text/plain": {"schema": {"type": "string"}}}}, "403": _error("not an admin")}},
    },
    "/usage": {
        "get": {"summary": "GPU-hours per account or user per day, from the jobs' GPU timelines (the caller's "
                           "own jobs; an admin's: every job's)",
                "parameters": [_query("by", {"type": "string", "enum": ["account", "user"], "default": "account"},
                                      "what a row counts for"),
                               _query("since", {"type": "string", "default": "7d"},
                                      "the window's start: Nd, Nh or a UTC date YYYY-MM-DD")],
                "responses": {"200": _json(_ref("Usage"), "the usage"), **BAD}},
    },
}

PATHS["/jobs"]["post"]["responses"]["413"] = _error(f"the job's inputs are larger than {MAX_INPUT_BYTES.name}")
PATHS["/me/notifications"] = {
    "get": {"summary": "The caller's notification settings",
            "responses": {"200": _json(_ref("NotificationSettings"), "targets and events")}},
    "put": {"summary": "Set the caller's notification settings (a target not allowed or malformed: 400)",
            "requestBody": {"required": True,
                            "content": {"application/json": {"schema": _ref("NotificationSettings")}}},
            "responses": {"200": _json(_ref("NotificationSettings"), "the settings kept"), **BAD}},
}
PATHS["/me/notifications/log"] = {
    "get": {"summary": "The caller's notification deliveries, newest first",
            "responses": {"200": _json(NOTIFICATION_LOG, "the delivery log")}},
}

_NUM = {"type": "number"}
_INT = {"type": "integer"}
ACCOUNTS = {
    "type": "object", "required": ["accounts", "gpus_total", "policy"],
    "properties": {
        "accounts": {"type": "array", "description": "parents first, in file order; default last", "items": {
            "type": "object", "properties": {
                "name": {"type": "string"}, "path": {"type": "string", "description": "names from the top, joined by /"},
                "weight": _NUM, "guaranteed": _INT, "limit": {"type": "integer", "nullable": True},
                "members": {"type": "array", "items": {"type": "string"}}, "users": _INT, "jobs": _INT,
                "demand": {"type": "integer", "description": "the sum of its jobs' max_gpus"},
                "share": {"type": "integer", "description": "its fair share of the GPUs"},
                "allocated": {"type": "integer", "description": "the GPUs the policy gives it now"},
                "held": {"type": "integer", "description": "the GPUs its jobs hold now"},
                "borrowed": _INT, "lent": _INT, "gpu_hours_24h": _NUM, "gpu_hours_total": _NUM}}},
        "gpus_total": _INT, "policy": {"type": "string"},
        "source": {"type": "string", "nullable": True, "description": "the accounts file"},
        "loaded_at": {"type": "string", "format": "date-time", "nullable": True},
        "timeline": {"type": "array", "description": "changes of the accounts' held GPUs, oldest first",
                     "items": {"type": "object", "properties": {"t": {"type": "string", "format": "date-time"},
                                                                "gpus": OBJ}}},
    },
}

USAGE = {
    "type": "object", "required": ["by", "since", "until", "rows", "totals"],
    "properties": {
        "by": {"type": "string", "enum": ["account", "user"]},
        "since": {"type": "string", "format": "date-time"}, "until": {"type": "string", "format": "date-time"},
        "rows": {"type": "array", "description": "by day, then account or user; only days with use", "items": {
            "type": "object", "properties": {"day": {"type": "string", "format": "date"},
                                             "account": {"type": "string", "description": "with by=account"},
                                             "user": {"type": "string", "description": "with by=user"},
                                             "gpu_hours": _NUM}}},
        "totals": {"type": "object", "additionalProperties": _NUM, "description": "GPU-hours per account or user"},
    },
}

DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "nbrunner", "version": "1",
             "description": "Run parameterized notebooks as jobs. Every route is authenticated: by the Jupyter "
                            "server (the extension) or by JupyterHub (nbrunner service: 401 without credentials, "
                            "403 for refused ones); errors are JSON {\"message\": ...}."},
    "servers": [{"url": "/nbrunner/api"}],
    "paths": {**PATHS, **openapi_pipelines.PATHS},
    "components": {"schemas": {
        "Job": JOB, "JobRequest": JOB_REQUEST, "Sweep": SWEEP, "Schedule": SCHEDULE,
        "ScheduleRequest": SCHEDULE_REQUEST, "ModelServer": MODEL_SERVER, "Accounts": ACCOUNTS,
        "Usage": USAGE,
        **openapi_pipelines.SCHEMAS,
        "NotificationSettings": NOTIFICATIONS,
        "Error": {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}},
    }},
}


def document(api_url: str = "/nbrunner/api") -> dict[str, Any]:
    """The OpenAPI document of the API served at ``api_url``."""
    doc = copy.deepcopy(DOCUMENT)
    doc["servers"] = [{"url": api_url.rstrip("/")}]
    return doc
