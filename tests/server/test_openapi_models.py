"""The OpenAPI document's record and request schemas are the models': field by field, the same
names, types, nullability and required fields (Job and JobRequest are made from JobRecord and
JobRequest; Schedule and ScheduleRequest are written by hand and held to ScheduleRecord and
ScheduleSpec here)."""
from __future__ import annotations

from typing import Any

import msgspec
import pytest

from nbrunner.core.models import JOB_OPTIONS, PUBLIC_FIELDS, SHOWN_EXTRA, JobRecord, JobRequest
from nbrunner.core.schedules import ScheduleRecord, ScheduleSpec
from nbrunner.server.model_schemas import model_fields, object_schema, type_schema
from nbrunner.server.openapi import document

SCHEMAS = document()["components"]["schemas"]
NBRUNNER_SET = ("sweep", "schedule", "pipeline", "step")  # JobRequest fields POST /jobs refuses: nbrunner sets them


def shape(schema: dict[str, Any]) -> tuple:
    """What a model decides of a field's schema: its type (items' too), enum and nullability."""
    items = schema.get("items")
    return (schema.get("type"), shape(items) if items else None, tuple(sorted(schema.get("enum", ()))),
            bool(schema.get("nullable")))


def assert_same_fields(schema: dict[str, Any], model: type, names, *, extra=(), answer: bool) -> None:
    """``schema`` has exactly ``names`` (and ``extra``), each with the model's shape; an answer's
    fields are all required, a request's required fields are the model's."""
    declared = model_fields(model)
    props = schema["properties"]
    assert list(props) == [*names, *extra], f"{model.__name__}: fields differ"
    for name in names:
        assert shape(props[name]) == shape(declared[name][0]), f"{model.__name__}.{name}"
    required = list(names) if answer else [n for n in names if declared[n][1]]
    assert schema.get("required", []) == required, model.__name__


def test_job_is_the_records_public_dict():
    record = JobRecord(id="a1", name="n", notebook="n.ipynb")
    assert list(SCHEMAS["Job"]["properties"]) == list(record.to_dict()) == [*PUBLIC_FIELDS, *SHOWN_EXTRA]
    assert_same_fields(SCHEMAS["Job"], JobRecord, [*PUBLIC_FIELDS, *SHOWN_EXTRA], answer=True)


def conforms(value: Any, schema: dict[str, Any]) -> bool:
    """A small OpenAPI 3.0 check: type, nullability, enum and array items."""
    if value is None:
        return bool(schema.get("nullable")) or not schema.get("type")
    kind = schema.get("type")
    ok = {None: True, "string": isinstance(value, str), "boolean": isinstance(value, bool),
          "integer": isinstance(value, int) and not isinstance(value, bool),
          "number": isinstance(value, (int, float)) and not isinstance(value, bool),
          "object": isinstance(value, dict), "array": isinstance(value, list)}[kind]
    if ok and "enum" in schema:
        ok = value in schema["enum"]
    if ok and kind == "array" and "items" in schema:
        ok = all(conforms(v, schema["items"]) for v in value)
    return ok


def full_record() -> JobRecord:
    """A record with every shown field set (nothing left at None)."""
    return JobRecord(
        id="a1", name="n", notebook="n.ipynb", parameters={"lr": 0.1}, status="completed", gpus=1, owner="ann",
        started_at="2026-01-01T00:00:01.000Z", finished_at="2026-01-01T00:00:02.000Z", output="runs/a1/o.ipynb",
        error="boom", progress=1.0, metrics={"loss": 0.5}, sweep="s1", schedule="c1",
        history=[{"status": "queued", "at": "2026-01-01T00:00:00.000Z"}], timeout=60.0, kernel="python3",
        attempt=1, worker="w1", queue_position=0, groups=["g"], account="vision", reclaimed="reclaimed by vision",
        pipeline="p1", step="train", waiting={"code": "capacity", "message": "8 GPUs busy"},
        expected_start="2026-01-01T00:00:00.000Z", expected_end="2026-01-01T00:00:03.000Z", inputs=["data/"])


@pytest.mark.parametrize("record", [JobRecord(id="a1", name="n", notebook="n.ipynb"), full_record()],
                         ids=["defaults", "every-field-set"])
def test_a_records_public_dict_conforms_to_the_job_schema(record):
    body = msgspec.json.decode(msgspec.json.encode(record.to_dict()))  # as the REST answer carries it
    props = SCHEMAS["Job"]["properties"]
    bad = {k: v for k, v in body.items() if not conforms(v, props[k])}
    assert not bad, f"fields that do not fit the Job schema: {bad}"


def test_job_request_is_the_request_model():
    names = [f for f in JobRequest.__struct_fields__ if f not in NBRUNNER_SET]
    assert_same_fields(SCHEMAS["JobRequest"], JobRequest, names, extra=("content", "inputs_content"), answer=False)
    defaults = {k: v["default"] for k, v in SCHEMAS["JobRequest"]["properties"].items() if "default" in v}
    made = JobRequest(notebook="n.ipynb")
    assert defaults == {"min_gpus": made.min_gpus, "priority": made.priority, "report_mode": made.report_mode}


def test_a_request_the_schema_describes_is_accepted_and_a_wrong_type_is_refused():
    from nbrunner.core.errors import InvalidRequest

    props = SCHEMAS["JobRequest"]["properties"]
    sample = {"string": "x", "integer": 1, "number": 1.5, "boolean": True, "object": {}, "array": []}
    request = {k: sample[props[k]["type"]] for k in ("name", "min_gpus", "max_gpus", "priority", "timeout",
                                                     "kernel", "report_mode", "retries", "parameters", "inputs")}
    request["priority"] = props["priority"]["minimum"]
    JobRequest.parse({"notebook": "n.ipynb", **request})
    for field in ("min_gpus", "timeout", "report_mode"):
        with pytest.raises(InvalidRequest, match=field):
            JobRequest.parse({"notebook": "n.ipynb", field: "a string"})


def test_the_job_options_of_a_sweep_request_are_the_job_requests():
    body = document()["paths"]["/sweeps"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    for option in JOB_OPTIONS:
        assert body["properties"][option] == SCHEMAS["JobRequest"]["properties"][option], option


def test_schedule_is_the_schedule_records_public_dict():
    record = ScheduleRecord(id="c1", name="n", notebook="n.ipynb", every=60)
    assert_same_fields(SCHEMAS["Schedule"], ScheduleRecord, list(record.to_dict()), answer=True)


def test_schedule_request_is_the_schedule_spec():
    """ScheduleSpec's fields, and two the handler takes first: the notebook's content, or a pipeline
    instead of the notebook (which is why the document requires no field where the model requires it)."""
    request = {**SCHEMAS["ScheduleRequest"], "required": ["notebook"]}
    assert "required" not in SCHEMAS["ScheduleRequest"] and "pipeline" in request["properties"]
    assert_same_fields(request, ScheduleSpec, list(ScheduleSpec.model_fields), extra=("content", "pipeline"),
                       answer=False)


def test_a_drifted_schema_is_caught():
    """The comparison sees a renamed, retyped or no longer nullable field, not only agreement."""
    job = SCHEMAS["Job"]
    for change in ({"properties": {**job["properties"], "gpus": {"type": "string"}}},
                   {"properties": {**job["properties"], "error": {"type": "string"}}},
                   {"properties": {("owner_name" if k == "owner" else k): v for k, v in job["properties"].items()}},
                   {"required": job["required"][1:]}):
        with pytest.raises(AssertionError):
            assert_same_fields({**job, **change}, JobRecord, [*PUBLIC_FIELDS, *SHOWN_EXTRA], answer=True)


def test_types_and_notes():
    assert type_schema(msgspec.inspect.type_info(dict[str, float] | None)) == {
        "type": "object", "additionalProperties": {"type": "number"}, "nullable": True}
    assert type_schema(msgspec.inspect.type_info(list[str])) == {"type": "array", "items": {"type": "string"}}
    with pytest.raises(ValueError, match="gpus"):
        object_schema(JobRecord, ["gpus"], notes={"gpus": {"type": "string"}})
    with pytest.raises(ValueError, match="colour"):
        object_schema(JobRecord, ["gpus"], notes={"colour": {"description": "x"}})
