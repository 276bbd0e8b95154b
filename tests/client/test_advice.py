"""The advice submit gives for an ElasticTrainer notebook that can only get one learner (pure)."""
import json

import pytest

from nbrunner.client.advice import SingleLearnerWarning, single_learner_advice, uses_elastic_trainer, warn_single_learner


def notebook(*sources: str, kind: str = "code") -> str:
    return json.dumps({"cells": [{"cell_type": kind, "source": s, "metadata": {}} for s in sources],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_a_code_cell_naming_elastic_trainer_is_found():
    assert uses_elastic_trainer(notebook("x = 1", "from nbrunner.elastic import ElasticTrainer"))
    assert uses_elastic_trainer(json.dumps({"cells": [{"cell_type": "code", "source": ["t = Elastic", "Trainer"]}]}))
    assert not uses_elastic_trainer(notebook("ElasticTrainer is explained here", kind="markdown"))
    assert not uses_elastic_trainer(notebook("print(1)"))
    assert not uses_elastic_trainer("not json") and not uses_elastic_trainer("[1, 2]")


def test_advice_only_when_at_most_one_gpu(tmp_path):
    nb = tmp_path / "train.ipynb"
    nb.write_text(notebook("trainer = ElasticTrainer(model, data, loss, opt)"))
    for max_gpus in (0, 1):
        advice = single_learner_advice(nb, max_gpus)
        assert advice is not None and f"max_gpus is {max_gpus}" in advice and "--max-gpus N" in advice
    assert single_learner_advice(nb, 2) is None
    assert single_learner_advice(tmp_path / "missing.ipynb", 0) is None  # unreadable here: nothing to say


def test_advice_reads_the_notebook_from_the_workspace_too(tmp_path, monkeypatch):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "train.ipynb").write_text(notebook("ElasticTrainer"))
    monkeypatch.chdir(tmp_path)
    assert single_learner_advice("train.ipynb", 0) is None
    assert single_learner_advice("train.ipynb", 0, [tmp_path / "ws"]) is not None
    with pytest.warns(SingleLearnerWarning, match="can only ever get one learner"):
        warn_single_learner("train.ipynb", 1, [tmp_path / "ws"])
