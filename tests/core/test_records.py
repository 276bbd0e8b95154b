"""The job record: one model (msgspec), immutable, stored as JSON, read back as it was written."""
from __future__ import annotations

import json

import msgspec
import pytest

from nbrunner.core.lifecycle import submitted
from nbrunner.core.models import (FINISHED, PUBLIC_FIELDS, SHOWN_EXTRA, STATUSES, JobPhase, JobRecord, JobStatus)


def full_record() -> JobRecord:
    return submitted(JobRecord(
        id="abc12345", name="train", notebook="nb/train.ipynb", parameters={"lr": 0.01, "tags": ["a"]},
        priority=7000, min_gpus=1, max_gpus=4, gpus=2, owner="ana", output="runs/abc12345/output.ipynb",
        progress=0.25, metrics={"loss": 0.5, "step": 10}, sweep="sw1", timeout=60.0, kernel="python3",
        slots=[["h1", 0], ["h1", 1]], throughput={"1": 410.0, "2": 790.5}, pause_s=0.04, worker="w.1", attempt=1))


def test_a_record_survives_the_store_and_job_json():
    rec = full_record()
    assert JobRecord.from_json(rec.to_json()) == rec
    assert JobRecord.from_json(rec.to_json(indent=1)) == rec
    assert "\n" not in rec.to_json() and "\n" in rec.to_json(indent=1)


def test_the_public_record_lists_the_public_fields_then_the_shown_bookkeeping():
    d = full_record().to_dict()
    assert list(d) == [*PUBLIC_FIELDS, *SHOWN_EXTRA]
    assert d["status"] == "queued" and type(d["status"]) is str  # plain JSON values, no enums
    assert json.loads(json.dumps(d)) == d
    assert "throughput" not in d and "phase" not in d  # internal


def test_records_are_immutable():
    rec = full_record()
    with pytest.raises(AttributeError):
        rec.status = JobStatus.FAILED


def test_statuses_are_defined_once_and_read_like_strings():
    assert STATUSES == ("queued", "running", "completed", "failed", "cancelled")
    assert FINISHED == ("completed", "failed", "cancelled")
    assert JobStatus("running") == "running" and f"{JobStatus.RUNNING}" == "running" and str(JobStatus.FAILED) == "failed"
    assert [s.finished for s in JobStatus] == [False, False, True, True, True]


@pytest.mark.parametrize("status, phase", [("queued", JobPhase.WAITING), ("running", JobPhase.RUNNING),
                                           ("completed", JobPhase.ENDED), ("cancelled", JobPhase.ENDED)])
def test_a_record_written_before_phases_existed_gets_the_phase_of_its_status(status, phase):
    raw = json.dumps({"id": "old1", "name": "n", "notebook": "n.ipynb", "status": status,
                      "created_at": "2025-01-01T00:00:00.000Z", "dispatched": False, "released": True, "gone": 1})
    rec = JobRecord.from_json(raw)
    assert rec.phase is phase and rec.status == status
    assert rec.released is (phase is not JobPhase.RUNNING) and rec.dispatched is False


@pytest.mark.parametrize("raw", [
    "{not json", "[]", json.dumps({"id": "x", "name": "n"}),  # notebook missing
    json.dumps({"id": "x", "name": "n", "notebook": "a", "status": "lost"}),
    json.dumps({"id": "x", "name": "n", "notebook": "a", "priority": "high"}),
    json.dumps({"id": "x", "name": "n", "notebook": "a", "history": [{"status": 5}]}),
])
def test_a_record_that_is_not_one_is_refused(raw):
    with pytest.raises((msgspec.ValidationError, msgspec.DecodeError)):
        JobRecord.from_json(raw)


def test_duration_runs_from_start_to_finish():
    rec = msgspec.structs.replace(full_record(), started_at="2026-01-01T10:00:00.000Z",
                                  finished_at="2026-01-01T10:01:30.500Z")
    assert rec.duration() == 90.5
    assert msgspec.structs.replace(rec, started_at=None).duration() is None


def test_public_view_encodes_to_the_json_of_to_dict():
    """REST replies encode ``public_view()`` with msgspec: the same keys, order and values as ``to_dict()``."""
    rec = submitted(JobRecord(id="abcdefgh", name="one", notebook="one.ipynb", parameters={"X": 7, "s": "é"},
                              owner="me", output="runs/abcdefgh/output.ipynb", waiting={"code": "capacity", "message": "m"},
                              throughput={"1": 2.5}, groups=["g"], inputs=["data.csv"], queue_position=3))
    encoded = msgspec.json.encode(rec.public_view())
    assert list(json.loads(encoded)) == list(rec.to_dict())
    assert json.loads(encoded) == json.loads(json.dumps(rec.to_dict()))
