"""The job request: one model, validated once, with one-line messages naming the field."""
from __future__ import annotations

import subprocess
import sys

import pytest

from nbrunner.core.errors import InvalidRequest
from nbrunner.core.models import JobRequest


def test_a_full_request_is_taken_as_it_is():
    req = JobRequest.parse({
        "notebook": "dir/b.ipynb", "parameters": {"lr": 0.5, "n": 3, "tags": ["x", None], "cfg": {"k": True}},
        "name": "  run one  ", "min_gpus": 1, "max_gpus": 4, "priority": 10000, "timeout": 30, "kernel": "python3",
        "language": "python", "cwd": "sub", "report_mode": True, "sweep": "s1", "schedule": "c1", "retries": 0})
    assert req.name == "run one" and req.max_gpus == 4 and req.timeout == 30.0 and type(req.timeout) is float
    assert req.parameters == {"lr": 0.5, "n": 3, "tags": ["x", None], "cfg": {"k": True}}


def test_defaults():
    req = JobRequest.parse({"notebook": "a.ipynb", "min_gpus": 2})
    assert (req.max_gpus, req.priority, req.timeout, req.parameters, req.retries) == (2, 5000, None, {}, None)


@pytest.mark.parametrize("data, message", [
    ({"notebook": " "}, "notebook path is empty"),
    ({"notebook": "a\x00b"}, "NUL byte"),
    ({"notebook": "a", "parameters": {"not ok": 1}}, "parameter name 'not ok' is not a Python identifier"),
    ({"notebook": "a", "parameters": {"class": 1}}, "is a Python keyword"),
    ({"notebook": "a", "parameters": {"x": float("nan")}}, "parameters must be JSON values"),
    ({"notebook": "a", "parameters": {"x": {1, 2}}}, "parameters must be JSON values"),
    ({"notebook": "a", "parameters": [1, 2]}, "parameters: expected an object, got a list"),
    ({"notebook": "a", "name": ""}, "name must be 1..200 printable characters"),
    ({"notebook": "a", "name": "x" * 201}, "name must be 1..200 printable characters"),
    ({"notebook": "a", "min_gpus": -1}, "min_gpus must be >= 0, got -1"),
    ({"notebook": "a", "min_gpus": 3, "max_gpus": 1}, "min_gpus (3) is greater than max_gpus (1)"),
    ({"notebook": "a", "min_gpus": True}, "min_gpus: expected an integer, got a boolean"),
    ({"notebook": "a", "min_gpus": "2"}, "min_gpus: expected an integer, got a string"),
    ({"notebook": "a", "priority": 0}, "priority must be between 1 and 10000, got 0"),
    ({"notebook": "a", "priority": "5"}, "priority: expected an integer, got a string"),
    ({"notebook": "a", "timeout": 0}, "timeout must be a positive number of seconds, got 0"),
    ({"notebook": "a", "timeout": True}, "timeout: expected a number or null, got a boolean"),
    ({"notebook": "a", "timeout": float("inf")}, "timeout must be at most 2592000 s (30 days), got inf"),
    ({"notebook": "a", "timeout": "3"}, "timeout: expected a number or null, got a string"),
    ({"notebook": "a", "timeout": 10 ** 9}, "timeout must be at most 2592000 s (30 days)"),
    ({"notebook": "a", "report_mode": 1}, "report_mode: expected a boolean, got an integer"),
    ({"notebook": "a", "unknown": 1}, "unknown field 'unknown'"),
    ({"notebook": 3}, "notebook: expected a string, got an integer"),
    ({}, "missing field 'notebook'"),
    (["a.ipynb"], "a job request must be a JSON object"),
    (None, "a job request must be a JSON object"),
])
def test_a_bad_request_is_refused_in_one_line_naming_the_problem(data, message):
    with pytest.raises(InvalidRequest) as info:
        JobRequest.parse(data)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_limits_are_checked_before_the_model():
    deep = {"notebook": "a.ipynb", "parameters": {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}
    with pytest.raises(InvalidRequest, match="nested"):
        JobRequest.parse(deep)


@pytest.mark.slow
def test_submit_from_the_cli_imports_no_pydantic():
    """The whole submit path (request, record, transition) as the CLI runs it, minus the Redis round trip."""
    code = ("import sys\nfrom nbrunner.control.submit import submit\nfrom nbrunner.core.models import JobRecord, JobRequest\n"
            "from nbrunner.core.lifecycle import submitted\n"
            "req = JobRequest.parse({'notebook': 'a.ipynb', 'parameters': {'x': 1}, 'max_gpus': None})\n"
            "rec = submitted(JobRecord(id='a1', name='a', notebook=req.notebook, parameters=req.parameters,"
            " max_gpus=req.max_gpus))\nrec.to_json()\nprint('pydantic' in sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "False", p.stdout + p.stderr
