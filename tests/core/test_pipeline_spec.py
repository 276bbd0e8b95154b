"""The pipeline file (nbrunner.core.pipelines.spec): validation with one-line errors, templates, overrides."""
from __future__ import annotations

import pytest

from nbrunner.core.config import MAX_PIPELINE_BYTES
from nbrunner.core.errors import InvalidRequest
from nbrunner.core.pipelines.spec import MissingOutput, fill, parse_pipeline, topological_order, with_parameters

DIGITS = """
name: digits
steps:
  prep:   {notebook: prep.ipynb, parameters: {rows: 800}}
  train:  {notebook: train.ipynb, needs: [prep], max_gpus: 2,
           parameters: {data: "{{ steps.prep.outputs.data_path }}", lr: 0.1}}
  report: {notebook: report.ipynb, needs: [train],
           parameters: {accuracy: "{{ steps.train.outputs.accuracy }}", rows: "{{steps.prep.outputs.rows}}"}}
on_failure: stop
"""


def test_the_design_example_parses_in_order():
    spec = parse_pipeline(DIGITS)
    assert spec.name == "digits" and spec.on_failure == "stop"
    assert list(spec.steps) == ["prep", "train", "report"]
    assert spec.steps["train"].needs == ("prep",) and spec.steps["train"].options == {"max_gpus": 2}
    assert topological_order(spec) == ["prep", "train", "report"]
    assert spec.ancestors("report") == {"prep", "train"} and spec.dependents("prep") == {"train", "report"}
    assert parse_pipeline(spec.to_dict()) == spec  # what is stored parses back the same


@pytest.mark.parametrize("text, message", [
    ("steps: {a: {notebook: a.ipynb, needs: [b]}, b: {notebook: b.ipynb, needs: [a]}}",
     "the steps' needs form a cycle: a -> b -> a"),
    ("steps: {a: {notebook: a.ipynb, needs: [a]}}", "the steps' needs form a cycle: a -> a"),
    ("steps: {a: {notebook: a.ipynb, needs: [nope]}}", "step 'a' needs unknown step 'nope'"),
    ("steps: {a: {notebook: a.ipynb}, b: {notebook: b.ipynb, parameters: {x: '{{ steps.a.outputs.y }}'}}}",
     "step 'b': a template names step 'a', which is not among its needs"),
    ("steps: {b: {notebook: b.ipynb, parameters: {x: 'v={{ steps.zz.outputs.y }}'}}}",
     "step 'b': a template names step 'zz', which is not among its needs"),
    ("steps: {a: {notebook: a.ipynb, sweep: {notebook: a.ipynb}}}", "step 'a' has both notebook and sweep"),
    ("steps: {a: {parameters: {}}}", "step 'a' has neither notebook nor sweep"),
    ("steps: {a: {notebook: a.ipynb, min_gpus: 3, max_gpus: 1}}",
     "step 'a': min_gpus (3) is greater than max_gpus (1)"),
    ("steps: {a: {notebook: a.ipynb, priority: 0}}", "step 'a': priority must be between 1 and 10000, got 0"),
    ("steps: {a: {notebook: a.ipynb, colour: red}}", "step 'a': unknown key 'colour'"),
    ("steps: {a: {notebook: a.ipynb, parameters: {x: '{{ step.a }}'}}}", "is not {{ steps.STEP.outputs.NAME }}"),
    ("steps: {}", "steps must be a mapping of step names to steps"),
    ("steps: {a: {notebook: a.ipynb}}\non_failure: maybe", "on_failure must be stop or continue"),
    ("steps: {'a b': {notebook: a.ipynb}}", "step name 'a b' must be"),
    ("steps: {a: {sweep: {notebook: a.ipynb, parameters: {lr: [1, 2]}}}}", "step 'a': objective is missing"),
    ("- a\n- b", "pipeline file must be a mapping with steps"),
])
def test_bad_files_are_refused_with_one_line(text, message):
    with pytest.raises(InvalidRequest) as exc:
        parse_pipeline(text)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_a_file_over_the_size_limit_is_refused():
    big = "steps: {a: {notebook: a.ipynb}}\n#" + "x" * MAX_PIPELINE_BYTES
    with pytest.raises(InvalidRequest, match=f"larger than {MAX_PIPELINE_BYTES // 1024} KiB"):
        parse_pipeline(big)
    with pytest.raises(InvalidRequest, match="larger than"):
        parse_pipeline({"steps": {"a": {"notebook": "a.ipynb", "parameters": {"x": "y" * MAX_PIPELINE_BYTES}}}})


def test_templates_need_transitive_needs_only():
    spec = parse_pipeline(DIGITS)  # report names prep, which it needs through train
    assert spec.steps["report"].templates() == [("train", "accuracy"), ("prep", "rows")]


def test_fill_keeps_types_and_formats_embedded_values():
    outputs = {"prep": {"rows": 800, "path": "/d/x.npz", "ok": True, "shape": [8, 8]}}
    got = fill({"n": "{{ steps.prep.outputs.rows }}", "p": "{{steps.prep.outputs.path}}", "b": " {{ steps.prep.outputs.ok }} ",
                "s": "rows={{ steps.prep.outputs.rows }} at {{ steps.prep.outputs.path }}",
                "l": ["{{ steps.prep.outputs.shape }}", 1], "plain": "no {template}"}, outputs)
    assert got == {"n": 800, "p": "/d/x.npz", "b": True, "s": "rows=800 at /d/x.npz", "l": [[8, 8], 1],
                   "plain": "no {template}"}
    with pytest.raises(MissingOutput, match="step 'prep' recorded no output 'gone'"):
        fill("{{ steps.prep.outputs.gone }}", outputs)


def test_parameter_overrides():
    raw = {"steps": {"a": {"notebook": "a.ipynb", "parameters": {"x": 1}},
                     "s": {"sweep": {"notebook": "s.ipynb", "parameters": {"lr": [0.1]},
                                     "objective": {"metric": "acc", "mode": "max"}}}}}
    got = with_parameters(raw, {"a.x": 2, "a.y": "z", "s": {"epochs": 3}})
    assert got["steps"]["a"]["parameters"] == {"x": 2, "y": "z"}
    assert got["steps"]["s"]["sweep"]["parameters"] == {"lr": [0.1], "epochs": 3}
    assert raw["steps"]["a"]["parameters"] == {"x": 1}  # the caller's dict is left alone
    with pytest.raises(InvalidRequest, match="no step 'b'"):
        with_parameters(raw, {"b.x": 1})
    spec = parse_pipeline(got)
    assert spec.steps["s"].kind == "sweep" and spec.steps["s"].parameters == {"lr": [0.1], "epochs": 3}
