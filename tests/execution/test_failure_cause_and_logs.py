"""A failed training job names its root cause in its one-line ``error``, and its log
(``GET /jobs/{id}/log``, ``nbrunner logs``, ``Job.logs()``) includes the learners' logs."""
from __future__ import annotations

import pytest

import traceback

import nbrunner
from nbrunner.control.job_files import read_log
from nbrunner.elastic.protocol import ElasticTrainingError, root_cause
from nbrunner.execution.execute import describe_failure

from support import make_notebook

# A training notebook whose data is missing: get_datasets() raises on the learner.
MISSING_DATA = '''import glob, os
from torch import nn
import torch
from nbrunner.elastic import ElasticTrainer

def get_datasets():
    files = glob.glob(os.path.join(DATA, "data_batch_*"))
    if not files:
        raise FileNotFoundError(f"no data_batch_* in {DATA}")

model = nn.Linear(4, 2)
ElasticTrainer(model, get_datasets, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1)).train(
    epochs=1, effective_batch_size=8, max_gpus=MAX_GPUS)
'''


def test_root_cause_is_the_raised_exception_of_a_traceback():
    try:
        try:
            {}["x"]
        except KeyError:
            raise FileNotFoundError("no data_batch_* in /data/cifar")
    except FileNotFoundError:
        tb = traceback.format_exc()
    assert root_cause(tb) == "FileNotFoundError: no data_batch_* in /data/cifar"
    assert root_cause("Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad\n  value\n") \
        == "ValueError: bad value"
    assert root_cause("") == "an exception (no traceback)"


def test_the_one_line_error_of_an_elastic_failure_is_its_cause():
    from papermill.exceptions import PapermillExecutionError

    err = ElasticTrainingError("FileNotFoundError: no data_batch_* in /d (raised by learner L1 during training)\n"
                               "Traceback (most recent call last):\n  File \"learner.py\", line 9\n"
                               "FileNotFoundError: no data_batch_* in /d\n")
    exc = PapermillExecutionError(3, 3, "train()", "ElasticTrainingError", str(err), [])
    assert describe_failure(exc, None) == \
        "FileNotFoundError: no data_batch_* in /d (raised by learner L1 during training)"
    other = PapermillExecutionError(1, 1, "x", "ValueError", "bad\nvalue", [])
    assert describe_failure(other, None) == "ValueError: bad value"


def test_read_log_appends_learner_logs_once_finished_with_consistent_offsets(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "driver.log").write_text("driver line 1\ndriver line 2")
    (logs / "learner-abc123-L1.log").write_text("L1 Traceback\nFileNotFoundError: no data_batch_*\n")
    (logs / "learner-abc123-L2.log").write_text("")  # empty logs get no header
    (logs / "papermill.log").write_text("not a learner log\n")

    running, offset = read_log(tmp_path, 0)
    assert running == "driver line 1\ndriver line 2" and offset == len(running.encode())
    assert read_log(tmp_path, offset) == ("", offset)  # nothing new while it runs

    rest, end = read_log(tmp_path, offset, finished=True)
    assert rest == "\n--- learner log learner-abc123-L1.log ---\nL1 Traceback\nFileNotFoundError: no data_batch_*\n"
    whole, whole_end = read_log(tmp_path, 0, finished=True)
    assert whole == running + rest and whole_end == end == len(whole.encode())
    assert "learner-abc123-L2.log" not in whole and "not a learner log" not in whole
    assert read_log(tmp_path, end, finished=True) == ("", end)
    assert read_log(tmp_path, end + 50, finished=True) == ("", end + 50)


@pytest.mark.slow
def test_a_failed_training_job_names_the_learners_exception_and_logs_it(workspace):
    make_notebook(workspace / "missing.ipynb", MISSING_DATA, parameters="DATA = 'nowhere'\nMAX_GPUS = 0")
    with nbrunner.setup_cluster(gpus=0, workers=1, workspace=workspace) as cluster:
        job = cluster.submit("missing.ipynb", {"DATA": str(workspace / "cifar")})
        job.wait(180)
        error = job.record.error
        assert job.record.status == "failed"
        assert error.startswith(f"FileNotFoundError: no data_batch_* in {workspace / 'cifar'}"), error
        assert "(raised by learner" in error  # the learner's exception, through ElasticTrainingError
        assert "Traceback" not in error and "\n" not in error
        text = job.logs()
        assert "--- learner log learner-" in text
        after = text.split("--- learner log", 1)[1]
        assert "FileNotFoundError: no data_batch_*" in after
