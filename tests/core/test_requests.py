"""plain_request and RecordView.new (a submit without pydantic) give what the models give, or step aside."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nbrunner.core.errors import InvalidRequest
from nbrunner.core.models import JobRecord, JobRequest
from nbrunner.core.records import RecordView
from nbrunner.core.requests import REQUEST_FIELDS, plain_request


def test_request_fields_and_defaults_follow_the_model():
    assert list(REQUEST_FIELDS) == list(JobRequest.model_fields)
    for name, (_ok, default) in REQUEST_FIELDS.items():
        field = JobRequest.model_fields[name]
        if field.is_required():
            continue
        assert (default() if default is dict else default) == field.get_default(call_default_factory=True), name


@pytest.mark.parametrize("data", [
    {"notebook": "a.ipynb"},
    {"notebook": "dir/b.ipynb", "parameters": {"lr": 0.5, "n": 3, "tags": ["x", None], "cfg": {"k": True}},
     "name": "  run one  ", "min_gpus": 1, "max_gpus": 4, "priority": 10000, "timeout": 30, "kernel": "python3",
     "language": "python", "cwd": "sub", "report_mode": True, "sweep": "s1", "schedule": "c1", "retries": 0},
    {"notebook": "a.ipynb", "min_gpus": 2, "max_gpus": None, "timeout": 1.5, "name": None, "retries": None},
    {"notebook": "a.ipynb", "parameters": {"big": 2**62, "text": "é ✓"}, "priority": 1},
])
def test_a_plain_request_is_what_the_model_makes_of_it(data):
    plain = plain_request(data)
    assert plain is not None
    assert vars(plain) == JobRequest.parse(data).model_dump()
    assert type(plain.timeout) is type(JobRequest.parse(data).timeout)


@pytest.mark.parametrize("data", [
    {"notebook": " "}, {"notebook": "a\x00b"}, {"notebook": "a", "parameters": {"not ok": 1}},
    {"notebook": "a", "parameters": {"class": 1}}, {"notebook": "a", "parameters": {"x": float("nan")}},
    {"notebook": "a", "parameters": {"x": {1, 2}}}, {"notebook": "a", "name": ""}, {"notebook": "a", "name": "x" * 201},
    {"notebook": "a", "min_gpus": -1}, {"notebook": "a", "min_gpus": 3, "max_gpus": 1}, {"notebook": "a", "min_gpus": True},
    {"notebook": "a", "priority": 0}, {"notebook": "a", "priority": "5"}, {"notebook": "a", "timeout": 0},
    {"notebook": "a", "timeout": True}, {"notebook": "a", "timeout": float("inf")}, {"notebook": "a", "timeout": "3"},
    {"notebook": "a", "report_mode": 1}, {"notebook": "a", "unknown": 1}, {"notebook": 3}, {}, ["a.ipynb"], None,
])
def test_anything_else_goes_through_the_model_and_its_message(data):
    with pytest.raises(InvalidRequest) as model:
        JobRequest.parse(data)
    try:
        assert plain_request(data) is None
    except InvalidRequest as plain:  # the limits every request passes first: the same message
        assert str(plain) == str(model.value)


def test_limits_are_checked_first_either_way():
    data = {"notebook": "a.ipynb", "parameters": {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}
    with pytest.raises(InvalidRequest) as plain:
        plain_request(data)
    with pytest.raises(InvalidRequest) as model:
        JobRequest.parse(data)
    assert str(plain.value) == str(model.value)


FIELDS = dict(id="abc12345", name="train", notebook="nb/train.ipynb", parameters={"lr": 0.01, "tags": ["a"]},
              priority=7000, min_gpus=1, max_gpus=4, owner="ana", output="runs/abc12345/output.ipynb", sweep=None,
              schedule="c1", timeout=60.0, kernel=None, language=None, cwd="sub", report_mode=False, retries=2,
              elastic=True, created_at="2026-01-01T10:00:00.000Z")


def test_a_new_record_is_what_the_model_makes():
    view = RecordView.new(**FIELDS)
    model = JobRecord(**FIELDS)
    model.note_status(None)
    assert view is not None
    assert json.loads(view.model_dump_json()) == json.loads(model.model_dump_json())
    assert list(json.loads(view.model_dump_json())) == list(json.loads(model.model_dump_json()))
    assert view.to_dict() == model.to_dict()
    now = RecordView.new(**{k: v for k, v in FIELDS.items() if k != "created_at"})
    assert now.history == [{"status": "queued", "at": now.created_at}]


@pytest.mark.parametrize("change", [{"timeout": 60}, {"gone": 1}, {"status": "running"}, {"priority": "7000"},
                                    {"history": [{"status": "queued", "at": "x"}]}])
def test_a_new_record_the_view_cannot_make_is_left_to_the_model(change):
    assert RecordView.new(**{**FIELDS, **change}) is None


@pytest.mark.slow
def test_submit_from_the_cli_imports_no_pydantic(tmp_path):
    """The whole submit path (request, record, store) as the CLI runs it, minus the Redis round trip."""
    code = ("import sys\nfrom nbrunner.control.submit import parse_request\nfrom nbrunner.core.records import RecordView\n"
            "req = parse_request({'notebook': 'a.ipynb', 'parameters': {'x': 1}, 'name': None, 'min_gpus': 0, "
            "'max_gpus': None, 'priority': 5000, 'timeout': None, 'kernel': None})\n"
            "rec = RecordView.new(id='a1', name='a', notebook=req.notebook, parameters=req.parameters, "
            "max_gpus=req.max_gpus)\nrec.model_dump_json()\nprint('pydantic' in sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "False", p.stdout + p.stderr
