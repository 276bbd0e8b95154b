"""Input limits: poison inputs are refused with one line, before anything is written."""
from __future__ import annotations

import time

import pytest

from nbrunner.control import submit
from nbrunner.core.config import MAX_YAML_BYTES, Settings
from nbrunner.core.errors import InvalidRequest
from nbrunner.core.limits import load_yaml
from nbrunner.execution.redis_server import EmbeddedRedis
from nbrunner.control.store import JobStore
from nbrunner.core.sweeps.spec import parse_spec

from support import make_notebook


@pytest.fixture
def store(workspace):
    server = EmbeddedRedis(workspace / ".nbrunner").ensure()
    yield JobStore.from_url(server.url)
    server.stop()


def nested(levels: int):
    value: object = 1
    for _ in range(levels):
        value = [value]
    return value


SPEC = "objective: {metric: accuracy, mode: max}\n"
BOMB = """a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
"""

CASES = [
    ({"parameters": {"X": nested(199)}}, "nested more than 32 levels"),
    ({"parameters": {"X": nested(254)}}, "nested more than 32 levels"),
    ({"parameters": {"X": "y" * 300_000}}, "larger than 256 KiB"),
    ({"parameters": {"X": 2**70}}, "64-bit range"),
    ({"min_gpus": 2**63, "max_gpus": 2**63}, "at most 2**63-1"),
    ({"max_gpus": 2**64}, "at most 2**63-1"),
    ({"retries": 2**63}, "at most 2**63-1"),
    ({"priority": 2**63}, "priority must be between 1 and 10000"),
    ({"timeout": 1e30}, "at most 2592000 s"),
    ({"timeout": 1e308}, "at most 2592000 s"),
    ({"timeout": 30 * 86400 + 1}, "at most 2592000 s"),
    ({"parameters": {"class": 1}}, "is a Python keyword"),
    ({"parameters": {"None": 1}}, "is a Python keyword"),
    ({"parameters": {"def": 1}}, "is a Python keyword"),
    ({"parameters": {"lambda": 1}}, "is a Python keyword"),
    ({"parameters": {"X": "\ud800"}}, "not valid UTF-8"),
    ({"parameters": {"\ud800": 1}}, "not valid UTF-8"),
    ({"name": "a\ud800"}, "not valid UTF-8"),
    ({"notebook": "\ud800.ipynb"}, "not valid UTF-8"),
    ({"notebook": "x" * 300 + ".ipynb"}, "notebook"),
    ({"language": "klingon"}, "unknown language 'klingon'"),
    ({"cwd": "nowhere"}, "cwd not found"),
    ({"cwd": "/"}, "cwd is outside the workspace"),
    ({"cwd": "hello.ipynb"}, "cwd is not a directory"),
    ({"notebook": "otherkernel.ipynb"}, "unknown kernel 'no-such-kernel' named in the metadata"),
]


@pytest.mark.parametrize("extra, message", CASES, ids=[m for _, m in CASES])
@pytest.mark.slow
def test_poison_requests_are_refused_and_change_nothing(workspace, store, extra, message):
    nb = make_notebook(workspace / "otherkernel.ipynb", "print(1)")
    nb.write_text(nb.read_text().replace('"name": "python3"', '"name": "no-such-kernel"'))
    with pytest.raises(InvalidRequest) as info:
        submit.submit(store, Settings.load(workspace), {"notebook": "hello.ipynb", **extra})
    text = str(info.value)
    assert message in text and "\n" not in text, text
    assert store.all() == [] and store.r.keys("nbrunner:job:*") == []


@pytest.mark.slow
def test_limits_leave_room_for_real_requests(workspace, store):
    (workspace / "data").mkdir()
    rec = submit.submit(store, Settings.load(workspace), {
        "notebook": "hello.ipynb", "parameters": {"X": nested(32), "SEED": 2**63 - 1, "class_": "ok"},
        "timeout": 30 * 86400, "max_gpus": 0, "language": "python", "cwd": "data", "report_mode": True})
    back = store.get(rec.id)  # what was accepted can be read back
    assert back.parameters["X"] == nested(32) and back.cwd == "data" and back.language == "python"
    assert back.timeout == 30 * 86400 and back.report_mode is True


def test_yaml_refuses_aliases_deep_nesting_and_size_quickly():
    started = time.monotonic()
    for text, message in [
        (BOMB, "aliases"),
        ("[" * 5000, "nested more than 64 levels"),
        ("x: " + "9" * 5000, "more than 4300 digits"),
        ("x: 99999999999999999999", "64-bit range"),
        ("x: '" + "a" * MAX_YAML_BYTES + "'", "larger than 64 KiB"),
        (b"\xff\xfeh\x00i\x00", "not UTF-8"),
    ]:
        with pytest.raises(InvalidRequest) as info:
            load_yaml(text, "params.yaml")
        assert message in str(info.value) and "\n" not in str(info.value), info.value
    assert time.monotonic() - started < 5
    assert load_yaml("a: &x 1\nb: 2\n", "ok") == {"a": 1, "b": 2}  # an anchor alone is harmless


@pytest.mark.parametrize("spec, message", [
    (BOMB + SPEC, "aliases"),
    ("parameters:\n  x: {randint: [0, 9223372036854775807]}\n" + SPEC, "randint bounds must be 64-bit"),
    ("parameters:\n  x: {randint: [-9223372036854775809, 0]}\n" + SPEC, "64-bit range"),
    ("parameters:\n  lambda: [1, 2]\n" + SPEC, "is a Python keyword"),
    ({"parameters": {"x": nested(100)}, "objective": {"metric": "a", "mode": "max"}}, "nested more than"),
    ({"parameters": {"x": [2**80]}, "objective": {"metric": "a", "mode": "max"}}, "64-bit range"),
])
def test_sweep_specs_are_bounded(spec, message):
    with pytest.raises(InvalidRequest) as info:
        parse_spec(spec)
    assert message in str(info.value) and "\n" not in str(info.value), info.value


@pytest.mark.parametrize("option, value, message", [
    ("min_gpus", 2**63, "at most 2**63-1"), ("max_gpus", 2**64, "at most 2**63-1"),
    ("timeout", 1e30, "at most 2592000 s"), ("priority", 2**63, "priority must be between"),
])
def test_sweep_options_are_bounded_like_jobs(workspace, option, value, message):
    from nbrunner.control.sweeps import prepare

    with pytest.raises(InvalidRequest) as info:
        prepare(Settings.load(workspace), "hello.ipynb", "parameters: {NAME: [a, b]}\n" + SPEC,
                base=workspace, options={option: value})
    assert message in str(info.value) and "\n" not in str(info.value), info.value
