"""``output.html``'s exporter (style sheets read once, kept out of nbconvert's HTML rewriting) makes
the very page nbconvert's own HTMLExporter makes."""
from __future__ import annotations

import base64

from nbconvert import HTMLExporter

from nbrunner.control import html
from nbrunner.core.notebooks import load_nbformat

PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d"
    "0000000049454e44ae426082")).decode()


def rich_notebook():
    v4 = load_nbformat().v4
    cells = [
        v4.new_markdown_cell("# Title\n\nSome *text*, $x^2$, a [link](http://example.org).\n\n```python\nprint(1)\n```"),
        v4.new_code_cell("print('hi')", outputs=[v4.new_output("stream", name="stdout", text="hi\n")]),
        v4.new_code_cell("show()", outputs=[
            v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<image>"}),
            v4.new_output("display_data", data={"text/html": "<b>bold</b><img src='a.png'><style>p {color: red}</style>"})]),
        v4.new_code_cell("1/0", outputs=[v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                                                        traceback=["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"])]),
    ]
    return v4.new_notebook(cells=cells, metadata={"language_info": {"name": "python", "pygments_lexer": "ipython3"}})


def test_the_page_is_nbconvert_s_page_every_time():
    nb = rich_notebook()
    expected = HTMLExporter().from_notebook_node(nb)[0]
    for _ in range(2):  # the first export reads the style sheets, the next one reuses them
        body = html.exporter().from_notebook_node(nb)[0]
        assert body == expected
    assert "nbrunner style sheet" not in body and body.count("<style") == expected.count("<style") >= 3


def test_write_output_html_writes_that_page(tmp_path):
    nbf = load_nbformat()
    nbf.write(rich_notebook(), str(tmp_path / "output.ipynb"))
    path = html.write_output_html(tmp_path)
    assert path == tmp_path / "output.html"
    assert path.read_text(encoding="utf-8") == HTMLExporter().from_notebook_node(
        nbf.read(str(tmp_path / "output.ipynb"), as_version=4))[0]
