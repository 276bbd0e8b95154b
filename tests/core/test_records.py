"""RecordView (records read without pydantic) gives what JobRecord gives, or steps aside."""
from __future__ import annotations

import json

import pytest

from nbrunner.core.models import JobRecord
from nbrunner.core.records import _REQUIRED, FIELDS, RecordView


def full_record() -> JobRecord:
    rec = JobRecord(id="abc12345", name="train", notebook="nb/train.ipynb", parameters={"lr": 0.01, "tags": ["a"]},
                    status="running", priority=7000, min_gpus=1, max_gpus=4, gpus=2, owner="ana",
                    started_at="2026-01-01T10:00:01.000Z", output="runs/abc12345/output.ipynb", progress=0.25,
                    metrics={"loss": 0.5, "step": 10}, sweep="sw1", timeout=60.0, kernel="python3",
                    slots=[["h1", 0], ["h1", 1]], throughput={"1": 410.0, "2": 790.5}, pause_s=0.04,
                    queue_position=None, worker="w.1", attempt=1)
    rec.note_status(None)
    rec.note_status("queued")
    return rec


def test_fields_and_defaults_follow_the_model():
    assert list(FIELDS) == list(JobRecord.model_fields)
    for name, (_ok, default) in FIELDS.items():
        field = JobRecord.model_fields[name]
        if default is _REQUIRED:
            assert field.is_required() or name == "created_at", name
            continue
        expected = field.get_default(call_default_factory=True)
        assert (default() if isinstance(default, type) else default) == expected, name


@pytest.mark.parametrize("raw", [
    full_record().model_dump_json(),
    JobRecord(id="q1", name="n", notebook="n.ipynb").model_dump_json(),
    # written by an older version: fields missing, and one it no longer knows
    json.dumps({"id": "old1", "name": "n", "notebook": "n.ipynb", "status": "completed", "created_at":
                "2025-01-01T00:00:00.000Z", "started_at": "2025-01-01T00:00:01.000Z",
                "finished_at": "2025-01-01T00:01:01.500Z", "gone": 1}),
])
def test_a_view_reads_like_the_model(raw):
    view, model = RecordView.parse(raw), JobRecord.model_validate_json(raw)
    assert view is not None
    assert view.to_dict() == model.to_dict()
    assert list(view.to_dict()) == list(model.to_dict())
    assert json.dumps(view.to_dict(), default=str) == json.dumps(model.to_dict(), default=str)
    for name in FIELDS:
        assert getattr(view, name) == getattr(model, name), name
    assert view.finished == model.finished
    if model.finished:
        assert view.duration() == model.duration()
    with pytest.raises(AttributeError):
        view.gone
    with pytest.raises(AttributeError):
        view.status = "failed"


@pytest.mark.parametrize("change", [
    {"progress": 1},  # an int where the model gives a float
    {"timeout": 5},
    {"throughput": {"1": 3}},
    {"priority": 7.0},
    {"status": "done"},
    {"history": [{"status": "queued", "at": None}]},
    {"gpus": True},
    {"metrics": []},
])
def test_anything_else_is_left_to_the_model(change):
    data = {**json.loads(full_record().model_dump_json()), **change}
    assert RecordView.parse(json.dumps(data)) is None


@pytest.mark.parametrize("raw", ["not json", "[]", '{"id": "x"}', '{"id": "x", "name": "n", "notebook": "n"}',
                                 full_record().model_dump_json().replace('"progress":0.25', '"progress":NaN')])
def test_unreadable_or_incomplete_records_are_left_to_the_model(raw):
    assert RecordView.parse(raw) is None
