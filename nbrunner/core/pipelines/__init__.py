"""Pipelines without I/O: the pipeline file (:mod:`.spec`), the record (:mod:`.record`) and its
life (:mod:`.lifecycle`)::

    from nbrunner.core.pipelines.spec import parse_pipeline
    spec = parse_pipeline("steps: {a: {notebook: a.ipynb}, b: {notebook: b.ipynb, needs: [a]}}")
"""
__all__ = ["lifecycle", "record", "spec"]
