"""A pipeline through a user's Jupyter server that forwards to the nbrunner service: the pipeline
file and its notebooks are read from the user's root and travel as content (the service never sees
them); a notebook outside the root is refused in one line, nothing made (servers: test_forward)."""
from __future__ import annotations

import pytest

from support import make_notebook, wait_for
from .test_forward import pair  # noqa: F401  (the two servers)

pytestmark = pytest.mark.slow


def test_a_pipeline_file_of_the_users_root_travels_as_content(pair):  # noqa: F811
    flow = pair.user_root / "flow"
    make_notebook(flow / "a.ipynb", "import nbrunner\nnbrunner.record('w', 'x' + WORD)", parameters="WORD = ''")
    make_notebook(flow / "b.ipynb", "import nbrunner\nnbrunner.record('got', w * 2)", parameters="w = ''")
    (flow / "p.pipeline.yaml").write_text(
        "steps:\n  a: {notebook: a.ipynb, parameters: {WORD: y}}\n"
        "  b: {notebook: b.ipynb, needs: [a], parameters: {w: '{{ steps.a.outputs.w }}'}}\n")
    assert not (pair.workspace / "flow").exists()  # the service cannot read the user's files
    code, rec = pair.usr("POST", "pipelines", {"file": "flow/p.pipeline.yaml"})
    assert code == 201, rec
    assert rec["name"] == "p" and rec["steps"]["a"]["notebook"] == "flow/a.ipynb"

    def done():
        got = pair.usr("GET", f"pipelines/{rec['id']}")[1]
        return got if got["status"] in ("completed", "failed", "cancelled") else None

    final = wait_for(done, 180, 0.3, "the pipeline to finish")
    assert final["status"] == "completed", final
    assert final["steps"]["b"]["outputs"] == {"got": "xyxy"}
    code, before = pair.usr("GET", "pipelines")
    for body, message in (({"steps": {"a": {"notebook": "escape.ipynb"}}}, "outside"),
                          ({"steps": {"a": {"notebook": "../x.ipynb"}}}, "must stay inside the server root")):
        code, answer = pair.usr("POST", "pipelines", body)
        assert code == 400 and message in answer["message"] and "\n" not in answer["message"], answer
    assert pair.usr("GET", "pipelines")[1] == before
