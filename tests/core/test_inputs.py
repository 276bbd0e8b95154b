"""A job's inputs, pure: their paths, their wire form, their limits, a folder's manifest."""
from __future__ import annotations

import base64

import pytest

from nbrunner.core.errors import InvalidRequest, TooLarge
from nbrunner.control.local_files import collect_inputs
from nbrunner.core.inputs import check_paths, decode, encode, manifest
from nbrunner.core.models import JobRequest


def test_paths_are_relative_distinct_and_stay_in_the_notebooks_directory():
    assert check_paths(["data/", "./cfg.yaml", "a\\b.txt"]) == ["data", "cfg.yaml", "a/b.txt"]
    for bad, said in ((["../secret"], "leaves the notebook's directory"), (["/etc/passwd"], "leaves"),
                      (["~/x"], "leaves"), (["a/../../b"], "leaves"), ([""], "relative"), (["."], "itself"),
                      (["data", "data/x.csv"], "overlap"), (["a", "a"], "overlap"), ("data", "a list"), ([3], "relative")):
        with pytest.raises(ValueError, match=said):
            check_paths(bad)


def test_a_request_with_bad_inputs_is_refused_in_one_line():
    with pytest.raises(InvalidRequest) as err:
        JobRequest.parse({"notebook": "a.ipynb", "inputs": ["../up.csv"]})
    assert "leaves the notebook's directory" in str(err.value) and "\n" not in str(err.value)


def test_collect_reads_files_and_folders_and_refuses_links_out(tmp_path):
    nb = tmp_path / "nb"
    (nb / "data" / "sub").mkdir(parents=True)
    (nb / "data" / "a.csv").write_bytes(b"1,2\n")
    (nb / "data" / "sub" / "b.txt").write_bytes(b"bee")
    (nb / "cfg.yaml").write_text("k: v\n")
    got = collect_inputs(nb, ["data", "cfg.yaml"], 1000)
    assert got.entries == [("data", "folder", {"a.csv": b"1,2\n", "sub/b.txt": b"bee"}),
                           ("cfg.yaml", "file", {"": b"k: v\n"})]
    assert got.total == 12
    (tmp_path / "secret").write_text("s")
    (nb / "data" / "link").symlink_to(tmp_path / "secret")
    with pytest.raises(InvalidRequest, match="leaves the notebook's directory"):
        collect_inputs(nb, ["data"], 1000)
    with pytest.raises(InvalidRequest, match="not found"):
        collect_inputs(nb, ["missing.csv"], 1000)
    with pytest.raises(TooLarge, match="larger than the limit of 4 bytes") as err:
        collect_inputs(nb, ["cfg.yaml"], 4)
    assert err.value.status == 413


def test_the_wire_form_round_trips_and_is_checked(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.bin").write_bytes(bytes(range(256)))
    (tmp_path / "f.txt").write_bytes(b"eff")
    got = collect_inputs(tmp_path, ["d", "f.txt"], 10_000)
    wire = encode(got)
    assert wire["f.txt"] == base64.b64encode(b"eff").decode()
    assert decode(wire, ["d", "f.txt"], 10_000).entries == got.entries
    with pytest.raises(InvalidRequest, match="lacks input 'f.txt'"):
        decode({"d": wire["d"]}, ["d", "f.txt"], 10_000)
    with pytest.raises(InvalidRequest, match="not among inputs"):
        decode({**wire, "g": "AA=="}, ["d", "f.txt"], 10_000)
    with pytest.raises(InvalidRequest, match="not valid base64"):
        decode({"f.txt": "!!!"}, ["f.txt"], 10_000)
    with pytest.raises(InvalidRequest, match="leaves"):
        decode({"d": {"../x": "AA=="}}, ["d"], 10_000)
    with pytest.raises(TooLarge):
        decode(wire, ["d", "f.txt"], 100)


def test_a_folders_manifest_is_canonical():
    assert manifest({"b": "2", "a": "1"}) == manifest({"a": "1", "b": "2"}) == b'{"files":{"a":"1","b":"2"}}'
